/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm remote keys and a third process.  V (this process) has shm endpoints to T and to M.
 * M, malicious, forges rendezvous messages to V that name V's endpoint to T (an ep id is a
 * small number; M could also write them into T's ring in V's segment, which every sender to V
 * maps) and carry a shm key for T's memory that T never registered for anyone:
 *  - an RTS whose key names T's private "secret" buffer: V's matching receive would pull it
 *    from T (CMA) and hand T's bytes to V's application;
 *  - an RTP (split rendezvous) for V's pending rendezvous send to T whose key names T's
 *    "target" buffer: V would write its message into T at M's address.
 * Asserted: V's receive never holds T's secret, T's target stays untouched, T's secret too;
 * then T receives V's send after all (M's refused RTP did not take it): intact, completed.
 * A shm key names no process (its owner is the peer of the ep it is unpacked on) and grants
 * only a range its owner registered (slot and random secret, checked in the owner's table at
 * unpack); M's forged keys carry the slot and secret of M's own registration.  Three
 * processes (mp).
 */

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_log.h>

#include "api_common.h"
#include "proto_am_rma.h"
#include "shm_priv.h"
#include "unio_proto.h"

#define TAG_INFO   0x7101
#define TAG_CHECK  0x7102
#define TAG_ANSWER 0x7103
#define TAG_LEAK   0x7104
#define TAG_SEND   0x7105
#define SECRET_LEN 4096
#define SEND_LEN   (1 << 20)

/* What T tells V, and V tells M (the attacker learns it by other means in real life). */
struct third_info {
	uint64_t pid;
	uint64_t iface_id;     /* T's shm iface */
	uint64_t secret_addr;
	uint64_t target_addr;
	uint64_t v_ep_id;      /* V's id of its ep to T: what T's headers carry */
	uint64_t v_sreq;       /* V's rendezvous send to T, waiting for T */
};

struct third_answer {
	int64_t target_bad;    /* first byte of T's target that changed, -1 */
	int64_t secret_bad;
};

static uint8_t t_secret[SECRET_LEN];
static uint8_t t_target[SEND_LEN];

static int64_t
first_diff(const uint8_t *p, size_t n, uint64_t seed)
{
	uint8_t *want = malloc(n);
	int64_t r = -1;

	if (want == NULL)
		return 0;
	if (seed == 0)
		memset(want, 0, n);
	else
		test_fill(want, n, seed);
	for (size_t i = 0; i < n; i++)
		if (p[i] != want[i]) {
			r = (int64_t)i;
			break;
		}
	free(want);
	return r;
}

UNIO_TEST_CHILD(shm_third_owner)
{
	unio_context_t *ctx = api_ctx(NULL);
	unio_worker_t *w = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	struct third_info ti = { 0 };
	struct third_answer ans;
	struct unio_recv_info info;
	unio_status_t st = UNIO_ERR_INVALID_PARAM;
	unio_ep_t *ep;
	uint64_t go;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (argc < 1 || w == NULL || api_worker_iface(w, "shm", NULL) == NULL)
		return 2;
	ep = api_connect(w, atoi(argv[0]), NULL, NULL, &st);
	if (ep == NULL)
		return 3;
	test_fill(t_secret, SECRET_LEN, 0x5ec7e7);
	memset(t_target, 0, SEND_LEN);
	ti.pid = (uint64_t)getpid();
	ti.iface_id = ((struct shm_iface *)api_worker_iface(w, "shm", NULL))->iface_id;
	ti.secret_addr = (uintptr_t)t_secret;
	ti.target_addr = (uintptr_t)t_target;
	ti.v_ep_id = ep->remote_id;
	if (strcmp(ep->lane.iface->driver->name, "shm") != 0 ||
	    api_send(w, ep, &ti, sizeof(ti), TAG_INFO, 0) != UNIO_OK ||
	    api_recv(w, &go, sizeof(go), TAG_CHECK, UINT64_MAX, &info) != UNIO_OK)
		return 4;
	ans.target_bad = first_diff(t_target, SEND_LEN, 0);
	ans.secret_bad = first_diff(t_secret, SECRET_LEN, 0x5ec7e7);
	if (api_send(w, ep, &ans, sizeof(ans), TAG_ANSWER, 0) != UNIO_OK)
		return 5;
	/* now the receive of V's pending rendezvous send: M's forged RTP did not take it */
	{
		uint8_t *buf = malloc(SEND_LEN), *want = malloc(SEND_LEN);

		if (buf == NULL || want == NULL ||
		    api_recv(w, buf, SEND_LEN, TAG_SEND, UINT64_MAX, &info) != UNIO_OK)
			return 6;
		test_fill(want, SEND_LEN, 0xabc);
		ans.target_bad = first_diff(t_target, SEND_LEN, 0);
		ans.secret_bad = memcmp(buf, want, SEND_LEN) == 0 ? -1 : 0;
		free(buf);
		free(want);
		if (api_send(w, ep, &ans, sizeof(ans), TAG_ANSWER, 0) != UNIO_OK)
			return 7;
	}
	/* V closes first; its rendezvous send to this process is never received */
	return api_child_end(ctx, w, ep);
}

/* A shm key for [base, base + len) of T, as M can make it: M's own key, its fields changed. */
static size_t
forge_key(struct unio_tl_iface *ifc, const struct third_info *ti, uint64_t base, size_t len,
	  uint8_t *out)
{
	static uint8_t mine[64];
	struct unio_tl_memh memh;
	struct shm_rkey_packed k;

	if (ifc->ctl->mem_reg(ifc, mine, sizeof(mine), &memh) != UNIO_OK ||
	    ifc->ctl->rkey_pack(ifc, &memh, &k) != UNIO_OK)
		return 0;
	RTE_SET_USED(ti);
	k.base = base;
	k.len = len;
	/* the slot of M's own registration, and its secret: T's table has neither */
	memcpy(out, &k, sizeof(k));
	return sizeof(k);
}

UNIO_TEST_CHILD(shm_third_attacker)
{
	unio_context_t *ctx = api_ctx(NULL);
	unio_worker_t *w = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	uint8_t m[sizeof(struct proto_rtp_hdr) + UNIO_TL_RKEY_MAX + 64];
	struct proto_rts_hdr rts = { .tag = TAG_LEAK, .size = SECRET_LEN, .sreq_id = 0x1234 };
	struct proto_rtp_hdr rtp = { .r = { .rreq_id = 0x77 }, .offset = SEND_LEN / 2 };
	struct unio_recv_info info;
	struct unio_tl_iface *ifc;
	struct third_info ti;
	unio_status_t st = UNIO_ERR_INVALID_PARAM;
	unio_ep_t *ep;
	size_t kl;
	uint64_t done = 1;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (argc < 1 || w == NULL || (ifc = api_worker_iface(w, "shm", NULL)) == NULL)
		return 2;
	ep = api_connect(w, atoi(argv[0]), NULL, NULL, &st);
	if (ep == NULL || strcmp(ep->lane.iface->driver->name, "shm") != 0)
		return 3;
	if (api_recv(w, &ti, sizeof(ti), TAG_INFO, UINT64_MAX, &info) != UNIO_OK)
		return 4;
	/* the RTS: V's receive of TAG_LEAK would pull T's secret */
	rts.addr = ti.secret_addr;
	rts.ep_id = (uint32_t)ti.v_ep_id;
	kl = forge_key(ifc, &ti, ti.secret_addr, SECRET_LEN, m + sizeof(rts));
	if (kl == 0)
		return 5;
	rts.rkey_len = (uint16_t)kl;
	memcpy(m, &rts, sizeof(rts));
	if (api_raw_am(w, ep->lane.tl_ep, PROTO_AM_RTS, m, sizeof(rts) + kl) != 0)
		return 6;
	/* the RTP: V would put the second half of its send to T into T's target */
	rtp.r.sreq_id = ti.v_sreq;
	rtp.r.ep_id = (uint32_t)ti.v_ep_id;
	rtp.addr = ti.target_addr;
	kl = forge_key(ifc, &ti, ti.target_addr, SEND_LEN / 2, m + sizeof(rtp));
	rtp.rkey_len = (uint16_t)kl;
	memcpy(m, &rtp, sizeof(rtp));
	if (api_raw_am(w, ep->lane.tl_ep, PROTO_AM_RTR, m, sizeof(rtp) + kl) != 0)
		return 7;
	if (api_send(w, ep, &done, sizeof(done), TAG_CHECK, 0) != UNIO_OK)
		return 8;
	return api_child_end(ctx, w, ep);
}

static int
victim(unio_worker_t *w, unio_ep_t *ep_t, unio_ep_t *ep_m, const char *flag, void *arg)
{
	uint8_t *send_buf = arg;
	uint8_t leak[SECRET_LEN], want[SECRET_LEN];
	struct unio_recv_info info;
	struct third_info ti;
	struct third_answer ans;
	unio_request_t *sreq = NULL, *rreq = NULL;
	uint64_t go = 1;

	RTE_SET_USED(flag);
	TEST_ASSERT(strcmp(ep_t->lane.iface->driver->name, "shm") == 0 &&
		    strcmp(ep_m->lane.iface->driver->name, "shm") == 0, "lanes %s, %s",
		    ep_t->lane.iface->driver->name, ep_m->lane.iface->driver->name);
	TEST_ASSERT_STATUS(api_recv(w, &ti, sizeof(ti), TAG_INFO, UINT64_MAX, &info), UNIO_OK);
	TEST_ASSERT(ti.v_ep_id == ep_t->id, "T's view of V's ep id");
	/* a rendezvous send to T that T never receives: it waits for T's RTR / RTP */
	test_fill(send_buf, SEND_LEN, 0xabc);
	TEST_ASSERT_STATUS(unio_tag_send(ep_t, send_buf, SEND_LEN, TAG_SEND, NULL, &sreq),
			   UNIO_INPROGRESS);
	ti.v_sreq = proto_req_id(sreq);
	memset(leak, 0xee, sizeof(leak));
	TEST_ASSERT_STATUS(unio_tag_recv(w, leak, sizeof(leak), TAG_LEAK, UINT64_MAX, NULL,
					 &rreq), UNIO_INPROGRESS);
	TEST_ASSERT_STATUS(api_send(w, ep_m, &ti, sizeof(ti), TAG_INFO, 0), UNIO_OK);
	TEST_ASSERT_STATUS(api_recv(w, &go, sizeof(go), TAG_CHECK, UINT64_MAX, &info), UNIO_OK);
	for (uint64_t t0 = rte_get_timer_cycles();
	     rte_get_timer_cycles() - t0 < rte_get_timer_hz() / 2; )
		unio_worker_progress(w);
	test_fill(want, SECRET_LEN, 0x5ec7e7);
	TEST_ASSERT(memcmp(leak, want, SECRET_LEN) != 0,
		    "V's receive holds T's secret: M made V read a third process's memory");
	TEST_LOG("V's receive after the forged RTS: %s", unio_status_string(
		 unio_request_test(rreq, NULL)));
	unio_request_cancel(w, rreq);
	unio_request_free(rreq);
	/* T checks its memory */
	TEST_ASSERT_STATUS(api_send(w, ep_t, &go, sizeof(go), TAG_CHECK, 0), UNIO_OK);
	TEST_ASSERT_STATUS(api_recv(w, &ans, sizeof(ans), TAG_ANSWER, UINT64_MAX, &info),
			   UNIO_OK);
	TEST_ASSERT(ans.target_bad < 0, "T's target changed at byte %" PRId64 ": M made V "
		    "write into a third process", ans.target_bad);
	TEST_ASSERT(ans.secret_bad < 0, "T's secret changed at byte %" PRId64, ans.secret_bad);
	/* T receives V's send after all: it completes, intact, T's target still untouched
	 * (before, M's refused RTP had marked the send answered: it never completed) */
	TEST_ASSERT_STATUS(unio_tag_recv(w, &ans, sizeof(ans), TAG_ANSWER, UINT64_MAX, NULL,
					 &rreq), UNIO_INPROGRESS);
	for (uint64_t t0 = rte_get_timer_cycles(); rte_get_timer_cycles() - t0 <
	     20 * rte_get_timer_hz() && (unio_request_test(sreq, NULL) == UNIO_INPROGRESS ||
					 unio_request_test(rreq, NULL) == UNIO_INPROGRESS); )
		unio_worker_progress(w);
	TEST_ASSERT_STATUS(unio_request_test(sreq, NULL), UNIO_OK);
	TEST_ASSERT_STATUS(unio_request_test(rreq, NULL), UNIO_OK);
	unio_request_free(sreq);
	unio_request_free(rreq);
	TEST_ASSERT(ans.secret_bad < 0, "T received V's send with other data");
	TEST_ASSERT(ans.target_bad < 0, "T's target changed at byte %" PRId64, ans.target_bad);
	return TEST_OK;
}

UNIO_TEST(shm_rkey_third_process, mp)
{
	/* shm with CMA and the split rendezvous (so that V's send waits for an RTP) */
	static const char *const env[] = { "UNIO_RNDV_SCHEME", "split", NULL };
	struct api_third_case c = {
		.drv = "shm", .env = env, .peer = "shm_third_owner",
		.forger = "shm_third_attacker", .who = "T", .victim = victim,
	};
	int rc;

	c.arg = malloc(SEND_LEN);
	TEST_ASSERT(c.arg != NULL, "send buffer");
	rc = api_third_process(&c);
	free(c.arg);
	return rc;
}
