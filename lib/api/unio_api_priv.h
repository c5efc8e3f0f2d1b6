/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UNIO_API_PRIV_H
#define UNIO_API_PRIV_H

/**
 * @file
 * Internals of the API objects (lib/api): the wire format of worker addresses and of the
 * TCP control connection, listeners and connection requests.  Never installed.
 */

#include <netinet/in.h>
#include <sys/socket.h>

#include "unio_log.h"
#include "unio_proto.h"

extern int unio_logtype_api;
#define API_LOG(lvl, fmt, ...) UNIO_LOG(lvl, unio_logtype_api, fmt, ##__VA_ARGS__)

/** Worker address: this header, then n_ifaces (struct wire_addr_iface + address bytes). */
struct wire_addr_hdr {
	uint32_t magic;        /**< UNIO_WIRE_MAGIC */
	uint16_t version;      /**< UNIO_WIRE_VERSION */
	uint16_t n_ifaces;
	uint64_t uuid;         /**< the worker's identity */
};

struct wire_addr_iface {
	char driver[UNIO_TL_NAME_MAX];
	char device[UNIO_TL_DEV_NAME_MAX];
	uint16_t addr_len;     /**< bytes of iface address that follow (<= UNIO_TL_ADDR_MAX) */
	uint16_t pad[3];
};

/** Control-connection message types. */
enum wire_ctl_type {
	WIRE_HELLO = 1,        /**< client -> server: ep_id, worker address */
	WIRE_ACCEPT = 2,       /**< server -> client: ep_id, worker address */
	WIRE_REJECT = 3,       /**< server -> client: the handler rejected */
	WIRE_VERSION = 4,      /**< server -> client: another wire version, refused */
	WIRE_CLOSE = 5,        /**< either way: orderly close of the endpoint */
	WIRE_REFUSED = 6,      /**< server -> client over a driver: no listener there, or
				*   the request could not be served (wire_conn.reason);
				*   over the control connection: none of the server's
				*   ifaces reaches the client (its worker address follows) */
};

/** wire_conn.reason of a REFUSED: why (0 from peers before it was sent: no listener). */
enum wire_refusal {
	WIRE_REFUSED_NO_LISTENER = 0,   /**< no listener has that address */
	WIRE_REFUSED_BUSY = 1,          /**< more requests waited than UNIO_CONN_BACKLOG */
	WIRE_REFUSED_NO_IFACE = 2,      /**< no iface of the worker has the address dialled */
	WIRE_REFUSED_NO_EP = 3,         /**< no endpoint to the sender could be made */
};

/** Control message: this header, then addr_len bytes of worker address. */
struct wire_ctl {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t ep_id;        /**< the sender's id of its endpoint */
	uint32_t addr_len;
};

/** A socket address on the wire (port and address in network order). */
struct wire_sockaddr {
	uint16_t family;       /**< AF_INET or AF_INET6 */
	uint16_t port;
	uint8_t addr[16];
};

/**
 * Control message over a driver's own channel (PROTO_AM_CONN, UNIO_TL_CAP_CONNECT_SOCKADDR):
 * this, then iface_addr_len bytes of the sender's iface address (HELLO: where replies go,
 * readable whatever the peer's wire version), then ctl.addr_len bytes of worker address.
 */
struct wire_conn {
	struct wire_ctl ctl;   /**< magic and version first, as on the control connection */
	uint32_t dst_ep_id;    /**< replies: the requester's ep */
	uint16_t iface_addr_len;
	uint16_t reason;       /**< REFUSED: enum wire_refusal; else 0 (ignored) */
	struct wire_sockaddr dst;   /**< HELLO: the address dialled (the listener's) */
	struct wire_sockaddr src;   /**< HELLO: the sender's own socket address */
};

#define WIRE_ADDR_MAX 8192

/** Accepted connections whose HELLO has not arrived yet, per listener. */
#define LISTENER_PEND_MAX 16

struct unio_listener {
	struct unio_worker *worker;
	int fd;                             /**< -1: on a driver's iface (see iface) */
	struct unio_tl_iface *iface;        /**< the iface that owns the address, or NULL */
	bool busy;                          /**< inside its progress (no re-entry) */
	int pend_fd[LISTENER_PEND_MAX];     /**< -1: free slot */
	uint64_t pend_deadline[LISTENER_PEND_MAX];
	struct sockaddr_storage pend_peer[LISTENER_PEND_MAX];
	unio_conn_handler_t handler;
	void *arg;
	struct sockaddr_storage addr;
	TAILQ_ENTRY(unio_listener) link;
};

struct unio_conn_request {
	struct unio_listener *listener;
	int fd;                     /**< -1: arrived over a driver (tl_ep) */
	struct unio_tl_ep *tl_ep;   /**< over a driver: the ep the answer goes on */
	struct sockaddr_storage peer;
	uint32_t remote_ep_id;
	uint32_t addr_len;
	uint8_t *addr;
};

/* worker.c */
size_t worker_address_pack(struct unio_worker *w, void *buf, size_t len);
/** Add @p fd to the worker's epoll set when it has one. */
void worker_efd_watch(struct unio_worker *w, int fd);
/** The next progress call of @p w runs the control plane. */
void worker_ctl_soon(struct unio_worker *w);

/* wireup.c */
unsigned int wireup_progress(struct unio_worker *w);
/** Move flushes and closes with flush on; complete those that are done. */
unsigned int wireup_flush_progress(struct unio_worker *w);
void wireup_ep_fail(struct unio_ep *ep, unio_status_t st, bool report);
void wireup_worker_fini(struct unio_worker *w);
unio_status_t wireup_set_handlers(struct unio_worker *w);
unio_status_t wireup_efd_add_all(struct unio_worker *w);

#endif /* UNIO_API_PRIV_H */
