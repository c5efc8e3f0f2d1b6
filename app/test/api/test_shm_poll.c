/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The worker's quick idle call over shm: an iface with one sender gives the worker that
 * ring's next header word (unio_tl_iface.poll_word), and a progress call that finds it clear
 * calls no driver.  Asserted: every message is delivered by the first progress call after it
 * was sent, whichever phase of the worker's housekeeping countdown it falls in (idle calls
 * before each send vary); with a second sender there is no poll word (every call polls both
 * rings) and both are still delivered by one call; once the second sender's worker is gone
 * its ring is retired by the housekeeping calls alone and the poll word is the first
 * sender's ring again.  Payloads are checked, message by message.
 *
 * api_shm_one_cell: the one-sender delivery of one-cell messages (consumed before the
 * handler, the tail published every half ring, not when the ring is found empty) over a
 * 128-cell ring: 40 laps of ping-pong messages (none delivered by a housekeeping call, whose
 * full ring walk publishes the tail of an empty ring), one message of several cells (that
 * walk), 40 laps more; every message is delivered by one call, none is refused by the sender
 * for want of credit, and the published tail lags the consumed one by half a ring at most.
 */

#include <rte_cycles.h>

#include "api_common.h"
#include "shm_priv.h"
#include "unio_am.h"
#include "unio_proto.h"

#define POLL_TAG 0x9011

/* the value of message @p i from sender @p s */
static uint64_t
poll_val(uint64_t s, uint64_t i)
{
	return (i + 1) * 0x9e3779b97f4a7c15ull ^ (s << 56);
}

/*
 * @p n messages from @p src over @p ep to @p dst, each after @p idle(i) idle calls of @p dst
 * and delivered by exactly one progress call (with @p no_ctl never the call that runs the
 * housekeeping: the worker's delivery alone).  0 or the failing message + 1.
 */
static uint64_t
poll_rounds_ctl(unio_worker_t *dst, unio_ep_t *ep, uint64_t s, uint64_t n, bool no_ctl)
{
	for (uint64_t i = 0; i < n; i++) {
		struct unio_recv_info info = { 0 };
		struct unio_request_param p = { .field_mask = UNIO_REQ_PARAM_RECV_INFO,
						.recv_info = &info };
		uint64_t v = poll_val(s, i), got = 0;
		unio_request_t *req = NULL;
		unio_status_t st;

		st = unio_tag_recv(dst, &got, sizeof(got), POLL_TAG, UINT64_MAX, &p, &req);
		if (st != UNIO_INPROGRESS)
			return i + 1;
		for (uint64_t k = 0; k < (i * 7 + s) % 37; k++)
			unio_worker_progress(dst);
		if (no_ctl && dst->ctl_countdown == 1)
			unio_worker_progress(dst);
		if (unio_request_test(req, &info) != UNIO_INPROGRESS ||
		    unio_tag_send(ep, &v, sizeof(v), POLL_TAG, NULL, NULL) != UNIO_OK ||
		    unio_worker_progress(dst) == 0 || unio_request_test(req, &info) != UNIO_OK ||
		    info.length != sizeof(v) || got != v) {
			unio_request_cancel(dst, req);
			unio_request_free(req);
			return i + 1;
		}
		unio_request_free(req);
	}
	return 0;
}

static uint64_t
poll_rounds(unio_worker_t *dst, unio_ep_t *ep, uint64_t s, uint64_t n)
{
	return poll_rounds_ctl(dst, ep, s, n, false);
}

static struct shm_iface *
shm_of(unio_worker_t *w)
{
	struct unio_tl_iface *ifc = api_worker_iface(w, "shm", NULL);

	return ifc != NULL ? (struct shm_iface *)ifc : NULL;
}

UNIO_TEST(api_shm_poll_word, fast)
{
	static const char *const ovr[] = { "TLS", "shm,self", NULL };
	unio_context_t *ctx = api_ctx(ovr);
	unio_worker_t *a, *b, *c;
	unio_ep_t *ab, *cb;
	struct shm_iface *sb;
	unio_status_t st;
	uint64_t bad, t_end;

	TEST_ASSERT(ctx != NULL, "context");
	a = unio_worker_create(ctx, NULL, &st);
	b = unio_worker_create(ctx, NULL, &st);
	c = unio_worker_create(ctx, NULL, &st);
	TEST_ASSERT(a != NULL && b != NULL && c != NULL, "workers: %s", unio_status_string(st));
	sb = shm_of(b);
	TEST_ASSERT(sb != NULL, "no shm iface");
	TEST_ASSERT_EQ(sb->n_active, 0u);
	TEST_ASSERT(sb->super.poll_word != NULL && **sb->super.poll_word == 0,
		    "no sender: the poll word must be one that stays clear");

	ab = api_ep_to_worker(a, b, &st);
	TEST_ASSERT(ab != NULL && api_ep_connected(a, b, ab), "a -> b: %s",
		    unio_status_string(st));
	TEST_ASSERT_EQ(sb->n_active, 1u);
	TEST_ASSERT(sb->super.poll_word == (uint64_t *const *)&sb->active[0].next,
		    "one sender: the poll word is its ring's next header word");
	bad = poll_rounds(b, ab, 1, 3000);
	TEST_ASSERT(bad == 0, "one sender: message %" PRIu64 " not delivered by one call",
		    bad - 1);

	cb = api_ep_to_worker(c, b, &st);
	TEST_ASSERT(cb != NULL && api_ep_connected(c, b, cb), "c -> b: %s",
		    unio_status_string(st));
	TEST_ASSERT_EQ(sb->n_active, 2u);
	TEST_ASSERT(sb->super.poll_word == NULL, "two senders: every call polls both rings");
	for (uint64_t r = 0; r < 20; r++) {
		bad = poll_rounds(b, r % 2 ? cb : ab, 2 + r % 2, 100);
		TEST_ASSERT(bad == 0, "two senders, round %" PRIu64 ": message %" PRIu64
			    " not delivered by one call", r, bad - 1);
	}

	/* c goes: its slot is released, retired by b's housekeeping calls alone */
	unio_ep_close(cb, UNIO_EP_CLOSE_FORCE, NULL);
	unio_worker_destroy(c);
	t_end = rte_get_tsc_cycles() + rte_get_tsc_hz();
	while (sb->n_active != 1 && rte_get_tsc_cycles() < t_end)
		unio_worker_progress(b);
	TEST_ASSERT_EQ(sb->n_active, 1u);
	TEST_ASSERT(sb->super.poll_word == (uint64_t *const *)&sb->active[0].next,
		    "back to one sender: the poll word is its ring's again");
	bad = poll_rounds(b, ab, 4, 1000);
	TEST_ASSERT(bad == 0, "after c: message %" PRIu64 " not delivered by one call", bad - 1);

	unio_ep_close(ab, UNIO_EP_CLOSE_FORCE, NULL);
	unio_worker_destroy(a);
	unio_worker_destroy(b);
	unio_context_destroy(ctx);
	return TEST_OK;
}

/* b's ring from its one sender: the tail it has consumed and published are consistent */
static int
one_cell_ring_ok(struct shm_iface *sb, uint64_t want_tail)
{
	const struct shm_rx_ring *r = &sb->active[0];
	uint64_t pub = __atomic_load_n(&r->ctl->tail, __ATOMIC_RELAXED);

	return r->tail == want_tail && pub == r->published && pub <= r->tail &&
	       r->tail - pub <= sb->n_cells / 2;
}

UNIO_TEST(api_shm_one_cell, fast)
{
	static const char *const ovr[] = { "TLS", "shm,self", "SHM_FIFO_SIZE", "4k", NULL };
	unio_context_t *ctx = api_ctx(ovr);
	uint8_t big[100], got[100] = { 0 };
	unio_request_t *req = NULL;
	struct shm_iface *sa, *sb;
	unio_worker_t *a, *b;
	uint64_t bad, laps, big_cells;
	unio_status_t st;
	unio_ep_t *ab;

	TEST_ASSERT(ctx != NULL, "context");
	a = unio_worker_create(ctx, NULL, &st);
	b = unio_worker_create(ctx, NULL, &st);
	TEST_ASSERT(a != NULL && b != NULL, "workers: %s", unio_status_string(st));
	sa = shm_of(a);
	sb = shm_of(b);
	TEST_ASSERT(sa != NULL && sb != NULL, "no shm iface");
	TEST_ASSERT_EQ(sb->n_cells, 128u);
	ab = api_ep_to_worker(a, b, &st);
	TEST_ASSERT(ab != NULL && api_ep_connected(a, b, ab), "a -> b: %s",
		    unio_status_string(st));
	TEST_ASSERT_EQ(sb->n_active, 1u);
	laps = sb->active[0].tail;   /* the wireup's messages */

	bad = poll_rounds_ctl(b, ab, 5, 40 * 128, true);
	TEST_ASSERT(bad == 0, "message %" PRIu64 " not delivered by one call", bad - 1);
	TEST_ASSERT(one_cell_ring_ok(sb, laps + 40 * 128), "ring tail %" PRIu64 ", published %"
		    PRIu64 " after %u one-cell messages", sb->active[0].tail,
		    sb->active[0].published, 40 * 128);

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 13 + 5);
	st = unio_tag_recv(b, got, sizeof(got), POLL_TAG + 1, UINT64_MAX, NULL, &req);
	TEST_ASSERT_STATUS(st, UNIO_INPROGRESS);
	TEST_ASSERT_STATUS(unio_tag_send(ab, big, sizeof(big), POLL_TAG + 1, NULL, NULL),
			   UNIO_OK);
	TEST_ASSERT(unio_worker_progress(b) != 0, "the longer message was not delivered");
	TEST_ASSERT_STATUS(unio_request_test(req, NULL), UNIO_OK);
	unio_request_free(req);
	TEST_ASSERT(memcmp(got, big, sizeof(big)) == 0, "the longer message's payload");
	big_cells = sb->active[0].tail - (laps + 40 * 128);
	TEST_ASSERT(big_cells >= 4, "a %zu-byte message in %" PRIu64 " cells", sizeof(big),
		    big_cells);

	bad = poll_rounds_ctl(b, ab, 6, 40 * 128, true);
	TEST_ASSERT(bad == 0, "after the longer message: message %" PRIu64
		    " not delivered by one call", bad - 1);
	TEST_ASSERT(one_cell_ring_ok(sb, laps + 80 * 128 + big_cells), "ring tail %" PRIu64
		    ", published %" PRIu64, sb->active[0].tail, sb->active[0].published);
	TEST_ASSERT_EQ(sa->tx_no_room, 0u);

	unio_ep_close(ab, UNIO_EP_CLOSE_FORCE, NULL);
	unio_worker_destroy(a);
	unio_worker_destroy(b);
	unio_context_destroy(ctx);
	return TEST_OK;
}

/*
 * api_shm_busy_call: the worker's usual busy call (one iface's poll word set, nothing queued,
 * the control plane not due) runs the delivery alone, with the nested-progress guard set:
 * two AMs wait in b's ring per call and the handler of the first calls progress, which must
 * do nothing (the second is delivered by the outer call after the handler), 40 times, each
 * handler answering on its reply ep at once.  Then b fills the ring to a, which a does not
 * drain, until a filler is queued; two more messages have their answers queued inside the
 * delivery, and later calls of b send them once a drains: every answer and filler arrives,
 * in order, with its value.
 */
#define BC_ID    11
#define BC_FILL  12
#define BC_N     (2 * 40u + 3)   /* messages a -> b: one, 40 pairs, one pair queued */
#define BC_FMAX  400u

struct bc_state {
	unio_worker_t *b;
	unio_ep_t *reply;
	uint64_t got, nested, depth, depth_max, bad;
	uint64_t echo[BC_N];   /* answers' buffers: a queued send reads its buffer later */
	uint64_t a_fill, a_echo;
};

static unio_status_t
bc_on_b(void *arg, const void *header, size_t hlen, void *data, size_t len,
	const struct unio_am_recv_param *p)
{
	struct bc_state *s = arg;
	uint64_t v;

	(void)header;
	if (hlen != 0 || len != 8 || p->reply_ep == NULL || s->got >= BC_N) {
		s->bad++;
		return UNIO_OK;
	}
	memcpy(&v, data, 8);
	if (v != poll_val(7, s->got))
		s->bad++;
	s->reply = p->reply_ep;
	if (++s->depth > s->depth_max)
		s->depth_max = s->depth;
	s->nested += unio_worker_progress(s->b);
	s->echo[s->got] = v ^ 0xecull;
	if (UNIO_IS_ERR(unio_am_send(p->reply_ep, BC_ID, NULL, 0, &s->echo[s->got], 8, NULL, 0,
				     NULL)))
		s->bad++;
	s->depth--;
	s->got++;
	return UNIO_OK;
}

static unio_status_t
bc_on_a(void *arg, const void *header, size_t hlen, void *data, size_t len,
	const struct unio_am_recv_param *p)
{
	struct bc_state *s = arg;
	uint64_t v;

	(void)header, (void)p;
	memcpy(&v, data, 8);
	if (hlen != 0 || len != 8 || s->a_echo >= BC_N ||
	    v != (poll_val(7, s->a_echo) ^ 0xecull))
		s->bad++;
	s->a_echo++;
	return UNIO_OK;
}

static unio_status_t
bc_on_fill(void *arg, const void *header, size_t hlen, void *data, size_t len,
	   const struct unio_am_recv_param *p)
{
	struct bc_state *s = arg;
	uint64_t v;

	(void)header, (void)p;
	memcpy(&v, data, 8);
	/* after the answers that went at once, before the two that were queued */
	if (hlen != 0 || len != 8 || v != s->a_fill || s->a_echo != BC_N - 2)
		s->bad++;
	s->a_fill++;
	return UNIO_OK;
}

/* messages @p k and @p k + 1 from a, delivered by one call of b (not the housekeeping one) */
static int
bc_pair(unio_worker_t *b, unio_ep_t *ab, struct bc_state *s, uint64_t k)
{
	uint64_t v2[2] = { poll_val(7, k), poll_val(7, k + 1) };
	unsigned int n;

	if (b->ctl_countdown == 1)   /* the housekeeping call, with nothing to deliver */
		unio_worker_progress(b);
	for (unsigned int j = 0; j < 2; j++)
		TEST_ASSERT_STATUS(unio_am_send(ab, BC_ID, NULL, 0, &v2[j], 8, NULL,
						UNIO_AM_SEND_FLAG_REPLY, NULL), UNIO_OK);
	n = unio_worker_progress(b);
	TEST_ASSERT(n == 2 && s->got == k + 2, "messages %" PRIu64 ", %" PRIu64 ": %u delivered, %"
		    PRIu64 " handled", k, k + 1, n, s->got);
	TEST_ASSERT(s->nested == 0 && s->depth_max == 1,
		    "progress inside the handler delivered %" PRIu64 " (depth %" PRIu64 ")",
		    s->nested, s->depth_max);
	return TEST_OK;
}

UNIO_TEST(api_shm_busy_call, fast)
{
	static const char *const ovr[] = { "TLS", "shm,self", "SHM_FIFO_SIZE", "4k", NULL };
	static uint64_t fills[BC_FMAX];
	static struct bc_state s;
	unio_context_t *ctx = api_ctx(ovr);
	uint64_t v, k, fill_sent;
	unio_worker_t *a, *b;
	unio_status_t st;
	unio_ep_t *ab;

	TEST_ASSERT(ctx != NULL, "context");
	memset(&s, 0, sizeof(s));
	a = unio_worker_create(ctx, NULL, &st);
	b = unio_worker_create(ctx, NULL, &st);
	TEST_ASSERT(a != NULL && b != NULL, "workers: %s", unio_status_string(st));
	s.b = b;
	ab = api_ep_to_worker(a, b, &st);
	TEST_ASSERT(ab != NULL && api_ep_connected(a, b, ab), "a -> b: %s",
		    unio_status_string(st));
	TEST_ASSERT_EQ(shm_of(b)->n_active, 1u);
	TEST_ASSERT_STATUS(unio_worker_set_am_handler(b, BC_ID, bc_on_b, &s, 0), UNIO_OK);
	TEST_ASSERT_STATUS(unio_worker_set_am_handler(a, BC_ID, bc_on_a, &s, 0), UNIO_OK);
	TEST_ASSERT_STATUS(unio_worker_set_am_handler(a, BC_FILL, bc_on_fill, &s, 0), UNIO_OK);

	/* one message, then 40 pairs: every answer goes at once */
	v = poll_val(7, 0);
	TEST_ASSERT_STATUS(unio_am_send(ab, BC_ID, NULL, 0, &v, 8, NULL,
					UNIO_AM_SEND_FLAG_REPLY, NULL), UNIO_OK);
	TEST_ASSERT(unio_worker_progress(b) == 1 && s.got == 1 && s.reply != NULL,
		    "first message");
	for (k = 1; k < BC_N - 2; k += 2)
		if (bc_pair(b, ab, &s, k) != TEST_OK)
			return TEST_FAIL;
	TEST_ASSERT_EQ(b->n_am_pending, 0u);

	/* b fills the ring to a until a filler waits queued */
	for (fill_sent = 0; fill_sent < BC_FMAX && b->n_am_pending == 0; fill_sent++) {
		fills[fill_sent] = fill_sent;
		st = unio_am_send(s.reply, BC_FILL, NULL, 0, &fills[fill_sent], 8, NULL, 0, NULL);
		TEST_ASSERT(!UNIO_IS_ERR(st), "filler %" PRIu64 ": %s", fill_sent,
			    unio_status_string(st));
	}
	TEST_ASSERT(b->n_am_pending != 0, "the ring never refused a filler");

	/* the last pair: its answers are queued inside the delivery */
	if (bc_pair(b, ab, &s, BC_N - 2) != TEST_OK)
		return TEST_FAIL;
	TEST_ASSERT(b->n_am_pending >= 3, "the answers must wait while a does not drain");

	/* a drains: later calls of b send what waits, in order */
	for (long i = 0; i < 1000000 && (s.a_fill < fill_sent || s.a_echo < BC_N); i++) {
		unio_worker_progress(a);
		unio_worker_progress(b);
	}
	TEST_ASSERT(s.a_fill == fill_sent && s.a_echo == BC_N, "a got %" PRIu64 " of %" PRIu64
		    " fillers, %" PRIu64 " of %u answers", s.a_fill, fill_sent, s.a_echo, BC_N);
	TEST_ASSERT_EQ(b->n_am_pending, 0u);
	TEST_ASSERT(s.bad == 0, "a wrong value, order or length (%" PRIu64 ")", s.bad);

	unio_worker_set_am_handler(a, BC_FILL, NULL, NULL, 0);
	unio_worker_set_am_handler(a, BC_ID, NULL, NULL, 0);
	unio_worker_set_am_handler(b, BC_ID, NULL, NULL, 0);
	unio_ep_close(ab, UNIO_EP_CLOSE_FORCE, NULL);
	unio_worker_destroy(a);
	unio_worker_destroy(b);
	unio_context_destroy(ctx);
	return TEST_OK;
}
