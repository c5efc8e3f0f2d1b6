/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers of the API tests (see api_common.h). */

#include <arpa/inet.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rte_log.h>

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

int
api_pair_open(struct api_pair *p, const char *const *overrides, const char *drv)
{
	unio_status_t st = UNIO_ERR_NO_MEMORY;

	*p = (struct api_pair){ .ctx = api_ctx(overrides) };
	if (p->ctx == NULL)
		return TEST_FAIL;
	p->a = unio_worker_create(p->ctx, NULL, &st);
	if (p->a != NULL)
		p->b = unio_worker_create(p->ctx, NULL, &st);
	TEST_ASSERT(p->a != NULL && p->b != NULL, "workers: %s", unio_status_string(st));
	p->ep = api_ep_to_worker(p->a, p->b, &st);
	TEST_ASSERT(p->ep != NULL && api_ep_connected(p->a, p->b, p->ep), "a -> b: %s",
		    unio_status_string(st));
	TEST_ASSERT(drv == NULL || (strcmp(p->ep->lane.iface->driver->name, drv) == 0 &&
				    api_worker_iface(p->b, drv, NULL) != NULL),
		    "no %s lane a -> b (%s)", drv, p->ep->lane.iface->driver->name);
	return TEST_OK;
}

void
api_pair_close(struct api_pair *p)
{
	if (p->ep != NULL)
		unio_ep_close(p->ep, UNIO_EP_CLOSE_FORCE, NULL);
	if (p->a != NULL)
		unio_worker_destroy(p->a);
	if (p->b != NULL)
		unio_worker_destroy(p->b);
	if (p->ctx != NULL)
		unio_context_destroy(p->ctx);
	*p = (struct api_pair){ 0 };
}

struct sockaddr_in
api_loopback(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

unio_ep_t *
api_connect_within(unio_worker_t *w, int port, int wait_ms, unio_ep_err_handler_t eh,
		   void *arg, unio_status_t *st)
{
	struct sockaddr_in a = api_loopback(port);
	struct unio_ep_params p = {
		.field_mask = UNIO_EP_PARAM_SOCKADDR | (eh ? UNIO_EP_PARAM_ERR_HANDLER : 0),
		.sockaddr = (struct sockaddr *)&a, .addrlen = sizeof(a),
		.err_handler = eh, .err_arg = arg,
	};

	/*
	 * The peer may not listen yet: wait for its socket rather than try refused connects,
	 * each one said at warning level.  Then one try, whose failure is said as a user's.
	 */
	if (test_wait_listen(0, port, wait_ms) != 0)
		TEST_LOG("nothing listens on port %d after %d ms", port, wait_ms);
	return unio_ep_create(w, &p, st);
}

unio_ep_t *
api_connect(unio_worker_t *w, int port, unio_ep_err_handler_t eh, void *arg,
	    unio_status_t *st)
{
	return api_connect_within(w, port, 10000, eh, arg, st);
}

void
api_log_start(struct api_log *l)
{
	*l = (struct api_log){ .prev = rte_log_get_stream() };
	l->f = open_memstream(&l->text, &l->len);
	if (l->f != NULL)
		rte_openlog_stream(l->f);
}

char *
api_log_end(struct api_log *l)
{
	if (l->f != NULL) {
		rte_openlog_stream(l->prev);
		fclose(l->f);
	}
	return l->text != NULL ? l->text : strdup("");
}

unio_ep_t *
api_ep_create_logged(unio_worker_t *w, const struct unio_ep_params *p, unio_status_t *st,
		     char **log)
{
	struct api_log l;
	unio_ep_t *ep;

	api_log_start(&l);
	ep = unio_ep_create(w, p, st);
	*log = api_log_end(&l);
	return ep;
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

struct unio_listener_params
api_listener_params(struct sockaddr_in *a, unio_conn_handler_t handler, void *arg)
{
	return (struct unio_listener_params){
		.field_mask = UNIO_LISTENER_PARAM_SOCKADDR | UNIO_LISTENER_PARAM_HANDLER,
		.sockaddr = (struct sockaddr *)a, .addrlen = sizeof(*a),
		.conn_handler = handler, .arg = arg,
	};
}

unio_listener_t *
api_listen(unio_worker_t *w, int port, unio_ep_t **ep_slot, unio_ep_err_handler_t eh,
	   void *arg)
{
	struct sockaddr_in a = api_loopback(port);
	struct listen_ctx *lc;
	struct unio_listener_params p;
	unio_listener_t *l;
	unio_status_t st;

	if (n_listen_ctxs == RTE_DIM(listen_ctxs))
		return NULL;
	lc = &listen_ctxs[n_listen_ctxs++];
	*lc = (struct listen_ctx){ w, ep_slot, eh, arg };
	p = api_listener_params(&a, on_conn, lc);
	l = unio_listener_create(w, &p, &st);
	if (l == NULL)
		TEST_LOG("listen on port %d: %s", port, unio_status_string(st));
	return l;
}

/* Milliseconds since @p t0 (CLOCK_MONOTONIC). */
static long
ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

int
api_progress_until(unio_worker_t *w, volatile int *flag, int ms)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!*flag) {
		unio_worker_progress(w);
		if (ms_since(&t0) > ms)
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

void
api_pair_wait(unio_worker_t *a, unio_worker_t *b, unio_status_t *sst, unio_request_t *sreq,
	      unio_status_t *rst, unio_request_t *rreq, struct unio_recv_info *info)
{
	while ((*sst == UNIO_INPROGRESS && unio_request_test(sreq, NULL) == UNIO_INPROGRESS) ||
	       (*rst == UNIO_INPROGRESS && unio_request_test(rreq, NULL) == UNIO_INPROGRESS)) {
		unio_worker_progress(a);
		if (b != a)
			unio_worker_progress(b);
	}
	if (*sst == UNIO_INPROGRESS) {
		*sst = unio_request_test(sreq, NULL);
		unio_request_free(sreq);
	}
	if (*rst == UNIO_INPROGRESS) {
		*rst = unio_request_test(rreq, info);
		unio_request_free(rreq);
	}
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
api_wait_child(unio_worker_t *w, pid_t pid, int ms, int *status)
{
	struct timespec t0;
	int st = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (waitpid(pid, &st, WNOHANG) != pid) {
		unio_worker_progress(w);
		if (ms_since(&t0) > ms) {
			TEST_LOG("child %d late: killing it", (int)pid);
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			break;
		}
	}
	if (status != NULL)
		*status = st;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int
api_reap_child(unio_worker_t *w, pid_t pid, const char *who)
{
	int status = 0;

	api_wait_child(w, pid, 30000, &status);
	TEST_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s exit status %#x", who,
		    status);
	return TEST_OK;
}

int
api_child_end(unio_context_t *ctx, unio_worker_t *w, unio_ep_t *ep)
{
	for (int i = 0; i < 2000000 && ep->state == EP_CONNECTED && !ep->remote_closed; i++)
		unio_worker_progress(w);
	unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return 0;
}

int
api_parent_open(struct api_parent *p, const char *const *overrides, const char *drv,
		int port, const char *child, const char *arg)
{
	char port_s[16];
	const char *args[] = { port_s, arg, NULL };

	*p = (struct api_parent){ .ctx = api_ctx(overrides), .pid = -1 };
	TEST_ASSERT(p->ctx != NULL, "context");
	p->w = unio_worker_create(p->ctx, NULL, NULL);
	TEST_ASSERT(p->w != NULL && (drv == NULL || api_worker_iface(p->w, drv, NULL) != NULL),
		    "worker with a %s iface", drv != NULL ? drv : "any");
	p->l = api_listen(p->w, port, &p->ep, NULL, NULL);
	TEST_ASSERT(p->l != NULL, "listener");
	snprintf(port_s, sizeof(port_s), "%d", port);
	p->pid = test_spawn(child, args);
	TEST_ASSERT(p->pid > 0, "spawn %s", child);
	api_accept_child(p->w, (unio_ep_t *volatile *)&p->ep, p->pid);
	return TEST_OK;
}

int
api_parent_connected(struct api_parent *p)
{
	int crc;

	if (p->ep != NULL)
		return TEST_OK;
	crc = api_wait_child(p->w, p->pid, 1000, NULL);
	if (crc == 77 && api_no_host_driver())
		TEST_SKIP_BECAUSE("no built driver reaches another process of this host");
	TEST_ASSERT(0, "the child never connected (exit %d)", crc);
}

void
api_parent_close(struct api_parent *p)
{
	if (p->ep != NULL)
		unio_ep_close(p->ep, UNIO_EP_CLOSE_FORCE, NULL);
	if (p->l != NULL)
		unio_listener_destroy(p->l);
	if (p->w != NULL)
		unio_worker_destroy(p->w);
	if (p->ctx != NULL)
		unio_context_destroy(p->ctx);
	*p = (struct api_parent){ .pid = -1 };
}

static void
env_set(const char *const *env, bool set)
{
	for (; env != NULL && env[0] != NULL; env += 2)
		if (set)
			setenv(env[0], env[1], 1);
		else
			unsetenv(env[0]);
}

unio_ep_t *
api_third_child(unio_worker_t *w, int argc, char **argv)
{
	unio_status_t st = UNIO_ERR_INVALID_PARAM;
	unio_ep_t *ep;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (argc < 3 || w == NULL)
		return NULL;
	ep = api_connect(w, atoi(argv[0]), NULL, NULL, &st);
	if (ep == NULL || strcmp(ep->lane.iface->driver->name, argv[2]) != 0) {
		TEST_LOG("child: %s", ep == NULL ? unio_status_string(st) : "another lane");
		return NULL;
	}
	return ep;
}

/* The victim's part, once the worker listens on @p port: both children spawned and met. */
static int
third_meet(const struct api_third_case *c, unio_worker_t *w, unio_ep_t *volatile *slot,
	   const char *const *args, pid_t *pm)
{
	pid_t pp;
	unio_ep_t *ep_p, *ep_m;
	int rc = TEST_FAIL;

	env_set(c->child_env[0], true);
	pp = test_spawn(c->peer, args);
	ep_p = api_accept_child(w, slot, pp);
	*slot = NULL;
	if (ep_p != NULL) {
		env_set(c->child_env[1], true);
		*pm = test_spawn(c->forger, args);
		ep_m = api_accept_child(w, slot, *pm);
		if (ep_m != NULL) {
			rte_log_set_level_pattern("unio.*", RTE_LOG_CRIT);
			rc = c->victim(w, ep_p, ep_m, args[1], c->arg);
			rte_log_set_level_pattern("unio.*", RTE_LOG_WARNING);
			unio_ep_close(ep_m, UNIO_EP_CLOSE_FORCE, NULL);
		}
		unio_ep_close(ep_p, UNIO_EP_CLOSE_FORCE, NULL);
	}
	/* the peer may wait for the flag still: let it go */
	if (c->flag != NULL)
		close(open(args[1], O_CREAT | O_WRONLY, 0600));
	if (api_reap_child(w, pp, c->who) != TEST_OK)
		rc = TEST_FAIL;
	if (*pm > 0 && api_reap_child(w, *pm, "M") != TEST_OK)
		rc = TEST_FAIL;
	return rc;
}

int
api_third_process(const struct api_third_case *c)
{
	unio_context_t *ctx = NULL;
	unio_worker_t *w = NULL;
	unio_listener_t *l = NULL;
	unio_ep_t *volatile slot = NULL;
	int port = test_free_port(), rc = TEST_FAIL;
	char port_s[16], flag[64] = "", tls[32];
	const char *args[] = { port_s, flag, c->drv, NULL };
	pid_t pm = -1;

	snprintf(tls, sizeof(tls), "%s,self", c->drv);
	setenv("UNIO_TLS", tls, 1);
	env_set(c->env, true);
	if (c->flag != NULL) {
		snprintf(flag, sizeof(flag), "/tmp/unio-%s-flag-%d", c->flag, (int)getpid());
		unlink(flag);
	}
	snprintf(port_s, sizeof(port_s), "%d", port);
	ctx = api_ctx(NULL);
	if (ctx != NULL)
		w = unio_worker_create(ctx, NULL, NULL);
	if (w != NULL && api_worker_iface(w, c->drv, NULL) != NULL)
		l = api_listen(w, port, (unio_ep_t **)&slot, NULL, NULL);
	if (l != NULL)
		rc = third_meet(c, w, &slot, args, &pm);
	else
		TEST_LOG("no context, worker with a %s iface or listener", c->drv);
	env_set(c->child_env[0], false);
	env_set(c->child_env[1], false);
	env_set(c->env, false);
	unsetenv("UNIO_TLS");
	if (c->flag != NULL)
		unlink(flag);
	if (l != NULL)
		unio_listener_destroy(l);
	if (w != NULL)
		unio_worker_destroy(w);
	if (ctx != NULL)
		unio_context_destroy(ctx);
	return rc;
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

/* The tag that carries the echo's sizes; the messages' tags have a low byte 0. */
#define ECHO_SIZES_TAG 0xfeedfacecafe0001ull
#define ECHO_MAX_SIZES 32

static uint64_t
echo_tag(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s & ~0xffull;  /* low byte 0: never equal to the control tags */
}

int
api_echo_drive(unio_worker_t *w, unio_ep_t *ep, size_t big, uint64_t seed)
{
	uint64_t sizes[ECHO_MAX_SIZES], tags[ECHO_MAX_SIZES];
	size_t sz[ECHO_MAX_SIZES];
	unio_request_t *sreq[ECHO_MAX_SIZES];
	uint8_t *bufs[ECHO_MAX_SIZES], *rbuf;
	struct unio_recv_info info;
	unsigned int n = api_size_classes(ep, big, sz);
	unio_status_t st;

	for (unsigned int i = 0; i < n; i++)
		sizes[i] = sz[i];
	TEST_ASSERT_STATUS(api_send(w, ep, sizes, n * sizeof(sizes[0]), ECHO_SIZES_TAG, 0),
			   UNIO_OK);
	for (unsigned int i = 0; i < n; i++) {
		uint64_t tag = tags[i] = echo_tag(&seed);

		bufs[i] = malloc(sizes[i] + 1);
		TEST_ASSERT(bufs[i] != NULL, "malloc");
		test_fill(bufs[i], sizes[i], tag);
		st = i % 4 == 3 ? unio_tag_send_sync(ep, bufs[i], sizes[i], tag, NULL, &sreq[i]) :
		     unio_tag_send(ep, bufs[i], sizes[i], tag, NULL, &sreq[i]);
		TEST_ASSERT(st == UNIO_OK || st == UNIO_INPROGRESS, "send: %s",
			    unio_status_string(st));
		if (st == UNIO_OK)
			sreq[i] = NULL;
	}
	rbuf = malloc(big + 1);
	TEST_ASSERT(rbuf != NULL, "malloc");
	for (unsigned int i = 0; i < n; i++) {
		st = api_recv(w, rbuf, sizes[i], 0, 0, &info);
		TEST_ASSERT(st == UNIO_OK && info.length == sizes[i], "echo %u: %s, %zu bytes", i,
			    unio_status_string(st), info.length);
		TEST_ASSERT(info.tag == tags[i], "echo %u came with tag %#" PRIx64 ", want %#"
			    PRIx64, i, info.tag, tags[i]);
		TEST_ASSERT(test_checksum(rbuf, sizes[i]) == test_checksum(bufs[i], sizes[i]),
			    "echo %u of %" PRIu64 " bytes differs", i, sizes[i]);
		if (sreq[i] != NULL)
			TEST_ASSERT_STATUS(unio_request_wait(w, sreq[i], NULL), UNIO_OK);
		free(bufs[i]);
	}
	free(rbuf);
	return TEST_OK;
}

int
api_echo_serve(unio_worker_t *w, unio_ep_t *ep, uint64_t seed)
{
	static const uint64_t masks[] = { UINT64_MAX, 0xffffffffffff0000ull, 0 };
	uint64_t sizes[ECHO_MAX_SIZES];
	unio_request_t *sreq[ECHO_MAX_SIZES];
	uint8_t *bufs[ECHO_MAX_SIZES];
	struct unio_recv_info info;
	unio_status_t st;
	unsigned int n;

	TEST_ASSERT_STATUS(api_recv(w, sizes, sizeof(sizes), ECHO_SIZES_TAG, UINT64_MAX, &info),
			   UNIO_OK);
	n = (unsigned int)(info.length / sizeof(sizes[0]));
	for (unsigned int i = 0; i < n; i++) {
		uint64_t tag = echo_tag(&seed), mask = masks[i % RTE_DIM(masks)];
		uint8_t *want = malloc(sizes[i] + 1);

		bufs[i] = malloc(sizes[i] + 1);
		TEST_ASSERT(want != NULL && bufs[i] != NULL, "malloc");
		bufs[i][sizes[i]] = 0xee;
		st = api_recv(w, bufs[i], sizes[i], tag & mask, mask, &info);
		test_fill(want, sizes[i], tag);
		TEST_ASSERT(st == UNIO_OK && info.tag == tag && info.length == sizes[i] &&
			    test_checksum(want, sizes[i]) == test_checksum(bufs[i], sizes[i]) &&
			    bufs[i][sizes[i]] == 0xee,
			    "message %u (%" PRIu64 " bytes): %s, tag %#" PRIx64 " length %zu", i,
			    sizes[i], unio_status_string(st), info.tag, info.length);
		free(want);
		st = unio_tag_send(ep, bufs[i], sizes[i], tag, NULL, &sreq[i]);
		TEST_ASSERT(st == UNIO_OK || st == UNIO_INPROGRESS, "echo send: %s",
			    unio_status_string(st));
		if (st == UNIO_OK)
			sreq[i] = NULL;
	}
	for (unsigned int i = 0; i < n; i++) {
		if (sreq[i] != NULL)
			TEST_ASSERT_STATUS(unio_request_wait(w, sreq[i], NULL), UNIO_OK);
		free(bufs[i]);
	}
	return TEST_OK;
}
