/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every public call of the AM, memory and RMA API (unio_am.h, unio_rma.h, and the flushes
 * that complete puts and gets) refuses its bad arguments with UNIO_ERR_INVALID_PARAM and
 * does nothing else: NULL handles and pointers, ids, flags and memory types out of range,
 * field_mask bits no version defines, request parameters with an unknown field or flag, a
 * region or key used with another worker's or endpoint's handle.  After each refusal the
 * state is checked: no handler ran, no byte of the mapped region or of the local buffer
 * changed, a kept rendezvous descriptor can still be received whole, a region another
 * worker tried to unmap is still mapped and reachable.  (am_bad_input and rma_bad_input
 * cover the first cases of each call; this test is the whole list for issue 6.)
 */

#include <rte_common.h>

#include "api_common.h"
#include "unio_am.h"
#include "unio_rma.h"

#define LEN    4096
#define AM_ID  3
#define RNDV_LEN 5000

/* LEN bytes allocated by the library: the region every case maps, and the valid base */
static const struct unio_mem_map_params alloc_params = {
	.field_mask = UNIO_MEM_MAP_PARAM_LENGTH | UNIO_MEM_MAP_PARAM_FLAGS,
	.length = LEN, .flags = UNIO_MEM_MAP_FLAG_ALLOCATE,
};

struct args_env {
	struct api_pair p;
	unio_ep_t *ba;             /* b -> a: another ep, for keys of the wrong ep */
	unio_mem_h memh;           /* b's region (allocated) */
	uint8_t *base;
	uint8_t shadow[LEN];       /* what the region must hold */
	void *key;
	size_t key_len;
	unio_rkey_t *rk;           /* unpacked on p.ep */
	unsigned int am_calls;     /* handler calls */
	void *desc;                /* a kept rendezvous descriptor */
};

static unio_status_t
am_count(void *arg, const void *header, size_t hlen, void *data, size_t len,
	 const struct unio_am_recv_param *p)
{
	struct args_env *e = arg;

	RTE_SET_USED(header), RTE_SET_USED(hlen), RTE_SET_USED(len);
	e->am_calls++;
	if (p->recv_attr & UNIO_AM_RECV_ATTR_FLAG_RNDV) {
		e->desc = data;
		return UNIO_INPROGRESS;   /* received later, outside the callback */
	}
	return UNIO_OK;
}

static void
progress(struct args_env *e, int n)
{
	for (int i = 0; i < n; i++) {
		unio_worker_progress(e->p.a);
		unio_worker_progress(e->p.b);
	}
}

/* The region holds what it should: nothing refused wrote to it. */
static int
region_intact(const struct args_env *e)
{
	return memcmp(e->base, e->shadow, LEN) == 0;
}

/* Request parameters that each call must refuse. */
static const struct unio_request_param bad_params[] = {
	{ .field_mask = 1ull << 4 },                                 /* the next free bit */
	{ .field_mask = 1ull << 63 },
	{ .field_mask = UNIO_REQ_PARAM_CB | (1ull << 17) },
	{ .field_mask = UNIO_REQ_PARAM_FLAGS, .flags = 1u << 1 },   /* an unknown flag */
	{ .field_mask = UNIO_REQ_PARAM_FLAGS, .flags = UNIO_REQ_FLAG_NO_IMM_COMPLETION |
						       (1u << 31) },
};

static int
am_handler_args(struct args_env *e)
{
	unio_worker_t *b = e->p.b;

	TEST_ASSERT_STATUS(unio_worker_set_am_handler(NULL, AM_ID, am_count, e, 0),
			   UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_worker_set_am_handler(b, UNIO_AM_ID_MAX, am_count, e, 0),
			   UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_worker_set_am_handler(b, UINT32_MAX, am_count, e, 0),
			   UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_worker_set_am_handler(b, AM_ID, am_count, e, 1u << 1),
			   UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_worker_set_am_handler(b, AM_ID, am_count, e, 1u << 31),
			   UNIO_ERR_INVALID_PARAM);
	/* removing (cb NULL) checks the flags too */
	TEST_ASSERT_STATUS(unio_worker_set_am_handler(b, AM_ID, NULL, NULL, 1u << 5),
			   UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_worker_set_am_handler(b, AM_ID, am_count, e, 0), UNIO_OK);
	return TEST_OK;
}

static int
am_send_args(struct args_env *e)
{
	static const unsigned int bad_flags[] = {
		1u << 3, 1u << 31, UNIO_AM_SEND_FLAG_EAGER | UNIO_AM_SEND_FLAG_RNDV,
		UNIO_AM_SEND_FLAG_REPLY | (1u << 8),
	};
	struct unio_request_param good = { .field_mask = UNIO_REQ_PARAM_USER_DATA,
					   .user_data = e };
	unio_ep_t *ep = e->p.ep;
	uint8_t hdr[8] = { 1 }, b[16] = { 2 };
	unio_request_t *req = NULL;
	unio_status_t st;

	TEST_ASSERT_STATUS(unio_am_send(NULL, AM_ID, NULL, 0, b, 1, NULL, 0, NULL),
			   UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_am_send(ep, UNIO_AM_ID_MAX, NULL, 0, b, 1, NULL, 0, NULL),
			   UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_am_send(ep, AM_ID, NULL, sizeof(hdr), b, 1, NULL, 0, NULL),
			   UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_am_send(ep, AM_ID, hdr, sizeof(hdr), NULL, 1, NULL, 0, NULL),
			   UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_am_send(ep, AM_ID, NULL, 0, NULL, 1, NULL, 0, NULL),
			   UNIO_ERR_INVALID_PARAM);   /* the fast path's shape */
	for (unsigned int i = 0; i < RTE_DIM(bad_flags); i++)
		TEST_ASSERT_STATUS(unio_am_send(ep, AM_ID, NULL, 0, b, 1, NULL, bad_flags[i],
						NULL), UNIO_ERR_INVALID_PARAM);
	for (unsigned int i = 0; i < RTE_DIM(bad_params); i++) {
		TEST_ASSERT_STATUS(unio_am_send(ep, AM_ID, NULL, 0, b, 1, &bad_params[i], 0,
						&req), UNIO_ERR_INVALID_PARAM);
		TEST_ASSERT_STATUS(unio_am_send(ep, AM_ID, hdr, sizeof(hdr), b, sizeof(b),
						&bad_params[i], UNIO_AM_SEND_FLAG_RNDV, &req),
				   UNIO_ERR_INVALID_PARAM);
	}
	progress(e, 1000);
	TEST_ASSERT(e->am_calls == 0, "a refused AM reached the handler (%u calls)",
		    e->am_calls);
	/* the same sends with good arguments arrive */
	TEST_ASSERT_STATUS(unio_am_send(ep, AM_ID, NULL, 0, b, 1, NULL, 0, NULL), UNIO_OK);
	req = NULL;
	st = unio_am_send(ep, AM_ID, hdr, sizeof(hdr), b, sizeof(b), &good, 0, &req);
	TEST_ASSERT_STATUS(api_op_wait(e->p.a, e->p.b, st, req), UNIO_OK);
	for (int i = 0; i < 100000 && e->am_calls < 2; i++)
		progress(e, 1);
	TEST_ASSERT_EQ(e->am_calls, 2);
	return TEST_OK;
}

static int
am_recv_args(struct args_env *e)
{
	static uint8_t src[RNDV_LEN], dst[RNDV_LEN];
	unio_request_t *sreq = NULL, *rreq = NULL;
	unio_worker_t *b = e->p.b;
	unio_status_t st;

	test_fill(src, sizeof(src), 99);
	e->desc = NULL;
	st = unio_am_send(e->p.ep, AM_ID, NULL, 0, src, sizeof(src), NULL,
			  UNIO_AM_SEND_FLAG_RNDV, &sreq);
	TEST_ASSERT(st == UNIO_INPROGRESS, "rndv am_send: %s", unio_status_string(st));
	for (int i = 0; i < 100000 && e->desc == NULL; i++)
		progress(e, 1);
	TEST_ASSERT(e->desc != NULL, "no rendezvous descriptor");
	TEST_ASSERT_STATUS(unio_am_recv_data(NULL, e->desc, dst, sizeof(dst), NULL, NULL),
			   UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_am_recv_data(b, NULL, dst, sizeof(dst), NULL, NULL),
			   UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_am_recv_data(b, e->desc, NULL, sizeof(dst), NULL, NULL),
			   UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_am_recv_data(b, dst, dst, sizeof(dst), NULL, NULL),
			   UNIO_ERR_INVALID_PARAM);   /* not a descriptor */
	TEST_ASSERT_STATUS(unio_am_recv_data(e->p.a, e->desc, dst, sizeof(dst), NULL, NULL),
			   UNIO_ERR_INVALID_PARAM);   /* another worker's descriptor */
	for (unsigned int i = 0; i < RTE_DIM(bad_params); i++)
		TEST_ASSERT_STATUS(unio_am_recv_data(b, e->desc, dst, sizeof(dst), &bad_params[i],
						     &rreq), UNIO_ERR_INVALID_PARAM);
	unio_am_data_release(NULL, e->desc);
	unio_am_data_release(b, NULL);
	/* none of it consumed the descriptor: it is received whole now */
	memset(dst, 0, sizeof(dst));
	rreq = NULL;
	st = unio_am_recv_data(b, e->desc, dst, sizeof(dst), NULL, &rreq);
	TEST_ASSERT_STATUS(api_op_wait(b, e->p.a, st, rreq), UNIO_OK);
	TEST_ASSERT_STATUS(api_op_wait(e->p.a, b, UNIO_INPROGRESS, sreq), UNIO_OK);
	TEST_ASSERT(memcmp(dst, src, sizeof(src)) == 0, "the descriptor's data differ");
	return TEST_OK;
}

static int
mem_map_args(struct args_env *e)
{
	const struct unio_mem_map_params ok = alloc_params;
	struct unio_mem_map_params mp;
	unio_mem_h sentinel = (unio_mem_h)(uintptr_t)0x5a5a, memh = sentinel;
	unio_worker_t *b = e->p.b;
	static const uint64_t bad_fields[] = { 1ull << 4, 1ull << 31, 1ull << 63 };
	static const int bad_types[] = { 3, 99, -1 };

	TEST_ASSERT_STATUS(unio_mem_map(NULL, &ok, &memh), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_mem_map(b, NULL, &memh), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_mem_map(b, &ok, NULL), UNIO_ERR_INVALID_PARAM);
	for (unsigned int i = 0; i < RTE_DIM(bad_fields); i++) {
		mp = ok;
		mp.field_mask |= bad_fields[i];
		TEST_ASSERT_STATUS(unio_mem_map(b, &mp, &memh), UNIO_ERR_INVALID_PARAM);
	}
	mp = ok;
	mp.flags |= 1u << 1;                       /* an unknown flag */
	TEST_ASSERT_STATUS(unio_mem_map(b, &mp, &memh), UNIO_ERR_INVALID_PARAM);
	mp = ok;
	mp.field_mask &= ~UNIO_MEM_MAP_PARAM_LENGTH;  /* length is required */
	TEST_ASSERT_STATUS(unio_mem_map(b, &mp, &memh), UNIO_ERR_INVALID_PARAM);
	mp = ok;
	mp.length = 0;
	TEST_ASSERT_STATUS(unio_mem_map(b, &mp, &memh), UNIO_ERR_INVALID_PARAM);
	mp.length = (size_t)1 << 48;
	TEST_ASSERT_STATUS(unio_mem_map(b, &mp, &memh), UNIO_ERR_INVALID_PARAM);
	mp = ok;
	mp.flags = 0;                              /* registration without an address */
	TEST_ASSERT_STATUS(unio_mem_map(b, &mp, &memh), UNIO_ERR_INVALID_PARAM);
	mp.field_mask |= UNIO_MEM_MAP_PARAM_ADDRESS;
	mp.address = NULL;
	TEST_ASSERT_STATUS(unio_mem_map(b, &mp, &memh), UNIO_ERR_INVALID_PARAM);
	mp = ok;
	mp.field_mask |= UNIO_MEM_MAP_PARAM_MEMORY_TYPE;
	for (unsigned int i = 0; i < RTE_DIM(bad_types); i++) {
		mp.memory_type = (enum unio_memory_type)bad_types[i];
		TEST_ASSERT_STATUS(unio_mem_map(b, &mp, &memh), UNIO_ERR_INVALID_PARAM);
	}
	/* defined, but no driver in this build */
	mp.memory_type = UNIO_MEMORY_TYPE_CUDA;
	TEST_ASSERT_STATUS(unio_mem_map(b, &mp, &memh), UNIO_ERR_UNSUPPORTED);
	mp.memory_type = UNIO_MEMORY_TYPE_ROCM;
	TEST_ASSERT_STATUS(unio_mem_map(b, &mp, &memh), UNIO_ERR_UNSUPPORTED);
	TEST_ASSERT(memh == sentinel, "a refused mem_map wrote *memh_p");
	return TEST_OK;
}

static int
mem_handle_args(struct args_env *e)
{
	struct unio_mem_attr attr;
	unio_rkey_t *rk = NULL;
	void *buf = NULL;
	size_t len = 0;

	TEST_ASSERT_STATUS(unio_mem_query(NULL, &attr), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_mem_query(e->memh, NULL), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_rkey_pack(NULL, &buf, &len), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_rkey_pack(e->memh, NULL, &len), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_rkey_pack(e->memh, &buf, NULL), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT(buf == NULL && len == 0, "a refused rkey_pack wrote its outputs");
	unio_rkey_buffer_release(NULL);
	TEST_ASSERT_STATUS(unio_ep_rkey_unpack(NULL, e->key, e->key_len, &rk),
			   UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_ep_rkey_unpack(e->p.ep, NULL, e->key_len, &rk),
			   UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_ep_rkey_unpack(e->p.ep, e->key, e->key_len, NULL),
			   UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT(unio_ep_rkey_unpack(e->p.ep, e->key, 0, &rk) != UNIO_OK,
		    "an empty key unpacked");
	TEST_ASSERT(rk == NULL, "a refused unpack wrote *rkey_p");
	unio_rkey_destroy(NULL);
	/* unmap: no worker, no region, the region of another worker (b's, by a) */
	TEST_ASSERT_STATUS(unio_mem_unmap(NULL, e->memh), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_mem_unmap(e->p.b, NULL), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_mem_unmap(e->p.a, e->memh), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_mem_query(e->memh, &attr), UNIO_OK);
	TEST_ASSERT(attr.address == e->base && attr.length == LEN &&
		    attr.memory_type == UNIO_MEMORY_TYPE_HOST, "the region after refused unmaps");
	return TEST_OK;
}

/* A put of @p buf, or a get into it. */
static unio_status_t
op(bool put, unio_ep_t *ep, void *buf, size_t len, uint64_t raddr, unio_rkey_t *rk,
   const struct unio_request_param *param, unio_request_t **req_p)
{
	return put ? unio_put(ep, buf, len, raddr, rk, param, req_p) :
		     unio_get(ep, buf, len, raddr, rk, param, req_p);
}

static int
rma_args(struct args_env *e)
{
	struct unio_request_param good = { .field_mask = UNIO_REQ_PARAM_USER_DATA |
							 UNIO_REQ_PARAM_CB, .user_data = e };
	unio_ep_t *ep = e->p.ep;
	uint64_t at = (uintptr_t)e->base + 100;
	uint8_t src[64], dst[65];
	unio_request_t *req = NULL;
	unio_rkey_t *other = NULL;
	unio_status_t st;

	test_fill(src, sizeof(src), 7);
	memset(dst, 0xee, sizeof(dst));
	/* a key unpacked on b -> a, used on a -> b */
	TEST_ASSERT_STATUS(unio_ep_rkey_unpack(e->ba, e->key, e->key_len, &other), UNIO_OK);
	for (int put = 0; put < 2; put++) {
		void *buf = put ? (void *)src : (void *)dst;

		TEST_ASSERT_STATUS(op(put, NULL, buf, 8, at, e->rk, NULL, NULL),
				   UNIO_ERR_INVALID_PARAM);
		TEST_ASSERT_STATUS(op(put, ep, NULL, 8, at, e->rk, NULL, NULL),
				   UNIO_ERR_INVALID_PARAM);
		TEST_ASSERT_STATUS(op(put, ep, buf, 8, at, NULL, NULL, NULL),
				   UNIO_ERR_INVALID_PARAM);
		TEST_ASSERT_STATUS(op(put, ep, buf, 8, at, other, NULL, NULL),
				   UNIO_ERR_INVALID_PARAM);
		for (unsigned int i = 0; i < RTE_DIM(bad_params); i++)
			TEST_ASSERT_STATUS(op(put, ep, buf, 8, at, e->rk, &bad_params[i], &req),
					   UNIO_ERR_INVALID_PARAM);
		TEST_ASSERT(region_intact(e), "a refused %s changed the region", put ? "put" :
			    "get");
		for (size_t i = 0; i < sizeof(dst); i++)
			TEST_ASSERT(dst[i] == 0xee, "a refused get wrote byte %zu", i);
	}
	/* the same with good arguments: a put lands, a get reads it back */
	req = NULL;
	st = unio_put(ep, src, sizeof(src), at, e->rk, &good, &req);
	TEST_ASSERT_STATUS(api_op_wait(e->p.a, e->p.b, st, req), UNIO_OK);
	memcpy(e->shadow + 100, src, sizeof(src));
	TEST_ASSERT(region_intact(e), "the put");
	req = NULL;
	st = unio_get(ep, dst, sizeof(src), at, e->rk, &good, &req);
	TEST_ASSERT_STATUS(api_op_wait(e->p.a, e->p.b, st, req), UNIO_OK);
	TEST_ASSERT(memcmp(dst, src, sizeof(src)) == 0 && dst[sizeof(src)] == 0xee, "the get");
	unio_rkey_destroy(other);
	/* fence and flushes */
	TEST_ASSERT_STATUS(unio_worker_fence(NULL), UNIO_ERR_INVALID_PARAM);
	for (unsigned int i = 0; i < RTE_DIM(bad_params); i++) {
		TEST_ASSERT_STATUS(unio_ep_flush(ep, &bad_params[i], &req), UNIO_ERR_INVALID_PARAM);
		TEST_ASSERT_STATUS(unio_worker_flush(e->p.a, &bad_params[i], &req),
				   UNIO_ERR_INVALID_PARAM);
	}
	req = NULL;
	st = unio_ep_flush(ep, &good, &req);
	TEST_ASSERT_STATUS(api_op_wait(e->p.a, e->p.b, st, req), UNIO_OK);
	req = NULL;
	st = unio_worker_flush(e->p.a, &good, &req);
	TEST_ASSERT_STATUS(api_op_wait(e->p.a, e->p.b, st, req), UNIO_OK);
	return TEST_OK;
}

static int
env_open(struct args_env *e)
{
	struct unio_mem_attr attr;
	unio_status_t st;

	TEST_ASSERT_EQ(api_pair_open(&e->p, NULL, NULL), TEST_OK);
	e->ba = api_ep_to_worker(e->p.b, e->p.a, &st);
	TEST_ASSERT(e->ba != NULL && api_ep_connected(e->p.b, e->p.a, e->ba), "b -> a: %s",
		    unio_status_string(st));
	TEST_ASSERT_STATUS(unio_mem_map(e->p.b, &alloc_params, &e->memh), UNIO_OK);
	TEST_ASSERT_STATUS(unio_mem_query(e->memh, &attr), UNIO_OK);
	e->base = attr.address;
	test_fill(e->base, LEN, 4242);
	memcpy(e->shadow, e->base, LEN);
	TEST_ASSERT_STATUS(unio_rkey_pack(e->memh, &e->key, &e->key_len), UNIO_OK);
	TEST_ASSERT_STATUS(unio_ep_rkey_unpack(e->p.ep, e->key, e->key_len, &e->rk), UNIO_OK);
	return TEST_OK;
}

static void
env_close(struct args_env *e)
{
	unio_rkey_destroy(e->rk);
	unio_rkey_buffer_release(e->key);
	if (e->memh != NULL)
		unio_mem_unmap(e->p.b, e->memh);
	if (e->ba != NULL)
		unio_ep_close(e->ba, UNIO_EP_CLOSE_FORCE, NULL);
	api_pair_close(&e->p);
}

UNIO_TEST(am_rma_bad_args, fast)
{
	static struct args_env e;
	int rc;

	memset(&e, 0, sizeof(e));
	rc = env_open(&e);
	if (rc == TEST_OK)
		rc = am_handler_args(&e);
	if (rc == TEST_OK)
		rc = am_send_args(&e);
	if (rc == TEST_OK)
		rc = am_recv_args(&e);
	if (rc == TEST_OK)
		rc = mem_map_args(&e);
	if (rc == TEST_OK)
		rc = mem_handle_args(&e);
	if (rc == TEST_OK)
		rc = rma_args(&e);
	env_close(&e);
	return rc;
}
