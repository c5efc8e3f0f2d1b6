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
 */

#include <arpa/inet.h>
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

/* The gradient of @p rank at @p iter: small integers, so sums are exact in doubles. */
static double
grad(int rank, int iter, size_t k)
{
	return (double)((rank + 1) * (int)(k % 97) + iter);
}

static void
on_connection(unio_conn_request_t *cr, void *arg)
{
	struct unio_ep_params p = { .field_mask = UNIO_EP_PARAM_CONN_REQUEST,
				    .conn_request = cr };

	if (n_eps < MAX_WORKERS)
		eps[n_eps++] = unio_ep_create(arg, &p, NULL);
}

/* Await a future: UNIO_OK (done at once) or a request to wait on. */
static unio_status_t
await(unio_worker_t *w, unio_status_t st, unio_request_t *req, struct unio_recv_info *info)
{
	return st == UNIO_INPROGRESS ? unio_request_wait(w, req, info) : st;
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
	unio_listener_t *l = unio_listener_create(w, &lp, NULL);
	double *sum = calloc(elems, sizeof(double)), *g = malloc(elems * sizeof(double));
	unio_request_t *reqs[MAX_WORKERS];
	unio_status_t st[MAX_WORKERS];
	struct unio_recv_info info;
	struct unio_request_param rp = { .field_mask = UNIO_REQ_PARAM_RECV_INFO,
					 .recv_info = &info };

	if (l == NULL || sum == NULL || g == NULL || n > MAX_WORKERS)
		return 1;
	while (n_eps < n)
		unio_worker_progress(w);
	for (int it = 0; it < iters; it++) {
		memset(sum, 0, elems * sizeof(double));
		for (int r = 0; r < n; r++) {
			/* any rank of this iteration; info is filled also when the message
			 * was already there and the receive completes at once */
			unio_status_t s = unio_tag_recv(w, g, elems * sizeof(double),
							(uint64_t)it << 16, ~RANK_MASK, &rp,
							&reqs[0]);

			if (await(w, s, reqs[0], &info) != UNIO_OK ||
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
	free(sum);
	free(g);
	return 0;
}

static unio_ep_t *
connect_retry(unio_worker_t *w, const char *host, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	struct timespec pause = { 0, 20 * 1000 * 1000 };
	struct unio_ep_params p = { .field_mask = UNIO_EP_PARAM_SOCKADDR };
	unio_status_t st = UNIO_ERR_UNREACHABLE;
	unio_ep_t *ep = NULL;

	if (getaddrinfo(host, port, &hints, &ai) != 0)
		return NULL;
	p.sockaddr = ai->ai_addr;
	p.addrlen = ai->ai_addrlen;
	for (int i = 0; i < 500 && ep == NULL && st == UNIO_ERR_UNREACHABLE; i++) {
		ep = unio_ep_create(w, &p, &st);
		if (ep == NULL)
			nanosleep(&pause, NULL);
	}
	freeaddrinfo(ai);
	return ep;
}

static int
worker(unio_worker_t *w, const char *host, const char *port, int rank, int n, size_t elems,
       int iters)
{
	unio_ep_t *ep = connect_retry(w, host, port);
	double *g = malloc(elems * sizeof(double)), *sum = malloc(elems * sizeof(double));
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
		if (await(w, ss, sreq, NULL) != UNIO_OK || await(w, rs, rreq, NULL) != UNIO_OK)
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
	free(g);
	free(sum);
	return 0;
}

int
main(int argc, char **argv)
{
	unio_context_t *ctx;
	unio_worker_t *w;
	int rc;

	if (argc < 6 || (strcmp(argv[1], "worker") == 0 && argc < 8)) {
		fprintf(stderr, "usage: %s root PORT NWORKERS ELEMS ITERS\n"
			"       %s worker HOST PORT RANK NWORKERS ELEMS ITERS\n", argv[0], argv[0]);
		return 2;
	}
	ctx = unio_context_create(NULL, NULL);
	w = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	if (w == NULL)
		return 1;
	if (strcmp(argv[1], "root") == 0)
		rc = root(w, atoi(argv[2]), atoi(argv[3]), strtoul(argv[4], NULL, 0),
			  atoi(argv[5]));
	else
		rc = worker(w, argv[2], argv[3], atoi(argv[4]), atoi(argv[5]),
			    strtoul(argv[6], NULL, 0), atoi(argv[7]));
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	if (rc != 0)
		fprintf(stderr, "%s %s failed\n", argv[0], argv[1]);
	return rc;
}
