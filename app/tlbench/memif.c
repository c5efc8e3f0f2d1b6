/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * unio-tlbench -m N [-R]: 8-byte round trips over memif in one process, for instruction
 * counts under callgrind.  Two memif ports joined by one socket (net_memif0 the server,
 * net_memif1 the client); one thread sends on the first and progresses the second, which
 * echoes, then progresses the first.  Every frame crosses memif's shared rings, so what a
 * message costs is the PMD's rx and tx plus the driver's work on both sides.
 *
 *   without -R: an ethdev iface on each port (lib/tl), am_short of 8 bytes each way;
 *   with -R:    the raw frame round trip of e5_ethdev.c on the same ports: build an 8-byte
 *               UDP/IPv4 frame, rte_eth_tx_burst; the other port's rte_eth_rx_burst, parse,
 *               swap addresses, send it back; rx, parse, check, free.
 *
 * Without valgrind it also times batches of 1000 round trips (one thread does both sides'
 * work, so this is the CPU time of a round trip, without the cross-core hand-over).
 *
 * Set-up dominates short runs; the instructions per message are the difference of two runs
 * divided by the difference of their messages (two per round trip):
 *
 *   for n in 1000 3000; do valgrind --tool=callgrind --callgrind-out-file=cg.$n \
 *       build/app/tlbench/unio-tlbench -m $n; done
 *   (Ir(3000) - Ir(1000)) / 4000
 *
 * unio-tlbench -m N -P: N puts of 1 MiB instead (mf_put()).
 */

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "unio_config_priv.h"
#include "unio_env.h"
#include "unio_tl.h"

#include "tlbench.h"

#define MF_AM     7
#define MF_PING   9001
#define MF_PONG   9000
#define MF_MAGIC  0xfea5ab1e5eedull

struct mf_side {
	struct unio_tl_iface *iface;
	struct unio_tl_ep *ep;
	uint64_t got, want, bad;
};

static unio_status_t
mf_cb(void *arg, const void *data, size_t length, unsigned int flags, unio_tl_conn_id_t conn_id)
{
	struct mf_side *s = arg;
	uint64_t hdr;

	RTE_SET_USED(flags), RTE_SET_USED(conn_id);
	if (length != sizeof(hdr)) {
		s->bad++;
		return UNIO_OK;
	}
	memcpy(&hdr, data, sizeof(hdr));
	if (hdr != s->want)
		s->bad++;
	s->want++;
	s->got++;
	return UNIO_OK;
}

/* batches of MF_BATCH round trips, timed: the fastest and the median batch, ns per trip */
#define MF_BATCH 1000u
#define MF_MAX_BATCHES 4096u

static int
mf_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void
mf_report(const char *what, double *ns, unsigned int nb)
{
	if (nb == 0)
		return;
	qsort(ns, nb, sizeof(ns[0]), mf_cmp);
	printf("%s: %u batches of %u round trips, ns per round trip: min %.0f median %.0f\n",
	       what, nb, MF_BATCH, ns[0], ns[nb / 2]);
}

static double
mf_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * Wait until @p pid's link is down and the interrupt thread has finished handling the
 * disconnect: the client's port is stopped first and the server's only after that.  memif's
 * PMD marks the link down as the first step of its disconnect on the interrupt thread and
 * then frees what rte_eth_dev_stop() frees too, without a lock: stopping the server as soon
 * as the link read down freed it twice ("EAL: Error: Invalid memory", SIGSEGV).
 */
static void
mf_link_down_wait(uint16_t pid)
{
	for (int i = 0; i < 1000; i++) {
		struct rte_eth_link l;

		if (rte_eth_link_get_nowait(pid, &l) != 0 || l.link_status == 0)
			break;
		usleep(10000);
	}
	unio_env_intr_drain();
}

/* both ports' links up (the memif control thread connects the client) */
static int
mf_links_up(uint16_t p0, uint16_t p1, struct unio_tl_iface *a, struct unio_tl_iface *b)
{
	double end = mf_now() + 30;

	while (mf_now() < end) {
		struct rte_eth_link l0, l1;

		if (a != NULL)
			unio_tl_iface_progress(a);
		if (b != NULL)
			unio_tl_iface_progress(b);
		if (rte_eth_link_get_nowait(p0, &l0) == 0 &&
		    rte_eth_link_get_nowait(p1, &l1) == 0 && l0.link_status && l1.link_status)
			return 0;
		usleep(1000);
	}
	fprintf(stderr, "unio-tlbench: memif links did not come up\n");
	return -1;
}

static int
mf_eal(void)
{
	static char sock[64], v0[160], v1[160];
	char *eal[] = { (char *)"unio-tlbench", (char *)"-l", (char *)"0", (char *)"--no-pci",
			(char *)"--no-huge", (char *)"-m", (char *)"512", v0, v1, (char *)"--" };

	snprintf(sock, sizeof(sock), "/tmp/unio-tlbench-%d.sock", getpid());
	snprintf(v0, sizeof(v0), "--vdev=net_memif0,role=server,socket=%s,mac=02:00:00:00:05:0a",
		 sock);
	snprintf(v1, sizeof(v1), "--vdev=net_memif1,role=client,socket=%s,mac=02:00:00:00:05:0b",
		 sock);
	if (unio_env_init((int)RTE_DIM(eal), eal) < 0) {
		fprintf(stderr, "unio-tlbench: EAL init failed\n");
		return -1;
	}
	return 0;
}

static int
mf_port(const char *name, uint16_t *pid)
{
	if (rte_eth_dev_get_port_by_name(name, pid) != 0) {
		fprintf(stderr, "unio-tlbench: no port %s\n", name);
		return -1;
	}
	return 0;
}

static int
mf_open(const struct unio_tl_driver *drv, const struct unio_config *cfg, const char *dev,
	struct mf_side *s)
{
	struct unio_tl_iface_params p = { .config = cfg, .dev_name = dev, .cpu = -1 };

	if (unio_tl_iface_open(drv, &p, &s->iface) != UNIO_OK) {
		fprintf(stderr, "unio-tlbench: cannot open an ethdev iface on %s\n", dev);
		return -1;
	}
	return unio_tl_iface_set_am_handler(s->iface, MF_AM, mf_cb, s) == UNIO_OK ? 0 : -1;
}

static int
mf_connect(struct mf_side *s, struct mf_side *to)
{
	uint8_t addr[UNIO_TL_ADDR_MAX];
	struct unio_tl_ep_params p = { .iface_addr = addr,
				       .iface_addr_len = to->iface->attr.iface_addr_len };

	if (unio_tl_iface_get_address(to->iface, addr) != UNIO_OK)
		return -1;
	return unio_tl_ep_create(s->iface, &p, &s->ep) == UNIO_OK ? 0 : -1;
}

static int
mf_send(struct mf_side *s, uint64_t v)
{
	for (int k = 0; k < 1000000; k++) {
		if (unio_tl_ep_am_short(s->ep, MF_AM, v, NULL, 0) == UNIO_OK)
			return 0;
		unio_tl_iface_progress(s->iface);
	}
	return -1;
}

static int
mf_wait(struct mf_side *s, uint64_t want)
{
	for (int k = 0; k < 1000000 && s->got < want; k++)
		unio_tl_iface_progress(s->iface);
	return s->got >= want ? 0 : -1;
}

/*
 * EAL with both memif ports, an ethdev iface on each (@p a on net_memif0, @p b on
 * net_memif1), links up and an ep each way.  -1 before the ifaces are open, 1 after (close
 * them with mf_pair_close()), 0 when all is set.
 */
static int
mf_pair_open(struct mf_side *a, struct mf_side *b, uint16_t *p0)
{
	const struct unio_tl_driver *drv = unio_tl_driver_find("ethdev");
	static struct unio_config cfg;
	uint16_t p1;

	setenv("UNIO_ETHDEV_IP", "net_memif0:10.77.5.1,net_memif1:10.77.5.2", 1);
	if (drv == NULL || mf_eal() != 0 || unio_config_snapshot(&cfg) != UNIO_OK ||
	    mf_port("net_memif0", p0) != 0 || mf_port("net_memif1", &p1) != 0)
		return -1;
	if (mf_open(drv, &cfg, "net_memif0", a) != 0)
		return -1;
	if (mf_open(drv, &cfg, "net_memif1", b) != 0)
		return 1;       /* a's iface is open: mf_pair_close() closes it */
	if (mf_links_up(*p0, p1, a->iface, b->iface) != 0 || mf_connect(a, b) != 0 ||
	    mf_connect(b, a) != 0)
		return 1;
	return 0;
}

/* Let the last acks cross, then close what mf_pair_open() opened, the client's port first. */
static void
mf_pair_close(struct mf_side *a, struct mf_side *b, uint16_t p0)
{
	for (int k = 0; a->ep != NULL && b->ep != NULL && k < 100; k++) {
		unio_tl_iface_progress(a->iface);
		unio_tl_iface_progress(b->iface);
	}
	if (a->ep != NULL)
		unio_tl_ep_destroy(a->ep);
	if (b->ep != NULL)
		unio_tl_ep_destroy(b->ep);
	unio_tl_iface_close(b->iface);
	mf_link_down_wait(p0);
	unio_tl_iface_close(a->iface);
}

static int
mf_unio(unsigned int n)
{
	struct mf_side a = { 0 }, b = { 0 };
	static double ns[MF_MAX_BATCHES];
	unsigned int nb = 0;
	double t0 = 0;
	uint16_t p0;
	int rc = mf_pair_open(&a, &b, &p0);

	if (rc != 0) {
		if (rc > 0)
			mf_pair_close(&a, &b, p0);
		return 1;
	}
	for (unsigned int i = 0; i < n; i++) {
		if (i % MF_BATCH == 0)
			t0 = mf_now();
		if (mf_send(&a, i) != 0 || mf_wait(&b, i + 1ull) != 0 || mf_send(&b, i) != 0 ||
		    mf_wait(&a, i + 1ull) != 0)
			break;
		if (i % MF_BATCH == MF_BATCH - 1 && nb < MF_MAX_BATCHES)
			ns[nb++] = (mf_now() - t0) * 1e9 / MF_BATCH;
	}
	mf_report("memif Unio", ns, nb);
	printf("memif 8-byte am_short round trips: %" PRIu64 " of %u, %" PRIu64 " bad\n", a.got,
	       n, a.bad + b.bad);
	rc = a.got == n && b.got == n && a.bad + b.bad == 0 ? 0 : 1;
	mf_pair_close(&a, &b, p0);
	return rc;
}

/* ---- puts of 1 MiB from the first port's iface into a region of the second's ---- */

#define MF_MIB (1u << 20)
#define MF_PUT_BATCH 10u

static void
mf_put_cb(struct unio_tl_completion *c)
{
	RTE_SET_USED(c);
}

/* One put of @p src into @p dst; progress both ifaces until it completes. */
static unio_status_t
mf_put_one(struct mf_side *a, struct mf_side *b, const uint8_t *src, uint8_t *dst,
	   const struct unio_tl_rkey *rkey)
{
	/* static: a put that timed out still names it until its ep goes (mf_pair_close()) */
	static struct unio_tl_completion c;
	struct iovec iov = { (void *)(uintptr_t)src, MF_MIB };
	unio_status_t st;

	c = (struct unio_tl_completion){ .func = mf_put_cb, .count = 1, .status = UNIO_OK };
	for (int k = 0; k < 1000000; k++) {
		st = unio_tl_ep_put_zcopy(a->ep, &iov, 1, (uintptr_t)dst, rkey, &c);
		if (st != UNIO_ERR_NO_RESOURCE)
			break;
		unio_tl_iface_progress(a->iface);
		unio_tl_iface_progress(b->iface);
	}
	if (st != UNIO_INPROGRESS)
		return st;
	for (int k = 0; k < 10000000 && c.count != 0; k++) {
		unio_tl_iface_progress(a->iface);
		unio_tl_iface_progress(b->iface);
	}
	return c.count == 0 ? c.status : UNIO_ERR_TIMED_OUT;
}

/*
 * unio-tlbench -m N -P: N puts of 1 MiB (put_zcopy) from an iface of the first port into a
 * region registered on the second's, one thread progressing both; each put stamps its
 * number into the first and last 8 bytes, checked at the target, and the whole region is
 * compared with the source at the end.  Under callgrind the instructions of a MiB put are
 * (Ir(3N) - Ir(N)) / 2N; without valgrind it prints the MB/s of batches of 10 puts.
 */
static int
mf_put(unsigned int n)
{
	struct mf_side a = { 0 }, b = { 0 };
	static double mbs[MF_MAX_BATCHES];
	uint8_t key[UNIO_TL_RKEY_MAX];
	struct unio_tl_memh memh = { 0 };
	struct unio_tl_rkey rkey = { 0 };
	uint8_t *src = NULL, *dst = NULL;
	unsigned int nb = 0, done = 0;
	double t0 = 0;
	uint16_t p0;
	int rc = mf_pair_open(&a, &b, &p0);

	if (rc < 0)
		return 1;
	src = aligned_alloc(64, MF_MIB);
	dst = aligned_alloc(64, MF_MIB);
	if (rc != 0 || src == NULL || dst == NULL) {
		rc = 1;
		goto out;
	}
	for (size_t i = 0; i < MF_MIB; i++)
		src[i] = (uint8_t)(i * 131 + (i >> 11));
	memset(dst, 0, MF_MIB);
	if (unio_tl_mem_reg(b.iface, dst, MF_MIB, &memh) != UNIO_OK ||
	    unio_tl_rkey_pack(b.iface, &memh, key) != UNIO_OK ||
	    unio_tl_rkey_unpack(a.ep, key, b.iface->attr.rkey_packed_len, &rkey) != UNIO_OK) {
		fprintf(stderr, "unio-tlbench: cannot register and key the target region\n");
		rc = 1;
		goto out;
	}
	for (uint64_t i = 0; i < n; i++, done++) {
		uint64_t head, tail;
		unio_status_t st;

		if (i % MF_PUT_BATCH == 0)
			t0 = mf_now();
		memcpy(src, &i, sizeof(i));
		memcpy(src + MF_MIB - sizeof(i), &i, sizeof(i));
		st = mf_put_one(&a, &b, src, dst, &rkey);
		memcpy(&head, dst, sizeof(head));
		memcpy(&tail, dst + MF_MIB - sizeof(tail), sizeof(tail));
		if (st != UNIO_OK || head != i || tail != i) {
			fprintf(stderr, "unio-tlbench: put %" PRIu64 ": %s, stamps %" PRIu64
				" %" PRIu64 "\n", i, unio_status_string(st), head, tail);
			break;
		}
		if (i % MF_PUT_BATCH == MF_PUT_BATCH - 1 && nb < MF_MAX_BATCHES)
			mbs[nb++] = MF_PUT_BATCH * (double)MF_MIB / ((mf_now() - t0) * 1e6);
	}
	if (nb != 0) {
		qsort(mbs, nb, sizeof(mbs[0]), mf_cmp);
		printf("memif put: %u batches of %u puts of 1 MiB, MB/s: median %.0f max %.0f\n",
		       nb, MF_PUT_BATCH, mbs[nb / 2], mbs[nb - 1]);
	}
	rc = done == n && memcmp(src, dst, MF_MIB) == 0 ? 0 : 1;
	printf("memif 1 MiB puts: %u of %u, region %s\n", done, n,
	       rc == 0 ? "verified" : "differs");
out:
	if (rkey.priv != NULL)
		unio_tl_rkey_release(a.ep, &rkey);
	if (memh.priv != NULL)
		unio_tl_mem_dereg(b.iface, &memh);
	mf_pair_close(&a, &b, p0);
	free(src);
	free(dst);
	return rc;
}

/* ---- the raw frame round trip (e5_ethdev.c's ping and pong) ---- */

/* after the 42 bytes of headers: 2 bytes off any 8-byte boundary, hence packed */
struct mf_payload {
	uint64_t magic, seq;
} __rte_packed;

static int
mf_raw_port(uint16_t pid, struct rte_mempool *mp)
{
	uint16_t nrx = 1024, ntx = 1024;
	struct rte_eth_conf conf;

	memset(&conf, 0, sizeof(conf));
	if (rte_eth_dev_configure(pid, 1, 1, &conf) != 0 ||
	    rte_eth_dev_adjust_nb_rx_tx_desc(pid, &nrx, &ntx) != 0 ||
	    rte_eth_rx_queue_setup(pid, 0, nrx, rte_eth_dev_socket_id(pid), NULL, mp) != 0 ||
	    rte_eth_tx_queue_setup(pid, 0, ntx, rte_eth_dev_socket_id(pid), NULL) != 0 ||
	    rte_eth_dev_start(pid) != 0) {
		fprintf(stderr, "unio-tlbench: cannot start port %u\n", pid);
		return -1;
	}
	return 0;
}

static __rte_noinline struct rte_mbuf *
mf_build(struct rte_mempool *mp, const struct rte_ether_addr *src,
	 const struct rte_ether_addr *dst, uint64_t seq)
{
	const uint16_t len = sizeof(struct rte_ether_hdr) + sizeof(struct rte_ipv4_hdr) +
			     sizeof(struct rte_udp_hdr) + sizeof(struct mf_payload);
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	struct rte_ether_hdr *eh;
	struct rte_ipv4_hdr *ip;
	struct rte_udp_hdr *uh;
	struct mf_payload *pl;

	if (m == NULL)
		return NULL;
	eh = (struct rte_ether_hdr *)rte_pktmbuf_append(m, len);
	ip = (struct rte_ipv4_hdr *)(eh + 1);
	uh = (struct rte_udp_hdr *)(ip + 1);
	pl = (struct mf_payload *)(uh + 1);
	eh->dst_addr = *dst;
	eh->src_addr = *src;
	eh->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	memset(ip, 0, sizeof(*ip));
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->total_length = rte_cpu_to_be_16(len - sizeof(*eh));
	ip->src_addr = RTE_BE32(0x0a4d0501);
	ip->dst_addr = RTE_BE32(0x0a4d0502);
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	uh->src_port = RTE_BE16(MF_PING);
	uh->dst_port = RTE_BE16(MF_PONG);
	uh->dgram_len = rte_cpu_to_be_16(sizeof(*uh) + sizeof(*pl));
	uh->dgram_cksum = 0;
	pl->magic = MF_MAGIC;
	pl->seq = seq;
	return m;
}

static struct mf_payload *
mf_parse(struct rte_mbuf *m, uint16_t dport)
{
	struct rte_ether_hdr *eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eh + 1);
	struct rte_udp_hdr *uh;

	if (m->data_len < sizeof(*eh) + sizeof(*ip) + sizeof(*uh) + sizeof(struct mf_payload) ||
	    eh->ether_type != RTE_BE16(RTE_ETHER_TYPE_IPV4) || ip->next_proto_id != IPPROTO_UDP)
		return NULL;
	uh = (struct rte_udp_hdr *)((uint8_t *)ip + rte_ipv4_hdr_len(ip));
	return uh->dst_port == rte_cpu_to_be_16(dport) ? (struct mf_payload *)(uh + 1) : NULL;
}

/* the pong side: every frame to MF_PONG goes back with its addresses swapped */
static __rte_noinline unsigned int
mf_pong(uint16_t pid, const struct rte_ether_addr *own)
{
	struct rte_mbuf *pk[32];
	uint16_t n = rte_eth_rx_burst(pid, 0, pk, RTE_DIM(pk)), ntx = 0;

	for (uint16_t k = 0; k < n; k++) {
		struct rte_ether_hdr *eh = rte_pktmbuf_mtod(pk[k], struct rte_ether_hdr *);
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eh + 1);
		struct rte_udp_hdr *uh = (struct rte_udp_hdr *)(ip + 1);
		rte_be32_t a;
		rte_be16_t p;

		if (mf_parse(pk[k], MF_PONG) == NULL) {
			rte_pktmbuf_free(pk[k]);
			continue;
		}
		eh->dst_addr = eh->src_addr;
		eh->src_addr = *own;
		a = ip->src_addr;
		ip->src_addr = ip->dst_addr;
		ip->dst_addr = a;
		p = uh->src_port;
		uh->src_port = uh->dst_port;
		uh->dst_port = p;
		pk[ntx++] = pk[k];
	}
	for (uint16_t sent = 0; sent < ntx;)
		sent += rte_eth_tx_burst(pid, 0, pk + sent, (uint16_t)(ntx - sent));
	return n;
}

static int
mf_raw(unsigned int n)
{
	struct rte_ether_addr mac0, mac1;
	static double ns[MF_MAX_BATCHES];
	unsigned int nb = 0;
	double t0 = 0;
	struct rte_mempool *mp;
	uint64_t got = 0, bad = 0;
	uint16_t p0, p1;

	if (mf_eal() != 0 || mf_port("net_memif0", &p0) != 0 || mf_port("net_memif1", &p1) != 0)
		return 1;
	mp = rte_pktmbuf_pool_create("tlbench_mf", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				     (int)rte_socket_id());
	if (mp == NULL || mf_raw_port(p0, mp) != 0 || mf_raw_port(p1, mp) != 0 ||
	    rte_eth_macaddr_get(p0, &mac0) != 0 || rte_eth_macaddr_get(p1, &mac1) != 0 ||
	    mf_links_up(p0, p1, NULL, NULL) != 0)
		return 1;
	for (unsigned int i = 0; i < n; i++) {
		struct rte_mbuf *m, *pk[32];
		bool done = false;

		if (i % MF_BATCH == 0)
			t0 = mf_now();
		m = mf_build(mp, &mac0, &mac1, i);
		if (m == NULL)
			break;
		for (int k = 0; k < 1000000 && rte_eth_tx_burst(p0, 0, &m, 1) == 0; k++) {
			mf_pong(p1, &mac1);
			if (k == 999999) {
				fprintf(stderr, "unio-tlbench: port %u refuses to send\n", p0);
				rte_pktmbuf_free(m);
				goto out;
			}
		}
		for (int k = 0; k < 1000000 && mf_pong(p1, &mac1) == 0; k++)
			;
		for (int k = 0; k < 1000000 && !done; k++) {
			uint16_t r = rte_eth_rx_burst(p0, 0, pk, RTE_DIM(pk));

			for (uint16_t j = 0; j < r; j++) {
				struct mf_payload *pl = mf_parse(pk[j], MF_PING);

				if (pl != NULL && pl->magic == MF_MAGIC && pl->seq == i)
					done = true;
				else
					bad++;
				rte_pktmbuf_free(pk[j]);
			}
		}
		if (!done)
			break;
		got++;
		if (i % MF_BATCH == MF_BATCH - 1 && nb < MF_MAX_BATCHES)
			ns[nb++] = (mf_now() - t0) * 1e9 / MF_BATCH;
	}
out:
	mf_report("memif raw", ns, nb);
	printf("memif raw 8-byte frame round trips: %" PRIu64 " of %u, %" PRIu64 " bad\n", got, n,
	       bad);
	rte_eth_dev_stop(p1);
	mf_link_down_wait(p0);
	rte_eth_dev_stop(p0);
	return got == n && bad == 0 ? 0 : 1;
}

int
memif_mode(unsigned int n, bool raw, bool put)
{
	return raw ? mf_raw(n) : put ? mf_put(n) : mf_unio(n);
}
