/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Remote-key security where the target validates: two workers over tcp, whose initiator
 * cannot read the owner's registration table, so a key the initiator accepts is checked
 * by the target's transport.
 * - over 100,000 forged keys (random bytes, the real key with each byte replaced by every
 *   other value, and keys whose tcp part names every other registration slot and
 *   generation), each tried with a put AND a get: refused keys and refused operations fail
 *   with an error, change no byte of the target's memory (checksummed, with guards) and,
 *   for a get, no byte of the local buffer; an accepted forgery acts exactly as the real
 *   key (8 bytes at its base): over tcp the key's header fields beyond its range (cookie,
 *   generation, table slot) are not checked by anyone, but the tcp part carries the
 *   registration's random secret, so no changed tcp part passes, not even one naming the
 *   target's registration of the same range by its other tcp iface;
 * - every boundary +-1, with keys forged consistently (header and tcp part) to claim a
 *   larger range than was mapped, so that only the target can refuse them;
 * - a key after unmap, and after the same address was mapped again.
 */

#include <rte_log.h>

#include "api_common.h"
#include "unio_proto.h"

#define LEN   65536
#define GUARD 4096
#define N_RANDOM 20000
#define HDR_BASE 24       /* struct rkey_wire_hdr (lib/proto/rma.c): base, len */
#define HDR_LEN 32
#define TL_HDR (UNIO_TL_NAME_MAX + 8)   /* struct rkey_wire_tl */

/* struct tcp_rkey (drivers/tl/tcp/tcp_priv.h) */
struct tkey {
	uint64_t base;
	uint64_t len;
	uint32_t idx;
	uint32_t gen;
	uint64_t secret;
};

struct env {
	unio_context_t *ctx;
	unio_worker_t *a, *b;
	unio_ep_t *ep;
	uint8_t *raw;             /* guard | LEN mapped | guard, b's memory */
	uint8_t *base;
	uint8_t *shadow;
	unio_mem_h memh;
	uint8_t *key;
	size_t key_len;
	size_t tcp_off;           /* where the first tcp entry's data key is in the key */
	uint64_t put_refused, get_refused, unpack_refused, accepted;
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
unchanged(struct env *e)
{
	return memcmp(e->raw, e->shadow, LEN + 2 * GUARD) == 0;
}

/* The offset of the first tcp entry's data key in the packed key. */
static int
find_tcp(struct env *e)
{
	size_t p = 48;
	uint16_t n_tl, dl, tl;

	memcpy(&n_tl, e->key + 6, 2);
	for (unsigned int i = 0; i < n_tl; i++) {
		TEST_ASSERT(p + TL_HDR <= e->key_len, "key entry %u", i);
		memcpy(&dl, e->key + p + UNIO_TL_NAME_MAX, 2);
		memcpy(&tl, e->key + p + UNIO_TL_NAME_MAX + 2, 2);
		if (strncmp((const char *)e->key + p, "tcp", UNIO_TL_NAME_MAX) == 0) {
			TEST_ASSERT_EQ(dl, sizeof(struct tkey));
			e->tcp_off = p + TL_HDR;
			return TEST_OK;
		}
		p += TL_HDR + dl + tl;
	}
	TEST_ASSERT(0, "no tcp entry in the key");
}

static int
env_open(struct env *e)
{
	static const char *const ovr[] = { "TLS", "tcp,self", NULL };
	struct unio_mem_map_params mp = { .field_mask = UNIO_MEM_MAP_PARAM_LENGTH |
							UNIO_MEM_MAP_PARAM_ADDRESS, .length = LEN };
	unio_status_t st;
	void *key;

	memset(e, 0, sizeof(*e));
	e->ctx = api_ctx(ovr);
	TEST_ASSERT(e->ctx != NULL, "context");
	e->a = unio_worker_create(e->ctx, NULL, &st);
	e->b = unio_worker_create(e->ctx, NULL, &st);
	TEST_ASSERT(e->a != NULL && e->b != NULL, "workers");
	e->ep = api_ep_to_worker(e->a, e->b, &st);
	TEST_ASSERT(e->ep != NULL, "ep: %s", unio_status_string(st));
	TEST_ASSERT(api_ep_connected(e->a, e->b, e->ep), "ep never connected");
	TEST_ASSERT(strcmp(e->ep->lane.iface->driver->name, "tcp") == 0, "lane %s",
		    e->ep->lane.iface->driver->name);
	e->raw = malloc(LEN + 2 * GUARD);
	e->shadow = malloc(LEN + 2 * GUARD);
	TEST_ASSERT(e->raw != NULL && e->shadow != NULL, "malloc");
	e->base = e->raw + GUARD;
	mp.address = e->base;
	TEST_ASSERT_STATUS(unio_mem_map(e->b, &mp, &e->memh), UNIO_OK);
	TEST_ASSERT_STATUS(unio_rkey_pack(e->memh, &key, &e->key_len), UNIO_OK);
	e->key = malloc(e->key_len);
	TEST_ASSERT(e->key != NULL, "malloc");
	memcpy(e->key, key, e->key_len);
	unio_rkey_buffer_release(key);
	test_fill(e->raw, LEN + 2 * GUARD, 0x4321);
	memcpy(e->shadow, e->raw, LEN + 2 * GUARD);
	return find_tcp(e);
}

static void
env_close(struct env *e)
{
	free(e->key);
	if (e->memh != NULL)
		unio_mem_unmap(e->b, e->memh);
	if (e->ep != NULL)
		unio_ep_close(e->ep, UNIO_EP_CLOSE_FORCE, NULL);
	if (e->b != NULL)
		unio_worker_destroy(e->b);
	if (e->a != NULL)
		unio_worker_destroy(e->a);
	if (e->ctx != NULL)
		unio_context_destroy(e->ctx);
	free(e->raw);
	free(e->shadow);
}

/*
 * Put then get @p len bytes at @p addr with @p rk.  @p may: the access is allowed (the
 * real range); else both must fail, changing nothing here or there.
 */
static int
try_access(struct env *e, unio_rkey_t *rk, uint64_t addr, size_t len, bool may, uint64_t seed)
{
	uint8_t src[16], dst[16 + 1];
	unio_status_t ps, gs;

	test_fill(src, sizeof(src), seed);
	ps = api_put(e->a, e->b, e->ep, src, len, addr, rk);
	if (ps == UNIO_OK) {
		TEST_ASSERT(may, "a forbidden put of %zu at %+" PRId64 " succeeded (%#" PRIx64 ")",
			    len, (int64_t)(addr - (uintptr_t)e->base), seed);
		memcpy(e->shadow + GUARD + (addr - (uintptr_t)e->base), src, len);
	} else {
		e->put_refused++;
	}
	TEST_ASSERT(unchanged(e), "put of %zu at %+" PRId64 " (%s): target memory changed "
		    "where it should not", len, (int64_t)(addr - (uintptr_t)e->base),
		    unio_status_string(ps));
	memset(dst, 0x5c, sizeof(dst));
	gs = api_get(e->a, e->b, e->ep, dst, len, addr, rk);
	if (gs == UNIO_OK) {
		TEST_ASSERT(may, "a forbidden get of %zu at %+" PRId64 " succeeded", len,
			    (int64_t)(addr - (uintptr_t)e->base));
		TEST_ASSERT(memcmp(dst, e->base + (addr - (uintptr_t)e->base), len) == 0,
			    "get: wrong bytes");
		TEST_ASSERT(dst[len] == 0x5c, "get wrote past its buffer");
	} else {
		e->get_refused++;
		for (size_t i = 0; i < sizeof(dst); i++)
			TEST_ASSERT(dst[i] == 0x5c, "a refused get (%s) wrote its buffer",
				    unio_status_string(gs));
	}
	TEST_ASSERT(unchanged(e), "get changed target memory");
	TEST_ASSERT((ps == UNIO_OK) == (gs == UNIO_OK), "put %s but get %s",
		    unio_status_string(ps), unio_status_string(gs));
	return TEST_OK;
}

/* One key: unpack, then a put and a get of 8 bytes at the real base. */
static int
try_key(struct env *e, const uint8_t *key, size_t len, bool may, uint64_t seed)
{
	unio_rkey_t *rk;
	int rc;

	if (unio_ep_rkey_unpack(e->ep, key, len, &rk) != UNIO_OK) {
		e->unpack_refused++;
		return TEST_OK;
	}
	rc = try_access(e, rk, (uintptr_t)e->base, 8, may, seed);
	unio_rkey_destroy(rk);
	return rc;
}

UNIO_TEST(rma_forged_keys_target, fast)
{
	uint8_t junk[512], *k = NULL;
	uint64_t s = 0x9e3779b97f4a7c15ull, tried = 0, denied;
	unsigned int tcp_passed = 0, slot_passed = 0, siblings = 0;
	struct tkey real, t;
	struct env e;
	int rc = TEST_FAIL;

	if (env_open(&e) != TEST_OK)
		goto out;
	rte_log_set_level_pattern("unio.*", RTE_LOG_CRIT);
	k = malloc(e.key_len);
	TEST_ASSERT(k != NULL, "malloc");
	memcpy(&real, e.key + e.tcp_off, sizeof(real));
	for (unsigned int i = 0; i < e.b->n_ifaces; i++)
		siblings += strcmp(e.b->ifaces[i]->driver->name, "tcp") == 0;
	siblings = siblings > 0 ? siblings - 1 : 0;
	/* random keys, half with the real magic */
	for (unsigned int i = 0; i < N_RANDOM; i++, tried++) {
		size_t n = (size_t)(rnd(&s) % sizeof(junk));

		for (size_t j = 0; j < n; j++)
			junk[j] = (uint8_t)rnd(&s);
		if (i % 2 && n >= 8)
			memcpy(junk, e.key, 8);
		if (try_key(&e, junk, n, false, i) != TEST_OK)
			goto fail;
	}
	TEST_ASSERT(e.unpack_refused + e.put_refused == tried, "random keys accepted");
	/* every byte of the real key, every other value: the tcp part must never pass */
	for (size_t pos = 0; pos < e.key_len; pos++) {
		bool in_tcp = pos >= e.tcp_off && pos < e.tcp_off + sizeof(struct tkey);

		for (unsigned int v = 1; v < 256; v++, tried++) {
			uint64_t before = e.unpack_refused + e.put_refused;

			memcpy(k, e.key, e.key_len);
			k[pos] ^= (uint8_t)v;
			if (try_key(&e, k, e.key_len, true, pos * 256 + v) != TEST_OK)
				goto fail;
			if (in_tcp && e.unpack_refused + e.put_refused == before)
				tcp_passed++;
		}
	}
	/* the tcp part naming other registrations: only the target can tell */
	for (uint32_t idx = 0; idx < 1024; idx++) {
		for (uint32_t gen = 0; gen < 24; gen++, tried++) {
			uint64_t before = e.put_refused;

			if (idx == real.idx && gen == real.gen)
				continue;
			t = real;
			t.idx = idx;
			t.gen = gen;
			memcpy(k, e.key, e.key_len);
			memcpy(k + e.tcp_off, &t, sizeof(t));
			if (try_key(&e, k, e.key_len, true, idx * 64 + gen) != TEST_OK)
				goto fail;
			if (e.put_refused == before)
				slot_passed++;
		}
	}
	denied = e.unpack_refused + e.put_refused;
	TEST_LOG("%" PRIu64 " forged keys: %" PRIu64 " refused at unpack, %" PRIu64 " puts and %"
		 PRIu64 " gets refused by the target, %" PRIu64 " acted as the real key", tried,
		 e.unpack_refused, e.put_refused, e.get_refused, tried - denied);
	/*
	 * No changed tcp part is accepted: slot and generation are guessable, the secret of
	 * each registration is not (before the secret, the registration of the same range by
	 * the target's other tcp iface was reachable by changing the slot index).
	 */
	TEST_LOG("tcp part changed and accepted: %u mutated, %u other slots (%u sibling "
		 "registrations)", tcp_passed, slot_passed, siblings);
	TEST_ASSERT(slot_passed == 0 && tcp_passed == 0,
		    "keys naming other registrations accepted: %u, %u", slot_passed, tcp_passed);
	TEST_ASSERT(tried >= 100000, "only %" PRIu64 " keys", tried);
	TEST_ASSERT(e.put_refused >= 24000 - slot_passed && e.get_refused == e.put_refused,
		    "%" PRIu64 " puts, %" PRIu64 " gets refused by the target", e.put_refused,
		    e.get_refused);
	rc = TEST_OK;
fail:
	free(k);
out:
	rte_log_set_level_pattern("unio.*", RTE_LOG_WARNING);
	env_close(&e);
	return rc;
}

/* A key claiming [base + lo, base + LEN + hi), consistent in its header and tcp part. */
static int
widened(struct env *e, int64_t lo, int64_t hi, unio_rkey_t **rk)
{
	uint8_t *k = malloc(e->key_len);
	uint64_t b, l;
	struct tkey t;
	unio_status_t st;

	TEST_ASSERT(k != NULL, "malloc");
	memcpy(k, e->key, e->key_len);
	b = (uintptr_t)e->base + (uint64_t)lo;
	l = (uint64_t)((int64_t)LEN + hi - lo);
	memcpy(k + HDR_BASE, &b, 8);
	memcpy(k + HDR_LEN, &l, 8);
	memcpy(&t, k + e->tcp_off, sizeof(t));
	t.base = b;
	t.len = l;
	memcpy(k + e->tcp_off, &t, sizeof(t));
	st = unio_ep_rkey_unpack(e->ep, k, e->key_len, rk);
	free(k);
	TEST_ASSERT_STATUS(st, UNIO_OK);
	return TEST_OK;
}

UNIO_TEST(rma_key_bounds_target, fast)
{
	uint64_t b;
	unio_rkey_t *rk, *wide;
	struct env e;

	TEST_ASSERT_EQ(env_open(&e), TEST_OK);
	b = (uintptr_t)e.base;
	TEST_ASSERT_STATUS(unio_ep_rkey_unpack(e.ep, e.key, e.key_len, &rk), UNIO_OK);
	/* the real key: inside passes, the initiator refuses outside */
	TEST_ASSERT_EQ(try_access(&e, rk, b, 1, true, 1), TEST_OK);
	TEST_ASSERT_EQ(try_access(&e, rk, b + LEN - 1, 1, true, 2), TEST_OK);
	TEST_ASSERT_EQ(try_access(&e, rk, b + LEN - 8, 8, true, 3), TEST_OK);
	TEST_ASSERT_EQ(try_access(&e, rk, b - 1, 1, false, 4), TEST_OK);
	TEST_ASSERT_EQ(try_access(&e, rk, b + LEN, 1, false, 5), TEST_OK);
	TEST_ASSERT_EQ(try_access(&e, rk, b + LEN - 1, 2, false, 6), TEST_OK);
	TEST_ASSERT_EQ(e.put_refused, 3);
	/* keys widened by one byte (and by a page) on either side: only the target refuses */
	for (int64_t d = 1; d <= 4096; d += 4095) {
		TEST_ASSERT_EQ(widened(&e, -d, d, &wide), TEST_OK);
		TEST_ASSERT_EQ(try_access(&e, wide, b - 1, 1, false, 7), TEST_OK);
		TEST_ASSERT_EQ(try_access(&e, wide, b - 1, 2, false, 8), TEST_OK);
		TEST_ASSERT_EQ(try_access(&e, wide, b - d, 8, false, 9), TEST_OK);
		TEST_ASSERT_EQ(try_access(&e, wide, b + LEN, 1, false, 10), TEST_OK);
		TEST_ASSERT_EQ(try_access(&e, wide, b + LEN - 1, 2, false, 11), TEST_OK);
		TEST_ASSERT_EQ(try_access(&e, wide, b + LEN + d - 8, 8, false, 12), TEST_OK);
		TEST_ASSERT_EQ(try_access(&e, wide, b, 1, true, 13), TEST_OK);
		TEST_ASSERT_EQ(try_access(&e, wide, b + LEN - 1, 1, true, 14), TEST_OK);
		unio_rkey_destroy(wide);
	}
	TEST_ASSERT_EQ(e.put_refused, 3 + 2 * 6);
	TEST_ASSERT_EQ(e.get_refused, e.put_refused);
	TEST_ASSERT(unchanged(&e), "target memory");
	unio_rkey_destroy(rk);
	env_close(&e);
	return TEST_OK;
}

UNIO_TEST(rma_stale_keys_target, fast)
{
	struct unio_mem_map_params mp = { .field_mask = UNIO_MEM_MAP_PARAM_LENGTH |
							UNIO_MEM_MAP_PARAM_ADDRESS, .length = LEN };
	unio_rkey_t *old, *fresh;
	void *key2;
	size_t len2;
	struct env e;

	TEST_ASSERT_EQ(env_open(&e), TEST_OK);
	mp.address = e.base;
	TEST_ASSERT_STATUS(unio_ep_rkey_unpack(e.ep, e.key, e.key_len, &old), UNIO_OK);
	TEST_ASSERT_EQ(try_access(&e, old, (uintptr_t)e.base + 8, 8, true, 1), TEST_OK);
	TEST_ASSERT_STATUS(unio_mem_unmap(e.b, e.memh), UNIO_OK);
	e.memh = NULL;
	TEST_ASSERT_EQ(try_access(&e, old, (uintptr_t)e.base + 8, 8, false, 2), TEST_OK);
	/* the same address mapped again, many times: the old key stays dead */
	for (unsigned int i = 0; i < 64; i++) {
		TEST_ASSERT_STATUS(unio_mem_map(e.b, &mp, &e.memh), UNIO_OK);
		TEST_ASSERT_EQ(try_access(&e, old, (uintptr_t)e.base, 8, false, 3 + i), TEST_OK);
		if (i + 1 < 64) {
			TEST_ASSERT_STATUS(unio_mem_unmap(e.b, e.memh), UNIO_OK);
			e.memh = NULL;
		}
	}
	TEST_ASSERT_EQ(e.put_refused, 65);
	TEST_ASSERT_EQ(e.get_refused, 65);
	TEST_ASSERT_STATUS(unio_rkey_pack(e.memh, &key2, &len2), UNIO_OK);
	TEST_ASSERT_STATUS(unio_ep_rkey_unpack(e.ep, key2, len2, &fresh), UNIO_OK);
	TEST_ASSERT_EQ(try_access(&e, fresh, (uintptr_t)e.base, 8, true, 99), TEST_OK);
	TEST_ASSERT_EQ(e.put_refused, 65);
	unio_rkey_destroy(fresh);
	unio_rkey_destroy(old);
	unio_rkey_buffer_release(key2);
	env_close(&e);
	return TEST_OK;
}
