/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Context and worker: configuration snapshot, drivers and devices, ifaces, progress, the
 * event fd, and the worker address blob.
 */

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "proto_am_rma.h"
#include "unio_memcpy.h"
#include "unio_api_priv.h"

RTE_LOG_REGISTER(unio_logtype_api, unio.api, WARNING);

/* ---- context ---- */

/*
 * A UNIO_NET_DEVICES name that matches no device the network drivers (tcp, ethdev) found:
 * an interface that is not there, down or without IPv4, or UCX's "mlx5_0:1".  Say so once,
 * when those drivers are allowed at all.
 */
static void
context_check_net_devices(const struct unio_context *ctx)
{
	const struct unio_cfg_list *l = &ctx->config.net_devices;

	if (l->deny || (!unio_cfg_list_allows(&ctx->config.tls, "tcp") &&
			!unio_cfg_list_allows(&ctx->config.tls, "ethdev")))
		return;
	for (unsigned int k = 0; k < l->count; k++) {
		bool found = false;

		for (unsigned int d = 0; d < ctx->n_drivers && !found; d++)
			for (unsigned int i = 0; i < ctx->n_devs[d] && !found; i++)
				found = fnmatch(l->items[k], ctx->devs[d][i].name, 0) == 0;
		if (!found)
			API_LOG(WARNING, "UNIO_NET_DEVICES: '%s' names no usable network device "
				"(a kernel interface that is up with an IPv4 address, or a DPDK "
				"port; unio-info -d without it lists them)%s", l->items[k],
				strchr(l->items[k], ':') != NULL ? ": UCX's DEVICE:PORT form is "
				"not Unio's, e.g. UNIO_NET_DEVICES=eth0" : "");
	}
}

/* Open every driver with a device; @p why collects "driver: reason" for the others. */
static void
context_open_drivers(struct unio_context *ctx, char *why, size_t why_len)
{
	char reason[128];
	size_t len = 0;

	why[0] = '\0';
	for (unsigned int i = 0; i < unio_tl_driver_count() && ctx->n_drivers < 16; i++) {
		const struct unio_tl_driver *drv = unio_tl_driver_get(i);
		unsigned int d = ctx->n_drivers, n = 0;
		unio_status_t st;

		st = unio_tl_query_devices(drv, &ctx->config, ctx->devs[d], &n, reason,
					   sizeof(reason));
		if (st != UNIO_OK || n == 0) {
			const char *r = st != UNIO_OK ? unio_status_string(st) :
					reason[0] != '\0' ? reason : "none found";

			API_LOG(INFO, "driver %s: no device: %s", drv->name, r);
			len += (size_t)snprintf(why + len, len < why_len ? why_len - len : 0,
						"%s%s: %s", len != 0 ? "; " : "", drv->name, r);
			continue;
		}
		ctx->drivers[d] = drv;
		ctx->n_devs[d] = n;
		ctx->n_drivers++;
	}
}

unio_context_t *
unio_context_create(const struct unio_context_params *params, unio_status_t *status)
{
	const uint64_t known = UNIO_CONTEXT_PARAM_FEATURES | UNIO_CONTEXT_PARAM_CONFIG |
			       UNIO_CONTEXT_PARAM_NAME;
	const uint64_t features = UNIO_FEATURE_TAG | UNIO_FEATURE_AM | UNIO_FEATURE_RMA |
				  UNIO_FEATURE_WAKEUP;
	uint64_t fm = params != NULL ? params->field_mask : 0;
	struct unio_context *ctx = NULL;
	unio_status_t st;
	char why[512];

	/* unknown fields or features, no feature at all, a config field without a config */
	if ((fm & ~known) || ((fm & UNIO_CONTEXT_PARAM_FEATURES) &&
			      (params->features == 0 || (params->features & ~features))) ||
	    ((fm & UNIO_CONTEXT_PARAM_CONFIG) && params->config == NULL)) {
		API_LOG(ERR, "context: unknown field, unknown or no feature, or NULL config");
		st = UNIO_ERR_INVALID_PARAM;
		goto out;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL) {
		st = UNIO_ERR_NO_MEMORY;
		goto out;
	}
	if (fm & UNIO_CONTEXT_PARAM_CONFIG) {
		ctx->config = *params->config;
		st = UNIO_OK;
	} else {
		st = unio_config_snapshot(&ctx->config);
	}
	if (st != UNIO_OK)
		goto free_ctx;
	ctx->features = (fm & UNIO_CONTEXT_PARAM_FEATURES) ? params->features : UNIO_FEATURE_TAG;
	snprintf(ctx->name, sizeof(ctx->name), "%s",
		 (fm & UNIO_CONTEXT_PARAM_NAME) && params->name != NULL ? params->name : "unio");
	st = unio_env_init_config(&ctx->config);   /* its UNIO_EAL_ARGS, not the environment's */
	if (st != UNIO_OK)
		goto free_ctx;
	unio_memcpy_configure(&ctx->config);       /* process-wide: the last context's */
	TAILQ_INIT(&ctx->workers);
	unio_tl_check_tls(&ctx->config);
	context_open_drivers(ctx, why, sizeof(why));
	context_check_net_devices(ctx);
	if (ctx->n_drivers == 0) {
		API_LOG(ERR, "no transport driver has a usable device: %s", why);
		st = UNIO_ERR_NO_DEVICE;
		goto free_ctx;
	}
	if (status != NULL)
		*status = UNIO_OK;
	return ctx;
free_ctx:
	free(ctx);
out:
	if (status != NULL)
		*status = st;
	return NULL;
}

void
unio_context_destroy(unio_context_t *ctx)
{
	if (ctx == NULL)
		return;
	if (!TAILQ_EMPTY(&ctx->workers))
		API_LOG(ERR, "context destroyed with workers alive: they leak");
	free(ctx);
}

void
unio_context_print_info(const unio_context_t *ctx, FILE *stream)
{
	if (ctx == NULL || stream == NULL)
		return;
	fprintf(stream, "# context %s, features %#" PRIx64 "\n", ctx->name, ctx->features);
	for (unsigned int d = 0; d < ctx->n_drivers; d++)
		for (unsigned int i = 0; i < ctx->n_devs[d]; i++)
			fprintf(stream, "#   %s/%s %s\n", ctx->drivers[d]->name,
				ctx->devs[d][i].name, ctx->devs[d][i].detail);
	unio_config_print(&ctx->config, stream, 0);
}

/* ---- worker ---- */

static void
iface_err(void *arg, struct unio_tl_ep *tl_ep, unio_status_t st)
{
	RTE_SET_USED(arg);
	if (tl_ep != NULL && tl_ep->user != NULL)
		wireup_ep_fail(tl_ep->user, st, true);
}

static unio_status_t
worker_open_ifaces(struct unio_worker *w)
{
	struct unio_context *ctx = w->ctx;

	for (unsigned int d = 0; d < ctx->n_drivers; d++) {
		for (unsigned int i = 0; i < ctx->n_devs[d] && w->n_ifaces < WORKER_MAX_IFACES;
		     i++) {
			struct unio_tl_iface_params p = {
				.config = &ctx->config, .dev_name = ctx->devs[d][i].name,
				.cpu = -1, .err_cb = iface_err, .err_arg = w,
			};
			unio_status_t st;

			st = unio_tl_iface_open(ctx->drivers[d], &p, &w->ifaces[w->n_ifaces]);
			if (st != UNIO_OK) {
				API_LOG(WARNING, "%s/%s: cannot open: %s", ctx->drivers[d]->name,
					p.dev_name, unio_status_string(st));
				continue;
			}
			w->n_ifaces++;
		}
	}
	return w->n_ifaces > 0 ? UNIO_OK : UNIO_ERR_NO_DEVICE;
}

static uint64_t
new_uuid(void)
{
	static uint64_t counter;
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((uint64_t)getpid() << 40) ^ ((uint64_t)ts.tv_nsec << 8) ^ (uint64_t)ts.tv_sec ^
	       (__atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) << 20) ^ rte_rdtsc();
}

static void
worker_close_ifaces(struct unio_worker *w)
{
	for (unsigned int i = 0; i < w->n_ifaces; i++)
		unio_tl_iface_close(w->ifaces[i]);
	w->n_ifaces = 0;
}

unio_worker_t *
unio_worker_create(unio_context_t *ctx, const struct unio_worker_params *params,
		   unio_status_t *status)
{
	uint64_t fm = params != NULL ? params->field_mask : 0;
	pthread_mutexattr_t ma;
	struct unio_worker *w;
	unio_status_t st = UNIO_ERR_INVALID_PARAM;

	if (ctx == NULL || ((fm & UNIO_WORKER_PARAM_THREAD_MODE) &&
			    params->thread_mode != UNIO_THREAD_MODE_SINGLE &&
			    params->thread_mode != UNIO_THREAD_MODE_MULTI))
		goto out;
	st = UNIO_ERR_NO_MEMORY;
	w = calloc(1, sizeof(*w));
	if (w == NULL)
		goto out;
	w->ctx = ctx;
	w->uuid = new_uuid();
	w->mode = (fm & UNIO_WORKER_PARAM_THREAD_MODE) ? params->thread_mode :
		  UNIO_THREAD_MODE_SINGLE;
	w->am_fast = w->mode != UNIO_THREAD_MODE_MULTI && (ctx->features & UNIO_FEATURE_AM);
	w->efd = -1;
	w->sig_fd = -1;
	w->ctl_period_tsc = rte_get_tsc_hz() / 1000;
	w->ctl_countdown = 1;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&w->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	TAILQ_INIT(&w->listeners);
	TAILQ_INIT(&w->flushes);
	st = worker_open_ifaces(w);
	if (st == UNIO_OK)
		st = proto_worker_init(w);
	if (st == UNIO_OK)
		st = wireup_set_handlers(w);
	if (st == UNIO_OK)
		st = proto_am_init(w);
	if (st != UNIO_OK)
		goto close_ifaces;
	TAILQ_INSERT_TAIL(&ctx->workers, w, link);
	if (status != NULL)
		*status = UNIO_OK;
	return w;
close_ifaces:
	proto_am_fini(w);
	proto_worker_fini(w);
	worker_close_ifaces(w);
	free(w);
out:
	if (status != NULL)
		*status = st;
	return NULL;
}

void
unio_worker_destroy(unio_worker_t *w)
{
	if (w == NULL)
		return;
	wireup_worker_fini(w);
	proto_am_fini(w);
	proto_rma_fini(w);
	worker_close_ifaces(w);
	proto_worker_fini(w);
	if (w->efd >= 0)
		close(w->efd);
	if (w->sig_fd >= 0)
		close(w->sig_fd);
	TAILQ_REMOVE(&w->ctx->workers, w, link);
	pthread_mutex_destroy(&w->lock);
	free(w->eps);
	free(w);
}

/* Sends waiting for transport room, flushes: out of line, so that an idle call spills less. */
static __rte_noinline unsigned int
progress_queued(struct unio_worker *w)
{
	unsigned int n = 0;

	if (w->n_pending != 0)
		n += proto_progress_pending(w);
	if (w->n_am_pending != 0 || w->n_rma_pending != 0)
		n += proto_am_progress(w);
	if (!TAILQ_EMPTY(&w->flushes))
		n += wireup_flush_progress(w);
	return n;
}

/*
 * The control plane, once per ctl_period_tsc.  The clock is read once every
 * WORKER_CTL_CALLS progress calls, not in each: a TSC read costs about 20 ns on the VMs this
 * runs on, as much as the rest of an idle call, and a waiting side that reads it in every
 * call sees a message later by half of that on average.
 */
#define WORKER_CTL_CALLS 16u

static __rte_noinline unsigned int
progress_ctl(struct unio_worker *w)
{
	uint64_t now = rte_rdtsc();

	w->ctl_countdown = WORKER_CTL_CALLS;
	if (now < w->ctl_next_tsc)
		return 0;
	w->ctl_next_tsc = now + w->ctl_period_tsc;
	return wireup_progress(w);
}

void
worker_ctl_soon(struct unio_worker *w)
{
	w->ctl_next_tsc = 0;
	w->ctl_countdown = 1;
}

/* sends or flushes waiting in the worker's queues */
static inline bool
progress_queued_any(const struct unio_worker *w)
{
	return (w->n_pending | w->n_am_pending | w->n_rma_pending) != 0 ||
	       !TAILQ_EMPTY(&w->flushes);
}

/*
 * The rest of a progress call that does something, from iface @p i on, with in_progress set
 * (cleared here); @p n: what the call delivered so far.  @p full: every iface that is not
 * idle is called, whatever its poll word says.  Otherwise the ones whose poll word says so
 * are (those before @p i had none, or were delivered already).  Then the queues and the
 * control plane.
 */
static __rte_noinline unsigned int
progress_rest(struct unio_worker *w, unsigned int i, bool full, unsigned int n)
{
	for (; i < w->n_ifaces; i++) {
		struct unio_tl_iface *ifc = w->ifaces[i];

		if (likely(!ifc->idle) && (full || unio_tl_iface_may_have_work(ifc)))
			n += full ? unio_tl_iface_progress(ifc) : unio_tl_iface_deliver(ifc);
	}
	if (unlikely(progress_queued_any(w)))
		n += progress_queued(w);
	if (unlikely(--w->ctl_countdown == 0))
		n += progress_ctl(w);
	w->in_progress = false;
	return n;
}

/*
 * Whether an iface from @p i on would be called by progress_rest(w, i, false, ...): not idle,
 * its poll word set or none.  (A tcp iface with nothing but its listen socket has a word
 * that stays 0: unio-perf's eth0 iface beside its lane on lo.)
 */
static inline bool
later_work(const struct unio_worker *w, unsigned int i)
{
	for (; i < w->n_ifaces; i++)
		if (!w->ifaces[i]->idle && unio_tl_iface_may_have_work(w->ifaces[i]))
			return true;
	return false;
}

/*
 * A call in which iface @p i has work (the ones before it have none) and a later iface has
 * work too, or something is queued (the usual busy call is progress_one()): its delivery.
 * When after it no later iface would be called, nothing is queued and the control plane is
 * not due, that is all; otherwise progress_rest() goes on from the next iface (a tail call).
 */
static __rte_noinline unsigned int
progress_at(struct unio_worker *w, unsigned int i)
{
	unsigned int n;

	w->in_progress = true;
	n = unio_tl_iface_deliver(w->ifaces[i]);
	if (unlikely(w->ctl_countdown == 1 || later_work(w, i + 1) || progress_queued_any(w)))
		return progress_rest(w, i + 1, false, n);
	w->ctl_countdown--;
	w->in_progress = false;
	return n;
}

/*
 * The usual busy call: iface @p ifc has work, no later iface would be called, nothing is
 * queued and the control plane is not due (all checked before, ctl_countdown already
 * counted down).  Only the delivery, with in_progress set around it: one register saved.
 * What the delivery queues (a refused answer) or sets later (another iface's poll word) is
 * the next call's, as for a message that arrives just after this call.
 */
static __rte_noinline unsigned int
progress_one(struct unio_worker *w, struct unio_tl_iface *ifc)
{
	unsigned int n;

	w->in_progress = true;
	n = unio_tl_iface_deliver(ifc);
	w->in_progress = false;
	return n;
}

/*
 * One progress call of a worker.  Drivers that have nothing to do until one of their own
 * calls wakes them (self without an ep) set their iface's idle flag: not called.  Drivers
 * with a poll word (shm: the next header word of its one ring) are called when it is set,
 * and in the call that runs the control plane (one in WORKER_CTL_CALLS, and the one after
 * unio_worker_arm()) for their housekeeping.  A call that finds every poll word clear and
 * nothing queued returns after a few loads, without a call or a register saved: a waiting
 * side looks at its ring again sooner, so it sees a message sooner.
 */
static __rte_always_inline unsigned int
progress_body(struct unio_worker *w)
{
	/*
	 * A callback that calls progress would have the transports deliver again the message
	 * whose handler is still running (shm consumes a cell after its handler returns): every
	 * message twice.  Nested progress does nothing; the outer call carries on.
	 */
	if (unlikely(w->in_progress))
		return 0;
	if (unlikely(w->ctl_countdown == 1)) {
		w->in_progress = true;
		return progress_rest(w, 0, true, 0);
	}
	for (unsigned int i = 0; i < w->n_ifaces; i++) {
		struct unio_tl_iface *ifc = w->ifaces[i];

		if (likely(!ifc->idle) && unio_tl_iface_may_have_work(ifc)) {
			if (unlikely(later_work(w, i + 1) || progress_queued_any(w)))
				return progress_at(w, i);
			w->ctl_countdown--;   /* not 1 (above): the control plane is not due */
			return progress_one(w, ifc);
		}
	}
	if (unlikely(progress_queued_any(w))) {
		w->in_progress = true;
		return progress_rest(w, w->n_ifaces, true, 0);
	}
	w->ctl_countdown--;
	return 0;
}

/* MULTI: the same under the worker's lock, out of line */
static __rte_noinline unsigned int
progress_locked(struct unio_worker *w)
{
	unsigned int n;

	pthread_mutex_lock(&w->lock);
	n = progress_body(w);
	pthread_mutex_unlock(&w->lock);
	return n;
}

unsigned int
unio_worker_progress(unio_worker_t *w)
{
	if (unlikely(w == NULL))
		return 0;
	if (unlikely(w->mode == UNIO_THREAD_MODE_MULTI))
		return progress_locked(w);
	return progress_body(w);
}

/* ---- event fd ---- */

static unio_status_t
efd_add(int efd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(efd, EPOLL_CTL_ADD, fd, &ev) == 0 ? UNIO_OK : UNIO_ERR_IO;
}

void
worker_efd_watch(struct unio_worker *w, int fd)
{
	if (w->efd >= 0 && fd >= 0)
		efd_add(w->efd, fd);
}

static unio_status_t
efd_build(struct unio_worker *w)
{
	int fd;

	w->efd = epoll_create1(EPOLL_CLOEXEC);
	w->sig_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->efd < 0 || w->sig_fd < 0 || efd_add(w->efd, w->sig_fd) != UNIO_OK)
		return UNIO_ERR_IO;
	for (unsigned int i = 0; i < w->n_ifaces; i++) {
		struct unio_tl_iface *ifc = w->ifaces[i];

		if (!(ifc->attr.cap & UNIO_TL_CAP_EVENT_FD) || ifc->ctl->iface_event_fd == NULL ||
		    ifc->ctl->iface_event_fd(ifc, &fd) != UNIO_OK) {
			API_LOG(ERR, "%s/%s has no event fd: the worker cannot sleep",
				ifc->driver->name, ifc->dev_name);
			return UNIO_ERR_UNSUPPORTED;
		}
		if (efd_add(w->efd, fd) != UNIO_OK)
			return UNIO_ERR_IO;
	}
	return wireup_efd_add_all(w);
}

/*
 * The worker's event fd, or none at all: a half-built one (an iface without an event fd)
 * is closed, so that the next call fails the same way instead of handing it out.
 */
static unio_status_t
efd_create(struct unio_worker *w)
{
	unio_status_t st = efd_build(w);

	if (st != UNIO_OK) {
		if (w->efd >= 0)
			close(w->efd);
		if (w->sig_fd >= 0)
			close(w->sig_fd);
		w->efd = w->sig_fd = -1;
	}
	return st;
}

unio_status_t
unio_worker_get_efd(unio_worker_t *w, int *fd)
{
	unio_status_t st = UNIO_OK;

	if (w == NULL || fd == NULL)
		return UNIO_ERR_INVALID_PARAM;
	if (!(w->ctx->features & UNIO_FEATURE_WAKEUP))
		return UNIO_ERR_UNSUPPORTED;
	worker_lock(w);
	if (w->efd < 0)
		st = efd_create(w);
	if (st == UNIO_OK)
		*fd = w->efd;
	worker_unlock(w);
	return st;
}

unio_status_t
unio_worker_arm(unio_worker_t *w)
{
	unio_status_t st = UNIO_OK;
	uint64_t v;

	if (w == NULL || w->efd < 0)
		return UNIO_ERR_INVALID_PARAM;
	worker_lock(w);
	if (read(w->sig_fd, &v, sizeof(v)) == sizeof(v) || w->n_pending != 0 ||
	    w->n_am_pending != 0 || w->n_rma_pending != 0 || w->n_wireup_owed != 0)
		st = UNIO_ERR_BUSY;
	for (unsigned int i = 0; i < w->n_ifaces && st == UNIO_OK; i++)
		if (w->ifaces[i]->ctl->iface_event_arm != NULL)
			st = w->ifaces[i]->ctl->iface_event_arm(w->ifaces[i]);
	/* whatever wakes the worker, its next progress looks at the control plane too */
	worker_ctl_soon(w);
	worker_unlock(w);
	return st;
}

unio_status_t
unio_worker_signal(unio_worker_t *w)
{
	uint64_t one = 1;

	if (w == NULL || w->sig_fd < 0)
		return UNIO_ERR_INVALID_PARAM;
	return write(w->sig_fd, &one, sizeof(one)) == sizeof(one) ? UNIO_OK : UNIO_ERR_IO;
}

/* ---- worker address: magic, version, uuid, then (driver, device, iface address) ---- */

size_t
worker_address_pack(struct unio_worker *w, void *buf, size_t len)
{
	struct wire_addr_hdr h = { .magic = UNIO_WIRE_MAGIC, .version = proto_wire_version(),
				   .n_ifaces = (uint16_t)w->n_ifaces, .uuid = w->uuid };
	uint8_t *p = (uint8_t *)buf + sizeof(h);
	size_t need = sizeof(h);

	for (unsigned int i = 0; i < w->n_ifaces; i++)
		need += sizeof(struct wire_addr_iface) + w->ifaces[i]->attr.iface_addr_len;
	if (buf == NULL || len < need)
		return need;
	memcpy(buf, &h, sizeof(h));   /* buf may be a driver's, unaligned */
	for (unsigned int i = 0; i < w->n_ifaces; i++) {
		struct unio_tl_iface *ifc = w->ifaces[i];
		struct wire_addr_iface e = { .addr_len = (uint16_t)ifc->attr.iface_addr_len };

		snprintf(e.driver, sizeof(e.driver), "%s", ifc->driver->name);
		snprintf(e.device, sizeof(e.device), "%s", ifc->dev_name);
		memcpy(p, &e, sizeof(e));
		p += sizeof(e);
		if (unio_tl_iface_get_address(ifc, p) != UNIO_OK)
			memset(p, 0, e.addr_len);
		p += e.addr_len;
	}
	return need;
}

unio_status_t
unio_worker_get_address(unio_worker_t *w, void **addr_p, size_t *len_p)
{
	size_t len;
	void *buf;

	if (w == NULL || addr_p == NULL || len_p == NULL)
		return UNIO_ERR_INVALID_PARAM;
	worker_lock(w);
	len = worker_address_pack(w, NULL, 0);
	buf = malloc(len);
	if (buf != NULL)
		worker_address_pack(w, buf, len);
	worker_unlock(w);
	if (buf == NULL)
		return UNIO_ERR_NO_MEMORY;
	*addr_p = buf;
	*len_p = len;
	return UNIO_OK;
}

void
unio_worker_release_address(unio_worker_t *w, void *addr)
{
	RTE_SET_USED(w);
	free(addr);
}

void
unio_worker_print_info(const unio_worker_t *worker, FILE *stream)
{
	struct unio_worker *w = (struct unio_worker *)(uintptr_t)worker;
	unsigned int n_eps = 0;

	if (w == NULL || stream == NULL)
		return;
	worker_lock(w);
	for (uint32_t i = 0; i < w->n_eps; i++)
		n_eps += w->eps[i] != NULL;
	fprintf(stream, "# worker %#" PRIx64 ", thread mode %s\n", w->uuid,
		w->mode == UNIO_THREAD_MODE_MULTI ? "multi" : "single");
	for (unsigned int i = 0; i < w->n_ifaces; i++)
		fprintf(stream, "#   iface %s/%s\n", w->ifaces[i]->driver->name,
			w->ifaces[i]->dev_name);
	fprintf(stream, "# endpoints: %u, unexpected messages: %u\n", n_eps, w->n_unexp);
	fprintf(stream, "# dropped from peers: %" PRIu64 "\n", w->n_dropped);
	fprintf(stream, "# dropped: no memory: %" PRIu64 "\n", w->n_dropped_nomem);
	worker_unlock(w);
}
