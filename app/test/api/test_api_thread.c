/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Thread mode MULTI: two threads share one worker.  One sends, the other receives with
 * callbacks, both progress; every message arrives once, in order, with its payload.  Build
 * with -Db_sanitize=thread to have TSan check the locking.
 */

#include <pthread.h>

#include "api_common.h"
#include "unio_proto.h"

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

/*
 * MULTI over shm: two workers, each shared by threads.  A sender thread sends eager,
 * multi-fragment and rendezvous (pipelined and split) messages from a to b and waits for
 * each; a receiver thread posts each receive on b with a callback that checks the payload;
 * a third thread progresses both workers all along, cancels a receive, and creates an ep
 * from a to b, sends on it and closes it, five times.  Every message arrives once with its
 * payload; the canceled receive reports UNIO_ERR_CANCELED through its callback.
 */

#define SHM_MSGS 240
#define SHM_EPS  5

struct slot {
	uint64_t sum;            /* what the payload must sum to */
	int ok;                  /* written by the callback, before done */
	int done;                /* atomic */
	unio_status_t st;
};

struct shm_shared {
	unio_worker_t *a, *b;
	unio_ep_t *ep;
	int stop;                /* atomic: the helper thread ends */
	int failed;              /* atomic */
	struct slot slots[SHM_MSGS];
	struct slot canceled;
	uint8_t *rbuf[SHM_MSGS];
};

static size_t
shm_size(unsigned int i)
{
	static const size_t sz[] = { 8, 64, 3000, 20000, 100000, 300000 };

	return i % 50 == 49 ? 1 << 20 : sz[i % RTE_DIM(sz)];
}

static void
shm_fail(struct shm_shared *s, const char *what, unsigned int i, unio_status_t st)
{
	TEST_LOG("%s %u: %s", what, i, unio_status_string(st));
	__atomic_store_n(&s->failed, 1, __ATOMIC_RELAXED);
}

static void
on_recv(unio_request_t *req, unio_status_t st, const struct unio_recv_info *info, void *arg)
{
	struct slot *sl = arg;

	RTE_SET_USED(req);
	sl->st = st;
	sl->ok = st == UNIO_OK && info != NULL;
	__atomic_store_n(&sl->done, 1, __ATOMIC_RELEASE);
}

static void *
shm_sender(void *arg)
{
	struct shm_shared *s = arg;
	uint8_t *buf = malloc(1 << 20);

	for (unsigned int i = 0; buf != NULL && i < SHM_MSGS; i++) {
		unio_status_t st;

		test_fill(buf, shm_size(i), i);
		st = api_send(s->a, s->ep, buf, shm_size(i), 0x100000 + i, i % 7 == 3);
		if (st != UNIO_OK) {
			shm_fail(s, "send", i, st);
			break;
		}
	}
	free(buf);
	return NULL;
}

static void *
shm_receiver(void *arg)
{
	struct shm_shared *s = arg;

	for (unsigned int i = 0; i < SHM_MSGS; i++) {
		struct slot *sl = &s->slots[i];
		struct unio_request_param p = { .field_mask = UNIO_REQ_PARAM_CB |
							      UNIO_REQ_PARAM_USER_DATA,
						.cb = on_recv, .user_data = sl };
		unio_request_t *req = NULL;
		unio_status_t st;

		s->rbuf[i] = malloc(shm_size(i) + 1);
		if (s->rbuf[i] == NULL) {
			shm_fail(s, "malloc", i, UNIO_ERR_NO_MEMORY);
			break;
		}
		s->rbuf[i][shm_size(i)] = 0xee;
		st = unio_tag_recv(s->b, s->rbuf[i], shm_size(i), 0x100000 + i, UINT64_MAX, &p,
				   &req);
		if (st == UNIO_INPROGRESS) {
			while (!__atomic_load_n(&sl->done, __ATOMIC_ACQUIRE) &&
			       !__atomic_load_n(&s->failed, __ATOMIC_RELAXED))
				unio_worker_progress(s->b);
			unio_request_free(req);
			st = sl->ok ? sl->st : UNIO_ERR_PROTO;
		} else {
			sl->ok = st == UNIO_OK;   /* done at once: no callback */
		}
		if (st != UNIO_OK) {
			shm_fail(s, "receive", i, st);
			break;
		}
		sl->sum = test_checksum(s->rbuf[i], shm_size(i));
		if (s->rbuf[i][shm_size(i)] != 0xee)
			shm_fail(s, "receive past the buffer", i, UNIO_OK);
	}
	return NULL;
}

/* Progress both workers; cancel a receive; eps created, used and closed from here. */
static void *
shm_helper(void *arg)
{
	struct shm_shared *s = arg;
	struct unio_request_param p = { .field_mask = UNIO_REQ_PARAM_CB | UNIO_REQ_PARAM_USER_DATA,
					.cb = on_recv, .user_data = &s->canceled };
	unio_request_t *req = NULL;
	uint64_t v;
	unio_status_t st;
	uint8_t b8[8];

	st = unio_tag_recv(s->b, b8, sizeof(b8), 0xdead, UINT64_MAX, &p, &req);
	if (st != UNIO_INPROGRESS) {
		shm_fail(s, "receive to cancel", 0, st);
		return NULL;
	}
	for (unsigned int i = 0; i < 1000; i++) {
		unio_worker_progress(s->a);
		unio_worker_progress(s->b);
	}
	unio_request_cancel(s->b, req);
	while (!__atomic_load_n(&s->canceled.done, __ATOMIC_ACQUIRE))
		unio_worker_progress(s->b);
	unio_request_free(req);
	for (unsigned int j = 0; j < SHM_EPS; j++) {
		unio_ep_t *ep = api_ep_to_worker(s->a, s->b, &st);

		if (ep == NULL || !api_ep_connected(s->a, s->b, ep)) {
			shm_fail(s, "ep from another thread", j, st);
			return NULL;
		}
		v = 0xe000 + j;
		st = api_send(s->a, ep, &v, sizeof(v), 0xe00 + j, 0);
		if (st != UNIO_OK)
			shm_fail(s, "send on that ep", j, st);
		st = unio_ep_close(ep, UNIO_EP_CLOSE_FLUSH, NULL);
		if (st != UNIO_OK)
			shm_fail(s, "close", j, st);
	}
	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		unio_worker_progress(s->a);
		unio_worker_progress(s->b);
	}
	return NULL;
}

UNIO_TEST(api_thread_multi_shm, mp)
{
	static const char *const ovr[] = { "TLS", "shm,self", NULL };
	struct unio_worker_params wp = { .field_mask = UNIO_WORKER_PARAM_THREAD_MODE,
					 .thread_mode = UNIO_THREAD_MODE_MULTI };
	unio_context_t *ctx = api_ctx(ovr);
	struct shm_shared *s = calloc(1, sizeof(*s));
	struct unio_recv_info info;
	pthread_t t[3];
	unio_status_t st;
	uint64_t v;

	TEST_ASSERT(ctx != NULL && s != NULL, "context");
	s->a = unio_worker_create(ctx, &wp, &st);
	s->b = unio_worker_create(ctx, &wp, &st);
	TEST_ASSERT(s->a != NULL && s->b != NULL, "workers: %s", unio_status_string(st));
	s->ep = api_ep_to_worker(s->a, s->b, &st);
	TEST_ASSERT(s->ep != NULL, "ep: %s", unio_status_string(st));
	TEST_ASSERT(api_ep_connected(s->a, s->b, s->ep), "ep never connected");
	TEST_ASSERT(strcmp(s->ep->lane.iface->driver->name, "shm") == 0, "lane %s",
		    s->ep->lane.iface->driver->name);
	TEST_ASSERT(shm_size(5) >= s->ep->lane.rndv_thresh, "no rendezvous size");
	TEST_ASSERT_EQ(pthread_create(&t[0], NULL, shm_helper, s), 0);
	TEST_ASSERT_EQ(pthread_create(&t[1], NULL, shm_receiver, s), 0);
	TEST_ASSERT_EQ(pthread_create(&t[2], NULL, shm_sender, s), 0);
	pthread_join(t[2], NULL);
	pthread_join(t[1], NULL);
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
	pthread_join(t[0], NULL);
	TEST_ASSERT_EQ(s->failed, 0);
	TEST_ASSERT_STATUS(s->canceled.st, UNIO_ERR_CANCELED);
	for (unsigned int i = 0; i < SHM_MSGS; i++) {
		uint8_t *want = malloc(shm_size(i));

		TEST_ASSERT(want != NULL, "malloc");
		test_fill(want, shm_size(i), i);
		TEST_ASSERT(s->slots[i].ok && s->slots[i].sum == test_checksum(want, shm_size(i)),
			    "message %u of %zu bytes", i, shm_size(i));
		free(want);
		free(s->rbuf[i]);
	}
	for (unsigned int j = 0; j < SHM_EPS; j++) {
		TEST_ASSERT_STATUS(api_recv(s->b, &v, sizeof(v), 0xe00 + j,
					    UINT64_MAX, &info), UNIO_OK);
		TEST_ASSERT(v == 0xe000 + j && info.length == sizeof(v), "ep %u's message", j);
	}
	unio_ep_close(s->ep, UNIO_EP_CLOSE_FLUSH, NULL);
	unio_worker_destroy(s->b);
	unio_worker_destroy(s->a);
	unio_context_destroy(ctx);
	free(s);
	return TEST_OK;
}
