/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UNIO_TL_H
#define UNIO_TL_H

/**
 * @file
 * The transport driver interface (driver SDK; not installed for applications).
 *
 * Modelled on UCT's three operation families in DPDK's shape:
 * - a driver (struct unio_tl_driver) registers itself from a constructor with
 *   UNIO_TL_DRIVER_REGISTER(); it lists its devices and opens memory domains and ifaces;
 * - an iface is one device opened by one worker; it owns its receive path and is progressed
 *   only by that worker's thread (no locks);
 * - an ep is a connection from an iface to a peer iface;
 * - the hot operations live in one flat, cache-aligned ops table per iface
 *   (struct unio_tl_ops) and are called through the static inline wrappers below, which do
 *   no validation: the generic layer (lib/tl) and the protocol layer validate once;
 * - control operations are NULL when unsupported; the generic layer then returns
 *   UNIO_ERR_UNSUPPORTED.
 *
 * Receive: progress() delivers every arrived message by calling the handler that the
 * protocol layer set for its AM id, with (data, length) where data starts with the header
 * the sender gave.  Nothing is allocated on this path: data points into driver memory and is
 * valid only during the call (unless the handler returns UNIO_INPROGRESS on a message
 * delivered with UNIO_TL_CB_FLAG_DESC, and releases it later with release_desc()).
 *
 * Sender identity: the handler is told which connection a frame came on, as an opaque
 * 64-bit connection id (unio_tl_conn_id_t).  Every ep of the iface to the peer iface that
 * sent it carries the same id in unio_tl_ep.conn_id, whichever of that peer's connections
 * the frame used (tcp's two crossing connections, ethdev's shared handles); no ep to another
 * peer does.  The protocol layer drops a message whose ep id names an ep whose conn_id is
 * not the frame's (doc/guides/protocols.md, "Answers from other peers").  Ids come from
 * unio_tl_conn_id_new() (or, shm, from the peer iface's own id with the top bit set), so
 * that ids of different ifaces never meet.  Answers that continue a request (ATS, RTR,
 * SYNC_ACK, PIPE, further eager fragments) are also bound by secrets only the peer the
 * request was sent to saw (sealed request ids, the fragment cookie); a driver must deliver
 * a frame only to the worker it was sent to, and never show one peer the frames of another
 * (shm cannot: every sender maps the receiver's whole segment, and writes the slot that
 * names it).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <rte_common.h>

#include "unio_config_priv.h"
#include "unio_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define UNIO_TL_NAME_MAX      16
#define UNIO_TL_DEV_NAME_MAX  32
#define UNIO_TL_AM_ID_MAX     32   /**< AM ids are 0 .. UNIO_TL_AM_ID_MAX-1 */
#define UNIO_TL_ADDR_MAX      128  /**< bytes of an iface or device address */
#define UNIO_TL_RKEY_MAX      64   /**< bytes of a packed remote key */
#define UNIO_TL_MAX_DEVICES   8
#define UNIO_TL_MAX_IOV       16

/** Capability flags of an iface. */
#define UNIO_TL_CAP_AM_SHORT      (1ull << 0)  /**< am_short */
#define UNIO_TL_CAP_AM_BCOPY      (1ull << 1)  /**< am_bcopy */
#define UNIO_TL_CAP_AM_ZCOPY      (1ull << 2)  /**< am_zcopy */
#define UNIO_TL_CAP_PUT_ZCOPY     (1ull << 3)  /**< put_zcopy */
#define UNIO_TL_CAP_GET_ZCOPY     (1ull << 4)  /**< get_zcopy */
#define UNIO_TL_CAP_RKEY_PTR      (1ull << 5)  /**< remote memory can be mapped: rkey_ptr */
#define UNIO_TL_CAP_CONNECT_IFACE (1ull << 6)  /**< ep from the peer's iface address alone */
#define UNIO_TL_CAP_EVENT_FD      (1ull << 7)  /**< event fd + arm for sleeping */
#define UNIO_TL_CAP_PEER_FAILURE  (1ull << 8)  /**< detects dead peers, reports ep errors */
#define UNIO_TL_CAP_ORDERED       (1ull << 9)  /**< AMs on one ep arrive in send order */
/** put/get are carried out by the target's driver, which validates its own keys (tcp) */
#define UNIO_TL_CAP_RMA_TARGET    (1ull << 10)
/**
 * Connect and accept by socket address over the iface's own channel: the iface has a socket
 * address of its own (iface_get_sockaddr), listeners on it need no kernel socket, and an ep
 * can be made to a peer known only by its socket address (sockaddr_to_addr + ep_create).
 */
#define UNIO_TL_CAP_CONNECT_SOCKADDR (1ull << 11)
/**
 * Gets may be striped over several eps of this driver to one peer process, each from
 * another iface (rendezvous rails): a key unpacked on one of them is valid on all, and the
 * peer's driver answers a get on any of its ifaces.
 */
#define UNIO_TL_CAP_GET_RAILS     (1ull << 12)

/** Reachability classes, from nearest to farthest. */
enum unio_tl_reach {
	UNIO_TL_REACH_SELF = 0,   /**< same worker */
	UNIO_TL_REACH_HOST = 1,   /**< another process on the same host */
	UNIO_TL_REACH_NET = 2,    /**< another host */
};

/** Flags of an rx callback. */
#define UNIO_TL_CB_FLAG_DESC (1u << 0) /**< data may be kept: return UNIO_INPROGRESS */

/** Flags of send operations. */
#define UNIO_TL_SEND_FLAG_SIGNALED (1u << 0) /**< wake a sleeping receiver */

struct unio_tl_driver;
struct unio_tl_md;
struct unio_tl_iface;
struct unio_tl_ep;

/**
 * The connection a frame came on, as its receiver's eps know it (unio_tl_ep.conn_id): the
 * same for every connection and every ep of one iface to one peer iface.  0: the driver
 * cannot tell (every frame and every ep of its ifaces then carry 0).
 */
typedef uint64_t unio_tl_conn_id_t;

/**
 * Rx handler for one AM id.  @p data starts with the sender's header; @p conn_id names the
 * connection it came on (see unio_tl_conn_id_t).  Return UNIO_OK when done with the data;
 * UNIO_INPROGRESS (only with UNIO_TL_CB_FLAG_DESC) to keep it.
 */
typedef unio_status_t (*unio_tl_am_cb_t)(void *arg, const void *data, size_t length,
					 unsigned int flags, unio_tl_conn_id_t conn_id);

/**
 * bcopy pack callback: write the message into @p dest, return the number of bytes.  @p dest
 * has no alignment guarantee (frames may be packed back to back), nor has the data an AM
 * handler receives: copy headers in and out with memcpy.
 */
typedef size_t (*unio_tl_pack_cb_t)(void *dest, void *arg);

/** Ep error callback: the peer died, reset or timed out. */
typedef void (*unio_tl_ep_err_cb_t)(void *arg, struct unio_tl_ep *ep, unio_status_t status);

/**
 * Completion of a zero-copy operation: func runs once count drops to zero.  A driver may add
 * one to count for each part of an operation it completes apart (and call
 * unio_tl_completion_done() once for each).
 */
struct unio_tl_completion {
	void (*func)(struct unio_tl_completion *self);
	int count;             /**< operations still outstanding */
	unio_status_t status;  /**< first error, or UNIO_OK */
};

/** Mark one operation of @p comp complete with @p st. */
static inline void
unio_tl_completion_done(struct unio_tl_completion *comp, unio_status_t st)
{
	if (st != UNIO_OK && comp->status == UNIO_OK)
		comp->status = st;
	if (--comp->count == 0)
		comp->func(comp);
}

/** Performance model used by the protocol layer to select lanes and thresholds. */
struct unio_tl_perf {
	double latency_ns;        /**< one-way latency of a minimal message */
	double overhead_ns;       /**< sender CPU time per message */
	double bandwidth_MBps;    /**< sustained bandwidth, MB/s (1e6 bytes) */
	double zcopy_overhead_ns; /**< extra fixed cost of a zero-copy operation */
};

/** What an iface can do, and its limits. */
struct unio_tl_iface_attr {
	uint64_t cap;             /**< UNIO_TL_CAP_* */
	size_t max_short;         /**< am_short: most payload bytes (beyond the 8-byte header) */
	size_t max_bcopy;         /**< am_bcopy: most bytes a pack callback may write */
	size_t max_zcopy;         /**< am_zcopy: most payload bytes */
	size_t max_zcopy_hdr;     /**< am_zcopy: most header bytes */
	size_t max_iov;           /**< am/put/get zcopy: most iov entries */
	size_t max_put_zcopy;     /**< put_zcopy: most bytes per call */
	size_t max_get_zcopy;     /**< get_zcopy: most bytes per call */
	size_t iface_addr_len;    /**< bytes of the iface address */
	size_t rkey_packed_len;   /**< bytes of a packed remote key (0: no rkeys) */
	enum unio_tl_reach reach; /**< the nearest class this iface serves */
	struct unio_tl_perf perf;
};

/** One device a driver offers. */
struct unio_tl_device_info {
	char name[UNIO_TL_DEV_NAME_MAX];   /**< e.g. "memory", "lo", "net_af_xdp0" */
	enum unio_tl_reach reach;
	char detail[96];                   /**< free text for unio-info -d */
};

/** Parameters to open an iface. */
struct unio_tl_iface_params {
	const struct unio_config *config;  /**< the context's configuration */
	const char *dev_name;              /**< one of the driver's devices */
	int cpu;                           /**< the worker's CPU (-1 unknown) */
	unio_tl_ep_err_cb_t err_cb;        /**< called when an ep fails */
	void *err_arg;
};

/** Parameters to create an ep. */
/**
 * unio_tl_ep_params.flags: the ep may be another handle on a connection this iface has to
 * that peer iface already (a driver with one connection per pair of ifaces); without it
 * such a driver answers UNIO_ERR_EXISTS, which tells a crossing connection request apart.
 */
#define UNIO_TL_EP_FLAG_SHARE 0x1u

struct unio_tl_ep_params {
	const void *iface_addr;            /**< the peer iface's address */
	size_t iface_addr_len;
	void *user;                        /**< stored in ep->user for the protocol layer */
	unsigned int flags;                /**< UNIO_TL_EP_FLAG_* */
};

/** Memory registration handle (driver-defined content). */
struct unio_tl_memh {
	void *addr;
	size_t len;
	void *priv;
};

/** An unpacked remote key. */
struct unio_tl_rkey {
	uint64_t remote_base;   /**< start of the range the key grants, in the peer's space */
	uint64_t remote_len;    /**< length of that range */
	void *local_ptr;        /**< non-NULL when mapped here (UNIO_TL_CAP_RKEY_PTR) */
	void *priv;
};

/**
 * Does [@p addr, @p addr + @p len) lie inside the range @p rkey grants?  The one bounds
 * check of every put, get and rendezvous pull (no overflow for any input).
 */
static inline bool
unio_tl_rkey_covers(const struct unio_tl_rkey *rkey, uint64_t addr, uint64_t len)
{
	return addr >= rkey->remote_base && len <= rkey->remote_len &&
	       addr - rkey->remote_base <= rkey->remote_len - len;
}

/** Hot operations of an iface, resolved once at open.  See the inline wrappers. */
struct unio_tl_ops {
	unio_status_t (*ep_am_short)(struct unio_tl_ep *ep, uint8_t id, uint64_t hdr,
				     const void *payload, size_t len);
	ssize_t (*ep_am_bcopy)(struct unio_tl_ep *ep, uint8_t id, unio_tl_pack_cb_t pack,
			       void *arg, unsigned int flags);
	unio_status_t (*ep_am_zcopy)(struct unio_tl_ep *ep, uint8_t id, const void *hdr,
				     size_t hdr_len, const struct iovec *iov, size_t iovcnt,
				     unsigned int flags, struct unio_tl_completion *comp);
	unio_status_t (*ep_put_zcopy)(struct unio_tl_ep *ep, const struct iovec *iov,
				      size_t iovcnt, uint64_t remote_addr,
				      const struct unio_tl_rkey *rkey,
				      struct unio_tl_completion *comp);
	unio_status_t (*ep_get_zcopy)(struct unio_tl_ep *ep, const struct iovec *iov,
				      size_t iovcnt, uint64_t remote_addr,
				      const struct unio_tl_rkey *rkey,
				      struct unio_tl_completion *comp);
	unio_status_t (*ep_flush)(struct unio_tl_ep *ep, struct unio_tl_completion *comp);
	unsigned int (*iface_progress)(struct unio_tl_iface *iface);
	/**
	 * Optional, for drivers with a poll word (unio_tl_iface.poll_word): iface_progress
	 * without the part that can wait a few calls (new senders, liveness); the worker calls
	 * it when the poll word is set, and iface_progress in one call in every few and in the
	 * first after unio_worker_arm().  NULL: the generic layer sets it to iface_progress.
	 * The driver may change it inside its own calls (shm: an entry for one sender's ring).
	 */
	unsigned int (*iface_deliver)(struct unio_tl_iface *iface);
} __rte_cache_aligned;

/** Control operations of an iface; NULL = unsupported. */
struct unio_tl_iface_ctl_ops {
	void (*iface_close)(struct unio_tl_iface *iface);
	unio_status_t (*iface_query)(struct unio_tl_iface *iface, struct unio_tl_iface_attr *attr);
	unio_status_t (*iface_get_address)(struct unio_tl_iface *iface, void *addr);
	/** Can this iface reach the peer iface at @p addr? (same host, same namespace...) */
	bool (*iface_is_reachable)(struct unio_tl_iface *iface, const void *addr, size_t len);
	unio_status_t (*iface_event_fd)(struct unio_tl_iface *iface, int *fd);
	unio_status_t (*iface_event_arm)(struct unio_tl_iface *iface);
	void (*iface_release_desc)(struct unio_tl_iface *iface, void *desc);
	unio_status_t (*ep_create)(struct unio_tl_iface *iface,
				   const struct unio_tl_ep_params *params,
				   struct unio_tl_ep **ep_p);
	void (*ep_destroy)(struct unio_tl_ep *ep);
	/* memory domain */
	unio_status_t (*mem_reg)(struct unio_tl_iface *iface, void *addr, size_t len,
				 struct unio_tl_memh *memh);
	void (*mem_dereg)(struct unio_tl_iface *iface, struct unio_tl_memh *memh);
	unio_status_t (*mem_alloc)(struct unio_tl_iface *iface, size_t len,
				   struct unio_tl_memh *memh);
	void (*mem_free)(struct unio_tl_iface *iface, struct unio_tl_memh *memh);
	unio_status_t (*rkey_pack)(struct unio_tl_iface *iface, const struct unio_tl_memh *memh,
				   void *buf);
	unio_status_t (*rkey_unpack)(struct unio_tl_ep *ep, const void *buf, size_t len,
				     struct unio_tl_rkey *rkey);
	void (*rkey_release)(struct unio_tl_ep *ep, struct unio_tl_rkey *rkey);
	/* socket addresses (UNIO_TL_CAP_CONNECT_SOCKADDR) */
	/** The iface's own socket address (e.g. its IPv4 and UDP port). */
	unio_status_t (*iface_get_sockaddr)(struct unio_tl_iface *iface,
					    struct sockaddr_storage *sa);
	/**
	 * The iface address (attr.iface_addr_len bytes into @p addr) of the peer iface whose
	 * socket address is @p sa, for ep_create; parts the socket address lacks are learned
	 * by the driver (see the contract).  UNIO_ERR_UNREACHABLE when the driver does not
	 * serve @p sa (the API then uses a kernel TCP connection).
	 */
	unio_status_t (*sockaddr_to_addr)(struct unio_tl_iface *iface, const struct sockaddr *sa,
					  socklen_t len, void *addr);
	/**
	 * After a send on @p ep was refused with UNIO_ERR_NO_RESOURCE: may a retry succeed now?
	 * false only when the driver knows nothing was freed since that refusal (shm: the
	 * receiver published no consumed cells since), so that a queued send waits without
	 * retrying; true when it cannot tell, and when a retry would report an error (a dead
	 * peer).  NULL: always retry.  Called only from the protocol layer's queues.
	 */
	bool (*ep_room_freed)(struct unio_tl_ep *ep);
};

/** An AM handler slot. */
struct unio_tl_am_handler {
	unio_tl_am_cb_t cb;
	void *arg;
};

/**
 * Why the protocol layer refused a connection request that came over an iface
 * (UNIO_TL_CAP_CONNECT_SOCKADDR), counted in unio_tl_iface.conn_refused; a driver reports
 * the counters with its statistics.
 */
enum unio_tl_conn_refusal {
	UNIO_TL_CONN_BUSY,        /**< more requests waited than UNIO_CONN_BACKLOG: REFUSED */
	UNIO_TL_CONN_NO_IFACE,    /**< for an address no iface of the worker has: REFUSED */
	UNIO_TL_CONN_NO_EP,       /**< no endpoint to the sender could be made: REFUSED */
	UNIO_TL_CONN_UNANSWERED,  /**< no answer possible (malformed, no room): dropped */
	UNIO_TL_CONN_N
};

/** The generic part of an iface; drivers embed it first in their own iface struct. */
struct unio_tl_iface {
	struct unio_tl_ops ops;                         /**< hot ops, flat */
	struct unio_tl_am_handler am[UNIO_TL_AM_ID_MAX]; /**< rx handlers by AM id */
	const struct unio_tl_iface_ctl_ops *ctl;
	const struct unio_tl_driver *driver;
	struct unio_tl_iface_attr attr;                  /**< filled by the generic layer */
	char dev_name[UNIO_TL_DEV_NAME_MAX];
	unio_tl_ep_err_cb_t err_cb;
	void *err_arg;
	/** Connection requests refused by the protocol layer, by enum unio_tl_conn_refusal. */
	uint64_t conn_refused[UNIO_TL_CONN_N];
	/**
	 * Set by a driver whose progress has nothing to do until one of its own calls clears
	 * it again (self without an ep): the worker does not call iface_progress meanwhile.
	 * Zero when the driver never sets it.
	 */
	bool idle;
	/**
	 * Optional "anything there?" word, through two pointers so that the driver can move it
	 * without telling anyone: when @c poll_word is not NULL and @c **poll_word is 0, a
	 * progress call would deliver nothing now, and the worker calls iface_progress only
	 * once every few calls (for the driver's housekeeping: new senders, liveness) and on
	 * the call after unio_worker_arm(); when it is set, iface_deliver.  NULL (the
	 * default): iface_progress every time.  The driver changes both levels only inside its
	 * own calls.
	 */
	uint64_t *const *poll_word;
};

/** The generic part of an ep; drivers embed it first in their own ep struct. */
struct unio_tl_ep {
	struct unio_tl_iface *iface;
	void *user;        /**< the protocol layer's (see unio_tl_ep_params.user) */
	/**
	 * Capabilities toward this peer: the iface's, less what this peer refuses (e.g. no
	 * GET_ZCOPY when the kernel refuses CMA to a process of another user).  The driver's
	 * ep_create may set it; left at 0, the generic layer sets it to iface->attr.cap.
	 */
	uint64_t cap;
	/**
	 * The connection id with which frames from this ep's peer iface arrive here (the AM
	 * callback's @c conn_id), set by the driver's ep_create and kept valid while the ep
	 * lives; 0 when the driver cannot tell.
	 */
	unio_tl_conn_id_t conn_id;
};

/** A transport driver. */
struct unio_tl_driver {
	const char *name;                  /**< "self", "shm", "tcp", ... */
	const char *description;
	/**
	 * List the devices usable under @p config (UNIO_TLS is applied by the generic layer;
	 * network drivers apply UNIO_NET_DEVICES).  With no device, set @p reason.
	 */
	unio_status_t (*query_devices)(const struct unio_config *config,
				       struct unio_tl_device_info *devs, unsigned int *n_devs,
				       char *reason, size_t reason_len);
	/** Open an iface on one device. */
	unio_status_t (*iface_open)(const struct unio_tl_iface_params *params,
				    struct unio_tl_iface **iface_p);
};

/** Register a driver (called from the driver's constructor). */
void unio_tl_driver_register(const struct unio_tl_driver *drv);

/** Register @p drv from a constructor at the driver priority tier. */
#define UNIO_TL_DRIVER_REGISTER(drv) \
	RTE_INIT_PRIO(unio_tl_register_##drv, CLASS) \
	{ \
		unio_tl_driver_register(&(drv)); \
	}

/** Number of registered drivers. */
unsigned int unio_tl_driver_count(void);

/** Driver @p i (0-based), or NULL. */
const struct unio_tl_driver *unio_tl_driver_get(unsigned int i);

/** Driver by name, or NULL. */
const struct unio_tl_driver *unio_tl_driver_find(const char *name);

/** True when UNIO_TLS in @p config allows driver @p name. */
bool unio_tl_driver_allowed(const struct unio_config *config, const char *name);

/**
 * Warn about every UNIO_TLS name in @p config that matches no
 * driver of this build, with Unio's driver for a UCX transport name.  The context runs it
 * at creation and unio-info -d before it lists the drivers: one check for both.
 */
void unio_tl_check_tls(const struct unio_config *config);

/**
 * Open an iface through the generic layer: checks UNIO_TLS, opens, queries the attributes
 * into iface->attr, and fills missing ops with stubs that return UNIO_ERR_UNSUPPORTED.
 */
unio_status_t unio_tl_iface_open(const struct unio_tl_driver *drv,
				 const struct unio_tl_iface_params *params,
				 struct unio_tl_iface **iface_p);

/** Close an iface (NULL accepted). */
void unio_tl_iface_close(struct unio_tl_iface *iface);

/** Set the rx handler of AM id @p id (UNIO_ERR_INVALID_PARAM when out of range). */
unio_status_t unio_tl_iface_set_am_handler(struct unio_tl_iface *iface, uint8_t id,
					   unio_tl_am_cb_t cb, void *arg);

/** Create an ep to the peer iface at @p params->iface_addr (validates the arguments). */
unio_status_t unio_tl_ep_create(struct unio_tl_iface *iface,
				const struct unio_tl_ep_params *params, struct unio_tl_ep **ep_p);

/** Destroy an ep (NULL accepted). */
void unio_tl_ep_destroy(struct unio_tl_ep *ep);

/**
 * List the devices of @p drv usable under @p config.  A driver that UNIO_TLS denies gets no
 * device and the reason says so.  @p devs holds UNIO_TL_MAX_DEVICES entries.
 */
unio_status_t unio_tl_query_devices(const struct unio_tl_driver *drv,
				    const struct unio_config *config,
				    struct unio_tl_device_info *devs, unsigned int *n_devs,
				    char *reason, size_t reason_len);

/** Write the iface's address (attr.iface_addr_len bytes) into @p addr. */
unio_status_t unio_tl_iface_get_address(struct unio_tl_iface *iface, void *addr);

/** Register @p len bytes at @p addr for zero-copy and remote access. */
unio_status_t unio_tl_mem_reg(struct unio_tl_iface *iface, void *addr, size_t len,
			      struct unio_tl_memh *memh);

/** Deregister memory registered with unio_tl_mem_reg(). */
void unio_tl_mem_dereg(struct unio_tl_iface *iface, struct unio_tl_memh *memh);

/**
 * Allocate and register @p len bytes that peers may map directly (UNIO_TL_CAP_RKEY_PTR);
 * memh->addr is the memory.  Free with unio_tl_mem_free().
 */
unio_status_t unio_tl_mem_alloc(struct unio_tl_iface *iface, size_t len,
				struct unio_tl_memh *memh);

/** Free memory from unio_tl_mem_alloc(). */
void unio_tl_mem_free(struct unio_tl_iface *iface, struct unio_tl_memh *memh);

/** Pack a remote key for @p memh into @p buf (attr.rkey_packed_len bytes). */
unio_status_t unio_tl_rkey_pack(struct unio_tl_iface *iface, const struct unio_tl_memh *memh,
				void *buf);

/** Unpack a remote key a peer packed; validates it (UNIO_ERR_INVALID_ADDR when foreign). */
unio_status_t unio_tl_rkey_unpack(struct unio_tl_ep *ep, const void *buf, size_t len,
				  struct unio_tl_rkey *rkey);

/** Release an unpacked remote key (unmaps what rkey_unpack mapped). */
void unio_tl_rkey_release(struct unio_tl_ep *ep, struct unio_tl_rkey *rkey);

/** The iface's own socket address (UNIO_ERR_UNSUPPORTED without CONNECT_SOCKADDR). */
unio_status_t unio_tl_iface_get_sockaddr(struct unio_tl_iface *iface,
					 struct sockaddr_storage *sa);

/**
 * The iface address of the peer at socket address @p sa (attr.iface_addr_len bytes into
 * @p addr), for unio_tl_ep_create().  UNIO_ERR_UNSUPPORTED without CONNECT_SOCKADDR,
 * UNIO_ERR_UNREACHABLE when the driver does not serve @p sa.
 */
unio_status_t unio_tl_sockaddr_to_addr(struct unio_tl_iface *iface, const struct sockaddr *sa,
				       socklen_t len, void *addr);

/**
 * A connection id no iface of this process handed out before (nonzero, below 2^63: shm's
 * ids have the top bit set).  Thread-safe.
 */
unio_tl_conn_id_t unio_tl_conn_id_new(void);

/** Names of the capability flags in @p cap, space-separated, into @p buf. */
void unio_tl_cap_string(uint64_t cap, char *buf, size_t len);

/** Log type of the transport layer, for drivers' own log types see their sources. */
extern int unio_logtype_tl;

/* ---- fast-path wrappers: no validation, the callers did it ---- */

/** Send a short AM: 8-byte header + up to attr.max_short payload bytes, copied now. */
static inline unio_status_t
unio_tl_ep_am_short(struct unio_tl_ep *ep, uint8_t id, uint64_t hdr, const void *payload,
		    size_t len)
{
	return ep->iface->ops.ep_am_short(ep, id, hdr, payload, len);
}

/** Send a bcopy AM: @p pack writes up to attr.max_bcopy bytes. Returns bytes or <0 status. */
static inline ssize_t
unio_tl_ep_am_bcopy(struct unio_tl_ep *ep, uint8_t id, unio_tl_pack_cb_t pack, void *arg,
		    unsigned int flags)
{
	return ep->iface->ops.ep_am_bcopy(ep, id, pack, arg, flags);
}

/**
 * Send a zcopy AM: header copied now, payload read from @p iov until completion.  Returns
 * UNIO_OK (done already), UNIO_INPROGRESS (comp will be called), or an error.
 */
static inline unio_status_t
unio_tl_ep_am_zcopy(struct unio_tl_ep *ep, uint8_t id, const void *hdr, size_t hdr_len,
		    const struct iovec *iov, size_t iovcnt, unsigned int flags,
		    struct unio_tl_completion *comp)
{
	return ep->iface->ops.ep_am_zcopy(ep, id, hdr, hdr_len, iov, iovcnt, flags, comp);
}

/** Write local @p iov to the peer's @p remote_addr inside @p rkey's range. */
static inline unio_status_t
unio_tl_ep_put_zcopy(struct unio_tl_ep *ep, const struct iovec *iov, size_t iovcnt,
		     uint64_t remote_addr, const struct unio_tl_rkey *rkey,
		     struct unio_tl_completion *comp)
{
	return ep->iface->ops.ep_put_zcopy(ep, iov, iovcnt, remote_addr, rkey, comp);
}

/** Read the peer's @p remote_addr (inside @p rkey's range) into local @p iov. */
static inline unio_status_t
unio_tl_ep_get_zcopy(struct unio_tl_ep *ep, const struct iovec *iov, size_t iovcnt,
		     uint64_t remote_addr, const struct unio_tl_rkey *rkey,
		     struct unio_tl_completion *comp)
{
	return ep->iface->ops.ep_get_zcopy(ep, iov, iovcnt, remote_addr, rkey, comp);
}

/** Complete (UNIO_OK) or start completing (UNIO_INPROGRESS) every operation on @p ep. */
static inline unio_status_t
unio_tl_ep_flush(struct unio_tl_ep *ep, struct unio_tl_completion *comp)
{
	return ep->iface->ops.ep_flush(ep, comp);
}

/** Poll the iface: deliver arrived messages and completions; returns events handled. */
static inline unsigned int
unio_tl_iface_progress(struct unio_tl_iface *iface)
{
	return iface->ops.iface_progress(iface);
}

/** Poll the iface without its housekeeping (see unio_tl_ops.iface_deliver). */
static inline unsigned int
unio_tl_iface_deliver(struct unio_tl_iface *iface)
{
	return iface->ops.iface_deliver(iface);
}

/** False only when the iface's poll word says a progress call would find nothing now. */
static inline bool
unio_tl_iface_may_have_work(const struct unio_tl_iface *iface)
{
	uint64_t *const *pw = iface->poll_word;

	return pw == NULL || __atomic_load_n(*pw, __ATOMIC_RELAXED) != 0;
}

/**
 * May a send that @p ep refused with UNIO_ERR_NO_RESOURCE be retried with a chance now?
 * (true when the driver cannot tell; see unio_tl_iface_ctl_ops.ep_room_freed)
 */
static inline bool
unio_tl_ep_room_freed(struct unio_tl_ep *ep)
{
	bool (*f)(struct unio_tl_ep *) = ep->iface->ctl->ep_room_freed;

	return f == NULL || f(ep);
}

/** Deliver one message that came on connection @p conn_id to its handler (drivers' rx). */
static inline unio_status_t
unio_tl_iface_invoke_am(struct unio_tl_iface *iface, uint8_t id, const void *data,
			size_t length, unsigned int flags, unio_tl_conn_id_t conn_id)
{
	return iface->am[id].cb(iface->am[id].arg, data, length, flags, conn_id);
}

#ifdef __cplusplus
}
#endif

#endif /* UNIO_TL_H */
