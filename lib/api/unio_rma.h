/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UNIO_RMA_H
#define UNIO_RMA_H

/**
 * @file
 * Memory mapping, remote keys and one-sided put / get.
 *
 * A worker maps memory (registers memory the application owns, or allocates memory that
 * peers on the same host can map directly), packs a remote key for it and hands the key to
 * a peer out of band or in a message.  The peer unpacks the key on its endpoint and puts
 * or gets inside the mapped range.  A key grants its range and nothing else: before every
 * access the accessing side checks the range and the owner's table of live registrations
 * (generation and a random 64-bit cookie), so a forged key, a key of an unmapped region or
 * an access outside the range fails with an error and touches no memory.
 *
 * Completion: a put or get returns UNIO_OK when it is complete (shm and self complete at
 * once), or UNIO_INPROGRESS with a request; unio_ep_flush() / unio_worker_flush() wait for
 * every outstanding operation.  Operations on one endpoint are applied in order;
 * unio_worker_fence() orders them across the worker's endpoints too.
 *
 * The context must be created with UNIO_FEATURE_RMA: without it, unio_mem_map(),
 * unio_ep_rkey_unpack(), unio_put() and unio_get() fail with UNIO_ERR_UNSUPPORTED (logged
 * once).
 */

#include <stddef.h>
#include <stdint.h>

#include "unio.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct unio_mem *unio_mem_h;      /**< A mapped memory region. */
typedef struct unio_rkey unio_rkey_t;     /**< An unpacked remote key. */

/** Memory types (recorded with each region; host memory only for now). */
enum unio_memory_type {
	UNIO_MEMORY_TYPE_HOST = 0,   /**< ordinary host memory */
	UNIO_MEMORY_TYPE_CUDA = 1,   /**< CUDA device memory (no driver yet: UNSUPPORTED) */
	UNIO_MEMORY_TYPE_ROCM = 2,   /**< ROCm device memory (no driver yet: UNSUPPORTED) */
};

#define UNIO_MEM_MAP_PARAM_ADDRESS     (1ull << 0) /**< address is set */
#define UNIO_MEM_MAP_PARAM_LENGTH      (1ull << 1) /**< length is set (required) */
#define UNIO_MEM_MAP_PARAM_FLAGS       (1ull << 2) /**< flags is set */
#define UNIO_MEM_MAP_PARAM_MEMORY_TYPE (1ull << 3) /**< memory_type is set */

/**
 * Allocate the memory instead of registering @p address: it comes from the shm driver's
 * shared memory (hugepage-backed when possible) so peers on the host can map it and access
 * it with plain loads and stores.
 */
#define UNIO_MEM_MAP_FLAG_ALLOCATE (1u << 0)

/** Parameters of unio_mem_map(). */
struct unio_mem_map_params {
	uint64_t field_mask;                  /**< UNIO_MEM_MAP_PARAM_* */
	void *address;                        /**< memory to register (not with ALLOCATE) */
	size_t length;                        /**< bytes; at least 1 */
	unsigned int flags;                   /**< UNIO_MEM_MAP_FLAG_* */
	enum unio_memory_type memory_type;    /**< default UNIO_MEMORY_TYPE_HOST */
};

/** What unio_mem_query() reports. */
struct unio_mem_attr {
	void *address;                        /**< start of the region */
	size_t length;                        /**< bytes */
	enum unio_memory_type memory_type;    /**< where the region lives */
	unsigned int flags;                   /**< UNIO_MEM_MAP_FLAG_ALLOCATE when allocated */
	int mappable;                         /**< nonzero: peers on the host map it directly */
};

/**
 * Map memory for remote access: register @p params->address or allocate
 * (UNIO_MEM_MAP_FLAG_ALLOCATE).
 *
 * @return UNIO_OK with *memh_p set; UNIO_ERR_INVALID_PARAM (also: a field_mask bit or a
 *         memory type no version defines), UNIO_ERR_UNSUPPORTED (a memory type with no
 *         driver), UNIO_ERR_NO_MEMORY, UNIO_ERR_NO_RESOURCE (too many regions).
 */
unio_status_t unio_mem_map(unio_worker_t *worker, const struct unio_mem_map_params *params,
			   unio_mem_h *memh_p);

/** Describe a mapped region. */
unio_status_t unio_mem_query(unio_mem_h memh, struct unio_mem_attr *attr);

/**
 * Unmap a region (and free it when it was allocated).  Every remote key of it becomes
 * stale at once: peers' puts and gets with it fail with UNIO_ERR_INVALID_ADDR.
 */
unio_status_t unio_mem_unmap(unio_worker_t *worker, unio_mem_h memh);

/**
 * Pack a remote key for @p memh into a new buffer (*buf_p, *len_p bytes) to send to peers.
 * Its length depends on the drivers (a few hundred bytes): send *len_p bytes, not a fixed
 * size.  Release the buffer with unio_rkey_buffer_release().
 */
unio_status_t unio_rkey_pack(unio_mem_h memh, void **buf_p, size_t *len_p);

/** Release a buffer from unio_rkey_pack().  NULL accepted. */
void unio_rkey_buffer_release(void *buf);

/**
 * Unpack a remote key a peer packed, for use on @p ep.  Every field is validated; a key of
 * another process or a malformed one is refused with UNIO_ERR_INVALID_ADDR.  Destroy the
 * key before the endpoint is closed; a key whose endpoint closed first was released with it
 * (a put / get with it fails with UNIO_ERR_NOT_CONNECTED) and unio_rkey_destroy() still
 * frees the handle.
 */
unio_status_t unio_ep_rkey_unpack(unio_ep_t *ep, const void *buf, size_t len,
				  unio_rkey_t **rkey_p);

/**
 * Destroy an unpacked remote key.  NULL accepted.  Puts and gets started with it and still in
 * flight complete normally: the key is released when the last of them completes.  It must not
 * be used for new operations after this call.
 */
void unio_rkey_destroy(unio_rkey_t *rkey);

/**
 * Write @p len bytes of @p buf to the peer's @p remote_addr: an address in the peer's own
 * address space, inside the region its key covers (the owner learns the region's start
 * from unio_mem_query() and sends it along with the packed key).
 *
 * @return UNIO_OK (done: the buffer may be reused), UNIO_INPROGRESS with *req_p,
 *         UNIO_ERR_OUT_OF_RANGE ([remote_addr, remote_addr + len) not inside the key's
 *         range), UNIO_ERR_INVALID_ADDR (the key is stale: its region was unmapped, or forged).
 */
unio_status_t unio_put(unio_ep_t *ep, const void *buf, size_t len, uint64_t remote_addr,
		       unio_rkey_t *rkey, const struct unio_request_param *param,
		       unio_request_t **req_p);

/** Read @p len bytes at the peer's @p remote_addr into @p buf; returns as unio_put(). */
unio_status_t unio_get(unio_ep_t *ep, void *buf, size_t len, uint64_t remote_addr,
		       unio_rkey_t *rkey, const struct unio_request_param *param,
		       unio_request_t **req_p);

/**
 * Order: puts and gets started after the fence, on any endpoint of @p worker, are applied
 * after those started before it.  Never blocks: when operations before it are still in
 * flight, later ones (except those on the one endpoint all of them went to, whose transport
 * orders them) wait in the worker, returning UNIO_INPROGRESS and a request, and are issued
 * by unio_worker_progress() once those completed.
 *
 * @return UNIO_OK, UNIO_ERR_INVALID_PARAM, UNIO_ERR_NO_MEMORY.
 */
unio_status_t unio_worker_fence(unio_worker_t *worker);

#ifdef __cplusplus
}
#endif

#endif /* UNIO_RMA_H */
