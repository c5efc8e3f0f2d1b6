/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Requests (test, wait, cancel, free) and the tagged-message entry points: argument
 * validation and locking here, the protocols in lib/proto.
 */

#include <string.h>

#include "unio_api_priv.h"

static inline unio_status_t
request_test_body(const struct unio_request *req, struct unio_recv_info *info)
{
	unio_status_t st = req->state == REQ_DONE ? req->status : UNIO_INPROGRESS;

	if (req->state == REQ_FREE)
		st = UNIO_ERR_INVALID_PARAM;
	if (st != UNIO_INPROGRESS && info != NULL && req->type == REQ_RECV)
		*info = req->info;
	return st;
}

static __rte_noinline unio_status_t
request_test_locked(const struct unio_request *req, struct unio_recv_info *info)
{
	struct unio_worker *w = req->worker;
	unio_status_t st;

	pthread_mutex_lock(&w->lock);
	st = request_test_body(req, info);
	pthread_mutex_unlock(&w->lock);
	return st;
}

/* SINGLE mode without a call (no register saved): the wait loops run it after each event */
unio_status_t
unio_request_test(unio_request_t *req, struct unio_recv_info *info)
{
	if (req == NULL)
		return UNIO_ERR_INVALID_PARAM;
	if (unlikely(req->worker->mode == UNIO_THREAD_MODE_MULTI))
		return request_test_locked(req, info);
	return request_test_body(req, info);
}

/*
 * unio_request_test_free(): a request no longer running is released here, as by
 * unio_request_free(); one that still runs is left as it is.
 */
static inline unio_status_t
request_test_free_body(struct unio_request *req, struct unio_recv_info *info)
{
	unio_status_t st;

	if (req->state != REQ_DONE)
		return req->state == REQ_FREE ? UNIO_ERR_INVALID_PARAM : UNIO_INPROGRESS;
	st = req->status;
	if (info != NULL && req->type == REQ_RECV)
		*info = req->info;
	proto_req_put(req);
	return st;
}

static __rte_noinline unio_status_t
request_test_free_locked(struct unio_request *req, struct unio_recv_info *info)
{
	struct unio_worker *w = req->worker;
	unio_status_t st;

	pthread_mutex_lock(&w->lock);
	st = request_test_free_body(req, info);
	pthread_mutex_unlock(&w->lock);
	return st;
}

/* a wait loop's last two calls in one (SINGLE mode: calls nothing, saves no register) */
unio_status_t
unio_request_test_free(unio_request_t *req, struct unio_recv_info *info)
{
	if (req == NULL)
		return UNIO_ERR_INVALID_PARAM;
	if (unlikely(req->worker->mode == UNIO_THREAD_MODE_MULTI))
		return request_test_free_locked(req, info);
	return request_test_free_body(req, info);
}

unio_status_t
unio_request_wait(unio_worker_t *worker, unio_request_t *req, struct unio_recv_info *info)
{
	unio_status_t st;

	if (worker == NULL || req == NULL || req->worker != worker)
		return UNIO_ERR_INVALID_PARAM;
	worker_lock(worker);
	st = worker->in_progress ? UNIO_ERR_BUSY : UNIO_OK;   /* called from a callback */
	worker_unlock(worker);
	if (st != UNIO_OK)
		return st;
	while ((st = unio_request_test(req, info)) == UNIO_INPROGRESS)
		unio_worker_progress(worker);
	unio_request_free(req);
	return st;
}

void
unio_request_cancel(unio_worker_t *worker, unio_request_t *req)
{
	if (worker == NULL || req == NULL || req->worker != worker)
		return;
	worker_lock(worker);
	if (req->type == REQ_RECV && req->state == REQ_ACTIVE && req->posted) {
		proto_exp_remove(worker, req);
		proto_req_complete(req, UNIO_ERR_CANCELED);
	}
	worker_unlock(worker);
}

static inline void
request_free_body(struct unio_request *req)
{
	if (req->state == REQ_DONE)
		proto_req_put(req);
	else if (req->state == REQ_ACTIVE)
		req->user_freed = true;
}

static __rte_noinline void
request_free_locked(struct unio_request *req)
{
	struct unio_worker *w = req->worker;

	pthread_mutex_lock(&w->lock);
	request_free_body(req);
	pthread_mutex_unlock(&w->lock);
}

/* SINGLE mode without a call (no register saved): it runs in most completion callbacks */
void
unio_request_free(unio_request_t *req)
{
	if (req == NULL)
		return;
	if (unlikely(req->worker->mode == UNIO_THREAD_MODE_MULTI))
		request_free_locked(req);
	else
		request_free_body(req);
}

/* ---- tagged messages ---- */

/* out of line: unio_tag_send()'s fast path then saves no register for the lock's path */
static __rte_noinline unio_status_t
send_common(unio_ep_t *ep, const void *buf, size_t len, uint64_t tag, bool sync,
	    const struct unio_request_param *param, unio_request_t **req_p)
{
	unio_status_t st;

	if (unlikely(ep == NULL || (buf == NULL && len != 0) || proto_req_param_bad(param)))
		return UNIO_ERR_INVALID_PARAM;
	worker_lock(ep->worker);
	st = proto_tag_send(ep, buf, len, tag, sync, param, req_p);
	worker_unlock(ep->worker);
	return st;
}

/* SINGLE mode without the lock's second test after the driver's call */
unio_status_t
unio_tag_send(unio_ep_t *ep, const void *buf, size_t len, uint64_t tag,
	      const struct unio_request_param *param, unio_request_t **req_p)
{
	if (likely(ep != NULL && (buf != NULL || len == 0) &&
		   ep->worker->mode != UNIO_THREAD_MODE_MULTI && !proto_req_param_bad(param)))
		return proto_tag_send(ep, buf, len, tag, false, param, req_p);
	return send_common(ep, buf, len, tag, false, param, req_p);
}

unio_status_t
unio_tag_send_sync(unio_ep_t *ep, const void *buf, size_t len, uint64_t tag,
		   const struct unio_request_param *param, unio_request_t **req_p)
{
	return send_common(ep, buf, len, tag, true, param, req_p);
}

static struct unio_request *
recv_req(unio_worker_t *w, void *buf, size_t len, uint64_t tag, uint64_t mask)
{
	struct unio_request *req = proto_req_get(w);

	if (req == NULL)
		return NULL;
	req->type = REQ_RECV;
	req->rbuf = buf;
	req->rlen = len;
	req->rtag = tag;
	req->rmask = mask;
	return req;
}

/* the caller wants a request even when the operation completes at once */
static inline bool
no_imm(const struct unio_request_param *param)
{
	return param != NULL && (param->field_mask & UNIO_REQ_PARAM_FLAGS) &&
	       (param->flags & UNIO_REQ_FLAG_NO_IMM_COMPLETION);
}

/* every receive that the fast path below does not take: the checks, the lock, the rest */
static __rte_noinline unio_status_t
tag_recv_checked(unio_worker_t *w, void *buf, size_t len, uint64_t tag, uint64_t tag_mask,
		 const struct unio_request_param *param, unio_request_t **req_p)
{
	struct unio_request *req;
	struct proto_unexp *ux;
	unio_status_t st = UNIO_OK;

	if (unlikely(w == NULL || (buf == NULL && len != 0) || proto_req_param_bad(param)))
		return UNIO_ERR_INVALID_PARAM;
	worker_lock(w);
	ux = w->n_unexp != 0 ? proto_unexp_match(w, tag, tag_mask) : NULL;
	/* an eager message that is all there: received now, no request (unless one is asked) */
	if (ux != NULL && proto_unexp_ready(ux) && !(req_p != NULL && no_imm(param))) {
		st = proto_recv_unexp_now(w, buf, len, ux, param);
		worker_unlock(w);
		return st;
	}
	req = recv_req(w, buf, len, tag, tag_mask);
	if (unlikely(req == NULL)) {
		worker_unlock(w);
		return UNIO_ERR_NO_MEMORY;
	}
	if (ux != NULL)
		proto_recv_unexp(w, req, ux);
	else
		st = proto_exp_add(w, req);
	if (st == UNIO_OK)
		st = proto_req_hand_out(req, param, req_p);
	else
		proto_req_put(req);
	worker_unlock(w);
	return st;
}

/*
 * The fast path: a receive with a full mask on a single-threaded worker that holds no
 * unexpected message, a free request at hand, a request pointer for the caller.  It cannot
 * complete at once, so of the parameters only the callback and user_data matter (recv_info
 * and NO_IMM_COMPLETION act on an immediate completion).  It calls nothing, so it saves no
 * registers; everything else goes to tag_recv_checked() by a tail call.
 */
unio_status_t
unio_tag_recv(unio_worker_t *w, void *buf, size_t len, uint64_t tag, uint64_t tag_mask,
	      const struct unio_request_param *param, unio_request_t **req_p)
{
	struct unio_request *req;
	uint64_t fm;

	/* the mode first: in MULTI mode the other fields are read under the lock only */
	if (unlikely(w == NULL || w->mode == UNIO_THREAD_MODE_MULTI || w->n_unexp != 0 ||
		     (buf == NULL && len != 0) || req_p == NULL || tag_mask != UINT64_MAX ||
		     w->req_free == NULL || proto_req_param_bad(param)))
		return tag_recv_checked(w, buf, len, tag, tag_mask, param, req_p);
	req = proto_req_get(w);
	req->type = REQ_RECV;
	req->rbuf = buf;
	req->rlen = len;
	req->rtag = tag;
	req->rmask = UINT64_MAX;
	proto_exp_add_exact(w, req);
	fm = param != NULL ? param->field_mask : 0;
	if (fm & UNIO_REQ_PARAM_CB)
		req->cb = param->cb;
	if (fm & UNIO_REQ_PARAM_USER_DATA)
		req->user_data = param->user_data;
	req->user_owned = true;
	*req_p = req;
	return UNIO_INPROGRESS;
}

unio_status_t
unio_tag_probe(unio_worker_t *w, uint64_t tag, uint64_t tag_mask, int remove,
	       struct unio_recv_info *info, unio_tag_msg_t **msg_p)
{
	struct proto_unexp *ux;

	if (w == NULL || info == NULL || (remove && msg_p == NULL))
		return UNIO_ERR_INVALID_PARAM;
	worker_lock(w);
	ux = proto_unexp_match(w, tag, tag_mask);
	if (ux != NULL) {
		info->tag = ux->tag;
		info->length = ux->length;
		if (remove) {
			proto_unexp_remove(w, ux);
			/* re-queued privately: it no longer matches receives */
			*msg_p = (unio_tag_msg_t *)ux;
		}
	}
	worker_unlock(w);
	return ux != NULL ? UNIO_OK : UNIO_ERR_NOT_FOUND;
}

unio_status_t
unio_tag_msg_recv(unio_worker_t *w, void *buf, size_t len, unio_tag_msg_t *msg,
		  const struct unio_request_param *param, unio_request_t **req_p)
{
	struct proto_unexp *ux = (struct proto_unexp *)msg;
	struct unio_request *req;
	unio_status_t st;

	if (w == NULL || msg == NULL || (buf == NULL && len != 0) || proto_req_param_bad(param))
		return UNIO_ERR_INVALID_PARAM;
	worker_lock(w);
	req = recv_req(w, buf, len, ux->tag, UINT64_MAX);
	if (req == NULL) {
		worker_unlock(w);
		return UNIO_ERR_NO_MEMORY;
	}
	/* proto_recv_unexp removes it from the queue: put it back for that */
	proto_unexp_add(w, ux);
	proto_recv_unexp(w, req, ux);
	st = proto_req_hand_out(req, param, req_p);
	worker_unlock(w);
	return st;
}
