/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Answers forged by another connected peer.  V (this process) has endpoints to A (honest)
 * and to M.  The protocol continues V's requests by the ids peers echo in their answers; M
 * learns the slots of V's requests with A (index and generation: what the ids on the wire
 * were, small numbers that count up, so guessing is enough; here V tells M) and V's id of its
 * ep to A, and forges on its own connection to V:
 *  - an RTR for V's pipelined rendezvous send to A (V would stream the message to a receive
 *    A never asked for, and complete the send);
 *  - an ATS for another such send (it would complete while A holds nothing);
 *  - a SYNC_ACK for V's sync eager send (it would complete before A matched it);
 *  - a PIPE fragment into V's pipelined receive of A's message, after V's RTR and before A's
 *    fragments (M's bytes would land in A's message; A's fragments would then be refused).
 * Asserted: each forged answer is dropped and counted ("dropped from peers"), nothing of V's
 * changes; then A receives V's three sends (checksummed) and V receives A's message intact.
 * Three processes (mp), over tcp and over shm.  And (fast) the cipher that seals the ids: a
 * known answer, round trips, no two slots alike.
 */

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_log.h>

#include "api_common.h"
#include "proto_am_rma.h"
#include "unio_am.h"
#include "unio_proto.h"

#define TAG_INFO   0x7201
#define TAG_IDS    0x7202
#define TAG_DONE   0x7203
#define TAG_READY  0x7204
#define TAG_ANSWER 0x7205
#define TAG_S_RTR  0x7211
#define TAG_S_ATS  0x7212
#define TAG_S_SYNC 0x7213
#define TAG_R_PIPE 0x7214
#define RNDV_LEN   (256 * 1024)
#define SYNC_LEN   1000
#define INJECT_LEN 1000

/* What V tells M: the slots of its requests with A, and its id of its ep to A. */
struct forge_ids {
	uint64_t s_rtr, s_ats, s_sync, r_pipe;
	uint64_t v_ep_a;
	uint64_t phase;        /* 1: the three sends, 2: the receive */
};

/* A's answer: for each of V's sends, did it arrive intact (0) or not. */
struct peer_answer {
	int32_t bad[3];
	int32_t pad;
};

/* What the ids on the wire were before they were sealed: gen << 32 | idx. */
static uint64_t
slot_of(const unio_request_t *req)
{
	return ((uint64_t)req->gen << 32) | req->idx;
}

static int
wait_flag(const char *path)
{
	for (int i = 0; i < 60000; i++) {
		if (access(path, F_OK) == 0)
			return 0;
		usleep(1000);
	}
	return -1;
}

UNIO_TEST_CHILD(idsec_peer)
{
	unio_context_t *ctx = api_ctx(NULL);
	unio_worker_t *w = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	static const uint64_t tags[3] = { TAG_S_RTR, TAG_S_ATS, TAG_S_SYNC };
	static const size_t lens[3] = { RNDV_LEN, RNDV_LEN, SYNC_LEN };
	struct peer_answer ans = { { 1, 1, 1 }, 0 };
	struct unio_recv_info info;
	unio_request_t *sreq = NULL;
	uint8_t *buf, *want;
	uint64_t v_ep_a, one = 1;
	unio_ep_t *ep;

	buf = malloc(RNDV_LEN);
	want = malloc(RNDV_LEN);
	if (buf == NULL || want == NULL)
		return 2;
	ep = api_third_child(w, argc, argv);
	if (ep == NULL)
		return 3;
	v_ep_a = ep->remote_id;
	if (api_send(w, ep, &v_ep_a, sizeof(v_ep_a), TAG_INFO, 0) != UNIO_OK)
		return 4;
	/* the message V receives pipelined: its RTS first, unexpected at V */
	test_fill(buf, RNDV_LEN, 0xa11ce);
	if (unio_tag_send(ep, buf, RNDV_LEN, TAG_R_PIPE, NULL, &sreq) != UNIO_INPROGRESS)
		return 5;
	if (api_send(w, ep, &one, sizeof(one), TAG_READY, 0) != UNIO_OK)
		return 6;
	/* no progress until V says so: V's RTR waits in this process's socket */
	if (wait_flag(argv[1]) != 0)
		return 7;
	for (uint64_t t0 = rte_get_timer_cycles(); unio_request_test(sreq, NULL) ==
	     UNIO_INPROGRESS && rte_get_timer_cycles() - t0 < 20 * rte_get_timer_hz(); )
		unio_worker_progress(w);
	if (unio_request_test(sreq, NULL) != UNIO_OK)
		return 8;
	unio_request_free(sreq);
	/* V's three sends, which M's answers must not have completed or diverted */
	for (int i = 0; i < 3; i++) {
		memset(buf, 0, RNDV_LEN);
		if (api_recv(w, buf, RNDV_LEN, tags[i], UINT64_MAX, &info) != UNIO_OK)
			return 9;
		test_fill(want, lens[i], 0x5e0d + (uint64_t)i);
		ans.bad[i] = info.length != lens[i] || memcmp(buf, want, lens[i]) != 0;
	}
	if (api_send(w, ep, &ans, sizeof(ans), TAG_ANSWER, 0) != UNIO_OK)
		return 10;
	free(buf);
	free(want);
	return api_child_end(ctx, w, ep);
}

UNIO_TEST_CHILD(idsec_forger)
{
	unio_context_t *ctx = api_ctx(NULL);
	unio_worker_t *w = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	uint8_t m[sizeof(struct proto_frag_hdr) + INJECT_LEN];
	struct unio_recv_info info;
	struct forge_ids ids;
	struct unio_tl_ep *tl;
	uint64_t done = 1;
	unio_ep_t *ep;

	ep = api_third_child(w, argc, argv);
	if (ep == NULL)
		return 3;
	tl = ep->lane.tl_ep;
	/* phase 1: the answers to V's three sends to A */
	if (api_recv(w, &ids, sizeof(ids), TAG_IDS, UINT64_MAX, &info) != UNIO_OK ||
	    ids.phase != 1)
		return 4;
	{
		struct proto_rtr_hdr rtr = { .sreq_id = ids.s_rtr, .rreq_id = 0x1234,
					     .ep_id = (uint32_t)ids.v_ep_a };
		struct proto_ack_hdr ats = { .sreq_id = ids.s_ats, .status = UNIO_OK };
		struct proto_ack_hdr ack = { .sreq_id = ids.s_sync, .status = UNIO_OK };

		if (api_raw_am(w, tl, PROTO_AM_RTR, &rtr, sizeof(rtr)) != 0 ||
		    api_raw_am(w, tl, PROTO_AM_ATS, &ats, sizeof(ats)) != 0 ||
		    api_raw_am(w, tl, PROTO_AM_SYNC_ACK, &ack, sizeof(ack)) != 0)
			return 5;
	}
	if (api_send(w, ep, &done, sizeof(done), TAG_DONE, 0) != UNIO_OK)
		return 6;
	/* phase 2: a fragment into the message V receives from A */
	if (api_recv(w, &ids, sizeof(ids), TAG_IDS, UINT64_MAX, &info) != UNIO_OK ||
	    ids.phase != 2)
		return 7;
	{
		struct proto_frag_hdr fr = { .rreq_id = ids.r_pipe, .offset = 0,
					     .ep_id = (uint32_t)ids.v_ep_a };

		memcpy(m, &fr, sizeof(fr));
		memset(m + sizeof(fr), 0x66, INJECT_LEN);
		if (api_raw_am(w, tl, PROTO_AM_PIPE, m, sizeof(m)) != 0)
			return 8;
	}
	if (api_send(w, ep, &done, sizeof(done), TAG_DONE, 0) != UNIO_OK)
		return 9;
	return api_child_end(ctx, w, ep);
}

/* The "dropped from peers" line of unio_worker_print_info(). */
static uint64_t
dropped(unio_worker_t *w)
{
	return api_worker_counter(w, API_DROPPED_FROM_PEERS);
}

static void
progress_for(unio_worker_t *w, unsigned int ms)
{
	uint64_t end = rte_get_timer_cycles() + rte_get_timer_hz() * ms / 1000;

	while (rte_get_timer_cycles() < end)
		unio_worker_progress(w);
}

static bool
in_progress(unio_request_t *r)
{
	return unio_request_test(r, NULL) == UNIO_INPROGRESS;
}

static int
victim(unio_worker_t *w, unio_ep_t *ep_a, unio_ep_t *ep_m, const char *flag, void *arg)
{
	const char *drv = arg;
	uint8_t *s_rtr = malloc(RNDV_LEN), *s_ats = malloc(RNDV_LEN), *r_buf = malloc(RNDV_LEN);
	uint8_t s_sync[SYNC_LEN], *want = malloc(RNDV_LEN);
	unio_request_t *rq_rtr = NULL, *rq_ats = NULL, *rq_sync = NULL, *rq_r = NULL;
	struct forge_ids ids = { .phase = 1 };
	struct unio_recv_info info;
	struct peer_answer ans;
	uint64_t v_ep_a, go, d0, ready;
	int fd, rc = TEST_FAIL;

	if (s_rtr == NULL || s_ats == NULL || r_buf == NULL || want == NULL)
		goto out;
	TEST_ASSERT(strcmp(ep_a->lane.iface->driver->name, drv) == 0 &&
		    strcmp(ep_m->lane.iface->driver->name, drv) == 0, "lanes %s, %s",
		    ep_a->lane.iface->driver->name, ep_m->lane.iface->driver->name);
	TEST_ASSERT_STATUS(api_recv(w, &v_ep_a, sizeof(v_ep_a), TAG_INFO, UINT64_MAX, &info),
			   UNIO_OK);
	TEST_ASSERT(v_ep_a == ep_a->id, "A's view of V's ep id");
	/* three sends to A that A does not receive yet: they wait for A's answers */
	test_fill(s_rtr, RNDV_LEN, 0x5e0d);
	test_fill(s_ats, RNDV_LEN, 0x5e0e);
	test_fill(s_sync, SYNC_LEN, 0x5e0f);
	TEST_ASSERT_STATUS(unio_tag_send(ep_a, s_rtr, RNDV_LEN, TAG_S_RTR, NULL, &rq_rtr),
			   UNIO_INPROGRESS);
	TEST_ASSERT_STATUS(unio_tag_send(ep_a, s_ats, RNDV_LEN, TAG_S_ATS, NULL, &rq_ats),
			   UNIO_INPROGRESS);
	TEST_ASSERT_STATUS(unio_tag_send_sync(ep_a, s_sync, SYNC_LEN, TAG_S_SYNC, NULL,
					      &rq_sync), UNIO_INPROGRESS);
	ids.s_rtr = slot_of(rq_rtr);
	ids.s_ats = slot_of(rq_ats);
	ids.s_sync = slot_of(rq_sync);
	ids.v_ep_a = ep_a->id;
	progress_for(w, 50);
	d0 = dropped(w);
	TEST_ASSERT_STATUS(api_send(w, ep_m, &ids, sizeof(ids), TAG_IDS, 0), UNIO_OK);
	/* M's three answers came before its DONE (one connection, in order) */
	TEST_ASSERT_STATUS(api_recv(w, &go, sizeof(go), TAG_DONE, UINT64_MAX, &info), UNIO_OK);
	progress_for(w, 100);
	TEST_LOG("after M's RTR / ATS / SYNC_ACK: sends %s / %s / %s, dropped %" PRIu64,
		 unio_status_string(unio_request_test(rq_rtr, NULL)),
		 unio_status_string(unio_request_test(rq_ats, NULL)),
		 unio_status_string(unio_request_test(rq_sync, NULL)), dropped(w) - d0);
	TEST_ASSERT(in_progress(rq_rtr), "M's RTR took V's send to A");
	TEST_ASSERT(in_progress(rq_ats), "M's ATS completed V's send to A");
	TEST_ASSERT(in_progress(rq_sync), "M's SYNC_ACK completed V's sync send to A");
	TEST_ASSERT(dropped(w) == d0 + 3, "dropped %" PRIu64 ", want 3", dropped(w) - d0);
	/* A's message, received pipelined: A's RTS waits unexpected here, A stops */
	TEST_ASSERT_STATUS(api_recv(w, &ready, sizeof(ready), TAG_READY, UINT64_MAX, &info),
			   UNIO_OK);
	memset(r_buf, 0, RNDV_LEN);
	TEST_ASSERT_STATUS(unio_tag_recv(w, r_buf, RNDV_LEN, TAG_R_PIPE, UINT64_MAX, NULL,
					 &rq_r), UNIO_INPROGRESS);
	TEST_ASSERT(rq_r->rndv_ep == ep_a, "the receive matched A's RTS");
	ids.phase = 2;
	ids.r_pipe = slot_of(rq_r);
	d0 = dropped(w);
	TEST_ASSERT_STATUS(api_send(w, ep_m, &ids, sizeof(ids), TAG_IDS, 0), UNIO_OK);
	TEST_ASSERT_STATUS(api_recv(w, &go, sizeof(go), TAG_DONE, UINT64_MAX, &info), UNIO_OK);
	progress_for(w, 100);
	TEST_LOG("after M's PIPE: %zu bytes of A's message received, dropped %" PRIu64,
		 rq_r->received, dropped(w) - d0);
	TEST_ASSERT(rq_r->received == 0 && in_progress(rq_r),
		    "M's fragment landed in A's message (%zu bytes)", rq_r->received);
	TEST_ASSERT(dropped(w) == d0 + 1, "dropped %" PRIu64 ", want 1", dropped(w) - d0);
	/* A goes on: its message arrives intact, and it receives V's three sends */
	fd = open(flag, O_CREAT | O_WRONLY, 0600);
	TEST_ASSERT(fd >= 0, "flag file");
	close(fd);
	for (uint64_t t0 = rte_get_timer_cycles(); rte_get_timer_cycles() - t0 <
	     20 * rte_get_timer_hz() && (in_progress(rq_r) || in_progress(rq_rtr) ||
					 in_progress(rq_ats) || in_progress(rq_sync)); )
		unio_worker_progress(w);
	TEST_ASSERT_STATUS(unio_request_test(rq_r, &info), UNIO_OK);
	test_fill(want, RNDV_LEN, 0xa11ce);
	TEST_ASSERT(info.length == RNDV_LEN && memcmp(r_buf, want, RNDV_LEN) == 0,
		    "A's message arrived changed");
	TEST_ASSERT_STATUS(unio_request_test(rq_rtr, NULL), UNIO_OK);
	TEST_ASSERT_STATUS(unio_request_test(rq_ats, NULL), UNIO_OK);
	TEST_ASSERT_STATUS(unio_request_test(rq_sync, NULL), UNIO_OK);
	TEST_ASSERT_STATUS(api_recv(w, &ans, sizeof(ans), TAG_ANSWER, UINT64_MAX, &info),
			   UNIO_OK);
	TEST_ASSERT(ans.bad[0] == 0 && ans.bad[1] == 0 && ans.bad[2] == 0,
		    "A received V's sends changed: %d %d %d", ans.bad[0], ans.bad[1], ans.bad[2]);
	rc = TEST_OK;
out:
	if (rq_rtr != NULL)
		unio_request_free(rq_rtr);
	if (rq_ats != NULL)
		unio_request_free(rq_ats);
	if (rq_sync != NULL)
		unio_request_free(rq_sync);
	if (rq_r != NULL)
		unio_request_free(rq_r);
	free(s_rtr);
	free(s_ats);
	free(r_buf);
	free(want);
	return rc;
}

/*
 * Messages that start something, forged by another connected peer.  V (this process) has
 * endpoints to A (honest) and to M; V tells M its id of its ep to A (a small number M could
 * guess), and M sends on its own connection to V, each naming V's ep to A:
 *  - a sync EAGER with the tag of a receive V posted for A's message (V would complete the
 *    receive with M's bytes and answer SYNC_ACK to A);
 *  - an EAGER_FIRST of a message nobody receives yet (it would hold the reassembly of V's ep
 *    to A, so that A's next multi-fragment message is dropped);
 *  - a user AM with the reply flag (V's handler would get its ep to A as the reply ep).
 * Asserted: the three are dropped and counted ("dropped from peers"), nothing of V's
 * changes (receive still waiting, no reassembly, nothing unexpected, no handler call); then
 * A's eager message, multi-fragment message and AM arrive intact (checksummed), the AM with
 * the ep to A as its reply ep, and A counts no stray answer.  Three processes, over tcp and
 * over shm.
 */
#define TAG_SRC_EAGER 0x7221
#define TAG_SRC_FRAG  0x7222
#define TAG_SRC_JUNK  0x7223
#define TAG_SRC_FIN   0x7224
#define SRC_EAGER_LEN 3000
#define SRC_FRAG_LEN  (200 * 1024)
#define SRC_AM_LEN    3000
#define SRC_AM_ID     5

/* What V's AM handler saw. */
struct src_am_rx {
	unsigned int calls;
	unio_ep_t *reply_ep;
	bool intact;
};

static unio_status_t
src_am_cb(void *arg, const void *header, size_t header_len, void *data, size_t length,
	  const struct unio_am_recv_param *param)
{
	struct src_am_rx *rx = arg;
	uint8_t want[SRC_AM_LEN];

	RTE_SET_USED(header);
	test_fill(want, SRC_AM_LEN, 0xa13);
	rx->calls++;
	rx->reply_ep = param->reply_ep;
	rx->intact = header_len == 0 && length == SRC_AM_LEN && memcmp(data, want, length) == 0;
	return UNIO_OK;
}

UNIO_TEST_CHILD(srcid_peer)
{
	unio_context_t *ctx = api_ctx(NULL);
	unio_worker_t *w = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	unio_status_t st = UNIO_ERR_INVALID_PARAM;
	uint8_t *buf = malloc(SRC_FRAG_LEN);
	struct unio_recv_info info;
	unio_request_t *req = NULL;
	uint64_t v_ep_a, fin, drops;
	unio_ep_t *ep;

	if (buf == NULL)
		return 2;
	ep = api_third_child(w, argc, argv);
	if (ep == NULL)
		return 3;
	v_ep_a = ep->remote_id;
	if (api_send(w, ep, &v_ep_a, sizeof(v_ep_a), TAG_INFO, 0) != UNIO_OK)
		return 4;
	/* M forges first */
	if (wait_flag(argv[1]) != 0)
		return 5;
	test_fill(buf, SRC_EAGER_LEN, 0xa11);
	if (api_send(w, ep, buf, SRC_EAGER_LEN, TAG_SRC_EAGER, 0) != UNIO_OK)
		return 6;
	test_fill(buf, SRC_FRAG_LEN, 0xa12);
	if (api_send(w, ep, buf, SRC_FRAG_LEN, TAG_SRC_FRAG, 0) != UNIO_OK)
		return 7;
	test_fill(buf, SRC_AM_LEN, 0xa13);
	st = unio_am_send(ep, SRC_AM_ID, NULL, 0, buf, SRC_AM_LEN, NULL, UNIO_AM_SEND_FLAG_REPLY,
			  &req);
	if (api_op_wait(w, w, st, req) != UNIO_OK)
		return 8;
	/* a SYNC_ACK V sent for M's message would have come before V's FIN */
	if (api_recv(w, &fin, sizeof(fin), TAG_SRC_FIN, UINT64_MAX, &info) != UNIO_OK)
		return 9;
	drops = api_worker_counter(w, API_DROPPED_FROM_PEERS);
	if (api_send(w, ep, &drops, sizeof(drops), TAG_ANSWER, 0) != UNIO_OK)
		return 10;
	free(buf);
	return api_child_end(ctx, w, ep);
}

UNIO_TEST_CHILD(srcid_forger)
{
	unio_context_t *ctx = api_ctx(NULL);
	unio_worker_t *w = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	uint8_t m[sizeof(struct proto_eager_first_hdr) + SRC_AM_LEN];
	struct unio_recv_info info;
	struct forge_ids ids;
	struct unio_tl_ep *tl;
	uint64_t done = 1;
	unio_ep_t *ep;

	ep = api_third_child(w, argc, argv);
	if (ep == NULL)
		return 3;
	tl = ep->lane.tl_ep;
	if (api_recv(w, &ids, sizeof(ids), TAG_IDS, UINT64_MAX, &info) != UNIO_OK)
		return 4;
	memset(m, 0x66, sizeof(m));
	{
		struct proto_eager_hdr e = { .tag = TAG_SRC_EAGER, .sreq_id = 0x5151,
					     .ep_id = (uint32_t)ids.v_ep_a };
		struct proto_eager_first_hdr f = {
			.e = { .tag = TAG_SRC_JUNK, .ep_id = (uint32_t)ids.v_ep_a },
			.total = SRC_FRAG_LEN, .cookie = 0x7777,
		};
		struct am_eager_hdr a = { .am_id = SRC_AM_ID, .hdr_len = AM_EAGER_REPLY,
					  .ep_id = (uint32_t)ids.v_ep_a };

		memcpy(m, &e, sizeof(e));
		if (api_raw_am(w, tl, PROTO_AM_EAGER, m, sizeof(e) + SRC_EAGER_LEN) != 0)
			return 5;
		memcpy(m, &f, sizeof(f));
		if (api_raw_am(w, tl, PROTO_AM_EAGER_FIRST, m, sizeof(f) + 1000) != 0)
			return 6;
		memcpy(m, &a, sizeof(a));
		if (api_raw_am(w, tl, PROTO_AM_USER_EAGER, m, sizeof(a) + SRC_AM_LEN) != 0)
			return 7;
	}
	if (api_send(w, ep, &done, sizeof(done), TAG_DONE, 0) != UNIO_OK)
		return 8;
	return api_child_end(ctx, w, ep);
}

static int
src_victim(unio_worker_t *w, unio_ep_t *ep_a, unio_ep_t *ep_m, const char *flag, void *arg)
{
	uint8_t *r_eager = malloc(SRC_EAGER_LEN), *r_frag = malloc(SRC_FRAG_LEN);
	uint8_t *want = malloc(SRC_FRAG_LEN);
	unio_request_t *rq_e = NULL, *rq_f = NULL;
	struct forge_ids ids = { .phase = 1 };
	struct src_am_rx am = { 0, NULL, false };
	struct unio_recv_info info;
	uint64_t v_ep_a, go, d0, fin = 1, a_drops;
	unsigned int n_unexp;
	int fd, rc = TEST_FAIL;

	RTE_SET_USED(arg);
	if (r_eager == NULL || r_frag == NULL || want == NULL)
		goto out;
	TEST_ASSERT_STATUS(unio_worker_set_am_handler(w, SRC_AM_ID, src_am_cb, &am, 0), UNIO_OK);
	TEST_ASSERT_STATUS(api_recv(w, &v_ep_a, sizeof(v_ep_a), TAG_INFO, UINT64_MAX, &info),
			   UNIO_OK);
	TEST_ASSERT(v_ep_a == ep_a->id, "A's view of V's ep id");
	memset(r_eager, 0, SRC_EAGER_LEN);
	TEST_ASSERT_STATUS(unio_tag_recv(w, r_eager, SRC_EAGER_LEN, TAG_SRC_EAGER, UINT64_MAX,
					 NULL, &rq_e), UNIO_INPROGRESS);
	ids.v_ep_a = ep_a->id;
	d0 = dropped(w);
	n_unexp = w->n_unexp;
	TEST_ASSERT_STATUS(api_send(w, ep_m, &ids, sizeof(ids), TAG_IDS, 0), UNIO_OK);
	/* M's three messages came before its DONE (one connection, in order) */
	TEST_ASSERT_STATUS(api_recv(w, &go, sizeof(go), TAG_DONE, UINT64_MAX, &info), UNIO_OK);
	progress_for(w, 100);
	TEST_LOG("after M's EAGER / EAGER_FIRST / AM as A: receive %s, reassembly on A's ep %s, "
		 "%u more unexpected, AM handler calls %u (reply ep %s), dropped %" PRIu64,
		 unio_status_string(unio_request_test(rq_e, NULL)),
		 ep_a->rx.active ? "held" : "free", w->n_unexp - n_unexp, am.calls,
		 am.reply_ep == ep_a ? "A's" : am.reply_ep == NULL ? "none" : "other",
		 dropped(w) - d0);
	TEST_ASSERT(in_progress(rq_e), "M's EAGER took the receive posted for A's message");
	TEST_ASSERT(!ep_a->rx.active, "M's EAGER_FIRST holds the reassembly of the ep to A");
	TEST_ASSERT(w->n_unexp == n_unexp, "M's message waits unexpected");
	TEST_ASSERT(am.calls == 0, "M's AM reached the handler (reply ep %s)",
		    am.reply_ep == ep_a ? "A's" : "other");
	TEST_ASSERT(dropped(w) == d0 + 3, "dropped %" PRIu64 ", want 3", dropped(w) - d0);
	/* A goes on: its eager message, a multi-fragment message and an AM */
	memset(r_frag, 0, SRC_FRAG_LEN);
	TEST_ASSERT_STATUS(unio_tag_recv(w, r_frag, SRC_FRAG_LEN, TAG_SRC_FRAG, UINT64_MAX, NULL,
					 &rq_f), UNIO_INPROGRESS);
	fd = open(flag, O_CREAT | O_WRONLY, 0600);
	TEST_ASSERT(fd >= 0, "flag file");
	close(fd);
	for (uint64_t t0 = rte_get_timer_cycles(); rte_get_timer_cycles() - t0 <
	     20 * rte_get_timer_hz() && (in_progress(rq_e) || in_progress(rq_f) ||
					 am.calls == 0); )
		unio_worker_progress(w);
	TEST_ASSERT_STATUS(unio_request_test(rq_e, &info), UNIO_OK);
	test_fill(want, SRC_EAGER_LEN, 0xa11);
	TEST_ASSERT(info.length == SRC_EAGER_LEN && memcmp(r_eager, want, SRC_EAGER_LEN) == 0,
		    "A's eager message arrived changed");
	TEST_ASSERT_STATUS(unio_request_test(rq_f, &info), UNIO_OK);
	test_fill(want, SRC_FRAG_LEN, 0xa12);
	TEST_ASSERT(info.length == SRC_FRAG_LEN && memcmp(r_frag, want, SRC_FRAG_LEN) == 0,
		    "A's multi-fragment message arrived changed");
	TEST_ASSERT(am.calls == 1 && am.intact && am.reply_ep == ep_a,
		    "A's AM: %u calls, intact %d, reply ep %s", am.calls, am.intact,
		    am.reply_ep == ep_a ? "A's" : "other");
	TEST_ASSERT(dropped(w) == d0 + 3, "dropped %" PRIu64 " in all, want 3", dropped(w) - d0);
	TEST_ASSERT(w->n_unexp == n_unexp, "something of M's waits unexpected");
	TEST_ASSERT_STATUS(api_send(w, ep_a, &fin, sizeof(fin), TAG_SRC_FIN, 0), UNIO_OK);
	TEST_ASSERT_STATUS(api_recv(w, &a_drops, sizeof(a_drops), TAG_ANSWER, UINT64_MAX, &info),
			   UNIO_OK);
	TEST_ASSERT(a_drops == 0, "A dropped %" PRIu64 " answers V sent for M", a_drops);
	rc = TEST_OK;
out:
	unio_worker_set_am_handler(w, SRC_AM_ID, NULL, NULL, 0);
	if (rq_e != NULL)
		unio_request_free(rq_e);
	if (rq_f != NULL)
		unio_request_free(rq_f);
	free(r_eager);
	free(r_frag);
	free(want);
	return rc;
}

/* The cases of this file, each over tcp and over shm (UNIO_TLS=drv,self): see api_common.h. */
static const char *const answers_env[] = { "UNIO_RNDV_SCHEME", "pipeline",
					   "UNIO_RNDV_THRESH", "65536", NULL };
static const char *const senders_env[] = { "UNIO_ZCOPY_THRESH", "inf",
					   "UNIO_RNDV_THRESH", "1048576", NULL };
static const struct api_third_case forged_cases[] = {
	/* forged answers: the pipelined rendezvous (RTR, PIPE) from 64 KiB */
	{ .env = answers_env, .peer = "idsec_peer", .forger = "idsec_forger", .who = "A",
	  .flag = "idsec", .victim = victim },
	/* forged senders: multi-fragment eager up to 1 MiB */
	{ .env = senders_env, .peer = "srcid_peer", .forger = "srcid_forger", .who = "A",
	  .flag = "srcid", .victim = src_victim },
};

/* Case @p i of forged_cases over driver @p drv (the victims get @p drv as their arg). */
static int
forged_case(unsigned int i, const char *drv)
{
	struct api_third_case c = forged_cases[i];

	c.drv = drv;
	c.arg = (void *)(uintptr_t)drv;
	return api_third_process(&c);
}

UNIO_TEST(tcp_answers_third_process, mp)
{
	return forged_case(0, "tcp");
}

/*
 * The same over shm: M only sends to V (it maps V's segment, not A's), so it learns nothing
 * of the ids V writes into A's segment.
 */
UNIO_TEST(shm_answers_third_process, mp)
{
	return forged_case(0, "shm");
}

UNIO_TEST(tcp_senders_third_process, mp)
{
	return forged_case(1, "tcp");
}

/*
 * The same over shm: M writes into its own ring of V's segment, whose slot names M's
 * iface (M could write A's id into its slot, or into A's ring: what shm cannot bind).
 */
UNIO_TEST(shm_senders_third_process, mp)
{
	return forged_case(1, "shm");
}

/*
 * Over ethdev: three af_packet ports on the hub topology's bridge (va, vb, vc: V, A, M) in
 * one namespace, the control connection over its loopback.  Each process its own port and
 * address; A and M inherit the environment at their spawn.
 */
static const char *const eth_env_v[] = {
	"UNIO_EAL_ARGS", "--vdev=net_af_packet0,iface=va", "UNIO_ETHDEV_IP", "10.77.0.1",
	/* this shared 2-core host delays the kernel's forwarding by milliseconds */
	"UNIO_ETHDEV_TARGET_DELAY", "5ms", NULL };
static const char *const eth_env_a[] = {
	"UNIO_EAL_ARGS", "--vdev=net_af_packet0,iface=vb", "UNIO_ETHDEV_IP", "10.77.0.2", NULL };
static const char *const eth_env_m[] = {
	"UNIO_EAL_ARGS", "--vdev=net_af_packet0,iface=vc", "UNIO_ETHDEV_IP", "10.77.0.3", NULL };

/* V over ethdev in namespace argv[0] (A and M, its children, too): case argv[1]. */
UNIO_TEST_CHILD(forged_ethdev)
{
	struct api_third_case c;
	const char *env[32];
	unsigned int n = 0;

	TEST_ASSERT(argc == 2 && test_enter_netns(argv[0]) == 0, "setns: %s", strerror(errno));
	c = forged_cases[atoi(argv[1]) != 0];
	for (const char *const *e = c.env; e != NULL && *e != NULL; e++)
		env[n++] = *e;
	for (const char *const *e = eth_env_v; *e != NULL; e++)
		env[n++] = *e;
	env[n] = NULL;
	c.drv = "ethdev";
	c.arg = (void *)(uintptr_t)c.drv;
	c.env = env;
	c.child_env[0] = eth_env_a;
	c.child_env[1] = eth_env_m;
	return api_third_process(&c);
}

/* Case @p i of forged_cases over ethdev, on the hub topology. */
static int
forged_case_ethdev(unsigned int i)
{
	char name[32], na[40], idx[4];
	const char *args[] = { na, idx, NULL };
	int rc = TEST_FAIL;

	if (!test_can_netns())
		TEST_SKIP_BECAUSE("needs root and iproute2 network namespaces");
	snprintf(name, sizeof(name), "uniofrg-%d", getpid());
	snprintf(na, sizeof(na), "%s-a", name);
	snprintf(idx, sizeof(idx), "%u", i);
	if (test_topology("hub", "up", name, NULL) == 0 &&
	    test_wait(test_spawn("forged_ethdev", args), 120000) == 0)
		rc = TEST_OK;
	test_topology("hub", "down", name, NULL);
	return rc;
}

/* The forged answers over ethdev: M over its own reliable channel to V. */
UNIO_TEST(ethdev_answers_third_process, mp)
{
	return forged_case_ethdev(0);
}

/*
 * The forged senders over ethdev: the connection id the protocol checks is the reliable
 * channel's (its aliases share it).
 */
UNIO_TEST(ethdev_senders_third_process, mp)
{
	return forged_case_ethdev(1);
}

/*
 * A forged wireup reply.  An ep made from a worker address connects when the peer's reply
 * arrives, and takes the connection it came on as its peer's (the peer chose its own lane).
 * V's ep to X is still connecting when M, connected to V too, sends a reply naming it on
 * its own connection: with the ep id alone (a small number) V took it, set the ep's remote
 * id to M's choice and bound the ep to M's connection.  The reply must repeat the cookie of
 * V's request, which only X saw: M's is dropped and counted, and X's real reply connects
 * the ep, over which a message then goes to X and back (fast, three workers of one process).
 */
struct wire_rep_forged {
	uint32_t dst_ep_id;
	uint32_t src_ep_id;
	uint64_t cookie;
};

UNIO_TEST(api_wireup_forged_reply, fast)
{
	unio_context_t *ctx = api_ctx(NULL);
	unio_worker_t *v = NULL, *x = NULL, *m = NULL;
	unio_ep_t *ep_vm = NULL, *ep_mv = NULL, *ep_vx = NULL, *ep_xv = NULL;
	struct wire_rep_forged rep = { 0 };
	struct unio_recv_info info;
	unio_status_t st;
	uint64_t d0, msg = 0x5eed, got = 0;
	int rc = TEST_FAIL;

	TEST_ASSERT(ctx != NULL, "context");
	v = unio_worker_create(ctx, NULL, &st);
	x = unio_worker_create(ctx, NULL, &st);
	m = unio_worker_create(ctx, NULL, &st);
	if (v == NULL || x == NULL || m == NULL)
		goto out;
	ep_vm = api_ep_to_worker(v, m, &st);
	ep_mv = api_ep_to_worker(m, v, &st);
	if (ep_vm == NULL || ep_mv == NULL || !api_ep_connected(v, m, ep_vm) ||
	    !api_ep_connected(m, v, ep_mv))
		goto out;
	/* V asks X, which does not progress yet: the ep waits for its reply */
	ep_vx = api_ep_to_worker(v, x, &st);
	if (ep_vx == NULL || ep_vx->state != EP_CONNECTING)
		goto out;
	d0 = api_worker_counter(v, API_DROPPED_FROM_PEERS);
	rep.dst_ep_id = ep_vx->id;
	rep.src_ep_id = 0x1234;
	rep.cookie = 0x1234567890abcdefull;
	if (api_raw_am(m, ep_mv->lane.tl_ep, PROTO_AM_WIREUP_REP, &rep, sizeof(rep)) != 0)
		goto out;
	for (int i = 0; i < 1000; i++)
		unio_worker_progress(v);
	TEST_LOG("after M's reply: V's ep to X %s, dropped %" PRIu64,
		 ep_vx->state == EP_CONNECTING ? "still connecting" : "connected",
		 api_worker_counter(v, API_DROPPED_FROM_PEERS) - d0);
	if (ep_vx->state != EP_CONNECTING ||
	    api_worker_counter(v, API_DROPPED_FROM_PEERS) != d0 + 1)
		goto out;
	/* X answers: the ep connects to X's ep, and carries a message there and back */
	if (!api_ep_connected(v, x, ep_vx) || ep_vx->remote_id == 0x1234)
		goto out;
	for (uint32_t i = 0; i < x->n_eps && ep_xv == NULL; i++)
		if (x->eps[i] != NULL && x->eps[i]->remote_id == ep_vx->id)
			ep_xv = x->eps[i];
	if (ep_xv == NULL || ep_xv->id != ep_vx->remote_id)
		goto out;
	st = unio_tag_send(ep_vx, &msg, sizeof(msg), 0x77, NULL, NULL);
	if (st != UNIO_OK || api_recv(x, &got, sizeof(got), 0x77, UINT64_MAX, &info) != UNIO_OK ||
	    got != msg)
		goto out;
	msg++;
	st = unio_tag_send(ep_xv, &msg, sizeof(msg), 0x78, NULL, NULL);
	if (st != UNIO_OK || api_recv(v, &got, sizeof(got), 0x78, UINT64_MAX, &info) != UNIO_OK ||
	    got != msg)
		goto out;
	rc = TEST_OK;
out:
	if (rc != TEST_OK)
		TEST_LOG("failed: ep to X %s, remote id %#x", ep_vx == NULL ? "none" :
			 ep_vx->state == EP_CONNECTED ? "connected" : "not connected",
			 ep_vx != NULL ? ep_vx->remote_id : 0);
	if (ep_vx != NULL)
		unio_ep_close(ep_vx, UNIO_EP_CLOSE_FORCE, NULL);
	if (ep_vm != NULL)
		unio_ep_close(ep_vm, UNIO_EP_CLOSE_FORCE, NULL);
	if (ep_mv != NULL)
		unio_ep_close(ep_mv, UNIO_EP_CLOSE_FORCE, NULL);
	if (m != NULL)
		unio_worker_destroy(m);
	if (x != NULL)
		unio_worker_destroy(x);
	if (v != NULL)
		unio_worker_destroy(v);
	unio_context_destroy(ctx);
	return rc;
}

/* The block cipher that seals request ids: Speck64/128's published test vector. */
UNIO_TEST(proto_id_seal, fast)
{
	static const uint32_t key[4] = { 0x03020100, 0x0b0a0908, 0x13121110, 0x1b1a1918 };
	uint32_t rk[PROTO_ID_ROUNDS], rk2[PROTO_ID_ROUNDS];
	uint64_t c, prev = 0;

	proto_id_key_init(rk, key);
	c = proto_id_seal(rk, 0x3b7265747475432dull);
	TEST_ASSERT(c == 0x8c6fa548454e028bull, "Speck64/128 vector: %#" PRIx64, c);
	TEST_ASSERT(proto_id_open(rk, c) == 0x3b7265747475432dull, "open");
	/* neighbouring slots seal to unrelated ids, which open to them; another key differs */
	for (uint64_t gen = 1; gen < 4; gen++)
		for (uint64_t idx = 0; idx < 4096; idx++) {
			uint64_t s = gen << 32 | idx;

			c = proto_id_seal(rk, s);
			TEST_ASSERT(proto_id_open(rk, c) == s, "round trip of %#" PRIx64, s);
			TEST_ASSERT(c != prev && (c >> 32) != 0, "slot %#" PRIx64 ": id %#" PRIx64,
				    s, c);
			prev = c;
		}
	memcpy(rk2, rk, sizeof(rk));
	rk2[0] ^= 1;
	TEST_ASSERT(proto_id_seal(rk2, 1ull << 32) != proto_id_seal(rk, 1ull << 32),
		    "the key changes the id");
	return TEST_OK;
}
