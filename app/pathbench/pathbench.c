/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * unio-pathbench: the small-message paths of the public API, one thread, two workers of one
 * process over the shm lane (UNIO_TLS=shm,self unless set), for instruction counts under
 * callgrind.  Each path runs inside its own non-inlined function, so that
 *
 *   valgrind --tool=callgrind build/app/pathbench/unio-pathbench -n 100000
 *   callgrind_annotate --inclusive=yes callgrind.out.* | grep ' pb_'
 *
 * gives the instructions of each path per call (inclusive cost / calls), start-up excluded:
 *
 *   pb_tag_send     unio_tag_send() of an 8-byte message (sender)
 *   pb_tag_post     unio_tag_recv() of an exact tag with a completion callback (posted)
 *   pb_tag_rx       unio_worker_progress() of the receiver delivering one message: ring poll,
 *                   match, copy, completion, the callback that frees the request
 *   pb_tag_stream   as pb_tag_rx but @c BURST messages per progress call (tag_bw)
 *   pb_unexp_rx     as pb_tag_stream, the receives not posted yet (unexpected messages)
 *   pb_unexp_post   unio_tag_recv() that finds its message in the unexpected queue
 *   pb_idle         unio_worker_progress() with nothing to do
 *   pb_am_send      unio_am_send() of 8 bytes with the reply flag
 *   pb_am_rx        unio_worker_progress() of the receiver delivering one AM to a handler
 *   pb_am_rtt       an 8-byte AM round trip as unio-perf's am_lat makes it: send with the reply
 *                   flag, the receiver's progress runs the handler that echoes the data on
 *                   its reply ep, the sender's progress runs the handler that takes the echo
 *   pb_tag_rtt      an 8-byte tagged round trip as unio-perf's tag_lat makes it: the client
 *                   sends, posts the receive for the echo (recv_info, no callback) and tests
 *                   it once; the server's progress delivers into its posted receive, it tests
 *                   and frees that (unio_request_test_free()), echoes and posts its next
 *                   receive; the client's progress delivers the echo, it tests and frees its
 *                   receive likewise (unio-perf's loops less their clock and histogram);
 *                   -s SIZE: messages of SIZE bytes (8 to 1 MiB,
 *                   page-aligned buffers as unio-perf's; every byte checked), the other paths
 *                   stay at 8 bytes
 *   pb_put          unio_put() of 8 bytes into the peer worker's mapped buffer (the put_lat
 *                   and put_bw step: range check, then a copy into the peer's mapping)
 *
 * Every payload is checked; a mismatch or a lost message fails the run (exit 1): it runs as
 * the test "pathbench" (suite fast) too.
 *
 * -i also times idle progress calls of the receiving worker (wall clock, the fastest of 50
 * batches of 100,000 calls): how often a waiting side looks at its ring, which callgrind's
 * instruction counts miss when a call reads the clock (a TSC read costs ~20 ns on a VM);
 * and pb_tag_rtt (the fastest of 200 batches of 10,000): the software's share of a tagged
 * round trip, with no cache line crossing cores (both workers run on this one).
 */

#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "unio.h"
#include "unio_am.h"
#include "unio_rma.h"

#define AM_ID 17
#define BURST 16
#define TAG   0x5a5a0001ull

/* calls of each progress path (their bodies must differ, or the linker folds them) */
enum { PB_TAG_RX, PB_TAG_STREAM, PB_UNEXP_RX, PB_UNEXP_POST, PB_IDLE, PB_AM_RX, PB_AM_RTT,
       PB_TAG_RTT, PB_N };
static volatile uint64_t calls[PB_N];

struct rx {
	uint64_t got;            /* completions / handler calls */
	uint64_t bad;
	uint64_t want;           /* payload of the next message */
	uint64_t buf[BURST];
};

static void
on_tag(unio_request_t *req, unio_status_t st, const struct unio_recv_info *info, void *arg)
{
	struct rx *r = arg;

	if (st != UNIO_OK || info == NULL || info->length != 8 || info->tag != TAG)
		r->bad++;
	r->got++;
	unio_request_free(req);
}

/* the next 8-byte message in order, with a reply ep when @p reply */
static void
am_check(struct rx *r, size_t hlen, const void *data, size_t len,
	 const struct unio_am_recv_param *p, bool reply)
{
	uint64_t v;

	if (hlen != 0 || len != 8 || (reply && p->reply_ep == NULL)) {
		r->bad++;
		return;
	}
	memcpy(&v, data, 8);
	if (v != r->want++)
		r->bad++;
	r->got++;
}

static unio_status_t
on_am(void *arg, const void *header, size_t hlen, void *data, size_t len,
      const struct unio_am_recv_param *p)
{
	(void)header;
	am_check(arg, hlen, data, len, p, true);
	return UNIO_OK;
}

static unio_status_t
on_am_any(void *arg, const void *header, size_t hlen, void *data, size_t len,
	  const struct unio_am_recv_param *p)
{
	(void)header;
	am_check(arg, hlen, data, len, p, false);
	return UNIO_OK;
}

/* the far side of pb_am_rtt: echo the data on the reply ep, as unio-perf's server does */
static unio_status_t
on_echo(void *arg, const void *header, size_t hlen, void *data, size_t len,
	const struct unio_am_recv_param *p)
{
	struct rx *r = arg;

	(void)header;
	if (hlen != 0 || len != 8 || p->reply_ep == NULL ||
	    unio_am_send(p->reply_ep, AM_ID, NULL, 0, data, len, NULL, 0, NULL) != UNIO_OK)
		r->bad++;
	r->got++;
	return UNIO_OK;
}

static const struct unio_request_param *
tag_param(struct rx *r)
{
	static struct unio_request_param p;

	p = (struct unio_request_param){ .field_mask = UNIO_REQ_PARAM_CB |
						       UNIO_REQ_PARAM_USER_DATA,
					 .cb = on_tag, .user_data = r };
	return &p;
}

__attribute__((noinline)) static unio_status_t
pb_tag_send(unio_ep_t *ep, const uint64_t *v)
{
	return unio_tag_send(ep, v, 8, TAG, NULL, NULL);
}

__attribute__((noinline)) static unio_status_t
pb_tag_post(unio_worker_t *w, uint64_t *buf, const struct unio_request_param *p)
{
	unio_request_t *req;   /* freed by on_tag() */

	return unio_tag_recv(w, buf, 8, TAG, UINT64_MAX, p, &req);
}

__attribute__((noinline)) static unsigned int
pb_tag_rx(unio_worker_t *w)
{
	calls[PB_TAG_RX]++;   /* distinct bodies: not folded into one function */
	return unio_worker_progress(w);
}

__attribute__((noinline)) static unsigned int
pb_tag_stream(unio_worker_t *w)
{
	calls[PB_TAG_STREAM]++;   /* distinct bodies: not folded into one function */
	return unio_worker_progress(w);
}

__attribute__((noinline)) static unsigned int
pb_unexp_rx(unio_worker_t *w)
{
	calls[PB_UNEXP_RX]++;
	return unio_worker_progress(w);
}

__attribute__((noinline)) static unio_status_t
pb_unexp_post(unio_worker_t *w, uint64_t *buf, const struct unio_request_param *p)
{
	unio_request_t *req;   /* done at once: freed by the call */

	calls[PB_UNEXP_POST]++;
	return unio_tag_recv(w, buf, 8, TAG, UINT64_MAX, p, &req);
}

__attribute__((noinline)) static unsigned int
pb_idle(unio_worker_t *w)
{
	calls[PB_IDLE]++;   /* distinct bodies: not folded into one function */
	return unio_worker_progress(w);
}

__attribute__((noinline)) static unio_status_t
pb_am_send(unio_ep_t *ep, const uint64_t *v)
{
	return unio_am_send(ep, AM_ID, NULL, 0, v, 8, NULL, UNIO_AM_SEND_FLAG_REPLY, NULL);
}

__attribute__((noinline)) static unsigned int
pb_am_rx(unio_worker_t *w)
{
	calls[PB_AM_RX]++;   /* distinct bodies: not folded into one function */
	return unio_worker_progress(w);
}

__attribute__((noinline)) static unsigned int
pb_am_rtt(unio_worker_t *wa, unio_worker_t *wb, unio_ep_t *ep, const uint64_t *v)
{
	calls[PB_AM_RTT]++;   /* distinct bodies: not folded into one function */
	if (unio_am_send(ep, AM_ID, NULL, 0, v, 8, NULL, UNIO_AM_SEND_FLAG_REPLY, NULL) !=
	    UNIO_OK)
		return 0;
	return unio_worker_progress(wb) + unio_worker_progress(wa);
}

/* pb_tag_rtt: client worker @c wa (ep @c ab), server worker @c wb (ep @c ba) */
struct tag_rtt {
	unio_worker_t *wa, *wb;
	unio_ep_t *ab, *ba;
	unio_request_t *areq, *breq;      /* the client's receive, the server's posted one */
	struct unio_request_param pa, pb;
	struct unio_recv_info ia, ib;
	size_t len;                       /* -s: the message size (8 by default) */
	uint64_t *v, *ra, *rb[2];         /* page-aligned, as unio-perf's buffers */
	unsigned int cur;                 /* the server's buffer that receives next */
};

__attribute__((noinline)) static int
pb_tag_rtt(struct tag_rtt *t)
{
	calls[PB_TAG_RTT]++;
	if (unio_tag_send(t->ab, t->v, t->len, TAG, NULL, NULL) != UNIO_OK ||
	    unio_tag_recv(t->wa, t->ra, t->len, TAG, UINT64_MAX, &t->pa, &t->areq) !=
	    UNIO_INPROGRESS ||
	    unio_request_test(t->areq, &t->ia) != UNIO_INPROGRESS)
		return -1;
	if (unio_worker_progress(t->wb) == 0 ||
	    unio_request_test_free(t->breq, &t->ib) != UNIO_OK)
		return -1;
	if (unio_tag_send(t->ba, t->rb[t->cur], t->len, TAG, NULL, NULL) != UNIO_OK)
		return -1;
	t->cur ^= 1;
	if (unio_tag_recv(t->wb, t->rb[t->cur], t->len, TAG, UINT64_MAX, &t->pb, &t->breq) !=
	    UNIO_INPROGRESS)
		return -1;
	if (unio_worker_progress(t->wa) == 0 ||
	    unio_request_test_free(t->areq, &t->ia) != UNIO_OK)
		return -1;
	return 0;
}

__attribute__((noinline)) static unio_status_t
pb_put(unio_ep_t *ep, const uint64_t *v, uint64_t raddr, unio_rkey_t *rkey)
{
	return unio_put(ep, v, 8, raddr, rkey, NULL, NULL);
}

static int
fail(const char *what, unio_status_t st)
{
	fprintf(stderr, "unio-pathbench: %s: %s\n", what, unio_status_string(st));
	return 1;
}

static bool
connect_wait(unio_worker_t *w, unio_worker_t *peer, unio_ep_t *ep)
{
	uint64_t v = 42, got = 0;
	unio_request_t *sreq = NULL, *rreq = NULL;
	unio_status_t sst, rst;

	rst = unio_tag_recv(peer, &got, 8, TAG + 1, UINT64_MAX, NULL, &rreq);
	sst = unio_tag_send(ep, &v, 8, TAG + 1, NULL, &sreq);
	for (int i = 0; i < 10000000 && (sst == UNIO_INPROGRESS || rst == UNIO_INPROGRESS); i++) {
		unio_worker_progress(w);
		unio_worker_progress(peer);
		if (sst == UNIO_INPROGRESS && (sst = unio_request_test(sreq, NULL)) !=
		    UNIO_INPROGRESS)
			unio_request_free(sreq);
		if (rst == UNIO_INPROGRESS && (rst = unio_request_test(rreq, NULL)) !=
		    UNIO_INPROGRESS)
			unio_request_free(rreq);
	}
	return sst == UNIO_OK && rst == UNIO_OK && got == v;
}

static unio_ep_t *
ep_to(unio_worker_t *w, unio_worker_t *peer)
{
	struct unio_ep_params p = { .field_mask = UNIO_EP_PARAM_WORKER_ADDR };
	unio_status_t st;
	unio_ep_t *ep;
	size_t len;
	void *addr;

	if (unio_worker_get_address(peer, &addr, &len) != UNIO_OK)
		return NULL;
	p.worker_addr = addr;
	p.worker_addr_len = len;
	ep = unio_ep_create(w, &p, &st);
	unio_worker_release_address(peer, addr);
	/* wireup needs both workers: a first message goes once the ep is connected */
	if (ep != NULL && !connect_wait(w, peer, ep))
		ep = NULL;
	return ep;
}

static int
run_tag(unio_worker_t *wa, unio_worker_t *wb, unio_ep_t *ep, uint64_t n)
{
	struct rx r = { 0 };
	const struct unio_request_param *p = tag_param(&r);
	uint64_t v;
	unio_status_t st;

	for (uint64_t i = 0; i < n; i++) {
		v = i;
		st = pb_tag_post(wb, &r.buf[0], p);
		if (st != UNIO_INPROGRESS)
			return fail("tag receive", st);
		st = pb_tag_send(ep, &v);
		if (st != UNIO_OK)
			return fail("tag send", st);
		if (pb_tag_rx(wb) == 0 || r.got != i + 1 || r.buf[0] != i)
			return fail("tag: message not delivered by one progress call", UNIO_ERR_IO);
		pb_idle(wa);
	}
	return r.bad != 0 ? fail("tag: bad completion", UNIO_ERR_IO) : 0;
}

static int
run_stream(unio_worker_t *wb, unio_ep_t *ep, uint64_t n)
{
	struct rx r = { 0 };
	const struct unio_request_param *p = tag_param(&r);
	uint64_t v[BURST];
	unio_status_t st;

	for (uint64_t i = 0; i < n; i += BURST) {
		for (unsigned int k = 0; k < BURST; k++) {
			st = pb_tag_post(wb, &r.buf[k], p);
			if (st != UNIO_INPROGRESS)
				return fail("tag receive", st);
		}
		for (unsigned int k = 0; k < BURST; k++) {
			v[k] = i + k;
			st = pb_tag_send(ep, &v[k]);
			if (st != UNIO_OK)
				return fail("tag send", st);
		}
		pb_tag_stream(wb);
		if (r.got != i + BURST)
			return fail("stream: messages not delivered by one progress call",
				    UNIO_ERR_IO);
		for (unsigned int k = 0; k < BURST; k++)
			if (r.buf[k] != i + k)
				return fail("stream: payload out of order", UNIO_ERR_IO);
	}
	return r.bad != 0 ? fail("stream: bad completion", UNIO_ERR_IO) : 0;
}

/* the messages first, then their receives: each is matched in the unexpected queue */
static int
run_unexp(unio_worker_t *wb, unio_ep_t *ep, uint64_t n)
{
	struct unio_recv_info info;
	struct unio_request_param p = { .field_mask = UNIO_REQ_PARAM_RECV_INFO,
					.recv_info = &info };
	uint64_t v[BURST], got;
	unio_status_t st;

	for (uint64_t i = 0; i < n; i += BURST) {
		for (unsigned int k = 0; k < BURST; k++) {
			v[k] = i + k;
			st = pb_tag_send(ep, &v[k]);
			if (st != UNIO_OK)
				return fail("tag send", st);
		}
		if (pb_unexp_rx(wb) != BURST)
			return fail("unexpected: not all arrived at once", UNIO_ERR_IO);
		for (unsigned int k = 0; k < BURST; k++) {
			st = pb_unexp_post(wb, &got, &p);
			if (st != UNIO_OK || info.length != 8 || info.tag != TAG || got != i + k)
				return fail("unexpected: wrong message or order", st);
		}
	}
	return 0;
}

static int
run_am(unio_worker_t *wa, unio_worker_t *wb, unio_ep_t *ep, uint64_t n)
{
	struct rx r = { 0 };
	unio_status_t st;
	uint64_t v;

	st = unio_worker_set_am_handler(wb, AM_ID, on_am, &r, 0);
	if (st != UNIO_OK)
		return fail("am handler", st);
	for (uint64_t i = 0; i < n; i++) {
		v = i;
		st = pb_am_send(ep, &v);
		if (st != UNIO_OK)
			return fail("am send", st);
		if (pb_am_rx(wb) == 0 || r.got != i + 1)
			return fail("am: message not delivered by one progress call", UNIO_ERR_IO);
		pb_idle(wa);
	}
	unio_worker_set_am_handler(wb, AM_ID, NULL, NULL, 0);
	return r.bad != 0 ? fail("am: bad message", UNIO_ERR_IO) : 0;
}

/* Monotonic time in ns, for the timed batches. */
static double
now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* the fastest batch of idle progress calls, in ns per call */
static double
time_idle(unio_worker_t *w)
{
	double best = 1e30;

	for (unsigned int b = 0; b < 50; b++) {
		double ns = now_ns();

		for (unsigned int i = 0; i < 100000; i++)
			pb_idle(w);
		ns = (now_ns() - ns) / 100000.0;
		if (ns < best)
			best = ns;
	}
	return best;
}

/* round trips: @p wb echoes each AM back to @p wa's handler, which checks it */
static int
run_am_rtt(unio_worker_t *wa, unio_worker_t *wb, unio_ep_t *ep, uint64_t n)
{
	struct rx ra = { 0 }, rb = { 0 };
	unio_status_t st;
	uint64_t v;

	st = unio_worker_set_am_handler(wb, AM_ID, on_echo, &rb, 0);
	if (st == UNIO_OK)
		st = unio_worker_set_am_handler(wa, AM_ID, on_am_any, &ra, 0);
	if (st != UNIO_OK)
		return fail("am handler", st);
	for (uint64_t i = 0; i < n; i++) {
		v = i;
		if (pb_am_rtt(wa, wb, ep, &v) != 2 || rb.got != i + 1 || ra.got != i + 1)
			return fail("am: round trip not done by one progress call each",
				    UNIO_ERR_IO);
	}
	unio_worker_set_am_handler(wb, AM_ID, NULL, NULL, 0);
	unio_worker_set_am_handler(wa, AM_ID, NULL, NULL, 0);
	return ra.bad != 0 || rb.bad != 0 ? fail("am: bad echo", UNIO_ERR_IO) : 0;
}

/* keeps the reply ep that an AM sent with the reply flag offers */
static unio_status_t
on_reply_ep(void *arg, const void *header, size_t hlen, void *data, size_t len,
	    const struct unio_am_recv_param *p)
{
	(void)header, (void)hlen, (void)data, (void)len;
	*(unio_ep_t **)arg = p->reply_ep;
	return UNIO_OK;
}

/* -i: time pb_tag_rtt as well */
static int time_rtt;

/*
 * Tagged round trips between @p wa and @p wb, each payload and length checked both ways.  The
 * echo goes on @p wb's ep to @p wa that the connection made (an AM's reply ep), so that each
 * worker receives on one ring, as unio-perf's two sides do.
 */
static int
run_tag_rtt(unio_worker_t *wa, unio_worker_t *wb, unio_ep_t *ab, uint64_t n, size_t len)
{
	struct tag_rtt t = { .wa = wa, .wb = wb, .ab = ab, .len = len };
	size_t alloc = (len + 7) & ~(size_t)7;
	void *bufs[4] = { NULL };
	uint64_t v = 0;
	int rc = 0;

	for (unsigned int k = 0; k < 4; k++)
		if (posix_memalign(&bufs[k], 4096, alloc) != 0)
			rc = fail("tag round trip: buffers", UNIO_ERR_NO_MEMORY);
		else
			memset(bufs[k], 0, alloc);
	if (rc != 0)
		goto out;
	t.v = bufs[0], t.ra = bufs[1], t.rb[0] = bufs[2], t.rb[1] = bufs[3];
	if (unio_worker_set_am_handler(wb, AM_ID, on_reply_ep, &t.ba, 0) != UNIO_OK ||
	    unio_am_send(ab, AM_ID, NULL, 0, &v, 8, NULL, UNIO_AM_SEND_FLAG_REPLY, NULL) !=
	    UNIO_OK || unio_worker_progress(wb) == 0 || t.ba == NULL) {
		rc = fail("tag round trip: no ep back", UNIO_ERR_IO);
		goto out;
	}
	unio_worker_set_am_handler(wb, AM_ID, NULL, NULL, 0);
	t.pa = (struct unio_request_param){ .field_mask = UNIO_REQ_PARAM_RECV_INFO,
					    .recv_info = &t.ia };
	t.pb = (struct unio_request_param){ .field_mask = UNIO_REQ_PARAM_RECV_INFO,
					    .recv_info = &t.ib };
	if (unio_tag_recv(wb, t.rb[0], len, TAG, UINT64_MAX, &t.pb, &t.breq) != UNIO_INPROGRESS) {
		rc = fail("tag round trip: first receive", UNIO_ERR_IO);
		goto out;
	}
	for (uint64_t i = 0; i < n && rc == 0; i++) {
		unsigned int got = t.cur;

		/* the first and the last word of the message change every round trip */
		t.v[0] = i * 3 + 1;
		t.v[(len - 1) / 8] = i * 5 + 2;
		if (pb_tag_rtt(&t) != 0)
			rc = fail("tag round trip: not done by one progress call each",
				  UNIO_ERR_IO);
		else if (memcmp(t.rb[got], t.v, len) != 0 || memcmp(t.ra, t.v, len) != 0 ||
			 t.ib.length != len || t.ia.length != len || t.ib.tag != TAG ||
			 t.ia.tag != TAG)
			rc = fail("tag round trip: wrong echo", UNIO_ERR_IO);
	}
	if (rc == 0 && time_rtt) {
		double best = 1e30;

		for (unsigned int b = 0; b < 200 && rc == 0; b++) {
			double ns = now_ns();

			for (unsigned int i = 0; i < 10000; i++)
				if (pb_tag_rtt(&t) != 0) {
					rc = fail("tag round trip (timed)", UNIO_ERR_IO);
					break;
				}
			ns = (now_ns() - ns) / 10000.0;
			if (ns < best)
				best = ns;
		}
		if (rc == 0)
			printf("unio-pathbench: tag round trip of %zu bytes in one thread: %.1f ns "
			       "(fastest batch)\n", len, best);
	}
	unio_request_cancel(wb, t.breq);
	unio_request_free(t.breq);
out:
	for (unsigned int k = 0; k < 4; k++)
		free(bufs[k]);
	return rc;
}

/* puts of 8 bytes into @p wb's mapped buffer, each checked there */
static int
run_put(unio_worker_t *wb, unio_ep_t *ep, uint64_t n)
{
	struct unio_mem_map_params mp = {
		.field_mask = UNIO_MEM_MAP_PARAM_LENGTH | UNIO_MEM_MAP_PARAM_FLAGS,
		.length = 4096, .flags = UNIO_MEM_MAP_FLAG_ALLOCATE,
	};
	struct unio_mem_attr attr;
	unio_rkey_t *rkey = NULL;
	unio_mem_h memh;
	unio_status_t st;
	size_t klen;
	void *key;
	int rc = 0;

	st = unio_mem_map(wb, &mp, &memh);
	if (st != UNIO_OK)
		return fail("mem_map", st);
	st = unio_mem_query(memh, &attr);
	if (st == UNIO_OK)
		st = unio_rkey_pack(memh, &key, &klen);
	if (st == UNIO_OK) {
		st = unio_ep_rkey_unpack(ep, key, klen, &rkey);
		unio_rkey_buffer_release(key);
	}
	for (uint64_t i = 0; st == UNIO_OK && i < n && rc == 0; i++) {
		volatile uint64_t *dst = (volatile uint64_t *)attr.address + (i & 7);

		st = pb_put(ep, &i, (uintptr_t)dst, rkey);
		if (st == UNIO_OK && *dst != i)
			rc = fail("put: the target does not hold the value", UNIO_ERR_IO);
	}
	if (st != UNIO_OK)
		rc = fail("put", st);
	unio_rkey_destroy(rkey);
	unio_mem_unmap(wb, memh);
	return rc;
}

int
main(int argc, char **argv)
{
	struct unio_context_params cp = { .field_mask = UNIO_CONTEXT_PARAM_FEATURES,
					  .features = UNIO_FEATURE_TAG | UNIO_FEATURE_AM |
						    UNIO_FEATURE_RMA };
	uint64_t n = 10000;
	size_t len = 8;
	unio_context_t *ctx;
	unio_worker_t *wa, *wb;
	unio_ep_t *ep;
	unio_status_t st;
	int opt, rc, idle = 0;

	while ((opt = getopt(argc, argv, "n:is:")) != -1) {
		if (opt == 'i') {
			idle = 1;
			time_rtt = 1;
			continue;
		}
		if (opt == 's') {
			char *end;

			len = strtoull(optarg, &end, 0);
			if (*end == '\0' && len >= 8 && len <= ((size_t)1 << 20))
				continue;
			fprintf(stderr, "unio-pathbench: -s takes 8 to 1048576 bytes\n");
			return 2;
		}
		if (opt != 'n') {
			fprintf(stderr, "usage: unio-pathbench [-n messages] [-i] [-s bytes]\n");
			return 2;
		}
		n = strtoull(optarg, NULL, 0);
	}
	n = (n + BURST - 1) / BURST * BURST;
	setenv("UNIO_TLS", "shm,self", 0);
	ctx = unio_context_create(&cp, &st);
	if (ctx == NULL)
		return fail("context", st);
	wa = unio_worker_create(ctx, NULL, &st);
	wb = wa != NULL ? unio_worker_create(ctx, NULL, &st) : NULL;
	if (wb == NULL)
		return fail("worker", st);
	ep = ep_to(wa, wb);
	if (ep == NULL)
		return fail("endpoint", UNIO_ERR_UNREACHABLE);
	rc = run_tag(wa, wb, ep, n);
	if (rc == 0)
		rc = run_stream(wb, ep, n);
	if (rc == 0)
		rc = run_unexp(wb, ep, n);
	if (rc == 0)
		rc = run_am(wa, wb, ep, n);
	if (rc == 0)
		rc = run_am_rtt(wa, wb, ep, n);
	if (rc == 0)
		rc = run_tag_rtt(wa, wb, ep, n, len);
	if (rc == 0)
		rc = run_put(wb, ep, n);
	if (rc == 0)
		printf("unio-pathbench: %" PRIu64 " messages per path, all delivered and checked\n",
		       n);
	if (rc == 0 && idle)
		printf("unio-pathbench: idle progress call of the receiver: %.1f ns (fastest "
		       "batch)\n", time_idle(wb));
	unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
	unio_worker_destroy(wb);
	unio_worker_destroy(wa);
	unio_context_destroy(ctx);
	return rc;
}
