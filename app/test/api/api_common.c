/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers of the API tests (see api_common.h). */

#include <arpa/inet.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include <rte_cycles.h>

#include "api_common.h"
#include "unio_proto.h"

unio_context_t *
api_ctx(const char *const *overrides)
{
	struct unio_context_params p = { .field_mask = UNIO_CONTEXT_PARAM_CONFIG |
						       UNIO_CONTEXT_PARAM_FEATURES,
					 .features = UNIO_FEATURE_TAG | UNIO_FEATURE_WAKEUP |
						     UNIO_FEATURE_AM | UNIO_FEATURE_RMA };
	struct unio_config *cfg;
	unio_context_t *ctx;
	unio_status_t st;

	if (unio_config_read(&cfg) != UNIO_OK)
		return NULL;
	for (; overrides != NULL && overrides[0] != NULL; overrides += 2)
		if (unio_config_modify(cfg, overrides[0], overrides[1]) != UNIO_OK) {
			TEST_LOG("bad override %s=%s", overrides[0], overrides[1]);
			unio_config_release(cfg);
			return NULL;
		}
	p.config = cfg;
	ctx = unio_context_create(&p, &st);
	unio_config_release(cfg);
	if (ctx == NULL)
		TEST_LOG("context: %s", unio_status_string(st));
	return ctx;
}

static unio_status_t
wait_req(unio_worker_t *w, unio_status_t st, unio_request_t *req, struct unio_recv_info *info)
{
	if (st != UNIO_INPROGRESS)
		return st;
	return unio_request_wait(w, req, info);
}

unio_status_t
api_send(unio_worker_t *w, unio_ep_t *ep, const void *buf, size_t len, uint64_t tag, int sync)
{
	unio_request_t *req = NULL;
	unio_status_t st = sync ? unio_tag_send_sync(ep, buf, len, tag, NULL, &req) :
			   unio_tag_send(ep, buf, len, tag, NULL, &req);

	return wait_req(w, st, req, NULL);
}

unio_status_t
api_recv(unio_worker_t *w, void *buf, size_t len, uint64_t tag, uint64_t mask,
	 struct unio_recv_info *info)
{
	struct unio_request_param p = { .field_mask = UNIO_REQ_PARAM_RECV_INFO, .recv_info = info };
	unio_request_t *req = NULL;
	unio_status_t st = unio_tag_recv(w, buf, len, tag, mask, &p, &req);

	return wait_req(w, st, req, info);
}

unio_ep_t *
api_ep_to_worker(unio_worker_t *w, unio_worker_t *peer, unio_status_t *st)
{
	struct unio_ep_params p = { .field_mask = UNIO_EP_PARAM_WORKER_ADDR };
	unio_ep_t *ep;
	void *addr;
	size_t len;

	*st = unio_worker_get_address(peer, &addr, &len);
	if (*st != UNIO_OK)
		return NULL;
	p.worker_addr = addr;
	p.worker_addr_len = len;
	ep = unio_ep_create(w, &p, st);
	unio_worker_release_address(peer, addr);
	return ep;
}

/* The ep's state, read under its worker's lock (MULTI: other threads progress it). */
static bool
ep_is_connected(unio_worker_t *w, const unio_ep_t *ep)
{
	bool c;

	worker_lock(w);
	c = ep->state == EP_CONNECTED;
	worker_unlock(w);
	return c;
}

bool
api_ep_connected(unio_worker_t *w, unio_worker_t *peer, const unio_ep_t *ep)
{
	for (int i = 0; i < 100000 && !ep_is_connected(w, ep); i++) {
		unio_worker_progress(w);
		if (peer != w)
			unio_worker_progress(peer);
	}
	return ep_is_connected(w, ep);
}

struct sockaddr_in
api_loopback(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

unio_ep_t *
api_connect(unio_worker_t *w, int port, unio_ep_err_handler_t eh, void *arg,
	    unio_status_t *st)
{
	struct sockaddr_in a = api_loopback(port);
	struct unio_ep_params p = {
		.field_mask = UNIO_EP_PARAM_SOCKADDR | (eh ? UNIO_EP_PARAM_ERR_HANDLER : 0),
		.sockaddr = (struct sockaddr *)&a, .addrlen = sizeof(a),
		.err_handler = eh, .err_arg = arg,
	};
	struct timespec ts = { 0, 10 * 1000 * 1000 };

	for (int i = 0; i < 1000; i++) {
		unio_ep_t *ep = unio_ep_create(w, &p, st);

		if (ep != NULL || *st != UNIO_ERR_UNREACHABLE)
			return ep;
		nanosleep(&ts, NULL);  /* the peer is not listening yet: retry */
	}
	return NULL;
}

struct listen_ctx {
	unio_worker_t *w;
	unio_ep_t **slot;
	unio_ep_err_handler_t eh;
	void *arg;
};

static struct listen_ctx listen_ctxs[8];
static unsigned int n_listen_ctxs;

static void
on_conn(unio_conn_request_t *cr, void *arg)
{
	struct listen_ctx *lc = arg;
	struct unio_ep_params p = {
		.field_mask = UNIO_EP_PARAM_CONN_REQUEST | (lc->eh ? UNIO_EP_PARAM_ERR_HANDLER : 0),
		.conn_request = cr, .err_handler = lc->eh, .err_arg = lc->arg,
	};
	unio_status_t st;

	*lc->slot = unio_ep_create(lc->w, &p, &st);
	if (*lc->slot == NULL)
		TEST_LOG("accept: %s", unio_status_string(st));
}

unio_listener_t *
api_listen(unio_worker_t *w, int port, unio_ep_t **ep_slot, unio_ep_err_handler_t eh,
	   void *arg)
{
	struct sockaddr_in a = api_loopback(port);
	struct listen_ctx *lc;
	struct unio_listener_params p = {
		.field_mask = UNIO_LISTENER_PARAM_SOCKADDR | UNIO_LISTENER_PARAM_HANDLER,
		.sockaddr = (struct sockaddr *)&a, .addrlen = sizeof(a), .conn_handler = on_conn,
	};
	unio_listener_t *l;
	unio_status_t st;

	if (n_listen_ctxs == RTE_DIM(listen_ctxs))
		return NULL;
	lc = &listen_ctxs[n_listen_ctxs++];
	*lc = (struct listen_ctx){ w, ep_slot, eh, arg };
	p.arg = lc;
	l = unio_listener_create(w, &p, &st);
	if (l == NULL)
		TEST_LOG("listen on port %d: %s", port, unio_status_string(st));
	return l;
}

int
api_progress_until(unio_worker_t *w, volatile int *flag, int ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!*flag) {
		unio_worker_progress(w);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > ms)
			break;
	}
	return *flag;
}

static unsigned int
add3(size_t *sizes, unsigned int n, size_t limit)
{
	if (limit == 0 || limit >= ((size_t)1 << 40))
		return n;
	sizes[n++] = limit - 1;
	sizes[n++] = limit;
	sizes[n++] = limit + 1;
	return n;
}

unsigned int
api_size_classes(unio_ep_t *ep, size_t big, size_t *sizes)
{
	const struct proto_lane *l = &ep->lane;
	unsigned int n = 0;

	sizes[n++] = 0;
	sizes[n++] = 1;
	if (l->short_ok)
		n = add3(sizes, n, l->max_short);
	n = add3(sizes, n, l->max_eager);
	n = add3(sizes, n, l->frag * 2);
	n = add3(sizes, n, l->rndv_thresh);
	n = add3(sizes, n, l->split_min);
	if (l->max_zcopy != 0) {
		n = add3(sizes, n, l->zcopy_thresh);
		n = add3(sizes, n, l->max_zcopy);
	}
	sizes[n++] = 64 * 1024;
	sizes[n++] = 1024 * 1024;
	sizes[n++] = big;
	return n;
}

bool
api_no_host_driver(void)
{
	const struct unio_config *cfg = unio_config_env();

	for (unsigned int i = 0; cfg != NULL && i < unio_tl_driver_count(); i++) {
		const struct unio_tl_driver *drv = unio_tl_driver_get(i);
		struct unio_tl_device_info devs[UNIO_TL_MAX_DEVICES];
		unsigned int n = 0;
		char reason[128];

		if (strcmp(drv->name, "self") != 0 &&
		    unio_tl_query_devices(drv, cfg, devs, &n, reason, sizeof(reason)) ==
		    UNIO_OK && n > 0)
			return false;
	}
	return true;
}

unio_status_t
api_op_wait(unio_worker_t *a, unio_worker_t *b, unio_status_t st, unio_request_t *req)
{
	unio_status_t r;

	if (st != UNIO_INPROGRESS)
		return st;
	while ((r = unio_request_test(req, NULL)) == UNIO_INPROGRESS) {
		unio_worker_progress(a);
		if (b != a)
			unio_worker_progress(b);
	}
	unio_request_free(req);
	return r;
}

unio_status_t
api_put(unio_worker_t *a, unio_worker_t *b, unio_ep_t *ep, const void *buf, size_t len,
	uint64_t raddr, unio_rkey_t *rk)
{
	unio_request_t *req = NULL;
	unio_status_t st = unio_put(ep, buf, len, raddr, rk, NULL, &req);

	return api_op_wait(a, b, st, req);
}

unio_status_t
api_get(unio_worker_t *a, unio_worker_t *b, unio_ep_t *ep, void *buf, size_t len,
	uint64_t raddr, unio_rkey_t *rk)
{
	unio_request_t *req = NULL;
	unio_status_t st = unio_get(ep, buf, len, raddr, rk, NULL, &req);

	return api_op_wait(a, b, st, req);
}

struct unio_tl_iface *
api_worker_iface(unio_worker_t *w, const char *driver, const char *dev)
{
	for (unsigned int i = 0; i < w->n_ifaces; i++)
		if (strcmp(w->ifaces[i]->driver->name, driver) == 0 &&
		    (dev == NULL || strcmp(w->ifaces[i]->dev_name, dev) == 0))
			return w->ifaces[i];
	return NULL;
}

struct raw_msg {
	const void *p;
	size_t n;
};

static size_t
raw_pack(void *dest, void *arg)
{
	const struct raw_msg *r = arg;

	memcpy(dest, r->p, r->n);
	return r->n;
}

int
api_raw_am(unio_worker_t *w, struct unio_tl_ep *tl, uint8_t id, const void *p, size_t n)
{
	struct raw_msg r = { p, n };

	for (int i = 0; i < 1000000; i++) {
		ssize_t s = unio_tl_ep_am_bcopy(tl, id, raw_pack, &r, 0);

		if (s >= 0)
			return 0;
		if (s != UNIO_ERR_NO_RESOURCE)
			return 1;
		unio_worker_progress(w);
	}
	return 1;
}

unio_ep_t *
api_accept_child(unio_worker_t *w, unio_ep_t *volatile *slot, pid_t pid)
{
	while (*slot == NULL && waitpid(pid, NULL, WNOHANG) == 0)
		api_progress_until(w, (volatile int *)slot, 100);
	return *slot;
}

int
api_reap_child(unio_worker_t *w, pid_t pid, const char *who)
{
	int status = 0;

	for (uint64_t t0 = rte_get_timer_cycles();; ) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		unio_worker_progress(w);
		if (rte_get_timer_cycles() - t0 > 30 * rte_get_timer_hz()) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
	}
	TEST_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s exit status %#x", who,
		    status);
	return TEST_OK;
}

uint64_t
api_worker_counter(unio_worker_t *w, const char *line)
{
	char *txt = NULL, *p;
	size_t n = 0;
	uint64_t v = UINT64_MAX;
	FILE *f = open_memstream(&txt, &n);

	if (f == NULL)
		return v;
	unio_worker_print_info(w, f);
	fclose(f);
	p = txt != NULL ? strstr(txt, line) : NULL;
	if (p != NULL)
		v = strtoull(p + strlen(line), NULL, 10);
	free(txt);
	return v;
}
