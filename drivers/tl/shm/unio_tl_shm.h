/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UNIO_TL_SHM_H
#define UNIO_TL_SHM_H

/**
 * @file
 * The shm driver's own extension of the transport interface (driver SDK, not installed):
 * counters of an iface's cache of peers' mapped allocations and of its sends refused for want
 * of ring room, for tests and diagnostics.
 */

#include "unio_rcache.h"
#include "unio_tl.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Read the counters of the cache of peer allocations that shm iface @p iface mapped for
 * direct-mapped remote keys: hits (a key of an allocation already mapped), misses (mapped
 * now), evictions (unused mappings unmapped for room, UNIO_SHM_MAP_CACHE), stale (mappings
 * dropped because the peer's address now holds another allocation), regions and bytes
 * mapped now.  All zero before the first mapping.
 *
 * @return UNIO_OK, or UNIO_ERR_INVALID_PARAM when @p iface is not a shm iface.
 */
unio_status_t unio_tl_shm_map_stats(struct unio_tl_iface *iface,
				    struct unio_rcache_stats *stats);

/** Send-side counters of a shm iface (all its eps). */
struct unio_tl_shm_tx_stats {
	uint64_t no_room;   /**< sends refused with UNIO_ERR_NO_RESOURCE: the peer's ring full */
	/**
	 * Retries of queued sends that were skipped because the peer's consumer had freed
	 * nothing since the last refusal (ep_room_freed false): each is one load, no send.
	 */
	uint64_t waits;
};

/**
 * Read the send-side counters of shm iface @p iface.
 *
 * @return UNIO_OK, or UNIO_ERR_INVALID_PARAM when @p iface is not a shm iface.
 */
unio_status_t unio_tl_shm_tx_stats(struct unio_tl_iface *iface,
				   struct unio_tl_shm_tx_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* UNIO_TL_SHM_H */
