/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Active messages.  Eager: one transport message (am_short when it fits, else bcopy) of an
 * 8-byte header, the user header and the data.  Rendezvous: an RTS with the user header and
 * the driver's key for the sender's buffer; the receiver's handler gets a descriptor and
 * pulls the data with unio_am_recv_data() (get, or a copy from the peer's mapping), then an
 * ATS (the tag protocol's) completes the sender, with UNIO_ERR_REJECTED when the handler
 * refused.  Sends that meet a full transport wait in a per-worker queue, in order.
 * w->n_am_pending counts them; the put / get chunks waiting in rma.c have their own count
 * (w->n_rma_pending), so that a full transport under one ep's puts does not send every
 * ep's AMs through the queue.
 */

#include <stdlib.h>
#include <string.h>

#include "proto_am_rma.h"
#include "unio_log.h"
#include "unio_memcpy.h"

#define AM_PROTO_EAGER 0xb0     /* req->proto of a queued eager AM */
#define AM_PROTO_RTS   0xb1     /* req->proto of a queued RTS */
#define AM_SHORT_MAX   PROTO_AM_SHORT_MAX   /* most bytes of header + data through am_short */

struct am_handler {
	unio_am_recv_cb_t cb;
	void *arg;
	unsigned int flags;
};

enum am_item_kind { AM_ITEM_KEPT, AM_ITEM_DESC };

/* Something the application holds: kept eager data or a rendezvous descriptor. */
struct am_item {
	TAILQ_ENTRY(am_item) link;
	enum am_item_kind kind;
};

TAILQ_HEAD(am_item_list, am_item);

struct am_worker {
	struct am_handler h[UNIO_AM_ID_MAX];
	struct req_list pending;
	struct am_item_list held;   /**< what handlers kept, for release and cleanup */
	struct am_desc *in_cb;      /**< the descriptor whose handler runs now */
};

/* Eager data kept past the callback: this, then the data. */
struct am_kept {
	struct am_item item;
	size_t len;
	uint8_t data[] __rte_aligned(16);
};

/* A rendezvous message not yet received. */
struct am_desc {
	struct am_item item;
	struct unio_worker *w;
	uint32_t ep_id;
	uint64_t sreq_id;
	uint64_t size;
	uint64_t addr;
	bool started;           /**< received or released inside its handler */
	bool pipeline;          /**< no key: ask the sender to stream the data (RTR) */
	bool split;             /**< the sender offered to put a part (AM_RTS_SPLIT) */
	uint16_t rkey_len;
	uint8_t rkey[UNIO_TL_RKEY_MAX];
};

/* The user header and its length travel in the request's receive fields (unused here). */
#define req_hdr(req)     ((const void *)(req)->rbuf)
#define req_hdr_len(req) ((req)->rlen)

/* ---- features ---- */

bool
proto_feature_missing(const struct unio_worker *w, uint64_t feature, const char *call)
{
	static uint64_t logged;   /* each missing feature is logged once per process */
	const char *name = feature == UNIO_FEATURE_AM ? "UNIO_FEATURE_AM" : "UNIO_FEATURE_RMA";

	if (likely(w->ctx->features & feature))
		return false;
	if (!(__atomic_fetch_or(&logged, feature, __ATOMIC_RELAXED) & feature))
		PROTO_LOG(ERR, "%s: the context was created without %s: %s", call, name,
			  unio_status_string(UNIO_ERR_UNSUPPORTED));
	return true;
}

/* ---- send ---- */

/*
 * On one host (the auto scheme) a rendezvous from the lane's split_min is split as the tag
 * protocol's: the receiver pulls the first half while the sender puts the second, both
 * single-copy and at once.
 */
static inline bool
lane_can_split(const struct proto_lane *lane, size_t len)
{
	return len >= lane->split_min && (lane->tl_ep->cap & UNIO_TL_CAP_PUT_ZCOPY);
}

static size_t
pack_eager(void *dest, void *arg)
{
	struct unio_request *req = arg;
	struct am_eager_hdr h = {   /* built here: @p dest may be unaligned (tag_send.c) */
		.am_id = (uint16_t)req->tag,
		.hdr_len = (uint16_t)(req_hdr_len(req) | (req->sync ? AM_EAGER_REPLY : 0)),
		.ep_id = req->ep->remote_id,
	};
	uint8_t *p = (uint8_t *)dest + sizeof(h);

	memcpy(dest, &h, sizeof(h));
	if (req_hdr_len(req) != 0)  /* no header: req_hdr() may be NULL */
		memcpy(p, req_hdr(req), req_hdr_len(req));
	unio_memcpy_part(p + req_hdr_len(req), req->sbuf, req->slen, 0);   /* staging */
	return sizeof(h) + req_hdr_len(req) + req->slen;
}

static size_t
pack_rts(void *dest, void *arg)
{
	struct unio_request *req = arg;
	struct unio_tl_iface *ifc = req->ep->lane.iface;
	struct am_rts_hdr h = {   /* built here: @p dest may be unaligned (tag_send.c) */
		.sreq_id = proto_req_id(req), .size = req->slen, .addr = (uintptr_t)req->sbuf,
		.ep_id = req->ep->remote_id, .am_id = (uint16_t)req->tag,
		.flags = req->sync ? AM_EAGER_REPLY : 0, .hdr_len = (uint16_t)req_hdr_len(req),
		.rkey_len = (uint16_t)ifc->attr.rkey_packed_len,
	};
	uint8_t *p = (uint8_t *)dest + sizeof(h);
	uint8_t key[UNIO_TL_RKEY_MAX];

	if (req_hdr_len(req) != 0)  /* no header: req_hdr() may be NULL */
		memcpy(p, req_hdr(req), req_hdr_len(req));
	if (!req->memh_valid || h.rkey_len > sizeof(key) ||
	    ifc->ctl->rkey_pack(ifc, &req->memh, key) != UNIO_OK) {
		h.rkey_len = 0;   /* the receiver asks for the pipelined fragments */
		h.flags |= AM_RTS_PIPELINE;
	} else {
		memcpy(p + req_hdr_len(req), key, h.rkey_len);
		if (lane_can_split(&req->ep->lane, req->slen))
			h.flags |= AM_RTS_SPLIT;
	}
	memcpy(dest, &h, sizeof(h));
	return sizeof(h) + req_hdr_len(req) + h.rkey_len;
}

/*
 * An RTS is about a hundred bytes: through am_short when it fits (a bcopy reserves the
 * lane's largest message, 8 KiB on shm, so an RTS behind a ring of fragments would wait
 * for 8 KiB of room).  The receiver gets the same bytes either way.
 */
static unio_status_t
send_rts(struct unio_request *req)
{
	const struct proto_lane *lane = &req->ep->lane;
	size_t most = sizeof(struct am_rts_hdr) + req_hdr_len(req) +
		      lane->iface->attr.rkey_packed_len;
	uint8_t tmp[AM_SHORT_MAX];
	uint64_t word;
	size_t len;
	ssize_t r;

	if (lane->short_ok && most <= AM_SHORT_MAX && most - sizeof(word) <= lane->max_short) {
		len = pack_rts(tmp, req);
		memcpy(&word, tmp, sizeof(word));
		return unio_tl_ep_am_short(lane->tl_ep, PROTO_AM_USER_RTS, word,
					   tmp + sizeof(word), len - sizeof(word));
	}
	r = unio_tl_ep_am_bcopy(lane->tl_ep, PROTO_AM_USER_RTS, pack_rts, req, 0);
	return r < 0 ? (unio_status_t)r : UNIO_OK;
}

static unio_status_t
send_step(struct unio_request *req)
{
	unio_status_t st;
	ssize_t r;

	if (req->proto == AM_PROTO_EAGER) {
		r = unio_tl_ep_am_bcopy(req->ep->lane.tl_ep, PROTO_AM_USER_EAGER, pack_eager, req,
					0);
		return r < 0 ? (unio_status_t)r : UNIO_OK;
	}
	st = send_rts(req);
	if (st != UNIO_OK)
		return st;
	req->proto = SEND_WAIT_ACK;   /* the tag protocol's ATS handler completes it */
	TAILQ_INSERT_TAIL(&req->ep->outstanding, req, ep_link);
	req->on_ep = true;
	return UNIO_INPROGRESS;
}

static void
send_start(struct unio_request *req)
{
	struct unio_worker *w = req->worker;
	unio_status_t st = UNIO_ERR_NO_RESOURCE;

	if (w->n_am_pending == 0)
		st = send_step(req);
	if (st == UNIO_ERR_NO_RESOURCE) {
		TAILQ_INSERT_TAIL(&w->am->pending, req, link);
		w->n_am_pending++;
	} else if (st != UNIO_INPROGRESS) {
		proto_req_complete(req, st);
	}
}

bool
proto_am_ep_queued(const struct unio_ep *ep)
{
	const struct unio_request *req;

	if (ep->worker->am == NULL || ep->worker->n_am_pending == 0)
		return false;
	TAILQ_FOREACH(req, &ep->worker->am->pending, link)
		if (req->ep == ep)
			return true;
	return false;
}

unsigned int
proto_am_progress(struct unio_worker *w)
{
	struct unio_request *req;
	unsigned int n = 0;

	while ((req = TAILQ_FIRST(&w->am->pending)) != NULL) {
		unio_status_t st = UNIO_ERR_CONNECTION_RESET;

		if (req->ep->state == EP_CONNECTED) {
			/* nothing freed since the lane refused: wait without a retry (shm) */
			if (!unio_tl_ep_room_freed(req->ep->lane.tl_ep))
				break;
			st = send_step(req);
		}
		if (st == UNIO_ERR_NO_RESOURCE)
			break;
		TAILQ_REMOVE(&w->am->pending, req, link);
		w->n_am_pending--;
		n++;
		if (st != UNIO_INPROGRESS)
			proto_req_complete(req, st);
	}
	return n + proto_rma_progress(w);
}

/* The 8-byte header word of an eager AM sent through am_short. */
static inline uint64_t
short_wire(const struct unio_ep *ep, unsigned int id, size_t hdr_len, uint32_t reply)
{
	struct am_eager_hdr h = { .am_id = (uint16_t)id, .ep_id = ep->remote_id };
	uint64_t wire;

	h.hdr_len = (uint16_t)(hdr_len | reply);
	memcpy(&wire, &h, sizeof(wire));
	return wire;
}

/*
 * Send an eager AM at once through am_short.  Without a user header the transport copies the
 * data from the user's buffer; with one, header and data are put together first.
 */
static __rte_noinline unio_status_t
send_short_hdr(struct unio_ep *ep, unsigned int id, const void *hdr, size_t hdr_len,
	       const void *buf, size_t len, uint32_t reply)
{
	uint8_t tmp[AM_SHORT_MAX];

	memcpy(tmp, hdr, hdr_len);
	if (len != 0)
		memcpy(tmp + hdr_len, buf, len);
	return unio_tl_ep_am_short(ep->lane.tl_ep, PROTO_AM_USER_EAGER,
				   short_wire(ep, id, hdr_len, reply), tmp, hdr_len + len);
}

static inline unio_status_t
send_short(struct unio_ep *ep, unsigned int id, const void *hdr, size_t hdr_len,
	   const void *buf, size_t len, uint32_t reply)
{
	if (hdr_len != 0)
		return send_short_hdr(ep, id, hdr, hdr_len, buf, len, reply);
	return unio_tl_ep_am_short(ep->lane.tl_ep, PROTO_AM_USER_EAGER,
				   short_wire(ep, id, 0, reply), buf, len);
}

static bool
lane_can_rndv(const struct proto_lane *lane)
{
	const struct unio_tl_iface *ifc = lane->iface;

	return (lane->tl_ep->cap & (UNIO_TL_CAP_GET_ZCOPY | UNIO_TL_CAP_RKEY_PTR)) &&
	       ifc->ctl->mem_reg != NULL && ifc->ctl->rkey_pack != NULL &&
	       ifc->attr.rkey_packed_len > 0 && ifc->attr.rkey_packed_len <= UNIO_TL_RKEY_MAX;
}

/* Pick eager or rendezvous; UNIO_ERR_UNSUPPORTED when neither carries the message. */
static unio_status_t
choose(struct unio_ep *ep, size_t hdr_len, size_t len, unsigned int flags, uint8_t *proto)
{
	const struct proto_lane *lane = &ep->lane;
	const struct unio_tl_iface_attr *a = &lane->iface->attr;
	bool fits = sizeof(struct am_eager_hdr) + hdr_len + len <= a->max_bcopy;
	bool rndv_fits = sizeof(struct am_rts_hdr) + hdr_len + a->rkey_packed_len <= a->max_bcopy;

	if (flags & UNIO_AM_SEND_FLAG_EAGER) {
		*proto = AM_PROTO_EAGER;
		return fits ? UNIO_OK : UNIO_ERR_UNSUPPORTED;
	}
	if (fits && !(flags & UNIO_AM_SEND_FLAG_RNDV) && len < lane->rndv_thresh) {
		*proto = AM_PROTO_EAGER;
		return UNIO_OK;
	}
	*proto = AM_PROTO_RTS;
	return (lane_can_rndv(lane) || lane->frag > 0) && rndv_fits ? UNIO_OK :
	       UNIO_ERR_UNSUPPORTED;
}

static unio_status_t
am_send_locked(struct unio_ep *ep, unsigned int id, const void *hdr, size_t hdr_len,
	       const void *buf, size_t len, const struct unio_request_param *param,
	       unsigned int flags, unio_request_t **req_p)
{
	struct proto_lane *lane = &ep->lane;
	struct unio_request *req;
	unio_status_t st;
	uint8_t proto;

	if (unlikely(ep->state != EP_CONNECTED || ep->remote_closed))
		return ep->state == EP_CONNECTING ? UNIO_ERR_NOT_CONNECTED :
		       UNIO_ERR_CONNECTION_RESET;
	if (likely(!(flags & UNIO_AM_SEND_FLAG_RNDV) && lane->short_ok &&
		   hdr_len + len <= lane->max_short && hdr_len + len <= AM_SHORT_MAX &&
		   ep->worker->n_am_pending == 0 &&
		   (param == NULL || !(param->field_mask & UNIO_REQ_PARAM_FLAGS)))) {
		st = send_short(ep, id, hdr, hdr_len, buf, len,
				(flags & UNIO_AM_SEND_FLAG_REPLY) ? AM_EAGER_REPLY : 0);
		if (likely(st != UNIO_ERR_NO_RESOURCE))
			return st;
	}
	st = choose(ep, hdr_len, len, flags, &proto);
	if (st != UNIO_OK) {
		PROTO_LOG(ERR, "am_send: %zu + %zu bytes: the %s lane cannot carry it%s", hdr_len,
			  len, lane->iface->driver->name,
			  (flags & UNIO_AM_SEND_FLAG_EAGER) ? " eagerly" : "");
		return st;
	}
	req = proto_req_get(ep->worker);
	if (unlikely(req == NULL))
		return UNIO_ERR_NO_MEMORY;
	req->type = REQ_SEND;
	req->ep = ep;
	req->sbuf = buf;
	req->slen = len;
	req->tag = id;
	req->sync = (flags & UNIO_AM_SEND_FLAG_REPLY) != 0;
	req->rbuf = (uint8_t *)(uintptr_t)hdr;
	req->rlen = hdr_len;
	req->proto = proto;
	if (proto == AM_PROTO_RTS)
		req->adapt = PROTO_ADAPT_RNDV;
	if (proto == AM_PROTO_RTS && lane_can_rndv(lane) &&
	    (proto_rndv_offer_get(req) || lane->frag == 0 || lane_can_split(lane, len))) {
		st = unio_tl_mem_reg(lane->iface, (void *)(uintptr_t)buf, len, &req->memh);
		if (st != UNIO_OK) {
			proto_req_put(req);
			return st;
		}
		req->memh_valid = true;
		req->memh_iface = lane->iface;
	}
	send_start(req);
	return proto_req_hand_out(req, param, req_p);
}

static __rte_noinline unio_status_t
am_send_checked(struct unio_ep *ep, unsigned int id, const void *header, size_t header_len,
		const void *buf, size_t len, const struct unio_request_param *param,
		unsigned int flags, unio_request_t **req_p)
{
	unio_status_t st;

	if (unlikely(ep == NULL || id >= UNIO_AM_ID_MAX || (header == NULL && header_len != 0) ||
		     header_len >= AM_EAGER_REPLY || (buf == NULL && len != 0) ||
		     (flags & ~(UNIO_AM_SEND_FLAG_EAGER | UNIO_AM_SEND_FLAG_RNDV |
				UNIO_AM_SEND_FLAG_REPLY)) != 0 ||
		     (flags & UNIO_AM_SEND_FLAG_EAGER && flags & UNIO_AM_SEND_FLAG_RNDV) ||
		     proto_req_param_bad(param)))
		return UNIO_ERR_INVALID_PARAM;
	if (unlikely(proto_feature_missing(ep->worker, UNIO_FEATURE_AM, "am_send")))
		return UNIO_ERR_UNSUPPORTED;
	worker_lock(ep->worker);
	st = am_send_locked(ep, id, header, header_len, buf, len, param, flags, req_p);
	worker_unlock(ep->worker);
	return st;
}

/*
 * A short AM's arguments, in memory across the driver's call: only a refused send (a full
 * ring) reads them again, so the fast path stores them instead of saving registers for them.
 */
struct am_short_args {
	struct unio_ep *ep;
	const void *buf;
	size_t len;
	unio_request_t **req_p;
	unsigned int id;
	unsigned int flags;
};

/* a full ring: queued by the checked path (no header, no param on the fast path) */
static __rte_noinline unio_status_t
am_short_refused(const struct am_short_args *a)
{
	return am_send_checked(a->ep, a->id, NULL, 0, a->buf, a->len, NULL, a->flags, a->req_p);
}

/*
 * The fast path first, as small as the tag protocol's: no user header, no request
 * parameters, at most the reply flag, a single-threaded worker, a connected ep with nothing
 * queued, data that fits am_short.  Everything else, and a full ring, takes the checked path.
 */
unio_status_t
unio_am_send(unio_ep_t *ep, unsigned int id, const void *header, size_t header_len,
	     const void *buf, size_t len, const struct unio_request_param *param,
	     unsigned int flags, unio_request_t **req_p)
{
	const struct unio_worker *w;
	unio_status_t st;

	/* am_short_end is 0 on a lane without am_short; am_fast: SINGLE mode, AM feature */
	if (likely(ep != NULL && (header_len | (uintptr_t)param) == 0 && id < UNIO_AM_ID_MAX &&
		   (flags & ~UNIO_AM_SEND_FLAG_REPLY) == 0 && len < ep->lane.am_short_end &&
		   (buf != NULL || len == 0))) {
		w = ep->worker;
		if (likely(w->am_fast && ep->state == EP_CONNECTED && !ep->remote_closed &&
			   w->n_am_pending == 0)) {
			struct am_short_args a = { ep, buf, len, req_p, id, flags };

			st = unio_tl_ep_am_short(ep->lane.tl_ep, PROTO_AM_USER_EAGER,
						 short_wire(ep, id, 0, flags ?
							    AM_EAGER_REPLY : 0), buf, len);
			if (likely(st != UNIO_ERR_NO_RESOURCE))
				return st;
			return am_short_refused(&a);
		}
	}
	return am_send_checked(ep, id, header, header_len, buf, len, param, flags, req_p);
}

/* ---- receive ---- */

static struct am_handler *
handler_of(struct unio_worker *w, unsigned int id)
{
	if (id >= UNIO_AM_ID_MAX || w->am->h[id].cb == NULL)
		return NULL;
	return &w->am->h[id];
}

/* A handler that keeps its data: it gets a copy that lives until unio_am_data_release(). */
static __rte_noinline void
deliver_kept(struct unio_worker *w, struct am_handler *h, const uint8_t *hdr, size_t hdr_len,
	     const uint8_t *data, size_t len, struct unio_am_recv_param *p)
{
	struct am_kept *k;
	unio_status_t st;

	k = malloc(sizeof(*k) + len);
	if (k == NULL) {
		PROTO_LOG(ERR, "am: no memory to keep a %zu-byte message: dropped", len);
		return;
	}
	k->item.kind = AM_ITEM_KEPT;
	k->len = len;
	if (len != 0)
		memcpy(k->data, data, len);
	p->recv_attr |= UNIO_AM_RECV_ATTR_FLAG_DATA;
	TAILQ_INSERT_TAIL(&w->am->held, &k->item, link);
	st = h->cb(h->arg, hdr, hdr_len, k->data, len, p);
	if (st != UNIO_INPROGRESS) {
		TAILQ_REMOVE(&w->am->held, &k->item, link);
		free(k);
	}
}

static unio_status_t
am_eager_rx(void *arg, const void *data, size_t length, unsigned int flags,
	    unio_tl_conn_id_t conn_id)
{
	struct unio_worker *w = arg;
	struct unio_am_recv_param p = { 0, NULL };
	const uint8_t *d = data;
	struct am_eager_hdr h;
	struct am_handler *hd;
	size_t hl;

	RTE_SET_USED(flags);
	if (unlikely(length < sizeof(h)))
		goto bad;
	memcpy(&h, data, sizeof(h));
	/* the ep id is read only for a reply ep: it must be the sender's own */
	if (h.hdr_len & AM_EAGER_REPLY) {
		p.reply_ep = proto_ep_from(w, h.ep_id, conn_id);
		if (unlikely(p.reply_ep == NULL))
			goto bad;
	}
	hl = h.hdr_len & ~AM_EAGER_REPLY;
	if (unlikely(hl > length - sizeof(h)))
		goto bad;
	hd = handler_of(w, h.am_id);
	if (unlikely(hd == NULL)) {
		PROTO_LOG(ERR, "am: no handler for id %u: message dropped", h.am_id);
		w->n_dropped++;
		return UNIO_OK;
	}
	d += sizeof(h);
	length -= sizeof(h) + hl;
	if (unlikely(hd->flags & UNIO_AM_HANDLER_FLAG_PERSISTENT_DATA))
		deliver_kept(w, hd, d, hl, d + hl, length, &p);
	else
		hd->cb(hd->arg, d, hl, (void *)(uintptr_t)(d + hl), length, &p);
	return UNIO_OK;
bad:
	PROTO_LOG(ERR, "am: malformed eager message, or its reply ep unknown or another peer's "
		  "(%zu bytes)", length);
	w->n_dropped++;
	return UNIO_OK;
}

static void
desc_free(struct am_desc *d)
{
	TAILQ_REMOVE(&d->w->am->held, &d->item, link);
	free(d);
}

static struct am_desc *
desc_new(struct unio_worker *w, const struct am_rts_hdr *h, const uint8_t *rkey)
{
	struct am_desc *d = malloc(sizeof(*d));

	if (d == NULL)
		return NULL;
	*d = (struct am_desc){ .item.kind = AM_ITEM_DESC, .w = w, .ep_id = h->ep_id,
			       .sreq_id = h->sreq_id, .size = h->size, .addr = h->addr,
			       .rkey_len = h->rkey_len,
			       .pipeline = (h->flags & AM_RTS_PIPELINE) != 0,
			       .split = (h->flags & AM_RTS_SPLIT) != 0 };
	memcpy(d->rkey, rkey, h->rkey_len);
	TAILQ_INSERT_TAIL(&w->am->held, &d->item, link);
	return d;
}

/* After the handler: reject, drop, keep, or leave it to the receive it started. */
static void
rts_after(struct unio_ep *ep, struct am_desc *d, unio_status_t st)
{
	d->w->am->in_cb = NULL;
	if (d->started) {
		desc_free(d);
		return;
	}
	if (st == UNIO_INPROGRESS)
		return;
	proto_send_ack(ep, PROTO_AM_ATS, d->sreq_id, st == UNIO_OK ? UNIO_OK : UNIO_ERR_REJECTED);
	desc_free(d);
}

static unio_status_t
am_rts_rx(void *arg, const void *data, size_t length, unsigned int flags,
	  unio_tl_conn_id_t conn_id)
{
	struct unio_worker *w = arg;
	struct unio_am_recv_param p = { UNIO_AM_RECV_ATTR_FLAG_RNDV, NULL };
	const uint8_t *u = (const uint8_t *)data + sizeof(struct am_rts_hdr);
	struct am_handler *hd;
	struct am_rts_hdr h;
	struct unio_ep *ep;
	struct am_desc *d;

	RTE_SET_USED(flags);
	if (unlikely(length < sizeof(h)))
		goto bad;
	memcpy(&h, data, sizeof(h));
	ep = proto_ep_from(w, h.ep_id, conn_id);
	if (unlikely(ep == NULL || h.sreq_id == 0 || h.rkey_len > UNIO_TL_RKEY_MAX ||
		     length != sizeof(h) + h.hdr_len + h.rkey_len || h.size > (1ull << 40)))
		goto bad;
	hd = handler_of(w, h.am_id);
	d = hd != NULL ? desc_new(w, &h, u + h.hdr_len) : NULL;
	if (d == NULL) {
		PROTO_LOG(ERR, "am: rendezvous id %u: %s: rejected", h.am_id,
			  hd == NULL ? "no handler" : "no memory");
		proto_send_ack(ep, PROTO_AM_ATS, h.sreq_id, UNIO_ERR_REJECTED);
		return UNIO_OK;
	}
	if (h.flags & AM_EAGER_REPLY)
		p.reply_ep = ep;
	w->am->in_cb = d;
	rts_after(ep, d, hd->cb(hd->arg, u, h.hdr_len, d, h.size, &p));
	return UNIO_OK;
bad:
	PROTO_LOG(ERR, "am: malformed rendezvous message, unknown or another peer's ep (%zu "
		  "bytes)", length);
	w->n_dropped++;
	return UNIO_OK;
}

/* ---- rendezvous receive ---- */

/*
 * Pull with gets (the tag protocol's proto_rndv_pull()), split with the sender on one host as
 * its RTP / ATS handlers answer.
 */
static void
recv_pull(struct unio_request *req, const struct am_desc *d)
{
	bool split = d->split && lane_can_split(&req->rndv_ep->lane, d->size);
	unio_status_t st = proto_rndv_pull(req, d->addr, d->size, split);

	if (st != UNIO_OK)
		proto_rndv_finish(req, st);
}

/* No key: the sender streams fragments (the tag protocol's RTR / PIPE) into the buffer. */
static void
recv_ask_pipeline(struct unio_request *req)
{
	struct proto_rtr_hdr r = { .sreq_id = req->rndv_sreq, .rreq_id = proto_req_id(req) };

	req->received = 0;
	TAILQ_INSERT_TAIL(&req->rndv_ep->outstanding, req, ep_link);
	req->on_ep = true;
	proto_send_ctl(req->rndv_ep, PROTO_AM_RTR, &r, sizeof(r));
}

/* The descriptor is done with: free it, unless its handler still runs (it frees it then). */
static void
desc_done(struct unio_worker *w, struct am_desc *d)
{
	if (w->am->in_cb == d)
		d->started = true;
	else
		desc_free(d);
}

static unio_status_t
recv_data_locked(struct unio_worker *w, struct am_desc *d, void *buf, size_t len,
		 const struct unio_request_param *param, unio_request_t **req_p)
{
	struct unio_ep *ep = proto_ep_lookup(w, d->ep_id);
	struct unio_request *req;
	unio_status_t st = UNIO_OK;
	bool pull;

	if (ep == NULL || len < d->size || d->size == 0) {
		if (ep != NULL)
			proto_send_ack(ep, PROTO_AM_ATS, d->sreq_id, UNIO_OK);
		if (ep == NULL)
			st = UNIO_ERR_CONNECTION_RESET;
		else if (len < d->size)
			st = UNIO_ERR_MESSAGE_TRUNCATED;
		desc_done(w, d);
		return st;
	}
	req = proto_req_get(w);
	if (req == NULL)
		return UNIO_ERR_NO_MEMORY;
	req->type = REQ_RECV;
	req->rbuf = buf;
	req->rlen = len;
	req->info.length = d->size;
	req->rndv_ep = ep;
	req->rndv_sreq = d->sreq_id;
	pull = !d->pipeline;
	if (!(d->split && lane_can_split(&ep->lane, d->size)))   /* timed, maybe chosen */
		pull = proto_rndv_recv_pull(req, ep, d->size, pull);
	if (!pull) {
		recv_ask_pipeline(req);
		desc_done(w, d);
		return proto_req_hand_out(req, param, req_p);
	}
	st = unio_tl_rkey_unpack(ep->lane.tl_ep, d->rkey, d->rkey_len, &req->rkey);
	if (st == UNIO_OK) {
		req->rkey_valid = true;
		recv_pull(req, d);
	} else {
		proto_rndv_finish(req, st);
	}
	desc_done(w, d);
	return proto_req_hand_out(req, param, req_p);
}

/* The held item whose application pointer is @p p, or NULL. */
static struct am_item *
held_find(struct unio_worker *w, const void *p)
{
	struct am_item *it;

	TAILQ_FOREACH(it, &w->am->held, link) {
		if (it->kind == AM_ITEM_DESC && (const void *)it == p &&
		    !((struct am_desc *)it)->started)
			return it;
		if (it->kind == AM_ITEM_KEPT && ((struct am_kept *)it)->data == p)
			return it;
	}
	return NULL;
}

unio_status_t
unio_am_recv_data(unio_worker_t *w, void *desc, void *buf, size_t len,
		  const struct unio_request_param *param, unio_request_t **req_p)
{
	struct am_item *it;
	unio_status_t st = UNIO_ERR_INVALID_PARAM;

	if (w == NULL || w->am == NULL || desc == NULL || (buf == NULL && len != 0) ||
	    proto_req_param_bad(param))
		return UNIO_ERR_INVALID_PARAM;
	if (proto_feature_missing(w, UNIO_FEATURE_AM, "am_recv_data"))
		return UNIO_ERR_UNSUPPORTED;
	worker_lock(w);
	it = held_find(w, desc);
	if (it != NULL && it->kind == AM_ITEM_DESC)
		st = recv_data_locked(w, (struct am_desc *)it, buf, len, param, req_p);
	worker_unlock(w);
	return st;
}

void
unio_am_data_release(unio_worker_t *w, void *data)
{
	struct am_item *it;
	struct am_desc *d;
	struct unio_ep *ep;

	if (w == NULL || w->am == NULL || data == NULL)
		return;
	worker_lock(w);
	it = held_find(w, data);
	if (it == NULL) {
		PROTO_LOG(ERR, "am_data_release: %p is neither kept data nor a descriptor", data);
	} else if (it->kind == AM_ITEM_KEPT) {
		TAILQ_REMOVE(&w->am->held, it, link);
		free(it);
	} else {
		d = (struct am_desc *)it;
		ep = proto_ep_lookup(w, d->ep_id);
		if (ep != NULL)
			proto_send_ack(ep, PROTO_AM_ATS, d->sreq_id, UNIO_ERR_CANCELED);
		desc_done(w, d);
	}
	worker_unlock(w);
}

/* ---- handlers, setup ---- */

unio_status_t
unio_worker_set_am_handler(unio_worker_t *w, unsigned int id, unio_am_recv_cb_t cb, void *arg,
			   unsigned int flags)
{
	if (w == NULL || w->am == NULL || id >= UNIO_AM_ID_MAX ||
	    (flags & ~UNIO_AM_HANDLER_FLAG_PERSISTENT_DATA) != 0)
		return UNIO_ERR_INVALID_PARAM;
	if (proto_feature_missing(w, UNIO_FEATURE_AM, "set_am_handler"))
		return UNIO_ERR_UNSUPPORTED;
	worker_lock(w);
	w->am->h[id] = (struct am_handler){ .cb = cb, .arg = cb != NULL ? arg : NULL,
					    .flags = cb != NULL ? flags : 0 };
	worker_unlock(w);
	return UNIO_OK;
}

unio_status_t
proto_am_init(struct unio_worker *w)
{
	w->am = calloc(1, sizeof(*w->am));
	if (w->am == NULL)
		return UNIO_ERR_NO_MEMORY;
	TAILQ_INIT(&w->am->pending);
	TAILQ_INIT(&w->am->held);
	for (unsigned int i = 0; i < w->n_ifaces; i++) {
		struct unio_tl_iface *ifc = w->ifaces[i];

		if (unio_tl_iface_set_am_handler(ifc, PROTO_AM_USER_EAGER, am_eager_rx, w) !=
		    UNIO_OK ||
		    unio_tl_iface_set_am_handler(ifc, PROTO_AM_USER_RTS, am_rts_rx, w) != UNIO_OK)
			return UNIO_ERR_INVALID_PARAM;
	}
	return UNIO_OK;
}

void
proto_am_fini(struct unio_worker *w)
{
	struct unio_request *req;
	struct am_item *it;

	if (w->am == NULL)
		return;
	while ((req = TAILQ_FIRST(&w->am->pending)) != NULL) {
		TAILQ_REMOVE(&w->am->pending, req, link);
		w->n_am_pending--;
		proto_req_complete(req, UNIO_ERR_CANCELED);
	}
	while ((it = TAILQ_FIRST(&w->am->held)) != NULL) {
		TAILQ_REMOVE(&w->am->held, it, link);
		free(it);
	}
	free(w->am);
	w->am = NULL;
}
