/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory mapping, remote keys, put / get.
 *
 * Each worker publishes its live registrations in a table of RMA_TABLE_SLOTS entries that
 * lives in memory peers can map (allocated from the shm driver) or read (CMA).  A packed key
 * carries (slot, generation, random cookie, base, length) and, per driver, the driver's
 * key for the data and for the table.  The accessing side checks the range and then the
 * owner's entry right before each copy: a forged, mutated or stale key never reaches the
 * transport.
 *
 * A put or get longer than the lane's per-call limit (max_put_zcopy / max_get_zcopy: tcp's
 * frames) goes out in chunks of at most that size; the request completes when the last chunk
 * did, with the first error.  Chunks the transport has no room for now wait in a per-worker
 * queue that worker progress retries in order (new operations queue behind it).
 */

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <rte_cycles.h>

#include "proto_am_rma.h"
#include "unio_log.h"
#include "unio_memcpy.h"

#define RKEY_MAGIC   0x59454b52u     /* "RKEY" */
#define RKEY_VERSION 1
#define RKEY_MAX_TL  8

/* packed key: this, then n_tl (struct rkey_wire_tl + data key + table key) */
struct rkey_wire_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t n_tl;
	uint64_t cookie;
	uint64_t gen;
	uint64_t base;
	uint64_t len;
	uint32_t slot;
	uint32_t mem_type;
};

struct rkey_wire_tl {
	char driver[UNIO_TL_NAME_MAX];
	uint16_t data_len;
	uint16_t table_len;
	uint32_t pad;
};

#define RMA_PROTO_OP 0xa0  /* req->proto of a put/get waiting for its transport */
#define RMA_PROTO_FENCED 0xa1  /* a put/get waiting in the fence queue, not issued yet */

static uint64_t
random64(void)
{
	uint64_t v = 0;

	while (v == 0)
		if (getrandom(&v, sizeof(v), 0) != sizeof(v))
			v = rte_rdtsc() * 0x9e3779b97f4a7c15ull;
	return v;
}

static bool
iface_can_key(const struct unio_tl_iface *ifc)
{
	return ifc->ctl->mem_reg != NULL && ifc->ctl->rkey_pack != NULL &&
	       ifc->attr.rkey_packed_len > 0 && ifc->attr.rkey_packed_len <= UNIO_TL_RKEY_MAX;
}

/* The iface whose mem_alloc gives memory peers can map: prefer the host (shm) one. */
static struct unio_tl_iface *
alloc_iface(struct unio_worker *w)
{
	struct unio_tl_iface *best = NULL;

	for (unsigned int i = 0; i < w->n_ifaces; i++) {
		struct unio_tl_iface *ifc = w->ifaces[i];

		if (ifc->ctl->mem_alloc == NULL || !(ifc->attr.cap & UNIO_TL_CAP_RKEY_PTR) ||
		    ifc->attr.reach == UNIO_TL_REACH_SELF)
			continue;
		if (best == NULL || ifc->attr.reach < best->attr.reach)
			best = ifc;
	}
	return best;
}

/* ---- registration on every iface that has keys ---- */

static void
dereg_all(struct unio_worker *w, struct unio_tl_memh *memh, bool *reg)
{
	for (unsigned int i = 0; i < w->n_ifaces; i++)
		if (reg[i]) {
			unio_tl_mem_dereg(w->ifaces[i], &memh[i]);
			reg[i] = false;
		}
}

/* Register [addr, addr+len) on every iface with keys; @p own is the allocation (reused). */
static unio_status_t
reg_all(struct unio_worker *w, void *addr, size_t len, struct unio_tl_iface *own_iface,
	const struct unio_tl_memh *own, struct unio_tl_memh *memh, bool *reg)
{
	for (unsigned int i = 0; i < w->n_ifaces; i++) {
		struct unio_tl_iface *ifc = w->ifaces[i];

		reg[i] = false;
		if (!iface_can_key(ifc))
			continue;
		if (ifc == own_iface) {
			memh[i] = *own;
			continue;
		}
		if (unio_tl_mem_reg(ifc, addr, len, &memh[i]) != UNIO_OK) {
			PROTO_LOG(ERR, "mem_map: %s cannot register %zu bytes", ifc->driver->name,
				  len);
			dereg_all(w, memh, reg);
			return UNIO_ERR_NO_RESOURCE;
		}
		reg[i] = true;
	}
	return UNIO_OK;
}

/* ---- the table ---- */

/* w->rma without a table yet: an accessor that never maps needs only the chunk queue */
static struct rma_worker *
rma_state(struct unio_worker *w)
{
	if (w->rma == NULL) {
		w->rma = calloc(1, sizeof(*w->rma));
		if (w->rma != NULL) {
			TAILQ_INIT(&w->rma->chunk_wait);
			TAILQ_INIT(&w->rma->fence_q);
		}
	}
	return w->rma;
}

static unio_status_t
table_create(struct unio_worker *w)
{
	size_t sz = RMA_TABLE_SLOTS * sizeof(struct rma_entry);
	struct rma_worker *r = rma_state(w);
	struct unio_tl_iface *ai = alloc_iface(w);

	if (r == NULL)
		return UNIO_ERR_NO_MEMORY;
	if (ai != NULL && unio_tl_mem_alloc(ai, sz, &r->table_alloc) == UNIO_OK) {
		r->table_iface = ai;
		r->table = r->table_alloc.addr;
	} else if (posix_memalign((void **)&r->table, 4096, sz) != 0) {
		r->table = NULL;
		return UNIO_ERR_NO_MEMORY;
	}
	memset(r->table, 0, sz);
	for (unsigned int i = 0; i < RMA_TABLE_SLOTS; i++)
		r->table[i].gen = 1;   /* odd: free */
	if (reg_all(w, r->table, sz, r->table_iface, &r->table_alloc, r->table_memh,
		    r->table_reg) != UNIO_OK) {
		if (r->table_iface != NULL)
			unio_tl_mem_free(r->table_iface, &r->table_alloc);
		else
			free(r->table);
		r->table = NULL;
		r->table_iface = NULL;
		return UNIO_ERR_NO_RESOURCE;
	}
	return UNIO_OK;
}

static void
table_destroy(struct unio_worker *w)
{
	struct rma_worker *r = w->rma;

	if (r->table != NULL) {
		dereg_all(w, r->table_memh, r->table_reg);
		if (r->table_iface != NULL)
			unio_tl_mem_free(r->table_iface, &r->table_alloc);
		else
			free(r->table);
	}
	free(r);
	w->rma = NULL;
}

static int
slot_get(struct rma_worker *r)
{
	for (uint32_t n = 0; n < RMA_TABLE_SLOTS; n++) {
		uint32_t s = (r->next_slot + n) % RMA_TABLE_SLOTS;

		if (r->slots[s] == NULL) {
			r->next_slot = (s + 1) % RMA_TABLE_SLOTS;
			return (int)s;
		}
	}
	return -1;
}

/*
 * Publish @p m in its slot: odd generation while the fields change, then the next even.  A
 * release store orders what precedes it only: the fence keeps the field stores after the odd
 * generation where stores may pass each other (Arm; on x86 it is a compiler barrier).
 */
static void
entry_publish(struct rma_worker *r, struct unio_mem *m)
{
	struct rma_entry *e = &r->table[m->slot];
	uint64_t g = __atomic_load_n(&e->gen, __ATOMIC_RELAXED) | 1;

	__atomic_store_n(&e->gen, g, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	e->cookie = m->cookie;
	e->base = (uintptr_t)m->addr;
	e->len = m->len;
	m->gen = g + 1;
	__atomic_store_n(&e->gen, m->gen, __ATOMIC_RELEASE);
}

static void
entry_revoke(struct rma_worker *r, struct unio_mem *m)
{
	struct rma_entry *e = &r->table[m->slot];

	__atomic_store_n(&e->gen, m->gen + 1, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_RELEASE);   /* as in entry_publish() */
	e->cookie = 0;
	e->base = 0;
	e->len = 0;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* ---- mem_map ---- */

static unio_status_t
map_check(const struct unio_mem_map_params *p, unsigned int *flags,
	  enum unio_memory_type *type)
{
	const uint64_t known = UNIO_MEM_MAP_PARAM_ADDRESS | UNIO_MEM_MAP_PARAM_LENGTH |
			       UNIO_MEM_MAP_PARAM_FLAGS | UNIO_MEM_MAP_PARAM_MEMORY_TYPE;
	uint64_t fm = p->field_mask;

	*flags = (fm & UNIO_MEM_MAP_PARAM_FLAGS) ? p->flags : 0;
	*type = (fm & UNIO_MEM_MAP_PARAM_MEMORY_TYPE) ? p->memory_type : UNIO_MEMORY_TYPE_HOST;
	/* an unknown field, or a memory type no version defines (CUDA, ROCm: UNSUPPORTED) */
	if ((fm & ~known) != 0 || (unsigned int)*type > (unsigned int)UNIO_MEMORY_TYPE_ROCM ||
	    !(fm & UNIO_MEM_MAP_PARAM_LENGTH) || p->length == 0 ||
	    (*flags & ~UNIO_MEM_MAP_FLAG_ALLOCATE) != 0 || p->length > (1ull << 47))
		return UNIO_ERR_INVALID_PARAM;
	if (!(*flags & UNIO_MEM_MAP_FLAG_ALLOCATE) &&
	    (!(fm & UNIO_MEM_MAP_PARAM_ADDRESS) || p->address == NULL))
		return UNIO_ERR_INVALID_PARAM;
	if (*type != UNIO_MEMORY_TYPE_HOST) {
		PROTO_LOG(ERR, "mem_map: memory type %d has no driver in this build", (int)*type);
		return UNIO_ERR_UNSUPPORTED;
	}
	return UNIO_OK;
}

static unio_status_t
mem_obtain(struct unio_worker *w, struct unio_mem *m, void *addr)
{
	struct unio_tl_iface *ai;

	if (!(m->flags & UNIO_MEM_MAP_FLAG_ALLOCATE)) {
		m->addr = addr;
		return UNIO_OK;
	}
	ai = alloc_iface(w);
	if (ai != NULL && unio_tl_mem_alloc(ai, m->len, &m->alloc_memh) == UNIO_OK) {
		m->alloc_iface = ai;
		m->addr = m->alloc_memh.addr;
		return UNIO_OK;
	}
	if (posix_memalign(&m->addr, 4096, m->len) != 0)
		return UNIO_ERR_NO_MEMORY;
	m->heap = true;
	return UNIO_OK;
}

static void
mem_release(struct unio_mem *m)
{
	if (m->alloc_iface != NULL)
		unio_tl_mem_free(m->alloc_iface, &m->alloc_memh);
	else if (m->heap)
		free(m->addr);
}

static unio_status_t
mem_map_locked(struct unio_worker *w, const struct unio_mem_map_params *p, unsigned int flags,
	       enum unio_memory_type type, unio_mem_h *memh_p)
{
	struct unio_mem *m;
	unio_status_t st;
	int slot;

	if ((w->rma == NULL || w->rma->table == NULL) && (st = table_create(w)) != UNIO_OK)
		return st;
	slot = slot_get(w->rma);
	if (slot < 0) {
		PROTO_LOG(ERR, "mem_map: all %u regions are mapped", RMA_TABLE_SLOTS);
		return UNIO_ERR_NO_RESOURCE;
	}
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return UNIO_ERR_NO_MEMORY;
	*m = (struct unio_mem){ .w = w, .len = p->length, .flags = flags, .mem_type = type,
				.slot = (uint32_t)slot, .cookie = random64() };
	st = mem_obtain(w, m, p->address);
	if (st == UNIO_OK)
		st = reg_all(w, m->addr, m->len, m->alloc_iface, &m->alloc_memh, m->memh, m->reg);
	if (st != UNIO_OK) {
		if (m->addr != NULL && (m->flags & UNIO_MEM_MAP_FLAG_ALLOCATE))
			mem_release(m);
		free(m);
		return st;
	}
	w->rma->slots[slot] = m;
	w->rma->n_used++;
	entry_publish(w->rma, m);
	*memh_p = m;
	return UNIO_OK;
}

unio_status_t
unio_mem_map(unio_worker_t *w, const struct unio_mem_map_params *params, unio_mem_h *memh_p)
{
	enum unio_memory_type type;
	unsigned int flags;
	unio_status_t st;

	if (w == NULL || params == NULL || memh_p == NULL)
		return UNIO_ERR_INVALID_PARAM;
	if (proto_feature_missing(w, UNIO_FEATURE_RMA, "mem_map"))
		return UNIO_ERR_UNSUPPORTED;
	st = map_check(params, &flags, &type);
	if (st != UNIO_OK)
		return st;
	worker_lock(w);
	st = mem_map_locked(w, params, flags, type, memh_p);
	worker_unlock(w);
	return st;
}

unio_status_t
unio_mem_query(unio_mem_h m, struct unio_mem_attr *attr)
{
	if (m == NULL || attr == NULL)
		return UNIO_ERR_INVALID_PARAM;
	attr->address = m->addr;
	attr->length = m->len;
	attr->memory_type = m->mem_type;
	attr->flags = m->flags;
	attr->mappable = m->alloc_iface != NULL;
	return UNIO_OK;
}

static void
mem_unmap_locked(struct unio_worker *w, struct unio_mem *m)
{
	entry_revoke(w->rma, m);
	w->rma->slots[m->slot] = NULL;
	w->rma->n_used--;
	dereg_all(w, m->memh, m->reg);
	if (m->flags & UNIO_MEM_MAP_FLAG_ALLOCATE)
		mem_release(m);
	free(m);
}

unio_status_t
unio_mem_unmap(unio_worker_t *w, unio_mem_h m)
{
	if (w == NULL || m == NULL || m->w != w || w->rma == NULL || w->rma->table == NULL ||
	    m->slot >= RMA_TABLE_SLOTS || w->rma->slots[m->slot] != m)
		return UNIO_ERR_INVALID_PARAM;
	worker_lock(w);
	mem_unmap_locked(w, m);
	worker_unlock(w);
	return UNIO_OK;
}

static void chunk_wait_drop(struct unio_worker *w);
static void fence_drop(struct unio_worker *w);

void
proto_rma_fini(struct unio_worker *w)
{
	if (w->rma == NULL)
		return;
	chunk_wait_drop(w);
	fence_drop(w);
	for (unsigned int i = 0; i < RMA_TABLE_SLOTS; i++)
		if (w->rma->slots[i] != NULL)
			mem_unmap_locked(w, w->rma->slots[i]);
	table_destroy(w);
}

/* ---- packing ---- */

static size_t
pack_tl(struct unio_worker *w, struct unio_mem *m, uint8_t *p, unsigned int *n_tl)
{
	struct rma_worker *r = w->rma;
	uint8_t *start = p;

	*n_tl = 0;
	for (unsigned int i = 0; i < w->n_ifaces && *n_tl < RKEY_MAX_TL; i++) {
		struct unio_tl_iface *ifc = w->ifaces[i];
		struct rkey_wire_tl t = { .data_len = (uint16_t)ifc->attr.rkey_packed_len,
					  .table_len = (uint16_t)ifc->attr.rkey_packed_len };
		uint8_t *q = p + sizeof(t);

		if (!iface_can_key(ifc))
			continue;
		if (unio_tl_rkey_pack(ifc, &m->memh[i], q) != UNIO_OK ||
		    unio_tl_rkey_pack(ifc, &r->table_memh[i], q + t.data_len) != UNIO_OK)
			continue;
		snprintf(t.driver, sizeof(t.driver), "%s", ifc->driver->name);
		memcpy(p, &t, sizeof(t));
		p = q + t.data_len + t.table_len;
		(*n_tl)++;
	}
	return (size_t)(p - start);
}

unio_status_t
unio_rkey_pack(unio_mem_h m, void **buf_p, size_t *len_p)
{
	size_t max = sizeof(struct rkey_wire_hdr) +
		     RKEY_MAX_TL * (sizeof(struct rkey_wire_tl) + 2 * UNIO_TL_RKEY_MAX);
	struct rkey_wire_hdr h;
	unsigned int n_tl;
	uint8_t *buf;
	size_t n;

	if (m == NULL || buf_p == NULL || len_p == NULL)
		return UNIO_ERR_INVALID_PARAM;
	buf = calloc(1, max);
	if (buf == NULL)
		return UNIO_ERR_NO_MEMORY;
	worker_lock(m->w);
	n = pack_tl(m->w, m, buf + sizeof(h), &n_tl);
	h = (struct rkey_wire_hdr){ .magic = RKEY_MAGIC, .version = RKEY_VERSION,
				    .n_tl = (uint16_t)n_tl, .cookie = m->cookie, .gen = m->gen,
				    .base = (uintptr_t)m->addr, .len = m->len, .slot = m->slot,
				    .mem_type = m->mem_type };
	worker_unlock(m->w);
	memcpy(buf, &h, sizeof(h));
	*buf_p = buf;
	*len_p = sizeof(h) + n;
	return UNIO_OK;
}

void
unio_rkey_buffer_release(void *buf)
{
	free(buf);
}

/* ---- unpacking ---- */

/*
 * Find the part of the key for the driver of @p ifc; NULL when the key has none or when the
 * parts do not add up to exactly @p len bytes.
 */
static const struct rkey_wire_tl *
find_tl(const uint8_t *p, size_t len, unsigned int n_tl, const struct unio_tl_iface *ifc,
	struct rkey_wire_tl *out)
{
	const struct rkey_wire_tl *found = NULL;
	struct rkey_wire_tl t;

	for (unsigned int i = 0; i < n_tl; i++) {
		size_t part;

		if (len < sizeof(t))
			return NULL;
		memcpy(&t, p, sizeof(t));
		part = sizeof(t) + t.data_len + t.table_len;
		if (t.data_len > UNIO_TL_RKEY_MAX || t.table_len > UNIO_TL_RKEY_MAX || len < part)
			return NULL;
		if (found == NULL && strncmp(t.driver, ifc->driver->name, sizeof(t.driver)) == 0 &&
		    t.data_len == ifc->attr.rkey_packed_len &&
		    t.table_len == ifc->attr.rkey_packed_len) {
			found = (const struct rkey_wire_tl *)p;
			*out = t;
		}
		p += part;
		len -= part;
	}
	return len == 0 ? found : NULL;
}

/* Where the table entry of @p rk can be read: mapped here, or through a synchronous get. */
static void
rkey_locate_entry(struct unio_rkey *rk)
{
	uint64_t off = (uint64_t)rk->slot * sizeof(struct rma_entry);

	rk->entry = NULL;
	rk->table_sync = false;
	if (rk->tl_ep->iface->attr.reach == UNIO_TL_REACH_SELF) {
		/* the owner is this very worker: its own table, whatever the key says */
		if (rk->ep->worker->rma != NULL && rk->ep->worker->rma->table != NULL)
			rk->entry = &rk->ep->worker->rma->table[rk->slot];
		return;
	}
	if (rk->table.remote_len < off + sizeof(struct rma_entry))
		return;
	if (rk->table.local_ptr != NULL)
		rk->entry = (const volatile struct rma_entry *)
			    ((uint8_t *)rk->table.local_ptr + off);
	else if (rk->tl_ep->iface->attr.reach != UNIO_TL_REACH_NET &&
		 (rk->tl_ep->cap & UNIO_TL_CAP_GET_ZCOPY) &&
		 !(rk->tl_ep->cap & UNIO_TL_CAP_RMA_TARGET))
		rk->table_sync = true;   /* shm CMA and self complete at once */
}

static unio_status_t
rkey_unpack_tl(struct unio_rkey *rk, const uint8_t *p, const struct rkey_wire_tl *t)
{
	struct unio_tl_ep *tl_ep = rk->tl_ep;
	unio_status_t st;

	st = unio_tl_rkey_unpack(tl_ep, p, t->data_len, &rk->data);
	if (st != UNIO_OK)
		return st;
	if (rk->data.remote_base != rk->base || rk->data.remote_len != rk->len) {
		unio_tl_rkey_release(tl_ep, &rk->data);
		return UNIO_ERR_INVALID_ADDR;
	}
	st = unio_tl_rkey_unpack(tl_ep, p + t->data_len, t->table_len, &rk->table);
	if (st != UNIO_OK) {
		unio_tl_rkey_release(tl_ep, &rk->data);
		return st;
	}
	rkey_locate_entry(rk);
	/* without the owner's table only a driver that checks keys at the target may go on */
	if (rk->entry == NULL && !rk->table_sync &&
	    tl_ep->iface->attr.reach != UNIO_TL_REACH_NET &&
	    !(tl_ep->cap & UNIO_TL_CAP_RMA_TARGET)) {
		unio_tl_rkey_release(tl_ep, &rk->table);
		unio_tl_rkey_release(tl_ep, &rk->data);
		return UNIO_ERR_INVALID_ADDR;
	}
	return UNIO_OK;
}

static unio_status_t
rkey_unpack_locked(struct unio_ep *ep, const uint8_t *buf, size_t len, struct unio_rkey *rk)
{
	struct rkey_wire_hdr h;
	struct rkey_wire_tl t;
	const struct rkey_wire_tl *tp;

	if (len < sizeof(h))
		return UNIO_ERR_INVALID_ADDR;
	memcpy(&h, buf, sizeof(h));
	if (h.magic != RKEY_MAGIC || h.version != RKEY_VERSION || h.n_tl > RKEY_MAX_TL ||
	    h.slot >= RMA_TABLE_SLOTS || (h.gen & 1) || h.gen == 0 || h.cookie == 0 ||
	    h.len == 0 || h.base + h.len < h.base || h.mem_type != UNIO_MEMORY_TYPE_HOST)
		return UNIO_ERR_INVALID_ADDR;
	if (ep->state != EP_CONNECTED)
		return UNIO_ERR_NOT_CONNECTED;
	*rk = (struct unio_rkey){ .ep = ep, .tl_ep = ep->lane.tl_ep, .base = h.base,
				  .len = h.len, .cookie = h.cookie, .gen = h.gen,
				  .slot = h.slot };
	tp = find_tl(buf + sizeof(h), len - sizeof(h), h.n_tl, rk->tl_ep->iface, &t);
	if (tp == NULL)
		return UNIO_ERR_INVALID_ADDR;
	return rkey_unpack_tl(rk, (const uint8_t *)(tp + 1), &t);
}

unio_status_t
unio_ep_rkey_unpack(unio_ep_t *ep, const void *buf, size_t len, unio_rkey_t **rkey_p)
{
	struct unio_rkey *rk;
	unio_status_t st;

	if (ep == NULL || buf == NULL || rkey_p == NULL)
		return UNIO_ERR_INVALID_PARAM;
	if (proto_feature_missing(ep->worker, UNIO_FEATURE_RMA, "rkey_unpack"))
		return UNIO_ERR_UNSUPPORTED;
	rk = malloc(sizeof(*rk));
	if (rk == NULL)
		return UNIO_ERR_NO_MEMORY;
	worker_lock(ep->worker);
	st = rkey_unpack_locked(ep, buf, len, rk);
	worker_unlock(ep->worker);
	if (st != UNIO_OK) {
		PROTO_LOG(DEBUG, "rkey_unpack: refused: %s", unio_status_string(st));
		free(rk);
		return st;
	}
	worker_lock(ep->worker);
	LIST_INSERT_HEAD(&ep->rkeys, rk, link);
	worker_unlock(ep->worker);
	*rkey_p = rk;
	return UNIO_OK;
}

static void
rkey_release_tl(struct unio_rkey *rk)
{
	unio_tl_rkey_release(rk->tl_ep, &rk->table);
	unio_tl_rkey_release(rk->tl_ep, &rk->data);
	rk->tl_ep = NULL;
	LIST_REMOVE(rk, link);
}

void
proto_ep_release_rkeys(struct unio_ep *ep)
{
	struct unio_rkey *rk;

	while ((rk = LIST_FIRST(&ep->rkeys)) != NULL)
		rkey_release_tl(rk);
}

/* The last user of a key let go (or there was none): release and free it.  Lock held. */
static void
rkey_free(struct unio_rkey *rk)
{
	if (rk->tl_ep != NULL)   /* else its ep closed and released it */
		rkey_release_tl(rk);
	free(rk);
}

/*
 * A key destroyed while puts or gets still use it (chunks queued for transport room, or in
 * the transport) is freed when the last of them completes.
 */
void
unio_rkey_destroy(unio_rkey_t *rk)
{
	struct unio_worker *w;

	if (rk == NULL)
		return;
	w = rk->ep->worker;
	worker_lock(w);
	if (rk->users != 0)
		rk->destroyed = true;
	else
		rkey_free(rk);
	worker_unlock(w);
}

/* ---- the check before each access ---- */

static bool
entry_matches(const struct unio_rkey *rk, const struct rma_entry *e)
{
	return e->gen == rk->gen && e->cookie == rk->cookie && e->base == rk->base &&
	       e->len == rk->len;
}

/* Read the owner's entry with a synchronous get (CMA), twice-checked generation. */
static bool
entry_read_sync(struct unio_rkey *rk)
{
	uint64_t off = rk->table.remote_base + (uint64_t)rk->slot * sizeof(struct rma_entry);
	struct unio_tl_completion c = { .func = NULL, .count = 1 };
	struct rma_entry e;
	struct iovec iov = { &e, sizeof(e) };

	if (unio_tl_ep_get_zcopy(rk->tl_ep, &iov, 1, off, &rk->table, &c) != UNIO_OK)
		return false;
	return entry_matches(rk, &e);
}

/* The owner's entry mapped here: generation, fields, generation again; no system call. */
static inline bool
entry_live_mapped(const struct unio_rkey *rk, const volatile struct rma_entry *v)
{
	struct rma_entry e;
	uint64_t g;

	g = __atomic_load_n(&v->gen, __ATOMIC_ACQUIRE);
	e.gen = g;
	e.cookie = v->cookie;
	e.base = v->base;
	e.len = v->len;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return entry_matches(rk, &e) && __atomic_load_n(&v->gen, __ATOMIC_RELAXED) == g;
}

static bool
entry_live(struct unio_rkey *rk)
{
	if (rk->entry == NULL)
		return rk->table_sync ? entry_read_sync(rk) : true;
	return entry_live_mapped(rk, rk->entry);
}

/* [raddr, raddr + len) inside the key's range, overflow-safe; len 0 at the end too. */
static inline bool
rkey_in_range(const struct unio_rkey *rk, uint64_t raddr, size_t len)
{
	return raddr >= rk->base && len <= rk->len && raddr - rk->base <= rk->len - len;
}

static inline unio_status_t
rkey_check(struct unio_rkey *rk, uint64_t raddr, size_t len)
{
	if (unlikely(!rkey_in_range(rk, raddr, len)))
		return UNIO_ERR_OUT_OF_RANGE;
	if (unlikely(!entry_live(rk)))
		return UNIO_ERR_INVALID_ADDR;
	return UNIO_OK;
}

/* ---- put / get ---- */

/*
 * A put or get in flight: the request keeps the buffer (sbuf), the length (slen), what was
 * handed to the transport (offset), the remote address (tag), the direction (sync: put) and
 * the driver's key (rkey, a copy; urkey, the user's key, counts the request as a user until
 * comp completes, so that unio_rkey_destroy() meanwhile only marks it).
 * comp counts one per chunk in flight plus one held while chunks are still to be issued.
 */

/* A request waiting for transport room, named by its id: the ep may fail it meanwhile. */
struct rma_wait {
	TAILQ_ENTRY(rma_wait) link;
	uint64_t req_slot;   /* proto_req_slot(); 0: a fence marker */
};

static size_t
op_max(const struct unio_request *req)
{
	const struct unio_tl_iface_attr *a = &req->ep->lane.tl_ep->iface->attr;
	size_t max = req->sync ? a->max_put_zcopy : a->max_get_zcopy;

	return max == 0 ? SIZE_MAX : max;
}

/*
 * Hand the chunks still to go to the transport.  UNIO_ERR_NO_RESOURCE: it has no room now,
 * retry later; anything else: nothing is left to issue (an error is recorded in comp).
 */
static unio_status_t
op_issue(struct unio_request *req)
{
	struct unio_tl_ep *tl_ep = req->ep->lane.tl_ep;
	size_t max = op_max(req);

	/* a pull striped over rails: equal chunks, chunk k on lane k % rails (0: the lane) */
	if (req->rails > 1)
		max = RTE_MIN(max, RTE_ALIGN_CEIL(req->slen / req->rails, 4096));
	while (req->offset < req->slen) {
		size_t n = RTE_MIN(max, req->slen - req->offset);
		unsigned int r = req->rails > 1 ?
				 (unsigned int)(req->offset / max % req->rails) : 0;

		tl_ep = r == 0 || req->ep->rails[r - 1] == NULL ? req->ep->lane.tl_ep :
			req->ep->rails[r - 1];
		struct iovec iov = { (void *)(uintptr_t)(req->sbuf + req->offset), n };
		uint64_t raddr = req->tag + req->offset;
		unio_status_t st;

		req->comp.count++;
		st = req->sync ?
		     unio_tl_ep_put_zcopy(tl_ep, &iov, 1, raddr, &req->rkey, &req->comp) :
		     unio_tl_ep_get_zcopy(tl_ep, &iov, 1, raddr, &req->rkey, &req->comp);
		if (st == UNIO_ERR_NO_RESOURCE) {
			req->comp.count--;
			return st;
		}
		req->offset += n;
		if (st != UNIO_INPROGRESS) {
			unio_tl_completion_done(&req->comp, st);
			if (UNIO_IS_ERR(st)) {
				req->offset = req->slen;   /* the rest is not sent: first error */
				return st;
			}
		}
	}
	return UNIO_OK;
}

static unio_status_t
op_wait(struct unio_worker *w, struct unio_request *req)
{
	struct rma_worker *r = rma_state(w);
	struct rma_wait *q = malloc(sizeof(*q));

	if (r == NULL || q == NULL) {
		free(q);
		return UNIO_ERR_NO_MEMORY;
	}
	q->req_slot = proto_req_slot(req);
	TAILQ_INSERT_TAIL(&r->chunk_wait, q, link);
	w->n_rma_pending++;   /* worker progress calls proto_am_progress, which retries these */
	return UNIO_OK;
}

static unsigned int fence_drain(struct unio_worker *w);

unsigned int
proto_rma_progress(struct unio_worker *w)
{
	struct rma_worker *r = w->rma;
	struct rma_wait *q;
	unsigned int n = 0;

	if (w->n_rma_fenced != 0)
		n += fence_drain(w);

	while (r != NULL && (q = TAILQ_FIRST(&r->chunk_wait)) != NULL) {
		struct unio_request *req = proto_req_at_slot(w, q->req_slot);

		/* still ours unless the ep failed it (proto_ep_fail_requests): then let go */
		if (req != NULL && req->tl_held) {
			unio_tl_completion_done(&req->comp, UNIO_ERR_CONNECTION_RESET);
		} else if (req != NULL && req->state == REQ_ACTIVE && req->on_ep) {
			if (req->ep->state != EP_CONNECTED) {
				unio_tl_completion_done(&req->comp, UNIO_ERR_CONNECTION_RESET);
			} else if (op_issue(req) == UNIO_ERR_NO_RESOURCE) {
				break;
			} else {
				unio_tl_completion_done(&req->comp, UNIO_OK);  /* all issued */
			}
		}
		TAILQ_REMOVE(&r->chunk_wait, q, link);
		free(q);
		w->n_rma_pending--;
		n++;
	}
	return n;
}

static void
chunk_wait_drop(struct unio_worker *w)
{
	struct rma_wait *q;

	while ((q = TAILQ_FIRST(&w->rma->chunk_wait)) != NULL) {
		struct unio_request *req = proto_req_at_slot(w, q->req_slot);

		TAILQ_REMOVE(&w->rma->chunk_wait, q, link);
		free(q);
		w->n_rma_pending--;
		if (req != NULL && (req->tl_held || (req->state == REQ_ACTIVE && req->on_ep))) {
			req->offset = req->slen;
			unio_tl_completion_done(&req->comp, UNIO_ERR_CANCELED);
		}
	}
}

static void
op_done(struct unio_tl_completion *comp)
{
	struct unio_request *req = container_of(comp, struct unio_request, comp);
	struct unio_rkey *rk = req->urkey;

	if (req->proto == RMA_PROTO_OP)   /* issued: the fence queue may move on */
		req->worker->rma->n_inflight--;

	/* the transport is done with the key whatever became of the request */
	if (--rk->users == 0 && rk->destroyed)
		rkey_free(rk);
	if (proto_req_tl_done(req))
		return;
	if (req->on_ep) {
		TAILQ_REMOVE(&req->ep->outstanding, req, ep_link);
		req->on_ep = false;
	}
	proto_req_complete(req, comp->status);
}

void
proto_rma_issue(struct unio_request *req)
{
	struct unio_worker *w = req->ep->worker;
	bool behind = w->rma != NULL && !TAILQ_EMPTY(&w->rma->chunk_wait);
	unio_status_t st;

	st = behind ? UNIO_ERR_NO_RESOURCE : op_issue(req);   /* in order behind the queue */
	if (st == UNIO_ERR_NO_RESOURCE) {
		st = op_wait(w, req);
		if (st != UNIO_OK)
			req->offset = req->slen;
	}
	if (req->offset == req->slen)
		unio_tl_completion_done(&req->comp, st);   /* all issued: release the hold */
}

/* Hand an operation to its transport: it counts as in flight until op_done(). */
static void
op_issue_counted(struct unio_request *req)
{
	struct rma_worker *r = req->worker->rma;

	req->proto = RMA_PROTO_OP;
	if (r->n_inflight++ == 0)
		r->inflight_ep = req->ep;
	else if (r->inflight_ep != req->ep)
		r->inflight_ep = NULL;
	proto_rma_issue(req);
}

static unio_status_t
op_start(struct unio_ep *ep, void *buf, size_t len, uint64_t raddr, struct unio_rkey *rk,
	 bool put, bool fenced, const struct unio_request_param *param, unio_request_t **req_p)
{
	struct unio_worker *w = ep->worker;
	struct unio_request *req = proto_req_get(w);
	struct rma_wait *q = NULL;

	if (unlikely(req == NULL || rma_state(w) == NULL ||
		     (fenced && (q = malloc(sizeof(*q))) == NULL))) {
		if (req != NULL)
			proto_req_put(req);
		return UNIO_ERR_NO_MEMORY;
	}
	req->type = REQ_SEND;
	req->ep = ep;
	req->sbuf = buf;
	req->slen = len;
	req->tag = raddr;
	req->sync = put;
	req->rails = 1;   /* in order on the lane: a get may follow a put to the same place */
	req->rkey = rk->data;
	req->urkey = rk;
	rk->users++;
	req->comp = (struct unio_tl_completion){ .func = op_done, .count = 1 };
	TAILQ_INSERT_TAIL(&ep->outstanding, req, ep_link);
	req->on_ep = true;
	if (!fenced) {
		op_issue_counted(req);
	} else {   /* behind a fence: issued by fence_drain() */
		req->proto = RMA_PROTO_FENCED;
		q->req_slot = proto_req_slot(req);
		TAILQ_INSERT_TAIL(&w->rma->fence_q, q, link);
		w->rma->fq_marker_last = false;
		w->rma->fq_ops++;
		w->n_rma_fenced++;
		w->n_rma_pending++;
	}
	return proto_req_hand_out(req, param, req_p);
}

/* ---- fence ---- */

/*
 * An operation on @p ep now must wait in the fence queue: something is queued, and it is not
 * an operation that its ep's transport orders behind those before the fence (only markers
 * whose operations all went to @p ep, and @p ep's transport carries it: not a memcpy).
 */
static inline bool
fence_defers(const struct unio_worker *w, const struct unio_ep *ep, bool mapped)
{
	return w->n_rma_fenced != 0 &&
	       (mapped || w->rma->fq_ops != 0 || w->rma->fq_ep != ep);
}

/* A deferred operation's turn: checked again (the key may be stale now), then done. */
static void
fence_issue(struct unio_request *req)
{
	struct unio_rkey *rk = req->urkey;
	unio_status_t st = UNIO_ERR_NOT_CONNECTED;
	uint8_t *p;

	if (req->ep->state == EP_CONNECTED && rk->tl_ep != NULL)
		st = rkey_check(rk, req->tag, req->slen);
	if (st == UNIO_OK && rk->data.local_ptr == NULL) {
		op_issue_counted(req);
		return;
	}
	if (st == UNIO_OK) {
		p = (uint8_t *)rk->data.local_ptr + (req->tag - rk->base);
		if (req->sync)
			unio_memcpy_large(p, req->sbuf, req->slen);
		else
			unio_memcpy_large((void *)(uintptr_t)req->sbuf, p, req->slen);
	}
	unio_tl_completion_done(&req->comp, st);   /* op_done(): not counted in flight */
}

/* Issue what the fence queue holds, up to a fence whose operations are still in flight. */
static unsigned int
fence_drain(struct unio_worker *w)
{
	struct rma_worker *r = w->rma;
	struct rma_wait *q;
	unsigned int n = 0;

	while ((q = TAILQ_FIRST(&r->fence_q)) != NULL) {
		if (q->req_slot == 0) {   /* a fence */
			if (r->n_inflight != 0)
				break;
		} else {
			struct unio_request *req = proto_req_at_slot(w, q->req_slot);

			r->fq_ops--;
			if (req != NULL && req->tl_held)   /* failed with its ep meanwhile */
				unio_tl_completion_done(&req->comp, UNIO_ERR_CONNECTION_RESET);
			else if (req != NULL && req->state == REQ_ACTIVE &&
				 req->proto == RMA_PROTO_FENCED)
				fence_issue(req);
		}
		TAILQ_REMOVE(&r->fence_q, q, link);
		free(q);
		w->n_rma_fenced--;
		w->n_rma_pending--;
		n++;
	}
	if (TAILQ_EMPTY(&r->fence_q)) {
		r->fq_ep = NULL;
		r->fq_marker_last = false;
	}
	return n;
}

static void
fence_drop(struct unio_worker *w)
{
	struct rma_wait *q;

	while ((q = TAILQ_FIRST(&w->rma->fence_q)) != NULL) {
		struct unio_request *req =
			q->req_slot != 0 ? proto_req_at_slot(w, q->req_slot) : NULL;

		TAILQ_REMOVE(&w->rma->fence_q, q, link);
		free(q);
		w->n_rma_fenced--;
		w->n_rma_pending--;
		if (req != NULL && (req->tl_held || (req->state == REQ_ACTIVE &&
						     req->proto == RMA_PROTO_FENCED)))
			unio_tl_completion_done(&req->comp, UNIO_ERR_CANCELED);
	}
	w->rma->fq_ops = 0;
	w->rma->fq_ep = NULL;
	w->rma->fq_marker_last = false;
}

/* Every put and get that rma_op() does not finish itself: all the checks, in their order. */
static __attribute__((noinline)) unio_status_t
rma_op_slow(struct unio_ep *ep, void *buf, size_t len, uint64_t raddr, struct unio_rkey *rk,
       bool put, const struct unio_request_param *param, unio_request_t **req_p)
{
	unio_status_t st;

	if (unlikely(ep == NULL || (buf == NULL && len != 0) || proto_req_param_bad(param)))
		return UNIO_ERR_INVALID_PARAM;
	if (unlikely(proto_feature_missing(ep->worker, UNIO_FEATURE_RMA, put ? "put" : "get")))
		return UNIO_ERR_UNSUPPORTED;
	if (unlikely(rk == NULL || rk->ep != ep))
		return UNIO_ERR_INVALID_PARAM;
	worker_lock(ep->worker);
	if (unlikely(ep->state != EP_CONNECTED || rk->tl_ep == NULL)) {
		st = UNIO_ERR_NOT_CONNECTED;   /* a closed ep released its keys */
		goto out;
	}
	st = rkey_check(rk, raddr, len);
	if (unlikely(st != UNIO_OK))
		goto out;
	if (len == 0) {
		st = UNIO_OK;
		goto out;
	}
	if (unlikely(ep->worker->n_rma_fenced != 0)) {
		fence_drain(ep->worker);
		if (fence_defers(ep->worker, ep, rk->data.local_ptr != NULL)) {
			st = op_start(ep, buf, len, raddr, rk, put, true, param, req_p);
			goto out;
		}
	}
	if (likely(rk->data.local_ptr != NULL && (param == NULL ||
		   !(param->field_mask & UNIO_REQ_PARAM_FLAGS)))) {
		uint8_t *p = (uint8_t *)rk->data.local_ptr + (raddr - rk->base);

		if (put)
			unio_memcpy_large(p, buf, len);
		else
			unio_memcpy_large(buf, p, len);
		goto out;
	}
	st = op_start(ep, buf, len, raddr, rk, put, false, param, req_p);
out:
	worker_unlock(ep->worker);
	return st;
}

/* The request fields rma_op() serves: all but FLAGS (NO_IMM_COMPLETION wants a request) */
#define RMA_FAST_PARAMS (PROTO_REQ_PARAM_KNOWN & ~UNIO_REQ_PARAM_FLAGS)

/*
 * The common case, without a lock, a request or a call before the copy: a single-threaded
 * worker, a connected ep, a key mapped here (shm's direct mapping, self), no fence queue,
 * no request flags, a range inside the key and the owner's entry still the key's.  Anything
 * else, a refusal included, goes to rma_op_slow(), which checks everything again in order and
 * says why (so that the feature check still comes first for a NULL key).
 */
static inline __attribute__((always_inline)) unio_status_t
rma_op(struct unio_ep *ep, void *buf, size_t len, uint64_t raddr, struct unio_rkey *rk,
       bool put, const struct unio_request_param *param, unio_request_t **req_p)
{
	uint8_t *p;

	if (unlikely(ep == NULL || rk == NULL || rk->ep != ep || buf == NULL || len == 0 ||
		     ep->state != EP_CONNECTED || rk->tl_ep == NULL ||
		     rk->data.local_ptr == NULL || rk->entry == NULL ||
		     ep->worker->mode == UNIO_THREAD_MODE_MULTI || ep->worker->n_rma_fenced != 0 ||
		     (param != NULL && (param->field_mask & ~(uint64_t)RMA_FAST_PARAMS)) ||
		     !rkey_in_range(rk, raddr, len) || !entry_live_mapped(rk, rk->entry)))
		return rma_op_slow(ep, buf, len, raddr, rk, put, param, req_p);
	p = (uint8_t *)rk->data.local_ptr + (raddr - rk->base);
	if (len <= 16) {
		if (put)
			unio_memcpy_upto16(p, buf, len);
		else
			unio_memcpy_upto16(buf, p, len);
	} else if (put) {
		unio_memcpy_large(p, buf, len);
	} else {
		unio_memcpy_large(buf, p, len);
	}
	return UNIO_OK;
}

unio_status_t
unio_put(unio_ep_t *ep, const void *buf, size_t len, uint64_t remote_addr, unio_rkey_t *rkey,
	 const struct unio_request_param *param, unio_request_t **req_p)
{
	return rma_op(ep, (void *)(uintptr_t)buf, len, remote_addr, rkey, true, param, req_p);
}

unio_status_t
unio_get(unio_ep_t *ep, void *buf, size_t len, uint64_t remote_addr, unio_rkey_t *rkey,
	 const struct unio_request_param *param, unio_request_t **req_p)
{
	return rma_op(ep, buf, len, remote_addr, rkey, false, param, req_p);
}

/*
 * Nothing in flight (every put and get so far was a memcpy or CMA call, done at once): nothing
 * to do.  Otherwise a marker: operations after it wait in the fence queue until those before
 * it completed, except operations that go to the one ep all of those went to, through its
 * transport, which applies an ep's operations in order.
 */
unio_status_t
unio_worker_fence(unio_worker_t *w)
{
	struct rma_worker *r;
	struct rma_wait *q;
	unio_status_t st = UNIO_OK;

	if (w == NULL)
		return UNIO_ERR_INVALID_PARAM;
	worker_lock(w);
	r = w->rma;
	if (r != NULL && w->n_rma_fenced != 0)
		fence_drain(w);
	if (r == NULL || (r->n_inflight == 0 && w->n_rma_fenced == 0))
		goto out;
	/* the one-ep exception holds while the queue has only markers: an operation waiting
	 * in it goes out after this fence's marker would, possibly on another ep */
	if (w->n_rma_fenced == 0)
		r->fq_ep = r->inflight_ep;
	else if (r->fq_ops != 0 || r->fq_ep != r->inflight_ep || r->n_inflight == 0)
		r->fq_ep = NULL;
	/* a marker waits until nothing is in flight: one right behind another adds nothing
	 * (a stream of put, fence, put, ... on one ep keeps one marker, not one per fence) */
	if (r->fq_marker_last)
		goto out;
	q = malloc(sizeof(*q));
	if (q == NULL) {
		st = UNIO_ERR_NO_MEMORY;
		goto out;
	}
	q->req_slot = 0;
	TAILQ_INSERT_TAIL(&r->fence_q, q, link);
	r->fq_marker_last = true;
	w->n_rma_fenced++;
	w->n_rma_pending++;
out:
	worker_unlock(w);
	return st;
}
