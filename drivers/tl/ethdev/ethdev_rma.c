/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * put / get over the ethdev driver, in software: messages of internal AM ids on the ep's
 * reliable, ordered channel.  The target checks every access against its registration
 * table (slot, generation, random cookie, range) and applies it (put) or answers it (get),
 * so a forged or stale key fails with an error and touches no memory
 * (UNIO_TL_CAP_RMA_TARGET).
 *
 * A put is sent as chunks of at most one message (64 KiB less the header); the target acks
 * each chunk once applied, and the put completes with the last ack.  A get sends one
 * request; the target streams the range back in chunks, read from the registered memory
 * as they go out (the key is checked again for every chunk under the registration lock, so
 * a region deregistered meanwhile ends the answer with an error instead of being read);
 * a put of the same ep that would overwrite what is still to be sent first copies that
 * rest aside, so later operations of the ep cannot change what the get returns.  (A copy
 * of the whole range at the request cost a malloc and a copy of up to 1 MiB per get on
 * the side that sends the data.)  Frames of puts, requests and
 * answers wait in a per-ep job queue while the window is full; active messages of that ep
 * wait behind its own puts and requests (UNIO_ERR_NO_RESOURCE), which keeps every operation
 * of an ep in order, but not behind answers to the peer's gets (a sender's next rendezvous
 * request must not wait until the previous message was streamed out).
 */

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <rte_random.h>

#include "ethdev_priv.h"

/* Data bytes of one PUT or GET_RESP message on @p ep (whole frames, eth_rma_chunk()). */
static size_t
rma_chunk(const struct eth_ep *ep)
{
	return eth_rma_chunk(ep->ei->frag);
}

/* ---- registrations (per process: a key is valid on every iface) ---- */

struct eth_region {
	uint64_t base, len;
	uint32_t gen;          /* odd while registered */
	uint32_t cookie;       /* random, per registration */
	uint32_t next_free;
};

/*
 * Recursive: a get answer is sent with the lock held (the key is checked as the data is
 * copied into frames), and a PMD that frees sent mbufs late may run a zero-copy
 * completion from that send whose user callback registers memory again.
 */
static pthread_mutex_t regs_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static struct eth_region regs[ETH_REGS_MAX];
static uint32_t regs_free = UINT32_MAX, regs_used;

unio_status_t
eth_mem_reg(struct unio_tl_iface *iface, void *addr, size_t len, struct unio_tl_memh *memh)
{
	struct eth_region *r = NULL;
	uint32_t i;

	RTE_SET_USED(iface);
	pthread_mutex_lock(&regs_lock);
	if (regs_free != UINT32_MAX) {
		i = regs_free;
		regs_free = regs[i].next_free;
		r = &regs[i];
	} else if (regs_used < ETH_REGS_MAX) {
		r = &regs[regs_used++];
	}
	if (r != NULL) {
		r->base = (uintptr_t)addr;
		r->len = len;
		r->gen |= 1;
		r->cookie = (uint32_t)rte_rand();
	}
	pthread_mutex_unlock(&regs_lock);
	if (r == NULL) {
		ETH_LOG(ERR, "all %u registration slots are taken", ETH_REGS_MAX);
		return UNIO_ERR_NO_RESOURCE;
	}
	*memh = (struct unio_tl_memh){ .addr = addr, .len = len, .priv = r };
	return UNIO_OK;
}

void
eth_mem_dereg(struct unio_tl_iface *iface, struct unio_tl_memh *memh)
{
	struct eth_region *r = memh->priv;

	RTE_SET_USED(iface);
	if (r == NULL)
		return;
	pthread_mutex_lock(&regs_lock);
	r->gen++;                          /* even: every key of it is stale */
	r->next_free = regs_free;
	regs_free = (uint32_t)(r - regs);
	pthread_mutex_unlock(&regs_lock);
	memh->priv = NULL;
}

unio_status_t
eth_rkey_pack(struct unio_tl_iface *iface, const struct unio_tl_memh *memh, void *buf)
{
	const struct eth_region *r = memh->priv;
	struct eth_rkey k;

	RTE_SET_USED(iface);
	pthread_mutex_lock(&regs_lock);
	k = (struct eth_rkey){ .base = r->base, .len = r->len, .idx = (uint32_t)(r - regs),
			       .gen = r->gen, .cookie = r->cookie };
	pthread_mutex_unlock(&regs_lock);
	memcpy(buf, &k, sizeof(k));
	return UNIO_OK;
}

unio_status_t
eth_rkey_unpack(struct unio_tl_ep *ep, const void *buf, size_t len, struct unio_tl_rkey *rkey)
{
	struct eth_rkey *k;

	RTE_SET_USED(ep);
	if (len != sizeof(*k))
		return UNIO_ERR_INVALID_ADDR;
	k = malloc(sizeof(*k));
	if (k == NULL)
		return UNIO_ERR_NO_MEMORY;
	memcpy(k, buf, sizeof(*k));
	if (k->idx >= ETH_REGS_MAX || k->base + k->len < k->base || !(k->gen & 1)) {
		free(k);
		return UNIO_ERR_INVALID_ADDR;
	}
	*rkey = (struct unio_tl_rkey){ .remote_base = k->base, .remote_len = k->len, .priv = k };
	return UNIO_OK;
}

void
eth_rkey_release(struct unio_tl_ep *ep, struct unio_tl_rkey *rkey)
{
	RTE_SET_USED(ep);
	free(rkey->priv);
	rkey->priv = NULL;
}

/*
 * The target's check: slot @p h->key_idx registered with generation @p h->key_gen and
 * cookie @p h->key_cookie, and [addr, addr + len) inside it.  Called with regs_lock held.
 */
static unio_status_t
region_check(const struct eth_rma_hdr *h, uint64_t addr, uint64_t len)
{
	const struct eth_region *r;

	if (h->key_idx >= ETH_REGS_MAX)
		return UNIO_ERR_INVALID_ADDR;
	r = &regs[h->key_idx];
	if (!(r->gen & 1) || r->gen != h->key_gen || r->cookie != h->key_cookie)
		return UNIO_ERR_INVALID_ADDR;
	if (addr < r->base || len > r->len || addr - r->base > r->len - len)
		return UNIO_ERR_OUT_OF_RANGE;
	return UNIO_OK;
}

/* ---- per-ep state and jobs ---- */

static struct eth_rma *
rma_of(struct eth_ep *ep)
{
	if (ep->rma == NULL) {
		ep->rma = calloc(1, sizeof(*ep->rma));
		if (ep->rma == NULL)
			return NULL;
		TAILQ_INIT(&ep->rma->jobs);
		ep->ei->n_rma++;
	}
	return ep->rma;
}

static struct eth_rma_job *
job_new(struct eth_ep *ep, uint8_t id, const struct eth_rma_hdr *h)
{
	struct eth_rma_job *j = calloc(1, sizeof(*j));

	if (j == NULL)
		return NULL;
	j->id = id;
	j->h = *h;
	TAILQ_INSERT_TAIL(&ep->rma->jobs, j, link);
	ep->rma->n_own += id == ETH_AM_PUT || id == ETH_AM_GET_REQ;
	return j;
}

static void
job_free(struct eth_ep *ep, struct eth_rma_job *j)
{
	TAILQ_REMOVE(&ep->rma->jobs, j, link);
	ep->rma->n_own -= j->id == ETH_AM_PUT || j->id == ETH_AM_GET_REQ;
	free(j->snap);
	free(j);
}

/* The iovec of @p len bytes at offset @p off of @p j's source, after slot 0 (the header). */
static size_t
job_slice(const struct eth_rma_job *j, size_t off, size_t len, struct iovec *out)
{
	size_t n = 1;

	for (uint32_t i = 0; i < j->iovcnt && len != 0; i++) {
		size_t l = j->iov[i].iov_len;

		if (off >= l) {
			off -= l;
			continue;
		}
		out[n] = (struct iovec){ (uint8_t *)j->iov[i].iov_base + off,
					 RTE_MIN(l - off, len) };
		len -= out[n].iov_len;
		off = 0;
		n++;
	}
	return n;
}

static unio_status_t
job_sent(struct eth_rma_job *j, unio_status_t st, size_t chunk)
{
	if (st == UNIO_OK) {
		j->sent += chunk;
		j->started = true;
	}
	return st;
}

static struct eth_rma_op *op_find(struct eth_ep *ep, uint32_t req_id, bool put);

/*
 * Send the chunk of put @p op in @p v (@p n entries: the header, then @p len bytes of the
 * initiator's memory) from that memory: frames of the header and external segments pointing
 * at it, as am_zcopy sends them.  The put's completion counts each such chunk as one more
 * operation, done (from a later progress call) once the chunk's last frame is freed: acked,
 * or on a lossless ep sent, and let go by the PMD.  So the put completes only once the
 * target acked every chunk (op_complete()) and no frame reads the user's memory any more,
 * except after an ep failure: its error completes the put while a PMD or the tx queue may
 * still hold frames.  A put without a completion, or an ep without a free zero-copy
 * record, copies.
 */
static unio_status_t
put_zc(struct eth_ep *ep, struct eth_rma_op *op, const struct iovec *v, size_t n, size_t len)
{
	const struct eth_rma_hdr *h = v[0].iov_base;
	unio_status_t st;

	if (unlikely(ep->failed))
		return ep->fail_status;
	if (op->comp == NULL || ep->zc->free == NULL)
		return eth_send_msg(ep, ETH_AM_PUT, v, n, sizeof(*h) + len);
	op->comp->count++;
	st = eth_send_zc(ep, ETH_AM_PUT, h, sizeof(*h), v + 1, n - 1, sizeof(*h) + len,
			 op->comp);
	if (st == UNIO_INPROGRESS) {
		ep->ei->st.tx_zcopy_put++;
		return UNIO_OK;
	}
	op->comp->count--;      /* the frames are gone already, or none was sent */
	ep->ei->st.tx_zcopy_put += st == UNIO_OK;
	return st;
}

/* Send the next message of @p j: UNIO_OK, UNIO_ERR_NO_RESOURCE (window full) or an error. */
static unio_status_t
job_step(struct eth_ep *ep, struct eth_rma_job *j)
{
	size_t chunk = RTE_MIN(j->total - j->sent, rma_chunk(ep));
	struct iovec v[UNIO_TL_MAX_IOV + 1];
	struct eth_rma_hdr h = j->h;
	size_t n = job_slice(j, j->sent, chunk, v);
	unio_status_t st;

	if (j->id == ETH_AM_PUT)
		h.addr += j->sent;
	if (j->id == ETH_AM_PUT || j->id == ETH_AM_GET_RESP) {
		h.len = (uint32_t)chunk;
		h.off = (uint32_t)(j->base + j->sent);
	}
	v[0] = (struct iovec){ &h, sizeof(h) };
	if (j->id == ETH_AM_PUT) {
		struct eth_rma_op *op = op_find(ep, h.req_id, true);

		if (unlikely(op == NULL)) {       /* cannot be: the job goes with its op */
			j->sent = j->total;
			return UNIO_OK;
		}
		st = chunk >= ETH_ZCOPY_MIN && ep->ei->tx_multiseg ?
		     put_zc(ep, op, v, n, chunk) : eth_send_msg(ep, j->id, v, n, sizeof(h) + chunk);
		op->chunks_unacked += st == UNIO_OK;
		return job_sent(j, st, chunk);
	}
	if (!j->from_region)
		return job_sent(j, eth_send_msg(ep, j->id, v, n, sizeof(h) + chunk), chunk);
	/* read from the registered memory: only while the key still holds */
	pthread_mutex_lock(&regs_lock);
	st = region_check(&j->req, j->req.addr + j->base + j->sent, chunk);
	if (st == UNIO_OK) {
		st = job_sent(j, eth_send_msg(ep, j->id, v, n, sizeof(h) + chunk), chunk);
	} else {
		h.len = 0;
		h.status = st;     /* deregistered meanwhile: the get fails, nothing is read */
		st = job_sent(j, eth_send_msg(ep, j->id, v, 1, sizeof(h)), j->total - j->sent);
	}
	pthread_mutex_unlock(&regs_lock);
	return st;
}

/*
 * A put of @p ep is about to write [addr, addr + len): answers to the ep's earlier gets
 * that still have to read from there copy the rest of their range first.  Called with
 * regs_lock held; UNIO_ERR_NO_MEMORY when a copy cannot be made (the put is refused).
 */
static unio_status_t
rma_detach(struct eth_ep *ep, uint64_t addr, uint64_t len)
{
	struct eth_rma_job *j;

	TAILQ_FOREACH(j, &ep->rma->jobs, link) {
		uint64_t from = j->req.addr + j->base + j->sent;
		size_t rest = j->total - j->sent;
		uint8_t *snap;

		if (!j->from_region || rest == 0 || addr >= from + rest || from >= addr + len)
			continue;
		snap = malloc(rest);
		if (snap == NULL)
			return UNIO_ERR_NO_MEMORY;
		memcpy(snap, (const void *)(uintptr_t)from, rest);
		j->snap = snap;
		j->from_region = false;
		j->iov[0] = (struct iovec){ snap, rest };
		j->iovcnt = 1;
		j->base += j->sent;
		j->total = rest;
		j->sent = 0;
	}
	return UNIO_OK;
}

static void
op_complete(struct eth_ep *ep, struct eth_rma_op *op, unio_status_t st)
{
	struct unio_tl_completion *c = op->comp;

	op->used = false;
	op->comp = NULL;
	ep->rma->n_ops--;
	if (c != NULL)
		unio_tl_completion_done(c, st);
}

/* Flushes waiting for put / get become ordinary flushes once none is outstanding. */
static void
rma_settle(struct eth_ep *ep)
{
	struct eth_rma *r = ep->rma;

	if (r->n_flush == 0 || r->n_ops != 0 || !TAILQ_EMPTY(&r->jobs))
		return;
	for (unsigned int i = 0; i < r->n_flush; i++) {
		struct unio_tl_completion *c = r->flush[i];

		if (ep->snd_una == ep->snd_nxt || ep->n_comps == ETH_MAX_COMPS)
			unio_tl_completion_done(c, ep->failed ? ep->fail_status : UNIO_OK);
		else
			ep->comps[ep->n_comps++] = (struct eth_comp){ .comp = c,
								      .seq = ep->snd_nxt };
	}
	r->n_flush = 0;
}

static bool
rma_drain_jobs(struct eth_ep *ep)
{
	struct eth_rma *r = ep->rma;
	struct eth_rma_job *j;

	while ((j = TAILQ_FIRST(&r->jobs)) != NULL) {
		unio_status_t st = job_step(ep, j);

		if (st == UNIO_ERR_NO_RESOURCE)
			return false;
		if (st != UNIO_OK) {
			eth_rma_cancel(ep, st);
			return true;
		}
		if (j->sent == j->total)
			job_free(ep, j);
	}
	rma_settle(ep);
	return true;
}

/*
 * The messages a drain sends go to the PMD in whole bursts of ETH_BURST frames as they are
 * built (eth_send_msg() while tx_batch is set) and the rest at its end: each burst is one
 * sendto() kick on af_xdp, where a flush per 64 KiB message sent 20 frames per kick at MTU
 * 3442 and 32 + 15 at 1500.
 */
bool
eth_rma_drain(struct eth_ep *ep)
{
	struct eth_iface *ei = ep->ei;
	bool batch = ei->tx_batch, done;

	if (ep->rma == NULL)
		return true;
	ei->tx_batch = true;
	done = rma_drain_jobs(ep);
	ei->tx_batch = batch;
	if (!batch && ei->txq_head != ei->txq_tail)
		eth_txq_flush(ei);
	return done;
}

void
eth_rma_cancel(struct eth_ep *ep, unio_status_t st)
{
	struct eth_rma *r = ep->rma;
	struct eth_rma_job *j;

	if (r == NULL)
		return;
	while ((j = TAILQ_FIRST(&r->jobs)) != NULL)
		job_free(ep, j);
	for (unsigned int i = 0; i < ETH_RMA_OPS && r->n_ops != 0; i++)
		if (r->ops[i].used)
			op_complete(ep, &r->ops[i], st);
	for (unsigned int i = 0; i < r->n_flush; i++)
		unio_tl_completion_done(r->flush[i], st);
	r->n_flush = 0;
}

unio_status_t
eth_rma_flush(struct eth_ep *ep, struct unio_tl_completion *comp)
{
	struct eth_rma *r = ep->rma;

	if (r == NULL || (r->n_ops == 0 && eth_rma_drain(ep)))
		return UNIO_OK;
	if (comp == NULL)
		return UNIO_INPROGRESS;
	if (r->n_flush == RTE_DIM(r->flush))
		return UNIO_ERR_NO_RESOURCE;
	r->flush[r->n_flush++] = comp;
	return UNIO_INPROGRESS;
}

/* ---- the initiator ---- */

static struct eth_rma_op *
op_new(struct eth_ep *ep, bool put, struct unio_tl_completion *comp)
{
	struct eth_rma *r = rma_of(ep);
	struct eth_rma_op *op;

	if (r == NULL || r->n_ops == ETH_RMA_OPS)
		return NULL;
	while (r->ops[r->next_req % ETH_RMA_OPS].used)
		r->next_req++;
	op = &r->ops[r->next_req % ETH_RMA_OPS];
	*op = (struct eth_rma_op){ .comp = comp, .req_id = r->next_req++, .used = true,
				   .put = put, .st = UNIO_OK };
	r->n_ops++;
	return op;
}

static size_t
iov_len(const struct iovec *iov, size_t iovcnt)
{
	size_t len = 0;

	for (size_t i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	return len;
}

unio_status_t
eth_put_zcopy(struct unio_tl_ep *tep, const struct iovec *iov, size_t iovcnt,
	      uint64_t remote_addr, const struct unio_tl_rkey *rkey,
	      struct unio_tl_completion *comp)
{
	struct eth_ep *ep = eth_ep_of(tep);
	const struct eth_rkey *k = rkey->priv;
	size_t len = iov_len(iov, iovcnt);
	struct eth_rma_hdr h;
	struct eth_rma_op *op;
	struct eth_rma_job *j;

	if (unlikely(ep->failed))
		return ep->fail_status;
	if (!unio_tl_rkey_covers(rkey, remote_addr, len) || len > ETH_RMA_MAX_PUT)
		return UNIO_ERR_OUT_OF_RANGE;
	if (iovcnt > UNIO_TL_MAX_IOV)
		return UNIO_ERR_INVALID_PARAM;
	op = op_new(ep, true, comp);
	if (op == NULL)
		return UNIO_ERR_NO_RESOURCE;
	h = (struct eth_rma_hdr){ .addr = remote_addr, .key_idx = k->idx, .key_gen = k->gen,
				  .key_cookie = k->cookie, .req_id = op->req_id };
	j = job_new(ep, ETH_AM_PUT, &h);
	if (j == NULL) {
		op->comp = NULL;
		op_complete(ep, op, UNIO_OK);
		return UNIO_ERR_NO_MEMORY;
	}
	memcpy(j->iov, iov, iovcnt * sizeof(*iov));
	j->iovcnt = (uint32_t)iovcnt;
	j->total = len;
	op->chunks_left = len == 0 ? 1 : (uint32_t)((len + rma_chunk(ep) - 1) / rma_chunk(ep));
	eth_rma_drain(ep);
	return UNIO_INPROGRESS;
}

unio_status_t
eth_get_zcopy(struct unio_tl_ep *tep, const struct iovec *iov, size_t iovcnt,
	      uint64_t remote_addr, const struct unio_tl_rkey *rkey,
	      struct unio_tl_completion *comp)
{
	struct eth_ep *ep = eth_ep_of(tep);
	const struct eth_rkey *k = rkey->priv;
	size_t len = iov_len(iov, iovcnt);
	struct eth_rma_hdr h;
	struct eth_rma_op *op;

	if (unlikely(ep->failed))
		return ep->fail_status;
	if (!unio_tl_rkey_covers(rkey, remote_addr, len) || len > ETH_RMA_MAX_GET)
		return UNIO_ERR_OUT_OF_RANGE;
	if (iovcnt > UNIO_TL_MAX_IOV)
		return UNIO_ERR_INVALID_PARAM;
	op = op_new(ep, false, comp);
	if (op == NULL)
		return UNIO_ERR_NO_RESOURCE;
	memcpy(op->iov, iov, iovcnt * sizeof(*iov));
	op->iovcnt = (uint32_t)iovcnt;
	op->length = len;
	h = (struct eth_rma_hdr){ .addr = remote_addr, .len = (uint32_t)len, .key_idx = k->idx,
				  .key_gen = k->gen, .key_cookie = k->cookie,
				  .req_id = op->req_id };
	if (job_new(ep, ETH_AM_GET_REQ, &h) == NULL) {
		op->comp = NULL;
		op_complete(ep, op, UNIO_OK);
		return UNIO_ERR_NO_MEMORY;
	}
	eth_rma_drain(ep);
	return UNIO_INPROGRESS;
}

static struct eth_rma_op *
op_find(struct eth_ep *ep, uint32_t req_id, bool put)
{
	struct eth_rma_op *op;

	if (ep->rma == NULL)
		return NULL;
	op = &ep->rma->ops[req_id % ETH_RMA_OPS];
	return op->used && op->req_id == req_id && op->put == put ? op : NULL;
}

/* Copy @p len bytes to offset @p off of the get's iovec. */
static void
op_scatter(struct eth_rma_op *op, size_t off, const uint8_t *src, size_t len)
{
	for (uint32_t i = 0; i < op->iovcnt && len != 0; i++) {
		size_t l = op->iov[i].iov_len, n;

		if (off >= l) {
			off -= l;
			continue;
		}
		n = RTE_MIN(l - off, len);
		memcpy((uint8_t *)op->iov[i].iov_base + off, src, n);
		src += n;
		len -= n;
		off = 0;
	}
}

/* ---- the target, and answers ---- */

/* Queue the answer to @p req; a GET_RESP of @p len > 0 bytes reads the registered range. */
static void
answer(struct eth_ep *ep, uint8_t id, const struct eth_rma_hdr *req, unio_status_t st,
       size_t len)
{
	struct eth_rma_hdr h = { .req_id = req->req_id, .status = st };
	struct eth_rma_job *j;

	if (rma_of(ep) == NULL || (j = job_new(ep, id, &h)) == NULL) {
		ep->ei->st.drop_bad_msg++;   /* no memory: the initiator times out in its flush */
		return;
	}
	if (len != 0) {
		j->from_region = true;
		j->req = *req;
		j->iov[0] = (struct iovec){ (void *)(uintptr_t)req->addr, len };
		j->iovcnt = 1;
		j->total = len;
	}
	eth_rma_drain(ep);
}

struct eth_rma_op *
eth_rma_resp_target(struct eth_ep *ep, const void *first, size_t first_len, size_t msg_len)
{
	struct eth_rma_hdr h;
	struct eth_rma_op *op;

	if (first_len < sizeof(h) || msg_len <= sizeof(h))
		return NULL;
	memcpy(&h, first, sizeof(h));
	op = op_find(ep, h.req_id, false);
	if (op == NULL || h.status != UNIO_OK || h.len != msg_len - sizeof(h) ||
	    h.off != op->done || h.len > op->length - op->done)
		return NULL;      /* eth_rma_input() judges it from the reassembled copy */
	return op;
}

void
eth_rma_resp_place(struct eth_rma_op *op, size_t off, const void *src, size_t len)
{
	op_scatter(op, op->done + off, src, len);
}

void
eth_rma_resp_done(struct eth_ep *ep, struct eth_rma_op *op, size_t len)
{
	op->done += len;
	if (op->done == op->length)
		op_complete(ep, op, UNIO_OK);
	rma_settle(ep);
}

void
eth_rma_input(struct eth_ep *ep, uint8_t id, const void *data, size_t len)
{
	const uint8_t *pl = (const uint8_t *)data + sizeof(struct eth_rma_hdr);
	struct eth_rma_hdr h;
	struct eth_rma_op *op;
	unio_status_t st;

	if (len < sizeof(h))
		goto bad;
	memcpy(&h, data, sizeof(h));
	len -= sizeof(h);
	switch (id) {
	case ETH_AM_PUT:
		if (h.len != len)
			goto bad;
		pthread_mutex_lock(&regs_lock);
		st = region_check(&h, h.addr, h.len);
		if (st == UNIO_OK && len != 0 && ep->rma != NULL)
			st = rma_detach(ep, h.addr, len);
		if (st == UNIO_OK && len != 0)
			memcpy((void *)(uintptr_t)h.addr, pl, len);
		pthread_mutex_unlock(&regs_lock);
		answer(ep, ETH_AM_PUT_ACK, &h, st, 0);
		return;
	case ETH_AM_GET_REQ:
		if (len != 0)
			goto bad;
		st = h.len > ETH_RMA_MAX_GET ? UNIO_ERR_OUT_OF_RANGE : UNIO_OK;
		pthread_mutex_lock(&regs_lock);
		if (st == UNIO_OK)
			st = region_check(&h, h.addr, h.len);
		pthread_mutex_unlock(&regs_lock);
		answer(ep, ETH_AM_GET_RESP, &h, st, st == UNIO_OK ? h.len : 0);
		return;
	case ETH_AM_PUT_ACK:
		op = op_find(ep, h.req_id, true);
		if (op == NULL || len != 0 || h.status > 0 || h.status <= UNIO_ERR_LAST ||
		    op->chunks_unacked == 0)
			goto bad;   /* a status from the peer is an error code or UNIO_OK; an ack
				     * of a chunk not sent yet is forged */
		op->chunks_unacked--;
		if (h.status != UNIO_OK && op->st == UNIO_OK)
			op->st = h.status;
		if (--op->chunks_left == 0)
			op_complete(ep, op, op->st);
		break;
	case ETH_AM_GET_RESP:
		op = op_find(ep, h.req_id, false);
		if (op == NULL || h.status > 0 || h.status <= UNIO_ERR_LAST)
			goto bad;
		if (h.status != UNIO_OK) {
			op_complete(ep, op, h.status);
			break;
		}
		if (h.len != len || h.off != op->done || len > op->length - op->done)
			goto bad;
		op_scatter(op, h.off, pl, len);
		eth_rma_resp_done(ep, op, len);
		return;
	default:
		goto bad;
	}
	rma_settle(ep);
	return;
bad:
	ep->ei->st.drop_bad_msg++;
}
