/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tagged sends: eager short, eager bcopy, multi-fragment eager, rendezvous (get or
 * pipelined), and the pending queue for sends that ran out of transport resources.
 */

#include <string.h>

#include "unio_log.h"
#include "unio_memcpy.h"
#include "unio_proto.h"

#define CTL_SEND 100  /* a control message (ATS, RTR, SYNC_ACK) waiting in the pending queue */

/*
 * The packers build each header on the stack and copy it: a transport may hand out @p dest
 * at any alignment (tcp packs frames back to back in its send buffer).
 */
static size_t
pack_eager(void *dest, void *arg)
{
	struct unio_request *req = arg;
	struct proto_eager_hdr h = {
		.tag = req->tag, .sreq_id = req->sync ? proto_req_id(req) : 0,
		.ep_id = req->ep->remote_id, .flags = 0,
	};

	memcpy(dest, &h, sizeof(h));
	unio_memcpy_part((uint8_t *)dest + sizeof(h), req->sbuf, req->slen, 0);   /* staging */
	return sizeof(h) + req->slen;
}

/* payload bytes of the fragment at req->offset (proto_lane: frag, frag_last, frag_first) */
static inline size_t
frag_len(const struct unio_request *req)
{
	const struct proto_lane *lane = &req->ep->lane;
	size_t left = req->slen - req->offset;

	if (req->offset == 0 && req->proto == SEND_FRAGS)
		return RTE_MIN(left, lane->frag_first);
	return left <= lane->frag_last ? left : lane->frag;
}

static size_t
pack_frag(void *dest, void *arg)
{
	struct unio_request *req = arg;
	size_t chunk = frag_len(req);
	uint8_t *p = dest;

	if (req->offset == 0 && req->proto == SEND_FRAGS) {
		struct proto_eager_first_hdr f = {
			.e = { .tag = req->tag, .ep_id = req->ep->remote_id, .flags = 0 },
			.total = req->slen,
		};

		/* the cookie, sealed once: the further fragments repeat it from rreq_id */
		req->rreq_id = proto_req_id(req);
		f.cookie = req->rreq_id;
		f.e.sreq_id = req->sync ? req->rreq_id : 0;

		memcpy(p, &f, sizeof(f));
		p += sizeof(f);
	} else {
		/* pipelined: the receive; eager: the first fragment's cookie */
		struct proto_frag_hdr h = {
			.rreq_id = req->rreq_id, .offset = req->offset,
			.ep_id = req->ep->remote_id, .pad = 0,
		};

		memcpy(p, &h, sizeof(h));
		p += sizeof(h);
	}
	unio_memcpy_part(p, req->sbuf + req->offset, chunk, 0);   /* into the transport's buffer */
	return (size_t)(p - (uint8_t *)dest) + chunk;
}

static size_t
pack_rts(void *dest, void *arg)
{
	struct unio_request *req = arg;
	struct unio_tl_iface *iface = req->ep->lane.iface;
	struct proto_rts_hdr h = {
		.tag = req->tag, .size = req->slen, .sreq_id = proto_req_id(req),
		.addr = (uintptr_t)req->sbuf, .ep_id = req->ep->remote_id,
		.flags = req->sync ? PROTO_RTS_FLAG_SYNC : 0,
	};
	uint8_t key[UNIO_TL_RKEY_MAX];
	size_t rkey_len = 0;

	if (req->memh_valid && iface->ctl->rkey_pack != NULL &&
	    iface->attr.rkey_packed_len <= sizeof(key) &&
	    iface->ctl->rkey_pack(iface, &req->memh, key) == UNIO_OK)
		rkey_len = iface->attr.rkey_packed_len;
	if (rkey_len == 0)
		h.flags |= PROTO_RTS_FLAG_PIPELINE;
	else if (req->slen >= req->ep->lane.split_min &&
		 (req->ep->lane.tl_ep->cap & UNIO_TL_CAP_PUT_ZCOPY))
		h.flags |= PROTO_RTS_FLAG_SPLIT;
	h.rkey_len = (uint16_t)rkey_len;
	memcpy(dest, &h, sizeof(h));
	memcpy((uint8_t *)dest + sizeof(h), key, rkey_len);
	return sizeof(h) + rkey_len;
}

static size_t
pack_ctl(void *dest, void *arg)
{
	struct unio_request *req = arg;

	memcpy(dest, req->ctl, req->slen);
	return req->slen;
}

static unio_status_t
send_bcopy(struct unio_request *req, uint8_t id, unio_tl_pack_cb_t pack)
{
	ssize_t r = unio_tl_ep_am_bcopy(req->ep->lane.tl_ep, id, pack, req, 0);

	return r < 0 ? (unio_status_t)r : UNIO_OK;
}

static unio_status_t
send_frags(struct unio_request *req, uint8_t first_id, uint8_t mid_id)
{
	unio_status_t st;

	do {
		uint8_t id = req->offset == 0 && req->proto == SEND_FRAGS ? first_id : mid_id;

		st = send_bcopy(req, id, pack_frag);
		if (st != UNIO_OK)
			return st;
		req->offset += frag_len(req);
	} while (req->offset < req->slen);
	return UNIO_OK;
}

static void
eager_zcopy_done(struct unio_tl_completion *comp)
{
	struct unio_request *req = container_of(comp, struct unio_request, comp);

	if (proto_req_tl_done(req))
		return;
	proto_req_complete(req, comp->status);
}

/* Eager from the user's buffer: the header copied, the payload read until completion. */
static unio_status_t
send_eager_zcopy(struct unio_request *req)
{
	struct proto_eager_hdr h = { .tag = req->tag, .ep_id = req->ep->remote_id };
	struct iovec iov = { .iov_base = (void *)(uintptr_t)req->sbuf, .iov_len = req->slen };
	unio_status_t st;

	req->comp = (struct unio_tl_completion){ .func = eager_zcopy_done, .count = 1 };
	st = unio_tl_ep_am_zcopy(req->ep->lane.tl_ep, PROTO_AM_EAGER, &h, sizeof(h), &iov, 1, 0,
				 &req->comp);
	if (st == UNIO_OK || st == UNIO_INPROGRESS)
		req->ep->lane.n_zcopy++;
	return st;
}

static void
rndv_register(struct unio_request *req)
{
	struct unio_tl_iface *iface = req->ep->lane.iface;

	req->memh_valid = false;
	if (!proto_rndv_offer_get(req) || iface->ctl->mem_reg == NULL ||
	    iface->attr.rkey_packed_len == 0 ||
	    iface->attr.rkey_packed_len + sizeof(struct proto_rts_hdr) > iface->attr.max_bcopy)
		return;
	if (iface->ctl->mem_reg(iface, (void *)(uintptr_t)req->sbuf, req->slen, &req->memh) ==
	    UNIO_OK) {
		req->memh_valid = true;
		req->memh_iface = iface;
	}
}

static void
wait_peer(struct unio_request *req)
{
	req->proto = SEND_WAIT_ACK;
	TAILQ_INSERT_TAIL(&req->ep->outstanding, req, ep_link);
	req->on_ep = true;
}

/* One attempt: OK = locally done, INPROGRESS = waiting for the peer, else an error. */
static unio_status_t
send_step(struct unio_request *req)
{
	struct proto_lane *lane = &req->ep->lane;
	unio_status_t st;

	switch (req->proto) {
	case SEND_SHORT:
		return unio_tl_ep_am_short(lane->tl_ep, PROTO_AM_EAGER_SHORT, req->tag, req->sbuf,
					   req->slen);
	case SEND_EAGER:
		st = send_bcopy(req, PROTO_AM_EAGER, pack_eager);
		break;
	case SEND_EAGER_ZCOPY:   /* not sync: choose_proto() */
		return send_eager_zcopy(req);
	case SEND_FRAGS:
		st = send_frags(req, PROTO_AM_EAGER_FIRST, PROTO_AM_EAGER_MID);
		if (st == UNIO_OK && req->sync_acked)   /* answered already (am_ack()) */
			return req->ack_status == UNIO_ERR_MESSAGE_TRUNCATED ? UNIO_OK :
			       req->ack_status;
		break;
	case SEND_RNDV_GET:
		if (req->adapt == 0)   /* chosen once, at the first attempt */
			rndv_register(req);
		st = send_bcopy(req, PROTO_AM_RTS, pack_rts);
		if (st == UNIO_OK) {
			wait_peer(req);
			return UNIO_INPROGRESS;
		}
		return st;
	case SEND_RNDV_PIPE_DATA:
		st = send_frags(req, PROTO_AM_PIPE, PROTO_AM_PIPE);
		if (st == UNIO_OK && req->adapt != 0)
			proto_rndv_sent(req, false, true);
		return st;
	case CTL_SEND:
		return send_bcopy(req, req->ctl_id, pack_ctl);
	default:
		return UNIO_ERR_PROTO;
	}
	if (st == UNIO_OK && req->sync) {
		wait_peer(req);
		return UNIO_INPROGRESS;
	}
	return st;
}

static void
choose_proto(struct unio_request *req)
{
	struct proto_lane *lane = &req->ep->lane;
	size_t len = req->slen;

	if (len >= lane->rndv_thresh)
		req->proto = SEND_RNDV_GET;
	else if (!req->sync && lane->short_ok && len <= lane->max_short)
		req->proto = SEND_SHORT;
	else if (!req->sync && len >= lane->zcopy_thresh && len <= lane->max_zcopy)
		req->proto = SEND_EAGER_ZCOPY;
	else if (len <= lane->max_eager)
		req->proto = SEND_EAGER;
	else
		req->proto = SEND_FRAGS;
}

/* Count @p ep among the worker's eps with pending sends (once). */
static void
pending_mark(struct unio_ep *ep)
{
	if (!ep->pending_counted) {
		ep->pending_counted = true;
		ep->worker->n_pending++;
	}
}

static void
pending_unmark(struct unio_ep *ep)
{
	if (ep->pending_counted && TAILQ_EMPTY(&ep->pending)) {
		ep->pending_counted = false;
		ep->worker->n_pending--;
	}
}

static void
pending_add(struct unio_request *req)
{
	TAILQ_INSERT_TAIL(&req->ep->pending, req, link);
	pending_mark(req->ep);
}

/* Run @p req's first step, queue it when out of resources, complete it when done. */
static void
send_start(struct unio_request *req)
{
	unio_status_t st = UNIO_ERR_NO_RESOURCE;

	if (TAILQ_EMPTY(&req->ep->pending) && req->ep->state == EP_CONNECTED)
		st = send_step(req);
	if (st == UNIO_ERR_NO_RESOURCE)
		pending_add(req);
	else if (st != UNIO_INPROGRESS)
		proto_req_complete(req, st);
}

static unio_status_t
ep_check(const struct unio_ep *ep)
{
	if (likely(ep->state == EP_CONNECTED && !ep->remote_closed))
		return UNIO_OK;
	if (ep->state == EP_CONNECTED)
		return UNIO_ERR_CONNECTION_RESET;
	if (ep->state == EP_CONNECTING)
		return UNIO_INPROGRESS;
	return ep->state == EP_FAILED ? UNIO_ERR_CONNECTION_RESET : UNIO_ERR_NOT_CONNECTED;
}

/* Everything but an eager short that goes out at once: a request, maybe queued. */
static __rte_noinline unio_status_t
send_slow(struct unio_ep *ep, const void *buf, size_t len, uint64_t tag, bool sync,
	  const struct unio_request_param *param, unio_request_t **req_p)
{
	unio_status_t st = ep_check(ep);
	struct unio_request *req;

	if (st != UNIO_OK && st != UNIO_INPROGRESS)
		return st;
	req = proto_req_get(ep->worker);
	if (unlikely(req == NULL))
		return UNIO_ERR_NO_MEMORY;
	req->type = REQ_SEND;
	req->ep = ep;
	req->sbuf = buf;
	req->slen = len;
	req->tag = tag;
	req->sync = sync;
	choose_proto(req);
	send_start(req);
	return proto_req_hand_out(req, param, req_p);
}

/*
 * The arguments of an eager short send, kept in memory across the driver's call: only a
 * refused send (a full ring) reads them again, so the fast path stores them (six moves)
 * instead of saving six registers to hold them (twelve pushes and pops).
 */
struct short_args {
	struct unio_ep *ep;
	const void *buf;
	size_t len;
	uint64_t tag;
	const struct unio_request_param *param;
	unio_request_t **req_p;
};

static __rte_noinline unio_status_t
send_refused(const struct short_args *a)
{
	return send_slow(a->ep, a->buf, a->len, a->tag, false, a->param, a->req_p);
}

unio_status_t
proto_tag_send(struct unio_ep *ep, const void *buf, size_t len, uint64_t tag, bool sync,
	       const struct unio_request_param *param, unio_request_t **req_p)
{
	const struct proto_lane *lane = &ep->lane;
	unio_status_t st;

	/* the fast path: a connected ep, nothing queued, no flags, fits am_short */
	if (likely(ep->state == EP_CONNECTED && !ep->remote_closed && !sync &&
		   len <= lane->max_short && lane->short_ok && TAILQ_EMPTY(&ep->pending) &&
		   (param == NULL || !(param->field_mask & UNIO_REQ_PARAM_FLAGS) ||
		    !(param->flags & UNIO_REQ_FLAG_NO_IMM_COMPLETION)))) {
		struct short_args a = { ep, buf, len, tag, param, req_p };

		st = unio_tl_ep_am_short(lane->tl_ep, PROTO_AM_EAGER_SHORT, tag, buf, len);
		if (likely(st != UNIO_ERR_NO_RESOURCE))
			return st;
		return send_refused(&a);
	}
	return send_slow(ep, buf, len, tag, sync, param, req_p);
}

unsigned int
proto_progress_pending(struct unio_worker *w)
{
	unsigned int n = 0;

	for (uint32_t i = 0; i < w->n_eps && w->n_pending > 0; i++) {
		struct unio_ep *ep = w->eps[i];
		struct unio_request *req;

		if (ep == NULL || TAILQ_EMPTY(&ep->pending) || ep->state != EP_CONNECTED ||
		    !unio_tl_ep_room_freed(ep->lane.tl_ep))   /* nothing freed: no retry */
			continue;
		while ((req = TAILQ_FIRST(&ep->pending)) != NULL) {
			unio_status_t st = send_step(req);

			if (st == UNIO_ERR_NO_RESOURCE)
				break;
			TAILQ_REMOVE(&ep->pending, req, link);
			n++;
			if (st != UNIO_INPROGRESS)
				proto_req_complete(req, st);
		}
		pending_unmark(ep);
	}
	return n;
}

/* Resume a rendezvous send after RTR: stream the pipelined fragments. */
void
proto_send_pipeline(struct unio_request *req, uint64_t rreq_id)
{
	if (req->on_ep) {
		TAILQ_REMOVE(&req->ep->outstanding, req, ep_link);
		req->on_ep = false;
	}
	req->rreq_id = rreq_id;
	req->proto = SEND_RNDV_PIPE_DATA;
	req->offset = 0;
	send_start(req);
}

static void
put_part_done(struct unio_tl_completion *comp)
{
	struct unio_request *req = container_of(comp, struct unio_request, comp);
	struct unio_tl_ep *tl_ep = req->ep->lane.tl_ep;

	if (proto_req_tl_done(req))
		return;
	if (tl_ep->iface->ctl->rkey_release != NULL)
		tl_ep->iface->ctl->rkey_release(tl_ep, &req->rkey);
	proto_send_ack(req->ep, PROTO_AM_ATS, req->rreq_id, comp->status);
}

/*
 * Split rendezvous: the receiver pulls the first part and asked for the rest at h->addr.
 * The send itself completes on the receiver's ATS (it still reads the first part).
 */
void
proto_rndv_put_part(struct unio_request *req, const struct proto_rtp_hdr *h, const void *rkey)
{
	struct unio_tl_ep *tl_ep = req->ep->lane.tl_ep;
	struct unio_tl_rkey *rk = &req->rkey;
	size_t len = req->slen - h->offset;
	struct iovec iov = { (void *)(uintptr_t)(req->sbuf + h->offset), len };
	unio_status_t st;

	/*
	 * A refused RTP leaves the send waiting for its receiver's own answer (the receive it
	 * names learns the refusal): one forged by another peer must not take the send.
	 */
	if (!(tl_ep->cap & UNIO_TL_CAP_PUT_ZCOPY) || tl_ep->iface->ctl->rkey_unpack == NULL ||
	    tl_ep->iface->ctl->rkey_unpack(tl_ep, rkey, h->rkey_len, rk) != UNIO_OK) {
		PROTO_LOG(ERR, "split rendezvous: unusable rkey from the receiver");
		proto_send_ack(req->ep, PROTO_AM_ATS, h->r.rreq_id, UNIO_ERR_INVALID_PARAM);
		return;
	}
	if (!unio_tl_rkey_covers(rk, h->addr, len)) {
		PROTO_LOG(ERR, "split rendezvous: the receiver's part is outside its rkey");
		if (tl_ep->iface->ctl->rkey_release != NULL)
			tl_ep->iface->ctl->rkey_release(tl_ep, rk);
		proto_send_ack(req->ep, PROTO_AM_ATS, h->r.rreq_id, UNIO_ERR_OUT_OF_RANGE);
		return;
	}
	req->rreq_id = h->r.rreq_id;
	req->comp = (struct unio_tl_completion){ .func = put_part_done, .count = 1 };
	st = unio_tl_ep_put_zcopy(tl_ep, &iov, 1, h->addr, rk, &req->comp);
	if (st != UNIO_INPROGRESS)
		unio_tl_completion_done(&req->comp, st);
}

/*
 * Send a small control message (ATS, RTR, SYNC_ACK).  When the transport is out of
 * resources it waits in the ep's pending queue, its bytes kept in a pool request.
 */
void
proto_send_ctl(struct unio_ep *ep, uint8_t id, const void *hdr, size_t len)
{
	struct unio_request *req;

	if (ep->state != EP_CONNECTED)
		return;
	req = proto_req_get(ep->worker);
	if (req == NULL) {
		PROTO_LOG(ERR, "no request for a control message: the peer will time out");
		return;
	}
	RTE_VERIFY(len <= sizeof(req->ctl));
	memcpy(req->ctl, hdr, len);
	req->ctl_id = id;
	req->type = REQ_SEND;
	req->ep = ep;
	req->slen = len;
	req->proto = CTL_SEND;
	req->user_freed = true;
	send_start(req);
}

void
proto_send_ack(struct unio_ep *ep, uint8_t id, uint64_t sreq_id, unio_status_t st)
{
	struct proto_ack_hdr h = { .sreq_id = sreq_id, .status = st };

	proto_send_ctl(ep, id, &h, sizeof(h));
}

void
proto_ep_fail_requests(struct unio_ep *ep, unio_status_t st)
{
	struct unio_worker *w = ep->worker;
	struct unio_request *req;

	while ((req = TAILQ_FIRST(&ep->pending)) != NULL) {
		TAILQ_REMOVE(&ep->pending, req, link);
		proto_req_complete(req, st);
	}
	pending_unmark(ep);
	while ((req = TAILQ_FIRST(&ep->outstanding)) != NULL) {
		TAILQ_REMOVE(&ep->outstanding, req, ep_link);
		req->on_ep = false;
		if (req->split_wait) {   /* the peer's ATS for its part will not come */
			req->split_wait = false;
			req->comp.count--;
		}
		/*
		 * A transport that still holds req->comp (gets, puts, chunks in flight) calls it
		 * later, at the latest when its ep is destroyed: the request completes for the user
		 * now, but its memory (and the peer's key) stays until that call.
		 */
		if (req->comp.func != NULL && req->comp.count > 0)
			req->tl_held = true;
		else
			proto_rndv_release_rkey(req);
		proto_req_complete(req, st);
	}
	if (ep->rx.active) {
		if (ep->rx.req != NULL)
			proto_req_complete(ep->rx.req, st);
		if (ep->rx.ux != NULL) {
			proto_unexp_remove(w, ep->rx.ux);
			proto_unexp_free(w, ep->rx.ux);
		}
		ep->rx.active = false;
		ep->rx.req = NULL;
		ep->rx.ux = NULL;
	}
}
