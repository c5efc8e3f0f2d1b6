/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ethdev driver: reliable, congestion-controlled messages in UDP/IPv4 frames over any
 * DPDK poll-mode port.  One iface = one port with one rx/tx queue pair, progressed by one
 * worker.  An ep is a connection to a peer iface (MAC, IPv4, UDP port, connection id); it
 * keeps a window of sent frames until they are acknowledged (cumulative ack + 64-bit SACK),
 * retransmits SACK holes and on timeouts (exponential back-off), suppresses duplicates,
 * reorders, reassembles fragments and delivers messages in order.  The send window is the
 * smaller of a delay-driven congestion window (RTT from TSC stamps echoed in acks) and the
 * receiver's credit.  See doc/guides/drivers/ethdev.md.
 */

#include <arpa/inet.h>
#include <assert.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_random.h>
#include <rte_ring.h>

#include "ethdev_priv.h"

RTE_LOG_REGISTER(ethdev_logtype, unio.drv.ethdev, WARNING);

static_assert((ETH_L2L3L4 + sizeof(struct eth_wire)) % 8 == 0, "payload alignment");

#define ETH_DUP_THRESH     3u
#define ETH_TO_RETX        8u      /* frames sent again on a timeout */
#define ETH_PROBE_RETX     4u      /* frames sent again by a probe */
#define ETH_IDLE_POLLS     16u     /* idle progress calls before the CPU is given away */
#define ETH_CLOCK_POLLS    8u      /* an empty progress call reads the clock once in this many */
#define ETH_MAX_FRAGS      ((ETH_MAX_MSG + 511u) / 512u + 1u)

static const struct unio_tl_driver eth_driver;

static inline int32_t
seq_diff(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b);
}

/*
 * Cycles from @p t to @p now, 0 when @p t is later: a frame sent from a callback during a
 * progress call carries a later stamp than the @p now that call took at its start.
 */
static inline uint64_t
tsc_since(uint64_t now, uint64_t t)
{
	return now > t ? now - t : 0;
}

/*
 * TSC cycles as microseconds for the wire, saturated to 16 bits (65 ms): a multiplication by
 * 2^32 us per TSC cycle, in integers (below the saturation the product fits 64 bits).
 */
static inline uint16_t
tsc_to_us(const struct eth_iface *ei, uint64_t cycles)
{
	if (unlikely(cycles >= ei->tsc_us_max))
		return UINT16_MAX;
	return (uint16_t)((cycles * ei->us_per_tsc_q32) >> 32);
}

static inline struct eth_iface *
to_ei(struct unio_tl_iface *iface)
{
	return (struct eth_iface *)iface;
}

static inline struct eth_wire *
frame_wire(struct rte_mbuf *m)
{
	return rte_pktmbuf_mtod_offset(m, struct eth_wire *, ETH_L2L3L4);
}

/*
 * Free the frames progress calls let go (frame_free(): received ones, acked ones), at the
 * end of a call or in the next one that reads nothing (eth_progress()): a frame that is no
 * longer referenced goes to the iface's stash, where the next sends take it, and when the
 * stash is full its newer half goes back to the pool in one rte_mempool_put_bulk() (one
 * look-up of the lcore's mempool cache per ETH_STASH / 2 frames, not one per call).
 */
static __rte_noinline void
stash_spill(struct eth_iface *ei)
{
	ei->n_stash = ETH_STASH / 2;
	rte_mempool_put_bulk(ei->mp, (void **)&ei->stash[ETH_STASH / 2], ETH_STASH / 2);
}

/* Put @p m, a free direct mbuf of the iface's pool (one segment, one reference), in the stash. */
static __rte_always_inline void
stash_put(struct eth_iface *ei, struct rte_mbuf *m)
{
	if (unlikely(ei->n_stash == ETH_STASH))
		stash_spill(ei);
	ei->stash[ei->n_stash++] = m;
}

static void
frames_free(struct eth_iface *ei)
{
	for (unsigned int i = 0; i < ei->n_free; i++) {
		struct rte_mbuf *m = ei->to_free[i];

		if (unlikely(m->nb_segs != 1 || m->pool != ei->mp || !RTE_MBUF_DIRECT(m))) {
			rte_pktmbuf_free(m);   /* chains (zero copy), another pool, attached */
			continue;
		}
		/*
		 * rte_pktmbuf_prefree_seg() of a direct mbuf of one segment (whose next is NULL):
		 * the last reference makes it free, one reference as a pool's mbufs keep
		 */
		if (rte_mbuf_refcnt_read(m) != 1) {
			if (rte_mbuf_refcnt_update(m, -1) != 0)
				continue;     /* still referenced (the PMD's, the window's) */
			rte_mbuf_refcnt_set(m, 1);
		}
		stash_put(ei, m);
	}
	ei->n_free = 0;
}

/*
 * An mbuf of the iface's pool for a new frame: one a progress call freed (no mempool
 * operation, no look-up of the lcore's mempool cache), else one of ETH_STASH / 2 taken from
 * the pool together.  It is a free mbuf (one reference, one segment, no next: what DPDK
 * keeps true of every mbuf in a pool and rte_pktmbuf_prefree_seg() of the ones it returns),
 * not reset: wire_init() lays it out.
 */
static inline struct rte_mbuf *
frame_alloc(struct eth_iface *ei)
{
	if (unlikely(ei->n_stash == 0)) {
		if (rte_mempool_get_bulk(ei->mp, (void **)ei->stash, ETH_STASH / 2) != 0)
			return rte_pktmbuf_alloc(ei->mp);     /* fewer left: NULL when none */
		ei->n_stash = ETH_STASH / 2;
	}
	return ei->stash[--ei->n_stash];
}

/* Give back a frame frame_alloc() returned and nothing used. */
static __rte_noinline __rte_cold void
frame_unalloc(struct eth_iface *ei, struct rte_mbuf *m)
{
	if (ei->n_stash < ETH_STASH)
		ei->stash[ei->n_stash++] = m;
	else
		rte_pktmbuf_free(m);
}

/*
 * Let go of @p m: a frame nothing else references (a received one; a sent one the PMD
 * released before its ack came, as memif, af_packet and af_xdp do at transmission) goes to
 * the stash at once, where the next send takes it: a few compares and a store, where the
 * deferred free (to_free, frames_free()) costs a store now and a pass later.  Chains (zero
 * copy), attached mbufs, another pool's and frames still referenced wait for the end of the
 * progress call (frames_free()).  Only the receive path calls this, inside eth_progress()
 * (ack_input(), delivery).
 */
static inline void
frame_free(struct eth_iface *ei, struct rte_mbuf *m)
{
	RTE_ASSERT(ei->in_progress);
	if (likely(m->nb_segs == 1 && rte_mbuf_refcnt_read(m) == 1 && m->pool == ei->mp &&
		   RTE_MBUF_DIRECT(m))) {
		stash_put(ei, m);
		return;
	}
	if (unlikely(ei->n_free == ETH_FREE_MAX))
		frames_free(ei);
	ei->to_free[ei->n_free++] = m;
}

/* ---- acknowledgements and the frames that carry them ---- */

/*
 * Lengths and checksums of a frame built from a template whose IPv4 header (length, id and
 * checksum 0) sums to @p ip_sum; @p l4_payload follows UDP.
 */
static __rte_always_inline void
frame_finish(struct eth_iface *ei, uint16_t ip_sum, struct rte_mbuf *m, uint16_t l4_payload)
{
	struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *,
							   sizeof(struct rte_ether_hdr));
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	ip->total_length = rte_cpu_to_be_16((uint16_t)(sizeof(*ip) + sizeof(*udp) + l4_payload));
	ip->packet_id = rte_cpu_to_be_16(ei->ip_id++);
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(sizeof(*udp) + l4_payload));
	udp->dgram_cksum = 0;
	if (ei->tx_csum) {
		ip->hdr_checksum = 0;
		m->l2_len = sizeof(struct rte_ether_hdr);
		m->l3_len = sizeof(*ip);
		m->ol_flags = RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM | RTE_MBUF_F_TX_UDP_CKSUM;
		udp->dgram_cksum = rte_ipv4_phdr_cksum(ip, m->ol_flags);
		return;
	}
	ip->hdr_checksum = eth_ip_cksum_patch(ip_sum, ip->total_length, ip->packet_id);
	/* shared memory cannot corrupt a frame: no UDP checksum (0, RFC 768) */
	if (ei->no_udp_csum)
		return;
	udp->dgram_cksum = m->nb_segs == 1 ? eth_udp_cksum(ip, udp) :
			   rte_ipv4_udptcp_cksum_mbuf(m, ip, sizeof(struct rte_ether_hdr) +
						      sizeof(*ip));
}

static uint64_t
build_sack(const struct eth_ep *ep)
{
	uint64_t sack = 0;

	if (ep->n_ooo == 0)
		return 0;
	for (uint32_t i = 0; i < 64; i++)
		if (ep->rcv[(ep->rcv_nxt + 1 + i) % ETH_WIN] != NULL)
			sack |= 1ull << i;
	return sack;
}

/*
 * Fill the ack fields of an outgoing frame and compute its checksums; it carries @p tsc for
 * the peer to echo (0: not timed, eth_frame_tsc()).  A @p fresh frame was laid out from the
 * ep's template (wire_init()), which holds the connection ids as they are now; a copy of an
 * older one (retransmit()) gets them anew: it may have been sent before we knew the peer's
 * id, or before this ep joined the peer's dial.
 */
static __rte_always_inline void
stamp(struct eth_ep *ep, struct rte_mbuf *m, uint64_t now, uint64_t tsc, bool fresh)
{
	struct eth_wire *w = frame_wire(m);

	if (!fresh) {
		w->dst_conn = ep->peer.conn;
		w->dial = ep->dial;
	}
	w->ack = ep->rcv_nxt;
	w->sack = build_sack(ep);
	w->credit = (uint16_t)(ETH_WIN - ep->n_ooo);
	w->tsc = tsc;
	w->tsc_echo = ep->echo_tsc;
	w->echo_delay = ep->echo_tsc == 0 ? 0 : tsc_to_us(ep->ei, tsc_since(now, ep->echo_rx));
	if (ep->ack_pending) {          /* this frame carries the ack it owed */
		ep->ack_pending = false;
		ep->n_unacked = 0;
		if (--ep->ei->n_ack_owed == 0)
			ep->ei->ack_next = UINT64_MAX;
	}
	frame_finish(ep->ei, ep->ip_sum, m, (uint16_t)(sizeof(*w) + w->len));
}

/*
 * What rx_fast() compares of a received frame's first 64 bytes, as 8-byte little-endian
 * words: the fields that are the same in every frame of a connection, as the peer's
 * template (tmpl_build()) writes them.  Left out: the source MAC (a router's on a routed
 * path), TOS and TTL, the lengths, the IPv4 id and both checksums (checked by rx_fast()),
 * and the fields of the Unio header that change from frame to frame.
 */
static const uint64_t rx_mask[ETH_RX_WORDS] __rte_aligned(16) = {
	0x0000ffffffffffffull,  /* destination MAC | source MAC */
	0x00ffffff00000000ull,  /* source MAC | EtherType, version and header length | TOS */
	0xff00ffff00000000ull,  /* length, id | fragment field | TTL | protocol */
	0xffffffffffff0000ull,  /* checksum | source address, destination address */
	0x0000ffffffffffffull,  /* destination address, ports | UDP length */
	0x00000000ffff0000ull,  /* UDP checksum | magic, version | type, flags, AM id, rsvd */
	0xffff000000000000ull,  /* len, credit, echo_delay | dst_conn */
	0x0000ffffffffffffull,  /* dst_conn, src_conn | seq */
};

static_assert(sizeof(rx_mask) == 64 && sizeof(rx_mask) <= ETH_HDRS, "rx_fast() words");

/*
 * ep->rx_tmpl: rx_mask's bytes of a frame from the peer (its IPv4 address, UDP port and
 * connection id) to this iface; built with the send template and again whenever the peer's
 * connection id or the dial id changes, which it also writes into the send template.  While
 * the peer's id is unknown (0: a dial not answered yet) a word has a bit set outside its
 * mask, which no frame matches: the full parser takes every frame.
 */
static void
rx_tmpl_build(struct eth_ep *ep)
{
	const struct eth_iface *ei = ep->ei;
	uint8_t b[sizeof(ep->rx_tmpl)] __rte_aligned(8);
	struct rte_ether_hdr *eh = (struct rte_ether_hdr *)b;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eh + 1);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
	struct eth_wire *w = (struct eth_wire *)(udp + 1);

	RTE_BUILD_BUG_ON(offsetof(struct eth_wire, src_conn) + sizeof(w->src_conn) >
			 sizeof(b) - ETH_L2L3L4);
	memset(b, 0, sizeof(b));
	rte_ether_addr_copy(&ei->addr.mac, &eh->dst_addr);
	eh->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = ep->peer.ip;
	ip->dst_addr = ei->addr.ip;
	udp->src_port = ep->peer.udp_port;
	udp->dst_port = ei->addr.udp_port;
	b[ETH_L2L3L4 + offsetof(struct eth_wire, magic)] = ETH_MAGIC;
	b[ETH_L2L3L4 + offsetof(struct eth_wire, version)] = ETH_VERSION;
	memcpy(b + ETH_L2L3L4 + offsetof(struct eth_wire, dst_conn), &ei->addr.conn,
	       sizeof(ei->addr.conn));
	memcpy(b + ETH_L2L3L4 + offsetof(struct eth_wire, src_conn), &ep->peer.conn,
	       sizeof(ep->peer.conn));
	memcpy(ep->rx_tmpl, b, sizeof(b));
	memcpy(ep->hdr_tmpl + ETH_L2L3L4 + offsetof(struct eth_wire, dst_conn), &ep->peer.conn,
	       sizeof(ep->peer.conn));
	memcpy(ep->hdr_tmpl + ETH_L2L3L4 + offsetof(struct eth_wire, dial), &ep->dial,
	       sizeof(ep->dial));
	ep->rx_ip_addrs = (uint64_t)ip->src_addr + ip->dst_addr;
	for (unsigned int i = 0; i < ETH_RX_WORDS; i++)
		ep->rx_tmpl[i] &= rx_mask[i];
	if (ep->peer.conn == 0)
		ep->rx_tmpl[0] |= ~rx_mask[0];
}

/*
 * The ep's header template (ep->hdr_tmpl, ep->ip_sum): built when the ep is and again when
 * the peer's MAC becomes known.  The peer's connection id and the dial id, which can change
 * later, are kept current in it by rx_tmpl_build().
 */
static void
tmpl_build(struct eth_ep *ep)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(ep->hdr_tmpl +
							  sizeof(struct rte_ether_hdr));
	struct eth_wire *w = (struct eth_wire *)(ep->hdr_tmpl + ETH_L2L3L4);

	eth_hdr_template(ep->ei, &ep->peer, ep->hdr_tmpl);
	ep->ip_sum = eth_ip_cksum(ip);
	memset(w, 0, sizeof(*w));
	w->magic = ETH_MAGIC;
	w->version = ETH_VERSION;
	w->type = ETH_FT_DATA;
	w->src_conn = ep->ei->addr.conn;
	rx_tmpl_build(ep);
}

/*
 * Lay out headers for @p len payload bytes in the empty mbuf @p m: the template, then what
 * differs from frame to frame (stamp() does the rest); NULL when too long.
 */
static __rte_always_inline struct eth_wire *
wire_init(struct eth_ep *ep, struct rte_mbuf *m, uint8_t type, uint16_t len)
{
	uint16_t flen = (uint16_t)(ETH_HDRS + len);
	struct eth_wire *w;
	uint8_t *p;

	/*
	 * What rte_pktmbuf_reset() and rte_pktmbuf_append() would leave in a free mbuf of one
	 * segment (frame_alloc()), less the fields a frame never uses (port, VLAN tags)
	 */
	if (unlikely(flen > m->buf_len - RTE_PKTMBUF_HEADROOM))
		return NULL;
	m->data_off = RTE_PKTMBUF_HEADROOM;
	m->data_len = flen;
	m->pkt_len = flen;
	m->ol_flags = 0;
	m->tx_offload = 0;
	m->packet_type = 0;
	p = rte_pktmbuf_mtod(m, uint8_t *);
	memcpy(p, ep->hdr_tmpl, ETH_HDRS);
	w = (struct eth_wire *)(p + ETH_L2L3L4);
	w->type = type;
	w->len = len;
	w->seq = ep->snd_nxt;
	return w;
}

static struct rte_mbuf *
frame_new(struct eth_ep *ep, uint8_t type, uint16_t len)
{
	struct rte_mbuf *m = frame_alloc(ep->ei);

	if (m == NULL) {
		ep->ei->st.tx_no_mbuf++;
		return NULL;
	}
	if (wire_init(ep, m, type, len) == NULL) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	return m;
}

static void
send_ack(struct eth_ep *ep, uint64_t now)
{
	struct rte_mbuf *m;

	if (eth_txq_room(ep->ei) == 0)
		return;
	m = frame_new(ep, ETH_FT_ACK, 0);
	if (m == NULL)
		return;
	stamp(ep, m, now, now, true);
	eth_txq_push(ep->ei, m);
	ep->ei->st.tx_acks++;
}

/*
 * Note that @p ep owes its peer an ack (n_ack_owed counts the eps that do; a frame that
 * carries the ack, stamp(), settles it), and keep ack_next no later than the earliest moment
 * one of them may be due (eth_ack_due()): 0 when one is due now.  A frame's arrival only
 * moves its ep's moment later (ack_last) or to now (the frame count, frames out of order
 * here or in data_input()), so the bound stays true until send_acks() computes it again;
 * once no ep owes an ack it is UINT64_MAX.
 */
static __rte_always_inline void
want_ack(struct eth_ep *ep, uint64_t now)
{
	struct eth_iface *ei = ep->ei;

	ep->ack_last = now;
	if (unlikely(++ep->n_unacked >= ETH_ACK_EVERY || ep->n_ooo != 0))
		ei->ack_next = 0;
	if (!ep->ack_pending) {
		ep->ack_pending = true;
		ep->ack_since = now;
		ei->n_ack_owed++;
		if (now + ei->ack_delay < ei->ack_next)
			ei->ack_next = now + ei->ack_delay;
	}
}

/*
 * Stand-alone acks of the eps that owe one and whose ack is due (eth_ack_due()), and the
 * earliest moment one of the others will be (ack_next); a walk of the peers, which runs only
 * once that moment came.  An ack that found no room in the tx queue is tried again by the
 * next call.
 */
static __rte_noinline void
send_acks(struct eth_iface *ei, uint64_t now)
{
	uint64_t next = UINT64_MAX;

	for (unsigned int i = 0; i < ei->n_peers; i++) {
		struct eth_ep *ep = ei->peers[i];

		if (!ep->ack_pending || ep->failed)
			continue;
		if (eth_ack_due(ep, now)) {
			send_ack(ep, now);
			if (!ep->ack_pending)
				continue;
			next = 0;
		} else {
			uint64_t due = RTE_MIN(ep->ack_last + ei->ack_delay,
					       ep->ack_since + ei->ack_max);

			next = RTE_MIN(next, due);
		}
	}
	ei->ack_next = next;
}

/* ---- completions and failure ---- */

static void
comps_complete(struct eth_ep *ep, bool all, unio_status_t st)
{
	unsigned int i, j = 0;

	for (i = 0; i < ep->n_comps; i++) {
		struct eth_comp c = ep->comps[i];

		if (all || seq_diff(ep->snd_una, c.seq) >= 0)
			unio_tl_completion_done(c.comp, st);
		else
			ep->comps[j++] = c;
	}
	ep->n_comps = j;
}

static void
snd_release(struct eth_ep *ep)
{
	if (ep->lossless) {     /* nothing kept: what went before the switch was all acked */
		ep->snd_una = ep->snd_nxt;
		return;
	}
	for (; ep->snd_una != ep->snd_nxt; ep->snd_una++) {
		struct eth_slot *s = &ep->snd[ep->snd_una % ETH_WIN];

		rte_pktmbuf_free(s->m);
		s->m = NULL;
	}
}

static void
ep_fail(struct eth_ep *ep, unio_status_t st)
{
	struct eth_iface *ei = ep->ei;

	char ip[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &ep->peer.ip, ip, sizeof(ip));
	if (st == UNIO_ERR_CONNECTION_RESET)   /* the peer dialled again: told by err_cb */
		ETH_LOG(INFO, "%s: peer %s:%u opened a new connection: ep reset",
			ei->super.dev_name, ip, rte_be_to_cpu_16(ep->peer.udp_port));
	else
		ETH_LOG(ERR, "%s: peer %s:%u %s: ep failed", ei->super.dev_name, ip,
			rte_be_to_cpu_16(ep->peer.udp_port),
			ep->resolving ? "did not answer ARP" : "silent after too many timeouts");
	ep->failed = true;
	ep->fail_status = st;
	ei->st.ep_failures++;
	snd_release(ep);
	comps_complete(ep, true, st);
	eth_rma_cancel(ep, st);
	if (ep->user_owned && ei->super.err_cb != NULL) {
		struct eth_ep_alias *a, **pp;

		/*
		 * An error handler may close any endpoint, this one's siblings and the last
		 * handle too: while reporting, eth_ep_destroy() only marks handles gone, and
		 * the connection is freed by the next timer pass, never under our callers.
		 */
		ep->reporting = true;
		for (a = ep->aliases; a != NULL; a = a->next)
			if (!a->gone)
				ei->super.err_cb(ei->super.err_arg, &a->super, st);
		if (!ep->released)
			ei->super.err_cb(ei->super.err_arg, &ep->super, st);
		ep->reporting = false;
		for (pp = &ep->aliases; (a = *pp) != NULL;) {
			if (a->gone) {
				*pp = a->next;
				free(a);
			} else {
				pp = &a->next;
			}
		}
		ep->doomed = ep->released && ep->aliases == NULL;
	}
}

/* ---- send side ---- */

static void
retransmit(struct eth_ep *ep, uint32_t seq, uint64_t now)
{
	struct eth_iface *ei = ep->ei;
	struct eth_slot *s = &ep->snd[seq % ETH_WIN];
	struct rte_mbuf *c;

	if (eth_txq_room(ei) == 0)
		return;
	c = rte_pktmbuf_copy(s->m, ei->mp, 0, UINT32_MAX);
	if (c == NULL) {
		ei->st.tx_no_mbuf++;
		return;
	}
	stamp(ep, c, now, now, false);   /* always timed: Eifel (ack_input()) reads its echo */
	eth_txq_push(ei, c);
	s->tx_tsc = now;
	s->nretx++;
	ei->st.tx_retx++;
	ei->st.tx_retx_bytes += s->len;
}

/* Count a send refused for want of room, by the first limit that refused it. */
static __rte_noinline __rte_cold void
send_refused(struct eth_ep *ep, uint32_t nfr)
{
	struct unio_tl_ethdev_stats *st = &ep->ei->st;
	uint32_t inflight = ep->snd_nxt - ep->snd_una;

	if (ep->resolving)
		return;
	if (inflight >= (uint32_t)ep->cwnd && (uint32_t)ep->cwnd < ETH_WIN)
		st->tx_refused_cwnd++;
	else if (inflight + nfr > ETH_WIN || inflight >= ETH_WIN)
		st->tx_refused_window++;
	else if (seq_diff(ep->peer_edge, ep->snd_nxt + nfr) < 0)
		st->tx_refused_credit++;
	else
		st->tx_refused_txq++;
}

/* Room for @p nfr frames now?  A refusal is counted (send_refused()). */
static inline bool
can_send(struct eth_ep *ep, uint32_t nfr)
{
	uint32_t inflight = ep->snd_nxt - ep->snd_una;
	uint32_t lim = RTE_MIN((uint32_t)ep->cwnd, ETH_WIN);

	if (likely(!ep->resolving && inflight < lim && inflight + nfr <= ETH_WIN &&
		   seq_diff(ep->peer_edge, ep->snd_nxt + nfr) >= 0 &&
		   eth_txq_room(ep->ei) >= nfr + 1))
		return true;
	send_refused(ep, nfr);
	return false;
}

/*
 * Room for @p nfr frames of @p ep now: on a lossless ep only the tx queue's (the PMD's ring
 * refuses what it cannot take, the queue keeps it), else can_send().  @p ll: the iface is
 * lossless (a constant where the caller is specialised: the other PMDs' paths keep no test).
 */
static __rte_always_inline bool
room_to_send(struct eth_ep *ep, uint32_t nfr, bool ll)
{
	if (!ll || !ep->lossless)
		return can_send(ep, nfr);
	if (likely(eth_txq_room(ep->ei) >= nfr + 1))
		return true;
	ep->ei->st.tx_refused_txq++;
	return false;
}

/* A position in an iovec array. */
struct iov_cursor {
	const struct iovec *iov;
	size_t cnt, vi, off;
};

static void
iov_copy(struct iov_cursor *c, uint8_t *d, size_t len)
{
	while (len != 0) {
		size_t n = RTE_MIN(len, c->iov[c->vi].iov_len - c->off);

		memcpy(d, (const uint8_t *)c->iov[c->vi].iov_base + c->off, n);
		d += n;
		len -= n;
		c->off += n;
		if (c->off == c->iov[c->vi].iov_len && c->vi + 1 < c->cnt) {
			c->vi++;
			c->off = 0;
		}
	}
}

/*
 * Keep @p m (a new frame: every segment has one reference) in the send window, with one
 * more reference for the wire.
 */
static __rte_always_inline void
frame_keep(struct eth_ep *ep, struct rte_mbuf *m, uint16_t len, uint64_t now)
{
	struct eth_slot *s = &ep->snd[ep->snd_nxt % ETH_WIN];

	stamp(ep, m, now, eth_frame_tsc(ep, now), true);
	if (likely(m->next == NULL))
		rte_mbuf_refcnt_set(m, 2);
	else
		rte_pktmbuf_refcnt_update(m, 1);   /* every segment: the window keeps the chain */
	s->m = m;
	s->tx_tsc = now;
	s->len = len;
	s->sacked = 0;
	s->nretx = 0;
	ep->snd_nxt++;
	ep->ei->st.tx_data++;
	ep->ei->st.tx_data_bytes += len;
}

/*
 * The time a send stamps: inside a progress call (a reply from a handler) the clock that call
 * read, which is at most that call old; else the TSC, read here (15-45 ns on this VM).
 */
static inline uint64_t
send_clock(struct eth_iface *ei)
{
	if (ei->in_progress)
		return ei->now;
	ei->now = rte_rdtsc();   /* what an empty poll after this send takes as its time */
	return ei->now;
}

/*
 * A new frame @p m of a lossless ep: its ack fields (the peer may still keep a window and
 * time its frames, so credit and echo go as always), untimed, counted, and not kept: the
 * PMD owns it once it takes it.  The clock is read only to tell the peer how long we held
 * a timed frame of its (echo_delay): a lossless peer times none.
 */
static __rte_always_inline void
frame_untracked(struct eth_ep *ep, struct rte_mbuf *m, uint16_t len)
{
	stamp(ep, m, ep->echo_tsc == 0 ? 0 : send_clock(ep->ei), 0, true);
	ep->snd_nxt++;
	ep->ei->st.tx_data++;
	ep->ei->st.tx_untracked++;
	ep->ei->st.tx_data_bytes += len;
}

/* Keep @p m in the send window (unless the ep is lossless) and queue it for the wire. */
static void
frame_commit(struct eth_ep *ep, struct rte_mbuf *m, uint16_t len, uint64_t now)
{
	if (ep->lossless)
		frame_untracked(ep, m, len);
	else
		frame_keep(ep, m, len, now);
	eth_txq_push(ep->ei, m);
}

/* Copy @p iov (total bytes) into frames and send them as one message. */
unio_status_t
eth_send_msg(struct eth_ep *ep, uint8_t id, const struct iovec *iov, size_t iovcnt, size_t total)
{
	struct eth_iface *ei = ep->ei;
	uint32_t nfr = total == 0 ? 1 : (uint32_t)((total + ei->frag - 1) / ei->frag);
	struct iov_cursor cur = { .iov = iov, .cnt = iovcnt };
	struct rte_mbuf *ms[ETH_MAX_FRAGS];
	size_t left = total;
	uint64_t now;

	if (unlikely(ep->failed))
		return ep->fail_status;
	if (!room_to_send(ep, nfr, true)) {
		eth_txq_flush(ei);
		return UNIO_ERR_NO_RESOURCE;
	}
	/*
	 * From the stash, where the acks' frees put the frames they let go: a stream of
	 * messages cycles its mbufs through it without a mempool operation (the pool's bulk
	 * allocation and the stash's spills cost 58 instructions a frame of a 1 MiB get answer)
	 */
	for (uint32_t f = 0; f < nfr; f++) {
		ms[f] = frame_alloc(ei);
		if (unlikely(ms[f] == NULL)) {
			while (f-- != 0)
				frame_unalloc(ei, ms[f]);
			ei->st.tx_no_mbuf++;
			return UNIO_ERR_NO_RESOURCE;
		}
	}
	now = send_clock(ei);
	for (uint32_t f = 0; f < nfr; f++) {
		uint16_t len = (uint16_t)RTE_MIN(left, (size_t)ei->frag);
		struct eth_wire *w = wire_init(ep, ms[f], ETH_FT_DATA, len);

		RTE_VERIFY(w != NULL);     /* frag + headers fit the data room (iface_frag) */
		w->flags = (uint8_t)((f == 0 ? ETH_FF_FIRST : 0) |
				     (f == nfr - 1 ? ETH_FF_LAST : 0));
		w->am_id = id;
		w->msg_len = (uint32_t)total;
		iov_copy(&cur, (uint8_t *)(w + 1), len);
		left -= len;
		frame_commit(ep, ms[f], len, now);
	}
	if (!ei->tx_batch)
		eth_txq_flush(ei);
	else if (ei->txq_head - ei->txq_tail >= ETH_BURST)
		eth_txq_flush_bursts(ei);
	return UNIO_OK;
}

/* ---- zero copy: frames whose payload segments are the user's memory ---- */

/*
 * Record @p z of @p set is free again (its message complete); a set its ep left behind goes
 * with its last record.
 */
static inline void
zc_put(struct eth_zc_set *set, struct eth_zc *z)
{
	z->comp = NULL;
	z->next_free = set->free;
	set->free = z;
	if (--set->busy == 0 && set->ep == NULL)
		free(set);
}

/*
 * The last frame referencing a zero-copy message was freed (acked and sent): its completion
 * is due, and runs at the end of the next progress call (zc_reported()).  This runs wherever
 * the frame is freed: in ack processing, and inside rte_eth_tx_burst() when the PMD copied it
 * (memif, af_packet), which may be a send of the user's (am_zcopy, put) in the middle of the
 * driver's work on that ep.
 */
static void
zc_done(void *addr, void *opaque)
{
	struct eth_zc *z = opaque;
	struct eth_zc_set *set = z->set;
	struct eth_ep *ep = set->ep;
	struct eth_iface *ei;

	RTE_SET_USED(addr);
	if (ep == NULL) {       /* the ep went while a PMD or the tx queue held the frames */
		struct unio_tl_completion *comp = z->comp;

		zc_put(set, z);
		unio_tl_completion_done(comp, UNIO_ERR_CANCELED);
		return;
	}
	ei = ep->ei;
	z->st = ep->failed ? ep->fail_status : UNIO_OK;
	z->next_free = NULL;
	*ei->zc_due_tail = z;
	ei->zc_due_tail = &z->next_free;
	set->due++;
	ei->n_zc_done++;        /* work the next progress call reports */
}

/*
 * What a progress call reports besides the frames it read: zero-copy sends it completed,
 * whose completions run here, in the order their frames were freed.  A completion may send
 * (frames freed then are appended and run in this loop), destroy its ep (the record's set
 * stays until its last record is back) or progress the iface again.
 */
static unsigned int
zc_reported(struct eth_iface *ei)
{
	unsigned int n = ei->n_zc_done;
	struct eth_zc *z;

	ei->n_zc_done = 0;
	while ((z = ei->zc_due) != NULL) {
		struct eth_zc_set *set = z->set;
		struct unio_tl_completion *comp = z->comp;
		unio_status_t st = z->st;

		ei->zc_due = z->next_free;
		if (ei->zc_due == NULL)
			ei->zc_due_tail = &ei->zc_due;
		set->due--;
		zc_put(set, z);
		unio_tl_completion_done(comp, st);
	}
	return n;
}

/* Chain @p len bytes at the cursor to @p h as external segments taken from @p segs. */
static void
zc_attach(struct eth_zc *z, struct rte_mbuf *h, struct iov_cursor *c, size_t len,
	  struct rte_mbuf **segs, unsigned int *used)
{
	while (len != 0) {
		size_t n = RTE_MIN(len, c->iov[c->vi].iov_len - c->off);
		uint8_t *a = (uint8_t *)c->iov[c->vi].iov_base + c->off;
		struct rte_mbuf *seg = segs[(*used)++];

		rte_mbuf_ext_refcnt_update(&z->shinfo, 1);
		rte_pktmbuf_attach_extbuf(seg, a, rte_eal_iova_mode() == RTE_IOVA_VA ?
					  (rte_iova_t)(uintptr_t)a : RTE_BAD_IOVA,
					  (uint16_t)n, &z->shinfo);
		seg->data_len = (uint16_t)n;
		seg->pkt_len = (uint32_t)n;
		RTE_VERIFY(rte_pktmbuf_chain(h, seg) == 0);
		len -= n;
		c->off += n;
		if (c->off == c->iov[c->vi].iov_len && c->vi + 1 < c->cnt) {
			c->vi++;
			c->off = 0;
		}
	}
}

/* Build frame @p f of a zero-copy message: headers + inline @p hdr, then user segments. */
static void
zc_frame(struct eth_ep *ep, struct eth_zc *z, struct rte_mbuf *h, uint8_t id,
	 const void *hdr, size_t hdr_len, struct iov_cursor *cur, size_t total, size_t off,
	 struct rte_mbuf **segs, unsigned int *used)
{
	uint16_t len = (uint16_t)RTE_MIN(total - off, (size_t)ep->ei->frag);
	uint16_t inl = (uint16_t)(off < hdr_len ? RTE_MIN(hdr_len - off, (size_t)len) : 0);
	struct eth_wire *w = wire_init(ep, h, ETH_FT_DATA, inl);

	RTE_VERIFY(w != NULL);
	memcpy(w + 1, (const uint8_t *)hdr + off, inl);
	w->flags = (uint8_t)((off == 0 ? ETH_FF_FIRST : 0) |
			     (off + len == total ? ETH_FF_LAST : 0));
	w->am_id = id;
	w->len = len;
	w->msg_len = (uint32_t)total;
	zc_attach(z, h, cur, len - inl, segs, used);
}

/*
 * Send hdr + iov with frames that point at the user's memory; comp runs from the progress
 * call after all are acked and freed.  UNIO_OK: the frames are gone already (comp is not
 * called); UNIO_INPROGRESS; UNIO_ERR_NO_RESOURCE (no record, window or mbufs: nothing sent).
 */
unio_status_t
eth_send_zc(struct eth_ep *ep, uint8_t id, const void *hdr, size_t hdr_len,
	    const struct iovec *iov, size_t iovcnt, size_t total, struct unio_tl_completion *comp)
{
	struct eth_iface *ei = ep->ei;
	uint32_t nfr = (uint32_t)((total + ei->frag - 1) / ei->frag);
	unsigned int nseg = nfr + (unsigned int)iovcnt, used = 0;
	struct rte_mbuf *hs[ETH_MAX_FRAGS], *segs[ETH_MAX_FRAGS + UNIO_TL_MAX_IOV];
	struct iov_cursor cur = { .iov = iov, .cnt = iovcnt };
	struct eth_zc *z = ep->zc->free;
	uint64_t now = rte_rdtsc();

	if (z == NULL || !room_to_send(ep, nfr, true) ||
	    rte_pktmbuf_alloc_bulk(ei->mp, hs, nfr) != 0)
		return UNIO_ERR_NO_RESOURCE;
	ei->now = now;
	if (rte_pktmbuf_alloc_bulk(ei->mp, segs, nseg) != 0) {
		rte_pktmbuf_free_bulk(hs, nfr);
		return UNIO_ERR_NO_RESOURCE;
	}
	ep->zc->free = z->next_free;
	ep->zc->busy++;
	z->comp = comp;
	z->shinfo.free_cb = zc_done;
	z->shinfo.fcb_opaque = z;
	rte_mbuf_ext_refcnt_set(&z->shinfo, 1);          /* ours while building */
	for (uint32_t f = 0; f < nfr; f++) {
		size_t off = (size_t)f * ei->frag;

		zc_frame(ep, z, hs[f], id, hdr, hdr_len, &cur, total, off, segs, &used);
		frame_commit(ep, hs[f], (uint16_t)RTE_MIN(total - off, (size_t)ei->frag), now);
	}
	if (used < nseg)
		rte_pktmbuf_free_bulk(segs + used, nseg - used);
	ei->st.tx_zcopy++;
	eth_txq_flush(ei);
	/*
	 * Our reference goes last: on a lossless ep no window holds the frames, and a PMD that
	 * copied them all (memif) has let them go already; the message is then complete, the
	 * user's memory free again, and the call says so (the completion is not called)
	 */
	if (rte_mbuf_ext_refcnt_update(&z->shinfo, -1) == 0) {
		zc_put(ep->zc, z);
		return UNIO_OK;
	}
	return UNIO_INPROGRESS;
}

/* Frames of our puts and get requests still wait: an AM sent now would overtake them. */
static inline bool
rma_blocks(struct eth_ep *ep)
{
	if (likely(ep->rma == NULL) || ep->rma->n_own == 0)
		return false;
	eth_rma_drain(ep);
	return ep->rma->n_own != 0;
}

/*
 * Send a lossless ep's new frame @p m (@p len payload bytes).  With nothing queued before it,
 * straight to the PMD holding a second reference: memif has copied the frame into the ring
 * when rte_eth_tx_burst() returns and dropped its reference, so the frame goes back to the
 * stash at once, where the window kept it until the peer's ack came; a PMD that still holds
 * it (memif's zero-copy mode) frees it later.
 */
static __rte_always_inline unio_status_t
send_untracked(struct eth_ep *ep, struct rte_mbuf *m, uint16_t len)
{
	struct eth_iface *ei = ep->ei;

	frame_untracked(ep, m, len);
	if (unlikely(ei->txq_head != ei->txq_tail)) {   /* (a lossless iface has no inbox) */
		eth_txq_push(ei, m);
		eth_txq_flush(ei);
		return UNIO_OK;
	}
	ei->st.tx_bursts++;
	rte_mbuf_refcnt_set(m, 2);
	if (unlikely(rte_eth_tx_burst(ei->port_id, ei->queue, &m, 1) != 1)) {
		rte_mbuf_refcnt_set(m, 1);
		eth_txq_push(ei, m);   /* refused: the next flush retries it */
		return UNIO_OK;
	}
	ei->st.tx_frames++;
	if (likely(rte_mbuf_refcnt_read(m) == 1)) {
		stash_put(ei, m);
	} else {
		rte_pktmbuf_free(m);   /* the PMD's reference remains */
	}
	return UNIO_OK;
}

/* eth_send_msg() of a message that fits one frame: @p hdr and @p len bytes of @p payload. */
static __rte_always_inline unio_status_t
send_short(struct eth_ep *ep, uint8_t id, uint64_t hdr, const void *payload, size_t len, bool ll)
{
	struct eth_iface *ei = ep->ei;
	uint16_t plen = (uint16_t)(sizeof(hdr) + len);
	struct rte_mbuf *m;
	struct eth_wire *w;
	uint8_t *d;

	if (unlikely(ep->failed))
		return ep->fail_status;
	if (!room_to_send(ep, 1, ll)) {
		eth_txq_flush(ei);
		return UNIO_ERR_NO_RESOURCE;
	}
	m = frame_alloc(ei);
	if (unlikely(m == NULL)) {
		ei->st.tx_no_mbuf++;
		return UNIO_ERR_NO_RESOURCE;
	}
	w = wire_init(ep, m, ETH_FT_DATA, plen);
	RTE_VERIFY(w != NULL);
	w->flags = ETH_FF_FIRST | ETH_FF_LAST;
	w->am_id = id;
	w->msg_len = plen;
	d = (uint8_t *)(w + 1);
	memcpy(d, &hdr, sizeof(hdr));
	if (len != 0)
		memcpy(d + sizeof(hdr), payload, len);
	if (ll && ep->lossless)
		return send_untracked(ep, m, plen);
	frame_keep(ep, m, plen, send_clock(ei));
	/* nothing queued before it and no port sibling to hand it to: straight to the PMD */
	if (likely(ei->inbox == NULL && ei->txq_head == ei->txq_tail)) {
		ei->st.tx_bursts++;
		if (likely(rte_eth_tx_burst(ei->port_id, ei->queue, &m, 1) == 1)) {
			ei->st.tx_frames++;
			return UNIO_OK;
		}
		eth_txq_push(ei, m);   /* refused: the next flush retries it */
		return UNIO_OK;
	}
	eth_txq_push(ei, m);
	eth_txq_flush(ei);
	return UNIO_OK;
}

/* am_short of a message of more than one frame (a port with a small MTU) */
static __rte_noinline unio_status_t
send_short_frags(struct eth_ep *ep, uint8_t id, uint64_t hdr, const void *payload, size_t len)
{
	struct iovec iov[2] = {
		{ .iov_base = &hdr, .iov_len = sizeof(hdr) },
		{ .iov_base = (void *)(uintptr_t)payload, .iov_len = len },
	};

	return eth_send_msg(ep, id, iov, len != 0 ? 2 : 1, sizeof(hdr) + len);
}

static __rte_always_inline unio_status_t
am_short(struct unio_tl_ep *tep, uint8_t id, uint64_t hdr, const void *payload, size_t len,
	 bool ll)
{
	struct eth_ep *ep = eth_ep_of(tep);

	if (rma_blocks(ep))
		return UNIO_ERR_NO_RESOURCE;
	if (likely(sizeof(hdr) + len <= ep->ei->frag))
		return send_short(ep, id, hdr, payload, len, ll);
	return send_short_frags(ep, id, hdr, payload, len);
}

static unio_status_t
eth_am_short(struct unio_tl_ep *tep, uint8_t id, uint64_t hdr, const void *payload, size_t len)
{
	return am_short(tep, id, hdr, payload, len, false);
}

/* am_short of a lossless iface (eth_iface.lossless): its eps may be in the lossless mode */
static unio_status_t
eth_am_short_lossless(struct unio_tl_ep *tep, uint8_t id, uint64_t hdr, const void *payload,
		      size_t len)
{
	return am_short(tep, id, hdr, payload, len, true);
}

static ssize_t
eth_am_bcopy(struct unio_tl_ep *tep, uint8_t id, unio_tl_pack_cb_t pack, void *arg,
	     unsigned int flags)
{
	struct eth_ep *ep = eth_ep_of(tep);
	struct iovec iov;
	unio_status_t st;

	RTE_SET_USED(flags);
	if (unlikely(ep->failed))
		return ep->fail_status;
	if (rma_blocks(ep))
		return UNIO_ERR_NO_RESOURCE;
	if (!room_to_send(ep, ETH_MAX_MSG / ep->ei->frag + 1, true)) {
		eth_txq_flush(ep->ei);
		return UNIO_ERR_NO_RESOURCE;
	}
	iov.iov_base = ep->ei->scratch;
	iov.iov_len = pack(ep->ei->scratch, arg);
	RTE_VERIFY(iov.iov_len <= ETH_MAX_MSG);
	st = eth_send_msg(ep, id, &iov, 1, iov.iov_len);
	return st == UNIO_OK ? (ssize_t)iov.iov_len : st;
}

static unio_status_t
eth_am_zcopy(struct unio_tl_ep *tep, uint8_t id, const void *hdr, size_t hdr_len,
	     const struct iovec *iov, size_t iovcnt, unsigned int flags,
	     struct unio_tl_completion *comp)
{
	struct eth_ep *ep = eth_ep_of(tep);
	struct iovec v[UNIO_TL_MAX_IOV + 1];
	size_t total = hdr_len, n = 0;

	RTE_SET_USED(flags);
	if (rma_blocks(ep))
		return UNIO_ERR_NO_RESOURCE;
	for (size_t i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (comp != NULL && ep->ei->tx_multiseg && total - hdr_len >= ETH_ZCOPY_MIN &&
	    !ep->failed)
		return eth_send_zc(ep, id, hdr, hdr_len, iov, iovcnt, total, comp);
	total = hdr_len;
	if (hdr_len != 0)
		v[n++] = (struct iovec){ .iov_base = (void *)(uintptr_t)hdr, .iov_len = hdr_len };
	for (size_t i = 0; i < iovcnt && n < RTE_DIM(v); i++) {
		v[n++] = iov[i];
		total += iov[i].iov_len;
	}
	if (n == 0)
		v[n++] = (struct iovec){ .iov_base = NULL, .iov_len = 0 };
	/* the payload is copied into the frames: nothing to wait for */
	return eth_send_msg(ep, id, v, n, total);
}

static unio_status_t
eth_flush(struct unio_tl_ep *tep, struct unio_tl_completion *comp)
{
	struct eth_ep *ep = eth_ep_of(tep);
	unio_status_t st;

	if (ep->failed)
		return ep->fail_status;
	st = eth_rma_flush(ep, comp);     /* puts and gets first: they complete it */
	if (st != UNIO_OK)
		return st;
	eth_txq_flush(ep->ei);
	/* acked zero-copy frames still waiting to be freed: their sends complete first */
	if (ep->ei->n_free != 0 && !ep->ei->in_progress)
		frames_free(ep->ei);
	if (ep->snd_una == ep->snd_nxt)
		return UNIO_OK;
	if (comp == NULL)
		return UNIO_INPROGRESS;
	if (ep->n_comps == ETH_MAX_COMPS)
		return UNIO_ERR_NO_RESOURCE;
	ep->comps[ep->n_comps++] = (struct eth_comp){ .comp = comp, .seq = ep->snd_nxt };
	return UNIO_INPROGRESS;
}

/* ---- congestion control ---- */

/*
 * A full RTT sample (stalls included) into the smoothed RTT and its variation, from which
 * rto() computes what this side waits for an ack when the timers need it.
 */
static __rte_always_inline void
rtt_sample(struct eth_ep *ep, uint64_t rtt)
{
	if (ep->srtt == 0) {
		ep->srtt = rtt;
		ep->rttvar = rtt / 2;
	} else {
		uint64_t dev = rtt > ep->srtt ? rtt - ep->srtt : ep->srtt - rtt;

		ep->rttvar = (3 * ep->rttvar + dev) / 4;
		ep->srtt = (7 * ep->srtt + rtt) / 8;
	}
}

/*
 * The retransmission timeout (RFC 6298) of the latest RTT samples, doubled by each timeout
 * since the last ack progress (n_timeouts), within rto_min .. rto_max.
 */
static uint64_t
rto(const struct eth_ep *ep)
{
	const struct eth_iface *ei = ep->ei;
	uint64_t r = RTE_MIN(ep->srtt + 4 * ep->rttvar, ei->rto_max);

	r = RTE_MAX(r, ei->rto_min);
	for (unsigned int n = ep->n_timeouts; n != 0 && r < ei->rto_max; n--)
		r *= 2;
	return RTE_MIN(r, ei->rto_max);
}

/*
 * The path's part of an RTT sample, for the congestion window: from the transmission of
 * the frame whose TSC @p w echoes to the latest moment the ack can have arrived here (the
 * previous poll that left our queue empty: a poll after we were descheduled reads what
 * arrived during the stall), less the time the peer held that frame before it answered
 * (its own stalls, delayed acks; @p w->echo_delay).  Neither end's scheduling is queueing
 * on the path: on a shared 2-core host stalls of 2-16 ms against path RTTs of 10-300 us
 * were most of the delay the window reacted to, and kept it at 3-20 frames on a veth
 * that never dropped a frame.  A lower bound: it misses at most one poll interval.
 */
static uint64_t
path_rtt(const struct eth_ep *ep, const struct eth_wire *w)
{
	const struct eth_iface *ei = ep->ei;
	uint64_t held = (uint64_t)w->echo_delay * ei->tsc_per_us;
	uint64_t rtt = tsc_since(ei->rx_after, w->tsc_echo);

	return rtt > held ? rtt - held : 0;
}

/* ---- receive side ---- */

static void
fast_retransmit(struct eth_ep *ep, uint64_t sack, uint64_t now)
{
	uint32_t top = ep->snd_una + 1 + (63u - (uint32_t)__builtin_clzll(sack));
	uint64_t wait = ep->srtt != 0 ? ep->srtt : ep->ei->rto_min;

	if ((unsigned int)__builtin_popcountll(sack) <
	    RTE_MIN(ETH_DUP_THRESH, ep->snd_nxt - ep->snd_una - 1))
		return;
	for (uint32_t s = ep->snd_una; seq_diff(top, s) > 0 &&
	     seq_diff(ep->snd_nxt, s) > 0; s++) {
		struct eth_slot *sl = &ep->snd[s % ETH_WIN];

		if (!sl->sacked && tsc_since(now, sl->tx_tsc) >= wait) {
			retransmit(ep, s, now);
			ep->ei->st.fast_retx++;
		}
	}
}

/* Let go of the send window's frames from snd_una to @p ack. */
static __rte_noinline void
snd_free(struct eth_ep *ep, uint32_t ack)
{
	for (uint32_t seq = ep->snd_una; seq != ack; seq++) {
		struct eth_slot *s = &ep->snd[seq % ETH_WIN];

		frame_free(ep->ei, s->m);
		s->m = NULL;
	}
}

/*
 * The ep may go over to the lossless mode: its iface's link is lossless and the peer has
 * acknowledged everything it sent (so the peer's connection exists and takes our frames:
 * the dial, a crossing dial and the learning of the peer's id, which may drop frames and
 * rely on their retransmission, are over).
 */
static __rte_noinline void
go_lossless(struct eth_ep *ep)
{
	if (ep->snd_una != ep->snd_nxt || ep->peer.conn == 0 || ep->resolving || ep->failed ||
	    ep->detached)
		return;
	ep->lossless = true;
	ep->ll_mark = ep->snd_una;
	ep->ll_since = ep->ei->now;
	ep->ei->st.lossless_eps++;
}

/*
 * The ack fields of a frame to a lossless ep: nothing to free, time or retransmit; the
 * acknowledged sequence number moves for flush and for the timeouts (timers()).
 */
static __rte_always_inline bool
ack_input_lossless(struct eth_ep *ep, const struct eth_wire *w)
{
	int32_t adv = seq_diff(w->ack, ep->snd_una);

	if (seq_diff(w->ack, ep->snd_nxt) > 0 || adv < -(int32_t)ETH_WIN)
		return false;
	if (adv > 0) {
		ep->snd_una = w->ack;
		ep->n_timeouts = 0;
		if (ep->n_comps != 0)
			comps_complete(ep, false, UNIO_OK);
	}
	return true;
}

/* Process the ack fields of any frame; false when they are impossible (forged). */
static __rte_always_inline bool
ack_input(struct eth_ep *ep, const struct eth_wire *w, uint64_t now, bool ll)
{
	int32_t adv;
	uint32_t acked;

	if (ll && ep->lossless)
		return ack_input_lossless(ep, w);
	adv = seq_diff(w->ack, ep->snd_una);
	if (seq_diff(w->ack, ep->snd_nxt) > 0 || adv < -(int32_t)ETH_WIN)
		return false;
	if (adv < 0)
		return true;   /* a stale ack overtaken by a newer one */
	acked = (uint32_t)adv;
	if (likely(acked == 1)) {        /* a ping-pong's: no loop to set up */
		struct eth_slot *s = &ep->snd[ep->snd_una % ETH_WIN];

		frame_free(ep->ei, s->m);
		s->m = NULL;
	} else if (acked != 0) {
		snd_free(ep, w->ack);
	}
	ep->snd_una = w->ack;
	if (seq_diff(w->ack + w->credit, ep->peer_edge) > 0)
		ep->peer_edge = w->ack + RTE_MIN(w->credit, (uint16_t)ETH_WIN);
	for (uint32_t i = 0; w->sack != 0 && i < 64; i++) {
		uint32_t s = w->ack + 1 + i;

		if ((w->sack >> i & 1) && seq_diff(ep->snd_nxt, s) > 0)
			ep->snd[s % ETH_WIN].sacked = 1;
	}
	if (w->tsc_echo != 0 && w->tsc_echo <= now && now - w->tsc_echo < ep->ei->tsc_hz) {
		uint64_t path = path_rtt(ep, w);

		rtt_sample(ep, now - w->tsc_echo);
		eth_cc_echo(ep, w->tsc_echo, path, acked, now);
	}
	if (acked != 0 && ep->to_tsc != 0) {
		/* the first ack after a timeout echoes a frame sent before it: the originals
		 * arrived, the timeout was a stall, not a loss (Eifel): undo its cut */
		if (w->tsc_echo != 0 && w->tsc_echo < ep->to_tsc) {
			ep->cwnd = RTE_MAX(ep->cwnd, ep->cwnd_undo);
			ep->ei->st.timeouts_undone++;
		}
		ep->to_tsc = 0;
	}
	if (acked != 0) {
		ep->probed = false;
		ep->n_timeouts = 0;
		if (ep->n_comps != 0)
			comps_complete(ep, false, UNIO_OK);
		if (ll)
			go_lossless(ep);
	}
	if (w->sack != 0 && ep->snd_una == w->ack && ep->snd_una != ep->snd_nxt)
		fast_retransmit(ep, w->sack, now);
	return true;
}

static void
reasm_abort(struct eth_ep *ep)
{
	ep->ei->st.drop_bad_msg++;
	ep->reasm_active = false;
	ep->reasm_get = NULL;
}

static void
invoke(struct eth_ep *ep, uint8_t id, const void *data, size_t len)
{
	ep->ei->st.msgs_delivered++;
	if (unlikely(id >= ETH_AM_PUT))
		eth_rma_input(ep, id, data, len);
	else
		unio_tl_iface_invoke_am(&ep->ei->super, id, data, len, 0, ep->super.conn_id);
}

/*
 * Append @p len bytes of the message in reassembly: to the reassembly buffer, or for a
 * GET_RESP that eth_rma_resp_target() accepted, its data straight to the get's buffer (the
 * header, all in the first fragment, is skipped): the receiver of a 1 MiB get copies each
 * byte once instead of twice.
 */
static void
reasm_add(struct eth_ep *ep, const uint8_t *pl, uint16_t len)
{
	const size_t hl = sizeof(struct eth_rma_hdr);
	size_t off = ep->reasm_off;

	ep->reasm_off += len;
	if (ep->reasm_get == NULL) {
		memcpy(ep->reasm + off, pl, len);
		return;
	}
	if (off < hl) {             /* the first fragment: eth_rma_resp_target() read it */
		pl += hl - off;
		len = (uint16_t)(len - (hl - off));
		off = hl;
	}
	eth_rma_resp_place(ep->reasm_get, off - hl, pl, len);
}

static void
reasm_done(struct eth_ep *ep)
{
	struct eth_rma_op *op = ep->reasm_get;

	if (op == NULL) {
		invoke(ep, ep->reasm_id, ep->reasm, ep->reasm_len);
		return;
	}
	ep->reasm_get = NULL;
	ep->ei->st.msgs_delivered++;
	ep->ei->st.rx_get_direct++;
	eth_rma_resp_done(ep, op, ep->reasm_len - sizeof(struct eth_rma_hdr));
}

/* deliver() of a frame that is not a whole message, or arrives during a reassembly */
static __rte_noinline void
deliver_frag(struct eth_ep *ep, struct rte_mbuf *m)
{
	const struct eth_wire *w = frame_wire(m);
	const uint8_t *pl = (const uint8_t *)(w + 1);

	if (w->flags & ETH_FF_FIRST) {
		if (ep->reasm_active)
			reasm_abort(ep);
		if (w->msg_len > ETH_MAX_MSG ||
		    ((w->flags & ETH_FF_LAST) && w->msg_len != w->len)) {
			ep->ei->st.drop_bad_msg++;
		} else if (w->flags & ETH_FF_LAST) {
			invoke(ep, w->am_id, pl, w->len);
		} else {
			ep->reasm_active = true;
			ep->reasm_id = w->am_id;
			ep->reasm_len = w->msg_len;
			ep->reasm_off = 0;
			ep->reasm_get = w->am_id == ETH_AM_GET_RESP ?
				eth_rma_resp_target(ep, pl, w->len, w->msg_len) : NULL;
		}
	} else if (!ep->reasm_active || w->am_id != ep->reasm_id ||
		   w->msg_len != ep->reasm_len) {
		reasm_abort(ep);
		frame_free(ep->ei, m);
		return;
	}
	if (ep->reasm_active) {
		if (ep->reasm_off + w->len > ep->reasm_len) {
			reasm_abort(ep);
		} else {
			reasm_add(ep, pl, w->len);
			if ((w->flags & ETH_FF_LAST) && ep->reasm_off != ep->reasm_len) {
				reasm_abort(ep);
			} else if (w->flags & ETH_FF_LAST) {
				ep->reasm_active = false;
				reasm_done(ep);
			}
		}
	}
	frame_free(ep->ei, m);
}

/* Deliver the next in-order frame; frees it. */
static __rte_always_inline void
deliver(struct eth_ep *ep, struct rte_mbuf *m)
{
	const struct eth_wire *w = frame_wire(m);

	/* most messages: one whole frame (its length fits the frame, so ETH_MAX_MSG too) */
	if (likely((w->flags & (ETH_FF_FIRST | ETH_FF_LAST)) == (ETH_FF_FIRST | ETH_FF_LAST) &&
		   !ep->reasm_active && w->msg_len == w->len)) {
		invoke(ep, w->am_id, w + 1, w->len);
		frame_free(ep->ei, m);
		return;
	}
	deliver_frag(ep, m);
}

static __rte_always_inline void
data_input(struct eth_ep *ep, struct rte_mbuf *m, const struct eth_wire *w, uint64_t now)
{
	struct eth_iface *ei = ep->ei;
	int32_t off = seq_diff(w->seq, ep->rcv_nxt);
	struct rte_mbuf **slot;

	if (off < -(int32_t)ETH_WIN || off >= (int32_t)ETH_WIN) {
		ei->st.drop_bad_seq++;
		rte_pktmbuf_free(m);
		return;
	}
	want_ack(ep, now);
	slot = &ep->rcv[w->seq % ETH_WIN];
	if (off < 0 || (off > 0 && *slot != NULL)) {
		ei->st.rx_dup++;
		rte_pktmbuf_free(m);
		return;
	}
	ep->echo_tsc = w->tsc;
	ep->echo_rx = ei->rx_after;
	ei->st.rx_data++;
	if (off > 0) {
		*slot = m;
		ep->n_ooo++;
		ei->ack_next = 0;        /* the sender needs the SACK now (eth_ack_due()) */
		ei->st.rx_ooo++;
		return;
	}
	ep->rcv_nxt++;
	deliver(ep, m);
	while (unlikely(ep->n_ooo != 0) && (m = ep->rcv[ep->rcv_nxt % ETH_WIN]) != NULL) {
		ep->rcv[ep->rcv_nxt % ETH_WIN] = NULL;
		ep->n_ooo--;
		ep->rcv_nxt++;
		deliver(ep, m);
	}
}

/* ---- peers ---- */

static struct eth_ep *
peer_find(struct eth_iface *ei, rte_be32_t ip, rte_be16_t port)
{
	struct eth_ep *ep = ei->last_peer;

	if (ep != NULL && ep->peer.ip == ip && ep->peer.udp_port == port)
		return ep;
	for (unsigned int i = 0; i < ei->n_peers; i++) {
		ep = ei->peers[i];
		if (ep->peer.ip == ip && ep->peer.udp_port == port && !ep->detached) {
			ei->last_peer = ep;
			return ep;
		}
	}
	return NULL;
}

static struct eth_ep *
ep_alloc(struct eth_iface *ei, const struct eth_addr *peer)
{
	struct eth_ep *ep;

	if (ei->n_peers == ETH_MAX_PEERS)
		return NULL;
	ep = rte_zmalloc("unio_eth_ep", sizeof(*ep), RTE_CACHE_LINE_SIZE);
	if (ep == NULL)
		return NULL;
	ep->reasm = malloc(ETH_MAX_MSG);
	ep->zc = calloc(1, sizeof(*ep->zc));
	if (ep->reasm == NULL || ep->zc == NULL) {
		free(ep->reasm);
		free(ep->zc);
		rte_free(ep);
		return NULL;
	}
	ep->super.iface = &ei->super;
	ep->super.conn_id = unio_tl_conn_id_new();   /* its handles (aliases) share it */
	ep->ei = ei;
	ep->peer = *peer;
	ep->cwnd = ETH_INIT_CWND;
	ep->peer_edge = ETH_WIN;
	ep->zc->ep = ep;
	for (unsigned int i = 0; i < ETH_MAX_COMPS; i++) {
		ep->zc->zc[i].set = ep->zc;
		ep->zc->zc[i].next_free = ep->zc->free;
		ep->zc->free = &ep->zc->zc[i];
	}
	tmpl_build(ep);
	ei->peers[ei->n_peers++] = ep;
	return ep;
}

static void
ep_free(struct eth_ep *ep)
{
	ETH_LOG(DEBUG, "ep free: cwnd %.1f srtt %" PRIu64 " min_rtt %" PRIu64 " rto %" PRIu64
		" (tsc)", ep->cwnd, ep->srtt, ep->min_rtt, rto(ep));
	struct eth_iface *ei = ep->ei;
	unsigned int i, j = 0;

	if (ei->n_free != 0)    /* a zero-copy frame among them completes into our zc[] */
		frames_free(ei);
	if (ep->ack_pending && !ep->failed && !ep->resolving) {
		/* the peer's last frames: acked before we go, or it retransmits them until
		 * it declares us dead */
		send_ack(ep, rte_rdtsc());
		eth_txq_flush(ei);
	}
	for (i = 0; i < ei->n_peers; i++)
		if (ei->peers[i] != ep)
			ei->peers[j++] = ei->peers[i];
	ei->n_peers = j;
	if (ep->ack_pending) {           /* none was sent (failed, resolving, no room) */
		ep->ack_pending = false;
		ei->n_ack_owed--;
	}
	if (ei->last_peer == ep)
		ei->last_peer = NULL;
	if (!ep->failed) {
		ep->failed = true;             /* zero-copy completions still pending fail */
		ep->fail_status = UNIO_ERR_CANCELED;
	}
	snd_release(ep);
	comps_complete(ep, true, UNIO_ERR_CANCELED);
	eth_rma_cancel(ep, ep->fail_status);
	if (ep->rma != NULL)
		ei->n_rma--;
	free(ep->rma);
	for (i = 0; i < ETH_WIN; i++)
		rte_pktmbuf_free(ep->rcv[i]);
	free(ep->reasm);
	/* frames the tx queue or a PMD still holds complete their messages later */
	ep->zc->ep = NULL;
	if (ep->zc->busy == 0)
		free(ep->zc);
	else
		ei->st.zc_orphaned += ep->zc->busy - ep->zc->due;
	while (ep->aliases != NULL) {       /* the iface closes under them */
		struct eth_ep_alias *a = ep->aliases;

		ep->aliases = a->next;
		free(a);
	}
	rte_free(ep);
}

/*
 * @p ep's peer dialled us again (a new ep of its own, sequence numbers from 0): a passive
 * ep goes; one the protocol layer owns fails with UNIO_ERR_CONNECTION_RESET and is found no
 * more, so that the new connection gets an ep of its own.  Returns NULL.
 */
static struct eth_ep *
peer_detach(struct eth_ep *ep)
{
	if (!ep->user_owned) {
		ep_free(ep);
		return NULL;
	}
	ep->detached = true;
	if (ep->ei->last_peer == ep)
		ep->ei->last_peer = NULL;
	if (!ep->failed)
		ep_fail(ep, UNIO_ERR_CONNECTION_RESET);
	return NULL;
}

/* The peer's MAC is known now: frames can be built. */
static void
resolved(struct eth_ep *ep, const struct rte_ether_addr *mac)
{
	rte_ether_addr_copy(mac, &ep->peer.mac);
	tmpl_build(ep);
	ep->resolving = false;
}

/* A frame of @p ep's connection whose header passed every check: its ack, then its data. */
static __rte_always_inline void
rx_accept(struct eth_iface *ei, struct eth_ep *ep, struct rte_mbuf *m, const struct eth_wire *w,
	  uint64_t now, bool ll)
{
	if (!ack_input(ep, w, now, ll)) {
		ei->st.drop_bad_seq++;
		rte_pktmbuf_free(m);
	} else if (w->type == ETH_FT_ACK) {
		frame_free(ei, m);
	} else {
		data_input(ep, m, w, now);
	}
}

/*
 * The receive path of a frame of the latest peer's connection, as the full parser
 * (eth_rx_classify(), then rx_slow()) would take it, in one comparison of the first 64
 * bytes with the ep's rx_tmpl (connection ids included) and the checks of what varies: the
 * lengths (the IPv4 one within the frame, UDP's and the Unio header's each the rest of the
 * one before), both checksums (a UDP checksum of 0 is none, RFC 768; the IPv4 one from the
 * connection's sum of the addresses the comparison found, eth_ip_cksum_addrs()), the frame
 * type, AM id and dial id.  Returns the Unio header, or NULL for anything else (another
 * peer, a frame that would be dropped, a connection that changed): the full parser takes it
 * then, and drops and counts what it must.
 */
static __rte_always_inline const struct eth_wire *
rx_fast(const struct eth_ep *ep, const struct rte_mbuf *m, bool lossless)
{
	typedef uint64_t v2u64 __attribute__((vector_size(16)));
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)
					(p + sizeof(struct rte_ether_hdr));
	const struct rte_udp_hdr *udp = (const struct rte_udp_hdr *)(ip + 1);
	const struct eth_wire *w = (const struct eth_wire *)(udp + 1);
	const v2u64 *mask = (const v2u64 *)rx_mask, *tmpl = (const v2u64 *)ep->rx_tmpl;
	v2u64 v0, v1, v2, v3, diff;
	int tot, ulen;
	uint64_t f;

	if (unlikely(m->nb_segs != 1 || rte_pktmbuf_data_len(m) < ETH_HDRS))
		return NULL;
	/* four loads of 16 bytes, kept in registers (a copy to an array went to the stack) */
	memcpy(&v0, p, sizeof(v0));
	memcpy(&v1, p + 16, sizeof(v1));
	memcpy(&v2, p + 32, sizeof(v2));
	memcpy(&v3, p + 48, sizeof(v3));
	diff = ((v0 & mask[0]) ^ tmpl[0]) | ((v1 & mask[1]) ^ tmpl[1]) |
	       ((v2 & mask[2]) ^ tmpl[2]) | ((v3 & mask[3]) ^ tmpl[3]);
	tot = rte_be_to_cpu_16(ip->total_length);
	ulen = rte_be_to_cpu_16(udp->dgram_len);
	if (unlikely((diff[0] | diff[1]) != 0 ||
		     tot > rte_pktmbuf_data_len(m) - (int)sizeof(struct rte_ether_hdr) ||
		     ulen != tot - (int)sizeof(*ip) ||
		     (int)w->len != ulen - (int)(sizeof(*udp) + sizeof(*w))))
		return NULL;
	if (unlikely(w->type != ETH_FT_DATA && (w->type != ETH_FT_ACK || w->len != 0)))
		return NULL;
	if (unlikely(w->am_id >= UNIO_TL_AM_ID_MAX &&
		     (w->am_id < ETH_AM_PUT || w->am_id > ETH_AM_GET_RESP)))
		return NULL;
	if (unlikely(w->dial != ep->dial || ep->failed || ep->resolving))
		return NULL;
	/*
	 * On a lossless link (shared memory: only the peer process writes the frame, and
	 * whatever it writes it could checksum) the IPv4 header checksum has nothing to find
	 */
	f = m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK;
	if (!lossless && f != RTE_MBUF_F_RX_IP_CKSUM_GOOD &&
	    (f == RTE_MBUF_F_RX_IP_CKSUM_BAD ||
	     eth_ip_cksum_addrs(ip, ep->rx_ip_addrs) != 0xffff))
		return NULL;
	if (udp->dgram_cksum == 0)
		return w;
	f = m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;
	if (f != RTE_MBUF_F_RX_L4_CKSUM_GOOD &&
	    (f == RTE_MBUF_F_RX_L4_CKSUM_BAD ||
	     eth_cksum(udp, (size_t)ulen, eth_udp_phdr(ip, udp)) != 0xffff))
		return NULL;
	return w;
}

/* Any frame: the full parser, peers and connections found or made. */
static __rte_noinline void
rx_slow(struct eth_iface *ei, struct rte_mbuf *m, uint64_t now)
{
	const struct rte_ipv4_hdr *ip = NULL;
	const struct rte_udp_hdr *udp = NULL;
	const struct eth_wire *w = eth_rx_classify(ei, m, &ip, &udp);
	struct eth_ep *ep;

	if (w == NULL)
		return;
	ep = peer_find(ei, ip->src_addr, udp->src_port);
	if (ep != NULL && w->dial != ep->dial) {
		/*
		 * Another connection of that peer: the first frame of a new dial replaces ours;
		 * anything else is late (a retransmission of a connection closed meanwhile, say a
		 * refusal the API sent before its peer dialled again) and must not be taken for
		 * this connection's.
		 */
		if (w->dst_conn != 0 || w->type != ETH_FT_DATA || w->seq != 0) {
			ei->st.drop_unknown_conn++;
			rte_pktmbuf_free(m);
			return;
		}
		if (ep->user_owned && ep->peer.conn == 0 && ep->dial != 0 && !ep->failed) {
			/*
			 * Crossing dials: both ends dialled, neither heard from the other.  The
			 * higher dial id is the connection: the peer joins ours (this frame is
			 * dropped), or this ep joins the peer's, and what it sent goes again
			 * under that id (stamp()).
			 */
			if (ep->dial > w->dial) {
				ei->st.drop_unknown_conn++;
				rte_pktmbuf_free(m);
				return;
			}
			ep->dial = w->dial;
			ep->peer.conn = w->src_conn;
			rx_tmpl_build(ep);
		} else {
			ep = peer_detach(ep);
		}
	}
	if (ep != NULL && ep->peer.conn == 0 && w->dst_conn == ei->addr.conn) {
		ep->peer.conn = w->src_conn;    /* we dialled this peer: now we know its id */
		rx_tmpl_build(ep);
	}
	if (ep != NULL && !ep->user_owned && ep->peer.conn != w->src_conn &&
	    w->type == ETH_FT_DATA && w->seq == 0) {
		ep_free(ep);        /* the peer restarted: forget its old passive connection */
		ep = NULL;
	}
	if (ep == NULL && w->type == ETH_FT_DATA && w->seq == 0) {
		struct eth_addr a = {
			.udp_port = udp->src_port, .ip = ip->src_addr, .conn = w->src_conn,
			.magic = ETH_MAGIC, .version = ETH_VERSION,
		};

		rte_ether_addr_copy(&rte_pktmbuf_mtod(m, struct rte_ether_hdr *)->src_addr,
				    &a.mac);
		ep = ep_alloc(ei, &a);
		if (ep == NULL) {
			ei->st.drop_no_peer++;
			rte_pktmbuf_free(m);
			return;
		}
		ep->dial = w->dst_conn == 0 ? w->dial : 0;
		rx_tmpl_build(ep);
	}
	if (ep != NULL && ep->resolving && ep->peer.conn == w->src_conn)
		resolved(ep, &rte_pktmbuf_mtod(m, struct rte_ether_hdr *)->src_addr);
	if (ep == NULL || ep->peer.conn != w->src_conn || ep->failed) {
		ei->st.drop_unknown_conn++;
		rte_pktmbuf_free(m);
	} else {
		rx_accept(ei, ep, m, w, now, ei->lossless);
	}
}

static __rte_always_inline void
rx_one(struct eth_iface *ei, struct rte_mbuf *m, uint64_t now, bool ll)
{
	struct eth_ep *ep = ei->last_peer;
	const struct eth_wire *w;

	if (likely(ep != NULL) && (w = rx_fast(ep, m, ll)) != NULL)
		rx_accept(ei, ep, m, w, now, ll);
	else
		rx_slow(ei, m, now);
}

/* An ep whose peer MAC is unknown: ARP until answered or ETH_ARP_TRIES went unanswered. */
static void
resolve_timer(struct eth_ep *ep, uint64_t now)
{
	struct rte_ether_addr mac;

	if (eth_arp_lookup(ep->ei, ep->peer.ip, &mac) == 0)
		resolved(ep, &mac);
	else if (eth_arp_resolve(ep->ei, ep->peer.ip, now) > ETH_ARP_TRIES)
		ep_fail(ep, UNIO_ERR_UNREACHABLE);
}

/* Send again up to @p max unSACKed frames from snd_una; returns how many. */
static uint32_t
resend_head(struct eth_ep *ep, uint32_t max, uint64_t now)
{
	uint32_t n = 0;

	for (uint32_t s = ep->snd_una; s != ep->snd_nxt && n < max; s++)
		if (!ep->snd[s % ETH_WIN].sacked) {
			retransmit(ep, s, now);
			n++;
		}
	return n;
}

/*
 * A lossless ep's timeout: frames unacknowledged and no ack progress for rto() (the timers
 * see it at their period), counted toward failure as a retransmission timeout is, with the
 * same back-off, but nothing is sent again (nothing was kept, and the link lost nothing):
 * a peer that went silent (its process died, its ep was destroyed, the link went down and
 * took the ring's frames) fails the ep with UNIO_ERR_TIMED_OUT after
 * UNIO_ETHDEV_RETRIES timeouts, as on any link.
 */
static void
lossless_timer(struct eth_ep *ep, uint64_t now)
{
	struct eth_iface *ei = ep->ei;

	if (ep->snd_una == ep->snd_nxt || ep->snd_una != ep->ll_mark) {
		ep->ll_mark = ep->snd_una;
		ep->ll_since = now;
		return;
	}
	if (tsc_since(now, ep->ll_since) < rto(ep))
		return;
	ei->st.timeouts++;
	if (++ep->n_timeouts > ei->retries) {
		ep_fail(ep, UNIO_ERR_TIMED_OUT);
		return;
	}
	ep->ll_since = now;
}

/*
 * Per ep: a probe (the oldest unSACKed frames sent again, no back-off) once the oldest frame
 * waited max(2 srtt, srtt + 4 rttvar) without news, which recovers lost tails and lost
 * retransmissions quickly;
 * a timeout (back-off, cwnd halved, counted toward failure) once it waited rto_cur.
 */
static void
timers(struct eth_iface *ei, uint64_t now)
{
	for (unsigned int i = 0; i < ei->n_peers; i++) {
		struct eth_ep *ep = ei->peers[i];
		uint64_t age;

		if (unlikely(ep->doomed)) {    /* every handle went while it failed */
			ep_free(ep);
			i--;
			continue;
		}
		if (ep->resolving && !ep->failed)
			resolve_timer(ep, now);
		if (ep->lossless && !ep->failed) {
			lossless_timer(ep, now);
			continue;
		}
		if (ep->failed || ep->snd_una == ep->snd_nxt)
			continue;
		age = tsc_since(now, ep->snd[ep->snd_una % ETH_WIN].tx_tsc);
		if (age < rto(ep)) {
			uint64_t pto = RTE_MAX(2 * ep->srtt, ep->srtt + 4 * ep->rttvar);

			if (!ep->probed && ep->srtt != 0 &&
			    age >= pto + ei->ack_max + ei->timer_period) {
				ep->probed = true;
				ei->st.probes++;
				resend_head(ep, ETH_PROBE_RETX, now);
			}
			continue;
		}
		ei->st.timeouts++;
		if (++ep->n_timeouts > ei->retries) {
			ep_fail(ep, UNIO_ERR_TIMED_OUT);
			continue;
		}
		resend_head(ep, ETH_TO_RETX, now);
		if (ep->to_tsc == 0) {
			ep->cwnd_undo = ep->cwnd;
			ep->to_tsc = now;
		}
		ep->cwnd = RTE_MAX(ep->cwnd / 2, ETH_MIN_CWND);
		ep->last_decrease = now;
		ep->cc_acked = 0;
	}
}

/*
 * On a PMD that is a kernel socket every frame is moved by kernel work (the sender's and
 * the receiver's softirqs; ksoftirqd once they run long) on the CPUs the busy-polling
 * workers hold, and it waits behind them: after ETH_IDLE_POLLS progress calls with
 * nothing received or sent, give the CPU away once.  With nothing else runnable this is
 * one cheap system call; on the 2-core test host it made 1 MiB tag_bw over af_xdp 2-4x
 * faster while other processes competed for the CPUs.
 */
static void
idle_yield(struct eth_iface *ei, unsigned int n_rx)
{
	if (n_rx != 0 || ei->st.tx_frames != ei->tx_seen) {
		ei->idle_polls = 0;
		ei->tx_seen = ei->st.tx_frames;
	} else if (++ei->idle_polls >= ETH_IDLE_POLLS) {
		ei->idle_polls = 0;
		ei->st.idle_yields++;
		sched_yield();
	}
}

/*
 * A progress call that found nothing to read: the clock (rte_rdtsc, 15-45 ns on this VM,
 * as much as the poll itself) is read only once in ETH_CLOCK_POLLS such calls, so a worker
 * that polls for an answer notices it sooner.  Timers and delayed acks run on the calls
 * that read it (at most ETH_CLOCK_POLLS - 1 polls late); the queue counts as empty since the
 * latest reading (an earlier moment: the path RTT stays a lower bound).  Returns true when
 * the call is done.
 */
static inline bool
poll_empty(struct eth_iface *ei)
{
	if (++ei->clock_skips >= ETH_CLOCK_POLLS) {
		ei->clock_skips = 0;
		return false;
	}
	ei->rx_clear = ei->now;
	ei->rx_backlog = 0;
	if (ei->n_free != 0)
		frames_free(ei);
	if (ei->txq_head != ei->txq_tail)
		eth_txq_flush(ei);
	if (ei->idle_yield)
		idle_yield(ei, 0);
	return true;
}

static __rte_always_inline unsigned int
progress(struct eth_iface *ei, bool ll)
{
	struct rte_mbuf *pkts[ETH_BURST];
	uint16_t n = rte_eth_rx_burst(ei->port_id, ei->queue, pkts, ETH_BURST);
	unsigned int k = 0;
	uint64_t now;

	if (n == 0 && (ei->inbox == NULL || rte_ring_empty(ei->inbox)) && poll_empty(ei))
		return unlikely(ei->n_zc_done != 0) ? zc_reported(ei) : 0;
	now = rte_rdtsc();
	ei->now = now;
	ei->clock_skips = 0;
	ei->in_progress = true;
	ei->st.rx_frames += n;
	ei->rx_after = ei->rx_clear;
	for (uint16_t i = 0; i < n; i++)
		rx_one(ei, pkts[i], now, ll);
	if (ei->inbox != NULL) {
		k = rte_ring_sc_dequeue_burst(ei->inbox, (void **)pkts, ETH_BURST, NULL);
		for (unsigned int i = 0; i < k; i++)
			rx_one(ei, pkts[i], now, ll);
	}
	/*
	 * Frames read later arrived after this poll if it emptied both queues.  A stall leaves
	 * at most a queue's worth behind; a backlog longer than that is this side not keeping
	 * up, which counts as delay from here on.
	 */
	if (likely(n < ETH_BURST && k < ETH_BURST)) {
		ei->rx_clear = now;
		ei->rx_backlog = 0;
	} else if ((ei->rx_backlog += n + k) > ETH_NB_DESC) {
		ei->rx_clear = now;
		ei->rx_backlog = 0;
	}
	n = (uint16_t)(n + k);
	for (unsigned int i = 0; unlikely(ei->n_rma != 0) && i < ei->n_peers; i++)
		if (ei->peers[i]->rma != NULL && !ei->peers[i]->failed)
			eth_rma_drain(ei->peers[i]);
	if (now >= ei->ack_next)
		send_acks(ei, now);
	if (now - ei->last_timer >= ei->timer_period) {
		timers(ei, now);
		ei->last_timer = now;
	}
	ei->in_progress = false;
	/*
	 * The frames this call let go that were still referenced or not plain (frame_free():
	 * the others went to the stash at once) wait for the next call that reads nothing
	 * (poll_empty()) unless half of ETH_FREE_MAX do: a reply its caller sends now (a
	 * ping-pong's echo) goes out without waiting for them, and the frees run while it waits
	 * for the answer.
	 */
	if (ei->n_free != 0 && (n == 0 || ei->n_free >= ETH_FREE_MAX / 2))
		frames_free(ei);
	if (ei->txq_head != ei->txq_tail)
		eth_txq_flush(ei);
	if (ei->idle_yield)
		idle_yield(ei, n);
	return n + zc_reported(ei);
}

static unsigned int
eth_progress(struct unio_tl_iface *iface)
{
	return progress(to_ei(iface), false);
}

/* The progress call of a lossless iface (eth_iface.lossless): its eps may be lossless. */
static unsigned int
eth_progress_lossless(struct unio_tl_iface *iface)
{
	return progress(to_ei(iface), true);
}

/* ---- control ---- */

/* Another handle on @p ep's connection (its own user pointer and error callback). */
static unio_status_t
ep_alias(struct eth_ep *ep, struct unio_tl_ep **ep_p)
{
	struct eth_ep_alias *a = calloc(1, sizeof(*a));

	if (a == NULL)
		return UNIO_ERR_NO_MEMORY;
	a->super.iface = ep->super.iface;
	a->super.cap = ep->super.cap;
	a->super.conn_id = ep->super.conn_id;
	a->kind = ETH_EP_ALIAS;
	a->ep = ep;
	a->next = ep->aliases;
	ep->aliases = a;
	*ep_p = &a->super;
	return UNIO_OK;
}

static unio_status_t
eth_ep_create(struct unio_tl_iface *iface, const struct unio_tl_ep_params *params,
	      struct unio_tl_ep **ep_p)
{
	struct eth_iface *ei = to_ei(iface);
	struct eth_addr a;
	struct eth_ep *ep;

	memcpy(&a, params->iface_addr, sizeof(a));
	if (a.magic != ETH_MAGIC || a.rsvd != 0 || a.ip == 0 || a.udp_port == 0 ||
	    !rte_is_unicast_ether_addr(&a.mac))
		return UNIO_ERR_INVALID_ADDR;
	if (a.version != ETH_VERSION) {
		ETH_LOG(ERR, "%s: a peer address of frame version %u (ours is %u): refused",
			iface->dev_name, a.version, ETH_VERSION);
		return UNIO_ERR_VERSION_MISMATCH;
	}
	ep = peer_find(ei, a.ip, a.udp_port);
	/*
	 * A dial (connection id 0) never takes over a passive ep: that one may be what is left
	 * of an earlier connection (a late answer to a dial that gave up), which the peer no
	 * longer knows; the dial starts a connection of its own, with a new dial id.
	 */
	if (ep != NULL && ep->peer.conn == a.conn && a.conn != 0 && !ep->failed) {
		if (ep->user_owned)
			return params->flags & UNIO_TL_EP_FLAG_SHARE ? ep_alias(ep, ep_p) :
			       UNIO_ERR_EXISTS;
	} else if (ep != NULL && a.conn == 0 && ep->user_owned && !ep->failed) {
		return UNIO_ERR_EXISTS;
	} else {
		if (ep != NULL)
			peer_detach(ep);  /* an earlier incarnation of that peer */
		ep = ep_alloc(ei, &a);
		if (ep == NULL)
			return UNIO_ERR_NO_RESOURCE;
		while (a.conn == 0 && ep->dial == 0)
			ep->dial = (uint32_t)rte_rand();   /* tells this dial from earlier ones */
		rx_tmpl_build(ep);
		if (rte_is_zero_ether_addr(&a.mac)) {
			struct rte_ether_addr mac;

			ep->resolving = true;     /* an address without MAC: ARP for it */
			if (eth_arp_lookup(ei, a.ip, &mac) == 0)
				resolved(ep, &mac);
			else
				eth_arp_resolve(ei, a.ip, rte_rdtsc());
		}
	}
	ep->user_owned = true;
	*ep_p = &ep->super;
	return UNIO_OK;
}

/*
 * A handle that goes leaves the connection to the others; the last one frees it (a released
 * first handle stays embedded in the connection until then).
 */
static void
eth_ep_destroy(struct unio_tl_ep *tep)
{
	struct eth_ep *ep = eth_ep_of(tep);

	if (&ep->super != tep) {
		struct eth_ep_alias **pp = &ep->aliases;

		if (ep->reporting) {          /* ep_fail() walks the list: it frees it */
			((struct eth_ep_alias *)tep)->gone = true;
			return;
		}
		while (*pp != (struct eth_ep_alias *)tep)
			pp = &(*pp)->next;
		*pp = (*pp)->next;
		free(tep);
	} else {
		ep->released = true;
		ep->super.user = NULL;
	}
	if (ep->released && ep->aliases == NULL && !ep->reporting)
		ep_free(ep);
}

static void
eth_iface_close(struct unio_tl_iface *iface)
{
	struct eth_iface *ei = to_ei(iface);

	eth_txq_flush(ei);
	eth_stats_log(ei);
	while (ei->n_peers != 0)
		ep_free(ei->peers[0]);
	for (; ei->txq_tail != ei->txq_head; ei->txq_tail++)
		rte_pktmbuf_free(ei->txq[ei->txq_tail & (ETH_TXQ_LEN - 1)]);
	if (ei->n_free != 0)
		frames_free(ei);
	if (ei->n_stash != 0)           /* before the port (and maybe its pool) goes */
		rte_mempool_put_bulk(ei->mp, (void **)ei->stash, ei->n_stash);
	ei->n_stash = 0;
	zc_reported(ei);                /* the completions still due */
	eth_port_close(ei);
	rte_free(ei);
}

static unio_status_t
eth_iface_query(struct unio_tl_iface *iface, struct unio_tl_iface_attr *attr)
{
	struct eth_iface *ei = to_ei(iface);

	memset(attr, 0, sizeof(*attr));
	attr->cap = UNIO_TL_CAP_AM_SHORT | UNIO_TL_CAP_AM_BCOPY | UNIO_TL_CAP_AM_ZCOPY |
		    UNIO_TL_CAP_CONNECT_IFACE | UNIO_TL_CAP_PEER_FAILURE | UNIO_TL_CAP_ORDERED |
		    UNIO_TL_CAP_PUT_ZCOPY | UNIO_TL_CAP_GET_ZCOPY | UNIO_TL_CAP_RMA_TARGET |
		    UNIO_TL_CAP_CONNECT_SOCKADDR;
	attr->max_short = ei->frag - sizeof(uint64_t);
	attr->max_bcopy = ETH_MAX_MSG;
	attr->max_zcopy = ETH_MAX_MSG - ETH_ZCOPY_HDR;
	attr->max_zcopy_hdr = ETH_ZCOPY_HDR;
	attr->max_iov = UNIO_TL_MAX_IOV;
	attr->max_put_zcopy = ETH_RMA_MAX_PUT;
	attr->max_get_zcopy = ETH_RMA_MAX_GET;
	attr->rkey_packed_len = sizeof(struct eth_rkey);
	attr->iface_addr_len = sizeof(struct eth_addr);
	attr->reach = UNIO_TL_REACH_NET;
	attr->perf.latency_ns = 5000;
	attr->perf.overhead_ns = 300;
	attr->perf.bandwidth_MBps = 300;
	attr->perf.zcopy_overhead_ns = 0;
	return UNIO_OK;
}

static unio_status_t
eth_iface_get_address(struct unio_tl_iface *iface, void *addr)
{
	memcpy(addr, &to_ei(iface)->addr, sizeof(struct eth_addr));
	return UNIO_OK;
}

static unio_status_t
eth_iface_get_sockaddr(struct unio_tl_iface *iface, struct sockaddr_storage *sa)
{
	struct sockaddr_in *in = (struct sockaddr_in *)sa;

	memset(sa, 0, sizeof(*sa));
	in->sin_family = AF_INET;
	in->sin_port = to_ei(iface)->addr.udp_port;
	in->sin_addr.s_addr = to_ei(iface)->addr.ip;
	return UNIO_OK;
}

/*
 * A socket address is an ethdev one when it is IPv4 and its port is one of the driver's
 * (UNIO_ETHDEV_PORT + queue, as every iface of a port uses): the peer's address is then its
 * IPv4 and UDP port with MAC 0 (ARP finds it) and connection id 0 (its first answer tells).
 */
static unio_status_t
eth_sockaddr_to_addr(struct unio_tl_iface *iface, const struct sockaddr *sa, socklen_t len,
		     void *addr)
{
	struct eth_iface *ei = to_ei(iface);
	const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
	uint16_t base = (uint16_t)(rte_be_to_cpu_16(ei->addr.udp_port) - ei->queue);
	struct eth_addr a;
	uint16_t port;
	uint32_t ip;

	if (sa->sa_family != AF_INET || len < sizeof(*in))
		return UNIO_ERR_UNREACHABLE;
	port = rte_be_to_cpu_16(in->sin_port);
	ip = rte_be_to_cpu_32(in->sin_addr.s_addr);
	if (port < base || (unsigned int)(port - base) >= ETH_MAX_QUEUES)
		return UNIO_ERR_UNREACHABLE;
	if (ip == 0 || ip == UINT32_MAX || (ip >> 28) == 0xe || (ip >> 24) == 127 ||
	    (in->sin_addr.s_addr == ei->addr.ip && in->sin_port == ei->addr.udp_port))
		return UNIO_ERR_INVALID_ADDR;   /* not a unicast peer, or this iface itself */
	memset(&a, 0, sizeof(a));
	a.magic = ETH_MAGIC;
	a.version = ETH_VERSION;
	a.udp_port = in->sin_port;
	a.ip = in->sin_addr.s_addr;
	if (a.ip == ei->addr.ip)
		a.mac = ei->addr.mac;          /* another queue of this port: handed over */
	memcpy(addr, &a, sizeof(a));
	return UNIO_OK;
}

static const struct unio_tl_iface_ctl_ops eth_ctl_ops = {
	.iface_close = eth_iface_close,
	.iface_query = eth_iface_query,
	.iface_get_address = eth_iface_get_address,
	.ep_create = eth_ep_create,
	.ep_destroy = eth_ep_destroy,
	.mem_reg = eth_mem_reg,
	.mem_dereg = eth_mem_dereg,
	.rkey_pack = eth_rkey_pack,
	.rkey_unpack = eth_rkey_unpack,
	.rkey_release = eth_rkey_release,
	.iface_get_sockaddr = eth_iface_get_sockaddr,
	.sockaddr_to_addr = eth_sockaddr_to_addr,
};

static unio_status_t
eth_iface_open(const struct unio_tl_iface_params *params, struct unio_tl_iface **iface_p)
{
	struct eth_iface *ei;
	unio_status_t st;

	ei = rte_zmalloc("unio_eth_iface", sizeof(*ei), RTE_CACHE_LINE_SIZE);
	if (ei == NULL)
		return UNIO_ERR_NO_MEMORY;
	ei->zc_due_tail = &ei->zc_due;
	st = eth_port_open(ei, params->config, params->dev_name);
	if (st != UNIO_OK) {
		rte_free(ei);
		return st;
	}
	do
		ei->addr.conn = (uint32_t)rte_rand();
	while (ei->addr.conn == 0);
	ei->addr.magic = ETH_MAGIC;
	ei->addr.version = ETH_VERSION;
	ei->tsc_hz = rte_get_tsc_hz();
	ei->tsc_per_us = RTE_MAX(ei->tsc_hz / 1000000, (uint64_t)1);
	ei->us_per_tsc_q32 = (uint64_t)((1e6 * 4294967296.0) / (double)ei->tsc_hz);
	ei->tsc_us_max = (uint64_t)((double)UINT16_MAX * 1e-6 * (double)ei->tsc_hz);
	ei->now = rte_rdtsc();
	ei->timer_period = ei->tsc_hz / 10000;      /* 100 us */
	ei->ack_delay = ei->tsc_hz / 1000000 * ETH_ACK_DELAY_US;
	ei->ack_max = ei->tsc_hz / 1000000 * ETH_ACK_MAX_US;
	ei->rto_min = ei->tsc_hz / 100;             /* 10 ms */
	ei->rto_max = ei->tsc_hz / 4;               /* 250 ms */
	ei->retries = (unsigned int)params->config->ethdev_retries;
	ei->target_delay = UINT64_MAX / 4;
	if (params->config->ethdev_target_delay_ns != UNIO_TIME_INF)
		ei->target_delay = (uint64_t)((double)params->config->ethdev_target_delay_ns *
					      1e-9 * (double)ei->tsc_hz);
	ei->super.ops = (struct unio_tl_ops){
		.ep_am_short = ei->lossless ? eth_am_short_lossless : eth_am_short,
		.ep_am_bcopy = eth_am_bcopy,
		.ep_am_zcopy = eth_am_zcopy,
		.ep_put_zcopy = eth_put_zcopy,
		.ep_get_zcopy = eth_get_zcopy,
		.ep_flush = eth_flush,
		.iface_progress = ei->lossless ? eth_progress_lossless : eth_progress,
	};
	ei->super.ctl = &eth_ctl_ops;
	*iface_p = &ei->super;
	return UNIO_OK;
}

unio_status_t
unio_tl_ethdev_stats(struct unio_tl_iface *iface, struct unio_tl_ethdev_stats *stats)
{
	if (iface == NULL || stats == NULL || iface->driver != &eth_driver)
		return UNIO_ERR_INVALID_PARAM;
	eth_stats_read(to_ei(iface), stats);
	return UNIO_OK;
}

static const struct unio_tl_driver eth_driver = {
	.name = "ethdev",
	.description = "reliable UDP/IPv4 over DPDK ethdev ports",
	.query_devices = eth_query_devices,
	.iface_open = eth_iface_open,
};

UNIO_TL_DRIVER_REGISTER(eth_driver);
