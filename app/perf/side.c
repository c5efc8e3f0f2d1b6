/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * unio-perf sides: connection setup, the control exchange, and the measured loops.
 *
 * Control protocol (tag PERF_TAG_CTRL, one struct perf_ctrl per message):
 *   client START(test, size, iterations, warmup, window, flags) -> server READY(status)
 *   data phase (tag PERF_TAG_DATA), then client END(count) -> server FIN(count, status)
 *   ... one START per size ..., then client BYE.
 * The server receives data and END with exact tags, as ucx_perftest does (its END receive is
 * posted for the whole data phase, so END ends the loop wherever it is); every field the peer
 * sends is checked before use.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_cycles.h>
#include <rte_log.h>
#include <rte_pause.h>

#include "perf.h"

#define PERF_TAG_DATA 0x7065726664617461ull   /* "perfdata" */
#define PERF_TAG_CTRL 0x70657266637472ull     /* "perfctr" */
#define TAG_FULL      UINT64_MAX
#define CTRL_MAGIC    0x46525055u             /* "UPRF" */
#define CTRL_VERSION  1
#define CTRL_F_VALIDATE 1u

enum ctrl_type { CTRL_START = 1, CTRL_READY, CTRL_END, CTRL_FIN, CTRL_BYE };

struct perf_ctrl {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t test;
	uint32_t window;
	uint64_t size;
	uint64_t iters;
	uint64_t warmup;
	uint64_t count;
	int32_t status;
	uint32_t flags;
};

/* What one size's data phase needs. */
struct perf_round {
	enum perf_test test;
	size_t size;
	uint64_t iters;
	uint64_t warmup;
	unsigned int window;
	int validate;
	uint64_t done;          /* timed iterations completed */
	uint64_t received;      /* server: data messages received, warmup included */
	uint64_t elapsed;       /* TSC cycles of the timed part */
	uint64_t tsc_start;     /* client streaming: when the first timed message went */
	uint64_t bad_iter;      /* first payload mismatch, UINT64_MAX when none */
	double memcpy_p50_us;   /* client, put_* / get_*: the same-run memcpy reference */
	double memcpy_MBps;
};

static const char *
side_name(const struct perf_side *s)
{
	return s->is_server ? "server" : "client";
}

static int
fail(const struct perf_side *s, const char *what, unio_status_t st)
{
	fprintf(stderr, "unio-perf %s: %s: %s\n", side_name(s), what, unio_status_string(st));
	return -1;
}

/* ---- payload pattern: derived from (iteration, size), checked by the receiver ---- */

static uint64_t
pattern_seed(uint64_t iter, size_t size)
{
	return (iter + 1) * 0x9e3779b97f4a7c15ull ^ ((uint64_t)size << 17);
}

static uint64_t
pattern_next(uint64_t *x)
{
	*x += 0x9e3779b97f4a7c15ull;
	return *x ^ (*x >> 31);
}

static void
pattern_fill(void *buf, size_t len, uint64_t iter)
{
	uint64_t x = pattern_seed(iter, len), w;
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		w = pattern_next(&x);
		memcpy(p + i, &w, 8);
	}
	w = pattern_next(&x);
	for (; i < len; i++)
		p[i] = (uint8_t)(w >> (8 * (i & 7)));
}

static int
pattern_ok(const void *buf, size_t len, uint64_t iter)
{
	uint64_t x = pattern_seed(iter, len), w;
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		w = pattern_next(&x);
		if (memcmp(p + i, &w, 8) != 0)
			return 0;
	}
	w = pattern_next(&x);
	for (; i < len; i++)
		if (p[i] != (uint8_t)(w >> (8 * (i & 7))))
			return 0;
	return 1;
}

/* ---- requests ---- */

static void
drop(struct perf_side *s, unio_request_t *req)
{
	if (req == NULL)
		return;
	unio_request_cancel(s->worker, req);
	unio_request_free(req);
}

/*
 * Timeouts of the wait loops.  The clock is read once every SPIN_CHECK progress calls that
 * found nothing to do, not around each call: a TSC read costs about 20 ns on this kind of VM,
 * as much as an idle progress call, and reading it after a call that delivered a message (to
 * restart the timeout) delayed the answer of a ping-pong by that much.  ucx_perftest's wait
 * loops read no clock.  The timeout starts at the first check.
 */
#define SPIN_CHECK 64u

struct spin {
	uint64_t deadline;   /**< 0: not started */
	unsigned int idle;
};

/* something happened: the timeout starts again */
static inline void
spin_busy(struct spin *sp)
{
	sp->deadline = 0;
}

/* one more idle call: true once the timeout has passed */
static inline int
spin_expired(const struct perf_side *s, struct spin *sp)
{
	uint64_t now;

	if (++sp->idle % SPIN_CHECK != 0)
		return 0;
	now = rte_rdtsc();
	if (sp->deadline == 0) {
		sp->deadline = now + s->timeout_tsc;
		return 0;
	}
	return now > sp->deadline;
}

/*
 * A request completes inside a progress call that reports work: the wait loops test it after
 * such a call (and, in case, every SPIN_CHECK idle calls), so that an idle turn of the loop is
 * one progress call, as ucx_perftest's is one progress call and a flag test.
 */
static inline int
spin_recheck(const struct spin *sp)
{
	return sp->idle % SPIN_CHECK == 0;
}

/*
 * Progress until @p req completes, the endpoint fails, or nothing completes in time; @p req
 * is released either way (unio_request_test_free() once it completed: one call, not a test
 * and a free, between a message's arrival and what the loop does next).
 */
static unio_status_t
wait_req(struct perf_side *s, unio_request_t *req, struct unio_recv_info *info)
{
	struct spin sp = { 0, 0 };
	unio_status_t st = unio_request_test_free(req, info);

	while (st == UNIO_INPROGRESS) {
		if (unio_worker_progress(s->worker)) {
			st = unio_request_test_free(req, info);
			continue;
		}
		if (s->ep_failed) {
			st = s->ep_status < 0 ? s->ep_status : UNIO_ERR_CONNECTION_RESET;
			drop(s, req);
			break;
		}
		if (spin_expired(s, &sp)) {
			st = UNIO_ERR_TIMED_OUT;
			drop(s, req);
			break;
		}
		if (spin_recheck(&sp))
			st = unio_request_test_free(req, info);
	}
	return st;
}

/*
 * Progress until *@p reqp or the END receive @p creq completes (a NULL one is not waited
 * for).  Returns the status of *@p reqp, UNIO_INPROGRESS when END came first, or an error
 * (failed endpoint, nothing completed in time).  A *@p reqp that completed is released
 * (unio_request_test_free()) and *@p reqp set to NULL; @p creq is not freed.
 */
static unio_status_t
wait_either(struct perf_side *s, unio_request_t **reqp, struct unio_recv_info *info,
	    unio_request_t *creq, struct unio_recv_info *cinfo, int *ctrl_done)
{
	unio_request_t *req = *reqp;
	struct spin sp = { 0, 0 };
	unio_status_t st, cst;
	int test = 1;

	for (;;) {
		if (test) {
			if (req != NULL &&
			    (st = unio_request_test_free(req, info)) != UNIO_INPROGRESS) {
				*reqp = NULL;
				return st;
			}
			cst = unio_request_test(creq, cinfo);
			if (cst != UNIO_INPROGRESS) {
				*ctrl_done = 1;
				return UNIO_IS_ERR(cst) ? cst : UNIO_INPROGRESS;
			}
		}
		if (unio_worker_progress(s->worker)) {
			spin_busy(&sp);
			test = 1;
			continue;
		}
		if (s->ep_failed)
			return s->ep_status < 0 ? s->ep_status : UNIO_ERR_CONNECTION_RESET;
		if (spin_expired(s, &sp))
			return UNIO_ERR_TIMED_OUT;
		test = spin_recheck(&sp);
	}
}

/* Finish what a post started: UNIO_OK (done), UNIO_INPROGRESS (wait), or an error. */
static unio_status_t
finish(struct perf_side *s, unio_status_t st, unio_request_t *req, struct unio_recv_info *info)
{
	return st == UNIO_INPROGRESS ? wait_req(s, req, info) : st;
}

static unio_status_t
send_once(struct perf_side *s, const void *buf, size_t len, uint64_t tag, int sync,
	  unio_request_t **req)
{
	*req = NULL;
	if (sync)
		return unio_tag_send_sync(s->ep, buf, len, tag, NULL, req);
	return unio_tag_send(s->ep, buf, len, tag, NULL, req);
}

/*
 * A transient UNIO_ERR_NO_RESOURCE is retried after progress, within the timeout: out of
 * line, so that a send that goes at once saves no register for the loop (the loop's six
 * saves and restores were on the path from a message's arrival to its answer).
 */
static __rte_noinline unio_status_t
post_send_retry(struct perf_side *s, const void *buf, size_t len, uint64_t tag, int sync,
		unio_request_t **req)
{
	unio_status_t st = UNIO_ERR_NO_RESOURCE;
	struct spin sp = { 0, 0 };

	while (st == UNIO_ERR_NO_RESOURCE && !s->ep_failed && !spin_expired(s, &sp)) {
		unio_worker_progress(s->worker);
		st = send_once(s, buf, len, tag, sync, req);
	}
	return st == UNIO_ERR_NO_RESOURCE ? UNIO_ERR_TIMED_OUT : st;
}

/* Send; a transient UNIO_ERR_NO_RESOURCE is retried (post_send_retry()). */
static inline unio_status_t
post_send(struct perf_side *s, const void *buf, size_t len, uint64_t tag, int sync,
	  unio_request_t **req)
{
	unio_status_t st = send_once(s, buf, len, tag, sync, req);

	if (likely(st != UNIO_ERR_NO_RESOURCE))
		return st;
	return post_send_retry(s, buf, len, tag, sync, req);
}

static unio_status_t
post_recv(struct perf_side *s, void *buf, size_t len, uint64_t tag, uint64_t mask,
	  struct unio_recv_info *info, unio_request_t **req)
{
	struct unio_request_param p = {
		.field_mask = UNIO_REQ_PARAM_RECV_INFO,
		.recv_info = info,
	};

	*req = NULL;
	return unio_tag_recv(s->worker, buf, len, tag, mask, &p, req);
}

/* ---- control messages ---- */

static int
ctrl_send(struct perf_side *s, struct perf_ctrl *c, uint16_t type)
{
	unio_request_t *req;
	unio_status_t st;

	c->magic = CTRL_MAGIC;
	c->version = CTRL_VERSION;
	c->type = type;
	st = post_send(s, c, sizeof(*c), PERF_TAG_CTRL, 0, &req);
	st = finish(s, st, req, NULL);
	return UNIO_IS_ERR(st) ? fail(s, "sending a control message", st) : 0;
}

static int
ctrl_check(const struct perf_side *s, const struct perf_ctrl *c, size_t len, uint16_t want)
{
	if (len != sizeof(*c) || c->magic != CTRL_MAGIC || c->version != CTRL_VERSION) {
		fprintf(stderr, "unio-perf %s: malformed control message from the peer "
			"(length %zu, magic 0x%x, version %u)\n", side_name(s), len,
			len >= 8 ? c->magic : 0, len >= 8 ? c->version : 0);
		return -1;
	}
	if (want != 0 && c->type != want) {
		fprintf(stderr, "unio-perf %s: unexpected control message %u (wanted %u)\n",
			side_name(s), c->type, want);
		return -1;
	}
	return 0;
}

static int
ctrl_recv(struct perf_side *s, struct perf_ctrl *c, uint16_t want)
{
	struct unio_recv_info info = { 0 };
	unio_request_t *req;
	unio_status_t st;

	memset(c, 0, sizeof(*c));
	st = post_recv(s, c, sizeof(*c), PERF_TAG_CTRL, TAG_FULL, &info, &req);
	st = finish(s, st, req, &info);
	if (UNIO_IS_ERR(st))
		return fail(s, "waiting for a control message", st);
	return ctrl_check(s, c, info.length, want);
}

/* ---- measured loops ---- */

struct timer {
	uint64_t prev;
	uint64_t start;
	uint64_t next_live;
	uint64_t live_done;
	uint64_t live_tsc;
};

/* Without a live line the next one is due never: one comparison a tick decides. */
static void
timer_init(const struct perf_side *s, struct timer *t)
{
	t->prev = rte_rdtsc();
	t->start = t->prev;
	t->next_live = s->quiet || s->o->final_only || s->o->csv ? UINT64_MAX :
		       t->prev + rte_get_tsc_hz();
	t->live_tsc = t->prev;
	t->live_done = 0;
}

/* The live line, once a second: out of line, so that a tick saves no register for it. */
static __rte_noinline void
timer_live(const struct perf_side *s, const struct perf_round *r, struct timer *t, uint64_t now)
{
	perf_live_print(stdout, r->test, s->live, &t->live_done, &t->live_tsc);
	t->next_live = now + rte_get_tsc_hz();
}

/* Account timed iteration @p i, done at @p now; true when the live line is due. */
static inline bool
timer_count(struct perf_side *s, struct perf_round *r, struct timer *t, uint64_t i,
	    uint64_t now)
{
	perf_tq_add(&s->tq, &s->hist, now - t->prev);
	__atomic_store_n(&s->live->done, i + 1 - r->warmup, __ATOMIC_RELAXED);
	t->prev = now;
	return now >= t->next_live;
}

/* Account iteration @p i (warmup ones only move the clock). */
static inline void
timer_tick(struct perf_side *s, struct perf_round *r, struct timer *t, uint64_t i)
{
	uint64_t now = rte_rdtsc();

	if (likely(i >= r->warmup)) {
		if (unlikely(timer_count(s, r, t, i, now)))
			timer_live(s, r, t, now);
	} else {
		t->start = now;
		t->prev = now;
	}
}

/* "stop" ends a size early, once at least one timed iteration is done. */
static int
stopped(const struct perf_side *s, const struct perf_round *r, uint64_t i)
{
	return *s->stop && i > r->warmup;
}

static void *
buf_alloc(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, RTE_MAX(len, (size_t)64)) != 0)
		return NULL;
	memset(p, 0, RTE_MAX(len, (size_t)64));
	return p;
}

static int
recv_len_ok(struct perf_side *s, const struct unio_recv_info *info, size_t want, uint64_t i)
{
	if (info->length == want)
		return 1;
	fprintf(stderr, "unio-perf %s: iteration %" PRIu64 ": received %zu bytes, expected "
		"%zu\n", side_name(s), i, info->length, want);
	return 0;
}

/*
 * Client ping-pong: send, post the receive for the echo, wait for both.  The receive is
 * posted while the message is in flight (as ucx_perftest does), not before the send: a
 * round trip is far longer than posting a receive, so the echo still finds it posted.
 */
static int
client_pingpong_one(struct perf_side *s, struct perf_round *r, void *sbuf, void *rbuf,
		    uint64_t i)
{
	struct unio_recv_info info = { 0 };
	unio_request_t *rreq, *sreq;
	unio_status_t rst, st;

	st = post_send(s, sbuf, r->size, PERF_TAG_DATA, perf_tests[r->test].sync, &sreq);
	if (UNIO_IS_ERR(st))
		return fail(s, "send", st);
	rst = post_recv(s, rbuf, r->size, PERF_TAG_DATA, TAG_FULL, &info, &rreq);
	if (UNIO_IS_ERR(rst)) {
		drop(s, st == UNIO_INPROGRESS ? sreq : NULL);
		return fail(s, "posting a receive", rst);
	}
	st = finish(s, st, sreq, NULL);
	if (UNIO_IS_ERR(st)) {
		drop(s, rreq);
		return fail(s, "send", st);
	}
	rst = finish(s, rst, rreq, &info);
	if (UNIO_IS_ERR(rst))
		return fail(s, "receiving the echo", rst);
	if (!recv_len_ok(s, &info, r->size, i))
		return -1;
	if (r->validate && !pattern_ok(rbuf, r->size, i)) {
		fprintf(stderr, "unio-perf client: payload mismatch in the echo of iteration "
			"%" PRIu64 " (size %zu)\n", i, r->size);
		return -1;
	}
	return 0;
}

static int
client_pingpong(struct perf_side *s, struct perf_round *r)
{
	void *sbuf = buf_alloc(r->size), *rbuf = buf_alloc(r->size);
	uint64_t total = r->warmup + r->iters, i;
	struct timer t;
	int rc = 0;

	if (sbuf == NULL || rbuf == NULL) {
		rc = fail(s, "allocating buffers", UNIO_ERR_NO_MEMORY);
		goto free_bufs;
	}
	pattern_fill(sbuf, r->size, 0);
	timer_init(s, &t);
	for (i = 0; i < total && !stopped(s, r, i); i++) {
		if (r->validate)
			pattern_fill(sbuf, r->size, i);
		rc = client_pingpong_one(s, r, sbuf, rbuf, i);
		if (rc != 0)
			break;
		timer_tick(s, r, &t, i);
	}
	r->done = i > r->warmup ? i - r->warmup : 0;
	r->elapsed = t.prev - t.start;
free_bufs:
	free(sbuf);
	free(rbuf);
	return rc;
}

/*
 * The END receive of a server's data phase: posted first, with its own exact tag, so that the
 * data receives can use the exact data tag (as ucx_perftest's do).  An END that is already
 * there completes at once: *done is set.
 */
static int
ctrl_post(struct perf_side *s, struct perf_ctrl *end, struct unio_recv_info *cinfo,
	  unio_request_t **creq, int *done)
{
	unio_status_t st = post_recv(s, end, sizeof(*end), PERF_TAG_CTRL, TAG_FULL, cinfo, creq);

	if (UNIO_IS_ERR(st))
		return fail(s, "posting the END receive", st);
	*done = st == UNIO_OK;
	return 0;
}

/* END arrived: check it, release its request. */
static int
ctrl_end(struct perf_side *s, struct perf_ctrl *end, const struct unio_recv_info *cinfo,
	 unio_request_t *creq)
{
	unio_request_free(creq);
	return ctrl_check(s, end, cinfo->length, CTRL_END);
}

/*
 * Server ping-pong: wait for a message, echo it, then post the next receive (the client's
 * next message cannot come before the echo has reached it).
 */
static int
server_pingpong(struct perf_side *s, struct perf_round *r, struct perf_ctrl *end)
{
	size_t len = r->size;
	void *buf[2] = { buf_alloc(len), buf_alloc(len) };
	/* Without -V the echo goes from a buffer no receive writes, as ucx_perftest's does. */
	void *echo = r->validate ? NULL : buf_alloc(len);
	struct unio_recv_info info[2] = { { 0 }, { 0 } }, cinfo = { 0 };
	unio_status_t st[2];
	unio_request_t *req[2] = { NULL, NULL }, *sreq, *creq = NULL;
	unsigned int cur = 0;
	int ctrl_done = 0;
	struct timer t;
	uint64_t i;
	int rc = -1;

	if (buf[0] == NULL || buf[1] == NULL || (!r->validate && echo == NULL)) {
		fail(s, "allocating buffers", UNIO_ERR_NO_MEMORY);
		goto free_bufs;
	}
	if (ctrl_post(s, end, &cinfo, &creq, &ctrl_done) != 0)
		goto free_bufs;
	timer_init(s, &t);
	st[0] = post_recv(s, buf[0], len, PERF_TAG_DATA, TAG_FULL, &info[0], &req[0]);
	for (i = 0;; i++) {
		unio_status_t sst;

		if (st[cur] == UNIO_INPROGRESS && !ctrl_done) {
			st[cur] = wait_either(s, &req[cur], &info[cur], creq, &cinfo, &ctrl_done);
			if (st[cur] != UNIO_INPROGRESS) {   /* NULL already when it completed */
				drop(s, req[cur]);
				req[cur] = NULL;
			}
		}
		if (ctrl_done && st[cur] == UNIO_INPROGRESS) {
			rc = ctrl_end(s, end, &cinfo, creq);
			creq = NULL;
			break;
		}
		if (UNIO_IS_ERR(st[cur])) {
			fail(s, "receive", st[cur]);
			goto free_bufs;
		}
		if (!recv_len_ok(s, &info[cur], r->size, i))
			goto free_bufs;
		if (r->validate && r->bad_iter == UINT64_MAX && !pattern_ok(buf[cur], r->size, i))
			r->bad_iter = i;
		sst = post_send(s, echo != NULL ? echo : buf[cur], r->size, PERF_TAG_DATA,
				perf_tests[r->test].sync, &sreq);
		st[cur ^ 1] = post_recv(s, buf[cur ^ 1], len, PERF_TAG_DATA, TAG_FULL,
					&info[cur ^ 1], &req[cur ^ 1]);
		sst = finish(s, sst, sreq, NULL);
		if (UNIO_IS_ERR(sst)) {
			fail(s, "echo send", sst);
			goto free_bufs;
		}
		timer_tick(s, r, &t, i);
		cur ^= 1;
	}
	r->received = i;
	r->done = i > r->warmup ? i - r->warmup : 0;
	r->elapsed = t.prev - t.start;
free_bufs:
	drop(s, req[0]);
	drop(s, req[1]);
	drop(s, creq);
	free(buf[0]);
	free(buf[1]);
	free(echo);
	return rc;
}

struct stream_srv;

struct slot {
	void *buf;
	unio_request_t *req;
	unio_status_t st;
	struct unio_recv_info info;
	struct stream_srv *ss;   /**< server streaming: the loop this slot belongs to */
	uint64_t iter;           /**< server streaming: the message its receive matches */
	struct unio_request_param p;   /**< server streaming: its receives' parameters */
};

static struct slot *
slots_alloc(unsigned int n, size_t len, int own_bufs)
{
	struct slot *sl = calloc(n, sizeof(*sl));

	if (sl == NULL)
		return NULL;
	for (unsigned int k = 0; k < n; k++) {
		sl[k].buf = (own_bufs || k == 0) ? buf_alloc(len) : sl[0].buf;
		if (sl[k].buf == NULL) {
			for (unsigned int j = 0; j < k; j++)
				if (own_bufs || j == 0)
					free(sl[j].buf);
			free(sl);
			return NULL;
		}
	}
	return sl;
}

static void
slots_free(struct perf_side *s, struct slot *sl, unsigned int n, int own_bufs)
{
	if (sl == NULL)
		return;
	for (unsigned int k = 0; k < n; k++) {
		drop(s, sl[k].req);
		if (own_bufs || k == 0)
			free(sl[k].buf);
	}
	free(sl);
}

/* Client streaming: keep up to window sends in flight, one buffer each when validating. */
static int
client_stream(struct perf_side *s, struct perf_round *r)
{
	struct slot *sl = slots_alloc(r->window, r->size, r->validate);
	uint64_t total = r->warmup + r->iters, i;
	unsigned int ki = 0;   /* i modulo the window, without a division per message */
	unio_status_t st;
	struct timer t;
	int rc = 0;

	if (sl == NULL)
		return fail(s, "allocating buffers", UNIO_ERR_NO_MEMORY);
	pattern_fill(sl[0].buf, r->size, 0);
	timer_init(s, &t);
	for (i = 0; i < total && !stopped(s, r, i); i++, ki = ki + 1 == r->window ? 0 : ki + 1) {
		struct slot *k = &sl[ki];

		if (k->req != NULL) {
			st = wait_req(s, k->req, NULL);
			k->req = NULL;
			if (UNIO_IS_ERR(st)) {
				rc = fail(s, "send", st);
				break;
			}
		}
		if (r->validate)
			pattern_fill(k->buf, r->size, i);
		st = post_send(s, k->buf, r->size, PERF_TAG_DATA, 0, &k->req);
		if (UNIO_IS_ERR(st)) {
			rc = fail(s, "send", st);
			break;
		}
		timer_tick(s, r, &t, i);
	}
	for (unsigned int k = 0; k < r->window && rc == 0; k++) {
		if (sl[k].req == NULL)
			continue;
		st = wait_req(s, sl[k].req, NULL);
		sl[k].req = NULL;
		if (UNIO_IS_ERR(st))
			rc = fail(s, "send", st);
	}
	r->done = i;
	r->tsc_start = t.start;
	slots_free(s, sl, r->window, r->validate);
	return rc;
}

/*
 * Server streaming, the way ucx_perftest receives: up to the window of receives posted with
 * the exact data tag, each completed by its callback (which counts, checks and frees it), a
 * new one posted whenever the window has room.  Receives of one tag match in the order they
 * were posted, so the k-th receive gets the k-th message.  Without validation they share one
 * buffer, as the client's sends do (and as ucx_perftest's receives do): a window of large
 * messages stays in cache, as it does for the sender.
 */
struct stream_srv {
	struct perf_side *s;
	struct perf_round *r;
	struct timer t;
	uint64_t got;              /**< messages received (and checked), in order */
	uint64_t fast_from;        /**< the callback's fast path from this one (never with -V) */
	unsigned int outstanding;  /**< receives posted, not complete */
	unio_status_t err;         /**< first failed receive */
	int bad;                   /**< a message of the wrong length */
};

static void
stream_got(struct stream_srv *ss, struct slot *k, unio_status_t st,
	   const struct unio_recv_info *info)
{
	struct perf_round *r = ss->r;
	uint64_t j;

	if (UNIO_IS_ERR(st)) {
		if (st != UNIO_ERR_CANCELED && ss->err == UNIO_OK)
			ss->err = st;
		return;
	}
	j = ss->got++;
	if (!ss->bad && !recv_len_ok(ss->s, info, r->size, j))
		ss->bad = 1;
	/* receives match in the order they were posted, but may complete out of it */
	if (r->validate && r->bad_iter == UINT64_MAX && !pattern_ok(k->buf, r->size, k->iter))
		r->bad_iter = k->iter;
	timer_tick(ss->s, r, &ss->t, j);
}

/* stream_recv_cb() of a receive that failed, is checked, or is not timed */
static __rte_noinline void
stream_recv_checked(unio_request_t *req, unio_status_t st, const struct unio_recv_info *info,
		    struct slot *k)
{
	k->req = NULL;
	k->ss->outstanding--;
	stream_got(k->ss, k, st, info);
	unio_request_free(req);
}

/* stream_recv_cb() when the live line is due */
static __rte_noinline void
stream_recv_live(unio_request_t *req, struct stream_srv *ss, uint64_t now)
{
	timer_live(ss->s, ss->r, &ss->t, now);
	unio_request_free(req);
}

/*
 * What stream_got() does, for a timed message of the right length without validation: the
 * other cases, and the live line, by tail calls, so that the callback saves one register, not
 * six.
 */
static void
stream_recv_cb(unio_request_t *req, unio_status_t st, const struct unio_recv_info *info,
	       void *arg)
{
	struct slot *k = arg;
	struct stream_srv *ss = k->ss;
	struct perf_round *r = ss->r;
	uint64_t j = ss->got;

	if (unlikely(st != UNIO_OK || info->length != r->size || j < ss->fast_from)) {
		stream_recv_checked(req, st, info, k);
		return;
	}
	k->req = NULL;
	ss->outstanding--;
	ss->got = j + 1;
	if (unlikely(timer_count(ss->s, r, &ss->t, j, rte_rdtsc()))) {
		stream_recv_live(req, ss, ss->t.prev);
		return;
	}
	unio_request_free(req);
}

static int
server_stream(struct perf_side *s, struct perf_round *r, struct perf_ctrl *end)
{
	struct slot *sl = slots_alloc(r->window, r->size, r->validate);
	struct stream_srv ss = { .s = s, .r = r, .err = UNIO_OK,
				 .fast_from = r->validate ? UINT64_MAX : r->warmup };
	uint64_t total = r->warmup + r->iters, posted = 0, deadline;
	unsigned int pk = 0;   /* posted modulo the window, without a division per receive */
	struct spin sp = { 0, 0 };
	struct unio_recv_info cinfo = { 0 };
	unio_request_t *creq = NULL;
	int ctrl_done = 0, rc = -1;
	unio_status_t cst;

	if (sl == NULL)
		return fail(s, "allocating buffers", UNIO_ERR_NO_MEMORY);
	for (unsigned int k = 0; k < r->window; k++) {
		sl[k].ss = &ss;
		sl[k].p = (struct unio_request_param){
			.field_mask = UNIO_REQ_PARAM_CB | UNIO_REQ_PARAM_USER_DATA |
				      UNIO_REQ_PARAM_RECV_INFO,
			.cb = stream_recv_cb, .user_data = &sl[k], .recv_info = &sl[k].info,
		};
	}
	if (ctrl_post(s, end, &cinfo, &creq, &ctrl_done) != 0)
		goto out;
	timer_init(s, &ss.t);
	/*
	 * END comes after the last data message: once it has matched, every data message has
	 * too, or waits unexpected for a receive; receives beyond END's count never complete.
	 */
	while (!ctrl_done || ss.got < end->count) {
		if (ss.err != UNIO_OK || ss.bad)
			break;
		/*
		 * The next slot in turn, once its receive completed: with the auto rendezvous
		 * scheme on one host, a get can complete before a pipelined receive posted
		 * earlier (protocols.md, "Get or pipeline by measure").
		 */
		if (ss.outstanding < r->window && posted < total && sl[pk].req == NULL) {
			struct slot *k = &sl[pk];
			unio_status_t st;

			k->iter = posted;
			st = unio_tag_recv(s->worker, k->buf, r->size, PERF_TAG_DATA, TAG_FULL,
					   &k->p, &k->req);
			posted++;
			pk = pk + 1 == r->window ? 0 : pk + 1;
			if (st == UNIO_INPROGRESS)
				ss.outstanding++;
			else
				stream_got(&ss, k, st, &k->info);
			continue;
		}
		if (!ctrl_done && (cst = unio_request_test(creq, &cinfo)) != UNIO_INPROGRESS) {
			if (UNIO_IS_ERR(cst)) {
				fail(s, "receiving END", cst);
				goto out;
			}
			ctrl_done = 1;
			if (ctrl_end(s, end, &cinfo, creq) != 0) {
				creq = NULL;
				goto out;
			}
			creq = NULL;
			continue;
		}
		if (ctrl_done && end->count > total) {
			fprintf(stderr, "unio-perf server: END counts %" PRIu64 " messages, more "
				"than the %" PRIu64 " announced\n", end->count, total);
			goto out;
		}
		if (unio_worker_progress(s->worker)) {
			spin_busy(&sp);
			continue;
		}
		if (s->ep_failed) {
			ss.err = s->ep_status < 0 ? s->ep_status : UNIO_ERR_CONNECTION_RESET;
			break;
		}
		if (spin_expired(s, &sp)) {
			ss.err = UNIO_ERR_TIMED_OUT;
			break;
		}
	}
	if (ss.err != UNIO_OK)
		fail(s, "receive", ss.err);
	else if (!ss.bad)
		rc = 0;
	r->received = ss.got;
	r->done = ss.got > r->warmup ? ss.got - r->warmup : 0;
	r->elapsed = ss.t.prev - ss.t.start;
out:
	/* receives still posted (END came early, or an error): their callbacks free them */
	for (unsigned int k = 0; k < r->window; k++)
		if (sl[k].req != NULL)
			unio_request_cancel(s->worker, sl[k].req);
	/* matched ones cannot be cancelled: let them finish before their buffers go */
	deadline = rte_rdtsc() + s->timeout_tsc;
	while (ss.outstanding != 0 && !s->ep_failed && rte_rdtsc() < deadline)
		unio_worker_progress(s->worker);
	drop(s, creq);
	slots_free(s, sl, r->window, r->validate);
	return rc;
}

/* ---- one size ---- */

static void
record(struct perf_side *s, const struct perf_round *r)
{
	struct perf_result *res = &s->results[s->n_results];

	perf_tq_flush(&s->tq, &s->hist);   /* the loop is over */
	perf_result_fill(res, &s->hist, r->test, r->size, r->done, r->elapsed,
			 rte_get_tsc_hz());
	res->memcpy_p50_us = r->memcpy_p50_us;
	res->memcpy_MBps = r->memcpy_MBps;
	__atomic_store_n(&s->n_results, s->n_results + 1, __ATOMIC_RELEASE);
	if (s->quiet)
		return;
	if (s->o->final_only) {
		perf_print_final_line(stdout, res);
	} else if (!s->o->csv) {
		if (s->n_results == 1)
			perf_print_header(stdout);
		perf_print_row(stdout, res);
		perf_print_memcpy(stdout, res);
	}
	fflush(stdout);
}

static void
live_begin(struct perf_side *s, const struct perf_round *r, unsigned int idx)
{
	__atomic_store_n(&s->live->done, 0, __ATOMIC_RELAXED);
	s->live->total = r->iters;
	s->live->size = r->size;
	s->live->size_idx = idx;
	s->live->tsc_start = rte_rdtsc();
	perf_hist_reset(&s->hist);
	s->tq.n = 0;
}

/* ---- am_* / put_* / get_*: the data phase lives in xfer.c ---- */

static int
is_xfer(enum perf_test t)
{
	return t >= PERF_AM_LAT;
}

/* The data phase; @p x keeps the buffer the server has a key of (perf_xfer_release()). */
static int
client_xfer(struct perf_side *s, struct perf_round *r, struct perf_xfer *x)
{
	int rc;

	*x = (struct perf_xfer){ .test = r->test, .size = r->size, .iters = r->iters,
				 .warmup = r->warmup, .window = r->window,
				 .validate = r->validate };
	rc = perf_xfer_client(s, x);
	r->done = x->done;
	r->elapsed = x->elapsed;
	r->tsc_start = x->tsc_start;
	r->memcpy_p50_us = x->memcpy_p50_us;
	r->memcpy_MBps = x->memcpy_MBps;
	return rc;
}

static int
server_xfer(struct perf_side *s, struct perf_round *r, struct perf_ctrl *end)
{
	struct perf_xfer x = { .test = r->test, .size = r->size, .iters = r->iters,
			       .warmup = r->warmup, .window = r->window,
			       .validate = r->validate, .ctrl_tag = PERF_TAG_CTRL,
			       .ctrl_buf = end, .ctrl_len = sizeof(*end),
			       .bad_iter = UINT64_MAX };

	if (perf_xfer_server(s, &x) != 0 || ctrl_check(s, end, x.ctrl_got, CTRL_END) != 0)
		return -1;
	r->received = r->test <= PERF_AM_BW ? x.received : end->count;
	r->bad_iter = x.bad_iter;
	r->done = r->received > r->warmup ? r->received - r->warmup : 0;
	r->elapsed = x.elapsed;
	return 0;
}

/* The data phase of one size, then END -> FIN; @p fin gets the server's verdict. */
static int
client_round(struct perf_side *s, struct perf_round *r, struct perf_ctrl *fin)
{
	struct perf_ctrl end = { 0 };
	int pingpong = perf_tests[r->test].pingpong;
	struct perf_xfer x = { .state = NULL };
	uint64_t sent;
	int rc;

	if (is_xfer(r->test) ? client_xfer(s, r, &x) != 0 :
	    (pingpong ? client_pingpong(s, r) : client_stream(s, r)) != 0) {
		perf_xfer_release(&x);
		return -1;
	}
	sent = pingpong ? r->warmup + r->done : r->done;
	end.count = sent;
	rc = ctrl_send(s, &end, CTRL_END) != 0 || ctrl_recv(s, fin, CTRL_FIN) != 0 ? -1 : 0;
	perf_xfer_release(&x);   /* the server is done with our key once FIN came */
	if (rc != 0)
		return -1;
	if (!pingpong) {
		/* streaming: the clock stops when the server has seen everything (one-sided
		 * tests: when the last operation completed, xfer.c) */
		r->done = sent > r->warmup ? sent - r->warmup : 0;
		if (!x.timed_end)
			r->elapsed = rte_rdtsc() - r->tsc_start;
	}
	return 0;
}

static int
client_size(struct perf_side *s, unsigned int idx)
{
	const struct perf_opts *o = s->o;
	struct perf_round r = {
		.test = o->test, .size = o->sizes[idx], .iters = o->iters,
		.warmup = o->warmup, .window = o->window, .validate = o->validate,
		.bad_iter = UINT64_MAX,
	};
	struct perf_ctrl c = {
		.test = o->test, .window = o->window, .size = o->sizes[idx], .iters = o->iters,
		.warmup = o->warmup, .flags = o->validate ? CTRL_F_VALIDATE : 0,
	};

	live_begin(s, &r, idx);
	if (ctrl_send(s, &c, CTRL_START) != 0 || ctrl_recv(s, &c, CTRL_READY) != 0)
		return -1;
	if (c.status != UNIO_OK)
		return fail(s, "the server refused the test", (unio_status_t)c.status);
	if (client_round(s, &r, &c) != 0)
		return -1;
	if (c.status != UNIO_OK) {
		fprintf(stderr, "unio-perf client: size %zu: the server reports a payload "
			"mismatch or a lost message (%s)\n", r.size,
			unio_status_string((unio_status_t)c.status));
		return -1;
	}
	record(s, &r);
	return 0;
}

int
perf_run_client(struct perf_side *s)
{
	struct perf_ctrl bye = { 0 };
	int rc = 0;

	for (unsigned int i = 0; i < s->o->n_sizes && rc == 0 && !(*s->stop && i > 0); i++)
		rc = client_size(s, i);
	__atomic_store_n(&s->live->running, 0, __ATOMIC_RELAXED);
	if (rc == 0)
		rc = ctrl_send(s, &bye, CTRL_BYE);
	return rc;
}

/* Check a START from the peer; returns the READY status. */
static unio_status_t
start_check(const struct perf_ctrl *c, struct perf_round *r)
{
	if (c->test >= PERF_TEST_COUNT || !perf_tests[c->test].supported)
		return UNIO_ERR_UNSUPPORTED;
	if (c->size == 0 || c->size > PERF_MAX_MSG || c->iters == 0 || c->window == 0 ||
	    c->window > PERF_MAX_WINDOW || c->warmup > UINT64_MAX / 2 ||
	    c->iters > UINT64_MAX / 2 || (c->flags & ~CTRL_F_VALIDATE) != 0)
		return UNIO_ERR_INVALID_PARAM;
	*r = (struct perf_round){
		.test = (enum perf_test)c->test, .size = (size_t)c->size, .iters = c->iters,
		.warmup = c->warmup, .window = c->window,
		.validate = (c->flags & CTRL_F_VALIDATE) != 0, .bad_iter = UINT64_MAX,
	};
	return UNIO_OK;
}

static int
server_size(struct perf_side *s, const struct perf_ctrl *start)
{
	struct perf_ctrl c = { 0 }, end = { 0 };
	struct perf_round r;
	int rc;

	c.status = start_check(start, &r);
	if (ctrl_send(s, &c, CTRL_READY) != 0)
		return -1;
	if (c.status != UNIO_OK)
		return fail(s, "refused a test request", (unio_status_t)c.status);
	if (s->n_results >= PERF_MAX_SIZES)
		return fail(s, "too many sizes", UNIO_ERR_NO_RESOURCE);
	live_begin(s, &r, s->n_results);
	rc = is_xfer(r.test) ? server_xfer(s, &r, &end) :
	     perf_tests[r.test].pingpong ? server_pingpong(s, &r, &end) :
					    server_stream(s, &r, &end);
	if (rc != 0)
		return -1;
	c.status = UNIO_OK;
	c.count = r.received;
	if (end.count != r.received) {
		fprintf(stderr, "unio-perf server: size %zu: the client sent %" PRIu64
			" messages, %" PRIu64 " arrived\n", r.size, end.count, r.received);
		c.status = UNIO_ERR_PROTO;
	}
	if (r.bad_iter != UINT64_MAX) {
		fprintf(stderr, "unio-perf server: size %zu: payload mismatch at iteration %"
			PRIu64 "\n", r.size, r.bad_iter);
		c.status = UNIO_ERR_PROTO;
	}
	if (ctrl_send(s, &c, CTRL_FIN) != 0 || c.status != UNIO_OK)
		return -1;
	record(s, &r);
	return 0;
}

int
perf_run_server(struct perf_side *s)
{
	struct perf_ctrl c;

	for (;;) {
		if (ctrl_recv(s, &c, 0) != 0)
			return -1;
		if (c.type == CTRL_BYE)
			return 0;
		if (c.type != CTRL_START) {
			fprintf(stderr, "unio-perf server: unexpected control message %u\n",
				c.type);
			return -1;
		}
		if (server_size(s, &c) != 0)
			return -1;
	}
}

/* ---- setup and teardown ---- */

static void
ep_error(void *arg, unio_ep_t *ep, unio_status_t status)
{
	struct perf_side *s = arg;

	RTE_SET_USED(ep);
	s->ep_status = status;
	s->ep_failed = 1;
}

int
perf_side_open(struct perf_side *s)
{
	struct unio_context_params cp = {
		.field_mask = UNIO_CONTEXT_PARAM_FEATURES | UNIO_CONTEXT_PARAM_NAME,
		/* WAKEUP: the server of a put_bw / get_* test sleeps (xfer.c serve()) */
		.features = UNIO_FEATURE_TAG | UNIO_FEATURE_AM | UNIO_FEATURE_RMA |
			    UNIO_FEATURE_WAKEUP,
		.name = s->is_server ? "unio-perf-server" : "unio-perf",
	};
	unio_status_t st = UNIO_OK;

	s->timeout_tsc = (uint64_t)(s->o->timeout_s * (double)rte_get_tsc_hz());
	perf_hist_reset(&s->hist);
	s->tq.n = 0;
	s->ctx = unio_context_create(&cp, &st);
	if (s->ctx == NULL)
		return fail(s, "creating the context", st);
	s->worker = unio_worker_create(s->ctx, NULL, &st);
	if (s->worker == NULL)
		return fail(s, "creating the worker", st);
	return 0;
}

static void
conn_handler(unio_conn_request_t *req, void *arg)
{
	struct perf_side *s = arg;

	if (s->conn_req == NULL)
		s->conn_req = req;
	else
		unio_listener_reject(s->listener, req);   /* one client at a time */
}

static int
server_listen(struct perf_side *s)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct sockaddr_storage bound;
	struct unio_listener_params lp = {
		.field_mask = UNIO_LISTENER_PARAM_SOCKADDR | UNIO_LISTENER_PARAM_HANDLER,
		.sockaddr = (const struct sockaddr *)&sa,
		.addrlen = sizeof(sa),
		.conn_handler = conn_handler,
		.arg = s,
	};
	unio_status_t st = UNIO_OK;

	sa.sin_port = htons(s->o->loopback ? 0 : s->o->port);
	sa.sin_addr.s_addr = htonl(s->o->loopback ? INADDR_LOOPBACK : INADDR_ANY);
	if (!s->o->loopback && s->o->listen_addr != NULL)
		inet_pton(AF_INET, s->o->listen_addr, &sa.sin_addr);
	s->listener = unio_listener_create(s->worker, &lp, &st);
	if (s->listener == NULL) {
		char what[64];

		snprintf(what, sizeof(what), "listening on %s port %u",
			 s->o->listen_addr != NULL ? s->o->listen_addr : "any address",
			 ntohs(sa.sin_port));
		return fail(s, what, st);
	}
	st = unio_listener_query(s->listener, &bound);
	if (st != UNIO_OK)
		return fail(s, "querying the listener", st);
	s->bound_port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
	__atomic_store_n(&s->listening, 1, __ATOMIC_RELEASE);
	return 0;
}

int
perf_server_accept(struct perf_side *s)
{
	struct unio_ep_params ep = {
		.field_mask = UNIO_EP_PARAM_CONN_REQUEST | UNIO_EP_PARAM_ERR_HANDLER,
		.err_handler = ep_error,
		.err_arg = s,
	};
	unio_status_t st = UNIO_OK;

	if (server_listen(s) != 0)
		return -1;
	if (!s->quiet) {
		printf("unio-perf: waiting for a connection on port %u\n", s->bound_port);
		fflush(stdout);
	}
	while (s->conn_req == NULL && !*s->stop)
		if (!unio_worker_progress(s->worker))
			rte_pause();
	if (s->conn_req == NULL)
		return fail(s, "stopped before a client connected", UNIO_ERR_CANCELED);
	ep.conn_request = s->conn_req;
	s->ep = unio_ep_create(s->worker, &ep, &st);
	if (s->ep == NULL)
		return fail(s, "accepting the connection", st);
	return 0;
}

/*
 * unio_ep_create() by socket address, said once when it fails: the tool's line carries the
 * library's reason (UNIO_EP_PARAM_ERR_INFO, which also keeps the library from saying it
 * again at warning level) and, for a refused connection, what to do.  The reason is "connect
 * to IP port P: why": the tool names the host as it was given, then the why.
 */
static unio_ep_t *
connect_said_once(unio_worker_t *w, struct unio_ep_params *p, const char *host,
		  uint16_t port, unio_status_t *st)
{
	struct unio_ep_error err = { .status = UNIO_OK };
	const char *why;
	unio_ep_t *ep;
	size_t head;

	p->field_mask |= UNIO_EP_PARAM_ERR_INFO;
	p->err_info = &err;
	ep = unio_ep_create(w, p, st);
	if (ep != NULL)
		return ep;
	head = strlen("connect to ") + strlen(err.peer) + 2;
	why = err.peer[0] != '\0' && strlen(err.reason) > head ? err.reason + head :
	      unio_status_string(*st);
	fprintf(stderr, "unio-perf client: cannot connect to %s port %u: %s%s\n", host, port,
		why, err.sys_errno == ECONNREFUSED ?
		": no server listens there; start it first, the client does not retry" : "");
	return NULL;
}

int
perf_client_connect(struct perf_side *s, uint16_t port)
{
	const char *host = s->o->host != NULL ? s->o->host : "127.0.0.1";
	/* IPv4 only, as the server listens: "localhost" resolved to ::1 first found nobody */
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct unio_ep_params ep = {
		.field_mask = UNIO_EP_PARAM_SOCKADDR | UNIO_EP_PARAM_ERR_HANDLER,
		.err_handler = ep_error,
		.err_arg = s,
	};
	struct addrinfo *ai = NULL;
	unio_status_t st = UNIO_OK;
	char svc[8];
	int gai;

	snprintf(svc, sizeof(svc), "%u", port);
	gai = getaddrinfo(host, svc, &hints, &ai);
	if (gai != 0) {
		fprintf(stderr, "unio-perf client: cannot resolve '%s' to an IPv4 address (the "
			"server listens on IPv4): %s\n", host, gai_strerror(gai));
		return -1;
	}
	ep.sockaddr = ai->ai_addr;
	ep.addrlen = ai->ai_addrlen;
	s->ep = connect_said_once(s->worker, &ep, host, port, &st);
	freeaddrinfo(ai);
	return s->ep != NULL ? 0 : -1;
}

void
perf_side_close(struct perf_side *s)
{
	unio_request_t *req = NULL;
	unio_status_t st;

	if (s->ep != NULL) {
		if (s->o->ep_info)
			unio_ep_print_info(s->ep, stderr);
		st = unio_ep_close(s->ep, s->ep_failed ? UNIO_EP_CLOSE_FORCE : UNIO_EP_CLOSE_FLUSH,
				   &req);
		if (st == UNIO_INPROGRESS)
			wait_req(s, req, NULL);
		s->ep = NULL;
	}
	unio_listener_destroy(s->listener);
	s->listener = NULL;
	unio_worker_destroy(s->worker);
	s->worker = NULL;
	unio_context_destroy(s->ctx);
	s->ctx = NULL;
}

/* The end-of-run report: CSV and JSON (the table rows were printed as sizes finished). */
void
perf_report(const struct perf_side *s)
{
	if (!s->quiet && s->o->csv)
		perf_print_csv(stdout, s->results, s->n_results);
	fflush(stdout);
}
