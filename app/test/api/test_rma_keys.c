/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Remote-key security: a key grants its mapped range and nothing else.
 * - forged keys: random bytes of random lengths, and the real key with every byte replaced
 *   by many values (well over 100,000 keys in all), over the self and the host lanes: each
 *   is refused at unpack or by both a put and a get (the refused get writes no byte of its
 *   buffer); a put that passes lands exactly where the real key would have put it, the get
 *   behind it reads exactly that, and no other byte of the owner's memory changes;
 * - every boundary +-1 (start-1, end+1, length 0, a length that overflows);
 * - a key after unmap, and after its registration slot was reused for new memory at the
 *   same address: refused, nothing written.
 */

#include <rte_log.h>

#include "api_common.h"
#include "unio_proto.h"

#define LEN   65536
#define GUARD 4096
#define N_RANDOM 40000

struct env {
	unio_context_t *ctx;
	unio_worker_t *a, *b;
	unio_ep_t *ep;
	uint8_t *raw;             /* guard | LEN mapped | guard */
	uint8_t *base;
	uint8_t *shadow;          /* what raw must contain */
	unio_mem_h memh;
	void *key;
	size_t key_len;
};

static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int
env_open(struct env *e, bool self, bool alloc)
{
	struct unio_mem_map_params mp = { .field_mask = UNIO_MEM_MAP_PARAM_LENGTH |
							UNIO_MEM_MAP_PARAM_ADDRESS |
							UNIO_MEM_MAP_PARAM_FLAGS, .length = LEN };
	struct unio_mem_attr attr;
	unio_status_t st;

	memset(e, 0, sizeof(*e));
	e->ctx = api_ctx(NULL);
	TEST_ASSERT(e->ctx != NULL, "context");
	e->a = unio_worker_create(e->ctx, NULL, &st);
	e->b = self ? e->a : unio_worker_create(e->ctx, NULL, &st);
	TEST_ASSERT(e->a != NULL && e->b != NULL, "workers");
	e->ep = api_ep_to_worker(e->a, e->b, &st);
	TEST_ASSERT(e->ep != NULL, "ep: %s", unio_status_string(st));
	TEST_ASSERT(api_ep_connected(e->a, e->b, e->ep), "ep never connected");
	e->shadow = malloc(LEN + 2 * GUARD);
	TEST_ASSERT(e->shadow != NULL, "malloc");
	if (alloc) {
		mp.flags = UNIO_MEM_MAP_FLAG_ALLOCATE;
	} else {
		e->raw = malloc(LEN + 2 * GUARD);
		TEST_ASSERT(e->raw != NULL, "malloc");
		mp.address = e->raw + GUARD;
	}
	TEST_ASSERT_STATUS(unio_mem_map(e->b, &mp, &e->memh), UNIO_OK);
	TEST_ASSERT_STATUS(unio_mem_query(e->memh, &attr), UNIO_OK);
	e->base = attr.address;
	if (alloc)
		e->raw = NULL;
	TEST_ASSERT_STATUS(unio_rkey_pack(e->memh, &e->key, &e->key_len), UNIO_OK);
	return TEST_OK;
}

static void
env_close(struct env *e)
{
	unio_rkey_buffer_release(e->key);
	if (e->memh != NULL)
		unio_mem_unmap(e->b, e->memh);
	if (e->ep != NULL)
		unio_ep_close(e->ep, UNIO_EP_CLOSE_FORCE, NULL);
	if (e->b != e->a)
		unio_worker_destroy(e->b);
	unio_worker_destroy(e->a);
	unio_context_destroy(e->ctx);
	if (e->base != NULL && e->raw != NULL)
		free(e->raw);
	free(e->shadow);
}

/* The whole watched area: the mapping, and the guards when the memory is ours. */
static uint8_t *
watched(struct env *e, size_t *len)
{
	*len = e->raw != NULL ? LEN + 2 * GUARD : LEN;
	return e->raw != NULL ? e->raw : e->base;
}

static void
snapshot(struct env *e)
{
	size_t n;
	uint8_t *w = watched(e, &n);

	test_fill(w, n, 0x1234);
	memcpy(e->shadow, w, n);
}

static int
unchanged(struct env *e)
{
	size_t n;
	uint8_t *w = watched(e, &n);

	return memcmp(w, e->shadow, n) == 0;
}

/*
 * Try one key: put 8 bytes at the real base, then get them back into a guarded buffer;
 * count refusals; check what changed on both sides.  Put and get are refused together.
 */
static int
try_key(struct env *e, const uint8_t *key, size_t len, unsigned int *refused)
{
	static const uint64_t pattern = 0x0123456789abcdefull;
	uint8_t got[sizeof(pattern) + 8];
	unio_rkey_t *rk;
	unio_status_t st, gs;
	size_t off = e->raw != NULL ? GUARD : 0;

	if (unio_ep_rkey_unpack(e->ep, key, len, &rk) != UNIO_OK) {
		(*refused)++;
		return TEST_OK;
	}
	memset(got, 0x5c, sizeof(got));
	st = unio_put(e->ep, &pattern, sizeof(pattern), (uintptr_t)e->base, rk, NULL, NULL);
	gs = unio_get(e->ep, got, sizeof(pattern), (uintptr_t)e->base, rk, NULL, NULL);
	unio_rkey_destroy(rk);
	if (st != UNIO_OK) {
		TEST_ASSERT(st == UNIO_ERR_OUT_OF_RANGE || st == UNIO_ERR_INVALID_ADDR,
			    "refused put: unexpected %s", unio_status_string(st));
		TEST_ASSERT(gs == st, "put refused (%s), get %s", unio_status_string(st),
			    unio_status_string(gs));
		TEST_ASSERT(unchanged(e), "a refused put changed memory");
		for (size_t i = 0; i < sizeof(got); i++)
			TEST_ASSERT(got[i] == 0x5c, "a refused get wrote its buffer (byte %zu)", i);
		(*refused)++;
		return TEST_OK;
	}
	/* accepted: only an inert byte changed; the write went exactly where it should */
	memcpy(e->shadow + off, &pattern, sizeof(pattern));
	TEST_ASSERT(unchanged(e), "an accepted mutated key wrote somewhere else");
	TEST_ASSERT_STATUS(gs, UNIO_OK);
	TEST_ASSERT(memcmp(got, &pattern, sizeof(pattern)) == 0 && got[sizeof(pattern)] == 0x5c,
		    "an accepted mutated key's get read something else");
	return TEST_OK;
}

static int
forged(bool self, bool alloc)
{
	uint8_t *k, junk[1024];
	unsigned int refused = 0, tried = 0, accepted_hdr = 0;
	uint64_t s = 0x9e3779b97f4a7c15ull;
	struct env e;
	int rc = TEST_FAIL;

	if (env_open(&e, self, alloc) != TEST_OK)
		goto out;
	rte_log_set_level_pattern("unio.*", RTE_LOG_CRIT);
	snapshot(&e);
	k = malloc(e.key_len);
	TEST_ASSERT(k != NULL, "malloc");
	for (unsigned int i = 0; i < N_RANDOM; i++, tried++) {
		size_t n = (size_t)(rnd(&s) % sizeof(junk));

		for (size_t j = 0; j < n; j++)
			junk[j] = (uint8_t)rnd(&s);
		if (i % 2 && n >= 4)
			memcpy(junk, e.key, RTE_MIN(n, (size_t)8));  /* right magic, rest forged */
		if (try_key(&e, junk, n, &refused) != TEST_OK)
			goto fail;
	}
	TEST_ASSERT(refused == tried, "%u of %u random keys accepted", tried - refused, tried);
	for (size_t pos = 0; pos < e.key_len; pos++) {
		for (unsigned int v = 1; v < 256; v++, tried++) {
			unsigned int before = refused;

			memcpy(k, e.key, e.key_len);
			k[pos] ^= (uint8_t)v;
			if (try_key(&e, k, e.key_len, &refused) != TEST_OK)
				goto fail;
			/* the fixed header (magic .. memory type) must never be mutable */
			if (pos < 48 && refused == before)
				accepted_hdr++;
		}
	}
	TEST_LOG("%u forged keys, %u refused", tried, refused);
	TEST_ASSERT(tried >= 100000, "only %u keys tried", tried);
	TEST_ASSERT(accepted_hdr == 0, "%u keys with a mutated header accepted", accepted_hdr);
	rc = TEST_OK;
fail:
	free(k);
out:
	rte_log_set_level_pattern("unio.*", RTE_LOG_WARNING);
	env_close(&e);
	return rc;
}

UNIO_TEST(rma_forged_keys_self, fast)
{
	return forged(true, false);
}

UNIO_TEST(rma_forged_keys_host, fast)
{
	return forged(false, false);
}

UNIO_TEST(rma_forged_keys_host_mapped, fast)
{
	return forged(false, true);
}

/* ---- boundaries ---- */

static int
one_access(struct env *e, unio_rkey_t *rk, uint64_t addr, size_t len, unio_status_t want)
{
	static uint8_t buf[LEN + 2];
	unio_status_t st;

	test_fill(buf, sizeof(buf), addr ^ len);
	st = unio_put(e->ep, buf, len, addr, rk, NULL, NULL);
	TEST_ASSERT(st == want, "put [%+" PRId64 ", %zu): %s, want %s",
		    (int64_t)(addr - (uintptr_t)e->base), len, unio_status_string(st),
		    unio_status_string(want));
	if (want == UNIO_OK && len > 0)
		memcpy(e->shadow + (e->raw != NULL ? GUARD : 0) + (addr - (uintptr_t)e->base),
		       buf, len);
	TEST_ASSERT(unchanged(e), "put [%+" PRId64 ", %zu) changed other bytes",
		    (int64_t)(addr - (uintptr_t)e->base), len);
	st = unio_get(e->ep, buf, len, addr, rk, NULL, NULL);
	TEST_ASSERT(st == want, "get [%+" PRId64 ", %zu): %s", (int64_t)(addr -
		    (uintptr_t)e->base), len, unio_status_string(st));
	return TEST_OK;
}

static int
bounds(bool self, bool alloc)
{
	const unio_status_t oor = UNIO_ERR_OUT_OF_RANGE;
	uint64_t b;
	unio_rkey_t *rk;
	struct env e;

	TEST_ASSERT_EQ(env_open(&e, self, alloc), TEST_OK);
	b = (uintptr_t)e.base;
	snapshot(&e);
	TEST_ASSERT_STATUS(unio_ep_rkey_unpack(e.ep, e.key, e.key_len, &rk), UNIO_OK);
	TEST_ASSERT_EQ(one_access(&e, rk, b - 1, 1, oor), TEST_OK);
	TEST_ASSERT_EQ(one_access(&e, rk, b - 1, 2, oor), TEST_OK);
	TEST_ASSERT_EQ(one_access(&e, rk, b - 1, 0, oor), TEST_OK);
	TEST_ASSERT_EQ(one_access(&e, rk, b, LEN + 1, oor), TEST_OK);
	TEST_ASSERT_EQ(one_access(&e, rk, b + LEN, 1, oor), TEST_OK);
	TEST_ASSERT_EQ(one_access(&e, rk, b + LEN - 1, 2, oor), TEST_OK);
	TEST_ASSERT_EQ(one_access(&e, rk, b + LEN + 1, 0, oor), TEST_OK);
	TEST_ASSERT_EQ(one_access(&e, rk, b + 1, LEN, oor), TEST_OK);
	TEST_ASSERT_EQ(one_access(&e, rk, UINT64_MAX, 2, oor), TEST_OK);
	TEST_ASSERT_STATUS(unio_put(e.ep, e.shadow, SIZE_MAX, b, rk, NULL, NULL), oor);
	TEST_ASSERT_STATUS(unio_put(e.ep, e.shadow, SIZE_MAX - LEN + 2, b + LEN - 1, rk, NULL,
				    NULL), oor);
	TEST_ASSERT(unchanged(&e), "overflowing lengths changed memory");
	TEST_ASSERT_EQ(one_access(&e, rk, b, 0, UNIO_OK), TEST_OK);
	TEST_ASSERT_EQ(one_access(&e, rk, b + LEN, 0, UNIO_OK), TEST_OK);
	TEST_ASSERT_EQ(one_access(&e, rk, b, 1, UNIO_OK), TEST_OK);
	TEST_ASSERT_EQ(one_access(&e, rk, b + LEN - 1, 1, UNIO_OK), TEST_OK);
	TEST_ASSERT_EQ(one_access(&e, rk, b, LEN, UNIO_OK), TEST_OK);
	TEST_ASSERT_EQ(one_access(&e, rk, b + 1, LEN - 1, UNIO_OK), TEST_OK);
	unio_rkey_destroy(rk);
	env_close(&e);
	return TEST_OK;
}

UNIO_TEST(rma_key_bounds, fast)
{
	TEST_ASSERT_EQ(bounds(true, false), TEST_OK);
	TEST_ASSERT_EQ(bounds(false, false), TEST_OK);
	return bounds(false, true);
}

/* ---- stale keys ---- */

static int
stale(bool self)
{
	struct unio_mem_map_params mp = { .field_mask = UNIO_MEM_MAP_PARAM_LENGTH |
							UNIO_MEM_MAP_PARAM_ADDRESS, .length = LEN };
	uint64_t v = 42;
	unio_rkey_t *old, *fresh;
	unio_mem_h again;
	void *key2;
	size_t len2;
	struct env e;

	TEST_ASSERT_EQ(env_open(&e, self, false), TEST_OK);
	mp.address = e.base;
	TEST_ASSERT_STATUS(unio_ep_rkey_unpack(e.ep, e.key, e.key_len, &old), UNIO_OK);
	TEST_ASSERT_STATUS(unio_put(e.ep, &v, 8, (uintptr_t)e.base, old, NULL, NULL), UNIO_OK);
	TEST_ASSERT_STATUS(unio_mem_unmap(e.b, e.memh), UNIO_OK);
	e.memh = NULL;
	snapshot(&e);
	TEST_ASSERT_STATUS(unio_put(e.ep, &v, 8, (uintptr_t)e.base, old, NULL, NULL),
			   UNIO_ERR_INVALID_ADDR);
	TEST_ASSERT_STATUS(unio_get(e.ep, &v, 8, (uintptr_t)e.base, old, NULL, NULL),
			   UNIO_ERR_INVALID_ADDR);
	/* every slot cycles until the old one is reused for the same address */
	for (unsigned int i = 0; i < 1024; i++) {
		TEST_ASSERT_STATUS(unio_mem_map(e.b, &mp, &again), UNIO_OK);
		TEST_ASSERT_STATUS(unio_put(e.ep, &v, 8, (uintptr_t)e.base, old, NULL, NULL),
				   UNIO_ERR_INVALID_ADDR);
		if (i + 1 < 1024)
			TEST_ASSERT_STATUS(unio_mem_unmap(e.b, again), UNIO_OK);
	}
	TEST_ASSERT(unchanged(&e), "a stale key wrote");
	if (unio_ep_rkey_unpack(e.ep, e.key, e.key_len, &fresh) == UNIO_OK) {
		unio_status_t st = unio_put(e.ep, &v, 8, (uintptr_t)e.base, fresh, NULL, NULL);

		unio_rkey_destroy(fresh);
		TEST_ASSERT_STATUS(st, UNIO_ERR_INVALID_ADDR);
	}
	TEST_ASSERT_STATUS(unio_rkey_pack(again, &key2, &len2), UNIO_OK);
	TEST_ASSERT_STATUS(unio_ep_rkey_unpack(e.ep, key2, len2, &fresh), UNIO_OK);
	TEST_ASSERT_STATUS(unio_put(e.ep, &v, 8, (uintptr_t)e.base, fresh, NULL, NULL), UNIO_OK);
	TEST_ASSERT(memcmp(e.base, &v, 8) == 0, "the new key's put");
	unio_rkey_destroy(fresh);
	unio_rkey_destroy(old);
	unio_rkey_buffer_release(key2);
	e.memh = again;
	env_close(&e);
	return TEST_OK;
}

UNIO_TEST(rma_stale_keys, fast)
{
	TEST_ASSERT_EQ(stale(true), TEST_OK);
	return stale(false);
}
