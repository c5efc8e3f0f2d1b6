/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * unio_request_test_free(): a wait loop's test and free in one call.  Over shm (two workers)
 * and on one worker over self in MULTI mode (its locked path): a receive that still runs
 * answers UNIO_INPROGRESS and stays valid (tested again, then completed); a completed one
 * answers its status with the tag and length in info, its payload in the buffer, and is
 * released (the next request the worker hands out is the same one, the pool being a stack);
 * a truncated receive answers UNIO_ERR_MESSAGE_TRUNCATED and is released too; a send request
 * leaves info alone; a NULL request is refused.
 */

#include <string.h>

#include "api_common.h"

#define TF_TAG 0x7f5e000000000021ull

/* progress @p a and @p b until @p req is no longer running; its final status */
static unio_status_t
tf_wait(unio_worker_t *a, unio_worker_t *b, unio_request_t *req, struct unio_recv_info *info)
{
	unio_status_t st = UNIO_INPROGRESS;

	for (long i = 0; i < 10000000 && st == UNIO_INPROGRESS; i++) {
		unio_worker_progress(a);
		if (b != a)
			unio_worker_progress(b);
		st = unio_request_test_free(req, info);
	}
	return st;
}

/* a receive of @p rlen bytes into @p rbuf, on @p b; its request */
static unio_request_t *
tf_post(unio_worker_t *b, void *rbuf, size_t rlen)
{
	unio_request_t *req = NULL;

	if (unio_tag_recv(b, rbuf, rlen, TF_TAG, UINT64_MAX, NULL, &req) != UNIO_INPROGRESS)
		return NULL;
	return req;
}

static int
tf_run(unio_worker_t *a, unio_worker_t *b, unio_ep_t *ep)
{
	const struct unio_request_param nimm = { .field_mask = UNIO_REQ_PARAM_FLAGS,
						 .flags = UNIO_REQ_FLAG_NO_IMM_COMPLETION };
	uint64_t v = 0x1122334455667788ull, got = 0;
	struct unio_recv_info info;
	unio_request_t *req, *again, *sreq = NULL;
	uint8_t small[4];
	unio_status_t st;

	TEST_ASSERT_STATUS(unio_request_test_free(NULL, &info), UNIO_ERR_INVALID_PARAM);

	/* running: UNIO_INPROGRESS, the request still valid */
	req = tf_post(b, &got, sizeof(got));
	TEST_ASSERT(req != NULL, "posting a receive");
	for (int k = 0; k < 3; k++) {
		unio_worker_progress(b);
		TEST_ASSERT_STATUS(unio_request_test_free(req, &info), UNIO_INPROGRESS);
	}
	TEST_ASSERT_STATUS(unio_request_test(req, NULL), UNIO_INPROGRESS);

	/* completed: status, info, payload; released (handed out again next) */
	TEST_ASSERT_STATUS(unio_tag_send(ep, &v, sizeof(v), TF_TAG, NULL, NULL), UNIO_OK);
	info = (struct unio_recv_info){ 0, 0 };
	TEST_ASSERT_STATUS(tf_wait(a, b, req, &info), UNIO_OK);
	TEST_ASSERT_EQ(info.tag, TF_TAG);
	TEST_ASSERT_EQ(info.length, sizeof(v));
	TEST_ASSERT_EQ(got, v);
	TEST_ASSERT_STATUS(unio_request_test_free(req, &info), UNIO_ERR_INVALID_PARAM);
	again = tf_post(b, small, sizeof(small));
	TEST_ASSERT(again == req, "the completed request was not released");

	/* truncated: its error, the length it had, released as well */
	v++;
	TEST_ASSERT_STATUS(unio_tag_send(ep, &v, sizeof(v), TF_TAG, NULL, NULL), UNIO_OK);
	info = (struct unio_recv_info){ 0, 0 };
	TEST_ASSERT_STATUS(tf_wait(a, b, again, &info), UNIO_ERR_MESSAGE_TRUNCATED);
	TEST_ASSERT_EQ(info.tag, TF_TAG);
	TEST_ASSERT_EQ(info.length, sizeof(v));
	req = tf_post(b, &got, sizeof(got));
	TEST_ASSERT(req == again, "the truncated receive's request was not released");

	/* a send request: info untouched; then the posted receive gets that message */
	v++;
	st = unio_tag_send(ep, &v, sizeof(v), TF_TAG, &nimm, &sreq);
	TEST_ASSERT(sreq != NULL && !UNIO_IS_ERR(st), "send with a request: %s",
		    unio_status_string(st));
	info = (struct unio_recv_info){ 7, 9 };
	TEST_ASSERT_STATUS(tf_wait(a, b, sreq, &info), UNIO_OK);
	TEST_ASSERT(info.tag == 7 && info.length == 9, "a send request wrote info");
	TEST_ASSERT_STATUS(tf_wait(a, b, req, &info), UNIO_OK);
	TEST_ASSERT(got == v && info.length == sizeof(v), "third message");
	return TEST_OK;
}

UNIO_TEST(api_request_test_free, fast)
{
	static const char *const ovr[] = { "TLS", "shm,self", NULL };
	static const char *const self_ovr[] = { "TLS", "self", NULL };
	struct unio_worker_params wp = { .field_mask = UNIO_WORKER_PARAM_THREAD_MODE,
					 .thread_mode = UNIO_THREAD_MODE_MULTI };
	struct api_pair p;
	unio_context_t *ctx;
	unio_worker_t *w;
	unio_ep_t *ep;
	unio_status_t st;
	int rc = api_pair_open(&p, ovr, "shm");

	if (rc == TEST_OK)
		rc = tf_run(p.a, p.b, p.ep);
	api_pair_close(&p);
	if (rc != TEST_OK)
		return rc;

	/* MULTI mode: the locked path */
	ctx = api_ctx(self_ovr);
	TEST_ASSERT(ctx != NULL, "context");
	w = unio_worker_create(ctx, &wp, &st);
	TEST_ASSERT(w != NULL, "worker: %s", unio_status_string(st));
	ep = api_ep_to_worker(w, w, &st);
	TEST_ASSERT(ep != NULL && api_ep_connected(w, w, ep), "ep: %s", unio_status_string(st));
	rc = tf_run(w, w, ep);
	unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return rc;
}
