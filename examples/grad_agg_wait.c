/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * grad_agg_wait: gradient aggregation in the future / await style.
 *
 *   grad_agg_wait root PORT NWORKERS ELEMS ITERS
 *   grad_agg_wait worker HOST PORT RANK NWORKERS ELEMS ITERS
 *
 * Each iteration every worker sends its gradient (ELEMS doubles) to the root; the root adds
 * them up and sends the sum back to every worker, which checks it.  Every operation returns
 * a request (a future); unio_request_wait() progresses the worker until it completes.
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
static unio_request_t *awaited;   /* the receive await_recv() waits for, or NULL */
static int peer_failed;           /* an endpoint failed: no receive may wait */

/* The gradient of @p rank at @p iter: small integers, so sums are exact in doubles. */
static double
grad(int rank, int iter, size_t k)
{
	return (double)((rank + 1) * (int)(k % 97) + iter);
}

/*
 * A peer that died, reset or timed out, or one that closed its endpoint when it was done
 * (a worker, while the root still sends the last sum to the others).  Sends to it fail by
 * themselves; a receive is not tied to an endpoint, so the one being awaited is cancelled
 * (UNIO_ERR_CANCELED; nothing when it already completed).
 */
static void
on_ep_error(void *arg, unio_ep_t *ep, unio_status_t st)
{
	(void)ep, (void)st;
	peer_failed = 1;
	if (awaited != NULL)
		unio_request_cancel(arg, awaited);
}

static void
on_connection(unio_conn_request_t *cr, void *arg)
{
	struct unio_ep_params p = { .field_mask = UNIO_EP_PARAM_CONN_REQUEST |
						  UNIO_EP_PARAM_ERR_HANDLER,
				    .conn_request = cr, .err_handler = on_ep_error,
				    .err_arg = arg };

	if (n_eps < MAX_WORKERS)
		eps[n_eps++] = unio_ep_create(arg, &p, NULL);
}

/* Await a future: UNIO_OK (done at once) or a request to wait on. */
static unio_status_t
await(unio_worker_t *w, unio_status_t st, unio_request_t *req, struct unio_recv_info *info)
{
	return st == UNIO_INPROGRESS ? unio_request_wait(w, req, info) : st;
}

/* Await a receive, which a failed endpoint cancels (see on_ep_error()). */
static unio_status_t
await_recv(unio_worker_t *w, unio_status_t st, unio_request_t *req, struct unio_recv_info *info)
{
	if (st != UNIO_INPROGRESS)
		return st;
	if (peer_failed)
		unio_request_cancel(w, req);
	awaited = req;
	st = unio_request_wait(w, req, info);
	awaited = NULL;
	if (st != UNIO_OK)
		fprintf(stderr, "a receive failed: %s%s\n", unio_status_string(st),
			peer_failed ? " (a connection failed)" : "");
	return st;
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
	double *sum = bufs[0] = calloc(elems, sizeof(double));
	double *g = bufs[1] = malloc(elems * sizeof(double));
	unio_request_t *reqs[MAX_WORKERS];
	unio_status_t st[MAX_WORKERS];
	struct unio_recv_info info;
	struct unio_request_param rp = { .field_mask = UNIO_REQ_PARAM_RECV_INFO,
					 .recv_info = &info };

	if (l == NULL) {
		fprintf(stderr, "listen on port %d: %s\n", port, unio_status_string(lst));
		return 1;
	}
	if (sum == NULL || g == NULL)
		return 1;
	if (await_workers(w, n) != 0)
		return 1;
	for (int it = 0; it < iters; it++) {
		memset(sum, 0, elems * sizeof(double));
		for (int r = 0; r < n; r++) {
			/* any rank of this iteration; info is filled also when the message
			 * was already there and the receive completes at once */
			unio_status_t s = unio_tag_recv(w, g, elems * sizeof(double),
							(uint64_t)it << 16, ~RANK_MASK, &rp,
							&reqs[0]);

			if (await_recv(w, s, reqs[0], &info) != UNIO_OK ||
			    info.length != elems * sizeof(double))
				return 1;
			for (size_t k = 0; k < elems; k++)
				sum[k] += g[k];
		}
		for (int r = 0; r < n; r++)   /* start every send, then await them all */
			st[r] = unio_tag_send(eps[r], sum, elems * sizeof(double),
					      ((uint64_t)it << 16) | SUM_RANK, NULL, &reqs[r]);
		for (int r = 0; r < n; r++)
			if (await(w, st[r], reqs[r], NULL) != UNIO_OK)
				return 1;
	}
	printf("root: %d iterations of %d x %zu doubles aggregated\n", iters, n, elems);
	/* flush and close are futures too: start every close, then await them all */
	st[0] = unio_worker_flush(w, NULL, &reqs[0]);
	if (await(w, st[0], reqs[0], NULL) != UNIO_OK)
		return 1;
	for (int r = 0; r < n; r++)
		st[r] = unio_ep_close(eps[r], UNIO_EP_CLOSE_FLUSH, &reqs[r]);
	for (int r = 0; r < n; r++)
		if (await(w, st[r], reqs[r], NULL) != UNIO_OK)
			return 1;
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
				    .err_handler = on_ep_error, .err_arg = w, .err_info = &err };
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
	double *g = bufs[0] = malloc(elems * sizeof(double));
	double *sum = bufs[1] = malloc(elems * sizeof(double));
	unio_request_t *sreq, *rreq;
	unio_status_t ss, rs;

	if (ep == NULL || g == NULL || sum == NULL)
		return 1;
	for (int it = 0; it < iters; it++) {
		for (size_t k = 0; k < elems; k++)
			g[k] = grad(rank, it, k);
		/* two futures at once: the sum's receive and the gradient's send */
		rs = unio_tag_recv(w, sum, elems * sizeof(double),
				   ((uint64_t)it << 16) | SUM_RANK, UINT64_MAX, NULL, &rreq);
		ss = unio_tag_send(ep, g, elems * sizeof(double), ((uint64_t)it << 16) | rank,
				   NULL, &sreq);
		if (await(w, ss, sreq, NULL) != UNIO_OK || await_recv(w, rs, rreq, NULL) != UNIO_OK)
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
