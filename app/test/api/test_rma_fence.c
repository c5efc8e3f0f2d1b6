/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fence ordering: put A (1 MiB, in several chunks over tcp), unio_worker_fence(), put B (an
 * 8-byte round number), both left running.  After every progress step of the target, a
 * round number it can see means the whole of that round's A is in place (checksummed).
 * Over shm and over tcp, 64 rounds each.
 */

#include "api_common.h"
#include "proto_am_rma.h"
#include "unio_api_priv.h"
#include "unio_proto.h"

#define A_LEN  (1 << 20)
#define ROUNDS 64

static int
fence_order(const char *tls, const char *drv)
{
	const char *const ovr[] = { "TLS", tls, NULL };
	struct unio_mem_map_params mp = { .field_mask = UNIO_MEM_MAP_PARAM_LENGTH |
							UNIO_MEM_MAP_PARAM_ADDRESS,
					  .length = A_LEN + 64 };
	unio_context_t *ctx = api_ctx(ovr);
	uint8_t *region = malloc(A_LEN + 64), *src = malloc(A_LEN);
	uint64_t sums[ROUNDS + 1], checks = 0;
	volatile uint64_t *flag;
	unio_worker_t *a, *b;
	unio_request_t *ra, *rb;
	unio_status_t st, sa, sb;
	unio_rkey_t *rk;
	unio_mem_h memh;
	unio_ep_t *ep;
	bool checked;
	size_t klen;
	void *key;

	TEST_ASSERT(ctx != NULL && region != NULL && src != NULL, "setup");
	a = unio_worker_create(ctx, NULL, &st);
	b = unio_worker_create(ctx, NULL, &st);
	TEST_ASSERT(a != NULL && b != NULL, "workers");
	ep = api_ep_to_worker(a, b, &st);
	TEST_ASSERT(ep != NULL && api_ep_connected(a, b, ep), "ep: %s", unio_status_string(st));
	TEST_ASSERT(strcmp(ep->lane.iface->driver->name, drv) == 0, "lane %s",
		    ep->lane.iface->driver->name);
	memset(region, 0, A_LEN + 64);
	flag = (volatile uint64_t *)(region + A_LEN);
	mp.address = region;
	TEST_ASSERT_STATUS(unio_mem_map(b, &mp, &memh), UNIO_OK);
	TEST_ASSERT_STATUS(unio_rkey_pack(memh, &key, &klen), UNIO_OK);
	TEST_ASSERT_STATUS(unio_ep_rkey_unpack(ep, key, klen, &rk), UNIO_OK);
	unio_rkey_buffer_release(key);
	for (uint64_t r = 1; r <= ROUNDS; r++) {
		test_fill(src, A_LEN, r);
		sums[r] = test_checksum(src, A_LEN);
		ra = rb = NULL;
		checked = false;
		sa = unio_put(ep, src, A_LEN, (uintptr_t)region, rk, NULL, &ra);
		TEST_ASSERT(sa == UNIO_OK || sa == UNIO_INPROGRESS, "put A: %s",
			    unio_status_string(sa));
		TEST_ASSERT_STATUS(unio_worker_fence(a), UNIO_OK);
		sb = unio_put(ep, &r, sizeof(r), (uintptr_t)flag, rk, NULL, &rb);
		TEST_ASSERT(sb == UNIO_OK || sb == UNIO_INPROGRESS, "put B: %s",
			    unio_status_string(sb));
		if (*flag == r) {   /* written already (shm: at the call) */
			checked = true;
			checks++;
			TEST_ASSERT(test_checksum(region, A_LEN) == sums[r],
				    "round %" PRIu64 ": B written before A", r);
		}
		for (int i = 0; i < 10000000 && (sa == UNIO_INPROGRESS || sb == UNIO_INPROGRESS ||
						 *flag != r); i++) {
			uint64_t seen;

			unio_worker_progress(b);
			seen = *flag;
			if (seen == r && !checked) {   /* the first step that shows B */
				checked = true;
				TEST_ASSERT(test_checksum(region, A_LEN) == sums[r],
					    "round %" PRIu64 ": B visible before A", r);
				checks++;
			}
			unio_worker_progress(a);
			if (sa == UNIO_INPROGRESS && (sa = unio_request_test(ra, NULL)) !=
			    UNIO_INPROGRESS)
				unio_request_free(ra);
			if (sb == UNIO_INPROGRESS && (sb = unio_request_test(rb, NULL)) !=
			    UNIO_INPROGRESS)
				unio_request_free(rb);
		}
		TEST_ASSERT(sa == UNIO_OK && sb == UNIO_OK && *flag == r, "round %" PRIu64
			    ": A %s, B %s, flag %" PRIu64, r, unio_status_string(sa),
			    unio_status_string(sb), *flag);
		TEST_ASSERT(test_checksum(region, A_LEN) == sums[r], "round %" PRIu64 ": A", r);
	}
	TEST_LOG("%s: A checked in %" PRIu64 " rounds when B first showed", drv, checks);
	TEST_ASSERT_EQ(checks, ROUNDS);
	unio_rkey_destroy(rk);
	unio_mem_unmap(b, memh);
	unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
	unio_worker_destroy(b);
	unio_worker_destroy(a);
	unio_context_destroy(ctx);
	free(region);
	free(src);
	return TEST_OK;
}

/*
 * Mixed sizes and paths.  Before the fence: one large put into registered memory (shm: CMA;
 * tcp: 20 MiB, three chunks of at most 8 MiB, 80 frames, more than a connection queues, so
 * part of it waits in the worker's queue), an 8-byte and a 4 KiB put into allocated memory
 * (shm: a memcpy through the direct mapping).  After it: the round number into the
 * allocated region, a second fence, a get of the start of the allocated region.  Whenever
 * the target first shows the round number, every put before the fence is in place; the get
 * returns the round's data.  "two eps": worker a reaches b twice, over tcp (b's address with
 * only its tcp iface) and over shm; the large put goes over tcp, the rest over shm, where it
 * completes at once (before the fix, the round number showed before the large put was in).
 */
#define MX_ROUNDS 12
#define MX_SMALL  4096

struct mx {
	unio_worker_t *a, *b;
	unio_ep_t *big_ep, *small_ep;
	unio_rkey_t *big_rk, *small_rk;
	uint8_t *big, *small;     /* b's regions */
	size_t big_len, small_len;
	unio_request_t *req[8];
	unio_status_t st[8];
	unsigned int n;
};

/* b's worker address with only its @p drv iface */
static int
addr_only(unio_worker_t *b, const char *drv, uint8_t *out, size_t *out_len)
{
	struct wire_addr_hdr h;
	struct wire_addr_iface e;
	size_t len, off;
	void *addr;
	uint8_t *p;

	TEST_ASSERT_STATUS(unio_worker_get_address(b, &addr, &len), UNIO_OK);
	p = addr;
	memcpy(&h, p, sizeof(h));
	off = sizeof(h);
	for (unsigned int i = 0; i < h.n_ifaces; i++) {
		memcpy(&e, p + off, sizeof(e));
		if (strcmp(e.driver, drv) == 0) {
			h.n_ifaces = 1;
			memcpy(out, &h, sizeof(h));
			memcpy(out + sizeof(h), p + off, sizeof(e) + e.addr_len);
			*out_len = sizeof(h) + sizeof(e) + e.addr_len;
			unio_worker_release_address(b, addr);
			return TEST_OK;
		}
		off += sizeof(e) + e.addr_len;
	}
	unio_worker_release_address(b, addr);
	TEST_ASSERT(0, "no %s iface in the address", drv);
}

static unio_ep_t *
ep_from(unio_worker_t *a, unio_worker_t *b, const uint8_t *addr, size_t len)
{
	struct unio_ep_params p = { .field_mask = UNIO_EP_PARAM_WORKER_ADDR,
				    .worker_addr = addr, .worker_addr_len = len };
	unio_status_t st;
	unio_ep_t *ep = unio_ep_create(a, &p, &st);

	return ep != NULL && api_ep_connected(a, b, ep) ? ep : NULL;
}

static int
mx_map(unio_worker_t *b, unio_ep_t *ep, void *addr, size_t len, unio_mem_h *memh,
       unio_rkey_t **rk, uint8_t **where)
{
	struct unio_mem_map_params mp = { .field_mask = UNIO_MEM_MAP_PARAM_LENGTH,
					  .length = len };
	struct unio_mem_attr attr;
	size_t klen;
	void *key;

	if (addr != NULL) {
		mp.field_mask |= UNIO_MEM_MAP_PARAM_ADDRESS;
		mp.address = addr;
	} else {
		mp.field_mask |= UNIO_MEM_MAP_PARAM_FLAGS;
		mp.flags = UNIO_MEM_MAP_FLAG_ALLOCATE;
	}
	TEST_ASSERT_STATUS(unio_mem_map(b, &mp, memh), UNIO_OK);
	TEST_ASSERT_STATUS(unio_mem_query(*memh, &attr), UNIO_OK);
	*where = attr.address;
	memset(*where, 0, len);
	TEST_ASSERT_STATUS(unio_rkey_pack(*memh, &key, &klen), UNIO_OK);
	TEST_ASSERT_STATUS(unio_ep_rkey_unpack(ep, key, klen, rk), UNIO_OK);
	unio_rkey_buffer_release(key);
	return TEST_OK;
}

static int
mx_op(struct mx *m, bool put, unio_ep_t *ep, void *buf, size_t len, void *raddr,
      unio_rkey_t *rk)
{
	unio_status_t st;

	m->req[m->n] = NULL;
	st = put ? unio_put(ep, buf, len, (uintptr_t)raddr, rk, NULL, &m->req[m->n]) :
	     unio_get(ep, buf, len, (uintptr_t)raddr, rk, NULL, &m->req[m->n]);
	TEST_ASSERT(st == UNIO_OK || st == UNIO_INPROGRESS, "%s of %zu B: %s",
		    put ? "put" : "get", len, unio_status_string(st));
	m->st[m->n++] = st;
	return TEST_OK;
}

static bool
mx_busy(struct mx *m)
{
	bool busy = false;

	for (unsigned int i = 0; i < m->n; i++) {
		if (m->st[i] == UNIO_INPROGRESS &&
		    (m->st[i] = unio_request_test(m->req[i], NULL)) != UNIO_INPROGRESS)
			unio_request_free(m->req[i]);
		busy |= m->st[i] == UNIO_INPROGRESS;
	}
	return busy;
}

/* round @p r: what the target shows once the round number is there */
static int
mx_check(struct mx *m, uint64_t r, uint64_t big_sum, const uint8_t *small)
{
	TEST_ASSERT(test_checksum(m->big, m->big_len) == big_sum,
		    "round %" PRIu64 ": the number shows, the large put before the fence not", r);
	TEST_ASSERT(memcmp(m->small, small, 8 + MX_SMALL) == 0,
		    "round %" PRIu64 ": the number shows, a small put before the fence not", r);
	return TEST_OK;
}

static int
mx_round(struct mx *m, uint64_t r, uint8_t *src, uint8_t *small, uint8_t *got)
{
	uint64_t *flag = (uint64_t *)(m->small + m->small_len - 8), big_sum;
	bool checked = false;

	test_fill(src, m->big_len, r);
	big_sum = test_checksum(src, m->big_len);
	test_fill(small, 8 + MX_SMALL, r + 1000);
	memset(got, 0, 64);
	m->n = 0;
	TEST_ASSERT_EQ(mx_op(m, true, m->big_ep, src, m->big_len, m->big, m->big_rk), TEST_OK);
	TEST_ASSERT_EQ(mx_op(m, true, m->small_ep, small, 8, m->small, m->small_rk), TEST_OK);
	TEST_ASSERT_EQ(mx_op(m, true, m->small_ep, small + 8, MX_SMALL, m->small + 8,
			     m->small_rk), TEST_OK);
	TEST_ASSERT_STATUS(unio_worker_fence(m->a), UNIO_OK);
	TEST_ASSERT_EQ(mx_op(m, true, m->small_ep, &r, 8, flag, m->small_rk), TEST_OK);
	TEST_ASSERT_STATUS(unio_worker_fence(m->a), UNIO_OK);   /* a second one, behind it */
	TEST_ASSERT_EQ(mx_op(m, false, m->small_ep, got, 64, m->small, m->small_rk), TEST_OK);
	for (int i = 0; i < 20000000; i++) {
		if (__atomic_load_n(flag, __ATOMIC_ACQUIRE) == r && !checked) {
			checked = true;
			TEST_ASSERT_EQ(mx_check(m, r, big_sum, small), TEST_OK);
		}
		if (!mx_busy(m) && checked)
			break;
		unio_worker_progress(m->b);
		if (__atomic_load_n(flag, __ATOMIC_ACQUIRE) == r && !checked) {
			checked = true;
			TEST_ASSERT_EQ(mx_check(m, r, big_sum, small), TEST_OK);
		}
		unio_worker_progress(m->a);
	}
	TEST_ASSERT(checked && !mx_busy(m), "round %" PRIu64 ": not done", r);
	for (unsigned int i = 0; i < m->n; i++)
		TEST_ASSERT(m->st[i] == UNIO_OK, "round %" PRIu64 ", op %u: %s", r, i,
			    unio_status_string(m->st[i]));
	TEST_ASSERT(memcmp(got, small, 64) == 0,
		    "round %" PRIu64 ": the get after the fence read older data", r);
	return TEST_OK;
}

static int
fence_mixed(const char *tls, const char *big_drv, const char *small_drv, size_t big_len)
{
	const char *const ovr[] = { "TLS", tls, NULL };
	unio_context_t *ctx = api_ctx(ovr);
	struct mx m = { .big_len = big_len, .small_len = 1 << 20 };
	uint8_t *src = malloc(big_len), *small = malloc(8 + MX_SMALL), got[64];
	uint8_t *heap = malloc(big_len), addr[1024];
	unio_mem_h big_h, small_h;
	size_t alen;
	unio_status_t st;

	TEST_ASSERT(ctx != NULL && src != NULL && small != NULL && heap != NULL, "setup");
	m.a = unio_worker_create(ctx, NULL, &st);
	m.b = unio_worker_create(ctx, NULL, &st);
	TEST_ASSERT(m.a != NULL && m.b != NULL, "workers");
	TEST_ASSERT_EQ(addr_only(m.b, big_drv, addr, &alen), TEST_OK);
	m.big_ep = ep_from(m.a, m.b, addr, alen);
	TEST_ASSERT(m.big_ep != NULL, "ep over %s", big_drv);
	m.small_ep = m.big_ep;
	if (strcmp(big_drv, small_drv) != 0) {
		TEST_ASSERT_EQ(addr_only(m.b, small_drv, addr, &alen), TEST_OK);
		m.small_ep = ep_from(m.a, m.b, addr, alen);
		TEST_ASSERT(m.small_ep != NULL, "ep over %s", small_drv);
	}
	TEST_ASSERT(strcmp(m.big_ep->lane.iface->driver->name, big_drv) == 0 &&
		    strcmp(m.small_ep->lane.iface->driver->name, small_drv) == 0, "lanes %s, %s",
		    m.big_ep->lane.iface->driver->name, m.small_ep->lane.iface->driver->name);
	TEST_ASSERT_EQ(mx_map(m.b, m.big_ep, heap, big_len, &big_h, &m.big_rk, &m.big),
		       TEST_OK);
	TEST_ASSERT_EQ(mx_map(m.b, m.small_ep, NULL, m.small_len, &small_h, &m.small_rk,
			      &m.small), TEST_OK);
	TEST_LOG("large put over %s (%s key), the rest over %s (%s key)", big_drv,
		 m.big_rk->data.local_ptr != NULL ? "mapped" : "CMA or target", small_drv,
		 m.small_rk->data.local_ptr != NULL ? "mapped" : "CMA or target");
	for (uint64_t r = 1; r <= MX_ROUNDS; r++)
		TEST_ASSERT_EQ(mx_round(&m, r, src, small, got), TEST_OK);
	unio_rkey_destroy(m.big_rk);
	unio_rkey_destroy(m.small_rk);
	unio_mem_unmap(m.b, big_h);
	unio_mem_unmap(m.b, small_h);
	if (m.small_ep != m.big_ep)
		unio_ep_close(m.small_ep, UNIO_EP_CLOSE_FORCE, NULL);
	unio_ep_close(m.big_ep, UNIO_EP_CLOSE_FORCE, NULL);
	unio_worker_destroy(m.b);
	unio_worker_destroy(m.a);
	unio_context_destroy(ctx);
	free(heap);
	free(src);
	free(small);
	return TEST_OK;
}

UNIO_TEST(rma_fence_order, fast)
{
	TEST_ASSERT_EQ(fence_order("shm,self", "shm"), TEST_OK);
	TEST_ASSERT_EQ(fence_order("tcp,self", "tcp"), TEST_OK);
	TEST_ASSERT_EQ(fence_mixed("shm,self", "shm", "shm", (4 << 20) + 3), TEST_OK);
	TEST_ASSERT_EQ(fence_mixed("tcp,self", "tcp", "tcp", 20 << 20), TEST_OK);
	return fence_mixed("shm,tcp,self", "tcp", "shm", 20 << 20);
}

/*
 * A fence whose queue holds an operation for another ep: put P1 (20 MiB) a -> b over tcp,
 * fence, put P2 (4 KiB) a -> c, fence, and once P1 is complete, put F (8 bytes) a -> b.
 * F was started after the second fence, so it must not be applied before P2; P2, handed to
 * the transport whole, completes only with c's ack, never while c does not progress.  However
 * long a and b
 * progress, b must not show F; then with c progressing, everything completes with its data.
 * Before the fix, the second fence kept the exception for "b's ep only" although P2 waited
 * in the queue, and F went out at once, overtaking P2.
 */
#define TT_LEN (20 << 20)
#define TT_P2  4096

static int
tt_key(unio_worker_t *t, unio_ep_t *ep, uint8_t *region, size_t len, unio_mem_h *memh,
       unio_rkey_t **rk)
{
	struct unio_mem_map_params mp = { .field_mask = UNIO_MEM_MAP_PARAM_LENGTH |
							UNIO_MEM_MAP_PARAM_ADDRESS,
					  .length = len, .address = region };
	size_t klen;
	void *key;

	memset(region, 0, len);
	TEST_ASSERT_STATUS(unio_mem_map(t, &mp, memh), UNIO_OK);
	TEST_ASSERT_STATUS(unio_rkey_pack(*memh, &key, &klen), UNIO_OK);
	TEST_ASSERT_STATUS(unio_ep_rkey_unpack(ep, key, klen, rk), UNIO_OK);
	unio_rkey_buffer_release(key);
	return TEST_OK;
}

static void
tt_test(unio_status_t *st, unio_request_t *req)
{
	if (*st == UNIO_INPROGRESS && (*st = unio_request_test(req, NULL)) != UNIO_INPROGRESS)
		unio_request_free(req);
}

UNIO_TEST(rma_fence_two_targets, fast)
{
	const char *const ovr[] = { "TLS", "tcp,self", NULL };
	unio_context_t *ctx = api_ctx(ovr);
	uint8_t *rb = malloc(TT_LEN + 64), *rc = malloc(TT_LEN), *s1 = malloc(TT_LEN);
	uint8_t *s2 = malloc(TT_LEN);
	volatile uint64_t *flag = (volatile uint64_t *)(rb + TT_LEN);
	unio_request_t *r1 = NULL, *r2 = NULL, *rf = NULL;
	unio_status_t st, s1st, s2st, sf;
	unio_worker_t *a, *b, *c;
	unio_ep_t *eb, *ec;
	unio_rkey_t *kb, *kc;
	unio_mem_h mb, mc;
	uint64_t one = 0x600df00d;
	int i;

	TEST_ASSERT(ctx != NULL && rb != NULL && rc != NULL && s1 != NULL && s2 != NULL, "setup");
	a = unio_worker_create(ctx, NULL, &st);
	b = unio_worker_create(ctx, NULL, &st);
	c = unio_worker_create(ctx, NULL, &st);
	TEST_ASSERT(a != NULL && b != NULL && c != NULL, "workers");
	eb = api_ep_to_worker(a, b, &st);
	TEST_ASSERT(eb != NULL && api_ep_connected(a, b, eb), "ep to b");
	ec = api_ep_to_worker(a, c, &st);
	TEST_ASSERT(ec != NULL && api_ep_connected(a, c, ec), "ep to c");
	TEST_ASSERT_EQ(tt_key(b, eb, rb, TT_LEN + 64, &mb, &kb), TEST_OK);
	TEST_ASSERT_EQ(tt_key(c, ec, rc, TT_LEN, &mc, &kc), TEST_OK);
	test_fill(s1, TT_LEN, 1);
	test_fill(s2, TT_LEN, 2);

	s1st = unio_put(eb, s1, TT_LEN, (uintptr_t)rb, kb, NULL, &r1);
	TEST_ASSERT_STATUS(s1st, UNIO_INPROGRESS);
	TEST_ASSERT_STATUS(unio_worker_fence(a), UNIO_OK);
	s2st = unio_put(ec, s2, TT_P2, (uintptr_t)rc, kc, NULL, &r2);
	TEST_ASSERT_STATUS(s2st, UNIO_INPROGRESS);
	TEST_ASSERT_STATUS(unio_worker_fence(a), UNIO_OK);
	for (i = 0; i < 10000000 && s1st == UNIO_INPROGRESS; i++) {
		unio_worker_progress(b);
		unio_worker_progress(a);
		tt_test(&s1st, r1);
	}
	TEST_ASSERT_STATUS(s1st, UNIO_OK);
	TEST_ASSERT(test_checksum(rb, TT_LEN) == test_checksum(s1, TT_LEN), "P1 data");
	tt_test(&s2st, r2);
	TEST_ASSERT_STATUS(s2st, UNIO_INPROGRESS);   /* c never progressed */

	sf = unio_put(eb, &one, sizeof(one), (uintptr_t)flag, kb, NULL, &rf);
	TEST_ASSERT(sf == UNIO_OK || sf == UNIO_INPROGRESS, "put F: %s",
		    unio_status_string(sf));
	for (i = 0; i < 20000; i++) {
		unio_worker_progress(b);
		unio_worker_progress(a);
		TEST_ASSERT(*flag == 0, "F applied at b while P2, before the fence, is not done");
	}
	TEST_ASSERT_STATUS(sf, UNIO_INPROGRESS);
	tt_test(&s2st, r2);
	TEST_ASSERT_STATUS(s2st, UNIO_INPROGRESS);

	for (i = 0; i < 10000000 && (s2st == UNIO_INPROGRESS || sf == UNIO_INPROGRESS); i++) {
		unio_worker_progress(c);
		unio_worker_progress(b);
		unio_worker_progress(a);
		tt_test(&s2st, r2);
		tt_test(&sf, rf);
	}
	TEST_ASSERT(s2st == UNIO_OK && sf == UNIO_OK, "P2 %s, F %s", unio_status_string(s2st),
		    unio_status_string(sf));
	TEST_ASSERT(test_checksum(rc, TT_P2) == test_checksum(s2, TT_P2), "P2 data");
	TEST_ASSERT(*flag == one, "F data");

	unio_rkey_destroy(kb);
	unio_rkey_destroy(kc);
	unio_mem_unmap(b, mb);
	unio_mem_unmap(c, mc);
	unio_ep_close(ec, UNIO_EP_CLOSE_FORCE, NULL);
	unio_ep_close(eb, UNIO_EP_CLOSE_FORCE, NULL);
	unio_worker_destroy(c);
	unio_worker_destroy(b);
	unio_worker_destroy(a);
	unio_context_destroy(ctx);
	free(rb);
	free(rc);
	free(s1);
	free(s2);
	return TEST_OK;
}
