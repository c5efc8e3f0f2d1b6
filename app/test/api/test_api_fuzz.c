/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Forged protocol headers: a worker (the attacker) sends raw AMs with the protocol's ids on
 * the transport ep of its lane to a victim worker: truncated headers, unknown eps, requests
 * and fragments (a further fragment without its first's cookie), lengths beyond the total,
 * offsets that overflow, huge totals, keys that do not exist, then 20,000 random messages.
 * Asserted: each malformed message is dropped and
 * counted exactly (the "dropped from peers" line of unio_worker_print_info()), nothing is
 * written outside a posted buffer (guard bytes), truncation is reported with nothing written,
 * and afterwards both workers still exchange tagged messages and AMs of every protocol with
 * checksummed payloads.  Over shm and over tcp; fast, so it also runs under ASan.
 */

#include <stdio.h>

#include <rte_log.h>

#include "api_common.h"
#include "proto_am_rma.h"
#include "unio_proto.h"

#define GUARD 64
#define N_RANDOM 20000
#define AM_ID 5

struct fz {
	unio_context_t *ctx;
	unio_worker_t *a;        /* victim */
	unio_worker_t *b;        /* attacker */
	unio_ep_t *ep;           /* b -> a */
	struct unio_tl_ep *tl;   /* the transport ep of its lane */
	uint32_t a_ep;           /* a's id of its ep to b: what b's headers name */
	uint64_t want_a, want_b; /* drops expected so far */
	unsigned int am_calls;
	uint64_t am_sum;
};

/* A receive buffer with guard bytes on both sides. */
struct gbuf {
	uint8_t *raw;
	uint8_t *p;
	size_t len;
	uint8_t *shadow;
};

static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The "dropped from peers" line of unio_worker_print_info(). */
static uint64_t
dropped(unio_worker_t *w)
{
	return api_worker_counter(w, API_DROPPED_FROM_PEERS);
}

static void
progress(struct fz *f, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		unio_worker_progress(f->a);
		unio_worker_progress(f->b);
	}
}

/* Progress until both counters reach what is expected, then a while more: exactly that. */
static int
expect_drops(struct fz *f, int line)
{
	uint64_t da = 0, db = 0;

	for (int i = 0; i < 2000000; i++) {
		progress(f, 1);
		if (i % 64 != 0)
			continue;
		da = dropped(f->a);
		db = dropped(f->b);
		if (da >= f->want_a && db >= f->want_b)
			break;
	}
	progress(f, 2000);
	da = dropped(f->a);
	db = dropped(f->b);
	TEST_ASSERT(da == f->want_a && db == f->want_b,
		    "line %d: dropped %" PRIu64 " / %" PRIu64 ", want %" PRIu64 " / %" PRIu64,
		    line, da, db, f->want_a, f->want_b);
	return TEST_OK;
}

#define EXPECT_DROPS(f) TEST_ASSERT_EQ(expect_drops(f, __LINE__), TEST_OK)

struct raw {
	const void *p;
	size_t n;
};

static size_t
raw_pack(void *dest, void *arg)
{
	const struct raw *r = arg;

	if (r->n != 0)
		memcpy(dest, r->p, r->n);
	return r->n;
}

/* Send @p n bytes as AM @p id on b's transport ep, waiting for room. */
static int
raw_send(struct fz *f, uint8_t id, const void *p, size_t n)
{
	struct raw r = { p, n };

	for (int i = 0; i < 1000000; i++) {
		ssize_t s = unio_tl_ep_am_bcopy(f->tl, id, raw_pack, &r, 0);

		if (s >= 0)
			return TEST_OK;
		TEST_ASSERT(s == UNIO_ERR_NO_RESOURCE, "am_bcopy id %u, %zu bytes: %s", id, n,
			    unio_status_string((unio_status_t)s));
		progress(f, 1);
	}
	TEST_ASSERT(0, "no room for a %zu-byte AM", n);
}

#define SEND(f, id, p, n) TEST_ASSERT_EQ(raw_send(f, id, p, n), TEST_OK)

/* Send a header and @p n payload bytes after it (the payload is a pattern). */
static int
send_hp(struct fz *f, uint8_t id, const void *h, size_t hl, const void *pl, size_t n)
{
	uint8_t *m = malloc(hl + n + 1);
	int rc;

	TEST_ASSERT(m != NULL, "malloc");
	memcpy(m, h, hl);
	if (n != 0)
		memcpy(m + hl, pl, n);
	rc = raw_send(f, id, m, hl + n);
	free(m);
	return rc;
}

#define SEND_HP(f, id, h, pl, n) TEST_ASSERT_EQ(send_hp(f, id, &(h), sizeof(h), pl, n), TEST_OK)

static int
gbuf_new(struct gbuf *g, size_t len)
{
	g->raw = malloc(len + 2 * GUARD);
	g->shadow = malloc(len + 2 * GUARD);
	TEST_ASSERT(g->raw != NULL && g->shadow != NULL, "malloc");
	g->p = g->raw + GUARD;
	g->len = len;
	test_fill(g->raw, len + 2 * GUARD, len * 7 + 3);
	memcpy(g->shadow, g->raw, len + 2 * GUARD);
	return TEST_OK;
}

static void
gbuf_free(struct gbuf *g)
{
	free(g->raw);
	free(g->shadow);
}

/* Only [off, off + n) of the buffer may have changed, to @p data (NULL: nothing changed). */
static int
gbuf_check(const struct gbuf *g, size_t off, const void *data, size_t n)
{
	if (data != NULL)
		memcpy(g->shadow + GUARD + off, data, n);
	TEST_ASSERT(memcmp(g->raw, g->shadow, g->len + 2 * GUARD) == 0,
		    "bytes outside [%zu, %zu) of a %zu-byte receive (or its guards) changed", off,
		    off + n, g->len);
	return TEST_OK;
}

static unio_status_t
am_cb(void *arg, const void *hdr, size_t hdr_len, void *data, size_t len,
      const struct unio_am_recv_param *p)
{
	struct fz *f = arg;

	RTE_SET_USED(hdr);
	RTE_SET_USED(hdr_len);
	f->am_calls++;
	if (p->recv_attr & UNIO_AM_RECV_ATTR_FLAG_RNDV)
		return UNIO_OK;   /* not a message of this test: refused */
	f->am_sum = test_checksum(data, len);
	return UNIO_OK;
}

static int
fz_open(struct fz *f, const char *const *ovr, const char *drv)
{
	unio_status_t st;

	memset(f, 0, sizeof(*f));
	f->ctx = api_ctx(ovr);
	TEST_ASSERT(f->ctx != NULL, "context");
	f->a = unio_worker_create(f->ctx, NULL, &st);
	TEST_ASSERT(f->a != NULL, "worker: %s", unio_status_string(st));
	f->b = unio_worker_create(f->ctx, NULL, &st);
	TEST_ASSERT(f->b != NULL, "worker: %s", unio_status_string(st));
	f->ep = api_ep_to_worker(f->b, f->a, &st);
	TEST_ASSERT(f->ep != NULL, "ep: %s", unio_status_string(st));
	TEST_ASSERT(api_ep_connected(f->b, f->a, f->ep), "ep never connected");
	TEST_ASSERT(strcmp(f->ep->lane.iface->driver->name, drv) == 0, "lane %s, want %s",
		    f->ep->lane.iface->driver->name, drv);
	f->tl = f->ep->lane.tl_ep;
	f->a_ep = f->ep->remote_id;
	TEST_ASSERT((f->a_ep & 0xffff) < f->a->n_eps && f->a->eps[f->a_ep & 0xffff] != NULL &&
		    f->a->eps[f->a_ep & 0xffff]->id == f->a_ep, "the victim's ep %#x", f->a_ep);
	TEST_ASSERT_STATUS(unio_worker_set_am_handler(f->a, AM_ID, am_cb, f, 0), UNIO_OK);
	TEST_ASSERT_EQ(dropped(f->a), 0);
	TEST_ASSERT_EQ(dropped(f->b), 0);
	return TEST_OK;
}

static void
fz_close(struct fz *f)
{
	if (f->ep != NULL)
		unio_ep_close(f->ep, UNIO_EP_CLOSE_FORCE, NULL);
	if (f->b != NULL)
		unio_worker_destroy(f->b);
	if (f->a != NULL)
		unio_worker_destroy(f->a);
	if (f->ctx != NULL)
		unio_context_destroy(f->ctx);
}

/* ---- 1. malformed headers, each dropped and counted ---- */

static int
malformed(struct fz *f)
{
	static uint8_t zero[512];
	uint64_t s = 0x2545f4914f6cdd1dull;
	struct proto_eager_first_hdr ef = { .e = { .tag = 0x77, .ep_id = f->a_ep }, .total = 100 };
	struct proto_frag_hdr fr = { .ep_id = f->a_ep };
	struct proto_rts_hdr rts = { .tag = 0x78, .size = 1000, .sreq_id = 0x1234,
				     .ep_id = f->a_ep };
	struct proto_ack_hdr ack = { .status = UNIO_OK };
	struct proto_rtr_hdr rtr = { .ep_id = f->ep->id };
	struct proto_rtp_hdr rtp = { .offset = 64 };
	struct am_eager_hdr ae = { .am_id = AM_ID, .ep_id = f->a_ep };
	struct am_rts_hdr ar = { .sreq_id = 0x99, .size = 4096, .ep_id = f->a_ep,
				 .am_id = AM_ID };

	/* truncated headers */
	for (size_t n = 0; n < 8; n++, f->want_a++)
		SEND(f, PROTO_AM_EAGER_SHORT, zero, n);
	for (size_t n = 0; n < sizeof(struct proto_eager_hdr); n += 7, f->want_a++)
		SEND(f, PROTO_AM_EAGER, zero, n);
	SEND(f, PROTO_AM_EAGER_FIRST, &ef, sizeof(ef) - 1);
	SEND(f, PROTO_AM_EAGER_MID, &fr, sizeof(fr) - 1);
	SEND(f, PROTO_AM_RTS, &rts, sizeof(rts) - 1);
	SEND(f, PROTO_AM_PIPE, &fr, sizeof(fr) - 1);
	SEND(f, PROTO_AM_USER_EAGER, &ae, sizeof(ae) - 1);
	SEND(f, PROTO_AM_USER_RTS, &ar, sizeof(ar) - 1);
	f->want_a += 6;
	EXPECT_DROPS(f);

	/* first fragments: unknown eps, totals beyond the bound, a fragment as long as the
	 * total, none at all */
	ef.e.ep_id = f->a_ep ^ 0x10000;
	SEND_HP(f, PROTO_AM_EAGER_FIRST, ef, zero, 10);
	ef.e.ep_id = 0xffff;
	SEND_HP(f, PROTO_AM_EAGER_FIRST, ef, zero, 10);
	ef.e.ep_id = f->a_ep;
	ef.total = (1ull << 40) + 1;
	SEND_HP(f, PROTO_AM_EAGER_FIRST, ef, zero, 10);
	ef.total = UINT64_MAX;
	SEND_HP(f, PROTO_AM_EAGER_FIRST, ef, zero, 10);
	ef.total = 10;
	SEND_HP(f, PROTO_AM_EAGER_FIRST, ef, zero, 10);
	ef.total = 100;
	SEND_HP(f, PROTO_AM_EAGER_FIRST, ef, zero, 0);
	f->want_a += 6;
	/* further fragments of no message */
	fr.offset = 0;
	SEND_HP(f, PROTO_AM_EAGER_MID, fr, zero, 10);
	fr.offset = UINT64_MAX - 4;
	SEND_HP(f, PROTO_AM_EAGER_MID, fr, zero, 10);
	fr.ep_id = 0xdead;
	SEND_HP(f, PROTO_AM_EAGER_MID, fr, zero, 10);
	fr.ep_id = f->a_ep;
	f->want_a += 3;
	EXPECT_DROPS(f);

	/* RTS: unknown ep, oversized key, key length that disagrees, huge size, no request id */
	rts.ep_id = 0xbeef;
	SEND_HP(f, PROTO_AM_RTS, rts, zero, 0);
	rts.ep_id = f->a_ep;
	rts.rkey_len = UNIO_TL_RKEY_MAX + 1;
	SEND_HP(f, PROTO_AM_RTS, rts, zero, UNIO_TL_RKEY_MAX + 1);
	rts.rkey_len = 16;
	SEND_HP(f, PROTO_AM_RTS, rts, zero, 15);
	SEND_HP(f, PROTO_AM_RTS, rts, zero, 17);
	rts.rkey_len = 0;
	rts.size = (1ull << 40) + 1;
	SEND_HP(f, PROTO_AM_RTS, rts, zero, 0);
	rts.size = UINT64_MAX;
	SEND_HP(f, PROTO_AM_RTS, rts, zero, 0);
	rts.size = 1000;
	rts.sreq_id = 0;
	SEND_HP(f, PROTO_AM_RTS, rts, zero, 0);
	f->want_a += 7;
	EXPECT_DROPS(f);

	/* acknowledgements, RTR, RTP and pipelined fragments for requests that do not exist */
	SEND(f, PROTO_AM_ATS, &ack, sizeof(ack) - 1);
	SEND_HP(f, PROTO_AM_ATS, ack, zero, 1);
	SEND(f, PROTO_AM_SYNC_ACK, &ack, sizeof(ack) - 1);
	SEND(f, PROTO_AM_RTR, &rtr, sizeof(rtr) - 1);
	SEND_HP(f, PROTO_AM_RTR, rtr, zero, 1);
	f->want_a += 5;
	for (unsigned int i = 0; i < 1000; i++) {
		ack.sreq_id = i < 500 ? rnd(&s) : (rnd(&s) & 0xffff) | ((uint64_t)(i % 4) << 32);
		ack.status = (int32_t)(i % 3) - 1;
		SEND(f, i % 2 ? PROTO_AM_ATS : PROTO_AM_SYNC_ACK, &ack, sizeof(ack));
		rtr.sreq_id = ack.sreq_id;
		rtr.rreq_id = rnd(&s) | 1;
		SEND(f, PROTO_AM_RTR, &rtr, sizeof(rtr));
		rtp.r = rtr;
		rtp.addr = rnd(&s);
		rtp.rkey_len = (uint16_t)(i % (UNIO_TL_RKEY_MAX + 8));
		TEST_ASSERT_EQ(send_hp(f, PROTO_AM_RTR, &rtp, sizeof(rtp), zero, rtp.rkey_len),
			       TEST_OK);
		fr.rreq_id = ack.sreq_id;
		fr.offset = i % 2 ? 0 : rnd(&s);
		SEND_HP(f, PROTO_AM_PIPE, fr, zero, i % 100);
		f->want_a += 4;
	}
	EXPECT_DROPS(f);

	/* AMs: a user header longer than the message, ids without a handler, RTS faults */
	ae.hdr_len = 100;
	SEND_HP(f, PROTO_AM_USER_EAGER, ae, zero, 99);
	ae.hdr_len = 0x7fff;
	SEND_HP(f, PROTO_AM_USER_EAGER, ae, zero, 10);
	ae.hdr_len = 0;
	ae.am_id = AM_ID + 1;
	SEND_HP(f, PROTO_AM_USER_EAGER, ae, zero, 10);
	ae.am_id = 0xffff;
	SEND_HP(f, PROTO_AM_USER_EAGER, ae, zero, 10);
	ar.ep_id = 0x4242;
	SEND_HP(f, PROTO_AM_USER_RTS, ar, zero, 0);
	ar.ep_id = f->a_ep;
	ar.sreq_id = 0;
	SEND_HP(f, PROTO_AM_USER_RTS, ar, zero, 0);
	ar.sreq_id = 0x99;
	ar.hdr_len = 8;
	SEND_HP(f, PROTO_AM_USER_RTS, ar, zero, 7);
	ar.hdr_len = 0;
	ar.rkey_len = UNIO_TL_RKEY_MAX + 1;
	SEND_HP(f, PROTO_AM_USER_RTS, ar, zero, UNIO_TL_RKEY_MAX + 1);
	ar.rkey_len = 0;
	ar.size = (1ull << 40) + 1;
	SEND_HP(f, PROTO_AM_USER_RTS, ar, zero, 0);
	f->want_a += 9;
	EXPECT_DROPS(f);

	/* the control plane's AMs (lib/api/wireup.c): truncated, or no magic */
	for (size_t n = 0; n < 4; n++, f->want_a += 3) {
		SEND(f, PROTO_AM_WIREUP_REQ, zero, n);
		SEND(f, PROTO_AM_WIREUP_REP, zero, n);
		SEND(f, PROTO_AM_CONN, zero, n);
	}
	SEND(f, PROTO_AM_CONN, zero, 256);
	SEND(f, PROTO_AM_WIREUP_REP, zero, 256);
	f->want_a += 2;
	EXPECT_DROPS(f);
	TEST_ASSERT_EQ(f->am_calls, 0);
	TEST_LOG("%" PRIu64 " malformed messages dropped and counted", f->want_a);
	return TEST_OK;
}

/* ---- 2. well-formed headers whose lengths must not write outside the posted buffer ---- */

static int
post(struct fz *f, struct gbuf *g, uint64_t tag, unio_request_t **req)
{
	unio_status_t st = unio_tag_recv(f->a, g->p, g->len, tag, UINT64_MAX, NULL, req);

	TEST_ASSERT_STATUS(st, UNIO_INPROGRESS);
	return TEST_OK;
}

static int
finish(struct fz *f, unio_request_t *req, unio_status_t want, size_t want_len)
{
	struct unio_recv_info info = { 0 };
	unio_status_t st = UNIO_INPROGRESS;

	for (int i = 0; i < 2000000 && st == UNIO_INPROGRESS; i++) {
		progress(f, 1);
		st = unio_request_test(req, &info);
	}
	unio_request_free(req);
	TEST_ASSERT(st == want, "receive: %s, want %s", unio_status_string(st),
		    unio_status_string(want));
	TEST_ASSERT(info.length == want_len, "receive: length %zu, want %zu", info.length,
		    want_len);
	return TEST_OK;
}

static int
lengths(struct fz *f)
{
	uint8_t *data = malloc(16384);
	struct proto_eager_hdr eh = { .tag = 0x501, .ep_id = f->a_ep };
	struct proto_eager_first_hdr ef = { .e = { .tag = 0x502, .ep_id = f->a_ep } };
	struct proto_frag_hdr fr = { .ep_id = f->a_ep };
	size_t room = f->ep->lane.iface->attr.max_bcopy - sizeof(ef);
	unio_request_t *req;
	struct gbuf g;

	TEST_ASSERT(data != NULL, "malloc");
	test_fill(data, 16384, 99);
	TEST_ASSERT(room >= 2048, "max_bcopy %zu", f->ep->lane.iface->attr.max_bcopy);

	/* an eager message one byte longer than the receive: truncated, nothing written */
	TEST_ASSERT_EQ(gbuf_new(&g, 1000), TEST_OK);
	TEST_ASSERT_EQ(post(f, &g, 0x501, &req), TEST_OK);
	SEND_HP(f, PROTO_AM_EAGER, eh, data, 1001);
	TEST_ASSERT_EQ(finish(f, req, UNIO_ERR_MESSAGE_TRUNCATED, 1001), TEST_OK);
	TEST_ASSERT_EQ(gbuf_check(&g, 0, NULL, 0), TEST_OK);
	gbuf_free(&g);

	/* fragments announcing more than the receive holds: truncated, the rest swallowed */
	TEST_ASSERT_EQ(gbuf_new(&g, 1500), TEST_OK);
	TEST_ASSERT_EQ(post(f, &g, 0x502, &req), TEST_OK);
	ef.total = 3001;
	SEND_HP(f, PROTO_AM_EAGER_FIRST, ef, data, 1000);
	fr.offset = 1000;
	SEND_HP(f, PROTO_AM_EAGER_MID, fr, data + 1000, 2001);
	TEST_ASSERT_EQ(finish(f, req, UNIO_ERR_MESSAGE_TRUNCATED, 3001), TEST_OK);
	TEST_ASSERT_EQ(gbuf_check(&g, 0, NULL, 0), TEST_OK);
	gbuf_free(&g);
	EXPECT_DROPS(f);

	/* a message that fits, with bad fragments in between: dropped, the good ones land */
	TEST_ASSERT_EQ(gbuf_new(&g, 3000), TEST_OK);
	TEST_ASSERT_EQ(post(f, &g, 0x503, &req), TEST_OK);
	ef.e.tag = 0x503;
	ef.total = 3000;
	ef.cookie = 0xc00c1e5eed;
	SEND_HP(f, PROTO_AM_EAGER_FIRST, ef, data, 1000);
	SEND_HP(f, PROTO_AM_EAGER_FIRST, ef, data, 1000);   /* one in progress already */
	fr.offset = 1000;
	fr.rreq_id = 0;   /* not the first's cookie: a fragment forged by another peer */
	SEND_HP(f, PROTO_AM_EAGER_MID, fr, data + 1000, 100);
	fr.rreq_id = ef.cookie;
	fr.offset = 999;
	SEND_HP(f, PROTO_AM_EAGER_MID, fr, data + 999, 100);
	fr.offset = 1001;
	SEND_HP(f, PROTO_AM_EAGER_MID, fr, data + 1001, 100);
	fr.offset = 1000;
	SEND_HP(f, PROTO_AM_EAGER_MID, fr, data + 1000, 2001);   /* beyond the total */
	fr.offset = UINT64_MAX - 500;
	SEND_HP(f, PROTO_AM_EAGER_MID, fr, data + 1000, 1000);
	fr.offset = 1000;
	SEND_HP(f, PROTO_AM_EAGER_MID, fr, data, 0);
	f->want_a += 7;
	EXPECT_DROPS(f);
	SEND_HP(f, PROTO_AM_EAGER_MID, fr, data + 1000, 1500);
	fr.offset = 2500;
	SEND_HP(f, PROTO_AM_EAGER_MID, fr, data + 2500, 500);
	TEST_ASSERT_EQ(finish(f, req, UNIO_OK, 3000), TEST_OK);
	TEST_ASSERT_EQ(gbuf_check(&g, 0, data, 3000), TEST_OK);
	gbuf_free(&g);
	EXPECT_DROPS(f);

	/* the same arriving before its receive (unexpected), completed, then received */
	ef.e.tag = 0x504;
	ef.total = 2500;
	fr.offset = 500;
	SEND_HP(f, PROTO_AM_EAGER_FIRST, ef, data + 7, 500);
	fr.offset = 400;
	SEND_HP(f, PROTO_AM_EAGER_MID, fr, data, 10);
	fr.offset = 500;
	SEND_HP(f, PROTO_AM_EAGER_MID, fr, data + 507, 2001);
	SEND_HP(f, PROTO_AM_EAGER_MID, fr, data + 507, 2000);
	f->want_a += 2;
	EXPECT_DROPS(f);
	TEST_ASSERT_EQ(gbuf_new(&g, 2499), TEST_OK);   /* one byte short: truncated */
	TEST_ASSERT_STATUS(unio_tag_recv(f->a, g.p, g.len, 0x504, UINT64_MAX, NULL, &req),
			   UNIO_ERR_MESSAGE_TRUNCATED);
	TEST_ASSERT_EQ(gbuf_check(&g, 0, NULL, 0), TEST_OK);
	gbuf_free(&g);
	free(data);
	return TEST_OK;
}

/* ---- 3. rendezvous: an RTS without a key, forged pipelined fragments ---- */

static int pulled(struct fz *f);

static int
rendezvous(struct fz *f)
{
	uint8_t *data = malloc(8192);
	struct proto_rts_hdr rts = { .tag = 0x601, .sreq_id = 0x5151, .ep_id = f->a_ep,
				     .flags = PROTO_RTS_FLAG_PIPELINE, .size = 5000 };
	struct proto_frag_hdr fr = { .ep_id = f->a_ep };
	unio_request_t *req;
	struct gbuf g;

	TEST_ASSERT(data != NULL, "malloc");
	test_fill(data, 8192, 1234);
	/* a rendezvous larger than the receive: truncated at once, ATS to an unknown send */
	TEST_ASSERT_EQ(gbuf_new(&g, 4999), TEST_OK);
	TEST_ASSERT_EQ(post(f, &g, 0x601, &req), TEST_OK);
	SEND(f, PROTO_AM_RTS, &rts, sizeof(rts));
	TEST_ASSERT_EQ(finish(f, req, UNIO_ERR_MESSAGE_TRUNCATED, 5000), TEST_OK);
	TEST_ASSERT_EQ(gbuf_check(&g, 0, NULL, 0), TEST_OK);
	gbuf_free(&g);
	f->want_b++;   /* the ATS for send 0x5151, which b never started */
	EXPECT_DROPS(f);

	/* no key: the victim asks for the pipelined fragments (an RTR b drops) */
	TEST_ASSERT_EQ(gbuf_new(&g, 6000), TEST_OK);
	TEST_ASSERT_EQ(post(f, &g, 0x601, &req), TEST_OK);
	SEND(f, PROTO_AM_RTS, &rts, sizeof(rts));
	f->want_b++;
	EXPECT_DROPS(f);
	fr.rreq_id = proto_req_id(req);
	fr.offset = 0;
	fr.ep_id = f->a_ep ^ 0x10000;   /* for another ep */
	SEND_HP(f, PROTO_AM_PIPE, fr, data, 100);
	fr.ep_id = f->a_ep;
	fr.offset = 1;
	SEND_HP(f, PROTO_AM_PIPE, fr, data, 100);
	fr.offset = 0;
	SEND_HP(f, PROTO_AM_PIPE, fr, data, 5001);
	fr.rreq_id ^= 1ull << 32;   /* another generation */
	SEND_HP(f, PROTO_AM_PIPE, fr, data, 100);
	fr.rreq_id ^= 1ull << 32;
	f->want_a += 4;
	EXPECT_DROPS(f);
	SEND_HP(f, PROTO_AM_PIPE, fr, data, 3000);
	fr.offset = 3000;
	SEND_HP(f, PROTO_AM_PIPE, fr, data + 3000, 2001);   /* beyond the message */
	f->want_a++;
	SEND_HP(f, PROTO_AM_PIPE, fr, data + 3000, 2000);
	TEST_ASSERT_EQ(finish(f, req, UNIO_OK, 5000), TEST_OK);
	TEST_ASSERT_EQ(gbuf_check(&g, 0, data, 5000), TEST_OK);
	SEND_HP(f, PROTO_AM_PIPE, fr, data, 10);   /* the receive is over */
	f->want_a++;
	EXPECT_DROPS(f);
	gbuf_free(&g);
	free(data);
	return pulled(f);
}

/*
 * An RTS with a real key for b's memory: the victim pulls it (over tcp the get waits for b,
 * which is not progressed meanwhile); a pipelined fragment forged for that receive is
 * dropped, and the receive gets exactly b's bytes.
 */
static int
pulled(struct fz *f)
{
	struct unio_tl_iface *ifc = f->ep->lane.iface;
	uint8_t m[sizeof(struct proto_rts_hdr) + UNIO_TL_RKEY_MAX], *src = malloc(5000);
	uint8_t junk[5000];
	struct proto_rts_hdr rts = { .tag = 0x602, .size = 5000, .sreq_id = 0x5252,
				     .ep_id = f->a_ep };
	struct proto_frag_hdr fr = { .ep_id = f->a_ep, .offset = 0 };
	struct unio_tl_memh memh;
	unio_request_t *req;
	struct gbuf g;

	TEST_ASSERT(src != NULL, "malloc");
	TEST_ASSERT(ifc->ctl->mem_reg != NULL && ifc->ctl->rkey_pack != NULL &&
		    ifc->attr.rkey_packed_len <= UNIO_TL_RKEY_MAX, "the lane has no keys");
	test_fill(src, 5000, 0x602);
	memset(junk, 0x6b, sizeof(junk));
	TEST_ASSERT_STATUS(ifc->ctl->mem_reg(ifc, src, 5000, &memh), UNIO_OK);
	TEST_ASSERT_STATUS(ifc->ctl->rkey_pack(ifc, &memh, m + sizeof(rts)), UNIO_OK);
	rts.addr = (uintptr_t)src;
	rts.rkey_len = (uint16_t)ifc->attr.rkey_packed_len;
	memcpy(m, &rts, sizeof(rts));
	TEST_ASSERT_EQ(gbuf_new(&g, 6000), TEST_OK);
	TEST_ASSERT_EQ(post(f, &g, 0x602, &req), TEST_OK);
	SEND(f, PROTO_AM_RTS, m, sizeof(rts) + rts.rkey_len);
	for (int i = 0; i < 100000 && unio_request_test(req, NULL) == UNIO_INPROGRESS &&
	     !req->rkey_valid; i++)
		unio_worker_progress(f->a);
	TEST_ASSERT(req->rkey_valid || unio_request_test(req, NULL) == UNIO_OK,
		    "the victim did not pull");
	TEST_LOG("pull over %s: %s", ifc->driver->name, req->rkey_valid ?
		 "in flight (a forged fragment follows)" : "done at once");
	fr.rreq_id = proto_req_id(req);
	SEND_HP(f, PROTO_AM_PIPE, fr, junk, 5000);
	for (int i = 0; i < 1000; i++)
		unio_worker_progress(f->a);
	f->want_a++;
	f->want_b++;   /* the ATS for send 0x5252 */
	EXPECT_DROPS(f);
	TEST_ASSERT_EQ(finish(f, req, UNIO_OK, 5000), TEST_OK);
	TEST_ASSERT_EQ(gbuf_check(&g, 0, src, 5000), TEST_OK);
	ifc->ctl->mem_dereg(ifc, &memh);
	gbuf_free(&g);
	free(src);
	return TEST_OK;
}

/* ---- 4. random messages ---- */

static const uint8_t fuzz_ids[] = {
	PROTO_AM_EAGER_SHORT, PROTO_AM_EAGER, PROTO_AM_EAGER_FIRST, PROTO_AM_EAGER_MID,
	PROTO_AM_RTS, PROTO_AM_ATS, PROTO_AM_RTR, PROTO_AM_PIPE, PROTO_AM_SYNC_ACK,
	PROTO_AM_USER_EAGER, PROTO_AM_USER_RTS,
};

static int
random_msgs(struct fz *f)
{
	uint64_t s = 0x853c49e6748fea9bull, before = dropped(f->a);
	size_t max = RTE_MIN(f->ep->lane.iface->attr.max_bcopy, (size_t)512);
	uint8_t m[512];
	unio_request_t *req;
	struct gbuf g;

	TEST_ASSERT_EQ(gbuf_new(&g, 256), TEST_OK);
	TEST_ASSERT_EQ(post(f, &g, 0x7ffffffffff0ull, &req), TEST_OK);
	for (unsigned int i = 0; i < N_RANDOM; i++) {
		uint8_t id = fuzz_ids[rnd(&s) % RTE_DIM(fuzz_ids)];
		size_t n = rnd(&s) % (max + 1);

		for (size_t k = 0; k < n; k++)
			m[k] = (uint8_t)rnd(&s);
		/* half of them name the real ep (where a header has one) */
		if (i % 2 && n >= 36 && id != PROTO_AM_EAGER_FIRST)
			memcpy(m + (id == PROTO_AM_RTS ? 32 : id == PROTO_AM_USER_RTS ? 24 :
				    id == PROTO_AM_USER_EAGER ? 4 : 16), &f->a_ep, 4);
		if (id == PROTO_AM_USER_EAGER && n >= 2 && m[0] == AM_ID && m[1] == 0)
			m[0]++;   /* the handler checks the messages of this test */
		SEND(f, id, m, n);
		if (i % 256 == 0)
			progress(f, 16);
	}
	progress(f, 20000);
	TEST_LOG("%d random messages: %" PRIu64 " dropped", N_RANDOM, dropped(f->a) - before);
	TEST_ASSERT(dropped(f->a) - before > N_RANDOM / 4 && dropped(f->a) - before <= N_RANDOM,
		    "%" PRIu64 " of %d random messages dropped", dropped(f->a) - before,
		    N_RANDOM);
	TEST_ASSERT_EQ(unio_request_test(req, NULL), UNIO_INPROGRESS);
	unio_request_cancel(f->a, req);
	TEST_ASSERT_EQ(finish(f, req, UNIO_ERR_CANCELED, 0), TEST_OK);
	TEST_ASSERT_EQ(gbuf_check(&g, 0, NULL, 0), TEST_OK);
	gbuf_free(&g);
	f->want_a = dropped(f->a);
	f->want_b = dropped(f->b);
	return TEST_OK;
}

/* ---- 4b. split rendezvous: a forged RTP, then a second one, an RTR and an ATS ---- */

static int
split_forgery(struct fz *f)
{
	const size_t n = 1 << 20;
	struct unio_tl_iface *ifc = f->ep->lane.iface;
	uint8_t *src = malloc(n), *dst = malloc(n);
	uint8_t m[sizeof(struct proto_rtp_hdr) + UNIO_TL_RKEY_MAX];
	struct proto_rtp_hdr rtp = { .r = { .rreq_id = 0x4444 }, .offset = n / 2 };
	struct proto_rtr_hdr rtr = { .rreq_id = 0x4545 };
	struct proto_ack_hdr ack = { .status = UNIO_OK };
	struct unio_tl_memh memh;
	struct proto_unexp *ux = NULL;
	unio_request_t *sreq = NULL;
	unio_ep_t *back;
	unio_status_t st;

	TEST_ASSERT(src != NULL && dst != NULL, "malloc");
	TEST_ASSERT(ifc->ctl->mem_reg != NULL && ifc->ctl->rkey_pack != NULL &&
		    ifc->attr.rkey_packed_len <= UNIO_TL_RKEY_MAX, "the lane cannot put");
	test_fill(src, n, 77);
	memset(dst, 0xe1, n);
	back = api_ep_to_worker(f->a, f->b, &st);
	TEST_ASSERT(back != NULL, "ep back: %s", unio_status_string(st));
	TEST_ASSERT(api_ep_connected(f->a, f->b, back), "ep back never connected");
	TEST_ASSERT(n >= back->lane.rndv_thresh, "1 MiB below the rendezvous threshold");
	/* the victim's rendezvous send waits for b, which never posts its receive */
	TEST_ASSERT_STATUS(unio_tag_send(back, src, n, 0xc01, NULL, &sreq), UNIO_INPROGRESS);
	for (int i = 0; i < 1000000 && ux == NULL; i++) {
		progress(f, 1);
		TAILQ_FOREACH(ux, &f->b->unexp, link)
			if (ux->tag == 0xc01 && ux->is_rts)
				break;
	}
	TEST_ASSERT(ux != NULL, "the RTS never arrived");
	TEST_ASSERT_STATUS(ifc->ctl->mem_reg(ifc, dst, n, &memh), UNIO_OK);
	TEST_ASSERT_STATUS(ifc->ctl->rkey_pack(ifc, &memh, m + sizeof(rtp)), UNIO_OK);
	rtp.r.sreq_id = ux->rts.sreq_id;
	rtp.addr = (uintptr_t)dst;
	rtp.rkey_len = (uint16_t)ifc->attr.rkey_packed_len;
	memcpy(m, &rtp, sizeof(rtp));
	/* the first RTP is obeyed: the second half lands where it asked */
	SEND(f, PROTO_AM_RTR, m, sizeof(rtp) + rtp.rkey_len);
	for (int i = 0; i < 1000000 && sreq->rreq_id == 0; i++)
		unio_worker_progress(f->a);   /* b does not answer the put meanwhile */
	TEST_ASSERT(sreq->rreq_id == 0x4444, "the RTP was not taken");
	/* a second one, an RTR, and (while the put is in flight) an ATS: dropped */
	rtp.r.rreq_id = 0x4646;
	rtp.offset = 64;
	memcpy(m, &rtp, sizeof(rtp));
	SEND(f, PROTO_AM_RTR, m, sizeof(rtp) + rtp.rkey_len);
	rtr.sreq_id = rtp.r.sreq_id;
	SEND(f, PROTO_AM_RTR, &rtr, sizeof(rtr));
	f->want_a += 2;
	TEST_LOG("split forgery over %s: the put %s", ifc->driver->name,
		 sreq->comp.count != 0 ? "in flight (a forged ATS follows)" : "done at once");
	if (sreq->comp.count != 0) {
		ack.sreq_id = rtp.r.sreq_id;
		SEND(f, PROTO_AM_ATS, &ack, sizeof(ack));
		f->want_a++;
	}
	f->want_b++;   /* the victim's ATS for its part, to receive 0x4444 that b never had */
	EXPECT_DROPS(f);
	TEST_ASSERT(memcmp(dst, src + n / 2, n / 2) == 0, "the part put");
	for (size_t i = n / 2; i < n; i++)
		TEST_ASSERT(dst[i] == 0xe1, "byte %zu beyond the part was written", i);
	TEST_ASSERT_EQ(unio_request_test(sreq, NULL), UNIO_INPROGRESS);
	unio_ep_close(back, UNIO_EP_CLOSE_FORCE, NULL);
	progress(f, 1000);
	TEST_ASSERT_STATUS(unio_request_test(sreq, NULL), UNIO_ERR_CANCELED);
	unio_request_free(sreq);
	ifc->ctl->mem_dereg(ifc, &memh);
	free(src);
	free(dst);
	return TEST_OK;
}

/* ---- 5. afterwards: every protocol still works, both ways ---- */

static int
one_msg(struct fz *f, unio_ep_t *ep, unio_worker_t *rw, size_t n, uint64_t tag, int sync)
{
	uint8_t *src = malloc(n + 1), *dst = malloc(n + 1);
	unio_request_t *sreq = NULL, *rreq = NULL;
	unio_status_t ss, rs;
	struct unio_recv_info info = { 0 };

	TEST_ASSERT(src != NULL && dst != NULL, "malloc");
	test_fill(src, n + 1, n ^ tag);
	memset(dst, 0xd5, n + 1);
	rs = unio_tag_recv(rw, dst, n, tag, UINT64_MAX, NULL, &rreq);
	ss = sync ? unio_tag_send_sync(ep, src, n, tag, NULL, &sreq) :
	     unio_tag_send(ep, src, n, tag, NULL, &sreq);
	for (int i = 0; i < 5000000 && (ss == UNIO_INPROGRESS || rs == UNIO_INPROGRESS); i++) {
		progress(f, 1);
		if (ss == UNIO_INPROGRESS && (ss = unio_request_test(sreq, NULL)) !=
		    UNIO_INPROGRESS)
			unio_request_free(sreq);
		if (rs == UNIO_INPROGRESS && (rs = unio_request_test(rreq, &info)) !=
		    UNIO_INPROGRESS)
			unio_request_free(rreq);
	}
	TEST_ASSERT(ss == UNIO_OK && rs == UNIO_OK, "%zu bytes: send %s, receive %s", n,
		    unio_status_string(ss), unio_status_string(rs));
	TEST_ASSERT(test_checksum(dst, n) == test_checksum(src, n) && dst[n] == 0xd5,
		    "%zu bytes: payload differs", n);
	free(src);
	free(dst);
	return TEST_OK;
}

static int
still_serving(struct fz *f, bool frags)
{
	const struct proto_lane *l = &f->ep->lane;
	size_t sizes[] = { 0, 8, l->max_eager, l->max_eager + 1, 3 * l->frag + 5, 300000,
			   1 << 20 };
	uint8_t am[2000];
	unio_ep_t *back;
	unio_status_t st;

	for (unsigned int i = 0; i < RTE_DIM(sizes); i++) {
		if (!frags && sizes[i] > l->max_eager && sizes[i] < l->rndv_thresh)
			continue;
		TEST_ASSERT_EQ(one_msg(f, f->ep, f->a, sizes[i], 0x900 + i, i % 2), TEST_OK);
	}
	test_fill(am, sizeof(am), 5);
	st = unio_am_send(f->ep, AM_ID, NULL, 0, am, sizeof(am), NULL, 0, NULL);
	TEST_ASSERT(st == UNIO_OK || st == UNIO_INPROGRESS, "AM: %s", unio_status_string(st));
	for (int i = 0; i < 1000000 && f->am_calls == 0; i++)
		progress(f, 1);
	TEST_ASSERT_EQ(f->am_calls, 1);
	TEST_ASSERT(f->am_sum == test_checksum(am, sizeof(am)), "AM payload");
	f->am_calls = 0;
	back = api_ep_to_worker(f->a, f->b, &st);
	TEST_ASSERT(back != NULL, "ep back: %s", unio_status_string(st));
	TEST_ASSERT(api_ep_connected(f->a, f->b, back), "ep back never connected");
	for (unsigned int i = 0; i < RTE_DIM(sizes); i++)
		TEST_ASSERT_EQ(one_msg(f, back, f->b, sizes[i], 0xa00 + i, i % 2), TEST_OK);
	unio_ep_close(back, UNIO_EP_CLOSE_FORCE, NULL);
	EXPECT_DROPS(f);
	return TEST_OK;
}

/* ---- 6. a total no memory can hold: dropped, later messages unaffected ---- */

static int
huge_total(struct fz *f)
{
	struct proto_eager_first_hdr ef = { .e = { .tag = 0xb01, .ep_id = f->a_ep },
					    .total = 1ull << 40 };
	struct proto_frag_hdr fr = { .ep_id = f->a_ep, .offset = 100 };
	uint8_t d[100] = { 0 };
	unsigned int unexp = f->a->n_unexp;

	SEND_HP(f, PROTO_AM_EAGER_FIRST, ef, d, 100);
	progress(f, 2000);
	if (f->a->n_unexp != unexp) {
		/* the system lent the address space (overcommit): the fragments must follow */
		TEST_LOG("a 1 TiB unexpected buffer was mapped: fragments checked no further");
		return still_serving(f, false);
	}
	SEND_HP(f, PROTO_AM_EAGER_MID, fr, d, 100);
	/* dropped whole for want of memory, counted once under that reason; its fragment is
	 * swallowed, and the next first fragment starts a new message */
	EXPECT_DROPS(f);
	TEST_ASSERT_EQ(f->a->n_dropped_nomem, 1);
	return still_serving(f, true);
}

static int
fuzz(const char *const *ovr, const char *drv)
{
	struct fz f;
	int rc = TEST_FAIL;

	if (fz_open(&f, ovr, drv) != TEST_OK)
		goto out;
	rte_log_set_level_pattern("unio.*", RTE_LOG_CRIT);
	if (malformed(&f) != TEST_OK || lengths(&f) != TEST_OK || rendezvous(&f) != TEST_OK ||
	    still_serving(&f, true) != TEST_OK || random_msgs(&f) != TEST_OK ||
	    split_forgery(&f) != TEST_OK ||
	    still_serving(&f, true) != TEST_OK || huge_total(&f) != TEST_OK)
		goto out;
	unio_worker_print_info(f.a, stderr);
	rc = TEST_OK;
out:
	rte_log_set_level_pattern("unio.*", RTE_LOG_WARNING);
	fz_close(&f);
	return rc;
}

UNIO_TEST(api_proto_fuzz, fast)
{
	static const char *const ovr[] = { "TLS", "shm,self", NULL };

	return fuzz(ovr, "shm");
}

UNIO_TEST(api_proto_fuzz_tcp, fast)
{
	static const char *const ovr[] = { "TLS", "tcp,self", NULL };

	return fuzz(ovr, "tcp");
}
