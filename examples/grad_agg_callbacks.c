/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * grad_agg_callbacks: gradient aggregation driven by completion callbacks.
 *
 *   grad_agg_callbacks root PORT NWORKERS ELEMS ITERS
 *   grad_agg_callbacks worker HOST PORT RANK NWORKERS ELEMS ITERS
 *
 * The same exchange as grad_agg_wait.c, written as an event loop: every operation is
 * started with a callback (UNIO_REQ_FLAG_NO_IMM_COMPLETION: the callback runs even when the
 * operation completes at once), the callbacks only count, and the loop calls
 * unio_worker_progress() and starts the next phase when a phase is complete.
 *
 * Tags: (iteration << 16) | rank for gradients, (iteration << 16) | 0xffff for the sum.
 *
 * The root waits GRAD_AGG_CONNECT_TIMEOUT seconds (default 60) for every worker to connect,
 * then gives up; a peer that fails ends the other side's wait with an error, never a hang.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <unio.h>

#define SUM_RANK 0xffff
#define RANK_MASK 0xffffull
#define MAX_WORKERS 64

static unio_ep_t *eps[MAX_WORKERS];
static int n_eps;
/*
 * The role's two buffers, freed by main() after the worker: a receive still posted when a
 * role gives up (a peer failed) may hold one until the worker is destroyed.
 */
static double *bufs[2];
static int n_done;      /* operations of the current phase that completed */
static int n_failed;    /* operations that completed with an error */
static int peer_failed; /* an endpoint failed (its peer died, or closed when done) */

/* The gradient of @p rank at @p iter: small integers, so sums are exact in doubles. */
static double
grad(int rank, int iter, size_t k)
{
	return (double)((rank + 1) * (int)(k % 97) + iter);
}

/*
 * A peer that died, reset or timed out, or one that closed its endpoint when it was done
 * (another worker's, while the root still sends the last sum).  Sends to it fail by
 * themselves; a receive is not tied to an endpoint, so a phase with one stops waiting.
 */
static void
on_ep_error(void *arg, unio_ep_t *ep, unio_status_t st)
{
	(void)arg, (void)ep, (void)st;
	peer_failed = 1;
}

static void
on_connection(unio_conn_request_t *cr, void *arg)
{
	struct unio_ep_params p = { .field_mask = UNIO_EP_PARAM_CONN_REQUEST |
						  UNIO_EP_PARAM_ERR_HANDLER,
				    .conn_request = cr, .err_handler = on_ep_error };

	if (n_eps < MAX_WORKERS)
		eps[n_eps++] = unio_ep_create(arg, &p, NULL);
}

/* Every completion lands here: count it, release the request. */
static void
on_complete(unio_request_t *req, unio_status_t st, const struct unio_recv_info *info,
	    void *user_data)
{
	size_t want_len = (size_t)(uintptr_t)user_data;

	if (st != UNIO_OK || (info != NULL && info->length != want_len))
		n_failed++;
	n_done++;
	unio_request_free(req);
}

static const struct unio_request_param *
cb_param(size_t len)
{
	static struct unio_request_param p;

	p = (struct unio_request_param){
		.field_mask = UNIO_REQ_PARAM_CB | UNIO_REQ_PARAM_USER_DATA |
			      UNIO_REQ_PARAM_FLAGS,
		.cb = on_complete, .user_data = (void *)(uintptr_t)len,
		.flags = UNIO_REQ_FLAG_NO_IMM_COMPLETION,
	};
	return &p;
}

/* Start an operation; an immediate error counts as a failed completion. */
static void
started(unio_status_t st)
{
	if (st != UNIO_INPROGRESS) {
		n_failed++;
		n_done++;
	}
}

/*
 * Progress until @p n operations of this phase completed; a phase with receives (@p recv)
 * also ends when an endpoint failed, for no peer may be left to send what they wait for.
 */
static int
phase_wait(unio_worker_t *w, int n, int recv)
{
	int ok;

	while (n_done < n && n_failed == 0 && !(recv && peer_failed))
		unio_worker_progress(w);
	ok = n_done >= n && n_failed == 0;
	if (!ok && peer_failed)
		fprintf(stderr, "a connection failed\n");
	n_done = 0;
	return ok ? 0 : -1;
}

/*
 * Progress until @p n workers connected, for at most GRAD_AGG_CONNECT_TIMEOUT seconds
 * (default 60): a worker that never starts (a wrong rank, a typo in the host) must not leave
 * the root, nor the workers that did connect, waiting for ever.  The root's exit fails the
 * connected workers' endpoints, and their error handlers end their waits.
 */
static int
await_workers(unio_worker_t *w, int n)
{
	const char *env = getenv("GRAD_AGG_CONNECT_TIMEOUT");
	double limit = env != NULL ? atof(env) : 60.0;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (n_eps < n) {
		if (unio_worker_progress(w) != 0)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9 >
		    limit) {
			fprintf(stderr, "root: %d of %d workers connected in %g s, giving up "
				"(GRAD_AGG_CONNECT_TIMEOUT)\n", n_eps, n, limit);
			return -1;
		}
	}
	return 0;
}

static int
root(unio_worker_t *w, int port, int n, size_t elems, int iters)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct unio_listener_params lp = {
		.field_mask = UNIO_LISTENER_PARAM_SOCKADDR | UNIO_LISTENER_PARAM_HANDLER,
		.sockaddr = (struct sockaddr *)&a, .addrlen = sizeof(a),
		.conn_handler = on_connection, .arg = w,
	};
	unio_status_t lst;
	unio_listener_t *l = unio_listener_create(w, &lp, &lst);
	size_t bytes = elems * sizeof(double);
	double *sum = bufs[0] = malloc(bytes), *g = bufs[1] = malloc(bytes * (size_t)n);
	unio_request_t *req;

	if (l == NULL) {
		fprintf(stderr, "listen on port %d: %s\n", port, unio_status_string(lst));
		return 1;
	}
	if (sum == NULL || g == NULL)
		return 1;
	if (await_workers(w, n) != 0)
		return 1;
	for (int it = 0; it < iters; it++) {
		/* phase 1: one receive per worker, any rank of this iteration */
		for (int r = 0; r < n; r++)
			started(unio_tag_recv(w, g + (size_t)r * elems, bytes, (uint64_t)it << 16,
					      ~RANK_MASK, cb_param(bytes), &req));
		if (phase_wait(w, n, 1) != 0)
			return 1;
		for (size_t k = 0; k < elems; k++) {
			sum[k] = 0;
			for (int r = 0; r < n; r++)
				sum[k] += g[(size_t)r * elems + k];
		}
		/* phase 2: the sum to every worker */
		for (int r = 0; r < n; r++)
			started(unio_tag_send(eps[r], sum, bytes, ((uint64_t)it << 16) | SUM_RANK,
					      cb_param(0), &req));
		if (phase_wait(w, n, 0) != 0)
			return 1;
	}
	printf("root: %d iterations of %d x %zu doubles aggregated\n", iters, n, elems);
	for (int r = 0; r < n; r++)
		unio_ep_close(eps[r], UNIO_EP_CLOSE_FLUSH, NULL);
	unio_listener_destroy(l);
	return 0;
}

static unio_ep_t *
connect_retry(unio_worker_t *w, const char *host, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	struct timespec pause = { 0, 20 * 1000 * 1000 };
	/* the library says why through err (and leaves the saying to us: no log line a try) */
	struct unio_ep_error err = { .sys_errno = ECONNREFUSED };
	struct unio_ep_params p = { .field_mask = UNIO_EP_PARAM_SOCKADDR |
						  UNIO_EP_PARAM_ERR_HANDLER |
						  UNIO_EP_PARAM_ERR_INFO,
				    .err_handler = on_ep_error, .err_info = &err };
	unio_status_t st = UNIO_ERR_UNREACHABLE;
	unio_ep_t *ep = NULL;
	int gai = getaddrinfo(host, port, &hints, &ai);

	if (gai != 0) {
		fprintf(stderr, "connect: cannot resolve '%s': %s\n", host, gai_strerror(gai));
		return NULL;
	}
	p.sockaddr = ai->ai_addr;
	p.addrlen = ai->ai_addrlen;
	for (int i = 0; i < 500 && ep == NULL && err.sys_errno == ECONNREFUSED; i++) {
		ep = unio_ep_create(w, &p, &st);
		if (ep == NULL)
			nanosleep(&pause, NULL);
	}
	freeaddrinfo(ai);
	if (ep == NULL)
		fprintf(stderr, "%s\n",
			err.reason[0] != '\0' ? err.reason : unio_status_string(st));
	return ep;
}

static int
worker(unio_worker_t *w, const char *host, const char *port, int rank, int n, size_t elems,
       int iters)
{
	unio_ep_t *ep = connect_retry(w, host, port);
	size_t bytes = elems * sizeof(double);
	double *g = bufs[0] = malloc(bytes), *sum = bufs[1] = malloc(bytes);
	unio_request_t *req;

	if (ep == NULL || g == NULL || sum == NULL)
		return 1;
	for (int it = 0; it < iters; it++) {
		for (size_t k = 0; k < elems; k++)
			g[k] = grad(rank, it, k);
		/* one phase: the sum's receive and the gradient's send */
		started(unio_tag_recv(w, sum, bytes, ((uint64_t)it << 16) | SUM_RANK, UINT64_MAX,
				      cb_param(bytes), &req));
		started(unio_tag_send(ep, g, bytes, ((uint64_t)it << 16) | rank, cb_param(0),
				      &req));
		if (phase_wait(w, 2, 1) != 0)
			return 1;
		for (size_t k = 0; k < elems; k++) {
			double want = 0;

			for (int r = 0; r < n; r++)
				want += grad(r, it, k);
			if (sum[k] != want) {
				fprintf(stderr, "rank %d iter %d: sum[%zu] = %g, want %g\n",
					rank, it, k, sum[k], want);
				return 1;
			}
		}
	}
	unio_ep_close(ep, UNIO_EP_CLOSE_FLUSH, NULL);
	return 0;
}

/* Argument @p i as a whole number in [lo, hi], or -1 after saying what is wrong with it. */
static long
num_arg(char **argv, int i, const char *name, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(argv[i], &end, 10);
	if (errno == 0 && end != argv[i] && *end == '\0' && v >= lo && v <= hi)
		return v;
	fprintf(stderr, "%s: invalid %s '%s' (%ld to %ld)\n", argv[0], name, argv[i], lo, hi);
	return -1;
}

int
main(int argc, char **argv)
{
	int is_root = argc == 6 && strcmp(argv[1], "root") == 0;
	long port, n, rank = 0, elems, iters;
	unio_context_t *ctx;
	unio_worker_t *w;
	unio_status_t st;
	int rc;

	if (!is_root && !(argc == 8 && strcmp(argv[1], "worker") == 0)) {
		fprintf(stderr, "usage: %s root PORT NWORKERS ELEMS ITERS\n"
			"       %s worker HOST PORT RANK NWORKERS ELEMS ITERS\n", argv[0], argv[0]);
		return 2;
	}
	/* the last three arguments are the same for both roles */
	port = num_arg(argv, is_root ? 2 : 3, "PORT", 1, 65535);
	n = num_arg(argv, argc - 3, "NWORKERS", 1, MAX_WORKERS);
	elems = num_arg(argv, argc - 2, "ELEMS", 1, 1 << 24);
	iters = num_arg(argv, argc - 1, "ITERS", 1, 1 << 24);
	if (!is_root && n > 0)
		rank = num_arg(argv, 4, "RANK", 0, n - 1);
	if (port < 0 || n < 0 || elems < 0 || iters < 0 || rank < 0)
		return 2;
	ctx = unio_context_create(NULL, &st);
	w = ctx != NULL ? unio_worker_create(ctx, NULL, &st) : NULL;
	if (w == NULL) {
		fprintf(stderr, "init: %s\n", unio_status_string(st));
		return 1;
	}
	if (is_root)
		rc = root(w, (int)port, (int)n, (size_t)elems, (int)iters);
	else
		rc = worker(w, argv[2], argv[3], (int)rank, (int)n, (size_t)elems, (int)iters);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	free(bufs[0]);
	free(bufs[1]);
	if (rc != 0)
		fprintf(stderr, "%s %s failed\n", argv[0], argv[1]);
	return rc;
}
