/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm memory domain and RMA.  Any memory can be read and written by a peer through CMA
 * (process_vm_readv / process_vm_writev) with an rkey that carries (pid, base, length).
 * Memory from mem_alloc lives in its own memfd: its rkey also names the memfd, and the
 * importing side maps it and copies with memcpy: direct mapping.
 *
 * Mapping a peer's memfd costs a pidfd_getfd (or an SCM_RIGHTS round trip), an fstat, an
 * mmap, the page faults of the first touches and, later, an munmap; keys of one allocation
 * are unpacked again and again (one per message in RPC-like use).  So the mappings sit in
 * a registration cache per iface (lib/core/rcache.c), looked up by the peer's address range
 * (the peer's pid folded into the bits above 47), identified by (pid, allocation id),
 * reference counted by the unpacked keys, bounded by UNIO_SHM_MAP_CACHE bytes (least
 * recently used unreferenced mappings go first; a key that does not fit uses CMA).  A key
 * for a new allocation at an address the cache holds drops the old mapping: memory the
 * peer unmapped and mapped again is never reached through the stale mapping.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "shm_priv.h"
#include "unio_tl_shm.h"

#define SHM_CMA_IOV 64

static inline struct shm_iface *
shm_iface_of(struct unio_tl_iface *iface)
{
	return (struct shm_iface *)iface;
}

unio_status_t
shm_mem_reg(struct unio_tl_iface *iface, void *addr, size_t len, struct unio_tl_memh *memh)
{
	RTE_SET_USED(iface);
	memh->addr = addr;
	memh->len = len;
	memh->priv = NULL;   /* CMA needs no registration */
	return UNIO_OK;
}

void
shm_mem_dereg(struct unio_tl_iface *iface, struct unio_tl_memh *memh)
{
	RTE_SET_USED(iface);
	memh->addr = NULL;
	memh->len = 0;
}

static struct shm_alloc *
alloc_slot(struct shm_iface *si)
{
	for (unsigned int i = 0; i < SHM_MAX_ALLOCS; i++)
		if (si->allocs[i].fd < 0)
			return &si->allocs[i];
	return NULL;
}

unio_status_t
shm_mem_alloc(struct unio_tl_iface *iface, size_t len, struct unio_tl_memh *memh)
{
	struct shm_iface *si = shm_iface_of(iface);
	struct shm_alloc a = { .id = shm_random_id(), .map_len = len }, *slot;
	void *p;

	a.fd = shm_memfd("unio-shm-mem", a.id, &a.map_len, si->hugepages);
	if (a.fd < 0)
		return UNIO_ERR_NO_MEMORY;
	p = mmap(NULL, a.map_len, PROT_READ | PROT_WRITE, MAP_SHARED, a.fd, 0);
	if (p == MAP_FAILED) {
		close(a.fd);
		return UNIO_ERR_NO_MEMORY;
	}
	pthread_mutex_lock(&si->lock);
	slot = alloc_slot(si);
	if (slot != NULL)
		*slot = a;
	pthread_mutex_unlock(&si->lock);
	if (slot == NULL) {
		SHM_LOG(ERR, "mem_alloc: more than %u allocations", SHM_MAX_ALLOCS);
		munmap(p, a.map_len);
		close(a.fd);
		return UNIO_ERR_NO_RESOURCE;
	}
	memh->addr = p;
	memh->len = len;
	memh->priv = slot;
	return UNIO_OK;
}

void
shm_mem_free(struct unio_tl_iface *iface, struct unio_tl_memh *memh)
{
	struct shm_iface *si = shm_iface_of(iface);
	struct shm_alloc *a = memh->priv;
	int fd;

	if (a == NULL)
		return;
	munmap(memh->addr, a->map_len);
	pthread_mutex_lock(&si->lock);
	fd = a->fd;
	a->fd = -1;
	pthread_mutex_unlock(&si->lock);
	close(fd);
	memh->addr = memh->priv = NULL;
}

unio_status_t
shm_rkey_pack(struct unio_tl_iface *iface, const struct unio_tl_memh *memh, void *buf)
{
	struct shm_iface *si = shm_iface_of(iface);
	const struct shm_alloc *a = memh->priv;
	struct shm_rkey_packed k = {
		.magic = SHM_RKEY_MAGIC, .pid = (uint32_t)getpid(),
		.base = (uintptr_t)memh->addr, .len = memh->len, .iface_id = si->iface_id,
	};

	if (a != NULL) {
		k.flags = SHM_RKEY_F_ALLOC;
		k.fd = (uint32_t)a->fd;
		k.alloc_id = a->id;
		k.map_len = a->map_len;
	}
	memcpy(buf, &k, sizeof(k));
	return UNIO_OK;
}

/* ---- direct mapping cache ---- */

/* The cache's address of a peer's range: the pid above the 47 bits of user addresses. */
#define MAP_ADDR_BITS 47

static uint64_t
map_ident(const struct shm_rkey_packed *k)
{
	return (k->alloc_id ^ ((uint64_t)k->pid * 0x9e3779b97f4a7c15ull)) | 1;
}

static unio_status_t
map_reg(void *arg, void *addr, size_t len, void **handle)
{
	RTE_SET_USED(arg), RTE_SET_USED(addr), RTE_SET_USED(len), RTE_SET_USED(handle);
	return UNIO_ERR_UNSUPPORTED;   /* only foreign lookups (map_reg_key) */
}

/* Map the peer's memfd named by the key @p ctx; the region is [base, base + map_len). */
static unio_status_t
map_reg_key(void *arg, void *ctx, void *addr, size_t len, void **handle)
{
	const struct shm_rkey_packed *k = ctx;
	struct stat st;
	void *p;
	int fd;

	RTE_SET_USED(arg), RTE_SET_USED(addr);
	fd = shm_open_peer_fd((pid_t)k->pid, (int)k->fd, k->iface_id, k->alloc_id);
	if (fd < 0)
		return UNIO_ERR_PERMISSION;
	if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < len) {
		close(fd);
		return UNIO_ERR_INVALID_ADDR;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return UNIO_ERR_NO_MEMORY;
	*handle = p;
	return UNIO_OK;
}

static void
map_dereg(void *arg, void *addr, size_t len, void *handle)
{
	RTE_SET_USED(arg), RTE_SET_USED(addr);
	munmap(handle, len);
}

static const struct unio_rcache_ops map_ops = {
	.reg = map_reg, .dereg = map_dereg, .reg_ctx = map_reg_key,
};

/* The local address of the peer allocation of @p k, its cache region in *region_p. */
static void *
map_peer_alloc(struct shm_iface *si, const struct shm_rkey_packed *k,
	       struct unio_rcache_region **region_p)
{
	struct unio_rcache_params p = { .ops = &map_ops, .arg = si,
					.max_regions = 4 * SHM_MAX_ALLOCS,
					.max_bytes = si->map_cache_max };
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	unio_status_t st;

	/* the region must start at the mapping (offset 0 of the memfd) and be page-sized */
	if (k->base >= (1ull << MAP_ADDR_BITS) || k->map_len >= (1ull << MAP_ADDR_BITS) ||
	    k->base + k->map_len > (1ull << MAP_ADDR_BITS) || (k->base & (page - 1)) != 0 ||
	    (k->map_len & (page - 1)) != 0 || k->map_len == 0)
		return NULL;
	if (si->map_cache == NULL && unio_rcache_create(&p, &si->map_cache) != UNIO_OK)
		return NULL;
	st = unio_rcache_get_ident(si->map_cache,
				   (uintptr_t)(k->base | ((uint64_t)(k->pid % 65521u) <<
							  MAP_ADDR_BITS)),
				   k->map_len, map_ident(k), (void *)(uintptr_t)k, region_p);
	if (st != UNIO_OK) {
		SHM_LOG(DEBUG, "rkey_unpack: %" PRIu64 " bytes of pid %u not mapped (%s): CMA",
			k->map_len, k->pid, unio_status_string(st));
		return NULL;
	}
	return (*region_p)->handle;
}

void
shm_maps_forget_pid(struct shm_iface *si, pid_t pid)
{
	uint64_t at = (uint64_t)((uint32_t)pid % 65521u) << MAP_ADDR_BITS;

	/* every range of that pid; a range still used by a key goes at its last put */
	unio_rcache_invalidate(si->map_cache, (void *)(uintptr_t)at, 1ull << MAP_ADDR_BITS);
}

void
shm_maps_release_all(struct shm_iface *si)
{
	unio_rcache_destroy(si->map_cache);
	si->map_cache = NULL;
}

unio_status_t
unio_tl_shm_map_stats(struct unio_tl_iface *iface, struct unio_rcache_stats *stats)
{
	if (iface == NULL || stats == NULL || strcmp(iface->driver->name, "shm") != 0)
		return UNIO_ERR_INVALID_PARAM;
	memset(stats, 0, sizeof(*stats));
	unio_rcache_get_stats(shm_iface_of(iface)->map_cache, stats);
	return UNIO_OK;
}

unio_status_t
shm_rkey_unpack(struct unio_tl_ep *ep, const void *buf, size_t len, struct unio_tl_rkey *rkey)
{
	struct shm_ep *se = (struct shm_ep *)ep;
	struct shm_rkey_packed k;

	if (len != sizeof(k))
		return UNIO_ERR_INVALID_ADDR;
	memcpy(&k, buf, sizeof(k));
	/* the key must come from this ep's peer, and describe a sane range */
	if (k.magic != SHM_RKEY_MAGIC || (pid_t)k.pid != se->peer_pid ||
	    k.iface_id != se->peer_iface_id || k.base + k.len < k.base ||
	    ((k.flags & SHM_RKEY_F_ALLOC) && k.len > k.map_len) ||
	    (k.flags & ~SHM_RKEY_F_ALLOC) != 0) {
		SHM_LOG(ERR, "rkey_unpack: not a key of this ep's peer");
		return UNIO_ERR_INVALID_ADDR;
	}
	rkey->remote_base = k.base;
	rkey->remote_len = k.len;
	rkey->local_ptr = NULL;
	rkey->priv = NULL;
	if ((k.flags & SHM_RKEY_F_ALLOC) && (ep->cap & UNIO_TL_CAP_RKEY_PTR)) {
		struct unio_rcache_region *r;
		uint8_t *p = map_peer_alloc(shm_iface_of(ep->iface), &k, &r);

		if (p != NULL) {
			rkey->local_ptr = p;
			rkey->priv = r;
		}
	}
	return UNIO_OK;
}

void
shm_rkey_release(struct unio_tl_ep *ep, struct unio_tl_rkey *rkey)
{
	if (rkey->priv != NULL)
		unio_rcache_put(shm_iface_of(ep->iface)->map_cache, rkey->priv);
	rkey->local_ptr = rkey->priv = NULL;
}

/* ---- put / get ---- */

static unio_status_t
range_check(const struct unio_tl_rkey *rkey, uint64_t addr, const struct iovec *iov,
	    size_t iovcnt, size_t *total)
{
	size_t t = 0;

	for (size_t i = 0; i < iovcnt; i++)
		t += iov[i].iov_len;
	if (!unio_tl_rkey_covers(rkey, addr, t))
		return UNIO_ERR_OUT_OF_RANGE;
	*total = t;
	return UNIO_OK;
}

static unio_status_t
cma_errno(int err)
{
	switch (err) {
	case EPERM:
		return UNIO_ERR_PERMISSION;
	case ESRCH:
		return UNIO_ERR_CONNECTION_RESET;
	case EFAULT:
		return UNIO_ERR_OUT_OF_RANGE;
	default:
		return UNIO_ERR_IO;
	}
}

/* the kernel may move fewer bytes than asked: advance the local iov and go on */
static unio_status_t
cma_xfer(pid_t pid, int write, const struct iovec *iov, size_t iovcnt, uint64_t raddr,
	 size_t total)
{
	struct iovec liov[UNIO_TL_MAX_IOV];
	size_t first = 0;

	memcpy(liov, iov, iovcnt * sizeof(*iov));
	while (total > 0) {
		struct iovec r = { (void *)(uintptr_t)raddr, total };
		ssize_t n = write ? process_vm_writev(pid, liov + first, iovcnt - first, &r, 1, 0) :
				    process_vm_readv(pid, liov + first, iovcnt - first, &r, 1, 0);

		if (n <= 0)
			return n == 0 ? UNIO_ERR_IO : cma_errno(errno);
		total -= (size_t)n;
		raddr += (uint64_t)n;
		while (n > 0 && first < iovcnt) {
			size_t step = RTE_MIN((size_t)n, liov[first].iov_len);

			liov[first].iov_base = (uint8_t *)liov[first].iov_base + step;
			liov[first].iov_len -= step;
			n -= (ssize_t)step;
			if (liov[first].iov_len == 0)
				first++;
		}
	}
	return UNIO_OK;
}

static void
map_copy(const struct unio_tl_rkey *rkey, int write, const struct iovec *iov, size_t iovcnt,
	 uint64_t raddr)
{
	uint8_t *p = (uint8_t *)rkey->local_ptr + (raddr - rkey->remote_base);

	for (size_t i = 0; i < iovcnt; p += iov[i].iov_len, i++) {
		if (write)
			memcpy(p, iov[i].iov_base, iov[i].iov_len);
		else
			memcpy(iov[i].iov_base, p, iov[i].iov_len);
	}
}

static unio_status_t
rma(struct unio_tl_ep *ep, int write, const struct iovec *iov, size_t iovcnt, uint64_t raddr,
    const struct unio_tl_rkey *rkey)
{
	struct shm_ep *se = (struct shm_ep *)ep;
	unio_status_t st;
	size_t total;

	st = range_check(rkey, raddr, iov, iovcnt, &total);
	if (st != UNIO_OK)
		return st;
	if (se->dead)
		return UNIO_ERR_CONNECTION_RESET;
	if (rkey->local_ptr != NULL) {
		map_copy(rkey, write, iov, iovcnt, raddr);
		return UNIO_OK;
	}
	if (!(ep->cap & (write ? UNIO_TL_CAP_PUT_ZCOPY : UNIO_TL_CAP_GET_ZCOPY)))
		return UNIO_ERR_UNSUPPORTED;
	if (iovcnt > UNIO_TL_MAX_IOV)
		return UNIO_ERR_INVALID_PARAM;
	return cma_xfer(se->peer_pid, write, iov, iovcnt, raddr, total);
}

unio_status_t
shm_put_zcopy(struct unio_tl_ep *ep, const struct iovec *iov, size_t iovcnt,
	      uint64_t remote_addr, const struct unio_tl_rkey *rkey,
	      struct unio_tl_completion *comp)
{
	RTE_SET_USED(comp);
	return rma(ep, 1, iov, iovcnt, remote_addr, rkey);
}

unio_status_t
shm_get_zcopy(struct unio_tl_ep *ep, const struct iovec *iov, size_t iovcnt,
	      uint64_t remote_addr, const struct unio_tl_rkey *rkey,
	      struct unio_tl_completion *comp)
{
	RTE_SET_USED(comp);
	return rma(ep, 0, iov, iovcnt, remote_addr, rkey);
}

bool
shm_cma_probe(pid_t pid, uint64_t addr, uint64_t want)
{
	uint64_t got = 0;
	struct iovec l = { &got, sizeof(got) }, r = { (void *)(uintptr_t)addr, sizeof(got) };

	if (process_vm_readv(pid, &l, 1, &r, 1, 0) != (ssize_t)sizeof(got)) {
		SHM_LOG(INFO, "CMA to pid %d refused (%s): no put/get zero-copy to it",
			(int)pid, strerror(errno));
		return false;
	}
	return got == want;
}
