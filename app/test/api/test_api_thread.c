/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Thread mode MULTI: two threads share one worker.  One sends, the other receives with
 * callbacks, both progress; every message arrives once, in order, with its payload.  Build
 * with -Db_sanitize=thread to have TSan check the locking.
 */

#include <pthread.h>

#include "api_common.h"

#define N_MSG 20000

struct shared {
	unio_worker_t *w;
	unio_ep_t *ep;
	volatile int sender_done;
	int failed;
	uint32_t received;
};

static void *
sender(void *arg)
{
	struct shared *s = arg;
	uint64_t payload[4];

	for (uint32_t i = 0; i < N_MSG; i++) {
		unio_status_t st;

		for (unsigned int k = 0; k < RTE_DIM(payload); k++)
			payload[k] = (uint64_t)i * 4 + k;
		st = api_send(s->w, s->ep, payload, (i % 3 + 1) * 8, 0x100 + (i % 7), 0);
		if (st != UNIO_OK) {
			s->failed = 1;
			break;
		}
	}
	__atomic_store_n(&s->sender_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

UNIO_TEST(api_thread_multi, mp)
{
	static const char *const ovr[] = { "TLS", "self", NULL };
	struct unio_worker_params wp = { .field_mask = UNIO_WORKER_PARAM_THREAD_MODE,
					 .thread_mode = UNIO_THREAD_MODE_MULTI };
	unio_context_t *ctx = api_ctx(ovr);
	struct shared s = { 0 };
	struct unio_recv_info info;
	uint64_t payload[4];
	unio_status_t st;
	pthread_t t;

	TEST_ASSERT(ctx != NULL, "context");
	s.w = unio_worker_create(ctx, &wp, &st);
	TEST_ASSERT(s.w != NULL, "worker: %s", unio_status_string(st));
	s.ep = api_ep_to_worker(s.w, s.w, &st);
	TEST_ASSERT(s.ep != NULL, "ep: %s", unio_status_string(st));
	TEST_ASSERT_EQ(pthread_create(&t, NULL, sender, &s), 0);
	for (uint32_t i = 0; i < N_MSG; i++) {
		memset(payload, 0, sizeof(payload));
		st = api_recv(s.w, payload, sizeof(payload), 0x100, ~(uint64_t)0xf, &info);
		if (st != UNIO_OK || info.tag != 0x100 + (i % 7) ||
		    info.length != (i % 3 + 1) * 8 || payload[0] != (uint64_t)i * 4) {
			TEST_LOG("message %u: %s, tag %#" PRIx64 ", %zu bytes, payload %" PRIu64, i,
				 unio_status_string(st), info.tag, info.length, payload[0]);
			s.failed = 1;
			break;
		}
		s.received++;
	}
	pthread_join(t, NULL);
	unio_ep_close(s.ep, UNIO_EP_CLOSE_FLUSH, NULL);
	unio_worker_destroy(s.w);
	unio_context_destroy(ctx);
	TEST_ASSERT_EQ(s.failed, 0);
	TEST_ASSERT_EQ(s.received, N_MSG);
	return TEST_OK;
}
