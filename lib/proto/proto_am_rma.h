/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef PROTO_AM_RMA_H
#define PROTO_AM_RMA_H

/**
 * @file
 * Internals of active messages (am.c) and memory mapping / RMA (rma.c).  Never installed.
 * See doc/guides/am-rma.md for the wire formats and the key-validation scheme.
 */

#include "unio_am.h"
#include "unio_proto.h"
#include "unio_rma.h"

/* ---- registration table: published by the owner, checked by the accessor ---- */

#define RMA_TABLE_SLOTS 1024u

/**
 * One live registration.  gen is even while the entry is valid and odd while it changes or
 * after unmap; a key names (slot, gen, cookie, base, len) and must match all of them.
 */
struct rma_entry {
	uint64_t gen;
	uint64_t cookie;
	uint64_t base;
	uint64_t len;
};

/** Per-worker mapping state (w->rma). */
struct rma_worker {
	struct rma_entry *table;                 /**< RMA_TABLE_SLOTS entries, NULL until mapped */
	struct unio_tl_iface *table_iface;       /**< allocated by this iface, or NULL (heap) */
	struct unio_tl_memh table_alloc;
	struct unio_tl_memh table_memh[WORKER_MAX_IFACES];
	bool table_reg[WORKER_MAX_IFACES];
	unsigned int n_used;
	uint32_t next_slot;
	TAILQ_HEAD(, rma_wait) chunk_wait;       /**< put / get waiting for transport room */
	/* unio_worker_fence(): operations after a fence wait here for those before it */
	TAILQ_HEAD(, rma_wait) fence_q;          /**< deferred operations and fence markers */
	unsigned int n_inflight;                 /**< operations the transports still hold */
	struct unio_ep *inflight_ep;             /**< their one ep, NULL: maybe several */
	unsigned int fq_ops;                     /**< deferred operations in fence_q */
	struct unio_ep *fq_ep;                   /**< only markers, all for this ep's ops */
	bool fq_marker_last;                     /**< the newest entry is a marker */
	struct unio_mem *slots[RMA_TABLE_SLOTS];
};

struct unio_mem {
	struct unio_worker *w;
	void *addr;
	size_t len;
	unsigned int flags;
	enum unio_memory_type mem_type;
	uint32_t slot;
	uint64_t gen;
	uint64_t cookie;
	struct unio_tl_iface *alloc_iface;       /**< ALLOCATE: the iface that allocated */
	struct unio_tl_memh alloc_memh;
	bool heap;                               /**< ALLOCATE without a driver: heap memory */
	struct unio_tl_memh memh[WORKER_MAX_IFACES];
	bool reg[WORKER_MAX_IFACES];
};

struct unio_rkey {
	struct unio_ep *ep;
	struct unio_tl_ep *tl_ep;                /**< NULL once its ep closed */
	LIST_ENTRY(unio_rkey) link;              /**< on ep->rkeys */
	uint64_t base;
	uint64_t len;
	uint64_t cookie;
	uint64_t gen;
	uint32_t slot;
	bool table_sync;                         /**< the table entry can be read at once */
	bool destroyed;                          /**< by the user, while users != 0 */
	uint32_t users;                          /**< puts / gets in flight with this key */
	const volatile struct rma_entry *entry;  /**< the owner's entry, mapped here */
	struct unio_tl_rkey data;
	struct unio_tl_rkey table;
};

/* ---- AM wire formats ---- */

/** 8-byte header of an eager AM (PROTO_AM_USER_EAGER), then the user header and data. */
#define AM_EAGER_REPLY 0x8000u   /**< in hdr_len: the sender asked for a reply ep */

struct am_eager_hdr {
	uint16_t am_id;
	uint16_t hdr_len;        /**< user header bytes | AM_EAGER_REPLY */
	uint32_t ep_id;          /**< the receiver's id of its ep to the sender */
};

#define AM_RTS_PIPELINE 0x0001u  /**< no key: answer with RTR, the sender streams PIPE */
#define AM_RTS_SPLIT    0x0002u  /**< the sender can put a part: split the transfer (RTP) */

/** Rendezvous AM (PROTO_AM_USER_RTS): this, the user header, then the packed tl rkey. */
struct am_rts_hdr {
	uint64_t sreq_id;
	uint64_t size;
	uint64_t addr;
	uint32_t ep_id;
	uint16_t am_id;
	uint16_t flags;          /**< AM_EAGER_REPLY, AM_RTS_PIPELINE, AM_RTS_SPLIT */
	uint16_t hdr_len;
	uint16_t rkey_len;
	uint32_t pad;
};

/* ---- am.c ---- */

/**
 * True (and logged once per feature and process) when @p w's context was created without
 * @p feature (UNIO_FEATURE_AM or UNIO_FEATURE_RMA); @p call names the refused call.
 */
bool proto_feature_missing(const struct unio_worker *w, uint64_t feature, const char *call);

/** Register the AM handlers of active messages on every iface of @p w. */
unio_status_t proto_am_init(struct unio_worker *w);
/** Free AM state: kept data, descriptors, queued sends. */
void proto_am_fini(struct unio_worker *w);
/** Retry AM sends that waited for transport resources. */
unsigned int proto_am_progress(struct unio_worker *w);

/* ---- rma.c ---- */

/** Unmap every region still mapped, cancel queued chunks (worker destruction). */
void proto_rma_fini(struct unio_worker *w);
/** Issue put / get chunks that waited for transport room (from proto_am_progress). */
unsigned int proto_rma_progress(struct unio_worker *w);
/**
 * Issue the chunks of a zero-copy transfer set up in @p req: ep (its lane), sbuf / slen (the
 * local buffer), tag (the remote address), rkey, sync (true: put, false: get), offset 0, and
 * comp with its completion function and one count held by the caller; the request is on
 * its ep's outstanding list (on_ep).  Chunks the transport has no room for now wait in the
 * worker's queue and go out from progress, in order; the hold is released once everything
 * is issued, so comp completes when the last chunk does (with the first error).  The
 * rendezvous receive pulls its data this way.
 */
void proto_rma_issue(struct unio_request *req);

#endif /* PROTO_AM_RMA_H */
