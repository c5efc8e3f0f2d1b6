/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ethdev driver tests: two real processes, each in its own network namespace (or joined by
 * memif), exchange checksummed messages of many sizes through the driver's ifaces in both
 * directions and check exact counts and order.  Variants add 5 % random loss in a bridge
 * namespace, a raw-socket fuzzer in the peer namespace, and kernel ping / arping.  A loss
 * or rate-limited bridge is checked to have been there (nft drop counters, tbf bytes sent).
 * Every test builds its topology with usertools/unio-topology.sh under a unique name and
 * tears it down on every path.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_memory.h>
#include <rte_mempool.h>
#include <rte_udp.h>

#include "ethdev_priv.h"
#include "unio_env.h"
#include "unio_test.h"
#include "unio_tl.h"
#include "unio_tl_ethdev.h"

#define AM_DATA 1
#define AM_BYE  2
#define AM_PING 3
#define AM_LOCAL 4
#define IP_A    "10.77.0.1"
#define IP_B    "10.77.0.2"
#define IP_KERN "10.77.0.3"
#define FUZZ_KINDS 9

static const size_t sizes_full[] = { 16, 17, 64, 0 /* max short */, 1000, 1500, 3000, 9000,
				     30000, 65536 };
static const size_t sizes_small[] = { 16, 64, 200, 0, 1000, 1500, 3000, 9000 };
static const size_t sizes_8k[] = { 8192 };
static const size_t sizes_tiny[] = { 16, 64, 200, 0, 1000, 1500, 3000 };
static const size_t sizes_64k[] = { 65536 };

struct peer {
	struct unio_tl_iface *iface;
	struct unio_tl_ep *ep;
	struct eth_addr self, other;
	const size_t *sizes;
	size_t n_sizes;
	size_t max_short;
	uint64_t n_tx, n_rx, sent, rcvd, bad, rx_bytes;
	int bye;
	int role;
	int pong;                   /* pingpong: 1 echoes, 0 measures */
	uint64_t pings, owed;
	unio_status_t err;          /* from err_cb */
	struct unio_tl_ep *ep2;     /* arp: an ep to an address nobody answers */
	unio_status_t err2;
	const char *vdev;
	uint8_t am;                 /* AM id of the data messages sent (0: AM_DATA) */
	int zc;                     /* send with am_zcopy + completions from rotating buffers */
	uint64_t zc_done;           /* completions seen */
	uint64_t zc_big;            /* zcopy sends left in progress (not completed at once) */
	uint64_t zc_now;            /* ... of ETH_ZCOPY_MIN and more completed at once (a
				     * lossless ep: the PMD copied every frame) */
	uint64_t zc_in_send;        /* completions run inside a send call (must be none) */
	int slow;                   /* slowrx receiver: sleeps 1 ms after each progress call */
	uint64_t slow_after;        /* ... once it received this many messages */
	uint8_t buf[ETH_MAX_MSG];
};

/*
 * ---- what a peer built, released on every path ----
 *
 * A peer that failed midway (a timeout, its partner killed) returned from an assertion with
 * its eps and ifaces still open, and the ASan build then reported their buffers as leaks
 * (an ep's rte_malloc'd state is not scanned; the malloc'd buffers it points to looked
 * unreachable), burying the failure itself under the leak report.  Every ep and iface a
 * child opens goes through these; the child's entry releases what is left, eps before
 * their ifaces, whatever path it took; EAL goes last, at exit (unio_env.h).
 */
#define T_MAX_EPS    16
#define T_MAX_IFACES 8

static struct unio_tl_ep *t_eps[T_MAX_EPS];
static struct unio_tl_iface *t_ifaces[T_MAX_IFACES];

static unio_status_t
t_iface_open(const struct unio_tl_driver *drv, const struct unio_tl_iface_params *params,
	     struct unio_tl_iface **iface_p)
{
	unio_status_t st = unio_tl_iface_open(drv, params, iface_p);

	for (unsigned int i = 0; st == UNIO_OK && i < T_MAX_IFACES; i++)
		if (t_ifaces[i] == NULL) {
			t_ifaces[i] = *iface_p;
			break;
		}
	return st;
}

static unio_status_t
t_ep_create(struct unio_tl_iface *iface, const struct unio_tl_ep_params *params,
	    struct unio_tl_ep **ep_p)
{
	unio_status_t st = unio_tl_ep_create(iface, params, ep_p);

	for (unsigned int i = 0; st == UNIO_OK && i < T_MAX_EPS; i++)
		if (t_eps[i] == NULL) {
			t_eps[i] = *ep_p;
			break;
		}
	return st;
}

static void
t_ep_destroy(struct unio_tl_ep *ep)
{
	if (ep == NULL)
		return;
	for (unsigned int i = 0; i < T_MAX_EPS; i++)
		if (t_eps[i] == ep)
			t_eps[i] = NULL;
	unio_tl_ep_destroy(ep);
}

/* Close @p iface: the eps still open on it go with it (the driver frees them). */
static void
t_iface_close(struct unio_tl_iface *iface)
{
	if (iface == NULL)
		return;
	for (unsigned int i = 0; i < T_MAX_EPS; i++)
		if (t_eps[i] != NULL && t_eps[i]->iface == iface)
			t_eps[i] = NULL;
	for (unsigned int i = 0; i < T_MAX_IFACES; i++)
		if (t_ifaces[i] == iface)
			t_ifaces[i] = NULL;
	unio_tl_iface_close(iface);
}

/* The child's exit: whatever is still open, eps before ifaces, newest first. */
static int
t_release(int rc)
{
	for (unsigned int i = T_MAX_EPS; i-- > 0;)
		t_ep_destroy(t_eps[i]);
	for (unsigned int i = T_MAX_IFACES; i-- > 0;)
		t_iface_close(t_ifaces[i]);
	return rc;
}

/* The TSC at @p deadline (test_now_s() time): clock_gettime is slow on this VM, rdtsc is not. */
static uint64_t
deadline_tsc(double deadline)
{
	double left = deadline - test_now_s();

	return rte_rdtsc() + (uint64_t)(RTE_MAX(left, 0.0) * (double)rte_get_tsc_hz());
}

/*
 * The peers' time limits follow their progress, not the clock alone: a peer fails when
 * nothing moved (no message sent, received or completed, no ping answered) for
 * PEER_STALL_S seconds, or after PEER_CAP_S in all.  A fixed 50 s for the whole exchange
 * was missed by ASan builds beside another build at load 12-21 (ethdev_zcopy_loss5: 1819 of
 * 2000 64 KiB messages through 5 % loss in 50.7 s, moving all the time).  The cap stays
 * below the mp suite's 300 s per test.
 */
#define PEER_STALL_S 30.0
#define PEER_CAP_S   240.0

/* UNIO_TEST_ETH_STALL_S: a shorter stall limit, to make a peer fail on purpose */
static double
peer_stall_s(void)
{
	const char *v = getenv("UNIO_TEST_ETH_STALL_S");
	double s = v != NULL ? atof(v) : 0;

	return s > 0 ? s : PEER_STALL_S;
}

struct stall {
	uint64_t cap, window, last, mark;
};

static void
stall_init(struct stall *d, double deadline)
{
	d->cap = deadline_tsc(deadline);
	d->window = (uint64_t)(peer_stall_s() * (double)rte_get_tsc_hz());
	d->last = rte_rdtsc();
	d->mark = UINT64_MAX;
}

/* Still in time with progress counter @p mark (any sum that grows while work gets done)? */
static bool
stall_ok(struct stall *d, uint64_t mark)
{
	uint64_t now = rte_rdtsc();

	if (mark != d->mark) {
		d->mark = mark;
		d->last = now;
	}
	return now < d->cap && now - d->last < d->window;
}

static size_t
msg_size(const struct peer *p, uint64_t seq)
{
	size_t s = p->sizes[seq % p->n_sizes];

	return s == 0 ? p->max_short + 8 : s;
}

/* [u64 seq][u64 sum of the rest][test_fill(rest, seed)] */
static void
msg_make(uint8_t *buf, size_t len, uint64_t seq, int role)
{
	uint64_t sum;

	memcpy(buf, &seq, 8);
	test_fill(buf + 16, len - 16, seq * 2 + (uint64_t)role);
	sum = test_checksum(buf + 16, len - 16);
	memcpy(buf + 8, &sum, 8);
}

static unio_status_t
data_cb(void *arg, const void *data, size_t length, unsigned int flags, unio_tl_conn_id_t conn_id)
{
	struct peer *p = arg;
	const uint8_t *d = data;
	uint64_t seq, sum;

	RTE_SET_USED(flags), RTE_SET_USED(conn_id);
	if (length < 16) {
		p->bad++;
		return UNIO_OK;
	}
	memcpy(&seq, d, 8);
	memcpy(&sum, d + 8, 8);
	if (seq != p->rcvd || length != msg_size(p, seq) ||
	    sum != test_checksum(d + 16, length - 16)) {
		if (p->bad++ < 5)
			TEST_LOG("bad message: seq %" PRIu64 " (want %" PRIu64 ") len %zu",
				 seq, p->rcvd, length);
	}
	p->rcvd++;
	p->rx_bytes += length;
	return UNIO_OK;
}

static unio_status_t
bye_cb(void *arg, const void *data, size_t length, unsigned int flags, unio_tl_conn_id_t conn_id)
{
	RTE_SET_USED(data), RTE_SET_USED(length), RTE_SET_USED(flags), RTE_SET_USED(conn_id);
	((struct peer *)arg)->bye = 1;
	return UNIO_OK;
}

static unio_status_t
ping_cb(void *arg, const void *data, size_t length, unsigned int flags, unio_tl_conn_id_t conn_id)
{
	struct peer *p = arg;
	uint64_t v;

	RTE_SET_USED(flags), RTE_SET_USED(conn_id);
	if (length != 8) {
		p->bad++;
		return UNIO_OK;
	}
	memcpy(&v, data, 8);
	if (v != p->pings)
		p->bad++;
	p->pings++;
	p->owed += p->pong;      /* replies go out from the loop: the ep may not exist yet */
	return UNIO_OK;
}

static void
err_cb(void *arg, struct unio_tl_ep *ep, unio_status_t st)
{
	struct peer *p = arg;

	if (ep == p->ep)
		p->err = st;
	if (ep == p->ep2)
		p->err2 = st;
}

struct pack_arg {
	const uint8_t *buf;
	size_t len;
};

static size_t
pack_cb(void *dest, void *arg)
{
	const struct pack_arg *a = arg;

	memcpy(dest, a->buf, a->len);
	return a->len;
}

#define ZC_BUFS 32

struct zc_req {
	struct unio_tl_completion c;   /* first: the callback casts back */
	struct peer *p;
	int busy;
};

static uint8_t zc_buf[ZC_BUFS][ETH_MAX_MSG];
static struct zc_req zc_req[ZC_BUFS];
static bool zc_sending;        /* inside unio_tl_ep_am_zcopy() */

static void
zc_cb(struct unio_tl_completion *c)
{
	struct zc_req *r = (struct zc_req *)c;

	r->busy = 0;
	r->p->zc_done++;
	r->p->zc_in_send += zc_sending;
	if (c->status != UNIO_OK)
		r->p->bad++;
}

/*
 * am_zcopy with a completion from one of ZC_BUFS buffers, reused only after its completion:
 * a driver that still read a buffer after completing it would send the next message's bytes
 * and the receiver's checksum would catch it.
 */
static unio_status_t
send_zc(struct peer *p)
{
	unsigned int k = (unsigned int)(p->sent % ZC_BUFS);
	size_t len = msg_size(p, p->sent);
	struct zc_req *r = &zc_req[k];
	struct iovec iov[2] = {
		{ .iov_base = zc_buf[k] + 16, .iov_len = (len - 16) / 3 },
		{ .iov_base = zc_buf[k] + 16 + (len - 16) / 3,
		  .iov_len = len - 16 - (len - 16) / 3 },
	};
	unio_status_t st;

	if (r->busy)
		return UNIO_ERR_NO_RESOURCE;
	msg_make(zc_buf[k], len, p->sent, p->role);
	r->c = (struct unio_tl_completion){ .func = zc_cb, .count = 1, .status = UNIO_OK };
	r->p = p;
	r->busy = 1;
	zc_sending = true;
	st = unio_tl_ep_am_zcopy(p->ep, AM_DATA, zc_buf[k], 16, iov, 2, 0, &r->c);
	zc_sending = false;
	p->zc_big += st == UNIO_INPROGRESS;
	if (st != UNIO_INPROGRESS) {
		r->busy = 0;
		p->zc_done += st == UNIO_OK;
		p->zc_now += st == UNIO_OK && len - 16 >= ETH_ZCOPY_MIN;
	}
	return st == UNIO_INPROGRESS ? UNIO_OK : st;
}

static unio_status_t
send_one(struct peer *p)
{
	if (p->zc)
		return send_zc(p);

	size_t len = msg_size(p, p->sent);
	uint8_t am = p->am != 0 ? p->am : AM_DATA;
	uint64_t hdr;

	msg_make(p->buf, len, p->sent, p->role);
	if (len <= p->max_short + 8) {
		memcpy(&hdr, p->buf, 8);
		return unio_tl_ep_am_short(p->ep, am, hdr, p->buf + 8, len - 8);
	}
	if (p->sent % 2 == 0) {
		struct pack_arg a = { p->buf, len };
		ssize_t r = unio_tl_ep_am_bcopy(p->ep, am, pack_cb, &a, 0);

		return r < 0 ? (unio_status_t)r : UNIO_OK;
	}
	struct iovec iov[2] = {
		{ .iov_base = p->buf + 16, .iov_len = (len - 16) / 2 },
		{ .iov_base = p->buf + 16 + (len - 16) / 2, .iov_len = len - 16 - (len - 16) / 2 },
	};
	unio_status_t st = unio_tl_ep_am_zcopy(p->ep, am, p->buf, 16, iov, 2, 0, NULL);

	return st == UNIO_INPROGRESS ? UNIO_OK : st;
}

/* ---- address exchange through files (out of band) ---- */

static int
addr_write(const char *prefix, int role, const struct eth_addr *a)
{
	char path[256], tmp[300];
	FILE *f;

	snprintf(path, sizeof(path), "%s-%c.addr", prefix, 'a' + role);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (f == NULL)
		return -1;
	fwrite(a, sizeof(*a), 1, f);
	fclose(f);
	return rename(tmp, path);
}

static int
addr_read(struct peer *p, const char *prefix, int role, double deadline)
{
	char path[256];

	snprintf(path, sizeof(path), "%s-%c.addr", prefix, 'a' + role);
	while (test_now_s() < deadline) {
		FILE *f = fopen(path, "r");

		if (f != NULL) {
			size_t n = fread(&p->other, sizeof(p->other), 1, f);

			fclose(f);
			if (n == 1)
				return 0;
		}
		unio_tl_iface_progress(p->iface);
	}
	return -1;
}

/* ---- the raw-socket fuzzer (runs in the peer namespace) ---- */

struct fuzz {
	int fd;
	struct sockaddr_ll sll;
	uint8_t mac_src[6];
};

static int
fuzz_open(struct fuzz *fz, const char *ifname)
{
	fz->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (fz->fd < 0)
		return -1;
	memset(&fz->sll, 0, sizeof(fz->sll));
	fz->sll.sll_family = AF_PACKET;
	fz->sll.sll_ifindex = (int)if_nametoindex(ifname);
	fz->sll.sll_halen = 6;
	return fz->sll.sll_ifindex == 0 ? -1 : 0;
}

/*
 * A valid-looking Unio frame from @p p to its peer, its headers as the driver writes them
 * (DF set, no UDP checksum, dial id 0 as on these connections): the receiver's fast path
 * (rx_fast(), one comparison with the connection's template) meets every kind first, and
 * each kind differs from a frame of the connection only in what the caller breaks.
 */
static size_t
fuzz_frame(const struct peer *p, uint8_t *f, uint16_t len)
{
	struct rte_ether_hdr *eh = (struct rte_ether_hdr *)f;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eh + 1);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
	struct eth_wire *w = (struct eth_wire *)(udp + 1);
	size_t total = ETH_L2L3L4 + sizeof(*w) + len;

	memset(f, 0, total);
	eh->dst_addr = p->other.mac;
	eh->src_addr = p->self.mac;
	eh->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(total - sizeof(*eh)));
	ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = p->self.ip;
	ip->dst_addr = p->other.ip;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp->src_port = p->self.udp_port;
	udp->dst_port = p->other.udp_port;
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(sizeof(*udp) + sizeof(*w) + len));
	w->magic = ETH_MAGIC;
	w->version = ETH_VERSION;
	w->type = ETH_FT_DATA;
	w->flags = ETH_FF_FIRST | ETH_FF_LAST;
	w->am_id = AM_DATA;
	w->len = len;
	w->msg_len = len;
	w->dst_conn = p->other.conn;
	w->src_conn = p->self.conn;
	w->seq = 0x40000000u;
	w->ack = 0;
	return total;
}

/* Send one malformed frame of kind @p k (0 .. FUZZ_KINDS-1). */
static void
fuzz_send(struct fuzz *fz, const struct peer *p, unsigned int k)
{
	uint8_t f[256];
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(f + sizeof(struct rte_ether_hdr));
	struct eth_wire *w = (struct eth_wire *)(f + ETH_L2L3L4);
	size_t len = fuzz_frame(p, f, 32);

	switch (k) {
	case 0:            /* truncated: IPv4 total length beyond the frame */
		ip->total_length = rte_cpu_to_be_16(1400);
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		break;
	case 1:            /* another protocol */
		((struct rte_ether_hdr *)f)->ether_type = rte_cpu_to_be_16(0x88b5);
		break;
	case 2:            /* bad IPv4 checksum */
		ip->hdr_checksum ^= 0x1234;
		break;
	case 3:            /* unknown connection id */
		w->dst_conn ^= 0x5a5a5a5a;
		break;
	case 4:            /* forged sequence number far outside the window */
		break;
	case 5:            /* impossible length in the Unio header */
		w->len = 60000;
		break;
	case 6:            /* bad magic */
		w->magic = 0;
		break;
	case 7:            /* a peer of the previous frame version (no dial id, no echo delay) */
		w->version = 1;
		break;
	case 8: {          /* a UDP checksum (optional in IPv4) that is wrong */
		struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

		udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp) ^ 0x0101;
		break;
	}
	}
	memcpy(fz->sll.sll_addr, &p->other.mac, 6);
	if (sendto(fz->fd, f, len, 0, (struct sockaddr *)&fz->sll, sizeof(fz->sll)) < 0)
		TEST_LOG("fuzz sendto: %s", strerror(errno));
}

static int
fuzz_check(const struct unio_tl_ethdev_stats *s, uint64_t k)
{
	TEST_ASSERT(s->drop_truncated >= k, "truncated %" PRIu64, s->drop_truncated);
	TEST_ASSERT(s->drop_other_proto >= k, "other %" PRIu64, s->drop_other_proto);
	TEST_ASSERT_EQ(s->drop_bad_csum, 2 * k);   /* IPv4, UDP */
	TEST_ASSERT_EQ(s->drop_unknown_conn, k);
	TEST_ASSERT_EQ(s->drop_bad_seq, k);
	TEST_ASSERT_EQ(s->drop_bad_len, k);
	TEST_ASSERT_EQ(s->drop_bad_hdr, 2 * k);   /* bad magic, another version */
	return TEST_OK;
}

/* ---- the peer process ---- */

/* Whether the devargs port @p name was probed with contain @p arg. */
static bool
port_probed_with(const char *name, const char *arg)
{
	struct rte_eth_dev_info info;
	const struct rte_devargs *da;
	uint16_t pid;

	if (rte_eth_dev_get_port_by_name(name, &pid) != 0 ||
	    rte_eth_dev_info_get(pid, &info) != 0 || info.device == NULL)
		return false;
	da = rte_dev_devargs(info.device);
	return da != NULL && da->args != NULL && strstr(da->args, arg) != NULL;
}

static int
peer_open(struct peer *p, const char *vdev, const char *ip, int role)
{
	const struct unio_tl_driver *drv = unio_tl_driver_find("ethdev");
	struct unio_tl_device_info devs[UNIO_TL_MAX_DEVICES];
	static struct unio_config cfg;
	struct unio_tl_iface_params ip_params = { 0 };
	char vdev_arg[256], lcore[8], reason[128];
	char *eal[] = { (char *)"unio-test", (char *)"-l", lcore, vdev_arg, (char *)"--" };
	unsigned int n = 0;

	snprintf(vdev_arg, sizeof(vdev_arg), "--vdev=%s", vdev);
	snprintf(lcore, sizeof(lcore), "%d", role);
	setenv("UNIO_ETHDEV_IP", ip, 1);
	setenv("UNIO_ETHDEV_RETRIES", "14", 1);
	if (role == 1)
		setenv("UNIO_ETHDEV_ARP", IP_A "/02000000000a", 1);
	if (strstr(vdev, "qpairs=2") != NULL)
		setenv("UNIO_ETHDEV_QUEUES", "2", 1);
	/* this shared 2-core host delays the kernel's forwarding by milliseconds */
	setenv("UNIO_ETHDEV_TARGET_DELAY", "5ms", 1);
	TEST_ASSERT(drv != NULL, "no ethdev driver");
	TEST_ASSERT(unio_env_init((int)RTE_DIM(eal), eal) >= 0, "EAL init failed");
	TEST_ASSERT_STATUS(unio_config_snapshot(&cfg), UNIO_OK);
	TEST_ASSERT_STATUS(unio_tl_query_devices(drv, &cfg, devs, &n, reason, sizeof(reason)),
			   UNIO_OK);
	TEST_ASSERT(n >= 1, "no device: %s", reason);
	ip_params.config = &cfg;
	ip_params.dev_name = devs[0].name;
	ip_params.cpu = -1;
	ip_params.err_cb = err_cb;
	ip_params.err_arg = p;
	TEST_ASSERT_STATUS(t_iface_open(drv, &ip_params, &p->iface), UNIO_OK);
	/* af_xdp on a veth: probed again without busy polling (the veth has no NAPI id) */
	if (strncmp(vdev, "net_af_xdp", 10) == 0 && strstr(vdev, "busy_budget") == NULL)
		TEST_ASSERT(port_probed_with(devs[0].name, "busy_budget=0"), "%s: busy polling",
			    devs[0].name);
	/* ... and sends no UDP checksum (kernel buffers only); af_packet keeps it */
	if (strncmp(vdev, "net_af_", 7) == 0)
		TEST_ASSERT_EQ(((struct eth_iface *)p->iface)->no_udp_csum,
			       strncmp(vdev, "net_af_xdp", 10) == 0);
	TEST_ASSERT_STATUS(unio_tl_iface_get_address(p->iface, &p->self), UNIO_OK);
	p->max_short = p->iface->attr.max_short;
	p->role = role;
	unio_tl_iface_set_am_handler(p->iface, AM_DATA, data_cb, p);
	unio_tl_iface_set_am_handler(p->iface, AM_BYE, bye_cb, p);
	unio_tl_iface_set_am_handler(p->iface, AM_PING, ping_cb, p);
	return TEST_OK;
}

/* Send and receive p->n messages, then exchange BYE and linger briefly for late acks. */
static bool
memif(const struct peer *p)
{
	return p->vdev != NULL && strstr(p->vdev, "net_memif") != NULL;
}

/*
 * memif: DPDK's PMD crashed (SIGSEGV in its rx / tx burst, now and then in
 * ethdev_pingpong_memif) when a side polled while its control thread handled the peer's
 * disconnect.  The client (role 1) lingers longer and closes first; the server stops polling
 * after its shorter linger and closes only once the client's port is gone (link down).
 */
static void
memif_server_wait(const struct peer *p)
{
	struct rte_eth_link link;

	if (!memif(p) || p->role != 0)
		return;
	for (int i = 0; i < 300; i++) {
		if (rte_eth_link_get_nowait(0, &link) != 0 || link.link_status == 0)
			return;
		usleep(10000);
	}
}

static int
peer_run(struct peer *p, struct fuzz *fz, uint64_t fuzz_k, double deadline)
{
	uint64_t fuzzed = 0;
	int bye_sent = 0;
	double linger = 0;
	struct stall st;

	stall_init(&st, deadline);
	while (stall_ok(&st, p->sent + p->rcvd + p->zc_done + fuzzed + (uint64_t)bye_sent +
			    (uint64_t)p->bye)) {
		/* idle: let the kernel's softirqs (bridge, tbf, veth) run on this shared CPU */
		if (unio_tl_iface_progress(p->iface) == 0)
			sched_yield();
		if (p->slow && p->rcvd >= p->slow_after)
			usleep(1000);
		while (p->sent < p->n_tx && send_one(p) == UNIO_OK)
			p->sent++;
		if (fz != NULL && fuzzed < fuzz_k * FUZZ_KINDS && p->sent > p->n_tx * fuzzed /
		    (fuzz_k * FUZZ_KINDS + 1))
			fuzz_send(fz, p, (unsigned int)(fuzzed++ % FUZZ_KINDS));
		if (!bye_sent && p->sent == p->n_tx && p->rcvd == p->n_rx &&
		    (!p->zc || p->zc_done == p->n_tx) &&
		    (fz == NULL || fuzzed == fuzz_k * FUZZ_KINDS))
			bye_sent = unio_tl_ep_am_short(p->ep, AM_BYE, 0, NULL, 0) == UNIO_OK;
		if (bye_sent && p->bye && linger == 0 &&
		    unio_tl_ep_flush(p->ep, NULL) == UNIO_OK)
			linger = test_now_s() + (!memif(p) ? 0.3 : p->role == 0 ? 0.1 : 0.5);
		if (linger != 0 && test_now_s() > linger)
			return TEST_OK;
	}
	TEST_LOG("role %d: %s: sent %" PRIu64 " rcvd %" PRIu64 " bye %d/%d", p->role,
		 rte_rdtsc() >= st.cap ? "deadline" : "no progress for the stall limit",
		 p->sent, p->rcvd, bye_sent, p->bye);
	return TEST_FAIL;
}

static void
stats_log(const struct peer *p, const struct unio_tl_ethdev_stats *s, double secs)
{
	TEST_LOG("role %c: %.2f s, msgs %" PRIu64 ", tx data %" PRIu64 " (%" PRIu64 " B) retx %"
		 PRIu64 " (%" PRIu64 " B, fast %" PRIu64 ", probes %" PRIu64 ", timeouts %" PRIu64
		 ") acks %" PRIu64
		 ", rx dup %" PRIu64 " ooo %" PRIu64 ", drops: trunc %" PRIu64 " other %"
		 PRIu64 " notours %" PRIu64 " csum %" PRIu64 " len %" PRIu64 " hdr %" PRIu64
		 " conn %" PRIu64 " seq %" PRIu64 " msg %" PRIu64 " nombuf %" PRIu64
		 "; sends refused: cwnd %" PRIu64 " window %" PRIu64 " credit %" PRIu64
		 " txq %" PRIu64 ", idle yields %" PRIu64 "; rtt samples %" PRIu64 " (host time %"
		 PRIu64 ", stale %" PRIu64 "), cwnd decreases %" PRIu64 ", tx bursts %" PRIu64
		 ", gets placed %" PRIu64,
		 'a' + p->role, secs,
		 s->msgs_delivered, s->tx_data, s->tx_data_bytes, s->tx_retx, s->tx_retx_bytes,
		 s->fast_retx, s->probes, s->timeouts, s->tx_acks, s->rx_dup, s->rx_ooo,
		 s->drop_truncated,
		 s->drop_other_proto, s->drop_not_ours, s->drop_bad_csum, s->drop_bad_len,
		 s->drop_bad_hdr, s->drop_unknown_conn, s->drop_bad_seq, s->drop_bad_msg,
		 s->tx_no_mbuf, s->tx_refused_cwnd, s->tx_refused_window, s->tx_refused_credit,
		 s->tx_refused_txq, s->idle_yields, s->cc_samples, s->cc_host_samples,
		 s->cc_stale_samples, s->cc_decreases, s->tx_bursts, s->rx_get_direct);
}

static void stats_log(const struct peer *p, const struct unio_tl_ethdev_stats *s, double secs);

/*
 * UNIO_ETHDEV_LOSSLESS: over memif (one queue pair) the ep goes over to the lossless mode once
 * the peer acknowledged all it had sent, and from then on keeps no frame: the data frames
 * after the switch are untracked (that none is sent again: ethdev_peer_failure_memif); on
 * every other PMD the mode is off.
 */
static int
lossless_check(const struct peer *p, const struct unio_tl_ethdev_stats *s)
{
	const char *env = getenv("UNIO_ETHDEV_LOSSLESS");

	TEST_LOG("role %c: lossless eps %" PRIu64 ", data frames untracked %" PRIu64 " of %" PRIu64,
		 'a' + p->role, s->lossless_eps, s->tx_untracked, s->tx_data);
	if (strstr(p->vdev, "net_memif") == NULL || (env != NULL && strcmp(env, "no") == 0)) {
		TEST_ASSERT_EQ(s->lossless_eps, 0);
		TEST_ASSERT_EQ(s->tx_untracked, 0);
		return TEST_OK;
	}
	TEST_ASSERT(s->lossless_eps <= 1, "%" PRIu64 " lossless eps", s->lossless_eps);
	TEST_ASSERT(s->tx_untracked <= s->tx_data, "untracked %" PRIu64, s->tx_untracked);
	if (s->tx_data >= 1000)        /* a sender: it went over and sent most frames so */
		TEST_ASSERT(s->lossless_eps == 1 && s->tx_untracked * 2 > s->tx_data,
			    "lossless eps %" PRIu64 ", untracked %" PRIu64 " of %" PRIu64,
			    s->lossless_eps, s->tx_untracked, s->tx_data);
	return TEST_OK;
}

/* Progress until the stop file exists (kernel ping / arping run meanwhile). */
static int
mode_serve(struct peer *p, const char *prefix, double deadline)
{
	char path[256];
	struct unio_tl_ethdev_stats s;

	snprintf(path, sizeof(path), "%s.stop", prefix);
	while (access(path, F_OK) != 0 && test_now_s() < deadline)
		for (int i = 0; i < 1000; i++)
			unio_tl_iface_progress(p->iface);
	unio_tl_ethdev_stats(p->iface, &s);
	TEST_LOG("served: arp replies %" PRIu64 ", icmp echo replies %" PRIu64,
		 s.arp_replies, s.icmp_replies);
	TEST_ASSERT(s.arp_replies >= 2, "arp replies %" PRIu64, s.arp_replies);
	TEST_ASSERT(s.icmp_replies >= 3, "icmp replies %" PRIu64, s.icmp_replies);
	return TEST_OK;
}

/*
 * Role 1 stops answering after 10 messages; role 0 must see its ep fail.  Over memif role 0
 * sends a message only once the previous ones are acked (ep flush), so that its ep goes
 * over to the lossless mode (UNIO_ETHDEV_LOSSLESS) before role 1 goes: the mode, which
 * sends nothing again, must fail the ep as well.
 */
static int
mode_silent(struct peer *p, double deadline)
{
	bool memif = strstr(p->vdev, "net_memif") != NULL;
	struct unio_tl_ethdev_stats s;

	while (test_now_s() < deadline && (p->role == 1 ? p->rcvd < 10 : p->err == UNIO_OK)) {
		unio_tl_iface_progress(p->iface);
		if (p->role == 0 && p->sent < p->n_tx &&
		    (!memif || unio_tl_ep_flush(p->ep, NULL) == UNIO_OK) && send_one(p) == UNIO_OK)
			p->sent++;
	}
	if (p->role == 1)
		return TEST_OK;       /* exits without a word: the peer times out */
	unio_tl_ethdev_stats(p->iface, &s);
	TEST_LOG("peer failure after %" PRIu64 " timeouts, %" PRIu64 " messages sent (%" PRIu64
		 " frames untracked)", s.timeouts, p->sent, s.tx_untracked);
	TEST_ASSERT_STATUS(p->err, UNIO_ERR_TIMED_OUT);
	TEST_ASSERT_EQ(s.ep_failures, 1);
	if (memif) {
		/*
		 * The ep failed in the lossless mode: the UNIO_ETHDEV_RETRIES + 1 (15, peer_open())
		 * timeouts that failed it resent nothing.  Before the switch (the start, one frame
		 * in flight) a probe or a timeout resends that frame once; after it, nothing.
		 */
		TEST_ASSERT_EQ(s.lossless_eps, 1);
		TEST_ASSERT(s.tx_untracked >= 10, "%" PRIu64 " frames untracked", s.tx_untracked);
		TEST_ASSERT(s.tx_retx + 15 <= s.timeouts + s.probes,
			    "%" PRIu64 " frames resent, %" PRIu64 " timeouts, %" PRIu64 " probes",
			    s.tx_retx, s.timeouts, s.probes);
	}
	TEST_ASSERT_STATUS(unio_tl_ep_flush(p->ep, NULL), UNIO_ERR_TIMED_OUT);
	TEST_ASSERT_STATUS(unio_tl_ep_am_short(p->ep, AM_DATA, 0, NULL, 0), UNIO_ERR_TIMED_OUT);
	return TEST_OK;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* 8-byte AM round trips: role 0 measures, role 1 echoes from its handler. */
static int
mode_pingpong(struct peer *p, uint64_t n, double deadline)
{
	static uint64_t rtt[100000];
	uint64_t hz = rte_get_tsc_hz();
	struct stall st;

	stall_init(&st, deadline);
	n = RTE_MIN(n, RTE_DIM(rtt));
	while (p->role == 1 && (p->pings < n || p->owed != 0) &&
	       stall_ok(&st, p->pings + (p->pings - p->owed))) {
		unio_tl_iface_progress(p->iface);
		if (p->owed != 0 &&
		    unio_tl_ep_am_short(p->ep, AM_PING, p->pings - p->owed, NULL, 0) == UNIO_OK)
			p->owed--;
	}
	for (uint64_t i = 0; p->role == 0 && i < n && stall_ok(&st, p->pings); i++) {
		uint64_t t = rte_rdtsc();

		while (unio_tl_ep_am_short(p->ep, AM_PING, i, NULL, 0) != UNIO_OK &&
		       stall_ok(&st, p->pings))
			unio_tl_iface_progress(p->iface);
		while (p->pings == i && stall_ok(&st, p->pings))
			unio_tl_iface_progress(p->iface);
		rtt[i] = (rte_rdtsc() - t) * 1000000000ull / hz;
	}
	if (p->pings != n) {
		struct unio_tl_ethdev_stats s;

		unio_tl_ethdev_stats(p->iface, &s);
		stats_log(p, &s, 0);
	}
	TEST_ASSERT_EQ(p->pings, n);
	if (p->role == 0) {
		qsort(rtt, n, sizeof(rtt[0]), cmp_u64);
		printf("ethdev 8B am round trip (%s): p50 %" PRIu64 " ns p99 %" PRIu64
		       " ns (%" PRIu64
		       " samples)\n", p->vdev, rtt[n / 2], rtt[n * 99 / 100], n);
	}
	/* BYE exchange so that neither side leaves the other's last frames unacked */
	p->n_tx = p->n_rx = 0;
	return TEST_OK;
}

/*
 * Two workers' ifaces on one port (UNIO_ETHDEV_QUEUES=2, qpairs=2): role 0 opens both and
 * also sends from the first to the second (delivered inside the port); role 1 streams to
 * both.  Every stream is checked for order, length and checksum.
 */
static int
mode_mq(struct peer *p, const char *prefix, const char *vdev, const char *ip, double deadline)
{
	static struct peer p1, local, tx;
	struct unio_tl_ep_params epp = { 0 };
	struct unio_tl_ethdev_stats s0, s1;
	double linger = 0;

	if (p->role == 1) {
		/* p->ep goes to the first iface; tx.ep to the second */
		tx = *p;
		tx.other = p1.other;
		TEST_ASSERT(addr_read(&tx, prefix, 2, deadline) == 0, "no second address");
		epp.iface_addr = &tx.other;
		epp.iface_addr_len = sizeof(tx.other);
		TEST_ASSERT_STATUS(t_ep_create(p->iface, &epp, &tx.ep), UNIO_OK);
		tx.sent = 0;
		while (test_now_s() < deadline && (p->sent < p->n_tx || tx.sent < tx.n_tx ||
		       unio_tl_ep_flush(p->ep, NULL) != UNIO_OK ||
		       unio_tl_ep_flush(tx.ep, NULL) != UNIO_OK)) {
			unio_tl_iface_progress(p->iface);
			if (p->sent < p->n_tx && send_one(p) == UNIO_OK)
				p->sent++;
			if (tx.sent < tx.n_tx && send_one(&tx) == UNIO_OK)
				tx.sent++;
		}
		TEST_ASSERT(test_now_s() < deadline, "role 1: sent %" PRIu64 " + %" PRIu64, p->sent,
			    tx.sent);
		return TEST_OK;
	}
	if (peer_open(&p1, vdev, ip, 0) != TEST_OK)
		return TEST_FAIL;
	p1.n_rx = p->n_rx;
	p1.sizes = p->sizes;
	p1.n_sizes = p->n_sizes;
	local = p1;                          /* counts what the first iface sends the second */
	local.rcvd = 0;
	unio_tl_iface_set_am_handler(p1.iface, AM_LOCAL, data_cb, &local);
	TEST_ASSERT(addr_write(prefix, 2, &p1.self) == 0, "address file");
	tx = *p;                             /* the first iface's sender to the second */
	tx.am = AM_LOCAL;
	tx.sent = 0;
	epp.iface_addr = &p1.self;
	epp.iface_addr_len = sizeof(p1.self);
	TEST_ASSERT_STATUS(t_ep_create(p->iface, &epp, &tx.ep), UNIO_OK);
	while (test_now_s() < deadline && (linger == 0 || test_now_s() < linger)) {
		unio_tl_iface_progress(p->iface);
		unio_tl_iface_progress(p1.iface);
		if (tx.sent < tx.n_tx && send_one(&tx) == UNIO_OK)
			tx.sent++;
		if (linger == 0 && p->rcvd == p->n_rx && p1.rcvd == p1.n_rx &&
		    local.rcvd == tx.n_tx && unio_tl_ep_flush(tx.ep, NULL) == UNIO_OK)
			linger = test_now_s() + 0.3;
	}
	unio_tl_ethdev_stats(p->iface, &s0);
	unio_tl_ethdev_stats(p1.iface, &s1);
	TEST_LOG("queues: rcvd %" PRIu64 " / %" PRIu64 " / local %" PRIu64 ", steered %" PRIu64
		 " + %" PRIu64, p->rcvd, p1.rcvd, local.rcvd, s0.rx_steered, s1.rx_steered);
	TEST_ASSERT(p1.bad == 0 && local.bad == 0, "bad messages");
	TEST_ASSERT_EQ(p1.rcvd, p1.n_rx);
	TEST_ASSERT_EQ(local.rcvd, tx.n_tx);
	TEST_ASSERT(s0.rx_steered + s1.rx_steered >= tx.n_tx, "local frames not steered");
	/* af_packet has no rte_flow: the driver must have fallen back to the hand-over */
	TEST_ASSERT_EQ(s0.flow_rules + s1.flow_rules, 0);
	t_ep_destroy(tx.ep);
	t_iface_close(p1.iface);
	return TEST_OK;
}

/*
 * Two flows through one 100 Mbit/s bottleneck: role 0 streams from two ifaces (two queues of
 * one port), role 1 receives both (AM ids AM_DATA and AM_LOCAL), checks both streams and
 * reports each flow's share when the first one completes.
 */
static struct peer fair_q;    /* role 1: the second flow (registered before any frame) */

static int
mode_fair(struct peer *p, const char *vdev, const char *ip, double deadline)
{
	static struct peer p1;
	struct peer *qp = &fair_q;
	struct unio_tl_ep_params epp = { 0 };
	double linger = 0, share = -1;
	int turn = 0;

	if (p->role == 1) {
		struct peer *q = qp;

		while (test_now_s() < deadline && (linger == 0 || test_now_s() < linger)) {
			if (unio_tl_iface_progress(p->iface) == 0)
				sched_yield();
			if (share < 0 && (p->rcvd == p->n_rx || q->rcvd == q->n_rx))
				share = (double)RTE_MIN(p->rx_bytes, q->rx_bytes) /
					(double)RTE_MAX(p->rx_bytes, q->rx_bytes);
			if (linger == 0 && p->rcvd == p->n_rx && q->rcvd == q->n_rx)
				linger = test_now_s() + 0.3;
		}
		printf("ethdev two flows: when the first completed the other had %.0f %% of its "
		       "bytes\n", share * 100);
		TEST_ASSERT(p->bad == 0 && q->bad == 0, "bad messages");
		TEST_ASSERT_EQ(q->rcvd, q->n_rx);
		TEST_ASSERT_EQ(p->rcvd, p->n_rx);
		TEST_ASSERT(share > 0.25, "one flow starved the other (%.2f)", share);
		return TEST_OK;
	}
	if (peer_open(&p1, vdev, ip, 0) != TEST_OK)
		return TEST_FAIL;
	p1.n_tx = p->n_tx;
	p1.sizes = p->sizes;
	p1.n_sizes = p->n_sizes;
	p1.am = AM_LOCAL;
	p1.other = p->other;
	epp.iface_addr = &p1.other;
	epp.iface_addr_len = sizeof(p1.other);
	TEST_ASSERT_STATUS(t_ep_create(p1.iface, &epp, &p1.ep), UNIO_OK);
	while (test_now_s() < deadline && (p->sent < p->n_tx || p1.sent < p1.n_tx ||
	       unio_tl_ep_flush(p->ep, NULL) != UNIO_OK ||
	       unio_tl_ep_flush(p1.ep, NULL) != UNIO_OK)) {
		unsigned int ev = unio_tl_iface_progress(p->iface) +
				  unio_tl_iface_progress(p1.iface);

		/* alternate who tries first, so that the loop itself favours neither flow */
		struct peer *f[2] = { turn ? &p1 : p, turn ? p : &p1 };
		int sent = 0;

		turn = !turn;
		for (int k = 0; k < 2 && !sent; k++)
			if (f[k]->sent < f[k]->n_tx && send_one(f[k]) == UNIO_OK) {
				f[k]->sent++;
				sent = 1;
			}
		if (!sent && ev == 0)
			sched_yield();
	}
	TEST_ASSERT(test_now_s() < deadline, "sent %" PRIu64 " + %" PRIu64, p->sent, p1.sent);
	for (int k = 0; k < 2; k++) {
		const struct eth_ep *e = (const struct eth_ep *)(k ? p1.ep : p->ep);
		double us = 1e6 / (double)rte_get_tsc_hz();

		TEST_LOG("flow %d: cwnd %.1f min_rtt %.0f us srtt %.0f us; retx %" PRIu64
			 " probes %" PRIu64 " timeouts %" PRIu64, k, e->cwnd,
			 (double)e->min_rtt * us, (double)e->srtt * us, e->ei->st.tx_retx,
			 e->ei->st.probes, e->ei->st.timeouts);
	}
	for (linger = test_now_s() + 0.3; test_now_s() < linger; ) {
		unio_tl_iface_progress(p->iface);
		unio_tl_iface_progress(p1.iface);
	}
	t_ep_destroy(p1.ep);
	t_iface_close(p1.iface);
	return TEST_OK;
}

/*
 * Connecting by IPv4 and UDP port alone: role 0 knows neither the peer's MAC (ARP) nor its
 * connection id (learned from the first answer) and streams to it; role 1 creates no ep at
 * all and receives everything, like a listener.
 */
static int
mode_dial(struct peer *p, double deadline)
{
	struct unio_tl_ep_params epp = { 0 };
	double linger = 0;

	if (p->role == 1) {
		while (test_now_s() < deadline && (linger == 0 || test_now_s() < linger)) {
			if (unio_tl_iface_progress(p->iface) == 0)
				sched_yield();
			if (linger == 0 && p->rcvd == p->n_rx)
				linger = test_now_s() + 0.5;
		}
		TEST_ASSERT_EQ(p->bad, 0);
		TEST_ASSERT_EQ(p->rcvd, p->n_rx);
		return TEST_OK;
	}
	memset(&p->other.mac, 0, sizeof(p->other.mac));
	p->other.conn = 0;
	epp.iface_addr = &p->other;
	epp.iface_addr_len = sizeof(p->other);
	TEST_ASSERT_STATUS(t_ep_create(p->iface, &epp, &p->ep), UNIO_OK);
	while (test_now_s() < deadline &&
	       (p->sent < p->n_tx || unio_tl_ep_flush(p->ep, NULL) != UNIO_OK)) {
		if (unio_tl_iface_progress(p->iface) == 0)
			sched_yield();
		if (p->sent < p->n_tx && send_one(p) == UNIO_OK)
			p->sent++;
	}
	TEST_ASSERT(test_now_s() < deadline, "sent %" PRIu64, p->sent);
	t_ep_destroy(p->ep);
	return TEST_OK;
}

/* argv: netns vdev ip role(0|1) file-prefix n sizes(full|small|8k) fuzz-per-kind mode */
static int ethdev_peer_run(int argc, char **argv);

UNIO_TEST_CHILD(ethdev_peer)
{
	return t_release(ethdev_peer_run(argc, argv));
}

static int
ethdev_peer_run(int argc, char **argv)
{
	static struct peer p;
	struct unio_tl_ep_params epp = { 0 };
	struct unio_tl_ethdev_stats s;
	struct fuzz fz;
	double t0, deadline;
	const char *mode;
	int role, rc;
	uint64_t fuzz_k;

	TEST_ASSERT(argc == 9, "argc %d", argc);
	role = atoi(argv[3]);
	fuzz_k = strtoull(argv[7], NULL, 0);
	mode = argv[8];
	p.n_tx = p.n_rx = strtoull(argv[5], NULL, 0);
	deadline = test_now_s() + PEER_CAP_S;
	p.zc = strcmp(mode, "zc") == 0;
	if (strcmp(mode, "slowrx") == 0) {   /* a stream to a receiver that polls every ms */
		p.slow = role == 1;
		mode = "stream";
	}
	if (strcmp(mode, "zcslow") == 0) {   /* zero copy to a receiver that polls every ms */
		p.slow = role == 1;          /* once the sender's ep is lossless (memif) */
		p.slow_after = 100;
		p.zc = 1;
		mode = "zc";
	}
	if (strcmp(mode, "stream") == 0 || p.zc) {
		p.n_tx = role == 0 ? p.n_tx : 0;
		p.n_rx = role == 1 ? p.n_rx : 0;
	}
	p.sizes = strcmp(argv[6], "full") == 0 ? sizes_full :
		  strcmp(argv[6], "8k") == 0 ? sizes_8k :
		  strcmp(argv[6], "tiny") == 0 ? sizes_tiny :
		  strcmp(argv[6], "64k") == 0 ? sizes_64k : sizes_small;
	p.n_sizes = strcmp(argv[6], "full") == 0 ? RTE_DIM(sizes_full) :
		    strcmp(argv[6], "8k") == 0 ? RTE_DIM(sizes_8k) :
		    strcmp(argv[6], "tiny") == 0 ? RTE_DIM(sizes_tiny) :
		    strcmp(argv[6], "64k") == 0 ? RTE_DIM(sizes_64k) : RTE_DIM(sizes_small);
	TEST_ASSERT(test_enter_netns(argv[0]) == 0, "setns %s: %s", argv[0], strerror(errno));
	p.vdev = argv[1];
	p.pong = strcmp(mode, "pingpong") == 0 && role == 1;  /* pings may come before the ep */
	if (peer_open(&p, argv[1], argv[2], role) != TEST_OK)
		return TEST_FAIL;
	if (getenv("UNIO_TEST_ETH_FRAG") != NULL)      /* payload bytes per frame expected */
		TEST_ASSERT_EQ(p.max_short + 8, strtoull(getenv("UNIO_TEST_ETH_FRAG"), NULL, 0));
	if (strcmp(mode, "fair") == 0 && role == 1) {
		fair_q.sizes = p.sizes;
		fair_q.n_sizes = p.n_sizes;
		fair_q.max_short = p.max_short;
		fair_q.n_rx = p.n_rx;
		unio_tl_iface_set_am_handler(p.iface, AM_LOCAL, data_cb, &fair_q);
	}
	TEST_ASSERT(addr_write(argv[4], role, &p.self) == 0, "address file");
	if (strcmp(mode, "serve") == 0) {
		rc = mode_serve(&p, argv[4], deadline);
		t_iface_close(p.iface);
		return rc;
	}
	TEST_ASSERT(addr_read(&p, argv[4], !role, deadline) == 0, "no peer address");
	if (strcmp(mode, "dial") == 0) {
		p.n_tx = role == 0 ? p.n_tx : 0;
		p.n_rx = role == 1 ? p.n_rx : 0;
		rc = mode_dial(&p, deadline);
		t_iface_close(p.iface);
		return rc;
	}
	epp.iface_addr = &p.other;
	epp.iface_addr_len = sizeof(p.other);
	if (strcmp(mode, "arp") == 0) {
		/* an address without MAC: resolved by ARP (role 0) or the static table (role 1) */
		struct eth_addr ghost = p.other;

		memset(&p.other.mac, 0, sizeof(p.other.mac));
		memset(&ghost.mac, 0, sizeof(ghost.mac));
		ghost.ip = inet_addr("10.77.0.99");
		epp.iface_addr = &ghost;
		if (role == 0)
			TEST_ASSERT_STATUS(t_ep_create(p.iface, &epp, &p.ep2), UNIO_OK);
		epp.iface_addr = &p.other;
	}
	TEST_ASSERT_STATUS(t_ep_create(p.iface, &epp, &p.ep), UNIO_OK);
	if (fuzz_k != 0 && role == 1)
		TEST_ASSERT(fuzz_open(&fz, "vb") == 0, "raw socket: %s", strerror(errno));
	t0 = test_now_s();
	if (strcmp(mode, "mq") == 0) {
		p.n_tx = role == 1 ? p.n_tx : p.n_tx / 4;     /* role 0: local messages */
		p.n_rx = role == 0 ? p.n_rx : 0;
		rc = mode_mq(&p, argv[4], argv[1], argv[2], deadline);
		if (rc == TEST_OK && role == 0) {
			TEST_ASSERT(p.bad == 0, "bad messages");
			TEST_ASSERT_EQ(p.rcvd, p.n_rx);
		}
		t_ep_destroy(p.ep);
		t_iface_close(p.iface);
		return rc;
	}
	if (strcmp(mode, "fair") == 0) {
		p.n_tx = role == 0 ? p.n_tx : 0;
		p.n_rx = role == 1 ? p.n_rx : 0;
		fair_q.n_rx = p.n_rx;
		rc = mode_fair(&p, argv[1], argv[2], deadline);
		t_ep_destroy(p.ep);
		t_iface_close(p.iface);
		return rc;
	}
	if (strcmp(mode, "silent") == 0) {
		rc = mode_silent(&p, deadline);
		t_ep_destroy(p.ep);
		t_iface_close(p.iface);
		return rc;
	}
	if (strcmp(mode, "pingpong") == 0 && mode_pingpong(&p, p.n_tx, deadline) != TEST_OK)
		return TEST_FAIL;
	rc = peer_run(&p, fuzz_k != 0 && role == 1 ? &fz : NULL, fuzz_k, deadline);
	if (rc == TEST_OK)
		memif_server_wait(&p);
	unio_tl_ethdev_stats(p.iface, &s);
	stats_log(&p, &s, test_now_s() - t0);
	rc = rc == TEST_OK ? lossless_check(&p, &s) : rc;
	if (strcmp(mode, "stream") == 0 && role == 1) {
		double mbits = (double)p.rx_bytes * 8 / 1e6 / (test_now_s() - t0 - 0.3);
		const char *floor = getenv("UNIO_TEST_ETH_MIN_MBITS");

		printf("ethdev stream goodput: %.1f Mbit/s\n", mbits);
		TEST_ASSERT(floor == NULL || mbits >= atof(floor),
			    "goodput %.1f Mbit/s, below the %s asked", mbits, floor);
	}
	if (strcmp(mode, "stream") == 0 && role == 0) {
		TEST_LOG("retransmitted %.2f %% of the data bytes",
			 100.0 * (double)s.tx_retx_bytes / (double)s.tx_data_bytes);
		TEST_ASSERT(s.tx_retx_bytes * 10 < s.tx_data_bytes, "retransmission storm");
	}
	if (rc == TEST_OK && fuzz_k != 0 && role == 0)
		rc = fuzz_check(&s, fuzz_k);
	if (rc == TEST_OK && p.zc && role == 0) {
		TEST_LOG("zero-copy messages %" PRIu64 ", completions %" PRIu64 ", inside a "
			 "send %" PRIu64, s.tx_zcopy, p.zc_done, p.zc_in_send);
		TEST_ASSERT_EQ(p.zc_done, p.n_tx);
		/* a completion runs from progress: a PMD freeing earlier frames inside the
		 * send (memif, af_packet copy at tx) ran it in the middle of the driver's work */
		TEST_ASSERT_EQ(p.zc_in_send, 0);
		TEST_ASSERT_EQ(s.tx_zcopy, p.zc_big + p.zc_now);
		TEST_ASSERT(s.tx_zcopy > 0, "zero copy never used");
	}
	if (rc == TEST_OK && strcmp(mode, "arp") == 0) {
		TEST_LOG("role %d: arp requests %" PRIu64 " learned %" PRIu64, role,
			 s.arp_requests, s.arp_learned);
		TEST_ASSERT(role == 1 ? s.arp_requests == 0 : s.arp_requests >= 1,
			    "arp requests %" PRIu64, s.arp_requests);
		if (role == 0) {
			struct eth_addr ghost = p.other;
			uint64_t asked;

			while (p.err2 == UNIO_OK && test_now_s() < deadline)
				unio_tl_iface_progress(p.iface);
			TEST_ASSERT_STATUS(p.err2, UNIO_ERR_UNREACHABLE);
			t_ep_destroy(p.ep2);
			/* a later ep to it asks again (it failed at once, asking nothing) */
			ghost.ip = inet_addr("10.77.0.99");
			epp.iface_addr = &ghost;
			p.err2 = UNIO_OK;
			unio_tl_ethdev_stats(p.iface, &s);
			asked = s.arp_requests;
			TEST_ASSERT_STATUS(t_ep_create(p.iface, &epp, &p.ep2), UNIO_OK);
			while (p.err2 == UNIO_OK && test_now_s() < deadline)
				unio_tl_iface_progress(p.iface);
			TEST_ASSERT_STATUS(p.err2, UNIO_ERR_UNREACHABLE);
			t_ep_destroy(p.ep2);
			unio_tl_ethdev_stats(p.iface, &s);
			TEST_ASSERT_EQ(s.arp_requests - asked, ETH_ARP_TRIES);
		}
	}
	TEST_ASSERT_EQ(p.bad, 0);
	TEST_ASSERT_EQ(p.rcvd, p.n_rx);
	t_ep_destroy(p.ep);
	t_iface_close(p.iface);
	return rc;
}

/* ---- the tests ---- */

struct pair_run {
	const char *kind;          /* veth | bridge | NULL (memif, no namespaces) */
	const char *pmd;
	const char *extra;         /* topology options */
	const char *n, *sizes, *fuzz, *mode;
};

static void
prefix_clean(const char *prefix)
{
	static const char *const sfx[] = { "-a.addr", "-b.addr", "-c.addr", ".stop" };
	char path[300];

	for (unsigned int i = 0; i < RTE_DIM(sfx); i++) {
		snprintf(path, sizeof(path), "%s%s", prefix, sfx[i]);
		unlink(path);
	}
}

/* Run two peers; returns TEST_OK when both exit 0. */
static int
run_pair(const struct pair_run *r, const char *ns_a, const char *ns_b, const char *vdev_a,
	 const char *vdev_b)
{
	char prefix[64];
	pid_t a, b;
	int ra, rb;

	snprintf(prefix, sizeof(prefix), "/tmp/unio-eth-%d", getpid());
	const char *args_a[] = { ns_a, vdev_a, IP_A, "0", prefix, r->n, r->sizes, r->fuzz,
				 r->mode, NULL };
	const char *args_b[] = { ns_b, vdev_b, IP_B, "1", prefix, r->n, r->sizes, r->fuzz,
				 r->mode, NULL };

	a = test_spawn("ethdev_peer", args_a);
	if (strcmp(ns_a, "-") == 0) {
		/* a memif client cannot start before the server's socket exists */
		char path[300];

		snprintf(path, sizeof(path), "%s-a.addr", prefix);
		for (int i = 0; i < 400 && access(path, F_OK) != 0; i++)
			usleep(50000);
	}
	b = test_spawn("ethdev_peer", args_b);
	ra = test_wait(a, (int)(PEER_CAP_S * 1000) + 10000);
	rb = test_wait(b, (int)(PEER_CAP_S * 1000) + 10000);
	prefix_clean(prefix);
	if (ra != 0 || rb != 0)
		TEST_LOG("peer exit codes %d %d", ra, rb);
	return ra == 0 && rb == 0 ? TEST_OK : TEST_FAIL;
}

/*
 * The loss of a "--loss PCT" bridge was there, not only asked for: the frames its nft rules
 * dropped (their counters) are PCT % (+- 40 % of it) of the frames its two ports received
 * (UDP is nearly all of them: data, acks; ARP and the kernel's IPv6 chatter are not dropped).
 * The tests through loss otherwise show only that everything arrived.
 */
static int
loss_applied(const char *name, const char *extra)
{
	static char out[8192];
	const char *p = strstr(extra, "--loss ");
	double want = p != NULL ? atof(p + 7) : 0, drops = 0, rx = 0, pct;
	char *q;

	TEST_ASSERT(want > 0, "no --loss in '%s'", extra);
	TEST_ASSERT(test_capture(out, sizeof(out), "ip netns exec %s-m nft list table netdev unio",
				 name) == 0, "nft: %s", out);
	for (p = out; (p = strstr(p, "counter packets ")) != NULL; p++)
		drops += strtod(p + strlen("counter packets "), NULL);
	TEST_ASSERT(test_capture(out, sizeof(out), "ip netns exec %s-m cat "
				 "/sys/class/net/ma/statistics/rx_packets "
				 "/sys/class/net/mb/statistics/rx_packets", name) == 0,
		    "bridge port counters: %s", out);
	rx = strtod(out, &q);
	rx += strtod(q, NULL);
	pct = rx > 0 ? 100.0 * drops / rx : 0;
	TEST_LOG("the bridge dropped %.0f of %.0f frames (%.2f %%, %.0f %% asked)", drops, rx, pct,
		 want);
	TEST_ASSERT(rx > 1000 && pct >= 0.6 * want && pct <= 1.4 * want,
		    "%.2f %% of %.0f frames dropped, not about %.0f %%", pct, rx, want);
	return TEST_OK;
}

/*
 * The rate limit of a "--rate" bridge was there: its tbf qdisc on mb sent at least
 * @p bytes (the stream's data crossed it, not some other path).
 */
static int
rate_applied(const char *name, uint64_t bytes)
{
	static char out[4096];
	const char *p;
	double sent;

	TEST_ASSERT(test_capture(out, sizeof(out), "ip netns exec %s-m tc -s qdisc show dev mb",
				 name) == 0 && strstr(out, "qdisc tbf") != NULL &&
		    (p = strstr(out, "Sent ")) != NULL, "no tbf qdisc on mb: %s", out);
	sent = strtod(p + strlen("Sent "), NULL);
	TEST_LOG("the tbf qdisc sent %.0f bytes (%" PRIu64 " of data at least)", sent, bytes);
	TEST_ASSERT(sent >= (double)bytes, "the tbf qdisc sent %.0f bytes, less than the %" PRIu64
		    " of the stream", sent, bytes);
	return TEST_OK;
}

static int
netns_pair(const struct pair_run *r)
{
	char name[32], na[40], nb[40], va[128], vb[128];
	const char *jumbo;
	int rc;

	if (!test_can_netns())
		TEST_SKIP_BECAUSE("needs root and iproute2 network namespaces");
	snprintf(name, sizeof(name), "unio-%d", getpid());
	snprintf(na, sizeof(na), "%s-a", name);
	snprintf(nb, sizeof(nb), "%s-b", name);
	jumbo = strstr(r->extra, "--mtu 9000") != NULL ? ",framesz=9216,blocksz=36864" : "";
	snprintf(va, sizeof(va), "%s0,iface=va%s%s", r->pmd,
		 strcmp(r->mode, "mq") == 0 || strcmp(r->mode, "fair") == 0 ? ",qpairs=2" : "",
		 jumbo);
	snprintf(vb, sizeof(vb), "%s0,iface=vb%s", r->pmd, jumbo);
	if (test_topology(r->kind, "up", name, r->extra) != 0) {
		test_topology(r->kind, "down", name, "");
		TEST_LOG("topology %s %s failed", r->kind, r->extra);
		return TEST_FAIL;
	}
	rc = run_pair(r, na, nb, va, vb);
	if (rc == TEST_OK && strstr(r->extra, "--loss") != NULL)
		rc = loss_applied(name, r->extra);
	if (rc == TEST_OK && strstr(r->extra, "--rate") != NULL)
		rc = rate_applied(name, strcmp(r->sizes, "8k") == 0 ?
					strtoull(r->n, NULL, 10) * 8192 : 1u << 20);
	test_topology(r->kind, "down", name, "");
	return rc;
}

static int
memif_pair(const struct pair_run *r)
{
	char sock[64], va[160], vb[160];
	int rc;

	snprintf(sock, sizeof(sock), "/tmp/unio-memif-%d.sock", getpid());
	snprintf(va, sizeof(va), "net_memif0,role=server,socket=%s,mac=02:00:00:00:01:0a", sock);
	snprintf(vb, sizeof(vb), "net_memif0,role=client,socket=%s,mac=02:00:00:00:01:0b", sock);
	rc = run_pair(r, "-", "-", va, vb);
	unlink(sock);
	return rc;
}

UNIO_TEST(ethdev_af_packet_am, mp)
{
	return netns_pair(&(struct pair_run){ "veth", "net_af_packet", "", "3000", "full", "0",
					      "xchg" });
}

UNIO_TEST(ethdev_memif_am, mp)
{
	return memif_pair(&(struct pair_run){ NULL, NULL, NULL, "3000", "full", "0", "xchg" });
}

UNIO_TEST(ethdev_loss5, mp)
{
	return netns_pair(&(struct pair_run){ "bridge", "net_af_packet", "--loss 5", "20000",
					      "small", "0", "xchg" });
}

/* One-way 64 KiB messages on a direct veth pair (goodput printed; data checked). */
UNIO_TEST(ethdev_stream_af_xdp, mp)
{
	return netns_pair(&(struct pair_run){ "veth", "net_af_xdp", "", "1000", "64k", "0",
					      "stream" });
}

/* The same with 9000-byte frames (veth MTU 9000, af_packet frames of 9 KiB). */
UNIO_TEST(ethdev_stream_jumbo, mp)
{
	return netns_pair(&(struct pair_run){ "veth", "net_af_packet", "--mtu 9000", "1000",
					      "64k", "0", "stream" });
}

/*
 * A receiver that polls once a millisecond (a burst of at most 32 frames each time): the
 * receiver's credit and the window hold the sender back instead of overrunning its queue,
 * so 3000 messages arrive in order and verified with less than 10 % of the bytes
 * retransmitted (the stream mode's checks).
 */
UNIO_TEST(ethdev_slow_receiver, mp)
{
	return netns_pair(&(struct pair_run){ "veth", "net_af_packet", "", "3000", "8k", "0",
					      "slowrx" });
}

UNIO_TEST(ethdev_stream_af_packet, mp)
{
	return netns_pair(&(struct pair_run){ "veth", "net_af_packet", "", "1000", "64k", "0",
					      "stream" });
}

/* Zero copy: am_zcopy of 16 B .. 64 KiB from buffers reused right after each completion. */
UNIO_TEST(ethdev_zcopy_af_packet, mp)
{
	return netns_pair(&(struct pair_run){ "veth", "net_af_packet", "", "2000", "full", "0",
					      "zc" });
}

UNIO_TEST(ethdev_zcopy_memif, mp)
{
	return memif_pair(&(struct pair_run){ NULL, NULL, NULL, "2000", "full", "0", "zc" });
}

/*
 * Zero copy over memif to a receiver that polls once a millisecond after its first 100
 * messages (the sender's ep has gone lossless by then): the ring fills, frames wait in the
 * sender's tx queue, and a later send hands them to the PMD, which copies and
 * frees them inside that send.  Their messages' completions must still run from progress,
 * not inside the send (zc_in_send), where a user's callback would re-enter the driver.
 */
UNIO_TEST(ethdev_zcopy_memif_slowrx, mp)
{
	return memif_pair(&(struct pair_run){ NULL, NULL, NULL, "500", "64k", "0", "zcslow" });
}

/* Zero copy through 5 % loss: retransmissions read the user's memory until the ack. */
UNIO_TEST(ethdev_zcopy_loss5, mp)
{
	return netns_pair(&(struct pair_run){ "bridge", "net_af_packet", "--loss 5", "2000",
					      "64k", "0", "zc" });
}

/* The figure: a million messages of mixed sizes through 5 % loss, one way. */
UNIO_TEST(ethdev_loss5_1m, slow)
{
	return netns_pair(&(struct pair_run){ "bridge", "net_af_packet", "--loss 5", "1000000",
					      "tiny", "0", "stream" });
}

UNIO_TEST(ethdev_fuzz, mp)
{
	return netns_pair(&(struct pair_run){ "veth", "net_af_packet", "", "3000", "small", "20",
					      "xchg" });
}

/*
 * The rte_flow rule an iface asks its PMD for when the port has several queues: IPv4 to its
 * address, UDP to its port, both masked exactly, to its queue; nothing else matched.  (No
 * PMD here implements rte_flow -- net_tap needs the kernel's multiq qdisc -- so the rule is
 * checked as built; ethdev_two_queues shows the fallback.)
 */
UNIO_TEST(ethdev_flow_rule, fast)
{
	struct eth_flow_spec fs;
	const struct rte_flow_item_ipv4 *ip, *ipm;
	const struct rte_flow_item_udp *udp, *udpm;

	memset(&fs, 0xa5, sizeof(fs));   /* init must not leave any of this behind */
	eth_flow_spec_init(&fs, RTE_BE32(RTE_IPV4(10, 77, 0, 2)), RTE_BE16(13338), 3);
	TEST_ASSERT(fs.attr.ingress == 1 && fs.attr.egress == 0 && fs.attr.transfer == 0 &&
		    fs.attr.group == 0 && fs.attr.priority == 0, "attributes");
	TEST_ASSERT_EQ(fs.pattern[0].type, RTE_FLOW_ITEM_TYPE_ETH);
	TEST_ASSERT(fs.pattern[0].spec == NULL && fs.pattern[0].mask == NULL &&
		    fs.pattern[0].last == NULL, "eth item matches any frame");
	TEST_ASSERT_EQ(fs.pattern[1].type, RTE_FLOW_ITEM_TYPE_IPV4);
	ip = fs.pattern[1].spec;
	ipm = fs.pattern[1].mask;
	TEST_ASSERT(ip != NULL && ipm != NULL && fs.pattern[1].last == NULL, "ipv4 item");
	TEST_ASSERT_EQ(ip->hdr.dst_addr, RTE_BE32(RTE_IPV4(10, 77, 0, 2)));
	TEST_ASSERT_EQ(ipm->hdr.dst_addr, 0xffffffffu);
	TEST_ASSERT(ipm->hdr.src_addr == 0 && ipm->hdr.next_proto_id == 0 &&
		    ipm->hdr.version_ihl == 0, "only the destination is matched");
	TEST_ASSERT_EQ(fs.pattern[2].type, RTE_FLOW_ITEM_TYPE_UDP);
	udp = fs.pattern[2].spec;
	udpm = fs.pattern[2].mask;
	TEST_ASSERT(udp != NULL && udpm != NULL && fs.pattern[2].last == NULL, "udp item");
	TEST_ASSERT_EQ(udp->hdr.dst_port, RTE_BE16(13338));
	TEST_ASSERT(udpm->hdr.dst_port == 0xffff && udpm->hdr.src_port == 0 &&
		    udpm->hdr.dgram_len == 0 && udpm->hdr.dgram_cksum == 0, "udp mask");
	TEST_ASSERT_EQ(fs.pattern[3].type, RTE_FLOW_ITEM_TYPE_END);
	TEST_ASSERT_EQ(fs.actions[0].type, RTE_FLOW_ACTION_TYPE_QUEUE);
	TEST_ASSERT_EQ(((const struct rte_flow_action_queue *)fs.actions[0].conf)->index, 3);
	TEST_ASSERT_EQ(fs.actions[1].type, RTE_FLOW_ACTION_TYPE_END);
	return TEST_OK;
}

/*
 * The driver's checksum (8 or 64 bytes a step) against DPDK's (2 bytes a step) on random bytes
 * of every length 0 .. 1600 and every seventh to 9216 at every alignment 0 .. 7, on all-ones
 * bytes (a carry out of every 64-bit add) with and without a partial sum, and the UDP / IPv4
 * checksums built and verified with it against rte_ipv4_udptcp_cksum() / rte_ipv4_cksum() on
 * random headers, including data whose sum is 0 (the UDP field is then 0xffff, never "no
 * checksum").
 */
UNIO_TEST(ethdev_cksum, fast)
{
	static uint8_t buf[9216 + 8 + 64];
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)buf;
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	unsigned int n_zero = 0;

	for (size_t i = 0; i < sizeof(buf); i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		buf[i] = (uint8_t)(seed >> 56);
	}
	for (size_t off = 0; off < 8; off++)
		for (size_t len = 0; len <= 9216; len += len < 1600 ? 1 : 7)
			TEST_ASSERT(eth_cksum(buf + off, len, 0) == rte_raw_cksum(buf + off, len),
				    "len %zu off %zu", len, off);
	/* every word all ones: a carry out of every add of the 64-bit steps */
	memset(buf, 0xff, sizeof(buf));
	for (size_t len = 0; len <= 9216; len += 5) {
		uint64_t with = rte_raw_cksum(buf + 3, len) + UINT64_C(0xfffffffff);

		while (with > UINT16_MAX)
			with = (with & UINT16_MAX) + (with >> 16);
		TEST_ASSERT(eth_cksum(buf + 3, len, 0) == rte_raw_cksum(buf + 3, len),
			    "all ones, len %zu", len);
		TEST_ASSERT(eth_cksum(buf + 3, len, UINT64_C(0xfffffffff)) == with,
			    "all ones and a partial sum, len %zu", len);
	}
	memset(buf, 0xff, 64);
	TEST_ASSERT_EQ(eth_cksum(buf, 64, 0), 0xffff);
	memset(buf, 0, 64);
	TEST_ASSERT_EQ(eth_cksum(buf, 64, 0), 0);
	for (unsigned int k = 0; k < 20000; k++) {
		uint16_t ulen, want, base;
		rte_be16_t tot, id;
		bool zero;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		ulen = (uint16_t)(sizeof(*udp) + (seed >> 40) % 1500);
		memset(ip, 0, sizeof(*ip));
		ip->version_ihl = RTE_IPV4_VHL_DEF;
		ip->time_to_live = 64;
		ip->next_proto_id = IPPROTO_UDP;
		ip->total_length = rte_cpu_to_be_16((uint16_t)(sizeof(*ip) + ulen));
		ip->src_addr = (rte_be32_t)(seed >> 3);
		ip->dst_addr = (rte_be32_t)(seed >> 29);
		udp->src_port = (rte_be16_t)seed;
		udp->dst_port = (rte_be16_t)(seed >> 16);
		udp->dgram_len = rte_cpu_to_be_16(ulen);
		udp->dgram_cksum = 0;
		zero = k % 16 == 0 && ulen >= sizeof(*udp) + 2;
		if (zero) {
			/* payload bytes that make the sum 0: the field must read 0xffff */
			uint16_t fix;

			memset(udp + 1, 0, ulen - sizeof(*udp));
			fix = (uint16_t)~eth_cksum(udp, ulen, eth_udp_phdr(ip, udp));
			memcpy(udp + 1, &fix, sizeof(fix));
			n_zero++;
		}
		want = rte_ipv4_udptcp_cksum(ip, udp);
		TEST_ASSERT(eth_udp_cksum(ip, udp) == want, "udp len %u: %#x, DPDK %#x", ulen,
			    eth_udp_cksum(ip, udp), want);
		TEST_ASSERT(!zero || want == 0xffff, "sum 0 gives 0xffff");
		udp->dgram_cksum = want;
		TEST_ASSERT_EQ(eth_cksum(udp, ulen, eth_udp_phdr(ip, udp)), 0xffff);
		TEST_ASSERT_EQ(rte_ipv4_udptcp_cksum_verify(ip, udp), 0);
		udp->dgram_cksum ^= 0x0100;      /* one bit off: both refuse */
		TEST_ASSERT(eth_cksum(udp, ulen, eth_udp_phdr(ip, udp)) != 0xffff, "bit flip");
		want = rte_ipv4_cksum(ip);       /* over the header with its field 0 */
		TEST_ASSERT_EQ(eth_ip_cksum(ip), eth_cksum(ip, sizeof(*ip), 0));
		ip->hdr_checksum = (uint16_t)~eth_cksum(ip, sizeof(*ip), 0);
		TEST_ASSERT_EQ(ip->hdr_checksum, want);
		TEST_ASSERT_EQ(eth_cksum(ip, sizeof(*ip), 0), 0xffff);
		TEST_ASSERT_EQ(eth_ip_cksum(ip), 0xffff);
		TEST_ASSERT_EQ(eth_ip_cksum_addrs(ip, (uint64_t)ip->src_addr + ip->dst_addr),
			       0xffff);
		ip->time_to_live ^= 0x10;        /* the unrolled sum refuses a flipped bit too */
		TEST_ASSERT(eth_ip_cksum(ip) != 0xffff, "ip bit flip");
		TEST_ASSERT_EQ(eth_ip_cksum_addrs(ip, (uint64_t)ip->src_addr + ip->dst_addr),
			       eth_ip_cksum(ip));
		/* the field patched from a sum without length and id (a sender's template) */
		ip->time_to_live ^= 0x10;
		ip->packet_id = (rte_be16_t)(seed >> 48);
		if (k % 64 == 1)
			ip->packet_id = (rte_be16_t)~ip->total_length;   /* the sum wraps */
		ip->hdr_checksum = 0;
		want = rte_ipv4_cksum(ip);
		tot = ip->total_length;
		id = ip->packet_id;
		ip->total_length = 0;
		ip->packet_id = 0;
		base = eth_ip_cksum(ip);
		TEST_ASSERT(eth_ip_cksum_patch(base, tot, id) == want, "patched %#x, DPDK %#x",
			    eth_ip_cksum_patch(base, tot, id), want);
	}
	TEST_ASSERT(n_zero > 1000, "zero-sum cases %u", n_zero);
	return TEST_OK;
}

/*
 * A PUT or GET_RESP message fills whole frames with its 36-byte header: 46 frames of 1408
 * bytes at MTU 1500 (a 1 MiB get in 746 frames, not 753), 19 of 3352 at 3442 (314, not
 * 321), 7 of 8904 at 9000 (118, not 129); never more than ETH_MAX_MSG, and the old chunk
 * when not even one frame fits.
 */
UNIO_TEST(ethdev_rma_chunk_frames, fast)
{
	static const struct {
		size_t frag, chunk, frames_mib;
	} c[] = {
		{ 1408, 46 * 1408 - 36, 746 },
		{ 3352, 19 * 3352 - 36, 314 },
		{ 8904, 7 * 8904 - 36, 118 },
		{ 96, 682 * 96 - 36, 10930 },
	};
	const size_t hdr = sizeof(struct eth_rma_hdr);

	TEST_ASSERT_EQ(hdr, 36);
	for (size_t i = 0; i < RTE_DIM(c); i++) {
		size_t ch = eth_rma_chunk(c[i].frag);
		size_t rest = (1u << 20) % ch;
		size_t frames = (1u << 20) / ch * ((ch + hdr) / c[i].frag) +
				(rest + hdr + c[i].frag - 1) / c[i].frag;

		TEST_ASSERT(ch == c[i].chunk, "frag %zu: chunk %zu, want %zu", c[i].frag, ch,
			    c[i].chunk);
		TEST_ASSERT(ch + hdr <= ETH_MAX_MSG && (ch + hdr) % c[i].frag == 0,
			    "frag %zu: message of %zu bytes", c[i].frag, ch + hdr);
		TEST_ASSERT(frames == c[i].frames_mib, "frag %zu: %zu frames a MiB, want %zu",
			    c[i].frag, frames, c[i].frames_mib);
	}
	TEST_ASSERT_EQ(eth_rma_chunk(ETH_MAX_MSG), ETH_MAX_MSG - hdr);
	TEST_ASSERT_EQ(eth_rma_chunk(0), ETH_MAX_MSG - hdr);
	return TEST_OK;
}

/*
 * The congestion window fed acks as over af_xdp on a veth: most echo a frame the peer held
 * longer than the sender's bound of the round trip (a path of 0, all host time), one in
 * twelve measures the path.  In slow start the frames a host-time ack acknowledged grow
 * the window at once; after a decrease they count toward the increase the next path sample
 * decides (one frame per window) and are dropped when that sample is above the target.
 * Host-time acks never decrease and leave the min RTT alone.  1 GHz TSC: a cycle is a ns.
 */
UNIO_TEST(ethdev_cc_host_samples, fast)
{
	static struct eth_iface ei;
	static struct eth_ep ep;
	uint64_t now = 1000000000;
	double c0;

	ei.tsc_hz = 1000000000;
	ei.target_delay = 1000000;             /* 1 ms */
	ep.ei = &ei;
	ep.cwnd = ETH_INIT_CWND;
	ep.srtt = 300000;
	for (int i = 0; i < 11; i++)
		eth_cc_ack(&ep, 0, 9, now += 1000);
	TEST_ASSERT(ep.cwnd == ETH_INIT_CWND + 11 * 9, "slow start: cwnd %.3f", ep.cwnd);
	TEST_ASSERT_EQ(ep.min_rtt, 0);
	eth_cc_ack(&ep, 200000, 9, now += 1000);        /* 200 us: below the target */
	TEST_ASSERT(ep.cwnd == ETH_INIT_CWND + 12 * 9, "slow start: cwnd %.3f", ep.cwnd);
	TEST_ASSERT_EQ(ep.min_rtt, 200000);
	TEST_ASSERT_EQ(ei.st.cc_samples, 1);
	TEST_ASSERT_EQ(ei.st.cc_host_samples, 11);
	for (int i = 0; i < 30; i++)
		eth_cc_ack(&ep, 0, 9, now += 1000);
	TEST_ASSERT(ep.cwnd == (double)ETH_WIN, "capped: cwnd %.3f", ep.cwnd);

	/* 3 ms against 2 x 200 us + 1 ms (+ the flow scaling): one decrease */
	eth_cc_ack(&ep, 3000000, 9, now += 1000);
	TEST_ASSERT_EQ(ei.st.cc_decreases, 1);
	TEST_ASSERT(ep.cwnd >= ETH_WIN / 2 && ep.cwnd < ETH_WIN, "decrease: cwnd %.3f", ep.cwnd);
	TEST_ASSERT_EQ(ep.min_rtt, 200000);

	/* after it: 12 x 8 frames acked, one path sample at 250 us: 96 / cwnd frames more */
	c0 = ep.cwnd;
	for (int i = 0; i < 11; i++)
		eth_cc_ack(&ep, 0, 8, now += 1000);
	TEST_ASSERT(ep.cwnd == c0, "cwnd %.3f moved before a path sample", ep.cwnd);
	eth_cc_ack(&ep, 250000, 8, now += 1000);
	TEST_ASSERT(ep.cwnd > c0 + 96 / c0 - 1e-9 && ep.cwnd < c0 + 96 / c0 + 1e-9,
		    "additive increase: cwnd %.6f from %.6f", ep.cwnd, c0);
	TEST_ASSERT_EQ(ep.cc_acked, 0);

	/* host-time acks then a path sample above the target: their credit is dropped */
	for (int i = 0; i < 11; i++)
		eth_cc_ack(&ep, 0, 8, now += 1000);
	c0 = ep.cwnd;
	eth_cc_ack(&ep, 3000000, 8, now += 100000000);
	TEST_ASSERT_EQ(ei.st.cc_decreases, 2);
	TEST_ASSERT(ep.cwnd < c0, "cwnd %.3f after a second decrease from %.3f", ep.cwnd, c0);
	TEST_ASSERT_EQ(ep.cc_acked, 0);
	TEST_ASSERT_EQ(ei.st.cc_samples, 4);
	TEST_ASSERT_EQ(ei.st.cc_host_samples, 11 + 30 + 11 + 11);

	/* a host-time ack never decreases, however long the peer held the frame */
	c0 = ep.cwnd;
	eth_cc_ack(&ep, 0, 1, now += 100000000);
	TEST_ASSERT(ep.cwnd == c0, "cwnd %.3f after a host-time ack", ep.cwnd);
	TEST_ASSERT_EQ(ei.st.cc_decreases, 2);

	/*
	 * A long run of host-time acks (a peer that always holds frames past our bound) counts
	 * at most a window's worth: the path sample after a million of them adds about one
	 * frame (the credit grew without bound, wrapped its 32 bits after 477 million acks of 9
	 * frames, and one sample then opened the window to 256 at once)
	 */
	c0 = ep.cwnd;
	for (int i = 0; i < 1000000; i++)
		eth_cc_ack(&ep, 0, 9, now += 1000);
	TEST_ASSERT(ep.cc_acked <= (uint32_t)c0 + 1, "credit %u with cwnd %.3f", ep.cc_acked,
		    c0);
	TEST_ASSERT(ep.cwnd == c0, "cwnd %.3f moved before a path sample", ep.cwnd);
	eth_cc_ack(&ep, 250000, 9, now += 1000);
	/* the window's worth (cwnd + 1) and the sample's own 9 frames, over cwnd */
	TEST_ASSERT(ep.cwnd > c0 && ep.cwnd <= c0 + ((uint32_t)c0 + 1 + 9) / c0 + 1e-9,
		    "cwnd %.3f from %.3f after one path sample", ep.cwnd, c0);
	TEST_ASSERT_EQ(ep.cc_acked, 0);
	return TEST_OK;
}

/*
 * The window takes a sample only from an echo newer than any it used: as on the side that
 * pulls 1 MiB by get, the peer's 30 data frames all echo our one GET_REQ, sent 4 ms before
 * the last of them arrives.  Each such echo still feeds the RTO (ack_input()), none after
 * the first reaches the window unless it acks new frames, and a stale echo's acked frames
 * still count.  1 GHz TSC.
 */
UNIO_TEST(ethdev_cc_fresh_echoes, fast)
{
	static struct eth_iface ei;
	static struct eth_ep ep;
	uint64_t now = 1000000000, req;
	double c0;

	ei.tsc_hz = 1000000000;
	ei.target_delay = 1000000;             /* 1 ms */
	ep.ei = &ei;
	ep.cwnd = 100;
	ep.srtt = 100000;
	ep.last_decrease = 1;                  /* past slow start */
	ep.min_rtt = 50000;

	/* the first echo of the request: 80 us on the path, below the target: an increase */
	req = now;
	now += 80000;
	eth_cc_echo(&ep, req, now - req, 1, now);
	TEST_ASSERT_EQ(ei.st.cc_samples, 1);
	TEST_ASSERT_EQ(ep.cc_echo, req);
	c0 = ep.cwnd;
	TEST_ASSERT(c0 > 100 && c0 < 100.02, "cwnd %.4f", c0);

	/* 29 more frames echo the same request, up to 4 ms after it: no sample, no decrease */
	for (int i = 0; i < 29; i++) {
		now += 135000;
		eth_cc_echo(&ep, req, now - req, 0, now);
	}
	TEST_ASSERT(now - req > 3900000, "the last echo is %" PRIu64 " ns old", now - req);
	TEST_ASSERT_EQ(ei.st.cc_samples, 1);
	TEST_ASSERT_EQ(ei.st.cc_stale_samples, 29);
	TEST_ASSERT_EQ(ei.st.cc_decreases, 0);
	TEST_ASSERT(ep.cwnd == c0, "cwnd %.4f after stale echoes, was %.4f", ep.cwnd, c0);

	/* an older echo (reordered) is stale too, and the frames its ack acknowledged count */
	eth_cc_echo(&ep, req - 1000, 5000000, 3, now += 1000);
	TEST_ASSERT_EQ(ei.st.cc_stale_samples, 30);
	TEST_ASSERT_EQ(ei.st.cc_decreases, 0);
	TEST_ASSERT_EQ(ep.cc_acked, 3);
	TEST_ASSERT_EQ(ep.cc_echo, req);

	/* the next request's echo is fresh: 5 ms on the path is one decrease */
	req = now;
	now += 5000000;
	eth_cc_echo(&ep, req, now - req, 1, now);
	TEST_ASSERT_EQ(ei.st.cc_samples, 2);
	TEST_ASSERT_EQ(ei.st.cc_decreases, 1);
	TEST_ASSERT(ep.cwnd < c0, "cwnd %.4f after a fresh 5 ms sample", ep.cwnd);
	TEST_ASSERT_EQ(ep.cc_acked, 0);
	TEST_ASSERT_EQ(ep.cc_echo, req);

	/* the same stamp in an ack of new frames (a later frame of that poll) is a sample */
	c0 = ep.cwnd;
	eth_cc_echo(&ep, req, 100000, 4, now += 1000);
	TEST_ASSERT_EQ(ei.st.cc_samples, 3);
	TEST_ASSERT(ep.cwnd > c0, "cwnd %.4f after a same-stamp ack, was %.4f", ep.cwnd, c0);
	eth_cc_echo(&ep, req, 100000, 0, now += 1000);
	TEST_ASSERT_EQ(ei.st.cc_samples, 3);
	TEST_ASSERT_EQ(ei.st.cc_stale_samples, 31);

	/* a fresh host-time echo (path 0) is a host sample, and used once like the others */
	eth_cc_echo(&ep, req + 1, 0, 2, now += 1000);
	eth_cc_echo(&ep, req + 1, 0, 0, now += 1000);
	TEST_ASSERT_EQ(ei.st.cc_host_samples, 1);
	TEST_ASSERT_EQ(ei.st.cc_stale_samples, 32);
	TEST_ASSERT_EQ(ep.cc_acked, 2);
	return TEST_OK;
}

/*
 * An ep destroyed while the iface's tx queue still holds frames of its zero-copy message
 * (a memif server port without a client refuses every frame: they wait in the queue, as
 * frames a real NIC has not completed yet wait in its ring).  The message's record outlives
 * the ep; when the frames are freed at last (the iface closes) the message completes once,
 * with UNIO_ERR_CANCELED, and another ep made meanwhile (likely in the freed ep's memory)
 * keeps its own zero-copy records.  Before, the record lived inside the ep: the late free
 * completed it from freed memory.
 */
struct zc_seen {
	struct unio_tl_completion comp;
	int calls;
	unio_status_t st;
};

static void
zc_seen_cb(struct unio_tl_completion *c)
{
	struct zc_seen *z = container_of(c, struct zc_seen, comp);

	z->calls++;
	z->st = c->status;
}

static int ethdev_zc_gone_run(int argc, char **argv);

UNIO_TEST_CHILD(ethdev_zc_gone)
{
	return t_release(ethdev_zc_gone_run(argc, argv));
}

static int
ethdev_zc_gone_run(int argc, char **argv)
{
	const struct unio_tl_driver *drv = unio_tl_driver_find("ethdev");
	struct unio_tl_iface_params ip = { .config = unio_config_env(), .dev_name = "net_memif0",
					   .cpu = -1 };
	static uint8_t buf[2][16384];
	struct zc_seen seen[2];
	struct unio_tl_ethdev_stats s;
	struct unio_tl_iface *ifc;
	struct unio_tl_ep *ep[2];
	struct eth_addr a[2];
	uint64_t hdr = 7;

	RTE_SET_USED(argc), RTE_SET_USED(argv);
	if (drv == NULL || unio_env_init_default() != UNIO_OK ||
	    t_iface_open(drv, &ip, &ifc) != UNIO_OK)
		return 10;
	for (int i = 0; i < 2; i++) {
		struct unio_tl_ep_params epp = { .iface_addr = &a[i],
						 .iface_addr_len = sizeof(a[i]) };

		/* a peer that is not there: another MAC, address and port */
		if (unio_tl_iface_get_address(ifc, &a[i]) != UNIO_OK)
			return 11;
		a[i].mac.addr_bytes[5] ^= (uint8_t)(0x10 + i);
		a[i].ip = rte_cpu_to_be_32(rte_be_to_cpu_32(a[i].ip) + 1 + (uint32_t)i);
		if (t_ep_create(ifc, &epp, &ep[i]) != UNIO_OK)
			return 12;
		test_fill(buf[i], sizeof(buf[i]), (uint64_t)i);
		seen[i] = (struct zc_seen){ .comp = { .func = zc_seen_cb, .count = 1 } };
		if (unio_tl_ep_am_zcopy(ep[i], 3, &hdr, sizeof(hdr),
					&(struct iovec){ buf[i], sizeof(buf[i]) }, 1, 0,
					&seen[i].comp) != UNIO_INPROGRESS)
			return 13;
		for (int k = 0; k < 1000; k++)
			unio_tl_iface_progress(ifc);
		if (seen[i].calls != 0)
			return 14;
		if (i == 0) {
			t_ep_destroy(ep[0]);
			if (seen[0].calls != 0)   /* the queued frames still hold the message */
				return 15;
		}
	}
	unio_tl_ethdev_stats(ifc, &s);
	fprintf(stderr, "tx_zcopy %" PRIu64 ", zc_orphaned %" PRIu64 ", tx_refused_txq %" PRIu64
		"\n", s.tx_zcopy, s.zc_orphaned, s.tx_refused_txq);
	if (s.tx_zcopy != 2 || s.zc_orphaned != 1)
		return 16;
	t_iface_close(ifc);       /* frees the queued frames: both complete now */
	fprintf(stderr, "completions: %d (%s), %d (%s)\n", seen[0].calls,
		unio_status_string(seen[0].st), seen[1].calls, unio_status_string(seen[1].st));
	if (seen[0].calls != 1 || seen[0].st != UNIO_ERR_CANCELED ||
	    seen[1].calls != 1 || seen[1].st != UNIO_ERR_CANCELED)
		return 17;
	return 0;
}

/*
 * Run child @p child with EAL arguments @p eal and UNIO_ETHDEV_IP @p ip, both in its
 * environment only; remove the memif socket @p sock after it.  Its exit code.
 */
static int
memif_child(const char *child, const char *eal, const char *ip, const char *sock)
{
	pid_t pid;
	int r;

	setenv("UNIO_EAL_ARGS", eal, 1);
	setenv("UNIO_ETHDEV_IP", ip, 1);
	pid = test_spawn(child, NULL);
	unsetenv("UNIO_EAL_ARGS");
	unsetenv("UNIO_ETHDEV_IP");
	r = test_wait(pid, 60000);
	unlink(sock);
	return r;
}

/*
 * Run child @p child with two memif ports of one socket (net_memif0 the server, net_memif1
 * the client), their MACs 02:00:00:00:@p net:0a / 0b and IPv4 10.77.@p net .1 / .2.
 */
static int
memif2_child(const char *child, unsigned int net)
{
	char vdev[320], sock[64], ip[64];

	snprintf(sock, sizeof(sock), "/tmp/unio-%s-%d.sock", child + strlen("ethdev_"),
		 getpid());
	snprintf(vdev, sizeof(vdev), "--vdev=net_memif0,role=server,socket=%s,"
		 "mac=02:00:00:00:%02x:0a --vdev=net_memif1,role=client,socket=%s,"
		 "mac=02:00:00:00:%02x:0b", sock, net, sock, net);
	snprintf(ip, sizeof(ip), "net_memif0:10.77.%u.1,net_memif1:10.77.%u.2", net, net);
	return memif_child(child, vdev, ip, sock);
}

/* In such a child: EAL, and an ethdev iface on each port (@p pid: their port ids). */
static int
memif2_open(struct unio_tl_iface *ifc[2], uint16_t pid[2])
{
	static const char *const devs[2] = { "net_memif0", "net_memif1" };
	const struct unio_tl_driver *drv = unio_tl_driver_find("ethdev");

	if (drv == NULL || unio_env_init_default() != UNIO_OK)
		return -1;
	for (int i = 0; i < 2; i++) {
		struct unio_tl_iface_params ip = { .config = unio_config_env(), .dev_name = devs[i],
						   .cpu = -1 };

		if (rte_eth_dev_get_port_by_name(devs[i], &pid[i]) != 0 ||
		    t_iface_open(drv, &ip, &ifc[i]) != UNIO_OK)
			return -1;
	}
	return 0;
}

/* Close memif2_open()'s ifaces: the client first, the server once its link is down. */
static void
memif2_close(struct unio_tl_iface *ifc[2], uint16_t pid0)
{
	struct rte_eth_link link;
	double end = test_now_s() + 5;

	t_iface_close(ifc[1]);
	while (rte_eth_link_get_nowait(pid0, &link) == 0 && link.link_status &&
	       test_now_s() < end)
		usleep(10000);
	t_iface_close(ifc[0]);
}

static void
pair_progress(struct unio_tl_iface *a, struct unio_tl_iface *b, unsigned int n)
{
	for (unsigned int k = 0; k < n; k++) {
		unio_tl_iface_progress(a);
		if (b != NULL)
			unio_tl_iface_progress(b);
	}
}

UNIO_TEST(ethdev_zcopy_ep_gone, mp)
{
	char vdev[160], sock[64];

	snprintf(sock, sizeof(sock), "/tmp/unio-zcg-%d.sock", getpid());
	snprintf(vdev, sizeof(vdev), "--vdev=net_memif0,role=server,socket=%s,"
		 "mac=02:00:00:00:05:0a", sock);
	TEST_ASSERT_EQ(memif_child("ethdev_zc_gone", vdev, "10.77.5.1", sock), 0);
	return TEST_OK;
}

/* ---- per-port mbuf pools in hugepages ---- */

struct pool_ranges {
	unsigned int n, small;     /* memory chunks of the pool; those not in hugepages */
	uintptr_t lo[64], hi[64];
};

static void
pool_chunk(struct rte_mempool *mp, void *opaque, struct rte_mempool_memhdr *mh, unsigned int i)
{
	struct pool_ranges *r = opaque;
	const struct rte_memseg_list *msl = rte_mem_virt2memseg_list(mh->addr);

	RTE_SET_USED(mp), RTE_SET_USED(i);
	if (msl == NULL || msl->page_sz < (2u << 20))
		r->small++;
	if (r->n < RTE_DIM(r->lo)) {
		r->lo[r->n] = (uintptr_t)mh->addr;
		r->hi[r->n] = (uintptr_t)mh->addr + mh->len;
	}
	r->n++;
}

static bool
pool_holds(const struct pool_ranges *r, const void *p)
{
	for (unsigned int i = 0; i < RTE_MIN(r->n, (unsigned int)RTE_DIM(r->lo)); i++)
		if ((uintptr_t)p >= r->lo[i] && (uintptr_t)p < r->hi[i])
			return true;
	return false;
}

struct pool_rx {
	const struct pool_ranges *own, *other;
	unsigned int got, in_own, in_other;
};

static unio_status_t
pool_rx_cb(void *arg, const void *data, size_t length, unsigned int flags,
	   unio_tl_conn_id_t conn_id)
{
	struct pool_rx *r = arg;

	RTE_SET_USED(length), RTE_SET_USED(flags), RTE_SET_USED(conn_id);
	r->got++;
	r->in_own += pool_holds(r->own, data);
	r->in_other += pool_holds(r->other, data);
	return UNIO_OK;
}

static int ethdev_pools_run(void);

UNIO_TEST_CHILD(ethdev_pools)
{
	RTE_SET_USED(argc), RTE_SET_USED(argv);
	return t_release(ethdev_pools_run());
}

/*
 * Two memif ports of one process (net_memif0 the server, net_memif1 the client of one
 * socket), an iface on each: each port has a pool of its own (unio_eth<port>), all of its
 * memory in hugepages, and what an iface receives lies in its own port's pool.
 */
static int
ethdev_pools_run(void)
{
	static struct pool_ranges rg[2];
	struct unio_tl_iface *ifc[2] = { NULL, NULL };
	struct unio_tl_ep *ep = NULL;
	struct rte_mempool *mp[2];
	struct pool_rx rx = { .own = &rg[1], .other = &rg[0] };
	struct eth_addr addr;
	uint16_t pid[2];
	double end;

	if (memif2_open(ifc, pid) != 0)
		return 10;
	if (!rte_eal_has_hugepages()) {   /* other tests took them since the parent looked */
		fprintf(stderr, "EAL took no hugepages: %s\n", unio_env_eal_args());
		return 77;
	}
	for (int i = 0; i < 2; i++) {
		char name[RTE_MEMPOOL_NAMESIZE];

		snprintf(name, sizeof(name), "unio_eth%u", pid[i]);
		mp[i] = rte_mempool_lookup(name);
		if (mp[i] == NULL)
			return 13;
		rte_mempool_mem_iter(mp[i], pool_chunk, &rg[i]);
		fprintf(stderr, "port %u: pool %s, %u mbufs, %u memory chunks, %u not in "
			"hugepages\n", pid[i], mp[i]->name, mp[i]->size, rg[i].n, rg[i].small);
		if (rg[i].n == 0 || rg[i].small != 0)
			return 14;
	}
	if (mp[0] == mp[1])
		return 15;
	if (unio_tl_iface_set_am_handler(ifc[1], AM_DATA, pool_rx_cb, &rx) != UNIO_OK ||
	    unio_tl_iface_get_address(ifc[1], &addr) != UNIO_OK ||
	    t_ep_create(ifc[0], &(struct unio_tl_ep_params){ .iface_addr = &addr,
							     .iface_addr_len = sizeof(addr) },
			&ep) != UNIO_OK)
		return 16;
	/* 64 messages from the server's iface to the client's, once the link is up */
	end = test_now_s() + 20;
	for (unsigned int sent = 0; rx.got < 64 && test_now_s() < end;) {
		if (sent < 64 && unio_tl_ep_am_short(ep, AM_DATA, sent, NULL, 0) == UNIO_OK)
			sent++;
		pair_progress(ifc[0], ifc[1], 1);
	}
	fprintf(stderr, "received %u: %u in the receiving port's pool, %u in the other's\n",
		rx.got, rx.in_own, rx.in_other);
	if (rx.got != 64 || rx.in_own != 64 || rx.in_other != 0)
		return 17;
	pair_progress(ifc[0], ifc[1], 1000);
	t_ep_destroy(ep);
	memif2_close(ifc, pid[0]);
	return 0;
}

/* ---- a peer that acks put chunks it has not received ---- */

struct put_seen {
	struct unio_tl_completion comp;   /* first: the callback casts back */
	int calls;
};

static void
put_seen_cb(struct unio_tl_completion *c)
{
	((struct put_seen *)c)->calls++;
}

static unio_status_t
count_rx_cb(void *arg, const void *data, size_t length, unsigned int flags,
	    unio_tl_conn_id_t conn_id)
{
	RTE_SET_USED(data), RTE_SET_USED(length), RTE_SET_USED(flags), RTE_SET_USED(conn_id);
	(*(unsigned int *)arg)++;
	return UNIO_OK;
}

static size_t
forged_ack_pack(void *dest, void *arg)
{
	memcpy(dest, arg, sizeof(struct eth_rma_hdr));
	return sizeof(struct eth_rma_hdr);
}

static int ethdev_forged_ack_run(void);

UNIO_TEST_CHILD(ethdev_forged_ack)
{
	RTE_SET_USED(argc), RTE_SET_USED(argv);
	return t_release(ethdev_forged_ack_run());
}

/*
 * A 4 MiB put from net_memif0's iface into a region of net_memif1's, whose iface does not
 * progress, so the put's later chunks wait in its job; meanwhile the target's side sends
 * 100 PUT_ACKs for it (AM id ETH_AM_PUT_ACK through am_bcopy, as a misbehaving peer
 * would).  Only as many as chunks were sent may count: the put must not complete while
 * chunks of it are still to be read from the buffer, the rest are dropped and counted
 * (drop_bad_msg).  Then the target progresses: the put completes exactly once, UNIO_OK,
 * and the region holds the source.
 */
static int
ethdev_forged_ack_run(void)
{
	const uint32_t len = 4u << 20;
	struct unio_tl_iface *ifc[2] = { NULL, NULL };
	struct unio_tl_ep *ep[2] = { NULL, NULL };
	struct unio_tl_ethdev_stats s0, s1;
	struct put_seen ps = { .comp = { .func = put_seen_cb, .count = 1 } };
	struct unio_tl_memh memh = { 0 };
	struct unio_tl_rkey rkey = { 0 };
	struct eth_rma_hdr ack = { .req_id = 0, .status = UNIO_OK };
	uint8_t key[UNIO_TL_RKEY_MAX], *src, *dst;
	unsigned int forged = 0, got = 0;
	uint16_t pid[2];
	unio_status_t st;
	double end;

	if (memif2_open(ifc, pid) != 0)
		return 10;
	src = malloc(len);
	dst = calloc(1, len);
	if (src == NULL || dst == NULL)
		return 11;
	test_fill(src, len, 0xf0f0);
	for (int i = 0; i < 2; i++) {
		struct eth_addr addr;

		if (unio_tl_iface_set_am_handler(ifc[i], AM_DATA, count_rx_cb, &got) != UNIO_OK ||
		    unio_tl_iface_get_address(ifc[!i], &addr) != UNIO_OK ||
		    t_ep_create(ifc[i], &(struct unio_tl_ep_params){
					.iface_addr = &addr, .iface_addr_len = sizeof(addr) },
				&ep[i]) != UNIO_OK)
			return 13;
	}
	/* both links up, both eps answered (lossless by now) */
	end = test_now_s() + 20;
	for (unsigned int sent = 0; got < 64 && test_now_s() < end;) {
		if (sent < 64 && unio_tl_ep_am_short(ep[sent % 2], AM_DATA, sent, NULL, 0) ==
		    UNIO_OK)
			sent++;
		pair_progress(ifc[0], ifc[1], 1);
	}
	pair_progress(ifc[0], ifc[1], 1000);
	if (got != 64)
		return 14;
	if (unio_tl_mem_reg(ifc[1], dst, len, &memh) != UNIO_OK ||
	    unio_tl_rkey_pack(ifc[1], &memh, key) != UNIO_OK ||
	    unio_tl_rkey_unpack(ep[0], key, ifc[1]->attr.rkey_packed_len, &rkey) != UNIO_OK)
		return 15;
	unio_tl_ethdev_stats(ifc[0], &s0);
	st = unio_tl_ep_put_zcopy(ep[0], &(struct iovec){ src, len }, 1, (uintptr_t)dst, &rkey,
				  &ps.comp);
	if (st != UNIO_INPROGRESS)
		return 16;
	pair_progress(ifc[0], NULL, 2000);      /* the target does not read */
	while (forged < 100 &&
	       unio_tl_ep_am_bcopy(ep[1], ETH_AM_PUT_ACK, forged_ack_pack, &ack, 0) >= 0)
		forged++;
	pair_progress(ifc[0], NULL, 2000);
	unio_tl_ethdev_stats(ifc[0], &s1);
	fprintf(stderr, "forged acks %u; put chunks sent %" PRIu64 " of %zu; dropped %" PRIu64
		"; completion calls %d\n", forged, s1.tx_zcopy_put - s0.tx_zcopy_put,
		len / eth_rma_chunk(ifc[0]->attr.max_short + sizeof(uint64_t)) + 1,
		s1.drop_bad_msg - s0.drop_bad_msg, ps.calls);
	if (forged != 100 || ps.calls != 0 || s1.tx_zcopy_put - s0.tx_zcopy_put >= forged ||
	    s1.drop_bad_msg - s0.drop_bad_msg != forged - (s1.tx_zcopy_put - s0.tx_zcopy_put))
		return 17;
	/* the target reads and answers now: the put completes once, with its data */
	end = test_now_s() + 20;
	while (ps.calls == 0 && test_now_s() < end)
		pair_progress(ifc[0], ifc[1], 1);
	pair_progress(ifc[0], ifc[1], 1000);
	fprintf(stderr, "completion calls %d, status %s\n", ps.calls,
		unio_status_string(ps.comp.status));
	if (ps.calls != 1 || ps.comp.status != UNIO_OK || memcmp(src, dst, len) != 0)
		return 18;
	unio_tl_rkey_release(ep[0], &rkey);
	unio_tl_mem_dereg(ifc[1], &memh);
	t_ep_destroy(ep[0]);
	t_ep_destroy(ep[1]);
	memif2_close(ifc, pid[0]);
	free(src);
	free(dst);
	return 0;
}

UNIO_TEST(ethdev_forged_put_ack, mp)
{
	TEST_ASSERT_EQ(memif2_child("ethdev_forged_ack", 7), 0);
	return TEST_OK;
}

static long
huge_count(const char *name)
{
	char path[128];
	FILE *f;
	long n = 0;

	snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/hugepages-2048kB/%s", name);
	f = fopen(path, "r");
	if (f != NULL) {
		if (fscanf(f, "%ld", &n) != 1)
			n = 0;
		fclose(f);
	}
	return n;
}

/* 2 MiB hugepages free and not reserved by another process's mapping */
static long
huge_free(void)
{
	return huge_count("free_hugepages") - huge_count("resv_hugepages");
}

UNIO_TEST(ethdev_port_pools_huge, mp)
{
	long n = huge_free();

	if (n < 64)
		TEST_SKIP_BECAUSE("%ld free 2 MiB hugepages, 64 wanted (.ci/run reserves them)", n);
	n = memif2_child("ethdev_pools", 6);
	if (n == 77)
		TEST_SKIP_BECAUSE("the child's EAL got no hugepages (UNIO_HUGEPAGES=no, or "
				  "other tests took them)");
	TEST_ASSERT_EQ(n, 0);
	return TEST_OK;
}

/*
 * When an owed ack goes out as a frame of its own (eth_ack_due()), fed as frames arrive in
 * a stream, one by one and sparsely.  1 GHz TSC: a cycle is a ns.  A stream of frames 2 us
 * apart is acked every ETH_ACK_EVERY frames, not when the oldest waited ETH_ACK_DELAY_US
 * (which acked it every 10 frames); a lone frame after ETH_ACK_DELAY_US without another;
 * frames 15 us apart once the oldest waited ETH_ACK_MAX_US; frames out of order at once.
 */
UNIO_TEST(ethdev_ack_due, fast)
{
	static struct eth_iface ei;
	static struct eth_ep ep;
	uint64_t now = 1000000000;
	unsigned int acks = 0, frames;

	ei.tsc_hz = 1000000000;
	ei.ack_delay = ETH_ACK_DELAY_US * 1000ull;
	ei.ack_max = ETH_ACK_MAX_US * 1000ull;
	ep.ei = &ei;

	/* 160 frames 2 us apart, the ack checked after each: 10 acks, each of 16 frames */
	for (frames = 0; frames < 160; frames++) {
		now += 2000;
		if (ep.n_unacked++ == 0)
			ep.ack_since = now;
		ep.ack_last = now;
		if (eth_ack_due(&ep, now)) {
			TEST_ASSERT_EQ(ep.n_unacked, ETH_ACK_EVERY);
			ep.n_unacked = 0;
			acks++;
		}
	}
	TEST_ASSERT_EQ(acks, 160 / ETH_ACK_EVERY);

	/* a lone frame: not due while a reply may still carry it, due 20 us after it */
	ep.n_unacked = 1;
	ep.ack_since = ep.ack_last = now;
	TEST_ASSERT(!eth_ack_due(&ep, now + ei.ack_delay - 1), "lone frame acked early");
	TEST_ASSERT(eth_ack_due(&ep, now + ei.ack_delay), "lone frame not acked");

	/* frames 15 us apart: the latest is never 20 us old, the oldest reaches 100 us */
	ep.n_unacked = 1;
	ep.ack_since = ep.ack_last = now;
	for (frames = 1; !eth_ack_due(&ep, now); frames++) {
		TEST_ASSERT(frames < ETH_ACK_EVERY, "sparse frames never acked");
		now += 15000;
		ep.n_unacked++;
		ep.ack_last = now;
	}
	TEST_ASSERT(now - ep.ack_since >= ei.ack_max && now - ep.ack_since < ei.ack_max + 15000,
		    "sparse frames acked after %" PRIu64 " ns", now - ep.ack_since);

	/* a frame out of order: at once (the sender needs the SACK) */
	ep.n_unacked = 1;
	ep.ack_since = ep.ack_last = now;
	ep.n_ooo = 1;
	TEST_ASSERT(eth_ack_due(&ep, now), "out of order frame not acked at once");
	return TEST_OK;
}

/*
 * Which data frames carry a TSC for the peer to echo (eth_frame_tsc()): every one until the
 * first RTT sample; then of the frames sent while nothing is in flight (every frame of a
 * ping-pong) one in ETH_TIME_EVERY, and every frame sent behind others.
 */
UNIO_TEST(ethdev_frame_timing, fast)
{
	static struct eth_iface ei;
	static struct eth_ep ep;
	unsigned int timed = 0;
	uint64_t now = 1000;

	ep.ei = &ei;
	ep.cwnd = ETH_INIT_CWND;
	/* no sample yet: every frame is timed */
	for (int i = 0; i < 20; i++)
		TEST_ASSERT_EQ(eth_frame_tsc(&ep, ++now), now);
	/* a ping-pong (nothing in flight when the answer goes): one frame in ETH_TIME_EVERY */
	ep.srtt = 5000;
	for (unsigned int i = 0; i < 100 * ETH_TIME_EVERY; i++) {
		uint64_t t = eth_frame_tsc(&ep, ++now);

		TEST_ASSERT(t == 0 || t == now, "frame %u stamped %" PRIu64 " at %" PRIu64, i, t,
			    now);
		if (t != 0) {
			TEST_ASSERT_EQ((i + 1) % ETH_TIME_EVERY, 0);
			timed++;
		}
	}
	TEST_ASSERT_EQ(timed, 100);
	/* a burst: the frames behind the first are all timed, however small the window use */
	ep.snd_una = ep.snd_nxt = 1000;
	timed = 0;
	for (unsigned int i = 0; i < ETH_WIN; i++) {
		uint64_t t = eth_frame_tsc(&ep, ++now);

		TEST_ASSERT(i == 0 || t == now, "frame %u of a burst untimed", i);
		timed += t != 0;
		ep.snd_nxt++;
	}
	TEST_ASSERT(timed >= ETH_WIN - 1, "%u of %u timed", timed, ETH_WIN);
	/* the burst acked: idle sends again, and the count restarts after the timed frames */
	ep.snd_una = ep.snd_nxt;
	timed = 0;
	for (unsigned int i = 0; i < 10 * ETH_TIME_EVERY; i++)
		timed += eth_frame_tsc(&ep, ++now) != 0;
	TEST_ASSERT_EQ(timed, 10);
	return TEST_OK;
}

/* Two workers on one port: queue pairs, steering between them, delivery inside the port. */
UNIO_TEST(ethdev_two_queues, mp)
{
	return netns_pair(&(struct pair_run){ "veth", "net_af_packet", "", "2000", "small", "0",
					      "mq" });
}

/*
 * Two flows share a 100 Mbit/s bottleneck: both complete, neither starves (the slower has
 * more than 25 % of its bytes when the faster finishes).  Suite "slow" like the other tbf
 * test: the shares depend on the CPU each side gets.  Before the flow scaling of the target
 * delay it failed in about half the runs on a quiet host (14-100 %).
 */
UNIO_TEST(ethdev_tbf_two_flows, slow)
{
	return netns_pair(&(struct pair_run){ "bridge", "net_af_packet", "--rate 100mbit",
					      "1000", "8k", "0", "fair" });
}

/* An ep from IPv4 and UDP port alone; the receiver has no ep: a listener's view. */
UNIO_TEST(ethdev_dial, mp)
{
	return netns_pair(&(struct pair_run){ "veth", "net_af_packet", "", "3000", "full", "0",
					      "dial" });
}

/* Peers known by IPv4 only: ARP (with an unanswered one failing) and a static entry. */
UNIO_TEST(ethdev_arp_resolve, mp)
{
	return netns_pair(&(struct pair_run){ "veth", "net_af_packet", "", "2000", "small", "0",
					      "arp" });
}

UNIO_TEST(ethdev_peer_failure, mp)
{
	return netns_pair(&(struct pair_run){ "veth", "net_af_packet", "", "1000000", "small",
					      "0", "silent" });
}

/*
 * The same over memif, whose eps go over to the lossless mode (UNIO_ETHDEV_LOSSLESS): no
 * frame kept, none sent again, and still a peer that went silent (its process exits, the
 * link goes down with frames in the ring) fails the ep with UNIO_ERR_TIMED_OUT.
 */
UNIO_TEST(ethdev_peer_failure_memif, mp)
{
	return memif_pair(&(struct pair_run){ NULL, NULL, NULL, "1000000", "small", "0",
					      "silent" });
}

UNIO_TEST(ethdev_tbf_100mbit, slow)
{
	return netns_pair(&(struct pair_run){ "bridge", "net_af_packet", "--rate 100mbit",
					      "2000", "8k", "0", "stream" });
}

/*
 * Issue 8's figure through the 100 Mbit/s bottleneck: the receiver's goodput must reach
 * 85 Mbit/s (UNIO_TEST_ETH_MIN_MBITS), with less than 10 % of the bytes retransmitted as in
 * ethdev_tbf_100mbit.  Suite "open": on this shared 2-core VM the wall-clock goodput went
 * from 45 to 92 Mbit/s with the load (doc/guides/drivers/ethdev.md, "Measured here"), so CI
 * does not hold it; run it by hand on a quiet host.
 */
UNIO_TEST(ethdev_tbf_100mbit_goodput, open)
{
	int rc;

	setenv("UNIO_TEST_ETH_MIN_MBITS", "85", 1);
	rc = netns_pair(&(struct pair_run){ "bridge", "net_af_packet", "--rate 100mbit", "2000",
					    "8k", "0", "stream" });
	unsetenv("UNIO_TEST_ETH_MIN_MBITS");
	return rc;
}

/* Ask process @p pid's DPDK telemetry socket @p cmd; the reply (JSON) goes to @p out. */
static int
telemetry_query(pid_t pid, const char *cmd, char *out, size_t len)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	ssize_t n = -1;

	if (fd < 0)
		return -1;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "/var/run/dpdk/unio-%d/dpdk_telemetry.v2",
		 (int)pid);
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0 &&
	    recv(fd, out, len - 1, 0) > 0 &&                   /* the greeting */
	    send(fd, cmd, strlen(cmd), 0) > 0)
		n = recv(fd, out, len - 1, 0);
	close(fd);
	if (n <= 0)
		return -1;
	out[n] = '\0';
	return 0;
}

/* The value of "key": N in a telemetry reply, or -1. */
static long long
json_u64(const char *json, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(json, pat);
	return p == NULL ? -1 : strtoll(p + strlen(pat), NULL, 10);
}

/* Kernel ping and arping from the peer namespace reach the DPDK iface. */
UNIO_TEST(ethdev_ping_arping, mp)
{
	char name[32], ns[40], prefix[64], path[128], json[4096] = "";
	const char *args[10];
	int rc = TEST_FAIL, rp = -1, ra = -1, rt = 0, rw;
	pid_t pid;

	if (!test_can_netns())
		TEST_SKIP_BECAUSE("needs root and iproute2 network namespaces");
	if (test_system("command -v ping >/dev/null && command -v arping >/dev/null") != 0)
		TEST_SKIP_BECAUSE("ping or arping not installed (apt-get install iputils-ping "
				  "iputils-arping)");
	snprintf(name, sizeof(name), "unio-%d", getpid());
	snprintf(ns, sizeof(ns), "%s-a", name);
	snprintf(prefix, sizeof(prefix), "/tmp/unio-eth-%d", getpid());
	snprintf(path, sizeof(path), "%s-a.addr", prefix);
	if (test_topology("veth", "up", name, "") != 0 ||
	    test_system("ip -n %s-b addr add " IP_KERN "/24 dev vb", name) != 0)
		goto out;
	args[0] = ns, args[1] = "net_af_packet0,iface=va", args[2] = IP_A, args[3] = "0";
	args[4] = prefix, args[5] = "0", args[6] = "small", args[7] = "0", args[8] = "serve";
	args[9] = NULL;
	pid = test_spawn("ethdev_peer", args);
	for (int i = 0; i < 200 && access(path, F_OK) != 0; i++)
		usleep(50000);     /* waits for the child to publish its address, bounded */
	rp = test_system("ip netns exec %s-b ping -c 3 -i 0.2 -W 2 " IP_A " >/dev/null", name);
	ra = test_system("ip netns exec %s-b arping -c 2 -w 5 -I vb " IP_A " >/dev/null", name);
	/* the same counters through DPDK telemetry */
	if (telemetry_query(pid, "/unio/ethdev/stats,0", json, sizeof(json)) != 0 ||
	    json_u64(json, "icmp_replies") < 3 || json_u64(json, "arp_replies") < 2) {
		TEST_LOG("telemetry: %s", json);
		rt = -1;
	}
	snprintf(path, sizeof(path), "%s.stop", prefix);
	close(open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
	rw = test_wait(pid, 20000);
	TEST_LOG("ping %d arping %d telemetry %d child %d", rp, ra, rt, rw);
	rc = rp == 0 && ra == 0 && rt == 0 && rw == 0 ? TEST_OK : TEST_FAIL;
out:
	prefix_clean(prefix);
	test_topology("veth", "down", name, "");
	return rc;
}

/*
 * argv: netns.  The DPDK iface (IP_A on va) resolves the kernel host IP_KERN with ARP and
 * sends it UDP datagrams (a dial to IP_KERN:13337, AMs behind it); the kernel's answers, UDP
 * datagrams that are not Unio frames, must be dropped and counted.
 */
static int ethdev_kudp_run(int argc, char **argv);

UNIO_TEST_CHILD(ethdev_kudp)
{
	return t_release(ethdev_kudp_run(argc, argv));
}

static int
ethdev_kudp_run(int argc, char **argv)
{
	struct sockaddr_in k = { .sin_family = AF_INET, .sin_port = htons(13337) };
	static struct peer p;
	struct unio_tl_ethdev_stats s = { 0 };
	struct unio_tl_ep_params epp = { .iface_addr = &p.other,
					 .iface_addr_len = sizeof(p.other) };
	double end = test_now_s() + 20;

	TEST_ASSERT(argc == 1, "argc %d", argc);
	TEST_ASSERT(test_enter_netns(argv[0]) == 0, "setns %s: %s", argv[0], strerror(errno));
	if (peer_open(&p, "net_af_packet0,iface=va", IP_A, 0) != TEST_OK)
		return TEST_FAIL;
	k.sin_addr.s_addr = inet_addr(IP_KERN);
	TEST_ASSERT_STATUS(unio_tl_sockaddr_to_addr(p.iface, (struct sockaddr *)&k, sizeof(k),
						    &p.other), UNIO_OK);
	TEST_ASSERT_STATUS(t_ep_create(p.iface, &epp, &p.ep), UNIO_OK);
	for (uint64_t i = 0; s.drop_bad_hdr < 3 && test_now_s() < end; i++) {
		unio_tl_iface_progress(p.iface);
		if (i % 1000 == 0)
			unio_tl_ep_am_short(p.ep, AM_DATA, i, NULL, 0);
		unio_tl_ethdev_stats(p.iface, &s);
	}
	stats_log(&p, &s, 0);
	TEST_ASSERT(s.drop_bad_hdr >= 3, "the kernel's datagrams were not counted");
	t_ep_destroy(p.ep);
	t_iface_close(p.iface);
	return TEST_OK;
}

/*
 * A kernel host exchanges UDP with the DPDK iface: its socket on IP_KERN:13337 receives the
 * iface's datagrams (checksums valid, or the kernel would drop them; payload a Unio frame:
 * magic 0x55, version 2) from IP_A after the iface resolved it with ARP, and answers each
 * of the first three with a datagram of its own (144 bytes, not a Unio frame), which the
 * iface drops and counts in drop_bad_hdr.
 */
UNIO_TEST(ethdev_kernel_udp, mp)
{
	char name[32], ns[40];
	const char *args[] = { ns, NULL };
	int rk = -1, rd = -1;
	pid_t pid;

	if (!test_can_netns())
		TEST_SKIP_BECAUSE("needs root and iproute2 network namespaces");
	snprintf(name, sizeof(name), "unio-%d", getpid());
	snprintf(ns, sizeof(ns), "%s-a", name);
	/*
	 * A veth leaves the checksums of the kernel's own datagrams to an offload that never
	 * happens (CHECKSUM_PARTIAL): af_packet hands them up unfinished and the iface would
	 * drop them as bad.  A kernel host on a veth computes them with tx offload off, as
	 * every NIC's wire carries them.
	 */
	if (test_topology("veth", "up", name, "") == 0 &&
	    test_system("ip -n %s-b addr add " IP_KERN "/24 dev vb && "
			"ip netns exec %s-b ethtool -K vb tx off >/dev/null", name, name) == 0) {
		pid = test_spawn("ethdev_kudp", args);
		rk = test_system("ip netns exec %s-b timeout 30 python3 -c '\n"
				 "import socket\n"
				 "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
				 "s.bind((\"" IP_KERN "\", 13337))\n"
				 "s.settimeout(25)\n"
				 "good = 0\n"
				 "while good < 3:\n"
				 "    d, a = s.recvfrom(65536)\n"
				 "    if len(d) >= 4 and d[0] == 0x55 and d[1] == 2 and "
				 "a[0] == \"" IP_A "\":\n"
				 "        good += 1\n"
				 "        s.sendto(b\"a kernel datagram \" * 8, a)\n"
				 "print(\"kernel socket: %%d Unio datagrams from %%s\" %%\n"
				 "      (good, a))\n'",
				 name);
		rd = test_wait(pid, 40000);
	}
	test_topology("veth", "down", name, "");
	TEST_LOG("kernel socket %d, DPDK side %d", rk, rd);
	TEST_ASSERT(rk == 0 && rd == 0, "kernel UDP exchange failed");
	return TEST_OK;
}

/* 8-byte AM round trips (numbers printed for doc/guides/drivers/ethdev.md; counts checked). */
UNIO_TEST(ethdev_pingpong_af_packet, mp)
{
	return netns_pair(&(struct pair_run){ "veth", "net_af_packet", "", "10000", "small",
					      "0", "pingpong" });
}

UNIO_TEST(ethdev_pingpong_af_xdp, mp)
{
	return netns_pair(&(struct pair_run){ "veth", "net_af_xdp", "", "10000", "small",
					      "0", "pingpong" });
}

UNIO_TEST(ethdev_pingpong_memif, mp)
{
	return memif_pair(&(struct pair_run){ NULL, NULL, NULL, "10000", "small", "0",
					      "pingpong" });
}

UNIO_TEST(ethdev_af_xdp_am, mp)
{
	return netns_pair(&(struct pair_run){ "veth", "net_af_xdp", "", "3000", "full", "0",
					      "xchg" });
}

/*
 * af_xdp with frames larger than 1500 bytes: a veth MTU of 3500 is more than the PMD's umem
 * frames take (the mbufs are at most a page), so both sides clamp to MTU 3442 and send
 * 3352 payload bytes per frame (asserted in each peer); the 3000 messages each way of
 * every size arrive verified (before, the pool was refused at MTU 3500, and with the pool
 * fitting a page, frames of 3514 bytes were dropped by the receiving kernel).
 */
UNIO_TEST(ethdev_af_xdp_mtu3500, mp)
{
	int rc;

	setenv("UNIO_TEST_ETH_FRAG", "3352", 1);
	rc = netns_pair(&(struct pair_run){ "veth", "net_af_xdp", "--mtu 3500", "3000", "full",
					    "0", "xchg" });
	unsetenv("UNIO_TEST_ETH_FRAG");
	return rc;
}
