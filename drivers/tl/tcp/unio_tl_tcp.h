/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UNIO_TL_TCP_H
#define UNIO_TL_TCP_H

/**
 * @file
 * The tcp driver's own extension of the transport interface (driver SDK, not installed):
 * counters of an iface, for tests and diagnostics.
 */

#include <stdint.h>

#include "unio_tl.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Counters of one tcp iface since it was opened. */
struct unio_tl_tcp_stats {
	uint64_t conns_connected;  /**< outgoing connections that were accepted by the peer */
	uint64_t conns_accepted;   /**< incoming connections attached to a peer */
	uint64_t conns_dual;       /**< incoming while ours was open (simultaneous connect) */
	uint64_t conns_moved;      /**< simultaneous connects where this side moved its sends
				    *   to the peer's connection (one socket per pair after) */
	uint64_t conns_failed;     /**< connections that failed: reset, EOF, timeout */
	uint64_t malformed;        /**< connections closed because the peer sent bad frames */
	uint64_t open_conns;       /**< connections open now (any state but failed) */
	uint64_t direct_frames;    /**< PUT / GET_RESP payloads read straight to their place */
	uint64_t direct_bytes;     /**< of which bytes read straight there (not through the
				    *   receive buffer) */
	uint64_t more_sends;       /**< short / bcopy sends in a burst, handed over with MSG_MORE */
	uint64_t more_pushes;      /**< progress calls that pushed what MSG_MORE held back */
	uint64_t move_timeouts;    /**< simultaneous connects whose peer sent MOVE_START but no
				    *   MOVE_END within UNIO_PEER_TIMEOUT (both failed) */
	uint64_t rx_frames;        /**< frames received and handled (HELLO excluded) */
	uint64_t splice_frames;    /**< PUT / GET_RESP payloads sent by vmsplice + splice */
	uint64_t splice_bytes;     /**< of which bytes spliced (not copied by the kernel) */
	uint64_t splice_fallbacks; /**< payloads whose pages vmsplice refused: sent by copy */
	uint64_t truncated;        /**< connections that ended inside a frame (the peer died
				    *   while sending): failed with UNIO_ERR_CONNECTION_RESET */
	uint64_t conns_duplicate;  /**< accepted sockets closed at their HELLO: that identity
				    *   already had a live incoming connection */
	uint64_t epoll_calls;      /**< epoll_wait calls of progress (busy mode: one call in 16;
				    *   a worker calls an iface with nothing but its listen
				    *   socket in one call of 16: one in 256 of the worker's) */
	uint64_t rx_cold;          /**< busy mode: connections left to epoll after 65536
				    *   empty reads in a row (read every call again once
				    *   bytes arrive or something is sent on them) */
	uint64_t conns_false_claim; /**< accepted sockets closed at their HELLO: its address
				     *   is not the connection's source IPv4, or names a
				     *   listener here of another user than the dialler */
	uint64_t rx_empty;         /**< reads of a connection (recv, readv) that found nothing */
	uint64_t direct_reads;     /**< reads that brought bytes of a direct frame's rest */
	uint64_t rx_waits;         /**< reads of a direct frame's rest after which the rest was
				    *   left to epoll with SO_RCVLOWAT (not read blindly) */
	uint64_t progress_calls;   /**< calls of the iface's progress (a worker calls an iface
				    *   with nothing but its listen socket only in one call of
				    *   16: its poll word) */
	uint64_t ep_off;           /**< busy mode: times a connection read blindly in every
				    *   call (256 in a row) was taken off the iface's epoll set */
	uint64_t ep_on;            /**< times such a connection was put back (it stopped being
				    *   read blindly, or the iface was armed for sleep) */
};

/**
 * Read the counters of tcp iface @p iface.
 *
 * @return UNIO_OK, or UNIO_ERR_INVALID_PARAM when @p iface is not a tcp iface.
 */
unio_status_t unio_tl_tcp_stats(struct unio_tl_iface *iface, struct unio_tl_tcp_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* UNIO_TL_TCP_H */
