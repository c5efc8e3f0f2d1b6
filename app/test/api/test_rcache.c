/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Registration cache: hits and misses by address range, reference counts, the bound (LRU
 * eviction of unreferenced regions only), invalidation, and address reuse: memory unmapped
 * and mapped again at the same address with another backing never gets the old
 * registration (the driver sees a new registration, the old one is deregistered).
 */

#include <sys/mman.h>
#include <unistd.h>

#include "api_common.h"
#include "unio_rcache.h"

struct counts {
	uint64_t next_id;
	unsigned int regs;
	unsigned int deregs;
	uint64_t last_dereg;
};

static unio_status_t
reg(void *arg, void *addr, size_t len, void **handle)
{
	struct counts *c = arg;

	RTE_SET_USED(addr), RTE_SET_USED(len);
	c->regs++;
	*handle = (void *)(uintptr_t)++c->next_id;
	return UNIO_OK;
}

static void
dereg(void *arg, void *addr, size_t len, void *handle)
{
	struct counts *c = arg;

	RTE_SET_USED(addr), RTE_SET_USED(len);
	c->deregs++;
	c->last_dereg = (uintptr_t)handle;
}

static const struct unio_rcache_ops ops = { .reg = reg, .dereg = dereg };

static struct unio_rcache *
cache(struct counts *c, unsigned int max, size_t max_bytes)
{
	struct unio_rcache_params p = { .ops = &ops, .arg = c, .max_regions = max,
					.max_bytes = max_bytes };
	struct unio_rcache *rc = NULL;

	memset(c, 0, sizeof(*c));
	return unio_rcache_create(&p, &rc) == UNIO_OK ? rc : NULL;
}

UNIO_TEST(rcache_lookup, fast)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *m = mmap(NULL, 16 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	struct unio_rcache_region *r1, *r2, *r3;
	struct unio_rcache_stats s;
	struct unio_rcache *rc;
	struct counts c;

	TEST_ASSERT(m != MAP_FAILED, "mmap");
	rc = cache(&c, 0, 0);
	TEST_ASSERT(rc != NULL, "create");
	TEST_ASSERT_STATUS(unio_rcache_get(rc, m + 10, 8 * pg, &r1), UNIO_OK);
	TEST_ASSERT(r1->start == (uintptr_t)m && r1->end == (uintptr_t)m + 9 * pg,
		    "region [%#" PRIxPTR ", %#" PRIxPTR ") not page-aligned around the buffer",
		    r1->start, r1->end);
	TEST_ASSERT_STATUS(unio_rcache_get(rc, m + pg, 100, &r2), UNIO_OK);
	TEST_ASSERT(r2 == r1 && c.regs == 1, "a covered range was registered again");
	TEST_ASSERT_STATUS(unio_rcache_get(rc, m + 8 * pg, 2 * pg, &r3), UNIO_OK);
	TEST_ASSERT(r3 != r1 && c.regs == 2, "a range past the region was not registered");
	TEST_ASSERT_STATUS(unio_rcache_get(rc, m, 0, &r3), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_rcache_get(rc, (void *)UINTPTR_MAX, 2, &r3),
			   UNIO_ERR_INVALID_PARAM);
	unio_rcache_get_stats(rc, &s);
	TEST_ASSERT(s.hits == 1 && s.misses == 2 && s.regions == 2, "stats %" PRIu64 "/%" PRIu64
		    "/%u", s.hits, s.misses, s.regions);
	unio_rcache_put(rc, r1);
	unio_rcache_put(rc, r2);
	unio_rcache_put(rc, r3);
	unio_rcache_invalidate(rc, m + 8 * pg, 1);
	TEST_ASSERT(c.deregs == 2, "invalidate of the overlapping regions: %u deregs", c.deregs);
	unio_rcache_destroy(rc);
	munmap(m, 16 * pg);
	return TEST_OK;
}

UNIO_TEST(rcache_bounded, fast)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *m = mmap(NULL, 64 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	struct unio_rcache_region *r[8], *x;
	struct unio_rcache_stats s;
	struct unio_rcache *rc;
	struct counts c;

	TEST_ASSERT(m != MAP_FAILED, "mmap");
	rc = cache(&c, 4, 0);
	TEST_ASSERT(rc != NULL, "create");
	for (unsigned int i = 0; i < 8; i++) {
		TEST_ASSERT_STATUS(unio_rcache_get(rc, m + i * 4 * pg, pg, &r[i]), UNIO_OK);
		unio_rcache_put(rc, r[i]);
	}
	unio_rcache_get_stats(rc, &s);
	TEST_ASSERT(s.regions == 4 && s.evictions == 4 && c.deregs == 4 && c.last_dereg == 4,
		    "%u regions, %" PRIu64 " evictions, %u deregs, last %" PRIu64, s.regions,
		    s.evictions, c.deregs, c.last_dereg);
	/* the least recently used goes first: touch 5, then a new one evicts 6 */
	TEST_ASSERT_STATUS(unio_rcache_get(rc, m + 4 * 4 * pg, pg, &x), UNIO_OK);
	unio_rcache_put(rc, x);
	TEST_ASSERT_STATUS(unio_rcache_get(rc, m + 0, pg, &x), UNIO_OK);
	unio_rcache_put(rc, x);
	TEST_ASSERT(c.last_dereg == 6, "evicted %" PRIu64 ", want the LRU (6)", c.last_dereg);
	/* held regions are never evicted */
	for (unsigned int i = 0; i < 4; i++)
		TEST_ASSERT_STATUS(unio_rcache_get(rc, m + (16 + i * 4) * pg, pg, &r[i]),
				   UNIO_OK);
	TEST_ASSERT_STATUS(unio_rcache_get(rc, m + 40 * pg, pg, &x), UNIO_ERR_NO_RESOURCE);
	for (unsigned int i = 0; i < 4; i++)
		unio_rcache_put(rc, r[i]);
	unio_rcache_destroy(rc);
	TEST_ASSERT(c.regs == c.deregs, "%u registrations, %u deregistrations", c.regs,
		    c.deregs);
	munmap(m, 64 * pg);
	return TEST_OK;
}

/* Map @p fd (or anonymous memory when -1) at exactly @p at. */
static uint8_t *
map_at(void *at, size_t len, int fd)
{
	int flags = MAP_SHARED | MAP_FIXED | (fd < 0 ? MAP_ANONYMOUS : 0);
	void *p = mmap(at, len, PROT_READ | PROT_WRITE, at != NULL ? flags : flags & ~MAP_FIXED,
		       fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

UNIO_TEST(rcache_address_reuse, fast)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = 4 * pg;
	int fa = memfd_create("unio-test-rcache-a", MFD_CLOEXEC);
	int fb = memfd_create("unio-test-rcache-b", MFD_CLOEXEC);
	struct unio_rcache_region *r1, *r2, *r3, *r4;
	struct unio_rcache_stats s;
	struct unio_rcache *rc;
	struct counts c;
	uint8_t *m;

	TEST_ASSERT(fa >= 0 && fb >= 0 && ftruncate(fa, 2 * len) == 0 &&
		    ftruncate(fb, 2 * len) == 0, "memfd");
	rc = cache(&c, 0, 0);
	m = map_at(NULL, len, fa);
	TEST_ASSERT(rc != NULL && m != NULL, "setup");
	TEST_ASSERT_STATUS(unio_rcache_get(rc, m, len, &r1), UNIO_OK);
	TEST_ASSERT_STATUS(unio_rcache_get(rc, m, len, &r2), UNIO_OK);
	TEST_ASSERT(r1 == r2 && c.regs == 1, "same mapping: a hit");
	unio_rcache_put(rc, r2);
	/* free and map the same address with another file: r1 is still held by a user */
	TEST_ASSERT(munmap(m, len) == 0 && map_at(m, len, fb) == m, "re-map b at %p", m);
	TEST_ASSERT_STATUS(unio_rcache_get(rc, m, len, &r3), UNIO_OK);
	TEST_ASSERT(r3 != r1 && c.regs == 2, "the stale registration was used for new memory");
	TEST_ASSERT(c.deregs == 0, "a held registration was deregistered under its user");
	unio_rcache_put(rc, r1);
	TEST_ASSERT(c.deregs == 1 && c.last_dereg == 1,
		    "the stale one is deregistered at its last put");
	unio_rcache_put(rc, r3);
	/* same file, another offset */
	TEST_ASSERT(munmap(m, len) == 0, "munmap");
	TEST_ASSERT(mmap(m, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fb, (off_t)len) ==
		    m, "re-map b+len");
	TEST_ASSERT_STATUS(unio_rcache_get(rc, m, len, &r4), UNIO_OK);
	TEST_ASSERT(c.regs == 3 && c.last_dereg == 2, "another offset of the same file: stale");
	unio_rcache_put(rc, r4);
	/* anonymous memory in its place */
	TEST_ASSERT(munmap(m, len) == 0 && map_at(m, len, -1) == m, "anonymous at %p", m);
	TEST_ASSERT_STATUS(unio_rcache_get(rc, m, len, &r4), UNIO_OK);
	TEST_ASSERT(c.regs == 4 && c.last_dereg == 3, "anonymous in place of a file: stale");
	unio_rcache_put(rc, r4);
	/* nothing mapped at all */
	TEST_ASSERT(munmap(m, len) == 0, "munmap");
	TEST_ASSERT_STATUS(unio_rcache_get(rc, m, len, &r4), UNIO_ERR_INVALID_ADDR);
	unio_rcache_get_stats(rc, &s);
	TEST_ASSERT(s.stale == 4, "%" PRIu64 " stale regions detected, want 4", s.stale);
	unio_rcache_destroy(rc);
	TEST_ASSERT(c.regs == c.deregs, "%u registrations, %u deregistrations", c.regs,
		    c.deregs);
	close(fa);
	close(fb);
	return TEST_OK;
}
