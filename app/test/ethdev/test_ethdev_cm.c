/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connect by socket address over the ethdev driver, with the threads and callbacks of a real
 * application: a listener's handler runs in the thread that progresses the listener's worker
 * (never in the thread of another worker's dial), and a dial from a callback of the
 * worker's own progress returns UNIO_ERR_BUSY.  One process: a memif server port (no client)
 * with two queue pairs, one worker per queue (UNIO_ETHDEV_PORT and UNIO_ETHDEV_PORT + 1),
 * whose frames the driver hands over inside the port.
 *
 * And a kernel listener whose port only looks like the driver's (UNIO_ETHDEV_PORT, unio-perf's
 * default): an ethdev worker's dial, answered by no Unio iface, falls back to kernel TCP.
 *
 * And connection requests beyond UNIO_CONN_BACKLOG: answered at once, not dropped.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_common.h>

#include "../api/api_common.h"
#include "unio_api_priv.h"
#include "unio_env.h"
#include "unio_proto.h"
#include "unio_test.h"
#include "unio_tl_ethdev.h"

#define CM_IP     "10.79.1.1"
#define CM_DIALS  8

struct cm_threads {
	unio_worker_t *a, *b;           /* b: port 13337, progressed by its own thread */
	unio_listener_t *la, *lb, *lk;  /* lk: b's listener on a kernel socket */
	pthread_t owner;
	struct sockaddr_in addr_a, addr_b, addr_k;
	int stop, phase;                /* phase 1: b dials a; 2: that dial returned */
	unsigned int in_owner, in_other;
	unio_status_t nested_st, b_dial_st;
	unsigned int n_nested;
};

static unio_ep_t *
dial(unio_worker_t *w, const struct sockaddr_in *a, unio_status_t *st)
{
	struct unio_ep_params p = { .field_mask = UNIO_EP_PARAM_SOCKADDR,
				    .sockaddr = (const struct sockaddr *)a, .addrlen = sizeof(*a) };

	return unio_ep_create(w, &p, st);
}

/* b's listener: counts in which thread it runs, rejects */
static void
on_conn_b(unio_conn_request_t *cr, void *arg)
{
	struct cm_threads *s = arg;

	if (pthread_equal(pthread_self(), s->owner))
		__atomic_fetch_add(&s->in_owner, 1, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(&s->in_other, 1, __ATOMIC_RELAXED);
	unio_listener_reject(cr->listener, cr);
}

/* a's listener, called from a's progress: a dial from here cannot wait */
static void
on_conn_a(unio_conn_request_t *cr, void *arg)
{
	struct cm_threads *s = arg;
	unio_ep_t *ep = dial(s->a, &s->addr_b, &s->nested_st);

	s->n_nested++;
	if (ep != NULL)
		unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
	unio_listener_reject(s->la, cr);
}

static void *
owner_main(void *arg)
{
	struct cm_threads *s = arg;

	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		unio_worker_progress(s->b);
		if (__atomic_load_n(&s->phase, __ATOMIC_ACQUIRE) == 1) {
			unio_ep_t *ep = dial(s->b, &s->addr_a, &s->b_dial_st);

			if (ep != NULL)
				unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
			__atomic_store_n(&s->phase, 2, __ATOMIC_RELEASE);
		}
		usleep(1000);   /* leaves the other thread every chance to take b's work */
	}
	return NULL;
}

static unio_listener_t *
listen_on(unio_worker_t *w, struct sockaddr_in *a, int port, unio_conn_handler_t h, void *arg)
{
	struct unio_listener_params lp = {
		.field_mask = UNIO_LISTENER_PARAM_SOCKADDR | UNIO_LISTENER_PARAM_HANDLER,
		.sockaddr = (struct sockaddr *)a, .addrlen = sizeof(*a), .conn_handler = h,
		.arg = arg,
	};
	unio_listener_t *l;
	unio_status_t st;

	*a = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	a->sin_addr.s_addr = inet_addr(CM_IP);
	l = unio_listener_create(w, &lp, &st);
	if (l == NULL)
		TEST_LOG("listen on %s:%d: %s", CM_IP, port, unio_status_string(st));
	else if (l->fd >= 0)
		TEST_LOG("the listener on %s:%d has a kernel socket", CM_IP, port);
	return l != NULL && l->fd < 0 ? l : NULL;
}

/* CM_DIALS dials from a to @p to, each rejected: UNIO_ERR_REJECTED, else the first error */
static unio_status_t
dials(struct cm_threads *s, const struct sockaddr_in *to)
{
	unio_status_t st = UNIO_ERR_REJECTED;

	for (int i = 0; i < CM_DIALS && st == UNIO_ERR_REJECTED; i++) {
		unio_ep_t *ep = dial(s->a, to, &st);

		if (ep != NULL)
			unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
		if (st != UNIO_ERR_REJECTED)
			TEST_LOG("dial %d: %s", i, unio_status_string(st));
	}
	return st;
}

static int
cm_threads_run(struct cm_threads *s)
{
	struct unio_listener_params lp = {
		.field_mask = UNIO_LISTENER_PARAM_SOCKADDR | UNIO_LISTENER_PARAM_HANDLER,
		.sockaddr = (struct sockaddr *)&s->addr_k, .addrlen = sizeof(s->addr_k),
		.conn_handler = on_conn_b, .arg = s,
	};
	unio_status_t st, st_k;
	pthread_t t;

	s->lb = listen_on(s->b, &s->addr_b, 13337, on_conn_b, s);
	s->la = listen_on(s->a, &s->addr_a, 13338, on_conn_a, s);
	TEST_ASSERT(s->lb != NULL && s->la != NULL, "listeners on the ethdev ifaces");
	s->addr_k = (struct sockaddr_in){ .sin_family = AF_INET,
					  .sin_port = htons((uint16_t)test_free_port()),
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	s->lk = unio_listener_create(s->b, &lp, &st);
	TEST_ASSERT(s->lk != NULL, "kernel listener: %s", unio_status_string(st));
	TEST_ASSERT_EQ(pthread_create(&t, NULL, owner_main, s), 0);
	s->owner = t;
	st = dials(s, &s->addr_b);
	st_k = dials(s, &s->addr_k);
	/* the REJECTs are acked: b's eps that carried them go (one connection per iface pair) */
	for (double end = test_now_s() + 0.3; test_now_s() < end;)
		unio_worker_progress(s->a);
	__atomic_store_n(&s->phase, 1, __ATOMIC_RELEASE);
	for (double end = test_now_s() + 30; __atomic_load_n(&s->phase, __ATOMIC_ACQUIRE) != 2 &&
	     test_now_s() < end;)
		unio_worker_progress(s->a);
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	TEST_LOG("b's handler ran %u times in b's thread, %u times in a's; a dial from a's "
		 "handler: %s; b's dial: %s", s->in_owner, s->in_other,
		 unio_status_string(s->nested_st), unio_status_string(s->b_dial_st));
	TEST_ASSERT_STATUS(st, UNIO_ERR_REJECTED);
	TEST_ASSERT_STATUS(st_k, UNIO_ERR_REJECTED);
	TEST_ASSERT(s->in_other == 0 && s->in_owner == 2 * CM_DIALS,
		    "b's handler ran %u times in another worker's thread, %u in its own",
		    s->in_other, s->in_owner);
	TEST_ASSERT_EQ(s->n_nested, 1);
	TEST_ASSERT_STATUS(s->nested_st, UNIO_ERR_BUSY);
	TEST_ASSERT_STATUS(s->b_dial_st, UNIO_ERR_REJECTED);
	return TEST_OK;
}

/* argv: vdev */
UNIO_TEST_CHILD(ethdev_cm_threads_child)
{
	static struct cm_threads s;
	struct unio_context_params cp = { .field_mask = UNIO_CONTEXT_PARAM_FEATURES,
					  .features = UNIO_FEATURE_TAG };
	char vdev_arg[256];
	char *eal[] = { (char *)"unio-test", (char *)"-l", (char *)"0", vdev_arg,
			(char *)"--" };
	unio_context_t *ctx;
	unio_status_t st;
	int rc;

	TEST_ASSERT(argc == 1, "argc %d", argc);
	snprintf(vdev_arg, sizeof(vdev_arg), "--vdev=%s", argv[0]);
	setenv("UNIO_TLS", "ethdev,self", 1);
	setenv("UNIO_ETHDEV_IP", CM_IP, 1);
	setenv("UNIO_ETHDEV_QUEUES", "2", 1);
	setenv("UNIO_ETHDEV_PORT", "13337", 1);
	TEST_ASSERT(unio_env_init((int)RTE_DIM(eal), eal) >= 0, "EAL init failed");
	ctx = unio_context_create(&cp, &st);
	TEST_ASSERT(ctx != NULL, "context: %s", unio_status_string(st));
	s.b = unio_worker_create(ctx, NULL, &st);    /* queue 0: 13337 */
	TEST_ASSERT(s.b != NULL, "worker b: %s", unio_status_string(st));
	s.a = unio_worker_create(ctx, NULL, &st);    /* queue 1: 13338 */
	TEST_ASSERT(s.a != NULL, "worker a: %s", unio_status_string(st));
	rc = cm_threads_run(&s);
	unio_listener_destroy(s.lk);
	unio_listener_destroy(s.la);
	unio_listener_destroy(s.lb);
	unio_worker_destroy(s.a);
	unio_worker_destroy(s.b);
	unio_context_destroy(ctx);
	return rc;
}

/*
 * Run test child @p child with a memif server vdev (socket /tmp/unio-memif-@p tag-PID, MAC
 * 02:00:00:00:05:@p mac) as its argument; the socket is removed afterwards.
 */
static int
memif_child(const char *tag, const char *mac, const char *child, int timeout_ms)
{
	char vdev[160], sock[64];
	const char *args[] = { vdev, NULL };
	int rc;

	snprintf(sock, sizeof(sock), "/tmp/unio-memif-%s-%d.sock", tag, getpid());
	snprintf(vdev, sizeof(vdev), "net_memif0,role=server,socket=%s,mac=02:00:00:00:05:%s",
		 sock, mac);
	rc = test_wait(test_spawn(child, args), timeout_ms);
	unlink(sock);
	TEST_ASSERT(rc == 0, "child exit %d", rc);
	return TEST_OK;
}

/*
 * Worker a dials b's listener on the ethdev iface, then b's listener on a kernel socket,
 * CM_DIALS times each (rejected) while b's own thread progresses b: the handler runs in b's
 * thread every time.  Then b dials a's listener, whose handler
 * (in a's progress) dials b: UNIO_ERR_BUSY, and b's dial is rejected.
 */
UNIO_TEST(ethdev_api_cm_threads, mp)
{
	return memif_child("cmt", "0a", "ethdev_cm_threads_child", 120000);
}

/* ---- connection requests beyond UNIO_CONN_BACKLOG ---- */

#define BL_CLIENTS 6
#define BL_BACKLOG 2

struct cm_backlog {
	unio_worker_t *srv;
	unio_worker_t *cli[BL_CLIENTS];
	struct sockaddr_in addr;
	int go;
	unsigned int n_done, n_handled;
	unio_status_t st[BL_CLIENTS];
	double took[BL_CLIENTS];
};

struct bl_client {
	struct cm_backlog *s;
	unsigned int i;
};

static void
bl_on_conn(unio_conn_request_t *cr, void *arg)
{
	struct cm_backlog *s = arg;

	s->n_handled++;
	unio_listener_reject(cr->listener, cr);
}

/* one client worker in its own thread: dials the server once */
static void *
bl_client_main(void *arg)
{
	struct bl_client *c = arg;
	struct cm_backlog *s = c->s;
	unio_ep_t *ep;
	double t0;

	while (!__atomic_load_n(&s->go, __ATOMIC_ACQUIRE))
		usleep(100);
	t0 = test_now_s();
	ep = dial(s->cli[c->i], &s->addr, &s->st[c->i]);
	s->took[c->i] = test_now_s() - t0;
	if (ep != NULL)
		unio_ep_close(ep, UNIO_EP_CLOSE_FORCE, NULL);
	__atomic_fetch_add(&s->n_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * BL_CLIENTS workers dial the server's listener at once while the server does not progress:
 * its first progress call receives every HELLO, the first BL_BACKLOG reach the handler
 * (rejected), each of the others is refused at once: UNIO_ERR_NO_RESOURCE, well before the
 * dial's timeout (UNIO_PEER_TIMEOUT 20 s), counted exactly in conn_refused_busy.
 */
static int
cm_backlog_run(struct cm_backlog *s)
{
	struct bl_client c[BL_CLIENTS];
	pthread_t t[BL_CLIENTS];
	struct unio_tl_ethdev_stats st;
	struct unio_tl_iface *ifc = api_worker_iface(s->srv, "ethdev", NULL);
	unio_listener_t *l = listen_on(s->srv, &s->addr, 13337, bl_on_conn, s);
	unsigned int n_rej = 0, n_busy = 0;
	double end;

	TEST_ASSERT(l != NULL && ifc != NULL, "listener on the ethdev iface");
	for (unsigned int i = 0; i < BL_CLIENTS; i++) {
		c[i] = (struct bl_client){ .s = s, .i = i };
		TEST_ASSERT_EQ(pthread_create(&t[i], NULL, bl_client_main, &c[i]), 0);
	}
	__atomic_store_n(&s->go, 1, __ATOMIC_RELEASE);
	usleep(1000000);    /* every HELLO waits in the server's queue meanwhile */
	for (end = test_now_s() + 30;
	     __atomic_load_n(&s->n_done, __ATOMIC_ACQUIRE) < BL_CLIENTS && test_now_s() < end;)
		unio_worker_progress(s->srv);
	for (unsigned int i = 0; i < BL_CLIENTS; i++)
		pthread_join(t[i], NULL);
	for (end = test_now_s() + 0.3; test_now_s() < end;)      /* the refusals are acked */
		unio_worker_progress(s->srv);
	TEST_ASSERT_STATUS(unio_tl_ethdev_stats(ifc, &st), UNIO_OK);
	for (unsigned int i = 0; i < BL_CLIENTS; i++) {
		TEST_LOG("client %u: %s after %.3f s", i, unio_status_string(s->st[i]), s->took[i]);
		n_rej += s->st[i] == UNIO_ERR_REJECTED;
		n_busy += s->st[i] == UNIO_ERR_NO_RESOURCE;
		TEST_ASSERT(s->took[i] < 5.0, "client %u waited %.1f s", i, s->took[i]);
	}
	TEST_LOG("server: %u requests handled; refused busy %" PRIu64 ", no iface %" PRIu64
		 ", no ep %" PRIu64 ", unanswered %" PRIu64, s->n_handled, st.conn_refused_busy,
		 st.conn_refused_no_iface, st.conn_refused_no_ep, st.conn_unanswered);
	unio_listener_destroy(l);
	TEST_ASSERT_EQ(s->n_handled, BL_BACKLOG);
	TEST_ASSERT_EQ(n_rej, BL_BACKLOG);
	TEST_ASSERT_EQ(n_busy, BL_CLIENTS - BL_BACKLOG);
	TEST_ASSERT_EQ(st.conn_refused_busy, BL_CLIENTS - BL_BACKLOG);
	TEST_ASSERT_EQ(st.conn_refused_no_iface, 0);
	TEST_ASSERT_EQ(st.conn_refused_no_ep, 0);
	TEST_ASSERT_EQ(st.conn_unanswered, 0);
	return TEST_OK;
}

/* argv: vdev */
UNIO_TEST_CHILD(ethdev_cm_backlog_child)
{
	static struct cm_backlog s;
	struct unio_context_params cp = { .field_mask = UNIO_CONTEXT_PARAM_FEATURES,
					  .features = UNIO_FEATURE_TAG };
	char vdev_arg[256], queues[8];
	char *eal[] = { (char *)"unio-test", (char *)"-l", (char *)"0", vdev_arg,
			(char *)"--" };
	unio_context_t *ctx;
	unio_status_t st;
	int rc;

	TEST_ASSERT(argc == 1, "argc %d", argc);
	snprintf(vdev_arg, sizeof(vdev_arg), "--vdev=%s", argv[0]);
	snprintf(queues, sizeof(queues), "%d", BL_CLIENTS + 1);
	setenv("UNIO_TLS", "ethdev,self", 1);
	setenv("UNIO_ETHDEV_IP", CM_IP, 1);
	setenv("UNIO_ETHDEV_QUEUES", queues, 1);
	setenv("UNIO_ETHDEV_PORT", "13337", 1);
	setenv("UNIO_ETHDEV_RETRIES", "40", 1);     /* the HELLOs wait a second unacked */
	setenv("UNIO_CONN_BACKLOG", RTE_STR(BL_BACKLOG), 1);
	setenv("UNIO_PEER_TIMEOUT", "20s", 1);
	TEST_ASSERT(unio_env_init((int)RTE_DIM(eal), eal) >= 0, "EAL init failed");
	ctx = unio_context_create(&cp, &st);
	TEST_ASSERT(ctx != NULL, "context: %s", unio_status_string(st));
	s.srv = unio_worker_create(ctx, NULL, &st);    /* queue 0: 13337 */
	TEST_ASSERT(s.srv != NULL, "server worker: %s", unio_status_string(st));
	for (unsigned int i = 0; i < BL_CLIENTS; i++) {
		struct unio_worker_params wp = { .field_mask = UNIO_WORKER_PARAM_THREAD_MODE,
						 .thread_mode = UNIO_THREAD_MODE_MULTI };

		s.cli[i] = unio_worker_create(ctx, &wp, &st);
		TEST_ASSERT(s.cli[i] != NULL, "client worker %u: %s", i, unio_status_string(st));
	}
	rc = cm_backlog_run(&s);
	for (unsigned int i = 0; i < BL_CLIENTS; i++)
		unio_worker_destroy(s.cli[i]);
	unio_worker_destroy(s.srv);
	unio_context_destroy(ctx);
	return rc;
}

/*
 * More connection requests than UNIO_CONN_BACKLOG at once: each one beyond it gets its answer
 * (REFUSED, busy) at once and its dial fails with UNIO_ERR_NO_RESOURCE instead of waiting for
 * its timeout; the server counts them (conn_refused_busy), exactly.
 */
UNIO_TEST(ethdev_api_cm_backlog, mp)
{
	return memif_child("cmb", "0d", "ethdev_cm_backlog_child", 120000);
}

/* ---- a kernel listener at UNIO_ETHDEV_PORT, dialled by an ethdev worker ---- */

#define KP_TAG   0x6b70000000000001ull
#define KP_BYTES 65536

static void
kp_on_conn(unio_conn_request_t *cr, void *arg)
{
	struct unio_ep_params p = { .field_mask = UNIO_EP_PARAM_CONN_REQUEST, .conn_request = cr };
	unio_ep_t **slot = arg;
	unio_status_t st;

	*slot = unio_ep_create(cr->listener->worker, &p, &st);
	if (*slot == NULL)
		TEST_LOG("accept: %s", unio_status_string(st));
}

/* the server (tcp only): a kernel listener on 10.77.0.2:13337; checks what the client sent */
static int
kp_server(unio_worker_t *w, const char *ready)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(13337) };
	unio_ep_t *ep = NULL;
	struct unio_listener_params lp = {
		.field_mask = UNIO_LISTENER_PARAM_SOCKADDR | UNIO_LISTENER_PARAM_HANDLER,
		.sockaddr = (struct sockaddr *)&a, .addrlen = sizeof(a),
		.conn_handler = kp_on_conn, .arg = &ep,
	};
	static uint8_t buf[KP_BYTES];
	struct unio_recv_info info;
	unio_listener_t *l;
	uint64_t sum;
	unio_status_t st;

	a.sin_addr.s_addr = inet_addr("10.77.0.2");
	l = unio_listener_create(w, &lp, &st);
	TEST_ASSERT(l != NULL && l->fd >= 0, "kernel listener: %s", unio_status_string(st));
	close(open(ready, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
	for (double end = test_now_s() + 30; ep == NULL && test_now_s() < end;)
		unio_worker_progress(w);
	TEST_ASSERT(ep != NULL, "no client connected");
	TEST_ASSERT_STATUS(api_recv(w, buf, sizeof(buf), KP_TAG, UINT64_MAX, &info), UNIO_OK);
	TEST_ASSERT_EQ(info.length, sizeof(buf));
	sum = test_checksum(buf, sizeof(buf));
	TEST_ASSERT_STATUS(api_send(w, ep, &sum, sizeof(sum), KP_TAG + 1, 0), UNIO_OK);
	TEST_ASSERT_STATUS(unio_ep_close(ep, UNIO_EP_CLOSE_FLUSH, NULL), UNIO_OK);
	unio_listener_destroy(l);
	return TEST_OK;
}

/* the client (ethdev, tcp): dials 10.77.0.2:13337, which no Unio iface serves */
static int
kp_client(unio_worker_t *w)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(13337) };
	static uint8_t buf[KP_BYTES];
	struct unio_recv_info info;
	uint64_t sum = 0;
	unio_status_t st;
	unio_ep_t *ep;
	double t0 = test_now_s();

	a.sin_addr.s_addr = inet_addr("10.77.0.2");
	ep = dial(w, &a, &st);
	TEST_LOG("client: ep_create to 10.77.0.2:13337 (a kernel listener): %s after %.2f s",
		 unio_status_string(st), test_now_s() - t0);
	TEST_ASSERT(ep != NULL, "no connection: %s", unio_status_string(st));
	TEST_ASSERT(ep->ctl_fd >= 0 && !ep->by_driver, "not connected through the kernel");
	TEST_ASSERT(strcmp(ep->lane.iface->driver->name, "tcp") == 0, "lane %s",
		    ep->lane.iface->driver->name);
	test_fill(buf, sizeof(buf), 0x6b70);
	TEST_ASSERT_STATUS(api_send(w, ep, buf, sizeof(buf), KP_TAG, 0), UNIO_OK);
	TEST_ASSERT_STATUS(api_recv(w, &sum, sizeof(sum), KP_TAG + 1, UINT64_MAX, &info),
			   UNIO_OK);
	TEST_ASSERT_EQ(sum, test_checksum(buf, sizeof(buf)));
	unio_ep_close(ep, UNIO_EP_CLOSE_FLUSH, NULL);
	return TEST_OK;
}

/* argv: netns role vdev|- ready_file */
UNIO_TEST_CHILD(ethdev_cm_kernel_peer)
{
	struct unio_context_params cp = { .field_mask = UNIO_CONTEXT_PARAM_FEATURES,
					  .features = UNIO_FEATURE_TAG };
	char vdev_arg[256];
	char *eal[] = { (char *)"unio-test", (char *)"-l", (char *)"0", vdev_arg,
			(char *)"--" };
	int role, n_eal = (int)RTE_DIM(eal), rc;
	unio_context_t *ctx;
	unio_worker_t *w;
	unio_status_t st;

	TEST_ASSERT(argc == 4, "argc %d", argc);
	role = atoi(argv[1]);
	TEST_ASSERT(test_enter_netns(argv[0]) == 0, "setns %s: %s", argv[0], strerror(errno));
	if (role == 0) {
		setenv("UNIO_TLS", "tcp,self", 1);
		eal[3] = (char *)"--";
		n_eal--;
	} else {
		snprintf(vdev_arg, sizeof(vdev_arg), "--vdev=%s", argv[2]);
		setenv("UNIO_TLS", "ethdev,tcp,self", 1);
		setenv("UNIO_ETHDEV_IP", "10.77.0.11", 1);
		setenv("UNIO_ETHDEV_PORT", "13337", 1);
		setenv("UNIO_ETHDEV_TARGET_DELAY", "5ms", 1);
	}
	TEST_ASSERT(unio_env_init(n_eal, eal) >= 0, "EAL init failed");
	ctx = unio_context_create(&cp, &st);
	TEST_ASSERT(ctx != NULL, "context: %s", unio_status_string(st));
	w = unio_worker_create(ctx, NULL, &st);
	TEST_ASSERT(w != NULL, "worker: %s", unio_status_string(st));
	TEST_ASSERT(role == 0 || strcmp(w->ifaces[0]->driver->name, "ethdev") == 0 ||
		    (w->n_ifaces > 1 && strcmp(w->ifaces[1]->driver->name, "ethdev") == 0),
		    "the client has no ethdev iface");
	rc = role == 0 ? kp_server(w, argv[3]) : kp_client(w);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return rc;
}

/*
 * A kernel TCP listener at 10.77.0.2:13337 (namespace b, a Unio server with tcp only), a
 * client whose worker has an ethdev iface (af_packet on namespace a's veth, DPDK address
 * 10.77.0.11, the kernel's 10.77.0.1) and UNIO_ETHDEV_PORT 13337: the port looks like the
 * driver's, no Unio iface answers there (the kernel of b answers the ARP, drops the UDP), and
 * unio_ep_create connects through the kernel; a checksummed message crosses.
 */
UNIO_TEST(ethdev_api_cm_kernel_fallback, mp)
{
	char name[32], na[40], nb[40], ready[80];
	const char *args_a[] = { na, "1", "net_af_packet0,iface=va", "-", NULL };
	const char *args_b[] = { nb, "0", "-", ready, NULL };
	int rc = TEST_FAIL, ra = -1, rb = -1;
	pid_t a, b;

	if (!test_can_netns())
		TEST_SKIP_BECAUSE("needs root and iproute2 network namespaces");
	snprintf(name, sizeof(name), "uniokfb-%d", getpid());
	snprintf(na, sizeof(na), "%s-a", name);
	snprintf(nb, sizeof(nb), "%s-b", name);
	snprintf(ready, sizeof(ready), "/tmp/unio-kfb-%d.ready", getpid());
	unlink(ready);
	if (test_topology("veth", "up", name, NULL) != 0 ||
	    test_system("ip -n %s addr add 10.77.0.1/24 dev va && "
			"ip -n %s addr add 10.77.0.2/24 dev vb", na, nb) != 0) {
		TEST_LOG("topology %s", name);
		goto out;
	}
	b = test_spawn("ethdev_cm_kernel_peer", args_b);
	for (int i = 0; i < 400 && access(ready, F_OK) != 0; i++)
		usleep(50000);
	a = test_spawn("ethdev_cm_kernel_peer", args_a);
	ra = test_wait(a, 120000);
	rb = test_wait(b, 120000);
	if (ra != 0 || rb != 0)
		TEST_LOG("exit codes: client %d, server %d", ra, rb);
	rc = ra == 0 && rb == 0 ? TEST_OK : TEST_FAIL;
out:
	test_topology("veth", "down", name, NULL);
	unlink(ready);
	return rc;
}

/* ---- UNIO_EAL_ARGS set with unio_config_modify() ---- */

/* argv: vdev; EAL initialised by unio_context_create() from the context's configuration */
UNIO_TEST_CHILD(ethdev_cm_config_eal_args)
{
	static const char *const set[][2] = {
		{ "TLS", "ethdev,self" }, { "ETHDEV_IP", CM_IP }, { "EAL_ARGS", NULL },
	};
	struct unio_context_params cp = { .field_mask = UNIO_CONTEXT_PARAM_FEATURES |
							UNIO_CONTEXT_PARAM_CONFIG,
					  .features = UNIO_FEATURE_TAG };
	struct unio_config *cfg = NULL;
	char eal_args[256];
	unio_context_t *ctx;
	unio_worker_t *w;
	unio_status_t st;
	bool ethdev = false;

	TEST_ASSERT(argc == 1, "argc %d", argc);
	unsetenv("UNIO_EAL_ARGS");
	snprintf(eal_args, sizeof(eal_args), "--vdev=%s", argv[0]);
	TEST_ASSERT_STATUS(unio_config_read(&cfg), UNIO_OK);
	for (unsigned int i = 0; i < RTE_DIM(set); i++)
		TEST_ASSERT_STATUS(unio_config_modify(cfg, set[i][0], set[i][1] != NULL ?
						      set[i][1] : eal_args), UNIO_OK);
	cp.config = cfg;
	ctx = unio_context_create(&cp, &st);
	unio_config_release(cfg);
	TEST_ASSERT(ctx != NULL, "context: %s (EAL arguments used: '%s')",
		    unio_status_string(st), unio_env_eal_args());
	w = unio_worker_create(ctx, NULL, &st);
	TEST_ASSERT(w != NULL, "worker: %s", unio_status_string(st));
	for (unsigned int i = 0; i < w->n_ifaces; i++)
		ethdev |= strcmp(w->ifaces[i]->driver->name, "ethdev") == 0;
	TEST_LOG("EAL arguments: %s; ethdev iface: %s", unio_env_eal_args(),
		 ethdev ? "yes" : "no");
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	TEST_ASSERT(strstr(unio_env_eal_args(), "net_memif0") != NULL, "the vdev was not passed");
	TEST_ASSERT(ethdev, "the worker has no ethdev iface");
	return TEST_OK;
}

/*
 * UNIO_EAL_ARGS set on the context's configuration with unio_config_modify() (not in the
 * environment) gives Unio's own EAL initialisation its port: the worker has an ethdev iface.
 */
UNIO_TEST(ethdev_config_eal_args, mp)
{
	return memif_child("cfg", "0c", "ethdev_cm_config_eal_args", 60000);
}
