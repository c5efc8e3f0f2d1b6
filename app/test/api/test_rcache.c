/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Registration cache: hits and misses by address range, reference counts, the bound (LRU
 * eviction of unreferenced regions only), invalidation, and address reuse: memory unmapped
 * and mapped again at the same address with another backing never gets the old
 * registration (the driver sees a new registration, the old one is deregistered).
 */

#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "api_common.h"
#include "proto_am_rma.h"
#include "unio_rcache.h"
#include "unio_tl_shm.h"

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

/* ---- foreign memory: identities named by the caller ---- */

static unio_status_t
reg_ctx(void *arg, void *ctx, void *addr, size_t len, void **handle)
{
	struct counts *c = arg;

	RTE_SET_USED(addr), RTE_SET_USED(len);
	c->regs++;
	*handle = ctx;
	return UNIO_OK;
}

static const struct unio_rcache_ops foreign_ops = { .reg = reg, .dereg = dereg,
						    .reg_ctx = reg_ctx };

/*
 * A peer's ranges, looked up by address and identity: the same identity hits, another one
 * at the same or an overlapping address drops the old region (at its last put when held),
 * a disjoint one coexists; the bound evicts the least recently used unreferenced region.
 */
UNIO_TEST(rcache_foreign_ident, fast)
{
	struct unio_rcache_params p = { .ops = &foreign_ops, .max_bytes = 3 * 65536 };
	struct unio_rcache_region *r1, *r2, *r3, *r4, *r5;
	struct unio_rcache_stats s;
	struct unio_rcache *rc = NULL;
	struct counts c;
	uintptr_t base = 0x7f0000000000ull;

	memset(&c, 0, sizeof(c));
	p.arg = &c;
	TEST_ASSERT_STATUS(unio_rcache_create(&p, &rc), UNIO_OK);
	TEST_ASSERT_STATUS(unio_rcache_get_ident(rc, base, 65536, 11, (void *)1, &r1), UNIO_OK);
	TEST_ASSERT_STATUS(unio_rcache_get_ident(rc, base, 65536, 11, (void *)2, &r2), UNIO_OK);
	TEST_ASSERT(r1 == r2 && c.regs == 1 && r1->handle == (void *)1, "same identity: a hit");
	unio_rcache_put(rc, r2);
	/* the peer unmapped and mapped another allocation there; r1 still has a user */
	TEST_ASSERT_STATUS(unio_rcache_get_ident(rc, base, 65536, 12, (void *)3, &r3), UNIO_OK);
	TEST_ASSERT(r3 != r1 && r3->handle == (void *)3 && c.regs == 2,
		    "another identity at the same address got the old region");
	TEST_ASSERT(c.deregs == 0, "a held region was deregistered under its user");
	unio_rcache_put(rc, r1);
	TEST_ASSERT(c.deregs == 1 && c.last_dereg == 1, "the stale one goes at its last put");
	/* overlapping, another identity: r3 goes at once (no user) */
	unio_rcache_put(rc, r3);
	TEST_ASSERT_STATUS(unio_rcache_get_ident(rc, base + 4096, 8192, 13, (void *)4, &r4),
			   UNIO_OK);
	TEST_ASSERT(c.deregs == 2 && c.last_dereg == 3, "an overlapped region stayed");
	unio_rcache_put(rc, r4);
	/* disjoint ones coexist until the bound (3 x 64 KiB) evicts the least recent */
	TEST_ASSERT_STATUS(unio_rcache_get_ident(rc, base + 65536, 65536, 14, (void *)5, &r5),
			   UNIO_OK);
	unio_rcache_put(rc, r5);
	TEST_ASSERT_STATUS(unio_rcache_get_ident(rc, base + 131072, 65536, 15, (void *)6, &r5),
			   UNIO_OK);
	unio_rcache_put(rc, r5);
	TEST_ASSERT_STATUS(unio_rcache_get_ident(rc, base + 262144, 65536, 16, (void *)7, &r5),
			   UNIO_OK);
	unio_rcache_put(rc, r5);
	unio_rcache_get_stats(rc, &s);
	TEST_ASSERT(s.hits == 1 && s.misses == 6 && s.stale == 2 && s.evictions == 1 &&
		    s.regions == 3 && s.bytes == 3 * 65536,
		    "hits %" PRIu64 " misses %" PRIu64 " stale %" PRIu64 " evictions %" PRIu64
		    " regions %u bytes %zu", s.hits, s.misses, s.stale, s.evictions, s.regions,
		    s.bytes);
	TEST_ASSERT(c.last_dereg == 4, "the least recently used (r4) was not the one evicted");
	unio_rcache_destroy(rc);
	TEST_ASSERT(c.regs == c.deregs, "%u registrations, %u deregistrations", c.regs,
		    c.deregs);
	return TEST_OK;
}

/* ---- the shm driver's cache of peers' allocations, between two processes ---- */

#define MIB        (1024 * 1024)
#define SHM_ROUNDS 4             /* the owner maps, hands out a key, unmaps, maps again */
#define SHM_KEYS   4             /* the accessor unpacks each round's key this many times */
#define SHM_EXTRA  3             /* then three allocations at once: the 3 MiB bound evicts */
/* every key also names the owner's registration table (allocated, so mapped too) */
#define SHM_TABLE  (RMA_TABLE_SLOTS * sizeof(struct rma_entry))
#define TAG_KEY    0x6b6579ull
#define TAG_CHK    0x63686bull
#define TAG_ANS    0x616e73ull

struct shm_key_msg {
	uint64_t addr;
	uint64_t klen;
	uint8_t key[1024];
};

struct shm_chk_msg {
	uint64_t seed;           /* UINT64_MAX: this region is done */
};

struct shm_ans_msg {
	int64_t first_bad;       /* -1: every byte is the pattern of the seed */
};

static int
owner_region(unio_worker_t *w, unio_ep_t *ep, uint8_t *base, unio_mem_h memh)
{
	static struct shm_key_msg k;
	struct unio_recv_info info;
	uint8_t *want = malloc(MIB);
	struct shm_chk_msg c;
	struct shm_ans_msg a;
	void *key;
	size_t klen;

	if (want == NULL || unio_rkey_pack(memh, &key, &klen) != UNIO_OK || klen > sizeof(k.key))
		return 4;
	k.addr = (uintptr_t)base;
	k.klen = klen;
	memcpy(k.key, key, klen);
	unio_rkey_buffer_release(key);
	memset(base, 0, MIB);
	if (api_send(w, ep, &k, sizeof(k), TAG_KEY, 0) != UNIO_OK)
		return 5;
	for (;;) {
		if (api_recv(w, &c, sizeof(c), TAG_CHK, UINT64_MAX, &info) != UNIO_OK)
			return 6;
		if (c.seed == UINT64_MAX)
			break;
		test_fill(want, MIB, c.seed);
		a.first_bad = -1;
		for (size_t i = 0; i < MIB && a.first_bad < 0; i++)
			if (base[i] != want[i])
				a.first_bad = (int64_t)i;
		if (api_send(w, ep, &a, sizeof(a), TAG_ANS, 0) != UNIO_OK)
			return 7;
	}
	free(want);
	return 0;
}

/* Map 1 MiB, at @p at when not NULL (the kernel hands a freed range out again: retry). */
static unio_mem_h
owner_map(unio_worker_t *w, void *at, uint8_t **base)
{
	struct unio_mem_map_params mp = { .field_mask = UNIO_MEM_MAP_PARAM_LENGTH |
							UNIO_MEM_MAP_PARAM_FLAGS,
					  .length = MIB, .flags = UNIO_MEM_MAP_FLAG_ALLOCATE };
	unio_mem_h extra[8], memh = NULL;
	struct unio_mem_attr attr;
	unsigned int n = 0;

	for (;;) {
		if (unio_mem_map(w, &mp, &memh) != UNIO_OK ||
		    unio_mem_query(memh, &attr) != UNIO_OK || !attr.mappable)
			return NULL;
		if (at == NULL || attr.address == at || n == RTE_DIM(extra))
			break;
		extra[n++] = memh;   /* held so the next try gets another range */
	}
	while (n > 0)
		unio_mem_unmap(w, extra[--n]);
	*base = attr.address;
	return memh;
}

UNIO_TEST_CHILD(rcache_shm_owner)
{
	unio_context_t *ctx = api_ctx(NULL);
	unio_worker_t *w = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	unio_status_t st = UNIO_ERR_INVALID_PARAM;
	unio_ep_t *ep = NULL;
	unio_mem_h memh[SHM_EXTRA];
	uint8_t *base[SHM_EXTRA], *first = NULL;
	int rc = 0;

	prctl(PR_SET_PDEATHSIG, SIGKILL);   /* never outlive the test */
	if (argc < 1 || w == NULL)
		return 2;
	ep = api_connect(w, atoi(argv[0]), NULL, NULL, &st);
	if (ep == NULL)
		return st == UNIO_ERR_UNREACHABLE ? 77 : 3;
	for (unsigned int r = 0; r < SHM_ROUNDS && rc == 0; r++) {
		memh[0] = owner_map(w, first, &base[0]);
		if (memh[0] == NULL)
			return 8;
		if (first == NULL)
			first = base[0];
		rc = owner_region(w, ep, base[0], memh[0]);
		unio_mem_unmap(w, memh[0]);
	}
	for (unsigned int r = 0; r < SHM_EXTRA && rc == 0; r++)
		if ((memh[r] = owner_map(w, NULL, &base[r])) == NULL)
			rc = 8;
	for (unsigned int r = 0; r < SHM_EXTRA && rc == 0; r++)
		rc = owner_region(w, ep, base[r], memh[r]);
	for (unsigned int r = 0; r < SHM_EXTRA && rc != 8; r++)
		unio_mem_unmap(w, memh[r]);
	unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return rc;
}

/* Unpack the owner's key SHM_KEYS times; each time put a new pattern, get it back, have the
 * owner check every byte of its memory. */
static int
accessor_region(unio_worker_t *w, unio_ep_t *ep, uint64_t round, uint64_t *addr,
		uint8_t *src, uint8_t *dst)
{
	static struct shm_key_msg k;
	struct shm_chk_msg c = { UINT64_MAX };
	struct unio_recv_info info;
	struct shm_ans_msg a;
	unio_rkey_t *rk;

	TEST_ASSERT_STATUS(api_recv(w, &k, sizeof(k), TAG_KEY, UINT64_MAX, &info), UNIO_OK);
	*addr = k.addr;
	for (unsigned int i = 0; i < SHM_KEYS; i++) {
		uint64_t seed = round * 100 + i + 1;
		unio_status_t st;

		TEST_ASSERT_STATUS(unio_ep_rkey_unpack(ep, k.key, k.klen, &rk), UNIO_OK);
		TEST_ASSERT(rk->data.local_ptr != NULL, "round %" PRIu64 ": not direct-mapped",
			    round);
		test_fill(src, MIB, seed);
		st = unio_put(ep, src, MIB, k.addr, rk, NULL, NULL);
		TEST_ASSERT_STATUS(st, UNIO_OK);
		memset(dst, 0, MIB);
		TEST_ASSERT_STATUS(unio_get(ep, dst, MIB, k.addr, rk, NULL, NULL), UNIO_OK);
		TEST_ASSERT(memcmp(dst, src, MIB) == 0, "round %" PRIu64 " key %u: get differs",
			    round, i);
		unio_rkey_destroy(rk);
		c.seed = seed;
		TEST_ASSERT_STATUS(api_send(w, ep, &c, sizeof(c), TAG_CHK, 0), UNIO_OK);
		TEST_ASSERT_STATUS(api_recv(w, &a, sizeof(a), TAG_ANS, UINT64_MAX, &info),
				   UNIO_OK);
		TEST_ASSERT(a.first_bad < 0, "round %" PRIu64 " key %u: the owner's byte %" PRId64
			    " is not what was put (a stale mapping was written?)", round, i,
			    a.first_bad);
	}
	c.seed = UINT64_MAX;
	TEST_ASSERT_STATUS(api_send(w, ep, &c, sizeof(c), TAG_CHK, 0), UNIO_OK);
	return TEST_OK;
}

static int
accessor(unio_worker_t *w, unio_ep_t *ep)
{
	uint8_t *src = malloc(MIB), *dst = malloc(MIB);
	uint64_t addr[SHM_ROUNDS + SHM_EXTRA];
	unsigned int same = 0;
	struct unio_rcache_stats s;

	TEST_ASSERT(src != NULL && dst != NULL, "malloc");
	TEST_ASSERT(strcmp(ep->lane.iface->driver->name, "shm") == 0, "lane %s",
		    ep->lane.iface->driver->name);
	for (unsigned int r = 0; r < SHM_ROUNDS + SHM_EXTRA; r++) {
		TEST_ASSERT_EQ(accessor_region(w, ep, r, &addr[r], src, dst), TEST_OK);
		if (r > 0 && r < SHM_ROUNDS && addr[r] == addr[r - 1])
			same++;
		if (r == SHM_ROUNDS - 1) {
			TEST_ASSERT_STATUS(unio_tl_shm_map_stats(api_worker_iface(w, "shm", NULL),
								 &s), UNIO_OK);
			TEST_LOG("after %u rounds (%u at the same address): hits %" PRIu64
				 ", misses %" PRIu64 ", stale %" PRIu64 ", evictions %" PRIu64
				 ", %u regions, %zu bytes", SHM_ROUNDS, same, s.hits, s.misses,
				 s.stale, s.evictions, s.regions, s.bytes);
			TEST_ASSERT(same == SHM_ROUNDS - 1, "the owner's memory came back at "
				    "another address in %u of %u rounds", SHM_ROUNDS - 1 - same,
				    SHM_ROUNDS - 1);
			/* one mapping per allocation, reused by its later keys; the table once */
			TEST_ASSERT(s.misses == SHM_ROUNDS + 1 && s.hits == SHM_ROUNDS *
				    (SHM_KEYS - 1) + SHM_ROUNDS * SHM_KEYS - 1, "hits / misses");
			/* each re-mapped address dropped the previous allocation's mapping */
			TEST_ASSERT(s.stale == SHM_ROUNDS - 1 && s.regions == 2 &&
				    s.bytes == MIB + SHM_TABLE && s.evictions == 0,
				    "stale / regions");
		}
	}
	TEST_ASSERT_STATUS(unio_tl_shm_map_stats(api_worker_iface(w, "shm", NULL), &s), UNIO_OK);
	TEST_LOG("after %u more at once (UNIO_SHM_MAP_CACHE=3m): hits %" PRIu64 ", misses %"
		 PRIu64 ", stale %" PRIu64 ", evictions %" PRIu64 ", %u regions, %zu bytes",
		 SHM_EXTRA, s.hits, s.misses, s.stale, s.evictions, s.regions, s.bytes);
	/*
	 * 3 MiB hold the table and two: the third allocation evicted the least recently used
	 * one; the last round's mapping went too, evicted or (the first of the three at its
	 * address) stale.
	 */
	TEST_ASSERT(s.misses == SHM_ROUNDS + 1 + SHM_EXTRA && s.evictions >= 1 &&
		    s.evictions + s.stale - (SHM_ROUNDS - 1) == 2 && s.regions == 3 &&
		    s.bytes == 2 * MIB + SHM_TABLE, "bound");
	free(src);
	free(dst);
	return TEST_OK;
}

/*
 * The owner maps 1 MiB, sends the key, the accessor unpacks it four times (one mapping:
 * hits), puts and gets, and the owner checks every byte; then the owner unmaps and maps
 * again at the same address (a new memfd): the accessor's cache drops the stale mapping,
 * and the owner finds the new pattern in its new memory.  Then three allocations at once
 * against a 3 MiB bound: evictions.  When the owner has exited, nothing of it stays
 * mapped.  Counters from unio_tl_shm_map_stats().
 */
UNIO_TEST(rcache_shm_peer_remap, mp)
{
	struct unio_rcache_stats s = { .regions = 1 };
	struct api_parent p;
	int rc, status = 0;

	/* both processes: 4 KiB pages (the sizes above), the accessor's bound */
	setenv("UNIO_HUGEPAGES", "no", 1);
	setenv("UNIO_SHM_MAP_CACHE", "3m", 1);
	rc = api_parent_open(&p, NULL, "shm", test_free_port(), "rcache_shm_owner", NULL);
	unsetenv("UNIO_HUGEPAGES");
	unsetenv("UNIO_SHM_MAP_CACHE");
	if (rc == TEST_OK)
		rc = p.ep != NULL ? accessor(p.w, p.ep) : TEST_FAIL;
	if (p.pid > 0)
		api_wait_child(p.w, p.pid, 30000, &status);
	/* the owner is gone: once the shm iface notices, none of its memory stays mapped */
	for (uint64_t t0 = rte_get_timer_cycles(); rc == TEST_OK &&
	     rte_get_timer_cycles() - t0 < 5 * rte_get_timer_hz(); ) {
		unio_worker_progress(p.w);
		unio_tl_shm_map_stats(api_worker_iface(p.w, "shm", NULL), &s);
		if (s.regions == 0)
			break;
	}
	api_parent_close(&p);
	TEST_ASSERT_EQ(rc, TEST_OK);
	TEST_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "owner exit status %#x", status);
	TEST_ASSERT(s.regions == 0 && s.bytes == 0, "%u regions, %zu bytes of the dead owner "
		    "still mapped", s.regions, s.bytes);
	return TEST_OK;
}
