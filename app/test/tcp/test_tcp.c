/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tests of the tcp driver: devices and reachability, one connection per peer pair under
 * simultaneous connect, checksummed streams of every message class and size between two
 * processes (also with tiny socket buffers, so every read and write is partial, and in
 * epoll mode sleeping on the event fd), put/get with bounds, a peer killed mid-transfer,
 * and a fuzzer sending malformed frames while a well-behaved peer is served.
 */

#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <poll.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <rte_cycles.h>

#include "../api/api_common.h"
#include "tcp_common.h"
#include "tcp_priv.h"
#include "unio_proto.h"
#include "unio_test.h"

#define STREAM_COUNT "3000"

/* ---- children ---- */

/* argv: write fd, device, "rma" to register a region.  Serves one client. */
UNIO_TEST_CHILD(tcp_server)
{
	struct tpeer p;
	char line[2 * UNIO_TL_ADDR_MAX + 2 * UNIO_TL_RKEY_MAX + 8], rkey[2 * UNIO_TL_RKEY_MAX + 1];
	bool epoll_sleep;
	int wfd, r;

	if (argc < 3 || tpeer_open(&p, argv[1]) != 0)
		return 10;
	wfd = atoi(argv[0]);
	strcpy(rkey, "-");
	if (strcmp(argv[2], "rma") == 0 && tpeer_region(&p, rkey, sizeof(rkey)) != 0)
		return 11;
	t_hex(p.addr, p.iface->attr.iface_addr_len, line);
	dprintf(wfd, "%s %s\n", line, rkey);
	close(wfd);
	epoll_sleep = p.cfg.tcp_poll_mode == UNIO_TCP_POLL_EPOLL;
	if (epoll_sleep) {  /* sleep on the event fd whenever there is nothing to do */
		int fd;

		if (p.iface->ctl->iface_event_fd(p.iface, &fd) != UNIO_OK)
			return 12;
		while (p.done_count == UINT64_MAX) {
			struct pollfd pfd = { .fd = fd, .events = POLLIN };

			if (unio_tl_iface_progress(p.iface) == 0 &&
			    p.iface->ctl->iface_event_arm(p.iface) == UNIO_OK)
				poll(&pfd, 1, 1000);
		}
	}
	r = t_serve(&p, 30000);
	tpeer_close(&p);
	return r == 0 ? 0 : 13;
}

/* argv: device, server address, rkey or "-", scenario (stream|rma), count. */
UNIO_TEST_CHILD(tcp_client)
{
	uint8_t addr[UNIO_TL_ADDR_MAX];
	struct tpeer p;
	int r;

	if (argc < 5 || tpeer_open(&p, argv[0]) != 0)
		return 10;
	if (t_unhex(argv[1], addr, p.iface->attr.iface_addr_len) != 0 ||
	    tpeer_connect(&p, addr) != 0)
		return 11;
	if (strcmp(argv[3], "rma") == 0)
		r = t_rma_run(&p, argv[2]);
	else
		r = t_stream_send(&p, (unsigned int)atoi(argv[4]));
	tpeer_close(&p);
	return r == 0 ? 0 : 12;
}

/* ---- two-process runs ---- */

/* Server in @p ns_a on @p dev_a, client in @p ns_b on @p dev_b; NULL ns: this namespace. */
static int
run_pair_n(const char *ns_a, const char *dev_a, const char *ns_b, const char *dev_b,
	   const char *scenario, const char *count)
{
	char wfd[16], line[512], *rkey;
	int fds[2], rs, rc;
	pid_t srv, cli;

	if (pipe(fds) != 0)
		return TEST_FAIL;
	snprintf(wfd, sizeof(wfd), "%d", fds[1]);
	{
		const char *sargs[] = { wfd, dev_a, scenario, NULL };

		srv = t_spawn_ns(ns_a, "tcp_server", sargs);
	}
	close(fds[1]);
	if (srv < 0 || t_read_line(fds[0], line, sizeof(line), 10000) != 0 ||
	    (rkey = strchr(line, ' ')) == NULL) {
		close(fds[0]);
		if (srv > 0)
			test_wait(srv, 1000);
		TEST_LOG("the server did not publish its address");
		return TEST_FAIL;
	}
	close(fds[0]);
	*rkey++ = '\0';
	{
		const char *cargs[] = { dev_b, line, rkey, scenario, count, NULL };

		cli = t_spawn_ns(ns_b, "tcp_client", cargs);
	}
	rc = test_wait(cli, 40000);
	rs = test_wait(srv, 10000);
	TEST_ASSERT(rc == 0 && rs == 0, "client exit %d, server exit %d", rc, rs);
	return TEST_OK;
}

static int
run_pair(const char *ns_a, const char *dev_a, const char *ns_b, const char *dev_b,
	 const char *scenario)
{
	return run_pair_n(ns_a, dev_a, ns_b, dev_b, scenario, STREAM_COUNT);
}

UNIO_TEST(tcp_stream_loopback, mp)
{
	return run_pair(NULL, "lo", NULL, "lo", "stream");
}

/* 4 KiB send buffers, the smallest receive buffers (64 KiB floor): partial I/O everywhere. */
UNIO_TEST(tcp_partial_io, mp)
{
	int r;

	setenv("UNIO_TCP_SNDBUF", "4k", 1);
	setenv("UNIO_TCP_RCVBUF", "4k", 1);
	r = run_pair_n(NULL, "lo", NULL, "lo", "stream", "600");
	unsetenv("UNIO_TCP_SNDBUF");
	unsetenv("UNIO_TCP_RCVBUF");
	return r;
}

/* epoll mode; the server sleeps on the event fd between messages. */
UNIO_TEST(tcp_epoll_mode, mp)
{
	int r;

	setenv("UNIO_TCP_POLL_MODE", "epoll", 1);
	r = run_pair(NULL, "lo", NULL, "lo", "stream");
	unsetenv("UNIO_TCP_POLL_MODE");
	return r;
}

UNIO_TEST(tcp_rma_loopback, mp)
{
	return run_pair(NULL, "lo", NULL, "lo", "rma");
}

/* ---- between two network namespaces joined by a veth pair ---- */

struct netns {
	char a[32], b[32], va[16], vb[16];
};

static void
netns_down(const struct netns *n)
{
	test_system("ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null", n->a, n->b);
}

/* netns_up() failed: a skip only where iproute2 cannot make namespaces at all */
#define NETNS_UNAVAILABLE() do { \
	TEST_ASSERT(!test_can_netns(), \
		    "namespaces work here, but the veth pair did not come up"); \
	TEST_SKIP_BECAUSE("ip netns / veth not available here"); \
} while (0)

/* usertools/unio-netns.sh does the same for people; tests keep no dependency on it. */
static int
netns_up(struct netns *n)
{
	int pid = (int)getpid();

	snprintf(n->a, sizeof(n->a), "unio-tcp-%d-a", pid);
	snprintf(n->b, sizeof(n->b), "unio-tcp-%d-b", pid);
	snprintf(n->va, sizeof(n->va), "ut%da", pid % 10000000);
	snprintf(n->vb, sizeof(n->vb), "ut%db", pid % 10000000);
	if (test_system("ip netns add %s && ip netns add %s && "
			"ip link add %s netns %s type veth peer name %s netns %s && "
			"ip -n %s addr add 10.99.77.1/24 dev %s && "
			"ip -n %s addr add 10.99.77.2/24 dev %s && "
			"ip -n %s link set %s up && ip -n %s link set %s up && "
			"ip -n %s link set lo up && ip -n %s link set lo up",
			n->a, n->b, n->va, n->a, n->vb, n->b, n->a, n->va, n->b, n->vb,
			n->a, n->va, n->b, n->vb, n->a, n->b) != 0) {
		netns_down(n);
		return -1;
	}
	/* the driver lists running links only: wait for both carriers (20 s at most) */
	if (test_system("for i in $(seq 200); do "
			"ip -n %s link show %s | grep -q LOWER_UP && "
			"ip -n %s link show %s | grep -q LOWER_UP && exit 0; sleep 0.1; done; "
			"exit 1", n->a, n->va, n->b, n->vb) != 0) {
		netns_down(n);
		return -1;
	}
	return 0;
}

static int
run_netns(const char *scenario)
{
	struct netns n;
	int r;

	if (geteuid() != 0)
		TEST_SKIP_BECAUSE("network namespaces need root");
	if (netns_up(&n) != 0)
		NETNS_UNAVAILABLE();
	r = run_pair(n.a, n.va, n.b, n.vb, scenario);
	netns_down(&n);
	return r;
}

UNIO_TEST(tcp_stream_netns, mp)
{
	return run_netns("stream");
}

UNIO_TEST(tcp_rma_netns, mp)
{
	return run_netns("rma");
}

/* ---- a silent peer: keepalive ---- */

static bool
peer_known(struct tpeer *p)
{
	return p->ep != NULL;
}

static bool
got_error(struct tpeer *p)
{
	return p->ep_errors > 0;
}

/* argv: write fd, device.  Waits for a client, then for its ep to fail; 0 on TIMED_OUT. */
UNIO_TEST_CHILD(tcp_ka_server)
{
	char hex[2 * UNIO_TL_ADDR_MAX + 1];
	struct tpeer p;
	int wfd, r;

	if (argc < 2 || tpeer_open(&p, argv[1]) != 0)
		return 10;
	wfd = atoi(argv[0]);
	t_hex(p.addr, p.iface->attr.iface_addr_len, hex);
	dprintf(wfd, "%s -\n", hex);
	if (!tpeer_wait(&p, peer_known, 10000)) {
		tpeer_close(&p);
		return 11;
	}
	dprintf(wfd, "up\n");
	close(wfd);
	r = tpeer_wait(&p, got_error, 30000) ? 0 : 12;
	if (r == 0)
		TEST_LOG("server: the silent peer's ep failed: %s",
			 unio_status_string(p.last_err));
	if (r == 0 && p.last_err != UNIO_ERR_TIMED_OUT)
		r = 13;
	tpeer_close(&p);
	return r;
}

/* argv: device, server address.  Says hello, then goes silent. */
UNIO_TEST_CHILD(tcp_ka_client)
{
	uint8_t addr[UNIO_TL_ADDR_MAX];
	struct tpeer p;

	if (argc < 2 || tpeer_open(&p, argv[0]) != 0 ||
	    t_unhex(argv[1], addr, p.iface->attr.iface_addr_len) != 0 ||
	    tpeer_connect(&p, addr) != 0)
		return 10;
	while (unio_tl_ep_am_short(p.ep, T_AM_HELLO, 0, p.addr, p.iface->attr.iface_addr_len) ==
	       UNIO_ERR_NO_RESOURCE)
		unio_tl_iface_progress(p.iface);
	for (int i = 0; i < 100000; i++)
		unio_tl_iface_progress(p.iface);
	alarm(40);
	pause();
	return 0;
}

/*
 * The link to an idle peer goes down: no reset, no EOF, only keepalive probes that nobody
 * answers.  The ep fails with UNIO_ERR_TIMED_OUT (UNIO_TCP_KEEPALIVE=1s idle, then probes
 * until UNIO_PEER_TIMEOUT=3s without an answer) and no request is needed to notice it.
 */
UNIO_TEST(tcp_keepalive_netns, mp)
{
	char wfd[16], line[512], *sp;
	struct netns n;
	int fds[2], rs;
	pid_t srv, cli = -1;

	if (geteuid() != 0)
		TEST_SKIP_BECAUSE("network namespaces need root");
	if (netns_up(&n) != 0)
		NETNS_UNAVAILABLE();
	if (pipe(fds) != 0) {
		netns_down(&n);
		return TEST_FAIL;
	}
	snprintf(wfd, sizeof(wfd), "%d", fds[1]);
	setenv("UNIO_TCP_KEEPALIVE", "1s", 1);
	setenv("UNIO_PEER_TIMEOUT", "3s", 1);
	{
		const char *sargs[] = { wfd, n.va, NULL };

		srv = t_spawn_ns(n.a, "tcp_ka_server", sargs);
	}
	unsetenv("UNIO_TCP_KEEPALIVE");
	unsetenv("UNIO_PEER_TIMEOUT");
	close(fds[1]);
	if (srv > 0 && t_read_line(fds[0], line, sizeof(line), 10000) == 0 &&
	    (sp = strchr(line, ' ')) != NULL) {
		const char *cargs[] = { n.vb, line, NULL };

		*sp = '\0';
		cli = t_spawn_ns(n.b, "tcp_ka_client", cargs);
	}
	if (cli > 0 && t_read_line(fds[0], line, sizeof(line), 10000) == 0)
		test_system("ip -n %s link set %s down", n.b, n.vb);
	close(fds[0]);
	rs = srv > 0 ? test_wait(srv, 30000) : -1;
	if (cli > 0) {
		kill(cli, SIGKILL);
		waitpid(cli, NULL, 0);
	}
	netns_down(&n);
	TEST_ASSERT(rs == 0, "server exit %d", rs);
	return TEST_OK;
}

/* ---- tagged messages through the public API, across the namespaces ---- */

#define API_PORT   13350
#define SIZES_TAG  0x5151000000000000ull
#define DONE_TAG   0x5151000000000001ull
#define MAX_SIZES  32
#define NETNS_IP_A "10.99.77.1"

static struct sockaddr_in
api_server_addr(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(API_PORT) };

	inet_pton(AF_INET, NETNS_IP_A, &a.sin_addr);
	return a;
}

struct accept_slot {
	unio_worker_t *w;
	unio_ep_t *ep;
};

static void
api_on_conn(unio_conn_request_t *cr, void *arg)
{
	struct accept_slot *s = arg;
	struct unio_ep_params p = { .field_mask = UNIO_EP_PARAM_CONN_REQUEST, .conn_request = cr };
	unio_status_t st;

	s->ep = unio_ep_create(s->w, &p, &st);
	if (s->ep == NULL)
		TEST_LOG("accept: %s", unio_status_string(st));
}

/* The seed of the echo's random tags after the size classes (api_echo_drive / _serve). */
#define API_ECHO_SEED 0x7cc9e7a6ull

/* Receive the size list, then every message; check each against its tag's pattern. */
static int
api_serve(unio_worker_t *w, unio_ep_t *ep)
{
	uint64_t sizes[MAX_SIZES], good = 0;
	struct unio_recv_info info;
	uint8_t *buf = malloc(8 << 20), *want = malloc(8 << 20);
	unsigned int n = 0;

	if (buf != NULL && want != NULL &&
	    api_recv(w, sizes, sizeof(sizes), SIZES_TAG, UINT64_MAX, &info) == UNIO_OK)
		n = (unsigned int)(info.length / sizeof(sizes[0]));
	for (unsigned int i = 0; i < n; i++) {
		unio_status_t st = api_recv(w, buf, sizes[i], i + 1, UINT64_MAX, &info);

		test_fill(want, sizes[i], i + 1);
		if (st == UNIO_OK && info.length == sizes[i] && memcmp(buf, want, sizes[i]) == 0)
			good++;
		else
			TEST_LOG("server: message %u (%" PRIu64 " bytes): %s", i, sizes[i],
				 unio_status_string(st));
	}
	free(buf);
	free(want);
	if (n == 0 || api_send(w, ep, &good, sizeof(good), DONE_TAG, 0) != UNIO_OK)
		return 3;
	return good == n ? 0 : 4;
}

UNIO_TEST_CHILD(tcp_api_server)
{
	unio_context_t *ctx = api_ctx(NULL);
	unio_worker_t *w = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	struct sockaddr_in a = api_server_addr();
	struct accept_slot slot = { .w = w };
	struct unio_listener_params lp = {
		.field_mask = UNIO_LISTENER_PARAM_SOCKADDR | UNIO_LISTENER_PARAM_HANDLER,
		.sockaddr = (struct sockaddr *)&a, .addrlen = sizeof(a),
		.conn_handler = api_on_conn, .arg = &slot,
	};
	unio_listener_t *l;
	unio_status_t st;
	int r = 5;

	RTE_SET_USED(argc), RTE_SET_USED(argv);
	if (w == NULL)
		return 2;
	l = unio_listener_create(w, &lp, &st);
	if (l == NULL)
		TEST_LOG("server: listen: %s", unio_status_string(st));
	if (l != NULL && api_progress_until(w, (volatile int *)&slot.ep, 20000)) {
		r = api_serve(w, slot.ep);
		/* then api_mp_tag_sizes' echo: random tags, wildcard receives, up to 64 MiB */
		if (r == 0 && api_echo_serve(w, slot.ep, API_ECHO_SEED) != TEST_OK)
			r = 6;
		unio_ep_close(slot.ep, UNIO_EP_CLOSE_FLUSH, NULL);
	}
	unio_listener_destroy(l);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return r;
}

static int
api_client_run(unio_worker_t *w, unio_ep_t *ep)
{
	size_t sz[MAX_SIZES];
	uint64_t sizes[MAX_SIZES], good = 0;
	unsigned int n = api_size_classes(ep, 8 << 20, sz);
	struct unio_recv_info info;
	uint8_t *buf = malloc(8 << 20);

	for (unsigned int i = 0; i < n; i++)
		sizes[i] = sz[i];
	if (buf == NULL || api_send(w, ep, sizes, n * sizeof(sizes[0]), SIZES_TAG, 0) != UNIO_OK)
		return 3;
	for (unsigned int i = 0; i < n; i++) {
		test_fill(buf, sizes[i], i + 1);
		if (api_send(w, ep, buf, sizes[i], i + 1, i % 3 == 2) != UNIO_OK) {
			TEST_LOG("client: send %u of %" PRIu64 " bytes failed", i, sizes[i]);
			return 4;
		}
	}
	free(buf);
	if (api_recv(w, &good, sizeof(good), DONE_TAG, UINT64_MAX, &info) != UNIO_OK ||
	    good != n) {
		TEST_LOG("client: the server got %" PRIu64 " of %u right", good, n);
		return 5;
	}
	TEST_LOG("client: %u tagged messages of 0 to %" PRIu64 " bytes checked by the server", n,
		 sizes[n - 1]);
	return 0;
}

/*
 * @p ep's lane is the tcp iface on @p want, while the worker also has one on @p decoy (up,
 * on another subnet, so it cannot reach the peer); 0 when so.
 */
static int
lane_check(unio_worker_t *w, const unio_ep_t *ep, const char *want, const char *decoy)
{
	bool has_decoy = false;

	for (unsigned int i = 0; i < w->n_ifaces; i++)
		has_decoy |= strcmp(w->ifaces[i]->dev_name, decoy) == 0;
	if (!has_decoy || strcmp(ep->lane.iface->driver->name, "tcp") != 0 ||
	    strcmp(ep->lane.iface->dev_name, want) != 0) {
		TEST_LOG("client: lane %s/%s, want tcp/%s; an iface on %s: %s",
			 ep->lane.iface->driver->name, ep->lane.iface->dev_name, want, decoy,
			 has_decoy ? "yes" : "no");
		return 6;
	}
	return 0;
}

UNIO_TEST_CHILD(tcp_api_client)
{
	unio_context_t *ctx = api_ctx(NULL);
	unio_worker_t *w = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	struct sockaddr_in a = api_server_addr();
	struct unio_ep_params p = { .field_mask = UNIO_EP_PARAM_SOCKADDR,
				    .sockaddr = (struct sockaddr *)&a, .addrlen = sizeof(a) };
	unio_status_t st = UNIO_ERR_UNREACHABLE;
	unio_ep_t *ep = NULL;
	int r = 2;

	RTE_SET_USED(argc), RTE_SET_USED(argv);
	/* once: started when the server listens (refused tries were each logged) */
	if (w != NULL)
		ep = unio_ep_create(w, &p, &st);
	if (ep != NULL) {
		r = api_client_run(w, ep);
		if (r == 0 && argc >= 2)
			r = lane_check(w, ep, argv[0], argv[1]);
		if (r == 0 && api_echo_drive(w, ep, 64 << 20, API_ECHO_SEED) != TEST_OK)
			r = 7;
		unio_ep_close(ep, UNIO_EP_CLOSE_FLUSH, NULL);
	} else {
		TEST_LOG("client: connect: %s", unio_status_string(st));
	}
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return r;
}

/*
 * Tagged messages by socket address between two namespaces joined by a veth pair, over tcp:
 * the client sends every size class of its lane up to 8 MiB (exact tags, one in three sync),
 * checked by the server; then api_mp_tag_sizes' echo (random tags, receives with a full, a
 * 48-bit and an empty mask, every size class and 64 MiB, echoed back, checksummed both ways).
 */
UNIO_TEST(tcp_api_tag_netns, mp)
{
	struct netns n;
	pid_t srv, cli;
	int rs, rc;

	if (geteuid() != 0)
		TEST_SKIP_BECAUSE("network namespaces need root");
	if (netns_up(&n) != 0)
		NETNS_UNAVAILABLE();
	/*
	 * Beside the veth, the client's namespace has a running interface on another subnet (as
	 * a docker bridge would be: a veth whose peer is up in the same namespace) and a link
	 * that is down: the driver opens an iface on the first, and the lane must still be the
	 * veth to the server, the one whose route reaches it.
	 */
	TEST_ASSERT(test_system("ip -n %s link add udk type veth peer name udk2 && "
				"ip -n %s addr add 172.31.99.1/24 dev udk && "
				"ip -n %s link set udk2 up && ip -n %s link set udk up && "
				"ip -n %s link add udd type veth peer name udd2 && "
				"ip -n %s addr add 10.99.78.1/24 dev udd", n.b, n.b, n.b, n.b, n.b,
				n.b) == 0 || (netns_down(&n), 0), "decoy interfaces");
	setenv("UNIO_TLS", "tcp", 1);
	srv = t_spawn_ns(n.a, "tcp_api_server", NULL);
	/* the client starts when the server listens (in its namespace: /proc/SRV/net/tcp) */
	if (srv > 0 && test_wait_listen(srv, API_PORT, 20000) != 0)
		TEST_LOG("the server does not listen on port %d", API_PORT);
	cli = t_spawn_ns(n.b, "tcp_api_client", (const char *const[]){ n.vb, "udk", NULL });
	unsetenv("UNIO_TLS");
	rc = cli > 0 ? test_wait(cli, 50000) : -1;
	rs = srv > 0 ? test_wait(srv, 10000) : -1;
	netns_down(&n);
	TEST_ASSERT(rc == 0 && rs == 0, "client exit %d, server exit %d", rc, rs);
	return TEST_OK;
}

/*
 * Rendezvous rails (UNIO_MAX_RNDV_RAILS): two workers of one process in a namespace whose
 * interfaces are lo and a veth pair with an address on one end (rd0), UNIO_TLS=tcp.  The
 * ep's lane is tcp/lo and it has one rail, tcp/rd0 (the peer's address on that link);
 * tagged messages of 256 KiB - 1 (not striped), 256 KiB, 1 MiB, 3 MiB + 1 and 8 MiB go by
 * rendezvous get, every payload checksummed, and the receiver's rd0 iface read GET_RESP
 * frames (direct_frames) in both directions of the exchange: the gets were striped over the
 * rail.  With UNIO_MAX_RNDV_RAILS=1, and without the variable (the default is one lane since
 * a rail made 4 MiB tag_bw over loopback slower, tcp.md entry 16), the ep has no rail and
 * rd0 carries nothing.
 */
/*
 * Two workers of @p ctx and an ep each way between them, both connected: TEST_OK, or
 * TEST_FAIL with why logged.
 */
static int
two_workers_both_ways(unio_context_t *ctx, unio_worker_t **w1, unio_worker_t **w2,
		      unio_ep_t **e12, unio_ep_t **e21)
{
	unio_status_t st = UNIO_ERR_NO_MEMORY;

	*w1 = unio_worker_create(ctx, NULL, &st);
	*w2 = unio_worker_create(ctx, NULL, &st);
	TEST_ASSERT(*w1 != NULL && *w2 != NULL, "workers: %s", unio_status_string(st));
	*e12 = api_ep_to_worker(*w1, *w2, &st);
	TEST_ASSERT(*e12 != NULL, "ep 1->2: %s", unio_status_string(st));
	*e21 = api_ep_to_worker(*w2, *w1, &st);
	TEST_ASSERT(*e21 != NULL, "ep 2->1: %s", unio_status_string(st));
	TEST_ASSERT(api_ep_connected(*w1, *w2, *e12) && api_ep_connected(*w2, *w1, *e21),
		    "eps connected");
	return TEST_OK;
}

static int
rails_run(uint8_t *a, uint8_t *b)
{
	static const size_t sizes[] = { 256 * 1024 - 1, 256 * 1024, 1 << 20, (3 << 20) + 1,
					8 << 20 };

	/* 2 and 1 set, then 0: the variable left at its default, which must be one lane */
	for (int set = 2; set >= 0; set--) {
		const char *ov[] = { "TLS", "tcp", "RNDV_SCHEME", "get", "MAX_RNDV_RAILS",
				     set == 2 ? "2" : "1", NULL };
		int rails = set == 2 ? 2 : 1;
		unio_context_t *ctx;

		if (set == 0)
			ov[4] = NULL;
		ctx = api_ctx(ov);
		unio_worker_t *w1, *w2;
		struct unio_tl_tcp_stats s1, s2;
		unio_ep_t *e12, *e21;
		unio_status_t st;

		TEST_ASSERT(ctx != NULL, "context");
		if (two_workers_both_ways(ctx, &w1, &w2, &e12, &e21) != TEST_OK)
			return TEST_FAIL;
		TEST_ASSERT(strcmp(e12->lane.iface->dev_name, "lo") == 0, "lane %s",
			    e12->lane.iface->dev_name);
		TEST_ASSERT_EQ(e12->n_rails, rails - 1);
		TEST_ASSERT_EQ(e21->n_rails, rails - 1);
		if (rails == 2)
			TEST_ASSERT(strcmp(e12->rails[0]->iface->dev_name, "rd0") == 0,
				    "rail %s", e12->rails[0]->iface->dev_name);
		for (unsigned int i = 0; i < RTE_DIM(sizes); i++) {
			unio_request_t *rq, *sq;
			unio_status_t ss;
			uint64_t cks;

			/* 1 -> 2, then back: each side pulls once */
			for (int dir = 0; dir < 2; dir++) {
				unio_worker_t *tx = dir ? w2 : w1, *rx = dir ? w1 : w2;
				unio_ep_t *ep = dir ? e21 : e12;

				test_fill(a, sizes[i], i * 2 + (unsigned int)dir);
				cks = test_checksum(a, sizes[i]);
				memset(b, 0, sizes[i]);
				st = unio_tag_recv(rx, b, sizes[i], 7, ~0ull, NULL, &rq);
				TEST_ASSERT(!UNIO_IS_ERR(st), "recv: %s", unio_status_string(st));
				ss = unio_tag_send(ep, a, sizes[i], 7, NULL, &sq);
				TEST_ASSERT_STATUS(api_op_wait(rx, tx, st, rq), UNIO_OK);
				TEST_ASSERT_STATUS(api_op_wait(tx, rx, ss, sq), UNIO_OK);
				TEST_ASSERT(test_checksum(b, sizes[i]) == cks,
					    "%zu B dir %d differs", sizes[i], dir);
			}
		}
		TEST_ASSERT(api_worker_iface(w1, "tcp", "rd0") != NULL &&
			    api_worker_iface(w2, "tcp", "rd0") != NULL, "no tcp iface on rd0");
		unio_tl_tcp_stats(api_worker_iface(w1, "tcp", "rd0"), &s1);
		unio_tl_tcp_stats(api_worker_iface(w2, "tcp", "rd0"), &s2);
		TEST_LOG("rails %d%s: GET_RESP read directly on rd0: %" PRIu64 " / %" PRIu64, rails,
			 set == 0 ? " (default)" : "", s1.direct_frames, s2.direct_frames);
		if (rails == 2)
			TEST_ASSERT(s1.direct_frames > 0 && s2.direct_frames > 0,
				    "the rail carried no get");
		else
			TEST_ASSERT(s1.rx_frames == 0 && s2.rx_frames == 0, "rd0 carried frames");
		unio_worker_destroy(w1);
		unio_worker_destroy(w2);
		unio_context_destroy(ctx);
	}
	return TEST_OK;
}

/*
 * Into a new namespace @p prefix-PID (written to @p ns) with lo up and a veth pair rd0
 * (10.98.0.1/24) / rd1, both up: 0, or -1 said in the log.  The caller deletes it.
 */
static int
veth_netns_enter(char *ns, size_t len, const char *prefix)
{
	int rc;

	snprintf(ns, len, "%s-%d", prefix, (int)getpid());
	rc = test_system("ip netns add %s && ip -n %s link set lo up && "
			 "ip -n %s link add rd0 type veth peer name rd1 && "
			 "ip -n %s addr add 10.98.0.1/24 dev rd0 && ip -n %s link set rd1 up && "
			 "ip -n %s link set rd0 up", ns, ns, ns, ns, ns, ns);
	if (rc == 0 && test_enter_netns(ns) != 0)
		rc = -1;
	if (rc != 0)
		TEST_LOG("namespace %s with a veth: failed", ns);
	return rc;
}

UNIO_TEST(tcp_rndv_rails, mp)
{
	const size_t big = 8 << 20;
	uint8_t *a = malloc(big), *b = malloc(big);
	char ns[64];
	int rc;

	TEST_ASSERT(a != NULL && b != NULL, "malloc");
	if (!test_can_netns())
		TEST_SKIP_BECAUSE("network namespaces need root and iproute2");
	rc = veth_netns_enter(ns, sizeof(ns), "unio-rails");
	if (rc == 0)
		rc = rails_run(a, b);
	test_system("ip netns del %s 2>/dev/null", ns);
	free(a);
	free(b);
	return rc;
}

/* @p val from @p w1 over @p ep to @p w2, both progressed (each turn one *calls) */
static int
gated_exchange(unio_worker_t *w1, unio_worker_t *w2, unio_ep_t *ep, uint64_t val,
	       unsigned int *calls)
{
	uint64_t out = val, in = 0;
	unio_request_t *rq = NULL, *sq = NULL;
	unio_status_t rs, ss;
	uint64_t end = rte_get_tsc_cycles() + 10 * rte_get_tsc_hz();

	rs = unio_tag_recv(w2, &in, sizeof(in), 11, ~0ull, NULL, &rq);
	TEST_ASSERT(!UNIO_IS_ERR(rs), "recv: %s", unio_status_string(rs));
	ss = unio_tag_send(ep, &out, sizeof(out), 11, NULL, &sq);
	TEST_ASSERT(!UNIO_IS_ERR(ss), "send: %s", unio_status_string(ss));
	while ((rs == UNIO_INPROGRESS || ss == UNIO_INPROGRESS) && rte_get_tsc_cycles() < end) {
		unio_worker_progress(w1);
		unio_worker_progress(w2);
		(*calls)++;
		if (rs == UNIO_INPROGRESS)
			rs = unio_request_test(rq, NULL);
		if (ss == UNIO_INPROGRESS)
			ss = unio_request_test(sq, NULL);
	}
	if (rq != NULL)
		unio_request_free(rq);
	if (sq != NULL)
		unio_request_free(sq);
	TEST_ASSERT(rs == UNIO_OK && ss == UNIO_OK, "recv %s, send %s", unio_status_string(rs),
		    unio_status_string(ss));
	TEST_ASSERT(in == val, "received %#" PRIx64 ", sent %#" PRIx64, in, val);
	return TEST_OK;
}

/*
 * A tcp iface with nothing but its listen socket has a poll word that stays 0 (tcp.md entry
 * 17): two workers of one process in a namespace with lo and a veth end with an address
 * (rd0), UNIO_TLS=tcp, their eps on lo.  During 200 8-byte messages each way, each value
 * checked (busy and epoll mode), each worker calls its lo iface in every progress call and
 * its rd0 iface, which has no connection, only in one of WORKER_CTL_CALLS (16) plus a few
 * (it was called in every one).  Busy mode asks rd0's epoll at most once in 256 worker calls
 * (as before), epoll mode once in 16 (it was every call).  Then a worker of a context
 * limited to rd0 connects to the first one's rd0 iface: the connection is accepted and the
 * message it carries arrives intact within 512 worker calls (97 in busy mode, 15 in epoll
 * mode here), and from then on that iface is called in every call.
 */
static int
gated_run(void)
{
	for (int mode = 0; mode < 2; mode++) {
		const char *ov[] = { "TLS", "tcp", "TCP_POLL_MODE", mode ? "epoll" : "busy", NULL };
		const char *ov3[] = { "TLS", "tcp", "NET_DEVICES", "rd0", "TCP_POLL_MODE",
				      mode ? "epoll" : "busy", NULL };
		unio_context_t *ctx = api_ctx(ov), *ctx3 = api_ctx(ov3);
		struct unio_tl_tcp_stats l0, l1, r0, r1;
		struct unio_tl_iface *lo1, *rd1;
		unio_worker_t *w1, *w2, *w3;
		unio_ep_t *e12, *e21, *e31;
		unsigned int calls = 0, k;
		unio_status_t st;

		TEST_ASSERT(ctx != NULL && ctx3 != NULL, "contexts");
		if (two_workers_both_ways(ctx, &w1, &w2, &e12, &e21) != TEST_OK)
			return TEST_FAIL;
		TEST_ASSERT(strcmp(e12->lane.iface->dev_name, "lo") == 0 &&
			    strcmp(e21->lane.iface->dev_name, "lo") == 0, "lanes %s, %s",
			    e12->lane.iface->dev_name, e21->lane.iface->dev_name);
		lo1 = api_worker_iface(w1, "tcp", "lo");
		rd1 = api_worker_iface(w1, "tcp", "rd0");
		TEST_ASSERT(lo1 != NULL && rd1 != NULL, "w1's tcp ifaces on lo and rd0");
		/* connected and warm: the eps' wireup is done */
		for (unsigned int i = 0; i < 4; i++)
			if (gated_exchange(i % 2 ? w2 : w1, i % 2 ? w1 : w2, i % 2 ? e21 : e12, i,
					   &calls) != TEST_OK)
				return TEST_FAIL;
		unio_tl_tcp_stats(lo1, &l0);
		unio_tl_tcp_stats(rd1, &r0);
		calls = 0;
		for (unsigned int i = 0; i < 400; i++)
			if (gated_exchange(i % 2 ? w2 : w1, i % 2 ? w1 : w2, i % 2 ? e21 : e12,
					   0x5eed0000ull + i, &calls) != TEST_OK)
				return TEST_FAIL;
		unio_tl_tcp_stats(lo1, &l1);
		unio_tl_tcp_stats(rd1, &r1);
		TEST_LOG("%s mode: %u worker calls: lo iface %" PRIu64 " calls, idle rd0 iface %"
			 PRIu64 " calls, %" PRIu64 " epoll", mode ? "epoll" : "busy", calls,
			 l1.progress_calls - l0.progress_calls,
			 r1.progress_calls - r0.progress_calls, r1.epoll_calls - r0.epoll_calls);
		TEST_ASSERT_EQ(l1.progress_calls - l0.progress_calls, calls);
		TEST_ASSERT(r1.progress_calls - r0.progress_calls <= calls / 16 + 4,
			    "idle rd0 iface called %" PRIu64 " times in %u worker calls",
			    r1.progress_calls - r0.progress_calls, calls);
		TEST_ASSERT(r1.epoll_calls - r0.epoll_calls <= (mode ? calls / 16 + 4 :
								  calls / 256 + 2),
			    "idle rd0 iface: %" PRIu64 " epoll calls in %u worker calls",
			    r1.epoll_calls - r0.epoll_calls, calls);
		TEST_ASSERT_EQ(r1.open_conns, 0);

		/* a peer on rd0: accepted, its message delivered, the iface called every time */
		w3 = unio_worker_create(ctx3, NULL, &st);
		TEST_ASSERT(w3 != NULL, "worker on rd0: %s", unio_status_string(st));
		e31 = api_ep_to_worker(w3, w1, &st);
		TEST_ASSERT(e31 != NULL, "ep 3->1: %s", unio_status_string(st));
		TEST_ASSERT(strcmp(e31->lane.iface->dev_name, "rd0") == 0, "lane %s",
			    e31->lane.iface->dev_name);
		calls = 0;
		if (gated_exchange(w3, w1, e31, 0xfeed, &calls) != TEST_OK)
			return TEST_FAIL;
		unio_tl_tcp_stats(rd1, &r0);
		TEST_LOG("rd0: the message from w3 took %u calls, %" PRIu64 " accepted", calls,
			 r0.conns_accepted);
		TEST_ASSERT(r0.conns_accepted >= 1, "rd0 accepted nothing");
		TEST_ASSERT(calls <= 2 * 256, "the connection to the idle rd0 iface waited %u "
			    "worker calls", calls);
		k = 0;
		if (gated_exchange(w3, w1, e31, 0xfeee, &k) != TEST_OK)
			return TEST_FAIL;
		unio_tl_tcp_stats(rd1, &r1);
		TEST_ASSERT_EQ(r1.progress_calls - r0.progress_calls, k);
		unio_worker_destroy(w3);
		unio_worker_destroy(w1);
		unio_worker_destroy(w2);
		unio_context_destroy(ctx3);
		unio_context_destroy(ctx);
	}
	return TEST_OK;
}

UNIO_TEST(tcp_idle_iface_gated, mp)
{
	char ns[64];
	int rc;

	if (!test_can_netns())
		TEST_SKIP_BECAUSE("network namespaces need root and iproute2");
	rc = veth_netns_enter(ns, sizeof(ns), "unio-gate");
	if (rc == 0)
		rc = gated_run();
	test_system("ip netns del %s 2>/dev/null", ns);
	return rc;
}

/* ---- one process ---- */

UNIO_TEST(tcp_devices, fast)
{
	const struct unio_tl_driver *drv = unio_tl_driver_find("tcp");
	struct unio_tl_device_info devs[UNIO_TL_MAX_DEVICES];
	struct unio_config cfg;
	struct tcp_addr a;
	struct tpeer p;
	unsigned int n = 0, lo = UINT32_MAX;
	char reason[128] = "";

	TEST_ASSERT(drv != NULL, "tcp driver not registered");
	TEST_ASSERT_STATUS(unio_config_snapshot(&cfg), UNIO_OK);
	TEST_ASSERT_STATUS(drv->query_devices(&cfg, devs, &n, reason, sizeof(reason)), UNIO_OK);
	for (unsigned int i = 0; i < n; i++)
		if (strcmp(devs[i].name, "lo") == 0)
			lo = i;
	TEST_ASSERT(lo != UINT32_MAX, "lo not listed (%u devices: %s)", n, reason);
	TEST_ASSERT_EQ(devs[lo].reach, UNIO_TL_REACH_HOST);
	TEST_ASSERT_STATUS(unio_config_set(&cfg, "NET_DEVICES", "^lo"), UNIO_OK);
	TEST_ASSERT_STATUS(drv->query_devices(&cfg, devs, &n, reason, sizeof(reason)), UNIO_OK);
	for (unsigned int i = 0; i < n; i++)
		TEST_ASSERT(strcmp(devs[i].name, "lo") != 0, "lo listed although denied");

	TEST_ASSERT_EQ(tpeer_open(&p, "lo"), 0);
	TEST_ASSERT(p.iface->ctl->iface_is_reachable(p.iface, p.addr, sizeof(a)), "self");
	memcpy(&a, p.addr, sizeof(a));
	a.netns_ino++;  /* same address, another namespace: loopback cannot reach it */
	TEST_ASSERT(!p.iface->ctl->iface_is_reachable(p.iface, &a, sizeof(a)), "other netns");
	memcpy(&a, p.addr, sizeof(a));
	a.boot_id[0] ^= 1;  /* another host */
	TEST_ASSERT(!p.iface->ctl->iface_is_reachable(p.iface, &a, sizeof(a)), "other host");
	memcpy(&a, p.addr, sizeof(a));
	a.version++;
	TEST_ASSERT(!p.iface->ctl->iface_is_reachable(p.iface, &a, sizeof(a)), "version");
	TEST_ASSERT_STATUS(unio_tl_ep_create(p.iface, &(struct unio_tl_ep_params){
		.iface_addr = &a, .iface_addr_len = sizeof(a) }, &p.ep), UNIO_ERR_UNREACHABLE);
	tpeer_close(&p);
	return TEST_OK;
}

/* A non-loopback interface never reaches a peer on a loopback address. */
UNIO_TEST(tcp_reach_no_loopback_from_net, fast)
{
	struct unio_tl_device_info devs[UNIO_TL_MAX_DEVICES];
	const struct unio_tl_driver *drv = unio_tl_driver_find("tcp");
	struct unio_config cfg;
	struct tpeer lo, net;
	unsigned int n = 0;
	char reason[128];
	const char *dev = NULL;

	TEST_ASSERT_STATUS(unio_config_snapshot(&cfg), UNIO_OK);
	drv->query_devices(&cfg, devs, &n, reason, sizeof(reason));
	for (unsigned int i = 0; i < n && dev == NULL; i++)
		if (devs[i].reach == UNIO_TL_REACH_NET)
			dev = devs[i].name;
	if (dev == NULL)
		TEST_SKIP_BECAUSE("no non-loopback interface with IPv4 is up here");
	TEST_ASSERT_EQ(tpeer_open(&lo, "lo"), 0);
	TEST_ASSERT_EQ(tpeer_open(&net, dev), 0);
	TEST_ASSERT(!net.iface->ctl->iface_is_reachable(net.iface, lo.addr,
							net.iface->attr.iface_addr_len),
		    "%s reaches a loopback address", dev);
	TEST_ASSERT(net.iface->ctl->iface_is_reachable(net.iface, net.addr,
						       net.iface->attr.iface_addr_len),
		    "%s does not reach its own address", dev);
	tpeer_close(&net);
	tpeer_close(&lo);
	return TEST_OK;
}

static void
progress2(struct tpeer *a, struct tpeer *b, int rounds)
{
	for (int i = 0; i < rounds; i++) {
		unio_tl_iface_progress(a->iface);
		unio_tl_iface_progress(b->iface);
	}
}

static int
ping_both(struct tpeer *a, struct tpeer *b, uint64_t seq)
{
	uint64_t cks = test_checksum("", 0);

	while (unio_tl_ep_am_short(a->ep, T_AM_DATA, seq, &cks, 8) == UNIO_ERR_NO_RESOURCE)
		progress2(a, b, 1);
	while (unio_tl_ep_am_short(b->ep, T_AM_DATA, seq, &cks, 8) == UNIO_ERR_NO_RESOURCE)
		progress2(a, b, 1);
	for (int i = 0; i < 100000 && (a->rx_next <= seq || b->rx_next <= seq); i++)
		progress2(a, b, 1);
	return a->rx_next == seq + 1 && b->rx_next == seq + 1 ? 0 : -1;
}

/*
 * Both sides connect at once, before either progresses: each side first sends on the
 * connection it opened; then the side with the larger address moves its sends to the other
 * connection (MOVE_END / MOVE_START), so that one socket carries both directions; every
 * direction stays in order across the move.
 */
UNIO_TEST(tcp_simultaneous_connect, fast)
{
	struct unio_tl_tcp_stats sa, sb;
	struct tpeer a, b;

	TEST_ASSERT_EQ(tpeer_open(&a, "lo"), 0);
	TEST_ASSERT_EQ(tpeer_open(&b, "lo"), 0);
	TEST_ASSERT_EQ(tpeer_connect(&a, b.addr), 0);
	TEST_ASSERT_EQ(tpeer_connect(&b, a.addr), 0);
	/* queued before either connection exists, delivered in order once they do */
	for (uint64_t s = 0; s < 100; s++)
		TEST_ASSERT_EQ(ping_both(&a, &b, s), 0);
	unio_tl_tcp_stats(a.iface, &sa);
	unio_tl_tcp_stats(b.iface, &sb);
	TEST_LOG("a: connected %" PRIu64 " accepted %" PRIu64 " dual %" PRIu64
		 " moved %" PRIu64 " open %" PRIu64 "; b: %" PRIu64 " %" PRIu64 " %" PRIu64
		 " %" PRIu64 " %" PRIu64,
		 sa.conns_connected, sa.conns_accepted, sa.conns_dual, sa.conns_moved,
		 sa.open_conns, sb.conns_connected, sb.conns_accepted, sb.conns_dual,
		 sb.conns_moved, sb.open_conns);
	TEST_ASSERT(sa.conns_dual == 1 && sb.conns_dual == 1 && sa.open_conns == 2 &&
		    sb.open_conns == 2, "not seen as a simultaneous connect");
	/* exactly the side with the larger address moved */
	TEST_ASSERT_EQ(sa.conns_moved, memcmp(a.addr, b.addr, a.iface->attr.iface_addr_len) > 0);
	TEST_ASSERT_EQ(sa.conns_moved + sb.conns_moved, 1);
	TEST_ASSERT_EQ(a.rx_bad + b.rx_bad + a.ep_errors + b.ep_errors, 0);
	TEST_ASSERT_EQ(sa.malformed + sb.malformed, 0);
	tpeer_close(&a);
	tpeer_close(&b);
	return TEST_OK;
}

/*
 * The move with traffic in flight, in busy and in epoll mode: both sides connect at once
 * and each queues 2000 messages (short and a 60 KiB bcopy every 16th, so the copy buffers
 * fill and the kernel pushes back) before the other progresses; then both progress and
 * keep sending.  Every message arrives once and in order (the handler checks the sequence
 * and checksum), and afterwards one side has moved.
 */
struct burst_arg {
	uint64_t h[2];
	const uint8_t *body;
	size_t len;
};

static size_t
burst_pack(void *dest, void *arg)
{
	struct burst_arg *a = arg;

	memcpy(dest, a->h, sizeof(a->h));
	memcpy((uint8_t *)dest + sizeof(a->h), a->body, a->len);
	return sizeof(a->h) + a->len;
}

/* Send data messages up to @p until; without @p other, stop when nothing more fits. */
static int
burst(struct tpeer *p, struct tpeer *other, uint64_t *seq, uint64_t until)
{
	static uint8_t body[60 * 1024];

	while (*seq < until) {
		size_t len = *seq % 16 == 15 ? sizeof(body) : 8;
		struct burst_arg a = { .h = { *seq, 0 }, .body = body, .len = len };
		unio_status_t st;

		test_fill(body, len, *seq);
		a.h[1] = test_checksum(body, len);
		if (len == 8) {
			uint8_t m[16];

			memcpy(m, &a.h[1], 8);
			memcpy(m + 8, body, 8);
			st = unio_tl_ep_am_short(p->ep, T_AM_DATA, *seq, m, sizeof(m));
		} else {
			st = (unio_status_t)RTE_MIN(unio_tl_ep_am_bcopy(p->ep, T_AM_DATA,
									burst_pack, &a, 0), 0);
		}
		if (st == UNIO_ERR_NO_RESOURCE) {
			if (other == NULL)
				return 0;  /* the kernel and the copy buffer are full: stop here */
			progress2(p, other, 1);
			continue;
		}
		if (st != UNIO_OK)
			return -1;
		(*seq)++;
	}
	return 0;
}

static bool
got_all(struct tpeer *p, uint64_t n)
{
	return p->rx_next >= n || p->rx_bad > 0;
}

static int
simultaneous_burst(const char *mode)
{
	struct unio_tl_tcp_stats sa, sb;
	struct tpeer a, b;
	uint64_t sqa = 0, sqb = 0;
	const uint64_t n = 2000;

	const char *set[] = { "TCP_POLL_MODE", mode, NULL };

	TEST_ASSERT_EQ(tpeer_open_set(&a, "lo", set), 0);
	TEST_ASSERT_EQ(tpeer_open_set(&b, "lo", set), 0);
	TEST_ASSERT_EQ(a.cfg.tcp_poll_mode, b.cfg.tcp_poll_mode);
	TEST_ASSERT_EQ(a.cfg.tcp_poll_mode, strcmp(mode, "busy") == 0 ? UNIO_TCP_POLL_BUSY :
					    UNIO_TCP_POLL_EPOLL);
	TEST_ASSERT_EQ(tpeer_connect(&a, b.addr), 0);
	TEST_ASSERT_EQ(tpeer_connect(&b, a.addr), 0);
	TEST_ASSERT_EQ(burst(&a, NULL, &sqa, n), 0);
	TEST_ASSERT_EQ(burst(&b, NULL, &sqb, n), 0);
	TEST_LOG("%s: queued %" PRIu64 " / %" PRIu64 " before progress", mode, sqa, sqb);
	TEST_ASSERT_EQ(burst(&a, &b, &sqa, n), 0);
	TEST_ASSERT_EQ(burst(&b, &a, &sqb, n), 0);
	for (int i = 0; i < 2000000 && (!got_all(&a, n) || !got_all(&b, n)); i++)
		progress2(&a, &b, 1);
	unio_tl_tcp_stats(a.iface, &sa);
	unio_tl_tcp_stats(b.iface, &sb);
	TEST_LOG("%s: received %" PRIu64 " / %" PRIu64 ", bad %" PRIu64 " / %" PRIu64
		 ", moved %" PRIu64 " / %" PRIu64, mode, a.rx_next, b.rx_next, a.rx_bad,
		 b.rx_bad, sa.conns_moved, sb.conns_moved);
	TEST_ASSERT_EQ(a.rx_bad + b.rx_bad + a.ep_errors + b.ep_errors, 0);
	TEST_ASSERT_EQ(a.rx_next, n);
	TEST_ASSERT_EQ(b.rx_next, n);
	TEST_ASSERT_EQ(sa.conns_moved + sb.conns_moved, 1);
	TEST_ASSERT_EQ(sa.malformed + sb.malformed, 0);
	tpeer_close(&a);
	tpeer_close(&b);
	return TEST_OK;
}

UNIO_TEST(tcp_simultaneous_connect_burst, fast)
{
	TEST_ASSERT_EQ(simultaneous_burst("busy"), TEST_OK);
	TEST_ASSERT_EQ(simultaneous_burst("epoll"), TEST_OK);
	return TEST_OK;
}

/* The acceptor's later ep to the peer reuses the peer's connection: one per pair. */
UNIO_TEST(tcp_one_connection_per_pair, fast)
{
	struct unio_tl_tcp_stats sa, sb;
	struct tpeer a, b;

	TEST_ASSERT_EQ(tpeer_open(&a, "lo"), 0);
	TEST_ASSERT_EQ(tpeer_open(&b, "lo"), 0);
	TEST_ASSERT_EQ(tpeer_connect(&a, b.addr), 0);
	/* b learns a's address from a's first message and connects back from its handler */
	TEST_ASSERT_STATUS(unio_tl_ep_am_short(a.ep, T_AM_HELLO, 0, a.addr,
					       a.iface->attr.iface_addr_len), UNIO_OK);
	for (int i = 0; i < 100000 && b.ep == NULL; i++)
		progress2(&a, &b, 1);
	TEST_ASSERT(b.ep != NULL, "b never heard from a");
	for (uint64_t s = 0; s < 100; s++)
		TEST_ASSERT_EQ(ping_both(&a, &b, s), 0);
	unio_tl_tcp_stats(a.iface, &sa);
	unio_tl_tcp_stats(b.iface, &sb);
	TEST_ASSERT_EQ(sa.open_conns, 1);
	TEST_ASSERT_EQ(sb.open_conns, 1);
	TEST_ASSERT_EQ(sa.conns_connected, 1);
	TEST_ASSERT_EQ(sb.conns_accepted, 1);
	TEST_ASSERT_EQ(sb.conns_connected + sa.conns_accepted + sa.conns_dual + sb.conns_dual, 0);
	tpeer_close(&a);
	tpeer_close(&b);
	return TEST_OK;
}

struct kslot {
	struct unio_tl_completion c;
	int done;
	unio_status_t st;
};

static void
kslot_done(struct unio_tl_completion *c)
{
	struct kslot *k = (struct kslot *)c;

	k->done++;
	k->st = c->status;
}

/* An iface connected to itself delivers to itself; zcopy and flush complete once. */
UNIO_TEST(tcp_self_connect, fast)
{
	uint8_t body[5000];
	uint64_t h[2] = { 0, 0 };
	struct iovec iov = { body, sizeof(body) };
	struct kslot z = { .c = { .func = kslot_done, .count = 1 } };
	struct kslot f = { .c = { .func = kslot_done, .count = 1 } };
	struct tpeer a;
	unio_status_t st;

	TEST_ASSERT_EQ(tpeer_open(&a, "lo"), 0);
	TEST_ASSERT_EQ(tpeer_connect(&a, a.addr), 0);
	test_fill(body, sizeof(body), 0);
	h[1] = test_checksum(body, sizeof(body));
	/* not connected yet: queued behind the HELLO, completes once the kernel took it */
	st = unio_tl_ep_am_zcopy(a.ep, T_AM_DATA, h, sizeof(h), &iov, 1, 0, &z.c);
	TEST_ASSERT(st == UNIO_OK || st == UNIO_INPROGRESS, "zcopy: %d", st);
	if (st == UNIO_OK)
		z.done = 1;
	st = unio_tl_ep_flush(a.ep, &f.c);
	TEST_ASSERT(st == UNIO_OK || st == UNIO_INPROGRESS, "flush: %d", st);
	if (st == UNIO_OK)
		f.done = 1;
	for (int i = 0; i < 100000 && (a.rx_next == 0 || f.done == 0); i++)
		unio_tl_iface_progress(a.iface);
	TEST_ASSERT_EQ(a.rx_next, 1);
	TEST_ASSERT_EQ(a.rx_bad, 0);
	TEST_ASSERT(z.done == 1 && z.st == UNIO_OK, "zcopy done %d st %d", z.done, z.st);
	TEST_ASSERT(f.done == 1 && f.st == UNIO_OK, "flush done %d st %d", f.done, f.st);
	TEST_ASSERT_STATUS(unio_tl_ep_flush(a.ep, NULL), UNIO_OK);
	tpeer_close(&a);
	return TEST_OK;
}

/* ---- a peer killed mid-transfer ---- */

static bool
accepted_one(struct tpeer *p)
{
	struct unio_tl_tcp_stats s;

	unio_tl_tcp_stats(p->iface, &s);
	return s.conns_accepted > 0;
}

/* argv: write fd.  Accepts one connection, then stops reading until killed. */
UNIO_TEST_CHILD(tcp_sink)
{
	char hex[2 * UNIO_TL_ADDR_MAX + 1];
	struct tpeer p;
	int wfd;

	if (argc < 1 || tpeer_open(&p, "lo") != 0)
		return 10;
	wfd = atoi(argv[0]);
	t_hex(p.addr, p.iface->attr.iface_addr_len, hex);
	dprintf(wfd, "%s\n", hex);
	close(wfd);
	if (!tpeer_wait(&p, accepted_one, 10000))
		return 11;
	alarm(30);  /* never outlive a broken test */
	pause();
	return 12;
}

static pid_t
spawn_with_addr(const char *name, const char *mode, uint8_t *addr, size_t len)
{
	char wfd[16], line[512], *sp;
	int fds[2];
	pid_t pid;

	if (pipe(fds) != 0)
		return -1;
	snprintf(wfd, sizeof(wfd), "%d", fds[1]);
	{
		const char *args[] = { wfd, "lo", mode, NULL };

		pid = test_spawn(name, args);
	}
	close(fds[1]);
	if (pid > 0 && t_read_line(fds[0], line, sizeof(line), 10000) == 0) {
		sp = strchr(line, ' ');
		if (sp != NULL)
			*sp = '\0';
		if (t_unhex(line, addr, len) == 0) {
			close(fds[0]);
			return pid;
		}
	}
	close(fds[0]);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return -1;
}

/* Fill the socket toward a non-reading peer with zcopy sends; 0 once some are pending. */
static int
fill_pipe(struct tpeer *p, struct kslot *ks, unsigned int n, uint8_t *buf, size_t len,
	  unsigned int *pending)
{
	struct iovec iov = { buf, len };
	uint64_t h = 0;

	*pending = 0;
	for (unsigned int i = 0; i < n; i++) {
		unio_status_t st;

		ks[i] = (struct kslot){ .c = { .func = kslot_done, .count = 1 } };
		st = unio_tl_ep_am_zcopy(p->ep, T_AM_RAW, &h, 8, &iov, 1, 0, &ks[i].c);
		if (st == UNIO_ERR_NO_RESOURCE) {
			ks[i].c.func = NULL;
			break;
		}
		if (st == UNIO_INPROGRESS)
			(*pending)++;
		else if (st != UNIO_OK)
			return -1;
		else
			ks[i].done = 1;
		unio_tl_iface_progress(p->iface);
	}
	return *pending > 0 ? 0 : -1;
}

static bool
all_failed(struct tpeer *p)
{
	return p->ep_errors > 0;
}

UNIO_TEST(tcp_peer_killed, mp)
{
	static uint8_t buf[256 * 1024];
	struct kslot ks[64];
	struct tpeer p = { .iface = NULL };
	unsigned int pending = 0, failed = 0;
	uint8_t sink_addr[UNIO_TL_ADDR_MAX], srv_addr[UNIO_TL_ADDR_MAX];
	pid_t sink, srv;
	int r = TEST_FAIL, rs;

	setenv("UNIO_TCP_SNDBUF", "64k", 1);
	setenv("UNIO_TCP_RCVBUF", "64k", 1);
	sink = spawn_with_addr("tcp_sink", "-", sink_addr, sizeof(struct tcp_addr));
	unsetenv("UNIO_TCP_SNDBUF");
	unsetenv("UNIO_TCP_RCVBUF");
	TEST_ASSERT(sink > 0, "sink did not start");
	srv = spawn_with_addr("tcp_server", "stream", srv_addr, sizeof(struct tcp_addr));
	if (srv < 0 || tpeer_open(&p, "lo") != 0 || tpeer_connect(&p, sink_addr) != 0)
		goto out;
	if (fill_pipe(&p, ks, RTE_DIM(ks), buf, sizeof(buf) - 1024, &pending) != 0) {
		TEST_LOG("no send stayed pending toward the stalled peer");
		goto out;
	}
	kill(sink, SIGKILL);
	waitpid(sink, NULL, 0);
	sink = -1;
	if (!tpeer_wait(&p, all_failed, 20000)) {
		TEST_LOG("no ep error within 20 s of the kill");
		goto out;
	}
	for (unsigned int i = 0; i < RTE_DIM(ks); i++)
		if (ks[i].c.func != NULL && ks[i].done == 1 && ks[i].st != UNIO_OK)
			failed++;
	TEST_LOG("%u sends pending at the kill, %u completed with an error (%s)", pending,
		 failed, unio_status_string(p.last_err));
	for (unsigned int i = 0; i < RTE_DIM(ks); i++)
		if (ks[i].c.func != NULL && ks[i].done != 1) {
			TEST_LOG("send %u completed %d times", i, ks[i].done);
			goto out;
		}
	if (failed == 0 || p.ep_errors != 1 ||
	    unio_tl_ep_am_short(p.ep, T_AM_RAW, 0, NULL, 0) != p.last_err)
		goto out;
	/* the same iface keeps serving another peer */
	unio_tl_ep_destroy(p.ep);
	p.ep = NULL;
	p.ep_errors = 0;
	if (tpeer_connect(&p, srv_addr) != 0 || t_stream_send(&p, 300) != 0)
		goto out;
	r = TEST_OK;
out:
	if (sink > 0) {
		kill(sink, SIGKILL);
		waitpid(sink, NULL, 0);
	}
	tpeer_close(&p);
	rs = srv > 0 ? test_wait(srv, 10000) : -1;
	TEST_ASSERT(rs == 0, "the good server exited with %d", rs);
	return r;
}

/* ---- malformed input ---- */

static int
raw_connect(const struct tcp_addr *srv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = srv->port,
				 .sin_addr.s_addr = srv->ipv4 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* A HELLO from a made-up iface (distinct port per connection). */
static size_t
raw_hello(uint8_t *buf, const struct tcp_addr *srv, uint16_t port)
{
	struct tcp_addr me = *srv;

	me.port = htons(port);
	tcp_hdr_set((struct tcp_hdr *)buf, sizeof(me), TCP_F_HELLO, 0);
	memcpy(buf + sizeof(struct tcp_hdr), &me, sizeof(me));
	return sizeof(struct tcp_hdr) + sizeof(me);
}

/* Send @p hello_port ? HELLO : nothing, then @p len bytes of @p tail, then close. */
static int
raw_session(const struct tcp_addr *srv, uint16_t hello_port, const void *tail, size_t len)
{
	uint8_t buf[256];
	size_t n = hello_port != 0 ? raw_hello(buf, srv, hello_port) : 0;
	int fd = raw_connect(srv);

	if (fd < 0 || n + len > sizeof(buf))
		return -1;
	memcpy(buf + n, tail, len);
	if (send(fd, buf, n + len, MSG_NOSIGNAL) != (ssize_t)(n + len)) {
		close(fd);
		return -1;
	}
	shutdown(fd, SHUT_WR);
	/* wait for the server to close its side (it reads everything first) */
	while (recv(fd, buf, sizeof(buf), 0) > 0)
		;
	close(fd);
	return 0;
}

/*
 * HELLO, then @p len bytes of @p tail, and the connection kept open: 0 when the server closes
 * it within 10 s without waiting for more.
 */
static int
raw_session_open(const struct tcp_addr *srv, uint16_t hello_port, const void *tail, size_t len)
{
	struct timeval tv = { .tv_sec = 10 };
	uint8_t buf[256];
	size_t n = raw_hello(buf, srv, hello_port);
	int fd = raw_connect(srv);
	ssize_t r;

	if (fd < 0 || n + len > sizeof(buf))
		return -1;
	memcpy(buf + n, tail, len);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (send(fd, buf, n + len, MSG_NOSIGNAL) != (ssize_t)(n + len)) {
		close(fd);
		return -1;
	}
	while ((r = recv(fd, buf, sizeof(buf), 0)) > 0)
		;
	close(fd);
	return r == 0 || (r < 0 && errno == ECONNRESET) ? 0 : -1;
}

/*
 * argv: server address.  Six bad connections (five malformed, one cut inside a frame, as a
 * peer that died would leave it) and one well-formed frame.  The sixth
 * announces a GET_RESP longer than the receive buffer that answers no get of the server's:
 * it could never be buffered whole, so the server closes the connection at its header
 * instead of waiting for the rest.
 */
UNIO_TEST_CHILD(tcp_fuzzer)
{
	static const char http[] = "GET / HTTP/1.0\r\nHost: x\r\n\r\n";
	struct tcp_addr srv;
	struct tcp_hdr h;
	uint8_t fr[64];
	int bad = 0;

	if (argc < 1 || t_unhex(argv[0], &srv, sizeof(srv)) != 0)
		return 10;
	alarm(30);
	bad |= raw_session(&srv, 0, http, sizeof(http));                 /* random bytes */
	raw_hello(fr, &srv, 1);
	bad |= raw_session(&srv, 0, fr, 5);                              /* truncated HELLO */
	tcp_hdr_set(&h, 0x7fffffff, TCP_F_AM, 1);
	bad |= raw_session(&srv, 2, &h, sizeof(h));                      /* length beyond limit */
	bad |= raw_session(&srv, 3, &h, 3);               /* cut inside a header: truncated */
	tcp_hdr_set(&h, 8, TCP_F_AM, 200);
	memcpy(fr, &h, sizeof(h));
	memcpy(fr + sizeof(h), "rawframe", 8);
	bad |= raw_session(&srv, 4, fr, 16);                             /* bad AM id */
	tcp_hdr_set(&h, 8, TCP_F_AM, T_AM_RAW);
	memcpy(fr, &h, sizeof(h));
	bad |= raw_session(&srv, 5, fr, 16);                             /* well-formed */
	{
		struct tcp_rma_hdr r = { .length = TCP_RXBUF_SIZE, .req_id = 12345 };

		tcp_hdr_set(&h, sizeof(r) + TCP_RXBUF_SIZE, TCP_F_GET_RESP, 0);
		memcpy(fr, &h, sizeof(h));
		memcpy(fr + sizeof(h), &r, sizeof(r));
		bad |= raw_session_open(&srv, 6, fr, sizeof(h) + sizeof(r) + 8);
	}
	return bad != 0 ? 11 : 0;
}

static bool
fuzz_done(struct tpeer *p)
{
	struct unio_tl_tcp_stats s;

	unio_tl_tcp_stats(p->iface, &s);
	return s.malformed + s.truncated >= 6 && p->raw_frames >= 1 &&
	       p->done_count != UINT64_MAX;
}

UNIO_TEST(tcp_malformed_frames, mp)
{
	char hex[2 * UNIO_TL_ADDR_MAX + 1];
	struct unio_tl_tcp_stats s;
	struct tpeer p;
	pid_t fz, cli;
	int rc, rf, r;

	TEST_ASSERT_EQ(tpeer_open(&p, "lo"), 0);
	t_hex(p.addr, p.iface->attr.iface_addr_len, hex);
	{
		const char *cargs[] = { "lo", hex, "-", "stream", "2000", NULL };
		const char *fargs[] = { hex, NULL };

		cli = test_spawn("tcp_client", cargs);
		fz = test_spawn("tcp_fuzzer", fargs);
	}
	/* serve both at once: the client's DONE, the fuzzer's six bad connections */
	if (!tpeer_wait(&p, fuzz_done, 30000))
		TEST_LOG("not everything arrived in 30 s");
	r = t_serve(&p, 20000);
	rc = test_wait(cli, 20000);
	rf = test_wait(fz, 20000);
	unio_tl_tcp_stats(p.iface, &s);
	TEST_LOG("malformed %" PRIu64 ", truncated %" PRIu64 ", raw frames %" PRIu64
		 ", stream %" PRIu64 " ok", s.malformed, s.truncated, p.raw_frames, p.rx_next);
	tpeer_close(&p);
	TEST_ASSERT(r == 0 && rc == 0 && rf == 0, "serve %d, client %d, fuzzer %d", r, rc, rf);
	TEST_ASSERT_EQ(s.malformed, 5);
	TEST_ASSERT_EQ(s.truncated, 1);
	TEST_ASSERT_EQ(p.raw_frames, 1);
	return TEST_OK;
}

/* ---- a peer that dies inside a frame ---- */

static bool
cut_ep_failed(struct tpeer *p)
{
	return p->ep_errors != 0;
}

static uint64_t want_accepted;

static bool
accepted(struct tpeer *p)
{
	struct unio_tl_tcp_stats s;

	unio_tl_tcp_stats(p->iface, &s);
	return s.conns_accepted == want_accepted;
}

/*
 * A peer killed while its socket buffer was full leaves part of a frame behind its last
 * whole one: the connection ends inside a frame.  That is the peer's connection lost, as a
 * reset or an EOF between frames is (UNIO_ERR_CONNECTION_RESET, counted as truncated), not
 * bad input (tl_mp_sigkill over tcp waited for a CONNECTION_RESET that came as PROTO).  Cut
 * inside the header and inside the payload; the whole frame before the cut is delivered.
 */
UNIO_TEST(tcp_peer_dies_mid_frame, fast)
{
	static const size_t cuts[] = { 3, sizeof(struct tcp_hdr) + 10 };
	struct unio_tl_tcp_stats s;
	struct tpeer p;

	TEST_ASSERT_EQ(tpeer_open(&p, "lo"), 0);
	for (unsigned int i = 0; i < RTE_DIM(cuts); i++) {
		const struct tcp_addr *srv = (const struct tcp_addr *)p.addr;
		uint8_t buf[256], fr[2 * sizeof(struct tcp_hdr) + 64] = { 0 };
		size_t n = raw_hello(buf, srv, (uint16_t)(7 + i));
		int fd = raw_connect(srv);
		struct tcp_hdr h;

		TEST_ASSERT(fd >= 0, "connect: %s", strerror(errno));
		TEST_ASSERT_EQ(send(fd, buf, n, MSG_NOSIGNAL), n);
		want_accepted = i + 1;
		TEST_ASSERT(tpeer_wait(&p, accepted, 10000), "HELLO %u not attached", i);
		/* the ep to the made-up peer shares the connection it opened */
		TEST_ASSERT_EQ(tpeer_connect(&p, buf + sizeof(struct tcp_hdr)), 0);
		tcp_hdr_set(&h, 8, TCP_F_AM, T_AM_RAW);
		memcpy(fr, &h, sizeof(h));
		memcpy(fr + sizeof(h), "rawframe", 8);
		tcp_hdr_set(&h, 64, TCP_F_AM, T_AM_RAW);
		memcpy(fr + sizeof(h) + 8, &h, sizeof(h));
		n = sizeof(h) + 8 + cuts[i];
		TEST_ASSERT_EQ(send(fd, fr, n, MSG_NOSIGNAL), n);
		close(fd);
		TEST_ASSERT(tpeer_wait(&p, cut_ep_failed, 10000), "cut %u: no ep error", i);
		unio_tl_tcp_stats(p.iface, &s);
		TEST_LOG("cut after %zu bytes of the frame: %s, malformed %" PRIu64
			 ", truncated %" PRIu64, cuts[i], unio_status_string(p.last_err),
			 s.malformed, s.truncated);
		TEST_ASSERT_STATUS(p.last_err, UNIO_ERR_CONNECTION_RESET);
		TEST_ASSERT_EQ(p.ep_errors, 1);
		TEST_ASSERT_EQ(p.raw_frames, i + 1);
		TEST_ASSERT_STATUS(unio_tl_ep_am_short(p.ep, T_AM_RAW, 0, NULL, 0),
				   UNIO_ERR_CONNECTION_RESET);
		TEST_ASSERT_EQ(s.malformed, 0);
		TEST_ASSERT_EQ(s.truncated, i + 1);
		TEST_ASSERT_EQ(s.conns_failed, i + 1);
		unio_tl_ep_destroy(p.ep);
		p.ep = NULL;
		p.ep_errors = 0;
	}
	tpeer_close(&p);
	return TEST_OK;
}

/* ---- a peer that stops inside the move of a simultaneous connect ---- */

/*
 * A made-up peer speaking the wire protocol over plain sockets, with an address that sorts
 * after @p a's: it is the side that moves, a's connection is the one that survives.
 */
struct mover {
	struct tcp_addr addr;
	int lfd;  /* listening */
	int in;   /* accepted: a's connection, the survivor */
	int out;  /* the mover's own connection to a, the one its move leaves */
};

/*
 * The mover listens on a port whose address sorts after a's (@p below: before it, and then
 * a is the side that moves); 0 or -1.
 */
static int
mover_listen_at(struct mover *m, const struct tcp_addr *a, bool below)
{
	/*
	 * The ports above a's, in order: the address sorts after a's by its port alone.  (It
	 * took whatever port bind() chose and gave up after 100 that sorted before a's: with
	 * a's port near the top of the ephemeral range, no port the kernel picks is above it.)
	 */
	for (uint32_t port = ntohs(a->port) + (below ? -1u : 1u); port <= 65535 && port >= 1024;
	     port += below ? -1u : 1u) {
		struct sockaddr_in s = { .sin_family = AF_INET, .sin_addr.s_addr = a->ipv4,
					 .sin_port = htons((uint16_t)port) };
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0)
			return -1;
		if (bind(fd, (struct sockaddr *)&s, sizeof(s)) != 0 || listen(fd, 4) != 0) {
			close(fd);
			continue;   /* taken */
		}
		m->addr = *a;
		m->addr.port = s.sin_port;
		if ((memcmp(&m->addr, a, sizeof(*a)) <= 0) != below) {
			close(fd);
			return -1;
		}
		m->lfd = fd;
		return 0;
	}
	TEST_LOG("no free port %s %u for the mover", below ? "below" : "above",
		 ntohs(a->port));
	return -1;
}

static void
mover_close(struct mover *m)
{
	if (m->lfd >= 0)
		close(m->lfd);
	if (m->in >= 0)
		close(m->in);
	if (m->out >= 0)
		close(m->out);
}

/* Progress @p p until @p fd is readable, at most @p ms; 0 or -1. */
static int
progress_until_readable(struct tpeer *p, int fd, int ms)
{
	uint64_t end = test_now_ms() + (uint64_t)ms;

	while (test_now_ms() < end) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		if (poll(&pfd, 1, 0) > 0)
			return 0;
		unio_tl_iface_progress(p->iface);
	}
	return -1;
}

/* Read exactly @p len bytes from @p fd, progressing @p p meanwhile; 0 or -1. */
static int
read_n(struct tpeer *p, int fd, uint8_t *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t r;

		if (progress_until_readable(p, fd, 5000) != 0)
			return -1;
		r = recv(fd, buf + got, len - got, MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN))
			return -1;
		got += r > 0 ? (size_t)r : 0;
	}
	return 0;
}

/*
 * The mover listens on a port that sorts after @p a's address (before it with @p below), @p a
 * dials it, and the mover accepts a's connection and reads its HELLO; 0 or -1.
 */
static int
mover_dial(struct mover *m, struct tpeer *a, bool below)
{
	size_t hello_len = sizeof(struct tcp_hdr) + sizeof(struct tcp_addr);
	uint8_t buf[sizeof(struct tcp_hdr) + sizeof(struct tcp_addr)];

	if (mover_listen_at(m, (const struct tcp_addr *)a->addr, below) != 0 ||
	    tpeer_connect(a, (const uint8_t *)&m->addr) != 0)
		return -1;
	if (progress_until_readable(a, m->lfd, 5000) != 0 ||
	    (m->in = accept(m->lfd, NULL, NULL)) < 0 || read_n(a, m->in, buf, hello_len) != 0) {
		TEST_LOG("a never connected to the mover");
		return -1;
	}
	return 0;
}

static bool
dual_seen(struct tpeer *p)
{
	struct unio_tl_tcp_stats s;

	unio_tl_tcp_stats(p->iface, &s);
	return s.conns_dual > 0;
}

static bool
dup_seen(struct tpeer *p)
{
	struct unio_tl_tcp_stats s;

	unio_tl_tcp_stats(p->iface, &s);
	return s.conns_duplicate > 0;
}

static bool
ep_failed(struct tpeer *p)
{
	return p->ep_errors > 0;
}

static size_t
raw_am(uint8_t *buf)
{
	tcp_hdr_set((struct tcp_hdr *)buf, 8, TCP_F_AM, T_AM_RAW);
	memcpy(buf + sizeof(struct tcp_hdr), "rawframe", 8);
	return sizeof(struct tcp_hdr) + 8;
}

static int
send_all(int fd, const uint8_t *buf, size_t len)
{
	return send(fd, buf, len, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

/*
 * Iface a connects to the mover, the mover connects back (a simultaneous connect that a's
 * connection survives), then the mover sends MOVE_START on a's connection with a frame
 * behind it, and stops: its MOVE_END never comes (@p cut: only the first 5 bytes of it,
 * behind a frame that is delivered).  The frame after MOVE_START must not be delivered
 * (it may not overtake what the old connection still owes); a's ep fails with
 * UNIO_ERR_TIMED_OUT once UNIO_PEER_TIMEOUT (1 s) passed, never hangs; the same iface
 * then receives a well-behaved peer's 100 messages.
 */
static int
stopped_move(bool cut, const char *mode)
{
	const char *set[] = { "PEER_TIMEOUT", "1s", "TCP_POLL_MODE", mode, NULL };
	struct mover m = { .lfd = -1, .in = -1, .out = -1 };
	struct unio_tl_tcp_stats s;
	struct tpeer a, good;
	const struct tcp_addr *aa;
	uint8_t buf[256];
	size_t n;
	uint64_t t0, waited, cks = test_checksum("", 0);
	unio_status_t st;
	int r = TEST_FAIL;

	TEST_ASSERT_EQ(tpeer_open_set(&a, "lo", set), 0);
	TEST_ASSERT_EQ(tpeer_open(&good, "lo"), 0);
	aa = (const struct tcp_addr *)a.addr;
	/* a's connection: accepted by the mover, which reads a's HELLO */
	if (mover_dial(&m, &a, false) != 0)
		goto out;
	/* the mover's own connection to a, with its HELLO: a sees both (conns_dual) */
	n = raw_hello(buf, aa, ntohs(m.addr.port));
	m.out = raw_connect(aa);
	if (m.out < 0 || send_all(m.out, buf, n) != 0 || !tpeer_wait(&a, dual_seen, 5000)) {
		TEST_LOG("a did not see the simultaneous connect");
		goto out;
	}
	if (cut) {
		n = raw_am(buf);
		tcp_hdr_set((struct tcp_hdr *)(buf + n), 0, TCP_F_MOVE_END, 0);
		if (send_all(m.out, buf, n + 5) != 0)
			goto out;
	}
	tcp_hdr_set((struct tcp_hdr *)buf, 0, TCP_F_MOVE_START, 0);
	n = sizeof(struct tcp_hdr) + raw_am(buf + sizeof(struct tcp_hdr));
	if (send_all(m.in, buf, n) != 0)
		goto out;
	t0 = test_now_ms();
	tpeer_wait(&a, ep_failed, 10000);
	waited = test_now_ms() - t0;
	unio_tl_tcp_stats(a.iface, &s);
	TEST_LOG("%s, %s: ep errors %d (%s) after %" PRIu64 " ms, raw frames %" PRIu64
		 ", move timeouts %" PRIu64, mode, cut ? "cut MOVE_END" : "no MOVE_END",
		 a.ep_errors, unio_status_string(a.last_err), waited, a.raw_frames,
		 s.move_timeouts);
	if (a.ep_errors != 1 || a.last_err != UNIO_ERR_TIMED_OUT || waited < 950 ||
	    waited > 5000 || a.raw_frames != (cut ? 1u : 0u) || s.move_timeouts != 1 ||
	    s.malformed != 0 || s.conns_failed != 2) {
		TEST_LOG("not the expected failure");
		goto out;
	}
	st = unio_tl_ep_am_short(a.ep, T_AM_DATA, 0, &cks, 8);
	if (st != UNIO_ERR_TIMED_OUT) {
		TEST_LOG("a send after the failure: %s", unio_status_string(st));
		goto out;
	}
	/* the iface keeps serving: a well-behaved peer's stream arrives whole */
	if (tpeer_connect(&good, a.addr) != 0)
		goto out;
	for (uint64_t q = 0; q < 100; q++)
		while ((st = unio_tl_ep_am_short(good.ep, T_AM_DATA, q, &cks, 8)) ==
		       UNIO_ERR_NO_RESOURCE)
			progress2(&a, &good, 1);
	for (int i = 0; i < 1000000 && !got_all(&a, 100) && st == UNIO_OK; i++)
		progress2(&a, &good, 1);
	TEST_LOG("then %" PRIu64 " of 100 from a good peer, %" PRIu64 " bad", a.rx_next,
		 a.rx_bad);
	if (a.rx_next == 100 && a.rx_bad == 0 && a.ep_errors == 1 && good.ep_errors == 0)
		r = TEST_OK;
out:
	mover_close(&m);
	tpeer_close(&good);
	tpeer_close(&a);
	return r;
}

UNIO_TEST(tcp_move_stopped_peer, fast)
{
	TEST_ASSERT_EQ(stopped_move(false, "busy"), TEST_OK);
	TEST_ASSERT_EQ(stopped_move(true, "busy"), TEST_OK);
	TEST_ASSERT_EQ(stopped_move(false, "epoll"), TEST_OK);
	TEST_ASSERT_EQ(stopped_move(true, "epoll"), TEST_OK);
	return TEST_OK;
}

/*
 * The side whose connection survives a simultaneous connect reads the mover's MOVE_START
 * before it has looked at its listen socket, where the mover's connection, HELLO and
 * MOVE_END already wait (busy mode looks at its next epoll, 16 progress calls later), and
 * then makes no progress call for longer than UNIO_PEER_TIMEOUT (1 s), as an application
 * does that spends the time between calls elsewhere: am_mp_sizes_tcp fills and checksums
 * 64 MiB of send buffers between calls, 10 s and more on a CPU shared by six processes.
 * The wait used to run out with the HELLO unread: the connection failed as malformed and
 * every request on it with UNIO_ERR_PROTO.  Now the move completes: the frame behind
 * MOVE_START arrives, no ep error, nothing malformed, no move timeout.
 */
static int
late_hello_move(const char *mode)
{
	const char *set[] = { "PEER_TIMEOUT", "1s", "TCP_POLL_MODE", mode, NULL };
	struct mover m = { .lfd = -1, .in = -1, .out = -1 };
	size_t n;
	struct unio_tl_tcp_stats s;
	const struct tcp_addr *aa;
	uint8_t buf[256];
	struct tpeer a;
	int r = TEST_FAIL;

	TEST_ASSERT_EQ(tpeer_open_set(&a, "lo", set), 0);
	aa = (const struct tcp_addr *)a.addr;
	if (mover_dial(&m, &a, false) != 0)
		goto out;
	/* the mover's own connection: HELLO and MOVE_END, while a makes no progress call */
	n = raw_hello(buf, aa, ntohs(m.addr.port));
	tcp_hdr_set((struct tcp_hdr *)(buf + n), 0, TCP_F_MOVE_END, 0);
	m.out = raw_connect(aa);
	if (m.out < 0 || send_all(m.out, buf, n + sizeof(struct tcp_hdr)) != 0)
		goto out;
	/* MOVE_START on a's connection, a frame behind it */
	tcp_hdr_set((struct tcp_hdr *)buf, 0, TCP_F_MOVE_START, 0);
	n = sizeof(struct tcp_hdr) + raw_am(buf + sizeof(struct tcp_hdr));
	if (send_all(m.in, buf, n) != 0)
		goto out;
	usleep(20000);                       /* on loopback: in a's sockets by now */
	unio_tl_iface_progress(a.iface);     /* reads MOVE_START */
	usleep(1300000);                     /* the application is elsewhere */
	for (uint64_t end = test_now_ms() + 3000; test_now_ms() < end && a.raw_frames == 0 &&
	     a.ep_errors == 0;)
		unio_tl_iface_progress(a.iface);
	unio_tl_tcp_stats(a.iface, &s);
	TEST_LOG("%s: raw frames %" PRIu64 ", ep errors %d (%s), malformed %" PRIu64
		 ", move timeouts %" PRIu64 ", dual %" PRIu64, mode, a.raw_frames, a.ep_errors,
		 unio_status_string(a.last_err), s.malformed, s.move_timeouts, s.conns_dual);
	if (a.raw_frames == 1 && a.ep_errors == 0 && s.malformed == 0 && s.move_timeouts == 0 &&
	    s.conns_dual == 1)
		r = TEST_OK;
out:
	mover_close(&m);
	tpeer_close(&a);
	return r;
}

UNIO_TEST(tcp_move_late_hello, fast)
{
	TEST_ASSERT_EQ(late_hello_move("busy"), TEST_OK);
	TEST_ASSERT_EQ(late_hello_move("epoll"), TEST_OK);
	return TEST_OK;
}

/*
 * ---- a hostile mover: MOVE frames in orders no well-behaved peer sends ----
 *
 * Each scenario sets up the simultaneous connect of stopped_move() (the mover sorts after
 * a: a's connection survives) and then sends what its case names.  Data frames carry a
 * sequence number and checksum (T_AM_DATA): what arrives arrives once and in order.
 */
enum hostile {
	H_BOTH_START,   /* MOVE_START and a frame on both connections */
	H_EARLY_START,  /* MOVE_START before the mover's connection exists at all */
	H_START_TWICE,  /* MOVE_END, then MOVE_START twice on a's connection */
	H_END_ONLY,     /* MOVE_END on a's connection, where only MOVE_START may come */
	H_REHELLO,      /* a second connection with the same HELLO: a duplicate */
	H_WINNER_START, /* the mover sorts first (a moves) and still sends MOVE_START */
};

static const char *const hostile_name[] = { "both MOVE_START", "early MOVE_START",
					    "MOVE_START twice", "MOVE_END only", "second HELLO",
					    "MOVE_START from the winner" };

static size_t
raw_data(uint8_t *buf, uint64_t seq)
{
	uint64_t h[2] = { seq, test_checksum("", 0) };

	tcp_hdr_set((struct tcp_hdr *)buf, sizeof(h), TCP_F_AM, T_AM_DATA);
	memcpy(buf + sizeof(struct tcp_hdr), h, sizeof(h));
	return sizeof(struct tcp_hdr) + sizeof(h);
}

static size_t
raw_move(uint8_t *buf, uint8_t type)
{
	tcp_hdr_set((struct tcp_hdr *)buf, 0, type, 0);
	return sizeof(struct tcp_hdr);
}

static bool
data_or_error(struct tpeer *p)
{
	return p->ep_errors > 0 || p->rx_next >= 2;
}

/* The iface still takes a new, well-behaved peer's 100 messages, whole and in order. */
static bool
serves_good_peer(struct tpeer *a, uint64_t base)
{
	uint64_t cks = test_checksum("", 0);
	unio_status_t st = UNIO_OK;
	struct tpeer good;
	bool ok;

	if (tpeer_open(&good, "lo") != 0)
		return false;
	if (tpeer_connect(&good, a->addr) != 0) {
		tpeer_close(&good);
		return false;
	}
	a->rx_next = base;
	for (uint64_t q = base; q < base + 100 && st == UNIO_OK; q++)
		while ((st = unio_tl_ep_am_short(good.ep, T_AM_DATA, q, &cks, 8)) ==
		       UNIO_ERR_NO_RESOURCE)
			progress2(a, &good, 1);
	for (int i = 0; i < 1000000 && !got_all(a, base + 100) && st == UNIO_OK; i++)
		progress2(a, &good, 1);
	ok = st == UNIO_OK && a->rx_next == base + 100 && a->rx_bad == 0 && good.ep_errors == 0;
	TEST_LOG("then %" PRIu64 " of 100 from a good peer, %" PRIu64 " bad (%s)",
		 a->rx_next - base, a->rx_bad, ok ? "ok" : "FAILED");
	tpeer_close(&good);
	return ok;
}

static int
hostile_move(enum hostile h, const char *mode)
{
	const char *set[] = { "PEER_TIMEOUT", "1s", "TCP_POLL_MODE", mode, NULL };
	struct mover m = { .lfd = -1, .in = -1, .out = -1 };
	size_t n = 0;
	struct unio_tl_tcp_stats s;
	const struct tcp_addr *aa;
	uint8_t buf[512], buf2[512];
	int out2 = -1, r = TEST_FAIL;
	struct tpeer a;
	bool ok;

	TEST_ASSERT_EQ(tpeer_open_set(&a, "lo", set), 0);
	aa = (const struct tcp_addr *)a.addr;
	if (mover_dial(&m, &a, h == H_WINNER_START) != 0)
		goto out;
	m.out = raw_connect(aa);
	if (m.out < 0)
		goto out;
	n = raw_hello(buf, aa, ntohs(m.addr.port));
	switch (h) {
	case H_BOTH_START:
		/* the mover's connection: HELLO, MOVE_START, a frame; a's: MOVE_START, a frame */
		n += raw_move(buf + n, TCP_F_MOVE_START);
		n += raw_data(buf + n, 1);
		if (send_all(m.out, buf, n) != 0)
			goto out;
		n = raw_move(buf, TCP_F_MOVE_START);
		n += raw_data(buf + n, 0);
		if (send_all(m.in, buf, n) != 0)
			goto out;
		break;
	case H_EARLY_START:
		/* MOVE_START and a frame on a's connection, read before the mover's HELLO */
		n = raw_move(buf2, TCP_F_MOVE_START);
		n += raw_data(buf2 + n, 1);
		if (send_all(m.in, buf2, n) != 0)
			goto out;
		usleep(20000);
		for (int i = 0; i < 64; i++)
			unio_tl_iface_progress(a.iface);
		n = raw_hello(buf, aa, ntohs(m.addr.port));
		n += raw_data(buf + n, 0);
		n += raw_move(buf + n, TCP_F_MOVE_END);
		if (send_all(m.out, buf, n) != 0)
			goto out;
		break;
	case H_START_TWICE:
		n += raw_data(buf + n, 0);
		n += raw_move(buf + n, TCP_F_MOVE_END);
		if (send_all(m.out, buf, n) != 0)
			goto out;
		n = raw_move(buf, TCP_F_MOVE_START);
		n += raw_data(buf + n, 1);
		n += raw_move(buf + n, TCP_F_MOVE_START);
		n += raw_data(buf + n, 2);
		if (send_all(m.in, buf, n) != 0)
			goto out;
		break;
	case H_END_ONLY:
		if (send_all(m.out, buf, n) != 0 || !tpeer_wait(&a, dual_seen, 5000))
			goto out;
		n = raw_data(buf, 0);
		n += raw_move(buf + n, TCP_F_MOVE_END);
		n += raw_data(buf + n, 1);
		if (send_all(m.in, buf, n) != 0)
			goto out;
		break;
	case H_REHELLO:
		/*
		 * a second connection with the mover's HELLO, a frame and MOVE_END: a duplicate
		 * of the first (still open), closed unread; then the move on the first
		 */
		if (send_all(m.out, buf, n) != 0 || !tpeer_wait(&a, dual_seen, 5000))
			goto out;
		out2 = raw_connect(aa);
		n += raw_data(buf + n, 0);
		n += raw_move(buf + n, TCP_F_MOVE_END);
		if (out2 < 0 || send_all(out2, buf, n) != 0 || !tpeer_wait(&a, dup_seen, 5000))
			goto out;
		n = raw_data(buf, 0);
		n += raw_move(buf + n, TCP_F_MOVE_END);
		if (send_all(m.out, buf, n) != 0)
			goto out;
		n = raw_move(buf, TCP_F_MOVE_START);
		n += raw_data(buf + n, 1);
		if (send_all(m.in, buf, n) != 0)
			goto out;
		break;
	case H_WINNER_START:
		/*
		 * a's connection loses: a MOVE_START on it is malformed, whether a reads it
		 * before the HELLO (taking the HELLO then moves the connection that parses)
		 * or after a moved
		 */
		n += raw_data(buf + n, 0);
		if (send_all(m.out, buf, n) != 0)
			goto out;
		n = raw_move(buf, TCP_F_MOVE_START);
		n += raw_data(buf + n, 1);
		if (send_all(m.in, buf, n) != 0)
			goto out;
		break;
	}
	tpeer_wait(&a, data_or_error, 4000);
	if (h == H_START_TWICE)  /* the second waits for a HELLO, UNIO_PEER_TIMEOUT at most */
		tpeer_wait(&a, ep_failed, 4000);
	for (int i = 0; i < 200; i++)
		unio_tl_iface_progress(a.iface);
	unio_tl_tcp_stats(a.iface, &s);
	TEST_LOG("%s, %s: frames %" PRIu64 " (bad %" PRIu64 "), ep errors %d (%s), malformed %"
		 PRIu64 ", move timeouts %" PRIu64 ", dual %" PRIu64, hostile_name[h], mode,
		 a.rx_next, a.rx_bad, a.ep_errors, unio_status_string(a.last_err), s.malformed,
		 s.move_timeouts, s.conns_dual);
	/* frames in order, each once; the ep failed at most once, and for a reason counted */
	ok = a.rx_bad == 0 && a.ep_errors <= 1 &&
	     (a.ep_errors == 0 || s.malformed + s.move_timeouts >= 1 ||
	      a.last_err == UNIO_ERR_CONNECTION_RESET);
	switch (h) {
	case H_BOTH_START:   /* the anonymous connection's MOVE_START is malformed */
		ok = ok && s.malformed >= 1 && a.ep_errors == 1;
		break;
	case H_END_ONLY:     /* so is a MOVE_END on a's connection: nothing after it */
		ok = ok && a.rx_next == 1 && s.malformed == 1 && a.ep_errors == 1 &&
		     a.last_err == UNIO_ERR_PROTO;
		break;
	case H_EARLY_START:  /* a peer that is merely early: the move completes */
		ok = ok && a.rx_next == 2 && a.ep_errors == 0 && s.malformed == 0;
		break;
	case H_START_TWICE:  /* the first completes, the second is malformed after the wait */
		ok = ok && a.rx_next == 2 && a.ep_errors == 1 && s.malformed == 1;
		break;
	case H_REHELLO:      /* nothing of the duplicate delivered; the move completes */
		ok = ok && a.rx_next == 2 && a.ep_errors == 0 && s.malformed == 0 &&
		     s.conns_dual == 1 && s.conns_duplicate == 1;
		break;
	case H_WINNER_START: /* at once; a's eps fail only if they had not moved yet */
		ok = ok && a.rx_next == 1 && s.malformed == 1 && s.move_timeouts == 0;
		break;
	}
	if (!ok)
		TEST_LOG("not the expected outcome");
	if (ok && serves_good_peer(&a, 1000))
		r = TEST_OK;
out:
	/* a closes with the mover's connections still open: each is freed once */
	tpeer_close(&a);
	if (out2 >= 0)
		close(out2);
	mover_close(&m);
	return r;
}

UNIO_TEST(tcp_move_hostile, fast)
{
	static const char *const modes[] = { "busy", "epoll" };

	for (unsigned int k = 0; k < RTE_DIM(modes); k++)
		for (int h = H_BOTH_START; h <= H_WINNER_START; h++)
			TEST_ASSERT_EQ(hostile_move((enum hostile)h, modes[k]), TEST_OK);
	return TEST_OK;
}

/*
 * An accepted connection that never sends its HELLO is closed once UNIO_PEER_TIMEOUT has
 * passed, in both poll modes.  Busy mode counted each call twice on its epoll calls, so its
 * timer check (one call in 1024) never came: such a socket stayed open for ever.
 */
static int
silent_accept(const char *mode)
{
	const char *set[] = { "PEER_TIMEOUT", "200ms", "TCP_POLL_MODE", mode, NULL };
	uint64_t start, closed = 0;
	struct tpeer a;
	int fd;

	TEST_ASSERT_EQ(tpeer_open_set(&a, "lo", set), 0);
	fd = raw_connect((const struct tcp_addr *)a.addr);
	if (fd < 0) {
		tpeer_close(&a);
		return TEST_FAIL;
	}
	start = test_now_ms();
	while (closed == 0 && test_now_ms() < start + 5000) {
		char c;
		ssize_t k;

		unio_tl_iface_progress(a.iface);
		k = recv(fd, &c, 1, MSG_DONTWAIT);
		if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
			closed = test_now_ms();
		else if (k > 0)
			break;  /* the iface sends nothing on a connection it accepted */
	}
	close(fd);
	tpeer_close(&a);
	TEST_LOG("%s: closed after %" PRIu64 " ms (0: not in 5 s)", mode,
		 closed != 0 ? closed - start : 0);
	TEST_ASSERT(closed != 0, "%s: a silent accepted socket was never closed", mode);
	TEST_ASSERT(closed - start >= 150, "%s: closed before the timeout", mode);
	return TEST_OK;
}

UNIO_TEST(tcp_silent_accept_closed, fast)
{
	TEST_ASSERT_EQ(silent_accept("busy"), TEST_OK);
	TEST_ASSERT_EQ(silent_accept("epoll"), TEST_OK);
	return TEST_OK;
}

/*
 * ---- the same HELLO on many connections ----
 *
 * A raw client opens DUP_N connections that each say the HELLO of good (a well-behaved peer
 * that exchanges verified messages with a over one connection meanwhile) and DUP_N more
 * that each say the HELLO of one made-up iface Y.  A HELLO from an identity whose incoming
 * connection is alive is a duplicate: closed at once, counted in conns_duplicate.  So the
 * first Y connection stays open and every other raw one is closed (2 * DUP_N - 1), good's
 * messages arrive whole and in order both ways, and nothing pairs as a simultaneous
 * connect.  (Before, each was kept until the 64 pending slots filled, and good's HELLO
 * paired a's connection with the raw client's: a simultaneous connect that never was.)
 * Then Y reconnects: its new connection's HELLO and a frame, then the old one closes, before
 * a progresses (epoll mode reads the HELLO first): a peer that closed its connection is no
 * duplicate, the new one is taken and its frame delivered.
 */
#define DUP_N 12

/* Has the other side closed @p fd (EOF or reset)?  Nothing is ever sent to it. */
static bool
raw_peer_closed(int fd)
{
	char c;
	ssize_t k = recv(fd, &c, 1, MSG_DONTWAIT);

	return k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* @p good connects to @p a, which connects back from its handler over the same connection. */
static bool
connect_back(struct tpeer *a, struct tpeer *good)
{
	if (tpeer_connect(good, a->addr) != 0 ||
	    unio_tl_ep_am_short(good->ep, T_AM_HELLO, 0, good->addr,
				good->iface->attr.iface_addr_len) != UNIO_OK)
		return false;
	for (int i = 0; i < 100000 && a->ep == NULL; i++)
		progress2(a, good, 1);
	return a->ep != NULL;
}

static bool
dups_seen(struct tpeer *p)
{
	struct unio_tl_tcp_stats s;

	unio_tl_tcp_stats(p->iface, &s);
	return s.conns_duplicate >= 2 * DUP_N - 1;
}

static bool
raw_frame_seen(struct tpeer *p)
{
	return p->raw_frames > 0;
}

static int
duplicate_hello(const char *mode)
{
	const char *set[] = { "TCP_POLL_MODE", mode, NULL };
	int fd_g[DUP_N], fd_y[DUP_N], fd_new = -1, r = TEST_FAIL;
	unsigned int closed_g = 0, closed_y = 0;
	const struct tcp_addr *aa, *ga;
	struct unio_tl_tcp_stats s;
	struct tpeer a, good;
	uint8_t buf[256];
	uint64_t seq = 0;
	size_t n;
	bool ok;

	for (int k = 0; k < DUP_N; k++)
		fd_g[k] = fd_y[k] = -1;
	TEST_ASSERT_EQ(tpeer_open_set(&a, "lo", set), 0);
	TEST_ASSERT_EQ(tpeer_open(&good, "lo"), 0);
	aa = (const struct tcp_addr *)a.addr;
	ga = (const struct tcp_addr *)good.addr;
	if (!connect_back(&a, &good)) {
		TEST_LOG("a never heard from good");
		goto out;
	}
	for (int k = 0; k < DUP_N; k++, seq++) {
		n = raw_hello(buf, ga, ntohs(ga->port));   /* good's own identity */
		fd_g[k] = raw_connect(aa);
		if (fd_g[k] < 0 || send_all(fd_g[k], buf, n) != 0)
			goto out;
		n = raw_hello(buf, aa, 1);                  /* Y: a made-up iface */
		fd_y[k] = raw_connect(aa);
		if (fd_y[k] < 0 || send_all(fd_y[k], buf, n) != 0)
			goto out;
		if (ping_both(&a, &good, seq) != 0) {
			TEST_LOG("message %" PRIu64 " lost (a got %" PRIu64 ", good %" PRIu64 ")",
				 seq, a.rx_next, good.rx_next);
			goto out;
		}
	}
	tpeer_wait(&a, dups_seen, 5000);
	for (int i = 0; i < 100; i++, seq++)
		if (ping_both(&a, &good, seq) != 0)
			goto out;
	for (int k = 0; k < DUP_N; k++) {
		closed_g += raw_peer_closed(fd_g[k]);
		closed_y += raw_peer_closed(fd_y[k]);
	}
	unio_tl_tcp_stats(a.iface, &s);
	TEST_LOG("%s: %u of %d with good's HELLO closed, %u of %d with Y's (the first %s), "
		 "duplicates %" PRIu64 ", accepted %" PRIu64 ", open %" PRIu64 ", dual %" PRIu64
		 ", %" PRIu64 " messages each way", mode, closed_g, DUP_N, closed_y, DUP_N,
		 raw_peer_closed(fd_y[0]) ? "closed" : "open", s.conns_duplicate,
		 s.conns_accepted, s.open_conns, s.conns_dual, seq);
	ok = closed_g == DUP_N && closed_y == DUP_N - 1 && !raw_peer_closed(fd_y[0]) &&
	     s.conns_duplicate == 2 * DUP_N - 1 && s.conns_accepted == 2 && s.open_conns == 2 &&
	     s.conns_dual == 0 && s.conns_moved == 0 && s.malformed == 0 &&
	     a.rx_next == seq && good.rx_next == seq && a.rx_bad + good.rx_bad == 0 &&
	     a.ep_errors + good.ep_errors == 0;
	if (!ok) {
		TEST_LOG("not the expected outcome");
		goto out;
	}
	/* Y reconnects: HELLO and a frame on a new connection, then the old one closes */
	n = raw_hello(buf, aa, 1);
	n += raw_am(buf + n);
	fd_new = raw_connect(aa);
	if (fd_new < 0)
		goto out;
	for (int i = 0; i < 64; i++)   /* accepted, its HELLO not sent yet */
		unio_tl_iface_progress(a.iface);
	if (send_all(fd_new, buf, n) != 0)
		goto out;
	close(fd_y[0]);
	fd_y[0] = -1;
	tpeer_wait(&a, raw_frame_seen, 5000);
	for (int i = 0; i < 200; i++)
		unio_tl_iface_progress(a.iface);
	unio_tl_tcp_stats(a.iface, &s);
	TEST_LOG("%s: reconnect: raw frames %" PRIu64 ", duplicates %" PRIu64 ", accepted %"
		 PRIu64 ", open %" PRIu64 ", new connection %s", mode, a.raw_frames,
		 s.conns_duplicate, s.conns_accepted, s.open_conns,
		 raw_peer_closed(fd_new) ? "closed" : "open");
	if (a.raw_frames == 1 && s.conns_duplicate == 2 * DUP_N - 1 && s.conns_accepted == 3 &&
	    s.open_conns == 2 && s.malformed == 0 && !raw_peer_closed(fd_new) &&
	    ping_both(&a, &good, seq) == 0)
		r = TEST_OK;
out:
	tpeer_close(&a);
	tpeer_close(&good);
	for (int k = 0; k < DUP_N; k++) {
		if (fd_g[k] >= 0)
			close(fd_g[k]);
		if (fd_y[k] >= 0)
			close(fd_y[k]);
	}
	if (fd_new >= 0)
		close(fd_new);
	return r;
}

UNIO_TEST(tcp_duplicate_hello, fast)
{
	TEST_ASSERT_EQ(duplicate_hello("busy"), TEST_OK);
	TEST_ASSERT_EQ(duplicate_hello("epoll"), TEST_OK);
	return TEST_OK;
}

/*
 * ---- a HELLO that claims another peer's address ----
 *
 * Before good connects to a, two raw clients say HELLO to a as good (its exact address):
 * one from 127.0.0.2 (another IPv4 than the claim's), one from 127.0.0.1 but as uid 65534
 * (good's listener is root's).  Taken, the first such connection became good's: a's later
 * ep to good sent on it (captured), and good's own connection was closed as a duplicate
 * (tcp_duplicate_hello).  Now each is closed at its HELLO and counted (conns_false_claim),
 * none as a duplicate; then good connects, a connects back over good's connection, and 100
 * messages cross each way, in order, checksummed.  Root only (the child changes its uid).
 */
#define CLAIM_CLOSED 0

/* Connect to @p srv from @p src_ip as @p uid, say @p hello; CLAIM_CLOSED once srv closes. */
static int
claim_client(const struct tcp_addr *srv, const char *src_ip, const uint8_t *hello, size_t n)
{
	struct sockaddr_in src = { .sin_family = AF_INET };
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = srv->port,
				   .sin_addr.s_addr = srv->ipv4 };
	struct pollfd pfd = { .events = POLLIN };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	src.sin_addr.s_addr = inet_addr(src_ip);
	if (fd < 0 || bind(fd, (struct sockaddr *)&src, sizeof(src)) != 0 ||
	    connect(fd, (struct sockaddr *)&dst, sizeof(dst)) != 0 || send_all(fd, hello, n) != 0)
		return 2;
	pfd.fd = fd;
	for (int i = 0; i < 50 && !raw_peer_closed(fd); i++)
		poll(&pfd, 1, 100);
	return raw_peer_closed(fd) ? CLAIM_CLOSED : 1;
}

/* Run claim_client() in a child (as uid 65534 when @p other_user), progressing @p p. */
static int
claim_run(struct tpeer *p, const char *src_ip, bool other_user, const uint8_t *hello,
	  size_t n)
{
	pid_t pid;
	int status = -1;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		if (other_user && (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
				   setresuid(65534, 65534, 65534) != 0))
			_exit(3);
		_exit(claim_client((const struct tcp_addr *)p->addr, src_ip, hello, n));
	}
	for (int i = 0; i < 10000000 && waitpid(pid, &status, WNOHANG) == 0; i++)
		unio_tl_iface_progress(p->iface);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

UNIO_TEST(tcp_hello_false_claim, mp)
{
	struct unio_tl_tcp_stats s;
	struct tpeer a, good;
	const struct tcp_addr *ga;
	uint8_t buf[256];
	int r_ip, r_uid, r = TEST_FAIL;
	uint64_t seq;
	size_t n;

	if (geteuid() != 0)
		TEST_SKIP_BECAUSE("switching a child to another user needs root");
	TEST_ASSERT_EQ(tpeer_open(&a, "lo"), 0);
	TEST_ASSERT_EQ(tpeer_open(&good, "lo"), 0);
	ga = (const struct tcp_addr *)good.addr;
	n = raw_hello(buf, ga, ntohs(ga->port));   /* good's own identity */
	r_ip = claim_run(&a, "127.0.0.2", false, buf, n);
	r_uid = claim_run(&a, "127.0.0.1", true, buf, n);
	unio_tl_tcp_stats(a.iface, &s);
	TEST_LOG("HELLO as good from 127.0.0.2: %s; from uid 65534: %s; false claims %" PRIu64
		 ", duplicates %" PRIu64, r_ip == CLAIM_CLOSED ? "closed" : "kept",
		 r_uid == CLAIM_CLOSED ? "closed" : "kept", s.conns_false_claim,
		 s.conns_duplicate);
	if (r_ip != CLAIM_CLOSED || r_uid != CLAIM_CLOSED || s.conns_false_claim != 2)
		goto out;
	if (!connect_back(&a, &good))
		goto out;
	for (seq = 0; seq < 100; seq++)
		if (ping_both(&a, &good, seq) != 0)
			break;
	unio_tl_tcp_stats(a.iface, &s);
	TEST_LOG("then good: %" PRIu64 " messages each way, duplicates %" PRIu64 ", accepted %"
		 PRIu64 ", open %" PRIu64, seq, s.conns_duplicate, s.conns_accepted,
		 s.open_conns);
	if (seq == 100 && s.conns_duplicate == 0 && s.conns_accepted == 1 && s.open_conns == 1 &&
	    s.conns_false_claim == 2 && a.rx_bad + good.rx_bad == 0 &&
	    a.ep_errors + good.ep_errors == 0)
		r = TEST_OK;
out:
	tpeer_close(&a);
	tpeer_close(&good);
	return r;
}

/*
 * A raw client's connection to @p p with a HELLO from a made-up iface (port @p hello_port),
 * progressed until @p p attached it (at most 100,000 calls, their count in *@p calls): the
 * socket, or -1 when it could not connect or was never attached.  On loopback the
 * connection and its HELLO are in @p p's sockets when send() returns.
 */
static int
raw_attach(struct tpeer *p, uint16_t hello_port, unsigned int *calls)
{
	const struct tcp_addr *pa = (const struct tcp_addr *)p->addr;
	struct unio_tl_tcp_stats s;
	uint8_t buf[128];
	size_t n = raw_hello(buf, pa, hello_port);
	int fd = raw_connect(pa);

	*calls = 0;
	if (fd < 0 || send_all(fd, buf, n) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	unio_tl_tcp_stats(p->iface, &s);
	for (; *calls < 100000 && s.conns_accepted == 0; (*calls)++) {
		unio_tl_iface_progress(p->iface);
		unio_tl_tcp_stats(p->iface, &s);
	}
	if (s.conns_accepted == 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Busy mode asks epoll every 16 progress calls.  An iface with nothing but its listen socket
 * (unio-perf's over tcp has one on eth0 besides lo's) shows the worker a poll word that stays
 * 0, so that the worker calls it in one call of 16 only (tcp_idle_iface_gated: one epoll in
 * 256 worker calls, as when the iface itself asked every 256 of its calls): exactly 256
 * epoll calls in 4096 of its progress calls, idle or connected.  A connection to the idle
 * iface is taken within 16 calls, its HELLO read within 16 more; the word is then none (the
 * worker calls it every time).
 */
UNIO_TEST(tcp_idle_iface_epoll, fast)
{
	const char *set[] = { "TCP_POLL_MODE", "busy", NULL };
	struct unio_tl_tcp_stats s0, s1;
	unsigned int calls;
	struct tpeer a;
	int fd;

	TEST_ASSERT_EQ(tpeer_open_set(&a, "lo", set), 0);
	TEST_ASSERT(a.iface->poll_word != NULL && **a.iface->poll_word == 0,
		    "idle iface: its poll word must be a clear one");
	unio_tl_tcp_stats(a.iface, &s0);
	for (int i = 0; i < 4096; i++)
		unio_tl_iface_progress(a.iface);
	unio_tl_tcp_stats(a.iface, &s1);
	TEST_LOG("idle: %" PRIu64 " epoll calls in 4096 progress calls",
		 s1.epoll_calls - s0.epoll_calls);
	TEST_ASSERT_EQ(s1.epoll_calls - s0.epoll_calls, 4096 / TCP_BUSY_EPOLL_EVERY);
	TEST_ASSERT_EQ(s1.progress_calls - s0.progress_calls, 4096);
	TEST_ASSERT(a.iface->poll_word != NULL && **a.iface->poll_word == 0,
		    "still idle: its poll word must be a clear one");
	fd = raw_attach(&a, 1, &calls);
	unio_tl_tcp_stats(a.iface, &s1);
	TEST_LOG("accepted and attached after %u progress calls", calls);
	TEST_ASSERT(s1.conns_accepted == 1 && calls <= 2 * TCP_BUSY_EPOLL_EVERY,
		    "%u calls, %" PRIu64 " accepted", calls, s1.conns_accepted);
	TEST_ASSERT(fd >= 0, "raw connect");
	TEST_ASSERT(a.iface->poll_word == NULL, "connected: the iface must have no poll word");
	s0 = s1;
	for (int i = 0; i < 4096; i++)
		unio_tl_iface_progress(a.iface);
	unio_tl_tcp_stats(a.iface, &s1);
	TEST_LOG("connected: %" PRIu64 " epoll calls in 4096 progress calls",
		 s1.epoll_calls - s0.epoll_calls);
	TEST_ASSERT_EQ(s1.epoll_calls - s0.epoll_calls, 4096 / TCP_BUSY_EPOLL_EVERY);
	TEST_ASSERT_EQ(s1.open_conns, 1);
	close(fd);
	tpeer_close(&a);
	return TEST_OK;
}

/*
 * Busy mode reads every connection on every progress call, except one that gave nothing to
 * TCP_BUSY_COLD reads in a row, or TCP_BUSY_COLD_FRESH if it never carried a data frame
 * (unio-perf's rendezvous rail beside its lane before its first rendezvous: one empty recv
 * a call): epoll reports its next frame within TCP_BUSY_EPOLL_EVERY calls, and that frame
 * makes it read every call again.  A raw peer's connection that sent only its HELLO idles
 * into that state after TCP_BUSY_COLD_FRESH reads (rx_cold 1, not before), its frame
 * arrives within 16 calls, the next one within the first call; having carried frames, it
 * is still read after TCP_BUSY_COLD_FRESH idle calls and idles again only after
 * TCP_BUSY_COLD (rx_cold 2), its next frame again within 16 calls.
 */
static void
cold_progress(struct tpeer *a, unsigned int calls, uint64_t *rx_cold)
{
	struct unio_tl_tcp_stats s;

	for (unsigned int i = 0; i < calls; i++)
		unio_tl_iface_progress(a->iface);
	unio_tl_tcp_stats(a->iface, &s);
	*rx_cold = s.rx_cold;
}

UNIO_TEST(tcp_cold_conn, fast)
{
	const char *set[] = { "TCP_POLL_MODE", "busy", NULL };
	struct unio_tl_tcp_stats s;
	unsigned int calls;
	uint64_t cold;
	uint8_t buf[128];
	struct tpeer a;
	size_t n;
	int fd;

	TEST_ASSERT_EQ(tpeer_open_set(&a, "lo", set), 0);
	fd = raw_attach(&a, 1, &calls);
	TEST_ASSERT(fd >= 0, "raw connect, attached after %u calls", calls);
	unio_tl_tcp_stats(a.iface, &s);
	TEST_ASSERT_EQ(s.conns_accepted, 1);
	cold_progress(&a, TCP_BUSY_COLD_FRESH - 64, &cold);
	TEST_ASSERT_EQ(cold, 0);
	cold_progress(&a, 128, &cold);
	TEST_ASSERT_EQ(cold, 1);
	for (int round = 0; round < 4; round++) {
		uint64_t before = a.raw_frames;

		if (round == 2) {  /* it carried frames: the fresh limit no longer applies */
			cold_progress(&a, TCP_BUSY_COLD_FRESH + 64, &cold);
			TEST_ASSERT_EQ(cold, 1);
			cold_progress(&a, TCP_BUSY_COLD - TCP_BUSY_COLD_FRESH, &cold);
			TEST_ASSERT_EQ(cold, 2);
		}
		/* on loopback the frame is in a's socket when send() returns */
		n = raw_am(buf);
		TEST_ASSERT_EQ(send_all(fd, buf, n), 0);
		for (calls = 0; calls < 100000 && a.raw_frames == before; calls++)
			unio_tl_iface_progress(a.iface);
		TEST_LOG("%s connection: frame after %u progress calls",
			 round % 2 == 0 ? "cold" : "warm", calls);
		TEST_ASSERT_EQ(a.raw_frames, before + 1);
		TEST_ASSERT(calls <= (round % 2 == 0 ? TCP_BUSY_EPOLL_EVERY : 1u), "%u calls",
			    calls);
	}
	unio_tl_tcp_stats(a.iface, &s);
	TEST_ASSERT_EQ(s.rx_cold, 2);
	TEST_ASSERT_EQ(s.open_conns, 1);
	close(fd);
	tpeer_close(&a);
	return TEST_OK;
}

/*
 * Is @p fd in epoll set @p epfd?  1 or 0 from /proc/self/fdinfo (a "tfd:" line per fd in
 * the set), -1 when that cannot be read.
 */
static int
in_epoll_set(int epfd, int fd)
{
	char path[64], line[256];
	int found = 0, tfd;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", epfd);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "tfd: %d", &tfd) == 1 && tfd == fd)
			found = 1;
	fclose(f);
	return found;
}

/* A raw frame on @p fd, then progress until it arrives; the calls it took (100000: never). */
static unsigned int
raw_frame_calls(struct tpeer *a, int fd)
{
	uint64_t before = a->raw_frames;
	unsigned int calls;
	uint8_t buf[128];

	if (send_all(fd, buf, raw_am(buf)) != 0)
		return 100000;
	for (calls = 0; calls < 100000 && a->raw_frames == before; calls++)
		unio_tl_iface_progress(a->iface);
	return a->raw_frames == before + 1 ? calls : 100000;
}

/*
 * Busy mode: a connection read blindly in TCP_BUSY_EP_OFF calls in a row leaves the iface's
 * epoll set (the peer's sends then cost no epoll callback), and is back in it as soon as it
 * is not read blindly (here: quiet, TCP_BUSY_COLD_FRESH empty reads) and when the iface is
 * armed for sleep.  Checked in the set itself (/proc/self/fdinfo) and by delivery: a cold
 * connection left off the set would never deliver its next frame, an armed iface whose
 * connection is off would not wake on its bytes.
 */
UNIO_TEST(tcp_hot_conn_off_epoll, fast)
{
	const char *set[] = { "TCP_POLL_MODE", "busy", NULL };
	struct unio_tl_tcp_stats s;
	struct pollfd pfd;
	struct tcp_iface *ti;
	unsigned int calls;
	uint64_t cold;
	struct tpeer a;
	int fd, cfd;

	TEST_ASSERT_EQ(tpeer_open_set(&a, "lo", set), 0);
	ti = tcp_iface_of(a.iface);
	fd = raw_attach(&a, 1, &calls);
	TEST_ASSERT(fd >= 0, "raw connect, attached after %u calls", calls);
	cfd = TAILQ_FIRST(&ti->conns)->item.fd;
	TEST_ASSERT_EQ(in_epoll_set(ti->epfd, cfd), 1);
	/* read blindly from the call after the attach: off in the 256th */
	cold_progress(&a, TCP_BUSY_EP_OFF - 2, &cold);
	unio_tl_tcp_stats(a.iface, &s);
	TEST_ASSERT_EQ(s.ep_off, 0);
	TEST_ASSERT_EQ(in_epoll_set(ti->epfd, cfd), 1);
	cold_progress(&a, 2, &cold);
	unio_tl_tcp_stats(a.iface, &s);
	TEST_ASSERT_EQ(s.ep_off, 1);
	TEST_ASSERT_EQ(s.ep_on, 0);
	TEST_ASSERT_EQ(in_epoll_set(ti->epfd, cfd), 0);
	/* quiet (HELLO only): cold after TCP_BUSY_COLD_FRESH reads, then epoll's again */
	cold_progress(&a, TCP_BUSY_COLD_FRESH, &cold);
	unio_tl_tcp_stats(a.iface, &s);
	TEST_ASSERT_EQ(cold, 1);
	calls = raw_frame_calls(&a, fd);
	TEST_LOG("cold, back in the set: frame after %u calls", calls);
	TEST_ASSERT(calls <= TCP_BUSY_EPOLL_EVERY, "%u calls", calls);
	TEST_ASSERT_EQ(s.ep_on, 1);
	TEST_ASSERT_EQ(in_epoll_set(ti->epfd, cfd), 1);
	/* read every call again: off after 256 more, its frames within the first call */
	cold_progress(&a, TCP_BUSY_EP_OFF, &cold);
	unio_tl_tcp_stats(a.iface, &s);
	TEST_ASSERT_EQ(s.ep_off, 2);
	TEST_ASSERT_EQ(in_epoll_set(ti->epfd, cfd), 0);
	for (int i = 0; i < 10; i++)
		TEST_ASSERT_EQ(raw_frame_calls(&a, fd), 1);
	/* armed for sleep: back in the set, and its next frame wakes the epoll fd */
	TEST_ASSERT_STATUS(a.iface->ctl->iface_event_arm(a.iface), UNIO_OK);
	unio_tl_tcp_stats(a.iface, &s);
	TEST_ASSERT_EQ(s.ep_on, 2);
	TEST_ASSERT_EQ(in_epoll_set(ti->epfd, cfd), 1);
	{
		uint8_t buf[128];

		TEST_ASSERT_EQ(send_all(fd, buf, raw_am(buf)), 0);
	}
	pfd = (struct pollfd){ .fd = ti->epfd, .events = POLLIN };
	TEST_ASSERT_EQ(poll(&pfd, 1, 5000), 1);
	unio_tl_iface_progress(a.iface);
	TEST_ASSERT(a.raw_frames == 12, "%" PRIu64 " raw frames", a.raw_frames);
	unio_tl_tcp_stats(a.iface, &s);
	TEST_ASSERT_EQ(s.open_conns, 1);
	TEST_ASSERT_EQ(s.malformed, 0);
	close(fd);
	tpeer_close(&a);
	return TEST_OK;
}

/* ---- driver-level benchmark (slow suite: prints numbers, asserts only on data) ---- */

#define B_AM_PING  6
#define B_AM_BULK  7
#define B_AM_COUNT 8

struct bench {
	struct tpeer *p;
	uint64_t pongs, bytes, count;
};

static void
pin_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static unio_status_t
b_on_ping(void *arg, const void *data, size_t len, unsigned int flags, unio_tl_conn_id_t conn_id)
{
	struct bench *b = arg;
	uint64_t h;

	RTE_SET_USED(flags), RTE_SET_USED(conn_id);
	memcpy(&h, data, sizeof(h));
	b->pongs++;
	if (b->p->peer_known)  /* the echo side answers every ping */
		while (unio_tl_ep_am_short(b->p->ep, B_AM_PING, h, (const uint8_t *)data + 8,
					   len - 8) == UNIO_ERR_NO_RESOURCE)
			unio_tl_iface_progress(b->p->iface);
	return UNIO_OK;
}

static unio_status_t
b_on_bulk(void *arg, const void *data, size_t len, unsigned int flags, unio_tl_conn_id_t conn_id)
{
	struct bench *b = arg;

	RTE_SET_USED(data), RTE_SET_USED(flags), RTE_SET_USED(conn_id);
	b->bytes += len;
	return UNIO_OK;
}

static unio_status_t
b_on_count(void *arg, const void *data, size_t len, unsigned int flags, unio_tl_conn_id_t conn_id)
{
	struct bench *b = arg;

	RTE_SET_USED(len), RTE_SET_USED(flags), RTE_SET_USED(conn_id);
	memcpy(&b->count, data, 8);
	if (b->p->peer_known)
		unio_tl_ep_am_short(b->p->ep, B_AM_COUNT, b->bytes, NULL, 0);
	return UNIO_OK;
}

static void
bench_handlers(struct tpeer *p, struct bench *b)
{
	b->p = p;
	unio_tl_iface_set_am_handler(p->iface, B_AM_PING, b_on_ping, b);
	unio_tl_iface_set_am_handler(p->iface, B_AM_BULK, b_on_bulk, b);
	unio_tl_iface_set_am_handler(p->iface, B_AM_COUNT, b_on_count, b);
}

/* argv: write fd.  Echoes pings, counts bulk bytes, answers COUNT; runs on CPU 0. */
UNIO_TEST_CHILD(tcp_bench_peer)
{
	char hex[2 * UNIO_TL_ADDR_MAX + 1];
	struct bench b = { 0 };
	struct tpeer p;
	int wfd;

	if (argc < 1 || tpeer_open(&p, "lo") != 0)
		return 10;
	pin_cpu(0);
	bench_handlers(&p, &b);
	wfd = atoi(argv[0]);
	t_hex(p.addr, p.iface->attr.iface_addr_len, hex);
	dprintf(wfd, "%s -\n", hex);
	close(wfd);
	alarm(60);
	while (p.ep_errors == 0)  /* until the benchmark closes */
		unio_tl_iface_progress(p.iface);
	tpeer_close(&p);
	return 0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int
bench_lat(struct tpeer *p, struct bench *b, unsigned int iters)
{
	uint64_t *t = malloc(iters * sizeof(*t)), pay = 0;

	if (t == NULL)
		return -1;
	for (unsigned int i = 0; i < iters + 1000; i++) {
		uint64_t t0 = now_ns(), want = b->pongs + 1;

		while (unio_tl_ep_am_short(p->ep, B_AM_PING, i, &pay, 0) == UNIO_ERR_NO_RESOURCE)
			unio_tl_iface_progress(p->iface);
		while (b->pongs < want && p->ep_errors == 0)
			unio_tl_iface_progress(p->iface);
		if (i >= 1000)
			t[i - 1000] = now_ns() - t0;
	}
	qsort(t, iters, sizeof(*t), cmp_u64);
	printf("tcp am_short 8 B ping-pong (half round trip): p50 %.2f us  p99 %.2f us  "
	       "p99.9 %.2f us  (%u iterations)\n", t[iters / 2] / 2000.0,
	       t[iters * 99 / 100] / 2000.0, t[iters * 999 / 1000] / 2000.0, iters);
	free(t);
	return b->pongs == iters + 1000 ? 0 : -1;
}

static size_t
pack_bulk(void *dest, void *arg)
{
	memset(dest, 0x5a, 64 * 1024);
	RTE_SET_USED(arg);
	return 64 * 1024;
}

/* Stream 64 KiB messages for about @p ms; the peer's byte count must match. */
static int
bench_bw(struct tpeer *p, struct bench *b, bool zcopy, int ms)
{
	static uint8_t buf[64 * 1024];
	struct iovec iov = { buf, sizeof(buf) };
	uint64_t sent = 0, t0 = now_ns(), end = t0 + (uint64_t)ms * 1000000, t1, base = b->bytes;
	struct kslot k = { .done = 1 };
	uint64_t hdr = 0;

	while (now_ns() < end) {
		ssize_t r;

		if (zcopy) {
			if (k.done == 0) {  /* one zcopy in flight at a time: buf is reused */
				unio_tl_iface_progress(p->iface);
				continue;
			}
			k = (struct kslot){ .c = { .func = kslot_done, .count = 1 } };
			r = unio_tl_ep_am_zcopy(p->ep, B_AM_BULK, &hdr, sizeof(hdr), &iov, 1, 0,
						&k.c);
			if (r == UNIO_OK)
				k.done = 1;
			if (r == UNIO_OK || r == UNIO_INPROGRESS)
				r = (ssize_t)(sizeof(hdr) + sizeof(buf));
		} else {
			r = unio_tl_ep_am_bcopy(p->ep, B_AM_BULK, pack_bulk, NULL, 0);
		}
		if (r == UNIO_ERR_NO_RESOURCE) {
			unio_tl_iface_progress(p->iface);
			continue;
		}
		if (r < 0)
			return -1;
		sent += (uint64_t)r;
	}
	while (!k.done)
		unio_tl_iface_progress(p->iface);
	b->count = UINT64_MAX;
	while (unio_tl_ep_am_short(p->ep, B_AM_COUNT, 0, NULL, 0) == UNIO_ERR_NO_RESOURCE)
		unio_tl_iface_progress(p->iface);
	while (b->count == UINT64_MAX && p->ep_errors == 0)
		unio_tl_iface_progress(p->iface);
	t1 = now_ns();
	printf("tcp am_%s 64 KiB stream: %.0f MB/s (%" PRIu64 " bytes in %.2f s)\n",
	       zcopy ? "zcopy" : "bcopy", sent / ((t1 - t0) / 1e3), sent, (t1 - t0) / 1e9);
	if (b->count != base + sent) {
		TEST_LOG("the peer counted %" PRIu64 " bytes, %" PRIu64 " were sent",
			 b->count - base, sent);
		return -1;
	}
	b->bytes = b->count;  /* the peer's running total, for the next stream */
	return 0;
}

UNIO_TEST(tcp_bench, slow)
{
	struct bench b = { 0 };
	uint8_t addr[UNIO_TL_ADDR_MAX];
	struct tpeer p = { .iface = NULL };
	uint64_t total = 0;
	pid_t peer;
	int r = TEST_FAIL;

	peer = spawn_with_addr("tcp_bench_peer", "-", addr, sizeof(struct tcp_addr));
	TEST_ASSERT(peer > 0, "peer did not start");
	pin_cpu(1);
	if (tpeer_open(&p, "lo") != 0 || tpeer_connect(&p, addr) != 0)
		goto out;
	bench_handlers(&p, &b);
	while (unio_tl_ep_am_short(p.ep, T_AM_HELLO, 0, p.addr, p.iface->attr.iface_addr_len) ==
	       UNIO_ERR_NO_RESOURCE)
		unio_tl_iface_progress(p.iface);
	if (bench_lat(&p, &b, 20000) != 0)
		goto out;
	b.bytes = 0;
	if (bench_bw(&p, &b, false, 1000) != 0)
		goto out;
	total = b.bytes;
	if (bench_bw(&p, &b, true, 1000) != 0)
		goto out;
	TEST_LOG("peer counted %" PRIu64 " bulk bytes after bcopy, %" PRIu64 " in all", total,
		 b.bytes);
	r = TEST_OK;
out:
	tpeer_close(&p);
	TEST_ASSERT(test_wait(peer, 10000) == 0, "peer exit");
	return r;
}

/* ---- direct receive of large PUT / GET_RESP payloads ---- */

struct dcomp {
	struct unio_tl_completion c;
	int done;
	unio_status_t status;
};

static void
dcomp_done(struct unio_tl_completion *c)
{
	struct dcomp *d = (struct dcomp *)c;

	d->done++;
	d->status = c->status;
}

static int
dcomp_wait(struct tpeer *a, struct tpeer *b, struct dcomp *d, unio_status_t st)
{
	if (st != UNIO_INPROGRESS)
		return st == UNIO_OK ? 0 : -1;
	for (int i = 0; i < 2000000 && d->done == 0; i++)
		progress2(a, b, 1);
	return d->done == 1 && d->status == UNIO_OK ? 0 : -1;
}

/* 64 KiB socket buffers both ways: every large frame takes several reads and writes */
static const char *const small_bufs[] = { "TCP_RCVBUF", "64k", "TCP_SNDBUF", "64k", NULL };

/*
 * Puts of 1 MiB (four 256 KiB PUT frames) and gets of 256 KiB into three iovs between two
 * ifaces of this process: the payloads that were not yet buffered when their header was
 * parsed are read straight into the target region / the get's iovs (direct_frames counts
 * them, on the target for puts and on the initiator for gets); every byte checked.  A
 * region deregistered during a direct put makes the rest be dropped and the put refused.
 */
UNIO_TEST(tcp_direct_receive, fast)
{
	const size_t size = 1 << 20, getsz = 256 * 1024;
	uint8_t *src = malloc(size), *dst = malloc(size);
	struct unio_tl_tcp_stats sa, sb;
	struct unio_tl_rkey rk;
	struct tpeer a, b;

	TEST_ASSERT(src != NULL && dst != NULL, "malloc");
	TEST_ASSERT_EQ(tpeer_open_set(&a, "lo", small_bufs), 0);
	TEST_ASSERT_EQ(tpeer_open_set(&b, "lo", small_bufs), 0);
	TEST_ASSERT_EQ(tpeer_connect(&a, b.addr), 0);
	TEST_ASSERT_EQ(tpeer_region_key(&a, &b, T_REGION_SIZE, &rk), 0);
	for (int round = 0; round < 8; round++) {
		struct iovec iov = { src, size };
		struct iovec g[3] = { { dst, 1000 }, { dst + 1000, getsz - 5000 },
				      { dst + getsz - 4000, 4000 } };
		struct dcomp d = { .c = { .func = dcomp_done, .count = 1 } };
		size_t off = (size_t)(round % 4) * getsz;

		test_fill(src, size, (uint64_t)round);
		TEST_ASSERT_EQ(dcomp_wait(&a, &b, &d, unio_tl_ep_put_zcopy(a.ep, &iov, 1,
						(uintptr_t)b.region, &rk, &d.c)), 0);
		TEST_ASSERT(memcmp(b.region, src, size) == 0, "round %d: put data differs", round);
		memset(dst, 0, getsz);
		d = (struct dcomp){ .c = { .func = dcomp_done, .count = 1 } };
		TEST_ASSERT_EQ(dcomp_wait(&a, &b, &d, unio_tl_ep_get_zcopy(a.ep, g, 3,
						(uintptr_t)b.region + off, &rk, &d.c)), 0);
		TEST_ASSERT(memcmp(dst, src + off, getsz) == 0, "round %d: get differs", round);
	}
	unio_tl_tcp_stats(a.iface, &sa);
	unio_tl_tcp_stats(b.iface, &sb);
	TEST_LOG("direct frames: puts at the target %" PRIu64 ", gets at the initiator %"
		 PRIu64, sb.direct_frames, sa.direct_frames);
	TEST_ASSERT(sb.direct_frames > 0 && sa.direct_frames > 0, "no payload was read directly");
	/* a put whose region goes away while its payload is being read: dropped, refused */
	{
		struct iovec iov = { src, getsz };
		struct dcomp d = { .c = { .func = dcomp_done, .count = 1 } };
		uint64_t before = sb.direct_frames;
		unio_status_t st;

		st = unio_tl_ep_put_zcopy(a.ep, &iov, 1, (uintptr_t)b.region, &rk, &d.c);
		TEST_ASSERT_STATUS(st, UNIO_INPROGRESS);
		for (int i = 0; i < 2000000 && sb.direct_frames == before; i++) {
			progress2(&a, &b, 1);
			unio_tl_tcp_stats(b.iface, &sb);
		}
		TEST_ASSERT(sb.direct_frames == before + 1, "the put was not read directly");
		b.iface->ctl->mem_dereg(b.iface, &b.memh);
		for (int i = 0; i < 2000000 && d.done == 0; i++)
			progress2(&a, &b, 1);
		TEST_ASSERT(d.done == 1 && d.status == UNIO_ERR_OUT_OF_RANGE, "put: done %d, %s",
			    d.done, unio_status_string(d.status));
		/* the connection goes on: the frame after it is delivered */
		{
			uint64_t cks = test_checksum("", 0);

			TEST_ASSERT_STATUS(unio_tl_ep_am_short(a.ep, T_AM_DATA, 0, &cks, 8),
					   UNIO_OK);
			for (int i = 0; i < 2000000 && b.rx_next == 0; i++)
				progress2(&a, &b, 1);
			TEST_ASSERT(b.rx_next == 1 && b.rx_bad == 0, "message after the put");
		}
		TEST_ASSERT(b.iface->ctl->mem_reg(b.iface, b.region, T_REGION_SIZE,
						  &b.memh) == UNIO_OK, "mem_reg");
	}
	a.iface->ctl->rkey_release(a.ep, &rk);
	tpeer_close(&a);
	tpeer_close(&b);
	free(src);
	free(dst);
	return TEST_OK;
}

/*
 * The progress call in which a get completes reports work, also when the GET_RESP payload
 * was read straight into the get's iovs over several calls and the socket was empty after
 * its last bytes.  Before, that call returned 0 (the direct frame's count was dropped when
 * the following recv found nothing), and a caller that tests its requests only after a
 * progress call that did something (unio-perf's wait loops test every 64 idle calls) saw a
 * 1 MiB rendezvous receive complete up to 64 calls late, on each side of a ping-pong.
 * Sixteen 1 MiB gets with 64 KiB socket buffers (every GET_RESP in many reads): each one
 * completes in a call that returns more than 0, every byte checked.
 */
UNIO_TEST(tcp_progress_counts_direct, fast)
{
	const size_t size = 1 << 20;
	const int rounds = 16;
	uint8_t *dst = malloc(size);
	struct unio_tl_tcp_stats sa;
	struct unio_tl_rkey rk;
	struct tpeer a, b;
	int silent = 0;

	TEST_ASSERT(dst != NULL, "malloc");
	TEST_ASSERT_EQ(tpeer_open_set(&a, "lo", small_bufs), 0);
	TEST_ASSERT_EQ(tpeer_open_set(&b, "lo", small_bufs), 0);
	TEST_ASSERT_EQ(tpeer_connect(&a, b.addr), 0);
	TEST_ASSERT_EQ(tpeer_region_key(&a, &b, T_REGION_SIZE, &rk), 0);
	for (int round = 0; round < rounds; round++) {
		struct iovec g = { dst, size };
		struct dcomp d = { .c = { .func = dcomp_done, .count = 1 } };

		test_fill(b.region, size, (uint64_t)round);
		memset(dst, 0, size);
		TEST_ASSERT_STATUS(unio_tl_ep_get_zcopy(a.ep, &g, 1, (uintptr_t)b.region, &rk,
							&d.c), UNIO_INPROGRESS);
		for (int i = 0; i < 2000000 && d.done == 0; i++) {
			unsigned int n;

			unio_tl_iface_progress(b.iface);
			n = unio_tl_iface_progress(a.iface);
			if (d.done != 0 && n == 0)
				silent++;
		}
		TEST_ASSERT(d.done == 1 && d.status == UNIO_OK, "round %d: get done %d, %s",
			    round, d.done, unio_status_string(d.status));
		TEST_ASSERT(memcmp(dst, b.region, size) == 0, "round %d: get differs", round);
	}
	unio_tl_tcp_stats(a.iface, &sa);
	TEST_LOG("%d of %d gets completed in a progress call that returned 0; %" PRIu64
		 " read directly", silent, rounds, sa.direct_frames);
	TEST_ASSERT(sa.direct_frames >= (uint64_t)rounds, "GET_RESP not read directly");
	TEST_ASSERT_EQ(silent, 0);
	a.iface->ctl->rkey_release(a.ep, &rk);
	tpeer_close(&a);
	tpeer_close(&b);
	free(dst);
	return TEST_OK;
}

/*
 * The same for zero-copy sends the kernel had no room for: the progress call in which epoll
 * reports the socket writable and the rest of a queued am_zcopy goes out (its completion
 * runs) reports work.  Before, that call returned 0 when nothing was read in it.  Twenty
 * sends of the largest zcopy with 64 KiB socket buffers, most of them queued: each one
 * completes once, in a call that returns more than 0; every message arrives in order with
 * its checksum.
 */
UNIO_TEST(tcp_progress_counts_tx, fast)
{
	enum { N = 20 };
	struct dcomp d[N];
	struct tpeer a, b;
	uint8_t *buf;
	size_t len;
	int silent = 0, queued = 0, done = 0;

	TEST_ASSERT_EQ(tpeer_open_set(&a, "lo", small_bufs), 0);
	TEST_ASSERT_EQ(tpeer_open_set(&b, "lo", small_bufs), 0);
	TEST_ASSERT_EQ(tpeer_connect(&a, b.addr), 0);
	len = a.iface->attr.max_zcopy;
	buf = malloc(len);
	TEST_ASSERT(buf != NULL, "malloc");
	test_fill(buf, len, 11);
	for (int i = 0; i < N; i++) {
		uint64_t h[2] = { (uint64_t)i, test_checksum(buf, len) };
		struct iovec iov = { buf, len };
		unio_status_t st;

		d[i] = (struct dcomp){ .c = { .func = dcomp_done, .count = 1 } };
		st = unio_tl_ep_am_zcopy(a.ep, T_AM_DATA, h, sizeof(h), &iov, 1, 0, &d[i].c);
		TEST_ASSERT(st == UNIO_OK || st == UNIO_INPROGRESS, "send %d: %s", i,
			    unio_status_string(st));
		if (st == UNIO_OK)
			d[i] = (struct dcomp){ .done = 1, .status = UNIO_OK };
		else
			queued++;
	}
	for (int k = 0; k < 2000000 && (done < queued || b.rx_next < N); k++) {
		int before = done;
		unsigned int n;

		unio_tl_iface_progress(b.iface);
		n = unio_tl_iface_progress(a.iface);
		done = 0;
		for (int i = 0; i < N; i++)
			done += d[i].done;
		done -= N - queued;
		if (done > before && n == 0)
			silent++;
	}
	TEST_LOG("%d of %d sends queued; %d completed in a progress call that returned 0",
		 queued, N, silent);
	TEST_ASSERT(queued > 0, "no send was queued: the test proves nothing");
	for (int i = 0; i < N; i++)
		TEST_ASSERT(d[i].done == 1 && d[i].status == UNIO_OK, "send %d: done %d, %s", i,
			    d[i].done, unio_status_string(d[i].status));
	TEST_ASSERT(b.rx_next == N && b.rx_bad == 0, "received %" PRIu64 ", %" PRIu64 " bad",
		    b.rx_next, b.rx_bad);
	TEST_ASSERT_EQ(silent, 0);
	tpeer_close(&a);
	tpeer_close(&b);
	free(buf);
	return TEST_OK;
}

/*
 * The same for a connection closed for a malformed frame: the gets it cancels complete in
 * the progress call that read the frame, and that call reports work.  Before, a malformed
 * frame read by that call's recv left its count at 0 (only a failed recv or an EOF counted).
 * A get from a to b that b never answers; a header with a wrong magic written on b's end
 * of the connection: a's next progress call fails the get with UNIO_ERR_PROTO and returns
 * more than 0, one malformed frame counted.
 */
UNIO_TEST(tcp_progress_counts_failure, fast)
{
	struct dcomp d = { .c = { .func = dcomp_done, .count = 1 } };
	uint8_t dst[64], junk[sizeof(struct tcp_hdr)];
	struct unio_tl_tcp_stats sa;
	struct unio_tl_rkey rk;
	struct iovec g = { dst, sizeof(dst) };
	struct tcp_conn *bc;
	struct tpeer a, b;
	unsigned int n = 0;

	TEST_ASSERT_EQ(tpeer_open(&a, "lo"), 0);
	TEST_ASSERT_EQ(tpeer_open(&b, "lo"), 0);
	TEST_ASSERT_EQ(tpeer_connect(&a, b.addr), 0);
	TEST_ASSERT_EQ(tpeer_region_key(&a, &b, T_REGION_SIZE, &rk), 0);
	test_fill(b.region, T_REGION_SIZE, 5);
	/* one get answered: the connection is up on both sides */
	TEST_ASSERT_EQ(dcomp_wait(&a, &b, &d, unio_tl_ep_get_zcopy(a.ep, &g, 1,
					(uintptr_t)b.region, &rk, &d.c)), 0);
	TEST_ASSERT(memcmp(dst, b.region, sizeof(dst)) == 0, "get differs");
	bc = TAILQ_FIRST(&tcp_iface_of(b.iface)->conns);
	TEST_ASSERT(bc != NULL && TAILQ_NEXT(bc, next) == NULL &&
		    bc->state == TCP_CONN_ESTABLISHED, "b's one connection");

	d = (struct dcomp){ .c = { .func = dcomp_done, .count = 1 } };
	TEST_ASSERT_STATUS(unio_tl_ep_get_zcopy(a.ep, &g, 1, (uintptr_t)b.region, &rk, &d.c),
			   UNIO_INPROGRESS);
	memset(junk, 0, sizeof(junk));
	junk[4] = 0xee;  /* no such frame type, and the magic is 0 */
	TEST_ASSERT(send(bc->item.fd, junk, sizeof(junk), MSG_NOSIGNAL) ==
		    (ssize_t)sizeof(junk), "send: %s", strerror(errno));
	for (int i = 0; i < 2000000 && d.done == 0; i++)
		n = unio_tl_iface_progress(a.iface);
	unio_tl_tcp_stats(a.iface, &sa);
	TEST_LOG("get done %d (%s) in a call that returned %u; malformed %" PRIu64, d.done,
		 unio_status_string(d.status), n, sa.malformed);
	TEST_ASSERT(d.done == 1 && d.status == UNIO_ERR_PROTO, "get done %d, %s", d.done,
		    unio_status_string(d.status));
	TEST_ASSERT_EQ(sa.malformed, 1);
	TEST_ASSERT(n > 0, "the call that failed the get returned 0");
	a.iface->ctl->rkey_release(a.ep, &rk);
	tpeer_close(&a);
	tpeer_close(&b);
	return TEST_OK;
}

/* A put of @p src (1 MiB: four 256 KiB PUT frames) from a to b, then a 1 MiB get back. */
static int
splice_round(struct tpeer *a, struct tpeer *b, struct unio_tl_rkey *rk, uint8_t *src,
	     uint8_t *dst, uint8_t *ref, size_t size, uint64_t seed)
{
	struct iovec iov = { src, size }, g = { dst, size };
	struct dcomp d = { .c = { .func = dcomp_done, .count = 1 } };

	test_fill(src, size, seed);
	memcpy(ref, src, size);
	if (dcomp_wait(a, b, &d, unio_tl_ep_put_zcopy(a->ep, &iov, 1, (uintptr_t)b->region,
						      rk, &d.c)) != 0)
		return -1;
	/* done means the target read the payload: the source is the caller's again */
	memset(src, 0xee, size);
	if (memcmp(b->region, ref, size) != 0)
		return -2;
	memset(dst, 0, size);
	d = (struct dcomp){ .c = { .func = dcomp_done, .count = 1 } };
	if (dcomp_wait(a, b, &d, unio_tl_ep_get_zcopy(a->ep, &g, 1, (uintptr_t)b->region, rk,
						      &d.c)) != 0)
		return -3;
	/* done means the payload is here: the target may write its region again */
	memset(b->region, 0x55, size);
	return memcmp(dst, ref, size) == 0 ? 0 : -4;
}

/*
 * Large PUT and GET_RESP payloads go by vmsplice + splice (UNIO_TCP_SPLICE): the sending
 * kernel refers to the user's pages instead of copying them, so the frames may only be
 * complete once the peer read them.  Eight rounds of a 1 MiB put (four PUT frames) and a
 * 1 MiB get (one GET_RESP), with default and with 64 KiB socket buffers (every payload in
 * many partial splices): the source is overwritten as soon as the put completes and the
 * target region as soon as the get completes, and both arrivals are checked byte for byte,
 * so a completion before the peer read the pages would show.  The counters are exact (32
 * spliced PUT frames at a, 8 GET_RESP at b).  Then a put from memfd_secret memory, whose
 * pages vmsplice refuses (EFAULT): sent by copy instead, one fallback counted, data checked.
 * With UNIO_TCP_SPLICE=no nothing is spliced.
 */
UNIO_TEST(tcp_splice, fast)
{
	const char *small[] = { "TCP_RCVBUF", "64k", "TCP_SNDBUF", "64k", NULL };
	const char *off[] = { "TCP_SPLICE", "no", NULL };
	const char *const *sets[] = { NULL, small, off };
	const size_t size = 1 << 20;
	uint8_t *src = malloc(size), *dst = malloc(size), *ref = malloc(size);

	TEST_ASSERT(src != NULL && dst != NULL && ref != NULL, "malloc");
	for (unsigned int k = 0; k < RTE_DIM(sets); k++) {
		uint64_t want = sets[k] == off ? 0 : 1;
		struct unio_tl_tcp_stats sa, sb;
		struct unio_tl_rkey rk;
		struct tpeer a, b;

		TEST_ASSERT_EQ(tpeer_open_set(&a, "lo", sets[k]), 0);
		TEST_ASSERT_EQ(tpeer_open_set(&b, "lo", sets[k]), 0);
		TEST_ASSERT_EQ(tpeer_connect(&a, b.addr), 0);
		TEST_ASSERT_EQ(tpeer_region_key(&a, &b, size, &rk), 0);
		for (int round = 0; round < 8; round++)
			TEST_ASSERT_EQ(splice_round(&a, &b, &rk, src, dst, ref, size,
						    (uint64_t)(k * 100 + round)), 0);
		unio_tl_tcp_stats(a.iface, &sa);
		unio_tl_tcp_stats(b.iface, &sb);
		TEST_LOG("set %u: spliced %" PRIu64 " PUT frames (%" PRIu64 " bytes), %" PRIu64
			 " GET_RESP (%" PRIu64 " bytes)", k, sa.splice_frames, sa.splice_bytes,
			 sb.splice_frames, sb.splice_bytes);
		TEST_ASSERT(sa.splice_frames == 32 * want && sb.splice_frames == 8 * want,
			    "spliced frames %" PRIu64 " / %" PRIu64, sa.splice_frames,
			    sb.splice_frames);
		TEST_ASSERT(sa.splice_bytes == 8 * size * want &&
			    sb.splice_bytes == 8 * size * want, "spliced bytes");
		TEST_ASSERT(sa.splice_fallbacks == 0 && sb.splice_fallbacks == 0, "fallbacks");
		if (k == 0) {  /* pages vmsplice refuses: the rest of the frame goes by copy */
			int fd = (int)syscall(SYS_memfd_secret, 0);
			const size_t len = 256 * 1024;
			uint8_t *sec = MAP_FAILED;

			if (fd >= 0 && ftruncate(fd, (off_t)len) == 0)
				sec = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			if (sec == MAP_FAILED) {
				TEST_LOG("memfd_secret unavailable (%s): fallback not exercised",
					 strerror(errno));
			} else {
				struct iovec iov = { sec, len };
				struct dcomp d = { .c = { .func = dcomp_done, .count = 1 } };

				test_fill(sec, len, 77);
				memcpy(ref, sec, len);
				TEST_ASSERT_EQ(dcomp_wait(&a, &b, &d, unio_tl_ep_put_zcopy(a.ep,
						&iov, 1, (uintptr_t)b.region, &rk, &d.c)), 0);
				TEST_ASSERT(memcmp(b.region, ref, len) == 0, "secret put data");
				unio_tl_tcp_stats(a.iface, &sa);
				TEST_ASSERT(sa.splice_fallbacks == 1 && sa.splice_frames == 32,
					    "fallbacks %" PRIu64 ", frames %" PRIu64,
					    sa.splice_fallbacks, sa.splice_frames);
				munmap(sec, len);
			}
			if (fd >= 0)
				close(fd);
		}
		a.iface->ctl->rkey_release(a.ep, &rk);
		tpeer_close(&a);
		tpeer_close(&b);
	}
	free(src);
	free(dst);
	free(ref);
	return TEST_OK;
}

/*
 * Direct receive with large socket buffers (4 MiB each way): four 1 MiB puts (16 PUT
 * frames) are handed to the kernel before the target reads anything, so its socket holds
 * megabytes when it starts.  While bulk frames arrive, the target reads only a little past
 * the frame it is in, so at least 90 % of the payload goes straight from the socket into the
 * region (direct_bytes); a read of the whole 512 KiB buffer took whole frames through it
 * (two copies).  Every byte checked.
 */
UNIO_TEST(tcp_direct_receive_bulk, fast)
{
	const char *set[] = { "TCP_RCVBUF", "4m", "TCP_SNDBUF", "4m", NULL };
	const size_t size = 1 << 20, n = 4;
	uint8_t *src = malloc(n * size), *region;
	struct dcomp d = { .c = { .func = dcomp_done, .count = (int)n } };
	struct unio_tl_tcp_stats sb;
	struct unio_tl_rkey rk;
	struct tpeer a, b;

	TEST_ASSERT(src != NULL, "malloc");
	TEST_ASSERT_EQ(tpeer_open_set(&a, "lo", set), 0);
	TEST_ASSERT_EQ(tpeer_open_set(&b, "lo", set), 0);
	TEST_ASSERT_EQ(tpeer_connect(&a, b.addr), 0);
	TEST_ASSERT_EQ(tpeer_region_key(&a, &b, n * size, &rk), 0);
	region = b.region;
	/* b accepts the connection, then only a progresses: its frames pile up in b's socket */
	for (int i = 0; i < 100000 && !accepted_one(&b); i++)
		progress2(&a, &b, 1);
	test_fill(src, n * size, 11);
	for (size_t k = 0; k < n; k++) {
		struct iovec iov = { src + k * size, size };

		TEST_ASSERT_STATUS(unio_tl_ep_put_zcopy(a.ep, &iov, 1,
							(uintptr_t)region + k * size, &rk, &d.c),
				   UNIO_INPROGRESS);
	}
	for (int i = 0; i < 20000; i++)
		unio_tl_iface_progress(a.iface);
	for (int i = 0; i < 4000000 && d.done == 0; i++)
		progress2(&a, &b, 1);
	unio_tl_tcp_stats(b.iface, &sb);
	TEST_LOG("%zu MiB put: %" PRIu64 " bytes read directly in %" PRIu64 " frames",
		 n, sb.direct_bytes, sb.direct_frames);
	TEST_ASSERT(d.done == 1 && d.status == UNIO_OK, "puts: done %d, %s", d.done,
		    unio_status_string(d.status));
	TEST_ASSERT(memcmp(region, src, n * size) == 0, "put data differs");
	TEST_ASSERT(sb.direct_bytes >= n * size * 9 / 10, "only %" PRIu64 " of %zu bytes direct",
		    sb.direct_bytes, n * size);
	a.iface->ctl->rkey_release(a.ep, &rk);
	tpeer_close(&a);
	tpeer_close(&b);
	free(src);
	return TEST_OK;
}

/*
 * Busy mode's walk over an iface's connections for blocked, rest-awaiting or bulk ones runs
 * only while its may_block flag says one may be (tcp.md entry 18).  A 64 KiB put (bulk)
 * from a to b: both flags set by the frame (a's when it is queued, b's when its header is
 * parsed), and each side asks epoll in every call for TCP_BULK_CALLS calls after it (a
 * site that forgot the flag leaves that to one call of 16); after those, the flags are
 * clear again, and busy mode asks epoll exactly once in TCP_BUSY_EPOLL_EVERY calls.  Every
 * byte checked.
 */
UNIO_TEST(tcp_busy_walk_flag, fast)
{
	const size_t size = 64 * 1024;
	uint8_t *src = malloc(size);
	struct dcomp d = { .c = { .func = dcomp_done, .count = 1 } };
	struct unio_tl_tcp_stats s0, s1, t0, t1;
	struct iovec iov = { src, size };
	struct unio_tl_rkey rk;
	struct tpeer a, b;

	TEST_ASSERT(src != NULL, "malloc");
	TEST_ASSERT_EQ(tpeer_open(&a, "lo"), 0);
	TEST_ASSERT_EQ(tpeer_open(&b, "lo"), 0);
	TEST_ASSERT_EQ(tpeer_connect(&a, b.addr), 0);
	TEST_ASSERT_EQ(tpeer_region_key(&a, &b, size, &rk), 0);
	for (int i = 0; i < 100000 && !accepted_one(&b); i++)
		progress2(&a, &b, 1);
	progress2(&a, &b, 64);
	TEST_ASSERT(!tcp_iface_of(a.iface)->may_block && !tcp_iface_of(b.iface)->may_block,
		    "connected and idle: no flag expected");
	test_fill(src, size, 5);
	TEST_ASSERT_STATUS(unio_tl_ep_put_zcopy(a.ep, &iov, 1, (uintptr_t)b.region, &rk, &d.c),
			   UNIO_INPROGRESS);
	TEST_ASSERT(tcp_iface_of(a.iface)->may_block, "a bulk put queued: a's flag expected");
	for (int i = 0; i < 1000000 && d.done == 0; i++)
		progress2(&a, &b, 1);
	TEST_ASSERT(d.done == 1 && d.status == UNIO_OK, "put: done %d, %s", d.done,
		    unio_status_string(d.status));
	TEST_ASSERT(memcmp(b.region, src, size) == 0, "put data differs");
	TEST_ASSERT(tcp_iface_of(b.iface)->may_block, "a bulk put received: b's flag expected");
	unio_tl_tcp_stats(a.iface, &s0);
	unio_tl_tcp_stats(b.iface, &t0);
	progress2(&a, &b, 64);
	unio_tl_tcp_stats(a.iface, &s1);
	unio_tl_tcp_stats(b.iface, &t1);
	TEST_LOG("after the bulk put: %" PRIu64 " / %" PRIu64 " epoll calls in 64",
		 s1.epoll_calls - s0.epoll_calls, t1.epoll_calls - t0.epoll_calls);
	TEST_ASSERT(s1.epoll_calls - s0.epoll_calls == 64 && t1.epoll_calls - t0.epoll_calls == 64,
		    "bulk: epoll in every call expected, %" PRIu64 " / %" PRIu64 " in 64",
		    s1.epoll_calls - s0.epoll_calls, t1.epoll_calls - t0.epoll_calls);
	progress2(&a, &b, TCP_BULK_CALLS + 2);
	TEST_ASSERT(!tcp_iface_of(a.iface)->may_block && !tcp_iface_of(b.iface)->may_block,
		    "bulk over: flags expected clear");
	unio_tl_tcp_stats(a.iface, &s0);
	unio_tl_tcp_stats(b.iface, &t0);
	progress2(&a, &b, 4096);
	unio_tl_tcp_stats(a.iface, &s1);
	unio_tl_tcp_stats(b.iface, &t1);
	TEST_ASSERT_EQ(s1.epoll_calls - s0.epoll_calls, 4096 / TCP_BUSY_EPOLL_EVERY);
	TEST_ASSERT_EQ(t1.epoll_calls - t0.epoll_calls, 4096 / TCP_BUSY_EPOLL_EVERY);
	a.iface->ctl->rkey_release(a.ep, &rk);
	tpeer_close(&a);
	tpeer_close(&b);
	free(src);
	return TEST_OK;
}

/* ---- a tagged 1 MiB rendezvous: frames per message ---- */

/* Two workers of one context with a tcp ep from the first to the second, and two buffers. */
struct tcp_pair {
	struct api_pair pair;
	uint8_t *sbuf, *rbuf;
};

static void
tcp_pair_close(struct tcp_pair *p)
{
	api_pair_close(&p->pair);
	free(p->sbuf);
	free(p->rbuf);
}

/* TEST_OK, or TEST_FAIL with nothing left open. */
static int
tcp_pair_open(struct tcp_pair *p, const char *const *ovr, size_t size)
{
	int rc = TEST_FAIL;

	p->pair = (struct api_pair){ 0 };
	p->sbuf = malloc(size);
	p->rbuf = malloc(size);
	if (p->sbuf != NULL && p->rbuf != NULL)
		rc = api_pair_open(&p->pair, ovr, "tcp");
	else
		TEST_LOG("malloc");
	if (rc != TEST_OK)
		tcp_pair_close(p);
	return rc;
}

/*
 * A 1 MiB tagged message between two workers over tcp on lo, the receive posted first:
 * the auto scheme is a plain rendezvous get in one 1 MiB chunk, so the receiver reads two
 * frames per message (RTS, one GET_RESP) and the sender two (GET_REQ, ATS), where the
 * split rendezvous took six each way (RTS, two GET_RESP, two PUT, ATS / two GET_REQ, RTR,
 * two PUT_ACK, ATS); and the GET_RESP payload, larger than the receive buffer, goes
 * straight from the socket into the posted buffer (at most the first read's 64 KiB through
 * the buffer).  Every byte checked.
 */
UNIO_TEST(tcp_rndv_frames, fast)
{
	static const char *const ovr[] = { "TLS", "tcp,self", "NET_DEVICES", "lo", NULL };
	const size_t size = 1 << 20;
	const unsigned int n = 8;
	struct unio_tl_tcp_stats s0, s1, r0, r1;
	struct unio_tl_iface *ts, *tr;
	struct tcp_pair p;
	unio_status_t st;

	if (tcp_pair_open(&p, ovr, size) != TEST_OK)
		return TEST_FAIL;
	ts = api_worker_iface(p.pair.a, "tcp", NULL);
	tr = api_worker_iface(p.pair.b, "tcp", NULL);
	TEST_ASSERT(ts != NULL && tr != NULL, "no tcp iface");
	for (unsigned int i = 0; i <= n; i++) {
		unio_request_t *sreq = NULL, *rreq = NULL;
		struct unio_recv_info info;
		struct unio_request_param rp = { .field_mask = UNIO_REQ_PARAM_RECV_INFO,
						 .recv_info = &info };
		int left = 2;

		if (i == 1) {  /* the first message warmed the connection up */
			unio_tl_tcp_stats(ts, &s0);
			unio_tl_tcp_stats(tr, &r0);
		}
		test_fill(p.sbuf, size, 500 + i);
		memset(p.rbuf, 0, size);
		TEST_ASSERT_STATUS(unio_tag_recv(p.pair.b, p.rbuf, size, 9, UINT64_MAX, &rp, &rreq),
				   UNIO_INPROGRESS);
		st = unio_tag_send(p.pair.ep, p.sbuf, size, 9, NULL, &sreq);
		TEST_ASSERT(st == UNIO_INPROGRESS, "send %u: %s", i, unio_status_string(st));
		for (uint64_t end = rte_get_tsc_cycles() + 30 * rte_get_tsc_hz();
		     left > 0 && rte_get_tsc_cycles() < end;) {
			unio_worker_progress(p.pair.a);
			unio_worker_progress(p.pair.b);
			left = (unio_request_test(sreq, NULL) == UNIO_INPROGRESS) +
			       (unio_request_test(rreq, NULL) == UNIO_INPROGRESS);
		}
		TEST_ASSERT_EQ(left, 0);
		TEST_ASSERT_STATUS(unio_request_test(sreq, NULL), UNIO_OK);
		TEST_ASSERT_STATUS(unio_request_test(rreq, &info), UNIO_OK);
		TEST_ASSERT_EQ(info.length, size);
		TEST_ASSERT(test_checksum(p.rbuf, size) == test_checksum(p.sbuf, size),
			    "message %u corrupted", i);
		unio_request_free(sreq);
		unio_request_free(rreq);
	}
	unio_tl_tcp_stats(ts, &s1);
	unio_tl_tcp_stats(tr, &r1);
	TEST_LOG("%u x 1 MiB: receiver %" PRIu64 " frames, %" PRIu64 " bytes direct; sender %"
		 PRIu64 " frames", n, r1.rx_frames - r0.rx_frames,
		 r1.direct_bytes - r0.direct_bytes, s1.rx_frames - s0.rx_frames);
	TEST_ASSERT(r1.rx_frames - r0.rx_frames <= 2 * n, "receiver: %" PRIu64 " frames",
		    r1.rx_frames - r0.rx_frames);
	TEST_ASSERT(s1.rx_frames - s0.rx_frames <= 2 * n, "sender: %" PRIu64 " frames",
		    s1.rx_frames - s0.rx_frames);
	TEST_ASSERT(r1.direct_bytes - r0.direct_bytes >= n * (size - 64 * 1024),
		    "only %" PRIu64 " bytes read straight into place",
		    r1.direct_bytes - r0.direct_bytes);
	tcp_pair_close(&p);
	return TEST_OK;
}

/*
 * The same at the API: a 1 MiB tagged rendezvous over tcp on lo between two workers, with
 * 64 KiB socket buffers (the GET_RESP read over many calls): the worker progress call in
 * which the receive completes, and the one in which the send completes (the ATS), each
 * return more than 0.  A caller that tests its requests only after progress reported work
 * (unio-perf's wait loops) would otherwise see them late; the receive's call returned 0 on
 * every message before tcp change 11.  Every message checksummed.
 */
UNIO_TEST(tcp_rndv_progress_counts, fast)
{
	static const char *const ovr[] = { "TLS", "tcp,self", "NET_DEVICES", "lo",
					   "TCP_RCVBUF", "64k", "TCP_SNDBUF", "64k", NULL };
	const size_t size = 1 << 20;
	const unsigned int n = 8;
	unsigned int silent_s = 0, silent_r = 0;
	struct tcp_pair p;
	unio_status_t st;

	if (tcp_pair_open(&p, ovr, size) != TEST_OK)
		return TEST_FAIL;
	for (unsigned int i = 0; i < n; i++) {
		unio_request_t *sreq = NULL, *rreq = NULL;
		bool sdone = false, rdone = false;

		test_fill(p.sbuf, size, 700 + i);
		memset(p.rbuf, 0, size);
		TEST_ASSERT_STATUS(unio_tag_recv(p.pair.b, p.rbuf, size, 9, UINT64_MAX, NULL,
						 &rreq), UNIO_INPROGRESS);
		st = unio_tag_send(p.pair.ep, p.sbuf, size, 9, NULL, &sreq);
		TEST_ASSERT(st == UNIO_INPROGRESS, "send %u: %s", i, unio_status_string(st));
		for (uint64_t end = rte_get_tsc_cycles() + 30 * rte_get_tsc_hz();
		     !(sdone && rdone) && rte_get_tsc_cycles() < end;) {
			unsigned int k = unio_worker_progress(p.pair.a);

			if (!sdone && unio_request_test(sreq, NULL) != UNIO_INPROGRESS) {
				sdone = true;
				silent_s += k == 0;
			}
			k = unio_worker_progress(p.pair.b);
			if (!rdone && unio_request_test(rreq, NULL) != UNIO_INPROGRESS) {
				rdone = true;
				silent_r += k == 0;
			}
		}
		TEST_ASSERT(sdone && rdone, "message %u: send done %d, receive done %d", i,
			    sdone, rdone);
		TEST_ASSERT_STATUS(unio_request_test(sreq, NULL), UNIO_OK);
		TEST_ASSERT_STATUS(unio_request_test(rreq, NULL), UNIO_OK);
		TEST_ASSERT(test_checksum(p.rbuf, size) == test_checksum(p.sbuf, size),
			    "message %u corrupted", i);
		unio_request_free(sreq);
		unio_request_free(rreq);
	}
	TEST_LOG("%u x 1 MiB: %u sends and %u receives completed in a progress call that "
		 "returned 0", n, silent_s, silent_r);
	TEST_ASSERT_EQ(silent_s, 0);
	TEST_ASSERT_EQ(silent_r, 0);
	tcp_pair_close(&p);
	return TEST_OK;
}

/* ---- bursts of small frames: MSG_MORE ---- */

static bool
got_100(struct tpeer *p)
{
	return p->rx_next >= 100 || p->rx_bad > 0;
}

static bool
got_8(struct tpeer *p)
{
	return p->rx_next >= 8 || p->rx_bad > 0;
}

/*
 * A burst of 8 bcopy frames from @p a: the first 4 one byte over a quarter of the
 * connection's MSS (as first read), the last 4 exactly a quarter.  After the first
 * TCP_BURST_MIN sends only the quarter-segment frames go with MSG_MORE: a frame of a
 * segment or more would leave its tail held behind full segments (4 KiB frames on a veth,
 * MSS 1448: tcp.md entry 15).
 */
static int
burst_sizes(struct tpeer *a, struct tpeer *b)
{
	static uint8_t body[32 * 1024];
	struct tcp_conn *c = tcp_conn_of(a->ep);
	struct unio_tl_tcp_stats st;
	socklen_t l = sizeof(int);
	uint64_t before;
	size_t fit;
	int mss = 0;

	/* read by the earlier bursts, at their first held frame (lo's MSS grows after) */
	TEST_ASSERT_EQ(getsockopt(c->item.fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &l), 0);
	TEST_ASSERT(c->more_max >= 536 / 4 && c->more_max <= (unsigned int)mss / 4,
		    "more_max %u, MSS now %d", c->more_max, mss);
	fit = c->more_max - sizeof(struct tcp_hdr) - 16;   /* a frame of more_max bytes */
	TEST_ASSERT(fit + 1 <= sizeof(body), "more_max %u", c->more_max);
	b->rx_next = 0;
	unio_tl_iface_progress(a->iface);
	unio_tl_tcp_stats(a->iface, &st);
	before = st.more_sends;
	for (uint64_t s = 0; s < 8; s++) {
		struct burst_arg ba = { .h = { s, 0 }, .body = body, .len = s < 4 ? fit + 1 : fit };

		test_fill(body, ba.len, s);
		ba.h[1] = test_checksum(body, ba.len);
		TEST_ASSERT(unio_tl_ep_am_bcopy(a->ep, T_AM_DATA, burst_pack, &ba, 0) > 0,
			    "bcopy %" PRIu64, s);
	}
	unio_tl_tcp_stats(a->iface, &st);
	TEST_LOG("MSS %d, more_max %u: frames of %zu bytes held, of %zu not", mss, c->more_max,
		 fit + 16 + sizeof(struct tcp_hdr), fit + 17 + sizeof(struct tcp_hdr));
	TEST_ASSERT_EQ(st.more_sends - before, 4);
	TEST_ASSERT(tpeer_wait(b, got_8, 5000), "size burst: %" PRIu64, b->rx_next);
	return 0;
}

/*
 * A burst of short frames with no progress call between them goes to the kernel with
 * MSG_MORE after the first TCP_BURST_MIN (more_sends counts them), so the burst shares
 * segments; the sender then never progresses again and the receiver still gets all of it, in order,
 * within the kernel's cork timer (200 ms) or an ACK.  A ping-pong, where each send follows
 * a progress call, never uses MSG_MORE; a held burst is pushed by the sender's next
 * progress call or event_arm (more_pushes).
 */
UNIO_TEST(tcp_burst_more, fast)
{
	struct unio_tl_tcp_stats sa;
	struct tpeer a, b;
	uint64_t cks = test_checksum("", 0), t0, pushes;

	TEST_ASSERT_EQ(tpeer_open(&a, "lo"), 0);
	TEST_ASSERT_EQ(tpeer_open(&b, "lo"), 0);
	TEST_ASSERT_EQ(tpeer_connect(&a, b.addr), 0);
	TEST_ASSERT_EQ(tpeer_connect(&b, a.addr), 0);
	/* connected (and moved) by a ping-pong: no MSG_MORE in it */
	for (uint64_t s = 0; s < 50; s++)
		TEST_ASSERT_EQ(ping_both(&a, &b, s), 0);
	unio_tl_tcp_stats(a.iface, &sa);
	TEST_ASSERT_EQ(sa.more_sends, 0);
	a.rx_next = b.rx_next = 0;
	/* burst of 100 from a, then a stops; only b progresses */
	unio_tl_iface_progress(a.iface);
	for (uint64_t s = 0; s < 100; s++)
		TEST_ASSERT_STATUS(unio_tl_ep_am_short(a.ep, T_AM_DATA, s, &cks, 8), UNIO_OK);
	unio_tl_tcp_stats(a.iface, &sa);
	TEST_ASSERT_EQ(sa.more_sends, 100 - TCP_BURST_MIN);
	t0 = test_now_ms();
	TEST_ASSERT(tpeer_wait(&b, got_100, 5000), "b got %" PRIu64 " of 100 from a sender "
		    "that stopped progressing", b.rx_next);
	TEST_LOG("burst delivered without the sender's progress in %" PRIu64 " ms",
		 test_now_ms() - t0);
	TEST_ASSERT_EQ(b.rx_bad, 0);
	/* another burst: a's next progress pushes what the kernel holds */
	b.rx_next = 0;
	for (uint64_t s = 0; s < 100; s++)
		TEST_ASSERT_STATUS(unio_tl_ep_am_short(a.ep, T_AM_DATA, s, &cks, 8), UNIO_OK);
	unio_tl_iface_progress(a.iface);
	unio_tl_tcp_stats(a.iface, &sa);
	TEST_ASSERT_EQ(sa.more_sends, 200 - TCP_BURST_MIN);  /* no progress in between */
	TEST_ASSERT(sa.more_pushes >= 1, "no push from progress");
	TEST_ASSERT(tpeer_wait(&b, got_100, 5000), "second burst: %" PRIu64, b.rx_next);
	/* a third burst, then the sender arms its event fd to sleep: pushed first */
	b.rx_next = 0;
	unio_tl_iface_progress(a.iface);
	unio_tl_tcp_stats(a.iface, &sa);
	pushes = sa.more_pushes;
	for (uint64_t s = 0; s < 100; s++)
		TEST_ASSERT_STATUS(unio_tl_ep_am_short(a.ep, T_AM_DATA, s, &cks, 8), UNIO_OK);
	a.iface->ctl->iface_event_arm(a.iface);
	unio_tl_tcp_stats(a.iface, &sa);
	TEST_ASSERT_EQ(sa.more_pushes, pushes + 1);
	TEST_ASSERT(tpeer_wait(&b, got_100, 5000), "third burst: %" PRIu64, b.rx_next);
	TEST_ASSERT_EQ(burst_sizes(&a, &b), 0);
	TEST_ASSERT_EQ(b.rx_bad + a.rx_bad + a.ep_errors + b.ep_errors, 0);
	tpeer_close(&a);
	tpeer_close(&b);
	return TEST_OK;
}

/*
 * A connection that fails while connecting (the peer's port is closed: the kernel refuses
 * it) is reported as work by the progress call that finds out: the ep's error callback runs
 * in a call that returns more than 0.  Before, the call returned 0, and a caller that looks
 * at its eps only after calls that did work learned of the failure late.
 */
UNIO_TEST(tcp_progress_counts_connect_failure, fast)
{
	uint8_t dead[UNIO_TL_ADDR_MAX];
	struct tpeer a, b;
	int silent = 0, calls = 0;

	TEST_ASSERT_EQ(tpeer_open(&a, "lo"), 0);
	TEST_ASSERT_EQ(tpeer_open(&b, "lo"), 0);
	memcpy(dead, b.addr, sizeof(dead));
	tpeer_close(&b);                  /* its listener is gone: a connection is refused */
	TEST_ASSERT_EQ(tpeer_connect(&a, dead), 0);
	for (; calls < 2000000 && a.ep_errors == 0; calls++) {
		unsigned int n = unio_tl_iface_progress(a.iface);

		if (a.ep_errors != 0 && n == 0)
			silent++;
	}
	TEST_ASSERT(a.ep_errors == 1 && a.last_err < 0, "%d error callbacks (%s) in %d calls",
		    a.ep_errors, unio_status_string(a.last_err), calls);
	TEST_ASSERT_EQ(silent, 0);
	tpeer_close(&a);
	return TEST_OK;
}

/*
 * A 1 MiB GET_RESP that trickles in (change 13): a raw peer answers a's get in 4 KiB pieces,
 * a progressing 4 times after each.  The rest of the direct frame is read once 64 KiB of it
 * (TCP_RX_LOWAT, or all that is left) wait in the socket, told by epoll through
 * SO_RCVLOWAT, and busy mode reads no connection blindly meanwhile: at most 20 reads bring
 * bytes and at most 2 find nothing, in busy and epoll mode, also with the smallest receive
 * buffer (UNIO_TCP_RCVBUF=64k, where the kernel may report less).  Before: about 256 reads
 * with data, and in busy mode about 770 empty ones.  Every byte checked.
 */
#define TR_HDR sizeof(struct tcp_hdr)
#define TR_RMA sizeof(struct tcp_rma_hdr)

struct trickle {
	uint64_t reads, empty, waits, direct;
	unsigned int calls;
};

static int
trickle_get(const char *mode, const char *rcvbuf, struct trickle *t)
{
	const char *set[] = { "TCP_POLL_MODE", mode, "TCP_RCVBUF", rcvbuf, NULL };
	const size_t size = 1 << 20, piece = 4096;
	uint8_t *src = malloc(size), *dst = calloc(1, size), req[TR_HDR + TR_RMA];
	struct dcomp d = { .c = { .func = dcomp_done, .count = 1 } };
	struct tcp_rkey key = { .base = 1 << 30, .len = size, .key_gen = 1, .secret = 5 };
	struct unio_tl_tcp_stats s0, s1;
	struct iovec g = { dst, size };
	struct tcp_rma_hdr r;
	struct unio_tl_rkey rk;
	struct tcp_addr peer;
	struct tpeer a;
	size_t sent = 0;
	int fd;

	TEST_ASSERT(src != NULL && dst != NULL, "malloc");
	test_fill(src, size, 13);
	TEST_ASSERT_EQ(tpeer_open_set(&a, "lo", set), 0);
	fd = raw_attach(&a, 9, &t->calls);
	TEST_ASSERT(fd >= 0, "raw peer not attached after %u calls", t->calls);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));  /* as a peer does */
	peer = *(const struct tcp_addr *)a.addr;
	peer.port = htons(9);
	TEST_ASSERT_EQ(tpeer_connect(&a, (const uint8_t *)&peer), 0);
	TEST_ASSERT_STATUS(a.iface->ctl->rkey_unpack(a.ep, &key, sizeof(key), &rk), UNIO_OK);
	TEST_ASSERT_STATUS(unio_tl_ep_get_zcopy(a.ep, &g, 1, key.base, &rk, &d.c),
			   UNIO_INPROGRESS);
	TEST_ASSERT_EQ(read_n(&a, fd, req, sizeof(req)), 0);
	memcpy(&r, req + TR_HDR, TR_RMA);
	TEST_ASSERT(req[4] == TCP_F_GET_REQ && r.length == size, "type %u, %" PRIu64 " bytes",
		    req[4], r.length);
	r = (struct tcp_rma_hdr){ .length = size, .req_id = r.req_id, .status = UNIO_OK };
	tcp_hdr_set((struct tcp_hdr *)req, TR_RMA + size, TCP_F_GET_RESP, 0);
	memcpy(req + TR_HDR, &r, TR_RMA);
	TEST_ASSERT_EQ(send_all(fd, req, sizeof(req)), 0);
	unio_tl_tcp_stats(a.iface, &s0);
	t->calls = 0;
	while (sent < size && t->calls < 1000000) {
		ssize_t k = send(fd, src + sent, RTE_MIN(piece, size - sent),
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		TEST_ASSERT(k > 0 || errno == EAGAIN, "send: %s", strerror(errno));
		sent += k > 0 ? (size_t)k : 0;
		for (int i = 0; i < 4; i++, t->calls++)
			unio_tl_iface_progress(a.iface);
	}
	for (; d.done == 0 && t->calls < 1000000; t->calls++)
		unio_tl_iface_progress(a.iface);
	unio_tl_tcp_stats(a.iface, &s1);
	TEST_ASSERT(d.done == 1 && d.status == UNIO_OK, "get done %d, %s, %zu sent", d.done,
		    unio_status_string(d.status), sent);
	TEST_ASSERT(memcmp(dst, src, size) == 0, "the get's data differs");
	t->reads = s1.direct_reads - s0.direct_reads;
	t->empty = s1.rx_empty - s0.rx_empty;
	t->waits = s1.rx_waits - s0.rx_waits;
	t->direct = s1.direct_frames;
	TEST_ASSERT_EQ(s1.open_conns, 1);
	a.iface->ctl->rkey_release(a.ep, &rk);
	close(fd);
	tpeer_close(&a);
	free(src);
	free(dst);
	return TEST_OK;
}

UNIO_TEST(tcp_direct_trickle, fast)
{
	static const char *const cases[][2] = { { "busy", "auto" }, { "epoll", "auto" },
						{ "busy", "64k" }, { "epoll", "64k" } };

	for (size_t i = 0; i < RTE_DIM(cases); i++) {
		struct trickle t;

		TEST_ASSERT_EQ(trickle_get(cases[i][0], cases[i][1], &t), TEST_OK);
		TEST_LOG("%s mode, UNIO_TCP_RCVBUF=%s: %u progress calls, %" PRIu64 " reads with"
			 " data, %" PRIu64 " empty, %" PRIu64 " waits", cases[i][0], cases[i][1],
			 t.calls, t.reads, t.empty, t.waits);
		TEST_ASSERT_EQ(t.direct, 1);
		TEST_ASSERT(t.reads <= 20 && t.empty <= 2, "%" PRIu64 " reads, %" PRIu64 " empty",
			    t.reads, t.empty);
	}
	return TEST_OK;
}
