/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fence ordering: put A (1 MiB, in several chunks over tcp), unio_worker_fence(), put B (an
 * 8-byte round number), both left running.  After every progress step of the target, a
 * round number it can see means the whole of that round's A is in place (checksummed).
 * Over shm and over tcp, 64 rounds each.
 */

#include "api_common.h"
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

UNIO_TEST(rma_fence_order, fast)
{
	TEST_ASSERT_EQ(fence_order("shm,self", "shm"), TEST_OK);
	return fence_order("tcp,self", "tcp");
}
