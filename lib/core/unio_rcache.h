/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UNIO_RCACHE_H
#define UNIO_RCACHE_H

/**
 * @file
 * Registration cache (driver SDK; not installed for applications).
 *
 * Drivers whose memory registration is expensive (pinning, IOMMU or GPU mappings) look a
 * buffer up here instead of registering it per operation.  Regions are page-aligned, kept
 * sorted by start address, reference counted, and bounded in count and bytes: when full, the
 * least recently used unreferenced region is deregistered.
 *
 * Address reuse: every region remembers the identity of the mappings that backed it when it
 * was registered (start, end, device, inode and offset of each overlapping line of
 * /proc/self/maps).  A lookup that finds a region checks that identity again; when the memory
 * was unmapped and something else mapped at the same address, the stale region is dropped
 * (deregistered once its last user lets go) and the buffer is registered anew.  Two anonymous
 * mappings with identical bounds cannot be told apart this way; unio_rcache_invalidate() is
 * for owners that know they unmap.
 *
 * Foreign memory: a driver that maps another process's memory (shm's direct mapping of a
 * peer's allocation) caches by the peer's address range with unio_rcache_get_ident(): the
 * caller names the identity of what backs the range (the peer's allocation id), a cached
 * region with another identity is stale, and so is every cached region the new one
 * overlaps (a peer cannot have two live allocations at one address).  A cache serves one
 * kind of lookup, local or foreign, not both.
 */

#include <stddef.h>
#include <stdint.h>

#include "unio_status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct unio_rcache;

/** Register / deregister callbacks of the driver that owns the cache. */
struct unio_rcache_ops {
	/** Register [addr, addr+len); store what dereg needs in *handle. */
	unio_status_t (*reg)(void *arg, void *addr, size_t len, void **handle);
	/** Deregister a region registered by reg. */
	void (*dereg)(void *arg, void *addr, size_t len, void *handle);
	/**
	 * unio_rcache_get_ident(): register [addr, addr+len) of foreign memory with the
	 * caller's @p ctx (NULL: reg is called instead).
	 */
	unio_status_t (*reg_ctx)(void *arg, void *ctx, void *addr, size_t len, void **handle);
};

/** Parameters of unio_rcache_create(). */
struct unio_rcache_params {
	const struct unio_rcache_ops *ops;
	void *arg;                  /**< passed to the ops */
	unsigned int max_regions;   /**< most cached regions (0: 1024) */
	size_t max_bytes;           /**< most registered bytes (0: no bound) */
};

/** A cached region, as its users see it. */
struct unio_rcache_region {
	uintptr_t start;            /**< page-aligned start */
	uintptr_t end;              /**< page-aligned end (exclusive) */
	void *handle;               /**< what the driver's reg stored */
};

/** Counters. */
struct unio_rcache_stats {
	uint64_t hits;
	uint64_t misses;
	uint64_t evictions;         /**< unreferenced regions dropped for room */
	uint64_t stale;             /**< regions found re-mapped (address reused) */
	unsigned int regions;       /**< regions cached now */
	size_t bytes;               /**< bytes cached now */
};

/** Create a cache. */
unio_status_t unio_rcache_create(const struct unio_rcache_params *params,
				 struct unio_rcache **rc_p);

/** Deregister every region and free the cache (regions still referenced are logged). */
void unio_rcache_destroy(struct unio_rcache *rc);

/**
 * Find or register a region covering [addr, addr+len); its reference count is raised.
 * @return UNIO_OK with *region_p, UNIO_ERR_INVALID_PARAM, UNIO_ERR_NO_RESOURCE (full of
 *         referenced regions), or the driver's registration error.
 */
unio_status_t unio_rcache_get(struct unio_rcache *rc, void *addr, size_t len,
			      struct unio_rcache_region **region_p);

/**
 * Find or register a region of foreign memory covering [addr, addr+len) whose identity is
 * @p ident; @p ctx goes to ops->reg_ctx on a miss.  Regions with another identity that the
 * range overlaps are dropped (counted as stale).  Returns as unio_rcache_get().
 */
unio_status_t unio_rcache_get_ident(struct unio_rcache *rc, uintptr_t addr, size_t len,
				    uint64_t ident, void *ctx,
				    struct unio_rcache_region **region_p);

/** Drop a reference taken by unio_rcache_get() or unio_rcache_get_ident(). */
void unio_rcache_put(struct unio_rcache *rc, struct unio_rcache_region *region);

/** Forget every region overlapping [addr, addr+len) (the owner is about to unmap it). */
void unio_rcache_invalidate(struct unio_rcache *rc, void *addr, size_t len);

/** Read the counters. */
void unio_rcache_get_stats(const struct unio_rcache *rc, struct unio_rcache_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* UNIO_RCACHE_H */
