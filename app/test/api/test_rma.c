/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory mapping and put / get inside one process: over the self lane (a worker to itself)
 * and over the host lane (a second worker), into allocated (directly mapped) and registered
 * (CMA) memory, every size class at several offsets, checked byte for byte on the remote
 * side together with guard bytes around the range.  Also: query, flush, fence, bad input.
 * Between two processes (rma_mp_sizes*): regions of 64 MiB, the sizes above, the lane's
 * put / get limits +-1, 16 MiB and the whole region.
 */

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <rte_cycles.h>
#include <rte_log.h>

#include "api_common.h"
#include "unio_proto.h"

#define MIB (1024 * 1024)
#define GUARD 4096

static const size_t sizes[] = { 0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 63, 64, 65, 255,
				4095, 4096, 4097, 65535, 65536, 65537, 1 * MIB, 4 * MIB };

struct pair {
	unio_context_t *ctx;
	unio_worker_t *a, *b;     /* a accesses b's memory */
	unio_ep_t *ep;            /* a -> b */
};

/* Config overrides of the tcp variants: the host lane is tcp (puts and gets in chunks). */
static const char *const tcp_only[] = { "TLS", "tcp,self", NULL };

static int
pair_open_ovr(struct pair *p, bool self, const char *const *ovr)
{
	unio_status_t st;

	memset(p, 0, sizeof(*p));
	p->ctx = api_ctx(ovr);
	TEST_ASSERT(p->ctx != NULL, "context");
	p->a = unio_worker_create(p->ctx, NULL, &st);
	TEST_ASSERT(p->a != NULL, "worker: %s", unio_status_string(st));
	p->b = self ? p->a : unio_worker_create(p->ctx, NULL, &st);
	TEST_ASSERT(p->b != NULL, "worker: %s", unio_status_string(st));
	p->ep = api_ep_to_worker(p->a, p->b, &st);
	TEST_ASSERT(p->ep != NULL, "ep: %s", unio_status_string(st));
	TEST_ASSERT(api_ep_connected(p->a, p->b, p->ep), "ep never connected");
	return TEST_OK;
}

static int
pair_open(struct pair *p, bool self)
{
	return pair_open_ovr(p, self, NULL);
}

static void
pair_close(struct pair *p)
{
	if (p->ep != NULL)
		unio_ep_close(p->ep, UNIO_EP_CLOSE_FORCE, NULL);
	if (p->b != p->a)
		unio_worker_destroy(p->b);
	unio_worker_destroy(p->a);
	unio_context_destroy(p->ctx);
}

/* Wait for an operation that returned @p st. */
static unio_status_t
op_wait(struct pair *p, unio_status_t st, unio_request_t *req)
{
	return api_op_wait(p->a, p->b, st, req);
}

static unio_status_t
put(struct pair *p, const void *buf, size_t len, uint64_t raddr, unio_rkey_t *rk)
{
	return api_put(p->a, p->b, p->ep, buf, len, raddr, rk);
}

static unio_status_t
get(struct pair *p, void *buf, size_t len, uint64_t raddr, unio_rkey_t *rk)
{
	return api_get(p->a, p->b, p->ep, buf, len, raddr, rk);
}

/* A region of b: allocated, or registered in the middle of a guarded heap buffer. */
struct region {
	unio_mem_h memh;
	uint8_t *base;
	size_t len;
	uint8_t *raw;             /* registered: the whole buffer with guards */
	void *key;
	size_t key_len;
	unio_rkey_t *rk;
};

static int
region_map(struct pair *p, struct region *r, size_t len, bool alloc)
{
	struct unio_mem_map_params mp = { .field_mask = UNIO_MEM_MAP_PARAM_LENGTH |
							UNIO_MEM_MAP_PARAM_FLAGS |
							UNIO_MEM_MAP_PARAM_ADDRESS,
					  .length = len };
	struct unio_mem_attr attr;

	memset(r, 0, sizeof(*r));
	if (alloc) {
		mp.flags = UNIO_MEM_MAP_FLAG_ALLOCATE;
	} else {
		r->raw = malloc(len + 2 * GUARD);
		TEST_ASSERT(r->raw != NULL, "malloc");
		memset(r->raw, 0x5a, len + 2 * GUARD);
		mp.address = r->raw + GUARD;
	}
	TEST_ASSERT_STATUS(unio_mem_map(p->b, &mp, &r->memh), UNIO_OK);
	TEST_ASSERT_STATUS(unio_mem_query(r->memh, &attr), UNIO_OK);
	TEST_ASSERT(attr.length == len && attr.memory_type == UNIO_MEMORY_TYPE_HOST &&
		    (alloc || attr.address == mp.address), "query: %p %zu", attr.address,
		    attr.length);
	r->base = attr.address;
	r->len = len;
	TEST_ASSERT_STATUS(unio_rkey_pack(r->memh, &r->key, &r->key_len), UNIO_OK);
	TEST_ASSERT_STATUS(unio_ep_rkey_unpack(p->ep, r->key, r->key_len, &r->rk), UNIO_OK);
	return TEST_OK;
}

static void
region_unmap(struct pair *p, struct region *r)
{
	unio_rkey_destroy(r->rk);
	unio_rkey_buffer_release(r->key);
	if (r->memh != NULL)
		unio_mem_unmap(p->b, r->memh);
	free(r->raw);
}

static int
guards_intact(const struct region *r)
{
	if (r->raw == NULL)
		return 1;
	for (size_t i = 0; i < GUARD; i++)
		if (r->raw[i] != 0x5a || r->raw[GUARD + r->len + i] != 0x5a)
			return 0;
	return 1;
}

/* Put then get every size at the start, the end and an odd offset of the region. */
static int
sizes_on(struct pair *p, struct region *r, uint8_t *src, uint8_t *dst)
{
	for (unsigned int i = 0; i < RTE_DIM(sizes); i++) {
		size_t n = sizes[i];
		size_t offs[] = { 0, r->len - n, (r->len - n) / 3 | 1 };

		for (unsigned int o = 0; o < RTE_DIM(offs); o++) {
			uint64_t raddr = (uintptr_t)r->base + RTE_MIN(offs[o], r->len - n);
			uint64_t seed = n * 31 + o;

			test_fill(src, n, seed);
			TEST_ASSERT_STATUS(put(p, src, n, raddr, r->rk), UNIO_OK);
			TEST_ASSERT(test_checksum((void *)(uintptr_t)raddr, n) ==
				    test_checksum(src, n), "put of %zu bytes at +%" PRIu64
				    ": remote bytes differ", n, raddr - (uintptr_t)r->base);
			for (size_t k = 0; k < n; k += 4093)
				TEST_ASSERT(((uint8_t *)(uintptr_t)raddr)[k] == src[k],
					    "byte %zu", k);
			test_fill((void *)(uintptr_t)raddr, n, seed ^ 0xabcdef);
			memset(dst, 0xee, n + 1);
			TEST_ASSERT_STATUS(get(p, dst, n, raddr, r->rk), UNIO_OK);
			TEST_ASSERT(test_checksum(dst, n) ==
				    test_checksum((void *)(uintptr_t)raddr, n),
				    "get of %zu bytes: local bytes differ", n);
			TEST_ASSERT(dst[n] == 0xee, "get wrote past %zu bytes", n);
		}
	}
	TEST_ASSERT(guards_intact(r), "bytes outside the mapped range changed");
	return TEST_OK;
}

static int
rma_sizes(bool self, const char *const *ovr)
{
	size_t len = 8 * MIB;
	uint8_t *src = malloc(len + 1), *dst = malloc(len + 1);
	struct region r[2];
	struct pair p;
	int rc = TEST_FAIL;

	TEST_ASSERT(src != NULL && dst != NULL, "malloc");
	if (pair_open_ovr(&p, self, ovr) != TEST_OK)
		goto out;
	if (ovr != NULL)
		TEST_ASSERT(strcmp(p.ep->lane.iface->driver->name, self ? "self" : "tcp") == 0,
			    "lane %s", p.ep->lane.iface->driver->name);
	for (int alloc = 0; alloc < 2; alloc++) {
		if (region_map(&p, &r[alloc], len, alloc) != TEST_OK ||
		    sizes_on(&p, &r[alloc], src, dst) != TEST_OK)
			goto close;
	}
	TEST_ASSERT_STATUS(unio_worker_fence(p.a), UNIO_OK);
	rc = TEST_OK;
	region_unmap(&p, &r[1]);
close:
	region_unmap(&p, &r[0]);
	pair_close(&p);
out:
	free(src);
	free(dst);
	return rc;
}

UNIO_TEST(rma_self_sizes, fast)
{
	return rma_sizes(true, NULL);
}

UNIO_TEST(rma_host_sizes, fast)
{
	return rma_sizes(false, NULL);
}

/* tcp takes at most 1 MiB per get and 8 MiB per put: larger ones go in chunks */
UNIO_TEST(rma_host_sizes_tcp, fast)
{
	return rma_sizes(false, tcp_only);
}

/*
 * More chunks than tcp takes at once (64 zero-copy frames per connection): 16 puts of 1 MiB
 * and 4 of 4 MiB issued without progress wait in the worker's queue, complete in any order
 * with their bytes in place; then gets of 1 MiB and one of the whole region; then a get
 * whose region is unmapped before it ran fails with the target's error, not a hang.
 */
UNIO_TEST(rma_tcp_chunk_queue, fast)
{
	size_t len = 32 * MIB, off;
	uint8_t *src = malloc(len), *dst = malloc(len);
	unio_request_t *req[24];
	unsigned int n = 0, queued;
	unio_status_t st;
	struct region r;
	struct pair p;

	TEST_ASSERT(src != NULL && dst != NULL, "malloc");
	TEST_ASSERT_EQ(pair_open_ovr(&p, false, tcp_only), TEST_OK);
	TEST_ASSERT(strcmp(p.ep->lane.iface->driver->name, "tcp") == 0, "lane %s",
		    p.ep->lane.iface->driver->name);
	TEST_ASSERT_EQ(region_map(&p, &r, len, false), TEST_OK);
	test_fill(src, len, 4242);
	for (off = 0; off < len; n++) {
		size_t l = n < 16 ? 1 * MIB : 4 * MIB;

		req[n] = NULL;
		st = unio_put(p.ep, src + off, l, (uintptr_t)r.base + off, r.rk, NULL, &req[n]);
		TEST_ASSERT(st == UNIO_INPROGRESS, "put %u: %s", n, unio_status_string(st));
		off += l;
	}
	queued = p.a->n_rma_pending;
	TEST_ASSERT(queued > 0, "%u puts of %zu bytes all went to tcp at once", n, len);
	for (unsigned int i = 0; i < n; i++)
		TEST_ASSERT_STATUS(op_wait(&p, UNIO_INPROGRESS, req[i]), UNIO_OK);
	TEST_ASSERT(p.a->n_rma_pending == 0, "%u still queued", p.a->n_rma_pending);
	TEST_ASSERT(memcmp(r.base, src, len) == 0, "remote bytes differ after the puts");
	TEST_ASSERT(guards_intact(&r), "bytes outside the region changed");
	test_fill(r.base, len, 777);
	memset(dst, 0, len);
	for (n = 0; n < 16; n++) {
		req[n] = NULL;
		st = unio_get(p.ep, dst + n * MIB, MIB, (uintptr_t)r.base + n * MIB, r.rk, NULL,
			      &req[n]);
		TEST_ASSERT(st == UNIO_INPROGRESS, "get %u: %s", n, unio_status_string(st));
	}
	for (unsigned int i = 0; i < n; i++)
		TEST_ASSERT_STATUS(op_wait(&p, UNIO_INPROGRESS, req[i]), UNIO_OK);
	TEST_ASSERT(memcmp(dst, r.base, 16 * MIB) == 0, "local bytes differ after the gets");
	memset(dst, 0, len);
	TEST_ASSERT_STATUS(get(&p, dst, len, (uintptr_t)r.base, r.rk), UNIO_OK);
	TEST_ASSERT(memcmp(dst, r.base, len) == 0, "a %zu-byte get differs", len);
	/* the owner unmaps while the get's chunks are on their way: the first error wins */
	req[0] = NULL;
	st = unio_get(p.ep, dst, len, (uintptr_t)r.base, r.rk, NULL, &req[0]);
	TEST_ASSERT(st == UNIO_INPROGRESS, "get: %s", unio_status_string(st));
	TEST_ASSERT_STATUS(unio_mem_unmap(p.b, r.memh), UNIO_OK);
	r.memh = NULL;
	TEST_ASSERT_STATUS(op_wait(&p, UNIO_INPROGRESS, req[0]), UNIO_ERR_OUT_OF_RANGE);
	region_unmap(&p, &r);
	pair_close(&p);
	free(src);
	free(dst);
	return TEST_OK;
}

/*
 * The user destroys the remote key while puts and gets with it are still queued for tcp's
 * room and in the transport: every one completes, the bytes arrive (tcp's key is heap
 * memory: under ASan a chunk that read a freed key fails the test).
 */
UNIO_TEST(rma_rkey_destroy_in_flight_tcp, fast)
{
	size_t len = 32 * MIB, off;
	uint8_t *src = malloc(len), *dst = malloc(len);
	unio_request_t *req[24];
	unsigned int n = 0;
	unio_status_t st;
	struct region r;
	struct pair p;

	TEST_ASSERT(src != NULL && dst != NULL, "malloc");
	TEST_ASSERT_EQ(pair_open_ovr(&p, false, tcp_only), TEST_OK);
	TEST_ASSERT_EQ(region_map(&p, &r, len, false), TEST_OK);
	test_fill(src, len, 99);
	for (off = 0; off < len; n++, off += 2 * MIB) {
		req[n] = NULL;
		st = unio_put(p.ep, src + off, 2 * MIB, (uintptr_t)r.base + off, r.rk, NULL,
			      &req[n]);
		TEST_ASSERT(st == UNIO_INPROGRESS, "put %u: %s", n, unio_status_string(st));
	}
	TEST_ASSERT(p.a->n_rma_pending > 0, "no put waits for room: nothing to show");
	unio_rkey_destroy(r.rk);
	r.rk = NULL;
	for (unsigned int i = 0; i < n; i++)
		TEST_ASSERT_STATUS(op_wait(&p, UNIO_INPROGRESS, req[i]), UNIO_OK);
	TEST_ASSERT(memcmp(r.base, src, len) == 0, "remote bytes differ after the puts");
	TEST_ASSERT(guards_intact(&r), "bytes outside the region changed");
	/* and gets: a fresh key, destroyed as soon as they are issued */
	TEST_ASSERT_STATUS(unio_ep_rkey_unpack(p.ep, r.key, r.key_len, &r.rk), UNIO_OK);
	memset(dst, 0, len);
	for (n = 0; n < 16; n++) {
		req[n] = NULL;
		st = unio_get(p.ep, dst + n * 2 * MIB, 2 * MIB, (uintptr_t)r.base + n * 2 * MIB,
			      r.rk, NULL, &req[n]);
		TEST_ASSERT(st == UNIO_INPROGRESS, "get %u: %s", n, unio_status_string(st));
	}
	unio_rkey_destroy(r.rk);
	r.rk = NULL;
	for (unsigned int i = 0; i < n; i++)
		TEST_ASSERT_STATUS(op_wait(&p, UNIO_INPROGRESS, req[i]), UNIO_OK);
	TEST_ASSERT(memcmp(dst, src, len) == 0, "local bytes differ after the gets");
	region_unmap(&p, &r);
	pair_close(&p);
	free(src);
	free(dst);
	return TEST_OK;
}

/*
 * An endpoint closed with force while its transport still holds operations (tcp gets in
 * flight and chunks queued): each request completes exactly once, with an error, and its
 * memory is not reused before the transport lets go (ASan: no use after free; the counts
 * below: no second callback when tcp cancels the operations at ep destruction).
 */
struct once {
	unsigned int calls;
	unio_status_t st;
};

static void
once_cb(unio_request_t *req, unio_status_t st, const struct unio_recv_info *info, void *arg)
{
	struct once *o = arg;

	RTE_SET_USED(req), RTE_SET_USED(info);
	o->calls++;
	o->st = st;
}

UNIO_TEST(rma_close_force_in_flight_tcp, fast)
{
	enum { N_OPS = 8 };
	size_t len = 8 * MIB;
	uint8_t *dst = malloc(N_OPS * len);
	unio_request_t *req[N_OPS], *other;
	struct once o[N_OPS];
	unio_status_t st;
	struct region r;
	struct pair p;

	TEST_ASSERT(dst != NULL, "malloc");
	TEST_ASSERT_EQ(pair_open_ovr(&p, false, tcp_only), TEST_OK);
	TEST_ASSERT_EQ(region_map(&p, &r, len, false), TEST_OK);
	test_fill(r.base, len, 99);
	for (unsigned int i = 0; i < N_OPS; i++) {
		struct unio_request_param rp = { .field_mask = UNIO_REQ_PARAM_CB |
							       UNIO_REQ_PARAM_USER_DATA,
						 .cb = once_cb, .user_data = &o[i] };

		o[i] = (struct once){ 0, UNIO_OK };
		st = unio_get(p.ep, dst + i * len, len, (uintptr_t)r.base, r.rk, &rp, &req[i]);
		TEST_ASSERT(st == UNIO_INPROGRESS, "get %u: %s", i, unio_status_string(st));
	}
	/* some progress: chunks in flight, some answered */
	for (int k = 0; k < 20; k++) {
		unio_worker_progress(p.a);
		unio_worker_progress(p.b);
	}
	TEST_ASSERT_STATUS(unio_ep_close(p.ep, UNIO_EP_CLOSE_FORCE, NULL), UNIO_OK);
	p.ep = NULL;
	for (int k = 0; k < 1000; k++) {
		unio_worker_progress(p.a);
		unio_worker_progress(p.b);
	}
	for (unsigned int i = 0; i < N_OPS; i++) {
		TEST_ASSERT(o[i].calls == 1, "get %u completed %u times", i, o[i].calls);
		TEST_ASSERT(o[i].st == UNIO_OK || UNIO_IS_ERR(o[i].st), "get %u: status %d", i,
			    o[i].st);
		unio_request_free(req[i]);
	}
	/* the worker's requests are sound: new ones work and complete once */
	p.ep = api_ep_to_worker(p.a, p.b, &st);
	TEST_ASSERT(p.ep != NULL, "ep: %s", unio_status_string(st));
	TEST_ASSERT(api_ep_connected(p.a, p.b, p.ep), "ep never connected");
	unio_rkey_destroy(r.rk);   /* its ep closed: only the handle is left to free */
	TEST_ASSERT_STATUS(unio_ep_rkey_unpack(p.ep, r.key, r.key_len, &r.rk), UNIO_OK);
	memset(dst, 0, len);
	other = NULL;
	st = unio_get(p.ep, dst, len, (uintptr_t)r.base, r.rk, NULL, &other);
	TEST_ASSERT_STATUS(op_wait(&p, st, other), UNIO_OK);
	TEST_ASSERT(memcmp(dst, r.base, len) == 0, "a get after the close differs");
	for (unsigned int i = 0; i < N_OPS; i++)
		TEST_ASSERT(o[i].calls == 1, "get %u completed again later", i);
	region_unmap(&p, &r);
	pair_close(&p);
	free(dst);
	return TEST_OK;
}

/* Requests: NO_IMM_COMPLETION always hands out a request that completes with the data. */
UNIO_TEST(rma_requests, fast)
{
	struct unio_request_param rp = { .field_mask = UNIO_REQ_PARAM_FLAGS,
					 .flags = UNIO_REQ_FLAG_NO_IMM_COMPLETION };
	uint8_t src[256], dst[256];
	unio_request_t *req = NULL;
	struct region r;
	struct pair p;
	unio_status_t st;

	TEST_ASSERT_EQ(pair_open(&p, false), TEST_OK);
	TEST_ASSERT_EQ(region_map(&p, &r, 4096, true), TEST_OK);
	test_fill(src, sizeof(src), 77);
	st = unio_put(p.ep, src, sizeof(src), (uintptr_t)r.base + 100, r.rk, &rp, &req);
	TEST_ASSERT(st == UNIO_INPROGRESS && req != NULL, "put: %s", unio_status_string(st));
	TEST_ASSERT_STATUS(op_wait(&p, st, req), UNIO_OK);
	TEST_ASSERT(memcmp(r.base + 100, src, sizeof(src)) == 0, "put data");
	req = NULL;
	st = unio_get(p.ep, dst, sizeof(dst), (uintptr_t)r.base + 100, r.rk, &rp, &req);
	TEST_ASSERT(st == UNIO_INPROGRESS && req != NULL, "get: %s", unio_status_string(st));
	TEST_ASSERT_STATUS(op_wait(&p, st, req), UNIO_OK);
	TEST_ASSERT(memcmp(dst, src, sizeof(src)) == 0, "get data");
	region_unmap(&p, &r);
	pair_close(&p);
	return TEST_OK;
}

/*
 * A context created without UNIO_FEATURE_RMA: mapping, unpacking, put and get fail with
 * UNIO_ERR_UNSUPPORTED (before looking at their arguments) and the log names the missing
 * feature once; a key of a context with the feature is refused too.
 */
UNIO_TEST(rma_without_feature, fast)
{
	struct unio_context_params cp = { .field_mask = UNIO_CONTEXT_PARAM_FEATURES,
					  .features = UNIO_FEATURE_TAG | UNIO_FEATURE_AM };
	struct unio_mem_map_params mp = { .field_mask = UNIO_MEM_MAP_PARAM_LENGTH |
							UNIO_MEM_MAP_PARAM_FLAGS,
					  .length = 4096, .flags = UNIO_MEM_MAP_FLAG_ALLOCATE };
	unio_context_t *ctx = unio_context_create(&cp, NULL);
	unio_worker_t *w = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	unio_rkey_t *rk = NULL;
	unio_mem_h memh = NULL;
	char *text = NULL;
	size_t tlen = 0, klen;
	struct pair p;
	unio_status_t st;
	unio_ep_t *ep;
	uint8_t b[64];
	const char *s;
	void *key;
	FILE *f;
	int times = 0;

	TEST_ASSERT(w != NULL, "worker");
	ep = api_ep_to_worker(w, w, &st);
	TEST_ASSERT(ep != NULL, "ep");
	for (int i = 0; i < 1000 && ep->state != EP_CONNECTED; i++)
		unio_worker_progress(w);
	/* a real key, from a context that has the feature */
	TEST_ASSERT_EQ(pair_open(&p, true), TEST_OK);
	TEST_ASSERT_STATUS(unio_mem_map(p.a, &mp, &memh), UNIO_OK);
	TEST_ASSERT_STATUS(unio_rkey_pack(memh, &key, &klen), UNIO_OK);
	f = open_memstream(&text, &tlen);
	TEST_ASSERT(f != NULL, "memstream");
	rte_openlog_stream(f);
	for (int i = 0; i < 3; i++) {
		TEST_ASSERT_STATUS(unio_mem_map(w, &mp, &memh), UNIO_ERR_UNSUPPORTED);
		TEST_ASSERT_STATUS(unio_ep_rkey_unpack(ep, key, klen, &rk), UNIO_ERR_UNSUPPORTED);
		TEST_ASSERT_STATUS(unio_ep_rkey_unpack(ep, b, sizeof(b), &rk),
				   UNIO_ERR_UNSUPPORTED);
		TEST_ASSERT_STATUS(unio_put(ep, b, 8, (uintptr_t)b, NULL, NULL, NULL),
				   UNIO_ERR_UNSUPPORTED);
		TEST_ASSERT_STATUS(unio_get(ep, b, 8, (uintptr_t)b, NULL, NULL, NULL),
				   UNIO_ERR_UNSUPPORTED);
	}
	rte_openlog_stream(NULL);
	fclose(f);
	for (s = text; s != NULL && (s = strstr(s, "UNIO_FEATURE_RMA")) != NULL; s++)
		times++;
	TEST_LOG("log: %s", text != NULL ? text : "");
	free(text);
	TEST_ASSERT(times == 1, "the missing feature was logged %d times, not once", times);
	TEST_ASSERT(rk == NULL, "a key was unpacked");
	unio_rkey_buffer_release(key);
	TEST_ASSERT_STATUS(unio_mem_unmap(p.a, memh), UNIO_OK);
	pair_close(&p);
	unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return TEST_OK;
}

UNIO_TEST(rma_bad_input, fast)
{
	struct unio_mem_map_params mp = { .field_mask = UNIO_MEM_MAP_PARAM_LENGTH,
					  .length = 4096 };
	uint8_t buf[64];
	unio_rkey_t *rk;
	unio_mem_h memh;
	void *key;
	size_t klen;
	struct pair p;

	TEST_ASSERT_EQ(pair_open(&p, true), TEST_OK);
	TEST_ASSERT_STATUS(unio_mem_map(NULL, &mp, &memh), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_mem_map(p.a, &mp, &memh), UNIO_ERR_INVALID_PARAM); /* no addr */
	mp.field_mask |= UNIO_MEM_MAP_PARAM_FLAGS;
	mp.flags = 0x80;
	TEST_ASSERT_STATUS(unio_mem_map(p.a, &mp, &memh), UNIO_ERR_INVALID_PARAM);
	mp.flags = UNIO_MEM_MAP_FLAG_ALLOCATE;
	mp.length = 0;
	TEST_ASSERT_STATUS(unio_mem_map(p.a, &mp, &memh), UNIO_ERR_INVALID_PARAM);
	mp.length = 4096;
	mp.field_mask |= UNIO_MEM_MAP_PARAM_MEMORY_TYPE;
	mp.memory_type = UNIO_MEMORY_TYPE_CUDA;
	TEST_ASSERT_STATUS(unio_mem_map(p.a, &mp, &memh), UNIO_ERR_UNSUPPORTED);
	mp.memory_type = UNIO_MEMORY_TYPE_HOST;
	TEST_ASSERT_STATUS(unio_mem_map(p.a, &mp, &memh), UNIO_OK);
	TEST_ASSERT_STATUS(unio_rkey_pack(memh, NULL, &klen), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_rkey_pack(memh, &key, &klen), UNIO_OK);
	TEST_ASSERT(unio_ep_rkey_unpack(p.ep, key, klen - 1, &rk) != UNIO_OK,
		    "truncated key accepted");
	TEST_ASSERT_STATUS(unio_ep_rkey_unpack(p.ep, key, klen, &rk), UNIO_OK);
	unio_rkey_destroy(rk);
	TEST_ASSERT_STATUS(unio_put(p.ep, buf, 8, 0, NULL, NULL, NULL), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_mem_unmap(p.a, memh), UNIO_OK);
	unio_rkey_buffer_release(key);
	TEST_ASSERT_STATUS(unio_worker_fence(NULL), UNIO_ERR_INVALID_PARAM);
	pair_close(&p);
	return TEST_OK;
}

/* ---- between two processes: the owner checks every put byte for byte ---- */

#define TAG_KEYS  0x6b657973ull
#define TAG_CHECK 0x636865636bull
#define TAG_ANSWER 0x616e73ull

struct mp_keys {
	uint64_t addr[2];
	uint64_t klen[2];
	uint8_t key[2][1024];
};

struct mp_check {
	uint64_t region;        /* 2: the end */
	uint64_t offset;
	uint64_t len;
	uint64_t sum;           /* checksum of what was put */
	uint64_t seed;          /* then the owner fills the range with this */
};

struct mp_answer {
	int64_t status;         /* UNIO_OK: the bytes matched */
	uint64_t sum;           /* checksum after the owner's fill */
};

static int
child_done(unio_context_t *ctx, unio_worker_t *w, int rc)
{
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return rc;
}

static int
owner_serve(unio_worker_t *w, unio_ep_t *ep, uint8_t *base[2])
{
	struct mp_check c;
	struct mp_answer a;
	struct unio_recv_info info;

	for (;;) {
		if (api_recv(w, &c, sizeof(c), TAG_CHECK, UINT64_MAX, &info) != UNIO_OK ||
		    info.length != sizeof(c))
			return 5;
		if (c.region >= 2)
			return 0;
		a.status = test_checksum(base[c.region] + c.offset, c.len) == c.sum ? UNIO_OK :
			   UNIO_ERR_PROTO;
		test_fill(base[c.region] + c.offset, c.len, c.seed);
		a.sum = test_checksum(base[c.region] + c.offset, c.len);
		if (api_send(w, ep, &a, sizeof(a), TAG_ANSWER, 0) != UNIO_OK)
			return 6;
	}
}

/* Between two processes: regions of 64 MiB, the lane's put / get limits +-1, 16 and 64 MiB. */
#define MP_REGION (64 * MIB)

static void
add_limit(size_t *all, unsigned int *n, size_t limit)
{
	if (limit == 0 || limit > MP_REGION - 1)
		return;
	all[(*n)++] = limit - 1;
	all[(*n)++] = limit;
	all[(*n)++] = limit + 1;
}

static unsigned int
mp_sizes(const struct unio_tl_iface_attr *ia, size_t *all)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < RTE_DIM(sizes); i++)
		all[n++] = sizes[i];
	add_limit(all, &n, ia->max_put_zcopy);
	if (ia->max_get_zcopy != ia->max_put_zcopy)
		add_limit(all, &n, ia->max_get_zcopy);
	all[n++] = 16 * MIB;
	all[n++] = MP_REGION;
	return n;
}

UNIO_TEST_CHILD(rma_mp_owner)
{
	struct unio_mem_map_params mp = {
		.field_mask = UNIO_MEM_MAP_PARAM_LENGTH | UNIO_MEM_MAP_PARAM_FLAGS |
			      UNIO_MEM_MAP_PARAM_ADDRESS,
		.length = MP_REGION,
	};
	unio_context_t *ctx = api_ctx(NULL);
	static struct mp_keys k;
	struct unio_mem_attr attr;
	uint8_t *base[2], *heap = malloc(MP_REGION);
	unio_mem_h memh[2];
	unio_worker_t *w;
	unio_status_t st;
	unio_ep_t *ep;
	int rc;

	prctl(PR_SET_PDEATHSIG, SIGKILL);   /* never outlive the test */
	if (argc < 1 || ctx == NULL || heap == NULL)
		return 2;
	w = unio_worker_create(ctx, NULL, &st);
	ep = w != NULL ? api_connect(w, atoi(argv[0]), NULL, NULL, &st) : NULL;
	if (ep == NULL)
		return child_done(ctx, w, st == UNIO_ERR_UNREACHABLE ? 77 : 3);
	for (int r = 0; r < 2; r++) {
		void *key;
		size_t klen;

		mp.flags = r == 0 ? UNIO_MEM_MAP_FLAG_ALLOCATE : 0;
		mp.address = heap;
		if (unio_mem_map(w, &mp, &memh[r]) != UNIO_OK ||
		    unio_mem_query(memh[r], &attr) != UNIO_OK ||
		    unio_rkey_pack(memh[r], &key, &klen) != UNIO_OK || klen > sizeof(k.key[r]))
			return child_done(ctx, w, 4);
		base[r] = attr.address;
		k.addr[r] = (uintptr_t)attr.address;
		k.klen[r] = klen;
		memcpy(k.key[r], key, klen);
		unio_rkey_buffer_release(key);
	}
	rc = api_send(w, ep, &k, sizeof(k), TAG_KEYS, 0) == UNIO_OK ? owner_serve(w, ep, base) : 7;
	unio_mem_unmap(w, memh[0]);
	unio_mem_unmap(w, memh[1]);
	unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
	free(heap);
	return child_done(ctx, w, rc);
}

static int
mp_one(unio_worker_t *w, unio_ep_t *ep, unio_rkey_t *rk, uint64_t raddr, unsigned int r,
       size_t off, size_t n, uint8_t *src, uint8_t *dst)
{
	struct mp_check c = { r, off, n, 0, n * 977 + off };
	struct mp_answer a;
	struct unio_recv_info info;
	unio_request_t *req = NULL;
	unio_status_t st;

	test_fill(src, n, n + off + r);
	c.sum = test_checksum(src, n);
	st = unio_put(ep, src, n, raddr + off, rk, NULL, &req);
	if (st == UNIO_INPROGRESS)
		st = unio_request_wait(w, req, NULL);
	TEST_ASSERT_STATUS(st, UNIO_OK);
	TEST_ASSERT_STATUS(api_send(w, ep, &c, sizeof(c), TAG_CHECK, 0), UNIO_OK);
	TEST_ASSERT_STATUS(api_recv(w, &a, sizeof(a), TAG_ANSWER, UINT64_MAX, &info), UNIO_OK);
	TEST_ASSERT(a.status == UNIO_OK, "region %u: the owner found other bytes after a put of "
		    "%zu at +%zu", r, n, off);
	req = NULL;
	st = unio_get(ep, dst, n, raddr + off, rk, NULL, &req);
	if (st == UNIO_INPROGRESS)
		st = unio_request_wait(w, req, NULL);
	TEST_ASSERT_STATUS(st, UNIO_OK);
	TEST_ASSERT(test_checksum(dst, n) == a.sum, "region %u: get of %zu at +%zu differs", r, n,
		    off);
	return TEST_OK;
}

static int
mp_accessor(unio_worker_t *w, unio_ep_t *ep, const char *lane)
{
	static struct mp_keys k;
	struct mp_check end = { .region = 2 };
	struct unio_recv_info info;
	uint8_t *src = malloc(MP_REGION), *dst = malloc(MP_REGION);
	const struct unio_tl_iface_attr *ia = &ep->lane.iface->attr;
	size_t all[RTE_DIM(sizes) + 8];
	unsigned int n_all = mp_sizes(ia, all);
	unio_rkey_t *rk[2];

	TEST_ASSERT(src != NULL && dst != NULL, "malloc");
	TEST_ASSERT(lane == NULL || strcmp(ep->lane.iface->driver->name, lane) == 0,
		    "lane %s, not %s", ep->lane.iface->driver->name, lane);
	TEST_ASSERT_STATUS(api_recv(w, &k, sizeof(k), TAG_KEYS, UINT64_MAX, &info), UNIO_OK);
	for (unsigned int r = 0; r < 2; r++)
		TEST_ASSERT_STATUS(unio_ep_rkey_unpack(ep, k.key[r], k.klen[r], &rk[r]), UNIO_OK);
	for (unsigned int r = 0; r < 2; r++)
		for (unsigned int i = 0; i < n_all; i++) {
			size_t n = all[i], offs[] = { 0, MP_REGION - n, (MP_REGION - n) / 3 | 1 };

			/* above 4 MiB: the start and the end of the region only */
			for (unsigned int o = 0; o < (n > 4 * MIB ? 2u : RTE_DIM(offs)); o++)
				TEST_ASSERT_EQ(mp_one(w, ep, rk[r], k.addr[r], r,
						      RTE_MIN(offs[o], MP_REGION - n), n, src, dst),
					       TEST_OK);
		}
	TEST_ASSERT_STATUS(unio_put(ep, src, 1, k.addr[0] + MP_REGION, rk[0], NULL, NULL),
			   UNIO_ERR_OUT_OF_RANGE);
	TEST_ASSERT_STATUS(api_send(w, ep, &end, sizeof(end), TAG_CHECK, 0), UNIO_OK);
	unio_rkey_destroy(rk[0]);
	unio_rkey_destroy(rk[1]);
	free(src);
	free(dst);
	return TEST_OK;
}

static int
rma_mp(const char *lane)
{
	struct api_parent p;
	int rc = api_parent_open(&p, NULL, NULL, test_free_port(), "rma_mp_owner", NULL);
	int status = 0;

	if (rc == TEST_OK)
		rc = api_parent_connected(&p);
	if (rc == TEST_OK) {
		rc = mp_accessor(p.w, p.ep, lane);
		api_wait_child(p.w, p.pid, 30000, &status);
	}
	api_parent_close(&p);
	if (rc == TEST_SKIP)
		return rc;
	TEST_ASSERT_EQ(rc, TEST_OK);
	TEST_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "owner exit status %#x", status);
	return TEST_OK;
}

UNIO_TEST(rma_mp_sizes, mp)
{
	return rma_mp(NULL);
}

/* The same over tcp (UNIO_TLS in the environment reaches the owner process too). */
UNIO_TEST(rma_mp_sizes_tcp, mp)
{
	int rc;

	setenv("UNIO_TLS", "tcp,self", 1);
	rc = rma_mp("tcp");
	unsetenv("UNIO_TLS");
	return rc;
}

/* Flush: puts left running complete by unio_ep_flush / unio_worker_flush, data in place. */
UNIO_TEST(rma_flush, fast)
{
	uint8_t src[8][512];
	struct region r;
	struct pair p;

	for (int lane = 0; lane < 2; lane++) {
		TEST_ASSERT_EQ(pair_open(&p, lane == 0), TEST_OK);
		TEST_ASSERT_EQ(region_map(&p, &r, 8 * 512, lane == 1), TEST_OK);
		for (unsigned int i = 0; i < 8; i++) {
			unio_request_t *req = NULL;
			unio_status_t st;

			test_fill(src[i], sizeof(src[i]), 900 + i + 10 * lane);
			st = unio_put(p.ep, src[i], sizeof(src[i]), (uintptr_t)r.base + 512 * i,
				      r.rk, NULL, &req);
			TEST_ASSERT(st == UNIO_OK || st == UNIO_INPROGRESS, "put %u: %s", i,
				    unio_status_string(st));
			if (st == UNIO_INPROGRESS)
				unio_request_free(req);  /* completes without a callback */
		}
		TEST_ASSERT_STATUS(unio_ep_flush(p.ep, NULL, NULL), UNIO_OK);
		for (unsigned int i = 0; i < 8; i++)
			TEST_ASSERT(memcmp(r.base + 512 * i, src[i], sizeof(src[i])) == 0,
				    "lane %d put %u not in place after the flush", lane, i);
		TEST_ASSERT_STATUS(unio_worker_flush(p.a, NULL, NULL), UNIO_OK);
		region_unmap(&p, &r);
		pair_close(&p);
	}
	return TEST_OK;
}

/* The page size of the mapping at @p addr in /proc/self/smaps, in KiB (0: not found). */
static unsigned long
page_kib(const void *addr)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	unsigned long lo, hi, kib = 0;
	char line[512];
	bool in = false;

	if (f == NULL)
		return 0;
	while (kib == 0 && fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
		else if (in && sscanf(line, "KernelPageSize: %lu kB", &kib) != 1)
			kib = 0;
	}
	fclose(f);
	return kib;
}

/*
 * UNIO_MEM_MAP_FLAG_ALLOCATE gives memory that peers on the host map directly, in a shm
 * segment of 2 MiB hugepages when the host has them to spare (issue 6: "allocate
 * (hugepage-backed, in a segment the shm driver can share)"): 4 MiB allocated is mappable
 * (its key carries the segment) and /proc/self/smaps shows 2048 kB pages under it, written
 * and read back whole; a registered heap buffer is not mappable.  Skipped where fewer than
 * 16 hugepages are free (the driver then takes 4 KiB pages, as it must).
 */
UNIO_TEST(rma_alloc_hugepages, fast)
{
	struct unio_mem_map_params mp = { .field_mask = UNIO_MEM_MAP_PARAM_LENGTH |
							UNIO_MEM_MAP_PARAM_FLAGS,
					  .length = 4 * MIB, .flags = UNIO_MEM_MAP_FLAG_ALLOCATE };
	FILE *f = fopen("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "r");
	unsigned long free_pages = 0, kib;
	struct unio_mem_attr attr;
	unio_mem_h memh, reg;
	uint8_t *heap;
	struct pair p;

	if (f != NULL) {
		if (fscanf(f, "%lu", &free_pages) != 1)
			free_pages = 0;
		fclose(f);
	}
	if (free_pages < 16)
		TEST_SKIP_BECAUSE("%lu free 2 MiB hugepages, 16 wanted (.ci/run reserves them)",
				  free_pages);
	TEST_ASSERT_EQ(pair_open(&p, false), TEST_OK);
	TEST_ASSERT(strcmp(p.ep->lane.iface->driver->name, "shm") == 0, "lane %s",
		    p.ep->lane.iface->driver->name);
	TEST_ASSERT_STATUS(unio_mem_map(p.b, &mp, &memh), UNIO_OK);
	TEST_ASSERT_STATUS(unio_mem_query(memh, &attr), UNIO_OK);
	kib = page_kib(attr.address);
	TEST_LOG("4 MiB allocated at %p: %lu kB pages, mappable %d", attr.address, kib,
		 attr.mappable);
	TEST_ASSERT(attr.mappable && (attr.flags & UNIO_MEM_MAP_FLAG_ALLOCATE) &&
		    attr.length == 4 * MIB && attr.memory_type == UNIO_MEMORY_TYPE_HOST,
		    "query: mappable %d, flags %#x, %zu bytes", attr.mappable, attr.flags,
		    attr.length);
	TEST_ASSERT(kib == 2048, "the allocated region is on %lu kB pages, not 2048", kib);
	heap = malloc(4 * MIB);
	TEST_ASSERT(heap != NULL, "malloc");
	test_fill(attr.address, 4 * MIB, 31);   /* every page faults in (no SIGBUS) */
	test_fill(heap, 4 * MIB, 31);
	TEST_ASSERT(memcmp(attr.address, heap, 4 * MIB) == 0, "read back");
	mp = (struct unio_mem_map_params){ .field_mask = UNIO_MEM_MAP_PARAM_LENGTH |
							 UNIO_MEM_MAP_PARAM_ADDRESS,
					   .length = MIB, .address = heap };
	TEST_ASSERT_STATUS(unio_mem_map(p.b, &mp, &reg), UNIO_OK);
	TEST_ASSERT_STATUS(unio_mem_query(reg, &attr), UNIO_OK);
	TEST_ASSERT(!attr.mappable && attr.address == heap && attr.flags == 0,
		    "a registered heap buffer: mappable %d, flags %#x", attr.mappable, attr.flags);
	TEST_ASSERT_STATUS(unio_mem_unmap(p.b, reg), UNIO_OK);
	TEST_ASSERT_STATUS(unio_mem_unmap(p.b, memh), UNIO_OK);
	free(heap);
	pair_close(&p);
	return TEST_OK;
}
