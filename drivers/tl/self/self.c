/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The self driver: loopback inside one worker.  An ep is a connection from an iface to
 * itself.  Sends copy the message into a small per-iface queue and return at once; the
 * next progress() delivers what was queued before it started, so a handler that sends again
 * never re-enters itself.  put / get are memcpy inside the rkey's range.
 *
 * Wakeup: the event fd is an eventfd made on first request; arm reports BUSY while messages
 * are queued, else sets a flag that the next send clears before it writes the eventfd (a
 * send to itself from a callback, or from another thread of a MULTI worker).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_debug.h>
#include <rte_log.h>

#include "unio_log.h"
#include "unio_tl.h"

RTE_LOG_REGISTER(self_logtype, unio.drv.self, WARNING);
#define SELF_LOG(lvl, fmt, ...) UNIO_LOG(lvl, self_logtype, fmt, ##__VA_ARGS__)

#define SELF_MSG_MAX     8192u      /**< bytes of one queued message (header included) */
#define SELF_QUEUE_LEN   64u        /**< queued messages (a power of two) */
#define SELF_ZCOPY_HDR   128u
#define SELF_MAX_FLUSH   16u
#define SELF_ADDR_MAGIC  0x666c6573756e6955ull  /* "Uniusself" */
#define SELF_RKEY_MAGIC  0x79656b72666c6573ull  /* "selfrkey" */

struct self_msg {
	uint32_t len;
	uint8_t id;
	uint8_t data[SELF_MSG_MAX] __rte_aligned(8);
};

struct self_flush {
	struct unio_tl_completion *comp;
	uint64_t seq;                 /**< complete once this many messages were delivered */
};

struct self_iface {
	struct unio_tl_iface super;
	uint64_t head;                /**< messages queued so far */
	uint64_t tail;                /**< messages delivered so far */
	unsigned int n_flush;
	unsigned int n_eps;
	unio_tl_conn_id_t conn_id;    /**< of every frame and ep: the one peer is itself */
	bool armed;                   /**< the worker sleeps: the next send writes ev_fd */
	int ev_fd;                    /**< eventfd, -1 until asked for */
	struct self_flush flush[SELF_MAX_FLUSH];
	struct self_msg queue[SELF_QUEUE_LEN];
};

struct self_ep {
	struct unio_tl_ep super;
};

struct self_addr {
	uint64_t magic;
	uint64_t pid;
	uint64_t iface_id;
};

struct self_rkey {
	uint64_t magic;
	uint64_t pid;
	uint64_t base;
	uint64_t len;
};

static inline struct self_iface *
ep_iface(struct unio_tl_ep *ep)
{
	return (struct self_iface *)ep->iface;
}

/* ---- fast path ---- */

static __rte_noinline void
self_wake(struct self_iface *si)
{
	uint64_t one = 1;

	si->armed = false;
	if (write(si->ev_fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
		SELF_LOG(DEBUG, "eventfd write failed");
}

/* a message was queued: wake the worker when it sleeps */
static inline void
queue_commit(struct self_iface *si)
{
	si->head++;
	if (unlikely(si->armed))
		self_wake(si);
}

static inline struct self_msg *
queue_reserve(struct self_iface *si)
{
	if (si->head - si->tail >= SELF_QUEUE_LEN)
		return NULL;
	return &si->queue[si->head & (SELF_QUEUE_LEN - 1)];
}

static unio_status_t
self_am_short(struct unio_tl_ep *ep, uint8_t id, uint64_t hdr, const void *payload, size_t len)
{
	struct self_iface *si = ep_iface(ep);
	struct self_msg *m = queue_reserve(si);

	if (m == NULL)
		return UNIO_ERR_NO_RESOURCE;
	memcpy(m->data, &hdr, sizeof(hdr));
	if (len != 0)
		memcpy(m->data + sizeof(hdr), payload, len);
	m->len = (uint32_t)(sizeof(hdr) + len);
	m->id = id;
	queue_commit(si);
	return UNIO_OK;
}

static ssize_t
self_am_bcopy(struct unio_tl_ep *ep, uint8_t id, unio_tl_pack_cb_t pack, void *arg,
	      unsigned int flags)
{
	struct self_iface *si = ep_iface(ep);
	struct self_msg *m = queue_reserve(si);
	size_t len;

	RTE_SET_USED(flags);
	if (m == NULL)
		return UNIO_ERR_NO_RESOURCE;
	len = pack(m->data, arg);
	RTE_VERIFY(len <= SELF_MSG_MAX);
	m->len = (uint32_t)len;
	m->id = id;
	queue_commit(si);
	return (ssize_t)len;
}

static unio_status_t
self_am_zcopy(struct unio_tl_ep *ep, uint8_t id, const void *hdr, size_t hdr_len,
	      const struct iovec *iov, size_t iovcnt, unsigned int flags,
	      struct unio_tl_completion *comp)
{
	struct self_iface *si = ep_iface(ep);
	struct self_msg *m = queue_reserve(si);
	size_t off = hdr_len;

	RTE_SET_USED(flags), RTE_SET_USED(comp);
	if (m == NULL)
		return UNIO_ERR_NO_RESOURCE;
	if (hdr_len != 0)
		memcpy(m->data, hdr, hdr_len);
	for (size_t i = 0; i < iovcnt; i++) {
		if (off + iov[i].iov_len > SELF_MSG_MAX)
			return UNIO_ERR_INVALID_PARAM;
		memcpy(m->data + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	m->len = (uint32_t)off;
	m->id = id;
	queue_commit(si);
	return UNIO_OK;   /* the payload was copied: the caller's buffer is free now */
}

static unio_status_t
rkey_range_check(const struct unio_tl_rkey *rkey, uint64_t addr, const struct iovec *iov,
		 size_t iovcnt, uint8_t **ptr)
{
	size_t total = 0;

	for (size_t i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (rkey->local_ptr == NULL || !unio_tl_rkey_covers(rkey, addr, total))
		return UNIO_ERR_OUT_OF_RANGE;
	*ptr = (uint8_t *)rkey->local_ptr + (addr - rkey->remote_base);
	return UNIO_OK;
}

static unio_status_t
self_put_zcopy(struct unio_tl_ep *ep, const struct iovec *iov, size_t iovcnt,
	       uint64_t remote_addr, const struct unio_tl_rkey *rkey,
	       struct unio_tl_completion *comp)
{
	uint8_t *dst;
	unio_status_t st;

	RTE_SET_USED(ep), RTE_SET_USED(comp);
	st = rkey_range_check(rkey, remote_addr, iov, iovcnt, &dst);
	if (st != UNIO_OK)
		return st;
	for (size_t i = 0; i < iovcnt; dst += iov[i].iov_len, i++)
		memmove(dst, iov[i].iov_base, iov[i].iov_len);
	return UNIO_OK;
}

static unio_status_t
self_get_zcopy(struct unio_tl_ep *ep, const struct iovec *iov, size_t iovcnt,
	       uint64_t remote_addr, const struct unio_tl_rkey *rkey,
	       struct unio_tl_completion *comp)
{
	uint8_t *src;
	unio_status_t st;

	RTE_SET_USED(ep), RTE_SET_USED(comp);
	st = rkey_range_check(rkey, remote_addr, iov, iovcnt, &src);
	if (st != UNIO_OK)
		return st;
	for (size_t i = 0; i < iovcnt; src += iov[i].iov_len, i++)
		memmove(iov[i].iov_base, src, iov[i].iov_len);
	return UNIO_OK;
}

static unio_status_t
self_flush(struct unio_tl_ep *ep, struct unio_tl_completion *comp)
{
	struct self_iface *si = ep_iface(ep);

	if (si->head == si->tail)
		return UNIO_OK;
	if (comp == NULL)
		return UNIO_INPROGRESS;
	if (si->n_flush == SELF_MAX_FLUSH)
		return UNIO_ERR_NO_RESOURCE;
	si->flush[si->n_flush++] = (struct self_flush){ comp, si->head };
	return UNIO_INPROGRESS;
}

static void
complete_flushes(struct self_iface *si)
{
	unsigned int kept = 0;

	for (unsigned int i = 0; i < si->n_flush; i++) {
		if (si->flush[i].seq <= si->tail)
			unio_tl_completion_done(si->flush[i].comp, UNIO_OK);
		else
			si->flush[kept++] = si->flush[i];
	}
	si->n_flush = kept;
}

static __rte_noinline unsigned int
self_deliver(struct self_iface *si)
{
	struct unio_tl_iface *iface = &si->super;
	uint64_t end = si->head;   /* what handlers queue now waits for the next call */
	unsigned int n = 0;

	while (si->tail != end) {
		struct self_msg *m = &si->queue[si->tail & (SELF_QUEUE_LEN - 1)];

		unio_tl_iface_invoke_am(iface, m->id, m->data, m->len, 0, si->conn_id);
		si->tail++;
		n++;
	}
	if (si->n_flush != 0)
		complete_flushes(si);
	si->armed = false;   /* awake */
	return n;
}

static unsigned int
self_progress(struct unio_tl_iface *iface)
{
	struct self_iface *si = (struct self_iface *)iface;

	if (likely(si->tail == si->head && si->n_flush == 0)) {   /* idle: no call, no spill */
		si->armed = false;
		/* without an ep nothing can be queued: the worker skips us until ep_create */
		si->super.idle = si->n_eps == 0;
		return 0;
	}
	return self_deliver(si);
}

/* ---- control path ---- */

static void
self_iface_close(struct unio_tl_iface *iface)
{
	struct self_iface *si = (struct self_iface *)iface;

	if (si->n_flush != 0)
		SELF_LOG(DEBUG, "closing with %u flushes pending", si->n_flush);
	if (si->ev_fd >= 0)
		close(si->ev_fd);
	free(si);
}

static unio_status_t
self_iface_query(struct unio_tl_iface *iface, struct unio_tl_iface_attr *attr)
{
	RTE_SET_USED(iface);
	memset(attr, 0, sizeof(*attr));
	attr->cap = UNIO_TL_CAP_AM_SHORT | UNIO_TL_CAP_AM_BCOPY | UNIO_TL_CAP_AM_ZCOPY |
		    UNIO_TL_CAP_PUT_ZCOPY | UNIO_TL_CAP_GET_ZCOPY | UNIO_TL_CAP_RKEY_PTR |
		    UNIO_TL_CAP_CONNECT_IFACE | UNIO_TL_CAP_ORDERED | UNIO_TL_CAP_EVENT_FD;
	attr->max_short = SELF_MSG_MAX - sizeof(uint64_t);
	attr->max_bcopy = SELF_MSG_MAX;
	attr->max_zcopy_hdr = SELF_ZCOPY_HDR;
	attr->max_zcopy = SELF_MSG_MAX - SELF_ZCOPY_HDR;
	attr->max_iov = UNIO_TL_MAX_IOV;
	attr->max_put_zcopy = SIZE_MAX;
	attr->max_get_zcopy = SIZE_MAX;
	attr->iface_addr_len = sizeof(struct self_addr);
	attr->rkey_packed_len = sizeof(struct self_rkey);
	attr->reach = UNIO_TL_REACH_SELF;
	/* a queued copy plus a delivery at the next progress; memcpy bandwidth */
	attr->perf = (struct unio_tl_perf){ .latency_ns = 10, .overhead_ns = 5,
					    .bandwidth_MBps = 20000, .zcopy_overhead_ns = 5 };
	return UNIO_OK;
}

static unio_status_t
self_event_fd(struct unio_tl_iface *iface, int *fd)
{
	struct self_iface *si = (struct self_iface *)iface;

	if (si->ev_fd < 0)
		si->ev_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (si->ev_fd < 0)
		return UNIO_ERR_IO;
	*fd = si->ev_fd;
	return UNIO_OK;
}

/* drain the eventfd, then sleep only when nothing is queued */
static unio_status_t
self_event_arm(struct unio_tl_iface *iface)
{
	struct self_iface *si = (struct self_iface *)iface;
	uint64_t v;

	if (si->ev_fd < 0)
		return UNIO_ERR_INVALID_PARAM;
	if (read(si->ev_fd, &v, sizeof(v)) < 0)
		v = 0;   /* EAGAIN: nothing signalled */
	if (si->head != si->tail || si->n_flush != 0)
		return UNIO_ERR_BUSY;
	si->armed = true;
	return UNIO_OK;
}

static unio_status_t
self_get_address(struct unio_tl_iface *iface, void *addr)
{
	struct self_addr a = { SELF_ADDR_MAGIC, (uint64_t)getpid(), (uintptr_t)iface };

	memcpy(addr, &a, sizeof(a));
	return UNIO_OK;
}

static bool
self_is_reachable(struct unio_tl_iface *iface, const void *addr, size_t len)
{
	struct self_addr a;

	if (len != sizeof(a))
		return false;
	memcpy(&a, addr, sizeof(a));
	return a.magic == SELF_ADDR_MAGIC && a.pid == (uint64_t)getpid() &&
	       a.iface_id == (uintptr_t)iface;
}

static unio_status_t
self_ep_create(struct unio_tl_iface *iface, const struct unio_tl_ep_params *params,
	       struct unio_tl_ep **ep_p)
{
	struct self_ep *ep;

	if (!self_is_reachable(iface, params->iface_addr, params->iface_addr_len))
		return UNIO_ERR_UNREACHABLE;
	ep = calloc(1, sizeof(*ep));
	if (ep == NULL)
		return UNIO_ERR_NO_MEMORY;
	((struct self_iface *)iface)->n_eps++;
	ep->super.conn_id = ((struct self_iface *)iface)->conn_id;
	iface->idle = false;
	*ep_p = &ep->super;
	return UNIO_OK;
}

static void
self_ep_destroy(struct unio_tl_ep *ep)
{
	ep_iface(ep)->n_eps--;
	free(ep);
}

static unio_status_t
self_mem_reg(struct unio_tl_iface *iface, void *addr, size_t len, struct unio_tl_memh *memh)
{
	RTE_SET_USED(iface);
	memh->addr = addr;
	memh->len = len;
	memh->priv = NULL;
	return UNIO_OK;
}

static void
self_mem_dereg(struct unio_tl_iface *iface, struct unio_tl_memh *memh)
{
	RTE_SET_USED(iface);
	memh->addr = NULL;
	memh->len = 0;
}

static unio_status_t
self_mem_alloc(struct unio_tl_iface *iface, size_t len, struct unio_tl_memh *memh)
{
	void *p = NULL;

	RTE_SET_USED(iface);
	if (posix_memalign(&p, RTE_CACHE_LINE_SIZE, len != 0 ? len : 1) != 0)
		return UNIO_ERR_NO_MEMORY;
	memh->addr = p;
	memh->len = len;
	memh->priv = p;
	return UNIO_OK;
}

static void
self_mem_free(struct unio_tl_iface *iface, struct unio_tl_memh *memh)
{
	RTE_SET_USED(iface);
	free(memh->priv);
	memh->addr = memh->priv = NULL;
}

static unio_status_t
self_rkey_pack(struct unio_tl_iface *iface, const struct unio_tl_memh *memh, void *buf)
{
	struct self_rkey k = { SELF_RKEY_MAGIC, (uint64_t)getpid(), (uintptr_t)memh->addr,
			       memh->len };

	RTE_SET_USED(iface);
	memcpy(buf, &k, sizeof(k));
	return UNIO_OK;
}

static unio_status_t
self_rkey_unpack(struct unio_tl_ep *ep, const void *buf, size_t len, struct unio_tl_rkey *rkey)
{
	struct self_rkey k;

	RTE_SET_USED(ep);
	if (len != sizeof(k))
		return UNIO_ERR_INVALID_ADDR;
	memcpy(&k, buf, sizeof(k));
	if (k.magic != SELF_RKEY_MAGIC || k.pid != (uint64_t)getpid() ||
	    k.base + k.len < k.base) {
		SELF_LOG(ERR, "rkey_unpack: not a self rkey of this process");
		return UNIO_ERR_INVALID_ADDR;
	}
	rkey->remote_base = k.base;
	rkey->remote_len = k.len;
	rkey->local_ptr = (void *)(uintptr_t)k.base;
	rkey->priv = NULL;
	return UNIO_OK;
}

static void
self_rkey_release(struct unio_tl_ep *ep, struct unio_tl_rkey *rkey)
{
	RTE_SET_USED(ep);
	rkey->local_ptr = NULL;
}

static const struct unio_tl_iface_ctl_ops self_ctl_ops = {
	.iface_close = self_iface_close,
	.iface_query = self_iface_query,
	.iface_get_address = self_get_address,
	.iface_is_reachable = self_is_reachable,
	.iface_event_fd = self_event_fd,
	.iface_event_arm = self_event_arm,
	.ep_create = self_ep_create,
	.ep_destroy = self_ep_destroy,
	.mem_reg = self_mem_reg,
	.mem_dereg = self_mem_dereg,
	.mem_alloc = self_mem_alloc,
	.mem_free = self_mem_free,
	.rkey_pack = self_rkey_pack,
	.rkey_unpack = self_rkey_unpack,
	.rkey_release = self_rkey_release,
};

static unio_status_t
self_iface_open(const struct unio_tl_iface_params *params, struct unio_tl_iface **iface_p)
{
	struct self_iface *si;

	RTE_SET_USED(params);
	if (posix_memalign((void **)&si, RTE_CACHE_LINE_SIZE, sizeof(*si)) != 0)
		return UNIO_ERR_NO_MEMORY;
	memset(si, 0, offsetof(struct self_iface, queue));
	si->ev_fd = -1;
	si->conn_id = unio_tl_conn_id_new();
	si->super.ops = (struct unio_tl_ops){
		.ep_am_short = self_am_short,
		.ep_am_bcopy = self_am_bcopy,
		.ep_am_zcopy = self_am_zcopy,
		.ep_put_zcopy = self_put_zcopy,
		.ep_get_zcopy = self_get_zcopy,
		.ep_flush = self_flush,
		.iface_progress = self_progress,
	};
	si->super.ctl = &self_ctl_ops;
	*iface_p = &si->super;
	return UNIO_OK;
}

static unio_status_t
self_query_devices(const struct unio_config *config, struct unio_tl_device_info *devs,
		   unsigned int *n_devs, char *reason, size_t reason_len)
{
	RTE_SET_USED(config), RTE_SET_USED(reason), RTE_SET_USED(reason_len);
	memset(&devs[0], 0, sizeof(devs[0]));
	snprintf(devs[0].name, sizeof(devs[0].name), "memory");
	devs[0].reach = UNIO_TL_REACH_SELF;
	snprintf(devs[0].detail, sizeof(devs[0].detail), "loopback inside one worker");
	*n_devs = 1;
	return UNIO_OK;
}

static const struct unio_tl_driver self_driver = {
	.name = "self",
	.description = "loopback inside one worker",
	.query_devices = self_query_devices,
	.iface_open = self_iface_open,
};

UNIO_TL_DRIVER_REGISTER(self_driver);
