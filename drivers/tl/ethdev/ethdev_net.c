/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The network side of the ethdev driver: ports (configuration, queues, mempools), the
 * iface's MAC / IPv4 / UDP address, frame parsing with every length and checksum checked,
 * ARP and ICMP echo answers, the header template of a peer, the tx queue.
 */

#include <arpa/inet.h>
#include <inttypes.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_icmp.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_telemetry.h>

#include "ethdev_priv.h"
#include "unio_env.h"

#define ETH_POOL_MBUFS  8191u
#define ETH_POOL_CACHE  256u

#define ETH_TX_CSUM (RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_UDP_CKSUM)
#define ETH_RX_CSUM (RTE_ETH_RX_OFFLOAD_IPV4_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM)

struct eth_port {
	bool configured;
	bool tx_csum;          /**< the PMD computes IPv4 and UDP checksums */
	bool tx_multiseg;      /**< the PMD sends mbuf chains */
	bool kernel_pmd;       /**< the PMD is a kernel socket: the kernel moves every frame */
	bool af_xdp;           /**< the pool is the PMD's umem: frames start further in */
	bool shared_mem;       /**< the PMD is shared memory (memif): frames cannot be corrupted */
	bool af_xdp_veth;      /**< af_xdp on a veth: frames are copied between kernel buffers */
	uint32_t memif_bsize;  /**< memif: bytes of a ring buffer (devarg bsize, 2048) */
	uint16_t nq;           /**< queue pairs configured */
	uint16_t n_open;       /**< ifaces open (queues taken) */
	uint16_t base_port;    /**< UDP port of queue 0's iface (host order) */
	struct rte_mempool *mp;
	struct eth_iface *owner[ETH_MAX_QUEUES];  /**< the iface of each queue */
};

static struct eth_port eth_ports[RTE_MAX_ETHPORTS];
static pthread_mutex_t eth_ports_lock = PTHREAD_MUTEX_INITIALIZER;  /* control path only */

static unio_status_t arp_static(struct eth_iface *ei, const struct unio_config *cfg);
static void drop(struct rte_mbuf *m, uint64_t *counter);
static uint16_t kernel_mtu(uint16_t pid);
static bool kernel_is_veth(const char *ifname);
static void port_kernel_ifname(uint16_t pid, char *buf, size_t len);

/* ---- ports ---- */

/*
 * The value of devarg @p key of a port's device (@p da: its devargs, may be NULL): where
 * "key=" stands at the start of the arguments or after a comma, what follows it (up to the
 * next comma or the end, which the caller finds); NULL when the device was given no such
 * argument.
 */
static const char *
devarg_value(const struct rte_devargs *da, const char *key)
{
	const char *a = da != NULL ? da->args : NULL, *b = a;
	size_t n = strlen(key);

	for (; b != NULL && (b = strstr(b, key)) != NULL; b++)
		if ((b == a || b[-1] == ',') && b[n] == '=')
			return b + n + 1;
	return NULL;
}

static unio_status_t
port_setup(uint16_t pid, struct eth_port *p, unsigned int want_q)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	uint16_t nrx = ETH_NB_DESC, ntx = ETH_NB_DESC;
	char name[RTE_MEMPOOL_NAMESIZE];
	int sock = rte_eth_dev_socket_id(pid);
	int rc;

	memset(&conf, 0, sizeof(conf));
	rc = rte_eth_dev_info_get(pid, &info);
	if (rc == 0 && (info.tx_offload_capa & ETH_TX_CSUM) == ETH_TX_CSUM)
		conf.txmode.offloads |= ETH_TX_CSUM;
	if (rc == 0 && (info.rx_offload_capa & ETH_RX_CSUM) == ETH_RX_CSUM)
		conf.rxmode.offloads |= ETH_RX_CSUM;
	if (rc == 0 && (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) != 0)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	p->tx_csum = (conf.txmode.offloads & ETH_TX_CSUM) != 0;
	p->tx_multiseg = (conf.txmode.offloads & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) != 0;
	p->af_xdp = rc == 0 && strcmp(info.driver_name, "net_af_xdp") == 0;
	p->shared_mem = rc == 0 && strcmp(info.driver_name, "net_memif") == 0;
	if (p->shared_mem) {       /* the devarg bsize=N, 2048 by default */
		const char *b = devarg_value(rte_dev_devargs(info.device), "bsize");

		p->memif_bsize = b != NULL ? (uint32_t)strtoul(b, NULL, 0) : 2048u;
	}
	if (p->af_xdp) {
		char ifname[IFNAMSIZ + 8];

		port_kernel_ifname(pid, ifname, sizeof(ifname));
		p->af_xdp_veth = kernel_is_veth(ifname);
	}
	p->kernel_pmd = rc == 0 && (strcmp(info.driver_name, "net_af_xdp") == 0 ||
				    strcmp(info.driver_name, "net_af_packet") == 0 ||
				    strcmp(info.driver_name, "net_tap") == 0);
	if (rc == 0)
		ETH_LOG(INFO, "port %u (%s): tx offloads 0x%" PRIx64 ", rx offloads 0x%" PRIx64,
			pid, info.driver_name, info.tx_offload_capa, info.rx_offload_capa);
	p->nq = (uint16_t)RTE_MIN(want_q, (unsigned int)ETH_MAX_QUEUES);
	if (rc == 0 && info.max_rx_queues < p->nq)
		p->nq = info.max_rx_queues;
	if (rc == 0 && info.max_tx_queues < p->nq)
		p->nq = info.max_tx_queues;
	if (rc == 0 && p->nq == 0)
		rc = -EINVAL;
	if (rc == 0)
		rc = rte_eth_dev_configure(pid, p->nq, p->nq, &conf);
	if (rc == 0)
		rc = rte_eth_dev_adjust_nb_rx_tx_desc(pid, &nrx, &ntx);
	if (rc != 0) {
		ETH_LOG(ERR, "port %u: configure failed: %s", pid, rte_strerror(-rc));
		return UNIO_ERR_IO;
	}
	if (p->mp == NULL) {
		uint16_t mtu = kernel_mtu(pid);
		uint32_t room = RTE_MBUF_DEFAULT_BUF_SIZE;
		uint32_t need;

		/* jumbo MTUs get mbufs that hold a whole frame */
		if (mtu != 0 || (rte_eth_dev_get_mtu(pid, &mtu) == 0 && mtu <= ETH_JUMBO_MTU)) {
			need = (uint32_t)mtu + RTE_ETHER_HDR_LEN + RTE_PKTMBUF_HEADROOM + 256u;
			room = RTE_MAX(room, RTE_ALIGN_CEIL(need, 1024u));
		}
		/*
		 * af_xdp makes the pool its umem, one mempool object per umem frame, and the
		 * kernel takes frames of at most a page: the data room shrinks until an
		 * object fits (3840 bytes with 4 KiB pages, which receives frames of up to
		 * 3456 bytes: MTU 3442), and the fragment size follows the room (iface_frag)
		 */
		if (p->af_xdp) {
			uint32_t page = (uint32_t)sysconf(_SC_PAGESIZE);

			while (room > RTE_MBUF_DEFAULT_BUF_SIZE &&
			       rte_mempool_calc_obj_size((uint32_t)sizeof(struct rte_mbuf) + room,
							 0, NULL) > page)
				room -= RTE_CACHE_LINE_SIZE;
		}
		snprintf(name, sizeof(name), "unio_eth%u", pid);
		p->mp = rte_pktmbuf_pool_create(name, ETH_POOL_MBUFS, ETH_POOL_CACHE, 0,
						(uint16_t)room,
						sock < 0 ? (int)SOCKET_ID_ANY : sock);
		if (p->mp == NULL) {
			ETH_LOG(ERR, "port %u: no mbuf pool: %s", pid, rte_strerror(rte_errno));
			return UNIO_ERR_NO_MEMORY;
		}
	}
	for (uint16_t q = 0; rc == 0 && q < p->nq; q++) {
		rc = rte_eth_rx_queue_setup(pid, q, nrx, sock, NULL, p->mp);
		if (rc == 0)
			rc = rte_eth_tx_queue_setup(pid, q, ntx, sock, NULL);
	}
	if (rc != 0) {
		ETH_LOG(ERR, "port %u: queue setup failed: %s", pid, rte_strerror(-rc));
		return UNIO_ERR_IO;
	}
	if (kernel_mtu(pid) > RTE_ETHER_MTU)
		rte_eth_dev_set_mtu(pid, kernel_mtu(pid));   /* the PMD may start at 1500 */
	p->configured = true;
	return UNIO_OK;
}

/* The kernel interface a vdev wraps (its iface= devarg), or "" */
static void
port_kernel_ifname(uint16_t pid, char *buf, size_t len)
{
	struct rte_eth_dev_info info;
	const char *p;

	buf[0] = '\0';
	if (rte_eth_dev_info_get(pid, &info) != 0 || info.device == NULL)
		return;
	p = devarg_value(rte_dev_devargs(info.device), "iface");
	if (p != NULL)
		snprintf(buf, len, "%.*s", (int)strcspn(p, ","), p);
}

static int
kernel_ipv4(const char *ifname, rte_be32_t *ip)
{
	struct ifreq ifr;
	int fd, rc;

	if (ifname[0] == '\0' || strlen(ifname) >= IFNAMSIZ)
		return -1;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, ifname, strlen(ifname));
	rc = ioctl(fd, SIOCGIFADDR, &ifr);
	close(fd);
	if (rc != 0 || ifr.ifr_addr.sa_family != AF_INET)
		return -1;
	*ip = ((struct sockaddr_in *)(void *)&ifr.ifr_addr)->sin_addr.s_addr;
	return 0;
}

/* MTU of the kernel interface a vdev wraps, or 0. */
static uint16_t
kernel_mtu(uint16_t pid)
{
	char ifname[IFNAMSIZ + 8];
	struct ifreq ifr;
	int fd, rc;

	port_kernel_ifname(pid, ifname, sizeof(ifname));
	if (ifname[0] == '\0' || strlen(ifname) >= IFNAMSIZ)
		return 0;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, ifname, strlen(ifname));
	rc = ioctl(fd, SIOCGIFMTU, &ifr);
	close(fd);
	return rc == 0 && ifr.ifr_mtu > 0 && ifr.ifr_mtu <= (int)ETH_JUMBO_MTU ?
	       (uint16_t)ifr.ifr_mtu : 0;
}

/* UNIO_ETHDEV_IP: "PORT:A.B.C.D" for this port wins over a plain "A.B.C.D". */
static int
config_ipv4(const struct unio_config *cfg, const char *port_name, rte_be32_t *ip)
{
	const struct unio_cfg_list *l = &cfg->ethdev_ip;
	int found = -1;

	for (unsigned int i = 0; !l->deny && i < l->count; i++) {
		const char *item = l->items[i];
		const char *colon = strchr(item, ':');
		struct in_addr a;

		if (colon != NULL) {
			if ((size_t)(colon - item) == strlen(port_name) &&
			    strncmp(item, port_name, (size_t)(colon - item)) == 0 &&
			    inet_pton(AF_INET, colon + 1, &a) == 1) {
				*ip = a.s_addr;
				return 0;
			}
		} else if (inet_pton(AF_INET, item, &a) == 1) {
			*ip = a.s_addr;
			found = 0;
		}
	}
	return found;
}

static unio_status_t
port_address(struct eth_iface *ei, const struct unio_config *cfg, const char *name)
{
	char ifname[IFNAMSIZ + 8];
	uint16_t mtu = RTE_ETHER_MTU;

	rte_eth_macaddr_get(ei->port_id, &ei->addr.mac);
	port_kernel_ifname(ei->port_id, ifname, sizeof(ifname));
	if (config_ipv4(cfg, name, &ei->addr.ip) != 0 && kernel_ipv4(ifname, &ei->addr.ip) != 0) {
		ETH_LOG(ERR, "%s: no IPv4 address: set UNIO_ETHDEV_IP or give the kernel "
			"interface%s%s an address", name, ifname[0] ? " " : "", ifname);
		return UNIO_ERR_CONFIG;
	}
	if (rte_eth_dev_get_mtu(ei->port_id, &mtu) != 0 || mtu < 576)
		mtu = RTE_ETHER_MTU;
	ei->mtu = RTE_MIN(mtu, (uint16_t)ETH_JUMBO_MTU);
	return UNIO_OK;
}

/*
 * Frame bytes after the Ethernet header that one mbuf of the port's pool receives: the data
 * room less the headroom, and on af_xdp less the kernel's XDP headroom too (the kernel
 * writes a frame 256 bytes into its umem frame, the PMD's headroom after that: with 3840
 * bytes of room, frames of up to 3456 bytes arrived on a veth and 3464 were dropped by the
 * kernel, counted in the receiving veth's rx_queue_0_drops), so that a peer configured like
 * us receives every frame we send.
 */
#define ETH_AF_XDP_RX_CUT 256u

/* Payload bytes per frame: the MTU, bounded by what one mbuf of the port's pool holds. */
static void
iface_frag(struct eth_iface *ei, const struct eth_port *p)
{
	uint32_t room = rte_pktmbuf_data_room_size(ei->mp) - RTE_PKTMBUF_HEADROOM -
			(p->af_xdp ? ETH_AF_XDP_RX_CUT : 0) - RTE_ETHER_HDR_LEN;
	uint16_t mtu = kernel_mtu(ei->port_id);   /* the kernel's, when the PMD wraps one */

	if (mtu >= 576 || (rte_eth_dev_get_mtu(ei->port_id, &mtu) == 0 && mtu >= 576))
		ei->mtu = RTE_MIN(mtu, (uint16_t)ETH_JUMBO_MTU);
	ei->mtu = (uint16_t)RTE_MIN((uint32_t)ei->mtu, room);
	ei->frag = (uint16_t)(ei->mtu - sizeof(struct rte_ipv4_hdr) - sizeof(struct rte_udp_hdr) -
			      sizeof(struct eth_wire));
	ei->frag &= (uint16_t)~7u;
	ETH_LOG(INFO, "port %u queue %u: mtu %u, %u payload bytes per frame", ei->port_id,
		ei->queue, ei->mtu, ei->frag);
}

/* The queue of a new iface on @p p: the first free one, or -1. */
static int
port_take_queue(struct eth_port *p, const char *dev_name)
{
	for (uint16_t q = 0; q < p->nq; q++)
		if (p->owner[q] == NULL)
			return q;
	ETH_LOG(ERR, "%s: all %u queue pairs have a worker (more with UNIO_ETHDEV_QUEUES and "
		"the PMD's queue devarg, e.g. qpairs= or queue_count=)", dev_name, p->nq);
	return -1;
}

static unio_status_t
iface_inbox(struct eth_iface *ei)
{
	char name[RTE_RING_NAMESIZE];

	snprintf(name, sizeof(name), "unio_eth%u_%u", ei->port_id, ei->queue);
	ei->inbox = rte_ring_create(name, ETH_INBOX_LEN, SOCKET_ID_ANY, RING_F_SC_DEQ);
	if (ei->inbox == NULL) {
		ETH_LOG(ERR, "%s: no inbox ring: %s", name, rte_strerror(rte_errno));
		return UNIO_ERR_NO_MEMORY;
	}
	return UNIO_OK;
}

/*
 * Ask the PMD to put our UDP port's frames on our queue (rte_flow), so that no other worker
 * hands them over.  A PMD without rte_flow, or without this pattern or the QUEUE action,
 * refuses: the software hand-over (steer()) then does the job.
 */
static void
flow_steer(struct eth_iface *ei)
{
	struct eth_flow_spec fs;
	struct rte_flow_error err = { 0 };

	eth_flow_spec_init(&fs, ei->addr.ip, ei->addr.udp_port, ei->queue);
	if (rte_flow_validate(ei->port_id, &fs.attr, fs.pattern, fs.actions, &err) == 0)
		ei->flow = rte_flow_create(ei->port_id, &fs.attr, fs.pattern, fs.actions, &err);
	if (ei->flow == NULL) {
		ETH_LOG(INFO, "port %u queue %u: no rte_flow steering (%s): frames for UDP port "
			"%u that land on another queue are handed over in software",
			ei->port_id, ei->queue, err.message != NULL ? err.message : "refused",
			rte_be_to_cpu_16(ei->addr.udp_port));
		return;
	}
	ei->st.flow_rules = 1;
	ETH_LOG(INFO, "port %u queue %u: rte_flow steers UDP port %u to this queue", ei->port_id,
		ei->queue, rte_be_to_cpu_16(ei->addr.udp_port));
}

static unio_status_t
port_open_locked(struct eth_iface *ei, const struct unio_config *cfg, const char *dev_name,
		 struct eth_port *p)
{
	unio_status_t st;
	int q, rc;

	if (!p->configured) {
		st = port_setup(ei->port_id, p, (unsigned int)cfg->ethdev_queues);
		if (st != UNIO_OK)
			return st;
		p->base_port = (uint16_t)cfg->ethdev_port;
	}
	q = port_take_queue(p, dev_name);
	if (q < 0)
		return UNIO_ERR_BUSY;
	if ((unsigned int)p->base_port + (unsigned int)q > UINT16_MAX)
		return UNIO_ERR_CONFIG;
	ei->queue = (uint16_t)q;
	ei->addr.udp_port = rte_cpu_to_be_16((uint16_t)(p->base_port + q));
	if (p->nq > 1 && (st = iface_inbox(ei)) != UNIO_OK)
		return st;
	if (p->n_open == 0) {
		rc = rte_eth_dev_start(ei->port_id);
		if (rc != 0) {
			ETH_LOG(ERR, "%s: start failed: %s", dev_name, rte_strerror(-rc));
			rte_ring_free(ei->inbox);
			return UNIO_ERR_IO;
		}
		rte_eth_promiscuous_disable(ei->port_id);  /* not every PMD can; we filter */
	}
	if (p->nq > 1)
		flow_steer(ei);
	ei->mp = p->mp;
	iface_frag(ei, p);
	ei->tx_csum = p->tx_csum;
	/*
	 * No UDP checksum (0, RFC 768) where nothing but memory lies between the ends: memif,
	 * and af_xdp on a veth, whose frames the kernel copies from umem to skb to the peer's
	 * umem (the IPv4 header keeps its checksum; a receiver still checks a nonzero one).
	 * On the veth it was the sender's largest cost of its own: `frame_commit`, most of it
	 * the checksum, took 9.3 % of the sending CPU at 1 MiB tag_bw.
	 */
	ei->no_udp_csum = (p->shared_mem || p->af_xdp_veth) && !p->tx_csum;
	ei->tx_multiseg = p->tx_multiseg;
	/*
	 * memif copies a frame into the shared ring or refuses it (the sender keeps it), and
	 * its receiver leaves frames in the ring when it has no mbuf: nothing is lost or
	 * reordered while the link is up.  Only with one queue pair: the hand-over between
	 * the queues of a port drops a frame when the other iface's inbox is full; and only
	 * when a frame fits one ring buffer: a receiver with no mbuf for the second buffer
	 * of a frame drops the frame's first.
	 */
	ei->lossless = p->shared_mem && p->nq == 1 &&
		       (uint32_t)ei->mtu + RTE_ETHER_HDR_LEN <= p->memif_bsize &&
		       cfg->ethdev_lossless == UNIO_ETHDEV_LOSSLESS_AUTO;
	ei->idle_yield = cfg->ethdev_idle_yield == UNIO_ETHDEV_YIELD_YES ||
			 (cfg->ethdev_idle_yield == UNIO_ETHDEV_YIELD_AUTO && p->kernel_pmd);
	p->owner[q] = ei;
	p->n_open++;
	return UNIO_OK;
}

/* Whether kernel interface @p ifname is a veth (its driver, by ETHTOOL_GDRVINFO). */
static bool
kernel_is_veth(const char *ifname)
{
	struct ethtool_drvinfo di = { .cmd = ETHTOOL_GDRVINFO };
	struct ifreq ifr;
	int fd, rc;

	if (ifname[0] == '\0' || strlen(ifname) >= IFNAMSIZ)
		return false;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, ifname, strlen(ifname));
	ifr.ifr_data = (void *)&di;
	rc = ioctl(fd, SIOCETHTOOL, &ifr);
	close(fd);
	return rc == 0 && strcmp(di.driver, "veth") == 0;
}

/*
 * DPDK's af_xdp PMD busy-polls by default (devarg busy_budget, 64): every rx burst that
 * finds its ring empty makes a recvfrom() for the kernel to poll the device's NAPI in that
 * call.  A veth's XDP NAPI has no busy-poll id for the socket to learn (no napi_busy_loop
 * in a profile of either side), so each such burst is a system call that does nothing:
 * 1880 a MiB on the sending side of 1 MiB tag_bw, its every poll for acks.  On a veth
 * whose vdev gives no busy_budget, the port is probed again with busy_budget=0 (the PMD
 * reads it at probe; nothing is set up before the first iface configures the port).
 * Returns the port's id, which the new probe may change.
 */
static uint16_t
port_af_xdp_no_busy_poll(uint16_t pid, const char *dev_name)
{
	struct rte_eth_dev_info info;
	const struct rte_devargs *da;
	char ifname[IFNAMSIZ + 8], name[RTE_DEV_NAME_MAX_LEN], args[512];
	int n;

	if (eth_ports[pid].configured || rte_eal_process_type() != RTE_PROC_PRIMARY ||
	    rte_eth_dev_info_get(pid, &info) != 0 || info.device == NULL ||
	    strcmp(info.driver_name, "net_af_xdp") != 0)
		return pid;
	da = rte_dev_devargs(info.device);
	if (da == NULL || da->args == NULL || devarg_value(da, "busy_budget") != NULL)
		return pid;
	port_kernel_ifname(pid, ifname, sizeof(ifname));
	if (!kernel_is_veth(ifname))
		return pid;
	n = snprintf(args, sizeof(args), "%s%sbusy_budget=0", da->args,
		     da->args[0] != '\0' ? "," : "");
	if (n < 0 || (size_t)n >= sizeof(args) ||
	    snprintf(name, sizeof(name), "%s", rte_dev_name(info.device)) >= (int)sizeof(name))
		return pid;
	if (rte_eal_hotplug_remove("vdev", name) != 0) {
		ETH_LOG(WARNING, "%s: busy polling left on (the port could not be detached)",
			dev_name);
		return pid;
	}
	if (rte_eal_hotplug_add("vdev", name, args) != 0) {
		ETH_LOG(WARNING, "%s: probe with busy_budget=0 failed, again as given", dev_name);
		args[n - (int)strlen(",busy_budget=0")] = '\0';
		if (da->args[0] == '\0')
			args[0] = '\0';
		(void)rte_eal_hotplug_add("vdev", name, args);
	} else {
		ETH_LOG(INFO, "%s: af_xdp on veth %s: busy_budget=0 (the veth has no NAPI to "
			"busy-poll)", dev_name, ifname);
	}
	if (rte_eth_dev_get_port_by_name(dev_name, &pid) != 0)
		return RTE_MAX_ETHPORTS;
	return pid;
}

unio_status_t
eth_port_open(struct eth_iface *ei, const struct unio_config *cfg, const char *dev_name)
{
	uint16_t pid;
	unio_status_t st;

	if (rte_eth_dev_get_port_by_name(dev_name, &pid) != 0 ||
	    !unio_cfg_list_allows(&cfg->net_devices, dev_name))
		return UNIO_ERR_NO_DEVICE;
	pthread_mutex_lock(&eth_ports_lock);
	pid = port_af_xdp_no_busy_poll(pid, dev_name);
	pthread_mutex_unlock(&eth_ports_lock);
	if (pid >= RTE_MAX_ETHPORTS)
		return UNIO_ERR_NO_DEVICE;
	ei->port_id = pid;
	ei->tsc_hz = rte_get_tsc_hz();
	st = arp_static(ei, cfg);
	if (st == UNIO_OK)
		st = port_address(ei, cfg, dev_name);
	if (st != UNIO_OK)
		return st;
	pthread_mutex_lock(&eth_ports_lock);
	st = port_open_locked(ei, cfg, dev_name, &eth_ports[pid]);
	pthread_mutex_unlock(&eth_ports_lock);
	return st;
}

void
eth_port_close(struct eth_iface *ei)
{
	struct eth_port *p = &eth_ports[ei->port_id];
	void *m;

	pthread_mutex_lock(&eth_ports_lock);
	if (ei->flow != NULL && rte_flow_destroy(ei->port_id, ei->flow, NULL) != 0)
		ETH_LOG(WARNING, "port %u queue %u: rte_flow rule not removed", ei->port_id,
			ei->queue);
	ei->flow = NULL;
	ei->st.flow_rules = 0;
	p->owner[ei->queue] = NULL;
	if (--p->n_open == 0) {
		struct rte_eth_link l;

		/*
		 * memif marks the link down as the first step of handling the peer's
		 * disconnect on EAL's interrupt thread, and then frees the regions that
		 * rte_eth_dev_stop() frees too, without a lock: let it finish first.
		 */
		if (p->shared_mem && rte_eth_link_get_nowait(ei->port_id, &l) == 0 &&
		    l.link_status == RTE_ETH_LINK_DOWN)
			unio_env_intr_drain();
		rte_eth_dev_stop(ei->port_id);
	}
	pthread_mutex_unlock(&eth_ports_lock);
	while (ei->inbox != NULL && rte_ring_sc_dequeue(ei->inbox, &m) == 0)
		rte_pktmbuf_free(m);
	rte_ring_free(ei->inbox);
	ei->inbox = NULL;
}

/* The iface of the same port that owns UDP port @p port (network order), or NULL. */
static struct eth_iface *
port_owner(const struct eth_iface *ei, rte_be16_t port)
{
	const struct eth_port *p = &eth_ports[ei->port_id];
	unsigned int q = (uint16_t)(rte_be_to_cpu_16(port) - p->base_port);

	return q < p->nq ? p->owner[q] : NULL;
}

/* Hand @p m to @p to's inbox (another worker's iface on this port, or this one). */
static void
steer(struct eth_iface *ei, struct eth_iface *to, struct rte_mbuf *m)
{
	if (rte_ring_mp_enqueue(to->inbox, m) != 0)
		return drop(m, &ei->st.drop_steer_full);
	ei->st.rx_steered++;
}

unio_status_t
eth_query_devices(const struct unio_config *config, struct unio_tl_device_info *devs,
		  unsigned int *n_devs, char *reason, size_t reason_len)
{
	unsigned int n = 0, seen = 0;
	uint16_t pid;

	if (rte_lcore_count() == 0) {
		snprintf(reason, reason_len, "EAL not initialised (EAL arguments or "
			 "UNIO_EAL_ARGS name the ports)");
		return UNIO_OK;
	}
	RTE_ETH_FOREACH_DEV(pid) {
		struct unio_tl_device_info *d = &devs[n];
		struct rte_ether_addr mac;
		char name[RTE_ETH_NAME_MAX_LEN];
		uint16_t mtu = 0;

		seen++;
		if (n == UNIO_TL_MAX_DEVICES || rte_eth_dev_get_name_by_port(pid, name) != 0 ||
		    strlen(name) >= sizeof(d->name) ||
		    !unio_cfg_list_allows(&config->net_devices, name))
			continue;
		memset(d, 0, sizeof(*d));
		snprintf(d->name, sizeof(d->name), "%s", name);
		d->reach = UNIO_TL_REACH_NET;
		rte_eth_macaddr_get(pid, &mac);
		rte_eth_dev_get_mtu(pid, &mtu);
		snprintf(d->detail, sizeof(d->detail), "ethdev port %u, " RTE_ETHER_ADDR_PRT_FMT
			 ", mtu %u", pid, RTE_ETHER_ADDR_BYTES(&mac), mtu);
		n++;
	}
	if (n == 0)
		snprintf(reason, reason_len, seen == 0 ?
			 "no ethdev ports (pass --vdev/-a EAL arguments)" :
			 "no ethdev port allowed by UNIO_NET_DEVICES");
	*n_devs = n;
	return UNIO_OK;
}

/* ---- tx ---- */

void
eth_txq_push(struct eth_iface *ei, struct rte_mbuf *m)
{
	if (unlikely(ei->inbox != NULL)) {
		/* to another iface of this port (or itself): never on the wire */
		const struct rte_ether_hdr *eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
		const struct rte_udp_hdr *udp = rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *,
			sizeof(*eh) + sizeof(struct rte_ipv4_hdr));
		struct eth_iface *to;

		if (rte_is_same_ether_addr(&eh->dst_addr, &ei->addr.mac) &&
		    eh->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4)) {
			to = port_owner(ei, udp->dst_port);
			if (to == NULL)
				return drop(m, &ei->st.drop_not_ours);
			if (m->nb_segs > 1) {
				/* zero copy: the chain is the send window's, and the receiver
				 * linearises what it gets: hand over a copy */
				struct rte_mbuf *c = rte_pktmbuf_copy(m, ei->mp, 0, UINT32_MAX);

				rte_pktmbuf_free(m);
				if (c == NULL) {
					ei->st.tx_no_mbuf++;
					return;
				}
				m = c;
			}
			return steer(ei, to, m);
		}
	}
	if (eth_txq_room(ei) == 0) {
		rte_pktmbuf_free(m);
		return;
	}
	ei->txq[ei->txq_head++ & (ETH_TXQ_LEN - 1)] = m;
}

/* Hand the queued frames to the PMD while at least @p min wait (then bursts of ETH_BURST). */
static unsigned int
txq_send(struct eth_iface *ei, uint32_t min)
{
	unsigned int total = 0;

	while (ei->txq_head != ei->txq_tail && ei->txq_head - ei->txq_tail >= min) {
		uint32_t idx = ei->txq_tail & (ETH_TXQ_LEN - 1);
		uint16_t n = (uint16_t)RTE_MIN(ei->txq_head - ei->txq_tail, ETH_TXQ_LEN - idx);
		uint16_t sent;

		n = RTE_MIN(n, (uint16_t)ETH_BURST);
		sent = rte_eth_tx_burst(ei->port_id, ei->queue, &ei->txq[idx], n);
		ei->st.tx_bursts++;
		ei->txq_tail += sent;
		total += sent;
		if (sent < n)
			break;
	}
	ei->st.tx_frames += total;
	return total;
}

unsigned int
eth_txq_flush(struct eth_iface *ei)
{
	return txq_send(ei, 1);
}

unsigned int
eth_txq_flush_bursts(struct eth_iface *ei)
{
	return txq_send(ei, ETH_BURST);
}

void
eth_hdr_template(const struct eth_iface *ei, const struct eth_addr *peer, uint8_t *tmpl)
{
	struct rte_ether_hdr *eh = (struct rte_ether_hdr *)tmpl;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eh + 1);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	memset(tmpl, 0, ETH_L2L3L4);
	rte_ether_addr_copy(&peer->mac, &eh->dst_addr);
	rte_ether_addr_copy(&ei->addr.mac, &eh->src_addr);
	eh->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = ei->addr.ip;
	ip->dst_addr = peer->ip;
	udp->src_port = ei->addr.udp_port;
	udp->dst_port = peer->udp_port;
}

/* ---- rx: ARP, ICMP, classification ---- */

static void
drop(struct rte_mbuf *m, uint64_t *counter)
{
	(*counter)++;
	rte_pktmbuf_free(m);
}

static struct eth_arp *
arp_find(const struct eth_iface *ei, rte_be32_t ip)
{
	for (unsigned int i = 0; i < ei->n_arp; i++)
		if (ei->arp[i].ip == ip)
			return (struct eth_arp *)(uintptr_t)&ei->arp[i];
	return NULL;
}

static struct eth_arp *
arp_add(struct eth_iface *ei, rte_be32_t ip)
{
	struct eth_arp *e = arp_find(ei, ip);

	if (e == NULL && ei->n_arp < ETH_ARP_MAX) {
		e = &ei->arp[ei->n_arp++];
		memset(e, 0, sizeof(*e));
		e->ip = ip;
	}
	return e;
}

static void
arp_learn(struct eth_iface *ei, rte_be32_t ip, const struct rte_ether_addr *mac)
{
	struct eth_arp *e;

	if (ip == 0 || !rte_is_unicast_ether_addr(mac) || rte_is_zero_ether_addr(mac))
		return;
	e = arp_add(ei, ip);
	if (e == NULL || e->state == ETH_ARP_STATIC)
		return;
	rte_ether_addr_copy(mac, &e->mac);
	e->state = ETH_ARP_VALID;
	ei->st.arp_learned++;
}

int
eth_arp_lookup(const struct eth_iface *ei, rte_be32_t ip, struct rte_ether_addr *mac)
{
	const struct eth_arp *e = arp_find(ei, ip);

	if (e == NULL || (e->state != ETH_ARP_STATIC && e->state != ETH_ARP_VALID))
		return -1;
	rte_ether_addr_copy(&e->mac, mac);
	return 0;
}

static void
arp_request(struct eth_iface *ei, rte_be32_t ip)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(ei->mp);
	struct rte_ether_hdr *eh;
	struct rte_arp_hdr *arp;

	if (m == NULL || eth_txq_room(ei) == 0) {
		rte_pktmbuf_free(m);
		return;
	}
	eh = (struct rte_ether_hdr *)rte_pktmbuf_append(m, sizeof(*eh) + sizeof(*arp));
	arp = (struct rte_arp_hdr *)(eh + 1);
	memset(eh, 0xff, sizeof(eh->dst_addr));
	rte_ether_addr_copy(&ei->addr.mac, &eh->src_addr);
	eh->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	arp->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = RTE_ETHER_ADDR_LEN;
	arp->arp_plen = 4;
	arp->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REQUEST);
	rte_ether_addr_copy(&ei->addr.mac, &arp->arp_data.arp_sha);
	arp->arp_data.arp_sip = ei->addr.ip;
	memset(&arp->arp_data.arp_tha, 0, sizeof(arp->arp_data.arp_tha));
	arp->arp_data.arp_tip = ip;
	ei->st.arp_requests++;
	eth_txq_push(ei, m);
}

unsigned int
eth_arp_resolve(struct eth_iface *ei, rte_be32_t ip, uint64_t now)
{
	struct eth_arp *e = arp_add(ei, ip);
	unsigned int tries;

	if (e == NULL)
		return ETH_ARP_TRIES + 1;           /* table full: give up */
	if (e->state == ETH_ARP_FREE)
		e->state = ETH_ARP_PENDING;
	if (e->state == ETH_ARP_PENDING && now >= e->next) {
		if (e->tries++ < ETH_ARP_TRIES)
			arp_request(ei, ip);
		e->next = now + ei->tsc_hz / 10;    /* 100 ms between requests */
	}
	tries = e->tries;
	/*
	 * Given up (the caller fails its ep): the next resolution of this address asks again.
	 * The entry kept its count before, and every later ep to that address failed at once
	 * without a request: a peer that was slow to answer once (starting, or not scheduled
	 * for 500 ms on a loaded host) stayed unreachable for good.
	 */
	if (tries > ETH_ARP_TRIES) {
		e->state = ETH_ARP_FREE;
		e->tries = 0;
		e->next = 0;
	}
	return tries;
}

static void
arp_input(struct eth_iface *ei, struct rte_mbuf *m)
{
	struct rte_ether_hdr *eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_arp_hdr *arp = (struct rte_arp_hdr *)(eh + 1);
	struct rte_arp_ipv4 *d = &arp->arp_data;

	if (rte_pktmbuf_data_len(m) < sizeof(*eh) + sizeof(*arp))
		return drop(m, &ei->st.drop_truncated);
	if (arp->arp_hardware != rte_cpu_to_be_16(RTE_ARP_HRD_ETHER) ||
	    arp->arp_protocol != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) ||
	    arp->arp_hlen != RTE_ETHER_ADDR_LEN || arp->arp_plen != 4)
		return drop(m, &ei->st.drop_bad_hdr);
	if (d->arp_tip != ei->addr.ip)
		return drop(m, &ei->st.drop_not_ours);
	arp_learn(ei, d->arp_sip, &d->arp_sha);
	if (arp->arp_opcode != rte_cpu_to_be_16(RTE_ARP_OP_REQUEST) ||
	    !rte_is_unicast_ether_addr(&d->arp_sha)) {
		rte_pktmbuf_free(m);       /* a reply to us: learned above */
		return;
	}
	arp->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REPLY);
	rte_ether_addr_copy(&d->arp_sha, &d->arp_tha);
	d->arp_tip = d->arp_sip;
	rte_ether_addr_copy(&ei->addr.mac, &d->arp_sha);
	d->arp_sip = ei->addr.ip;
	rte_ether_addr_copy(&d->arp_tha, &eh->dst_addr);
	rte_ether_addr_copy(&ei->addr.mac, &eh->src_addr);
	ei->st.arp_replies++;
	eth_txq_push(ei, m);
}

/* UNIO_ETHDEV_ARP: "A.B.C.D/aabbccddeeff" items; "none" for no static entry. */
static unio_status_t
arp_static(struct eth_iface *ei, const struct unio_config *cfg)
{
	const struct unio_cfg_list *l = &cfg->ethdev_arp;

	for (unsigned int i = 0; !l->deny && i < l->count; i++) {
		const char *item = l->items[i], *slash = strchr(item, '/');
		struct rte_ether_addr mac;
		char ip[16];
		struct in_addr a;
		struct eth_arp *e;
		unsigned int b[6];

		if (strcmp(item, "none") == 0)
			continue;
		if (slash == NULL || (size_t)(slash - item) >= sizeof(ip) ||
		    strlen(slash + 1) != 12 ||
		    sscanf(slash + 1, "%2x%2x%2x%2x%2x%2x", &b[0], &b[1], &b[2], &b[3], &b[4],
			   &b[5]) != 6)
			goto bad;
		snprintf(ip, sizeof(ip), "%.*s", (int)(slash - item), item);
		if (inet_pton(AF_INET, ip, &a) != 1)
			goto bad;
		for (unsigned int k = 0; k < 6; k++)
			mac.addr_bytes[k] = (uint8_t)b[k];
		e = arp_add(ei, a.s_addr);
		if (e == NULL)
			goto bad;
		e->mac = mac;
		e->state = ETH_ARP_STATIC;
		continue;
bad:
		ETH_LOG(ERR, "UNIO_ETHDEV_ARP: bad entry '%s' (want A.B.C.D/aabbccddeeff)", item);
		return UNIO_ERR_CONFIG;
	}
	return UNIO_OK;
}

static void
icmp_input(struct eth_iface *ei, struct rte_mbuf *m, struct rte_ipv4_hdr *ip, uint16_t ip_len)
{
	struct rte_ether_hdr *eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	uint16_t hl = rte_ipv4_hdr_len(ip), len = (uint16_t)(ip_len - hl);
	struct rte_icmp_hdr *icmp = (struct rte_icmp_hdr *)((uint8_t *)ip + hl);
	rte_be32_t a;

	if (len < sizeof(*icmp))
		return drop(m, &ei->st.drop_truncated);
	if (icmp->icmp_type != RTE_IP_ICMP_ECHO_REQUEST || icmp->icmp_code != 0)
		return drop(m, &ei->st.drop_other_proto);
	if (rte_raw_cksum(icmp, len) != 0xffff)
		return drop(m, &ei->st.drop_bad_csum);
	icmp->icmp_type = RTE_IP_ICMP_ECHO_REPLY;
	icmp->icmp_cksum = 0;
	icmp->icmp_cksum = (uint16_t)~rte_raw_cksum(icmp, len);
	a = ip->src_addr;
	ip->src_addr = ip->dst_addr;
	ip->dst_addr = a;
	ip->time_to_live = 64;
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	rte_ether_addr_copy(&eh->src_addr, &eh->dst_addr);
	rte_ether_addr_copy(&ei->addr.mac, &eh->src_addr);
	rte_pktmbuf_trim(m, (uint16_t)(rte_pktmbuf_pkt_len(m) - sizeof(*eh) - ip_len));
	ei->st.icmp_replies++;
	eth_txq_push(ei, m);
}

/* IPv4 checks; returns the header length or 0 (and m is gone). */
static uint16_t
ipv4_check(struct eth_iface *ei, struct rte_mbuf *m, struct rte_ipv4_hdr *ip, uint16_t *ip_len)
{
	uint32_t avail = rte_pktmbuf_data_len(m) - sizeof(struct rte_ether_hdr);
	uint16_t hl, tot;

	if (avail < sizeof(*ip))
		return drop(m, &ei->st.drop_truncated), 0;
	hl = rte_ipv4_hdr_len(ip);
	tot = rte_be_to_cpu_16(ip->total_length);
	if ((ip->version_ihl >> 4) != 4 || hl < sizeof(*ip) || tot < hl)
		return drop(m, &ei->st.drop_bad_len), 0;
	if (tot > avail)
		return drop(m, &ei->st.drop_truncated), 0;
	if ((ip->fragment_offset & rte_cpu_to_be_16(RTE_IPV4_HDR_MF_FLAG |
						    RTE_IPV4_HDR_OFFSET_MASK)) != 0)
		return drop(m, &ei->st.drop_bad_len), 0;
	if (ip->dst_addr != ei->addr.ip)
		return drop(m, &ei->st.drop_not_ours), 0;
	if ((m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) == RTE_MBUF_F_RX_IP_CKSUM_BAD ||
	    ((m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) != RTE_MBUF_F_RX_IP_CKSUM_GOOD &&
	     (hl == sizeof(*ip) ? eth_ip_cksum(ip) : eth_cksum(ip, hl, 0)) != 0xffff))
		return drop(m, &ei->st.drop_bad_csum), 0;
	*ip_len = tot;
	return hl;
}

static const struct eth_wire *
udp_check(struct eth_iface *ei, struct rte_mbuf *m, struct rte_ipv4_hdr *ip, uint16_t hl,
	  uint16_t ip_len)
{
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)((uint8_t *)ip + hl);
	const struct eth_wire *w = (const struct eth_wire *)(udp + 1);
	uint16_t ulen;

	if (ip_len < hl + sizeof(*udp))
		return drop(m, &ei->st.drop_truncated), NULL;
	if (udp->dst_port != ei->addr.udp_port) {
		struct eth_iface *to = ei->inbox != NULL ? port_owner(ei, udp->dst_port) : NULL;

		if (to == NULL)
			return drop(m, &ei->st.drop_not_ours), NULL;
		return steer(ei, to, m), NULL;
	}
	ulen = rte_be_to_cpu_16(udp->dgram_len);
	if (ulen < sizeof(*udp) || ulen > ip_len - hl)
		return drop(m, &ei->st.drop_bad_len), NULL;
	if (udp->dgram_cksum != 0 &&
	    ((m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) == RTE_MBUF_F_RX_L4_CKSUM_BAD ||
	     ((m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) != RTE_MBUF_F_RX_L4_CKSUM_GOOD &&
	      (ulen != ip_len - hl || eth_cksum(udp, ulen, eth_udp_phdr(ip, udp)) != 0xffff))))
		return drop(m, &ei->st.drop_bad_csum), NULL;
	if (ulen < sizeof(*udp) + sizeof(*w))
		return drop(m, &ei->st.drop_truncated), NULL;
	if (w->magic != ETH_MAGIC || w->version != ETH_VERSION ||
	    (w->type != ETH_FT_DATA && w->type != ETH_FT_ACK) ||
	    (w->am_id >= UNIO_TL_AM_ID_MAX &&
	     (w->am_id < ETH_AM_PUT || w->am_id > ETH_AM_GET_RESP)))
		return drop(m, &ei->st.drop_bad_hdr), NULL;
	if (w->len != ulen - sizeof(*udp) - sizeof(*w) || (w->type == ETH_FT_ACK && w->len != 0))
		return drop(m, &ei->st.drop_bad_len), NULL;
	/* connection id 0: a peer that dialled our IPv4 and port and has not heard from us */
	if (w->src_conn == 0 ||
	    (w->dst_conn != ei->addr.conn && (w->dst_conn != 0 || w->type != ETH_FT_DATA)))
		return drop(m, &ei->st.drop_unknown_conn), NULL;
	return w;
}

const struct eth_wire *
eth_rx_classify(struct eth_iface *ei, struct rte_mbuf *m, const struct rte_ipv4_hdr **ip_p,
		const struct rte_udp_hdr **udp_p)
{
	struct rte_ether_hdr *eh;
	struct rte_ipv4_hdr *ip;
	const struct eth_wire *w;
	uint16_t hl, ip_len = 0;

	if (m->nb_segs != 1 && rte_pktmbuf_linearize(m) != 0)
		return drop(m, &ei->st.drop_bad_len), NULL;
	if (rte_pktmbuf_data_len(m) < sizeof(*eh))
		return drop(m, &ei->st.drop_truncated), NULL;
	eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	if (!rte_is_same_ether_addr(&eh->dst_addr, &ei->addr.mac) &&
	    !rte_is_broadcast_ether_addr(&eh->dst_addr))
		return drop(m, &ei->st.drop_not_ours), NULL;
	if (eh->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP))
		return arp_input(ei, m), NULL;
	if (eh->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4))
		return drop(m, &ei->st.drop_other_proto), NULL;
	ip = (struct rte_ipv4_hdr *)(eh + 1);
	hl = ipv4_check(ei, m, ip, &ip_len);
	if (hl == 0)
		return NULL;
	if (ip->next_proto_id == IPPROTO_ICMP)
		return icmp_input(ei, m, ip, ip_len), NULL;
	if (ip->next_proto_id != IPPROTO_UDP)
		return drop(m, &ei->st.drop_other_proto), NULL;
	w = udp_check(ei, m, ip, hl, ip_len);
	if (w != NULL) {
		*ip_p = ip;
		*udp_p = (const struct rte_udp_hdr *)((const uint8_t *)ip + hl);
	}
	return w;
}

/* ---- telemetry: /unio/ethdev/list and /unio/ethdev/stats,PORT[,QUEUE] ---- */

static const char *const stat_names[] = {
	"rx_frames", "tx_frames", "rx_data", "tx_data", "tx_data_bytes", "tx_retx",
	"tx_retx_bytes", "tx_acks", "fast_retx", "timeouts", "probes", "ep_failures", "rx_dup",
	"rx_ooo", "msgs_delivered", "arp_replies", "arp_requests", "arp_learned", "icmp_replies",
	"drop_other_proto", "drop_not_ours", "drop_truncated", "drop_bad_csum", "drop_bad_len",
	"drop_bad_hdr", "drop_unknown_conn", "drop_bad_seq", "drop_bad_msg", "drop_no_peer",
	"tx_no_mbuf", "rx_steered", "drop_steer_full", "tx_zcopy",
	"flow_rules", "timeouts_undone", "idle_yields", "tx_refused_cwnd", "tx_refused_window",
	"tx_refused_credit", "tx_refused_txq", "conn_refused_busy", "conn_refused_no_iface",
	"conn_refused_no_ep", "conn_unanswered", "cc_samples", "cc_host_samples", "cc_decreases",
	"tx_bursts", "rx_get_direct", "zc_orphaned", "cc_stale_samples", "tx_untracked",
	"lossless_eps", "tx_zcopy_put",
};

/* The iface's non-zero counters, one debug line (at iface close: what a run did). */
void
eth_stats_log(const struct eth_iface *ei)
{
	struct unio_tl_ethdev_stats st;
	const uint64_t *v = (const uint64_t *)&st;
	char buf[2048];
	size_t off = 0;

	if (!rte_log_can_log(ethdev_logtype, RTE_LOG_DEBUG))
		return;
	eth_stats_read(ei, &st);
	for (unsigned int i = 0; i < RTE_DIM(stat_names) && off < sizeof(buf); i++)
		if (v[i] != 0)
			off += (size_t)snprintf(buf + off, sizeof(buf) - off, " %s=%" PRIu64,
						stat_names[i], v[i]);
	buf[RTE_MIN(off, sizeof(buf) - 1)] = '\0';
	ETH_LOG(DEBUG, "port %u queue %u counters:%s", ei->port_id, ei->queue, buf);
}

static int
tel_list(const char *cmd, const char *params, struct rte_tel_data *d)
{
	RTE_SET_USED(cmd), RTE_SET_USED(params);
	rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
	pthread_mutex_lock(&eth_ports_lock);
	for (unsigned int pid = 0; pid < RTE_MAX_ETHPORTS; pid++)
		for (unsigned int q = 0; q < eth_ports[pid].nq; q++) {
			char buf[32];

			if (eth_ports[pid].owner[q] == NULL)
				continue;
			snprintf(buf, sizeof(buf), "%u,%u", pid, q);
			rte_tel_data_add_array_string(d, buf);
		}
	pthread_mutex_unlock(&eth_ports_lock);
	return 0;
}

static int
tel_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	unsigned int pid = RTE_MAX_ETHPORTS, q = 0;
	struct unio_tl_ethdev_stats st;
	const uint64_t *v = (const uint64_t *)&st;
	struct eth_iface *ei = NULL;

	RTE_BUILD_BUG_ON(RTE_DIM(stat_names) * sizeof(uint64_t) != sizeof(st));
	RTE_SET_USED(cmd);
	if (params == NULL || sscanf(params, "%u,%u", &pid, &q) < 1 ||
	    pid >= RTE_MAX_ETHPORTS || q >= ETH_MAX_QUEUES)
		return -EINVAL;
	pthread_mutex_lock(&eth_ports_lock);
	ei = eth_ports[pid].owner[q];
	if (ei != NULL)
		eth_stats_read(ei, &st);
	pthread_mutex_unlock(&eth_ports_lock);
	if (ei == NULL)
		return -ENODEV;
	rte_tel_data_start_dict(d);
	for (unsigned int i = 0; i < RTE_DIM(stat_names); i++)
		rte_tel_data_add_dict_u64(d, stat_names[i], v[i]);
	return 0;
}

RTE_INIT(eth_telemetry_init)
{
	rte_telemetry_register_cmd("/unio/ethdev/list", tel_list,
				   "Open ethdev ifaces as PORT,QUEUE.  No parameters.");
	rte_telemetry_register_cmd("/unio/ethdev/stats", tel_stats,
				   "Counters of one ethdev iface.  Parameters: PORT[,QUEUE].");
}
