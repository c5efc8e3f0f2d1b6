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
 * and delivered by exactly one progress call.  0 or the failing message + 1.
 */
static uint64_t
poll_rounds(unio_worker_t *dst, unio_ep_t *ep, uint64_t s, uint64_t n)
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
