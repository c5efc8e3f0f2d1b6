/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Sleeping in epoll on the worker's event fd (UNIO_FEATURE_WAKEUP) with the shm and self
 * drivers: a receiver that sleeps between messages sent by another process at random
 * intervals gets every one (payloads verified) and really slept; arm reports BUSY while a
 * message waits; a send to oneself while armed makes the fd readable; a peer that dies
 * wakes a worker asleep with a request outstanding to it.
 */

#include <errno.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api_common.h"

#define WAKE_N        120
#define WAKE_TAG      0x3a3e000000000000ull
#define WAKE_SLEEP_MS 5000   /* no wakeup within this: the test fails */

static const char *const shm_only[] = { "TLS", "shm,self", NULL };

/* sizes cycle through short, bcopy, fragmented and rendezvous messages */
static const size_t wake_sizes[] = { 8, 0, 200, 3000, 20000, 300000 };

struct sleep_stats {
	unsigned int armed;      /**< arm returned UNIO_OK, then epoll_wait */
	unsigned int busy;       /**< arm returned UNIO_ERR_BUSY */
	unsigned int wakeups;    /**< epoll_wait returned the fd readable */
};

/*
 * Progress until *@p count reaches @p want; whenever a progress call finds nothing to do, arm
 * and sleep in epoll_wait on @p efd.  Returns 0, or -1 on an error or a sleep of
 * WAKE_SLEEP_MS.
 */
static int
sleep_until(unio_worker_t *w, int efd, volatile int *count, int want, struct sleep_stats *s)
{
	struct epoll_event ev;
	unio_status_t st;
	int n;

	while (*count < want) {
		if (unio_worker_progress(w) != 0 || *count >= want)
			continue;
		st = unio_worker_arm(w);
		if (st == UNIO_ERR_BUSY) {
			s->busy++;
			continue;
		}
		if (st != UNIO_OK) {
			TEST_LOG("arm: %s", unio_status_string(st));
			return -1;
		}
		s->armed++;
		n = epoll_wait(efd, &ev, 1, WAKE_SLEEP_MS);
		if (n == 0) {
			TEST_LOG("pid %d: no wakeup in %d ms (after %u sleeps)", (int)getpid(),
				 WAKE_SLEEP_MS, s->armed);
			return -1;
		}
		if (n < 0 && errno != EINTR)
			return -1;
		if (n > 0)
			s->wakeups++;
	}
	return 0;
}

static void
req_done(unio_request_t *req, unio_status_t st, const struct unio_recv_info *info, void *arg)
{
	RTE_SET_USED(req), RTE_SET_USED(info);
	if (st != UNIO_OK)
		TEST_LOG("request failed: %s", unio_status_string(st));
	__atomic_add_fetch((int *)arg, st == UNIO_OK ? 1 : 1000000, __ATOMIC_RELAXED);
}

/* ---- two processes: the sender at random intervals, the receiver asleep ---- */

UNIO_TEST_CHILD(api_wakeup_sender)
{
	unio_context_t *ctx = api_ctx(shm_only);
	unio_worker_t *w = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	unio_status_t st = UNIO_ERR_INVALID_PARAM;
	unio_ep_t *ep = w != NULL ? api_connect(w, atoi(argv[0]), NULL, NULL, &st) : NULL;
	struct sleep_stats s = { 0 };
	uint64_t seed = 0x5eed;
	uint8_t *buf;
	int efd, completed = 0, want = 0;

	RTE_SET_USED(argc);
	if (ep == NULL)
		return st == UNIO_ERR_UNREACHABLE ? 77 : 3;
	if (unio_worker_get_efd(w, &efd) != UNIO_OK)
		return 4;
	buf = malloc(300000);
	if (buf == NULL)
		return 5;
	for (unsigned int i = 0; i < WAKE_N; i++) {
		size_t len = wake_sizes[i % RTE_DIM(wake_sizes)];
		struct unio_request_param p = { .field_mask = UNIO_REQ_PARAM_CB |
							      UNIO_REQ_PARAM_USER_DATA,
						.cb = req_done, .user_data = &completed };
		volatile int *all = &completed;
		unio_request_t *req = NULL;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		usleep((useconds_t)(200 + (seed >> 33) % 2800));   /* 0.2 .. 3 ms, no progress */
		test_fill(buf, len, WAKE_TAG + i);
		st = unio_tag_send(ep, buf, len, WAKE_TAG + i, &p, &req);
		if (st != UNIO_OK && st != UNIO_INPROGRESS)
			return 6;
		if (st == UNIO_INPROGRESS) {
			/* a rendezvous completes once the receiver pulled it: sleep until then */
			want++;
			if (sleep_until(w, efd, all, want, &s) != 0)
				return 7;
			if (*all != want)
				return 8;
			unio_request_free(req);
		}
	}
	free(buf);
	TEST_LOG("sender: %u sleeps, %u wakeups, %u busy", s.armed, s.wakeups, s.busy);
	unio_ep_close(ep, UNIO_EP_CLOSE_FLUSH, NULL);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return 0;
}

UNIO_TEST(api_wakeup_shm_mp, mp)
{
	unio_context_t *ctx = api_ctx(shm_only);
	unio_worker_t *w = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	unio_request_t *req[WAKE_N];
	uint8_t *bufs[WAKE_N];
	struct sleep_stats s = { 0 };
	int port = test_free_port(), status = 0, efd, received = 0;
	char port_s[16];
	const char *args[] = { port_s, NULL };
	volatile int *got = &received;
	unio_listener_t *l;
	unio_ep_t *ep = NULL;
	pid_t pid;

	TEST_ASSERT(w != NULL, "worker");
	TEST_ASSERT_STATUS(unio_worker_get_efd(w, &efd), UNIO_OK);
	l = api_listen(w, port, &ep, NULL, NULL);
	TEST_ASSERT(l != NULL, "listener");
	for (unsigned int i = 0; i < WAKE_N; i++) {
		struct unio_request_param p = { .field_mask = UNIO_REQ_PARAM_CB |
							      UNIO_REQ_PARAM_USER_DATA,
						.cb = req_done, .user_data = &received };
		size_t len = wake_sizes[i % RTE_DIM(wake_sizes)];

		bufs[i] = malloc(len + 1);
		TEST_ASSERT(bufs[i] != NULL, "malloc");
		bufs[i][len] = 0xee;
		TEST_ASSERT_STATUS(unio_tag_recv(w, bufs[i], len, WAKE_TAG + i, UINT64_MAX, &p,
						 &req[i]), UNIO_INPROGRESS);
	}
	snprintf(port_s, sizeof(port_s), "%d", port);
	pid = test_spawn("api_wakeup_sender", args);
	/* the connection request wakes us too (the listener's sockets are in the epoll set),
	 * then each message */
	if (sleep_until(w, efd, got, WAKE_N, &s) != 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		TEST_ASSERT(0, "received %d of %d messages (sender exit %d; %u sleeps, %u "
			    "wakeups, %u busy)", *got, WAKE_N,
			    WIFEXITED(status) ? WEXITSTATUS(status) : -1, s.armed, s.wakeups,
			    s.busy);
	}
	TEST_ASSERT_EQ(received, WAKE_N);   /* and no request failed (each adds 1000000) */
	for (unsigned int i = 0; i < WAKE_N; i++) {
		size_t len = wake_sizes[i % RTE_DIM(wake_sizes)];
		uint8_t *want = malloc(len + 1);
		struct unio_recv_info info;

		TEST_ASSERT(want != NULL, "malloc");
		test_fill(want, len, WAKE_TAG + i);
		TEST_ASSERT_STATUS(unio_request_test(req[i], &info), UNIO_OK);
		TEST_ASSERT_EQ(info.tag, WAKE_TAG + i);
		TEST_ASSERT_EQ(info.length, len);
		TEST_ASSERT(test_checksum(want, len) == test_checksum(bufs[i], len) &&
			    bufs[i][len] == 0xee, "message %u (%zu bytes) differs", i, len);
		unio_request_free(req[i]);
		free(want);
		free(bufs[i]);
	}
	/* the sender flushes and closes: keep serving it asleep until it is gone */
	while (waitpid(pid, &status, WNOHANG) == 0) {
		struct epoll_event ev;

		if (unio_worker_progress(w) == 0 && unio_worker_arm(w) == UNIO_OK)
			epoll_wait(efd, &ev, 1, 10);
	}
	TEST_LOG("receiver: %u sleeps, %u wakeups, %u busy", s.armed, s.wakeups, s.busy);
	unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
	unio_listener_destroy(l);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	TEST_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "sender exit %d",
		    WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	/* 0.2-3 ms between messages: the receiver sleeps before nearly every one */
	TEST_ASSERT(s.armed >= WAKE_N / 2 && s.wakeups >= WAKE_N / 2,
		    "the receiver slept %u times, woke %u times for %d messages", s.armed,
		    s.wakeups, WAKE_N);
	return TEST_OK;
}

/* ---- one process: arm's answers, shm and self ---- */

/* Is @p efd readable within @p ms? */
static int
readable(int efd, int ms)
{
	struct epoll_event ev;

	return epoll_wait(efd, &ev, 1, ms) > 0;
}

static void
drain(unio_worker_t *a, unio_worker_t *b)
{
	while (unio_worker_progress(a) + unio_worker_progress(b) != 0)
		;
}

/* receive @p tag on @p w (already arrived or arriving), check the 8-byte value */
static int
recv_check(unio_worker_t *w, uint64_t tag, uint64_t want)
{
	struct unio_recv_info info;
	uint64_t v = 0;

	TEST_ASSERT_STATUS(api_recv(w, &v, sizeof(v), tag, UINT64_MAX, &info), UNIO_OK);
	TEST_ASSERT_EQ(v, want);
	return TEST_OK;
}

UNIO_TEST(api_wakeup_arm, fast)
{
	unio_context_t *ctx = api_ctx(shm_only);
	unio_worker_t *a = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	unio_worker_t *b = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	unio_request_t *req = NULL;
	unio_ep_t *ab, *bb;
	unio_status_t st;
	uint64_t v = 7;
	int efd, rc;

	TEST_ASSERT(a != NULL && b != NULL, "workers");
	TEST_ASSERT_STATUS(unio_worker_get_efd(b, &efd), UNIO_OK);
	ab = api_ep_to_worker(a, b, &st);
	TEST_ASSERT(ab != NULL, "ep a->b: %s", unio_status_string(st));
	bb = api_ep_to_worker(b, b, &st);
	TEST_ASSERT(bb != NULL, "ep b->b: %s", unio_status_string(st));
	/* connect both: one message each way through the background wireup */
	TEST_ASSERT_STATUS(unio_tag_recv(b, &v, sizeof(v), 1, UINT64_MAX, NULL, &req),
			   UNIO_INPROGRESS);
	st = unio_tag_send(ab, &v, sizeof(v), 1, NULL, NULL);
	TEST_ASSERT(st == UNIO_OK || st == UNIO_INPROGRESS, "send: %s", unio_status_string(st));
	while (unio_request_test(req, NULL) == UNIO_INPROGRESS)
		drain(a, b);
	unio_request_free(req);
	TEST_ASSERT_STATUS(api_send(b, bb, &v, sizeof(v), 2, 0), UNIO_OK);
	TEST_ASSERT_EQ(recv_check(b, 2, 7), TEST_OK);
	drain(a, b);

	/* shm: nothing waits, arm says OK and the fd stays quiet */
	TEST_ASSERT_STATUS(unio_worker_arm(b), UNIO_OK);
	TEST_ASSERT(!readable(efd, 20), "fd readable with nothing sent");
	/* a message from another worker over shm makes it readable */
	v = 0x1111;
	TEST_ASSERT_STATUS(unio_tag_send(ab, &v, sizeof(v), 3, NULL, NULL), UNIO_OK);
	TEST_ASSERT(readable(efd, 2000), "shm send did not wake the armed worker");
	TEST_ASSERT_EQ(recv_check(b, 3, 0x1111), TEST_OK);
	drain(a, b);
	/* the race: the message is in the ring before arm: BUSY, not a sleep */
	v = 0x2222;
	TEST_ASSERT_STATUS(unio_tag_send(ab, &v, sizeof(v), 4, NULL, NULL), UNIO_OK);
	TEST_ASSERT_STATUS(unio_worker_arm(b), UNIO_ERR_BUSY);
	TEST_ASSERT_EQ(recv_check(b, 4, 0x2222), TEST_OK);
	drain(a, b);
	/* a wakeup is consumed by the next arm: the fd is quiet again */
	TEST_ASSERT_STATUS(unio_worker_arm(b), UNIO_OK);
	TEST_ASSERT(!readable(efd, 20), "fd still readable after the next arm");

	/* self: a send to oneself while armed signals the fd */
	v = 0x3333;
	TEST_ASSERT_STATUS(unio_tag_send(bb, &v, sizeof(v), 5, NULL, NULL), UNIO_OK);
	TEST_ASSERT(readable(efd, 2000), "self send did not wake the armed worker");
	TEST_ASSERT_STATUS(unio_worker_arm(b), UNIO_ERR_BUSY);   /* queued, not delivered */
	TEST_ASSERT_EQ(recv_check(b, 5, 0x3333), TEST_OK);
	drain(a, b);
	TEST_ASSERT_STATUS(unio_worker_arm(b), UNIO_OK);
	TEST_ASSERT(!readable(efd, 20), "fd readable after self traffic was consumed");
	/* unio_worker_signal from anyone */
	TEST_ASSERT_STATUS(unio_worker_signal(b), UNIO_OK);
	TEST_ASSERT(readable(efd, 2000), "signal did not wake");
	TEST_ASSERT_STATUS(unio_worker_arm(b), UNIO_ERR_BUSY);
	rc = TEST_OK;
	unio_ep_close(ab, UNIO_EP_CLOSE_FORCE, NULL);
	unio_ep_close(bb, UNIO_EP_CLOSE_FORCE, NULL);
	unio_worker_destroy(a);
	unio_worker_destroy(b);
	unio_context_destroy(ctx);
	return rc;
}

/* ---- a peer that dies while the worker sleeps (no control connection to wake it) ---- */

#define ADDR_TAG  0x3a3f000000000001ull
#define HELLO_TAG 0x3a3f000000000002ull
#define READY_TAG 0x3a3f000000000003ull

static void
hex_encode(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

static size_t
hex_decode(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;
	unsigned int v;

	while (n < max && sscanf(s + 2 * n, "%2x", &v) == 1)
		out[n++] = (uint8_t)v;
	return n;
}

static unio_ep_t *
ep_from_addr(unio_worker_t *w, const void *addr, size_t len, unio_status_t *st)
{
	struct unio_ep_params p = { .field_mask = UNIO_EP_PARAM_WORKER_ADDR,
				    .worker_addr = addr, .worker_addr_len = len };

	return unio_ep_create(w, &p, st);
}

/* argv[0]: the parent's worker address in hex.  Sends its own address, answers one hello
 * with READY, then dies on its own a little later, while the parent sleeps. */
UNIO_TEST_CHILD(api_wakeup_dying_peer)
{
	unio_context_t *ctx = api_ctx(shm_only);
	unio_worker_t *w = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	static uint8_t paddr[8192];
	struct unio_recv_info info;
	unio_status_t st = UNIO_ERR_INVALID_PARAM;
	size_t plen, mlen;
	uint64_t hello = 0;
	unio_ep_t *ep;
	void *maddr;

	RTE_SET_USED(argc);
	plen = hex_decode(argv[0], paddr, sizeof(paddr));
	ep = w != NULL ? ep_from_addr(w, paddr, plen, &st) : NULL;
	if (ep == NULL || unio_worker_get_address(w, &maddr, &mlen) != UNIO_OK)
		return 3;
	if (api_send(w, ep, maddr, mlen, ADDR_TAG, 0) != UNIO_OK)
		return 4;
	if (api_recv(w, &hello, sizeof(hello), HELLO_TAG, UINT64_MAX, &info) != UNIO_OK)
		return 5;
	if (api_send(w, ep, &hello, sizeof(hello), READY_TAG, 0) != UNIO_OK)
		return 6;
	usleep(300 * 1000);   /* the parent is asleep by now, a rendezvous send outstanding */
	raise(SIGKILL);
	return 7;
}

UNIO_TEST(api_wakeup_peer_death_shm, mp)
{
	static const char *const ovr[] = { "TLS", "shm,self", "RNDV_THRESH", "64k",
					   "RNDV_SCHEME", "get", NULL };
	unio_context_t *ctx = api_ctx(ovr);
	unio_worker_t *w = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	static uint8_t caddr[8192], big[256 * 1024];
	static char hex[2 * 8192 + 1];
	struct sleep_stats s = { 0 };
	unio_request_t *r1 = NULL, *r2 = NULL, *big_req = NULL;
	struct unio_request_param cp = { .field_mask = UNIO_REQ_PARAM_CB |
						       UNIO_REQ_PARAM_USER_DATA,
					 .cb = req_done };
	const char *args[] = { hex, NULL };
	int efd, got = 0, sent = 0, status;
	unsigned int failed_before;
	struct unio_recv_info info;
	struct timespec t0, t1;
	uint64_t hello = 0x4e110, ready = 0;
	unio_status_t st;
	unio_ep_t *ep;
	void *maddr;
	size_t mlen;
	double ms;
	pid_t pid;

	TEST_ASSERT(w != NULL, "worker");
	TEST_ASSERT_STATUS(unio_worker_get_efd(w, &efd), UNIO_OK);
	TEST_ASSERT_STATUS(unio_worker_get_address(w, &maddr, &mlen), UNIO_OK);
	TEST_ASSERT(mlen < sizeof(caddr), "address of %zu bytes", mlen);
	hex_encode(maddr, mlen, hex);
	unio_worker_release_address(w, maddr);
	cp.user_data = &got;
	TEST_ASSERT_STATUS(unio_tag_recv(w, caddr, sizeof(caddr), ADDR_TAG, UINT64_MAX, &cp, &r1),
			   UNIO_INPROGRESS);
	pid = test_spawn("api_wakeup_dying_peer", args);
	TEST_ASSERT(sleep_until(w, efd, &got, 1, &s) == 0, "the child's address never came");
	TEST_ASSERT_STATUS(unio_request_test(r1, &info), UNIO_OK);
	unio_request_free(r1);
	ep = ep_from_addr(w, caddr, info.length, &st);
	TEST_ASSERT(ep != NULL, "ep to the child: %s", unio_status_string(st));
	TEST_ASSERT_STATUS(unio_tag_recv(w, &ready, sizeof(ready), READY_TAG, UINT64_MAX, &cp, &r2),
			   UNIO_INPROGRESS);
	st = unio_tag_send(ep, &hello, sizeof(hello), HELLO_TAG, NULL, NULL);
	TEST_ASSERT(st == UNIO_OK || st == UNIO_INPROGRESS, "hello: %s", unio_status_string(st));
	TEST_ASSERT(sleep_until(w, efd, &got, 2, &s) == 0, "READY never came");
	TEST_ASSERT_EQ(ready, hello);
	unio_request_free(r2);
	/* a rendezvous the child never pulls; then sleep until it fails */
	cp.user_data = &sent;
	TEST_ASSERT_STATUS(unio_tag_send(ep, big, sizeof(big), 9, &cp, &big_req), UNIO_INPROGRESS);
	failed_before = s.armed;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	TEST_ASSERT(sleep_until(w, efd, &sent, 1, &s) == 0,
		    "asleep with a dead peer: not woken (%u sleeps)", s.armed - failed_before);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	TEST_ASSERT(UNIO_IS_ERR(unio_request_test(big_req, NULL)), "the send to a dead peer: %s",
		    unio_status_string(unio_request_test(big_req, NULL)));
	TEST_ASSERT(s.armed > failed_before, "never slept while the peer lived");
	TEST_ASSERT(ms < 2000, "the death took %.0f ms to notice", ms);
	TEST_LOG("dead peer noticed %.0f ms after the send, %u sleeps", ms,
		 s.armed - failed_before);
	unio_request_free(big_req);
	waitpid(pid, &status, 0);
	TEST_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "child status %#x",
		    status);
	unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return TEST_OK;
}
