/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The receive side: AM handlers of the protocol stage (every header field validated before
 * use), delivery into posted receives, the unexpected queue, rendezvous pulls and the
 * public receive calls.
 */

#include <string.h>

#include "unio_log.h"
#include "unio_memcpy.h"
#include "proto_am_rma.h"
#include "unio_proto.h"

/* Largest message a peer may announce (validation bound, 1 TiB). */
#define PROTO_MAX_MSG (1ull << 40)

/* memcpy without the library call for the few bytes of a small message */
static inline void
copy_small(uint8_t *dst, const uint8_t *src, size_t len)
{
	if (len > 16)
		memcpy(dst, src, len);
	else
		unio_memcpy_upto16(dst, src, len);
}

static void
recv_done(struct unio_request *req, uint64_t tag, size_t len, const void *data)
{
	req->info.tag = tag;
	req->info.length = len;
	if (unlikely(len > req->rlen)) {
		proto_req_complete(req, UNIO_ERR_MESSAGE_TRUNCATED);
		return;
	}
	copy_small(req->rbuf, data, len);
	proto_req_complete(req, UNIO_OK);
}

/*
 * An unexpected message finds no memory (UNIO_UNEXP_MEM, or the allocation failed): it is
 * dropped whole, counted once under its own reason, and a sender that waits for the receiver
 * (sync send: SYNC_ACK; rendezvous: ATS, @p ack_id) fails with UNIO_ERR_NO_MEMORY.
 */
static void
unexp_no_memory(struct unio_worker *w, uint32_t ep_id, uint8_t ack_id, uint64_t sreq_id,
		size_t len)
{
	struct unio_ep *ep = sreq_id != 0 ? proto_ep_lookup(w, ep_id) : NULL;

	PROTO_LOG(ERR, "no memory for a %zu-byte unexpected message: dropped%s", len,
		  ep != NULL ? ", its sender fails" : "");
	w->n_dropped_nomem++;
	if (ep != NULL)
		proto_send_ack(ep, ack_id, sreq_id, UNIO_ERR_NO_MEMORY);
}

/* out of line: the expected path of am_eager_short() keeps its registers */
static __rte_noinline void
unexp_eager(struct unio_worker *w, uint64_t tag, const void *data, size_t len,
	    const struct proto_eager_hdr *h)
{
	struct proto_unexp *ux = proto_unexp_alloc(w, len);

	if (unlikely(ux == NULL)) {
		unexp_no_memory(w, h != NULL ? h->ep_id : 0, PROTO_AM_SYNC_ACK,
				h != NULL ? h->sreq_id : 0, len);
		return;
	}
	ux->tag = tag;
	ux->complete = true;
	ux->received = len;
	if (h != NULL) {
		ux->sync = h->sreq_id != 0;
		ux->sreq_id = h->sreq_id;
		ux->ep_id = h->ep_id;
	}
	copy_small(ux->data, data, len);
	proto_unexp_add(w, ux);
}

/* am_eager_short() of every message its fast path does not take */
static __rte_noinline unio_status_t
eager_short_checked(struct unio_worker *w, const void *data, size_t length)
{
	struct unio_request *req;
	uint64_t tag;

	if (unlikely(length < sizeof(tag))) {
		PROTO_LOG(ERR, "eager short: %zu-byte message is shorter than its header", length);
		w->n_dropped++;
		return UNIO_OK;
	}
	memcpy(&tag, data, sizeof(tag));
	req = proto_exp_match(w, tag);
	if (likely(req != NULL))
		recv_done(req, tag, length - sizeof(tag), (const uint8_t *)data + sizeof(tag));
	else
		unexp_eager(w, tag, (const uint8_t *)data + sizeof(tag), length - sizeof(tag),
			    NULL);
	return UNIO_OK;
}

/*
 * The fast path: up to 16 bytes for the oldest receive at the head of the tag's exact
 * bucket, while no receive with another mask is posted (proto_exp_match()'s own shortcut),
 * not truncated, holding no registration.  Every call but the callback's is a tail call, so
 * it saves no registers; the rest goes to eager_short_checked().
 */
static unio_status_t
am_eager_short(void *arg, const void *data, size_t length, unsigned int flags,
	       unio_tl_conn_id_t conn_id)
{
	struct unio_worker *w = arg;
	size_t len = length - sizeof(uint64_t);
	struct unio_request *req;
	struct req_list *b;
	uint64_t tag;

	/* names no ep: the tag is all it says of its sender */
	RTE_SET_USED(flags), RTE_SET_USED(conn_id);
	if (unlikely(length < sizeof(tag) || len > 16 || w->n_exp_exact == 0 ||
		     w->n_exp_masked != 0))
		return eager_short_checked(w, data, length);
	memcpy(&tag, data, sizeof(tag));
	b = &w->exp_exact[proto_bucket_of(tag)];
	req = TAILQ_FIRST(b);
	if (unlikely(req == NULL || req->rtag != tag || len > req->rlen || req->memh_valid))
		return eager_short_checked(w, data, length);
	req->posted = false;
	TAILQ_REMOVE(b, req, link);
	w->n_exp_exact--;
	req->info.tag = tag;
	req->info.length = len;
	copy_small(req->rbuf, (const uint8_t *)data + sizeof(tag), len);
	if (req->type != REQ_RECV)   /* the matching queues hold receives only (checked by UBSan) */
		__builtin_unreachable();
	proto_req_complete_unreg(req, UNIO_OK);
	return UNIO_OK;
}

static void
sync_ack(struct unio_worker *w, uint32_t ep_id, uint64_t sreq_id)
{
	struct unio_ep *ep = proto_ep_lookup(w, ep_id);

	if (ep == NULL) {
		PROTO_LOG(ERR, "sync send from unknown ep id %#x: no acknowledgement", ep_id);
		return;
	}
	proto_send_ack(ep, PROTO_AM_SYNC_ACK, sreq_id, UNIO_OK);
}

static unio_status_t
am_eager(void *arg, const void *data, size_t length, unsigned int flags,
	 unio_tl_conn_id_t conn_id)
{
	struct unio_worker *w = arg;
	struct proto_eager_hdr h;
	struct unio_request *req;
	const uint8_t *p = data;
	struct unio_ep *ep;

	RTE_SET_USED(flags);
	if (unlikely(length < sizeof(h))) {
		PROTO_LOG(ERR, "eager: %zu-byte message is shorter than its header", length);
		w->n_dropped++;
		return UNIO_OK;
	}
	memcpy(&h, data, sizeof(h));
	/* the ep it names: where a sync answer goes, and the sender's word for who it is */
	ep = proto_ep_from(w, h.ep_id, conn_id);
	if (unlikely(ep == NULL)) {
		PROTO_LOG(ERR, "eager: names ep %#x, which is unknown or another peer's", h.ep_id);
		w->n_dropped++;
		return UNIO_OK;
	}
	length -= sizeof(h);
	req = proto_exp_match(w, h.tag);
	if (req == NULL) {
		unexp_eager(w, h.tag, p + sizeof(h), length, &h);
		return UNIO_OK;
	}
	if (h.sreq_id != 0)
		proto_send_ack(ep, PROTO_AM_SYNC_ACK, h.sreq_id, UNIO_OK);
	recv_done(req, h.tag, length, p + sizeof(h));
	return UNIO_OK;
}

/* Bind the multi-fragment message in progress on @p ep to receive @p req. */
static void
frag_bind(struct unio_ep *ep, struct unio_request *req, const void *got, size_t n)
{
	struct proto_rx_frag *rx = &ep->rx;

	req->info.tag = rx->ux != NULL ? rx->ux->tag : req->info.tag;
	req->info.length = rx->total;
	rx->req = NULL;
	if (rx->total > req->rlen) {
		rx->drop = true;
		proto_req_complete(req, UNIO_ERR_MESSAGE_TRUNCATED);
		return;
	}
	unio_memcpy_part(req->rbuf, got, n, rx->total);
	rx->req = req;
}

static unio_status_t
am_eager_first(void *arg, const void *data, size_t length, unsigned int flags,
	       unio_tl_conn_id_t conn_id)
{
	struct unio_worker *w = arg;
	struct proto_eager_first_hdr h;
	struct unio_request *req;
	struct unio_ep *ep;
	size_t n;

	RTE_SET_USED(flags);
	if (unlikely(length < sizeof(h)))
		goto bad;
	memcpy(&h, data, sizeof(h));
	n = length - sizeof(h);
	ep = proto_ep_from(w, h.e.ep_id, conn_id);
	/* a message being swallowed (truncated, no memory) that its sender abandoned: the new
	 * one replaces it (fragments arrive in order, so a correct sender never does this) */
	if (unlikely(ep == NULL || (ep->rx.active && !(ep->rx.drop && ep->rx.req == NULL &&
						       ep->rx.ux == NULL)) ||
		     h.total > PROTO_MAX_MSG || n >= h.total || n == 0))
		goto bad;
	ep->rx = (struct proto_rx_frag){ .total = h.total, .offset = n, .cookie = h.cookie,
					 .active = true };
	req = proto_exp_match(w, h.e.tag);
	if (req != NULL) {
		if (h.e.sreq_id != 0)
			proto_send_ack(ep, PROTO_AM_SYNC_ACK, h.e.sreq_id, UNIO_OK);
		req->info.tag = h.e.tag;
		frag_bind(ep, req, (const uint8_t *)data + sizeof(h), n);
		return UNIO_OK;
	}
	ep->rx.ux = proto_unexp_alloc(w, h.total);
	if (ep->rx.ux == NULL) {
		/* dropped whole: its further fragments are swallowed, not counted again */
		ep->rx.drop = true;
		unexp_no_memory(w, h.e.ep_id, PROTO_AM_SYNC_ACK, h.e.sreq_id, h.total);
		return UNIO_OK;
	}
	ep->rx.ux->tag = h.e.tag;
	ep->rx.ux->sync = h.e.sreq_id != 0;
	ep->rx.ux->sreq_id = h.e.sreq_id;
	ep->rx.ux->ep_id = h.e.ep_id;
	ep->rx.ux->received = n;
	memcpy(ep->rx.ux->data, (const uint8_t *)data + sizeof(h), n);
	proto_unexp_add(w, ep->rx.ux);
	return UNIO_OK;
bad:
	PROTO_LOG(ERR, "eager first fragment: malformed header, unknown or another peer's ep "
		  "(%zu bytes)", length);
	w->n_dropped++;
	return UNIO_OK;
}

static unio_status_t
am_eager_mid(void *arg, const void *data, size_t length, unsigned int flags,
	     unio_tl_conn_id_t conn_id)
{
	struct unio_worker *w = arg;
	struct proto_rx_frag *rx;
	struct proto_frag_hdr h;
	struct unio_ep *ep;
	size_t n;

	RTE_SET_USED(flags);
	if (unlikely(length < sizeof(h)))
		goto bad;
	memcpy(&h, data, sizeof(h));
	n = length - sizeof(h);
	ep = proto_ep_from(w, h.ep_id, conn_id);
	if (unlikely(ep == NULL || !ep->rx.active))
		goto bad;
	rx = &ep->rx;
	/* the cookie: a fragment another peer forged with this ep's (guessable) id */
	if (unlikely(h.rreq_id != rx->cookie || h.offset != rx->offset ||
		     n > rx->total - rx->offset || n == 0))
		goto bad;
	if (rx->req != NULL)
		unio_memcpy_part(rx->req->rbuf + rx->offset, (const uint8_t *)data + sizeof(h), n,
				 rx->total);
	else if (rx->ux != NULL)
		unio_memcpy_part(rx->ux->data + rx->offset, (const uint8_t *)data + sizeof(h), n,
				 rx->total);
	rx->offset += n;
	if (rx->ux != NULL)
		rx->ux->received = rx->offset;
	if (rx->offset < rx->total)
		return UNIO_OK;
	rx->active = false;
	if (rx->ux != NULL)
		rx->ux->complete = true;
	if (rx->req != NULL)
		proto_req_complete(rx->req, UNIO_OK);
	rx->req = NULL;
	rx->ux = NULL;
	return UNIO_OK;
bad:
	PROTO_LOG(ERR, "eager fragment: malformed header, unknown ep or out of order (%zu bytes)",
		  length);
	w->n_dropped++;
	return UNIO_OK;
}

/* ---- rendezvous, receive side ---- */

void
proto_rndv_release_rkey(struct unio_request *req)
{
	struct unio_tl_ep *tl_ep;

	if (!req->rkey_valid)
		return;
	tl_ep = req->rndv_ep->lane.tl_ep;
	if (tl_ep->iface->ctl->rkey_release != NULL)
		tl_ep->iface->ctl->rkey_release(tl_ep, &req->rkey);
	req->rkey_valid = false;
}

void
proto_rndv_finish(struct unio_request *req, unio_status_t st)
{
	struct unio_ep *ep = req->rndv_ep;

	if (proto_req_tl_done(req))
		return;
	proto_rndv_delivered(req, true, st == UNIO_OK);
	proto_rndv_release_rkey(req);
	if (req->on_ep) {
		TAILQ_REMOVE(&ep->outstanding, req, ep_link);
		req->on_ep = false;
	}
	proto_send_ack(ep, PROTO_AM_ATS, req->rndv_sreq, st);
	proto_req_complete(req, st);
}

static void
rndv_get_done(struct unio_tl_completion *comp)
{
	struct unio_request *req = container_of(comp, struct unio_request, comp);

	proto_rndv_finish(req, comp->status);
}

/*
 * Split rendezvous: ask the sender to put the second half of the message (RTP) while this
 * side pulls the first half, so both cores copy at once.  Returns where this side's part
 * ends: @p size when the message is not split.
 */
static size_t
split_ask(struct unio_request *req, size_t size)
{
	struct unio_ep *ep = req->rndv_ep;
	struct unio_tl_iface *iface = ep->lane.iface;
	uint8_t buf[sizeof(struct proto_rtp_hdr) + UNIO_TL_RKEY_MAX];
	struct proto_rtp_hdr rtp = {
		.r = { .sreq_id = req->rndv_sreq, .rreq_id = proto_req_id(req) },
		.offset = (size / 2) & ~(uint64_t)63,
	};

	if (iface->ctl->mem_reg == NULL || iface->ctl->rkey_pack == NULL ||
	    iface->attr.rkey_packed_len > UNIO_TL_RKEY_MAX || rtp.offset == 0 ||
	    sizeof(buf) > iface->attr.max_bcopy ||
	    size - rtp.offset > iface->attr.max_put_zcopy)  /* the peer puts it at once */
		return size;
	rtp.addr = (uintptr_t)(req->rbuf + rtp.offset);
	if (iface->ctl->mem_reg(iface, req->rbuf + rtp.offset, size - rtp.offset,
				&req->memh) != UNIO_OK)
		return size;
	req->memh_valid = true;
	req->memh_iface = iface;
	if (iface->ctl->rkey_pack(iface, &req->memh, buf + sizeof(rtp)) != UNIO_OK)
		return size;   /* memh released when the request completes */
	rtp.rkey_len = (uint16_t)iface->attr.rkey_packed_len;
	memcpy(buf, &rtp, sizeof(rtp));
	req->split_wait = true;
	req->comp.count++;    /* the sender's ATS */
	proto_send_ctl(ep, PROTO_AM_RTR, buf, sizeof(rtp) + rtp.rkey_len);
	return rtp.offset;
}

unio_status_t
proto_rndv_pull(struct unio_request *req, uint64_t addr, size_t size, bool split)
{
	uint64_t base = req->rkey.remote_base;

	if (!unio_tl_rkey_covers(&req->rkey, addr, size))
		return UNIO_ERR_OUT_OF_RANGE;
	if (req->rkey.local_ptr != NULL) {
		unio_memcpy_part(req->rbuf, (uint8_t *)req->rkey.local_ptr + (addr - base), size,
				 RTE_MAX(size, (size_t)req->info.length));
		proto_rndv_finish(req, UNIO_OK);
		return UNIO_OK;
	}
	req->comp = (struct unio_tl_completion){ .func = rndv_get_done, .count = 1 };
	TAILQ_INSERT_TAIL(&req->rndv_ep->outstanding, req, ep_link);
	req->on_ep = true;
	/* the transfer fields of an RMA get: proto_rma_issue() issues and queues the chunks */
	req->ep = req->rndv_ep;
	req->sbuf = req->rbuf;
	req->slen = split ? split_ask(req, size) : size;
	req->tag = addr;
	req->sync = false;
	/* the sender's buffer does not change until our ATS: striping cannot reorder anything */
	req->rails = !split && size >= PROTO_RAIL_MIN ? (uint8_t)(1 + req->ep->n_rails) : 1;
	req->offset = 0;
	proto_rma_issue(req);
	return UNIO_OK;
}

static void
rndv_ask_pipeline(struct unio_request *req)
{
	struct proto_rtr_hdr r = {
		.sreq_id = req->rndv_sreq, .rreq_id = proto_req_id(req),
	};

	req->received = 0;
	TAILQ_INSERT_TAIL(&req->rndv_ep->outstanding, req, ep_link);
	req->on_ep = true;
	proto_send_ctl(req->rndv_ep, PROTO_AM_RTR, &r, sizeof(r));
}

/* A receive matched an RTS: pull the data (get), or ask for the pipelined fragments. */
static void
rndv_start(struct unio_request *req, struct unio_ep *ep, const struct proto_rts_hdr *h,
	   const void *rkey)
{
	struct unio_tl_ep *tl_ep = ep->lane.tl_ep;
	bool split;

	req->info.tag = h->tag;
	req->info.length = h->size;
	req->rndv_ep = ep;
	req->rndv_sreq = h->sreq_id;
	if (h->size > req->rlen) {
		proto_send_ack(ep, PROTO_AM_ATS, h->sreq_id, UNIO_OK);
		proto_req_complete(req, UNIO_ERR_MESSAGE_TRUNCATED);
		return;
	}
	split = (h->flags & PROTO_RTS_FLAG_SPLIT) && h->size >= ep->lane.split_min;
	if (!(h->flags & PROTO_RTS_FLAG_PIPELINE) &&
	    (tl_ep->cap & (UNIO_TL_CAP_GET_ZCOPY | UNIO_TL_CAP_RKEY_PTR)) &&
	    tl_ep->iface->ctl->rkey_unpack != NULL &&
	    (split || proto_rndv_recv_pull(req, ep, h->size, true)) &&
	    tl_ep->iface->ctl->rkey_unpack(tl_ep, rkey, h->rkey_len, &req->rkey) == UNIO_OK) {
		req->rkey_valid = true;
		if (proto_rndv_pull(req, h->addr, h->size, split) == UNIO_OK)
			return;
		proto_rndv_release_rkey(req);
	}
	if (req->adapt == 0 && !split)   /* not offered: timed as a pipeline */
		proto_rndv_recv_pull(req, ep, h->size, false);
	rndv_ask_pipeline(req);
}

static unio_status_t
am_rts(void *arg, const void *data, size_t length, unsigned int flags,
       unio_tl_conn_id_t conn_id)
{
	struct unio_worker *w = arg;
	struct proto_rts_hdr h;
	struct unio_request *req;
	struct proto_unexp *ux;
	struct unio_ep *ep;

	RTE_SET_USED(flags);
	if (unlikely(length < sizeof(h)))
		goto bad;
	memcpy(&h, data, sizeof(h));
	ep = proto_ep_from(w, h.ep_id, conn_id);
	if (unlikely(ep == NULL || h.rkey_len > UNIO_TL_RKEY_MAX ||
		     length != sizeof(h) + h.rkey_len || h.size > PROTO_MAX_MSG ||
		     h.sreq_id == 0))
		goto bad;
	req = proto_exp_match(w, h.tag);
	if (req != NULL) {
		/* the ATS acknowledges a sync rendezvous as well */
		rndv_start(req, ep, &h, (const uint8_t *)data + sizeof(h));
		return UNIO_OK;
	}
	ux = proto_unexp_alloc(w, 0);
	if (ux == NULL) {
		unexp_no_memory(w, h.ep_id, PROTO_AM_ATS, h.sreq_id, h.size);
		return UNIO_OK;
	}
	ux->tag = h.tag;
	ux->length = h.size;
	ux->is_rts = true;
	ux->complete = true;
	ux->ep_id = h.ep_id;
	ux->rts = h;
	memcpy(ux->rkey, (const uint8_t *)data + sizeof(h), h.rkey_len);
	proto_unexp_add(w, ux);
	return UNIO_OK;
bad:
	PROTO_LOG(ERR, "RTS: malformed header, unknown or another peer's ep (%zu bytes)", length);
	w->n_dropped++;
	return UNIO_OK;
}

static struct unio_request *
lookup_active(struct unio_worker *w, uint64_t id, uint8_t type)
{
	struct unio_request *req = proto_req_lookup(w, id);

	if (req == NULL || req->type != type || req->state != REQ_ACTIVE)
		return NULL;
	return req;
}

static unio_status_t
am_ack(void *arg, const void *data, size_t length, unsigned int flags,
       unio_tl_conn_id_t conn_id)
{
	struct unio_worker *w = arg;
	struct unio_request *req;
	struct proto_ack_hdr h;

	RTE_SET_USED(flags);
	if (unlikely(length != sizeof(h)))
		goto bad;
	memcpy(&h, data, sizeof(h));
	req = lookup_active(w, h.sreq_id, REQ_SEND);
	if (req != NULL && !proto_ep_sent(req->ep, conn_id))
		req = NULL;   /* from another peer than the one the send went to */
	/*
	 * A sync multi-fragment message is answered when its first fragment matches, maybe
	 * while the rest still waits for room here: it completes once its last one went out
	 * (with the answer's status: not NO_RESOURCE, which would queue it again).
	 */
	if (req != NULL && req->proto == SEND_FRAGS && req->sync && !req->sync_acked &&
	    req->offset != 0 && h.status <= 0 && h.status > UNIO_ERR_LAST &&
	    h.status != UNIO_ERR_NO_RESOURCE) {
		req->sync_acked = true;
		req->ack_status = h.status;
		return UNIO_OK;
	}
	/* comp.count: the part of a split rendezvous the peer asked for is still being put */
	if (req == NULL || req->proto != SEND_WAIT_ACK || h.status > 0 ||
	    h.status <= UNIO_ERR_LAST || (req->rreq_id != 0 && req->comp.count != 0))
		goto bad;
	TAILQ_REMOVE(&req->ep->outstanding, req, ep_link);
	req->on_ep = false;
	if (req->adapt != 0)   /* a rendezvous the receiver pulled, or refused */
		proto_rndv_sent(req, true, h.status == UNIO_OK);
	proto_req_complete(req, h.status == UNIO_ERR_MESSAGE_TRUNCATED ? UNIO_OK : h.status);
	return UNIO_OK;
bad:
	PROTO_LOG(ERR, "ATS/ACK: malformed or for an unknown request (%zu bytes)", length);
	w->n_dropped++;
	return UNIO_OK;
}

/* ATS: a rendezvous send is done, or the sender's part of a split receive is written */
static unio_status_t
am_ats(void *arg, const void *data, size_t length, unsigned int flags,
       unio_tl_conn_id_t conn_id)
{
	struct unio_worker *w = arg;
	struct unio_request *req;
	struct proto_ack_hdr h;

	if (unlikely(length != sizeof(h)))
		return am_ack(arg, data, length, flags, conn_id);
	memcpy(&h, data, sizeof(h));
	req = lookup_active(w, h.sreq_id, REQ_RECV);
	if (req == NULL)
		return am_ack(arg, data, length, flags, conn_id);
	if (!req->split_wait || h.status > 0 || h.status <= UNIO_ERR_LAST ||
	    !proto_ep_sent(req->rndv_ep, conn_id)) {
		PROTO_LOG(ERR, "ATS for a receive that waits for no split part");
		w->n_dropped++;
		return UNIO_OK;
	}
	req->split_wait = false;
	if (h.status == UNIO_ERR_NO_RESOURCE && req->rkey_valid) {
		/*
		 * The sender's transport had no room for its part (tcp's queue full under a window
		 * of large sends): pull that part too, through the same queue as the first.
		 */
		bool queued = req->offset < req->slen;   /* first part still waiting for room */

		req->slen = req->info.length;
		if (queued)   /* the queue's hold covers the rest: drop the ATS hold */
			unio_tl_completion_done(&req->comp, UNIO_OK);
		else          /* the ATS hold becomes the issue hold */
			proto_rma_issue(req);
		return UNIO_OK;
	}
	unio_tl_completion_done(&req->comp, h.status);
	return UNIO_OK;
}

/* the split rendezvous' RTP: validate, then put the asked part */
static void
rtp_in(struct unio_worker *w, const void *data, size_t length, unio_tl_conn_id_t conn_id)
{
	struct unio_request *req;
	struct proto_rtp_hdr h;

	memcpy(&h, data, sizeof(h));
	req = lookup_active(w, h.r.sreq_id, REQ_SEND);
	/* rreq_id: a part was asked for already */
	if (req == NULL || !proto_ep_sent(req->ep, conn_id) || req->proto != SEND_WAIT_ACK ||
	    h.r.rreq_id == 0 || req->rreq_id != 0 ||
	    h.rkey_len > UNIO_TL_RKEY_MAX || length != sizeof(h) + h.rkey_len ||
	    h.offset == 0 || h.offset >= req->slen) {
		PROTO_LOG(ERR, "RTP: malformed or for an unknown request (%zu bytes)", length);
		w->n_dropped++;
		return;
	}
	proto_rndv_put_part(req, &h, (const uint8_t *)data + sizeof(h));
}

static unio_status_t
am_rtr(void *arg, const void *data, size_t length, unsigned int flags,
       unio_tl_conn_id_t conn_id)
{
	struct unio_worker *w = arg;
	struct unio_request *req;
	struct proto_rtr_hdr h;

	RTE_SET_USED(flags);
	if (length >= sizeof(struct proto_rtp_hdr)) {
		rtp_in(w, data, length, conn_id);
		return UNIO_OK;
	}
	if (unlikely(length != sizeof(h)))
		goto bad;
	memcpy(&h, data, sizeof(h));
	req = lookup_active(w, h.sreq_id, REQ_SEND);
	/* rreq_id: a part was asked for already (RTP), or the data streamed (RTR) */
	if (req == NULL || !proto_ep_sent(req->ep, conn_id) || req->proto != SEND_WAIT_ACK ||
	    h.rreq_id == 0 || req->slen == 0 || req->rreq_id != 0)
		goto bad;
	proto_send_pipeline(req, h.rreq_id);
	return UNIO_OK;
bad:
	PROTO_LOG(ERR, "RTR: malformed or for an unknown request (%zu bytes)", length);
	w->n_dropped++;
	return UNIO_OK;
}

static unio_status_t
am_pipe(void *arg, const void *data, size_t length, unsigned int flags,
	unio_tl_conn_id_t conn_id)
{
	struct unio_worker *w = arg;
	struct unio_request *req;
	struct proto_frag_hdr h;
	size_t n;

	RTE_SET_USED(flags);
	if (unlikely(length < sizeof(h)))
		goto bad;
	memcpy(&h, data, sizeof(h));
	n = length - sizeof(h);
	req = lookup_active(w, h.rreq_id, REQ_RECV);
	/* a receive that pulls (rkey, comp) takes no pipelined fragment */
	if (unlikely(req == NULL || req->rndv_ep == NULL || req->rndv_ep->id != h.ep_id ||
		     !proto_ep_sent(req->rndv_ep, conn_id) || req->rkey_valid ||
		     req->comp.count != 0 || h.offset != req->received ||
		     n > req->info.length - req->received))
		goto bad;
	unio_memcpy_part(req->rbuf + h.offset, (const uint8_t *)data + sizeof(h), n,
			 req->info.length);
	req->received += n;
	if (req->received == req->info.length) {
		proto_rndv_delivered(req, false, true);
		if (req->on_ep) {
			TAILQ_REMOVE(&req->rndv_ep->outstanding, req, ep_link);
			req->on_ep = false;
		}
		proto_req_complete(req, UNIO_OK);
	}
	return UNIO_OK;
bad:
	PROTO_LOG(ERR, "pipelined fragment: malformed or for an unknown receive (%zu bytes)",
		  length);
	w->n_dropped++;
	return UNIO_OK;
}

static const unio_tl_am_cb_t am_handlers[PROTO_AM_MAX] = {
	[PROTO_AM_EAGER_SHORT] = am_eager_short,
	[PROTO_AM_EAGER] = am_eager,
	[PROTO_AM_EAGER_FIRST] = am_eager_first,
	[PROTO_AM_EAGER_MID] = am_eager_mid,
	[PROTO_AM_RTS] = am_rts,
	[PROTO_AM_ATS] = am_ats,
	[PROTO_AM_RTR] = am_rtr,
	[PROTO_AM_PIPE] = am_pipe,
	[PROTO_AM_SYNC_ACK] = am_ack,
};

unio_status_t
proto_set_handlers(struct unio_worker *w, struct unio_tl_iface *iface)
{
	for (uint8_t id = 1; id < PROTO_AM_MAX; id++) {
		unio_status_t st = unio_tl_iface_set_am_handler(iface, id, am_handlers[id], w);

		if (st != UNIO_OK)
			return st;
	}
	return UNIO_OK;
}

/* ---- receiving an unexpected message ---- */

unio_status_t
proto_recv_unexp_now(struct unio_worker *w, void *buf, size_t len, struct proto_unexp *ux,
		     const struct unio_request_param *param)
{
	unio_status_t st = UNIO_OK;

	proto_unexp_remove(w, ux);
	if (ux->sync)
		sync_ack(w, ux->ep_id, ux->sreq_id);
	if (unlikely(ux->length > len))
		st = UNIO_ERR_MESSAGE_TRUNCATED;   /* nothing written */
	else
		copy_small(buf, ux->data, ux->length);
	if (param != NULL && (param->field_mask & UNIO_REQ_PARAM_RECV_INFO) &&
	    param->recv_info != NULL) {
		param->recv_info->tag = ux->tag;
		param->recv_info->length = ux->length;
	}
	proto_unexp_free(w, ux);
	return st;
}

unio_status_t
proto_recv_unexp(struct unio_worker *w, struct unio_request *req, struct proto_unexp *ux)
{
	struct unio_ep *ep;

	proto_unexp_remove(w, ux);
	if (ux->is_rts) {
		ep = proto_ep_lookup(w, ux->ep_id);
		if (ep == NULL) {
			req->info.tag = ux->tag;
			req->info.length = ux->length;
			proto_req_complete(req, UNIO_ERR_CONNECTION_RESET);
		} else {
			rndv_start(req, ep, &ux->rts, ux->rkey);
		}
	} else if (!ux->complete) {
		ep = proto_ep_lookup(w, ux->ep_id);
		RTE_VERIFY(ep != NULL && ep->rx.ux == ux);
		if (ux->sync)
			proto_send_ack(ep, PROTO_AM_SYNC_ACK, ux->sreq_id, UNIO_OK);
		req->info.tag = ux->tag;
		frag_bind(ep, req, ux->data, ux->received);
		ep->rx.ux = NULL;
	} else {
		if (ux->sync)
			sync_ack(w, ux->ep_id, ux->sreq_id);
		recv_done(req, ux->tag, ux->length, ux->data);
	}
	proto_unexp_free(w, ux);
	return UNIO_OK;
}
