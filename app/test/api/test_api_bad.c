/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bad input on every public call: NULL and out-of-range parameters, malformed worker
 * addresses, a closed endpoint, receive buffers smaller than the message (truncation,
 * nothing written), a connection refused.
 */

#include <sys/socket.h>
#include <unistd.h>

#include "api_common.h"
#include "unio_proto.h"

static void
conn_nop(unio_conn_request_t *cr, void *arg)
{
	RTE_SET_USED(cr), RTE_SET_USED(arg);
}

static int
bad_worker_calls(unio_context_t *ctx, unio_worker_t *w)
{
	struct unio_worker_params wp = { .field_mask = UNIO_WORKER_PARAM_THREAD_MODE,
					 .thread_mode = 7 };
	unio_status_t st = UNIO_OK;
	void *addr;
	size_t len;
	int fd;

	TEST_ASSERT(unio_worker_create(NULL, NULL, &st) == NULL, "worker without context");
	TEST_ASSERT_STATUS(st, UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT(unio_worker_create(ctx, &wp, &st) == NULL, "thread mode 7");
	TEST_ASSERT_STATUS(st, UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_EQ(unio_worker_progress(NULL), 0);
	TEST_ASSERT_STATUS(unio_worker_get_efd(NULL, &fd), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_worker_get_efd(w, NULL), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_worker_arm(NULL), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_worker_signal(NULL), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_worker_get_address(NULL, &addr, &len), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_worker_get_address(w, NULL, &len), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_worker_get_address(w, &addr, NULL), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_worker_flush(NULL, NULL, NULL), UNIO_ERR_INVALID_PARAM);
	unio_worker_destroy(NULL);
	unio_context_destroy(NULL);
	unio_worker_release_address(w, NULL);
	return TEST_OK;
}

static int
bad_listener_calls(unio_worker_t *w)
{
	struct sockaddr_in a = api_loopback(0);
	struct unio_listener_params lp = {
		.field_mask = UNIO_LISTENER_PARAM_SOCKADDR,
		.sockaddr = (struct sockaddr *)&a, .addrlen = sizeof(a),
	};
	struct sockaddr_storage ss;
	unio_status_t st = UNIO_OK;

	TEST_ASSERT(unio_listener_create(NULL, &lp, &st) == NULL, "no worker");
	TEST_ASSERT_STATUS(st, UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT(unio_listener_create(w, NULL, &st) == NULL, "no params");
	TEST_ASSERT(unio_listener_create(w, &lp, &st) == NULL, "no handler");
	TEST_ASSERT_STATUS(st, UNIO_ERR_INVALID_PARAM);
	lp.field_mask |= UNIO_LISTENER_PARAM_HANDLER;
	lp.conn_handler = conn_nop;
	lp.addrlen = 3;
	TEST_ASSERT(unio_listener_create(w, &lp, &st) == NULL, "addrlen 3");
	TEST_ASSERT_STATUS(st, UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_listener_query(NULL, &ss), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_listener_reject(NULL, NULL), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_conn_request_query(NULL, &ss), UNIO_ERR_INVALID_PARAM);
	unio_listener_destroy(NULL);
	return TEST_OK;
}

static int
bad_ep_calls(unio_worker_t *w)
{
	struct sockaddr_in a = api_loopback(test_free_port());
	struct unio_ep_params p = { .field_mask = 0 };
	struct wire_hdr { uint32_t magic; uint16_t version; uint16_t n; uint64_t uuid; } bad;
	unio_status_t st = UNIO_OK;
	uint8_t junk[64];

	TEST_ASSERT(unio_ep_create(w, NULL, &st) == NULL, "no params");
	TEST_ASSERT_STATUS(st, UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT(unio_ep_create(NULL, &p, &st) == NULL, "no worker");
	TEST_ASSERT(unio_ep_create(w, &p, &st) == NULL, "no mode");
	TEST_ASSERT_STATUS(st, UNIO_ERR_INVALID_PARAM);
	p.field_mask = UNIO_EP_PARAM_SOCKADDR | UNIO_EP_PARAM_WORKER_ADDR;
	TEST_ASSERT(unio_ep_create(w, &p, &st) == NULL, "two modes");
	TEST_ASSERT_STATUS(st, UNIO_ERR_INVALID_PARAM);
	p.field_mask = UNIO_EP_PARAM_WORKER_ADDR;
	memset(junk, 0x41, sizeof(junk));
	p.worker_addr = junk;
	p.worker_addr_len = sizeof(junk);
	TEST_ASSERT(unio_ep_create(w, &p, &st) == NULL, "junk address");
	TEST_ASSERT_STATUS(st, UNIO_ERR_INVALID_ADDR);
	bad = (struct wire_hdr){ UNIO_WIRE_MAGIC, UNIO_WIRE_VERSION + 1, 0, 1 };
	p.worker_addr = &bad;
	p.worker_addr_len = sizeof(bad);
	TEST_ASSERT(unio_ep_create(w, &p, &st) == NULL, "address of another version");
	TEST_ASSERT_STATUS(st, UNIO_ERR_VERSION_MISMATCH);
	bad = (struct wire_hdr){ UNIO_WIRE_MAGIC, UNIO_WIRE_VERSION, 5, 1 };
	TEST_ASSERT(unio_ep_create(w, &p, &st) == NULL, "truncated address");
	TEST_ASSERT_STATUS(st, UNIO_ERR_INVALID_ADDR);
	p.field_mask = UNIO_EP_PARAM_SOCKADDR;
	p.sockaddr = (struct sockaddr *)&a;
	p.addrlen = sizeof(a);
	TEST_ASSERT(unio_ep_create(w, &p, &st) == NULL, "nobody listens");
	TEST_ASSERT_STATUS(st, UNIO_ERR_UNREACHABLE);
	TEST_ASSERT_STATUS(unio_ep_close(NULL, UNIO_EP_CLOSE_FORCE, NULL), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_ep_flush(NULL, NULL, NULL), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT(unio_ep_get_user_data(NULL) == NULL, "user data of NULL");
	return TEST_OK;
}

/*
 * Request parameters no version defines (a field_mask bit, a flag): every tagged call
 * refuses them, the receive's fast path (full mask, a request pointer) too, and does nothing:
 * no message sent, no receive posted.  Then one valid message proves the queues empty.
 */
static int
bad_tag_params(unio_worker_t *w, unio_ep_t *ep)
{
	const struct unio_request_param bad[] = {
		{ .field_mask = UINT64_C(1) << 63 },
		{ .field_mask = UNIO_REQ_PARAM_FLAGS, .flags = 1u << 7 },
	};
	struct unio_recv_info info = { 0, 0 };
	unio_request_t *req = NULL;
	uint8_t b[8] = { 7, 7, 7, 7, 7, 7, 7, 7 }, r[8] = { 0 };
	unio_tag_msg_t *msg = NULL;
	unio_status_t st;

	for (size_t i = 0; i < RTE_DIM(bad); i++) {
		TEST_ASSERT_STATUS(unio_tag_send(ep, b, 8, 5, &bad[i], &req),
				   UNIO_ERR_INVALID_PARAM);
		TEST_ASSERT_STATUS(unio_tag_send_sync(ep, b, 8, 5, &bad[i], &req),
				   UNIO_ERR_INVALID_PARAM);
		TEST_ASSERT_STATUS(unio_tag_recv(w, r, 8, 5, UINT64_MAX, &bad[i], &req),
				   UNIO_ERR_INVALID_PARAM);
		TEST_ASSERT_STATUS(unio_tag_recv(w, r, 8, 5, 0, &bad[i], &req),
				   UNIO_ERR_INVALID_PARAM);
	}
	for (int i = 0; i < 10; i++)
		unio_worker_progress(w);
	TEST_ASSERT_STATUS(unio_tag_probe(w, 0, 0, 0, &info, NULL), UNIO_ERR_NOT_FOUND);
	/* one valid message: unexpected (no receive was posted), then taken by tag_msg_recv */
	TEST_ASSERT_STATUS(unio_tag_send(ep, b, 8, 6, NULL, NULL), UNIO_OK);
	for (int i = 0; i < 10; i++)
		unio_worker_progress(w);
	TEST_ASSERT_STATUS(unio_tag_probe(w, 6, UINT64_MAX, 1, &info, &msg), UNIO_OK);
	TEST_ASSERT_EQ(info.length, 8);
	for (size_t i = 0; i < RTE_DIM(bad); i++)
		TEST_ASSERT_STATUS(unio_tag_msg_recv(w, r, 8, msg, &bad[i], &req),
				   UNIO_ERR_INVALID_PARAM);
	st = unio_tag_msg_recv(w, r, 8, msg, NULL, &req);
	if (st == UNIO_INPROGRESS)
		st = unio_request_wait(w, req, &info);
	TEST_ASSERT_STATUS(st, UNIO_OK);
	TEST_ASSERT(memcmp(r, b, 8) == 0, "the message's bytes");
	TEST_ASSERT_STATUS(unio_tag_probe(w, 0, 0, 0, &info, NULL), UNIO_ERR_NOT_FOUND);
	return TEST_OK;
}

static int
bad_tag_calls(unio_worker_t *w, unio_ep_t *ep)
{
	struct unio_recv_info info;
	unio_tag_msg_t *msg;
	unio_request_t *req;
	uint8_t b[8];

	TEST_ASSERT_STATUS(unio_tag_send(NULL, b, 8, 1, NULL, &req), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_tag_send(ep, NULL, 8, 1, NULL, &req), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_tag_send_sync(NULL, b, 8, 1, NULL, &req),
			   UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_tag_recv(NULL, b, 8, 1, 0, NULL, &req), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_tag_recv(w, NULL, 8, 1, 0, NULL, &req), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_tag_probe(NULL, 1, 0, 0, &info, NULL), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_tag_probe(w, 1, 0, 0, NULL, NULL), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_tag_probe(w, 1, 0, 1, &info, NULL), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_tag_probe(w, 1, 0, 1, &info, &msg), UNIO_ERR_NOT_FOUND);
	TEST_ASSERT_STATUS(unio_tag_msg_recv(w, b, 8, NULL, NULL, &req), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_request_test(NULL, &info), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_request_wait(NULL, NULL, &info), UNIO_ERR_INVALID_PARAM);
	unio_request_cancel(w, NULL);
	unio_request_free(NULL);
	return bad_tag_params(w, ep);
}

/* A message longer than the receive buffer: truncation reported, nothing written. */
static int
truncation(unio_worker_t *w, unio_ep_t *ep, size_t len, int unexpected)
{
	uint8_t *s = malloc(len), *r = malloc(len);
	unio_request_t *sreq = NULL, *rreq = NULL;
	struct unio_recv_info info = { 0, 0 };
	unio_status_t sst = UNIO_OK, rst;
	size_t half = len / 2;

	TEST_ASSERT(s != NULL && r != NULL, "malloc");
	test_fill(s, len, len);
	memset(r, 0x5a, len);
	if (unexpected) {
		sst = unio_tag_send(ep, s, len, 42, NULL, &sreq);
		for (int i = 0; i < 10; i++)
			unio_worker_progress(w);
	}
	rst = unio_tag_recv(w, r, half, 42, UINT64_MAX, NULL, &rreq);
	if (!unexpected)
		sst = unio_tag_send(ep, s, len, 42, NULL, &sreq);
	if (rst == UNIO_INPROGRESS)
		rst = unio_request_wait(w, rreq, &info);
	if (sst == UNIO_INPROGRESS)
		sst = unio_request_wait(w, sreq, NULL);
	TEST_ASSERT(rst == UNIO_ERR_MESSAGE_TRUNCATED, "%zu bytes into %zu: %s", len, half,
		    unio_status_string(rst));
	TEST_ASSERT(sst == UNIO_OK, "sender of a truncated message: %s", unio_status_string(sst));
	for (size_t i = 0; i < len; i++)
		TEST_ASSERT(r[i] == 0x5a, "byte %zu of the receive buffer was written", i);
	free(s);
	free(r);
	return TEST_OK;
}

UNIO_TEST(api_bad_input, fast)
{
	static const char *const ovr[] = { "TLS", "self", "RNDV_THRESH", "16k", NULL };
	unio_context_t *ctx = api_ctx(ovr);
	unio_worker_t *w;
	unio_status_t st;
	unio_ep_t *ep;
	uint8_t b[8] = { 0 };

	TEST_ASSERT(ctx != NULL, "context");
	w = unio_worker_create(ctx, NULL, &st);
	TEST_ASSERT(w != NULL, "worker");
	ep = api_ep_to_worker(w, w, &st);
	TEST_ASSERT(ep != NULL, "ep: %s", unio_status_string(st));
	TEST_ASSERT_EQ(bad_worker_calls(ctx, w), TEST_OK);
	TEST_ASSERT_EQ(bad_listener_calls(w), TEST_OK);
	TEST_ASSERT_EQ(bad_ep_calls(w), TEST_OK);
	TEST_ASSERT_EQ(bad_tag_calls(w, ep), TEST_OK);
	for (int u = 0; u < 2; u++) {
		TEST_ASSERT_EQ(truncation(w, ep, 100, u), TEST_OK);           /* short */
		TEST_ASSERT_EQ(truncation(w, ep, ep->lane.max_eager, u), TEST_OK);
		TEST_ASSERT_EQ(truncation(w, ep, ep->lane.frag * 3, u), TEST_OK);
		TEST_ASSERT_EQ(truncation(w, ep, 100000, u), TEST_OK);        /* rendezvous */
	}
	TEST_ASSERT_STATUS(unio_ep_close(ep, UNIO_EP_CLOSE_FLUSH, NULL), UNIO_OK);
	TEST_ASSERT_STATUS(unio_tag_send(ep, b, 8, 1, NULL, NULL), UNIO_ERR_NOT_CONNECTED);
	TEST_ASSERT_STATUS(unio_tag_send_sync(ep, b, 8, 1, NULL, NULL), UNIO_ERR_NOT_CONNECTED);
	TEST_ASSERT_STATUS(unio_ep_flush(ep, NULL, NULL), UNIO_ERR_NOT_CONNECTED);
	TEST_ASSERT_STATUS(unio_ep_close(ep, UNIO_EP_CLOSE_FLUSH, NULL), UNIO_ERR_NOT_CONNECTED);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return TEST_OK;
}

/* A connection that never sends its HELLO neither blocks the listener nor leaks. */
UNIO_TEST(api_listener_silent_peer, fast)
{
	/* a listener that waited for the HELLO would hang here far beyond the test timeout */
	static const char *const ovr[] = { "PEER_TIMEOUT", "1000s", NULL };
	unio_context_t *ctx = api_ctx(ovr);
	unio_worker_t *w = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	int port = test_free_port(), raw;
	struct sockaddr_in a = api_loopback(port);
	unio_ep_t *accepted = NULL, *ep;
	unio_listener_t *l;
	unio_status_t st;
	uint32_t v = 7, got = 0;
	struct unio_recv_info info;

	TEST_ASSERT(w != NULL, "worker");
	l = api_listen(w, port, &accepted, NULL, NULL);
	TEST_ASSERT(l != NULL, "listener");
	raw = socket(AF_INET, SOCK_STREAM, 0);
	TEST_ASSERT(raw >= 0 && connect(raw, (struct sockaddr *)&a, sizeof(a)) == 0,
		    "raw connect");
	for (int i = 0; i < 100; i++)
		unio_worker_progress(w);   /* the silent connection is accepted, pending */
	ep = api_connect(w, port, NULL, NULL, &st);
	TEST_ASSERT(ep != NULL, "a real client behind a silent one: %s", unio_status_string(st));
	TEST_ASSERT(accepted != NULL, "the listener did not accept the real client");
	TEST_ASSERT_STATUS(api_send(w, ep, &v, sizeof(v), 9, 0), UNIO_OK);
	TEST_ASSERT_STATUS(api_recv(w, &got, sizeof(got), 9, UINT64_MAX, &info), UNIO_OK);
	TEST_ASSERT_EQ(got, 7);
	close(raw);
	unio_ep_close(ep, UNIO_EP_CLOSE_FLUSH, NULL);
	unio_ep_close(accepted, UNIO_EP_CLOSE_FLUSH, NULL);
	unio_listener_destroy(l);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return TEST_OK;
}

/* unio_context_create(): unknown fields and features, none at all, a NULL config. */
UNIO_TEST(api_context_bad_params, fast)
{
	struct unio_context_params p = { .field_mask = UNIO_CONTEXT_PARAM_FEATURES,
					 .features = UNIO_FEATURE_TAG };
	struct unio_config *cfg;
	unio_context_t *ctx;
	unio_status_t st;

	p.field_mask |= 1ull << 10;
	st = UNIO_OK;
	TEST_ASSERT(unio_context_create(&p, &st) == NULL, "an unknown field");
	TEST_ASSERT_STATUS(st, UNIO_ERR_INVALID_PARAM);
	p.field_mask = UNIO_CONTEXT_PARAM_FEATURES;
	p.features = UNIO_FEATURE_TAG | (1ull << 20);
	st = UNIO_OK;
	TEST_ASSERT(unio_context_create(&p, &st) == NULL, "an unknown feature");
	TEST_ASSERT_STATUS(st, UNIO_ERR_INVALID_PARAM);
	p.features = 0;
	st = UNIO_OK;
	TEST_ASSERT(unio_context_create(&p, &st) == NULL, "no feature");
	TEST_ASSERT_STATUS(st, UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT(unio_context_create(&p, NULL) == NULL, "no feature, no status");
	p.field_mask = UNIO_CONTEXT_PARAM_CONFIG;
	p.config = NULL;
	st = UNIO_OK;
	TEST_ASSERT(unio_context_create(&p, &st) == NULL, "a NULL config");
	TEST_ASSERT_STATUS(st, UNIO_ERR_INVALID_PARAM);
	/* the same fields, valid: a context */
	TEST_ASSERT_STATUS(unio_config_read(&cfg), UNIO_OK);
	p.field_mask = UNIO_CONTEXT_PARAM_CONFIG | UNIO_CONTEXT_PARAM_FEATURES |
		       UNIO_CONTEXT_PARAM_NAME;
	p.config = cfg;
	p.features = UNIO_FEATURE_TAG | UNIO_FEATURE_AM | UNIO_FEATURE_RMA | UNIO_FEATURE_WAKEUP;
	p.name = NULL;
	ctx = unio_context_create(&p, &st);
	unio_config_release(cfg);
	TEST_ASSERT(ctx != NULL, "valid parameters: %s", unio_status_string(st));
	unio_context_destroy(ctx);
	ctx = unio_context_create(NULL, &st);
	TEST_ASSERT(ctx != NULL, "no parameters: %s", unio_status_string(st));
	unio_context_destroy(ctx);
	return TEST_OK;
}

/*
 * A peer no iface of this worker reaches (here: a worker allowed only self, a peer allowed
 * only shm): UNIO_ERR_UNREACHABLE, and the error lists both sides' ifaces (it said "no
 * transport reaches the peer (UNIO_TLS?)", also when UNIO_NET_DEVICES was the cause).
 */
UNIO_TEST(api_unreachable_says_why, fast)
{
	static const char *const only_self[] = { "UNIO_TLS", "self", NULL };
	static const char *const only_shm[] = { "UNIO_TLS", "shm", NULL };
	unio_context_t *ca = api_ctx(only_self), *cb = api_ctx(only_shm);
	unio_worker_t *wa = NULL, *wb = NULL;
	unio_status_t st = UNIO_OK;
	unio_ep_t *ep = NULL;
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int ok;

	if (cb == NULL) {
		unio_context_destroy(ca);
		TEST_SKIP_BECAUSE("no shm device");
	}
	TEST_ASSERT(ca != NULL, "context allowed self");
	wa = unio_worker_create(ca, NULL, &st);
	wb = unio_worker_create(cb, NULL, &st);
	TEST_ASSERT(wa != NULL && wb != NULL, "workers: %s", unio_status_string(st));
	f = open_memstream(&text, &len);
	TEST_ASSERT(f != NULL, "memstream");
	rte_openlog_stream(f);
	ep = api_ep_to_worker(wa, wb, &st);
	rte_openlog_stream(NULL);
	fclose(f);
	ok = ep == NULL && st == UNIO_ERR_UNREACHABLE && text != NULL &&
	     strstr(text, "no transport reaches the peer: it offers shm/") != NULL &&
	     strstr(text, "; this worker has self/") != NULL &&
	     strstr(text, "(UNIO_TLS and UNIO_NET_DEVICES choose them, on either side)") != NULL;
	TEST_LOG("ep %p, %s, log: %s", (void *)ep, unio_status_string(st),
		 text != NULL ? text : "");
	free(text);
	if (ep != NULL)
		unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
	unio_worker_destroy(wb);
	unio_worker_destroy(wa);
	unio_context_destroy(cb);
	unio_context_destroy(ca);
	TEST_ASSERT(ok, "no UNIO_ERR_UNREACHABLE with both sides' ifaces");
	return TEST_OK;
}
