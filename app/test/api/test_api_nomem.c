/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The receiver runs out of memory for unexpected messages (UNIO_UNEXP_MEM bounds it for real:
 * the allocation fails).  Multi-fragment and single-fragment eager messages that do not fit
 * are dropped whole and counted once each as "dropped: no memory", never as malformed; a
 * synchronous send of one fails with UNIO_ERR_NO_MEMORY instead of hanging; the messages held
 * before, and every message after, arrive intact (checksummed), and a dropped message is not
 * found by a probe.  Two workers in one process, over shm and over tcp (fast: also ASan).
 */

#include <stdio.h>

#include <rte_log.h>

#include "api_common.h"
#include "unio_proto.h"

struct nm {
	unio_context_t *ctx;
	unio_worker_t *a;   /* receiver */
	unio_worker_t *b;   /* sender */
	unio_ep_t *ep;      /* b -> a */
};

#define NOMEM "# dropped: no memory: "
#define MALFORMED API_DROPPED_FROM_PEERS

static void
progress(struct nm *m, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		unio_worker_progress(m->a);
		unio_worker_progress(m->b);
	}
}

/* Progress both workers until @p req (from a call that returned @p st) is done. */
static unio_status_t
wait_op(struct nm *m, unio_status_t st, unio_request_t *req)
{
	for (int i = 0; i < 5000000 && st == UNIO_INPROGRESS; i++) {
		progress(m, 1);
		st = unio_request_test(req, NULL);
	}
	if (st != UNIO_INPROGRESS && req != NULL)
		unio_request_free(req);
	return st;
}

static unio_status_t
send_msg(struct nm *m, const uint8_t *buf, size_t len, uint64_t tag, bool sync)
{
	unio_request_t *req = NULL;
	unio_status_t st = sync ? unio_tag_send_sync(m->ep, buf, len, tag, NULL, &req) :
			   unio_tag_send(m->ep, buf, len, tag, NULL, &req);

	return wait_op(m, st, req);
}

/* Receive @p len bytes with @p tag and check them against test_fill(seed). */
static int
recv_check(struct nm *m, size_t len, uint64_t tag, uint64_t seed)
{
	uint8_t *want = malloc(len + 1), *got = malloc(len + 1);
	struct unio_request_param p = { .field_mask = UNIO_REQ_PARAM_RECV_INFO };
	struct unio_recv_info info = { 0 };
	unio_request_t *req = NULL;
	unio_status_t st;

	TEST_ASSERT(want != NULL && got != NULL, "malloc");
	p.recv_info = &info;
	test_fill(want, len, seed);
	memset(got, 0xa5, len + 1);
	st = unio_tag_recv(m->a, got, len, tag, UINT64_MAX, &p, &req);
	if (req != NULL) {
		for (int i = 0; i < 5000000 && unio_request_test(req, &info) == UNIO_INPROGRESS;
		     i++)
			progress(m, 1);
		st = unio_request_test(req, &info);
		unio_request_free(req);
	}
	TEST_ASSERT(st == UNIO_OK, "receive of tag %#" PRIx64 ": %s", tag,
		    unio_status_string(st));
	TEST_ASSERT(info.tag == tag && info.length == len, "tag %#" PRIx64 " length %zu",
		    info.tag, info.length);
	TEST_ASSERT(test_checksum(got, len) == test_checksum(want, len) && got[len] == 0xa5,
		    "tag %#" PRIx64 ": payload differs", tag);
	free(want);
	free(got);
	return TEST_OK;
}

static int
not_there(struct nm *m, uint64_t tag)
{
	struct unio_recv_info info;

	TEST_ASSERT_STATUS(unio_tag_probe(m->a, tag, UINT64_MAX, 0, &info, NULL),
			   UNIO_ERR_NOT_FOUND);
	return TEST_OK;
}

static int
counters(struct nm *m, uint64_t nomem)
{
	progress(m, 2000);
	TEST_ASSERT_EQ(api_worker_counter(m->a, NOMEM), nomem);
	TEST_ASSERT_EQ(api_worker_counter(m->a, MALFORMED), 0);
	TEST_ASSERT_EQ(api_worker_counter(m->b, NOMEM), 0);
	TEST_ASSERT_EQ(api_worker_counter(m->b, MALFORMED), 0);
	return TEST_OK;
}

static int
run(struct nm *m)
{
	const struct proto_lane *l = &m->ep->lane;
	size_t s = 3 * l->frag + 5, e = l->max_eager;
	size_t limit = 2 * s + e + e / 2;
	uint8_t *src[8];

	/* UNIO_UNEXP_MEM came in as 1m; now that the lane's sizes are known, the exact bound
	 * (the worker reads it from its context's snapshot at each allocation) */
	TEST_ASSERT_EQ(m->ctx->config.unexp_mem, 1u << 20);
	m->ctx->config.unexp_mem = limit;
	TEST_LOG("lane %s: multi-fragment %zu B (fragments of %zu B), eager %zu B, bound %zu B",
		 l->iface->driver->name, s, l->frag, e, limit);
	TEST_ASSERT(s > l->max_eager && s < l->rndv_thresh && e > 256 && 3 * s > limit &&
		    2 * s + 2 * e > limit, "sizes");
	for (unsigned int i = 0; i < RTE_DIM(src); i++) {
		src[i] = malloc(s);
		TEST_ASSERT(src[i] != NULL, "malloc");
		test_fill(src[i], s, 100 + i);
	}
	/* two held (2s), then one multi-fragment message of each kind that does not fit */
	TEST_ASSERT_STATUS(send_msg(m, src[0], s, 0x10, false), UNIO_OK);
	TEST_ASSERT_STATUS(send_msg(m, src[1], s, 0x11, false), UNIO_OK);
	progress(m, 2000);
	TEST_ASSERT_EQ(counters(m, 0), TEST_OK);
	TEST_ASSERT_STATUS(send_msg(m, src[2], s, 0x12, false), UNIO_OK);  /* done locally */
	TEST_ASSERT_STATUS(send_msg(m, src[3], s, 0x13, true), UNIO_ERR_NO_MEMORY);
	TEST_ASSERT_EQ(counters(m, 2), TEST_OK);
	/* single-fragment eager: the first fits (2s + e), the next does not */
	test_fill(src[4], e, 104);
	test_fill(src[5], e, 105);
	TEST_ASSERT_STATUS(send_msg(m, src[4], e, 0x14, false), UNIO_OK);
	TEST_ASSERT_STATUS(send_msg(m, src[5], e, 0x15, true), UNIO_ERR_NO_MEMORY);
	TEST_ASSERT_EQ(counters(m, 3), TEST_OK);
	TEST_ASSERT_EQ(not_there(m, 0x12), TEST_OK);
	TEST_ASSERT_EQ(not_there(m, 0x13), TEST_OK);
	TEST_ASSERT_EQ(not_there(m, 0x15), TEST_OK);
	/* what was held arrives intact, in its order */
	TEST_ASSERT_EQ(recv_check(m, s, 0x10, 100), TEST_OK);
	TEST_ASSERT_EQ(recv_check(m, s, 0x11, 101), TEST_OK);
	TEST_ASSERT_EQ(recv_check(m, e, 0x14, 104), TEST_OK);
	TEST_ASSERT_EQ(m->a->unexp_bytes, 0);
	/* the dropped ones sent again fit now; then a window of three, of which one is dropped
	 * while its fragments are queued behind the others (swallowed, counted once) */
	TEST_ASSERT_STATUS(send_msg(m, src[2], s, 0x12, false), UNIO_OK);
	TEST_ASSERT_EQ(recv_check(m, s, 0x12, 102), TEST_OK);
	TEST_ASSERT_STATUS(send_msg(m, src[5], e, 0x15, false), UNIO_OK);
	TEST_ASSERT_EQ(recv_check(m, e, 0x15, 105), TEST_OK);
	test_fill(src[5], s, 105);
	{
		unio_request_t *r[3] = { NULL, NULL, NULL };
		unio_status_t st[3];

		for (unsigned int i = 0; i < 3; i++)
			st[i] = unio_tag_send(m->ep, src[5 + i], s, 0x20 + i, NULL, &r[i]);
		for (unsigned int i = 0; i < 3; i++)
			TEST_ASSERT_STATUS(wait_op(m, st[i], r[i]), UNIO_OK);
	}
	TEST_ASSERT_EQ(counters(m, 4), TEST_OK);
	TEST_ASSERT_EQ(not_there(m, 0x22), TEST_OK);
	TEST_ASSERT_EQ(recv_check(m, s, 0x21, 106), TEST_OK);
	TEST_ASSERT_EQ(recv_check(m, s, 0x20, 105), TEST_OK);
	/* a sync send whose receive is posted later now fits: acknowledged on match */
	{
		unio_request_t *r = NULL;
		unio_status_t st = unio_tag_send_sync(m->ep, src[3], s, 0x13, NULL, &r);

		progress(m, 2000);
		TEST_ASSERT_EQ(recv_check(m, s, 0x13, 103), TEST_OK);
		TEST_ASSERT_STATUS(wait_op(m, st, r), UNIO_OK);
	}
	TEST_ASSERT_EQ(counters(m, 4), TEST_OK);
	TEST_ASSERT_EQ(m->a->unexp_bytes, 0);
	for (unsigned int i = 0; i < RTE_DIM(src); i++)
		free(src[i]);
	return TEST_OK;
}

static int
nomem(const char *drv)
{
	const char *const ovr[] = { "TLS", drv, "ZCOPY_THRESH", "inf", "RNDV_THRESH", "256k",
				    "UNEXP_MEM", "1m", NULL };
	struct nm m = { 0 };
	unio_status_t st;
	int rc = TEST_FAIL;

	m.ctx = api_ctx(ovr);
	TEST_ASSERT(m.ctx != NULL, "context");
	m.a = unio_worker_create(m.ctx, NULL, &st);
	m.b = unio_worker_create(m.ctx, NULL, &st);
	if (m.a == NULL || m.b == NULL)
		goto out;
	m.ep = api_ep_to_worker(m.b, m.a, &st);
	if (m.ep == NULL || !api_ep_connected(m.b, m.a, m.ep))
		goto out;
	rte_log_set_level_pattern("unio.proto", RTE_LOG_CRIT);
	rc = run(&m);
	rte_log_set_level_pattern("unio.proto", RTE_LOG_WARNING);
out:
	if (rc != TEST_OK)
		TEST_LOG("failed (%s)", unio_status_string(st));
	if (m.ep != NULL)
		unio_ep_close(m.ep, UNIO_EP_CLOSE_FORCE, NULL);
	if (m.b != NULL)
		unio_worker_destroy(m.b);
	if (m.a != NULL)
		unio_worker_destroy(m.a);
	unio_context_destroy(m.ctx);
	return rc;
}

UNIO_TEST(api_unexp_no_memory, fast)
{
	return nomem("shm,self");
}

UNIO_TEST(api_unexp_no_memory_tcp, fast)
{
	return nomem("tcp,self");
}
