/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tagged messages inside one process (the self lane, and a second worker over whatever
 * reaches the host): every size class with random tags and wildcard receives, posted and
 * unexpected; matching order with 10,000 posted and 10,000 unexpected messages; sync sends;
 * probe; truncation; cancel.
 */

#include <rte_cycles.h>

#include "api_common.h"
#include "unio_proto.h"

#define MIB (1024 * 1024)

static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static const uint64_t masks[] = { UINT64_MAX, 0xffffffffffff0000ull, 0 };

/* Send @p len bytes with @p tag and receive them on @p rw, posted first or unexpected. */
static int
one_message(unio_worker_t *sw, unio_ep_t *ep, unio_worker_t *rw, uint8_t *sbuf, uint8_t *rbuf,
	    size_t len, uint64_t tag, unsigned int variant)
{
	uint64_t mask = masks[variant % RTE_DIM(masks)];
	struct unio_request_param rp = { .field_mask = UNIO_REQ_PARAM_RECV_INFO };
	struct unio_recv_info info = { 0, 0 };
	unio_request_t *sreq = NULL, *rreq = NULL;
	unio_status_t sst, rst;
	int sync = variant % 5 == 4;

	rp.recv_info = &info;
	test_fill(sbuf, len, tag);
	memset(rbuf, 0xee, len + 1);
	if (variant & 1) {
		rst = unio_tag_recv(rw, rbuf, len, tag & mask, mask, &rp, &rreq);
		sst = sync ? unio_tag_send_sync(ep, sbuf, len, tag, NULL, &sreq) :
		      unio_tag_send(ep, sbuf, len, tag, NULL, &sreq);
	} else {
		sst = sync ? unio_tag_send_sync(ep, sbuf, len, tag, NULL, &sreq) :
		      unio_tag_send(ep, sbuf, len, tag, NULL, &sreq);
		for (int i = 0; i < 10; i++) {
			unio_worker_progress(sw);
			unio_worker_progress(rw);
		}
		rst = unio_tag_recv(rw, rbuf, len, tag & mask, mask, &rp, &rreq);
	}
	TEST_ASSERT(sst == UNIO_OK || sst == UNIO_INPROGRESS, "send %zu: %s", len,
		    unio_status_string(sst));
	TEST_ASSERT(rst == UNIO_OK || rst == UNIO_INPROGRESS, "recv %zu: %s", len,
		    unio_status_string(rst));
	api_pair_wait(sw, rw, &sst, sreq, &rst, rreq, &info);
	TEST_ASSERT(sst == UNIO_OK, "send %zu (variant %u): %s", len, variant,
		    unio_status_string(sst));
	TEST_ASSERT(rst == UNIO_OK, "recv %zu (variant %u): %s", len, variant,
		    unio_status_string(rst));
	TEST_ASSERT(info.tag == tag && info.length == len, "info tag %#" PRIx64 " len %zu",
		    info.tag, info.length);
	TEST_ASSERT(test_checksum(rbuf, len) == test_checksum(sbuf, len),
		    "payload of %zu bytes differs", len);
	TEST_ASSERT(rbuf[len] == 0xee, "byte past the message was written");
	return TEST_OK;
}

static int
all_sizes(const char *const *ovr, int two_workers, size_t big)
{
	unio_context_t *ctx = api_ctx(ovr);
	unio_worker_t *w, *w2;
	size_t sizes[32];
	uint8_t *sbuf, *rbuf;
	uint64_t seed = 0x1234567;
	unio_status_t st;
	unio_ep_t *ep;
	unsigned int n;
	int rc = TEST_OK;

	TEST_ASSERT(ctx != NULL, "context");
	w = unio_worker_create(ctx, NULL, &st);
	TEST_ASSERT(w != NULL, "worker: %s", unio_status_string(st));
	w2 = two_workers ? unio_worker_create(ctx, NULL, &st) : w;
	TEST_ASSERT(w2 != NULL, "worker 2: %s", unio_status_string(st));
	ep = api_ep_to_worker(w, w2, &st);
	if (ep == NULL && two_workers && st == UNIO_ERR_UNREACHABLE && api_no_host_driver()) {
		unio_worker_destroy(w2);
		unio_worker_destroy(w);
		unio_context_destroy(ctx);
		TEST_SKIP_BECAUSE("no built driver reaches another worker of this host");
	}
	TEST_ASSERT(ep != NULL, "ep: %s", unio_status_string(st));
	n = api_size_classes(ep, big, sizes);
	sbuf = malloc(big + 1);
	rbuf = malloc(big + 1);
	TEST_ASSERT(sbuf != NULL && rbuf != NULL, "malloc");
	for (unsigned int i = 0; i < n && rc == TEST_OK; i++)
		for (unsigned int v = 0; v < 6 && rc == TEST_OK; v++)
			rc = one_message(w, ep, w2, sbuf, rbuf, sizes[i], rnd(&seed), v);
	free(sbuf);
	free(rbuf);
	unio_ep_close(ep, UNIO_EP_CLOSE_FLUSH, NULL);
	if (two_workers)
		unio_worker_destroy(w2);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return rc;
}

UNIO_TEST(api_tag_self_sizes, fast)
{
	static const char *const eager[] = { "TLS", "self", NULL };
	static const char *const get[] = { "TLS", "self", "RNDV_THRESH", "16k",
					   "RNDV_SCHEME", "get", NULL };
	static const char *const pipe[] = { "TLS", "self", "RNDV_THRESH", "16k",
					    "RNDV_SCHEME", "pipeline", NULL };

	TEST_ASSERT_EQ(all_sizes(eager, 0, 4 * MIB), TEST_OK);
	TEST_ASSERT_EQ(all_sizes(get, 0, 64 * MIB), TEST_OK);
	TEST_ASSERT_EQ(all_sizes(pipe, 0, 4 * MIB), TEST_OK);
	return TEST_OK;
}

UNIO_TEST(api_tag_two_workers_sizes, fast)
{
	return all_sizes(NULL, 1, 64 * MIB);
}

/*
 * Two workers of one host, default UNIO_TLS: the lane is shared memory, whatever order the
 * drivers registered in (tcp on lo is of the same reachability class and slower).
 */
UNIO_TEST(api_lane_same_host_default, fast)
{
	unio_context_t *ctx = api_ctx(NULL);
	unio_worker_t *w, *w2;
	char *text = NULL;
	size_t len = 0;
	unio_status_t st;
	unio_ep_t *ep;
	FILE *f;

	TEST_ASSERT(ctx != NULL, "context");
	w = unio_worker_create(ctx, NULL, &st);
	TEST_ASSERT(w != NULL, "worker: %s", unio_status_string(st));
	w2 = unio_worker_create(ctx, NULL, &st);
	TEST_ASSERT(w2 != NULL, "worker 2: %s", unio_status_string(st));
	ep = api_ep_to_worker(w, w2, &st);
	TEST_ASSERT(ep != NULL, "ep: %s", unio_status_string(st));
	f = open_memstream(&text, &len);
	TEST_ASSERT(f != NULL, "memstream");
	unio_ep_print_info(ep, f);
	fclose(f);
	TEST_LOG("%s", text);
	TEST_ASSERT(strstr(text, "lane shm/") != NULL, "same-host lane is not shm: %s", text);
	free(text);
	unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
	unio_worker_destroy(w2);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return TEST_OK;
}

/*
 * More rendezvous gets at once than the transport takes (tcp: 256 outstanding per
 * connection, 1 MiB each): five 64 MiB receives posted together need 320.  The chunks
 * without room wait in the worker's queue; every message arrives intact.  (At most N_BIG
 * messages per window.)
 */
#define N_BIG 16

static int
rndv_window_tcp(const char *const *ovr, size_t len, int n)
{
	unio_context_t *ctx = api_ctx(ovr);
	unio_request_t *sreq[N_BIG], *rreq[N_BIG];
	struct unio_recv_info info[N_BIG];
	uint8_t *sbuf[N_BIG], *rbuf[N_BIG];
	unio_worker_t *w, *w2;
	unio_status_t st;
	unio_ep_t *ep;
	int left = 2 * n;

	TEST_ASSERT(ctx != NULL, "context");
	/*
	 * The buffers first (320 MiB filled for the 64 MiB case): filled between the ep's
	 * creation and the first progress call, they kept the wireup unanswered for longer than
	 * UNIO_PEER_TIMEOUT on a loaded machine ("the peer worker did not answer the wireup").
	 */
	for (int i = 0; i < n; i++) {
		sbuf[i] = malloc(len);
		rbuf[i] = malloc(len);
		TEST_ASSERT(sbuf[i] != NULL && rbuf[i] != NULL, "malloc");
		test_fill(sbuf[i], len, 1000 + i);
		memset(rbuf[i], 0, len);
	}
	w = unio_worker_create(ctx, NULL, &st);
	TEST_ASSERT(w != NULL, "worker: %s", unio_status_string(st));
	w2 = unio_worker_create(ctx, NULL, &st);
	TEST_ASSERT(w2 != NULL, "worker 2: %s", unio_status_string(st));
	ep = api_ep_to_worker(w, w2, &st);
	TEST_ASSERT(ep != NULL, "ep: %s", unio_status_string(st));
	for (int i = 0; i < n; i++) {
		struct unio_request_param rp = { .field_mask = UNIO_REQ_PARAM_RECV_INFO,
						 .recv_info = &info[i] };

		st = unio_tag_recv(w2, rbuf[i], len, 77, UINT64_MAX, &rp, &rreq[i]);
		TEST_ASSERT_EQ(st, UNIO_INPROGRESS);
	}
	for (int i = 0; i < n; i++) {
		st = unio_tag_send(ep, sbuf[i], len, 77, NULL, &sreq[i]);
		TEST_ASSERT(st == UNIO_INPROGRESS, "send %d: %s", i, unio_status_string(st));
	}
	for (uint64_t end = rte_get_tsc_cycles() + 60 * rte_get_tsc_hz();
	     left > 0 && rte_get_tsc_cycles() < end;) {
		unio_worker_progress(w);
		unio_worker_progress(w2);
		left = 0;
		for (int i = 0; i < n; i++) {
			left += unio_request_test(sreq[i], NULL) == UNIO_INPROGRESS;
			left += unio_request_test(rreq[i], NULL) == UNIO_INPROGRESS;
		}
	}
	TEST_ASSERT_EQ(left, 0);
	for (int i = 0; i < n; i++) {
		TEST_ASSERT_EQ(unio_request_test(sreq[i], NULL), UNIO_OK);
		TEST_ASSERT_EQ(unio_request_test(rreq[i], &info[i]), UNIO_OK);
		TEST_ASSERT_EQ(info[i].length, len);
		TEST_ASSERT(test_checksum(rbuf[i], len) == test_checksum(sbuf[i], len),
			    "message %d corrupted", i);
		unio_request_free(sreq[i]);
		unio_request_free(rreq[i]);
		free(sbuf[i]);
		free(rbuf[i]);
	}
	unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
	unio_worker_destroy(w2);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return TEST_OK;
}

UNIO_TEST(api_tag_rndv_get_queue_tcp, mp)
{
	static const char *const ovr[] = { "TLS", "tcp,self", "RNDV_SCHEME", "get", NULL };

	return rndv_window_tcp(ovr, 64 * MIB, 5);
}

/*
 * The same window with the split rendezvous (UNIO_RNDV_SCHEME=split: the auto scheme picks
 * a plain get on tcp), where the sender puts its half.  When tcp has no room for that put,
 * the sender says so (ATS with UNIO_ERR_NO_RESOURCE) and the receiver pulls that half too.
 */
UNIO_TEST(api_tag_rndv_split_queue_tcp, mp)
{
	static const char *const ovr[] = { "TLS", "tcp,self", "RNDV_SCHEME", "split", NULL };

	return rndv_window_tcp(ovr, 4 * MIB, N_BIG);
}

/*
 * A receive callback that calls progress (and tries to wait) on its own worker: each message
 * is delivered once, nothing is left over as an unexpected duplicate, and the wait is
 * refused with UNIO_ERR_BUSY instead of spinning forever.
 */
#define N_NEST 64

struct nest {
	unio_worker_t *w;
	unsigned int calls[N_NEST];
	uint64_t buf[N_NEST];
	unio_status_t wait_st;
};

static struct nest *nest_state;

static void
nest_cb_i(unio_request_t *req, unio_status_t st, const struct unio_recv_info *info, void *arg)
{
	struct nest *n = nest_state;
	uintptr_t i = (uintptr_t)arg;
	unio_request_t *other = NULL;
	uint64_t scratch;

	RTE_SET_USED(st), RTE_SET_USED(info);
	n->calls[i]++;
	unio_request_free(req);
	for (int k = 0; k < 4; k++)
		unio_worker_progress(n->w);
	if (i == 0 && unio_tag_recv(n->w, &scratch, sizeof(scratch), 0xdead, UINT64_MAX, NULL,
				    &other) == UNIO_INPROGRESS) {
		n->wait_st = unio_request_wait(n->w, other, NULL);
		unio_request_cancel(n->w, other);
		unio_request_free(other);
	}
}

UNIO_TEST(api_progress_nested_in_callback, fast)
{
	static const char *const ovr[] = { "TLS", "shm,self", NULL };
	unio_context_t *ctx = api_ctx(ovr);
	static struct nest n;
	unio_worker_t *w;
	struct unio_recv_info info;
	unio_tag_msg_t *msg;
	unsigned int left = 0;
	unio_status_t st;
	unio_ep_t *ep;

	TEST_ASSERT(ctx != NULL, "context");
	memset(&n, 0, sizeof(n));
	nest_state = &n;
	w = unio_worker_create(ctx, NULL, &st);
	TEST_ASSERT(w != NULL, "worker: %s", unio_status_string(st));
	n.w = unio_worker_create(ctx, NULL, &st);
	TEST_ASSERT(n.w != NULL, "worker 2: %s", unio_status_string(st));
	ep = api_ep_to_worker(w, n.w, &st);
	TEST_ASSERT(ep != NULL, "ep: %s", unio_status_string(st));
	TEST_ASSERT(api_ep_connected(w, n.w, ep), "ep never connected");
	for (uintptr_t i = 0; i < N_NEST; i++) {
		struct unio_request_param p = { .field_mask = UNIO_REQ_PARAM_CB |
							      UNIO_REQ_PARAM_USER_DATA,
						.cb = nest_cb_i, .user_data = (void *)i };
		unio_request_t *rq = NULL;

		st = unio_tag_recv(n.w, &n.buf[i], sizeof(n.buf[i]), 100 + i, UINT64_MAX, &p, &rq);
		TEST_ASSERT_EQ(st, UNIO_INPROGRESS);
	}
	for (uint64_t i = 0; i < N_NEST; i++) {
		uint64_t v = i * 3 + 1;

		TEST_ASSERT_STATUS(api_send(w, ep, &v, sizeof(v), 100 + i, 0), UNIO_OK);
	}
	for (int k = 0; k < 100000; k++) {
		unsigned int done = 0;

		unio_worker_progress(n.w);
		for (unsigned int i = 0; i < N_NEST; i++)
			done += n.calls[i] != 0;
		if (done == N_NEST)
			break;
	}
	for (unsigned int i = 0; i < N_NEST; i++) {
		TEST_ASSERT(n.calls[i] == 1, "receive %u completed %u times", i, n.calls[i]);
		TEST_ASSERT(n.buf[i] == (uint64_t)i * 3 + 1, "receive %u: %" PRIu64, i, n.buf[i]);
	}
	while (unio_tag_probe(n.w, 0, 0, 1, &info, &msg) == UNIO_OK) {
		uint64_t v;

		unio_tag_msg_recv(n.w, &v, sizeof(v), msg, NULL, NULL);
		left++;
	}
	TEST_ASSERT(left == 0, "%u messages delivered a second time (unexpected duplicates)", left);
	TEST_ASSERT_STATUS(n.wait_st, UNIO_ERR_BUSY);
	unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
	unio_worker_destroy(n.w);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return TEST_OK;
}

/* ---- ordering: 10,000 posted and 10,000 unexpected ---- */

#define N_ORDER 10000

/*
 * Send @p v with @p tag on @p ep of worker @p ws to worker @p w (the same one over self),
 * progressing both until the send completes: over shm a full ring holds the send back until
 * the receiver drains it.
 */
static unio_status_t
order_send(unio_worker_t *w, unio_worker_t *ws, unio_ep_t *ep, const uint32_t *v, uint64_t tag)
{
	unio_request_t *req = NULL;
	unio_status_t st = unio_tag_send(ep, v, sizeof(*v), tag, NULL, &req);

	return api_op_wait(ws, w, st, req);
}

static int
check_order_posted(unio_worker_t *w, unio_worker_t *ws, unio_ep_t *ep)
{
	static uint32_t got[N_ORDER];
	static unio_request_t *reqs[N_ORDER];
	struct unio_recv_info info;

	/* receives alternate: exact tag 7, any tag, tag 7 under a low-bits mask */
	for (uint32_t i = 0; i < N_ORDER; i++) {
		uint64_t mask = i % 3 == 0 ? UINT64_MAX : i % 3 == 1 ? 0 : 0xff;

		got[i] = UINT32_MAX;
		TEST_ASSERT_STATUS(unio_tag_recv(w, &got[i], sizeof(got[i]), 7, mask, NULL,
						 &reqs[i]), UNIO_INPROGRESS);
	}
	for (uint32_t i = 0; i < N_ORDER; i++)
		TEST_ASSERT(order_send(w, ws, ep, &i, 7) == UNIO_OK, "send %u", i);
	for (uint32_t i = 0; i < N_ORDER; i++) {
		TEST_ASSERT_STATUS(unio_request_wait(w, reqs[i], &info), UNIO_OK);
		TEST_ASSERT(got[i] == i, "posted receive %u got message %u", i, got[i]);
	}
	return TEST_OK;
}

/* smallest message not yet consumed with tag @p t (t = 3: any tag) */
static uint32_t
expect_next(const uint8_t *used, uint32_t *ptr, uint32_t t)
{
	uint32_t step = t == 3 ? 1 : 3;

	while (*ptr < N_ORDER && used[*ptr])
		*ptr += step;
	return *ptr;
}

static int
check_order_unexpected(unio_worker_t *w, unio_worker_t *ws, unio_ep_t *ep)
{
	static uint8_t used[N_ORDER];
	uint32_t ptr[4] = { 0, 1, 2, 0 }, v, want;
	struct unio_recv_info info;

	/* message i has tag i % 3 and payload i: all unexpected, then received by exact
	 * tags and by wildcards; each must get exactly the oldest message it matches */
	memset(used, 0, sizeof(used));
	for (uint32_t i = 0; i < N_ORDER; i++) {
		TEST_ASSERT(order_send(w, ws, ep, &i, i % 3) == UNIO_OK, "send %u", i);
		unio_worker_progress(w);
	}
	while (unio_worker_progress(w) != 0 || (ws != w && unio_worker_progress(ws) != 0))
		;
	for (uint32_t k = 0; k < N_ORDER; k++) {
		uint32_t t = k % 4 == 3 ? 3 : k % 3;

		want = expect_next(used, &ptr[t], t);
		TEST_ASSERT_STATUS(api_recv(w, &v, sizeof(v), t == 3 ? 0 : t,
					    t == 3 ? 0 : UINT64_MAX, &info), UNIO_OK);
		TEST_ASSERT(v == want, "receive %u (tag class %u) got %u, want %u", k, t, v,
			    want);
		TEST_ASSERT(info.tag == v % 3, "payload %u with tag %" PRIu64, v, info.tag);
		used[v] = 1;
	}
	TEST_ASSERT_STATUS(unio_tag_probe(w, 0, 0, 0, &info, NULL), UNIO_ERR_NOT_FOUND);
	return TEST_OK;
}

UNIO_TEST(api_tag_match_order, fast)
{
	static const char *const self_only[] = { "TLS", "self", NULL };
	unio_context_t *ctx = api_ctx(self_only);
	unio_worker_t *w;
	unio_status_t st;
	unio_ep_t *ep;
	int rc;

	TEST_ASSERT(ctx != NULL, "context");
	w = unio_worker_create(ctx, NULL, &st);
	TEST_ASSERT(w != NULL, "worker");
	ep = api_ep_to_worker(w, w, &st);
	TEST_ASSERT(ep != NULL, "ep: %s", unio_status_string(st));
	rc = check_order_posted(w, w, ep);
	if (rc == TEST_OK)
		rc = check_order_unexpected(w, w, ep);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return rc;
}

/*
 * The same over the shm lane between two workers (sender and receiver apart, both progressed
 * by this thread): 10,000 posted receives and 10,000 unexpected messages, each matched in
 * order, the messages crossing a shared-memory ring (conformance.md's issue 4 gap).
 */
UNIO_TEST(api_tag_match_order_shm, fast)
{
	static const char *const shm_only[] = { "TLS", "shm", NULL };
	struct api_pair p;
	int rc = api_pair_open(&p, shm_only, "shm");

	if (rc == TEST_OK)
		rc = check_order_posted(p.b, p.a, p.ep);
	if (rc == TEST_OK)
		rc = check_order_unexpected(p.b, p.a, p.ep);
	api_pair_close(&p);
	return rc;
}

/* ---- the selection printout (unio-info -e) follows the configuration ---- */

UNIO_TEST(api_proto_selection, fast)
{
	static const char *const ovr[] = { "RNDV_THRESH", "20000", "RNDV_SCHEME", "pipeline",
					   NULL };
	unio_context_t *ctx = api_ctx(ovr);
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	TEST_ASSERT(ctx != NULL, "context");
	f = open_memstream(&text, &len);
	TEST_ASSERT(f != NULL, "memstream");
	unio_proto_print_selection(ctx, "self", f);
	unio_proto_print_selection(ctx, "host", f);
	fclose(f);
	TEST_LOG("selection:\n%s", text);
	TEST_ASSERT(strstr(text, "eager short (self)") != NULL, "self lane missing");
	TEST_ASSERT(strstr(text, "20000..inf: rendezvous pipeline") != NULL,
		    "the configured threshold and scheme are not what is printed");
	free(text);
	unio_context_destroy(ctx);
	return TEST_OK;
}

/* ---- probe, probe-and-remove, then receive the removed message ---- */

UNIO_TEST(api_tag_probe, fast)
{
	static const char *const ovr[] = { "TLS", "self", "RNDV_THRESH", "16k", NULL };
	static const size_t lens[] = { 8, 20000, 100000 };
	unio_context_t *ctx = api_ctx(ovr);
	unio_worker_t *w = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	static uint8_t sbuf[3][100000], rbuf[100000];
	unio_request_t *sreq[3], *rreq;
	struct unio_recv_info info;
	struct unio_request_param rp = { .field_mask = UNIO_REQ_PARAM_RECV_INFO,
					 .recv_info = &info };
	unio_tag_msg_t *msg;
	unio_status_t st;
	unio_ep_t *ep;

	TEST_ASSERT(w != NULL, "worker");
	ep = api_ep_to_worker(w, w, &st);
	TEST_ASSERT(ep != NULL, "ep");
	for (unsigned int i = 0; i < 3; i++) {
		test_fill(sbuf[i], lens[i], i + 1);
		st = unio_tag_send(ep, sbuf[i], lens[i], 0x50 + i, NULL, &sreq[i]);
		TEST_ASSERT(st == UNIO_OK || st == UNIO_INPROGRESS, "send %u", i);
		if (st == UNIO_OK)
			sreq[i] = NULL;
	}
	for (int i = 0; i < 100; i++)
		unio_worker_progress(w);
	TEST_ASSERT_STATUS(unio_tag_probe(w, 0x99, UINT64_MAX, 0, &info, NULL),
			   UNIO_ERR_NOT_FOUND);
	for (unsigned int i = 0; i < 3; i++) {
		/* a probe leaves the message queued; probe-and-remove takes it out */
		TEST_ASSERT_STATUS(unio_tag_probe(w, 0x50 + i, UINT64_MAX, 0, &info, NULL),
				   UNIO_OK);
		TEST_ASSERT(info.tag == 0x50 + i && info.length == lens[i], "probe %u", i);
		TEST_ASSERT_STATUS(unio_tag_probe(w, 0x50, ~(uint64_t)0xf, 1, &info, &msg),
				   UNIO_OK);
		TEST_ASSERT(info.tag == 0x50 + i, "probe-remove took tag %#" PRIx64, info.tag);
		TEST_ASSERT_STATUS(unio_tag_probe(w, 0x50 + i, UINT64_MAX, 0, &info, NULL),
				   UNIO_ERR_NOT_FOUND);
		memset(rbuf, 0, sizeof(rbuf));
		st = unio_tag_msg_recv(w, rbuf, sizeof(rbuf), msg, &rp, &rreq);
		if (st == UNIO_INPROGRESS)
			st = unio_request_wait(w, rreq, &info);
		TEST_ASSERT_STATUS(st, UNIO_OK);
		TEST_ASSERT(info.length == lens[i], "length %zu", info.length);
		TEST_ASSERT(test_checksum(rbuf, lens[i]) == test_checksum(sbuf[i], lens[i]),
			    "payload %u", i);
		if (sreq[i] != NULL)
			TEST_ASSERT_STATUS(unio_request_wait(w, sreq[i], NULL), UNIO_OK);
	}
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return TEST_OK;
}

/*
 * A wireup reply that finds its lane full is owed and sent by a later progress, never
 * waited for inside the AM handler of the request: progressing the ifaces there had shm
 * deliver the request being handled once more (its cell is consumed after the handler
 * returns), which allocated another ep and recursed until the stack ran out.  w2 fills its
 * connection to w with messages w does not receive yet, then w connects a second ep to w2: w2's
 * reply is owed (counted, so the worker does not sleep on it) until w drains it; the
 * second ep then connects and carries a message, and the queued ones arrive in order.  Over
 * tcp, where both eps share the connection (a shm ep has a ring of its own).
 */
#define N_FULL 16384

UNIO_TEST(api_wireup_reply_lane_full, fast)
{
	static const char *const ovr[] = { "TLS", "tcp", "TCP_SNDBUF", "4k", "TCP_RCVBUF", "4k",
					   NULL };
	unio_context_t *ctx = api_ctx(ovr);
	static unio_request_t *sreq[N_FULL];
	static uint64_t sbuf[N_FULL][8], rbuf[8];
	unio_ep_t *ep, *back, *ep2;
	unio_worker_t *w, *w2;
	unsigned int n = 0;
	unio_status_t st;

	TEST_ASSERT(ctx != NULL, "context");
	w = unio_worker_create(ctx, NULL, &st);
	TEST_ASSERT(w != NULL, "worker: %s", unio_status_string(st));
	w2 = unio_worker_create(ctx, NULL, &st);
	TEST_ASSERT(w2 != NULL, "worker 2: %s", unio_status_string(st));
	ep = api_ep_to_worker(w, w2, &st);
	TEST_ASSERT(ep != NULL && api_ep_connected(w, w2, ep), "ep: %s",
		    unio_status_string(st));
	back = api_ep_to_worker(w2, w, &st);
	TEST_ASSERT(back != NULL && api_ep_connected(w2, w, back), "back ep: %s",
		    unio_status_string(st));
	/* fill w2's connection to w: sends complete at once until it is full, then queue */
	for (n = 0; n < N_FULL; n++) {
		for (unsigned int k = 0; k < 8; k++)
			sbuf[n][k] = (uint64_t)n * 8 + k;
		sreq[n] = NULL;
		st = unio_tag_send(back, sbuf[n], sizeof(sbuf[n]), 7, NULL, &sreq[n]);
		TEST_ASSERT(st == UNIO_OK || st == UNIO_INPROGRESS, "send %u: %s", n,
			    unio_status_string(st));
		if (st == UNIO_OK)
			sreq[n] = NULL;
		if (st == UNIO_INPROGRESS) {
			n++;
			break;
		}
	}
	TEST_ASSERT(sreq[n - 1] != NULL, "%u sends never filled the connection", n);
	ep2 = api_ep_to_worker(w, w2, &st);
	TEST_ASSERT(ep2 != NULL, "second ep: %s", unio_status_string(st));
	for (int k = 0; k < 1000; k++)
		unio_worker_progress(w2);
	TEST_ASSERT_EQ(w2->n_wireup_owed, 1u);
	TEST_ASSERT(ep2->state == EP_CONNECTING, "second ep state %u", ep2->state);
	/* w drains the connection in order; the reply follows the queued sends */
	for (unsigned int i = 0; i < n; i++) {
		struct unio_recv_info info;

		memset(rbuf, 0, sizeof(rbuf));
		for (int k = 0; k < 100; k++)
			unio_worker_progress(w2);
		TEST_ASSERT_STATUS(api_recv(w, rbuf, sizeof(rbuf), 7, UINT64_MAX, &info), UNIO_OK);
		TEST_ASSERT(memcmp(rbuf, sbuf[i], sizeof(rbuf)) == 0, "message %u out of order "
			    "or damaged: first word %" PRIu64, i, rbuf[0]);
	}
	TEST_ASSERT(api_ep_connected(w, w2, ep2), "second ep never connected");
	TEST_ASSERT_EQ(w2->n_wireup_owed, 0u);
	for (unsigned int i = 0; i < n; i++)
		if (sreq[i] != NULL) {
			TEST_ASSERT_STATUS(unio_request_wait(w2, sreq[i], NULL), UNIO_OK);
			unio_request_free(sreq[i]);
		}
	sbuf[0][0] = 0xfeed;
	TEST_ASSERT_STATUS(api_send(w, ep2, sbuf[0], 8, 9, 0), UNIO_OK);
	TEST_ASSERT_STATUS(api_recv(w2, rbuf, 8, 9, UINT64_MAX, NULL), UNIO_OK);
	TEST_ASSERT_EQ(rbuf[0], 0xfeedu);
	unio_ep_close(ep2, UNIO_EP_CLOSE_FORCE, NULL);
	unio_ep_close(back, UNIO_EP_CLOSE_FORCE, NULL);
	unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
	unio_worker_destroy(w2);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return TEST_OK;
}

/*
 * The self iface is not polled while it has no ep (its idle flag): it must be polled again
 * from the first ep on, and a message still queued when its ep closes must still arrive.
 * (The wireup's ep back to us, also a self ep, stays: the iface does not go idle again.)
 */
UNIO_TEST(api_self_idle_without_ep, fast)
{
	static const char *const ovr[] = { "TLS", "self", NULL };
	unio_context_t *ctx = api_ctx(ovr);
	uint64_t v = 0x5e1f1d1e, got = 0;
	unio_worker_t *w;
	unio_status_t st;
	unio_ep_t *ep;

	TEST_ASSERT(ctx != NULL, "context");
	w = unio_worker_create(ctx, NULL, &st);
	TEST_ASSERT(w != NULL, "worker: %s", unio_status_string(st));
	TEST_ASSERT_EQ(w->n_ifaces, 1u);
	for (int i = 0; i < 100; i++)
		unio_worker_progress(w);
	TEST_ASSERT(w->ifaces[0]->idle, "self iface without an ep still polled");
	for (unsigned int round = 0; round < 3; round++) {
		ep = api_ep_to_worker(w, w, &st);
		TEST_ASSERT(ep != NULL, "ep: %s", unio_status_string(st));
		TEST_ASSERT(api_ep_connected(w, w, ep), "self ep never connected");
		TEST_ASSERT(!w->ifaces[0]->idle, "self iface with an ep not polled");
		v += round;
		TEST_ASSERT_STATUS(api_send(w, ep, &v, sizeof(v), 11, 0), UNIO_OK);
		TEST_ASSERT_STATUS(api_recv(w, &got, sizeof(got), 11, UINT64_MAX, NULL), UNIO_OK);
		TEST_ASSERT_EQ(got, v);
		/* queued, not delivered, when its ep goes: delivered by the next progress */
		TEST_ASSERT_STATUS(unio_tag_send(ep, &v, sizeof(v), 12, NULL, NULL), UNIO_OK);
		unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
		got = 0;
		TEST_ASSERT_STATUS(api_recv(w, &got, sizeof(got), 12, UINT64_MAX, NULL), UNIO_OK);
		TEST_ASSERT_EQ(got, v);
	}
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return TEST_OK;
}
