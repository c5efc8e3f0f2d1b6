/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Active messages: every size class, eager and rendezvous (default, forced eager, forced
 * rendezvous), with user headers of several lengths; the receiver checks each payload's
 * checksum and answers on the reply ep.  Rendezvous data received inside the handler and
 * later outside it; a handler that keeps eager data and releases it later; a handler that
 * rejects (the rendezvous sender sees UNIO_ERR_REJECTED).  Inside one process (self lane,
 * and a second worker) and between two processes.  The sizes: fixed ones and the lane's
 * size classes (api_size_classes()), up to 4 MiB in one process and 64 MiB between two.
 */

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#include <rte_cycles.h>

#include "api_common.h"
#include "unio_proto.h"
#include "unio_tl_shm.h"

#define MIB (1024 * 1024)
#define ID_DATA    5
#define ID_KEEP    6     /* PERSISTENT_DATA handler: keeps, released later */
#define ID_RESULT  7
#define ID_END     8
#define MAX_MSGS   512
#define MAX_SIZE   (4 * MIB)
#define MP_MAX_SIZE (64 * MIB)   /* between two processes: the size classes up to this */

enum mode { MODE_NOW, MODE_LATER, MODE_REJECT };

struct msg_hdr {
	uint64_t seq;
	uint64_t size;
	uint64_t sum;
	uint32_t mode;
	uint32_t extra;          /* bytes of pattern after this header */
};

struct result {
	uint64_t seq;
	int64_t status;
};

struct held {
	void *ptr;
	size_t len;
	struct msg_hdr h;
	unio_ep_t *reply;
	bool rndv;
	unio_request_t *req;    /* a receive still streaming in (pipelined rendezvous) */
	uint8_t *buf;
};

/* Receiver state. */
struct rx {
	unio_worker_t *w;
	uint8_t *buf;
	unsigned int done, bad, rejected;
	unsigned int n_held;
	struct held held[MAX_MSGS];
	unsigned int n_recv;
	struct held recv[MAX_MSGS];   /* receives in progress */
	int end;
};

/* Sender state. */
struct tx {
	unsigned int results;
	unsigned int ok;
	uint8_t seen[MAX_MSGS];
};

static const size_t sizes[] = { 0, 1, 8, 9, 63, 64, 200, 1000, 2040, 2047, 2048, 4096, 8000,
				8160, 8192, 8193, 65536, 1 * MIB, MAX_SIZE };
static const size_t extras[] = { 0, 3, 100 };

static void
reply(unio_ep_t *ep, uint64_t seq, unio_status_t st)
{
	struct result r = { seq, st };

	if (ep == NULL || unio_am_send(ep, ID_RESULT, &r, sizeof(r), NULL, 0, NULL, 0, NULL) < 0)
		TEST_LOG("result %" PRIu64 " not sent", seq);
}

static unio_status_t
check(const struct msg_hdr *h, const void *data, size_t len)
{
	return len == h->size && test_checksum(data, len) == h->sum ? UNIO_OK : UNIO_ERR_PROTO;
}

static int
header_ok(const void *header, size_t hlen, struct msg_hdr *h)
{
	const uint8_t *x = (const uint8_t *)header + sizeof(*h);

	if (hlen < sizeof(*h))
		return 0;
	memcpy(h, header, sizeof(*h));
	if (hlen != sizeof(*h) + h->extra)
		return 0;
	for (uint32_t i = 0; i < h->extra; i++)
		if (x[i] != (uint8_t)(h->seq + i))
			return 0;
	return 1;
}

/* Receive a rendezvous message into a buffer of its own; answer once it is complete. */
static unio_status_t
recv_now(struct rx *rx, void *desc, size_t len, const struct msg_hdr *h, unio_ep_t *rep)
{
	struct held *r = &rx->recv[rx->n_recv];
	unio_status_t st;

	if (rx->n_recv == MAX_MSGS) {
		rx->bad++;
		return UNIO_OK;
	}
	*r = (struct held){ .len = len, .h = *h, .reply = rep, .buf = malloc(len + 1) };
	if (r->buf == NULL) {
		rx->bad++;
		return UNIO_OK;
	}
	st = unio_am_recv_data(rx->w, desc, r->buf, len, NULL, &r->req);
	if (st == UNIO_INPROGRESS) {
		rx->n_recv++;
		return UNIO_OK;
	}
	reply(rep, h->seq, st == UNIO_OK ? check(h, r->buf, len) : st);
	free(r->buf);
	rx->done++;
	return UNIO_OK;
}

/* Answer the receives that completed. */
static void
recv_poll(struct rx *rx)
{
	for (unsigned int i = 0; i < rx->n_recv;) {
		struct held *r = &rx->recv[i];
		unio_status_t st = unio_request_test(r->req, NULL);

		if (st == UNIO_INPROGRESS) {
			i++;
			continue;
		}
		unio_request_free(r->req);
		reply(r->reply, r->h.seq, st == UNIO_OK ? check(&r->h, r->buf, r->len) : st);
		free(r->buf);
		rx->done++;
		*r = rx->recv[--rx->n_recv];
	}
}

static unio_status_t
on_data(void *arg, const void *header, size_t hlen, void *data, size_t len,
	const struct unio_am_recv_param *p)
{
	struct rx *rx = arg;
	struct msg_hdr h;

	if (!header_ok(header, hlen, &h) || p->reply_ep == NULL) {
		rx->bad++;
		return UNIO_OK;
	}
	if (h.mode == MODE_REJECT) {
		rx->rejected++;
		return UNIO_ERR_REJECTED;
	}
	if (!(p->recv_attr & UNIO_AM_RECV_ATTR_FLAG_RNDV)) {
		reply(p->reply_ep, h.seq, check(&h, data, len));
		rx->done++;
		return UNIO_OK;
	}
	if (h.mode == MODE_LATER && rx->n_held < MAX_MSGS) {
		rx->held[rx->n_held++] = (struct held){ data, len, h, p->reply_ep, true };
		return UNIO_INPROGRESS;
	}
	return recv_now(rx, data, len, &h, p->reply_ep);
}

static unio_status_t
on_keep(void *arg, const void *header, size_t hlen, void *data, size_t len,
	const struct unio_am_recv_param *p)
{
	struct rx *rx = arg;
	struct msg_hdr h;

	if (!header_ok(header, hlen, &h) || p->reply_ep == NULL ||
	    !(p->recv_attr & UNIO_AM_RECV_ATTR_FLAG_DATA) || rx->n_held == MAX_MSGS) {
		rx->bad++;
		return UNIO_OK;
	}
	rx->held[rx->n_held++] = (struct held){ data, len, h, p->reply_ep, false };
	return UNIO_INPROGRESS;
}

static unio_status_t
on_end(void *arg, const void *header, size_t hlen, void *data, size_t len,
       const struct unio_am_recv_param *p)
{
	struct rx *rx = arg;

	RTE_SET_USED(header), RTE_SET_USED(hlen), RTE_SET_USED(data), RTE_SET_USED(len);
	RTE_SET_USED(p);
	rx->end = 1;
	return UNIO_OK;
}

/* Receive what handlers kept, outside the callbacks. */
static void
rx_poll(struct rx *rx)
{
	while (rx->n_held > 0) {
		struct held *hd = &rx->held[--rx->n_held];
		unio_status_t st;

		if (hd->rndv) {
			recv_now(rx, hd->ptr, hd->len, &hd->h, hd->reply);
			continue;
		}
		st = check(&hd->h, hd->ptr, hd->len);
		reply(hd->reply, hd->h.seq, st);
		unio_am_data_release(rx->w, hd->ptr);
		rx->done++;
	}
	recv_poll(rx);
}

static unio_status_t
on_result(void *arg, const void *header, size_t hlen, void *data, size_t len,
	  const struct unio_am_recv_param *p)
{
	struct tx *tx = arg;
	struct result r;

	RTE_SET_USED(data), RTE_SET_USED(p);
	if (hlen != sizeof(r) || len != 0)
		return UNIO_OK;
	memcpy(&r, header, sizeof(r));
	if (r.seq < MAX_MSGS && !tx->seen[r.seq]) {
		tx->seen[r.seq] = 1;
		tx->results++;
		if (r.status == UNIO_OK)
			tx->ok++;
		else
			TEST_LOG("message %" PRIu64 ": receiver says %s", r.seq,
				 unio_status_string((unio_status_t)r.status));
	}
	return UNIO_OK;
}

static int
rx_setup(struct rx *rx, unio_worker_t *w)
{
	memset(rx, 0, sizeof(*rx));
	rx->w = w;
	rx->buf = malloc(MAX_SIZE + 1);
	TEST_ASSERT(rx->buf != NULL, "malloc");
	TEST_ASSERT_STATUS(unio_worker_set_am_handler(w, ID_DATA, on_data, rx, 0), UNIO_OK);
	TEST_ASSERT_STATUS(unio_worker_set_am_handler(w, ID_KEEP, on_keep, rx,
			   UNIO_AM_HANDLER_FLAG_PERSISTENT_DATA), UNIO_OK);
	TEST_ASSERT_STATUS(unio_worker_set_am_handler(w, ID_END, on_end, rx, 0), UNIO_OK);
	return TEST_OK;
}

/* ---- the sending side: every size, flag, header length and mode ---- */

struct out {
	unio_request_t *req;
	unio_status_t st;
	uint8_t *buf;
	uint8_t *hdr;
	uint32_t mode;
	unsigned int flags;
	size_t len;
	size_t ex;
	bool rndv;
};

static void
progress(unio_worker_t *a, unio_worker_t *b, struct rx *rx)
{
	unio_worker_progress(a);
	if (b != NULL && b != a)
		unio_worker_progress(b);
	if (rx != NULL)
		rx_poll(rx);
}

/*
 * The sizes of a run: the fixed ones, then the lane's size classes (each protocol limit
 * +-1) up to @p big, without repeats.
 */
static unsigned int
run_sizes(unio_ep_t *ep, size_t big, size_t *all)
{
	size_t cls[32];
	unsigned int n = 0, nc = api_size_classes(ep, big, cls);

	for (unsigned int i = 0; i < RTE_DIM(sizes); i++)
		all[n++] = sizes[i];
	for (unsigned int i = 0; i < nc; i++) {
		unsigned int j = 0;

		while (j < n && all[j] != cls[i])
			j++;
		if (j == n && cls[i] <= big)
			all[n++] = cls[i];
	}
	return n;
}

static unsigned int
plan(unio_ep_t *ep, struct out *o, unsigned int max, size_t big)
{
	static const unsigned int flagsets[] = {
		0, UNIO_AM_SEND_FLAG_EAGER, UNIO_AM_SEND_FLAG_RNDV
	};
	size_t bcopy = ep->lane.iface->attr.max_bcopy;
	size_t all[RTE_DIM(sizes) + 32];
	unsigned int n = 0, n_sizes = run_sizes(ep, big, all);
	bool fits;

	for (unsigned int s = 0; s < n_sizes; s++)
		for (unsigned int f = 0; f < RTE_DIM(flagsets) && n < max; f++) {
			size_t ex = extras[(s + f) % RTE_DIM(extras)];

			fits = 8 + sizeof(struct msg_hdr) + ex + all[s] <= bcopy;
			if (flagsets[f] == UNIO_AM_SEND_FLAG_EAGER && !fits)
				continue;
			o[n].flags = flagsets[f];
			o[n].mode = (s + f) % 3;
			o[n].len = all[s];
			o[n].ex = ex;
			o[n].rndv = flagsets[f] == UNIO_AM_SEND_FLAG_RNDV ||
				    (flagsets[f] == 0 &&
				     (!fits || all[s] >= ep->lane.rndv_thresh));
			n++;
		}
	return n;
}

static int
send_one(unio_ep_t *ep, struct out *o, uint64_t seq)
{
	size_t len = o->len, ex = o->ex;
	unsigned int id = o->mode == MODE_LATER && !o->rndv ?
			  ID_KEEP : ID_DATA;
	struct msg_hdr h = { .seq = seq, .size = len, .mode = o->mode, .extra = (uint32_t)ex };

	o->buf = malloc(len + 1);
	o->hdr = malloc(sizeof(h) + ex);
	TEST_ASSERT(o->buf != NULL && o->hdr != NULL, "malloc");
	test_fill(o->buf, len, seq * 7919 + len);
	h.sum = test_checksum(o->buf, len);
	memcpy(o->hdr, &h, sizeof(h));
	for (size_t i = 0; i < ex; i++)
		o->hdr[sizeof(h) + i] = (uint8_t)(seq + i);
	o->req = NULL;
	o->st = unio_am_send(ep, id, o->hdr, sizeof(h) + ex, o->buf, len, NULL,
			     o->flags | UNIO_AM_SEND_FLAG_REPLY, &o->req);
	TEST_ASSERT(o->st == UNIO_OK || o->st == UNIO_INPROGRESS,
		    "am_send %zu bytes, flags %#x: %s", len, o->flags, unio_status_string(o->st));
	return TEST_OK;
}

/* A rendezvous message rejected by the handler; every other one answered with UNIO_OK. */
static int
expect(const struct out *o, unio_status_t st, const struct tx *tx, uint64_t seq, bool rndv)
{
	bool rejected = o->mode == MODE_REJECT;

	if (rejected && rndv)
		TEST_ASSERT_STATUS(st, UNIO_ERR_REJECTED);
	else
		TEST_ASSERT_STATUS(st, UNIO_OK);
	TEST_ASSERT(rejected ? !tx->seen[seq] : tx->seen[seq] == 1, "message %" PRIu64
		    " (mode %u): result %s", seq, o->mode, tx->seen[seq] ? "seen" : "missing");
	return TEST_OK;
}

static int
run_sender(unio_worker_t *w, unio_ep_t *ep, unio_worker_t *peer, struct rx *rx, size_t big)
{
	static struct out o[MAX_MSGS];
	unsigned int n = plan(ep, o, MAX_MSGS, big), want = 0;
	struct tx tx;
	unio_status_t st;

	memset(&tx, 0, sizeof(tx));
	TEST_ASSERT_STATUS(unio_worker_set_am_handler(w, ID_RESULT, on_result, &tx, 0), UNIO_OK);
	for (unsigned int i = 0; i < n; i++) {
		TEST_ASSERT_EQ(send_one(ep, &o[i], i), TEST_OK);
		want += o[i].mode != MODE_REJECT;
		if (i % 8 == 7)
			progress(w, peer, rx);
	}
	for (int spin = 0; tx.results < want && spin < 50000000; spin++)
		progress(w, peer, rx);
	for (unsigned int i = 0; i < n; i++) {
		st = o[i].st;
		if (st == UNIO_INPROGRESS) {
			while ((st = unio_request_test(o[i].req, NULL)) == UNIO_INPROGRESS)
				progress(w, peer, rx);
			unio_request_free(o[i].req);
		}
		TEST_ASSERT_EQ(expect(&o[i], st, &tx, i, o[i].rndv), TEST_OK);
		free(o[i].buf);
		free(o[i].hdr);
	}
	TEST_LOG("%s lane: %u messages, %u answered, %u ok", ep->lane.iface->driver->name, n,
		 tx.results, tx.ok);
	TEST_ASSERT(tx.results == want && tx.ok == want, "%u of %u answers ok", tx.ok, want);
	unio_worker_set_am_handler(w, ID_RESULT, NULL, NULL, 0);
	return TEST_OK;
}

/* ---- inside one process ---- */

static int
am_local(bool self, const char *lane)
{
	unio_context_t *ctx = api_ctx(NULL);
	unio_worker_t *a, *b;
	unio_status_t st;
	unio_ep_t *ep;
	struct rx *rx = calloc(1, sizeof(*rx));
	int rc;

	TEST_ASSERT(ctx != NULL && rx != NULL, "setup");
	a = unio_worker_create(ctx, NULL, &st);
	b = self ? a : unio_worker_create(ctx, NULL, &st);
	TEST_ASSERT(a != NULL && b != NULL, "workers");
	ep = api_ep_to_worker(a, b, &st);
	TEST_ASSERT(ep != NULL, "ep: %s", unio_status_string(st));
	for (int i = 0; i < 100000 && ep->state != EP_CONNECTED; i++)
		progress(a, b, NULL);
	TEST_ASSERT(lane == NULL || strcmp(ep->lane.iface->driver->name, lane) == 0,
		    "lane %s, not %s", ep->lane.iface->driver->name, lane);
	TEST_ASSERT_EQ(rx_setup(rx, b), TEST_OK);
	rc = run_sender(a, ep, b, rx, MAX_SIZE);
	TEST_ASSERT(rx->bad == 0, "%u malformed messages at the receiver", rx->bad);
	unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
	if (b != a)
		unio_worker_destroy(b);
	unio_worker_destroy(a);
	unio_context_destroy(ctx);
	free(rx->buf);
	free(rx);
	return rc;
}

UNIO_TEST(am_self_sizes, fast)
{
	return am_local(true, NULL);
}

UNIO_TEST(am_host_sizes, fast)
{
	return am_local(false, NULL);
}

/* The same over tcp: eager, bcopy fragments, rendezvous gets in 1 MiB chunks. */
UNIO_TEST(am_host_sizes_tcp, fast)
{
	int rc;

	setenv("UNIO_TLS", "tcp,self", 1);
	rc = am_local(false, "tcp");
	unsetenv("UNIO_TLS");
	return rc;
}

/* ---- split rendezvous: the receiver pulls the first half, the sender puts the second ---- */

struct split_rx {
	void *desc;
	size_t len;
	unsigned int n;
	bool rndv;
};

static unio_status_t
split_cb(void *arg, const void *header, size_t hlen, void *data, size_t len,
	 const struct unio_am_recv_param *p)
{
	struct split_rx *rx = arg;

	RTE_SET_USED(header), RTE_SET_USED(hlen);
	rx->desc = data;
	rx->len = len;
	rx->rndv = (p->recv_attr & UNIO_AM_RECV_ATTR_FLAG_RNDV) != 0;
	rx->n++;
	return UNIO_INPROGRESS;   /* received after the callback */
}

/*
 * On a shm lane with the auto scheme, a 1 MiB rendezvous AM is split: unio_am_recv_data()
 * pulls the first half (CMA, at once) and asks the sender for the second.  Progressing
 * only the receiver leaves the second half untouched; once the sender progresses it puts
 * it and both requests complete, every byte checked.  With a pipelined or whole-pull
 * rendezvous the first check fails (nothing there yet, or everything there).
 */
UNIO_TEST(am_rndv_split, fast)
{
	size_t len = 1 * MIB, half = (len / 2) & ~(size_t)63;
	unio_context_t *ctx = api_ctx(NULL);
	unio_worker_t *a = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	unio_worker_t *b = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	uint8_t *src = malloc(len), *dst = malloc(len);
	unio_request_t *sreq = NULL, *rreq = NULL;
	struct split_rx rx = { 0 };
	unio_status_t st;
	unio_ep_t *ep;

	TEST_ASSERT(a != NULL && b != NULL && src != NULL && dst != NULL, "setup");
	ep = api_ep_to_worker(a, b, &st);
	TEST_ASSERT(ep != NULL, "ep: %s", unio_status_string(st));
	TEST_ASSERT(api_ep_connected(a, b, ep), "ep never connected");
	TEST_ASSERT(strcmp(ep->lane.iface->driver->name, "shm") == 0 &&
		    ep->lane.split_min <= len, "lane %s, split from %zu",
		    ep->lane.iface->driver->name, ep->lane.split_min);
	TEST_ASSERT_STATUS(unio_worker_set_am_handler(b, 3, split_cb, &rx, 0), UNIO_OK);
	test_fill(src, len, 4711);
	st = unio_am_send(ep, 3, NULL, 0, src, len, NULL, 0, &sreq);
	TEST_ASSERT(st == UNIO_INPROGRESS, "am_send: %s", unio_status_string(st));
	for (int i = 0; i < 100000 && rx.n == 0; i++) {
		unio_worker_progress(a);
		unio_worker_progress(b);
	}
	TEST_ASSERT(rx.n == 1 && rx.rndv && rx.len == len, "%u messages, rndv %d, %zu bytes",
		    rx.n, rx.rndv, rx.len);
	memset(dst, 0xee, len);
	st = unio_am_recv_data(b, rx.desc, dst, len, NULL, &rreq);
	TEST_ASSERT(st == UNIO_INPROGRESS, "recv_data: %s", unio_status_string(st));
	for (int i = 0; i < 1000; i++)
		unio_worker_progress(b);
	TEST_ASSERT(unio_request_test(rreq, NULL) == UNIO_INPROGRESS,
		    "the receive completed without the sender");
	TEST_ASSERT(memcmp(dst, src, half) == 0, "the receiver did not pull the first half");
	for (size_t i = half; i < len; i++)
		TEST_ASSERT(dst[i] == 0xee, "byte %zu of the sender's half written early", i);
	for (int i = 0; i < 1000000 && (unio_request_test(rreq, NULL) == UNIO_INPROGRESS ||
					 unio_request_test(sreq, NULL) == UNIO_INPROGRESS); i++) {
		unio_worker_progress(a);
		unio_worker_progress(b);
	}
	TEST_ASSERT_STATUS(unio_request_test(rreq, NULL), UNIO_OK);
	TEST_ASSERT_STATUS(unio_request_test(sreq, NULL), UNIO_OK);
	TEST_ASSERT(memcmp(dst, src, len) == 0, "received bytes differ");
	unio_request_free(rreq);
	unio_request_free(sreq);
	unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
	unio_worker_destroy(b);
	unio_worker_destroy(a);
	unio_context_destroy(ctx);
	free(src);
	free(dst);
	return TEST_OK;
}

static unio_status_t
count_cb(void *arg, const void *header, size_t hlen, void *data, size_t len,
	 const struct unio_am_recv_param *p)
{
	RTE_SET_USED(header), RTE_SET_USED(hlen), RTE_SET_USED(data), RTE_SET_USED(len);
	RTE_SET_USED(p);
	(*(int *)arg)++;
	return UNIO_OK;
}

/*
 * A context created without UNIO_FEATURE_AM: every AM call fails with UNIO_ERR_UNSUPPORTED
 * and the log names the missing feature once; tagged messages on it still work.
 */
UNIO_TEST(am_without_feature, fast)
{
	struct unio_context_params cp = { .field_mask = UNIO_CONTEXT_PARAM_FEATURES,
					  .features = UNIO_FEATURE_TAG | UNIO_FEATURE_RMA };
	unio_context_t *ctx = unio_context_create(&cp, NULL);
	unio_worker_t *w = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	uint64_t v = 0x1234, got = 0;
	struct unio_recv_info info;
	char *text = NULL;
	size_t tlen = 0;
	unio_status_t st;
	unio_ep_t *ep;
	const char *p;
	uint8_t b[16];
	FILE *f;
	int n = 0, times = 0;

	TEST_ASSERT(w != NULL, "worker");
	ep = api_ep_to_worker(w, w, &st);
	TEST_ASSERT(ep != NULL, "ep");
	for (int i = 0; i < 1000 && ep->state != EP_CONNECTED; i++)
		unio_worker_progress(w);
	f = open_memstream(&text, &tlen);
	TEST_ASSERT(f != NULL, "memstream");
	rte_openlog_stream(f);
	for (int i = 0; i < 3; i++) {
		TEST_ASSERT_STATUS(unio_worker_set_am_handler(w, 1, count_cb, &n, 0),
				   UNIO_ERR_UNSUPPORTED);
		TEST_ASSERT_STATUS(unio_am_send(ep, 1, NULL, 0, b, sizeof(b), NULL, 0, NULL),
				   UNIO_ERR_UNSUPPORTED);
		TEST_ASSERT_STATUS(unio_am_send(ep, 1, NULL, 0, b, sizeof(b), NULL,
						UNIO_AM_SEND_FLAG_RNDV, NULL),
				   UNIO_ERR_UNSUPPORTED);
		TEST_ASSERT_STATUS(unio_am_recv_data(w, b, b, sizeof(b), NULL, NULL),
				   UNIO_ERR_UNSUPPORTED);
	}
	rte_openlog_stream(NULL);
	fclose(f);
	for (p = text; p != NULL && (p = strstr(p, "UNIO_FEATURE_AM")) != NULL; p++)
		times++;
	TEST_LOG("log: %s", text != NULL ? text : "");
	free(text);
	TEST_ASSERT(times == 1, "the missing feature was logged %d times, not once", times);
	TEST_ASSERT_STATUS(api_send(w, ep, &v, sizeof(v), 7, 0), UNIO_OK);
	TEST_ASSERT_STATUS(api_recv(w, &got, sizeof(got), 7, UINT64_MAX, &info), UNIO_OK);
	TEST_ASSERT(got == v, "tag message on the context without AM: %#" PRIx64, got);
	TEST_ASSERT(n == 0, "a handler ran");
	unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return TEST_OK;
}

UNIO_TEST(am_bad_input, fast)
{
	unio_context_t *ctx = api_ctx(NULL);
	unio_worker_t *w = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	unio_status_t st;
	unio_ep_t *ep;
	uint8_t b[16];
	int n = 0;

	TEST_ASSERT(w != NULL, "worker");
	ep = api_ep_to_worker(w, w, &st);
	TEST_ASSERT(ep != NULL, "ep");
	for (int i = 0; i < 1000 && ep->state != EP_CONNECTED; i++)
		unio_worker_progress(w);
	TEST_ASSERT_STATUS(unio_worker_set_am_handler(w, UNIO_AM_ID_MAX, count_cb, &n, 0),
			   UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_worker_set_am_handler(w, 1, count_cb, &n, 0x100),
			   UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_am_send(ep, UNIO_AM_ID_MAX, NULL, 0, b, 1, NULL, 0, NULL),
			   UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_am_send(ep, 1, NULL, 4, b, 1, NULL, 0, NULL),
			   UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_am_send(ep, 1, NULL, 0, b, 1, NULL, UNIO_AM_SEND_FLAG_EAGER |
					UNIO_AM_SEND_FLAG_RNDV, NULL), UNIO_ERR_INVALID_PARAM);
	/* no handler: dropped, then a handler: counted; removed: dropped again */
	TEST_ASSERT_STATUS(unio_am_send(ep, 1, NULL, 0, b, 1, NULL, 0, NULL), UNIO_OK);
	for (int i = 0; i < 100; i++)
		unio_worker_progress(w);
	TEST_ASSERT_STATUS(unio_worker_set_am_handler(w, 1, count_cb, &n, 0), UNIO_OK);
	TEST_ASSERT_STATUS(unio_am_send(ep, 1, b, 3, b, 1, NULL, 0, NULL), UNIO_OK);
	for (int i = 0; i < 100; i++)
		unio_worker_progress(w);
	TEST_ASSERT_EQ(n, 1);
	TEST_ASSERT_STATUS(unio_worker_set_am_handler(w, 1, NULL, NULL, 0), UNIO_OK);
	TEST_ASSERT_STATUS(unio_am_send(ep, 1, NULL, 0, b, 1, NULL, 0, NULL), UNIO_OK);
	for (int i = 0; i < 100; i++)
		unio_worker_progress(w);
	TEST_ASSERT_EQ(n, 1);
	TEST_ASSERT_STATUS(unio_am_recv_data(w, b, b, 1, NULL, NULL), UNIO_ERR_INVALID_PARAM);
	unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return TEST_OK;
}

/* ---- between two processes ---- */

static int
child_exit(unio_context_t *ctx, unio_worker_t *w, int rc)
{
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return rc;
}

UNIO_TEST_CHILD(am_mp_receiver)
{
	unio_context_t *ctx = api_ctx(NULL);
	struct rx *rx = calloc(1, sizeof(*rx));
	unio_worker_t *w;
	unio_status_t st;
	unio_ep_t *ep;
	int rc;

	prctl(PR_SET_PDEATHSIG, SIGKILL);   /* never outlive the test */
	if (argc < 1 || ctx == NULL || rx == NULL)
		return 2;
	w = unio_worker_create(ctx, NULL, &st);
	if (w == NULL || rx_setup(rx, w) != TEST_OK)
		return child_exit(ctx, w, 3);
	ep = api_connect(w, atoi(argv[0]), NULL, NULL, &st);
	if (ep == NULL)
		return child_exit(ctx, w, st == UNIO_ERR_UNREACHABLE ? 77 : 4);
	while (!rx->end && ep->state == EP_CONNECTED) {
		unio_worker_progress(w);
		rx_poll(rx);
	}
	rc = rx->end && rx->bad == 0 ? 0 : 5;
	if (rc != 0)
		TEST_LOG("child: end %d, %u malformed, %u done", rx->end, rx->bad, rx->done);
	unio_ep_close(ep, UNIO_EP_CLOSE_FLUSH, NULL);
	free(rx->buf);
	free(rx);
	return child_exit(ctx, w, rc);
}

static int
am_mp(const char *lane)
{
	struct api_parent p;
	int rc = api_parent_open(&p, NULL, NULL, test_free_port(), "am_mp_receiver", NULL);
	int crc = -1;

	if (rc == TEST_OK)
		rc = api_parent_connected(&p);
	if (rc == TEST_OK) {
		rc = lane == NULL || strcmp(p.ep->lane.iface->driver->name, lane) == 0 ?
		     run_sender(p.w, p.ep, NULL, NULL, MP_MAX_SIZE) : TEST_FAIL;
		unio_am_send(p.ep, ID_END, NULL, 0, NULL, 0, NULL, 0, NULL);
		crc = api_wait_child(p.w, p.pid, 30000, NULL);
	}
	api_parent_close(&p);
	if (rc == TEST_SKIP)
		return rc;
	TEST_ASSERT_EQ(rc, TEST_OK);
	TEST_ASSERT_EQ(crc, 0);
	return TEST_OK;
}

UNIO_TEST(am_mp_sizes, mp)
{
	return am_mp(NULL);
}

/* Over tcp between two processes (UNIO_TLS in the environment reaches the receiver). */
UNIO_TEST(am_mp_sizes_tcp, mp)
{
	int rc;

	setenv("UNIO_TLS", "tcp,self", 1);
	rc = am_mp("tcp");
	unsetenv("UNIO_TLS");
	return rc;
}

/* Rendezvous descriptors: dropped by the handler (sender OK), or kept then released
 * without receiving (sender UNIO_ERR_CANCELED); received twice: the second is refused. */
static void *kept_desc;

static unio_status_t
desc_cb(void *arg, const void *header, size_t hlen, void *data, size_t len,
	const struct unio_am_recv_param *p)
{
	int mode = *(int *)arg;

	RTE_SET_USED(header), RTE_SET_USED(hlen), RTE_SET_USED(len);
	if (!(p->recv_attr & UNIO_AM_RECV_ATTR_FLAG_RNDV))
		return UNIO_ERR_PROTO;
	if (mode == 0)
		return UNIO_OK;
	kept_desc = data;
	return UNIO_INPROGRESS;
}

static unio_status_t
send_wait(unio_worker_t *w, unio_ep_t *ep, const void *buf, size_t len)
{
	unio_request_t *req = NULL;
	unio_status_t st = unio_am_send(ep, 9, NULL, 0, buf, len, NULL, UNIO_AM_SEND_FLAG_RNDV,
					&req);

	if (st != UNIO_INPROGRESS)
		return st;
	while ((st = unio_request_test(req, NULL)) == UNIO_INPROGRESS)
		unio_worker_progress(w);
	unio_request_free(req);
	return st;
}

UNIO_TEST(am_rndv_descriptors, fast)
{
	unio_context_t *ctx = api_ctx(NULL);
	unio_worker_t *w = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	uint8_t src[5000], dst[5000];
	unio_request_t *req = NULL;
	unio_status_t st;
	unio_ep_t *ep;
	int mode = 0;

	TEST_ASSERT(w != NULL, "worker");
	ep = api_ep_to_worker(w, w, &st);
	TEST_ASSERT(ep != NULL, "ep");
	for (int i = 0; i < 1000 && ep->state != EP_CONNECTED; i++)
		unio_worker_progress(w);
	test_fill(src, sizeof(src), 3);
	TEST_ASSERT_STATUS(unio_worker_set_am_handler(w, 9, desc_cb, &mode, 0), UNIO_OK);
	TEST_ASSERT_STATUS(send_wait(w, ep, src, sizeof(src)), UNIO_OK);
	mode = 1;
	kept_desc = NULL;
	st = unio_am_send(ep, 9, NULL, 0, src, sizeof(src), NULL, UNIO_AM_SEND_FLAG_RNDV, &req);
	TEST_ASSERT_STATUS(st, UNIO_INPROGRESS);
	while (kept_desc == NULL)
		unio_worker_progress(w);
	for (int i = 0; i < 100; i++)
		unio_worker_progress(w);
	TEST_ASSERT_STATUS(unio_request_test(req, NULL), UNIO_INPROGRESS);
	unio_am_data_release(w, kept_desc);
	while ((st = unio_request_test(req, NULL)) == UNIO_INPROGRESS)
		unio_worker_progress(w);
	unio_request_free(req);
	TEST_ASSERT_STATUS(st, UNIO_ERR_CANCELED);
	TEST_ASSERT_STATUS(unio_am_recv_data(w, kept_desc, dst, sizeof(dst), NULL, NULL),
			   UNIO_ERR_INVALID_PARAM);
	/* kept, then received into a short buffer: truncated, the sender still completes */
	kept_desc = NULL;
	st = unio_am_send(ep, 9, NULL, 0, src, sizeof(src), NULL, UNIO_AM_SEND_FLAG_RNDV, &req);
	while (kept_desc == NULL)
		unio_worker_progress(w);
	TEST_ASSERT_STATUS(unio_am_recv_data(w, kept_desc, dst, 10, NULL, NULL),
			   UNIO_ERR_MESSAGE_TRUNCATED);
	while ((st = unio_request_test(req, NULL)) == UNIO_INPROGRESS)
		unio_worker_progress(w);
	unio_request_free(req);
	TEST_ASSERT_STATUS(st, UNIO_OK);
	/* kept, then received whole, later */
	kept_desc = NULL;
	st = unio_am_send(ep, 9, NULL, 0, src, sizeof(src), NULL, UNIO_AM_SEND_FLAG_RNDV, &req);
	while (kept_desc == NULL)
		unio_worker_progress(w);
	memset(dst, 0, sizeof(dst));
	TEST_ASSERT_STATUS(unio_am_recv_data(w, kept_desc, dst, sizeof(dst), NULL, NULL),
			   UNIO_OK);
	TEST_ASSERT(memcmp(dst, src, sizeof(src)) == 0, "received data differs");
	while ((st = unio_request_test(req, NULL)) == UNIO_INPROGRESS)
		unio_worker_progress(w);
	unio_request_free(req);
	TEST_ASSERT_STATUS(st, UNIO_OK);
	unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return TEST_OK;
}

/* ---- flush sees AM sends that wait for transport room ---- */

static unsigned int flush_am_got;

static unio_status_t
on_flush_am(void *arg, const void *header, size_t hlen, void *data, size_t len,
	    const struct unio_am_recv_param *p)
{
	RTE_SET_USED(arg), RTE_SET_USED(header), RTE_SET_USED(hlen), RTE_SET_USED(data);
	RTE_SET_USED(len), RTE_SET_USED(p);
	flush_am_got++;
	return UNIO_OK;
}

/*
 * Over tcp, eager AMs sent while the receiver does not progress fill the socket and then
 * wait in the worker's queue (not on the endpoint's lists).  A flush started then must not
 * complete before every one of them reached the peer.
 */
UNIO_TEST(am_flush_queued_tcp, fast)
{
	static const char *const ovr[] = { "TLS", "tcp,self", NULL };
	enum { N_AM = 2000, LEN = 16000 };
	unio_context_t *ctx = api_ctx(ovr);
	static uint8_t buf[LEN];
	unio_request_t *freq = NULL;
	unio_worker_t *a, *b;
	unsigned int queued = 0;
	unio_status_t st;
	unio_ep_t *ep;

	TEST_ASSERT(ctx != NULL, "context");
	a = unio_worker_create(ctx, NULL, &st);
	TEST_ASSERT(a != NULL, "worker: %s", unio_status_string(st));
	b = unio_worker_create(ctx, NULL, &st);
	TEST_ASSERT(b != NULL, "worker: %s", unio_status_string(st));
	TEST_ASSERT_STATUS(unio_worker_set_am_handler(b, ID_DATA, on_flush_am, NULL, 0), UNIO_OK);
	ep = api_ep_to_worker(a, b, &st);
	TEST_ASSERT(ep != NULL, "ep: %s", unio_status_string(st));
	TEST_ASSERT(api_ep_connected(a, b, ep), "ep never connected");
	flush_am_got = 0;
	for (unsigned int i = 0; i < N_AM; i++) {
		st = unio_am_send(ep, ID_DATA, NULL, 0, buf, LEN, NULL, UNIO_AM_SEND_FLAG_EAGER,
				  NULL);
		TEST_ASSERT(!UNIO_IS_ERR(st), "am %u: %s", i, unio_status_string(st));
	}
	queued = a->n_am_pending;
	TEST_ASSERT(queued > 0, "%u eager AMs of %u bytes all went to tcp at once", N_AM, LEN);
	st = unio_ep_flush(ep, NULL, &freq);
	TEST_ASSERT(st == UNIO_INPROGRESS, "flush with %u AMs queued: %s", queued,
		    unio_status_string(st));
	for (uint64_t end = rte_get_timer_cycles() + 30 * rte_get_timer_hz();
	     unio_request_test(freq, NULL) == UNIO_INPROGRESS && rte_get_timer_cycles() < end;) {
		unio_worker_progress(a);
		unio_worker_progress(b);
	}
	TEST_ASSERT_STATUS(unio_request_test(freq, NULL), UNIO_OK);
	unio_request_free(freq);
	/* the lane's flush completes when the peer's transport has the bytes: deliver them */
	for (int k = 0; k < 100000 && flush_am_got < N_AM; k++)
		unio_worker_progress(b);
	TEST_ASSERT(a->n_am_pending == 0, "%u AMs still queued after the flush", a->n_am_pending);
	TEST_ASSERT_EQ(flush_am_got, N_AM);
	unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
	unio_worker_destroy(b);
	unio_worker_destroy(a);
	unio_context_destroy(ctx);
	return TEST_OK;
}

/* Receiver of am_rts_waits_for_room: eager messages in order, one rendezvous descriptor. */
struct room_rx {
	unsigned int eager, bad, rndv;
	void *desc;
	size_t rndv_len;
};

#define ROOM_LEN 1000   /* an eager AM through am_short: 32 cells of the ring */

static unio_status_t
room_cb(void *arg, const void *header, size_t hlen, void *data, size_t len,
	const struct unio_am_recv_param *p)
{
	struct room_rx *rx = arg;
	uint8_t want[ROOM_LEN];

	RTE_SET_USED(header);
	if (p->recv_attr & UNIO_AM_RECV_ATTR_FLAG_RNDV) {
		rx->rndv++;
		rx->desc = data;
		rx->rndv_len = len;
		return UNIO_INPROGRESS;   /* received after the callback */
	}
	test_fill(want, sizeof(want), 1000 + rx->eager);   /* each message's seed: its number */
	if (hlen != 0 || len != ROOM_LEN || memcmp(data, want, len) != 0)
		rx->bad++;
	rx->eager++;
	return UNIO_OK;
}

/*
 * A rendezvous AM whose RTS meets a full shm ring waits in the worker's AM queue without
 * retrying its send on every progress call: it goes out in the first sender progress after
 * the receiver consumed (and published) room, then the data arrives intact.  The shm iface's
 * counters make it exact: while the receiver sleeps, 1000 sender progress calls refuse no
 * send (before, each retried the queued send and was refused: 1000 more) and count 1000
 * skipped retries; once room appears both queued AMs go out in one call without a refusal.
 */
UNIO_TEST(am_rts_waits_for_room, fast)
{
	static const char *const ovr[] = { "SHM_FIFO_SIZE", "256k", NULL };
	enum { N_WAIT = 1000, RNDV_LEN = 64 * 1024 };
	unio_context_t *ctx = api_ctx(ovr);
	unio_worker_t *a = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	unio_worker_t *b = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	uint8_t (*msgs)[ROOM_LEN] = malloc(512 * ROOM_LEN);
	uint8_t *src = malloc(RNDV_LEN), *dst = malloc(RNDV_LEN);
	unio_request_t *ereq = NULL, *sreq = NULL, *rreq = NULL;
	struct unio_tl_shm_tx_stats s0, s1;
	struct unio_tl_iface *ifc;
	struct room_rx rx = { 0 };
	unsigned int n_sent = 0;
	unio_status_t st;
	unio_ep_t *ep;

	TEST_ASSERT(a != NULL && b != NULL && msgs != NULL && src != NULL && dst != NULL,
		    "setup");
	ep = api_ep_to_worker(a, b, &st);
	TEST_ASSERT(ep != NULL, "ep: %s", unio_status_string(st));
	TEST_ASSERT(api_ep_connected(a, b, ep), "ep never connected");
	TEST_ASSERT(strcmp(ep->lane.iface->driver->name, "shm") == 0, "lane %s",
		    ep->lane.iface->driver->name);
	ifc = ep->lane.iface;
	TEST_ASSERT_STATUS(unio_worker_set_am_handler(b, 3, room_cb, &rx, 0), UNIO_OK);
	/* 256 KiB of ring, 32 cells a message: about 256 go out, then one is queued */
	for (st = UNIO_OK; st == UNIO_OK && n_sent < 512; n_sent++) {
		test_fill(msgs[n_sent], ROOM_LEN, 1000 + n_sent);
		st = unio_am_send(ep, 3, NULL, 0, msgs[n_sent], ROOM_LEN, NULL, 0, &ereq);
	}
	TEST_ASSERT(st == UNIO_INPROGRESS, "eager AM %u: %s", n_sent - 1, unio_status_string(st));
	n_sent--;   /* the last one waits in the queue */
	TEST_ASSERT(n_sent >= 240 && n_sent <= 256, "%u AMs of %d bytes fit a 256 KiB ring",
		    n_sent, ROOM_LEN);
	test_fill(src, RNDV_LEN, 77);
	memset(dst, 0xee, RNDV_LEN);
	st = unio_am_send(ep, 3, NULL, 0, src, RNDV_LEN, NULL, UNIO_AM_SEND_FLAG_RNDV, &sreq);
	TEST_ASSERT(st == UNIO_INPROGRESS, "rndv am_send: %s", unio_status_string(st));
	TEST_ASSERT_EQ(a->n_am_pending, 2);
	TEST_ASSERT_STATUS(unio_tl_shm_tx_stats(ifc, &s0), UNIO_OK);
	TEST_ASSERT(s0.no_room > 0, "no refusal counted");
	for (int i = 0; i < N_WAIT; i++)
		unio_worker_progress(a);
	TEST_ASSERT_STATUS(unio_tl_shm_tx_stats(ifc, &s1), UNIO_OK);
	TEST_ASSERT_EQ(a->n_am_pending, 2);
	TEST_ASSERT(s1.no_room == s0.no_room, "%" PRIu64 " sends refused while waiting",
		    s1.no_room - s0.no_room);
	TEST_ASSERT(s1.waits - s0.waits == N_WAIT, "%" PRIu64 " retries skipped, not %d",
		    s1.waits - s0.waits, N_WAIT);
	TEST_ASSERT(rx.eager == 0, "delivered without receiver progress");
	/* the receiver drains the ring; it publishes its tail once it finds it empty */
	for (int i = 0; i < 100000 && rx.eager < n_sent; i++)
		unio_worker_progress(b);
	TEST_ASSERT(rx.eager == n_sent && rx.bad == 0 && rx.rndv == 0,
		    "%u of %u eager AMs, %u bad, %u rndv", rx.eager, n_sent, rx.bad, rx.rndv);
	unio_worker_progress(b);   /* finds the ring empty: publishes */
	unio_worker_progress(a);
	TEST_ASSERT_STATUS(unio_tl_shm_tx_stats(ifc, &s0), UNIO_OK);
	TEST_ASSERT_EQ(a->n_am_pending, 0);
	TEST_ASSERT(s0.no_room == s1.no_room, "the retry was refused %" PRIu64 " times",
		    s0.no_room - s1.no_room);
	TEST_ASSERT(s0.waits == s1.waits, "%" PRIu64 " retries skipped with room",
		    s0.waits - s1.waits);
	TEST_ASSERT_STATUS(unio_request_test(ereq, NULL), UNIO_OK);
	TEST_ASSERT(unio_request_test(sreq, NULL) == UNIO_INPROGRESS, "rndv send done early");
	for (int i = 0; i < 100000 && rx.rndv == 0; i++)
		unio_worker_progress(b);
	TEST_ASSERT(rx.eager == n_sent + 1 && rx.bad == 0 && rx.rndv == 1 &&
		    rx.rndv_len == RNDV_LEN, "%u eager, %u bad, %u rndv of %zu bytes", rx.eager,
		    rx.bad, rx.rndv, rx.rndv_len);
	st = unio_am_recv_data(b, rx.desc, dst, RNDV_LEN, NULL, &rreq);
	TEST_ASSERT(st == UNIO_OK || st == UNIO_INPROGRESS, "recv_data: %s",
		    unio_status_string(st));
	TEST_ASSERT_STATUS(api_op_wait(b, a, st, rreq), UNIO_OK);
	TEST_ASSERT_STATUS(api_op_wait(a, b, UNIO_INPROGRESS, sreq), UNIO_OK);
	TEST_ASSERT(memcmp(dst, src, RNDV_LEN) == 0, "received bytes differ");
	TEST_ASSERT(test_checksum(dst, RNDV_LEN) == test_checksum(src, RNDV_LEN), "checksum");
	unio_request_free(ereq);
	unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
	unio_worker_destroy(b);
	unio_worker_destroy(a);
	unio_context_destroy(ctx);
	free(msgs);
	free(src);
	free(dst);
	return TEST_OK;
}
