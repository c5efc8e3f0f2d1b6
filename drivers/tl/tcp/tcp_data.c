/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tcp driver's data path: framing, the send paths (short and bcopy copy into the
 * connection's tx buffer; zcopy, put and get responses go out from the caller's memory with
 * sendmsg, large put / get-response payloads by vmsplice + splice, queued in order behind
 * the copied frames when the kernel is full), the receive path (reassembly of frames across
 * any partial read into a bounded per-connection buffer, every header validated before
 * use), and put/get served from registered regions.
 */

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <rte_branch_prediction.h>
#include <rte_debug.h>

#include "tcp_priv.h"

#define HDR_LEN sizeof(struct tcp_hdr)
#define RMA_LEN sizeof(struct tcp_rma_hdr)

/* ---- transmit ---- */

bool
tcp_conn_tx_idle(const struct tcp_conn *c)
{
	return c->tx_head == c->tx_tail && c->zq_head == c->zq_tail;
}

/* The iovs of entry @p z from byte @p skip of the frame (header, then payload) on. */
static size_t
zc_iov(const struct tcp_zc *z, size_t skip, struct iovec *v)
{
	unsigned int n = 0;

	if (skip < z->hdr_len) {
		v[n++] = (struct iovec){ (void *)(uintptr_t)(z->hdr + skip), z->hdr_len - skip };
		skip = 0;
	} else {
		skip -= z->hdr_len;
	}
	for (unsigned int i = 0; i < z->iovcnt; i++) {
		if (skip >= z->iov[i].iov_len) {
			skip -= z->iov[i].iov_len;
			continue;
		}
		v[n++] = (struct iovec){ (uint8_t *)z->iov[i].iov_base + skip,
					 z->iov[i].iov_len - skip };
		skip = 0;
	}
	return n;
}

static void
zc_pop(struct tcp_conn *c, unio_status_t st)
{
	struct tcp_zc *z = &c->zq[c->zq_head % TCP_ZQ_SIZE];

	c->zq_head++;
	if (z->comp != NULL)
		unio_tl_completion_done(z->comp, st);
}

/* Account @p r sent bytes: copied frames up to @p end first, then the head zcopy. */
static void
tx_advance(struct tcp_conn *c, size_t end, size_t r)
{
	size_t a = RTE_MIN(r, end - c->tx_head);
	struct tcp_zc *z;

	c->tx_head += a;
	r -= a;
	if (c->zq_head == c->zq_tail || c->tx_head != end)
		return;
	z = &c->zq[c->zq_head % TCP_ZQ_SIZE];
	z->sent += r;
	if (z->sent == z->total)
		zc_pop(c, UNIO_OK);
}

/*
 * The payload of splice entry @p z goes from the user's pages into the connection's pipe
 * (vmsplice: the pipe refers to the pages, nothing is copied) and from there into the socket
 * (splice: the socket's buffers refer to the same pages).  The receiving side copies from
 * them; the sender's kernel copies nothing.  Only entries whose completion waits for the
 * peer go this way (a PUT's ack, the requester's receipt of a GET_RESP), so the memory is
 * not the caller's again before the peer read it.  Returns 1 when it sent something, 0 when
 * the socket is full, 2 when the rest goes by copy (pages vmsplice refuses), or a negative
 * status.
 */
static int
zc_splice(struct tcp_conn *c, struct tcp_zc *z)
{
	struct tcp_iface *ti = c->iface;
	struct iovec v[UNIO_TL_MAX_IOV];
	bool progressed = false;
	ssize_t r;

	for (;;) {
		if (c->pipe_fill > 0) {
			bool more = z->hdr_len + z->mapped < z->total;

			r = splice(c->pipe[0], NULL, c->item.fd, NULL, c->pipe_fill,
				   SPLICE_F_NONBLOCK | SPLICE_F_MOVE | (more ? SPLICE_F_MORE : 0));
			if (r < 0 && errno == EINTR)
				continue;
			if (r == 0 || (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)))
				return progressed;   /* the socket is full (0: nothing moved) */
			if (r < 0)
				return tcp_status_from_errno(errno);
			c->pipe_fill -= (size_t)r;
			z->sent += (size_t)r;
			ti->stats.splice_bytes += (size_t)r;
			progressed = true;
			if (z->sent == z->total) {
				ti->stats.splice_frames++;
				zc_pop(c, UNIO_OK);
				return 1;
			}
			continue;
		}
		if (!z->splice)
			return 2;
		/* the payload not in the pipe yet */
		r = vmsplice(c->pipe[1], v, zc_iov(z, z->hdr_len + z->mapped, v),
			     SPLICE_F_NONBLOCK);
		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			/* memory without struct pages (device, VM_IO) or the like: copy the rest */
			z->splice = false;
			ti->stats.splice_fallbacks++;
			return 2;
		}
		c->pipe_fill += (size_t)r;
		z->mapped += (size_t)r;
	}
}

/*
 * Send what is queued until done or the kernel is full.  With @p more, the kernel may hold
 * the bytes back (MSG_MORE) until a full segment, the ACK of earlier bytes, our next
 * progress (tcp_conn_push) or, at the latest, its own 200 ms cork timer.
 * 0, or a negative status.
 */
static int
conn_tx(struct tcp_conn *c, bool more)
{
	struct iovec v[2 + UNIO_TL_MAX_IOV];
	int flags = MSG_NOSIGNAL | MSG_DONTWAIT | (more ? MSG_MORE : 0);
	bool sent = false;
	ssize_t r;

	c->tx_blocked = false;
	/*
	 * The usual case, copied frames only (a short message's): one send of them, without
	 * the loop's set-up (change 18).  What it leaves goes on in the loop.
	 */
	if (likely(c->zq_head == c->zq_tail) && c->tx_tail > c->tx_head) {
		size_t len = c->tx_tail - c->tx_head;

		r = tcp_send(c->item.fd, c->txbuf + c->tx_head, len, flags);
		if (likely(r == (ssize_t)len)) {
			c->tx_head = c->tx_tail;
			sent = true;
			goto done;
		}
		if (r > 0) {
			c->tx_head += (size_t)r;
			sent = true;
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			c->tx_blocked = true;
			goto done;
		} else if (errno != EINTR) {
			return tcp_status_from_errno(errno);
		}
	}
	for (;;) {
		bool zq = c->zq_head != c->zq_tail;
		size_t end = zq ? c->zq[c->zq_head % TCP_ZQ_SIZE].txpos : c->tx_tail;
		size_t n = 0;

		struct tcp_zc *z = zq ? &c->zq[c->zq_head % TCP_ZQ_SIZE] : NULL;
		int f = flags;

		if (zq && end == c->tx_head && z->total == 0) {
			zc_pop(c, UNIO_OK);  /* a flush marker reached */
			continue;
		}
		if (zq && end == c->tx_head && z->sent >= z->hdr_len &&
		    (z->splice || c->pipe_fill > 0)) {
			int k = zc_splice(c, z);

			if (k < 0)
				return k;
			sent |= k != 0;
			if (k == 0) {
				c->tx_blocked = true;
				break;
			}
			if (k == 1)
				continue;
		}
		if (end > c->tx_head)
			v[n++] = (struct iovec){ c->txbuf + c->tx_head, end - c->tx_head };
		if (zq && z->splice) {  /* its header: the payload follows by splice */
			if (z->sent < z->hdr_len)
				v[n++] = (struct iovec){ z->hdr + z->sent, z->hdr_len - z->sent };
			f |= MSG_MORE;
		} else if (zq) {
			n += zc_iov(z, z->sent, v + n);
		}
		if (n == 0)
			break;
		/* one piece (the copied frames): send() spares the kernel the iovec import */
		if (n == 1) {
			r = tcp_send(c->item.fd, v[0].iov_base, v[0].iov_len, f);
		} else {
			struct msghdr msg = { .msg_iov = v, .msg_iovlen = n };

			r = sendmsg(c->item.fd, &msg, f);
		}
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				c->tx_blocked = true;
				break;
			}
			return tcp_status_from_errno(errno);
		}
		tx_advance(c, end, (size_t)r);
		sent = true;
	}
done:
	if (sent)
		c->rx_quiet = 0;  /* what we sent is likely answered: read it every call again */
	if (sent && more != c->more_held) {  /* a send without MSG_MORE pushed what was held */
		c->more_held = more;
		c->iface->n_more_held += more ? 1 : -1;
	}
	if (tcp_conn_tx_idle(c))
		c->tx_head = c->tx_tail = 0;
	c->iface->may_block |= c->tx_blocked;
	if (c->tx_blocked != c->out_armed)
		tcp_conn_set_out(c, c->tx_blocked);
	return 0;
}

int
tcp_conn_tx(struct tcp_conn *c)
{
	return conn_tx(c, false);
}

/* Make the kernel send what it holds back for MSG_MORE (setting TCP_NODELAY pushes). */
void
tcp_conn_push(struct tcp_conn *c)
{
	int one = 1;

	if (c->item.fd >= 0)
		setsockopt(c->item.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->more_held = false;
	c->iface->n_more_held--;
	c->iface->stats.more_pushes++;
}

/* Room for @p need bytes at the tx tail (compacting the buffer), or NULL. */
static uint8_t *
tx_reserve(struct tcp_conn *c, size_t need)
{
	size_t used = c->tx_tail - c->tx_head;

	c->dirty = true;
	if (c->tx_tail + need <= TCP_TXBUF_SIZE)
		return c->txbuf + c->tx_tail;
	if (used + need > TCP_TXBUF_SIZE)
		return NULL;
	memmove(c->txbuf, c->txbuf + c->tx_head, used);
	for (unsigned int i = c->zq_head; i != c->zq_tail; i++)
		c->zq[i % TCP_ZQ_SIZE].txpos -= c->tx_head;
	c->tx_head = 0;
	c->tx_tail = used;
	return c->txbuf + c->tx_tail;
}

/*
 * The largest frame that may go with MSG_MORE on @p c: a quarter of its MSS, read once at
 * the first frame that could be held (lo's MSS grows after, an Ethernet path's does not),
 * so that only frames several of which share a segment are held.  A frame of a segment or
 * more would leave its tail held behind full segments until the next send or the peer's
 * ACK: 4 KiB frames over a veth (MSS 1448) streamed at 0.34x UCX so (tcp.md, entry 15).
 * On lo (MSS 32-48 KiB) frames up to 8-12 KiB still share segments.
 */
static unsigned int
conn_more_max(struct tcp_conn *c)
{
	int mss = 0;
	socklen_t l = sizeof(mss);

	if (likely(c->more_max != 0))
		return c->more_max;
	if (getsockopt(c->item.fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &l) != 0 || mss < 4)
		mss = 4;   /* unknown: nothing is held (a zero-length frame is 12 bytes) */
	c->more_max = (unsigned int)mss / 4;
	return c->more_max;
}

/*
 * After queueing a frame of @p len bytes: push now unless the connection is not ready or
 * the kernel is full.  @p batch (short and bcopy frames): when TCP_BURST_MIN frames went out
 * since the last progress call, the sender is in a burst: hand this one to the kernel with
 * MSG_MORE if it is small against a segment (conn_more_max()), so that the frames of a
 * burst share segments (one loopback / NIC pass for many messages) instead of one segment
 * each.  The first frames after a progress call are never held: a ping-pong, or a
 * protocol's pair of control messages, waits for nothing.
 */
static unio_status_t
tx_kick_batch(struct tcp_conn *c, bool batch, size_t len)
{
	struct tcp_iface *ti = c->iface;
	bool more;
	int r;

	if (unlikely(c->state == TCP_CONN_CONNECTING)) {
		tcp_conn_check_connect(c);  /* sends what is queued once connected */
		return c->state == TCP_CONN_FAILED ? c->err : UNIO_OK;
	}
	if (c->tx_blocked)
		return UNIO_OK;
	if (c->tx_epoch != ti->epoch) {
		c->tx_epoch = ti->epoch;
		c->tx_epoch_sends = 0;
	}
	more = batch && ++c->tx_epoch_sends > TCP_BURST_MIN && len <= conn_more_max(c);
	r = conn_tx(c, more);
	if (r < 0) {
		tcp_conn_fail(c, (unio_status_t)r);
		return (unio_status_t)r;
	}
	if (more)
		ti->stats.more_sends++;
	return UNIO_OK;
}

static unio_status_t
tx_kick(struct tcp_conn *c)
{
	return tx_kick_batch(c, false, 0);
}



unio_status_t
tcp_ep_am_short(struct unio_tl_ep *ep, uint8_t id, uint64_t hdr, const void *payload,
		size_t len)
{
	struct tcp_conn *c = tcp_conn_of(ep);
	uint8_t *p;

	if (unlikely(c->state == TCP_CONN_FAILED))
		return c->err;
	p = tx_reserve(c, HDR_LEN + sizeof(hdr) + len);
	if (p == NULL)
		return UNIO_ERR_NO_RESOURCE;
	tcp_conn_used(c);
	tcp_hdr_set((struct tcp_hdr *)p, (uint32_t)(sizeof(hdr) + len), TCP_F_AM, id);
	memcpy(p + HDR_LEN, &hdr, sizeof(hdr));
	if (len != 0)
		memcpy(p + HDR_LEN + sizeof(hdr), payload, len);
	c->tx_tail += HDR_LEN + sizeof(hdr) + len;
	return tx_kick_batch(c, true, HDR_LEN + sizeof(hdr) + len);
}

ssize_t
tcp_ep_am_bcopy(struct unio_tl_ep *ep, uint8_t id, unio_tl_pack_cb_t pack, void *arg,
		unsigned int flags)
{
	struct tcp_conn *c = tcp_conn_of(ep);
	unio_status_t st;
	uint8_t *p;
	size_t len;

	RTE_SET_USED(flags);
	if (unlikely(c->state == TCP_CONN_FAILED))
		return c->err;
	p = tx_reserve(c, HDR_LEN + TCP_MAX_BCOPY);
	if (p == NULL)
		return UNIO_ERR_NO_RESOURCE;
	tcp_conn_used(c);
	len = pack(p + HDR_LEN, arg);
	RTE_VERIFY(len <= TCP_MAX_BCOPY);
	tcp_hdr_set((struct tcp_hdr *)p, (uint32_t)len, TCP_F_AM, id);
	c->tx_tail += HDR_LEN + len;
	st = tx_kick_batch(c, true, HDR_LEN + len);
	return st == UNIO_OK ? (ssize_t)len : st;
}

/* A pipe for splice, made on first use; false when the kernel gives none (no splice then). */
static bool
conn_pipe(struct tcp_conn *c)
{
	if (c->pipe[0] >= 0)
		return true;
	if (pipe2(c->pipe, O_NONBLOCK | O_CLOEXEC) != 0) {
		c->pipe[0] = c->pipe[1] = -1;
		c->iface->splice = false;
		return false;
	}
	/* a 1 MiB payload in one vmsplice; the default 64 KiB pipe works too, in 16 steps */
	(void)fcntl(c->pipe[1], F_SETPIPE_SZ, TCP_PIPE_SIZE);
	return true;
}

/*
 * Queue a frame: header @p hdr, payload @p iov sent from the caller's memory.  @p splice:
 * the frame's completion waits for the peer (see zc_splice), so a large payload may go by
 * splice.
 */
static unio_status_t
zc_queue(struct tcp_conn *c, const void *hdr, size_t hdr_len, const struct iovec *iov,
	 size_t iovcnt, struct unio_tl_completion *comp, bool splice)
{
	struct tcp_zc *z;
	size_t total = hdr_len;

	if (c->zq_tail - c->zq_head == TCP_ZQ_SIZE)
		return UNIO_ERR_NO_RESOURCE;
	z = &c->zq[c->zq_tail % TCP_ZQ_SIZE];
	if (hdr_len > 0)
		memcpy(z->hdr, hdr, hdr_len);
	z->hdr_len = hdr_len;
	for (size_t i = 0; i < iovcnt; i++) {
		z->iov[i] = iov[i];
		total += iov[i].iov_len;
	}
	z->iovcnt = (unsigned int)iovcnt;
	z->txpos = c->tx_tail;
	z->sent = 0;
	z->total = total;
	z->comp = NULL;
	z->mapped = 0;
	z->splice = splice && c->iface->splice && total - hdr_len >= TCP_SPLICE_MIN &&
		    conn_pipe(c);
	if (splice && total - hdr_len >= TCP_DIRECT_MIN) {  /* a bulk PUT / GET_RESP */
		c->bulk = TCP_BULK_FRAMES;
		c->bulk_calls = 0;
		c->iface->may_block = true;
	}
	c->zq_tail++;
	c->dirty = true;
	tcp_conn_used(c);
	if (tx_kick(c) != UNIO_OK)
		return c->err;
	/* it was the last entry: the queue is empty when the kernel took all of it */
	if (c->zq_head == c->zq_tail)
		return UNIO_OK;
	z->comp = comp;
	return UNIO_INPROGRESS;
}

/* Queue a zero-copy frame whose payload is sent by sendmsg. */
static unio_status_t
zc_send(struct tcp_conn *c, const void *hdr, size_t hdr_len, const struct iovec *iov,
	size_t iovcnt, struct unio_tl_completion *comp)
{
	return zc_queue(c, hdr, hdr_len, iov, iovcnt, comp, false);
}

static size_t
iov_total(const struct iovec *iov, size_t iovcnt)
{
	size_t n = 0;

	for (size_t i = 0; i < iovcnt; i++)
		n += iov[i].iov_len;
	return n;
}

unio_status_t
tcp_ep_am_zcopy(struct unio_tl_ep *ep, uint8_t id, const void *hdr, size_t hdr_len,
		const struct iovec *iov, size_t iovcnt, unsigned int flags,
		struct unio_tl_completion *comp)
{
	struct tcp_conn *c = tcp_conn_of(ep);
	uint8_t h[HDR_LEN + TCP_MAX_ZCOPY_HDR];

	RTE_SET_USED(flags);
	if (unlikely(c->state == TCP_CONN_FAILED))
		return c->err;
	tcp_hdr_set((struct tcp_hdr *)h, (uint32_t)(hdr_len + iov_total(iov, iovcnt)),
		    TCP_F_AM, id);
	memcpy(h + HDR_LEN, hdr, hdr_len);
	return zc_send(c, h, HDR_LEN + hdr_len, iov, iovcnt, comp);
}

/* The entries of @p iov covering [off, off + len), into @p out; returns their count. */
static size_t
iov_slice(const struct iovec *iov, size_t iovcnt, size_t off, size_t len, struct iovec *out)
{
	size_t n = 0;

	for (size_t i = 0; i < iovcnt && len > 0; i++) {
		size_t l = iov[i].iov_len;

		if (off >= l) {
			off -= l;
			continue;
		}
		out[n] = (struct iovec){ (uint8_t *)iov[i].iov_base + off, RTE_MIN(l - off, len) };
		len -= out[n].iov_len;
		off = 0;
		n++;
	}
	return n;
}

/* One PUT frame of at most TCP_MAX_RMA bytes; completes @p comp once on the target's ack. */
static unio_status_t
put_chunk(struct tcp_conn *c, const struct tcp_rkey *k, const struct iovec *iov,
	  size_t iovcnt, uint64_t remote_addr, size_t len, struct unio_tl_completion *comp)
{
	uint8_t h[HDR_LEN + RMA_LEN];
	struct tcp_rma_hdr *r = (struct tcp_rma_hdr *)(h + HDR_LEN);
	struct tcp_get *g = &c->gets[c->get_seq % TCP_GETS_MAX];
	unio_status_t st;

	tcp_hdr_set((struct tcp_hdr *)h, (uint32_t)(RMA_LEN + len), TCP_F_PUT, 0);
	*r = (struct tcp_rma_hdr){ .addr = remote_addr, .length = len, .key_idx = k->key_idx,
				   .key_gen = k->key_gen, .req_id = c->get_seq,
				   .secret = k->secret };
	/* done when the target acks, i.e. read the payload: it may go by splice */
	st = zc_queue(c, h, sizeof(h), iov, iovcnt, NULL, true);
	if (UNIO_IS_ERR(st))
		return st;
	*g = (struct tcp_get){ .used = true, .put = true, .req_id = c->get_seq, .comp = comp };
	c->get_seq++;
	c->n_gets++;
	return UNIO_INPROGRESS;
}

/* Room for @p n chunks: zero-copy queue entries and request slots. */
static bool
put_room(const struct tcp_conn *c, size_t n)
{
	if (c->zq_tail - c->zq_head + n > TCP_ZQ_SIZE)
		return false;
	for (size_t i = 0; i < n; i++)
		if (c->gets[(c->get_seq + i) % TCP_GETS_MAX].used)
			return false;
	return true;
}

/*
 * A put longer than one frame goes out as several PUT frames (TCP_MAX_RMA each); @p comp
 * counts one operation per frame.  All frames are queued or none (UNIO_ERR_NO_RESOURCE).
 */
unio_status_t
tcp_ep_put_zcopy(struct unio_tl_ep *ep, const struct iovec *iov, size_t iovcnt,
		 uint64_t remote_addr, const struct unio_tl_rkey *rkey,
		 struct unio_tl_completion *comp)
{
	struct tcp_conn *c = tcp_conn_of(ep);
	size_t len = iov_total(iov, iovcnt), n, off = 0;
	struct iovec part[UNIO_TL_MAX_IOV];

	if (unlikely(c->state == TCP_CONN_FAILED))
		return c->err;
	if (!unio_tl_rkey_covers(rkey, remote_addr, len) || len > TCP_MAX_PUT)
		return UNIO_ERR_OUT_OF_RANGE;
	n = len == 0 ? 1 : (len + TCP_MAX_RMA - 1) / TCP_MAX_RMA;
	if (!put_room(c, n))
		return UNIO_ERR_NO_RESOURCE;
	comp->count += (int)n - 1;
	for (size_t i = 0; i < n; i++) {
		size_t l = RTE_MIN(len - off, (size_t)TCP_MAX_RMA);
		size_t k = iov_slice(iov, iovcnt, off, l, part);
		unio_status_t st = put_chunk(c, rkey->priv, part, k, remote_addr + off, l, comp);

		if (UNIO_IS_ERR(st)) {  /* the connection failed: account the frames not sent */
			if (i == 0) {
				comp->count -= (int)n - 1;
				return st;
			}
			for (; i < n; i++)
				unio_tl_completion_done(comp, st);
			return UNIO_INPROGRESS;
		}
		off += l;
	}
	return UNIO_INPROGRESS;
}

static unio_status_t
send_small(struct tcp_conn *c, const void *frame, size_t len)
{
	uint8_t *p = tx_reserve(c, len);

	if (p == NULL)
		return UNIO_ERR_NO_RESOURCE;
	memcpy(p, frame, len);
	c->tx_tail += len;
	return tx_kick(c);
}

unio_status_t
tcp_ep_get_zcopy(struct unio_tl_ep *ep, const struct iovec *iov, size_t iovcnt,
		 uint64_t remote_addr, const struct unio_tl_rkey *rkey,
		 struct unio_tl_completion *comp)
{
	struct tcp_conn *c = tcp_conn_of(ep);
	const struct tcp_rkey *k = rkey->priv;
	uint8_t h[HDR_LEN + RMA_LEN];
	struct tcp_rma_hdr *r = (struct tcp_rma_hdr *)(h + HDR_LEN);
	size_t len = iov_total(iov, iovcnt);
	struct tcp_get *g;
	unio_status_t st;

	if (unlikely(c->state == TCP_CONN_FAILED))
		return c->err;
	if (!unio_tl_rkey_covers(rkey, remote_addr, len) || len > TCP_MAX_GET)
		return UNIO_ERR_OUT_OF_RANGE;
	g = &c->gets[c->get_seq % TCP_GETS_MAX];
	if (g->used)
		return UNIO_ERR_NO_RESOURCE;
	tcp_hdr_set((struct tcp_hdr *)h, RMA_LEN, TCP_F_GET_REQ, 0);
	*r = (struct tcp_rma_hdr){ .addr = remote_addr, .length = len, .key_idx = k->key_idx,
				   .key_gen = k->key_gen, .req_id = c->get_seq,
				   .secret = k->secret };
	st = send_small(c, h, sizeof(h));
	if (st != UNIO_OK)
		return st;
	tcp_conn_used(c);
	*g = (struct tcp_get){ .used = true, .req_id = c->get_seq, .length = len,
			       .iovcnt = (unsigned int)iovcnt, .comp = comp };
	memcpy(g->iov, iov, iovcnt * sizeof(*iov));
	c->get_seq++;
	c->n_gets++;
	return UNIO_INPROGRESS;
}

/*
 * Flush is a round trip: a FLUSH frame behind everything sent so far, answered by the peer
 * once it has handled every frame before it (frames are handled in order), so that
 * completion means delivered, not only handed to the kernel.  Puts and gets issued before
 * are answered before it.
 */
static unio_status_t
send_flush(struct tcp_conn *c, struct unio_tl_completion *comp)
{
	uint8_t h[HDR_LEN + RMA_LEN];
	struct tcp_rma_hdr *r = (struct tcp_rma_hdr *)(h + HDR_LEN);
	struct tcp_get *g = &c->gets[c->get_seq % TCP_GETS_MAX];
	unio_status_t st;

	if (g->used)
		return UNIO_ERR_NO_RESOURCE;
	tcp_hdr_set((struct tcp_hdr *)h, RMA_LEN, TCP_F_FLUSH, 0);
	*r = (struct tcp_rma_hdr){ .req_id = c->get_seq };
	st = send_small(c, h, sizeof(h));
	if (st != UNIO_OK)
		return st;
	tcp_conn_used(c);
	*g = (struct tcp_get){ .used = true, .put = true, .req_id = c->get_seq, .comp = comp };
	c->get_seq++;
	c->n_gets++;
	c->dirty = false;
	return UNIO_INPROGRESS;
}

unio_status_t
tcp_ep_flush(struct unio_tl_ep *ep, struct unio_tl_completion *comp)
{
	struct tcp_conn *c = tcp_conn_of(ep);
	unio_status_t st;

	if (c->state == TCP_CONN_FAILED)
		return c->err;
	if (!c->dirty && c->n_gets == 0)
		return UNIO_OK;
	if (comp != NULL)
		return send_flush(c, comp);
	/* no completion to call: start one round trip and let the caller poll */
	if (c->dirty) {
		st = send_flush(c, NULL);
		if (UNIO_IS_ERR(st) && st != UNIO_ERR_NO_RESOURCE)
			return st;
	}
	return UNIO_ERR_NO_RESOURCE;
}

/*
 * Move this side's sending from @p old (ours, idle) to @p next (the peer's): MOVE_END
 * closes what we sent on @p old, MOVE_START opens @p next.  Both fit: @p old is empty and
 * @p next holds at most answers.  A failure shows on the connection's state.
 */
void
tcp_conn_send_move(struct tcp_conn *old, struct tcp_conn *next)
{
	uint8_t h[HDR_LEN];

	tcp_hdr_set((struct tcp_hdr *)h, 0, TCP_F_MOVE_END, 0);
	send_small(old, h, sizeof(h));
	old->dirty = false;
	tcp_hdr_set((struct tcp_hdr *)h, 0, TCP_F_MOVE_START, 0);
	if (send_small(next, h, sizeof(h)) == UNIO_ERR_NO_RESOURCE)
		tcp_conn_fail(next, UNIO_ERR_NO_RESOURCE);
}

/* Complete every queued zcopy and outstanding get with @p st (the connection is gone). */
void
tcp_conn_cancel_ops(struct tcp_conn *c, unio_status_t st)
{
	if (c->dr_active && c->dr_type == TCP_F_GET_RESP)
		c->dr_discard = true;  /* the get's buffer is the caller's again */
	while (c->zq_head != c->zq_tail)
		zc_pop(c, st);
	for (unsigned int i = 0; i < TCP_GETS_MAX && c->n_gets > 0; i++) {
		struct tcp_get *g = &c->gets[i];

		if (!g->used)
			continue;
		g->used = false;
		c->n_gets--;
		if (g->comp != NULL)
			unio_tl_completion_done(g->comp, st);
	}
	c->tx_head = c->tx_tail = 0;
}

/* ---- receive ---- */

/* The region a peer's (key, addr, len) names, or NULL when it is not inside one. */
static const struct tcp_region *
region_check(const struct tcp_iface *ti, const struct tcp_rma_hdr *r)
{
	const struct tcp_region *reg;

	if (r->key_idx >= TCP_REGS_MAX)
		return NULL;
	RTE_SET_USED(ti);
	reg = &tcp_regs[r->key_idx];
	if (!reg->used || reg->gen != r->key_gen || reg->secret != r->secret ||
	    r->addr < reg->base ||
	    r->length > reg->len || r->addr - reg->base > reg->len - r->length)
		return NULL;
	return reg;
}

/*
 * Apply a put (or nothing: a flush) and ack it; 1 when the ack cannot be queued now (retry
 * the frame later).
 */
static int
rx_put(struct tcp_conn *c, uint8_t type, const uint8_t *p, size_t len)
{
	uint8_t h[HDR_LEN + RMA_LEN];
	struct tcp_rma_hdr *r = (struct tcp_rma_hdr *)(h + HDR_LEN);
	bool ok;

	memcpy(r, p, RMA_LEN);
	ok = type == TCP_F_FLUSH ? (r->length = 0, true) :
	     r->length == len - RMA_LEN && region_check(c->iface, r) != NULL;
	if (tx_reserve(c, sizeof(h)) == NULL)
		return 1;
	if (ok && r->length != 0)  /* a flush carries no address */
		memcpy((void *)(uintptr_t)r->addr, p + RMA_LEN, r->length);
	r->status = ok ? UNIO_OK : UNIO_ERR_OUT_OF_RANGE;
	r->length = 0;
	tcp_hdr_set((struct tcp_hdr *)h, RMA_LEN, TCP_F_PUT_ACK, 0);
	send_small(c, h, sizeof(h));
	return 0;
}

/* Answer a get; 1 when the answer cannot be queued now (retry the frame later). */
static int
rx_get_req(struct tcp_conn *c, const uint8_t *p)
{
	uint8_t h[HDR_LEN + RMA_LEN];
	struct tcp_rma_hdr *r = (struct tcp_rma_hdr *)(h + HDR_LEN);
	struct iovec iov;
	bool ok;

	memcpy(r, p, RMA_LEN);
	ok = r->length <= TCP_MAX_GET && region_check(c->iface, r) != NULL;
	r->status = ok ? UNIO_OK : UNIO_ERR_OUT_OF_RANGE;
	if (!ok)
		r->length = 0;
	tcp_hdr_set((struct tcp_hdr *)h, (uint32_t)(RMA_LEN + r->length), TCP_F_GET_RESP, 0);
	iov = (struct iovec){ (void *)(uintptr_t)r->addr, r->length };
	/* the requester completes on receipt: the payload may go by splice */
	return zc_queue(c, h, sizeof(h), &iov, ok ? 1 : 0, NULL, true) == UNIO_ERR_NO_RESOURCE;
}

static void
scatter(const struct iovec *iov, unsigned int iovcnt, const uint8_t *src)
{
	for (unsigned int i = 0; i < iovcnt; i++) {
		memcpy(iov[i].iov_base, src, iov[i].iov_len);
		src += iov[i].iov_len;
	}
}

static int
rx_answer(struct tcp_conn *c, uint8_t type, const uint8_t *p, size_t len)
{
	struct tcp_rma_hdr r;
	struct tcp_get *g;
	unio_status_t st;

	memcpy(&r, p, RMA_LEN);
	g = &c->gets[r.req_id % TCP_GETS_MAX];
	st = r.status == UNIO_OK ? UNIO_OK : UNIO_ERR_OUT_OF_RANGE;
	if (!g->used || g->req_id != r.req_id || g->put != (type == TCP_F_PUT_ACK) ||
	    r.length != len - RMA_LEN || (st == UNIO_OK && !g->put && r.length != g->length)) {
		tcp_conn_malformed(c, "answer to no outstanding put or get");
		return -1;
	}
	if (st == UNIO_OK && !g->put)
		scatter(g->iov, g->iovcnt, p + RMA_LEN);
	g->used = false;
	c->n_gets--;
	if (g->comp != NULL)
		unio_tl_completion_done(g->comp, st);
	return 0;
}

/* Is this header acceptable: magic, type, and a length within the type's bound? */
static bool
hdr_valid(const struct tcp_hdr *h, size_t len)
{
	if (rte_le_to_cpu_16(h->magic) != TCP_MAGIC)
		return false;
	switch (h->type) {
	case TCP_F_AM:
		return h->id < UNIO_TL_AM_ID_MAX && len <= TCP_MAX_ZCOPY + 8;
	case TCP_F_PUT:
		return len >= RMA_LEN && len <= RMA_LEN + TCP_MAX_RMA;
	case TCP_F_GET_REQ:
	case TCP_F_PUT_ACK:
	case TCP_F_FLUSH:
		return len == RMA_LEN;
	case TCP_F_GET_RESP:  /* beyond the rx buffer: only read directly (rx_parse) */
		return len >= RMA_LEN && len <= RMA_LEN + TCP_MAX_GET;
	case TCP_F_MOVE_END:
	case TCP_F_MOVE_START:
		return len == 0;
	default:
		return false;
	}
}

/*
 * The peer sends no more on @p c (an incoming connection of a simultaneous connect): what
 * it held back on the twin may go on.  Later, @p c carries only answers to requests we
 * send on it (none: we send on the twin), so busy mode stops reading it.
 */
static int
rx_move_end(struct tcp_conn *c)
{
	if (!c->anon || c->end_seen) {
		tcp_conn_malformed(c, "MOVE_END on a connection that is not the peer's");
		return -1;
	}
	c->end_seen = true;
	c->dual = true;
	if (c->twin != NULL && c->twin->rx_stalled)
		c->iface->rx_retry = true;
	return 0;
}

/*
 * The peer's frames continue on @p c (ours): only after everything it sent on the twin,
 * i.e. once the twin's MOVE_END was read (1: retry later; also while the twin may not be
 * accepted yet).  A twin that failed before its
 * MOVE_END lost frames that came before these: the order cannot be kept, fail.
 * Both waits end at UNIO_PEER_TIMEOUT after the MOVE_START was parsed: a peer that stopped
 * inside its move (MOVE_END still in its own buffers, or cut short) fails the connection
 * with UNIO_ERR_TIMED_OUT instead of holding its eps forever.
 * Each look first takes what may wait on this side already: the peer's connection and HELLO
 * in our accept queue, its MOVE_END in the twin's socket.  Busy mode reads those at its next
 * epoll, and an application that spent the time between progress calls elsewhere (a loaded
 * 2-core host, am_mp_sizes_tcp filling 64 MiB buffers) let the wait run out with the HELLO
 * unread: the connection failed as malformed ("MOVE_START where no simultaneous connect
 * happened"), its requests with UNIO_ERR_PROTO.
 */
static int
rx_move_start(struct tcp_conn *c)
{
	struct tcp_conn *t;

	if (!c->await_end && !c->anon)
		tcp_iface_take_hellos(c->iface);   /* may set await_end (hello_attach) */
	if (!c->await_end) {
		/*
		 * The peer's own connection may not be accepted or its HELLO not read yet: wait
		 * for it, at most UNIO_PEER_TIMEOUT.  On the connection that loses (anon once
		 * moved, move_pending before) the peer sends no MOVE_START.
		 */
		if (c->anon || c->move_pending || tcp_conn_wait_expired(c)) {
			tcp_conn_malformed(c, "MOVE_START where no simultaneous connect happened");
			return -1;
		}
		c->iface->rx_retry = true;
		return 1;
	}
	t = c->twin;
	if (t != NULL && !t->end_seen && t->state == TCP_CONN_ESTABLISHED)
		tcp_conn_rx(t);
	if (t != NULL && t->end_seen) {
		c->await_end = false;
		c->deadline_ns = 0;
		return 0;
	}
	if (t == NULL || t->state == TCP_CONN_FAILED) {
		tcp_conn_fail(c, UNIO_ERR_CONNECTION_RESET);
		return -1;
	}
	if (tcp_conn_wait_expired(c)) {
		/* the twin is useless without its MOVE_END: no frame on it may be delivered */
		c->iface->stats.move_timeouts++;
		tcp_conn_fail(t, UNIO_ERR_TIMED_OUT);
		tcp_conn_fail(c, UNIO_ERR_TIMED_OUT);
		return -1;
	}
	c->iface->rx_retry = true;
	return 1;
}

/* Handle one complete frame: 0 done, 1 retry later, -1 the connection was closed. */
static int
rx_frame(struct tcp_conn *c, const struct tcp_hdr *h, const uint8_t *p, size_t len)
{
	struct unio_tl_iface *iface = &c->iface->super;

	switch (h->type) {
	case TCP_F_AM:
		unio_tl_iface_invoke_am(iface, h->id, p, len, 0, c->conn_id);
		return 0;
	case TCP_F_PUT:
	case TCP_F_FLUSH:
		return rx_put(c, h->type, p, len);
	case TCP_F_GET_REQ:
		return rx_get_req(c, p);
	case TCP_F_GET_RESP:
	case TCP_F_PUT_ACK:
		return rx_answer(c, h->type, p, len);
	case TCP_F_MOVE_END:
		return rx_move_end(c);
	case TCP_F_MOVE_START:
		return rx_move_start(c);
	default:  /* hdr_valid() let no other type through */
		return -1;
	}
}

/* ---- direct receive ---- */

/* Copy @p len bytes from @p src into @p iov; returns the iov entries after them in @p out. */
static unsigned int
iov_fill(const struct iovec *iov, size_t iovcnt, const uint8_t *src, size_t len,
	 size_t total, struct iovec *out)
{
	struct iovec head[UNIO_TL_MAX_IOV];
	size_t k = iov_slice(iov, iovcnt, 0, len, head);

	for (size_t i = 0; i < k; i++) {
		memcpy(head[i].iov_base, src, head[i].iov_len);
		src += head[i].iov_len;
	}
	return (unsigned int)iov_slice(iov, iovcnt, len, total - len, out);
}

/*
 * The frame at @p off (header @p h, @p len bytes after it) is a PUT or GET_RESP of which
 * at least TCP_DIRECT_MIN bytes are still unread, or one larger than the rx buffer: when it
 * is valid, copy the part already buffered to its destination and read the rest straight
 * there (no second copy).  An invalid one is left to the ordinary path, which refuses it
 * once complete (rx_parse() refuses at once one that could never be complete).
 */
static bool
rx_direct_start(struct tcp_conn *c, const struct tcp_hdr *h, size_t off, size_t len)
{
	size_t have = c->rx_len - off - HDR_LEN, payload, got;
	const uint8_t *p = c->rxbuf + off + HDR_LEN;
	struct iovec dst;
	struct tcp_rma_hdr r;
	struct tcp_get *g;

	if ((h->type != TCP_F_PUT && h->type != TCP_F_GET_RESP) || have < RMA_LEN ||
	    (len - have < TCP_DIRECT_MIN && HDR_LEN + len <= TCP_RXBUF_SIZE))
		return false;
	memcpy(&r, p, RMA_LEN);
	payload = len - RMA_LEN;
	got = have - RMA_LEN;
	if (r.length != payload)
		return false;
	if (h->type == TCP_F_GET_RESP) {
		g = &c->gets[r.req_id % TCP_GETS_MAX];
		if (!g->used || g->put || g->req_id != r.req_id || r.status != UNIO_OK ||
		    g->length != payload)
			return false;
		c->dr_iovcnt = iov_fill(g->iov, g->iovcnt, p + RMA_LEN, got, payload, c->dr_iov);
	} else {
		if (region_check(c->iface, &r) == NULL)
			return false;
		dst = (struct iovec){ (void *)(uintptr_t)r.addr, payload };
		c->dr_iovcnt = iov_fill(&dst, 1, p + RMA_LEN, got, payload, c->dr_iov);
	}
	c->dr_active = true;
	c->dr_discard = false;
	c->dr_type = h->type;
	c->dr_left = payload - got;
	c->dr_rma = r;
	c->iface->stats.direct_frames++;
	return true;
}

/* Queue the ack of a directly received PUT; false when the tx queue has no room yet. */
static bool
rx_direct_ack(struct tcp_conn *c)
{
	uint8_t h[HDR_LEN + RMA_LEN];
	struct tcp_rma_hdr *r = (struct tcp_rma_hdr *)(h + HDR_LEN);

	*r = c->dr_rma;  /* its status set by rx_direct_finish() */
	r->length = 0;
	tcp_hdr_set((struct tcp_hdr *)h, RMA_LEN, TCP_F_PUT_ACK, 0);
	c->ack_owed = send_small(c, h, sizeof(h)) == UNIO_ERR_NO_RESOURCE;
	c->rx_stalled = c->ack_owed;
	return !c->ack_owed;
}

/* SO_RCVLOWAT of @p c's socket: readable (epoll) once @p v bytes wait; false if refused. */
static bool
rx_set_lowat(struct tcp_conn *c, int v)
{
	if (c->rx_lowat == v)
		return true;
	if (setsockopt(c->item.fd, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof(v)) != 0)
		return false;
	c->rx_lowat = v;
	return true;
}

/*
 * A read left part of the direct frame's rest unread: wait until TCP_RX_LOWAT bytes of it
 * (or all that is left, when less) are in the socket, told by epoll, instead of reading
 * blindly.  Blind reads while a large frame trickles in mostly found nothing (tag_bw 1 MiB
 * on lo: 25 empty readv per MiB beside 6 with data) and took the socket lock the sender's
 * softirq wanted.  The kernel also reports the socket readable before that much arrived
 * when its buffer is under pressure or the window is down to a segment (tcp_epollin_ready),
 * and at EOF or an error, so a small UNIO_TCP_RCVBUF cannot stall it.
 */
static void
rx_direct_wait(struct tcp_conn *c)
{
	int v = (int)RTE_MIN(c->dr_left, (size_t)TCP_RX_LOWAT);

	c->rx_wait = rx_set_lowat(c, v);
	c->iface->may_block |= c->rx_wait;
	c->iface->stats.rx_waits += c->rx_wait;
}

static void
rx_direct_finish(struct tcp_conn *c)
{
	struct tcp_get *g = &c->gets[c->dr_rma.req_id % TCP_GETS_MAX];

	c->dr_active = false;
	if (c->rx_wait) {  /* every byte readable again: small frames follow */
		c->rx_wait = false;
		if (!rx_set_lowat(c, 1))
			c->rx_lowat = -1;  /* unknown: set again next time */
	}
	c->iface->stats.rx_frames++;
	if (c->dr_type == TCP_F_PUT) {
		/* refused like an ordinary PUT outside a region when it lost its region */
		c->dr_rma.status = c->dr_discard ? UNIO_ERR_OUT_OF_RANGE : UNIO_OK;
		rx_direct_ack(c);
		return;
	}
	if (c->dr_discard)
		return;
	g->used = false;
	c->n_gets--;
	if (g->comp != NULL)
		unio_tl_completion_done(g->comp, UNIO_OK);
}

/* Advance the direct iov by @p r bytes read. */
static void
dr_advance(struct tcp_conn *c, size_t r)
{
	unsigned int i = 0;

	c->dr_left -= r;
	while (i < c->dr_iovcnt && r >= c->dr_iov[i].iov_len)
		r -= c->dr_iov[i++].iov_len;
	if (i < c->dr_iovcnt) {
		c->dr_iov[i].iov_base = (uint8_t *)c->dr_iov[i].iov_base + r;
		c->dr_iov[i].iov_len -= r;
	}
	memmove(c->dr_iov, c->dr_iov + i, (c->dr_iovcnt - i) * sizeof(c->dr_iov[0]));
	c->dr_iovcnt -= i;
}

/*
 * Read the direct frame's next bytes: 1 when it is complete, 0 when the socket has no more
 * now, -1 when the connection failed.
 */
static int
rx_direct(struct tcp_conn *c)
{
	ssize_t r;

	if (c->dr_type == TCP_F_PUT && !c->dr_discard &&
	    region_check(c->iface, &c->dr_rma) == NULL)
		c->dr_discard = true;  /* deregistered meanwhile: nowhere to write */
	if (c->dr_discard)
		r = recv(c->item.fd, c->rxbuf, RTE_MIN(c->dr_left, (size_t)TCP_RXBUF_SIZE),
			 MSG_DONTWAIT);
	else
		r = readv(c->item.fd, c->dr_iov, (int)c->dr_iovcnt);
	if (r > 0) {
		c->iface->stats.direct_reads++;
		if (c->dr_discard) {
			c->dr_left -= (size_t)r;
		} else {
			dr_advance(c, (size_t)r);
			c->iface->stats.direct_bytes += (uint64_t)r;
		}
		if (c->dr_left > 0) {
			rx_direct_wait(c);
			return 0;
		}
		rx_direct_finish(c);
		return 1;
	}
	if (r == 0) {
		tcp_conn_cut(c);
		return -1;
	}
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
		c->iface->stats.rx_empty++;
		rx_direct_wait(c);
		return 0;
	}
	tcp_conn_fail(c, tcp_status_from_errno(errno));
	return -1;
}

/*
 * Unparsed bytes start at @p off.  Move them to the front only when the frame they begin
 * (@p need bytes) would not fit behind them: one copy per buffer's worth, not per read.
 */
static void
rx_compact(struct tcp_conn *c, size_t off, size_t need)
{
	if (off == c->rx_len) {
		c->rx_off = c->rx_len = 0;
		return;
	}
	c->rx_off = off;
	if (off + need <= TCP_RXBUF_SIZE)
		return;
	memmove(c->rxbuf, c->rxbuf + off, c->rx_len - off);
	c->rx_len -= off;
	c->rx_off = 0;
}

/* Deliver every complete frame in the rx buffer; keep a partial one.  -1: closed. */
static int
rx_parse(struct tcp_conn *c, unsigned int *n)
{
	size_t off = c->rx_off, need = HDR_LEN;
	int r = 0;

	while (c->rx_len - off >= HDR_LEN) {
		struct tcp_hdr h;
		size_t len;

		memcpy(&h, c->rxbuf + off, HDR_LEN);
		len = rte_le_to_cpu_32(h.len);
		if (!hdr_valid(&h, len)) {
			tcp_conn_malformed(c, "bad frame header");
			return -1;
		}
		need = HDR_LEN + len;
		if (h.type != TCP_F_MOVE_END && h.type != TCP_F_MOVE_START)
			tcp_conn_used(c);
		if ((h.type == TCP_F_PUT || h.type == TCP_F_GET_RESP) && len >= TCP_DIRECT_MIN) {
			c->rx_bulk = TCP_BULK_FRAMES;
			c->bulk = TCP_BULK_FRAMES;
			c->bulk_calls = 0;
			c->iface->may_block = true;
		} else {
			c->rx_bulk -= c->rx_bulk > 0;
			c->bulk -= c->bulk > 0;
		}
		if (c->rx_len - off < need) {
			if (rx_direct_start(c, &h, off, len)) {
				off = c->rx_len;  /* all of it went to the destination */
				need = HDR_LEN;
			} else if (need > TCP_RXBUF_SIZE && c->rx_len - off >= HDR_LEN + RMA_LEN) {
				/* a GET_RESP beyond the buffer that answers no outstanding get */
				tcp_conn_malformed(c, "answer to no outstanding get");
				return -1;
			}
			break;
		}
		need = HDR_LEN;
		r = rx_frame(c, &h, c->rxbuf + off + HDR_LEN, len);
		if (r == 0 && c->state == TCP_CONN_FAILED)
			r = -1;
		if (r != 0)
			break;
		off += HDR_LEN + len;
		(*n)++;
		c->iface->stats.rx_frames++;
	}
	if (r < 0)
		return -1;
	c->rx_stalled = r > 0;
	rx_compact(c, off, need);
	return r;
}

/*
 * How much to read now: the rest of the frame begun in the buffer plus a little of what
 * follows, TCP_RX_AHEAD (64 KiB: hundreds of small frames per recv), or TCP_RX_AHEAD_BULK
 * (16 KiB) while bulk PUT / GET_RESP frames arrive (rx_bulk).  A read of the whole room
 * (512 KiB) took whole bulk frames through the buffer (kernel -> buffer -> destination, two
 * copies), where reading a bulk frame's header first lets rx_direct_start() read its
 * payload straight to its destination.  Measured (tag_bw 1 MiB on lo, the receiver's reads):
 * before, 57 % of the payload bytes came through the buffer; now 6 %.
 */
static size_t
rx_want(const struct tcp_conn *c)
{
	size_t room = TCP_RXBUF_SIZE - c->rx_len, have = c->rx_len - c->rx_off, end;
	size_t want = c->rx_bulk > 0 ? TCP_RX_AHEAD_BULK : TCP_RX_AHEAD;
	struct tcp_hdr h;

	if (have >= HDR_LEN) {  /* validated by rx_parse(): its length is bounded */
		memcpy(&h, c->rxbuf + c->rx_off, HDR_LEN);
		end = HDR_LEN + rte_le_to_cpu_32(h.len);
		/* a bulk frame cut inside its rma header: that first, then rx_direct_start() */
		if ((h.type == TCP_F_PUT || h.type == TCP_F_GET_RESP) &&
		    end - HDR_LEN >= TCP_DIRECT_MIN && have < HDR_LEN + RMA_LEN)
			return HDR_LEN + RMA_LEN - have;
		if (end > have)
			want += end - have;
	}
	return RTE_MIN(want, room);
}

/*
 * Read what the socket has and deliver it; returns the frames delivered (a connection that
 * failed counts as one).  A direct frame completed before the socket ran dry counts too: a
 * caller that tests its requests only after a progress call that did something (unio-perf,
 * and any loop of that shape) otherwise saw a completed get up to 64 idle calls late.
 */
static unsigned int
conn_rx(struct tcp_conn *c)
{
	unsigned int n = 0;
	ssize_t r;

	if (unlikely(c->ack_owed) && !rx_direct_ack(c))
		return 0;  /* frames after that put wait behind its ack */
	if (c->rx_stalled) {  /* a get waiting for tx room: retry it first */
		int p;

		c->rx_stalled = false;
		p = rx_parse(c, &n);
		if (p != 0)
			return n + (p < 0);
	}
	if (c->dr_active) {
		int d = rx_direct(c);

		if (d <= 0)
			return n + (d < 0);
		n++;
		if (c->ack_owed || c->state != TCP_CONN_ESTABLISHED)
			return n;
	}
	if (unlikely(c->rx_len == TCP_RXBUF_SIZE))
		return n;  /* only complete frames waiting (stalled): nothing to read into */
	r = tcp_recv(c->item.fd, c->rxbuf + c->rx_len, rx_want(c), MSG_DONTWAIT);
	if (r > 0) {
		c->rx_quiet = 0;
		c->rx_len += (size_t)r;
		if (rx_parse(c, &n) < 0)
			return n + 1;  /* malformed, or failed in a handler: its ops completed */
		/* a direct frame just started: its rest is likely in the socket already */
		if (c->dr_active && c->state == TCP_CONN_ESTABLISHED) {
			int d = rx_direct(c);

			n += d != 0 ? 1 : 0;  /* completed, or the connection failed */
		}
		return n;
	}
	if (r == 0) {
		if (c->rx_len > 0) {
			tcp_conn_cut(c);
		} else {
			c->eof = true;
			tcp_conn_fail(c, UNIO_ERR_CONNECTION_RESET);
		}
		return n + 1;
	}
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
		c->iface->stats.rx_empty++;
		if (c->rx_quiet < c->cold_at && ++c->rx_quiet == c->cold_at)
			c->iface->stats.rx_cold++;
		return n;
	}
	tcp_conn_fail(c, tcp_status_from_errno(errno));
	return n + 1;
}

/*
 * A frame handler may read another connection (a MOVE_START reads its twin's MOVE_END,
 * takes the HELLOs), and what a peer sends decides which: a connection already parsing
 * further up is not read again (its buffer is mid-parse), nor moved (conn_try_move()).
 * The MOVE_START that wanted it stalls and is retried from progress.
 */
unsigned int
tcp_conn_rx(struct tcp_conn *c)
{
	unsigned int n;

	if (c->state != TCP_CONN_ESTABLISHED || c->in_rx)
		return 0;
	c->in_rx = true;
	n = conn_rx(c);
	c->in_rx = false;
	return n;
}
