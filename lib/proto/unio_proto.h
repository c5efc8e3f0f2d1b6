/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UNIO_PROTO_H
#define UNIO_PROTO_H

/**
 * @file
 * Internal state shared by the protocol stage (lib/proto) and the API objects (lib/api):
 * the worker, endpoint and request structures, the wire headers and the AM ids.  Never
 * installed.  See doc/guides/protocols.md for the wire format.
 */

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/queue.h>

#include <rte_branch_prediction.h>
#include <rte_common.h>
#include <rte_debug.h>

#include "unio.h"
#include "unio_config_priv.h"
#include "unio_tl.h"

/**
 * Wire-protocol version: a peer announcing another one is refused.  2: request ids on the
 * wire are sealed (proto_req_id()), and a multi-fragment eager message carries a cookie.
 * 3: the wireup reply repeats a cookie of its request.
 */
#define UNIO_WIRE_VERSION 3
/** Magic of worker addresses and control messages ("UNIO"). */
#define UNIO_WIRE_MAGIC 0x4f494e55u

/** AM ids of the protocol stage. */
enum proto_am_id {
	PROTO_AM_EAGER_SHORT = 1,  /**< hdr = tag (8 B), payload = the whole message */
	PROTO_AM_EAGER = 2,        /**< struct proto_eager_hdr + the whole message */
	PROTO_AM_EAGER_FIRST = 3,  /**< struct proto_eager_first_hdr + first fragment */
	PROTO_AM_EAGER_MID = 4,    /**< struct proto_frag_hdr + a further fragment */
	PROTO_AM_RTS = 5,          /**< struct proto_rts_hdr + packed rkey */
	PROTO_AM_ATS = 6,          /**< struct proto_ack_hdr: rendezvous done */
	PROTO_AM_RTR = 7,          /**< struct proto_rtr_hdr: send the pipelined fragments */
	PROTO_AM_PIPE = 8,         /**< struct proto_frag_hdr + a pipelined fragment */
	PROTO_AM_SYNC_ACK = 9,     /**< struct proto_ack_hdr: a sync send was matched */
	PROTO_AM_WIREUP_REQ = 10,  /**< lib/api: ep from a worker address, request */
	PROTO_AM_WIREUP_REP = 11,  /**< lib/api: ... and its reply */
	PROTO_AM_USER_EAGER = 12,  /**< am.c: struct am_eager_hdr + user header + data */
	PROTO_AM_USER_RTS = 13,    /**< am.c: struct am_rts_hdr + user header + rkey */
	PROTO_AM_CONN = 14,        /**< lib/api: HELLO / ACCEPT ... over a driver's channel */
	PROTO_AM_MAX
};

/** Eager single-fragment header (PROTO_AM_EAGER). */
struct proto_eager_hdr {
	uint64_t tag;
	uint64_t sreq_id;      /**< nonzero: sync send, acknowledge with SYNC_ACK */
	uint32_t ep_id;        /**< the receiver's id of its ep to the sender */
	uint32_t flags;
};

/** First fragment of a multi-fragment eager message. */
struct proto_eager_first_hdr {
	struct proto_eager_hdr e;
	uint64_t total;        /**< message length */
	uint64_t cookie;       /**< unguessable: every further fragment repeats it in rreq_id */
};

/** A further fragment (eager middle/last, or pipelined). */
struct proto_frag_hdr {
	uint64_t rreq_id;      /**< pipelined: the receive request; eager: the first's cookie */
	uint64_t offset;       /**< where this fragment goes */
	uint32_t ep_id;        /**< the receiver's id of its ep to the sender */
	uint32_t pad;
};

#define PROTO_RTS_FLAG_SYNC     (1u << 0)
#define PROTO_RTS_FLAG_PIPELINE (1u << 1)  /**< no rkey: answer with RTR */
#define PROTO_RTS_FLAG_SPLIT    (1u << 2)  /**< the sender can put a part: answer with RTP */

/** Rendezvous request to send. */
struct proto_rts_hdr {
	uint64_t tag;
	uint64_t size;
	uint64_t sreq_id;
	uint64_t addr;         /**< sender's buffer address (get) */
	uint32_t ep_id;
	uint16_t flags;
	uint16_t rkey_len;     /**< bytes of packed rkey following the header */
};

/** Rendezvous answer / sync acknowledgement. */
struct proto_ack_hdr {
	uint64_t sreq_id;
	int32_t status;
	uint32_t pad;
};

/** Ready to receive (pipelined rendezvous). */
struct proto_rtr_hdr {
	uint64_t sreq_id;
	uint64_t rreq_id;
	uint32_t ep_id;        /**< the sender's id of its ep to the receiver (for PIPE) */
	uint32_t pad;
};

/**
 * Split rendezvous (PROTO_AM_RTR with this longer header, then the packed rkey of the
 * receive buffer): the receiver pulls [0, offset) itself and asks the sender to put
 * [offset, size) at @p addr; the sender answers PROTO_AM_ATS to the receive request when
 * its part is written.
 */
struct proto_rtp_hdr {
	struct proto_rtr_hdr r;
	uint64_t addr;         /**< where the sender's part goes (receiver's address) */
	uint64_t offset;       /**< first byte of the sender's part */
	uint16_t rkey_len;     /**< bytes of packed rkey following the header */
	uint16_t pad[3];
};

/* ---- requests ---- */

enum req_type { REQ_SEND, REQ_RECV, REQ_FLUSH };
enum req_state { REQ_FREE, REQ_ACTIVE, REQ_DONE };

/** What a send still has to do. */
enum send_proto {
	SEND_SHORT, SEND_EAGER, SEND_FRAGS, SEND_RNDV_GET, SEND_RNDV_PIPE_RTS,
	SEND_RNDV_PIPE_DATA, SEND_WAIT_ACK, SEND_EAGER_ZCOPY
};

struct proto_unexp;

struct unio_request {
	uint8_t type;
	uint8_t state;
	bool user_freed;       /**< free on completion, no callback */
	bool user_owned;       /**< handed to the user */
	unio_status_t status;
	unio_request_cb_t cb;
	void *user_data;
	struct unio_recv_info info;
	/* send */
	struct unio_ep *ep;
	const uint8_t *sbuf;
	size_t slen;
	size_t offset;
	uint64_t tag;
	uint8_t proto;         /**< enum send_proto */
	bool sync;
	bool on_ep;
	bool memh_valid;
	bool rkey_valid;
	bool posted;            /**< in the expected queue */
	bool split_wait;        /**< split rendezvous: the sender's part is not written yet */
	bool tl_held;           /**< failed with its ep while a transport held comp */
	bool put_deferred;      /**< freed by the user while tl_held: recycled on release */
	uint8_t rails;          /**< get: chunks striped over this many lanes (1: lane only) */
	bool sync_acked;        /**< sync fragments: answered before the last one went out */
	uint8_t adapt;          /**< rendezvous: PROTO_ADAPT_* flags (and a receive's class) */
	unio_status_t ack_status;   /**< that answer's status (sync_acked) */
	uint64_t rreq_id;      /**< pipelined: the peer's receive; eager fragments: the cookie */
	/* receive */
	uint8_t *rbuf;
	size_t rlen;
	size_t received;
	struct unio_ep *rndv_ep;
	uint64_t rndv_sreq;
	/*
	 * Not cleared by proto_req_get() (the fields above are): each is valid only behind its
	 * flag (memh: memh_valid, rkey: rkey_valid, the matching fields: posted, the list
	 * entries: on a list), assigned before use (urkey, comp, ctl, rtag, rmask), or the
	 * request's identity, which stays (idx, gen, worker).
	 */
	TAILQ_ENTRY(unio_request) link;     /**< free / pending / matching / ep list */
	TAILQ_ENTRY(unio_request) ep_link;  /**< ep's outstanding sends */
	/* the request's identity: set when its chunk is made (gen moves on at every put) */
	uint32_t idx;
	uint32_t gen;
	struct unio_worker *worker;
	uint64_t rtag;          /**< receive: set by every receive before it is matched */
	uint64_t rmask;
	uint64_t seq;           /**< set by proto_exp_add() */
	struct proto_mclass *mclass;   /**< set by proto_exp_add() */
	struct unio_tl_memh memh;
	struct unio_tl_iface *memh_iface;
	struct unio_tl_rkey rkey;
	struct unio_rkey *urkey;    /**< put / get: the user's key, held until comp completes */
	struct unio_tl_completion comp;
	uint64_t t_start;       /**< timed rendezvous receive (PROTO_ADAPT_TIMED): TSC at start */
	uint64_t t_flight;      /**< ... the ep's bytes in flight then, its own included */
	uint32_t t_other;       /**< ... the ep's count of the other scheme's starts then */
	/* control message waiting for resources */
	uint8_t ctl_id;
	uint8_t ctl[sizeof(struct proto_rtp_hdr) + UNIO_TL_RKEY_MAX];
};

TAILQ_HEAD(req_list, unio_request);

/* ---- matching ---- */

#define PROTO_HASH_BUCKETS 4096

/** Posted receives of one mask value, hashed by (tag & mask). */
struct proto_mclass {
	uint64_t mask;
	unsigned int count;
	TAILQ_ENTRY(proto_mclass) link;
	struct req_list bucket[PROTO_HASH_BUCKETS];
};

/** An unexpected message: eager data (copied) or an RTS (no data). */
struct proto_unexp {
	TAILQ_ENTRY(proto_unexp) link;     /**< arrival order */
	TAILQ_ENTRY(proto_unexp) hlink;    /**< per-tag bucket */
	uint64_t tag;
	size_t length;
	bool is_rts;
	bool complete;          /**< all fragments arrived */
	bool sync;
	size_t received;
	uint64_t sreq_id;
	uint32_t ep_id;
	struct unio_request *bound;  /**< receive matched while fragments still arrive */
	uint8_t *data;          /**< inline or heap */
	struct proto_rts_hdr rts;
	uint8_t rkey[UNIO_TL_RKEY_MAX];
	uint8_t inl[256];
};

TAILQ_HEAD(unexp_list, proto_unexp);

/* ---- endpoint ---- */

/** Most bytes of user header + data an AM sends through am_short (am.c). */
#define PROTO_AM_SHORT_MAX 1024

/** Most lanes one rendezvous pull is striped over (the lane and its rails). */
#define PROTO_MAX_RAILS 4
/** Rendezvous pulls from this size are striped over the ep's rails, when it has any. */
#define PROTO_RAIL_MIN (256 * 1024)

/*
 * The auto rendezvous scheme on a host lane that can get (proto.c): the sender offers its
 * buffer (the rkey in the RTS) and the receiver, which sees the data delivered, chooses: it
 * pulls, or asks for the pipeline (RTR).  Per size class (powers of two from the threshold)
 * the receiver times each rendezvous from its start (the receive matched the RTS) to the
 * data in its buffer and divides by the bytes in flight on the ep when it started (itself
 * and the ones ahead of it: Little's law), keeps decaying sums of both for get and for
 * pipeline (their ratio: ticks per byte), uses the cheaper, and probes the other in bursts
 * longer than the window (so that a change of the moment shows within a few milliseconds).
 * A rendezvous that started behind one of the other scheme is no sample.
 */
#define PROTO_ADAPT_CLASSES 8
#define PROTO_ADAPT_RNDV  0x80   /**< unio_request.adapt: a rendezvous send, counted */
#define PROTO_ADAPT_TIMED 0x40   /**< ... a rendezvous receive, timed, in the ep's flight */
#define PROTO_ADAPT_PURE  0x20   /**< ... started behind none of the other scheme */
#define PROTO_ADAPT_BY_PIPE 0x10 /**< ... the pipeline chosen */
#define PROTO_ADAPT_CLASS_MASK 0x07

enum proto_adapt_scheme { PROTO_ADAPT_GET, PROTO_ADAPT_PIPE, PROTO_ADAPT_SPLIT };

struct proto_adapt_class {
	uint64_t ticks[2];      /**< get, pipeline: their times, a sum that decays by 1/16 ... */
	uint64_t bytes[2];      /**< ... and the bytes in flight at their starts, alike */
	uint64_t seen[2];       /**< TSC of the last sample of each */
	uint64_t all_ticks[2];  /**< ep info: the sums since the start, without decay */
	uint64_t all_bytes[2];
	uint32_t since_probe;   /**< rendezvous chosen by cost since the last probe burst */
	uint8_t probe_left;     /**< rendezvous left in the current probe burst */
	uint8_t probe;          /**< the scheme that burst probes */
	uint8_t probe_want;     /**< samples the burst gathers (0: none, the burst is over) */
	uint8_t probe_got;      /**< ... gathered so far */
	uint8_t probe_more;     /**< rendezvous the burst may still take to gather them */
	uint8_t best;           /**< the scheme chosen by cost last */
};

struct proto_adapt {
	struct proto_adapt_class cls[PROTO_ADAPT_CLASSES];
	uint64_t stale_tsc;     /**< probe a scheme with no sample for this long */
	uint64_t flight_bytes;  /**< bytes of the timed rendezvous receives in flight */
	uint32_t flight[2];     /**< timed rendezvous receives in flight by get, by pipeline */
	uint32_t starts[2];     /**< timed rendezvous receives started by get, by pipeline */
	uint32_t skew[2];       /**< tests: samples of get, pipeline multiplied by this */
	uint64_t n[3];          /**< rendezvous sends completed by get, pipeline, split */
	uint64_t n_rx[2];       /**< timed rendezvous receives delivered by get, pipeline */
	uint64_t n_probe;       /**< rendezvous received so as to probe the scheme not chosen */
	uint8_t shift;          /**< log2 of the first class's lower bound */
};

enum ep_state { EP_CONNECTING, EP_CONNECTED, EP_FAILED, EP_CLOSED };

/** One per peer iface pair actually used. */
struct proto_lane {
	struct unio_tl_ep *tl_ep;
	struct unio_tl_iface *iface;
	/**
	 * The connection the peer's frames come on (unio_tl_conn_id_t): the lane's own, or for
	 * an ep from a worker address, the one its wireup request or reply came on (the peer
	 * chose its own lane, maybe another driver or iface).
	 */
	unio_tl_conn_id_t rx_conn_id;
	bool short_ok;         /**< the lane has am_short */
	size_t max_short;      /**< eager short up to this payload */
	size_t am_short_end;   /**< AM through am_short below this (0: none; proto.c) */
	size_t max_eager;      /**< single eager bcopy up to this payload */
	size_t frag;           /**< payload of a further fragment: whole cache lines (proto.c) */
	size_t frag_last;      /**< ... of the last one, which takes what is left up to this */
	size_t frag_first;     /**< ... of a multi-fragment eager message's first fragment */
	size_t rndv_thresh;
	int rndv_scheme;       /**< enum unio_rndv_scheme, resolved */
	bool rndv_adapt;       /**< auto: get or pipeline by measure below split_min (proto.c) */
	size_t split_min;      /**< tag rendezvous from this size: split get / put (or inf) */
	size_t zcopy_thresh;   /**< eager from the user buffer (am_zcopy) from this size */
	size_t max_zcopy;      /**< ... up to this payload (0: the lane has no am_zcopy) */
	uint64_t n_zcopy;      /**< eager zero-copy sends started (unio_ep_print_info) */
};

/** Reassembly of the multi-fragment message in progress from one ep. */
struct proto_rx_frag {
	struct unio_request *req;   /**< posted receive, or NULL */
	struct proto_unexp *ux;     /**< unexpected buffer, or NULL */
	uint64_t total;
	uint64_t offset;
	uint64_t cookie;            /**< of the first fragment: the further ones repeat it */
	bool active;
	bool drop;                  /**< truncated or no memory: swallow the rest */
};

struct unio_rkey;

struct unio_ep {
	LIST_HEAD(, unio_rkey) rkeys;   /**< remote keys unpacked on this ep */
	struct unio_worker *worker;
	uint32_t id;                /**< index | generation << 16 */
	uint32_t remote_id;         /**< the peer's id of its ep to us */
	uint8_t state;
	bool err_reported;
	bool remote_closed;
	bool pending_counted;       /**< counted in worker->n_pending */
	bool by_driver;             /**< connected by sockaddr over its lane: CLOSE goes there */
	bool linger_lane;           /**< the lane carried our CLOSE: kept until it was acked */
	uint8_t wireup_owed;        /**< wireup REQ / REP the full lane refused: resent later */
	uint64_t wireup_cookie;     /**< the peer's wireup request's cookie (its reply's) */
	struct proto_lane lane;
	uint8_t n_rails;            /**< rendezvous rails beside the lane (UNIO_MAX_RNDV_RAILS) */
	struct unio_tl_ep *rails[PROTO_MAX_RAILS - 1];  /**< gets of large pulls, striped */
	struct proto_rx_frag rx;
	struct req_list pending;    /**< sends waiting for resources, in order */
	struct req_list outstanding;/**< sends waiting for the peer (ATS, ACK, RTR) */
	unio_ep_err_handler_t err_handler;
	void *err_arg;
	void *user_data;
	int ctl_fd;                 /**< TCP control connection, -1 when none */
	uint64_t peer_uuid;
	uint64_t connect_deadline;    /**< CONNECTING: fail after this (ns, monotonic) */
	uint64_t close_deadline;      /**< the peer closed: fail what still waits after this */
	unio_status_t conn_status;    /**< by sockaddr over a driver: the listener's answer */
	bool conn_answered;           /**< by sockaddr over a driver: a Unio worker answered */
	bool dial_logged;             /**< by sockaddr: the failure was logged at ERR already */
	uint8_t dial_dst[20];         /**< by sockaddr over a driver: the wire_sockaddr dialled */
	int dial_errno;               /**< by sockaddr: the kernel's refusal of the connect */
	const char *dial_why;         /**< by sockaddr: the listener's refusal, in words */
	bool dial_refused;            /**< by sockaddr over a driver: no listener there */
	bool dial_quiet;              /**< unio_ep_create: the caller takes the reason (INFO) */
	char *dial_detail;            /**< unio_ep_create: why, in words (UNIO_EP_REASON_MAX) */
	unio_status_t fail_status;    /**< the ep's first error (UNIO_OK): unio_ep_query() */
	const char *fail_why;         /**< ... and why, in words (a literal), or NULL */
	char peer_name[56];           /**< "IP port P" or "worker UUID": unio_ep_query() */
	struct unio_ep *closed_next;  /**< closed eps, freed with the worker */
	struct proto_adapt adapt;     /**< rendezvous counts and the auto scheme's measure */
};

/* ---- worker ---- */

#define WORKER_MAX_IFACES UNIO_TL_MAX_DEVICES * 4
/** Rounds of the block cipher that seals request ids (Speck64/128). */
#define PROTO_ID_ROUNDS 27
#define REQ_CHUNK 256
#define REQ_MAX_CHUNKS 4096

struct unio_listener;
struct unio_conn_request;
struct wireup_hello;
struct wireup_linger;

struct unio_worker {
	struct unio_context *ctx;
	uint64_t uuid;
	enum unio_thread_mode mode;
	/* read by every progress call: kept on the first lines, next to the iface list */
	bool in_progress;           /**< inside unio_worker_progress(): no nested progress */
	bool am_fast;               /**< SINGLE mode, UNIO_FEATURE_AM: unio_am_send() fast path */
	unsigned int ctl_countdown; /**< progress calls until the clock is read (worker.c) */
	unsigned int n_pending;     /**< eps with a non-empty pending queue */
	unsigned int n_am_pending;  /**< AM sends waiting for resources */
	unsigned int n_rma_pending; /**< put / get chunks waiting for transport room (rma.c) */
	unsigned int n_rma_fenced;  /**< entries of the fence queue (rma.c), also in pending */
	unsigned int n_ifaces;
	struct req_list flushes;    /**< flush / close requests in progress (lib/api/wireup.c) */
	struct unio_tl_iface *ifaces[WORKER_MAX_IFACES];
	pthread_mutex_t lock;
	/* requests */
	struct unio_request *req_free;   /**< free requests, a stack through link.tqe_next */
	/* endpoints */
	struct unio_ep **eps;
	struct unio_ep *closed_eps;
	uint32_t n_eps;             /**< slots */
	uint16_t ep_gen;
	struct req_list pending_eps_dummy;
	/* matching */
	uint64_t recv_seq;
	unsigned int n_exp_exact;   /**< posted receives with a full mask */
	unsigned int n_exp_masked;  /**< posted receives with any other mask */
	struct req_list exp_exact[PROTO_HASH_BUCKETS];
	TAILQ_HEAD(, proto_mclass) mclasses;
	struct unexp_list unexp;
	struct unexp_list unexp_hash[PROTO_HASH_BUCKETS];
	unsigned int n_unexp;
	struct proto_unexp *ux_free;
	size_t unexp_bytes;         /**< heap bytes of unexpected data (bound: UNIO_UNEXP_MEM) */
	/* control plane */
	TAILQ_HEAD(, unio_listener) listeners;
	struct wireup_hello *hellos;   /**< requests that arrived over a driver (wireup.c) */
	unsigned int n_hellos;
	struct wireup_linger *lingers; /**< eps that carried a refusal, until it was acked */
	uint64_t ctl_next_tsc;
	uint64_t ctl_period_tsc;
	int efd;                    /**< epoll fd (UNIO_FEATURE_WAKEUP), -1 */
	int sig_fd;                 /**< eventfd for unio_worker_signal */
	TAILQ_ENTRY(unio_worker) link;
	struct am_worker *am;       /**< active messages (am.c) */
	struct rma_worker *rma;     /**< mapped memory (rma.c), NULL until the first map */
	unsigned int n_wireup_owed; /**< eps whose wireup REQ / REP waits for a full lane */
	uint64_t n_dropped;         /**< peer messages dropped as malformed (print_info) */
	uint32_t id_key[PROTO_ID_ROUNDS]; /**< round keys sealing request ids (proto_req_id) */
	uint64_t n_dropped_nomem;   /**< peer messages dropped whole for want of memory */
	/* cold: the request pool's chunks (32 KiB), last */
	struct unio_request *req_chunks[REQ_MAX_CHUNKS];
	unsigned int n_req_chunks;
};

struct unio_context {
	struct unio_config config;
	uint64_t features;
	char name[64];
	unsigned int n_drivers;
	const struct unio_tl_driver *drivers[16];
	struct unio_tl_device_info devs[16][UNIO_TL_MAX_DEVICES];
	unsigned int n_devs[16];
	TAILQ_HEAD(, unio_worker) workers;
};

/* ---- locking (MULTI mode) ---- */

static inline void
worker_lock(struct unio_worker *w)
{
	if (unlikely(w->mode == UNIO_THREAD_MODE_MULTI))
		pthread_mutex_lock(&w->lock);
}

static inline void
worker_unlock(struct unio_worker *w)
{
	if (unlikely(w->mode == UNIO_THREAD_MODE_MULTI))
		pthread_mutex_unlock(&w->lock);
}

/* ---- proto.c / match.c / rndv.c ---- */

extern int unio_logtype_proto;
#define PROTO_LOG(lvl, fmt, ...) UNIO_LOG(lvl, unio_logtype_proto, fmt, ##__VA_ARGS__)

/** Set up matching queues and register AM handlers on every iface of @p w. */
unio_status_t proto_worker_init(struct unio_worker *w);
/** Release matching state (unexpected messages) of @p w. */
void proto_worker_fini(struct unio_worker *w);
/** Choose the lane thresholds for a tl ep. */
void proto_lane_init(struct unio_worker *w, struct proto_lane *lane, struct unio_tl_ep *tl_ep);
/** Retry every pending send; returns the number of sends that progressed. */
unsigned int proto_progress_pending(struct unio_worker *w);
/** An AM send of @p ep waits in the worker's queue for transport room (flush looks). */
bool proto_am_ep_queued(const struct unio_ep *ep);
/**
 * The endpoint closes: release the transport part of every remote key unpacked on it (the
 * keys stay valid for unio_rkey_destroy(), and any put / get with them fails).
 */
void proto_ep_release_rkeys(struct unio_ep *ep);
/** Fail every outstanding and pending request of @p ep with @p st. */
void proto_ep_fail_requests(struct unio_ep *ep, unio_status_t st);

/** Add a chunk of requests to the free stack (0, or -1 when out of memory). */
int proto_req_grow(struct unio_worker *w);

/* 16 bytes that may alias anything: proto_req_clear()'s unit */
typedef uint64_t proto_zero16_t __attribute__((vector_size(16), aligned(8), may_alias));

/*
 * Clear the first @p n bytes of @p p (a multiple of 16, known at compile time) with 16-byte
 * stores written out, not memset, which compilers turn into "rep stos" (tens of cycles to
 * start) at the sizes of a request or an unexpected-message record.
 */
static __rte_always_inline void
proto_clear16(void *p, size_t n)
{
	proto_zero16_t *v = p;
	const proto_zero16_t z = { 0, 0 };

#pragma GCC unroll 16
	for (size_t i = 0; i < n / 16; i++)
		v[i] = z;
}

/* Clear the fields of @p req before the list entries. */
static inline void
proto_req_clear(struct unio_request *req)
{
	RTE_BUILD_BUG_ON(offsetof(struct unio_request, link) % 16 != 0);
	proto_clear16(req, offsetof(struct unio_request, link));
}

/*
 * A request from the free stack with every field before the list entries cleared (see
 * struct unio_request for those that are not), ACTIVE and INPROGRESS.
 */
static inline struct unio_request *
proto_req_get(struct unio_worker *w)
{
	struct unio_request *req = w->req_free;

	if (unlikely(req == NULL)) {
		if (proto_req_grow(w) != 0)
			return NULL;
		req = w->req_free;
	}
	w->req_free = TAILQ_NEXT(req, link);
	proto_req_clear(req);
	req->comp.count = 0;   /* proto_ep_fail_requests() reads it: no stale count */
	req->state = REQ_ACTIVE;
	req->status = UNIO_INPROGRESS;
	return req;
}

/** Back to the free stack (later, when a transport still holds its completion). */
static inline void
proto_req_put(struct unio_request *req)
{
	struct unio_worker *w = req->worker;

	if (unlikely(req->tl_held)) {   /* the transport still writes req->comp */
		req->put_deferred = true;
		return;
	}
	req->state = REQ_FREE;
	if (unlikely(++req->gen == 0))
		req->gen = 1;
	TAILQ_NEXT(req, link) = w->req_free;
	w->req_free = req;
}
/** The transport let go of a request that failed with its ep (proto_req_tl_done()). */
void proto_req_tl_release(struct unio_request *req);

/**
 * First step of a request's transport completion function: true when @p req already failed
 * with its endpoint (proto_ep_fail_requests()) while the transport still held its
 * completion.  The request's memory was kept for this call; it is released now (recycled
 * if the user freed it) and the caller does nothing else: no second completion, no ack.
 */
static inline bool
proto_req_tl_done(struct unio_request *req)
{
	if (likely(!req->tl_held))
		return false;
	proto_req_tl_release(req);
	return true;
}

/** The live request with sealed id @p id (proto_req_id()), or NULL. */
struct unio_request *proto_req_lookup(struct unio_worker *w, uint64_t id);

/**
 * The live request in slot @p slot (proto_req_slot()), or NULL when that request was freed
 * or its slot reused since.  For queues that stay in this worker: no peer sees a slot.
 */
struct unio_request *proto_req_at_slot(struct unio_worker *w, uint64_t slot);

/** The request parameter fields a call knows. */
#define PROTO_REQ_PARAM_KNOWN (UNIO_REQ_PARAM_CB | UNIO_REQ_PARAM_USER_DATA | \
			       UNIO_REQ_PARAM_FLAGS | UNIO_REQ_PARAM_RECV_INFO)

/**
 * Request parameters a public call must refuse (UNIO_ERR_INVALID_PARAM): a field_mask bit
 * no version defines, or with UNIO_REQ_PARAM_FLAGS a flag that is not UNIO_REQ_FLAG_*.
 * NULL (all defaults) is fine.
 */
static inline bool
proto_req_param_bad(const struct unio_request_param *param)
{
	return param != NULL && ((param->field_mask & ~(uint64_t)PROTO_REQ_PARAM_KNOWN) != 0 ||
				 ((param->field_mask & UNIO_REQ_PARAM_FLAGS) &&
				  (param->flags & ~UNIO_REQ_FLAG_NO_IMM_COMPLETION) != 0));
}

/** proto_req_hand_out() of a request that is done already (callback and user_data set). */
unio_status_t proto_req_hand_out_done(struct unio_request *req,
				      const struct unio_request_param *param,
				      unio_request_t **req_p);

/**
 * Give a request just started to the user: UNIO_INPROGRESS and *@p req_p (with a NULL
 * @p req_p it is freed when it completes, without callback); a request that is done already
 * returns its status and is freed, unless UNIO_REQ_FLAG_NO_IMM_COMPLETION asks for it.
 */
static inline unio_status_t
proto_req_hand_out(struct unio_request *req, const struct unio_request_param *param,
		   unio_request_t **req_p)
{
	uint64_t fm = param != NULL ? param->field_mask : 0;

	if (fm & UNIO_REQ_PARAM_CB)
		req->cb = param->cb;
	if (fm & UNIO_REQ_PARAM_USER_DATA)
		req->user_data = param->user_data;
	if (unlikely(req->state == REQ_DONE))
		return proto_req_hand_out_done(req, param, req_p);
	req->user_owned = true;
	if (req_p == NULL)
		req->user_freed = true;
	else
		*req_p = req;
	return UNIO_INPROGRESS;
}
/** Deregister the memory a request registered (memh_valid). */
void proto_req_dereg(struct unio_request *req);

/** proto_req_complete() of a request that holds no registration (memh_valid false). */
static inline void
proto_req_complete_unreg(struct unio_request *req, unio_status_t st)
{
	req->status = st;
	req->state = REQ_DONE;
	if (req->user_freed) {
		proto_req_put(req);
		return;
	}
	if (req->user_owned && req->cb != NULL)
		req->cb(req, st, req->type == REQ_RECV ? &req->info : NULL, req->user_data);
}

/** Complete a request: status, callback, release when the user let go of it. */
static inline void
proto_req_complete(struct unio_request *req, unio_status_t st)
{
	if (unlikely(req->memh_valid))
		proto_req_dereg(req);
	proto_req_complete_unreg(req, st);
}

/*
 * Request ids on the wire.  A peer echoes the id of a request in its answers (ATS, RTR,
 * SYNC_ACK, PIPE, AM rendezvous), and any connected peer can send any answer: the id is the
 * request's slot (gen << 32 | idx, small numbers anyone can guess) sealed with a 64-bit
 * block cipher (Speck64/128) under a random key of the worker, so that only the peer the id
 * was sent to knows it.  A forged id opens to no live slot but with probability
 * (live requests) / 2^64; proto_req_lookup() drops it.
 */
static inline uint32_t
proto_ror32(uint32_t x, unsigned int r)
{
	return (x >> r) | (x << (32 - r));
}

static inline uint32_t
proto_rol32(uint32_t x, unsigned int r)
{
	return (x << r) | (x >> (32 - r));
}

/** Seal the request slot @p slot with the round keys @p rk (Speck64/128 encryption). */
static inline uint64_t
proto_id_seal(const uint32_t *rk, uint64_t slot)
{
	uint32_t x = (uint32_t)(slot >> 32), y = (uint32_t)slot;

	for (unsigned int i = 0; i < PROTO_ID_ROUNDS; i++) {
		x = (proto_ror32(x, 8) + y) ^ rk[i];
		y = proto_rol32(y, 3) ^ x;
	}
	return ((uint64_t)x << 32) | y;
}

/** Open a sealed id (Speck64/128 decryption): the slot it names. */
static inline uint64_t
proto_id_open(const uint32_t *rk, uint64_t id)
{
	uint32_t x = (uint32_t)(id >> 32), y = (uint32_t)id;

	for (unsigned int i = PROTO_ID_ROUNDS; i-- > 0;) {
		y = proto_ror32(y ^ x, 3);
		x = proto_rol32((x ^ rk[i]) - y, 8);
	}
	return ((uint64_t)x << 32) | y;
}

/** Expand the 128-bit @p key into the round keys @p rk (Speck64/128 key schedule). */
static inline void
proto_id_key_init(uint32_t *rk, const uint32_t key[4])
{
	uint32_t l[PROTO_ID_ROUNDS + 2];

	rk[0] = key[0];
	l[0] = key[1];
	l[1] = key[2];
	l[2] = key[3];
	for (unsigned int i = 0; i < PROTO_ID_ROUNDS - 1; i++) {
		l[i + 3] = (rk[i] + proto_ror32(l[i], 8)) ^ i;
		rk[i + 1] = proto_rol32(rk[i], 3) ^ l[i + 3];
	}
}

/** The slot of @p req, gen << 32 | idx: never 0 (gen skips 0), never sent to a peer. */
static inline uint64_t
proto_req_slot(const struct unio_request *req)
{
	return ((uint64_t)req->gen << 32) | req->idx;
}

/** The id of @p req as peers see it (sealed; proto_req_lookup() opens it). */
static inline uint64_t
proto_req_id(const struct unio_request *req)
{
	return proto_id_seal(req->worker->id_key, proto_req_slot(req));
}

/**
 * The ep with id @p id, NULL when unknown or dead.  Inline: a handler that checks the ep
 * against the frame's connection keeps that id in a register, with no call to save it over.
 */
static inline struct unio_ep *
proto_ep_lookup(struct unio_worker *w, uint32_t id)
{
	uint32_t idx = id & 0xffff;
	struct unio_ep *ep;

	if (unlikely(idx >= w->n_eps))
		return NULL;
	ep = w->eps[idx];
	if (unlikely(ep == NULL || ep->id != id || ep->state != EP_CONNECTED))
		return NULL;
	return ep;
}

/**
 * Did a frame that came on connection @p conn_id (the AM callback's) come from @p ep's peer?
 * The ep id a message names is the sender's word, the connection the transport's: a peer
 * naming another peer's ep is caught here (doc/guides/protocols.md, "Answers from other
 * peers").  One compare with the id the peer's frames arrive with (proto_lane.rx_conn_id).
 */
static inline bool
proto_ep_sent(const struct unio_ep *ep, unio_tl_conn_id_t conn_id)
{
	return likely(ep->lane.rx_conn_id == conn_id);
}

/** proto_ep_lookup() for a frame that came on @p conn_id: NULL for another peer's ep too. */
static inline struct unio_ep *
proto_ep_from(struct unio_worker *w, uint32_t id, unio_tl_conn_id_t conn_id)
{
	struct unio_ep *ep = proto_ep_lookup(w, id);

	return ep != NULL && proto_ep_sent(ep, conn_id) ? ep : NULL;
}

unio_status_t proto_set_handlers(struct unio_worker *w, struct unio_tl_iface *iface);

/* match.c */
/** The matching hashes' bucket of @p key (a tag, or a tag under its mask). */
static inline unsigned int
proto_bucket_of(uint64_t key)
{
	return (unsigned int)((key * 0x9e3779b97f4a7c15ull) >> 52) & (PROTO_HASH_BUCKETS - 1);
}

/** proto_exp_add() of a receive with a full mask (rtag set): it cannot fail. */
static inline void
proto_exp_add_exact(struct unio_worker *w, struct unio_request *req)
{
	req->mclass = NULL;
	TAILQ_INSERT_TAIL(&w->exp_exact[proto_bucket_of(req->rtag)], req, link);
	w->n_exp_exact++;
	req->seq = ++w->recv_seq;
	req->posted = true;
}

void proto_match_init(struct unio_worker *w);
void proto_match_fini(struct unio_worker *w);
unio_status_t proto_exp_add(struct unio_worker *w, struct unio_request *req);
void proto_exp_remove(struct unio_worker *w, struct unio_request *req);
struct unio_request *proto_exp_match(struct unio_worker *w, uint64_t tag);
struct proto_unexp *proto_unexp_alloc(struct unio_worker *w, size_t len);
void proto_unexp_free(struct unio_worker *w, struct proto_unexp *ux);
void proto_unexp_add(struct unio_worker *w, struct proto_unexp *ux);
void proto_unexp_remove(struct unio_worker *w, struct proto_unexp *ux);
struct proto_unexp *proto_unexp_match(struct unio_worker *w, uint64_t tag, uint64_t mask);

/* tag.c */
unio_status_t proto_tag_send(struct unio_ep *ep, const void *buf, size_t len, uint64_t tag,
			     bool sync, const struct unio_request_param *param,
			     unio_request_t **req_p);
unio_status_t proto_recv_unexp(struct unio_worker *w, struct unio_request *req,
			       struct proto_unexp *ux);

/** An unexpected message that a receive takes at once, without a request: eager, complete. */
static inline bool
proto_unexp_ready(const struct proto_unexp *ux)
{
	return !ux->is_rts && ux->complete;
}

/**
 * Receive the ready (proto_unexp_ready()) unexpected message @p ux into @p buf without a
 * request: what proto_recv_unexp() and handing out a completed request do (the sync ack,
 * truncation, @p param's recv_info), returning the receive's status.
 */
unio_status_t proto_recv_unexp_now(struct unio_worker *w, void *buf, size_t len,
				   struct proto_unexp *ux,
				   const struct unio_request_param *param);
void proto_send_pipeline(struct unio_request *req, uint64_t rreq_id);
/**
 * A rendezvous send of @p req->slen bytes starts: true when it offers its buffer for a get
 * (registered, the rkey in the RTS), false when it waits for the receiver's RTR and streams
 * the fragments.  Forced schemes as configured; the auto scheme offers it (the receiver
 * chooses: proto_rndv_recv_pull()).
 */
bool proto_rndv_offer_get(struct unio_request *req);
/** A rendezvous send ends, completed by get (@p by_get) or by pipeline when @p ok: count it. */
void proto_rndv_sent(struct unio_request *req, bool by_get, bool ok);
/**
 * A receive @p req on @p ep matched a rendezvous of @p size bytes whose sender offered a get
 * (@p offered) or not, outside a split: true when it pulls, false when it asks for the
 * pipeline (RTR).  The auto scheme chooses by measure; the rendezvous is timed either way
 * until proto_rndv_delivered().
 */
bool proto_rndv_recv_pull(struct unio_request *req, struct unio_ep *ep, size_t size,
			  bool offered);
/** The timed rendezvous receive @p req is over, delivered by get (@p by_get) when @p ok. */
void proto_rndv_delivered(struct unio_request *req, bool by_get, bool ok);
/** unio_ep_print_info(): the rendezvous counts and the auto scheme's measure of @p ep. */
void proto_rndv_print(const struct unio_ep *ep, FILE *f);
/** Tests: multiply the measure of get and pipeline samples on @p ep by these factors. */
void unio_proto_rndv_skew(struct unio_ep *ep, uint32_t get_x, uint32_t pipe_x);
/**
 * Tests: a timed rendezvous receive of @p size bytes on @p ep started (true: by get) and
 * delivered, without a transfer: proto_rndv_recv_pull() and proto_rndv_delivered().
 */
bool unio_proto_test_rndv_start(struct unio_request *req, struct unio_ep *ep, size_t size,
				bool offered);
void unio_proto_test_rndv_done(struct unio_request *req, bool by_get);
/** Split rendezvous, sender side: put the part the receiver asked for, then ATS it. */
void proto_rndv_put_part(struct unio_request *req, const struct proto_rtp_hdr *h,
			 const void *rkey);
void proto_send_ctl(struct unio_ep *ep, uint8_t id, const void *hdr, size_t len);
void proto_rndv_release_rkey(struct unio_request *req);
/** A pulled rendezvous is over: release the key, answer ATS @p st, complete the request. */
void proto_rndv_finish(struct unio_request *req, unio_status_t st);
/**
 * Pull a rendezvous message of @p size bytes at the peer's @p addr into req->rbuf with the key
 * in req->rkey (tag and AM receives; rndv_ep, rndv_sreq set): one copy when the key maps it,
 * else gets through proto_rma_issue(), the second half put by the sender when @p split and
 * the lane allow (RTP).  Completes through proto_rndv_finish(); UNIO_ERR_OUT_OF_RANGE (and
 * nothing started) when the key does not cover the message.
 */
unio_status_t proto_rndv_pull(struct unio_request *req, uint64_t addr, size_t size, bool split);
void proto_send_ack(struct unio_ep *ep, uint8_t id, uint64_t sreq_id, unio_status_t st);

/** Test hook: announce this wire version instead of UNIO_WIRE_VERSION (0: the real one). */
void unio_proto_test_set_wire_version(uint16_t version);
uint16_t proto_wire_version(void);

/**
 * Print, for tag messages, which protocol and driver serve each size range toward a peer of
 * class @p peer_class ("self", "host", "net"), with the thresholds actually used.
 */
void unio_proto_print_selection(unio_context_t *ctx, const char *peer_class, FILE *f);

#endif /* UNIO_PROTO_H */
