/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UNIO_ETHDEV_PRIV_H
#define UNIO_ETHDEV_PRIV_H

/*
 * Internals of the ethdev driver, shared by ethdev.c (ifaces, eps, reliability, congestion)
 * and ethdev_net.c (ports, addresses, ARP, ICMP, frame parsing).
 */

#include <stdbool.h>
#include <stdint.h>

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "unio_log.h"
#include "unio_tl.h"
#include "unio_tl_ethdev.h"

#if RTE_BYTE_ORDER != RTE_LITTLE_ENDIAN
#error "the ethdev wire header is little endian; big-endian hosts are not supported yet"
#endif

extern int ethdev_logtype;
#define ETH_LOG(lvl, fmt, ...) UNIO_LOG(lvl, ethdev_logtype, fmt, ##__VA_ARGS__)

#define ETH_MAGIC        0x55u     /* 'U' */
#define ETH_VERSION      1u
#define ETH_WIN          256u      /* frames in flight per ep, and the reorder window */
#define ETH_MAX_PEERS    64u
#define ETH_BURST        32u
#define ETH_TXQ_LEN      1024u     /* frames waiting for the tx queue (power of two) */
#define ETH_MAX_MSG      (64u * 1024u)
#define ETH_MAX_COMPS    64u
#define ETH_ZCOPY_HDR    128u
#define ETH_ZCOPY_MIN    8192u     /* am_zcopy payloads from which frames reference user memory */
#define ETH_ARP_MAX      32u
#define ETH_MAX_QUEUES   16u
#define ETH_JUMBO_MTU      9000u
#define ETH_INBOX_LEN    1024u     /* frames other workers hand to an iface */
#define ETH_ARP_TRIES    5u        /* ARP requests before a peer is unreachable */
#define ETH_L2L3L4       (sizeof(struct rte_ether_hdr) + sizeof(struct rte_ipv4_hdr) + \
			  sizeof(struct rte_udp_hdr))

enum eth_frame_type {
	ETH_FT_DATA = 1,
	ETH_FT_ACK = 2,
};

#define ETH_FF_FIRST 0x1u
#define ETH_FF_LAST  0x2u

/** The Unio header after UDP (little endian). */
struct eth_wire {
	uint8_t magic;
	uint8_t version;
	uint8_t type;          /**< enum eth_frame_type */
	uint8_t flags;         /**< ETH_FF_* */
	uint8_t am_id;
	uint8_t rsvd0;
	uint16_t len;          /**< payload bytes in this frame */
	uint16_t credit;       /**< free slots in the sender's reorder window */
	uint16_t rsvd1;
	uint32_t dst_conn;     /**< the receiving iface's connection id */
	uint32_t src_conn;     /**< the sending iface's connection id */
	uint32_t seq;          /**< data: sequence number */
	uint32_t ack;          /**< next sequence number the sender expects */
	uint32_t msg_len;      /**< data: bytes of the whole message */
	uint32_t rsvd2;
	uint64_t sack;         /**< bit i: ack + 1 + i was received */
	uint64_t tsc;          /**< sender's TSC at transmission */
	uint64_t tsc_echo;     /**< the peer's tsc of the latest data frame received */
	uint8_t pad[2];        /**< 62 bytes: the payload starts 8-byte aligned in the frame */
} __rte_packed;

/** The iface address: what a peer needs to reach us (network byte order for IP/port). */
struct eth_addr {
	struct rte_ether_addr mac;
	rte_be16_t udp_port;
	rte_be32_t ip;
	uint32_t conn;
};

struct eth_slot {
	struct rte_mbuf *m;    /**< the frame as first sent (kept until acked) */
	uint64_t tx_tsc;       /**< last transmission */
	uint16_t len;          /**< payload bytes */
	uint8_t sacked;
	uint8_t nretx;
};

struct eth_comp {
	struct unio_tl_completion *comp;
	uint32_t seq;          /**< done once everything before seq is acked */
};

enum eth_arp_state {
	ETH_ARP_FREE = 0,
	ETH_ARP_STATIC,        /**< from UNIO_ETHDEV_ARP, never replaced */
	ETH_ARP_VALID,         /**< learned from the wire */
	ETH_ARP_PENDING,       /**< requests out, no answer yet */
};

struct eth_arp {
	rte_be32_t ip;
	struct rte_ether_addr mac;
	uint8_t state;         /**< enum eth_arp_state */
	uint8_t tries;         /**< requests sent */
	uint64_t next;         /**< TSC of the next request */
};

struct eth_ep;

/** One zero-copy message: its frames reference the user's memory until all are freed. */
struct eth_zc {
	struct rte_mbuf_ext_shared_info shinfo;
	struct unio_tl_completion *comp;
	struct eth_ep *ep;
	struct eth_zc *next_free;
};

struct eth_iface;

struct eth_ep {
	struct unio_tl_ep super;
	struct eth_iface *ei;
	struct eth_addr peer;
	bool user_owned;       /**< created by ep_create (else passive, from the peer) */
	bool ack_pending;
	bool failed;
	bool probed;           /**< a probe went out since the last ack progress */
	bool resolving;        /**< the peer's MAC is being resolved with ARP */
	unio_status_t fail_status;
	uint8_t hdr_tmpl[ETH_L2L3L4];
	/* send side */
	uint32_t snd_una, snd_nxt;
	uint32_t peer_edge;    /**< peer's ack + credit: do not send at or beyond */
	double cwnd;
	uint64_t srtt, rttvar, min_rtt, rto, rto_cur, last_decrease, last_ack_tsc;
	unsigned int n_timeouts;
	unsigned int n_comps;
	struct eth_comp comps[ETH_MAX_COMPS];
	struct eth_zc *zc_free;
	struct eth_zc zc[ETH_MAX_COMPS];
	struct eth_slot snd[ETH_WIN];
	/* receive side */
	uint32_t rcv_nxt;
	uint32_t n_ooo;
	uint64_t echo_tsc;
	uint64_t ack_since;      /**< when the oldest unacked frame arrived */
	uint32_t n_unacked;      /**< frames received since the last ack sent */
	struct rte_mbuf *rcv[ETH_WIN];
	uint32_t reasm_len, reasm_off;
	uint8_t reasm_id;
	bool reasm_active;
	uint8_t *reasm;        /**< ETH_MAX_MSG bytes */
};

struct eth_iface {
	struct unio_tl_iface super;
	uint16_t port_id;
	uint16_t queue;          /**< this iface's rx/tx queue pair */
	struct rte_ring *inbox;  /**< frames steered here by the port's other ifaces */
	uint16_t mtu;
	uint16_t frag;         /**< payload bytes per frame */
	uint16_t ip_id;
	bool tx_csum;           /**< checksums offloaded to the PMD */
	bool tx_multiseg;       /**< the PMD sends mbuf chains: zero copy possible */
	struct eth_addr addr;
	struct rte_mempool *mp;
	uint64_t tsc_hz;
	uint64_t timer_period, last_timer;
	uint64_t ack_delay;      /**< TSC cycles an ack may wait for a reply */
	uint64_t rto_min, rto_max;
	uint64_t target_delay;  /**< TSC cycles of queueing the cwnd aims at */
	unsigned int retries;
	struct unio_tl_ethdev_stats st;
	unsigned int n_arp;
	struct eth_arp arp[ETH_ARP_MAX];
	uint32_t txq_head, txq_tail;
	struct rte_mbuf *txq[ETH_TXQ_LEN];
	unsigned int n_peers;
	struct eth_ep *peers[ETH_MAX_PEERS];
	struct eth_ep *last_peer;
	unsigned int n_ack;
	struct eth_ep *ack_list[ETH_MAX_PEERS];
	uint8_t scratch[ETH_MAX_MSG];
};

/* ethdev_net.c */
unio_status_t eth_port_open(struct eth_iface *ei, const struct unio_config *cfg,
			    const char *dev_name);
void eth_port_close(struct eth_iface *ei);
unio_status_t eth_query_devices(const struct unio_config *config,
				struct unio_tl_device_info *devs, unsigned int *n_devs,
				char *reason, size_t reason_len);
/** Classify one received frame: returns the wire header of a valid Unio frame, or NULL. */
const struct eth_wire *eth_rx_classify(struct eth_iface *ei, struct rte_mbuf *m,
				       const struct rte_ipv4_hdr **ip_p,
				       const struct rte_udp_hdr **udp_p);
void eth_hdr_template(const struct eth_iface *ei, const struct eth_addr *peer, uint8_t *tmpl);
void eth_frame_finish(struct eth_iface *ei, struct rte_mbuf *m, uint16_t l4_payload);
void eth_txq_push(struct eth_iface *ei, struct rte_mbuf *m);
/** The MAC of neighbour @p ip when known (static or learned): 0, else -1. */
int eth_arp_lookup(const struct eth_iface *ei, rte_be32_t ip, struct rte_ether_addr *mac);
/** Ask for @p ip's MAC (rate-limited); returns the number of requests sent so far. */
unsigned int eth_arp_resolve(struct eth_iface *ei, rte_be32_t ip, uint64_t now);
unsigned int eth_txq_flush(struct eth_iface *ei);

static inline unsigned int
eth_txq_room(const struct eth_iface *ei)
{
	return ETH_TXQ_LEN - (ei->txq_head - ei->txq_tail);
}

#endif /* UNIO_ETHDEV_PRIV_H */
