/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shm driver: processes on one host.  See shm_priv.h for the segment and ring layout.
 * This file has the fast path (send into a peer's ring, poll the rings in use), ep creation
 * (claim a ring slot in the peer's segment), peer liveness, and the driver registration.
 */

#include <errno.h>
#include <inttypes.h>
#include <linux/membarrier.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "shm_priv.h"
#include "unio_memcpy.h"

RTE_LOG_REGISTER(shm_logtype, unio.drv.shm, WARNING);

static inline struct shm_iface *
shm_iface_of(struct unio_tl_iface *iface)
{
	return (struct shm_iface *)iface;
}

static inline uint64_t *
cell_word(uint8_t *ring, uint64_t pos)
{
	return (uint64_t *)(void *)(ring + pos * SHM_CELL);
}

/* ---- wakeup ---- */

/*
 * Where an ep's armed pointer points when the plain load is not enough: always set, so that
 * every send takes shm_wake(), which fences first (the peer has no membarrier, or this
 * process could not register for it).
 */
static const uint64_t shm_wake_always = 1;

/* this process registered for MEMBARRIER_CMD_GLOBAL_EXPEDITED: 0 unknown, 1 yes, -1 no */
static int shm_mb_registered;

static int
shm_membarrier(int cmd)
{
#ifdef SYS_membarrier
	return (int)syscall(SYS_membarrier, cmd, 0, 0);
#else
	RTE_SET_USED(cmd);
	errno = ENOSYS;
	return -1;
#endif
}

/* a sender's stores must be visible to a receiver that arms without them fencing */
static bool
shm_mb_register(void)
{
	int v = __atomic_load_n(&shm_mb_registered, __ATOMIC_ACQUIRE);

	if (v == 0) {
		int q = shm_membarrier(MEMBARRIER_CMD_QUERY);

		v = q >= 0 && (q & MEMBARRIER_CMD_GLOBAL_EXPEDITED) &&
		    shm_membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0 ? 1 : -1;
		__atomic_store_n(&shm_mb_registered, v, __ATOMIC_RELEASE);
	}
	return v > 0;
}

/* the peer armed (or the plain load is not enough): wake it once, the winner of the exchange */
static __rte_noinline void
shm_wake(struct shm_ep *ep)
{
	uint64_t *armed = &ep->peer_hdr->armed, one = 1;

	if (ep->wake_fence) {
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(armed, __ATOMIC_RELAXED) == 0)
			return;
	}
	if (ep->ev_fd >= 0 && __atomic_exchange_n(armed, 0, __ATOMIC_ACQ_REL) != 0 &&
	    write(ep->ev_fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
		SHM_LOG(DEBUG, "eventfd write to pid %d: %s", (int)ep->peer_pid, strerror(errno));
}

/* a peer's pidfd in the iface's event fd: its death wakes a sleeping worker */
static void
poll_watch(struct shm_iface *si, int fd, bool on)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	if (si->poll_fd >= 0 && fd >= 0)
		epoll_ctl(si->poll_fd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, fd, &ev);
}

/* ---- send ---- */

/*
 * out of credit: read the consumer's tail; a dead or closed peer fails the send.  A refusal
 * remembers the tail it saw: until the consumer publishes another, no retry can succeed
 * (room at one tail only shrinks), and shm_ep_room_freed() tells the protocol's queues so.
 */
static __rte_noinline unio_status_t
credit_slow(struct shm_ep *ep, uint64_t need)
{
	if (ep->dead || __atomic_load_n(&ep->peer_hdr->closed, __ATOMIC_ACQUIRE))
		return UNIO_ERR_CONNECTION_RESET;
	ep->cached_tail = __atomic_load_n(ep->tail, __ATOMIC_ACQUIRE);
	if (ep->head + need - ep->cached_tail > ep->credit_cells) {
		ep->refused = true;
		ep->refused_tail = ep->cached_tail;
		shm_iface_of(ep->super.iface)->tx_no_room++;
		return UNIO_ERR_NO_RESOURCE;
	}
	return UNIO_OK;
}

/*
 * A queued send's test before its retry: one load of the consumer's tail line, which stays
 * in this core's cache until the consumer publishes.  Once room may have appeared the flag
 * goes (the retry sets it again if it fails).
 */
bool
shm_ep_room_freed(struct unio_tl_ep *tl_ep)
{
	struct shm_ep *ep = (struct shm_ep *)tl_ep;

	if (!ep->refused)
		return true;
	if (!ep->dead && __atomic_load_n(ep->tail, __ATOMIC_RELAXED) == ep->refused_tail &&
	    !__atomic_load_n(&ep->peer_hdr->closed, __ATOMIC_RELAXED)) {
		shm_iface_of(ep->super.iface)->tx_waits++;
		return false;
	}
	ep->refused = false;
	return true;
}

/*
 * Room for a message of @p cells cells at the head, contiguous: when it would cross the
 * ring's end, a PAD header skips to the start.  Returns the first cell or NULL.
 */
static inline uint8_t *
ring_reserve(struct shm_ep *ep, uint64_t cells, unio_status_t *st)
{
	uint64_t pos = ep->head & ep->mask;
	uint64_t pad = pos + cells > ep->n_cells ? ep->n_cells - pos : 0;

	if (unlikely(ep->head + pad + cells - ep->cached_tail > ep->credit_cells)) {
		*st = credit_slow(ep, pad + cells);
		if (*st != UNIO_OK)
			return NULL;
	}
	if (unlikely(pad != 0)) {
		__atomic_store_n(cell_word(ep->ring, pos),
				 shm_hdr_word(SHM_TYPE_PAD, 0, (uint32_t)pad), __ATOMIC_RELEASE);
		ep->head += pad;
		pos = 0;
	}
	return ep->ring + pos * SHM_CELL;
}

/* cells of a message of @p len data bytes: the 8-byte header word, then the data */
static inline uint64_t
msg_cells(size_t len)
{
	return (sizeof(uint64_t) + len + SHM_CELL - 1) / SHM_CELL;
}

/*
 * The header word last, with release: the receiver sees the data once it sees the header.
 * Then one load of the peer's armed word: a receiver asleep in epoll is woken.
 */
static inline void
ring_publish(struct shm_ep *ep, uint8_t *cell, uint8_t id, size_t len)
{
	__atomic_store_n((uint64_t *)(void *)cell, shm_hdr_word(SHM_TYPE_MSG, id, (uint32_t)len),
			 __ATOMIC_RELEASE);
	ep->head += msg_cells(len);
	/*
	 * The compiler must not hoist the load above the store (C allows it for a release
	 * store); the CPU's store-load order is the receiver's membarrier's job.  No code.
	 */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (unlikely(__atomic_load_n(ep->armed, __ATOMIC_RELAXED) != 0))
		shm_wake(ep);
}

/*
 * The payload of a short message (@p len > 0): up to 16 bytes with a few moves (two
 * overlapping ones), not a call into the C library's memcpy; longer ones with memcpy.
 */
static inline void
copy_short(uint8_t *dst, const void *src, size_t len)
{
	const uint8_t *s = src;
	uint64_t a, b;
	uint32_t c, d;

	if (len - 8 <= 8) {   /* 8 to 16 bytes */
		memcpy(&a, s, 8);
		memcpy(&b, s + len - 8, 8);
		memcpy(dst, &a, 8);
		memcpy(dst + len - 8, &b, 8);
	} else if (len > 16) {
		memcpy(dst, s, len);
	} else if (len >= 4) {
		memcpy(&c, s, 4);
		memcpy(&d, s + len - 4, 4);
		memcpy(dst, &c, 4);
		memcpy(dst + len - 4, &d, 4);
	} else {
		for (size_t i = 0; i < len; i++)
			dst[i] = s[i];
	}
}

/* am_short off the fast path: a longer payload, a PAD to write first, or no cached credit */
static __rte_noinline unio_status_t
am_short_slow(struct shm_ep *ep, uint8_t id, uint64_t hdr, const void *payload, size_t len)
{
	unio_status_t st;
	uint8_t *cell = ring_reserve(ep, msg_cells(sizeof(hdr) + len), &st);

	if (unlikely(cell == NULL))
		return st;
	memcpy(cell + 8, &hdr, sizeof(hdr));
	if (len != 0)
		copy_short(cell + 16, payload, len);
	ring_publish(ep, cell, id, sizeof(hdr) + len);
	return UNIO_OK;
}

static __rte_noinline unio_status_t
wake_ok(struct shm_ep *ep)
{
	shm_wake(ep);
	return UNIO_OK;
}

/*
 * The fast path (up to 16 bytes of payload, the cells before the ring's end, credit cached)
 * calls nothing but by a tail call, so that it saves no registers: an 8-byte tagged message
 * or AM is this and one 32-byte cell.
 */
static unio_status_t
shm_am_short(struct unio_tl_ep *tl_ep, uint8_t id, uint64_t hdr, const void *payload,
	     size_t len)
{
	struct shm_ep *ep = (struct shm_ep *)tl_ep;
	uint64_t cells = msg_cells(sizeof(hdr) + len);
	uint64_t pos = ep->head & ep->mask;
	uint8_t *cell;

	if (unlikely(len > 16 || pos + cells > ep->n_cells ||
		     ep->head + cells - ep->cached_tail > ep->credit_cells))
		return am_short_slow(ep, id, hdr, payload, len);
	cell = ep->ring + pos * SHM_CELL;
	memcpy(cell + 8, &hdr, sizeof(hdr));
	if (len != 0)
		copy_short(cell + 16, payload, len);
	__atomic_store_n((uint64_t *)(void *)cell,
			 shm_hdr_word(SHM_TYPE_MSG, id, (uint32_t)(sizeof(hdr) + len)),
			 __ATOMIC_RELEASE);
	ep->head += cells;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);   /* as in ring_publish() */
	if (unlikely(__atomic_load_n(ep->armed, __ATOMIC_RELAXED) != 0))
		return wake_ok(ep);
	return UNIO_OK;
}

static ssize_t
shm_am_bcopy(struct unio_tl_ep *tl_ep, uint8_t id, unio_tl_pack_cb_t pack, void *arg,
	     unsigned int flags)
{
	struct shm_ep *ep = (struct shm_ep *)tl_ep;
	struct shm_iface *si = shm_iface_of(tl_ep->iface);
	unio_status_t st;
	uint8_t *cell;
	size_t len;

	RTE_SET_USED(flags);
	/* the length is known only after packing: reserve the largest message */
	cell = ring_reserve(ep, msg_cells(si->max_data), &st);
	if (unlikely(cell == NULL))
		return st;
	len = pack(cell + 8, arg);
	RTE_VERIFY(len <= si->max_data);
	ring_publish(ep, cell, id, len);
	return (ssize_t)len;
}

static unio_status_t
shm_am_zcopy(struct unio_tl_ep *tl_ep, uint8_t id, const void *hdr, size_t hdr_len,
	     const struct iovec *iov, size_t iovcnt, unsigned int flags,
	     struct unio_tl_completion *comp)
{
	struct shm_ep *ep = (struct shm_ep *)tl_ep;
	size_t len = hdr_len, off;
	unio_status_t st;
	uint8_t *cell;

	RTE_SET_USED(flags), RTE_SET_USED(comp);
	for (size_t i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (len > shm_iface_of(tl_ep->iface)->max_data)
		return UNIO_ERR_INVALID_PARAM;
	cell = ring_reserve(ep, msg_cells(len), &st);
	if (unlikely(cell == NULL))
		return st;
	if (hdr_len != 0)
		memcpy(cell + 8, hdr, hdr_len);
	off = 8 + hdr_len;
	for (size_t i = 0; i < iovcnt; off += iov[i].iov_len, i++)   /* staging: cached */
		unio_memcpy_part(cell + off, iov[i].iov_base, iov[i].iov_len, 0);
	ring_publish(ep, cell, id, len);
	return UNIO_OK;   /* copied into the peer's ring: the buffer is free already */
}

static unio_status_t
shm_flush(struct unio_tl_ep *tl_ep, struct unio_tl_completion *comp)
{
	RTE_SET_USED(comp);
	/* every send and put/get is complete in the peer's memory when it returns */
	return ((struct shm_ep *)tl_ep)->dead ? UNIO_ERR_CONNECTION_RESET : UNIO_OK;
}

/* ---- receive ---- */

/* where a dropped ring's "next" points: always empty, so polling skips it */
static uint64_t idle_word;
static uint64_t *const idle_next = &idle_word;

/*
 * The worker's "anything there?" word (unio_tl_iface.poll_word): with one sender, its ring's
 * next header word, through the ring's own pointer (which moves with every message); with
 * none, a word that stays 0; with several, none (progress is called every time).  Set again
 * whenever the set of rings changes.
 */
static unsigned int shm_deliver(struct unio_tl_iface *iface);
static unsigned int shm_deliver_one(struct unio_tl_iface *iface);

/*
 * With one sender the worker calls iface_deliver only when that ring's header word is set:
 * shm_deliver_one() goes to the ring without looking for it.
 */
static void
rx_poll_word_set(struct shm_iface *si)
{
	si->super.poll_word = si->n_active == 0 ? &idle_next :
			      si->n_active == 1 ? (uint64_t *const *)&si->active[0].next : NULL;
	si->super.ops.iface_deliver = si->n_active == 1 ? shm_deliver_one : shm_deliver;
}

static void
ring_broken(struct shm_iface *si, struct shm_rx_ring *r, uint64_t w)
{
	SHM_LOG(ERR, "%s: malformed message header %#" PRIx64 " from pid %d: ring dropped",
		si->super.dev_name, w, (int)r->pid);
	r->broken = true;
	r->next = &idle_word;
}

/* zero the header words of a consumed message's (or PAD's) @p cells cells from r->next on */
static __rte_always_inline void
ring_zero(struct shm_rx_ring *r, uint64_t cells)
{
	uint64_t *c = r->next;

	for (uint64_t i = 0; i < cells; i++, c += SHM_CELL / sizeof(*c))
		*c = 0;
}

/* give the credit back (the consumer's tail) when half a ring or more was consumed */
static __rte_always_inline void
ring_credit_half(struct shm_rx_ring *r, uint64_t half)
{
	if (r->tail - r->published >= half) {
		__atomic_store_n(&r->ctl->tail, r->tail, __ATOMIC_RELEASE);
		r->published = r->tail;
	}
}

/*
 * Not a message with a valid AM id: a PAD to skip (true), or a malformed header (false, ring
 * dropped).
 */
static __rte_noinline bool
ring_skip(struct shm_iface *si, struct shm_rx_ring *r, uint64_t w)
{
	uint64_t pos = r->tail & si->mask;

	if (w >> 40 != ((SHM_HDR_MAGIC << 8) | SHM_TYPE_PAD) || (uint32_t)w != si->n_cells - pos) {
		ring_broken(si, r, w);
		return false;
	}
	r->tail++;                           /* r->next is the PAD's cell */
	ring_zero(r, 1);
	ring_credit_half(r, si->n_cells / 2);
	r->tail += (uint32_t)w - 1;
	r->next = cell_word(r->ring, 0);
	return true;
}

/* the header word's AM id bits: those above them must be 0 (UNIO_TL_AM_ID_MAX) */
#define SHM_ID_BITS 5

static __rte_always_inline unsigned int
ring_poll(struct shm_iface *si, struct shm_rx_ring *r)
{
	/* magic, type MSG and the id's high bits (0: the id is below UNIO_TL_AM_ID_MAX) */
	const uint64_t msg_tag = ((SHM_HDR_MAGIC << 8) | SHM_TYPE_MSG) << (8 - SHM_ID_BITS);
	unsigned int n = 0;

	RTE_BUILD_BUG_ON(UNIO_TL_AM_ID_MAX != 1u << SHM_ID_BITS);
	while (n < SHM_RX_BURST) {
		uint64_t pos = r->tail & si->mask;
		uint64_t w = __atomic_load_n(r->next, __ATOMIC_ACQUIRE);
		uint32_t len = (uint32_t)w;
		uint8_t id = (uint8_t)(w >> 32);
		uint64_t cells = msg_cells(len);

		if (w == 0) {
			/* empty: give the credit back now (in a ping-pong a store to a line this
			 * core owns) */
			if (r->tail != r->published) {
				__atomic_store_n(&r->ctl->tail, r->tail, __ATOMIC_RELEASE);
				r->published = r->tail;
			}
			return n;
		}
		if (unlikely(w >> (32 + SHM_ID_BITS) != msg_tag)) {
			if (!ring_skip(si, r, w))
				return n;
			continue;
		}
		if (unlikely(len > si->max_data || pos + cells > si->n_cells)) {
			ring_broken(si, r, w);
			return n;
		}
		/*
		 * r->next is the message's first cell.  The tail moves before the handler (only
		 * this core reads it until it is published): across the call the loop keeps the
		 * cell and its count, nothing it would have to recompute.
		 */
		r->tail += cells;
		unio_tl_iface_invoke_am(&si->super, id, r->next + 1, len, 0, r->conn_id);
		ring_zero(r, cells);
		r->next = cell_word(r->ring, r->tail & si->mask);
		n++;
	}
	/*
	 * The burst limit: the ring still holds messages.  Credit goes back every half ring
	 * (checked once a burst), not at every burst: a store here would pull the line from a
	 * sender spinning on it every 16 messages.
	 */
	ring_credit_half(r, si->n_cells / 2);
	return n;
}

static __rte_noinline unsigned int shm_check_peers(struct shm_iface *si);
static __rte_noinline void rescan_slots(struct shm_iface *si);

/* rings from @p r on (@p r has a message); returns @p n plus the messages */
static __rte_noinline unsigned int
poll_rings(struct shm_iface *si, struct shm_rx_ring *r, unsigned int n)
{
	struct shm_rx_ring *end = si->active + si->n_active;

	n += ring_poll(si, r);
	while (++r < end)
		if (__atomic_load_n(r->next, __ATOMIC_RELAXED) != 0)
			n += ring_poll(si, r);
	return n;
}

/*
 * Delivery only (iface_deliver): the worker calls it when the poll word (one sender: its
 * ring's next header word) is set, and every time with several senders.  An idle ring costs
 * one load of a line that stays in this core's cache.  The receive path proper is a function
 * of its own, entered by a tail call: an idle call saves and restores no registers, a busy
 * one pays one jump.
 */
static unsigned int
shm_deliver(struct unio_tl_iface *iface)
{
	struct shm_iface *si = shm_iface_of(iface);

	for (struct shm_rx_ring *r = si->active, *end = r + si->n_active; r < end; r++)
		if (__atomic_load_n(r->next, __ATOMIC_RELAXED) != 0)
			return poll_rings(si, r, 0);
	return 0;
}

/*
 * Delivery with one sender (see rx_poll_word_set()): the worker has seen the ring's next
 * header word set.  A one-cell message (up to 24 bytes: every 8-byte tagged message or AM)
 * is consumed before its handler runs: its header word zeroed (the handler reads the
 * payload only), the tail and r->next moved on, and the tail published when half a ring was
 * consumed before this message (the cell itself goes back to the sender only with a later
 * publication, after its handler).  Across the call the function keeps one register, and
 * after it looks once more at the ring: a message behind it goes on in poll_rings(), the
 * burst of a stream.  An empty ring does not publish its tail here (ring_poll() does, and
 * the housekeeping call walks the rings with it once in WORKER_CTL_CALLS): a sender needs
 * the tail only when its cached credit runs out, half a ring later at the earliest.
 * Anything else (a longer message, a PAD, a malformed header, no message) takes the full
 * walk, poll_rings().
 */
static __rte_noinline unsigned int
shm_deliver_one(struct unio_tl_iface *iface)
{
	const uint64_t msg_tag = ((SHM_HDR_MAGIC << 8) | SHM_TYPE_MSG) << (8 - SHM_ID_BITS);
	struct shm_iface *si = shm_iface_of(iface);
	struct shm_rx_ring *r = si->active;
	uint64_t *c = r->next;
	uint64_t w = __atomic_load_n(c, __ATOMIC_ACQUIRE);
	uint64_t tail = r->tail;

	if (unlikely(w >> (32 + SHM_ID_BITS) != msg_tag ||
		     (uint32_t)w > SHM_CELL - sizeof(uint64_t)))
		return poll_rings(si, r, 0);
	*c = 0;
	r->tail = tail + 1;
	r->next = cell_word(r->ring, (tail + 1) & si->mask);
	if (unlikely(tail - r->published >= si->n_cells / 2)) {
		__atomic_store_n(&r->ctl->tail, tail, __ATOMIC_RELEASE);
		r->published = tail;
	}
	unio_tl_iface_invoke_am(&si->super, (uint8_t)(w >> 32), c + 1, (uint32_t)w, 0,
				r->conn_id);
	r = si->active;
	if (__atomic_load_n(r->next, __ATOMIC_RELAXED) != 0)
		return poll_rings(si, r, 1);
	return 1;
}

/*
 * Housekeeping, then delivery.  A worker calls it in one progress call of every
 * WORKER_CTL_CALLS and in the first after an arm (shm_deliver in the others).
 */
static unsigned int
shm_progress(struct unio_tl_iface *iface)
{
	struct shm_iface *si = shm_iface_of(iface);
	unsigned int n = 0;

	if (unlikely(si->armed)) {   /* awake again: senders stop writing the eventfd */
		si->armed = false;
		__atomic_store_n(&si->hdr->armed, 0, __ATOMIC_RELAXED);
	}
	if (unlikely(__atomic_load_n(si->gen, __ATOMIC_ACQUIRE) != si->seen_gen))
		rescan_slots(si);
	if (unlikely(--si->check_countdown == 0))   /* the clock costs ~20 ns: not each call */
		n = shm_check_peers(si);
	return n + shm_deliver(iface);
}

/* ---- ring slots on the receive side ---- */

static struct shm_slot_ctl *
slot_ctl(struct shm_seg_hdr *h, uint32_t slot)
{
	return (struct shm_slot_ctl *)(void *)((uint8_t *)h + sizeof(*h)) + slot;
}

static uint8_t *
slot_ring(struct shm_seg_hdr *h, const struct shm_geom *g, uint32_t slot)
{
	return (uint8_t *)h + g->ring_off + (size_t)slot * g->fifo_size;
}

/* give a ring back: clear every cell's first word (a dead sender may have left a message
 * without its header), reset the tail, then free the slot */
static void
slot_reclaim(struct shm_iface *si, unsigned int idx)
{
	struct shm_rx_ring *r = &si->active[idx];

	for (uint64_t i = 0; i < si->n_cells; i++)
		*cell_word(r->ring, i) = 0;
	__atomic_store_n(&r->ctl->tail, 0, __ATOMIC_RELAXED);
	/* the next sender writes its own after its claim: 0 until then (rescan_slots()) */
	__atomic_store_n(&r->ctl->sender_iface_id, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&r->ctl->state, SHM_SLOT_FREE, __ATOMIC_RELEASE);
	if (r->pidfd >= 0)
		close(r->pidfd);
	SHM_LOG(DEBUG, "%s: ring %u of pid %d reclaimed", si->super.dev_name, r->slot,
		(int)r->pid);
	si->active[idx] = si->active[--si->n_active];
	rx_poll_word_set(si);
}

static bool
slot_active(struct shm_iface *si, uint32_t slot)
{
	for (unsigned int i = 0; i < si->n_active; i++)
		if (si->active[i].slot == slot)
			return true;
	return false;
}

static void
slot_activate(struct shm_iface *si, uint32_t slot, uint64_t state, uint64_t sender_id)
{
	struct shm_rx_ring *r = &si->active[si->n_active++];

	*r = (struct shm_rx_ring){
		.ring = slot_ring(si->hdr, &si->geom, slot), .ctl = slot_ctl(si->hdr, slot),
		.conn_id = shm_conn_id(sender_id), .slot = slot, .pid = (pid_t)(state >> 8),
	};
	r->next = cell_word(r->ring, 0);
	rx_poll_word_set(si);
	r->pidfd = shm_pidfd_open(r->pid);
	poll_watch(si, r->pidfd, true);   /* closing it (slot_reclaim) takes it out */
}

/* drain what a departed sender left, then give its ring back */
static void
slot_retire(struct shm_iface *si, unsigned int idx)
{
	while (!si->active[idx].broken && ring_poll(si, &si->active[idx]) != 0)
		;
	slot_reclaim(si, idx);
}

static __rte_noinline void
rescan_slots(struct shm_iface *si)
{
	si->seen_gen = __atomic_load_n(si->gen, __ATOMIC_ACQUIRE);
	for (uint32_t s = 0; s < si->max_peers; s++) {
		struct shm_slot_ctl *c = slot_ctl(si->hdr, s);
		uint64_t st = __atomic_load_n(&c->state, __ATOMIC_ACQUIRE);
		uint64_t id;

		if ((st & 0xff) == SHM_SLOT_FREE || slot_active(si, s))
			continue;
		/*
		 * A sender writes its iface id after its claim, then bumps gen, then sends: with
		 * no id yet it has sent nothing, and the bump brings us back here.  The id names
		 * the sender to the protocol (unio_tl_conn_id_t), read once per ring.  A sender
		 * gone without one sent nothing either: its ring is taken, to be reclaimed.
		 */
		id = __atomic_load_n(&c->sender_iface_id, __ATOMIC_ACQUIRE);
		if (id != 0 || (st & 0xff) == SHM_SLOT_RELEASED ||
		    shm_pid_dead((pid_t)(st >> 8), -1))
			slot_activate(si, s, st, id);
	}
	for (unsigned int i = si->n_active; i-- > 0;) {
		uint64_t st = __atomic_load_n(&si->active[i].ctl->state, __ATOMIC_ACQUIRE);

		if ((st & 0xff) == SHM_SLOT_RELEASED)
			slot_retire(si, i);
	}
}

/* ---- peer liveness ---- */

static void
ep_mark_dead(struct shm_iface *si, struct shm_ep *ep)
{
	ep->dead = true;
	ep->credit_cells = 0;   /* every send takes the slow path, which fails */
	poll_watch(si, ep->pidfd, false);   /* reported: it no longer needs to wake anyone */
	shm_maps_forget_pid(si, ep->peer_pid);   /* its memory need not stay mapped here */
	SHM_LOG(INFO, "%s: peer pid %d is gone", si->super.dev_name, (int)ep->peer_pid);
	if (si->super.err_cb != NULL)
		si->super.err_cb(si->super.err_arg, &ep->super, UNIO_ERR_CONNECTION_RESET);
}

/* peers gone: their rings retired, their eps failed; returns how many (progress events) */
static __rte_noinline unsigned int
shm_check_peers(struct shm_iface *si)
{
	uint64_t now = rte_rdtsc();
	struct shm_ep *next;
	unsigned int n = 0;
	bool dying = false;

	si->check_countdown = SHM_CHECK_CALLS;
	if (now < si->next_check)
		return 0;
	si->next_check = now + si->check_cycles;
	/* receive side first: once an ep reports the error, the dead peer's ring is free */
	for (unsigned int i = si->n_active; i-- > 0;) {
		struct shm_rx_ring *r = &si->active[i];

		if (r->broken || shm_pid_dead(r->pid, r->pidfd)) {
			slot_retire(si, i);
			n++;
		}
	}
	/*
	 * Send side: a peer that exited or closed its iface fails its ep, but only after what
	 * it wrote before is delivered.  It may have closed (or died) after the rings were
	 * looked at above, its last messages (the ATS a send here waits for, say) still in its
	 * ring: failing the ep first completes that send with an error and drops its ATS as
	 * for an unknown request.  So: note the eps first, drain every ring, then fail them.
	 */
	for (struct shm_ep *ep = si->eps; ep != NULL; ep = ep->next) {
		if (!ep->dead && (shm_pid_dead(ep->peer_pid, ep->pidfd) ||
				  __atomic_load_n(&ep->peer_hdr->closed, __ATOMIC_ACQUIRE))) {
			ep->dying = true;
			dying = true;
		}
	}
	if (!dying)
		return n;
	for (unsigned int i = 0; i < si->n_active; i++)
		while (!si->active[i].broken && ring_poll(si, &si->active[i]) != 0)
			n++;
	for (struct shm_ep *ep = si->eps; ep != NULL; ep = next) {
		next = ep->next;   /* the error callback may destroy the ep */
		if (ep->dying) {
			ep->dying = false;
			if (!ep->dead)
				ep_mark_dead(si, ep);
			n++;
		}
	}
	return n;
}

/* ---- ep ---- */

/*
 * Everything in the peer's header is read once into local memory and checked there: the
 * peer can rewrite its header at any time, so nothing is used from it afterwards.
 */
static unio_status_t
check_peer_hdr(struct shm_ep *ep, struct shm_seg_hdr *h, const struct shm_iface_addr *a)
{
	struct shm_seg_hdr c;
	struct shm_geom *g = &ep->peer_geom;

	c.magic = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE);
	memcpy(&c, h, offsetof(struct shm_seg_hdr, closed));
	*g = (struct shm_geom){ c.max_peers, c.fifo_size, c.ring_off };
	if (c.magic != SHM_SEG_MAGIC || c.version != SHM_VERSION || c.iface_id != a->iface_id ||
	    c.seg_size != a->seg_size || g->max_peers == 0 || g->max_peers > 1024 ||
	    g->fifo_size < 4096 || !rte_is_power_of_2(g->fifo_size) ||
	    g->fifo_size > (64u << 20) ||
	    g->ring_off < sizeof(*h) + g->max_peers * sizeof(struct shm_slot_ctl) ||
	    g->ring_off + (uint64_t)g->max_peers * g->fifo_size > a->seg_size) {
		SHM_LOG(ERR, "the segment of pid %u is not a valid shm segment", a->pid);
		return UNIO_ERR_INVALID_ADDR;
	}
	return UNIO_OK;
}

static unio_status_t
map_peer_seg(struct shm_ep *ep, const struct shm_iface_addr *a)
{
	int fd = shm_open_peer_fd((pid_t)a->pid, (int)a->seg_fd, a->iface_id, a->fd_key,
				  "unio-shm-ring", a->iface_id);
	struct shm_seg_hdr *h;
	struct stat st;

	if (fd < 0) {
		/* ESRCH: the fd server is not the pid's, said where it was found (its own hint) */
		if (errno != ESRCH)
			SHM_LOG(ERR, "cannot open the segment of pid %u: %s%s", a->pid,
				strerror(errno), errno == EACCES ? " (a process of another user "
				"serves it only with UNIO_SHM_OTHER_USERS=y)" : "");
		return UNIO_ERR_UNREACHABLE;
	}
	/* a segment shorter than its address says would fault (SIGBUS) past its end */
	if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < a->seg_size ||
	    a->seg_size < sizeof(*h)) {
		SHM_LOG(ERR, "the segment of pid %u is smaller than its address says", a->pid);
		close(fd);
		return UNIO_ERR_INVALID_ADDR;
	}
	ep->peer_seg = mmap(NULL, a->seg_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (ep->peer_seg == MAP_FAILED) {
		ep->peer_seg = NULL;
		return UNIO_ERR_NO_MEMORY;
	}
	ep->peer_seg_size = a->seg_size;
	h = ep->peer_hdr = ep->peer_seg;
	return check_peer_hdr(ep, h, a);
}

static unio_status_t
claim_slot(struct shm_iface *si, struct shm_ep *ep)
{
	struct shm_seg_hdr *h = ep->peer_hdr;
	const struct shm_geom *g = &ep->peer_geom;
	uint64_t mine = ((uint64_t)getpid() << 8) | SHM_SLOT_CLAIMED;

	/* our largest message must fit a quarter of the peer's ring (UNIO_SHM_FIFO_SIZE may
	 * differ between the two processes) */
	if (msg_cells(si->max_data) > g->fifo_size / SHM_CELL / 4) {
		SHM_LOG(ERR, "the peer's FIFO (%" PRIu64 " B) is too small for %zu-byte messages: "
			"set the same UNIO_SHM_FIFO_SIZE on both sides", g->fifo_size,
			si->max_data);
		return UNIO_ERR_UNREACHABLE;
	}
	for (uint32_t s = 0; s < g->max_peers; s++) {
		struct shm_slot_ctl *c = slot_ctl(h, s);
		uint64_t free_st = SHM_SLOT_FREE;

		if (!__atomic_compare_exchange_n(&c->state, &free_st, mine, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			continue;
		/* before gen's bump: the receiver takes the ring once it reads an id */
		__atomic_store_n(&c->sender_iface_id, si->iface_id, __ATOMIC_RELAXED);
		ep->slot = c;
		ep->tail = &c->tail;
		ep->ring = slot_ring(h, g, s);
		ep->n_cells = g->fifo_size / SHM_CELL;
		ep->mask = ep->n_cells - 1;
		ep->credit_cells = ep->n_cells;
		ep->head = ep->cached_tail = __atomic_load_n(&c->tail, __ATOMIC_ACQUIRE);
		__atomic_fetch_add(&h->gen, 1, __ATOMIC_RELEASE);
		return UNIO_OK;
	}
	SHM_LOG(ERR, "all %u rings of pid %d are taken", g->max_peers, (int)ep->peer_pid);
	return UNIO_ERR_NO_RESOURCE;
}

/*
 * Take the peer's eventfd so that sends can wake it.  Checked after taking it: the segment
 * is still open, so the number still named the live eventfd (the owner closes it last).
 */
static void
ep_wake_init(struct shm_ep *ep)
{
	uint64_t fd = __atomic_load_n(&ep->peer_hdr->ev_fd, __ATOMIC_RELAXED);

	ep->wake_fence = !shm_mb_register() ||
			 __atomic_load_n(&ep->peer_hdr->wake_fence, __ATOMIC_RELAXED) != 0;
	ep->armed = ep->wake_fence ? &shm_wake_always : &ep->peer_hdr->armed;
	if (fd <= INT32_MAX)
		ep->ev_fd = shm_open_peer_efd(ep->peer_pid, ep->pidfd, (int)fd,
					      ep->peer_iface_id, ep->peer_fd_key);
	if (ep->ev_fd >= 0 && __atomic_load_n(&ep->peer_hdr->closed, __ATOMIC_ACQUIRE) != 0) {
		close(ep->ev_fd);
		ep->ev_fd = -1;
	}
	if (ep->ev_fd < 0)
		SHM_LOG(WARNING, "no eventfd of pid %d: it cannot sleep waiting for this sender",
			(int)ep->peer_pid);
}

static void
ep_free(struct shm_ep *ep)
{
	shm_ep_regs_unmap(ep);
	if (ep->ev_fd >= 0)
		close(ep->ev_fd);
	if (ep->peer_seg != NULL)
		munmap(ep->peer_seg, ep->peer_seg_size);
	if (ep->pidfd >= 0)
		close(ep->pidfd);
	free(ep);
}

static bool
shm_is_reachable(struct unio_tl_iface *iface, const void *addr, size_t len)
{
	struct shm_iface_addr a;

	RTE_SET_USED(iface);
	if (len != sizeof(a))
		return false;
	memcpy(&a, addr, sizeof(a));
	return shm_addr_same_host(&a);
}

static unio_status_t
shm_ep_create(struct unio_tl_iface *iface, const struct unio_tl_ep_params *params,
	      struct unio_tl_ep **ep_p)
{
	struct shm_iface *si = shm_iface_of(iface);
	struct shm_iface_addr a;
	struct shm_ep *ep;
	unio_status_t st;

	memcpy(&a, params->iface_addr, sizeof(a));
	if (!shm_addr_same_host(&a) || a.pid == 0 || a.seg_size > (64ull << 30))
		return UNIO_ERR_UNREACHABLE;
	if (posix_memalign((void **)&ep, RTE_CACHE_LINE_SIZE, sizeof(*ep)) != 0)
		return UNIO_ERR_NO_MEMORY;
	memset(ep, 0, sizeof(*ep));
	ep->pidfd = ep->ev_fd = -1;
	ep->armed = &shm_wake_always;   /* set for real once the peer is mapped */
	ep->peer_pid = (pid_t)a.pid;
	ep->peer_iface_id = a.iface_id;
	ep->peer_fd_key = a.fd_key;
	ep->super.conn_id = shm_conn_id(a.iface_id);
	ep->peer_regs = a.reg_table;
	ep->peer_regs_fd = a.regs_fd;
	st = map_peer_seg(ep, &a);
	if (st == UNIO_OK)
		st = claim_slot(si, ep);
	if (st != UNIO_OK) {
		ep_free(ep);
		return st;
	}
	ep->pidfd = shm_pidfd_open(ep->peer_pid);
	poll_watch(si, ep->pidfd, true);
	ep_wake_init(ep);
	ep->super.cap = iface->attr.cap;
	if (!si->cma || !shm_cma_probe(ep->peer_pid, a.probe_addr, a.iface_id))
		ep->super.cap &= ~(UNIO_TL_CAP_GET_ZCOPY | UNIO_TL_CAP_PUT_ZCOPY);
	ep->next = si->eps;
	si->eps = ep;
	*ep_p = &ep->super;
	return UNIO_OK;
}

static void
shm_ep_destroy(struct unio_tl_ep *tl_ep)
{
	struct shm_ep *ep = (struct shm_ep *)tl_ep, **pp;
	struct shm_iface *si = shm_iface_of(tl_ep->iface);

	for (pp = &si->eps; *pp != NULL; pp = &(*pp)->next)
		if (*pp == ep) {
			*pp = ep->next;
			break;
		}
	/* the receiver drains what is left in the ring, then frees the slot */
	__atomic_store_n(&ep->slot->state, ((uint64_t)getpid() << 8) | SHM_SLOT_RELEASED,
			 __ATOMIC_RELEASE);
	__atomic_fetch_add(&ep->peer_hdr->gen, 1, __ATOMIC_RELEASE);
	ep_free(ep);
}

/* ---- iface ---- */

static unio_status_t
shm_iface_query(struct unio_tl_iface *iface, struct unio_tl_iface_attr *attr)
{
	struct shm_iface *si = shm_iface_of(iface);

	memset(attr, 0, sizeof(*attr));
	attr->cap = UNIO_TL_CAP_AM_SHORT | UNIO_TL_CAP_AM_BCOPY | UNIO_TL_CAP_AM_ZCOPY |
		    UNIO_TL_CAP_RKEY_PTR | UNIO_TL_CAP_CONNECT_IFACE |
		    UNIO_TL_CAP_PEER_FAILURE | UNIO_TL_CAP_ORDERED | UNIO_TL_CAP_EVENT_FD;
	if (si->cma)
		attr->cap |= UNIO_TL_CAP_GET_ZCOPY | UNIO_TL_CAP_PUT_ZCOPY;
	attr->max_short = RTE_MIN((size_t)SHM_MAX_SHORT, si->max_data) - sizeof(uint64_t);
	attr->max_bcopy = si->max_data;
	attr->max_zcopy_hdr = SHM_ZCOPY_HDR;
	attr->max_zcopy = si->max_data - SHM_ZCOPY_HDR;
	attr->max_iov = UNIO_TL_MAX_IOV;
	attr->max_put_zcopy = 1ull << 30;
	attr->max_get_zcopy = 1ull << 30;
	attr->iface_addr_len = sizeof(struct shm_iface_addr);
	attr->rkey_packed_len = sizeof(struct shm_rkey_packed);
	attr->reach = UNIO_TL_REACH_HOST;
	/* measured with unio-tlbench on a 2-core KVM VM, AMD EPYC Zen 4 (doc/guides/drivers) */
	attr->perf = (struct unio_tl_perf){ .latency_ns = 60, .overhead_ns = 15,
					    .bandwidth_MBps = 10000, .zcopy_overhead_ns = 1000 };
	return UNIO_OK;
}

static unio_status_t
shm_get_address(struct unio_tl_iface *iface, void *addr)
{
	struct shm_iface_addr a;

	shm_local_addr(shm_iface_of(iface), &a);
	memcpy(addr, &a, sizeof(a));
	return UNIO_OK;
}

static unio_status_t
shm_event_fd(struct unio_tl_iface *iface, int *fd)
{
	*fd = shm_iface_of(iface)->poll_fd;
	return UNIO_OK;
}

/* a message waits in a ring, or a sender connected since the last progress */
static bool
rx_pending(struct shm_iface *si)
{
	if (__atomic_load_n(si->gen, __ATOMIC_ACQUIRE) != si->seen_gen)
		return true;
	for (unsigned int i = 0; i < si->n_active; i++)
		if (__atomic_load_n(si->active[i].next, __ATOMIC_ACQUIRE) != 0)
			return true;
	return false;
}

/*
 * Drain the eventfd, publish "armed", order it against every sender's last publish, then
 * look at the rings again: a message published before a sender could see the flag is found
 * here (BUSY), one published after it makes that sender write the eventfd.
 */
static unio_status_t
shm_event_arm(struct unio_tl_iface *iface)
{
	struct shm_iface *si = shm_iface_of(iface);
	struct epoll_event ev;
	uint64_t v;

	if (read(si->ev_fd, &v, sizeof(v)) < 0)
		v = 0;   /* EAGAIN: nothing was signalled */
	if (rx_pending(si))
		return UNIO_ERR_BUSY;
	if (epoll_wait(si->poll_fd, &ev, 1, 0) > 0) {   /* a peer died: look at it now */
		si->next_check = 0;
		si->check_countdown = 1;
		return UNIO_ERR_BUSY;
	}
	si->armed = true;
	__atomic_store_n(&si->hdr->armed, 1, __ATOMIC_RELAXED);
	if (!si->membarrier) {
		__atomic_thread_fence(__ATOMIC_SEQ_CST);   /* the senders fence (wake_fence) */
	} else if (shm_membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) != 0) {
		/* senders that rely on it do not fence: sleeping now could miss a message */
		si->armed = false;
		__atomic_store_n(&si->hdr->armed, 0, __ATOMIC_RELAXED);
		return UNIO_ERR_BUSY;
	}
	if (rx_pending(si)) {
		si->armed = false;
		__atomic_store_n(&si->hdr->armed, 0, __ATOMIC_RELAXED);
		return UNIO_ERR_BUSY;
	}
	return UNIO_OK;
}

static void
shm_iface_close(struct unio_tl_iface *iface)
{
	struct shm_iface *si = shm_iface_of(iface);

	while (si->eps != NULL)
		shm_ep_destroy(&si->eps->super);
	for (unsigned int i = 0; i < si->n_active; i++)
		if (si->active[i].pidfd >= 0)
			close(si->active[i].pidfd);
	shm_seg_destroy(si);
	if (si->ev_fd >= 0)
		close(si->ev_fd);   /* after the segment says closed: see ep_wake_init() */
	if (si->poll_fd >= 0)
		close(si->poll_fd);
	shm_maps_release_all(si);
	for (unsigned int i = 0; i < SHM_MAX_ALLOCS; i++)
		if (si->allocs[i].fd >= 0)
			close(si->allocs[i].fd);
	pthread_mutex_destroy(&si->lock);
	shm_regs_destroy(si);
	free(si->active);
	free(si);
}

const struct unio_tl_iface_ctl_ops shm_ctl_ops = {
	.iface_close = shm_iface_close,
	.iface_query = shm_iface_query,
	.iface_get_address = shm_get_address,
	.iface_is_reachable = shm_is_reachable,
	.iface_event_fd = shm_event_fd,
	.iface_event_arm = shm_event_arm,
	.ep_create = shm_ep_create,
	.ep_destroy = shm_ep_destroy,
	.mem_reg = shm_mem_reg,
	.mem_dereg = shm_mem_dereg,
	.mem_alloc = shm_mem_alloc,
	.mem_free = shm_mem_free,
	.rkey_pack = shm_rkey_pack,
	.rkey_unpack = shm_rkey_unpack,
	.rkey_release = shm_rkey_release,
	.ep_room_freed = shm_ep_room_freed,
};

static uint64_t
tsc_per_ms(void)
{
	struct timespec t0, t1;
	uint64_t c0, c1;
	int64_t ns;

	if (rte_get_tsc_hz() != 0)
		return rte_get_tsc_hz() / 1000;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	c0 = rte_rdtsc();
	do {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ns = (t1.tv_sec - t0.tv_sec) * 1000000000ll + (t1.tv_nsec - t0.tv_nsec);
	} while (ns < 200000);
	c1 = rte_rdtsc();
	return (c1 - c0) * 1000000ull / (uint64_t)ns;
}

static unio_status_t
iface_init(struct shm_iface *si, const struct unio_config *cfg)
{
	size_t fifo = cfg->shm_fifo_size;
	uint64_t max_cells;

	if (fifo < 4096 || fifo > (64u << 20) || !rte_is_power_of_2(fifo)) {
		SHM_LOG(ERR, "UNIO_SHM_FIFO_SIZE=%zu: a power of two from 4k to 64m", fifo);
		return UNIO_ERR_CONFIG;
	}
	si->fifo_size = fifo;
	si->max_peers = (uint32_t)cfg->shm_max_peers;
	si->n_cells = fifo / SHM_CELL;
	si->mask = si->n_cells - 1;
	/* a message takes at most a quarter of the ring, so a wrap always fits in credit */
	max_cells = si->n_cells / 4;
	si->max_data = RTE_MIN((size_t)SHM_MAX_DATA, max_cells * SHM_CELL - sizeof(uint64_t));
	si->cma = cfg->shm_cma;
	si->hugepages = cfg->hugepages;
	si->listen_fd = si->seg_fd = -1;
	si->ev_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	si->poll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (si->ev_fd < 0 || si->poll_fd < 0) {
		SHM_LOG(ERR, "eventfd / epoll: %s", strerror(errno));
		return UNIO_ERR_IO;
	}
	poll_watch(si, si->ev_fd, true);
	/* arm orders senders with membarrier when this kernel has it, else they fence */
	si->membarrier = shm_mb_register();
	for (unsigned int i = 0; i < SHM_MAX_ALLOCS; i++)
		si->allocs[i].fd = -1;
	si->check_cycles = tsc_per_ms() * SHM_CHECK_MS;
	si->next_check = rte_rdtsc() + si->check_cycles;
	si->check_countdown = SHM_CHECK_CALLS;
	si->active = calloc(si->max_peers, sizeof(*si->active));
	if (si->active == NULL)
		return UNIO_ERR_NO_MEMORY;
	rx_poll_word_set(si);
	pthread_mutex_init(&si->lock, NULL);
	return UNIO_OK;
}

static unio_status_t
shm_iface_open(const struct unio_tl_iface_params *params, struct unio_tl_iface **iface_p)
{
	struct shm_iface *si;
	unio_status_t st;

	if (posix_memalign((void **)&si, RTE_CACHE_LINE_SIZE, sizeof(*si)) != 0)
		return UNIO_ERR_NO_MEMORY;
	memset(si, 0, sizeof(*si));
	si->ev_fd = si->poll_fd = si->regs_fd = -1;
	st = iface_init(si, params->config);
	if (st == UNIO_OK)
		st = shm_seg_create(si, params->config);
	if (st != UNIO_OK) {
		if (si->active != NULL)
			pthread_mutex_destroy(&si->lock);
		if (si->ev_fd >= 0)
			close(si->ev_fd);
		if (si->poll_fd >= 0)
			close(si->poll_fd);
		shm_regs_destroy(si);
		free(si->active);
		free(si);
		return st;
	}
	si->gen = &si->hdr->gen;
	si->hdr->ev_fd = (uint64_t)si->ev_fd;
	si->hdr->wake_fence = !si->membarrier;
	si->super.ops = (struct unio_tl_ops){
		.ep_am_short = shm_am_short,
		.ep_am_bcopy = shm_am_bcopy,
		.ep_am_zcopy = shm_am_zcopy,
		.ep_put_zcopy = shm_put_zcopy,
		.ep_get_zcopy = shm_get_zcopy,
		.ep_flush = shm_flush,
		.iface_progress = shm_progress,
		.iface_deliver = shm_deliver,
	};
	si->super.ctl = &shm_ctl_ops;
	*iface_p = &si->super;
	return UNIO_OK;
}

static unio_status_t
shm_query_devices(const struct unio_config *config, struct unio_tl_device_info *devs,
		  unsigned int *n_devs, char *reason, size_t reason_len)
{
	RTE_SET_USED(config);
	if (access("/proc/self/fd", R_OK) != 0) {
		snprintf(reason, reason_len, "/proc is not mounted: peers cannot open segments");
		*n_devs = 0;
		return UNIO_OK;
	}
	memset(&devs[0], 0, sizeof(devs[0]));
	snprintf(devs[0].name, sizeof(devs[0].name), "memory");
	devs[0].reach = UNIO_TL_REACH_HOST;
	snprintf(devs[0].detail, sizeof(devs[0].detail),
		 "memfd rings, %zu B FIFO x %" PRId64 " peers, CMA %s", config->shm_fifo_size,
		 config->shm_max_peers, config->shm_cma ? "on" : "off");
	*n_devs = 1;
	return UNIO_OK;
}

static const struct unio_tl_driver shm_driver = {
	.name = "shm",
	.description = "processes on one host: memfd rings, CMA and direct-mapping RMA",
	.query_devices = shm_query_devices,
	.iface_open = shm_iface_open,
};

UNIO_TL_DRIVER_REGISTER(shm_driver);
