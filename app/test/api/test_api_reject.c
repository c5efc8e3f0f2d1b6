/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A listener whose handler rejects, over plain shm and over tcp: two workers of one
 * process, the listening one progressed by its own thread.  Of three connection requests
 * the handler rejects the first and the third: unio_ep_create() fails with
 * UNIO_ERR_REJECTED for them, and the second is accepted, takes the lane of the driver
 * asked for and carries a message both ways.  The handler ran exactly three times.
 */

#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include "api_common.h"
#include "unio_proto.h"

struct server {
	unio_worker_t *w;
	unio_listener_t *l;
	const struct unio_listener_params *lp;   /* listen_late()'s */
	unio_ep_t *accepted;
	unsigned int calls;      /* the handler's, on the server thread */
	unsigned int rejected;
	int stop;                /* atomic */
	int got;                 /* atomic: the accepted ep's message, checked and answered */
	int failed;              /* atomic */
};

static void
on_conn(unio_conn_request_t *cr, void *arg)
{
	struct server *s = arg;
	struct unio_ep_params p = { .field_mask = UNIO_EP_PARAM_CONN_REQUEST,
				    .conn_request = cr };
	unio_status_t st;

	if (s->calls++ % 2 == 0) {
		st = unio_listener_reject(s->l, cr);
		if (st == UNIO_OK)
			s->rejected++;
		else
			__atomic_store_n(&s->failed, 1, __ATOMIC_RELAXED);
		return;
	}
	s->accepted = unio_ep_create(s->w, &p, &st);
	if (s->accepted == NULL)
		__atomic_store_n(&s->failed, 1, __ATOMIC_RELAXED);
}

/* The server's thread: the only one to touch its worker after the listener exists. */
static void *
serve(void *arg)
{
	struct server *s = arg;
	unio_request_t *req = NULL;
	uint64_t v = 0, answer;
	unio_status_t st = UNIO_INPROGRESS;
	bool posted = false;

	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		unio_worker_progress(s->w);
		if (s->accepted == NULL || __atomic_load_n(&s->got, __ATOMIC_RELAXED))
			continue;
		if (!posted) {
			posted = true;
			st = unio_tag_recv(s->w, &v, sizeof(v), 0x77, UINT64_MAX, NULL, &req);
			if (st != UNIO_INPROGRESS)
				req = NULL;
		}
		if (req != NULL && (st = unio_request_test(req, NULL)) != UNIO_INPROGRESS) {
			unio_request_free(req);
			req = NULL;
		}
		if (st == UNIO_INPROGRESS)
			continue;
		answer = v + 1;
		if (st != UNIO_OK || v != 0x1234 ||
		    api_send(s->w, s->accepted, &answer, sizeof(answer), 0x78, 0) != UNIO_OK)
			__atomic_store_n(&s->failed, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&s->got, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static int
reject(const char *tls, const char *drv)
{
	const char *const ovr[] = { "TLS", tls, NULL };
	unio_context_t *ctx = api_ctx(ovr);
	struct server s = { 0 };
	int port = test_free_port();
	struct sockaddr_in a = api_loopback(port);
	struct unio_listener_params lp = api_listener_params(&a, on_conn, &s);
	struct unio_recv_info info;
	unio_worker_t *w;
	unio_ep_t *ep[3];
	unio_status_t st[3];
	uint64_t v = 0x1234, answer = 0;
	pthread_t t;

	TEST_ASSERT(ctx != NULL, "context");
	w = unio_worker_create(ctx, NULL, NULL);
	s.w = unio_worker_create(ctx, NULL, NULL);
	TEST_ASSERT(w != NULL && s.w != NULL, "workers");
	s.l = unio_listener_create(s.w, &lp, &st[0]);
	TEST_ASSERT(s.l != NULL, "listener: %s", unio_status_string(st[0]));
	TEST_ASSERT_EQ(pthread_create(&t, NULL, serve, &s), 0);
	for (int i = 0; i < 3; i++)
		ep[i] = api_connect(w, port, NULL, NULL, &st[i]);
	TEST_ASSERT(ep[0] == NULL && ep[2] == NULL, "a rejected request got an ep");
	TEST_ASSERT_STATUS(st[0], UNIO_ERR_REJECTED);
	TEST_ASSERT_STATUS(st[2], UNIO_ERR_REJECTED);
	TEST_ASSERT(ep[1] != NULL, "the accepted request: %s", unio_status_string(st[1]));
	TEST_ASSERT(strcmp(ep[1]->lane.iface->driver->name, drv) == 0, "lane %s, want %s",
		    ep[1]->lane.iface->driver->name, drv);
	TEST_ASSERT_STATUS(api_send(w, ep[1], &v, sizeof(v), 0x77, 1), UNIO_OK);
	TEST_ASSERT_STATUS(api_recv(w, &answer, sizeof(answer), 0x78, UINT64_MAX, &info),
			   UNIO_OK);
	TEST_ASSERT_EQ(answer, 0x1235);
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	TEST_ASSERT_EQ(__atomic_load_n(&s.got, __ATOMIC_ACQUIRE), 1);
	TEST_ASSERT_EQ(s.failed, 0);
	TEST_ASSERT_EQ(s.calls, 3);
	TEST_ASSERT_EQ(s.rejected, 2);
	unio_ep_close(ep[1], UNIO_EP_CLOSE_FORCE, NULL);
	unio_ep_close(s.accepted, UNIO_EP_CLOSE_FORCE, NULL);
	unio_listener_destroy(s.l);
	unio_worker_destroy(s.w);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return TEST_OK;
}

UNIO_TEST(api_listener_reject_shm, fast)
{
	return reject("shm,self", "shm");
}

UNIO_TEST(api_listener_reject_tcp, fast)
{
	return reject("tcp,self", "tcp");
}

static void
on_conn_accept(unio_conn_request_t *cr, void *arg)
{
	struct server *s = arg;
	struct unio_ep_params p = { .field_mask = UNIO_EP_PARAM_CONN_REQUEST,
				    .conn_request = cr };
	unio_status_t st = UNIO_OK;

	s->calls++;
	s->accepted = unio_ep_create(s->w, &p, &st);
	/* nothing reaches the client: the accept fails, the client is told why */
	if (s->accepted != NULL || st != UNIO_ERR_UNREACHABLE)
		__atomic_store_n(&s->failed, 1, __ATOMIC_RELAXED);
}

static void *
serve_only(void *arg)
{
	struct server *s = arg;

	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE))
		unio_worker_progress(s->w);
	return NULL;
}

/* @p ok, with the client's status and the log shown; the log freed. */
static bool
told(bool ok, unio_status_t st, char *text)
{
	TEST_LOG("client: %s; log: %s", unio_status_string(st), text != NULL ? text : "");
	free(text);
	return ok;
}

/*
 * One unio_ep_create() from @p w to a listener of s->w (params @p lp) served by @p loop on
 * its own thread, with what was logged meanwhile in *@p text (and, @p err set, why through
 * UNIO_EP_PARAM_ERR_INFO): the listener is gone after.
 */
static unio_ep_t *
dial_served(struct server *s, const struct unio_listener_params *lp, void *(*loop)(void *),
	    unio_worker_t *w, struct unio_ep_error *err, unio_status_t *st, char **text)
{
	struct unio_ep_params cp = { .field_mask = UNIO_EP_PARAM_SOCKADDR,
				     .sockaddr = lp->sockaddr, .addrlen = lp->addrlen,
				     .err_info = err };
	unio_ep_t *ep = NULL;
	pthread_t t;

	if (err != NULL)
		cp.field_mask |= UNIO_EP_PARAM_ERR_INFO;
	*text = NULL;
	__atomic_store_n(&s->stop, 0, __ATOMIC_RELEASE);
	s->l = unio_listener_create(s->w, lp, st);
	if (s->l == NULL || pthread_create(&t, NULL, loop, s) != 0) {
		TEST_LOG("listener or thread: %s", unio_status_string(*st));
		unio_listener_destroy(s->l);
		return NULL;
	}
	ep = api_ep_create_logged(w, &cp, st, text);
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	unio_listener_destroy(s->l);
	return ep;
}

/*
 * A server whose handler accepts but whose worker reaches none of the client's ifaces
 * (the server allowed only self, the client shm and self): the client's unio_ep_create()
 * fails with UNIO_ERR_UNREACHABLE and logs both sides' ifaces from the server's view.  It
 * failed with UNIO_ERR_REJECTED, "rejected by peer", as if the handler had said no, and
 * only the server's log said why.
 */
UNIO_TEST(api_listener_unreachable_client, fast)
{
	static const char *const only_self[] = { "TLS", "self", NULL };
	static const char *const shm_self[] = { "TLS", "shm,self", NULL };
	unio_context_t *cs = api_ctx(only_self), *cc = api_ctx(shm_self);
	struct server s = { 0 };
	int port = test_free_port();
	struct sockaddr_in a = api_loopback(port);
	struct unio_listener_params lp = api_listener_params(&a, on_conn_accept, &s);
	struct unio_ep_error err = { .status = UNIO_OK };
	unio_status_t st = UNIO_OK;
	unio_worker_t *w;
	unio_ep_t *ep;
	char *text = NULL, want[128];
	int ok;

	TEST_ASSERT(cs != NULL && cc != NULL, "contexts");
	w = unio_worker_create(cc, NULL, NULL);
	s.w = unio_worker_create(cs, NULL, NULL);
	TEST_ASSERT(w != NULL && s.w != NULL, "workers");
	/* one unio_ep_create(), its log kept */
	ep = dial_served(&s, &lp, serve_only, w, NULL, &st, &text);
	/* the ERR line says why (the server's says its side): no WARNING repeats it */
	ok = ep == NULL && st == UNIO_ERR_UNREACHABLE && text != NULL &&
	     strstr(text, "the peer reaches none of this worker's ifaces: it has self/") != NULL &&
	     strstr(text, "; this worker offers ") != NULL && strstr(text, "shm/") != NULL &&
	     test_count(text, "UNIO WARNING") == 0;
	TEST_ASSERT(told(ok, st, text), "the client was not told why");
	/* the same through the API, with the address */
	ep = dial_served(&s, &lp, serve_only, w, &err, &st, &text);
	snprintf(want, sizeof(want), "connect to 127.0.0.1 port %d: destination is unreachable "
		 "(the peer reaches none of this worker's ifaces: it has self/", port);
	ok = ep == NULL && st == UNIO_ERR_UNREACHABLE && err.status == st &&
	     strncmp(err.reason, want, strlen(want)) == 0 &&
	     strstr(err.reason, "; this worker offers ") != NULL &&
	     strstr(err.reason, "shm/") != NULL && err.sys_errno == 0 &&
	     strstr(err.peer, "127.0.0.1 port ") == err.peer && text != NULL &&
	     test_count(text, "the peer reaches none") == 0 &&
	     test_count(text, "UNIO WARNING") == 0;
	TEST_LOG("reason: %s", err.reason);
	TEST_ASSERT(told(ok, st, text), "the API did not say why");
	TEST_ASSERT_EQ(s.calls, 2);
	TEST_ASSERT_EQ(s.failed, 0);
	unio_worker_destroy(s.w);
	unio_worker_destroy(w);
	unio_context_destroy(cs);
	unio_context_destroy(cc);
	return TEST_OK;
}

/*
 * A connect that fails the user's unio_ep_create() is said at the default log level, once,
 * with the address and why: nobody listens (the kernel refused), or the listener's handler
 * rejected.  Both were logged at INFO only, so a user saw nothing but the status.
 */
UNIO_TEST(api_connect_failure_logged, fast)
{
	static const char *const tcp_self[] = { "TLS", "tcp,self", NULL };
	unio_context_t *ctx = api_ctx(tcp_self);
	struct server s = { 0 };
	int port = test_free_port();
	struct sockaddr_in a = api_loopback(port);
	struct unio_listener_params lp = api_listener_params(&a, on_conn, &s);
	struct unio_ep_params cp = { .field_mask = UNIO_EP_PARAM_SOCKADDR,
				     .sockaddr = (struct sockaddr *)&a, .addrlen = sizeof(a) };
	unio_status_t st = UNIO_OK;
	char want[128], *text;
	unio_worker_t *w;
	unio_ep_t *ep;
	int ok;

	TEST_ASSERT(ctx != NULL && port > 0, "context, port");
	w = unio_worker_create(ctx, NULL, NULL);
	TEST_ASSERT(w != NULL, "worker");
	ep = api_ep_create_logged(w, &cp, &st, &text);
	snprintf(want, sizeof(want), "UNIO WARNING: connect to 127.0.0.1 port %d: destination "
		 "is unreachable (Connection refused)\n", port);
	ok = ep == NULL && st == UNIO_ERR_UNREACHABLE && test_count(text, want) == 1 &&
	     test_count(text, "UNIO ERR") + test_count(text, "UNIO WARNING") == 1;
	TEST_ASSERT(told(ok, st, text), "the refused connect was not said once at WARNING");
	/* the handler rejects its first request */
	s.w = unio_worker_create(ctx, NULL, NULL);
	TEST_ASSERT(s.w != NULL, "server worker");
	ep = dial_served(&s, &lp, serve, w, NULL, &st, &text);
	snprintf(want, sizeof(want), "UNIO WARNING: connect to 127.0.0.1 port %d: rejected by "
		 "peer\n", port);
	ok = ep == NULL && st == UNIO_ERR_REJECTED && text != NULL && test_count(text, want) == 1 &&
	     test_count(text, "UNIO ERR") + test_count(text, "UNIO WARNING") == 1;
	TEST_ASSERT(told(ok, st, text), "the rejected connect was not said once at WARNING");
	TEST_ASSERT(s.calls == 1 && s.rejected == 1, "the handler ran %u times, rejected %u",
		    s.calls, s.rejected);
	unio_worker_destroy(s.w);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return TEST_OK;
}

/* unio_ep_create() by @p a with UNIO_EP_PARAM_ERR_INFO into *@p err; what it logged freed. */
static unio_ep_t *
create_told(unio_worker_t *w, struct sockaddr_in *a, struct unio_ep_error *err,
	    unio_status_t *st, unsigned int *said)
{
	struct unio_ep_params cp = { .field_mask = UNIO_EP_PARAM_SOCKADDR |
						   UNIO_EP_PARAM_ERR_INFO,
				     .sockaddr = (struct sockaddr *)a, .addrlen = sizeof(*a),
				     .err_info = err };
	unio_ep_t *ep;
	char *text;

	memset(err, 0x5a, sizeof(*err));   /* every field must be written */
	ep = api_ep_create_logged(w, &cp, st, &text);
	*said = test_count(text, "UNIO ERR") + test_count(text, "UNIO WARNING");
	TEST_LOG("status %s, errno %d, peer '%.64s', reason '%.512s'; log: %s",
		 unio_status_string(*st), err->sys_errno, err->peer, err->reason, text);
	free(text);
	return ep;
}

/*
 * Why a connect failed, through the API (UNIO_EP_PARAM_ERR_INFO), not the log: nothing
 * listens (UNIO_ERR_UNREACHABLE, ECONNREFUSED), the listener's handler rejects
 * (UNIO_ERR_REJECTED), a listening socket that never answers (UNIO_ERR_TIMED_OUT within a
 * UNIO_PEER_TIMEOUT of 300 ms); each reason names the address, and the library says none of
 * them at warning level (the caller does).  A success writes UNIO_OK and an empty reason;
 * the flag without err_info is an invalid parameter.
 */
UNIO_TEST(api_connect_failure_reason, fast)
{
	static const char *const ovr[] = { "TLS", "tcp,self", "PEER_TIMEOUT", "300ms", NULL };
	unio_context_t *ctx = api_ctx(ovr);
	struct server s = { .calls = 0 };   /* on_conn() rejects its first request */
	int port = test_free_port(), mute = test_free_port(), fd;
	struct sockaddr_in a = api_loopback(port), m = api_loopback(mute);
	struct unio_listener_params lp = api_listener_params(&a, on_conn, &s);
	struct unio_ep_params bad = { .field_mask = UNIO_EP_PARAM_SOCKADDR |
						    UNIO_EP_PARAM_ERR_INFO,
				      .sockaddr = (struct sockaddr *)&a, .addrlen = sizeof(a) };
	struct unio_ep_error err;
	unio_status_t st = UNIO_OK;
	unsigned int said;
	char want[160], *text;
	unio_worker_t *w;
	unio_ep_t *ep;
	pthread_t t;

	TEST_ASSERT(ctx != NULL && port > 0 && mute > 0, "context, ports");
	w = unio_worker_create(ctx, NULL, NULL);
	s.w = unio_worker_create(ctx, NULL, NULL);
	TEST_ASSERT(w != NULL && s.w != NULL, "workers");
	TEST_ASSERT(unio_ep_create(w, &bad, &st) == NULL, "ERR_INFO without err_info");
	TEST_ASSERT_STATUS(st, UNIO_ERR_INVALID_PARAM);
	/* refused: nobody listens */
	ep = create_told(w, &a, &err, &st, &said);
	snprintf(want, sizeof(want), "connect to 127.0.0.1 port %d: destination is unreachable "
		 "(Connection refused)", port);
	TEST_ASSERT(ep == NULL && st == UNIO_ERR_UNREACHABLE && err.status == st &&
		    err.sys_errno == ECONNREFUSED && strcmp(err.reason, want) == 0, "refused");
	snprintf(want, sizeof(want), "127.0.0.1 port %d", port);
	TEST_ASSERT(strcmp(err.peer, want) == 0 && said == 0, "refused: peer, said %u", said);
	/* rejected by the listener's handler */
	s.l = unio_listener_create(s.w, &lp, &st);
	TEST_ASSERT(s.l != NULL, "listener: %s", unio_status_string(st));
	TEST_ASSERT_EQ(pthread_create(&t, NULL, serve, &s), 0);
	ep = create_told(w, &a, &err, &st, &said);
	snprintf(want, sizeof(want), "connect to 127.0.0.1 port %d: rejected by peer", port);
	TEST_ASSERT(ep == NULL && st == UNIO_ERR_REJECTED && err.status == st &&
		    err.sys_errno == 0 && strcmp(err.reason, want) == 0 && said == 0, "rejected");
	/* accepted: UNIO_OK and nothing to say */
	ep = create_told(w, &a, &err, &st, &said);
	snprintf(want, sizeof(want), "127.0.0.1 port %d", port);
	TEST_ASSERT(ep != NULL && st == UNIO_OK && err.status == UNIO_OK &&
		    err.reason[0] == '\0' && strcmp(err.peer, want) == 0 && said == 0,
		    "accepted: %s", unio_status_string(st));
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	TEST_ASSERT(s.calls == 2 && s.rejected == 1 && s.failed == 0, "handler: %u calls",
		    s.calls);
	unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
	unio_ep_close(s.accepted, UNIO_EP_CLOSE_FORCE, NULL);
	unio_listener_destroy(s.l);
	/* timed out: a kernel socket listens (the connect succeeds) but never answers */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	TEST_ASSERT(fd >= 0 && bind(fd, (struct sockaddr *)&m, sizeof(m)) == 0 &&
		    listen(fd, 4) == 0, "mute socket");
	ep = create_told(w, &m, &err, &st, &said);
	close(fd);
	snprintf(want, sizeof(want), "connect to 127.0.0.1 port %d: timed out (no answer within "
		 "UNIO_PEER_TIMEOUT, 300 ms)", mute);
	TEST_ASSERT(ep == NULL && st == UNIO_ERR_TIMED_OUT && err.status == st &&
		    err.sys_errno == 0 && strcmp(err.reason, want) == 0 && said == 0, "timeout");
	/* without ERR_INFO a refusal is still said at warning level, once */
	bad.field_mask = UNIO_EP_PARAM_SOCKADDR;
	ep = api_ep_create_logged(w, &bad, &st, &text);
	snprintf(want, sizeof(want), "UNIO WARNING: connect to 127.0.0.1 port %d: destination "
		 "is unreachable (Connection refused)\n", port);
	TEST_ASSERT(ep == NULL && test_count(text, want) == 1 &&
		    test_count(text, "UNIO ") == 1, "not said once: %s", text);
	free(text);
	unio_worker_destroy(s.w);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return TEST_OK;
}

/* What the client's error handler saw: its status and unio_ep_query() from inside it. */
struct failed {
	unsigned int calls;
	unio_status_t st;
	unio_status_t query_st;
	struct unio_ep_attr attr;
};

static void
on_ep_error(void *arg, unio_ep_t *ep, unio_status_t st)
{
	struct failed *f = arg;

	f->calls++;
	f->st = st;
	f->attr.field_mask = UNIO_EP_ATTR_FIELD_ERROR;
	f->query_st = unio_ep_query(ep, &f->attr);
}

/*
 * unio_ep_query() names an endpoint's peer (the address dialled; for an accepted one, the
 * client's) and, once it failed, its error and why: a peer that closed its control
 * connection without CLOSE (a force close here, as a killed process) gives the error
 * handler UNIO_ERR_CONNECTION_RESET, and the query from the handler says "ep to 127.0.0.1
 * port P: connection reset by peer (the peer died or reset its control connection)".
 */
UNIO_TEST(api_ep_query_reason, fast)
{
	static const char *const tcp_self[] = { "TLS", "tcp,self", NULL };
	unio_context_t *ctx = api_ctx(tcp_self);
	int port = test_free_port();
	struct unio_ep_attr attr = { .field_mask = UNIO_EP_ATTR_FIELD_ERROR };
	struct failed f = { .calls = 0 };
	unio_status_t st = UNIO_OK;
	unio_ep_t *ep, *srv = NULL;
	unio_listener_t *l;
	unio_worker_t *w;
	char want[160];

	TEST_ASSERT(ctx != NULL && port > 0, "context, port");
	w = unio_worker_create(ctx, NULL, NULL);
	TEST_ASSERT(w != NULL, "worker");
	l = api_listen(w, port, &srv, NULL, NULL);
	TEST_ASSERT(l != NULL, "listener");
	ep = api_connect(w, port, on_ep_error, &f, &st);
	TEST_ASSERT(ep != NULL, "connect: %s", unio_status_string(st));
	for (int i = 0; i < 1000 && srv == NULL; i++)
		unio_worker_progress(w);
	TEST_ASSERT(srv != NULL, "not accepted");
	TEST_ASSERT_STATUS(unio_ep_query(NULL, &attr), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_ep_query(ep, NULL), UNIO_ERR_INVALID_PARAM);
	attr.field_mask = 1ull << 40;
	TEST_ASSERT_STATUS(unio_ep_query(ep, &attr), UNIO_ERR_INVALID_PARAM);
	attr.field_mask = UNIO_EP_ATTR_FIELD_ERROR;
	memset(&attr.error, 0x5a, sizeof(attr.error));
	TEST_ASSERT_STATUS(unio_ep_query(ep, &attr), UNIO_OK);
	snprintf(want, sizeof(want), "127.0.0.1 port %d", port);
	TEST_ASSERT(attr.error.status == UNIO_OK && attr.error.reason[0] == '\0' &&
		    strcmp(attr.error.peer, want) == 0, "working ep: %s, peer '%.64s'",
		    unio_status_string(attr.error.status), attr.error.peer);
	TEST_ASSERT_STATUS(unio_ep_query(srv, &attr), UNIO_OK);
	TEST_ASSERT(attr.error.status == UNIO_OK &&
		    strncmp(attr.error.peer, "127.0.0.1 port ", 15) == 0 &&
		    strcmp(attr.error.peer, want) != 0, "accepted ep: peer '%.64s'",
		    attr.error.peer);
	/* the server side goes away without CLOSE */
	unio_ep_close(srv, UNIO_EP_CLOSE_FORCE, NULL);
	for (int i = 0; i < 100000 && f.calls == 0; i++)
		unio_worker_progress(w);
	snprintf(want, sizeof(want), "ep to 127.0.0.1 port %d: connection reset by peer (the "
		 "peer died or reset its control connection)", port);
	TEST_LOG("handler: %s; query: %s, '%.512s'", unio_status_string(f.st),
		 unio_status_string(f.query_st), f.attr.error.reason);
	TEST_ASSERT(f.calls == 1 && f.st == UNIO_ERR_CONNECTION_RESET && f.query_st == UNIO_OK &&
		    f.attr.error.status == f.st && strcmp(f.attr.error.reason, want) == 0,
		    "the handler's query did not say why");
	TEST_ASSERT_STATUS(unio_ep_query(ep, &attr), UNIO_OK);   /* and later, the same */
	TEST_ASSERT(strcmp(attr.error.reason, want) == 0, "later: '%.512s'", attr.error.reason);
	unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
	unio_listener_destroy(l);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return TEST_OK;
}

/* The server's thread, whose listener comes up 300 ms late (as another process's may). */
static void *
listen_late(void *arg)
{
	struct server *s = arg;
	unio_status_t st;

	usleep(300 * 1000);
	s->l = unio_listener_create(s->w, s->lp, &st);
	if (s->l == NULL) {
		TEST_LOG("listener: %s", unio_status_string(st));
		__atomic_store_n(&s->failed, 1, __ATOMIC_RELAXED);
	}
	return serve(s);
}

/*
 * api_connect() before the listener is up says nothing: it waits for the listening socket
 * (it tried every 10 ms, each refused try logged at warning level since the connect
 * failure is).  To a port where nothing comes up it fails once, said once.
 */
UNIO_TEST(api_connect_waits_for_listener, fast)
{
	static const char *const tcp_self[] = { "TLS", "tcp,self", NULL };
	unio_context_t *ctx = api_ctx(tcp_self);
	struct server s = { .calls = 1 };   /* on_conn() accepts the first request */
	int port = test_free_port(), none = test_free_port();
	struct sockaddr_in a = api_loopback(port);
	struct unio_listener_params lp = api_listener_params(&a, on_conn, &s);
	unio_status_t st = UNIO_OK;
	struct api_log l;
	unio_worker_t *w;
	unio_ep_t *ep;
	pthread_t t;
	char *text;
	int ok;

	TEST_ASSERT(ctx != NULL && port > 0 && none > 0, "context, ports");
	w = unio_worker_create(ctx, NULL, NULL);
	s.w = unio_worker_create(ctx, NULL, NULL);
	s.lp = &lp;
	TEST_ASSERT(w != NULL && s.w != NULL, "workers");
	TEST_ASSERT_EQ(pthread_create(&t, NULL, listen_late, &s), 0);
	api_log_start(&l);
	ep = api_connect(w, port, NULL, NULL, &st);
	text = api_log_end(&l);
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	ok = ep != NULL && test_count(text, "UNIO ") == 0;
	TEST_ASSERT(told(ok, st, text), "a connect while the listener came up was not quiet");
	TEST_ASSERT(s.calls == 2 && s.accepted != NULL && s.failed == 0,
		    "the handler ran %u times, accepted %s", s.calls - 1,
		    s.accepted != NULL ? "it" : "nothing");
	unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
	unio_ep_close(s.accepted, UNIO_EP_CLOSE_FORCE, NULL);
	unio_listener_destroy(s.l);
	/* a real failure is still said, once */
	api_log_start(&l);
	ep = api_connect_within(w, none, 300, NULL, NULL, &st);
	text = api_log_end(&l);
	ok = ep == NULL && st == UNIO_ERR_UNREACHABLE &&
	     test_count(text, "UNIO WARNING: connect to 127.0.0.1 port ") == 1 &&
	     test_count(text, "(Connection refused)") == 1 && test_count(text, "UNIO ") == 1;
	TEST_ASSERT(told(ok, st, text), "nothing listening was not said once");
	unio_worker_destroy(s.w);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return TEST_OK;
}
