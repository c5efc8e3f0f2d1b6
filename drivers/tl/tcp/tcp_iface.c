/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tcp driver's control path: devices (kernel interfaces that are up, running and have
 * an IPv4 address, filtered by UNIO_NET_DEVICES), iface addresses and reachability,
 * connections (non-blocking connect, HELLO / ACK / NAK, simultaneous connect resolved by
 * address order), failure handling, progress, event fd, memory registration and rkeys.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rte_branch_prediction.h>
#include <rte_log.h>
#include <rte_random.h>

#include "tcp_priv.h"

RTE_LOG_REGISTER(unio_logtype_tcp, unio.drv.tcp, WARNING);

static const struct unio_tl_iface_ctl_ops tcp_ctl_ops;
static const struct unio_tl_driver tcp_driver;

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

unio_status_t
tcp_status_from_errno(int err)
{
	switch (err) {
	case ETIMEDOUT:
		return UNIO_ERR_TIMED_OUT;
	case ECONNREFUSED:
	case EHOSTUNREACH:
	case ENETUNREACH:
		return UNIO_ERR_UNREACHABLE;
	case ECONNRESET:
	case EPIPE:
	case ECONNABORTED:
		return UNIO_ERR_CONNECTION_RESET;
	default:
		return UNIO_ERR_IO;
	}
}

/* ---- devices ---- */

static bool
ifa_usable(const struct ifaddrs *ifa, const struct unio_config *config)
{
	return ifa->ifa_addr != NULL && ifa->ifa_addr->sa_family == AF_INET &&
	       (ifa->ifa_flags & IFF_UP) && (ifa->ifa_flags & IFF_RUNNING) &&
	       unio_cfg_list_allows(&config->net_devices, ifa->ifa_name);
}

static int
prefix_len(const struct sockaddr *mask)
{
	return mask == NULL ? 0 :
	       __builtin_popcount(((const struct sockaddr_in *)mask)->sin_addr.s_addr);
}

static unio_status_t
tcp_query_devices(const struct unio_config *config, struct unio_tl_device_info *devs,
		  unsigned int *n_devs, char *reason, size_t reason_len)
{
	struct ifaddrs *ifas, *ifa;
	unsigned int n = 0;

	if (getifaddrs(&ifas) != 0) {
		snprintf(reason, reason_len, "getifaddrs: %s", strerror(errno));
		*n_devs = 0;
		return UNIO_OK;
	}
	for (ifa = ifas; ifa != NULL && n < UNIO_TL_MAX_DEVICES; ifa = ifa->ifa_next) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)ifa->ifa_addr;
		bool lo;
		char ip[INET_ADDRSTRLEN];

		if (!ifa_usable(ifa, config))
			continue;
		lo = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
		inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
		snprintf(devs[n].name, sizeof(devs[n].name), "%s", ifa->ifa_name);
		devs[n].reach = lo ? UNIO_TL_REACH_HOST : UNIO_TL_REACH_NET;
		snprintf(devs[n].detail, sizeof(devs[n].detail), "ipv4 %s/%d%s", ip,
			 prefix_len(ifa->ifa_netmask), lo ? ", same host and netns only" : "");
		n++;
	}
	freeifaddrs(ifas);
	if (n == 0)
		snprintf(reason, reason_len,
			 "no interface is up with an IPv4 address and allowed by UNIO_NET_DEVICES");
	*n_devs = n;
	return UNIO_OK;
}

/* The IPv4 address of interface @p name; loopback flag in @p lo. */
static unio_status_t
device_ipv4(const struct unio_config *config, const char *name, uint32_t *ip, bool *lo)
{
	struct ifaddrs *ifas, *ifa;
	unio_status_t st = UNIO_ERR_NO_DEVICE;

	if (getifaddrs(&ifas) != 0)
		return UNIO_ERR_IO;
	for (ifa = ifas; ifa != NULL; ifa = ifa->ifa_next) {
		if (strcmp(ifa->ifa_name, name) != 0 || !ifa_usable(ifa, config))
			continue;
		*ip = ((const struct sockaddr_in *)ifa->ifa_addr)->sin_addr.s_addr;
		*lo = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
		st = UNIO_OK;
		break;
	}
	freeifaddrs(ifas);
	return st;
}

/* ---- host identity: boot id + network namespace ---- */

static int
hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

static void
host_identity(struct tcp_addr *a)
{
	char line[64];
	struct stat st;
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	unsigned int n = 0;

	if (f != NULL && fgets(line, sizeof(line), f) != NULL)
		for (const char *p = line; *p != '\0' && n < 32; p++)
			if (hexval(*p) >= 0) {
				a->boot_id[n / 2] = (uint8_t)(a->boot_id[n / 2] << 4 | hexval(*p));
				n++;
			}
	if (f != NULL)
		fclose(f);
	if (stat("/proc/self/ns/net", &st) == 0)
		a->netns_ino = st.st_ino;
}

static bool
same_host_ns(const struct tcp_addr *a, const struct tcp_addr *b)
{
	return a->netns_ino == b->netns_ino && memcmp(a->boot_id, b->boot_id, 16) == 0;
}

static bool
addr_valid(const struct tcp_addr *a)
{
	return a->magic == TCP_ADDR_MAGIC && a->version == TCP_WIRE_VERSION && a->ipv4 != 0 &&
	       a->port != 0 && a->reserved == 0;
}

static bool
ipv4_is_loopback(uint32_t ip_be)
{
	return (ntohl(ip_be) >> 24) == 127;
}

/* Would the kernel send to @p a from this iface's address?  (route lookup via UDP) */
static bool
route_leaves_here(const struct tcp_iface *ti, const struct tcp_addr *a)
{
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = a->port,
				   .sin_addr.s_addr = a->ipv4 };
	struct sockaddr_in src;
	socklen_t sl = sizeof(src);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool ok;

	if (fd < 0)
		return false;
	ok = connect(fd, (struct sockaddr *)&dst, sizeof(dst)) == 0 &&
	     getsockname(fd, (struct sockaddr *)&src, &sl) == 0 &&
	     src.sin_addr.s_addr == ti->addr.ipv4;
	close(fd);
	return ok;
}

static bool
tcp_iface_is_reachable(struct unio_tl_iface *iface, const void *addr, size_t len)
{
	struct tcp_iface *ti = tcp_iface_of(iface);
	struct tcp_addr a;

	if (len != sizeof(a))
		return false;
	memcpy(&a, addr, sizeof(a));
	if (!addr_valid(&a))
		return false;
	if (ti->loopback || ipv4_is_loopback(a.ipv4))
		return ti->loopback && same_host_ns(&ti->addr, &a);
	return route_leaves_here(ti, &a);
}

/* ---- epoll registration ---- */

static int
epoll_set(struct tcp_iface *ti, struct tcp_item *it, int op, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = it };

	return epoll_ctl(ti->epfd, op, it->fd, &ev);
}

void
tcp_conn_set_out(struct tcp_conn *c, bool want)
{
	if (c->item.fd < 0)
		return;
	/* off the set: the next progress call puts it back with EPOLLOUT (tx_blocked) */
	if (!c->ep_off)
		epoll_set(c->iface, &c->item, EPOLL_CTL_MOD, EPOLLIN | (want ? EPOLLOUT : 0));
	c->out_armed = want;
}

/*
 * Busy mode reads a hot connection blindly in every call: in the epoll set it cost the
 * peer's send an epoll callback per segment (the kernel's loopback delivery runs in the
 * sender's context) and its own epoll_wait a ready item to report.  After TCP_BUSY_EP_OFF
 * blind reads in a row it leaves the set (tcp.md, change 19); it comes back (level-
 * triggered: bytes already there are reported at once) in the first call that does not
 * read it blindly, and when the iface is armed for sleep.
 */
static void
conn_ep_off(struct tcp_conn *c)
{
	if (epoll_ctl(c->iface->epfd, EPOLL_CTL_DEL, c->item.fd, NULL) != 0)
		return;
	c->ep_off = true;
	c->iface->stats.ep_off++;
}

static void
conn_ep_on(struct tcp_conn *c)
{
	c->blind_calls = 0;
	if (!c->ep_off)
		return;
	if (c->item.fd >= 0) {  /* closed: item_close() took it off anyway */
		if (epoll_set(c->iface, &c->item, EPOLL_CTL_ADD,
			      EPOLLIN | (c->out_armed ? EPOLLOUT : 0)) != 0)
			return;  /* retried by the next call */
		c->iface->stats.ep_on++;
	}
	c->ep_off = false;
}

static void
item_close(struct tcp_iface *ti, struct tcp_item *it)
{
	if (it->fd < 0)
		return;
	epoll_ctl(ti->epfd, EPOLL_CTL_DEL, it->fd, NULL);
	close(it->fd);
	it->fd = -1;
}

/* ---- sockets ---- */

static void
sock_tune(const struct tcp_iface *ti, int fd)
{
	const struct unio_config *cfg = ti->config;
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (cfg->tcp_sndbuf != UNIO_SIZE_AUTO && cfg->tcp_sndbuf <= INT32_MAX) {
		int v = (int)cfg->tcp_sndbuf;

		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
	}
	if (cfg->tcp_rcvbuf != UNIO_SIZE_AUTO && cfg->tcp_rcvbuf <= INT32_MAX) {
		/* below ~64 KiB the kernel's window can stay under the loopback MSS: stalls */
		int v = (int)RTE_MAX(cfg->tcp_rcvbuf, (size_t)TCP_MIN_RCVBUF);

		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	}
	if (cfg->tcp_keepalive_ns != 0 && cfg->tcp_keepalive_ns != UNIO_TIME_INF) {
		int idle = (int)RTE_MAX(cfg->tcp_keepalive_ns / 1000000000ull, 1ull);
		int intvl = 1, cnt = 3;

		setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	}
	if (cfg->peer_timeout_ns != UNIO_TIME_INF && cfg->peer_timeout_ns / 1000000 <= INT32_MAX) {
		unsigned int ms = (unsigned int)(cfg->peer_timeout_ns / 1000000);

		setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms));
	}
}

static uint64_t
deadline(const struct tcp_iface *ti)
{
	uint64_t t = ti->config->peer_timeout_ns;

	return t == UNIO_TIME_INF ? UINT64_MAX : now_ns() + t;
}

/* ---- the worker's poll word ---- */

/* where an idle iface's poll word points: always 0 */
static uint64_t tcp_idle_word;
static uint64_t *const tcp_idle_next = &tcp_idle_word;

/*
 * The worker's "anything there?" word (unio_tl_iface.poll_word): an iface with nothing but
 * its listen socket (no connection, no accepted socket awaiting HELLO; unio-perf's iface on
 * eth0 while its lane runs on lo) has nothing to deliver, and points it at a word that stays
 * 0: the worker calls it only in its control-plane call, one in WORKER_CTL_CALLS (16), and
 * the one after unio_worker_arm(), where it was called in every one (tcp.md entries 17, 18: its
 * call was on the path from each message's arrival to its answer).  Busy mode's epoll of
 * such an iface, every TCP_BUSY_EPOLL_EVERY of its own calls, comes every 256 worker calls
 * as before (it was every 256 of its own calls); epoll mode's every 16 (was every call).
 * Any other iface: none (called every time).  Cleared when a connection or an accepted
 * socket appears, set again at the end of a call that epolled.
 */
static void
poll_word_idle(struct tcp_iface *ti)
{
	ti->super.poll_word = TAILQ_EMPTY(&ti->conns) && ti->n_pending == 0 ? &tcp_idle_next :
			      NULL;
}

/* ---- connections ---- */

static struct tcp_conn *
conn_new(struct tcp_iface *ti, const struct tcp_addr *peer)
{
	struct tcp_conn *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->txbuf = malloc(TCP_TXBUF_SIZE);
	c->rxbuf = malloc(TCP_RXBUF_SIZE);
	c->zq = calloc(TCP_ZQ_SIZE, sizeof(*c->zq));
	c->gets = calloc(TCP_GETS_MAX, sizeof(*c->gets));
	if (c->txbuf == NULL || c->rxbuf == NULL || c->zq == NULL || c->gets == NULL) {
		free(c->txbuf), free(c->rxbuf), free(c->zq), free(c->gets), free(c);
		return NULL;
	}
	c->item = (struct tcp_item){ TCP_ITEM_CONN, -1 };
	c->pipe[0] = c->pipe[1] = -1;
	c->cold_at = TCP_BUSY_COLD_FRESH;
	c->iface = ti;
	c->peer = *peer;
	c->conn_id = unio_tl_conn_id_new();
	c->err = UNIO_OK;
	c->state = TCP_CONN_CONNECTING;  /* "not established yet" until connect or adopt */
	ti->n_slow++;
	TAILQ_INSERT_TAIL(&ti->conns, c, next);
	ti->super.poll_word = NULL;
	ti->stats.open_conns++;
	return c;
}

/*
 * Close gracefully: a socket closed with unread bytes sends a reset, which can make the
 * peer drop what it has not read yet of ours; read and discard what is pending first.
 */
static void
conn_drain(struct tcp_conn *c)
{
	uint8_t *sink = c->rxbuf;

	if (c->item.fd < 0 || c->state != TCP_CONN_ESTABLISHED)
		return;
	shutdown(c->item.fd, SHUT_WR);
	for (int i = 0; i < 16; i++)
		if (recv(c->item.fd, sink, TCP_RXBUF_SIZE, MSG_DONTWAIT) <= 0)
			break;
}

static void
move_done(struct tcp_conn *c)
{
	if (c->move_pending) {
		c->move_pending = false;
		c->iface->n_move--;
	}
}

static void
conn_free(struct tcp_conn *c)
{
	struct tcp_iface *ti = c->iface;

	move_done(c);
	if (c->more_held) {
		c->more_held = false;
		ti->n_more_held--;
	}
	if (c->twin != NULL)
		c->twin->twin = NULL;
	conn_drain(c);
	item_close(ti, &c->item);
	if (c->pipe[0] >= 0) {  /* drops the references to pages never spliced */
		close(c->pipe[0]);
		close(c->pipe[1]);
	}
	if (c->state != TCP_CONN_FAILED)
		ti->stats.open_conns--;
	if (c->state < TCP_CONN_ESTABLISHED)
		ti->n_slow--;
	TAILQ_REMOVE(&ti->conns, c, next);
	free(c->txbuf), free(c->rxbuf), free(c->zq), free(c->gets), free(c);
}

static void
conn_set_state(struct tcp_conn *c, enum tcp_conn_state s)
{
	bool was_slow = c->state < TCP_CONN_ESTABLISHED, slow = s < TCP_CONN_ESTABLISHED;

	c->iface->n_slow += (unsigned int)slow - (unsigned int)was_slow;
	c->state = s;
	if (s == TCP_CONN_ESTABLISHED)
		c->deadline_ns = 0;  /* the connect's; tcp_conn_wait_expired() may set another */
}

static struct tcp_conn *
conn_find(struct tcp_iface *ti, const struct tcp_addr *peer)
{
	struct tcp_conn *c;

	TAILQ_FOREACH(c, &ti->conns, next)
		if (!c->anon && !c->dead && c->state != TCP_CONN_FAILED &&
		    memcmp(&c->peer, peer, sizeof(*peer)) == 0)
			return c;
	return NULL;
}

static const char *
peer_str(const struct tcp_addr *a, char *buf, size_t len)
{
	char ip[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &a->ipv4, ip, sizeof(ip));
	snprintf(buf, len, "%s:%u", ip, ntohs(a->port));
	return buf;
}

void
tcp_conn_fail(struct tcp_conn *c, unio_status_t st)
{
	struct tcp_iface *ti = c->iface;
	char p[32];

	if (c->state == TCP_CONN_FAILED)
		return;
	if (c->eps != NULL && c->eof)
		TCP_LOG(INFO, "%s: %s closed the connection", ti->super.dev_name,
			peer_str(&c->peer, p, sizeof(p)));
	else if (c->eps != NULL)
		TCP_LOG(ERR, "%s: connection to %s failed: %s", ti->super.dev_name,
			peer_str(&c->peer, p, sizeof(p)), unio_status_string(st));
	item_close(ti, &c->item);
	conn_set_state(c, TCP_CONN_FAILED);
	c->err = st;
	ti->stats.conns_failed++;
	ti->stats.open_conns--;
	tcp_conn_cancel_ops(c, st);
	if (c->eps == NULL)
		c->dead = true;
	else
		c->notify = true;  /* err_cb from the next progress, never from inside a send */
}

/*
 * Tell the owners of failed connections' eps; they may destroy the eps in the callback.
 * Returns the callbacks made (work a progress call reports).
 */
static unsigned int
notify(struct tcp_iface *ti)
{
	unsigned int k = 0;
	struct tcp_conn *c;

	TAILQ_FOREACH(c, &ti->conns, next) {
		struct tcp_ep *e, *next;

		if (!c->notify)
			continue;
		c->notify = false;
		for (e = c->eps; e != NULL; e = next) {
			next = e->next;
			if (ti->super.err_cb != NULL) {
				ti->super.err_cb(ti->super.err_arg, &e->super, c->err);
				k++;
			}
		}
	}
	return k;
}

void
tcp_conn_malformed(struct tcp_conn *c, const char *what)
{
	char p[32];

	TCP_LOG(ERR, "%s: closing the connection from %s: %s", c->iface->super.dev_name,
		peer_str(&c->peer, p, sizeof(p)), what);
	c->iface->stats.malformed++;
	tcp_conn_fail(c, UNIO_ERR_PROTO);
}

/*
 * The peer's side ended inside a frame: a peer killed while its socket buffer was full
 * leaves part of its last frame behind.  Its connection is lost, as by a reset or an EOF
 * between frames; nothing it sent was wrong (not malformed).
 */
void
tcp_conn_cut(struct tcp_conn *c)
{
	char p[32];

	TCP_LOG(NOTICE, "%s: connection from %s ended inside a frame", c->iface->super.dev_name,
		peer_str(&c->peer, p, sizeof(p)));
	c->iface->stats.truncated++;
	c->eof = true;
	tcp_conn_fail(c, UNIO_ERR_CONNECTION_RESET);
}

/*
 * Ours lost the simultaneous connect: once it is idle (nothing queued, no answer due), its
 * eps move to the peer's connection (MOVE_END here, MOVE_START there) and send there.
 */
static void
conn_try_move(struct tcp_conn *c)
{
	struct tcp_conn *next = c->twin;
	struct tcp_ep *e;

	if (next == NULL || c->dead || next->dead || c->state == TCP_CONN_FAILED ||
	    next->state == TCP_CONN_FAILED) {
		move_done(c);  /* stays two one-way connections */
		return;
	}
	/* not while either parses (a MOVE_START takes the HELLOs): progress retries it */
	if (c->state != TCP_CONN_ESTABLISHED || next->state != TCP_CONN_ESTABLISHED ||
	    !tcp_conn_tx_idle(c) || c->n_gets != 0 || c->rx_stalled || c->in_rx ||
	    next->in_rx)
		return;
	move_done(c);
	tcp_conn_send_move(c, next);
	for (e = c->eps; e != NULL; e = e->next)
		e->conn = next;
	next->eps = c->eps;
	c->eps = NULL;
	next->anon = false;
	c->anon = true;
	c->iface->stats.conns_moved++;
	if (c->state == TCP_CONN_FAILED)
		c->dead = true;  /* its eps are gone to next: nobody to notify */
}

/* Put HELLO (this iface's address) first in the copy buffer: it leaves before any frame. */
static void
queue_hello(struct tcp_conn *c)
{
	struct tcp_hdr *h = (struct tcp_hdr *)c->txbuf;

	tcp_hdr_set(h, sizeof(c->iface->addr), TCP_F_HELLO, 0);
	memcpy(c->txbuf + sizeof(*h), &c->iface->addr, sizeof(c->iface->addr));
	c->tx_head = 0;
	c->tx_tail = sizeof(*h) + sizeof(c->iface->addr);
}

static unio_status_t
conn_connect(struct tcp_conn *c)
{
	struct tcp_iface *ti = c->iface;
	struct sockaddr_in src = { .sin_family = AF_INET, .sin_addr.s_addr = ti->addr.ipv4 };
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = c->peer.port,
				   .sin_addr.s_addr = c->peer.ipv4 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return UNIO_ERR_IO;
	sock_tune(ti, fd);
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)) != 0 ||
	    (connect(fd, (struct sockaddr *)&dst, sizeof(dst)) != 0 && errno != EINPROGRESS)) {
		TCP_LOG(ERR, "%s: connect: %s", ti->super.dev_name, strerror(errno));
		close(fd);
		return UNIO_ERR_UNREACHABLE;
	}
	c->item.fd = fd;
	c->deadline_ns = deadline(ti);
	queue_hello(c);
	epoll_set(ti, &c->item, EPOLL_CTL_ADD, EPOLLIN | EPOLLOUT);
	c->out_armed = true;
	return UNIO_OK;
}

/*
 * Has connect() finished?  Called from progress on EPOLLOUT and from the send paths while
 * connecting (one poll() per send until then).  On success the HELLO and every frame
 * queued behind it go out at once: there is no answer to wait for.
 */
void
tcp_conn_check_connect(struct tcp_conn *c)
{
	struct pollfd pfd = { .fd = c->item.fd, .events = POLLOUT };
	int err = 0;
	socklen_t l = sizeof(err);

	if (poll(&pfd, 1, 0) <= 0)
		return;
	getsockopt(c->item.fd, SOL_SOCKET, SO_ERROR, &err, &l);
	if (err != 0) {
		tcp_conn_fail(c, tcp_status_from_errno(err));
		return;
	}
	conn_set_state(c, TCP_CONN_ESTABLISHED);
	c->iface->stats.conns_connected++;
	err = tcp_conn_tx(c);
	if (err < 0)
		tcp_conn_fail(c, (unio_status_t)err);
}

/* Attach accepted socket @p fd (its HELLO read) to the new connection @p c. */
static void
conn_adopt(struct tcp_conn *c, int fd)
{
	struct tcp_iface *ti = c->iface;

	c->item.fd = fd;
	c->accepted = true;
	epoll_set(ti, &c->item, EPOLL_CTL_ADD, EPOLLIN);
	conn_set_state(c, TCP_CONN_ESTABLISHED);
	ti->stats.conns_accepted++;
}

/* ---- accepting ---- */

/* A wait of an established connection (deadline_ns; 0: none yet) ran past the peer timeout. */
bool
tcp_conn_wait_expired(struct tcp_conn *c)
{
	if (c->deadline_ns == 0) {
		c->deadline_ns = deadline(c->iface);
		return false;
	}
	return now_ns() > c->deadline_ns;
}

static void
pending_close(struct tcp_iface *ti, unsigned int i)
{
	item_close(ti, &ti->pending[i]->item);
	free(ti->pending[i]);
	ti->pending[i] = NULL;
	ti->n_pending--;
}

static void
do_accept(struct tcp_iface *ti)
{
	int fd;

	while ((fd = accept4(ti->listen.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		struct tcp_pending *p = NULL;
		unsigned int i;

		for (i = 0; i < TCP_PENDING_MAX && ti->pending[i] != NULL; i++)
			;
		if (i < TCP_PENDING_MAX)
			p = calloc(1, sizeof(*p));
		if (p == NULL) {
			TCP_LOG(WARNING, "%s: too many connections awaiting HELLO: refused one",
				ti->super.dev_name);
			close(fd);
			continue;
		}
		sock_tune(ti, fd);
		p->item = (struct tcp_item){ TCP_ITEM_PENDING, fd };
		p->deadline_ns = deadline(ti);
		ti->pending[i] = p;
		ti->n_pending++;
		ti->super.poll_word = NULL;
		epoll_set(ti, &p->item, EPOLL_CTL_ADD, EPOLLIN);
	}
}

/*
 * Pair @p mine with @p c, the peer's connection of a simultaneous connect.  A peer whose
 * first connection no longer carries its frames (closed, or after its MOVE_END) may pair
 * ours again: the connection it paired before keeps no link, or freeing either of the two
 * left the other pointing at freed memory (a hostile peer's second HELLO, then any close).
 * A second HELLO while the first connection is alive is a duplicate, closed unpaired.
 */
static void
twin_link(struct tcp_conn *mine, struct tcp_conn *c)
{
	if (mine->twin != NULL)
		mine->twin->twin = NULL;
	mine->twin = c;
	c->twin = mine;
}

/*
 * Does incoming connection @p c still carry its peer's frames?  Not once it failed, once the
 * peer said MOVE_END on it (a simultaneous connect moved away from it), nor once the peer
 * closed it: the kernel reports that (POLLRDHUP) before the EOF is read, with data still
 * unread in front of it, so a peer that closed and connected again is no duplicate even
 * when its new HELLO is read first.
 */
static bool
conn_carries_peer(struct tcp_conn *c)
{
	struct pollfd pfd = { .fd = c->item.fd, .events = POLLIN | POLLRDHUP };

	if (!c->accepted || c->dead || c->state == TCP_CONN_FAILED || c->end_seen ||
	    c->item.fd < 0)
		return false;
	return poll(&pfd, 1, 0) <= 0 || (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)) == 0;
}

/*
 * A HELLO from @p peer on a new socket while an incoming connection from that identity
 * still carries its frames is a duplicate: a well-behaved peer opens one connection to an
 * iface, and again only after that one closed.  Returns true when @p peer has such a
 * connection.  An incoming connection the peer closed gives its identity up: it is no
 * longer looked up (its eps fail once its EOF is read), the new one takes its place.
 */
static bool
hello_duplicate(struct tcp_iface *ti, const struct tcp_addr *peer)
{
	struct tcp_conn *c;

	TAILQ_FOREACH(c, &ti->conns, next) {
		if (!c->accepted || memcmp(&c->peer, peer, sizeof(*peer)) != 0)
			continue;
		if (conn_carries_peer(c))
			return true;
		c->anon = true;
	}
	return false;
}

/*
 * A complete, valid HELLO from @p peer on accepted socket @p fd.  With no connection to
 * that peer yet it becomes the connection every ep to the peer shares.  When this iface
 * has its own connection to the peer already (both sides connected at the same moment, or
 * an iface connected to itself), the incoming one is kept as a second, receive-side
 * connection: each side sends on the connection it opened, so every direction keeps its
 * order, and nothing either side queued has to move.
 */
static void
hello_attach(struct tcp_iface *ti, int fd, const struct tcp_addr *peer)
{
	bool self = memcmp(peer, &ti->addr, sizeof(*peer)) == 0;
	struct tcp_conn *c, *mine;
	char p[32];
	bool dual;

	if (hello_duplicate(ti, peer)) {
		TCP_LOG(WARNING, "%s: closing an incoming connection: %s is connected already",
			ti->super.dev_name, peer_str(peer, p, sizeof(p)));
		ti->stats.conns_duplicate++;
		close(fd);
		return;
	}
	mine = conn_find(ti, peer);
	dual = self || mine != NULL;
	c = conn_new(ti, peer);
	if (c == NULL) {
		close(fd);
		return;
	}
	c->anon = dual;
	/* the peer's frames on either connection come from the peer that ours reaches */
	if (mine != NULL)
		c->conn_id = mine->conn_id;
	if (dual && !self) {
		ti->stats.conns_dual++;
		TCP_LOG(DEBUG, "%s: simultaneous connect with %s (fd %d, ours fd %d): %s",
			ti->super.dev_name, peer_str(peer, p, sizeof(p)), fd, mine->item.fd,
			memcmp(&ti->addr, peer, sizeof(*peer)) < 0 ? "ours stays" : "we move");
		twin_link(mine, c);
		if (memcmp(&ti->addr, peer, sizeof(*peer)) < 0) {
			/* ours survives: the peer moves here, after a MOVE_END on c */
			mine->await_end = true;
			ti->rx_retry |= mine->rx_stalled;  /* its MOVE_START may wait already */
		} else {
			/* ours carries only answers to us now: busy mode reads it when one is due;
			 * it moves to c once idle */
			mine->dual = true;
			mine->move_pending = true;
			ti->n_move++;
		}
	}
	conn_adopt(c, fd);
	if (c->twin != NULL && c->twin->move_pending)
		conn_try_move(c->twin);
}

/*
 * The uid of the TCP socket of this network namespace that a segment from @p dst:@p dport
 * to @p src:@p sport (network order) would reach: an established one, else the listener
 * (sock_diag's exact lookup).  False when there is none here (another host or namespace) or
 * the query failed.
 */
static bool
diag_uid(uint32_t src, uint16_t sport, uint32_t dst, uint16_t dport, uint32_t *uid)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req = {
		.nlh = { .nlmsg_len = sizeof(req), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			 .nlmsg_flags = NLM_F_REQUEST },
		.r = { .sdiag_family = AF_INET, .sdiag_protocol = IPPROTO_TCP,
		       .idiag_states = ~0u,
		       .id = { .idiag_sport = sport, .idiag_dport = dport, .idiag_src = { src },
			       .idiag_dst = { dst },
			       .idiag_cookie = { INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE } } },
	};
	union {
		struct nlmsghdr h;
		uint8_t b[1024];
	} ans;
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK };
	struct timeval tv = { 0, 200 * 1000 };
	struct inet_diag_msg m;
	int s = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	bool found = false;
	ssize_t n;

	if (s < 0)
		return false;
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (sendto(s, &req, sizeof(req), 0, (struct sockaddr *)&nl, sizeof(nl)) ==
	    (ssize_t)sizeof(req)) {
		n = recv(s, &ans, sizeof(ans), 0);
		if (n >= (ssize_t)NLMSG_LENGTH(sizeof(m)) &&
		    ans.h.nlmsg_type == SOCK_DIAG_BY_FAMILY) {
			memcpy(&m, NLMSG_DATA(&ans.h), sizeof(m));
			*uid = m.idiag_uid;
			found = true;
		}
	}
	close(s);
	return found;
}

/*
 * May the dialler of accepted socket @p fd say HELLO as @p a?  Its IPv4 must be the
 * connection's source: an honest dialler binds its iface address before it connects.  Where
 * the claimed address is a listener of this namespace, the dialling socket must belong to
 * the listener's uid or root's (one uid is one domain: it could ptrace the listener; root
 * can anything).  A socket's uid is its creator's: a process that changed its uid after its
 * iface opened is refused as a dialler of its own listener.  What stays a
 * claim: another process of that uid, or on that host when it is another (its port and
 * uids are not seen from here); doc/guides/drivers/tcp.md, "What a HELLO claims".  NULL
 * when it may, else why not.
 */
static const char *
claim_refused(int fd, const struct tcp_addr *a)
{
	struct sockaddr_in peer, me;
	socklen_t pl = sizeof(peer), ml = sizeof(me);
	uint32_t uid_l, uid_d;

	if (getpeername(fd, (struct sockaddr *)&peer, &pl) != 0 ||
	    getsockname(fd, (struct sockaddr *)&me, &ml) != 0 || peer.sin_family != AF_INET)
		return "no IPv4 peer";
	if (peer.sin_addr.s_addr != a->ipv4)
		return "the connection comes from another IPv4";
	if (diag_uid(a->ipv4, a->port, 0, 0, &uid_l) &&
	    diag_uid(peer.sin_addr.s_addr, peer.sin_port, me.sin_addr.s_addr, me.sin_port,
		     &uid_d) && uid_l != uid_d && uid_d != 0)
		return "the dialler is not of the listener's user";
	return NULL;
}

static void
pending_rx(struct tcp_iface *ti, unsigned int i)
{
	struct tcp_pending *p = ti->pending[i];
	struct tcp_hdr h;
	struct tcp_addr a;
	const char *why;
	char ps[32];
	ssize_t r = recv(p->item.fd, p->buf + p->got, sizeof(p->buf) - p->got, MSG_DONTWAIT);

	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		if (r == 0 && p->got > 0) {
			TCP_LOG(ERR, "%s: incoming connection closed inside its HELLO",
				ti->super.dev_name);
			ti->stats.malformed++;
		}
		pending_close(ti, i);
		return;
	}
	p->got += (size_t)r;
	memcpy(&h, p->buf, RTE_MIN(p->got, sizeof(h)));
	if (p->got >= sizeof(h) && (rte_le_to_cpu_16(h.magic) != TCP_MAGIC ||
				    h.type != TCP_F_HELLO ||
				    rte_le_to_cpu_32(h.len) != sizeof(a))) {
		TCP_LOG(ERR, "%s: closing an incoming connection: bad HELLO",
			ti->super.dev_name);
		ti->stats.malformed++;
		pending_close(ti, i);
		return;
	}
	if (p->got < sizeof(p->buf))
		return;
	memcpy(&a, p->buf + sizeof(h), sizeof(a));
	if (!addr_valid(&a)) {
		TCP_LOG(ERR, "%s: closing an incoming connection: bad address in HELLO (version "
			"%u, want %u)", ti->super.dev_name, a.version, TCP_WIRE_VERSION);
		ti->stats.malformed++;
		pending_close(ti, i);
		return;
	}
	why = claim_refused(p->item.fd, &a);
	if (why != NULL) {
		TCP_LOG(ERR, "%s: closing an incoming connection that says HELLO as %s: %s",
			ti->super.dev_name, peer_str(&a, ps, sizeof(ps)), why);
		ti->stats.conns_false_claim++;
		pending_close(ti, i);
		return;
	}
	epoll_ctl(ti->epfd, EPOLL_CTL_DEL, p->item.fd, NULL);
	hello_attach(ti, p->item.fd, &a);
	free(p);
	ti->pending[i] = NULL;
	ti->n_pending--;
}

/*
 * Accept what waits in the listen queue and read the HELLOs that arrived, now: a MOVE_START
 * waits for the peer's connection (tcp_data.c), which busy mode would otherwise find at its
 * next epoll, 16 progress calls later, however long the application takes between them.
 */
void
tcp_iface_take_hellos(struct tcp_iface *ti)
{
	ti->hellos_taken = true;
	do_accept(ti);
	for (unsigned int i = 0; i < TCP_PENDING_MAX; i++)
		if (ti->pending[i] != NULL)
			pending_rx(ti, i);
}

/* ---- progress ---- */

static void
conn_event(struct tcp_conn *c, uint32_t events, unsigned int *n)
{
	if (c->state == TCP_CONN_CONNECTING) {
		if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) {
			tcp_conn_check_connect(c);
			/* connected (the frames queued behind the HELLO went out) or failed */
			if (c->state != TCP_CONN_CONNECTING)
				(*n)++;
		}
		if (c->state != TCP_CONN_ESTABLISHED)
			return;
	}
	if ((events & EPOLLOUT) && c->state == TCP_CONN_ESTABLISHED) {
		unsigned int head = c->zq_head;
		int r = tcp_conn_tx(c);

		if (r < 0) {
			tcp_conn_fail(c, (unio_status_t)r);
			(*n)++;
			return;
		}
		/* zero-copy sends the kernel took now completed: that is work to report */
		*n += c->zq_head - head;
	}
	if (events & (EPOLLIN | EPOLLERR | EPOLLHUP) || c->rx_stalled)
		*n += tcp_conn_rx(c);
}

static unsigned int
poll_events(struct tcp_iface *ti)
{
	struct epoll_event ev[32];
	unsigned int n = 0;
	int k = epoll_wait(ti->epfd, ev, 32, 0);

	ti->stats.epoll_calls++;
	ti->hellos_taken = false;
	/*
	 * A frame handled here may take the HELLOs (tcp_iface_take_hellos()) and free pending
	 * items that later events of this batch point to: the rest waits for the next epoll
	 * (level-triggered, nothing is lost).
	 */
	for (int i = 0; i < k && !ti->hellos_taken; i++) {
		struct tcp_item *it = ev[i].data.ptr;

		if (it->kind == TCP_ITEM_LISTEN) {
			do_accept(ti);
		} else if (it->kind == TCP_ITEM_PENDING) {
			for (unsigned int j = 0; j < TCP_PENDING_MAX; j++)
				if (ti->pending[j] == (struct tcp_pending *)it) {
					pending_rx(ti, j);
					break;
				}
		} else {
			struct tcp_conn *c = (struct tcp_conn *)it;

			if (!c->dead && c->item.fd >= 0)
				conn_event(c, ev[i].events, &n);
		}
	}
	return n;
}

/*
 * Timeouts of connections not yet established and of silent accepted sockets; returns the
 * connections failed (their sends completed with the error).
 */
static unsigned int
check_timers(struct tcp_iface *ti)
{
	uint64_t now = now_ns();
	unsigned int k = 0;
	struct tcp_conn *c;

	TAILQ_FOREACH(c, &ti->conns, next)
		if (c->state < TCP_CONN_ESTABLISHED && now > c->deadline_ns) {
			tcp_conn_fail(c, UNIO_ERR_TIMED_OUT);
			k++;
		}
	for (unsigned int i = 0; i < TCP_PENDING_MAX; i++)
		if (ti->pending[i] != NULL && now > ti->pending[i]->deadline_ns)
			pending_close(ti, i);
	return k;
}

static void
reap(struct tcp_iface *ti)
{
	struct tcp_conn *c, *tmp;

	for (c = TAILQ_FIRST(&ti->conns); c != NULL; c = tmp) {
		tmp = TAILQ_NEXT(c, next);
		if (c->dead)
			conn_free(c);
	}
}

static unsigned int
tcp_iface_progress(struct unio_tl_iface *iface)
{
	struct tcp_iface *ti = tcp_iface_of(iface);
	unsigned int n = 0;
	struct tcp_conn *c;

	RTE_BUILD_BUG_ON(1024 % TCP_BUSY_EPOLL_EVERY != 0);
	ti->epoch++;
	if (ti->n_more_held > 0) {
		TAILQ_FOREACH(c, &ti->conns, next)
			if (c->more_held)
				tcp_conn_push(c);
	}
	if (unlikely(ti->n_move > 0 || ti->rx_retry)) {
		bool retry = ti->rx_retry;

		ti->rx_retry = false;
		TAILQ_FOREACH(c, &ti->conns, next) {
			if (c->move_pending)
				conn_try_move(c);
			if (retry && c->rx_stalled)
				n += tcp_conn_rx(c);
		}
	}
	ti->tick++;
	if (ti->poll_mode == UNIO_TCP_POLL_BUSY) {
		bool blocked = false;

		/*
		 * A connection the kernel refused bytes on waits for EPOLLOUT: epoll says when
		 * it is writable (and readable) without taking the socket's lock, where a blind
		 * sendmsg + recv per call competed with the ACKs that free its buffer (132
		 * sendmsg per MiB sent, now about 5).  One whose direct frame waits for the
		 * rest (rx_wait, SO_RCVLOWAT) is told readable by epoll the same way, and so is
		 * one that carries bulk frames (a PUT / GET_RESP of 16 KiB or more sent or
		 * received within its last 64 frames received), where one system call more
		 * before a frame's first read is nothing beside the frame and an empty
		 * epoll_wait costs less than an empty recv (0.2-0.3 against 0.5-0.8 us, and
		 * no socket lock).  For TCP_BULK_CALLS calls after that frame at most: an
		 * idle rail keeps no iface on epoll every call.
		 */
		if (unlikely(ti->may_block)) {
			bool any = false;

			TAILQ_FOREACH(c, &ti->conns, next) {
				if (c->bulk > 0 && ++c->bulk_calls > TCP_BULK_CALLS)
					c->bulk = 0;
				any |= c->tx_blocked || c->rx_wait || c->bulk > 0;
				if (c->state == TCP_CONN_ESTABLISHED &&
				    (c->tx_blocked || c->rx_wait || c->bulk > 0))
					blocked = true;
			}
			/* none (in any state): the usual call skips this walk (change 18) */
			ti->may_block = any;
		}
		TAILQ_FOREACH(c, &ti->conns, next) {
			if (c->state != TCP_CONN_ESTABLISHED)
				goto not_blind;
			/*
			 * And while epoll is asked on this call anyway, its answer says which
			 * connections have bytes: a blind read of the others would find nothing
			 * new (tag_bw 1 MiB on lo: 121 empty recv per MiB on the receiver, 69 on
			 * the sender, beside epoll's).  Only one whose parse waits for tx room
			 * or owes an ack is retried.
			 */
			if (c->tx_blocked || c->rx_wait ||
			    (blocked && !c->rx_stalled && !c->ack_owed))
				goto not_blind;
			/* readable anyway (EOF, reset): epoll reports it within 16 calls */
			if (c->dual && c->n_gets == 0)
				goto not_blind;
			/*
			 * Nor is one that gave nothing to TCP_BUSY_COLD reads in a row and carried
			 * no send since (unio-perf's rail to the peer's eth0 while the lane on lo
			 * carries 8-byte messages: two recv calls a progress call, one always
			 * empty), TCP_BUSY_COLD_FRESH if it never carried a data frame (that
			 * rail before its first rendezvous): epoll reports its next bytes within
			 * 16 calls, and the first read that returns some, or a send on it, makes
			 * it read every call.
			 */
			if (c->rx_quiet >= c->cold_at)
				goto not_blind;
			if (!c->ep_off && ++c->blind_calls >= TCP_BUSY_EP_OFF)
				conn_ep_off(c);
			n += tcp_conn_rx(c);
			continue;
not_blind:
			/* epoll tells about it from now on: back in the set before poll_events() */
			if (unlikely(c->blind_calls | c->ep_off))
				conn_ep_on(c);
		}
		/*
		 * An iface with nothing but its listen socket (unio-perf's has one on eth0
		 * besides lo's) is called by the worker in one call of 16 only (its poll word,
		 * poll_word_idle()): its epoll every 16 of its calls is one in 256 of the
		 * worker's, and a connection waiting there is accepted within about 256 calls.
		 */
		if (!blocked && ti->n_slow == 0 && ti->tick % TCP_BUSY_EPOLL_EVERY != 0)
			return n;
	}
	n += poll_events(ti);
	/* one call in 1024 (a multiple of the epoll period: busy mode gets here then) */
	if (ti->n_slow > 0 || ti->tick % 1024 == 0)
		n += check_timers(ti);
	n += notify(ti);
	reap(ti);
	poll_word_idle(ti);
	return n;
}

/* ---- iface ---- */

static unio_status_t
listen_open(struct tcp_iface *ti)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = ti->addr.ipv4 };
	socklen_t l = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return UNIO_ERR_IO;
	ti->listen = (struct tcp_item){ TCP_ITEM_LISTEN, fd };
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 128) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &l) != 0) {
		TCP_LOG(ERR, "%s: listen: %s", ti->super.dev_name, strerror(errno));
		return UNIO_ERR_IO;
	}
	ti->addr.port = a.sin_port;
	return epoll_set(ti, &ti->listen, EPOLL_CTL_ADD, EPOLLIN) == 0 ? UNIO_OK : UNIO_ERR_IO;
}

static void
tcp_iface_close(struct unio_tl_iface *iface)
{
	struct tcp_iface *ti = tcp_iface_of(iface);
	struct tcp_conn *c;

	while ((c = TAILQ_FIRST(&ti->conns)) != NULL)
		conn_free(c);
	for (unsigned int i = 0; i < TCP_PENDING_MAX; i++)
		if (ti->pending[i] != NULL)
			pending_close(ti, i);
	item_close(ti, &ti->listen);
	if (ti->epfd >= 0)
		close(ti->epfd);
	free(ti);
}

static const struct unio_tl_ops tcp_ops = {
	.ep_am_short = tcp_ep_am_short,
	.ep_am_bcopy = tcp_ep_am_bcopy,
	.ep_am_zcopy = tcp_ep_am_zcopy,
	.ep_put_zcopy = tcp_ep_put_zcopy,
	.ep_get_zcopy = tcp_ep_get_zcopy,
	.ep_flush = tcp_ep_flush,
	.iface_progress = tcp_iface_progress,
};

static unio_status_t
tcp_iface_open(const struct unio_tl_iface_params *params, struct unio_tl_iface **iface_p)
{
	struct tcp_iface *ti = calloc(1, sizeof(*ti));
	char ip[INET_ADDRSTRLEN];
	unio_status_t st;

	if (ti == NULL)
		return UNIO_ERR_NO_MEMORY;
	ti->super.ops = tcp_ops;
	ti->super.ctl = &tcp_ctl_ops;
	snprintf(ti->super.dev_name, sizeof(ti->super.dev_name), "%s", params->dev_name);
	ti->config = params->config;
	ti->poll_mode = params->config->tcp_poll_mode;
	ti->splice = params->config->tcp_splice;
	ti->listen.fd = -1;
	TAILQ_INIT(&ti->conns);
	ti->addr = (struct tcp_addr){ .magic = TCP_ADDR_MAGIC, .version = TCP_WIRE_VERSION };
	host_identity(&ti->addr);
	ti->epfd = epoll_create1(EPOLL_CLOEXEC);
	st = ti->epfd < 0 ? UNIO_ERR_IO :
	     device_ipv4(params->config, params->dev_name, &ti->addr.ipv4, &ti->loopback);
	if (st == UNIO_OK)
		st = listen_open(ti);
	if (st != UNIO_OK) {
		tcp_iface_close(&ti->super);
		return st;
	}
	poll_word_idle(ti);
	inet_ntop(AF_INET, &ti->addr.ipv4, ip, sizeof(ip));
	TCP_LOG(INFO, "iface on %s: %s:%u, %s mode", params->dev_name, ip,
		ntohs(ti->addr.port), ti->poll_mode == UNIO_TCP_POLL_BUSY ? "busy" : "epoll");
	*iface_p = &ti->super;
	return UNIO_OK;
}

static unio_status_t
tcp_iface_query(struct unio_tl_iface *iface, struct unio_tl_iface_attr *attr)
{
	struct tcp_iface *ti = tcp_iface_of(iface);

	*attr = (struct unio_tl_iface_attr){
		.cap = UNIO_TL_CAP_AM_SHORT | UNIO_TL_CAP_AM_BCOPY | UNIO_TL_CAP_AM_ZCOPY |
		       UNIO_TL_CAP_PUT_ZCOPY | UNIO_TL_CAP_GET_ZCOPY |
		       UNIO_TL_CAP_CONNECT_IFACE | UNIO_TL_CAP_EVENT_FD |
		       UNIO_TL_CAP_PEER_FAILURE | UNIO_TL_CAP_ORDERED | UNIO_TL_CAP_RMA_TARGET |
		       UNIO_TL_CAP_GET_RAILS,
		.max_short = TCP_MAX_SHORT,
		.max_bcopy = TCP_MAX_BCOPY,
		.max_zcopy = TCP_MAX_ZCOPY - TCP_MAX_ZCOPY_HDR,
		.max_zcopy_hdr = TCP_MAX_ZCOPY_HDR,
		.max_iov = UNIO_TL_MAX_IOV,
		.max_put_zcopy = TCP_MAX_PUT,
		.max_get_zcopy = TCP_MAX_GET,
		.iface_addr_len = sizeof(struct tcp_addr),
		.rkey_packed_len = sizeof(struct tcp_rkey),
		.reach = ti->loopback ? UNIO_TL_REACH_HOST : UNIO_TL_REACH_NET,
		/*
		 * measured on loopback and a veth pair, see doc/guides/drivers/tcp.md; with
		 * 1000 MB/s the net rendezvous threshold was 61 KB, and 64 KiB took a round
		 * trip more than its eager copy cost (2500: 152 KB)
		 */
		.perf = { .latency_ns = ti->loopback ? 8000 : 15000, .overhead_ns = 1500,
			  .bandwidth_MBps = ti->loopback ? 3000 : 2500,
			  .zcopy_overhead_ns = 500 },
	};
	return UNIO_OK;
}

static unio_status_t
tcp_iface_get_address(struct unio_tl_iface *iface, void *addr)
{
	memcpy(addr, &tcp_iface_of(iface)->addr, sizeof(struct tcp_addr));
	return UNIO_OK;
}

static unio_status_t
tcp_iface_event_fd(struct unio_tl_iface *iface, int *fd)
{
	*fd = tcp_iface_of(iface)->epfd;
	return UNIO_OK;
}

/*
 * The epoll fd is level-triggered: nothing to arm, unless work is already waiting.  What
 * MSG_MORE left in the kernel is pushed first: the caller is about to sleep.
 */
static unio_status_t
tcp_iface_event_arm(struct unio_tl_iface *iface)
{
	struct tcp_iface *ti = tcp_iface_of(iface);
	struct epoll_event ev;
	struct tcp_conn *c;
	bool busy = false;

	TAILQ_FOREACH(c, &ti->conns, next) {
		if (c->more_held)
			tcp_conn_push(c);  /* about to sleep: nothing stays in the kernel's cork */
		conn_ep_on(c);  /* about to sleep on the epoll fd: every connection in it */
		busy |= c->rx_stalled || c->dead || c->notify || c->ep_off;
	}
	if (busy)
		return UNIO_ERR_BUSY;
	return epoll_wait(ti->epfd, &ev, 1, 0) > 0 ? UNIO_ERR_BUSY : UNIO_OK;
}

/* ---- eps ---- */

static unio_status_t
tcp_ep_create(struct unio_tl_iface *iface, const struct unio_tl_ep_params *params,
	      struct unio_tl_ep **ep_p)
{
	struct tcp_iface *ti = tcp_iface_of(iface);
	struct tcp_ep *ep = calloc(1, sizeof(*ep));
	struct tcp_addr peer;
	struct tcp_conn *c;

	if (ep == NULL)
		return UNIO_ERR_NO_MEMORY;
	memcpy(&peer, params->iface_addr, sizeof(peer));
	c = conn_find(ti, &peer);
	if (c == NULL) {
		unio_status_t st;

		c = conn_new(ti, &peer);
		st = c == NULL ? UNIO_ERR_NO_MEMORY : conn_connect(c);
		if (st != UNIO_OK) {
			if (c != NULL)
				conn_free(c);
			free(ep);
			return st;
		}
	}
	ep->conn = c;
	ep->super.conn_id = c->conn_id;  /* a move keeps it: twins share theirs */
	ep->next = c->eps;
	c->eps = ep;
	*ep_p = &ep->super;
	return UNIO_OK;
}

/*
 * Destroying the last ep of a connection cancels its zero-copy sends and gets
 * (UNIO_ERR_CANCELED); the copied frames still go out, and the connection stays open for
 * the peer until it closes it or the iface closes.
 */
static void
tcp_ep_destroy(struct unio_tl_ep *uep)
{
	struct tcp_ep *ep = (struct tcp_ep *)uep, **pp;
	struct tcp_conn *c = ep->conn;

	for (pp = &c->eps; *pp != ep; pp = &(*pp)->next)
		;
	*pp = ep->next;
	free(ep);
	if (c->eps != NULL)
		return;
	if (c->state == TCP_CONN_FAILED) {
		c->dead = true;
		return;
	}
	while (c->zq_head != c->zq_tail) {
		struct tcp_zc *z = &c->zq[c->zq_head % TCP_ZQ_SIZE];

		if (z->sent > 0 || z->txpos > c->tx_head) {  /* on the wire: cannot cut it */
			tcp_conn_fail(c, UNIO_ERR_CANCELED);
			return;
		}
		c->zq_head++;
		if (z->comp != NULL)
			unio_tl_completion_done(z->comp, UNIO_ERR_CANCELED);
	}
	tcp_conn_cancel_ops(c, UNIO_ERR_CANCELED);
}

/* ---- memory ---- */

struct tcp_region tcp_regs[TCP_REGS_MAX];
static pthread_mutex_t tcp_regs_lock = PTHREAD_MUTEX_INITIALIZER;

static unio_status_t
tcp_mem_reg(struct unio_tl_iface *iface, void *addr, size_t len, struct unio_tl_memh *memh)
{
	unio_status_t st = UNIO_ERR_NO_RESOURCE;

	RTE_SET_USED(iface);
	pthread_mutex_lock(&tcp_regs_lock);
	for (unsigned int i = 0; i < TCP_REGS_MAX; i++) {
		struct tcp_region *r = &tcp_regs[i];

		if (r->used)
			continue;
		r->base = (uintptr_t)addr;
		r->len = len;
		r->gen++;
		r->secret = rte_rand();
		r->used = true;
		*memh = (struct unio_tl_memh){ .addr = addr, .len = len, .priv = r };
		st = UNIO_OK;
		break;
	}
	pthread_mutex_unlock(&tcp_regs_lock);
	if (st != UNIO_OK)
		TCP_LOG(ERR, "all %u registration slots are taken", TCP_REGS_MAX);
	return st;
}

static void
tcp_mem_dereg(struct unio_tl_iface *iface, struct unio_tl_memh *memh)
{
	struct tcp_region *r = memh->priv;

	RTE_SET_USED(iface);
	pthread_mutex_lock(&tcp_regs_lock);
	r->used = false;
	r->gen++;
	pthread_mutex_unlock(&tcp_regs_lock);
}

static unio_status_t
tcp_rkey_pack(struct unio_tl_iface *iface, const struct unio_tl_memh *memh, void *buf)
{
	const struct tcp_region *r = memh->priv;
	struct tcp_rkey k = { .base = r->base, .len = r->len, .key_gen = r->gen,
			      .key_idx = (uint32_t)(r - tcp_regs), .secret = r->secret };

	RTE_SET_USED(iface);
	memcpy(buf, &k, sizeof(k));
	return UNIO_OK;
}

static unio_status_t
tcp_rkey_unpack(struct unio_tl_ep *ep, const void *buf, size_t len, struct unio_tl_rkey *rkey)
{
	struct tcp_rkey *k;

	RTE_SET_USED(ep);
	if (len != sizeof(*k))
		return UNIO_ERR_INVALID_ADDR;
	k = malloc(sizeof(*k));
	if (k == NULL)
		return UNIO_ERR_NO_MEMORY;
	memcpy(k, buf, sizeof(*k));
	if (k->key_idx >= TCP_REGS_MAX || k->base + k->len < k->base) {
		free(k);
		return UNIO_ERR_INVALID_ADDR;
	}
	*rkey = (struct unio_tl_rkey){ .remote_base = k->base, .remote_len = k->len,
				       .priv = k };
	return UNIO_OK;
}

static void
tcp_rkey_release(struct unio_tl_ep *ep, struct unio_tl_rkey *rkey)
{
	RTE_SET_USED(ep);
	free(rkey->priv);
	rkey->priv = NULL;
}

unio_status_t
unio_tl_tcp_stats(struct unio_tl_iface *iface, struct unio_tl_tcp_stats *stats)
{
	if (iface == NULL || stats == NULL || iface->ctl != &tcp_ctl_ops)
		return UNIO_ERR_INVALID_PARAM;
	*stats = tcp_iface_of(iface)->stats;
	stats->progress_calls = tcp_iface_of(iface)->epoch;
	return UNIO_OK;
}

static const struct unio_tl_iface_ctl_ops tcp_ctl_ops = {
	.iface_close = tcp_iface_close,
	.iface_query = tcp_iface_query,
	.iface_get_address = tcp_iface_get_address,
	.iface_is_reachable = tcp_iface_is_reachable,
	.iface_event_fd = tcp_iface_event_fd,
	.iface_event_arm = tcp_iface_event_arm,
	.ep_create = tcp_ep_create,
	.ep_destroy = tcp_ep_destroy,
	.mem_reg = tcp_mem_reg,
	.mem_dereg = tcp_mem_dereg,
	.rkey_pack = tcp_rkey_pack,
	.rkey_unpack = tcp_rkey_unpack,
	.rkey_release = tcp_rkey_release,
};

static const struct unio_tl_driver tcp_driver = {
	.name = "tcp",
	.description = "kernel TCP sockets: any IPv4 interface, loopback for the same host",
	.query_devices = tcp_query_devices,
	.iface_open = tcp_iface_open,
};

UNIO_TL_DRIVER_REGISTER(tcp_driver);
