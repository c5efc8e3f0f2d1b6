/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Registration cache: page-aligned regions in an array sorted by start, reference counted,
 * bounded (LRU eviction of unreferenced regions), and checked against the mappings that
 * back them on every hit so that a re-used address never gets a stale registration (or,
 * for foreign memory, against the identity the caller names).
 * Not thread-safe: its owner (a driver's iface, progressed by one thread) serialises calls.
 */

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unio_log.h"
#include "unio_rcache.h"

#define RCACHE_DEFAULT_REGIONS 1024u

struct region {
	struct unio_rcache_region pub;   /* first: users get &pub */
	unsigned int refs;
	bool stale;                      /* unlinked: deregister at the last put */
	uint64_t ident;
	uint64_t lru;
};

struct unio_rcache {
	struct unio_rcache_ops ops;
	void *arg;
	unsigned int max_regions;
	size_t max_bytes;
	struct region **arr;             /* sorted by pub.start */
	unsigned int n;
	size_t bytes;
	size_t max_len;                  /* longest region ever cached: bounds the scan */
	uint64_t tick;
	struct unio_rcache_stats stats;
};

static uint64_t
mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0x100000001b3ull;
}

/*
 * Identity of the mappings overlapping [start, end): a hash of (start, end, offset, device,
 * inode) of each line of /proc/self/maps that overlaps; 0 when nothing is mapped there.
 */
static uint64_t
identity(uintptr_t start, uintptr_t end)
{
	FILE *f = fopen("/proc/self/maps", "re");
	uint64_t h = 0xcbf29ce484222325ull;
	bool bol = true, hit = false;
	char line[512];

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned long s, e, off, ino;
		unsigned int maj, min;
		bool at_start = bol;

		bol = strchr(line, '\n') != NULL;
		if (!at_start || sscanf(line, "%lx-%lx %*s %lx %x:%x %lu", &s, &e, &off, &maj,
					&min, &ino) != 6)
			continue;
		if (e <= start)
			continue;
		if (s >= end)
			break;
		h = mix(mix(mix(mix(mix(h, s), e), off), ((uint64_t)maj << 32) | min), ino);
		hit = true;
	}
	fclose(f);
	return hit ? h : 0;
}

unio_status_t
unio_rcache_create(const struct unio_rcache_params *p, struct unio_rcache **rc_p)
{
	struct unio_rcache *rc;

	if (p == NULL || p->ops == NULL || p->ops->reg == NULL || p->ops->dereg == NULL ||
	    rc_p == NULL)
		return UNIO_ERR_INVALID_PARAM;
	rc = calloc(1, sizeof(*rc));
	if (rc == NULL)
		return UNIO_ERR_NO_MEMORY;
	rc->ops = *p->ops;
	rc->arg = p->arg;
	rc->max_regions = p->max_regions != 0 ? p->max_regions : RCACHE_DEFAULT_REGIONS;
	rc->max_bytes = p->max_bytes != 0 ? p->max_bytes : SIZE_MAX;
	rc->arr = calloc(rc->max_regions, sizeof(*rc->arr));
	if (rc->arr == NULL) {
		free(rc);
		return UNIO_ERR_NO_MEMORY;
	}
	*rc_p = rc;
	return UNIO_OK;
}

static void
region_free(struct unio_rcache *rc, struct region *r)
{
	rc->ops.dereg(rc->arg, (void *)r->pub.start, r->pub.end - r->pub.start, r->pub.handle);
	free(r);
}

/* Take the region at index @p i out of the array; free it unless someone holds it. */
static void
unlink_at(struct unio_rcache *rc, unsigned int i)
{
	struct region *r = rc->arr[i];

	memmove(&rc->arr[i], &rc->arr[i + 1], (rc->n - i - 1) * sizeof(*rc->arr));
	rc->n--;
	rc->bytes -= r->pub.end - r->pub.start;
	if (r->refs == 0)
		region_free(rc, r);
	else
		r->stale = true;
}

void
unio_rcache_destroy(struct unio_rcache *rc)
{
	if (rc == NULL)
		return;
	while (rc->n > 0) {
		if (rc->arr[rc->n - 1]->refs != 0)
			CORE_LOG(ERR, "rcache: region %#" PRIxPTR " destroyed with %u users",
				 rc->arr[rc->n - 1]->pub.start, rc->arr[rc->n - 1]->refs);
		rc->arr[rc->n - 1]->refs = 0;
		unlink_at(rc, rc->n - 1);
	}
	free(rc->arr);
	free(rc);
}

/* First index whose start is greater than @p start. */
static unsigned int
upper_bound(const struct unio_rcache *rc, uintptr_t start)
{
	unsigned int lo = 0, hi = rc->n;

	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;

		if (rc->arr[mid]->pub.start <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Index of a region covering [start, end), or -1. */
static int
find(const struct unio_rcache *rc, uintptr_t start, uintptr_t end)
{
	for (unsigned int i = upper_bound(rc, start); i-- > 0;) {
		const struct region *r = rc->arr[i];

		if (r->pub.start + rc->max_len < start)
			break;
		if (r->pub.end >= end)
			return (int)i;
	}
	return -1;
}

/* Evict least recently used unreferenced regions until @p size more bytes fit. */
static unio_status_t
make_room(struct unio_rcache *rc, size_t size)
{
	while (rc->n >= rc->max_regions || rc->bytes + size > rc->max_bytes) {
		int victim = -1;

		for (unsigned int i = 0; i < rc->n; i++)
			if (rc->arr[i]->refs == 0 &&
			    (victim < 0 || rc->arr[i]->lru < rc->arr[victim]->lru))
				victim = (int)i;
		if (victim < 0)
			return UNIO_ERR_NO_RESOURCE;
		unlink_at(rc, (unsigned int)victim);
		rc->stats.evictions++;
	}
	return UNIO_OK;
}

/* Register [start, end) with identity @p ident: local when @p foreign is false. */
static unio_status_t
insert(struct unio_rcache *rc, uintptr_t start, uintptr_t end, bool foreign, uint64_t ident,
       void *ctx, struct region **r_p)
{
	struct region *r;
	unio_status_t st;
	unsigned int i;

	if (!foreign)
		ident = identity(start, end);
	if (!foreign && ident == 0)
		return UNIO_ERR_INVALID_ADDR;
	st = make_room(rc, end - start);
	if (st != UNIO_OK)
		return st;
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return UNIO_ERR_NO_MEMORY;
	r->pub.start = start;
	r->pub.end = end;
	r->ident = ident;
	st = foreign && rc->ops.reg_ctx != NULL ?
	     rc->ops.reg_ctx(rc->arg, ctx, (void *)start, end - start, &r->pub.handle) :
	     rc->ops.reg(rc->arg, (void *)start, end - start, &r->pub.handle);
	if (st != UNIO_OK) {
		free(r);
		return st;
	}
	i = upper_bound(rc, start);
	memmove(&rc->arr[i + 1], &rc->arr[i], (rc->n - i) * sizeof(*rc->arr));
	rc->arr[i] = r;
	rc->n++;
	rc->bytes += end - start;
	if (end - start > rc->max_len)
		rc->max_len = end - start;
	*r_p = r;
	return UNIO_OK;
}

unio_status_t
unio_rcache_get(struct unio_rcache *rc, void *addr, size_t len,
		struct unio_rcache_region **region_p)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), a = (uintptr_t)addr;
	uintptr_t start = a & ~(page - 1), end;
	struct region *r;
	unio_status_t st;
	int i;

	if (rc == NULL || region_p == NULL || len == 0 || a + len < a ||
	    a + len + page - 1 < a + len)
		return UNIO_ERR_INVALID_PARAM;
	end = (a + len + page - 1) & ~(page - 1);
	i = find(rc, start, end);
	if (i >= 0) {
		r = rc->arr[i];
		if (identity(r->pub.start, r->pub.end) == r->ident)
			goto hit;
		rc->stats.stale++;
		unlink_at(rc, (unsigned int)i);
	}
	rc->stats.misses++;
	st = insert(rc, start, end, false, 0, NULL, &r);
	if (st != UNIO_OK)
		return st;
	goto out;
hit:
	rc->stats.hits++;
out:
	r->refs++;
	r->lru = ++rc->tick;
	*region_p = &r->pub;
	return UNIO_OK;
}

unio_status_t
unio_rcache_get_ident(struct unio_rcache *rc, uintptr_t addr, size_t len, uint64_t ident,
		      void *ctx, struct unio_rcache_region **region_p)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = addr & ~(page - 1), end;
	struct region *r;
	unio_status_t st;
	int i;

	if (rc == NULL || region_p == NULL || len == 0 || addr + len < addr ||
	    addr + len + page - 1 < addr + len)
		return UNIO_ERR_INVALID_PARAM;
	end = (addr + len + page - 1) & ~(page - 1);
	i = find(rc, start, end);
	if (i >= 0 && rc->arr[i]->ident == ident) {
		r = rc->arr[i];
		rc->stats.hits++;
		goto out;
	}
	/* what overlaps the range and is not this allocation was unmapped by its owner */
	for (unsigned int k = rc->n; k-- > 0;)
		if (rc->arr[k]->pub.start < end && rc->arr[k]->pub.end > start &&
		    rc->arr[k]->ident != ident) {
			rc->stats.stale++;
			unlink_at(rc, k);
		}
	rc->stats.misses++;
	st = insert(rc, start, end, true, ident, ctx, &r);
	if (st != UNIO_OK)
		return st;
out:
	r->refs++;
	r->lru = ++rc->tick;
	*region_p = &r->pub;
	return UNIO_OK;
}

void
unio_rcache_put(struct unio_rcache *rc, struct unio_rcache_region *region)
{
	struct region *r = (struct region *)region;

	if (rc == NULL || r == NULL || r->refs == 0)
		return;
	if (--r->refs == 0 && r->stale)
		region_free(rc, r);
}

void
unio_rcache_invalidate(struct unio_rcache *rc, void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr, e = a + len;

	if (rc == NULL || len == 0)
		return;
	for (unsigned int i = rc->n; i-- > 0;)
		if (rc->arr[i]->pub.start < e && rc->arr[i]->pub.end > a)
			unlink_at(rc, i);
}

void
unio_rcache_get_stats(const struct unio_rcache *rc, struct unio_rcache_stats *stats)
{
	if (rc == NULL || stats == NULL)
		return;
	*stats = rc->stats;
	stats->regions = rc->n;
	stats->bytes = rc->bytes;
}
