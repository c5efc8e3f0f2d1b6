/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The generic transport layer: the driver registry, argument validation, and the stubs that
 * stand in for operations a driver does not implement.
 */

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include <rte_debug.h>
#include <rte_log.h>

#include "unio_log.h"
#include "unio_tl.h"

RTE_LOG_REGISTER(unio_logtype_tl, unio.tl, WARNING);
#define TL_LOG(lvl, fmt, ...) UNIO_LOG(lvl, unio_logtype_tl, fmt, ##__VA_ARGS__)

#define TL_MAX_DRIVERS 16

static const struct unio_tl_driver *tl_drivers[TL_MAX_DRIVERS];
static unsigned int tl_n_drivers;

/*
 * Kept sorted by name: constructors run in link order, which the linker (and link-time
 * optimisation) may change, and workers open ifaces -- and try lanes of one reachability
 * class -- in this order.
 */
void
unio_tl_driver_register(const struct unio_tl_driver *drv)
{
	unsigned int i;

	RTE_VERIFY(drv != NULL && drv->name != NULL && drv->iface_open != NULL &&
		   drv->query_devices != NULL);
	RTE_VERIFY(tl_n_drivers < TL_MAX_DRIVERS);
	for (i = tl_n_drivers; i > 0 && strcmp(tl_drivers[i - 1]->name, drv->name) > 0; i--)
		tl_drivers[i] = tl_drivers[i - 1];
	tl_drivers[i] = drv;
	tl_n_drivers++;
}

unsigned int
unio_tl_driver_count(void)
{
	return tl_n_drivers;
}

const struct unio_tl_driver *
unio_tl_driver_get(unsigned int i)
{
	return i < tl_n_drivers ? tl_drivers[i] : NULL;
}

const struct unio_tl_driver *
unio_tl_driver_find(const char *name)
{
	for (unsigned int i = 0; name != NULL && i < tl_n_drivers; i++)
		if (strcmp(tl_drivers[i]->name, name) == 0)
			return tl_drivers[i];
	return NULL;
}

bool
unio_tl_driver_allowed(const struct unio_config *config, const char *name)
{
	return unio_cfg_list_allows(&config->tls, name);
}

/* ---- stubs for what a driver leaves out ---- */

static unio_status_t
stub_am_short(struct unio_tl_ep *ep, uint8_t id, uint64_t hdr, const void *payload,
	      size_t len)
{
	RTE_SET_USED(ep), RTE_SET_USED(id), RTE_SET_USED(hdr);
	RTE_SET_USED(payload), RTE_SET_USED(len);
	return UNIO_ERR_UNSUPPORTED;
}

static ssize_t
stub_am_bcopy(struct unio_tl_ep *ep, uint8_t id, unio_tl_pack_cb_t pack, void *arg,
	      unsigned int flags)
{
	RTE_SET_USED(ep), RTE_SET_USED(id), RTE_SET_USED(pack);
	RTE_SET_USED(arg), RTE_SET_USED(flags);
	return UNIO_ERR_UNSUPPORTED;
}

static unio_status_t
stub_am_zcopy(struct unio_tl_ep *ep, uint8_t id, const void *hdr, size_t hdr_len,
	      const struct iovec *iov, size_t iovcnt, unsigned int flags,
	      struct unio_tl_completion *comp)
{
	RTE_SET_USED(ep), RTE_SET_USED(id), RTE_SET_USED(hdr), RTE_SET_USED(hdr_len);
	RTE_SET_USED(iov), RTE_SET_USED(iovcnt), RTE_SET_USED(flags), RTE_SET_USED(comp);
	return UNIO_ERR_UNSUPPORTED;
}

static unio_status_t
stub_rma_zcopy(struct unio_tl_ep *ep, const struct iovec *iov, size_t iovcnt,
	       uint64_t remote_addr, const struct unio_tl_rkey *rkey,
	       struct unio_tl_completion *comp)
{
	RTE_SET_USED(ep), RTE_SET_USED(iov), RTE_SET_USED(iovcnt);
	RTE_SET_USED(remote_addr), RTE_SET_USED(rkey), RTE_SET_USED(comp);
	return UNIO_ERR_UNSUPPORTED;
}

static unio_status_t
stub_flush(struct unio_tl_ep *ep, struct unio_tl_completion *comp)
{
	RTE_SET_USED(ep), RTE_SET_USED(comp);
	return UNIO_OK;
}

static unsigned int
stub_progress(struct unio_tl_iface *iface)
{
	RTE_SET_USED(iface);
	return 0;
}

/* An AM id nobody registered: the message is dropped and logged. */
static unio_status_t
drop_am(void *arg, const void *data, size_t length, unsigned int flags,
	unio_tl_conn_id_t conn_id)
{
	struct unio_tl_iface *iface = arg;

	RTE_SET_USED(data), RTE_SET_USED(flags), RTE_SET_USED(conn_id);
	TL_LOG(WARNING, "%s/%s: dropped a %zu-byte message for an AM id with no handler",
	       iface->driver->name, iface->dev_name, length);
	return UNIO_OK;
}

unio_tl_conn_id_t
unio_tl_conn_id_new(void)
{
	static uint64_t last;

	return __atomic_add_fetch(&last, 1, __ATOMIC_RELAXED);
}

static void
fill_stubs(struct unio_tl_ops *ops)
{
	if (ops->ep_am_short == NULL)
		ops->ep_am_short = stub_am_short;
	if (ops->ep_am_bcopy == NULL)
		ops->ep_am_bcopy = stub_am_bcopy;
	if (ops->ep_am_zcopy == NULL)
		ops->ep_am_zcopy = stub_am_zcopy;
	if (ops->ep_put_zcopy == NULL)
		ops->ep_put_zcopy = stub_rma_zcopy;
	if (ops->ep_get_zcopy == NULL)
		ops->ep_get_zcopy = stub_rma_zcopy;
	if (ops->ep_flush == NULL)
		ops->ep_flush = stub_flush;
	if (ops->iface_progress == NULL)
		ops->iface_progress = stub_progress;
	if (ops->iface_deliver == NULL)
		ops->iface_deliver = ops->iface_progress;
}

unio_status_t
unio_tl_iface_open(const struct unio_tl_driver *drv, const struct unio_tl_iface_params *params,
		   struct unio_tl_iface **iface_p)
{
	struct unio_tl_iface *iface = NULL;
	unio_status_t st;

	if (drv == NULL || params == NULL || params->config == NULL ||
	    params->dev_name == NULL || iface_p == NULL)
		return UNIO_ERR_INVALID_PARAM;
	if (!unio_tl_driver_allowed(params->config, drv->name))
		return UNIO_ERR_NO_DEVICE;
	st = drv->iface_open(params, &iface);
	if (st != UNIO_OK)
		return st;
	iface->driver = drv;
	snprintf(iface->dev_name, sizeof(iface->dev_name), "%s", params->dev_name);
	iface->err_cb = params->err_cb;
	iface->err_arg = params->err_arg;
	fill_stubs(&iface->ops);
	for (unsigned int i = 0; i < UNIO_TL_AM_ID_MAX; i++)
		if (iface->am[i].cb == NULL) {
			iface->am[i].cb = drop_am;
			iface->am[i].arg = iface;
		}
	st = iface->ctl->iface_query(iface, &iface->attr);
	if (st != UNIO_OK) {
		TL_LOG(ERR, "%s/%s: query failed: %s", drv->name, params->dev_name,
		       unio_status_string(st));
		iface->ctl->iface_close(iface);
		return st;
	}
	*iface_p = iface;
	return UNIO_OK;
}

void
unio_tl_iface_close(struct unio_tl_iface *iface)
{
	if (iface != NULL)
		iface->ctl->iface_close(iface);
}

unio_status_t
unio_tl_iface_set_am_handler(struct unio_tl_iface *iface, uint8_t id, unio_tl_am_cb_t cb,
			     void *arg)
{
	if (iface == NULL || id >= UNIO_TL_AM_ID_MAX)
		return UNIO_ERR_INVALID_PARAM;
	iface->am[id].cb = cb != NULL ? cb : drop_am;
	iface->am[id].arg = cb != NULL ? arg : iface;
	return UNIO_OK;
}

unio_status_t
unio_tl_ep_create(struct unio_tl_iface *iface, const struct unio_tl_ep_params *params,
		  struct unio_tl_ep **ep_p)
{
	struct unio_tl_ep *ep = NULL;
	unio_status_t st;

	if (iface == NULL || params == NULL || ep_p == NULL ||
	    (params->iface_addr == NULL && params->iface_addr_len != 0))
		return UNIO_ERR_INVALID_PARAM;
	if (iface->ctl->ep_create == NULL)
		return UNIO_ERR_UNSUPPORTED;
	if (params->iface_addr_len != iface->attr.iface_addr_len)
		return UNIO_ERR_INVALID_ADDR;
	if (iface->ctl->iface_is_reachable != NULL &&
	    !iface->ctl->iface_is_reachable(iface, params->iface_addr, params->iface_addr_len))
		return UNIO_ERR_UNREACHABLE;
	st = iface->ctl->ep_create(iface, params, &ep);
	if (st != UNIO_OK)
		return st;
	ep->iface = iface;
	ep->user = params->user;
	if (ep->cap == 0)
		ep->cap = iface->attr.cap;
	*ep_p = ep;
	return UNIO_OK;
}

void
unio_tl_ep_destroy(struct unio_tl_ep *ep)
{
	if (ep != NULL)
		ep->iface->ctl->ep_destroy(ep);
}

unio_status_t
unio_tl_query_devices(const struct unio_tl_driver *drv, const struct unio_config *config,
		      struct unio_tl_device_info *devs, unsigned int *n_devs, char *reason,
		      size_t reason_len)
{
	if (drv == NULL || config == NULL || devs == NULL || n_devs == NULL ||
	    (reason == NULL && reason_len != 0))
		return UNIO_ERR_INVALID_PARAM;
	*n_devs = 0;
	if (reason_len != 0)
		reason[0] = '\0';
	if (!unio_tl_driver_allowed(config, drv->name)) {
		if (reason_len != 0)
			snprintf(reason, reason_len, "not allowed by UNIO_TLS");
		return UNIO_OK;
	}
	return drv->query_devices(config, devs, n_devs, reason, reason_len);
}

unio_status_t
unio_tl_iface_get_address(struct unio_tl_iface *iface, void *addr)
{
	if (iface == NULL || addr == NULL)
		return UNIO_ERR_INVALID_PARAM;
	if (iface->ctl->iface_get_address == NULL)
		return UNIO_ERR_UNSUPPORTED;
	return iface->ctl->iface_get_address(iface, addr);
}

unio_status_t
unio_tl_mem_reg(struct unio_tl_iface *iface, void *addr, size_t len, struct unio_tl_memh *memh)
{
	if (iface == NULL || memh == NULL || (addr == NULL && len != 0))
		return UNIO_ERR_INVALID_PARAM;
	if (iface->ctl->mem_reg == NULL)
		return UNIO_ERR_UNSUPPORTED;
	return iface->ctl->mem_reg(iface, addr, len, memh);
}

void
unio_tl_mem_dereg(struct unio_tl_iface *iface, struct unio_tl_memh *memh)
{
	if (iface != NULL && memh != NULL && iface->ctl->mem_dereg != NULL)
		iface->ctl->mem_dereg(iface, memh);
}

unio_status_t
unio_tl_mem_alloc(struct unio_tl_iface *iface, size_t len, struct unio_tl_memh *memh)
{
	if (iface == NULL || memh == NULL || len == 0)
		return UNIO_ERR_INVALID_PARAM;
	if (iface->ctl->mem_alloc == NULL)
		return UNIO_ERR_UNSUPPORTED;
	return iface->ctl->mem_alloc(iface, len, memh);
}

void
unio_tl_mem_free(struct unio_tl_iface *iface, struct unio_tl_memh *memh)
{
	if (iface != NULL && memh != NULL && iface->ctl->mem_free != NULL)
		iface->ctl->mem_free(iface, memh);
}

unio_status_t
unio_tl_rkey_pack(struct unio_tl_iface *iface, const struct unio_tl_memh *memh, void *buf)
{
	if (iface == NULL || memh == NULL || buf == NULL)
		return UNIO_ERR_INVALID_PARAM;
	if (iface->ctl->rkey_pack == NULL)
		return UNIO_ERR_UNSUPPORTED;
	return iface->ctl->rkey_pack(iface, memh, buf);
}

unio_status_t
unio_tl_rkey_unpack(struct unio_tl_ep *ep, const void *buf, size_t len,
		    struct unio_tl_rkey *rkey)
{
	if (ep == NULL || buf == NULL || rkey == NULL)
		return UNIO_ERR_INVALID_PARAM;
	if (ep->iface->ctl->rkey_unpack == NULL)
		return UNIO_ERR_UNSUPPORTED;
	if (len != ep->iface->attr.rkey_packed_len)
		return UNIO_ERR_INVALID_ADDR;
	return ep->iface->ctl->rkey_unpack(ep, buf, len, rkey);
}

void
unio_tl_rkey_release(struct unio_tl_ep *ep, struct unio_tl_rkey *rkey)
{
	if (ep != NULL && rkey != NULL && ep->iface->ctl->rkey_release != NULL)
		ep->iface->ctl->rkey_release(ep, rkey);
}

unio_status_t
unio_tl_iface_get_sockaddr(struct unio_tl_iface *iface, struct sockaddr_storage *sa)
{
	if (iface == NULL || sa == NULL)
		return UNIO_ERR_INVALID_PARAM;
	if (!(iface->attr.cap & UNIO_TL_CAP_CONNECT_SOCKADDR) ||
	    iface->ctl->iface_get_sockaddr == NULL)
		return UNIO_ERR_UNSUPPORTED;
	return iface->ctl->iface_get_sockaddr(iface, sa);
}

unio_status_t
unio_tl_sockaddr_to_addr(struct unio_tl_iface *iface, const struct sockaddr *sa, socklen_t len,
			 void *addr)
{
	if (iface == NULL || sa == NULL || addr == NULL || len < sizeof(sa->sa_family))
		return UNIO_ERR_INVALID_PARAM;
	if (!(iface->attr.cap & UNIO_TL_CAP_CONNECT_SOCKADDR) ||
	    iface->ctl->sockaddr_to_addr == NULL)
		return UNIO_ERR_UNSUPPORTED;
	return iface->ctl->sockaddr_to_addr(iface, sa, len, addr);
}

void
unio_tl_cap_string(uint64_t cap, char *buf, size_t len)
{
	static const char *const names[] = {
		"am_short", "am_bcopy", "am_zcopy", "put_zcopy", "get_zcopy", "rkey_ptr",
		"connect_iface", "event_fd", "peer_failure", "ordered", "rma_target",
		"connect_sockaddr",
	};
	size_t off = 0;

	if (len == 0)
		return;
	buf[0] = '\0';
	for (unsigned int i = 0; i < RTE_DIM(names); i++) {
		if ((cap & (1ull << i)) == 0)
			continue;
		int n = snprintf(buf + off, len - off, "%s%s", off != 0 ? " " : "", names[i]);

		if (n < 0 || (size_t)n >= len - off)
			return;
		off += (size_t)n;
	}
}

/* UCX's transport names: Unio's driver for the same job, or the kind Unio has no driver of. */
#define R "an RDMA transport"
#define G "a GPU transport"
static const struct { const char *ucx, *unio, *none; } ucx_tls[] = {
	{ "sm", "shm", NULL }, { "mm", "shm", NULL }, { "posix", "shm", NULL },
	{ "sysv", "shm", NULL }, { "cma", "shm", NULL }, { "xpmem", "shm", NULL },
	{ "knem", "shm", NULL },
	{ "rc", NULL, R }, { "rc_v", NULL, R }, { "rc_x", NULL, R },
	{ "rc_verbs", NULL, R }, { "rc_mlx5", NULL, R }, { "ud", NULL, R },
	{ "ud_v", NULL, R }, { "ud_x", NULL, R }, { "ud_verbs", NULL, R },
	{ "ud_mlx5", NULL, R }, { "dc", NULL, R }, { "dc_x", NULL, R },
	{ "dc_mlx5", NULL, R }, { "ib", NULL, R }, { "rdmacm", NULL, R },
	{ "cuda", NULL, G }, { "cuda_copy", NULL, G }, { "cuda_ipc", NULL, G },
	{ "gdr_copy", NULL, G }, { "rocm", NULL, G }, { "rocm_copy", NULL, G },
	{ "rocm_ipc", NULL, G },
};
#undef R
#undef G

/* For a UNIO_TLS name that is UCX's: ": UCX's posix is Unio's shm" and the like, else "". */
static const char *
tls_ucx_hint(const char *name, char *buf, size_t len)
{
	for (unsigned int i = 0; i < RTE_DIM(ucx_tls); i++) {
		if (strcmp(name, ucx_tls[i].ucx) != 0)
			continue;
		if (ucx_tls[i].unio != NULL)
			snprintf(buf, len, ": UCX's %s is Unio's %s", name, ucx_tls[i].unio);
		else
			snprintf(buf, len, ": UCX's %s is %s, which Unio has no driver for yet "
				 "(tcp and ethdev reach other hosts)", name, ucx_tls[i].none);
		return buf;
	}
	return "";
}

void
unio_tl_check_tls(const struct unio_config *cfg)
{
	unsigned int n = unio_tl_driver_count();
	char built[128] = "", hint[192];
	size_t len = 0;

	for (unsigned int i = 0; i < n; i++)
		len += (size_t)snprintf(built + len, len < sizeof(built) ? sizeof(built) - len : 0,
					"%s%s", i != 0 ? ", " : "", unio_tl_driver_get(i)->name);
	for (unsigned int k = 0; k < cfg->tls.count; k++) {
		unsigned int i = 0;

		while (i < n && fnmatch(cfg->tls.items[k], unio_tl_driver_get(i)->name, 0) != 0)
			i++;
		if (i == n)
			TL_LOG(WARNING, "UNIO_TLS: '%s' names no transport driver of this build "
				"(%s)%s", cfg->tls.items[k], built,
				tls_ucx_hint(cfg->tls.items[k], hint, sizeof(hint)));
	}
}
