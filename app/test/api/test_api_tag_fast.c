/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The short-message receive fast paths over shm (unio_tag_recv() without a call, the eager
 * short handler without register saves) and every case they hand to the checked paths, each
 * asserted on the data: payloads of 0 to 24 bytes with the bytes past them untouched, a
 * truncated receive that writes nothing, two tags of one hash bucket arriving in the other
 * order, an older masked receive that wins over a newer exact one (and the reverse), a
 * receive without a request pointer, a cancelled receive whose message then waits
 * unexpected, a receive posted from inside a completion callback, and a stream of 4096
 * messages through a window of 16 callback receives, counted and checked in order.
 */

#include <string.h>

#include "api_common.h"
#include "unio_proto.h"

#define FT_TAG  0x7a6b000000000011ull
#define FT_BUF  32
#define FT_FILL 0xa5

struct ft_rx {
	unio_status_t st;
	struct unio_recv_info info;
	int done;
	int cb_calls;
};

static void
ft_cb(unio_request_t *req, unio_status_t st, const struct unio_recv_info *info, void *arg)
{
	struct ft_rx *rx = arg;

	rx->st = st;
	rx->info = *info;
	rx->done = 1;
	rx->cb_calls++;
	unio_request_free(req);
}

static uint8_t
ft_byte(uint64_t seed, size_t i)
{
	return (uint8_t)((seed * 0x9e3779b97f4a7c15ull) >> (8 * (i % 8))) ^ (uint8_t)i;
}

/* progress @p b until @p rx is done (bounded) */
static int
ft_wait(unio_worker_t *b, struct ft_rx *rx)
{
	for (long i = 0; i < 10000000 && !rx->done; i++)
		unio_worker_progress(b);
	return rx->done;
}

/* post a receive of @p rlen bytes for @p tag / @p mask into @p buf with ft_cb and @p rx */
static unio_status_t
ft_post(unio_worker_t *b, uint8_t *buf, size_t rlen, uint64_t tag, uint64_t mask,
	struct ft_rx *rx)
{
	struct unio_request_param p = {
		.field_mask = UNIO_REQ_PARAM_CB | UNIO_REQ_PARAM_USER_DATA,
		.cb = ft_cb, .user_data = rx,
	};
	unio_request_t *req = NULL;

	memset(rx, 0, sizeof(*rx));
	return unio_tag_recv(b, buf, rlen, tag, mask, &p, &req);
}

static int
ft_send(unio_ep_t *ep, uint64_t seed, size_t len, uint64_t tag)
{
	uint8_t s[FT_BUF];

	for (size_t i = 0; i < len; i++)
		s[i] = ft_byte(seed, i);
	return unio_tag_send(ep, s, len, tag, NULL, NULL) == UNIO_OK;
}

/* @p buf holds message @p seed's @p len bytes, then FT_FILL up to FT_BUF */
static int
ft_check(const uint8_t *buf, uint64_t seed, size_t len)
{
	for (size_t i = 0; i < FT_BUF; i++)
		if (buf[i] != (i < len ? ft_byte(seed, i) : FT_FILL))
			return 0;
	return 1;
}

static int
ft_sizes(unio_worker_t *b, unio_ep_t *ep)
{
	uint8_t buf[FT_BUF];
	struct ft_rx rx;

	for (size_t len = 0; len <= 24; len++) {
		memset(buf, FT_FILL, sizeof(buf));
		TEST_ASSERT_STATUS(ft_post(b, buf, 24, FT_TAG, UINT64_MAX, &rx), UNIO_INPROGRESS);
		TEST_ASSERT(ft_send(ep, len, len, FT_TAG), "send %zu", len);
		TEST_ASSERT(ft_wait(b, &rx), "%zu bytes never arrived", len);
		TEST_ASSERT_STATUS(rx.st, UNIO_OK);
		TEST_ASSERT_EQ(rx.cb_calls, 1);
		TEST_ASSERT_EQ(rx.info.tag, FT_TAG);
		TEST_ASSERT_EQ(rx.info.length, len);
		TEST_ASSERT(ft_check(buf, len, len), "%zu bytes: payload or the bytes past it",
			    len);
	}
	/* truncated: reported with the message's length, nothing written */
	memset(buf, FT_FILL, sizeof(buf));
	TEST_ASSERT_STATUS(ft_post(b, buf, 5, FT_TAG, UINT64_MAX, &rx), UNIO_INPROGRESS);
	TEST_ASSERT(ft_send(ep, 99, 8, FT_TAG), "send");
	TEST_ASSERT(ft_wait(b, &rx), "truncated message never completed");
	TEST_ASSERT_STATUS(rx.st, UNIO_ERR_MESSAGE_TRUNCATED);
	TEST_ASSERT_EQ(rx.info.length, 8u);
	TEST_ASSERT(ft_check(buf, 0, 0), "a truncated receive wrote into its buffer");
	return TEST_OK;
}

/* two receives whose tags share an exact bucket; the second posted's message comes first */
static int
ft_bucket(unio_worker_t *b, unio_ep_t *ep)
{
	uint64_t t1 = FT_TAG + 1, t2 = t1 + 1;
	uint8_t b1[FT_BUF], b2[FT_BUF];
	struct ft_rx r1, r2;

	while (proto_bucket_of(t2) != proto_bucket_of(t1))
		t2++;
	memset(b1, FT_FILL, sizeof(b1));
	memset(b2, FT_FILL, sizeof(b2));
	TEST_ASSERT_STATUS(ft_post(b, b1, 16, t1, UINT64_MAX, &r1), UNIO_INPROGRESS);
	TEST_ASSERT_STATUS(ft_post(b, b2, 16, t2, UINT64_MAX, &r2), UNIO_INPROGRESS);
	TEST_ASSERT(ft_send(ep, 2, 8, t2), "send t2");
	TEST_ASSERT(ft_wait(b, &r2), "t2 never arrived");
	TEST_ASSERT(!r1.done, "t2's message completed t1's receive");
	TEST_ASSERT(ft_send(ep, 1, 12, t1), "send t1");
	TEST_ASSERT(ft_wait(b, &r1), "t1 never arrived");
	TEST_ASSERT(r1.info.tag == t1 && r2.info.tag == t2, "tags crossed");
	TEST_ASSERT(ft_check(b1, 1, 12) && ft_check(b2, 2, 8), "payloads crossed");
	return TEST_OK;
}

/* an older masked receive takes the message before a newer exact one, and the reverse */
static int
ft_masked(unio_worker_t *b, unio_ep_t *ep)
{
	const uint64_t mask = 0xffffffffffff0000ull, tag = FT_TAG | 0x1234;
	uint8_t bm[FT_BUF], be[FT_BUF];
	struct ft_rx rm, re;

	for (int older_masked = 1; older_masked >= 0; older_masked--) {
		memset(bm, FT_FILL, sizeof(bm));
		memset(be, FT_FILL, sizeof(be));
		if (older_masked)
			TEST_ASSERT_STATUS(ft_post(b, bm, 16, FT_TAG, mask, &rm), UNIO_INPROGRESS);
		TEST_ASSERT_STATUS(ft_post(b, be, 16, tag, UINT64_MAX, &re), UNIO_INPROGRESS);
		if (!older_masked)
			TEST_ASSERT_STATUS(ft_post(b, bm, 16, FT_TAG, mask, &rm), UNIO_INPROGRESS);
		TEST_ASSERT(ft_send(ep, 10, 8, tag), "send");
		TEST_ASSERT(ft_wait(b, older_masked ? &rm : &re), "the older receive (%s) did "
			    "not get the message", older_masked ? "masked" : "exact");
		TEST_ASSERT(!(older_masked ? re.done : rm.done), "the newer receive completed");
		TEST_ASSERT(ft_send(ep, 11, 9, tag), "send");
		TEST_ASSERT(ft_wait(b, older_masked ? &re : &rm), "the newer receive never "
			    "completed");
		TEST_ASSERT(ft_check(older_masked ? bm : be, 10, 8) &&
			    ft_check(older_masked ? be : bm, 11, 9), "payloads");
		TEST_ASSERT(rm.info.tag == tag && re.info.tag == tag, "tags");
	}
	return TEST_OK;
}

/* no request pointer; a cancelled receive; a message that then waits unexpected */
static int
ft_other(unio_worker_t *b, unio_ep_t *ep)
{
	struct unio_recv_info info = { 0 };
	struct unio_request_param pi = { .field_mask = UNIO_REQ_PARAM_RECV_INFO,
					 .recv_info = &info };
	unio_request_t *req = NULL;
	uint8_t buf[FT_BUF];
	struct ft_rx rx;

	memset(buf, FT_FILL, sizeof(buf));
	TEST_ASSERT_STATUS(unio_tag_recv(b, buf, 16, FT_TAG, UINT64_MAX, NULL, NULL),
			   UNIO_INPROGRESS);
	TEST_ASSERT(ft_send(ep, 20, 16, FT_TAG), "send");
	for (int i = 0; i < 1000000 && !ft_check(buf, 20, 16); i++)
		unio_worker_progress(b);
	TEST_ASSERT(ft_check(buf, 20, 16), "a receive without request pointer: payload");

	memset(buf, FT_FILL, sizeof(buf));
	TEST_ASSERT_STATUS(ft_post(b, buf, 16, FT_TAG, UINT64_MAX, &rx), UNIO_INPROGRESS);
	TEST_ASSERT(!rx.done, "completed before any message");
	/* the request was freed by nobody yet: cancel it through the pointer the call gave */
	TEST_ASSERT_STATUS(unio_tag_recv(b, buf + 16, 8, FT_TAG + 7, UINT64_MAX, NULL, &req),
			   UNIO_INPROGRESS);
	unio_request_cancel(b, req);
	TEST_ASSERT_STATUS(unio_request_test(req, NULL), UNIO_ERR_CANCELED);
	unio_request_free(req);
	TEST_ASSERT(ft_send(ep, 21, 8, FT_TAG + 7), "send");
	TEST_ASSERT(ft_send(ep, 22, 8, FT_TAG), "send");
	TEST_ASSERT(ft_wait(b, &rx), "the posted receive never completed");
	TEST_ASSERT(ft_check(buf, 22, 8), "posted receive's payload (or the cancelled one wrote)");
	/* FT_TAG + 7's message waits unexpected: received at once */
	memset(buf, FT_FILL, sizeof(buf));
	TEST_ASSERT_STATUS(unio_tag_recv(b, buf, 16, FT_TAG + 7, UINT64_MAX, &pi, &req),
			   UNIO_OK);
	TEST_ASSERT_EQ(info.length, 8u);
	TEST_ASSERT(ft_check(buf, 21, 8), "unexpected message's payload");
	return TEST_OK;
}

/* the stream: a window of 16 receives, each callback counts, checks, frees and reposts */
#define FT_WIN 16
#define FT_N   4096

struct ft_stream;

struct ft_slot {
	struct ft_stream *s;
	unsigned int k;
};

struct ft_stream {
	unio_worker_t *w;
	struct ft_slot slot[FT_WIN];
	uint64_t bufs[FT_WIN];
	uint64_t got, posted;
	int bad;
	struct unio_request_param p[FT_WIN];
};

static void
ft_stream_post(struct ft_stream *s, unsigned int k)
{
	unio_request_t *req;

	if (s->posted == FT_N)
		return;
	s->posted++;
	if (unio_tag_recv(s->w, &s->bufs[k], sizeof(s->bufs[k]), FT_TAG, UINT64_MAX, &s->p[k],
			  &req) != UNIO_INPROGRESS)
		s->bad = 1;
}

static void
ft_stream_cb(unio_request_t *req, unio_status_t st, const struct unio_recv_info *info,
	     void *arg)
{
	struct ft_slot *slot = arg;
	struct ft_stream *s = slot->s;
	unsigned int k = slot->k;

	if (st != UNIO_OK || info->length != 8 || info->tag != FT_TAG ||
	    s->bufs[k] != s->got * 0x9e3779b97f4a7c15ull)
		s->bad = 1;
	s->got++;
	unio_request_free(req);
	ft_stream_post(s, k);   /* from inside the callback: the fast path again */
}

static int
ft_stream(unio_worker_t *b, unio_ep_t *ep)
{
	static struct ft_stream s;
	uint64_t sent = 0;

	memset(&s, 0, sizeof(s));
	s.w = b;
	for (unsigned int k = 0; k < FT_WIN; k++) {
		s.slot[k] = (struct ft_slot){ .s = &s, .k = k };
		s.p[k] = (struct unio_request_param){
			.field_mask = UNIO_REQ_PARAM_CB | UNIO_REQ_PARAM_USER_DATA,
			.cb = ft_stream_cb, .user_data = &s.slot[k],
		};
		ft_stream_post(&s, k);
	}
	for (long i = 0; i < 100000000 && s.got < FT_N && !s.bad; i++) {
		/* the sender runs ahead by up to a window, so bursts of several arrive */
		while (sent < FT_N && sent < s.got + FT_WIN) {
			uint64_t v = sent * 0x9e3779b97f4a7c15ull;
			unio_status_t st = unio_tag_send(ep, &v, sizeof(v), FT_TAG, NULL, NULL);

			if (st == UNIO_ERR_NO_RESOURCE)
				break;
			TEST_ASSERT_STATUS(st, UNIO_OK);
			sent++;
		}
		unio_worker_progress(b);
	}
	TEST_ASSERT(!s.bad, "stream: message %" PRIu64 " wrong (payload, length or tag)", s.got);
	TEST_ASSERT_EQ(s.got, (uint64_t)FT_N);
	TEST_ASSERT_EQ(s.posted, (uint64_t)FT_N);
	return TEST_OK;
}

UNIO_TEST(api_tag_recv_fast_paths, fast)
{
	static const char *const ovr[] = { "TLS", "shm,self", NULL };
	struct api_pair p;
	int rc = api_pair_open(&p, ovr, NULL);

	if (rc == TEST_OK)
		rc = ft_sizes(p.b, p.ep);
	if (rc == TEST_OK)
		rc = ft_bucket(p.b, p.ep);
	if (rc == TEST_OK)
		rc = ft_masked(p.b, p.ep);
	if (rc == TEST_OK)
		rc = ft_other(p.b, p.ep);
	if (rc == TEST_OK)
		rc = ft_stream(p.b, p.ep);
	api_pair_close(&p);
	return rc;
}

/*
 * 8-byte tagged messages and AMs into a ring that the receiver does not drain: the send fast
 * paths keep their arguments in memory across the driver's call and, once the ring refuses
 * a message, queue it from there with a request.  Every message then arrives in order with
 * its own payload, and every queued send completes.
 */
#define FR_N   20000u
#define FR_AM  9

static uint64_t fr_vals[FR_N];
static unio_request_t *fr_req[FR_N];

struct fr_am {
	uint64_t next;
	uint64_t bad;
};

static unio_status_t
fr_on_am(void *arg, const void *header, size_t hlen, void *data, size_t len,
	 const struct unio_am_recv_param *p)
{
	struct fr_am *r = arg;
	uint64_t v;

	RTE_SET_USED(header);
	memcpy(&v, data, sizeof(v));
	if (hlen != 0 || len != 8 || p->reply_ep == NULL || r->next >= FR_N ||
	    v != fr_vals[r->next])
		r->bad++;
	r->next++;
	return UNIO_OK;
}

/* count the sends queued (UNIO_INPROGRESS with a request) and check the others gave none */
static int
fr_sent(unio_status_t st, unsigned int i, unsigned int *queued)
{
	TEST_ASSERT(st == UNIO_OK || st == UNIO_INPROGRESS, "send %u: %s", i,
		    unio_status_string(st));
	TEST_ASSERT((st == UNIO_INPROGRESS) == (fr_req[i] != NULL), "send %u: request", i);
	*queued += st == UNIO_INPROGRESS;
	return TEST_OK;
}

/* every queued send completes (progressing both workers) */
static int
fr_sends_done(unio_worker_t *a, unio_worker_t *b)
{
	for (unsigned int i = 0; i < FR_N; i++) {
		if (fr_req[i] == NULL)
			continue;
		TEST_ASSERT_STATUS(api_op_wait(a, b, UNIO_INPROGRESS, fr_req[i]), UNIO_OK);
		fr_req[i] = NULL;
	}
	return TEST_OK;
}

static int
fr_tag(unio_worker_t *a, unio_worker_t *b, unio_ep_t *ep)
{
	struct unio_recv_info info;
	struct unio_request_param p = { .field_mask = UNIO_REQ_PARAM_RECV_INFO,
					.recv_info = &info };
	unsigned int queued = 0;
	unio_request_t *rreq;
	unio_status_t st;
	uint64_t got;

	for (unsigned int i = 0; i < FR_N; i++) {
		fr_vals[i] = 0x3c00000000000000ull ^ ((uint64_t)i * 0x9e3779b97f4a7c15ull);
		fr_req[i] = NULL;
		st = unio_tag_send(ep, &fr_vals[i], 8, FT_TAG + 2, NULL, &fr_req[i]);
		if (fr_sent(st, i, &queued) != TEST_OK)
			return TEST_FAIL;
	}
	TEST_ASSERT(queued > 0 && queued < FR_N, "%u of %u sends queued", queued, FR_N);
	for (unsigned int i = 0; i < FR_N; i++) {
		got = 0;
		memset(&info, 0, sizeof(info));
		rreq = NULL;
		st = unio_tag_recv(b, &got, sizeof(got), FT_TAG + 2, UINT64_MAX, &p, &rreq);
		for (long k = 0; st == UNIO_INPROGRESS && k < 10000000; k++) {
			unio_worker_progress(a);
			unio_worker_progress(b);
			st = unio_request_test(rreq, &info);
		}
		if (rreq != NULL)
			unio_request_free(rreq);
		TEST_ASSERT_STATUS(st, UNIO_OK);
		TEST_ASSERT(info.length == 8 && info.tag == FT_TAG + 2 && got == fr_vals[i],
			    "message %u: length %zu, %#" PRIx64 " for %#" PRIx64, i, info.length,
			    got, fr_vals[i]);
	}
	return fr_sends_done(a, b);
}

static int
fr_am(unio_worker_t *a, unio_worker_t *b, unio_ep_t *ep)
{
	struct fr_am r = { 0, 0 };
	unsigned int queued = 0;
	unio_status_t st;

	TEST_ASSERT_STATUS(unio_worker_set_am_handler(b, FR_AM, fr_on_am, &r, 0), UNIO_OK);
	for (unsigned int i = 0; i < FR_N; i++) {
		fr_vals[i] = 0x5d00000000000000ull ^ ((uint64_t)i * 0xc2b2ae3d27d4eb4full);
		fr_req[i] = NULL;
		st = unio_am_send(ep, FR_AM, NULL, 0, &fr_vals[i], 8, NULL,
				  UNIO_AM_SEND_FLAG_REPLY, &fr_req[i]);
		if (fr_sent(st, i, &queued) != TEST_OK)
			return TEST_FAIL;
	}
	TEST_ASSERT(queued > 0 && queued < FR_N, "%u of %u AMs queued", queued, FR_N);
	for (long k = 0; k < 100000000 && r.next < FR_N; k++) {
		unio_worker_progress(a);
		unio_worker_progress(b);
	}
	TEST_ASSERT(r.next == FR_N && r.bad == 0, "%" PRIu64 " AMs handled, %" PRIu64 " bad",
		    r.next, r.bad);
	if (fr_sends_done(a, b) != TEST_OK)
		return TEST_FAIL;
	unio_worker_set_am_handler(b, FR_AM, NULL, NULL, 0);
	return TEST_OK;
}

UNIO_TEST(api_short_send_full_ring, fast)
{
	static const char *const ovr[] = { "TLS", "shm,self", NULL };
	struct api_pair p;
	int rc = api_pair_open(&p, ovr, NULL);

	if (rc == TEST_OK)
		rc = fr_tag(p.a, p.b, p.ep);
	if (rc == TEST_OK)
		rc = fr_am(p.a, p.b, p.ep);
	api_pair_close(&p);
	return rc;
}
