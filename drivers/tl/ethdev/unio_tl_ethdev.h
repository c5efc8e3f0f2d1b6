/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UNIO_TL_ETHDEV_H
#define UNIO_TL_ETHDEV_H

/**
 * @file
 * Statistics of the ethdev transport driver (driver SDK; for tests and tools).
 */

#include <stdint.h>

#include "unio_status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct unio_tl_iface;

/** Counters of one ethdev iface (one port, one queue pair). */
struct unio_tl_ethdev_stats {
	uint64_t rx_frames;          /**< frames read from the rx queue */
	uint64_t tx_frames;          /**< frames handed to the tx queue */
	uint64_t rx_data;            /**< new in-window data frames accepted */
	uint64_t tx_data;            /**< data frames sent for the first time */
	uint64_t tx_data_bytes;      /**< payload bytes of those */
	uint64_t tx_retx;            /**< data frames sent again */
	uint64_t tx_retx_bytes;      /**< payload bytes of those */
	uint64_t tx_acks;            /**< stand-alone acknowledgements */
	uint64_t fast_retx;          /**< retransmissions triggered by SACK holes */
	uint64_t timeouts;           /**< retransmission timeouts */
	uint64_t probes;             /**< probes: head frames sent again after 2 RTTs of silence */
	uint64_t ep_failures;        /**< endpoints failed after too many timeouts */
	uint64_t rx_dup;             /**< duplicate data frames (suppressed, re-acked) */
	uint64_t rx_ooo;             /**< out-of-order frames buffered */
	uint64_t msgs_delivered;     /**< messages handed to AM handlers */
	uint64_t arp_replies;        /**< ARP requests for our address answered */
	uint64_t arp_requests;       /**< ARP requests sent to resolve peers */
	uint64_t arp_learned;        /**< neighbour entries learned or refreshed from ARP */
	uint64_t icmp_replies;       /**< ICMP echo requests answered */
	uint64_t drop_other_proto;   /**< not ARP or IPv4/UDP/ICMP */
	uint64_t drop_not_ours;      /**< another MAC, IPv4 address or UDP port */
	uint64_t drop_truncated;     /**< shorter than its headers say */
	uint64_t drop_bad_csum;      /**< IPv4 or UDP checksum wrong */
	uint64_t drop_bad_len;       /**< impossible lengths, IPv4 fragments, multi-segment */
	uint64_t drop_bad_hdr;       /**< wrong magic, version or frame type */
	uint64_t drop_unknown_conn;  /**< connection id not ours or not the peer's */
	uint64_t drop_bad_seq;       /**< sequence or ack number outside the window */
	uint64_t drop_bad_msg;       /**< fragments that do not form a valid message */
	uint64_t drop_no_peer;       /**< no room for another peer */
	uint64_t tx_no_mbuf;         /**< mbuf pool empty on send */
	uint64_t rx_steered;         /**< frames handed to another iface of the port */
	uint64_t drop_steer_full;    /**< ... dropped because its inbox was full */
	uint64_t tx_zcopy;           /**< messages sent from user memory (no copy) */
	uint64_t flow_rules;         /**< rte_flow rules steering this iface's UDP port (0/1) */
	uint64_t timeouts_undone;    /**< timeouts found spurious (the originals arrived) */
	uint64_t idle_yields;        /**< CPU given away after idle progress calls */
	/* sends refused (UNIO_ERR_NO_RESOURCE) for want of room, by the first limit hit */
	uint64_t tx_refused_cwnd;    /**< frames in flight reached the congestion window */
	uint64_t tx_refused_window;  /**< the message would not fit the 256-frame send window */
	uint64_t tx_refused_credit;  /**< beyond the receiver's credit (its free reorder slots) */
	uint64_t tx_refused_txq;     /**< the iface's tx queue (frames the PMD did not take) full */
	/* connection requests (HELLO) the protocol layer could not serve, answered REFUSED */
	uint64_t conn_refused_busy;     /**< more waited than UNIO_CONN_BACKLOG */
	uint64_t conn_refused_no_iface; /**< for an address no iface of the worker has */
	uint64_t conn_refused_no_ep;    /**< no endpoint to the sender could be made */
	uint64_t conn_unanswered;       /**< malformed, or no way to answer: dropped */
	/* the congestion window's inputs and the PMD's share of the sends */
	uint64_t cc_samples;         /**< RTT samples of the path that decided the window */
	uint64_t cc_host_samples;    /**< ... that were all host time (the peer's hold) */
	uint64_t cc_decreases;       /**< multiplicative decreases by the delay */
	uint64_t tx_bursts;          /**< rte_eth_tx_burst() calls (each a kick on af_xdp) */
	uint64_t rx_get_direct;      /**< GET_RESP messages copied straight to the get's buffer */
	uint64_t zc_orphaned;        /**< zero-copy messages whose ep went while a PMD or the tx
				       *   queue held their frames (completed CANCELED later) */
	uint64_t cc_stale_samples;   /**< echoes the window had already used (RTO only) */
	uint64_t tx_untracked;       /**< data frames of eps in the lossless mode
				       *   (UNIO_ETHDEV_LOSSLESS): no copy kept, untimed */
	uint64_t lossless_eps;       /**< endpoints that went over to the lossless mode */
	uint64_t tx_zcopy_put;       /**< put messages sent from the initiator's memory (no
				       *   copy; each is also one of tx_zcopy) */
};

/**
 * Read the counters of an ethdev iface.
 *
 * @return UNIO_OK; UNIO_ERR_INVALID_PARAM when @p iface is not an ethdev iface.
 */
unio_status_t unio_tl_ethdev_stats(struct unio_tl_iface *iface,
				   struct unio_tl_ethdev_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* UNIO_TL_ETHDEV_H */
