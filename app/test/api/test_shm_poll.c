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
