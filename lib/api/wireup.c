/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Wireup: listeners and the kernel TCP control connection (HELLO / ACCEPT / REJECT /
 * VERSION / CLOSE), or the same handshake over a driver's own channel for socket addresses
 * a driver serves (UNIO_TL_CAP_CONNECT_SOCKADDR: no kernel socket), lane selection by
 * reachability, endpoint create / close / flush, and peer-failure detection (the control
 * connection's EOF, plus the drivers' ep errors).
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "unio_api_priv.h"

/* How long requests may wait for messages a peer sent before its orderly close. */
#define CLOSE_GRACE_NS (200ull * 1000 * 1000)

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t
deadline_of(const struct unio_worker *w)
{
	uint64_t t = w->ctx->config.peer_timeout_ns;

	return t == UNIO_TIME_INF ? UINT64_MAX : now_ns() + t;
}

/*
 * Progress the control plane of the calling worker while a connect waits (a listener of the
 * same worker answers).  Never another worker's: its listeners, HELLOs and lingering eps
 * belong to the thread that progresses it (its handler would run in the wrong thread, and a
 * MULTI worker's state would change without its lock).
 */
static void
progress_ctx_control(struct unio_worker *self)
{
	wireup_progress(self);
}

/*
 * Progress @p w's ifaces from a wait inside an API call; false (nothing done) when the call
 * came from a callback of @p w's progress: a nested progress would have a driver deliver
 * again, or overwrite, what the outer handler is still using.
 */
static bool
ifaces_progress(struct unio_worker *w)
{
	if (w->in_progress)
		return false;
	w->in_progress = true;
	for (unsigned int i = 0; i < w->n_ifaces; i++)
		unio_tl_iface_progress(w->ifaces[i]);
	w->in_progress = false;
	return true;
}

/* A HELLO that arrived over a driver, kept until wireup_progress() serves it. */
struct wireup_hello {
	struct wireup_hello *next;
	struct unio_tl_iface *ifc;   /* the iface it came on */
	unio_tl_conn_id_t conn_id;   /* ... and the connection */
	bool busy;             /* beyond UNIO_CONN_BACKLOG: refused when served */
	size_t len;
	uint8_t data[];        /* the whole PROTO_AM_CONN message */
};

/* Requests kept beyond UNIO_CONN_BACKLOG only to be refused; more are dropped unanswered. */
#define HELLOS_REFUSE_MAX 1024u

/* An ep that carried a refusal: destroyed once the peer acked it (or at a deadline). */
struct wireup_linger {
	struct unio_tl_completion comp;   /* first: the flush completion */
	struct wireup_linger *next;
	struct unio_tl_ep *tl_ep;
	uint64_t deadline;
	bool done;
};

static unsigned int hellos_progress(struct unio_worker *w);
static void lingers_progress(struct unio_worker *w, bool all);
static void linger(struct unio_worker *w, struct unio_tl_ep *tl_ep);
static unio_status_t conn_send(struct unio_worker *w, struct unio_tl_ep *tl_ep, uint16_t type,
			       uint32_t ep_id, uint32_t dst_ep_id, const struct wire_sockaddr *dst,
			       bool wait);

/* Wait until @p fd is readable (POLLIN) or writable; UNIO_ERR_TIMED_OUT at the deadline. */
static unio_status_t
fd_wait(struct unio_worker *w, int fd, short events, uint64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };

	for (;;) {
		int r;

		progress_ctx_control(w);
		r = poll(&p, 1, 1);
		if (r > 0)
			return UNIO_OK;
		if (r < 0 && errno != EINTR)
			return UNIO_ERR_IO;
		if (now_ns() >= deadline)
			return UNIO_ERR_TIMED_OUT;
	}
}

static unio_status_t
read_full(struct unio_worker *w, int fd, void *buf, size_t len, uint64_t deadline)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t r = recv(fd, p, len, MSG_DONTWAIT);
		unio_status_t st;

		if (r > 0) {
			p += r;
			len -= (size_t)r;
			continue;
		}
		if (r == 0)
			return UNIO_ERR_CONNECTION_RESET;
		if (errno != EAGAIN && errno != EINTR)
			return UNIO_ERR_CONNECTION_RESET;
		st = fd_wait(w, fd, POLLIN, deadline);
		if (st != UNIO_OK)
			return st;
	}
	return UNIO_OK;
}

static unio_status_t
send_ctl(int fd, uint16_t type, uint32_t ep_id, const void *addr, uint32_t addr_len)
{
	struct wire_ctl h = { .magic = UNIO_WIRE_MAGIC, .version = proto_wire_version(),
			      .type = type, .ep_id = ep_id, .addr_len = addr_len };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)(uintptr_t)addr, addr_len } };
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = addr_len ? 2 : 1 };
	ssize_t r = sendmsg(fd, &m, MSG_NOSIGNAL);

	return r == (ssize_t)(sizeof(h) + addr_len) ? UNIO_OK : UNIO_ERR_CONNECTION_RESET;
}

/* Read one control message; *addr_p is malloc'ed (NULL when addr_len is 0). */
static unio_status_t
recv_ctl(struct unio_worker *w, int fd, struct wire_ctl *h, uint8_t **addr_p,
	 uint64_t deadline)
{
	unio_status_t st = read_full(w, fd, h, sizeof(*h), deadline);

	*addr_p = NULL;
	if (st != UNIO_OK)
		return st;
	if (h->magic != UNIO_WIRE_MAGIC || h->addr_len > WIRE_ADDR_MAX) {
		API_LOG(ERR, "control connection: not a Unio peer or malformed message");
		return UNIO_ERR_PROTO;
	}
	if (h->version != UNIO_WIRE_VERSION)
		return UNIO_ERR_VERSION_MISMATCH;
	if (h->addr_len == 0)
		return UNIO_OK;
	*addr_p = malloc(h->addr_len);
	if (*addr_p == NULL)
		return UNIO_ERR_NO_MEMORY;
	st = read_full(w, fd, *addr_p, h->addr_len, deadline);
	if (st != UNIO_OK) {
		free(*addr_p);
		*addr_p = NULL;
	}
	return st;
}

/* ---- lanes ---- */

/*
 * Validate a worker address, copy its header into @p h (the address may lie anywhere in a
 * driver's buffer: no alignment) and return the number of ifaces in it (or an error).
 */
static int
addr_parse(const uint8_t *a, size_t len, struct wire_addr_hdr *h)
{
	size_t off = sizeof(*h);

	if (a == NULL || len < sizeof(*h))
		return UNIO_ERR_INVALID_ADDR;
	memcpy(h, a, sizeof(*h));
	if (h->magic != UNIO_WIRE_MAGIC)
		return UNIO_ERR_INVALID_ADDR;
	if (h->version != UNIO_WIRE_VERSION)
		return UNIO_ERR_VERSION_MISMATCH;
	for (unsigned int i = 0; i < h->n_ifaces; i++) {
		struct wire_addr_iface e;

		if (len - off < sizeof(e))
			return UNIO_ERR_INVALID_ADDR;
		memcpy(&e, a + off, sizeof(e));
		off += sizeof(e);
		if (e.addr_len > UNIO_TL_ADDR_MAX || len - off < e.addr_len)
			return UNIO_ERR_INVALID_ADDR;
		off += e.addr_len;
	}
	return h->n_ifaces;
}

/*
 * An ep from @p ifc to the first iface of its driver in worker address @p a that it can
 * reach, other than entry @p skip (-1: none).  Returns the entry's index, or -1.
 */
static int
ep_try(struct unio_ep *ep, struct unio_tl_iface *ifc, const uint8_t *a, int skip,
       struct unio_tl_ep **tl_ep_p)
{
	size_t off = sizeof(struct wire_addr_hdr);
	struct wire_addr_hdr h;

	memcpy(&h, a, sizeof(h));   /* addr_parse() checked the lengths */
	for (unsigned int i = 0; i < h.n_ifaces; i++) {
		struct wire_addr_iface e;
		struct unio_tl_ep_params p;

		memcpy(&e, a + off, sizeof(e));
		off += sizeof(e);
		e.driver[sizeof(e.driver) - 1] = '\0';
		/* eps from worker addresses: two of one worker to one peer share a connection */
		p = (struct unio_tl_ep_params){ .iface_addr = a + off, .iface_addr_len = e.addr_len,
						.user = ep, .flags = UNIO_TL_EP_FLAG_SHARE };
		off += e.addr_len;
		if ((int)i == skip || strcmp(e.driver, ifc->driver->name) != 0)
			continue;
		if (unio_tl_ep_create(ifc, &p, tl_ep_p) == UNIO_OK)
			return (int)i;
	}
	return -1;
}

static int
lane_try(struct unio_ep *ep, struct unio_tl_iface *ifc, const uint8_t *a)
{
	struct unio_tl_ep *tl_ep;
	int i = ep_try(ep, ifc, a, -1, &tl_ep);

	if (i >= 0)
		proto_lane_init(ep->worker, &ep->lane, tl_ep);
	return i;
}

/*
 * Rendezvous rails (UNIO_MAX_RNDV_RAILS): more eps to the same peer beside the lane, each
 * from another iface of the lane's driver to another iface of the peer (the lane used peer
 * entry @p used), over which large rendezvous pulls are striped.  Only toward a peer on
 * this host, where the other ifaces reach it as surely as the lane does: a rail fails only
 * as the lane would (the peer died), and fails the ep with it.  Across hosts a rail that
 * cannot connect would need its gets moved back to the lane, which is not built.
 */
static void
ep_connect_rails(struct unio_ep *ep, const uint8_t *a, int used)
{
	struct unio_worker *w = ep->worker;
	struct unio_tl_iface *lane = ep->lane.iface;
	int64_t max = RTE_MIN(w->ctx->config.max_rndv_rails, (int64_t)PROTO_MAX_RAILS);

	if (!(ep->lane.tl_ep->cap & UNIO_TL_CAP_GET_RAILS) || lane->attr.reach > UNIO_TL_REACH_HOST)
		return;
	for (unsigned int i = 0; i < w->n_ifaces && 1 + ep->n_rails < max; i++) {
		struct unio_tl_iface *ifc = w->ifaces[i];
		struct unio_tl_ep *tl_ep;

		if (ifc == lane || ifc->driver != lane->driver ||
		    ep_try(ep, ifc, a, used, &tl_ep) < 0)
			continue;
		ep->rails[ep->n_rails++] = tl_ep;
		API_LOG(INFO, "ep %#x: rendezvous rail %s/%s", ep->id, ifc->driver->name,
			ifc->dev_name);
	}
}

/* @p a serves a message sooner than @p b: lower latency, then higher bandwidth */
static bool
iface_faster(const struct unio_tl_iface *a, const struct unio_tl_iface *b)
{
	if (a->attr.perf.latency_ns != b->attr.perf.latency_ns)
		return a->attr.perf.latency_ns < b->attr.perf.latency_ns;
	return a->attr.perf.bandwidth_MBps > b->attr.perf.bandwidth_MBps;
}

/*
 * Choose the lane: the nearest reachability class whose driver reaches the peer; within a
 * class (shm and tcp on lo both reach the host) the fastest by the drivers' performance
 * models, never the order the drivers happened to register in.
 */
/*
 * A failure of unio_ep_create() found by one of its steps: logged at ERR where detected, or
 * at INFO when the caller asked for the reason (UNIO_EP_PARAM_ERR_INFO: it says it itself);
 * kept as the reason's detail either way.
 */
static void __rte_format_printf(2, 3)
ep_said(struct unio_ep *ep, const char *fmt, ...)
{
	char line[UNIO_EP_REASON_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (ep->dial_quiet)
		API_LOG(INFO, "%s", line);
	else
		API_LOG(ERR, "%s", line);
	if (ep->dial_detail != NULL)
		snprintf(ep->dial_detail, UNIO_EP_REASON_MAX, "%s", line);
	ep->dial_logged = true;
}

/* The peer answered that it speaks another wire version. */
static void
say_version(struct unio_ep *ep)
{
	ep_said(ep, "the peer speaks another wire version (ours is %u): refused",
		proto_wire_version());
	if (ep->dial_detail != NULL)   /* the status says the rest */
		snprintf(ep->dial_detail, UNIO_EP_REASON_MAX, "ours is %u", proto_wire_version());
}

/*
 * Why no lane: the peer's ifaces and this worker's, each as driver/device (UNIO_TLS and
 * UNIO_NET_DEVICES, on either side, decide them).  @p a passed addr_parse().  @p by_peer:
 * the peer (a server answering REFUSED) found no lane to this worker.
 */
static void
log_unreachable(struct unio_ep *ep, const uint8_t *a, bool by_peer)
{
	const struct unio_worker *w = ep->worker;
	char offers[256] = "", has[256] = "";
	size_t off = sizeof(struct wire_addr_hdr), no = 0, nh = 0;
	struct wire_addr_hdr h;

	memcpy(&h, a, sizeof(h));
	for (unsigned int i = 0; i < h.n_ifaces; i++) {
		struct wire_addr_iface e;

		memcpy(&e, a + off, sizeof(e));
		off += sizeof(e) + e.addr_len;
		e.driver[sizeof(e.driver) - 1] = '\0';
		e.device[sizeof(e.device) - 1] = '\0';
		no += (size_t)snprintf(offers + no, no < sizeof(offers) ? sizeof(offers) - no : 0,
				       "%s%s/%s", i != 0 ? ", " : "", e.driver, e.device);
	}
	for (unsigned int i = 0; i < w->n_ifaces; i++)
		nh += (size_t)snprintf(has + nh, nh < sizeof(has) ? sizeof(has) - nh : 0,
				       "%s%s/%s", i != 0 ? ", " : "", w->ifaces[i]->driver->name,
				       w->ifaces[i]->dev_name);
	if (by_peer)
		ep_said(ep, "the peer reaches none of this worker's ifaces: it has %s; this "
			"worker offers %s (UNIO_TLS and UNIO_NET_DEVICES choose them, on either "
			"side)", offers[0] != '\0' ? offers : "nothing",
			has[0] != '\0' ? has : "no iface");
	else
		ep_said(ep, "no transport reaches the peer: it offers %s; this worker has %s "
			"(UNIO_TLS and UNIO_NET_DEVICES choose them, on either side)",
			offers[0] != '\0' ? offers : "nothing", has[0] != '\0' ? has : "no iface");
}

static unio_status_t
ep_connect_lanes(struct unio_ep *ep, const uint8_t *addr, size_t len)
{
	struct wire_addr_hdr h;
	struct unio_worker *w = ep->worker;
	struct unio_tl_iface *order[WORKER_MAX_IFACES];
	int n = addr_parse(addr, len, &h);

	if (n < 0) {
		ep_said(ep, "peer worker address: %s", unio_status_string(n));
		return n;
	}
	ep->peer_uuid = h.uuid;
	for (int r = UNIO_TL_REACH_SELF; r <= UNIO_TL_REACH_NET; r++) {
		unsigned int k = 0;

		for (unsigned int i = 0; i < w->n_ifaces && k < RTE_DIM(order); i++) {
			struct unio_tl_iface *ifc = w->ifaces[i];
			unsigned int j;

			if (ifc->attr.reach != (enum unio_tl_reach)r)
				continue;
			for (j = k++; j > 0 && iface_faster(ifc, order[j - 1]); j--)
				order[j] = order[j - 1];
			order[j] = ifc;
		}
		for (unsigned int i = 0; i < k; i++) {
			int used = lane_try(ep, order[i], addr);

			if (used < 0)
				continue;
			API_LOG(INFO, "ep %#x: lane %s/%s to worker %016" PRIx64, ep->id,
				order[i]->driver->name, order[i]->dev_name, h.uuid);
			ep_connect_rails(ep, addr, used);
			return UNIO_OK;
		}
	}
	log_unreachable(ep, addr, false);
	return UNIO_ERR_UNREACHABLE;
}

static unio_status_t ep_connect_worker_addr(struct unio_ep *ep,
					    const struct unio_ep_params *p);

/* ---- endpoint table ---- */

static struct unio_ep *
ep_alloc(struct unio_worker *w)
{
	struct unio_ep *ep = calloc(1, sizeof(*ep));
	uint32_t i;

	if (ep == NULL)
		return NULL;
	for (i = 0; i < w->n_eps && w->eps[i] != NULL; i++)
		;
	if (i == w->n_eps) {
		uint32_t n = w->n_eps ? w->n_eps * 2 : 16;
		struct unio_ep **t = n <= 0x10000 ? realloc(w->eps, n * sizeof(*t)) : NULL;

		if (t == NULL) {
			free(ep);
			return NULL;
		}
		memset(t + w->n_eps, 0, (n - w->n_eps) * sizeof(*t));
		w->eps = t;
		w->n_eps = n;
	}
	if (++w->ep_gen == 0)
		w->ep_gen = 1;
	ep->id = i | ((uint32_t)w->ep_gen << 16);
	ep->worker = w;
	ep->ctl_fd = -1;
	ep->state = EP_CONNECTING;
	TAILQ_INIT(&ep->pending);
	TAILQ_INIT(&ep->outstanding);
	w->eps[i] = ep;
	return ep;
}

/*
 * Release an ep's resources.  A closed ep's memory stays until the worker is destroyed, so
 * that a call on a closed endpoint fails with UNIO_ERR_NOT_CONNECTED instead of touching
 * freed memory.
 */
static void
ep_free(struct unio_ep *ep)
{
	struct unio_worker *w = ep->worker;

	if (ep->wireup_owed != 0)
		w->n_wireup_owed--;
	ep->wireup_owed = 0;
	proto_ep_release_rkeys(ep);
	if (ep->lane.tl_ep != NULL && ep->linger_lane) {
		ep->lane.tl_ep->user = NULL;
		linger(w, ep->lane.tl_ep);   /* our CLOSE still has to reach the peer */
	} else if (ep->lane.tl_ep != NULL) {
		unio_tl_ep_destroy(ep->lane.tl_ep);
	}
	ep->lane.tl_ep = NULL;
	for (unsigned int i = 0; i < ep->n_rails; i++)
		unio_tl_ep_destroy(ep->rails[i]);
	ep->n_rails = 0;
	if (ep->ctl_fd >= 0)
		close(ep->ctl_fd);
	ep->ctl_fd = -1;
	w->eps[ep->id & 0xffff] = NULL;
	ep->state = EP_CLOSED;
	ep->closed_next = w->closed_eps;
	w->closed_eps = ep;
}

void
wireup_ep_fail(struct unio_ep *ep, unio_status_t st, bool report)
{
	if (ep->state != EP_CONNECTED && ep->state != EP_CONNECTING)
		return;
	if (ep->conn_status == UNIO_INPROGRESS)
		ep->conn_status = st;   /* unio_ep_create over a driver waits for it */
	ep->state = EP_FAILED;
	ep->fail_status = st;
	proto_ep_fail_requests(ep, st);
	if (report && !ep->err_reported && ep->err_handler != NULL) {
		ep->err_reported = true;
		ep->err_handler(ep->err_arg, ep, st);
	}
}

/* ---- control progress: listeners and control connections ---- */

/* Accept every queued connection into a pending slot; its HELLO is read when it arrives. */
static void
listener_take(struct unio_listener *l)
{
	for (;;) {
		struct sockaddr_storage peer;
		socklen_t sl = sizeof(peer);
		int fd = accept4(l->fd, (struct sockaddr *)&peer, &sl,
				 SOCK_CLOEXEC | SOCK_NONBLOCK);
		unsigned int i;

		if (fd < 0)
			return;
		for (i = 0; i < LISTENER_PEND_MAX && l->pend_fd[i] >= 0; i++)
			;
		if (i == LISTENER_PEND_MAX) {
			API_LOG(WARNING, "listener: %u connections wait for a HELLO: one dropped",
				LISTENER_PEND_MAX);
			close(fd);
			continue;
		}
		l->pend_fd[i] = fd;
		l->pend_peer[i] = peer;
		l->pend_deadline[i] = deadline_of(l->worker);
		worker_efd_watch(l->worker, fd);   /* its HELLO wakes a sleeping worker */
	}
}

/* The HELLO of pending connection @p i arrived (or it closed): refuse, or ask the handler. */
static void
listener_hello(struct unio_listener *l, unsigned int i)
{
	struct unio_worker *w = l->worker;
	struct unio_conn_request *cr;
	int fd = l->pend_fd[i];
	struct wire_ctl h;
	unio_status_t st;

	l->pend_fd[i] = -1;
	cr = calloc(1, sizeof(*cr));
	st = cr == NULL ? UNIO_ERR_NO_MEMORY : recv_ctl(w, fd, &h, &cr->addr, deadline_of(w));
	if (st == UNIO_OK && h.type != WIRE_HELLO)
		st = UNIO_ERR_PROTO;
	if (st != UNIO_OK) {
		if (st == UNIO_ERR_VERSION_MISMATCH) {
			API_LOG(ERR, "refused a peer of wire version %u (ours is %u)", h.version,
				UNIO_WIRE_VERSION);
			send_ctl(fd, WIRE_VERSION, 0, NULL, 0);
		}
		close(fd);
		free(cr);
		return;
	}
	cr->listener = l;
	cr->fd = fd;
	cr->peer = l->pend_peer[i];
	cr->remote_ep_id = h.ep_id;
	cr->addr_len = h.addr_len;
	l->handler(cr, l->arg);
}

/* One listener: accept, read the HELLOs that arrived, drop connections that stay silent. */
static unsigned int
listener_progress(struct unio_listener *l)
{
	struct pollfd p = { .fd = l->fd, .events = POLLIN };
	unsigned int n = 0;

	if (l->busy || l->fd < 0)
		return 0;   /* a listener on a driver's iface: its requests come as messages */
	l->busy = true;
	if (poll(&p, 1, 0) == 1)
		listener_take(l);
	for (unsigned int i = 0; i < LISTENER_PEND_MAX; i++) {
		if (l->pend_fd[i] < 0)
			continue;
		p = (struct pollfd){ .fd = l->pend_fd[i], .events = POLLIN };
		if (poll(&p, 1, 0) == 1) {
			listener_hello(l, i);
			n++;
		} else if (now_ns() > l->pend_deadline[i]) {
			API_LOG(WARNING, "listener: a connection sent no HELLO in time: closed");
			close(l->pend_fd[i]);
			l->pend_fd[i] = -1;
		}
	}
	l->busy = false;
	return n;
}

static void
ep_check_ctl(struct unio_ep *ep)
{
	struct wire_ctl h;
	ssize_t r = recv(ep->ctl_fd, &h, sizeof(h), MSG_DONTWAIT);

	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r == (ssize_t)sizeof(h) && h.magic == UNIO_WIRE_MAGIC && h.type == WIRE_CLOSE) {
		/*
		 * Orderly close: the peer flushed, so what it sent (an ATS we wait for, say) is
		 * already in our rx path, maybe not yet drained.  Requests still waiting for it
		 * after a grace period fail.
		 */
		ep->remote_closed = true;
		ep->close_deadline = now_ns() + CLOSE_GRACE_NS;
		return;
	}
	if (ep->remote_closed && r == 0) {
		close(ep->ctl_fd);
		ep->ctl_fd = -1;
		return;
	}
	API_LOG(ERR, "peer of ep %#x died or reset its control connection", ep->id);
	close(ep->ctl_fd);
	ep->ctl_fd = -1;
	ep->fail_why = "the peer died or reset its control connection";
	wireup_ep_fail(ep, UNIO_ERR_CONNECTION_RESET, true);
}

static unsigned int wireup_owed_progress(struct unio_ep *ep);

unsigned int
wireup_progress(struct unio_worker *w)
{
	struct unio_listener *l, *next;
	unsigned int n = 0;

	for (l = TAILQ_FIRST(&w->listeners); l != NULL; l = next) {
		next = TAILQ_NEXT(l, link);
		n += listener_progress(l);
	}
	if (w->hellos != NULL)
		n += hellos_progress(w);
	if (w->lingers != NULL)
		lingers_progress(w, false);
	for (uint32_t i = 0; i < w->n_eps; i++) {
		struct unio_ep *ep = w->eps[i];

		if (unlikely(ep != NULL && ep->wireup_owed != 0))
			n += wireup_owed_progress(ep);
		if (ep != NULL && ep->close_deadline != 0 && now_ns() > ep->close_deadline) {
			ep->close_deadline = 0;
			proto_ep_fail_requests(ep, UNIO_ERR_CONNECTION_RESET);
		}
		if (ep != NULL && ep->ctl_fd >= 0 && ep->state == EP_CONNECTED) {
			ep_check_ctl(ep);
			n += ep->state != EP_CONNECTED;
		} else if (ep != NULL && ep->state == EP_CONNECTING && ep->connect_deadline &&
			   now_ns() > ep->connect_deadline) {
			API_LOG(ERR, "ep %#x: the peer worker did not answer the wireup", ep->id);
			ep->fail_why = "the peer worker did not answer the wireup";
			wireup_ep_fail(ep, UNIO_ERR_TIMED_OUT, true);
		}
	}
	return n;
}

unio_status_t
wireup_efd_add_all(struct unio_worker *w)
{
	struct unio_listener *l;

	TAILQ_FOREACH(l, &w->listeners, link) {
		worker_efd_watch(w, l->fd);
		for (unsigned int i = 0; i < LISTENER_PEND_MAX; i++)
			worker_efd_watch(w, l->pend_fd[i]);
	}
	for (uint32_t i = 0; i < w->n_eps; i++)
		if (w->eps[i] != NULL && w->eps[i]->ctl_fd >= 0)
			worker_efd_watch(w, w->eps[i]->ctl_fd);
	return UNIO_OK;
}

/* ---- listener ---- */

/* @p sa on the wire; -1 for another family or a short address. */
static int
sa_to_wire(const struct sockaddr *sa, socklen_t len, struct wire_sockaddr *w)
{
	memset(w, 0, sizeof(*w));
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const void *)sa;

		w->port = in->sin_port;
		memcpy(w->addr, &in->sin_addr, sizeof(in->sin_addr));
	} else if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		w->port = in6->sin6_port;
		memcpy(w->addr, &in6->sin6_addr, sizeof(in6->sin6_addr));
	} else {
		return -1;
	}
	w->family = sa->sa_family;
	return 0;
}

static void
sa_from_wire(const struct wire_sockaddr *w, struct sockaddr_storage *sa)
{
	memset(sa, 0, sizeof(*sa));
	if (w->family == AF_INET) {
		struct sockaddr_in *in = (void *)sa;

		in->sin_family = AF_INET;
		in->sin_port = w->port;
		memcpy(&in->sin_addr, w->addr, sizeof(in->sin_addr));
	} else if (w->family == AF_INET6) {
		struct sockaddr_in6 *in6 = (void *)sa;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = w->port;
		memcpy(&in6->sin6_addr, w->addr, sizeof(in6->sin6_addr));
	}
}

/*
 * The iface of @p w whose own socket address (UNIO_TL_CAP_CONNECT_SOCKADDR) is @p sa, port 0
 * matching any port; its address into @p own.  NULL when none: the kernel's then.
 */
static struct unio_tl_iface *
sockaddr_iface(struct unio_worker *w, const struct wire_sockaddr *sa,
	       struct sockaddr_storage *own)
{
	for (unsigned int i = 0; i < w->n_ifaces; i++) {
		struct unio_tl_iface *ifc = w->ifaces[i];
		struct wire_sockaddr o;

		if (unio_tl_iface_get_sockaddr(ifc, own) != UNIO_OK ||
		    sa_to_wire((const struct sockaddr *)own, sizeof(*own), &o) != 0)
			continue;
		if (o.family == sa->family && memcmp(o.addr, sa->addr, sizeof(o.addr)) == 0 &&
		    (sa->port == 0 || sa->port == o.port))
			return ifc;
	}
	return NULL;
}

/*
 * A listener whose address belongs to an iface of @p w: connection requests come over that
 * iface's own channel (no kernel socket).  UNIO_ERR_UNREACHABLE when no iface owns @p sa,
 * UNIO_ERR_BUSY when a listener of this worker has that iface already.
 */
static unio_status_t
listener_on_iface(struct unio_worker *w, struct unio_listener *l, const struct sockaddr *sa,
		  socklen_t len)
{
	struct unio_listener *o;
	struct wire_sockaddr want;

	if (sa_to_wire(sa, len, &want) != 0)
		return UNIO_ERR_UNREACHABLE;
	l->iface = sockaddr_iface(w, &want, &l->addr);
	if (l->iface == NULL)
		return UNIO_ERR_UNREACHABLE;
	TAILQ_FOREACH(o, &w->listeners, link) {
		if (o->iface != l->iface)
			continue;
		API_LOG(ERR, "listener: %s/%s has a listener already",
			l->iface->driver->name, l->iface->dev_name);
		return UNIO_ERR_BUSY;
	}
	return UNIO_OK;
}

/*
 * The kernel would not bind @p sa (@p err): say why, and when the address is an iface's on
 * another port (a DPDK port's address, which the kernel does not have), which port it is.
 */
static void
listener_say_why(struct unio_worker *w, const struct sockaddr *sa, socklen_t len, int err)
{
	struct sockaddr_storage own;
	struct wire_sockaddr want, o;
	struct unio_tl_iface *ifc = NULL;

	if (sa_to_wire(sa, len, &want) == 0) {
		want.port = 0;   /* any port: whose address is it? */
		ifc = sockaddr_iface(w, &want, &own);
	}
	if (ifc != NULL && sa_to_wire((const struct sockaddr *)&own, sizeof(own), &o) == 0)
		API_LOG(ERR, "listener: cannot bind/listen: %s; the address is %s/%s's, which "
			"takes connection requests on its UDP port %u only: listen on that port "
			"(or 0)", strerror(err), ifc->driver->name, ifc->dev_name, ntohs(o.port));
	else
		API_LOG(ERR, "listener: cannot bind/listen: %s", strerror(err));
}

static int
listen_socket(const struct sockaddr *sa, socklen_t len)
{
	int one = 1, fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, sa, len) != 0 || listen(fd, 128) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

unio_listener_t *
unio_listener_create(unio_worker_t *w, const struct unio_listener_params *params,
		     unio_status_t *status)
{
	struct unio_listener *l = NULL;
	unio_status_t st = UNIO_ERR_INVALID_PARAM;
	socklen_t sl;

	if (w == NULL || params == NULL ||
	    !(params->field_mask & UNIO_LISTENER_PARAM_SOCKADDR) ||
	    !(params->field_mask & UNIO_LISTENER_PARAM_HANDLER) || params->sockaddr == NULL ||
	    params->conn_handler == NULL || params->addrlen < sizeof(struct sockaddr_in) ||
	    params->addrlen > sizeof(struct sockaddr_storage))
		goto out;
	st = UNIO_ERR_NO_MEMORY;
	l = calloc(1, sizeof(*l));
	if (l == NULL)
		goto out;
	/* one lock section from the one-listener-per-iface check to the insert */
	worker_lock(w);
	st = listener_on_iface(w, l, params->sockaddr, params->addrlen);
	if (st == UNIO_OK) {
		l->fd = -1;
		goto take;
	}
	if (st != UNIO_ERR_UNREACHABLE) {
		worker_unlock(w);
		free(l);
		goto out;
	}
	l->fd = listen_socket(params->sockaddr, params->addrlen);
	if (l->fd < 0) {
		int err = errno;

		listener_say_why(w, params->sockaddr, params->addrlen, err);
		st = err == EADDRINUSE ? UNIO_ERR_BUSY : UNIO_ERR_IO;
		worker_unlock(w);
		free(l);
		goto out;
	}
	sl = sizeof(l->addr);
	getsockname(l->fd, (struct sockaddr *)&l->addr, &sl);
take:
	l->worker = w;
	for (unsigned int i = 0; i < LISTENER_PEND_MAX; i++)
		l->pend_fd[i] = -1;
	l->handler = params->conn_handler;
	l->arg = params->arg;
	TAILQ_INSERT_TAIL(&w->listeners, l, link);
	worker_efd_watch(w, l->fd);
	worker_unlock(w);
	st = UNIO_OK;
out:
	if (status != NULL)
		*status = st;
	return st == UNIO_OK ? l : NULL;
}

unio_status_t
unio_listener_query(unio_listener_t *l, struct sockaddr_storage *addr)
{
	if (l == NULL || addr == NULL)
		return UNIO_ERR_INVALID_PARAM;
	*addr = l->addr;
	return UNIO_OK;
}

static void
conn_request_free(struct unio_conn_request *cr)
{
	if (cr->fd >= 0)
		close(cr->fd);
	if (cr->tl_ep != NULL)
		unio_tl_ep_destroy(cr->tl_ep);
	free(cr->addr);
	free(cr);
}

unio_status_t
unio_listener_reject(unio_listener_t *l, unio_conn_request_t *cr)
{
	if (l == NULL || cr == NULL || cr->listener != l)
		return UNIO_ERR_INVALID_PARAM;
	if (cr->tl_ep != NULL) {
		worker_lock(l->worker);
		conn_send(l->worker, cr->tl_ep, WIRE_REJECT, 0, cr->remote_ep_id, NULL, true);
		linger(l->worker, cr->tl_ep);   /* destroyed once the REJECT is acked */
		cr->tl_ep = NULL;
		worker_unlock(l->worker);
	}
	send_ctl(cr->fd, WIRE_REJECT, 0, NULL, 0);
	conn_request_free(cr);
	return UNIO_OK;
}

unio_status_t
unio_conn_request_query(unio_conn_request_t *cr, struct sockaddr_storage *addr)
{
	if (cr == NULL || addr == NULL)
		return UNIO_ERR_INVALID_PARAM;
	*addr = cr->peer;
	return UNIO_OK;
}

void
unio_listener_destroy(unio_listener_t *l)
{
	struct unio_worker *w;

	if (l == NULL)
		return;
	w = l->worker;
	worker_lock(w);
	TAILQ_REMOVE(&w->listeners, l, link);
	worker_unlock(w);
	for (unsigned int i = 0; i < LISTENER_PEND_MAX; i++)
		if (l->pend_fd[i] >= 0)
			close(l->pend_fd[i]);
	if (l->fd >= 0)
		close(l->fd);
	free(l);
}

/* ---- endpoint ---- */

static unio_status_t
send_own_address(struct unio_ep *ep, int fd, uint16_t type)
{
	size_t len = worker_address_pack(ep->worker, NULL, 0);
	uint8_t *buf = malloc(len);
	unio_status_t st;

	if (buf == NULL)
		return UNIO_ERR_NO_MEMORY;
	worker_address_pack(ep->worker, buf, len);
	st = send_ctl(fd, type, ep->id, buf, (uint32_t)len);
	free(buf);
	return st;
}

static int
connect_socket(struct unio_worker *w, const struct sockaddr *sa, socklen_t len,
	       unio_status_t *st, int *why)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
	socklen_t el = sizeof(int);
	int err = 0;

	*st = UNIO_ERR_IO;
	if (fd < 0)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, sa, len) != 0 && errno != EINPROGRESS) {
		/* refused or no route at once: nothing there (yet), as when told later */
		err = errno;
		if (err == ECONNREFUSED || err == ENETUNREACH || err == EHOSTUNREACH ||
		    err == ETIMEDOUT) {
			*st = err == ETIMEDOUT ? UNIO_ERR_TIMED_OUT : UNIO_ERR_UNREACHABLE;
			*why = err;   /* logged by ep_connect_sockaddr() */
		}
		goto fail;
	}
	*st = fd_wait(w, fd, POLLOUT, deadline_of(w));
	if (*st != UNIO_OK)
		goto fail;
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
	if (err == 0)
		return fd;
	*st = err == ETIMEDOUT ? UNIO_ERR_TIMED_OUT : UNIO_ERR_UNREACHABLE;
	*why = err;
fail:
	close(fd);
	return -1;
}

/*
 * unio_ep_create by a socket address that iface @p ifc serves: an ep to the peer's partial
 * address @p addr, HELLO over it, and a wait (bounded by UNIO_PEER_TIMEOUT) for the answer,
 * progressing its own worker (ifaces, control plane) meanwhile.
 */
static unio_status_t
ep_connect_driver(struct unio_ep *ep, struct unio_tl_iface *ifc, const uint8_t *addr,
		  const struct unio_ep_params *p)
{
	struct unio_worker *w = ep->worker;
	struct unio_tl_ep_params tp = { .iface_addr = addr,
					.iface_addr_len = ifc->attr.iface_addr_len, .user = ep };
	unio_ep_err_handler_t eh = ep->err_handler;
	uint64_t deadline = deadline_of(w);
	struct wire_sockaddr dst;
	struct unio_tl_ep *tl_ep;
	unio_status_t st;

	if (w->in_progress)
		return UNIO_ERR_BUSY;   /* from a callback: the wait could not progress the iface */
	st = unio_tl_ep_create(ifc, &tp, &tl_ep);
	if (st != UNIO_OK)
		return st;
	proto_lane_init(w, &ep->lane, tl_ep);
	sa_to_wire(p->sockaddr, p->addrlen, &dst);
	RTE_BUILD_BUG_ON(sizeof(ep->dial_dst) != sizeof(dst));
	memcpy(ep->dial_dst, &dst, sizeof(dst));   /* a crossing HELLO from there joins us */
	ep->conn_status = UNIO_INPROGRESS;
	ep->err_handler = NULL;   /* a failure now is this call's status, not an ep error */
	st = conn_send(w, tl_ep, WIRE_HELLO, ep->id, 0, &dst, true);
	API_LOG(DEBUG, "ep %#x: HELLO over %s/%s: %s", ep->id, ifc->driver->name, ifc->dev_name,
		unio_status_string(st));
	while (st == UNIO_OK && ep->conn_status == UNIO_INPROGRESS) {
		ifaces_progress(w);
		progress_ctx_control(w);   /* a listener of this worker answers too */
		if (ep->conn_status == UNIO_INPROGRESS && now_ns() >= deadline)
			st = UNIO_ERR_TIMED_OUT;
	}
	if (st == UNIO_OK)
		st = ep->conn_status;
	if (st == UNIO_OK && ep->state != EP_CONNECTED)
		st = UNIO_ERR_CONNECTION_RESET;   /* accepted, then failed at once */
	ep->by_driver = st == UNIO_OK;
	ep->conn_status = UNIO_OK;
	ep->err_handler = eh;
	if (st == UNIO_ERR_VERSION_MISMATCH) {
		say_version(ep);
	} else if (st != UNIO_OK && st != UNIO_ERR_REJECTED) {
		API_LOG(INFO, "connect over %s/%s: %s", ifc->driver->name, ifc->dev_name,
			unio_status_string(st));   /* the failure: ep_connect_sockaddr() */
	}
	return st;
}

/*
 * A dial over a driver that reached no Unio worker: the driver's ep failed (ARP unanswered,
 * a peer that never acked, reset) or the wait ran out, and no HELLO answer (ACCEPT, REJECT,
 * VERSION, REFUSED) came.
 */
static bool
driver_unanswered(const struct unio_ep *ep, unio_status_t st)
{
	return !ep->conn_answered && ep->lane.tl_ep != NULL &&
	       (st == UNIO_ERR_UNREACHABLE || st == UNIO_ERR_TIMED_OUT ||
		st == UNIO_ERR_CONNECTION_RESET);
}

static unio_status_t
ep_dial_sockaddr(struct unio_ep *ep, const struct unio_ep_params *p)
{
	struct unio_worker *w = ep->worker;
	struct wire_ctl h;
	uint8_t *addr;
	unio_status_t st;

	if (p->sockaddr == NULL || p->addrlen < sizeof(struct sockaddr_in))
		return UNIO_ERR_INVALID_PARAM;
	for (unsigned int i = 0; i < w->n_ifaces; i++) {
		uint8_t a[UNIO_TL_ADDR_MAX];

		if (unio_tl_sockaddr_to_addr(w->ifaces[i], p->sockaddr, p->addrlen, a) != UNIO_OK)
			continue;
		st = ep_connect_driver(ep, w->ifaces[i], a, p);
		if (!driver_unanswered(ep, st))
			return st;
		/*
		 * Nothing of Unio answered there (no ARP answer, or the driver gave up on a
		 * silent peer): the address may be a kernel listener's, whose port only looks
		 * like a driver's.  The kernel path decides, with a deadline of its own.
		 */
		API_LOG(INFO, "connect over %s/%s: %s, no Unio iface answered: kernel TCP",
			w->ifaces[i]->driver->name, w->ifaces[i]->dev_name,
			unio_status_string(st));
		unio_tl_ep_destroy(ep->lane.tl_ep);
		memset(&ep->lane, 0, sizeof(ep->lane));
		ep->state = EP_CONNECTING;
		ep->err_reported = false;
		ep->conn_answered = false;
		ep->fail_status = UNIO_OK;   /* the driver's failure was not the ep's */
		ep->fail_why = NULL;
		break;
	}
	ep->ctl_fd = connect_socket(w, p->sockaddr, p->addrlen, &st, &ep->dial_errno);
	if (ep->ctl_fd < 0)
		return st;
	st = send_own_address(ep, ep->ctl_fd, WIRE_HELLO);
	if (st == UNIO_OK)
		st = recv_ctl(w, ep->ctl_fd, &h, &addr, deadline_of(w));
	if (st == UNIO_OK && h.type == WIRE_VERSION)
		st = UNIO_ERR_VERSION_MISMATCH;
	if (st == UNIO_ERR_VERSION_MISMATCH) {
		say_version(ep);
		return st;
	}
	if (st == UNIO_OK && h.type == WIRE_REJECT) {
		st = UNIO_ERR_REJECTED;
	} else if (st == UNIO_OK && h.type == WIRE_REFUSED) {
		/* the server's handler accepted, but none of its ifaces reaches ours */
		struct wire_addr_hdr ah;

		if (addr_parse(addr, h.addr_len, &ah) >= 0)
			log_unreachable(ep, addr, true);
		st = UNIO_ERR_UNREACHABLE;
	} else if (st == UNIO_OK && h.type != WIRE_ACCEPT) {
		st = UNIO_ERR_PROTO;
	}
	if (st == UNIO_OK) {
		ep->remote_id = h.ep_id;
		st = ep_connect_lanes(ep, addr, h.addr_len);
	}
	free(addr);
	return st;
}

/* "IP port P" of an IPv4 or IPv6 address ("? port 0" for another family). */
static void
sa_name(const struct sockaddr *sa, socklen_t len, char *buf, size_t size)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	struct wire_sockaddr w;

	if (sa_to_wire(sa, len, &w) != 0)
		w.port = 0;
	else
		inet_ntop(w.family, w.addr, ip, sizeof(ip));
	snprintf(buf, size, "%s port %u", ip, ntohs(w.port));
}

/*
 * unio_ep_create by socket address: a failure fails the user's call once, so it is said at
 * the default log level, in one line (the address, the status, why when known), unless the
 * step that failed logged it at ERR already (another wire version, no common transport), or
 * the caller takes the reason (UNIO_EP_PARAM_ERR_INFO: at INFO).  The steps' own lines
 * (which driver was tried, the kernel fallback) stay at INFO.  The same line, without the
 * log's prefix, is @p e's reason.
 */
static unio_status_t
ep_connect_sockaddr(struct unio_ep *ep, const struct unio_ep_params *p, struct unio_ep_error *e)
{
	unio_status_t st = ep_dial_sockaddr(ep, p);
	char timeout[64] = "";
	const char *why = "";

	if (st == UNIO_ERR_INVALID_PARAM)
		return st;
	sa_name(p->sockaddr, p->addrlen, ep->peer_name, sizeof(ep->peer_name));
	snprintf(e->peer, sizeof(e->peer), "%s", ep->peer_name);
	if (st == UNIO_OK)
		return st;
	e->sys_errno = ep->dial_errno != 0 ? ep->dial_errno : ep->dial_refused ? ECONNREFUSED : 0;
	if (ep->dial_errno != 0) {
		why = strerror(ep->dial_errno);
	} else if (ep->dial_why != NULL) {
		why = ep->dial_why;
	} else if (ep->dial_detail != NULL && ep->dial_detail[0] != '\0') {
		why = ep->dial_detail;
	} else if (st == UNIO_ERR_TIMED_OUT) {
		snprintf(timeout, sizeof(timeout), "no answer within UNIO_PEER_TIMEOUT, %" PRIu64
			 " ms", ep->worker->ctx->config.peer_timeout_ns / 1000000);
		why = timeout;
	}
	snprintf(e->reason, sizeof(e->reason), "connect to %s: %s%s%s%s", e->peer,
		 unio_status_string(st), why[0] != '\0' ? " (" : "", why,
		 why[0] != '\0' ? ")" : "");
	if (ep->dial_quiet)
		API_LOG(INFO, "%s", e->reason);
	else if (!ep->dial_logged)
		API_LOG(WARNING, "%s", e->reason);
	return st;
}

static unio_status_t
ep_accept(struct unio_ep *ep, struct unio_conn_request *cr)
{
	unio_status_t st;

	ep->remote_id = cr->remote_ep_id;
	sa_name((const struct sockaddr *)&cr->peer, sizeof(cr->peer), ep->peer_name,
		sizeof(ep->peer_name));
	if (cr->tl_ep != NULL) {   /* the request came over a driver: its ep is the lane */
		struct wire_addr_hdr h;
		struct unio_tl_ep *tl_ep = cr->tl_ep;
		int n = addr_parse(cr->addr, cr->addr_len, &h);

		cr->tl_ep = NULL;
		if (n < 0) {
			conn_send(ep->worker, tl_ep, WIRE_REJECT, 0, cr->remote_ep_id, NULL, true);
			linger(ep->worker, tl_ep);
			conn_request_free(cr);
			return n;
		}
		ep->peer_uuid = h.uuid;
		tl_ep->user = ep;
		proto_lane_init(ep->worker, &ep->lane, tl_ep);
		conn_request_free(cr);
		ep->by_driver = true;
		return conn_send(ep->worker, tl_ep, WIRE_ACCEPT, ep->id, ep->remote_id, NULL, true);
	}
	st = ep_connect_lanes(ep, cr->addr, cr->addr_len);
	if (st == UNIO_ERR_UNREACHABLE) {   /* the client learns why, with our ifaces */
		send_own_address(ep, cr->fd, WIRE_REFUSED);
		conn_request_free(cr);
		return st;
	}
	if (st != UNIO_OK) {
		send_ctl(cr->fd, WIRE_REJECT, 0, NULL, 0);
		conn_request_free(cr);
		return st;
	}
	ep->ctl_fd = cr->fd;
	cr->fd = -1;
	conn_request_free(cr);
	return send_own_address(ep, ep->ctl_fd, WIRE_ACCEPT);
}

static unio_status_t
ep_params_check(const struct unio_ep_params *p)
{
	uint64_t how;

	if (p == NULL)
		return UNIO_ERR_INVALID_PARAM;
	how = p->field_mask & (UNIO_EP_PARAM_SOCKADDR | UNIO_EP_PARAM_CONN_REQUEST |
			       UNIO_EP_PARAM_WORKER_ADDR);
	if (how == 0 || (how & (how - 1)) != 0)
		return UNIO_ERR_INVALID_PARAM;
	if ((how & UNIO_EP_PARAM_CONN_REQUEST) && p->conn_request == NULL)
		return UNIO_ERR_INVALID_PARAM;
	if ((how & UNIO_EP_PARAM_WORKER_ADDR) && (p->worker_addr == NULL ||
						  p->worker_addr_len == 0))
		return UNIO_ERR_INVALID_PARAM;
	if ((p->field_mask & UNIO_EP_PARAM_ERR_INFO) && p->err_info == NULL)
		return UNIO_ERR_INVALID_PARAM;
	return UNIO_OK;
}

/* The caller's UNIO_EP_PARAM_ERR_INFO, when it asked for it: @p st and why (@p e). */
static void
ep_err_info(const struct unio_ep_params *p, unio_status_t st, struct unio_ep_error *e,
	    const char *detail)
{
	const char *what = "";

	if (p == NULL || !(p->field_mask & UNIO_EP_PARAM_ERR_INFO) || p->err_info == NULL)
		return;
	e->status = st;
	if (st != UNIO_OK && e->reason[0] == '\0') {
		if (p->field_mask & UNIO_EP_PARAM_CONN_REQUEST)
			what = "accept: ";
		else if (p->field_mask & UNIO_EP_PARAM_WORKER_ADDR)
			what = "worker address: ";
		snprintf(e->reason, sizeof(e->reason), "%s%s%s%s%s", what,
			 unio_status_string(st), detail[0] != '\0' ? " (" : "", detail,
			 detail[0] != '\0' ? ")" : "");
	}
	*p->err_info = *e;
}

unio_ep_t *
unio_ep_create(unio_worker_t *w, const struct unio_ep_params *p, unio_status_t *status)
{
	struct unio_ep_error e = { .status = UNIO_OK };
	char detail[UNIO_EP_REASON_MAX] = "";
	struct unio_ep *ep = NULL;
	unio_status_t st = w == NULL ? UNIO_ERR_INVALID_PARAM : ep_params_check(p);

	if (st != UNIO_OK)
		goto out;
	worker_lock(w);
	ep = ep_alloc(w);
	if (ep == NULL) {
		st = UNIO_ERR_NO_MEMORY;
		goto unlock;
	}
	ep->dial_quiet = (p->field_mask & UNIO_EP_PARAM_ERR_INFO) != 0;
	ep->dial_detail = detail;
	if (p->field_mask & UNIO_EP_PARAM_ERR_HANDLER) {
		ep->err_handler = p->err_handler;
		ep->err_arg = p->err_arg;
	}
	if (p->field_mask & UNIO_EP_PARAM_USER_DATA)
		ep->user_data = p->user_data;
	if (p->field_mask & UNIO_EP_PARAM_SOCKADDR)
		st = ep_connect_sockaddr(ep, p, &e);
	else if (p->field_mask & UNIO_EP_PARAM_CONN_REQUEST)
		st = ep_accept(ep, p->conn_request);
	else
		st = ep_connect_worker_addr(ep, p);
	ep->dial_quiet = false;   /* the buffer and the caller's wish end with this call */
	ep->dial_detail = NULL;
	if (st == UNIO_OK) {
		if (!(p->field_mask & UNIO_EP_PARAM_WORKER_ADDR))
			ep->state = EP_CONNECTED;
		worker_efd_watch(w, ep->ctl_fd);
	} else {
		ep_free(ep);
		ep = NULL;
	}
unlock:
	worker_unlock(w);
out:
	ep_err_info(p, st, &e, detail);
	if (status != NULL)
		*status = st;
	return ep;
}

static bool
ep_sends_outstanding(const struct unio_ep *ep)
{
	const struct unio_request *r;

	if (!TAILQ_EMPTY(&ep->pending) || proto_am_ep_queued(ep))
		return true;
	TAILQ_FOREACH(r, &ep->outstanding, ep_link)
		if (r->type == REQ_SEND)
			return true;
	return false;
}

/*
 * Flush and close-with-flush as requests.
 *
 * The request the caller gets (the parent, type REQ_FLUSH, on w->flushes by its link) waits
 * for one internal child request per endpoint.  A child sits on its endpoint's outstanding
 * list (ep_link), so an endpoint that fails completes it with the endpoint's error like any
 * send waiting for the peer; its callback (child_done) counts it off the parent.  A child
 * waits until no send of its endpoint is pending or outstanding, then flushes the lane.
 * The parent is completed only by wireup_flush_progress(), which also closes the endpoint of
 * a close-with-flush: never from inside a driver's callback.
 *
 * Fields reused: parent: ep (NULL for a worker flush), info.length (children left), sync
 * (close the ep when done), status (first error while active); child: user_data (parent),
 * proto (FLUSH_WAIT_SENDS / FLUSH_WAIT_LANE).
 */
enum { FLUSH_WAIT_SENDS = 0, FLUSH_WAIT_LANE = 1 };

/* the lane's flush completion; allocated apart, since a driver may call it after the child
 * completed another way (its ep failed) and went back to the pool */
struct flush_lane {
	struct unio_tl_completion comp;
	struct unio_request *child;
	uint32_t gen;
};

static void
child_complete(struct unio_request *c, unio_status_t st)
{
	if (c->on_ep) {
		TAILQ_REMOVE(&c->ep->outstanding, c, ep_link);
		c->on_ep = false;
	}
	proto_req_complete(c, st);
}

static void
child_done(unio_request_t *c, unio_status_t st, const struct unio_recv_info *info, void *arg)
{
	struct unio_request *p = arg;

	RTE_SET_USED(info);
	if (st != UNIO_OK && p->status == UNIO_INPROGRESS)
		p->status = st;
	p->info.length--;
	proto_req_put(c);
}

static void
flush_lane_done(struct unio_tl_completion *comp)
{
	struct flush_lane *fl = (struct flush_lane *)comp;
	struct unio_request *c = fl->child;

	if (c->gen == fl->gen && c->state == REQ_ACTIVE && c->proto == FLUSH_WAIT_LANE)
		child_complete(c, comp->status);
	free(fl);
}

/* Move child @p c on: flush the lane once its endpoint has nothing outstanding. */
static unsigned int
child_step(struct unio_request *c)
{
	struct unio_ep *ep = c->ep;
	struct flush_lane *fl;
	unio_status_t st;

	if (c->proto != FLUSH_WAIT_SENDS || ep->state == EP_CONNECTING || ep_sends_outstanding(ep))
		return 0;
	if (ep->state != EP_CONNECTED) {
		child_complete(c, UNIO_ERR_NOT_CONNECTED);
		return 1;
	}
	if (ep->remote_closed) {   /* the peer is gone in order: nothing to flush toward it */
		child_complete(c, UNIO_OK);
		return 1;
	}
	fl = malloc(sizeof(*fl));
	if (fl == NULL)
		return 0;   /* try again at the next progress */
	*fl = (struct flush_lane){ .comp = { .func = flush_lane_done, .count = 1 }, .child = c,
				   .gen = c->gen };
	st = unio_tl_ep_flush(ep->lane.tl_ep, &fl->comp);
	if (st == UNIO_INPROGRESS) {
		c->proto = FLUSH_WAIT_LANE;
		return 0;
	}
	free(fl);
	if (st == UNIO_ERR_NO_RESOURCE)
		return 0;   /* the driver is busy: again at the next progress */
	child_complete(c, st);
	return 1;
}

static unio_status_t
child_add(struct unio_request *p, struct unio_ep *ep)
{
	struct unio_request *c = proto_req_get(ep->worker);

	if (c == NULL)
		return UNIO_ERR_NO_MEMORY;
	c->type = REQ_FLUSH;
	c->ep = ep;
	c->proto = FLUSH_WAIT_SENDS;
	c->user_owned = true;
	c->cb = child_done;
	c->user_data = p;
	c->on_ep = true;
	TAILQ_INSERT_TAIL(&ep->outstanding, c, ep_link);
	p->info.length++;
	child_step(c);
	return UNIO_OK;
}

/* Close @p ep after its flush: CLOSE to the peer when the flush went well, then release. */
static void
ep_close_now(struct unio_ep *ep, bool tell_peer)
{
	if (ep->state == EP_CLOSED)
		return;   /* closed meanwhile (force, or the worker went away) */
	if (tell_peer && ep->ctl_fd >= 0 && ep->state == EP_CONNECTED)
		send_ctl(ep->ctl_fd, WIRE_CLOSE, ep->id, NULL, 0);
	/* over a driver: CLOSE on the lane, if it has room now (it was just flushed) */
	if (tell_peer && ep->by_driver && ep->state == EP_CONNECTED && !ep->remote_closed)
		ep->linger_lane = conn_send(ep->worker, ep->lane.tl_ep, WIRE_CLOSE, ep->id,
					    ep->remote_id, NULL, false) == UNIO_OK;
	if (ep->state == EP_CONNECTED || ep->state == EP_CONNECTING)
		proto_ep_fail_requests(ep, UNIO_ERR_CANCELED);
	ep->state = EP_CLOSED;
	ep_free(ep);
}

/* The parent's children are all done: close if asked, then complete it. */
static void
parent_finish(struct unio_request *p)
{
	unio_status_t st = p->status == UNIO_INPROGRESS ? UNIO_OK : p->status;

	TAILQ_REMOVE(&p->worker->flushes, p, link);
	if (p->sync)
		ep_close_now(p->ep, st == UNIO_OK);
	proto_req_complete(p, st);
}

unsigned int
wireup_flush_progress(struct unio_worker *w)
{
	struct unio_request *p, *c, *cn;
	unsigned int n = 0;

	for (uint32_t i = 0; i < w->n_eps; i++) {
		struct unio_ep *ep = w->eps[i];

		if (ep == NULL)
			continue;
		for (c = TAILQ_FIRST(&ep->outstanding); c != NULL; c = cn) {
			cn = TAILQ_NEXT(c, ep_link);   /* c may complete */
			if (c->type == REQ_FLUSH)
				n += child_step(c);
		}
	}
	for (;;) {
		TAILQ_FOREACH(p, &w->flushes, link)
			if (p->info.length == 0)
				break;
		if (p == NULL)
			break;
		parent_finish(p);   /* its callback may re-enter progress: look again */
		n++;
	}
	return n;
}

/*
 * Start a flush of @p ep (NULL: every endpoint of @p w), closing @p ep afterwards when
 * @p close.  Hands out the request like any operation; a NULL @p req_p waits for it, bounded
 * by UNIO_PEER_TIMEOUT (UNIO_ERR_TIMED_OUT; a close then closes at once).
 */
static unio_status_t
flush_start(struct unio_worker *w, struct unio_ep *ep, bool close,
	    const struct unio_request_param *param, unio_request_t **req_p)
{
	struct unio_request *p = proto_req_get(w);
	unio_status_t st = UNIO_OK;
	uint64_t deadline;

	if (p == NULL)
		return UNIO_ERR_NO_MEMORY;
	p->type = REQ_FLUSH;
	p->ep = ep;
	p->sync = close;
	TAILQ_INSERT_TAIL(&w->flushes, p, link);
	if (ep != NULL) {
		st = child_add(p, ep);
	} else {
		for (uint32_t i = 0; i < w->n_eps && st == UNIO_OK; i++) {
			struct unio_ep *e = w->eps[i];

			if (e != NULL && (e->state == EP_CONNECTED || e->state == EP_CONNECTING))
				st = child_add(p, e);
		}
	}
	if (st != UNIO_OK && p->status == UNIO_INPROGRESS)
		p->status = st;   /* the children started still complete; the parent fails */
	if (p->info.length == 0)
		parent_finish(p);
	if (req_p != NULL || p->state == REQ_DONE)
		return proto_req_hand_out(p, param, req_p);
	/* no request wanted: wait here */
	deadline = deadline_of(w);
	while (p->state != REQ_DONE && now_ns() < deadline)
		unio_worker_progress(w);
	if (p->state == REQ_DONE)
		return proto_req_hand_out(p, param, NULL);
	API_LOG(WARNING, "%s: not done within UNIO_PEER_TIMEOUT", close ? "ep close" : "flush");
	if (close) {   /* close now: what still waits fails with UNIO_ERR_CANCELED */
		p->sync = false;
		ep_close_now(ep, false);
		if (p->info.length == 0)
			parent_finish(p);
	}
	if (p->state == REQ_DONE) {
		proto_req_put(p);
	} else {   /* let it finish on its own */
		p->user_owned = true;
		p->user_freed = true;
	}
	return UNIO_ERR_TIMED_OUT;
}

unio_status_t
unio_ep_close(unio_ep_t *ep, enum unio_ep_close_mode mode, unio_request_t **req_p)
{
	struct unio_worker *w;
	unio_status_t st = UNIO_OK;

	if (ep == NULL || (mode != UNIO_EP_CLOSE_FLUSH && mode != UNIO_EP_CLOSE_FORCE))
		return UNIO_ERR_INVALID_PARAM;
	w = ep->worker;
	worker_lock(w);
	if (ep->state == EP_CLOSED)
		st = UNIO_ERR_NOT_CONNECTED;
	else if (mode == UNIO_EP_CLOSE_FLUSH && (ep->state == EP_CONNECTED ||
						 ep->state == EP_CONNECTING))
		st = flush_start(w, ep, true, NULL, req_p);
	else
		ep_close_now(ep, false);
	worker_unlock(w);
	return st;
}

unio_status_t
unio_ep_flush(unio_ep_t *ep, const struct unio_request_param *param, unio_request_t **req_p)
{
	unio_status_t st;

	if (ep == NULL || proto_req_param_bad(param))
		return UNIO_ERR_INVALID_PARAM;
	worker_lock(ep->worker);
	st = ep->state == EP_CONNECTED || ep->state == EP_CONNECTING ?
	     flush_start(ep->worker, ep, false, param, req_p) : UNIO_ERR_NOT_CONNECTED;
	worker_unlock(ep->worker);
	return st;
}

unio_status_t
unio_worker_flush(unio_worker_t *w, const struct unio_request_param *param,
		  unio_request_t **req_p)
{
	unio_status_t st;

	if (w == NULL || proto_req_param_bad(param))
		return UNIO_ERR_INVALID_PARAM;
	worker_lock(w);
	st = flush_start(w, NULL, false, param, req_p);
	worker_unlock(w);
	return st;
}

unio_status_t
unio_ep_query(unio_ep_t *ep, struct unio_ep_attr *attr)
{
	struct unio_ep_error *e;
	const struct unio_tl_iface *ifc;
	char lane[64] = "";

	if (ep == NULL || attr == NULL || (attr->field_mask & ~UNIO_EP_ATTR_FIELD_ERROR) != 0)
		return UNIO_ERR_INVALID_PARAM;
	if (!(attr->field_mask & UNIO_EP_ATTR_FIELD_ERROR))
		return UNIO_OK;
	e = &attr->error;
	worker_lock(ep->worker);
	ifc = ep->lane.iface;
	if (ep->fail_why == NULL && ifc != NULL)
		snprintf(lane, sizeof(lane), "its transport %s/%s failed", ifc->driver->name,
			 ifc->dev_name);
	e->status = ep->fail_status;
	e->sys_errno = 0;
	snprintf(e->peer, sizeof(e->peer), "%s", ep->peer_name);
	if (ep->fail_status == UNIO_OK)
		e->reason[0] = '\0';
	else
		snprintf(e->reason, sizeof(e->reason), "ep to %s: %s (%s)",
			 ep->peer_name[0] != '\0' ? ep->peer_name : "?",
			 unio_status_string(ep->fail_status),
			 ep->fail_why != NULL ? ep->fail_why :
			 lane[0] != '\0' ? lane : "its transport failed");
	worker_unlock(ep->worker);
	return UNIO_OK;
}

void *
unio_ep_get_user_data(const unio_ep_t *ep)
{
	return ep != NULL ? ep->user_data : NULL;
}

void
unio_ep_print_info(const unio_ep_t *ep, FILE *stream)
{
	const struct proto_lane *l;

	if (ep == NULL || stream == NULL)
		return;
	l = &ep->lane;
	fprintf(stream, "# ep %#x -> peer ep %#x, lane %s/%s\n", ep->id, ep->remote_id,
		l->iface->driver->name, l->iface->dev_name);
	fprintf(stream, "#   short <= %zu, eager <= %zu, fragment %zu, rndv >= %zu (%s)\n",
		l->short_ok ? l->max_short : 0, l->max_eager, l->frag, l->rndv_thresh,
		l->rndv_adapt ? "get or pipeline by measure" :
		l->rndv_scheme == UNIO_RNDV_SCHEME_GET ? "get" : "pipeline");
	proto_rndv_print(ep, stream);
	if (l->zcopy_thresh <= l->max_zcopy)
		fprintf(stream, "#   eager zcopy %zu .. %zu (%" PRIu64 " sent)\n", l->zcopy_thresh,
			l->max_zcopy, l->n_zcopy);
	else
		fprintf(stream, "#   eager zcopy off (%" PRIu64 " sent)\n", l->n_zcopy);
}

void
wireup_worker_fini(struct unio_worker *w)
{
	struct unio_listener *l;
	struct unio_ep *ep;

	while ((l = TAILQ_FIRST(&w->listeners)) != NULL)
		unio_listener_destroy(l);
	while (w->hellos != NULL) {
		struct wireup_hello *q = w->hellos;

		w->hellos = q->next;
		free(q);
	}
	w->n_hellos = 0;
	lingers_progress(w, true);
	for (uint32_t i = 0; i < w->n_eps; i++)
		if (w->eps[i] != NULL)
			unio_ep_close(w->eps[i], UNIO_EP_CLOSE_FORCE, NULL);
	while ((ep = w->closed_eps) != NULL) {
		w->closed_eps = ep->closed_next;
		free(ep);
	}
}

/* ---- endpoints from a worker address: a wireup exchange over the lane itself ---- */

struct wire_am_req {
	uint32_t src_ep_id;    /**< the requester's ep */
	uint32_t addr_len;     /**< requester's worker address follows */
	uint64_t cookie;       /**< the reply repeats it: wireup_cookie() */
};

struct wire_am_rep {
	uint32_t dst_ep_id;    /**< the requester's ep */
	uint32_t src_ep_id;    /**< the replier's ep, to put in headers */
	uint64_t cookie;       /**< the request's */
};

/*
 * The secret a wireup request carries and its reply repeats: the ep id sealed with the
 * worker's key (a slot of generation 0, which no request has), so that only the peer the
 * request went to can answer it.  The reply binds the ep to the connection it came on.
 */
static uint64_t
wireup_cookie(const struct unio_ep *ep)
{
	return proto_id_seal(ep->worker->id_key, ep->id);
}

struct am_pack {
	const void *hdr;
	size_t hdr_len;
	struct unio_worker *w;
};

static size_t
pack_wireup(void *dest, void *arg)
{
	struct am_pack *a = arg;
	size_t n = a->hdr_len;

	memcpy(dest, a->hdr, a->hdr_len);
	if (a->w != NULL)
		n += worker_address_pack(a->w, (uint8_t *)dest + a->hdr_len, WIRE_ADDR_MAX);
	return n;
}

/*
 * Send the wireup request or reply @p id of @p ep, built from the ep.  A full lane does not
 * wait here: the reply is sent from a transport's AM handler and the request may be sent
 * from a callback, where progressing the ifaces again would deliver the message being
 * handled a second time.  The message is owed instead, and wireup_progress() sends it.
 */
static void
wireup_owed_clear(struct unio_ep *ep)
{
	if (ep->wireup_owed != 0) {
		ep->wireup_owed = 0;
		ep->worker->n_wireup_owed--;
	}
}

static unio_status_t
wireup_send(struct unio_ep *ep, uint8_t id)
{
	struct unio_worker *w = ep->worker;
	struct wire_am_req req = { .src_ep_id = ep->id, .cookie = wireup_cookie(ep) };
	struct wire_am_rep rep = { .dst_ep_id = ep->remote_id, .src_ep_id = ep->id,
				   .cookie = ep->wireup_cookie };
	struct am_pack a = { &rep, sizeof(rep), NULL };
	ssize_t r;

	if (id == PROTO_AM_WIREUP_REQ) {
		req.addr_len = (uint32_t)worker_address_pack(w, NULL, 0);
		a = (struct am_pack){ &req, sizeof(req), w };
	}
	r = unio_tl_ep_am_bcopy(ep->lane.tl_ep, id, pack_wireup, &a, 0);
	if (r == UNIO_ERR_NO_RESOURCE) {
		if (ep->wireup_owed == 0) {
			ep->connect_deadline = deadline_of(w);
			w->n_wireup_owed++;   /* the worker must not sleep on it */
		}
		ep->wireup_owed = id;
		return UNIO_OK;
	}
	wireup_owed_clear(ep);
	return r >= 0 ? UNIO_OK : (unio_status_t)r;
}

/* Resend what wireup_send() owes; a lane full past the wireup timeout fails the ep. */
static unsigned int
wireup_owed_progress(struct unio_ep *ep)
{
	unio_status_t st;

	if (ep->state != EP_CONNECTING && ep->state != EP_CONNECTED) {
		wireup_owed_clear(ep);
		return 0;
	}
	st = wireup_send(ep, ep->wireup_owed);
	if (st == UNIO_OK && ep->wireup_owed != 0 && now_ns() > ep->connect_deadline) {
		API_LOG(ERR, "ep %#x: the lane stayed full for the wireup %s", ep->id,
			ep->wireup_owed == PROTO_AM_WIREUP_REQ ? "request" : "reply");
		ep->fail_why = "the lane stayed full for the wireup";
		st = UNIO_ERR_TIMED_OUT;
	}
	if (st != UNIO_OK)
		wireup_ep_fail(ep, st, true);
	return ep->wireup_owed == 0;
}

static unio_status_t
am_wireup_req(void *arg, const void *data, size_t length, unsigned int flags,
	      unio_tl_conn_id_t conn_id)
{
	struct unio_worker *w = arg;
	struct wire_am_req h;
	struct unio_ep *ep;

	RTE_SET_USED(flags);
	if (length < sizeof(h))
		goto bad;
	memcpy(&h, data, sizeof(h));
	if (h.addr_len != length - sizeof(h))
		goto bad;
	ep = ep_alloc(w);
	if (ep == NULL)
		return UNIO_OK;
	ep->remote_id = h.src_ep_id;
	ep->wireup_cookie = h.cookie;
	if (ep_connect_lanes(ep, (const uint8_t *)data + sizeof(h), h.addr_len) != UNIO_OK) {
		ep_free(ep);
		return UNIO_OK;
	}
	/* the sender's lane, on which all of its frames come: maybe not the one chosen here */
	ep->lane.rx_conn_id = conn_id;
	ep->state = EP_CONNECTED;
	if (wireup_send(ep, PROTO_AM_WIREUP_REP) != UNIO_OK)
		API_LOG(ERR, "wireup reply to ep %#x failed", h.src_ep_id);
	return UNIO_OK;
bad:
	API_LOG(ERR, "wireup request: malformed (%zu bytes)", length);
	w->n_dropped++;
	return UNIO_OK;
}

static unio_status_t
am_wireup_rep(void *arg, const void *data, size_t length, unsigned int flags,
	      unio_tl_conn_id_t conn_id)
{
	struct unio_worker *w = arg;
	struct wire_am_rep h;
	struct unio_ep *ep;

	RTE_SET_USED(flags);
	if (length != sizeof(h))
		goto bad;
	memcpy(&h, data, sizeof(h));
	if ((h.dst_ep_id & 0xffff) >= w->n_eps)
		goto bad;
	ep = w->eps[h.dst_ep_id & 0xffff];
	if (ep == NULL || ep->id != h.dst_ep_id || ep->state != EP_CONNECTING ||
	    h.cookie != wireup_cookie(ep))
		goto bad;
	ep->lane.rx_conn_id = conn_id;   /* the peer's lane (see am_wireup_req()) */
	ep->remote_id = h.src_ep_id;
	ep->state = EP_CONNECTED;
	if (!TAILQ_EMPTY(&ep->pending))
		proto_progress_pending(w);
	return UNIO_OK;
bad:
	API_LOG(ERR, "wireup reply: malformed, for an unknown ep or without its request's "
		"cookie (%zu bytes)", length);
	w->n_dropped++;
	return UNIO_OK;
}

/* ---- connections by socket address over a driver's own channel ---- */

static void
linger_done(struct unio_tl_completion *comp)
{
	((struct wireup_linger *)comp)->done = true;
}

static void
linger(struct unio_worker *w, struct unio_tl_ep *tl_ep)
{
	struct wireup_linger *g = calloc(1, sizeof(*g));

	if (g == NULL) {
		unio_tl_ep_destroy(tl_ep);
		return;
	}
	g->comp = (struct unio_tl_completion){ .func = linger_done, .count = 1 };
	g->tl_ep = tl_ep;
	g->deadline = deadline_of(w);
	if (unio_tl_ep_flush(tl_ep, &g->comp) != UNIO_INPROGRESS)
		g->done = true;
	g->next = w->lingers;
	w->lingers = g;
}

/* Destroy the lingering eps whose refusal was acked or timed out (@p all: every one). */
static void
lingers_progress(struct unio_worker *w, bool all)
{
	struct wireup_linger **pp = &w->lingers, *g;
	uint64_t now = now_ns();

	while ((g = *pp) != NULL) {
		if (!all && !g->done && now < g->deadline) {
			pp = &g->next;
			continue;
		}
		*pp = g->next;
		unio_tl_ep_destroy(g->tl_ep);   /* may complete the flush: g is still here */
		free(g);
	}
}

struct conn_pack {
	struct wire_conn h;
	const uint8_t *iface_addr;
	struct unio_worker *w;      /* append the worker address when non-NULL */
};

static size_t
pack_conn(void *dest, void *arg)
{
	struct conn_pack *a = arg;
	uint8_t *p = dest;
	size_t n = sizeof(a->h);

	memcpy(p, &a->h, sizeof(a->h));
	memcpy(p + n, a->iface_addr, a->h.iface_addr_len);
	n += a->h.iface_addr_len;
	if (a->w != NULL)
		n += worker_address_pack(a->w, p + n, a->h.ctl.addr_len);
	return n;
}

/*
 * Send a control message of @p type on @p tl_ep: a HELLO carries the socket addresses
 * (@p dst dialled, the iface's own) and the iface's address; HELLO and ACCEPT carry the
 * worker address.  Waits for room up to UNIO_PEER_TIMEOUT, progressing the ifaces.
 */
static unio_status_t
conn_send_why(struct unio_worker *w, struct unio_tl_ep *tl_ep, uint16_t type, uint16_t reason,
	      uint32_t ep_id, uint32_t dst_ep_id, const struct wire_sockaddr *dst, bool wait)
{
	struct unio_tl_iface *ifc = tl_ep->iface;
	uint8_t ia[UNIO_TL_ADDR_MAX];
	struct conn_pack a = {
		.h = { .ctl = { .magic = UNIO_WIRE_MAGIC, .version = proto_wire_version(),
				.type = type, .ep_id = ep_id },
		       .dst_ep_id = dst_ep_id, .reason = reason },
		.iface_addr = ia,
	};
	uint64_t deadline = deadline_of(w);

	if (type == WIRE_HELLO) {
		struct sockaddr_storage own;

		if (unio_tl_iface_get_address(ifc, ia) != UNIO_OK ||
		    unio_tl_iface_get_sockaddr(ifc, &own) != UNIO_OK)
			return UNIO_ERR_UNSUPPORTED;
		a.h.iface_addr_len = (uint16_t)ifc->attr.iface_addr_len;
		a.h.dst = *dst;
		sa_to_wire((const struct sockaddr *)&own, sizeof(own), &a.h.src);
	}
	if (type == WIRE_HELLO || type == WIRE_ACCEPT) {
		a.w = w;
		a.h.ctl.addr_len = (uint32_t)worker_address_pack(w, NULL, 0);
	}
	if (sizeof(a.h) + a.h.iface_addr_len + a.h.ctl.addr_len > ifc->attr.max_bcopy)
		return UNIO_ERR_UNSUPPORTED;
	for (;;) {
		ssize_t r = unio_tl_ep_am_bcopy(tl_ep, PROTO_AM_CONN, pack_conn, &a, 0);

		if (r >= 0)
			return UNIO_OK;
		if (r != UNIO_ERR_NO_RESOURCE || !wait || now_ns() >= deadline ||
		    !ifaces_progress(w))
			return (unio_status_t)r;
	}
}

static unio_status_t
conn_send(struct unio_worker *w, struct unio_tl_ep *tl_ep, uint16_t type, uint32_t ep_id,
	  uint32_t dst_ep_id, const struct wire_sockaddr *dst, bool wait)
{
	return conn_send_why(w, tl_ep, type, 0, ep_id, dst_ep_id, dst, wait);
}

/*
 * Answer a HELLO with @p type (REJECT, VERSION, REFUSED for @p reason); the ep goes once it
 * was acked.
 */
static void
conn_refuse(struct unio_worker *w, struct unio_tl_ep *tl_ep, uint16_t type, uint16_t reason,
	    uint32_t dst_ep_id)
{
	if (conn_send_why(w, tl_ep, type, reason, 0, dst_ep_id, NULL, true) != UNIO_OK)
		API_LOG(WARNING, "could not answer a connection request (type %u)", type);
	linger(w, tl_ep);
}

/*
 * A HELLO that came over a driver: the ep it answers on (to the sender's iface address,
 * which the driver attaches to the connection the HELLO came on), then the version check,
 * the listener, and its handler.
 */
/*
 * A HELLO from a peer this worker is dialling at the same time over the same iface (the
 * driver made the two dials one connection, so no ep for the HELLO could be made): a
 * simultaneous open.  Each side takes the other's HELLO as the answer to its own dial and
 * acknowledges it with an ACCEPT from its dialling ep, so both unio_ep_create() calls return
 * the one connection (no listener handler runs).  A HELLO that crosses a dial completed
 * that way already (the peer's ACCEPT came first) needs nothing.  True when @p h was one.
 */
static bool
hello_crossing(struct unio_worker *w, struct unio_tl_iface *ifc, const struct wire_conn *h,
	       const uint8_t *addr, unio_tl_conn_id_t conn_id)
{
	struct wire_addr_hdr ah;

	for (unsigned int i = 0; i < w->n_eps; i++) {
		struct unio_ep *d = w->eps[i];

		/* the HELLO came on the connection the dial made (src is the sender's word) */
		if (d == NULL || d->lane.tl_ep == NULL || d->lane.iface != ifc ||
		    memcmp(d->dial_dst, &h->src, sizeof(h->src)) != 0 ||
		    !proto_ep_sent(d, conn_id))
			continue;
		if (d->state == EP_CONNECTED && d->remote_id == h->ctl.ep_id)
			return true;   /* joined already, from the peer's side */
		if (d->state != EP_CONNECTING || d->conn_status != UNIO_INPROGRESS)
			continue;
		d->conn_answered = true;
		if (h->ctl.version != UNIO_WIRE_VERSION) {
			d->conn_status = UNIO_ERR_VERSION_MISMATCH;
			return true;
		}
		if (addr_parse(addr, h->ctl.addr_len, &ah) < 0)
			return false;
		d->remote_id = h->ctl.ep_id;
		d->peer_uuid = ah.uuid;
		d->conn_status = conn_send(w, d->lane.tl_ep, WIRE_ACCEPT, d->id, d->remote_id,
					   NULL, true);
		if (d->conn_status == UNIO_OK)
			d->state = EP_CONNECTED;
		API_LOG(INFO, "ep %#x: the peer dialled us at the same time: one connection (%s)",
			d->id, unio_status_string(d->conn_status));
		return true;
	}
	return false;
}

/* Count a connection request refused for @p why on the iface it came on. */
static void
hello_count(struct wireup_hello *q, enum unio_tl_conn_refusal why)
{
	q->ifc->conn_refused[why]++;
}

/*
 * Answer a HELLO that cannot be served with REFUSED for @p reason, on an ep to its sender
 * from @p ifc: the connection it came on, or another handle on it when the protocol layer
 * owns that one already.  Counted as @p why, or as unanswered when no ep can be made.
 */
static void
hello_refuse(struct unio_worker *w, struct wireup_hello *q, struct unio_tl_iface *ifc,
	     uint16_t reason, enum unio_tl_conn_refusal why)
{
	struct wire_conn h;
	struct unio_tl_ep_params tp;
	struct unio_tl_ep *tl_ep;
	unio_status_t st;

	memcpy(&h, q->data, sizeof(h));
	tp = (struct unio_tl_ep_params){ .iface_addr = q->data + sizeof(h),
					 .iface_addr_len = h.iface_addr_len };
	st = h.iface_addr_len == ifc->attr.iface_addr_len ?
	     unio_tl_ep_create(ifc, &tp, &tl_ep) : UNIO_ERR_INVALID_ADDR;
	if (st == UNIO_ERR_EXISTS) {
		tp.flags = UNIO_TL_EP_FLAG_SHARE;
		st = unio_tl_ep_create(ifc, &tp, &tl_ep);
	}
	if (st != UNIO_OK) {
		API_LOG(ERR, "connection request (refusal %u): no ep to its sender: %s, dropped",
			reason, unio_status_string(st));
		hello_count(q, UNIO_TL_CONN_UNANSWERED);
		return;
	}
	API_LOG(INFO, "connection request refused (reason %u)", reason);
	hello_count(q, why);
	conn_refuse(w, tl_ep, WIRE_REFUSED, reason, h.ctl.ep_id);
}

static void
hello_serve(struct unio_worker *w, struct wireup_hello *q)
{
	struct unio_conn_request *cr = NULL;
	struct unio_tl_ep_params tp;
	struct sockaddr_storage own;
	struct unio_tl_iface *ifc;
	struct unio_listener *l;
	struct unio_tl_ep *tl_ep;
	struct wire_conn h;
	unio_status_t st;

	memcpy(&h, q->data, sizeof(h));
	ifc = h.dst.port != 0 ? sockaddr_iface(w, &h.dst, &own) : NULL;
	if (ifc == NULL || h.iface_addr_len != ifc->attr.iface_addr_len) {
		API_LOG(ERR, "connection request for an address no iface of this worker has");
		hello_refuse(w, q, q->ifc, WIRE_REFUSED_NO_IFACE, UNIO_TL_CONN_NO_IFACE);
		goto out;
	}
	tp = (struct unio_tl_ep_params){ .iface_addr = q->data + sizeof(h),
					 .iface_addr_len = h.iface_addr_len };
	st = unio_tl_ep_create(ifc, &tp, &tl_ep);
	if (st == UNIO_ERR_EXISTS && h.ctl.addr_len == q->len - sizeof(h) - h.iface_addr_len &&
	    hello_crossing(w, ifc, &h, q->data + sizeof(h) + h.iface_addr_len, q->conn_id))
		goto out;
	if (st != UNIO_OK) {
		API_LOG(ERR, "connection request: no ep to its sender: %s",
			unio_status_string(st));
		hello_refuse(w, q, ifc, WIRE_REFUSED_NO_EP, UNIO_TL_CONN_NO_EP);
		goto out;
	}
	/* the iface address it names is the sender's own: the answer goes where it came from */
	if (tl_ep->conn_id != q->conn_id) {
		API_LOG(ERR, "connection request naming another peer's iface: dropped");
		unio_tl_ep_destroy(tl_ep);
		w->n_dropped++;
		goto out;
	}
	if (q->busy) {
		API_LOG(WARNING, "connection request refused: more than %" PRId64 " waited",
			w->ctx->config.conn_backlog);
		hello_count(q, UNIO_TL_CONN_BUSY);
		conn_refuse(w, tl_ep, WIRE_REFUSED, WIRE_REFUSED_BUSY, h.ctl.ep_id);
		goto out;
	}
	if (h.ctl.version != UNIO_WIRE_VERSION) {
		API_LOG(ERR, "refused a peer of wire version %u (ours is %u)", h.ctl.version,
			UNIO_WIRE_VERSION);
		conn_refuse(w, tl_ep, WIRE_VERSION, 0, h.ctl.ep_id);
		goto out;
	}
	TAILQ_FOREACH(l, &w->listeners, link)
		if (l->iface == ifc)
			break;
	if (l != NULL && h.ctl.addr_len == q->len - sizeof(h) - h.iface_addr_len)
		cr = calloc(1, sizeof(*cr));
	if (cr != NULL && h.ctl.addr_len != 0)
		cr->addr = malloc(h.ctl.addr_len);
	if (cr == NULL || cr->addr == NULL) {
		if (l != NULL)
			API_LOG(ERR, "connection request: malformed or no memory: refused");
		conn_refuse(w, tl_ep, l == NULL ? WIRE_REFUSED : WIRE_REJECT,
			    WIRE_REFUSED_NO_LISTENER, h.ctl.ep_id);
		if (cr != NULL)
			free(cr);
		goto out;
	}
	memcpy(cr->addr, q->data + sizeof(h) + h.iface_addr_len, h.ctl.addr_len);
	cr->listener = l;
	cr->fd = -1;
	cr->tl_ep = tl_ep;
	sa_from_wire(&h.src, &cr->peer);
	cr->remote_ep_id = h.ctl.ep_id;
	cr->addr_len = h.ctl.addr_len;
	l->handler(cr, l->arg);
out:
	free(q);
}

static unsigned int
hellos_progress(struct unio_worker *w)
{
	unsigned int n = 0;
	struct wireup_hello *q;

	while ((q = w->hellos) != NULL) {   /* taken off first: a handler may progress */
		w->hellos = q->next;
		w->n_hellos--;
		hello_serve(w, q);
		n++;
	}
	return n;
}

/* The answer to a HELLO of ours: the ep waiting in ep_connect_driver() takes it. */
static void
conn_answer(struct unio_worker *w, const struct wire_conn *h, const uint8_t *data,
	    size_t length, unio_tl_conn_id_t conn_id)
{
	const uint8_t *addr = data + sizeof(*h) + h->iface_addr_len;
	struct wire_addr_hdr ah;
	struct unio_ep *ep;

	if ((h->dst_ep_id & 0xffff) >= w->n_eps)
		goto bad;
	ep = w->eps[h->dst_ep_id & 0xffff];
	if (ep != NULL && ep->id == h->dst_ep_id && ep->state == EP_CONNECTED &&
	    h->ctl.type == WIRE_ACCEPT && ep->remote_id == h->ctl.ep_id)
		return;   /* a simultaneous open: the peer's HELLO connected us already */
	if (ep == NULL || ep->id != h->dst_ep_id || ep->state != EP_CONNECTING ||
	    ep->conn_status != UNIO_INPROGRESS || ep->lane.tl_ep == NULL ||
	    !proto_ep_sent(ep, conn_id))
		goto bad;
	ep->conn_answered = true;   /* a Unio worker serves that address: no kernel fallback */
	switch (h->ctl.type) {
	case WIRE_ACCEPT:
		if (h->ctl.version != UNIO_WIRE_VERSION) {
			ep->conn_status = UNIO_ERR_VERSION_MISMATCH;
			return;
		}
		if (h->ctl.addr_len != length - sizeof(*h) - h->iface_addr_len ||
		    addr_parse(addr, h->ctl.addr_len, &ah) < 0)
			goto bad;
		ep->remote_id = h->ctl.ep_id;
		ep->peer_uuid = ah.uuid;
		ep->conn_status = UNIO_OK;
		ep->state = EP_CONNECTED;   /* what the server sends next may be in this burst */
		return;
	case WIRE_REJECT:
		ep->conn_status = UNIO_ERR_REJECTED;
		return;
	case WIRE_VERSION:
		ep->conn_status = UNIO_ERR_VERSION_MISMATCH;
		return;
	case WIRE_REFUSED:
		/* no listener: like a refused connect; busy or no ep: the server's resources */
		ep->conn_status = h->reason == WIRE_REFUSED_BUSY ||
				  h->reason == WIRE_REFUSED_NO_EP ?
				  UNIO_ERR_NO_RESOURCE : UNIO_ERR_UNREACHABLE;
		ep->dial_refused = h->reason == WIRE_REFUSED_NO_LISTENER;
		ep->dial_why = h->reason == WIRE_REFUSED_NO_LISTENER ? "no listener there" :
			       h->reason == WIRE_REFUSED_BUSY ? "too many requests waiting" :
			       h->reason == WIRE_REFUSED_NO_IFACE ? "no iface has that address" :
			       "no endpoint to us possible";
		return;
	default:
		break;
	}
bad:
	API_LOG(ERR, "connection answer %u: malformed or for an unknown ep %#x (%zu bytes)",
		h->ctl.type, h->dst_ep_id, length);
	w->n_dropped++;
}

/*
 * The peer closed an endpoint made over a driver, after its flush: what it sent is in our
 * rx path already; requests still waiting for it fail after a grace period, as for CLOSE on
 * a control connection.
 */
static void
conn_close(struct unio_worker *w, const struct wire_conn *h, unio_tl_conn_id_t conn_id)
{
	struct unio_ep *ep = (h->dst_ep_id & 0xffff) < w->n_eps ?
			     w->eps[h->dst_ep_id & 0xffff] : NULL;

	if (ep == NULL || ep->id != h->dst_ep_id || ep->state != EP_CONNECTED ||
	    !ep->by_driver || ep->remote_id != h->ctl.ep_id || !proto_ep_sent(ep, conn_id)) {
		API_LOG(ERR, "CLOSE for an unknown ep %#x", h->dst_ep_id);
		w->n_dropped++;
		return;
	}
	ep->remote_closed = true;
	ep->close_deadline = now_ns() + CLOSE_GRACE_NS;
}

/* @p arg: the iface it came on, whose err_arg is its worker. */
static unio_status_t
am_conn(void *arg, const void *data, size_t length, unsigned int flags,
	unio_tl_conn_id_t conn_id)
{
	struct unio_tl_iface *ifc = arg;
	struct unio_worker *w = ifc->err_arg;
	unsigned int backlog = (unsigned int)w->ctx->config.conn_backlog;
	struct wireup_hello *q;
	struct wire_conn h;

	RTE_SET_USED(flags);
	if (length < sizeof(h))
		goto bad;
	memcpy(&h, data, sizeof(h));
	if (h.ctl.magic != UNIO_WIRE_MAGIC || h.iface_addr_len > UNIO_TL_ADDR_MAX ||
	    length - sizeof(h) < h.iface_addr_len)
		goto bad;
	if (h.ctl.type == WIRE_CLOSE) {
		conn_close(w, &h, conn_id);
		return UNIO_OK;
	}
	if (h.ctl.type != WIRE_HELLO) {
		conn_answer(w, &h, data, length, conn_id);
		return UNIO_OK;
	}
	/*
	 * Served from wireup_progress(), not from inside the driver's receive path (an ep made
	 * here could replace the one delivering).  Beyond the backlog a request is kept only to
	 * be refused there, so that its sender learns at once.
	 */
	q = w->n_hellos < backlog + HELLOS_REFUSE_MAX ? malloc(sizeof(*q) + length) : NULL;
	if (q == NULL) {
		API_LOG(WARNING, "connection request dropped: %u wait already", w->n_hellos);
		ifc->conn_refused[UNIO_TL_CONN_UNANSWERED]++;
		return UNIO_OK;
	}
	q->next = NULL;
	q->ifc = ifc;
	q->conn_id = conn_id;
	q->busy = w->n_hellos >= backlog;
	q->len = length;
	memcpy(q->data, data, length);
	{
		struct wireup_hello **pp = &w->hellos;

		while (*pp != NULL)
			pp = &(*pp)->next;
		*pp = q;
	}
	w->n_hellos++;
	worker_ctl_soon(w);   /* at the next progress */
	return UNIO_OK;
bad:
	API_LOG(ERR, "connection message: malformed (%zu bytes)", length);
	w->n_dropped++;
	return UNIO_OK;
}

unio_status_t
wireup_set_handlers(struct unio_worker *w)
{
	for (unsigned int i = 0; i < w->n_ifaces; i++) {
		unio_status_t st;

		st = unio_tl_iface_set_am_handler(w->ifaces[i], PROTO_AM_WIREUP_REQ,
						  am_wireup_req, w);
		if (st == UNIO_OK)
			st = unio_tl_iface_set_am_handler(w->ifaces[i], PROTO_AM_WIREUP_REP,
							  am_wireup_rep, w);
		if (st == UNIO_OK)
			st = unio_tl_iface_set_am_handler(w->ifaces[i], PROTO_AM_CONN, am_conn,
							  w->ifaces[i]);
		if (st != UNIO_OK)
			return st;
	}
	return UNIO_OK;
}

static unio_status_t
ep_connect_worker_addr(struct unio_ep *ep, const struct unio_ep_params *p)
{
	struct unio_worker *w = ep->worker;
	unio_status_t st = ep_connect_lanes(ep, p->worker_addr, p->worker_addr_len);

	if (st != UNIO_OK)
		return st;
	snprintf(ep->peer_name, sizeof(ep->peer_name), "worker %016" PRIx64, ep->peer_uuid);
	if (sizeof(struct wire_am_req) + worker_address_pack(w, NULL, 0) >
	    ep->lane.iface->attr.max_bcopy)
		return UNIO_ERR_UNSUPPORTED;
	/* the ep stays CONNECTING (sends wait in its pending queue) until the reply */
	ep->connect_deadline = deadline_of(w);
	return wireup_send(ep, PROTO_AM_WIREUP_REQ);
}
