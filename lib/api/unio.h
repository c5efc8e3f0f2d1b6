/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UNIO_H
#define UNIO_H

/**
 * @file
 * The Unio API: context, worker, listener, endpoint, requests, tagged messages.
 *
 * Model (UCX users will recognise it):
 * - one **context** per application: features, configuration snapshot, drivers;
 * - one **worker** per thread: owns the transports' ifaces and the matching queues; all
 *   progress happens in unio_worker_progress(), called from the application's loop;
 * - a **listener** accepts connection requests on a socket address;
 * - an **endpoint** is a connection to a remote worker (from a socket address, a connection
 *   request, or a worker address exchanged out of band);
 * - every communication call is non-blocking and returns UNIO_OK (done already, no
 *   request), UNIO_INPROGRESS with a request in *req_p, or an error.  A request completes
 *   by its callback, by polling unio_request_test(), or by unio_request_wait(); then it is
 *   released with unio_request_free().
 *
 * Every params struct starts with a field_mask that says which fields are set, so the
 * structs can grow without breaking the ABI.
 */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "unio_config.h"
#include "unio_env.h"
#include "unio_status.h"
#include "unio_version.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct unio_context unio_context_t;         /**< A context. */
typedef struct unio_worker unio_worker_t;           /**< A worker. */
typedef struct unio_listener unio_listener_t;       /**< A listener. */
typedef struct unio_ep unio_ep_t;                   /**< An endpoint. */
typedef struct unio_request unio_request_t;         /**< A request handle. */
typedef struct unio_conn_request unio_conn_request_t; /**< An incoming connection. */
typedef struct unio_tag_msg unio_tag_msg_t;         /**< A probed unexpected message. */

/* ------------------------------------------------------------------------------------- */
/** @name Context */

/** Features a context may be asked for. */
#define UNIO_FEATURE_TAG    (1ull << 0)  /**< tagged messages */
#define UNIO_FEATURE_AM     (1ull << 1)  /**< active messages */
#define UNIO_FEATURE_RMA    (1ull << 2)  /**< put / get */
#define UNIO_FEATURE_WAKEUP (1ull << 3)  /**< event fd for sleeping */

#define UNIO_CONTEXT_PARAM_FEATURES (1ull << 0) /**< features is set */
#define UNIO_CONTEXT_PARAM_CONFIG   (1ull << 1) /**< config is set */
#define UNIO_CONTEXT_PARAM_NAME     (1ull << 2) /**< name is set */

/** Context parameters. */
struct unio_context_params {
	uint64_t field_mask;                /**< UNIO_CONTEXT_PARAM_* */
	uint64_t features;                  /**< UNIO_FEATURE_*; default TAG */
	const struct unio_config *config;   /**< default: the environment (unio_config_read) */
	const char *name;                   /**< for logs; default the program name */
};

/**
 * Create a context.  Initialises EAL with the defaults of unio_env.h unless the application
 * did (unio_env_init() or rte_eal_init()).
 *
 * @param params   may be NULL for all defaults.  UNIO_ERR_INVALID_PARAM for a field_mask
 *                 bit or a feature this version does not know, no feature at all, or
 *                 UNIO_CONTEXT_PARAM_CONFIG with a NULL config.
 * @param[out] status set on failure (may be NULL).
 * @return the context, or NULL with *status set.
 */
unio_context_t *unio_context_create(const struct unio_context_params *params,
				    unio_status_t *status);

/** Destroy a context; every worker must be destroyed first.  NULL accepted. */
void unio_context_destroy(unio_context_t *ctx);

/** Print the context's configuration, drivers and devices. */
void unio_context_print_info(const unio_context_t *ctx, FILE *stream);

/* ------------------------------------------------------------------------------------- */
/** @name Worker */

/** Thread modes. */
enum unio_thread_mode {
	UNIO_THREAD_MODE_SINGLE = 0,  /**< only the creating thread uses the worker (default) */
	UNIO_THREAD_MODE_MULTI = 1,   /**< any thread may call; the worker takes a lock */
};

#define UNIO_WORKER_PARAM_THREAD_MODE (1ull << 0) /**< thread_mode is set */

/** Worker parameters. */
struct unio_worker_params {
	uint64_t field_mask;                /**< UNIO_WORKER_PARAM_* */
	enum unio_thread_mode thread_mode;  /**< default UNIO_THREAD_MODE_SINGLE */
};

/** Create a worker: opens an iface on every usable driver device. */
unio_worker_t *unio_worker_create(unio_context_t *ctx, const struct unio_worker_params *params,
				  unio_status_t *status);

/** Destroy a worker; endpoints still open are closed with force.  NULL accepted. */
void unio_worker_destroy(unio_worker_t *worker);

/**
 * Progress every transport, protocol and connection of the worker.  Called from inside a
 * callback (a progress already running on this worker) it does nothing and returns 0:
 * callbacks may send, receive and close, but not wait.
 * @return nonzero when anything happened (a message, a completion, a connection).
 */
unsigned int unio_worker_progress(unio_worker_t *worker);

/**
 * A file descriptor that becomes readable when the worker has work, for epoll.  Needs
 * UNIO_FEATURE_WAKEUP.
 */
unio_status_t unio_worker_get_efd(unio_worker_t *worker, int *fd);

/**
 * Arm the event fd before sleeping.  Returns UNIO_OK (armed: sleep on the fd), or
 * UNIO_ERR_BUSY (events are pending: call unio_worker_progress() again first).
 */
unio_status_t unio_worker_arm(unio_worker_t *worker);

/** Wake a worker sleeping on its event fd (any thread). */
unio_status_t unio_worker_signal(unio_worker_t *worker);

/**
 * The worker's address, an opaque blob to exchange out of band; a peer creates an endpoint
 * from it (UNIO_EP_PARAM_WORKER_ADDR).  Release with unio_worker_release_address().
 */
unio_status_t unio_worker_get_address(unio_worker_t *worker, void **addr_p, size_t *len_p);

/** Release an address from unio_worker_get_address(). */
void unio_worker_release_address(unio_worker_t *worker, void *addr);

/**
 * Print the worker's state: its ifaces, endpoints, unexpected messages, and how many
 * protocol messages from peers were dropped (malformed headers, lengths or offsets out of
 * range, unknown endpoints or requests): the line "# dropped from peers: N"; and how many
 * unexpected messages were dropped whole for want of memory (UNIO_UNEXP_MEM, or a failed
 * allocation): the line "# dropped: no memory: N".
 */
void unio_worker_print_info(const unio_worker_t *worker, FILE *stream);

/* ------------------------------------------------------------------------------------- */
/** @name Requests */

/** What a completed receive found. */
struct unio_recv_info {
	uint64_t tag;        /**< the sender's tag */
	size_t length;       /**< the message length (may exceed the buffer: truncated) */
};

/**
 * Completion callback.  Runs inside unio_worker_progress() (or inside the call that started
 * the operation when UNIO_REQ_FLAG_NO_IMM_COMPLETION is set and it completes at once).  The
 * request stays valid until unio_request_free().
 *
 * @param req    the request.
 * @param status UNIO_OK or the error.
 * @param info   for receives, the tag and length; NULL for sends.
 * @param user_data unio_request_param.user_data.
 */
typedef void (*unio_request_cb_t)(unio_request_t *req, unio_status_t status,
				  const struct unio_recv_info *info, void *user_data);

#define UNIO_REQ_PARAM_CB        (1ull << 0) /**< cb is set */
#define UNIO_REQ_PARAM_USER_DATA (1ull << 1) /**< user_data is set */
#define UNIO_REQ_PARAM_FLAGS     (1ull << 2) /**< flags is set */
#define UNIO_REQ_PARAM_RECV_INFO (1ull << 3) /**< recv_info is set */

/** Always return a request, even when the operation completes at once. */
#define UNIO_REQ_FLAG_NO_IMM_COMPLETION (1u << 0)

/**
 * Per-operation parameters; NULL means all defaults.  A field_mask bit or a flag that is not
 * UNIO_REQ_PARAM_* / UNIO_REQ_FLAG_*: every call that takes one (tagged, AM, RMA, flush)
 * returns UNIO_ERR_INVALID_PARAM.
 */
struct unio_request_param {
	uint64_t field_mask;                /**< UNIO_REQ_PARAM_* */
	unio_request_cb_t cb;               /**< called once when the request completes */
	void *user_data;                    /**< passed to cb */
	unsigned int flags;                 /**< UNIO_REQ_FLAG_* */
	/** receives that complete at once (UNIO_OK) write the tag and length here */
	struct unio_recv_info *recv_info;
};

/**
 * Poll a request.
 * @return UNIO_INPROGRESS while it runs, else its final status (info filled for receives).
 */
unio_status_t unio_request_test(unio_request_t *req, struct unio_recv_info *info);

/**
 * Poll a request and release it once it no longer runs: unio_request_test(), then
 * unio_request_free() when the status is final, in one call (a wait loop's last two).
 * @return UNIO_INPROGRESS while it runs (@p req stays valid, test it again); else its final
 * status (info filled for receives) and @p req is released: do not use it again.
 * UNIO_ERR_INVALID_PARAM for a NULL or already released request.
 */
unio_status_t unio_request_test_free(unio_request_t *req, struct unio_recv_info *info);

/**
 * Progress @p worker until @p req completes, then free it (the future/await style).
 * @return the request's final status; UNIO_ERR_BUSY (nothing done, @p req not freed) when
 * called from a callback of @p worker, where waiting could never end.
 */
unio_status_t unio_request_wait(unio_worker_t *worker, unio_request_t *req,
				struct unio_recv_info *info);

/**
 * Cancel a request: a receive not yet matched completes with UNIO_ERR_CANCELED; a send
 * that already started completes normally.  The request still needs unio_request_free().
 */
void unio_request_cancel(unio_worker_t *worker, unio_request_t *req);

/** Release a request; when it is still running, it completes without a callback. */
void unio_request_free(unio_request_t *req);

/* ------------------------------------------------------------------------------------- */
/** @name Listener */

/** Called for each incoming connection: accept with unio_ep_create(), or reject. */
typedef void (*unio_conn_handler_t)(unio_conn_request_t *conn_request, void *arg);

#define UNIO_LISTENER_PARAM_SOCKADDR (1ull << 0) /**< sockaddr is set */
#define UNIO_LISTENER_PARAM_HANDLER  (1ull << 1) /**< conn_handler is set */

/** Listener parameters. */
struct unio_listener_params {
	uint64_t field_mask;                /**< UNIO_LISTENER_PARAM_* */
	const struct sockaddr *sockaddr;    /**< IPv4 or IPv6 address; port 0 picks one */
	socklen_t addrlen;                  /**< length of *sockaddr */
	unio_conn_handler_t conn_handler;   /**< accepts or rejects each connection request */
	void *arg;                          /**< passed to conn_handler */
};

/** Listen for connections on a socket address. */
unio_listener_t *unio_listener_create(unio_worker_t *worker,
				      const struct unio_listener_params *params,
				      unio_status_t *status);

/** The address the listener is bound to (with the port it picked). */
unio_status_t unio_listener_query(unio_listener_t *listener, struct sockaddr_storage *addr);

/** Reject a connection request: the peer's unio_ep_create() fails with UNIO_ERR_REJECTED. */
unio_status_t unio_listener_reject(unio_listener_t *listener, unio_conn_request_t *req);

/** Where a connection request comes from. */
unio_status_t unio_conn_request_query(unio_conn_request_t *req, struct sockaddr_storage *addr);

/** Stop listening.  NULL accepted. */
void unio_listener_destroy(unio_listener_t *listener);

/* ------------------------------------------------------------------------------------- */
/** @name Endpoint */

/**
 * Called once when an endpoint fails (peer died, reset, timed out, wire version), with the
 * status its requests fail with; unio_ep_query() (callable from the handler) says why, with
 * the peer's address.
 */
typedef void (*unio_ep_err_handler_t)(void *arg, unio_ep_t *ep, unio_status_t status);

#define UNIO_EP_PARAM_SOCKADDR     (1ull << 0) /**< connect to sockaddr */
#define UNIO_EP_PARAM_CONN_REQUEST (1ull << 1) /**< accept conn_request */
#define UNIO_EP_PARAM_WORKER_ADDR  (1ull << 2) /**< connect to a worker address */
#define UNIO_EP_PARAM_ERR_HANDLER  (1ull << 3) /**< err_handler is set */
#define UNIO_EP_PARAM_USER_DATA    (1ull << 4) /**< user_data is set */
#define UNIO_EP_PARAM_ERR_INFO     (1ull << 5) /**< err_info is set */

/** Room for unio_ep_error.reason, its terminating NUL included. */
#define UNIO_EP_REASON_MAX 512

/**
 * Why unio_ep_create() failed, for the application to act on or to say in its own words
 * (UNIO_EP_PARAM_ERR_INFO), instead of the library's log line.
 */
struct unio_ep_error {
	/** the status unio_ep_create() returned: UNIO_OK when it succeeded */
	unio_status_t status;
	/**
	 * the system's error behind it, or 0: ECONNREFUSED when nothing listens at the address
	 * (the kernel refused, or a driver's peer has no listener there: UNIO_ERR_UNREACHABLE),
	 * ENETUNREACH or EHOSTUNREACH (no route: UNIO_ERR_UNREACHABLE), ETIMEDOUT (the kernel
	 * gave up: UNIO_ERR_TIMED_OUT)
	 */
	int sys_errno;
	/** the peer, "IP port P" (by socket address), "" when there is none to name */
	char peer[64];
	/**
	 * One line, NUL-terminated (cut to fit): "connect to IP port P:
	 * STATUS" and, where known, " (WHY)": "connect to 127.0.0.1 port 13400: destination is
	 * unreachable (Connection refused)", "...: rejected by peer", "...: peer speaks another
	 * wire-protocol version (ours is 3)", "...: timed out (no answer within
	 * UNIO_PEER_TIMEOUT, 10000 ms)", "...: destination is unreachable (the peer reaches
	 * none of this worker's ifaces: ...)".  Other creations: "accept from IP port P: ...",
	 * "worker address: ...", or the status string alone.  "" on success.
	 */
	char reason[UNIO_EP_REASON_MAX];
};

/** Endpoint parameters: exactly one of SOCKADDR, CONN_REQUEST, WORKER_ADDR. */
struct unio_ep_params {
	uint64_t field_mask;                /**< UNIO_EP_PARAM_* */
	const struct sockaddr *sockaddr;    /**< SOCKADDR: the listener's address */
	socklen_t addrlen;                  /**< SOCKADDR: length of *sockaddr */
	unio_conn_request_t *conn_request;  /**< CONN_REQUEST: from the listener's handler */
	const void *worker_addr;            /**< WORKER_ADDR: unio_worker_get_address()'s blob */
	size_t worker_addr_len;             /**< WORKER_ADDR: its length */
	unio_ep_err_handler_t err_handler;  /**< ERR_HANDLER: called once when the ep fails */
	void *err_arg;                      /**< ERR_HANDLER: passed to err_handler */
	void *user_data;                    /**< USER_DATA: unio_ep_get_user_data() returns it */
	/**
	 * UNIO_EP_PARAM_ERR_INFO: written by every unio_ep_create() that gets this far
	 * (params not NULL): the status and, on failure, why.  The caller then says the failure
	 * itself: the library logs it at info level only, not its warning or error line.
	 */
	struct unio_ep_error *err_info;
};

/**
 * Create an endpoint.  Connecting by socket address completes the handshake before it
 * returns (bounded by UNIO_PEER_TIMEOUT): a refused connection, a rejection or a peer of
 * another wire version is reported here.
 *
 * @param worker the worker.
 * @param params exactly one of UNIO_EP_PARAM_SOCKADDR, _CONN_REQUEST, _WORKER_ADDR; with
 *        UNIO_EP_PARAM_ERR_INFO, *params->err_info says why a failure happened.
 * @param status set always (may be NULL).  By socket address: UNIO_ERR_UNREACHABLE
 *        (nothing listens: sys_errno ECONNREFUSED; no route; no transport of either side
 *        reaches the other), UNIO_ERR_TIMED_OUT (no answer within UNIO_PEER_TIMEOUT),
 *        UNIO_ERR_REJECTED (the listener's handler called unio_listener_reject()),
 *        UNIO_ERR_VERSION_MISMATCH (a peer of another wire version),
 *        UNIO_ERR_NO_RESOURCE (the listener has too many requests waiting).
 * @return the endpoint, or NULL.
 */
unio_ep_t *unio_ep_create(unio_worker_t *worker, const struct unio_ep_params *params,
			  unio_status_t *status);

/** Close modes. */
enum unio_ep_close_mode {
	UNIO_EP_CLOSE_FLUSH = 0,  /**< complete outstanding sends first */
	UNIO_EP_CLOSE_FORCE = 1,  /**< fail outstanding requests with UNIO_ERR_CANCELED */
};

/**
 * Close an endpoint.  The endpoint must not be used after this call.
 *
 * UNIO_EP_CLOSE_FORCE closes at once: outstanding requests fail with UNIO_ERR_CANCELED;
 * returns UNIO_OK.
 *
 * UNIO_EP_CLOSE_FLUSH first flushes (see unio_ep_flush()), then tells the peer and closes.
 * With @p req_p: UNIO_OK when it was done at once, else UNIO_INPROGRESS and a request that
 * completes (unio_request_test(), unio_request_wait()) once the endpoint is closed, with
 * UNIO_OK, or with the endpoint's error when the peer died meanwhile (closed all the same).
 * With a NULL @p req_p it waits, at most UNIO_PEER_TIMEOUT (then closes anyway and returns
 * UNIO_ERR_TIMED_OUT), and returns the flush's status.
 */
unio_status_t unio_ep_close(unio_ep_t *ep, enum unio_ep_close_mode mode,
			    unio_request_t **req_p);

/**
 * Flush an endpoint: complete once no send, put or get started on it is outstanding (sends
 * started after the flush count too) and its transport confirmed delivery.  Non-blocking:
 * UNIO_OK when nothing is outstanding, else UNIO_INPROGRESS and a request (completion by
 * @p param's callback, polling or unio_request_wait(), as for sends) that completes with
 * UNIO_OK, or with the endpoint's error (e.g. UNIO_ERR_CONNECTION_RESET) when the peer dies.
 * A NULL @p req_p waits instead (progressing the worker), at most UNIO_PEER_TIMEOUT
 * (UNIO_ERR_TIMED_OUT).  UNIO_ERR_NOT_CONNECTED on a failed or closed endpoint.
 */
unio_status_t unio_ep_flush(unio_ep_t *ep, const struct unio_request_param *param,
			    unio_request_t **req_p);

/**
 * Flush every endpoint of a worker (those connected or connecting), as unio_ep_flush():
 * one request for all; it completes with the first endpoint error, if any.
 */
unio_status_t unio_worker_flush(unio_worker_t *worker, const struct unio_request_param *param,
				unio_request_t **req_p);

#define UNIO_EP_ATTR_FIELD_ERROR (1ull << 0) /**< fill error */

/** What unio_ep_query() reports. */
struct unio_ep_attr {
	uint64_t field_mask;            /**< UNIO_EP_ATTR_FIELD_*: what to fill */
	/**
	 * UNIO_EP_ATTR_FIELD_ERROR: the endpoint's peer ("IP port P" when made by or from a
	 * socket address, "worker UUID" from a worker address) and, once the endpoint failed,
	 * its first error (the status its error handler got) and why: "ep to 127.0.0.1 port
	 * 13400: connection reset by peer (the peer died or reset its control connection)".
	 * status UNIO_OK and an empty reason while it works; sys_errno is 0.
	 */
	struct unio_ep_error error;
};

/**
 * Describe an endpoint: why it failed, for an error handler (which may call it) or any
 * later call that returned the endpoint's error.
 *
 * @return UNIO_OK; UNIO_ERR_INVALID_PARAM for a NULL argument or an unknown field_mask bit.
 */
unio_status_t unio_ep_query(unio_ep_t *ep, struct unio_ep_attr *attr);

/** The endpoint's user_data (UNIO_EP_PARAM_USER_DATA). */
void *unio_ep_get_user_data(const unio_ep_t *ep);

/** Print the endpoint's lanes and their drivers (which transport serves which sizes). */
void unio_ep_print_info(const unio_ep_t *ep, FILE *stream);

/* ------------------------------------------------------------------------------------- */
/** @name Tagged messages */

/**
 * Send a tagged message.  The buffer may be reused when the call returns UNIO_OK, or after
 * the request completes.
 */
unio_status_t unio_tag_send(unio_ep_t *ep, const void *buf, size_t len, uint64_t tag,
			    const struct unio_request_param *param, unio_request_t **req_p);

/** Send a tagged message that completes only once the receiver matched it. */
unio_status_t unio_tag_send_sync(unio_ep_t *ep, const void *buf, size_t len, uint64_t tag,
				 const struct unio_request_param *param,
				 unio_request_t **req_p);

/**
 * Receive a message whose tag matches: ((msg_tag ^ tag) & tag_mask) == 0, so a tag_mask of 0
 * receives any tag.  Receives match in the order they were posted, messages in the order
 * they arrived from each endpoint.  A message longer than @p len completes with
 * UNIO_ERR_MESSAGE_TRUNCATED, the info's length set to the message's, and nothing written to
 * @p buf.
 */
unio_status_t unio_tag_recv(unio_worker_t *worker, void *buf, size_t len, uint64_t tag,
			    uint64_t tag_mask, const struct unio_request_param *param,
			    unio_request_t **req_p);

/**
 * Look for an unexpected message without receiving it.
 * @param remove when nonzero a found message is taken out of the queue and *msg_p is set:
 *        receive it with unio_tag_msg_recv().
 * @return UNIO_OK (found, *info filled), UNIO_ERR_NOT_FOUND.
 */
unio_status_t unio_tag_probe(unio_worker_t *worker, uint64_t tag, uint64_t tag_mask,
			     int remove, struct unio_recv_info *info, unio_tag_msg_t **msg_p);

/** Receive a message removed by unio_tag_probe(). */
unio_status_t unio_tag_msg_recv(unio_worker_t *worker, void *buf, size_t len,
				unio_tag_msg_t *msg, const struct unio_request_param *param,
				unio_request_t **req_p);

#ifdef __cplusplus
}
#endif

#include "unio_am.h"
#include "unio_rma.h"

#endif /* UNIO_H */
