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
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "shm_priv.h"
#include "unio_memcpy.h"
#include "unio_tl_shm.h"

#define SHM_CMA_IOV 64

static inline struct shm_iface *
shm_iface_of(struct unio_tl_iface *iface)
{
	return (struct shm_iface *)iface;
}

/* ---- registrations: what a key may grant ---- */

#define REGS_BYTES RTE_ALIGN_CEIL(SHM_MAX_REGS * sizeof(struct shm_reg), 4096)

/*
 * The table lives in a memfd sealed against writes through any later mapping
 * (F_SEAL_FUTURE_WRITE): peers map it read-only and check keys with a few loads; only this
 * process's own mapping, made before the seal, writes it.  Where the kernel has no such
 * seal, the table is heap memory that peers read with CMA.
 */
unio_status_t
shm_regs_create(struct shm_iface *si)
{
	char name[64];
	void *p = MAP_FAILED;
	int fd;

	si->regs_fd = -1;
	snprintf(name, sizeof(name), "unio-shm-regs-%016" PRIx64, SHM_REGS_ID(si->iface_id));
	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd >= 0 && ftruncate(fd, (off_t)REGS_BYTES) == 0)
		p = mmap(NULL, REGS_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p != MAP_FAILED && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
				     F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) != 0) {
		SHM_LOG(INFO, "no write seal (%s): peers check keys with CMA", strerror(errno));
		munmap(p, REGS_BYTES);
		p = MAP_FAILED;
	}
	if (p != MAP_FAILED) {
		si->regs = p;
		si->regs_fd = fd;
	} else {
		if (fd >= 0)
			close(fd);
		si->regs = calloc(SHM_MAX_REGS, sizeof(*si->regs));
	}
	si->reg_free = calloc(SHM_MAX_REGS, sizeof(*si->reg_free));
	if (si->regs == NULL || si->reg_free == NULL)
		return UNIO_ERR_NO_MEMORY;
	for (uint32_t i = 0; i < SHM_MAX_REGS; i++)
		si->reg_free[i] = SHM_MAX_REGS - 1 - i;
	si->n_reg_free = SHM_MAX_REGS;
	return UNIO_OK;
}

void
shm_regs_destroy(struct shm_iface *si)
{
	if (si->regs_fd >= 0) {
		munmap(si->regs, REGS_BYTES);
		close(si->regs_fd);
	} else {
		free(si->regs);
	}
	si->regs = NULL;
	si->regs_fd = -1;
	free(si->reg_free);
	si->reg_free = NULL;
}

/* Map the peer's sealed table read-only (once per ep): NULL when it has none or it fails. */
static const struct shm_reg *
peer_regs(struct shm_ep *se)
{
	struct stat st;
	int fd, seals;
	void *p;

	if (se->peer_regs_tried)
		return se->peer_regs_map;
	se->peer_regs_tried = true;
	if (se->peer_regs_fd == UINT32_MAX || se->peer_regs_fd > INT32_MAX)
		return NULL;
	fd = shm_open_peer_fd(se->peer_pid, (int)se->peer_regs_fd, se->peer_iface_id,
			      se->peer_fd_key, "unio-shm-regs", SHM_REGS_ID(se->peer_iface_id));
	if (fd < 0)
		return NULL;
	/* sealed as promised (so nobody but the owner writes it), and as long as it must be */
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & (F_SEAL_FUTURE_WRITE | F_SEAL_SHRINK)) !=
	    (F_SEAL_FUTURE_WRITE | F_SEAL_SHRINK) || fstat(fd, &st) != 0 ||
	    (uint64_t)st.st_size < REGS_BYTES) {
		close(fd);
		return NULL;
	}
	p = mmap(NULL, REGS_BYTES, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p != MAP_FAILED)
		se->peer_regs_map = p;
	return se->peer_regs_map;
}

void
shm_ep_regs_unmap(struct shm_ep *ep)
{
	if (ep->peer_regs_map != NULL)
		munmap((void *)(uintptr_t)ep->peer_regs_map, REGS_BYTES);
	ep->peer_regs_map = NULL;
}

/* A random secret, never 0: getrandom() 32 at a time (one system call per 32 keys). */
static uint64_t
secret_take(struct shm_iface *si)
{
	uint64_t v;

	while (si->n_secrets == 0) {
		ssize_t n = getrandom(si->secrets, sizeof(si->secrets), 0);

		if (n == (ssize_t)sizeof(si->secrets)) {
			si->n_secrets = RTE_DIM(si->secrets);
		} else {
			for (unsigned int i = 0; i < RTE_DIM(si->secrets); i++)
				si->secrets[i] = shm_random_id();
			si->n_secrets = RTE_DIM(si->secrets);
		}
	}
	v = si->secrets[--si->n_secrets];
	return v != 0 ? v : 1;
}

/* Fill a free slot with [addr, addr + len): its index, or SHM_MAX_REGS when all are taken. */
static uint32_t
reg_add(struct shm_iface *si, const void *addr, size_t len)
{
	uint32_t slot = SHM_MAX_REGS;
	struct shm_reg *r;

	pthread_mutex_lock(&si->lock);
	if (si->n_reg_free > 0) {
		slot = si->reg_free[--si->n_reg_free];
		r = &si->regs[slot];
		r->base = (uintptr_t)addr;
		r->len = len;
		/* the secret last: a peer reading the entry meanwhile sees it free (0) */
		__atomic_store_n(&r->secret, secret_take(si), __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&si->lock);
	return slot;
}

static void
reg_del(struct shm_iface *si, uint32_t slot)
{
	pthread_mutex_lock(&si->lock);
	__atomic_store_n(&si->regs[slot].secret, 0, __ATOMIC_RELEASE);
	si->reg_free[si->n_reg_free++] = slot;
	pthread_mutex_unlock(&si->lock);
}

/* The registration @p memh names (mem_reg), NULL for an allocation (mem_alloc). */
static struct shm_reg *
memh_reg(const struct shm_iface *si, const struct unio_tl_memh *memh)
{
	const struct shm_reg *r = memh->priv;

	return r >= si->regs && r < si->regs + SHM_MAX_REGS ? (struct shm_reg *)(uintptr_t)r :
	       NULL;
}

unio_status_t
shm_mem_reg(struct unio_tl_iface *iface, void *addr, size_t len, struct unio_tl_memh *memh)
{
	struct shm_iface *si = shm_iface_of(iface);
	uint32_t slot = reg_add(si, addr, len);

	if (slot == SHM_MAX_REGS) {
		SHM_LOG(ERR, "mem_reg: all %u registrations taken", SHM_MAX_REGS);
		return UNIO_ERR_NO_RESOURCE;
	}
	memh->addr = addr;
	memh->len = len;
	memh->priv = &si->regs[slot];
	return UNIO_OK;
}

void
shm_mem_dereg(struct unio_tl_iface *iface, struct unio_tl_memh *memh)
{
	struct shm_iface *si = shm_iface_of(iface);
	struct shm_reg *r = memh_reg(si, memh);

	if (r == NULL)
		return;   /* an allocation: shm_mem_free() */
	reg_del(si, (uint32_t)(r - si->regs));
	memh->addr = memh->priv = NULL;
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
	a.reg = reg_add(si, p, len);
	pthread_mutex_lock(&si->lock);
	slot = a.reg < SHM_MAX_REGS ? alloc_slot(si) : NULL;
	if (slot != NULL)
		*slot = a;
	pthread_mutex_unlock(&si->lock);
	if (slot == NULL) {
		SHM_LOG(ERR, "mem_alloc: more than %u allocations or %u registrations",
			SHM_MAX_ALLOCS, SHM_MAX_REGS);
		if (a.reg < SHM_MAX_REGS)
			reg_del(si, a.reg);
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
	reg_del(si, a->reg);
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
	const struct shm_reg *r = memh_reg(si, memh);
	const struct shm_alloc *a = r == NULL ? memh->priv : NULL;
	struct shm_rkey_packed k = {
		.magic = SHM_RKEY_MAGIC, .base = (uintptr_t)memh->addr, .len = memh->len,
	};

	if (a != NULL) {
		k.flags = SHM_RKEY_F_ALLOC;
		k.fd = (uint32_t)a->fd;
		k.alloc_id = a->id;
		k.map_len = a->map_len;
		r = &si->regs[a->reg];
	}
	if (r == NULL)
		return UNIO_ERR_INVALID_PARAM;   /* neither registered nor allocated here */
	k.slot = (uint32_t)(r - si->regs);
	k.secret = __atomic_load_n(&r->secret, __ATOMIC_RELAXED);
	memcpy(buf, &k, sizeof(k));
	return UNIO_OK;
}

/* ---- direct mapping cache ---- */

/* The cache's address of a peer's range: the pid above the 47 bits of user addresses. */
#define MAP_ADDR_BITS 47

/*
 * A cached mapping and whose allocation it is: the cache's address folds the pid (modulo
 * 65521, above bit 47) and its identity hashes it with the allocation id, so two peers can
 * meet on one entry (pids that agree modulo 65521, an allocation id chosen to match); a hit
 * is used only for the exact owner.
 */
struct map_owner {
	void *p;
	pid_t pid;
	uint64_t alloc_id;
};

/* What map_reg_key() needs: the key and its owner (the ep's peer). */
struct map_ctx {
	const struct shm_rkey_packed *k;
	const struct shm_ep *se;
};

static uint64_t
map_ident(const struct shm_rkey_packed *k, pid_t pid)
{
	return (k->alloc_id ^ ((uint64_t)pid * 0x9e3779b97f4a7c15ull)) | 1;
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
	const struct map_ctx *c = ctx;
	const struct shm_rkey_packed *k = c->k;
	struct map_owner *m;
	struct stat st;
	void *p;
	int fd;

	RTE_SET_USED(arg), RTE_SET_USED(addr);
	fd = shm_open_peer_fd(c->se->peer_pid, (int)k->fd, c->se->peer_iface_id,
			      c->se->peer_fd_key, "unio-shm-mem", k->alloc_id);
	if (fd < 0)
		return UNIO_ERR_PERMISSION;
	if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < len) {
		close(fd);
		return UNIO_ERR_INVALID_ADDR;
	}
	m = malloc(sizeof(*m));
	p = m != NULL ? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
	close(fd);
	if (p == MAP_FAILED) {
		free(m);
		return UNIO_ERR_NO_MEMORY;
	}
	*m = (struct map_owner){ .p = p, .pid = c->se->peer_pid, .alloc_id = k->alloc_id };
	*handle = m;
	return UNIO_OK;
}

static void
map_dereg(void *arg, void *addr, size_t len, void *handle)
{
	struct map_owner *m = handle;

	RTE_SET_USED(arg), RTE_SET_USED(addr);
	munmap(m->p, len);
	free(m);
}

static const struct unio_rcache_ops map_ops = {
	.reg = map_reg, .dereg = map_dereg, .reg_ctx = map_reg_key,
};

/* The local address of the peer allocation of @p k, its cache region in *region_p. */
static void *
map_peer_alloc(struct shm_iface *si, const struct shm_ep *se, const struct shm_rkey_packed *k,
	       struct unio_rcache_region **region_p)
{
	struct map_ctx c = { k, se };
	uint64_t pid = (uint64_t)se->peer_pid;
	struct map_owner *m;
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
				   (uintptr_t)(k->base | ((pid % 65521u) << MAP_ADDR_BITS)),
				   k->map_len, map_ident(k, se->peer_pid), &c, region_p);
	if (st != UNIO_OK) {
		SHM_LOG(DEBUG, "rkey_unpack: %" PRIu64 " bytes of pid %d not mapped (%s): CMA",
			k->map_len, (int)se->peer_pid, unio_status_string(st));
		return NULL;
	}
	m = (*region_p)->handle;
	if (m->pid != se->peer_pid || m->alloc_id != k->alloc_id) {
		SHM_LOG(ERR, "rkey_unpack: the mapping found belongs to pid %d, not the peer",
			(int)m->pid);
		unio_rcache_put(si->map_cache, *region_p);
		return NULL;
	}
	return m->p;
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
unio_tl_shm_tx_stats(struct unio_tl_iface *iface, struct unio_tl_shm_tx_stats *stats)
{
	const struct shm_iface *si;

	if (iface == NULL || stats == NULL || strcmp(iface->driver->name, "shm") != 0)
		return UNIO_ERR_INVALID_PARAM;
	si = shm_iface_of(iface);
	*stats = (struct unio_tl_shm_tx_stats){
		.no_room = si->tx_no_room, .waits = si->tx_waits,
	};
	return UNIO_OK;
}

/*
 * The peer's registration named by @p k (one CMA read of its table entry): live, with the
 * key's secret, and covering the key's range.  Without CMA to the peer a key could not be
 * used through CMA anyway.
 */
static bool
reg_check(struct shm_ep *se, const struct shm_rkey_packed *k)
{
	const struct shm_reg *t;
	struct shm_reg e;
	struct iovec l = { &e, sizeof(e) }, r;

	if (k->slot >= SHM_MAX_REGS || k->secret == 0 || se->peer_regs == 0 ||
	    !(se->super.cap & (UNIO_TL_CAP_GET_ZCOPY | UNIO_TL_CAP_PUT_ZCOPY)))
		return false;
	t = peer_regs(se);
	if (t != NULL) {
		/* the owner writes the secret last and clears it first: the same secret before
		 * and after the fields means the fields are that registration's */
		e.secret = __atomic_load_n(&t[k->slot].secret, __ATOMIC_ACQUIRE);
		e.base = __atomic_load_n(&t[k->slot].base, __ATOMIC_RELAXED);
		e.len = __atomic_load_n(&t[k->slot].len, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&t[k->slot].secret, __ATOMIC_RELAXED) != e.secret)
			return false;
	} else {
		r.iov_base = (void *)(uintptr_t)(se->peer_regs + (uint64_t)k->slot * sizeof(e));
		r.iov_len = sizeof(e);
		if (process_vm_readv(se->peer_pid, &l, 1, &r, 1, 0) != (ssize_t)sizeof(e))
			return false;
	}
	return e.secret == k->secret && k->base >= e.base && k->len <= e.len &&
	       k->base - e.base <= e.len - k->len;
}

unio_status_t
shm_rkey_unpack(struct unio_tl_ep *ep, const void *buf, size_t len, struct unio_tl_rkey *rkey)
{
	struct shm_ep *se = (struct shm_ep *)ep;
	struct shm_rkey_packed k;

	if (len != sizeof(k))
		return UNIO_ERR_INVALID_ADDR;
	memcpy(&k, buf, sizeof(k));
	/* a sane range; its owner is this ep's peer, whatever the key says */
	if (k.magic != SHM_RKEY_MAGIC || k.base + k.len < k.base ||
	    ((k.flags & SHM_RKEY_F_ALLOC) && k.len > k.map_len) ||
	    (k.flags & ~SHM_RKEY_F_ALLOC) != 0) {
		SHM_LOG(ERR, "rkey_unpack: not a shm key");
		return UNIO_ERR_INVALID_ADDR;
	}
	rkey->remote_base = k.base;
	rkey->remote_len = k.len;
	rkey->local_ptr = NULL;
	rkey->priv = NULL;
	if ((k.flags & SHM_RKEY_F_ALLOC) && (ep->cap & UNIO_TL_CAP_RKEY_PTR)) {
		struct unio_rcache_region *r;
		uint8_t *p = map_peer_alloc(shm_iface_of(ep->iface), se, &k, &r);

		if (p != NULL) {
			rkey->local_ptr = p;
			rkey->priv = r;
			return UNIO_OK;   /* the memfd the peer named by its id: its allocation */
		}
	}
	/* through CMA: only a range the peer registered, in its table under this secret */
	if (!reg_check(se, &k)) {
		SHM_LOG(ERR, "rkey_unpack: no registration of the peer grants this key");
		return UNIO_ERR_INVALID_ADDR;
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
	size_t total = 0;

	for (size_t i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	for (size_t i = 0; i < iovcnt; p += iov[i].iov_len, i++) {
		if (write)
			unio_memcpy_part(p, iov[i].iov_base, iov[i].iov_len, total);
		else
			unio_memcpy_part(iov[i].iov_base, p, iov[i].iov_len, total);
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
