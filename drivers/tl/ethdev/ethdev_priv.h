/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UNIO_ETHDEV_PRIV_H
#define UNIO_ETHDEV_PRIV_H

/*
 * Internals of the ethdev driver, shared by ethdev.c (ifaces, eps, reliability, congestion)
 * and ethdev_net.c (ports, addresses, ARP, ICMP, frame parsing).
 */

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/uio.h>

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_flow.h>
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
/*
 * 2: the dial id and echo_delay fields (reserved in 1, whose peers dropped or ignored them)
 * and the 62-byte header; frames of another version are dropped (drop_bad_hdr), addresses of
 * another version refused (UNIO_ERR_VERSION_MISMATCH).
 */
#define ETH_VERSION      2u
#define ETH_WIN          256u       /* frames in flight per ep, and the reorder window */
#define ETH_INIT_CWND    16.0
#define ETH_MIN_CWND     2.0
#define ETH_MAX_PEERS    64u
#define ETH_BURST        32u
#define ETH_ACK_EVERY    16u       /* frames received before an ack goes out at once */
#define ETH_ACK_DELAY_US 20u       /* else it waits this long after the latest frame */
#define ETH_ACK_MAX_US   100u      /* ... and at most this long after the oldest unacked one */
#define ETH_TIME_EVERY   8u        /* frames sent with nothing in flight: one in this many timed */
#define ETH_NB_DESC      1024u     /* rx / tx descriptors per queue */
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
#define ETH_FREE_MAX     64u       /* frames a progress call frees together */
#define ETH_STASH        64u       /* freed frames an iface keeps for its next sends */
/* put / get: messages of internal AM ids (above UNIO_TL_AM_ID_MAX) on the ep's channel */
#define ETH_AM_PUT       0xf0u     /* rma hdr + data: write at the target */
#define ETH_AM_PUT_ACK   0xf1u     /* rma hdr: a PUT chunk was applied (or refused) */
#define ETH_AM_GET_REQ   0xf2u     /* rma hdr: read len bytes at addr */
#define ETH_AM_GET_RESP  0xf3u     /* rma hdr + data: off .. off + len of a GET_REQ */
#define ETH_RMA_OPS      1024u     /* outstanding puts + gets per ep */
#define ETH_RMA_MAX_GET  (1024u * 1024u)        /* get_zcopy bytes per call */
#define ETH_RMA_MAX_PUT  (8u * 1024u * 1024u)   /* put_zcopy bytes per call */
#define ETH_REGS_MAX     4096u     /* registered regions per process */
#define ETH_L2L3L4       (sizeof(struct rte_ether_hdr) + sizeof(struct rte_ipv4_hdr) + \
			  sizeof(struct rte_udp_hdr))
#define ETH_HDRS         (ETH_L2L3L4 + sizeof(struct eth_wire))   /* 104: every frame's headers */
#define ETH_RX_WORDS     8u        /* 8-byte words of a frame's first 64 bytes (rx_fast()) */

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
	uint16_t echo_delay;   /**< us the sender of this frame held the frame of tsc_echo */
	uint32_t dst_conn;     /**< the receiving iface's connection id */
	uint32_t src_conn;     /**< the sending iface's connection id */
	uint32_t seq;          /**< data: sequence number */
	uint32_t ack;          /**< next sequence number the sender expects */
	uint32_t msg_len;      /**< data: bytes of the whole message */
	uint32_t dial;         /**< a dialled connection's random id, both ways; else 0 */
	uint64_t sack;         /**< bit i: ack + 1 + i was received */
	uint64_t tsc;          /**< sender's TSC at transmission; 0: not timed */
	uint64_t tsc_echo;     /**< the peer's tsc of the latest data frame received */
	uint8_t pad[2];        /**< 62 bytes: the payload starts 8-byte aligned in the frame */
} __rte_packed;

/** The header of every put / get message (little endian). */
struct eth_rma_hdr {
	uint64_t addr;         /**< target address of this chunk (PUT, GET_REQ) */
	uint32_t len;          /**< data bytes: of this chunk (PUT, GET_RESP), asked (GET_REQ) */
	uint32_t off;          /**< GET_RESP: offset of this chunk in the get */
	uint32_t key_idx;      /**< the target's registration slot */
	uint32_t key_gen;      /**< and its generation */
	uint32_t key_cookie;   /**< and its random cookie (a key cannot be guessed) */
	uint32_t req_id;       /**< the initiator's operation */
	int32_t status;        /**< PUT_ACK, GET_RESP: UNIO_OK or why the target refused */
} __rte_packed;

/**
 * Data bytes of one PUT or GET_RESP message on an iface of @p frag payload bytes a frame: the
 * most that fill whole frames together with the header (k frames, k * frag <= ETH_MAX_MSG),
 * so that only a transfer's last message ends in a partial frame.  64 KiB - 36 bytes (what
 * the chunk was before) left each message's last frame 57 % full at MTU 1500 (47 frames, 753
 * a MiB) and 55 % at 3442 (20, 321 a MiB); whole frames take 746 and 314.  The receiver takes
 * any chunk size (it places a chunk by its offset, and a put's acks are counted by the side
 * that chunks it).
 */
static inline size_t
eth_rma_chunk(size_t frag)
{
	size_t whole = frag != 0 ? ETH_MAX_MSG / frag * frag : 0;

	return whole > sizeof(struct eth_rma_hdr) ? whole - sizeof(struct eth_rma_hdr) :
						    ETH_MAX_MSG - sizeof(struct eth_rma_hdr);
}

/** A packed remote key. */
struct eth_rkey {
	uint64_t base;
	uint64_t len;
	uint32_t idx;
	uint32_t gen;
	uint32_t cookie;
	uint32_t rsvd;
};

/** An outstanding put or get of the initiator. */
struct eth_rma_op {
	struct unio_tl_completion *comp;
	struct iovec iov[UNIO_TL_MAX_IOV];   /**< get: where the data goes */
	uint32_t iovcnt;
	uint32_t req_id;
	uint32_t chunks_left;  /**< put: PUT_ACKs still expected */
	uint32_t chunks_unacked; /**< put: chunks sent and not yet acked (a PUT_ACK beyond
				  *   them is forged: it must not complete the put early) */
	size_t length, done;   /**< get: bytes asked and received */
	unio_status_t st;
	bool used, put;
};

/** Frames still to send for a put, a get request or a target's answer, in order. */
struct eth_rma_job {
	TAILQ_ENTRY(eth_rma_job) link;
	uint8_t id;            /**< ETH_AM_* */
	bool started;
	bool from_region;      /**< GET_RESP: iov[0] is the registered range, checked per step */
	struct eth_rma_hdr h;
	struct eth_rma_hdr req; /**< GET_RESP: the request (address, length, key) */
	struct iovec iov[UNIO_TL_MAX_IOV];   /**< data source (put: the user's, answer: see
					      *   from_region and snap) */
	uint32_t iovcnt;
	size_t total, sent;
	size_t base;           /**< GET_RESP: offset in the get of the first byte of iov */
	uint8_t *snap;         /**< GET_RESP: the rest of the range copied before a put of the
				*   same ep overwrote it; freed at the end */
};

TAILQ_HEAD(eth_rma_jobs, eth_rma_job);

/** Per-ep put / get state, allocated at the first use on either side. */
struct eth_rma {
	struct eth_rma_jobs jobs;
	uint32_t n_own;        /**< jobs of our own operations (PUT, GET_REQ) */
	uint32_t n_ops, next_req;
	unsigned int n_flush;
	struct unio_tl_completion *flush[8];   /**< ep flushes waiting for put / get */
	struct eth_rma_op ops[ETH_RMA_OPS];
};

/** The iface address: what a peer needs to reach us (network byte order for IP/port). */
struct eth_addr {
	struct rte_ether_addr mac;
	rte_be16_t udp_port;
	rte_be32_t ip;
	uint32_t conn;
	uint8_t magic;         /**< ETH_MAGIC: bytes that are not an address are refused */
	uint8_t version;       /**< ETH_VERSION: the frames this iface speaks */
	uint16_t rsvd;         /**< 0 */
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

struct eth_zc_set;

/** One zero-copy message: its frames reference the user's memory until all are freed. */
struct eth_zc {
	struct rte_mbuf_ext_shared_info shinfo;
	struct unio_tl_completion *comp;
	struct eth_zc_set *set;
	struct eth_zc *next_free;   /**< the set's free list, or the iface's zc_due list */
	unio_status_t st;           /**< on zc_due: the status its completion gets */
};

/*
 * An ep's zero-copy records, allocated apart from the ep: a PMD (a real NIC completes its
 * transmissions later) or the iface's tx queue may still hold frames of a message when the
 * ep goes.  The ep leaves such a set behind (ep == NULL); each record's last frame freed
 * completes its message with UNIO_ERR_CANCELED, and the last one frees the set.
 */
struct eth_zc_set {
	struct eth_ep *ep;      /**< NULL: the ep is gone */
	unsigned int busy;      /**< records not free: frames still referenced, or due */
	unsigned int due;       /**< of those, on the iface's zc_due list */
	struct eth_zc *free;
	struct eth_zc zc[ETH_MAX_COMPS];
};

struct eth_iface;
struct eth_ep_alias;

enum { ETH_EP_CONN = 0, ETH_EP_ALIAS = 1 };

struct eth_ep {
	struct unio_tl_ep super;
	uint32_t kind;         /**< ETH_EP_CONN (struct eth_ep_alias has ETH_EP_ALIAS here) */
	struct eth_iface *ei;
	struct eth_addr peer;
	struct eth_ep_alias *aliases;  /**< more handles on this connection (ep_create) */
	bool user_owned;       /**< created by ep_create (else passive, from the peer) */
	bool released;         /**< ep_destroy of this handle while aliases hold the conn */
	bool reporting;        /**< ep_fail() is calling the handles' error callbacks */
	bool doomed;           /**< failed, and no handle is left: freed by the next timers() */
	bool ack_pending;
	bool failed;
	bool probed;           /**< a probe went out since the last ack progress */
	bool resolving;        /**< the peer's MAC is being resolved with ARP */
	bool detached;         /**< replaced by a new connection of its peer: found no more */
	/** lossless mode (the iface's link is, and the peer acknowledged all we had sent): sent
	 *  frames are not kept (no window slot, no retransmission), untimed, and not held back
	 *  by the cwnd or the peer's credit; snd_una still follows the acks, for flush and for
	 *  the timeouts that fail a silent peer (ll_mark, ll_since) */
	bool lossless;
	uint32_t ll_mark;      /**< snd_una as the timers last saw it */
	uint64_t ll_since;     /**< when they saw it move, or nothing unacked */
	uint32_t dial;         /**< the connection's dial id (ours or the dialler's), or 0 */
	unio_status_t fail_status;
	uint16_t ip_sum;       /**< eth_ip_cksum() of hdr_tmpl's IPv4 header (length, id 0) */
	/** every header of a data frame to the peer: Ethernet, IPv4 (length, id and checksum
	 *  0), UDP (length 0), the Unio header (magic, version, type DATA, src_conn); a send
	 *  copies it whole and fills in the rest */
	uint8_t hdr_tmpl[ETH_HDRS] __rte_aligned(8);
	/** the first 64 bytes of every frame from the peer, where they do not change from frame
	 *  to frame (ETH_RX_WORDS words, masked as rx_fast() masks them): Ethernet destination
	 *  and type, IPv4 version, header length, fragment field, protocol, addresses, UDP
	 *  ports, the Unio magic, version and both connection ids; rx_tmpl_build() */
	uint64_t rx_tmpl[ETH_RX_WORDS] __rte_aligned(16);
	uint64_t rx_ip_addrs;  /**< the addresses of rx_tmpl's IPv4 header, summed as
				 *   eth_ip_cksum_addrs() takes them */
	/* send side */
	uint32_t snd_una, snd_nxt;
	uint32_t peer_edge;    /**< peer's ack + credit: do not send at or beyond */
	double cwnd;
	double cwnd_undo;      /**< cwnd before the latest timeout (restored if spurious) */
	uint64_t to_tsc;       /**< when that timeout fired; 0: none to judge */
	uint64_t srtt, rttvar, min_rtt, last_decrease;
	uint32_t cc_acked;     /**< frames acked since the last RTT sample of the path (at
				 *   most cwnd + 1) */
	uint64_t cc_echo;      /**< newest echoed TSC the window took a sample from */
	unsigned int n_timeouts;
	unsigned int n_untimed;  /**< data frames sent untimed since the last timed one */
	unsigned int n_comps;
	struct eth_comp comps[ETH_MAX_COMPS];
	struct eth_zc_set *zc;
	struct eth_slot snd[ETH_WIN];
	/* receive side */
	uint32_t rcv_nxt;
	uint32_t n_ooo;
	uint64_t echo_tsc;
	uint64_t echo_rx;        /**< the frame of echo_tsc arrived after this (our TSC) */
	uint64_t ack_since;      /**< when the oldest unacked frame arrived */
	uint64_t ack_last;       /**< when the latest one did */
	uint32_t n_unacked;      /**< frames received since the last ack sent */
	struct rte_mbuf *rcv[ETH_WIN];
	uint32_t reasm_len, reasm_off;
	uint8_t reasm_id;
	bool reasm_active;
	uint8_t *reasm;        /**< ETH_MAX_MSG bytes */
	struct eth_rma_op *reasm_get;  /**< a GET_RESP in reassembly goes straight to this get */
	struct eth_rma *rma;   /**< put / get (NULL until used) */
};

/*
 * A second (third...) handle on a connection: an ep_create for a peer iface this iface has
 * a connection to already (two endpoints of one worker to one peer worker share it, as tcp
 * eps share a connection).  Same layout up to kind.
 */
struct eth_ep_alias {
	struct unio_tl_ep super;
	uint32_t kind;         /**< ETH_EP_ALIAS */
	struct eth_ep *ep;
	struct eth_ep_alias *next;
	bool gone;             /**< destroyed from an error callback: ep_fail() frees it */
};

_Static_assert(offsetof(struct eth_ep_alias, kind) == offsetof(struct eth_ep, kind),
	       "an alias and a connection keep kind at the same place");

/* The connection behind a handle the generic layer passes in. */
static inline struct eth_ep *
eth_ep_of(struct unio_tl_ep *tep)
{
	struct eth_ep *ep = (struct eth_ep *)tep;

	return ep->kind == ETH_EP_ALIAS ? ((struct eth_ep_alias *)tep)->ep : ep;
}

struct eth_iface {
	struct unio_tl_iface super;
	uint16_t port_id;
	uint16_t queue;          /**< this iface's rx/tx queue pair */
	struct rte_ring *inbox;  /**< frames steered here by the port's other ifaces */
	struct rte_flow *flow;   /**< rule steering our UDP port to our queue, or NULL */
	uint16_t mtu;
	uint16_t frag;         /**< payload bytes per frame */
	uint16_t ip_id;
	bool tx_csum;           /**< checksums offloaded to the PMD */
	bool no_udp_csum;       /**< shared memory (memif): frames go with UDP checksum 0 */
	bool tx_multiseg;       /**< the PMD sends mbuf chains: zero copy possible */
	bool idle_yield;        /**< give the CPU away when idle (UNIO_ETHDEV_IDLE_YIELD) */
	bool tx_batch;          /**< eth_send_msg() sends whole bursts, eth_rma_drain() the rest */
	bool lossless;          /**< a lossless, in-order link (memif, one queue pair): eps go
				 *   over to their lossless mode (eth_ep.lossless) */
	uint32_t idle_polls;    /**< consecutive progress calls without a frame in or out */
	uint64_t tx_seen;       /**< st.tx_frames at the previous progress call */
	struct eth_addr addr;
	struct rte_mempool *mp;
	uint64_t tsc_hz;
	uint64_t tsc_per_us;     /**< TSC cycles per microsecond (echo_delay to cycles) */
	uint64_t us_per_tsc_q32; /**< microseconds per TSC cycle x 2^32 (cycles to echo_delay) */
	uint64_t tsc_us_max;     /**< TSC cycles of UINT16_MAX us, where echo_delay saturates */
	uint64_t now;            /**< the clock as the latest progress call that read it */
	uint32_t clock_skips;    /**< empty progress calls since the clock was last read */
	bool in_progress;        /**< inside eth_progress() after its clock reading */
	uint32_t n_free;
	struct rte_mbuf *to_free[ETH_FREE_MAX];  /**< frames freed at the end of the call */
	uint32_t n_zc_done;      /**< zero-copy sends completed since progress last returned */
	/** zero-copy messages whose frames are all freed: their completions run at the end of
	 *  the next progress call (zc_reported()), never inside a send, where a PMD that lets
	 *  go of earlier frames would run a user's callback in the middle of the driver's work */
	struct eth_zc *zc_due, **zc_due_tail;
	uint32_t n_stash;
	struct rte_mbuf *stash[ETH_STASH];       /**< freed mbufs of mp, taken by sends */
	uint64_t timer_period, last_timer;
	uint64_t rx_clear;       /**< the latest poll that left the rx queue and inbox empty */
	uint64_t rx_after;       /**< frames of this progress call arrived after this */
	uint32_t rx_backlog;     /**< frames read since rx_clear */
	uint64_t ack_delay;      /**< TSC cycles an ack waits for a reply after the latest frame */
	uint64_t ack_max;        /**< ... and at most after the oldest unacked frame */
	uint64_t rto_min, rto_max;
	uint64_t target_delay;  /**< TSC cycles of queueing the cwnd aims at */
	unsigned int retries;
	struct unio_tl_ethdev_stats st;
	unsigned int n_arp;
	struct eth_arp arp[ETH_ARP_MAX];
	uint32_t txq_head, txq_tail;
	struct rte_mbuf *txq[ETH_TXQ_LEN];
	unsigned int n_peers;
	unsigned int n_rma;      /**< peers with put / get state (ep->rma) */
	struct eth_ep *peers[ETH_MAX_PEERS];
	struct eth_ep *last_peer;
	unsigned int n_ack_owed; /**< eps that owe their peer an ack (ack_pending) */
	uint64_t ack_next;       /**< no owed ack is due before this TSC (want_ack()) */
	uint8_t scratch[ETH_MAX_MSG];
};

/*
 * The rte_flow rule that steers an iface's frames to its queue: IPv4 to @p ip, UDP to
 * @p port (both network order) -> QUEUE @p queue.  Kept in one place so the driver and its
 * test build the same rule.
 */
struct eth_flow_spec {
	struct rte_flow_attr attr;
	struct rte_flow_item_ipv4 ip_spec, ip_mask;
	struct rte_flow_item_udp udp_spec, udp_mask;
	struct rte_flow_action_queue queue;
	struct rte_flow_item pattern[4];
	struct rte_flow_action actions[2];
};

static inline void
eth_flow_spec_init(struct eth_flow_spec *fs, rte_be32_t ip, rte_be16_t port, uint16_t queue)
{
	memset(fs, 0, sizeof(*fs));
	fs->attr.ingress = 1;
	fs->ip_spec.hdr.dst_addr = ip;
	fs->ip_mask.hdr.dst_addr = RTE_BE32(UINT32_MAX);
	fs->udp_spec.hdr.dst_port = port;
	fs->udp_mask.hdr.dst_port = RTE_BE16(UINT16_MAX);
	fs->queue.index = queue;
	fs->pattern[0].type = RTE_FLOW_ITEM_TYPE_ETH;   /* any: the PMD filters our MAC */
	fs->pattern[1] = (struct rte_flow_item){ .type = RTE_FLOW_ITEM_TYPE_IPV4,
						 .spec = &fs->ip_spec, .mask = &fs->ip_mask };
	fs->pattern[2] = (struct rte_flow_item){ .type = RTE_FLOW_ITEM_TYPE_UDP,
						 .spec = &fs->udp_spec, .mask = &fs->udp_mask };
	fs->pattern[3].type = RTE_FLOW_ITEM_TYPE_END;
	fs->actions[0] = (struct rte_flow_action){ .type = RTE_FLOW_ACTION_TYPE_QUEUE,
						   .conf = &fs->queue };
	fs->actions[1].type = RTE_FLOW_ACTION_TYPE_END;
}

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
void eth_txq_push(struct eth_iface *ei, struct rte_mbuf *m);
/** The MAC of neighbour @p ip when known (static or learned): 0, else -1. */
int eth_arp_lookup(const struct eth_iface *ei, rte_be32_t ip, struct rte_ether_addr *mac);
/** Ask for @p ip's MAC (rate-limited); returns the number of requests sent so far. */
unsigned int eth_arp_resolve(struct eth_iface *ei, rte_be32_t ip, uint64_t now);
unsigned int eth_txq_flush(struct eth_iface *ei);
/** Hand the PMD whole bursts of ETH_BURST queued frames, keep the rest. */
unsigned int eth_txq_flush_bursts(struct eth_iface *ei);
/** Log the iface's non-zero counters at debug level. */
void eth_stats_log(const struct eth_iface *ei);

/* ethdev.c, for ethdev_rma.c */
/** Send @p iov (@p total bytes, at most ETH_MAX_MSG) as one message of AM id @p id. */
unio_status_t eth_send_msg(struct eth_ep *ep, uint8_t id, const struct iovec *iov,
			   size_t iovcnt, size_t total);
/**
 * Send @p hdr and @p iov (@p total bytes with the header) as one message whose frames point
 * at @p iov's memory (the iface must have tx_multiseg); @p comp is called from the progress
 * call after every frame was acked and freed.  UNIO_OK: all are freed already, @p comp is
 * not called; UNIO_INPROGRESS; UNIO_ERR_NO_RESOURCE: nothing sent.
 */
unio_status_t eth_send_zc(struct eth_ep *ep, uint8_t id, const void *hdr, size_t hdr_len,
			  const struct iovec *iov, size_t iovcnt, size_t total,
			  struct unio_tl_completion *comp);

/* ethdev_rma.c: put / get in software, the target checking every key */
unio_status_t eth_mem_reg(struct unio_tl_iface *iface, void *addr, size_t len,
			  struct unio_tl_memh *memh);
void eth_mem_dereg(struct unio_tl_iface *iface, struct unio_tl_memh *memh);
unio_status_t eth_rkey_pack(struct unio_tl_iface *iface, const struct unio_tl_memh *memh,
			    void *buf);
unio_status_t eth_rkey_unpack(struct unio_tl_ep *ep, const void *buf, size_t len,
			      struct unio_tl_rkey *rkey);
void eth_rkey_release(struct unio_tl_ep *ep, struct unio_tl_rkey *rkey);
unio_status_t eth_put_zcopy(struct unio_tl_ep *ep, const struct iovec *iov, size_t iovcnt,
			    uint64_t remote_addr, const struct unio_tl_rkey *rkey,
			    struct unio_tl_completion *comp);
unio_status_t eth_get_zcopy(struct unio_tl_ep *ep, const struct iovec *iov, size_t iovcnt,
			    uint64_t remote_addr, const struct unio_tl_rkey *rkey,
			    struct unio_tl_completion *comp);
/** A put / get message arrived in order on @p ep. */
void eth_rma_input(struct eth_ep *ep, uint8_t id, const void *data, size_t len);
/*
 * A GET_RESP of @p msg_len bytes whose first fragment (@p first_len bytes at @p first) holds
 * a header that eth_rma_input() would accept (our get, status OK, the next offset, a length
 * that fits): its get, whose buffer the fragments may be copied to as they arrive; else NULL.
 */
struct eth_rma_op *eth_rma_resp_target(struct eth_ep *ep, const void *first, size_t first_len,
				       size_t msg_len);
/** Copy @p len data bytes at offset @p off of that GET_RESP's data to its get's buffer. */
void eth_rma_resp_place(struct eth_rma_op *op, size_t off, const void *src, size_t len);
/** That GET_RESP's @p len data bytes are all placed: account them, complete the get. */
void eth_rma_resp_done(struct eth_ep *ep, struct eth_rma_op *op, size_t len);
/** Send what the ep's put / get jobs can; true when none is left. */
bool eth_rma_drain(struct eth_ep *ep);
/** Flush: UNIO_OK when no put / get is outstanding, else UNIO_INPROGRESS (comp queued). */
unio_status_t eth_rma_flush(struct eth_ep *ep, struct unio_tl_completion *comp);
/** Complete every outstanding operation with @p st and drop the jobs (ep failed or freed). */
void eth_rma_cancel(struct eth_ep *ep, unio_status_t st);

/*
 * The ones' complement sum of the Internet checksum (RFC 1071) of @p len bytes at @p buf
 * plus @p sum, folded to 16 bits and not complemented: the value rte_raw_cksum() gives,
 * 8 bytes a step where DPDK 22.11's adds 2 bytes a step (its loop was a fifth of the
 * instructions an 8-byte message cost this driver, send and receive, under callgrind).
 * Native 32-bit words sum to the same as 16-bit ones modulo 0xffff (2^16 is 1 modulo
 * 0xffff); at most 2^31 bytes.  On x86-64, 64 bytes a step: eight native 64-bit words
 * added with carry and the last carry added back (a ones' complement sum modulo 2^64 - 1,
 * a multiple of 0xffff, so the same sum once folded): 14 instructions where the 8-byte
 * loop takes about 40 (a 3.4 KB af_xdp frame's UDP checksum was ~1900 of the ~2650
 * instructions each side spent on it).
 */
static inline uint16_t
eth_cksum(const void *buf, size_t len, uint64_t sum)
{
	const uint8_t *p = (const uint8_t *)buf;
	uint64_t v;
	uint32_t v32;
	uint16_t v16;

#if defined(RTE_ARCH_X86_64)
	if (len >= 64) {
		for (; len >= 64; len -= 64, p += 64)
			__asm__("addq (%[p]), %[s]\n\t"
				"adcq 8(%[p]), %[s]\n\t"
				"adcq 16(%[p]), %[s]\n\t"
				"adcq 24(%[p]), %[s]\n\t"
				"adcq 32(%[p]), %[s]\n\t"
				"adcq 40(%[p]), %[s]\n\t"
				"adcq 48(%[p]), %[s]\n\t"
				"adcq 56(%[p]), %[s]\n\t"
				"adcq $0, %[s]\n\t"
				"adcq $0, %[s]"  /* all ones plus a carry wrapped to 0 */
				: [s] "+r"(sum)
				: [p] "r"(p), "m"(*(const struct { uint8_t b[64]; } *)p)
				: "cc");
		sum = (sum & UINT32_MAX) + (sum >> 32);   /* room for the adds below */
	}
#endif
	for (; len >= 8; len -= 8, p += 8) {
		memcpy(&v, p, sizeof(v));
		sum += (v & UINT32_MAX) + (v >> 32);
	}
	if (len >= 4) {
		memcpy(&v32, p, sizeof(v32));
		sum += v32;
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		memcpy(&v16, p, sizeof(v16));
		sum += v16;
		p += 2;
		len -= 2;
	}
	if (len != 0)
		sum += *p;            /* the odd byte is the first of its word: its low half */
	sum = (sum & UINT32_MAX) + (sum >> 32);
	sum = (sum & UINT32_MAX) + (sum >> 32);
	sum = (sum & UINT16_MAX) + (sum >> 16);
	sum = (sum & UINT16_MAX) + (sum >> 16);
	sum = (sum & UINT16_MAX) + (sum >> 16);
	return (uint16_t)sum;
}

/*
 * eth_cksum() of an IPv4 header without options (20 bytes), unrolled: five 32-bit words,
 * the same sum (every frame sent and received computes it).
 */
static inline uint16_t
eth_ip_cksum(const struct rte_ipv4_hdr *ip)
{
	const uint8_t *p = (const uint8_t *)ip;
	uint32_t v[5];
	uint64_t sum;

	memcpy(v, p, sizeof(v));
	sum = (uint64_t)v[0] + v[1] + v[2] + v[3] + v[4];
	sum = (sum & UINT32_MAX) + (sum >> 32);
	sum = (sum & UINT16_MAX) + (sum >> 16);
	sum = (sum & UINT16_MAX) + (sum >> 16);
	sum = (sum & UINT16_MAX) + (sum >> 16);
	return (uint16_t)sum;
}

/*
 * eth_ip_cksum() of an IPv4 header without options whose addresses (source and destination
 * as they lie in the header, 32-bit native words) sum to @p addrs: a receiver that checked
 * them against its connection's (rx_fast() in ethdev.c) adds the first 12 bytes, one 64-bit
 * and one 32-bit load, to the sum it keeps, and folds with end-around carries (the ones'
 * complement adds of RFC 1071: the result is 0 only for a zero sum, as eth_cksum()'s).
 */
static inline uint16_t
eth_ip_cksum_addrs(const struct rte_ipv4_hdr *ip, uint64_t addrs)
{
	uint64_t q, sum;
	uint32_t d, lo, hi, r;
	uint16_t l16, h16, t;

	memcpy(&q, ip, sizeof(q));
	memcpy(&d, (const uint8_t *)ip + sizeof(q), sizeof(d));
	sum = (q & UINT32_MAX) + (q >> 32) + d + addrs;    /* below 2^35 */
	lo = (uint32_t)sum;
	hi = (uint32_t)(sum >> 32);
	r = lo + hi;
	r += r < hi;
	l16 = (uint16_t)r;
	h16 = (uint16_t)(r >> 16);
	t = (uint16_t)(l16 + h16);
	t = (uint16_t)(t + (t < h16));
	return t;
}

/*
 * The IPv4 header checksum field of a header whose other fields, with total_length,
 * packet_id and hdr_checksum 0, sum to @p base (eth_ip_cksum()), once @p tot_len and @p id
 * (as they lie in the header) are filled in: the sum is precomputed once per peer and
 * only the two fields that change from frame to frame are added (RFC 1624).  @p base is
 * never 0 (version_ihl is not), and neither is the result's complement: the field equals
 * the one computed over the whole header.
 */
static inline uint16_t
eth_ip_cksum_patch(uint16_t base, rte_be16_t tot_len, rte_be16_t id)
{
	uint32_t s = (uint32_t)base + tot_len + id;

	s = (s & UINT16_MAX) + (s >> 16);
	s = (s & UINT16_MAX) + (s >> 16);
	return (uint16_t)~s;
}

/* The UDP pseudo header of @p udp in @p ip, as a partial sum for eth_cksum(). */
static inline uint64_t
eth_udp_phdr(const struct rte_ipv4_hdr *ip, const struct rte_udp_hdr *udp)
{
	return (uint64_t)ip->src_addr + ip->dst_addr + rte_cpu_to_be_16(IPPROTO_UDP) +
	       udp->dgram_len;
}

/* The checksum field for @p udp (dgram_len contiguous bytes, its checksum field 0). */
static inline uint16_t
eth_udp_cksum(const struct rte_ipv4_hdr *ip, const struct rte_udp_hdr *udp)
{
	uint16_t c = (uint16_t)~eth_cksum(udp, rte_be_to_cpu_16(udp->dgram_len),
					  eth_udp_phdr(ip, udp));

	return c == 0 ? 0xffff : c;    /* 0 means "no checksum" (RFC 768) */
}

/*
 * Whether the ack @p ep owes goes out now as a frame of its own: at once after
 * ETH_ACK_EVERY frames or when frames arrived out of order (the sender needs the SACK);
 * else once ETH_ACK_DELAY_US passed without a new frame (a reply sent meanwhile carries
 * it; a lone request or the end of a burst waits that long, as before) or ETH_ACK_MAX_US
 * after the oldest unacked frame.  While a stream arrives, the frame count sends the acks:
 * when the delay ran from the oldest frame, a receiver that reads a few frames per poll
 * sent one ack per 9-13 frames (1 MiB tag_bw over af_xdp, 6871 acks for 67,624 frames),
 * each a frame and a sendto() kick of its own, before 16 had come.
 */
static inline bool
eth_ack_due(const struct eth_ep *ep, uint64_t now)
{
	const struct eth_iface *ei = ep->ei;

	return ep->n_unacked >= ETH_ACK_EVERY || ep->n_ooo != 0 ||
	       now - ep->ack_last >= ei->ack_delay || now - ep->ack_since >= ei->ack_max;
}

/*
 * The TSC a new data frame of @p ep carries for the peer to echo (an RTT sample for the RTO,
 * the probe and the congestion window), or 0: not timed.  A frame sent while nothing is in
 * flight (every frame of a ping-pong, the first of a burst) cannot have been held back by
 * the window, so its sample has nothing to decide there, and the RTO (10 ms floor) and the
 * probe need few: one such frame in ETH_TIME_EVERY is timed (and every one until the first
 * sample).  A frame sent behind others is timed, as every frame was before.  An untimed
 * frame is echoed as 0: the peer computes no hold time (echo_delay) for its answer, and
 * this side takes no RTT sample and makes no window update for the ack.
 */
static inline uint64_t
eth_frame_tsc(struct eth_ep *ep, uint64_t now)
{
	if (ep->snd_nxt == ep->snd_una && ++ep->n_untimed < ETH_TIME_EVERY && ep->srtt != 0)
		return 0;
	ep->n_untimed = 0;
	return now;
}

/* The iface's counters, with the protocol layer's refusals of connection requests. */
static inline void
eth_stats_read(const struct eth_iface *ei, struct unio_tl_ethdev_stats *st)
{
	*st = ei->st;
	st->conn_refused_busy = ei->super.conn_refused[UNIO_TL_CONN_BUSY];
	st->conn_refused_no_iface = ei->super.conn_refused[UNIO_TL_CONN_NO_IFACE];
	st->conn_refused_no_ep = ei->super.conn_refused[UNIO_TL_CONN_NO_EP];
	st->conn_unanswered = ei->super.conn_refused[UNIO_TL_CONN_UNANSWERED];
}

static inline unsigned int
eth_txq_room(const struct eth_iface *ei)
{
	return ETH_TXQ_LEN - (ei->txq_head - ei->txq_tail);
}

/* 1 / sqrt(x) for x > 0 (no libm): the classic first guess and three Newton steps. */
static inline double
eth_inv_sqrt(double x)
{
	float xf = (float)x;
	uint32_t i;
	double y;

	memcpy(&i, &xf, sizeof(i));
	i = 0x5f3759dfu - (i >> 1);
	memcpy(&xf, &i, sizeof(xf));
	y = xf;
	for (int k = 0; k < 3; k++)
		y *= 1.5 - 0.5 * x * y * y;
	return y;
}

/*
 * Flow scaling of the target (Swift): a flow with a small window tolerates more queueing
 * than one with a large window, from + 2 x target_delay at the minimum window to + 0 at the
 * largest (1 / sqrt(cwnd) between them; twice the target delay converged faster than once:
 * 85-100 % shares in ethdev_tbf_two_flows against 23-100 %).  Two flows through one queue
 * then converge to equal windows (the larger one sees the delay above its target and
 * shrinks while the smaller one still grows), where the
 * same target for both would keep whatever ratio the start left them with: the
 * multiplicative decreases hit both alike and the additive increases are equal.
 */
static inline uint64_t
eth_cc_flow_scaling(const struct eth_ep *ep)
{
	static const double lo = 0.0625;                  /* 1 / sqrt(ETH_WIN) */
	static const double hi = 0.70710678118654752;     /* 1 / sqrt(ETH_MIN_CWND) */
	double f = (eth_inv_sqrt(ep->cwnd) - lo) / (hi - lo);

	f = f > 1.0 ? 1.0 : f < 0.0 ? 0.0 : f;
	return (uint64_t)(f * 2.0 * (double)RTE_MIN(ep->ei->target_delay, ep->ei->tsc_hz));
}

/*
 * Additive increase below the target delay (by @p acked frames until the first decrease,
 * then by one frame per window), multiplicative decrease above, at most once per RTT.
 */
static inline void
eth_cc_update(struct eth_ep *ep, uint64_t rtt, uint32_t acked, uint64_t now)
{
	uint64_t target;

	if (ep->min_rtt == 0 || rtt < ep->min_rtt)
		ep->min_rtt = RTE_MAX(rtt, (uint64_t)1);
	target = 2 * ep->min_rtt + ep->ei->target_delay;
	if (rtt > target)   /* the scaling is >= 0: only a sample above the base can exceed */
		target += eth_cc_flow_scaling(ep);
	if (rtt <= target) {
		ep->cwnd += ep->last_decrease == 0 ? acked : (double)acked / ep->cwnd;
	} else if (now - ep->last_decrease >= ep->srtt) {
		double f = 1.0 - 0.5 * (double)(rtt - target) / (double)rtt;

		ep->cwnd *= RTE_MAX(f, 0.5);
		ep->last_decrease = now;
		ep->ei->st.cc_decreases++;
	}
	ep->cwnd = RTE_MIN(ep->cwnd, (double)ETH_WIN);
	ep->cwnd = RTE_MAX(ep->cwnd, ETH_MIN_CWND);
}

/*
 * An ack that acknowledged @p acked frames and echoed a frame whose round trip had @p path
 * cycles on the path (path_rtt() in ethdev.c: 0 when the peer's hold time covered the whole
 * sample, which then says nothing about the queueing and leaves min RTT and the decision
 * alone).  Over af_xdp on a veth 11 acks in 12 (1 MiB tag_bw) and 3090 of 3099 (a 64 KiB
 * stream) were such host-time samples, and when only the frames the others acknowledged
 * counted, the window grew by a twelfth of what was acked (tag_bw) or stayed at its initial
 * 16 frames for most of the stream.  Now the frames a host-time ack acknowledged count: at
 * once in slow start (nothing has shown queueing yet), else toward the increase the next
 * sample of the path decides (one frame per window below the target; dropped above it).
 */
static inline void
eth_cc_credit(struct eth_ep *ep, uint32_t acked)
{
	if (ep->last_decrease == 0)
		ep->cwnd = RTE_MIN(ep->cwnd + acked, (double)ETH_WIN);
	else   /* at most a window's worth: the next path sample adds at most one frame */
		ep->cc_acked = RTE_MIN(ep->cc_acked + acked, (uint32_t)ep->cwnd + 1);
}

static inline void
eth_cc_ack(struct eth_ep *ep, uint64_t path, uint32_t acked, uint64_t now)
{
	if (path != 0) {
		ep->ei->st.cc_samples++;
		eth_cc_update(ep, path, ep->cc_acked + acked, now);
		ep->cc_acked = 0;
		return;
	}
	ep->ei->st.cc_host_samples++;
	eth_cc_credit(ep, acked);
}

/*
 * The window's share of a frame that echoed our TSC @p echo: only a fresh echo is a sample,
 * one newer than any the window has used, or the newest again in an ack of new frames (the
 * frames of one poll share their stamp: a later one of them acknowledged is a new
 * measurement).  The peer echoes its latest frame from us in every frame it sends, however
 * old: the side that pulls a 1 MiB message by get sends 2 frames per MiB and read about 30
 * echoes of each, milliseconds old, as RTT samples (srtt 3-6 ms, 4-18 decreases a run, its
 * window at 8-16 frames).  A stale echo still credits the frames its ack acknowledged (as a
 * host-time one does); the RTO takes every sample (ethdev.c).
 */
static inline void
eth_cc_echo(struct eth_ep *ep, uint64_t echo, uint64_t path, uint32_t acked, uint64_t now)
{
	if (echo > ep->cc_echo || (echo == ep->cc_echo && acked != 0)) {
		ep->cc_echo = echo;
		eth_cc_ack(ep, path, acked, now);
		return;
	}
	ep->ei->st.cc_stale_samples++;
	eth_cc_credit(ep, acked);
}

#endif /* UNIO_ETHDEV_PRIV_H */
