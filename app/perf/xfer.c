/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The data phase of the active-message and RMA tests (side.c runs the control exchange
 * around it):
 * - am_lat: the client sends an AM, the server's loop echoes it on the reply ep once the
 *   progress call that ran the handler has returned (as ucx_perftest's responder);
 * - am_bw: the client keeps a window of AMs in flight, the server's handler counts them
 *   (rendezvous ones are received into a buffer);
 * - put_lat: each side maps a buffer and hands its key to the other; the client puts
 *   size bytes ending with the iteration number into the server's buffer, the server
 *   waits for that number in its own memory and puts back; the client waits likewise;
 * - put_bw / get_bw: the client puts / gets size bytes back to back (a window of requests
 *   when the transport completes later); get_lat: one get at a time.
 */

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include <rte_cycles.h>
#include <rte_pause.h>

#include "perf.h"

#define PERF_AM_ID    17
/* idle progress calls after which a passive server sleeps on the worker's event fd */
#define PERF_SLEEP_AFTER 4096
#define PERF_TAG_RKEY 0x706572666b6579ull   /* "perfkey" */

struct xfer_state;

/* A rendezvous AM being received: several may be in flight, and complete in any order. */
struct am_slot {
	struct xfer_state *xs;
	uint64_t idx;           /* its index in send order: what its payload was filled with */
	size_t len;
	unio_ep_t *reply;
	uint8_t *buf;           /* its own buffer with -V, else the shared one */
	bool busy;
};

struct xfer_state {
	struct perf_side *s;
	struct perf_xfer *x;
	uint8_t *buf;           /* AM: echo buffer (server, am_lat) */
	unio_ep_t *echo_ep;     /* server, am_lat: the reply ep of the echoes owed */
	size_t echo_len;        /* their size */
	uint64_t echo_owed;     /* handled, not yet echoed (serve() sends them) */
	uint8_t *rbuf;          /* AM: where rendezvous data lands without -V */
	uint64_t got;           /* AMs handled */
	uint64_t bad;           /* first bad AM + 1 */
	uint64_t prev_tsc;      /* server: when the previous message was handled */
	uint64_t arrived;       /* AMs whose handler ran: their index, in send order */
	unsigned int slot_next; /* arrived % n_slots, kept without a division */
	struct am_slot *slots;  /* AM: rendezvous receives in flight, up to the window */
	unsigned int n_slots;
	unio_mem_h memh;        /* RMA: our mapped buffer */
	uint8_t *mem;
	unio_rkey_t *rkey;      /* RMA: the peer's buffer */
	uint64_t raddr;
};

static int
xfail(const struct perf_side *s, const char *what, unio_status_t st)
{
	fprintf(stderr, "unio-perf %s: %s: %s\n", s->is_server ? "server" : "client", what,
		unio_status_string(st));
	return -1;
}

static int
timed_out(struct xfer_state *xs, uint64_t deadline)
{
	return xs->s->ep_failed || rte_rdtsc() > deadline;
}

static void
fill(uint8_t *p, size_t len, uint64_t iter)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(iter * 131 + i * 7);
}

static int
fill_ok(const uint8_t *p, size_t len, uint64_t iter)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != (uint8_t)(iter * 131 + i * 7))
			return 0;
	return 1;
}

/* A client's iteration @p i done: its time into the side's timing queue (perf.h). */
static inline void
tick(struct xfer_state *xs, uint64_t i, uint64_t *prev, uint64_t *start)
{
	uint64_t now = rte_rdtsc();

	if (i >= xs->x->warmup) {
		perf_tq_add(&xs->s->tq, &xs->s->hist, now - *prev);
		__atomic_store_n(&xs->s->live->done, i + 1 - xs->x->warmup, __ATOMIC_RELAXED);
	} else {
		*start = now;
	}
	*prev = now;
}

/*
 * Wait for @p req (when @p st is UNIO_INPROGRESS), as side.c's wait loops do: the request is
 * tested after a progress call that reported work and every 64 idle ones, and the clock read
 * only then (the timeout starts at the first such check), so that an idle turn is one
 * progress call, as ucx_perftest's is.  (It tested the request before each call and read the
 * clock after each idle one: about 30 instructions and 20 ns a turn more, in the loop where
 * the am_bw client waits for the RTRs and the ring room of its window.)
 */
static unio_status_t
req_wait(struct xfer_state *xs, unio_status_t st, unio_request_t *req)
{
	uint64_t deadline = 0, now;
	unsigned int idle = 0;

	if (st != UNIO_INPROGRESS)
		return st;
	st = unio_request_test(req, NULL);
	while (st == UNIO_INPROGRESS) {
		if (unio_worker_progress(xs->s->worker)) {
			st = unio_request_test(req, NULL);
			continue;
		}
		if (++idle % 64 != 0)
			continue;
		st = unio_request_test(req, NULL);
		if (st != UNIO_INPROGRESS || xs->s->ep_failed)
			break;
		now = rte_rdtsc();
		if (deadline == 0)
			deadline = now + xs->s->timeout_tsc;
		else if (now > deadline)
			break;
	}
	unio_request_free(req);
	return st == UNIO_INPROGRESS ? UNIO_ERR_TIMED_OUT : st;
}

/* ---- active messages ---- */

/* Server: the time between two handled messages goes into the histogram. */
static void
server_tick(struct xfer_state *xs, uint64_t i)
{
	uint64_t now = rte_rdtsc();

	if (i >= xs->x->warmup && xs->prev_tsc != 0)
		perf_tq_add(&xs->s->tq, &xs->s->hist, now - xs->prev_tsc);
	xs->prev_tsc = now;
}

/*
 * One AM fully arrived (@p d: its data, @p idx: its index in send order): check it, echo it
 * (server, am_lat), count it.
 */
static void
am_done(struct xfer_state *xs, unio_status_t st, const void *d, size_t len, unio_ep_t *reply,
	uint64_t idx)
{
	struct perf_xfer *x = xs->x;

	if (x->validate && xs->bad == 0 &&
	    (st != UNIO_OK || len != x->size || !fill_ok(d, len, idx)))
		xs->bad = idx + 1;
	if (xs->s->is_server && x->test == PERF_AM_LAT && reply != NULL) {
		/*
		 * As ucx_perftest: the handler only counts, the loop answers after the progress
		 * call (echo_owed(), serve()); the data goes back only with -V.
		 */
		if (x->validate && d != xs->buf && len > 0)
			memcpy(xs->buf, d, len);
		xs->echo_ep = reply;
		xs->echo_len = len;
		xs->echo_owed++;
	}
	if (xs->s->is_server)
		server_tick(xs, xs->got);
	xs->got++;
}

/*
 * Server, am_lat: send the echoes the handler owes, as ucx_perftest's responder does after
 * its progress call returns: from our own buffer, without the reply flag (the client needs
 * no ep back).
 */
static void
echo_owed(struct xfer_state *xs)
{
	for (; xs->echo_owed != 0; xs->echo_owed--) {
		unio_status_t st = unio_am_send(xs->echo_ep, PERF_AM_ID, NULL, 0, xs->buf,
						xs->echo_len, NULL, 0, NULL);

		if (UNIO_IS_ERR(st) && xs->bad == 0)
			xs->bad = xs->got - xs->echo_owed + 1;
	}
}

/* A rendezvous receive completed (several may be in flight: split and get ones overlap). */
static void
recv_done(unio_request_t *req, unio_status_t st, const struct unio_recv_info *info, void *arg)
{
	struct am_slot *sl = arg;

	RTE_SET_USED(info);
	sl->busy = false;
	am_done(sl->xs, st, sl->buf, sl->len, sl->reply, sl->idx);
	unio_request_free(req);
}

static unio_status_t
on_am(void *arg, const void *header, size_t hlen, void *data, size_t len,
      const struct unio_am_recv_param *p)
{
	struct xfer_state *xs = arg;
	uint64_t idx = xs->arrived++;
	struct am_slot *sl = &xs->slots[xs->slot_next];
	struct unio_request_param rp = { .field_mask = UNIO_REQ_PARAM_CB |
						       UNIO_REQ_PARAM_USER_DATA,
					 .cb = recv_done, .user_data = sl };
	unio_request_t *req = NULL;
	unio_status_t st;

	RTE_SET_USED(header), RTE_SET_USED(hlen);
	if (++xs->slot_next == xs->n_slots)
		xs->slot_next = 0;
	if (!(p->recv_attr & UNIO_AM_RECV_ATTR_FLAG_RNDV)) {
		am_done(xs, UNIO_OK, data, len, p->reply_ep, idx);
		return UNIO_OK;
	}
	if (sl->busy) {   /* more in flight than the window: the peer broke the protocol */
		if (xs->bad == 0)
			xs->bad = idx + 1;
		return UNIO_OK;
	}
	*sl = (struct am_slot){ .xs = xs, .idx = idx, .len = len, .reply = p->reply_ep,
				.buf = sl->buf, .busy = true };
	st = unio_am_recv_data(xs->s->worker, data, sl->buf, len, &rp, &req);
	if (st != UNIO_INPROGRESS) {
		sl->busy = false;
		am_done(xs, st, sl->buf, len, p->reply_ep, idx);
	}
	return UNIO_OK;
}

static int
am_client(struct xfer_state *xs)
{
	struct perf_xfer *x = xs->x;
	uint64_t total = x->warmup + x->iters, i, prev = rte_rdtsc(), start = prev;
	unio_request_t **win = calloc(x->window, sizeof(*win));
	size_t stride = x->validate ? x->size + 1 : 0;   /* validating: a buffer per slot */
	uint8_t *bufs = malloc(stride * x->window + x->size + 1), *sbuf = bufs;
	int lat = x->test == PERF_AM_LAT, rc = 0;
	unsigned int w = 0;   /* i % window, kept without a division per message */
	unio_status_t st;

	if (win == NULL || bufs == NULL) {
		free(win);
		free(bufs);
		return xfail(xs->s, "allocating buffers", UNIO_ERR_NO_MEMORY);
	}
	fill(sbuf, x->size, 0);
	for (i = 0; i < total && rc == 0 && !(*xs->s->stop && i > x->warmup); i++) {
		unio_request_t **slot = &win[w];
		uint64_t deadline = prev + xs->s->timeout_tsc;
		unsigned int idle = 0;

		if (*slot != NULL && UNIO_IS_ERR(req_wait(xs, UNIO_INPROGRESS, *slot)))
			rc = xfail(xs->s, "am send", UNIO_ERR_IO);
		*slot = NULL;
		sbuf = bufs + stride * w;
		if (++w == x->window)
			w = 0;
		if (x->validate)
			fill(sbuf, x->size, i);
		st = unio_am_send(xs->s->ep, PERF_AM_ID, NULL, 0, sbuf, x->size, NULL,
				  UNIO_AM_SEND_FLAG_REPLY, slot);
		if (st != UNIO_INPROGRESS)
			*slot = NULL;
		if (lat && st == UNIO_INPROGRESS) {
			st = req_wait(xs, st, *slot);
			*slot = NULL;
		}
		if (UNIO_IS_ERR(st))
			rc = xfail(xs->s, "am send", st);
		/* the clock is read every 64 idle calls: not between a message and its echo */
		while (rc == 0 && lat && xs->got <= i)
			if (!unio_worker_progress(xs->s->worker) && ++idle % 64 == 0 &&
			    timed_out(xs, deadline))
				rc = xfail(xs->s, "waiting for the echo", UNIO_ERR_TIMED_OUT);
		tick(xs, i, &prev, &start);
	}
	for (unsigned int k = 0; k < x->window; k++)
		if (win[k] != NULL && UNIO_IS_ERR(req_wait(xs, UNIO_INPROGRESS, win[k])) && rc == 0)
			rc = xfail(xs->s, "am send", UNIO_ERR_IO);
	x->done = !perf_tests[x->test].pingpong ? i : i > x->warmup ? i - x->warmup : 0;
	x->elapsed = prev - start;
	x->tsc_start = start;
	free(win);
	free(bufs);
	return rc;
}

/* ---- RMA ---- */

/* Send our buffer's address and key; the peer does the same. */
static unio_status_t
key_send(struct xfer_state *xs)
{
	uint64_t hdr[2] = { (uintptr_t)xs->mem, 0 };
	unio_request_t *req = NULL;
	unio_status_t st;
	uint8_t *msg;
	void *key;
	size_t klen;

	st = unio_rkey_pack(xs->memh, &key, &klen);
	if (st != UNIO_OK)
		return st;
	hdr[1] = klen;
	msg = malloc(sizeof(hdr) + klen);
	if (msg == NULL) {
		unio_rkey_buffer_release(key);
		return UNIO_ERR_NO_MEMORY;
	}
	memcpy(msg, hdr, sizeof(hdr));
	memcpy(msg + sizeof(hdr), key, klen);
	unio_rkey_buffer_release(key);
	st = unio_tag_send(xs->s->ep, msg, sizeof(hdr) + klen, PERF_TAG_RKEY, NULL, &req);
	st = req_wait(xs, st, req);
	free(msg);
	return st;
}

/*
 * A buffer of @p len bytes (64 at least) for a put or get test, allocated by the library as
 * ucx_perftest allocates both of its buffers (ucp_mem_map with UCP_MEM_MAP_ALLOCATE): the
 * target, the client's source and destination, the put_lat server's answers, the memcpy
 * reference's destination.  Page-aligned, zeroed here; NULL when the mapping failed.
 */
static uint8_t *
map_buf(struct xfer_state *xs, size_t len, unio_mem_h *memh)
{
	struct unio_mem_map_params mp = {
		.field_mask = UNIO_MEM_MAP_PARAM_LENGTH | UNIO_MEM_MAP_PARAM_FLAGS,
		.length = RTE_MAX(len, (size_t)64), .flags = UNIO_MEM_MAP_FLAG_ALLOCATE,
	};
	struct unio_mem_attr attr;

	*memh = NULL;
	if (unio_mem_map(xs->s->worker, &mp, memh) != UNIO_OK) {
		*memh = NULL;
		return NULL;
	}
	if (unio_mem_query(*memh, &attr) != UNIO_OK) {
		unio_mem_unmap(xs->s->worker, *memh);
		*memh = NULL;
		return NULL;
	}
	memset(attr.address, 0, attr.length);
	return attr.address;
}

static void
unmap_buf(struct xfer_state *xs, unio_mem_h memh)
{
	if (memh != NULL)
		unio_mem_unmap(xs->s->worker, memh);
}

static int
rkey_exchange(struct xfer_state *xs)
{
	struct unio_recv_info info = { 0 };
	struct unio_request_param rp = { .field_mask = UNIO_REQ_PARAM_RECV_INFO,
					 .recv_info = &info };
	uint8_t peer[4096];
	uint64_t hdr[2];
	unio_request_t *rreq = NULL;
	unio_status_t st, rst;

	xs->mem = map_buf(xs, xs->x->size, &xs->memh);
	if (xs->mem == NULL)
		return xfail(xs->s, "mapping the buffer", UNIO_ERR_NO_MEMORY);
	if (xs->s->is_server && (xs->x->test == PERF_GET_LAT || xs->x->test == PERF_GET_BW))
		fill(xs->mem, xs->x->size, 0);
	rst = unio_tag_recv(xs->s->worker, peer, sizeof(peer), PERF_TAG_RKEY, UINT64_MAX, &rp,
			    &rreq);
	st = key_send(xs);
	if (rst == UNIO_INPROGRESS) {
		while ((rst = unio_request_test(rreq, &info)) == UNIO_INPROGRESS &&
		       !xs->s->ep_failed)
			unio_worker_progress(xs->s->worker);
		unio_request_free(rreq);
	}
	if (st != UNIO_OK || rst != UNIO_OK || info.length < sizeof(hdr))
		return xfail(xs->s, "exchanging keys", st != UNIO_OK ? st : rst);
	memcpy(hdr, peer, sizeof(hdr));
	if (hdr[1] != info.length - sizeof(hdr))
		return xfail(xs->s, "exchanging keys", UNIO_ERR_PROTO);
	xs->raddr = hdr[0];
	st = unio_ep_rkey_unpack(xs->s->ep, peer + sizeof(hdr), hdr[1], &xs->rkey);
	return st == UNIO_OK ? 0 : xfail(xs->s, "unpacking the peer's key", st);
}

static void
rma_release(struct xfer_state *xs)
{
	unio_rkey_destroy(xs->rkey);
	unmap_buf(xs, xs->memh);
}

static unio_status_t
rma_op(struct xfer_state *xs, uint8_t *local, unio_request_t **req)
{
	if (xs->x->test == PERF_PUT_LAT || xs->x->test == PERF_PUT_BW)
		return unio_put(xs->s->ep, local, xs->x->size, xs->raddr, xs->rkey, NULL, req);
	return unio_get(xs->s->ep, local, xs->x->size, xs->raddr, xs->rkey, NULL, req);
}

/* put_lat: wait until our buffer ends with @p seq. */
static int
wait_seq(struct xfer_state *xs, uint64_t seq)
{
	volatile uint64_t *flag = (volatile uint64_t *)(xs->mem + xs->x->size - 8);
	uint64_t deadline = rte_rdtsc() + xs->s->timeout_tsc;
	unsigned int n = 0;

	while (*flag != seq) {
		rte_pause();
		if (++n % 1024 != 0)
			continue;
		unio_worker_progress(xs->s->worker);
		if (timed_out(xs, deadline))
			return xfail(xs->s, "waiting for the peer's put", UNIO_ERR_TIMED_OUT);
	}
	return 0;
}

/*
 * The reference a put or get is judged by: one core copying the same number of bytes with
 * memcpy, in the same run, from the client's buffer (the puts' source, the gets'
 * destination) into a destination mapped as the put target is (map_buf(): page-aligned,
 * hugepage-backed where the target is) and faulted in beforehand; as many copies as timed
 * operations, at most 1 GiB worth, right before the operations.  Copies are timed in
 * batches of 64 KiB or one copy, so that small sizes do not time the clock; p50 is that of
 * the batches, per copy.
 */
static void
memcpy_reference(struct xfer_state *xs, const uint8_t *src)
{
	struct perf_xfer *x = xs->x;
	uint64_t n = RTE_MIN(x->iters, (1ull << 30) / x->size);
	uint64_t k = RTE_MAX((uint64_t)(65536 / x->size), (uint64_t)1);   /* copies a batch */
	uint64_t hz = rte_get_tsc_hz(), total = 0, batches, t0, t1;
	struct perf_hist *h = malloc(sizeof(*h));
	unio_mem_h memh = NULL;
	uint8_t *dst = h != NULL ? map_buf(xs, x->size, &memh) : NULL;

	if (dst != NULL) {
		perf_hist_reset(h);
		memcpy(dst, src, x->size);   /* warm up, as the test's warm-up iterations do */
		batches = RTE_MAX(n / k, (uint64_t)10);
		for (uint64_t b = 0; b < batches; b++) {
			t0 = rte_rdtsc();
			for (uint64_t j = 0; j < k; j++) {
				memcpy(dst, src, x->size);
				__asm__ volatile("" : : "r"(dst) : "memory");   /* every copy */
			}
			t1 = rte_rdtsc();
			perf_hist_add(h, t1 - t0);
			total += t1 - t0;
		}
		x->memcpy_p50_us = (double)perf_hist_percentile(h, 0.50) / (double)k * 1e6 /
				   (double)hz;
		x->memcpy_MBps = total == 0 ? 0 : (double)x->size * (double)(k * batches) /
			((double)total / (double)hz) / (1024.0 * 1024.0);
	}
	unmap_buf(xs, memh);
	free(h);
}

static int
rma_client(struct xfer_state *xs)
{
	struct perf_xfer *x = xs->x;
	uint64_t total = x->warmup + x->iters, i, prev, start;
	unio_request_t **win = calloc(x->window, sizeof(*win));
	unio_mem_h lmemh = NULL;
	uint8_t *local = map_buf(xs, x->size, &lmemh);   /* ucx_perftest's send buffer */
	bool get = x->test == PERF_GET_LAT || x->test == PERF_GET_BW;
	unsigned int w = 0;   /* i % window, kept without a division per operation */
	int rc = 0;

	if (win == NULL || local == NULL) {
		free(win);
		unmap_buf(xs, lmemh);
		return xfail(xs->s, "allocating buffers", UNIO_ERR_NO_MEMORY);
	}
	/* a get's destination holds another pattern than the server's: -V sees a missed copy */
	fill(local, x->size, get ? 1 : 0);
	/* before the clock starts: a streaming test's time runs until the server's answer */
	memcpy_reference(xs, local);
	prev = start = rte_rdtsc();
	for (i = 0; i < total && rc == 0 && !(*xs->s->stop && i > x->warmup); i++) {
		unio_request_t **slot = &win[w];
		unio_status_t st;

		if (++w == x->window)
			w = 0;
		if (*slot != NULL && UNIO_IS_ERR(req_wait(xs, UNIO_INPROGRESS, *slot)))
			rc = xfail(xs->s, "rma", UNIO_ERR_IO);
		*slot = NULL;
		if (x->test == PERF_PUT_LAT)
			memcpy(local + x->size - 8, &(uint64_t){ i + 1 }, 8);
		st = rma_op(xs, local, slot);
		if (st != UNIO_INPROGRESS)
			*slot = NULL;
		if (x->test != PERF_PUT_BW && x->test != PERF_GET_BW && st == UNIO_INPROGRESS) {
			st = req_wait(xs, st, *slot);
			*slot = NULL;
		}
		if (UNIO_IS_ERR(st))
			rc = xfail(xs->s, "rma", st);
		if (rc == 0 && x->test == PERF_PUT_LAT)
			rc = wait_seq(xs, i + 1);
		if (rc == 0 && x->validate && x->test == PERF_GET_LAT &&
		    !fill_ok(local, x->size, 0))
			rc = xfail(xs->s, "get: payload mismatch", UNIO_ERR_PROTO);
		tick(xs, i, &prev, &start);
	}
	for (unsigned int k = 0; k < x->window; k++)
		if (win[k] != NULL && UNIO_IS_ERR(req_wait(xs, UNIO_INPROGRESS, win[k])) && rc == 0)
			rc = xfail(xs->s, "rma", UNIO_ERR_IO);
	/*
	 * put_bw, get_*: the clock stops here, every operation complete (over shm and self at
	 * the call, over tcp when the target answered), as ucx_perftest's stops after its last
	 * operation completed (its server polls and answers at once).  Not at the server's FIN
	 * (side.c, the streaming tests' end): this server sleeps, and its wake-up, tens of
	 * microseconds to a scheduler slice, was a fifth of an 8-byte put_bw run's 20,000 puts.
	 */
	if (x->test == PERF_PUT_BW || x->test == PERF_GET_BW || x->test == PERF_GET_LAT) {
		prev = rte_rdtsc();
		x->timed_end = 1;
	}
	if (rc == 0 && x->validate && x->test == PERF_GET_BW && !fill_ok(local, x->size, 0))
		rc = xfail(xs->s, "get: payload mismatch", UNIO_ERR_PROTO);
	/* as side.c counts: ping-pong tests the timed ones, the others all that were done */
	x->done = !perf_tests[x->test].pingpong ? i : i > x->warmup ? i - x->warmup : 0;
	x->elapsed = prev - start;
	x->tsc_start = start;
	free(win);
	unmap_buf(xs, lmemh);
	return rc;
}

/* ---- entry points ---- */

static int
is_am(enum perf_test t)
{
	return t == PERF_AM_LAT || t == PERF_AM_BW;
}

static int
setup(struct xfer_state *xs, struct perf_side *s, struct perf_xfer *x)
{
	memset(xs, 0, sizeof(*xs));
	xs->s = s;
	xs->x = x;
	if (x->test == PERF_PUT_LAT && x->size < 8) {
		fprintf(stderr, "unio-perf: put_lat needs sizes of at least 8 bytes\n");
		return -1;
	}
	if (!is_am(x->test))
		return rkey_exchange(xs);
	/*
	 * As ucx_perftest's responder, the server echoes from a buffer that receives never
	 * write: echoing the buffer the kernel or the driver has just filled makes the peer's
	 * copy fetch modified lines from this core's cache, a cost of the benchmark, not of
	 * the transport (about 2x at 64 KiB on an Intel host).
	 */
	xs->buf = calloc(1, x->size + 1);
	xs->rbuf = calloc(1, x->size + 1);
	xs->n_slots = RTE_MAX(x->window, 1u);
	xs->slots = calloc(xs->n_slots, sizeof(*xs->slots));
	if (xs->buf == NULL || xs->rbuf == NULL || xs->slots == NULL)
		return xfail(s, "allocating buffers", UNIO_ERR_NO_MEMORY);
	for (unsigned int k = 0; k < xs->n_slots; k++) {
		xs->slots[k].buf = x->validate ? malloc(x->size + 1) : xs->rbuf;
		if (xs->slots[k].buf == NULL)
			return xfail(s, "allocating buffers", UNIO_ERR_NO_MEMORY);
	}
	return unio_worker_set_am_handler(s->worker, PERF_AM_ID, on_am, xs, 0) == UNIO_OK ? 0 :
	       xfail(s, "setting the AM handler", UNIO_ERR_INVALID_PARAM);
}

static void
teardown(struct xfer_state *xs)
{
	if (is_am(xs->x->test))
		unio_worker_set_am_handler(xs->s->worker, PERF_AM_ID, NULL, NULL, 0);
	else
		rma_release(xs);
	for (unsigned int k = 0; xs->slots != NULL && k < xs->n_slots; k++)
		if (xs->slots[k].buf != xs->rbuf)
			free(xs->slots[k].buf);
	free(xs->slots);
	free(xs->rbuf);
	free(xs->buf);
}

int
perf_xfer_client(struct perf_side *s, struct perf_xfer *x)
{
	struct xfer_state *xs = malloc(sizeof(*xs));
	int rc;

	x->state = xs;
	if (xs == NULL)
		return xfail(s, "allocating buffers", UNIO_ERR_NO_MEMORY);
	rc = setup(xs, s, x);
	if (rc == 0)
		rc = is_am(x->test) ? am_client(xs) : rma_client(xs);
	if (rc == 0 && xs->bad != 0)
		rc = xfail(s, "the echo's payload differs", UNIO_ERR_PROTO);
	return rc;
}

/*
 * After the server's FIN: it unpacked our key before its data phase, and a get or put test
 * can end here before the server even got to that (a client done with 200 gets in a
 * millisecond, the server descheduled after sending its own key).
 */
void
perf_xfer_release(struct perf_xfer *x)
{
	if (x->state == NULL)
		return;
	teardown(x->state);
	free(x->state);
	x->state = NULL;
}

/* Server: serve until the END control message arrives. */
static int
serve(struct xfer_state *xs, unio_request_t *creq, unio_status_t cst,
      struct unio_recv_info *info)
{
	struct perf_xfer *x = xs->x;
	uint64_t seq = 1, start = rte_rdtsc();
	volatile uint64_t *flag = NULL;
	uint8_t *sbuf = NULL;
	unio_mem_h smemh = NULL;
	unsigned int idle = 0, quiet = 0;
	int rc = 0, efd = -1;

	/*
	 * put_bw, get_*: the operations need nothing from this side over shm and self (tcp's
	 * target driver does, and keeps its progress calls busy): once idle for a while, sleep
	 * on the worker's event fd until END, as ucx_perftest's server sleeps in its barrier.
	 * A polling server held CPU 0, so that the machine's other work all ran on the client's
	 * CPU (doc/guides/protocols.md, performance log 23).
	 */
	if ((x->test == PERF_PUT_BW || x->test == PERF_GET_BW || x->test == PERF_GET_LAT) &&
	    unio_worker_get_efd(xs->s->worker, &efd) != UNIO_OK)
		efd = -1;

	/*
	 * put_lat: the answer goes from a buffer of our own, as ucx_perftest's, not from the
	 * one the client just wrote (each of its lines would come from the client's core)
	 */
	if (x->test == PERF_PUT_LAT) {
		flag = (volatile uint64_t *)(xs->mem + x->size - 8);
		sbuf = map_buf(xs, x->size, &smemh);
		if (sbuf == NULL)
			rc = xfail(xs->s, "allocating buffers", UNIO_ERR_NO_MEMORY);
		else
			fill(sbuf, x->size, 0);
	}
	while (cst == UNIO_INPROGRESS && rc == 0) {
		/* the END message comes through progress: test for it then, or now and again */
		unsigned int got = unio_worker_progress(xs->s->worker);

		if (xs->echo_owed != 0)
			echo_owed(xs);
		if (got != 0 || ++idle % 64 == 0)
			cst = unio_request_test(creq, info);
		quiet = got != 0 ? 0 : quiet + 1;
		if (efd >= 0 && cst == UNIO_INPROGRESS && quiet >= PERF_SLEEP_AFTER &&
		    unio_worker_arm(xs->s->worker) == UNIO_OK) {
			struct epoll_event ev;

			epoll_wait(efd, &ev, 1, 100);   /* 100 ms at most: ep_failed is checked */
			quiet = 0;
		}
		/* put_lat: spin on the flag a while between progress calls, like the client */
		for (unsigned int n = 0; flag != NULL && n < 1024 && rc == 0; n++) {
			if (*flag != seq) {
				rte_pause();
				continue;
			}
			memcpy(sbuf + x->size - 8, &seq, 8);
			if (UNIO_IS_ERR(unio_put(xs->s->ep, sbuf, x->size, xs->raddr, xs->rkey,
						 NULL, NULL)))
				rc = xfail(xs->s, "put back", UNIO_ERR_IO);
			server_tick(xs, seq - 1);
			seq++;
			n = 0;
		}
		if (xs->s->ep_failed)
			rc = xfail(xs->s, "serving", UNIO_ERR_CONNECTION_RESET);
	}
	unmap_buf(xs, smemh);
	if (creq != NULL && cst != UNIO_INPROGRESS)
		unio_request_free(creq);
	x->received = is_am(x->test) ? xs->got : 0;
	x->elapsed = rte_rdtsc() - start;
	/* put_bw, get_*: the server sees no operation; record the mean time per planned one */
	perf_tq_flush(&xs->s->tq, &xs->s->hist);
	if (xs->s->hist.count == 0)
		perf_hist_add(&xs->s->hist, x->elapsed / (x->iters + 1) + 1);
	if (x->validate && x->test == PERF_PUT_BW && !fill_ok(xs->mem, x->size, 0))
		xs->bad = 1;
	if (xs->bad != 0)
		x->bad_iter = xs->bad - 1;
	return rc != 0 ? rc : (UNIO_IS_ERR(cst) ? xfail(xs->s, "control", cst) : 0);
}

int
perf_xfer_server(struct perf_side *s, struct perf_xfer *x)
{
	struct unio_recv_info info = { 0 };
	struct unio_request_param rp = { .field_mask = UNIO_REQ_PARAM_RECV_INFO,
					 .recv_info = &info };
	unio_request_t *creq = NULL;
	struct xfer_state xs;
	unio_status_t cst;
	int rc = setup(&xs, s, x);

	if (rc == 0) {
		cst = unio_tag_recv(s->worker, x->ctrl_buf, x->ctrl_len, x->ctrl_tag, UINT64_MAX,
				    &rp, &creq);
		rc = serve(&xs, creq, cst, &info);
		x->ctrl_got = info.length;
	}
	teardown(&xs);
	return rc;
}
