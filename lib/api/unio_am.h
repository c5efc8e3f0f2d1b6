/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UNIO_AM_H
#define UNIO_AM_H

/**
 * @file
 * Active messages: a handler per id on a worker; a sender sends (id, header, payload).
 *
 * Small payloads travel eagerly and the handler gets the data itself, valid during the
 * call.  Large ones (or any with UNIO_AM_SEND_FLAG_RNDV) travel by rendezvous: the handler
 * gets a descriptor instead, and pulls the data with unio_am_recv_data() into a buffer of
 * its choice, in the callback or later.  A handler that returns an error rejects the
 * message; a rendezvous sender then completes with UNIO_ERR_REJECTED.
 *
 * The context must be created with UNIO_FEATURE_AM: without it, handler registration,
 * unio_am_send() and unio_am_recv_data() fail with UNIO_ERR_UNSUPPORTED (logged once).
 */

#include <stddef.h>
#include <stdint.h>

#include "unio.h"

#ifdef __cplusplus
extern "C" {
#endif

/** AM ids are 0 .. UNIO_AM_ID_MAX - 1. */
#define UNIO_AM_ID_MAX 1024

/** Send eagerly (fails with UNIO_ERR_UNSUPPORTED when the message does not fit). */
#define UNIO_AM_SEND_FLAG_EAGER (1u << 0)
/** Send by rendezvous, whatever the size. */
#define UNIO_AM_SEND_FLAG_RNDV  (1u << 1)
/** Give the receiver's handler an endpoint to reply on (unio_am_recv_param.reply_ep). */
#define UNIO_AM_SEND_FLAG_REPLY (1u << 2)

/**
 * Handler flag: the handler may keep eager data past the callback (it then gets
 * UNIO_AM_RECV_ATTR_FLAG_DATA).  The payload is copied out of the transport for it.
 */
#define UNIO_AM_HANDLER_FLAG_PERSISTENT_DATA (1u << 0)

/** Eager data that may be kept: return UNIO_INPROGRESS, then unio_am_data_release(). */
#define UNIO_AM_RECV_ATTR_FLAG_DATA (1u << 0)
/** Rendezvous: @p data is a descriptor for unio_am_recv_data(), @p length the size. */
#define UNIO_AM_RECV_ATTR_FLAG_RNDV (1u << 1)

/** What a handler learns about a message besides its header and data. */
struct unio_am_recv_param {
	uint64_t recv_attr;       /**< UNIO_AM_RECV_ATTR_FLAG_* */
	unio_ep_t *reply_ep;      /**< with UNIO_AM_SEND_FLAG_REPLY: the ep to the sender */
};

/**
 * An AM handler.  Runs inside unio_worker_progress().
 *
 * @return UNIO_OK: done with the message (a rendezvous message not received is dropped,
 *         and its sender completes normally); UNIO_INPROGRESS: keep @p data (with
 *         UNIO_AM_RECV_ATTR_FLAG_DATA) or the rendezvous descriptor for later; an error
 *         rejects the message.
 */
typedef unio_status_t (*unio_am_recv_cb_t)(void *arg, const void *header, size_t header_len,
					   void *data, size_t length,
					   const struct unio_am_recv_param *param);

/**
 * Set (or with @p cb NULL, remove) the handler of AM id @p id on @p worker.
 * @param flags UNIO_AM_HANDLER_FLAG_*.
 */
unio_status_t unio_worker_set_am_handler(unio_worker_t *worker, unsigned int id,
					 unio_am_recv_cb_t cb, void *arg, unsigned int flags);

/**
 * Send an active message.  @p header and @p buf must stay valid until the send completes
 * (UNIO_OK returned, or the request completed).
 *
 * @return UNIO_OK, UNIO_INPROGRESS with *req_p, or an error: UNIO_ERR_INVALID_PARAM,
 *         UNIO_ERR_UNSUPPORTED (the lane cannot carry it), UNIO_ERR_REJECTED (through the
 *         request: the receiver's handler refused a rendezvous message).
 */
unio_status_t unio_am_send(unio_ep_t *ep, unsigned int id, const void *header,
			   size_t header_len, const void *buf, size_t len,
			   const struct unio_request_param *param, unsigned int flags,
			   unio_request_t **req_p);

/**
 * Pull the data of a rendezvous message into @p buf (@p len bytes, at least the message
 * length).  Completes at once (UNIO_OK) or through a request; the descriptor is consumed.
 */
unio_status_t unio_am_recv_data(unio_worker_t *worker, void *desc, void *buf, size_t len,
				const struct unio_request_param *param, unio_request_t **req_p);

/**
 * Release data a handler kept (UNIO_AM_RECV_ATTR_FLAG_DATA and UNIO_INPROGRESS), or drop a
 * rendezvous descriptor without receiving it (its sender completes with UNIO_ERR_CANCELED).
 */
void unio_am_data_release(unio_worker_t *worker, void *data);

#ifdef __cplusplus
}
#endif

#endif /* UNIO_AM_H */
