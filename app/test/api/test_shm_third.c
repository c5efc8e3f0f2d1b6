/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm remote keys and a third process.  V (this process) has shm endpoints to T and to M.
 * M, malicious, forges rendezvous messages to V that name V's endpoint to T (an ep id is a
 * small number; M could also write them into T's ring in V's segment, which every sender to V
 * maps) and carry a shm key for T's memory that T never registered for anyone:
 *  - an RTS whose key names T's private "secret" buffer: V's matching receive would pull it
 *    from T (CMA) and hand T's bytes to V's application;
 *  - an RTP (split rendezvous) for V's pending rendezvous send to T whose key names T's
 *    "target" buffer: V would write its message into T at M's address.
 * Asserted: V's receive never holds T's secret, T's target stays untouched, T's secret too;
 * then T receives V's send after all (M's refused RTP did not take it): intact, completed.
 * A shm key names no process (its owner is the peer of the ep it is unpacked on) and grants
 * only a range its owner registered (slot and random secret, checked in the owner's table at
 * unpack); M's forged keys carry the slot and secret of M's own registration.  Three
 * processes (mp).
 */

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_log.h>

#include "api_common.h"
#include "proto_am_rma.h"
#include "shm_priv.h"
#include "unio_proto.h"

#define TAG_INFO   0x7101
#define TAG_CHECK  0x7102
#define TAG_ANSWER 0x7103
#define TAG_LEAK   0x7104
#define TAG_SEND   0x7105
#define SECRET_LEN 4096
#define SEND_LEN   (1 << 20)

/* What T tells V, and V tells M (the attacker learns it by other means in real life). */
struct third_info {
	uint64_t pid;
	uint64_t iface_id;     /* T's shm iface */
	uint64_t secret_addr;
	uint64_t target_addr;
	uint64_t v_ep_id;      /* V's id of its ep to T: what T's headers carry */
	uint64_t v_sreq;       /* V's rendezvous send to T, waiting for T */
};

struct third_answer {
	int64_t target_bad;    /* first byte of T's target that changed, -1 */
	int64_t secret_bad;
};

static uint8_t t_secret[SECRET_LEN];
static uint8_t t_target[SEND_LEN];

static int64_t
first_diff(const uint8_t *p, size_t n, uint64_t seed)
{
	uint8_t *want = malloc(n);
	int64_t r = -1;

	if (want == NULL)
		return 0;
	if (seed == 0)
		memset(want, 0, n);
	else
		test_fill(want, n, seed);
	for (size_t i = 0; i < n; i++)
		if (p[i] != want[i]) {
			r = (int64_t)i;
			break;
		}
	free(want);
	return r;
}

UNIO_TEST_CHILD(shm_third_owner)
{
	unio_context_t *ctx = api_ctx(NULL);
	unio_worker_t *w = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	struct third_info ti = { 0 };
	struct third_answer ans;
	struct unio_recv_info info;
	unio_ep_t *ep;
	uint64_t go;

	if (w == NULL || api_worker_iface(w, "shm", NULL) == NULL)
		return 2;
	ep = api_third_child(w, argc, argv);
	if (ep == NULL)
		return 3;
	test_fill(t_secret, SECRET_LEN, 0x5ec7e7);
	memset(t_target, 0, SEND_LEN);
	ti.pid = (uint64_t)getpid();
	ti.iface_id = ((struct shm_iface *)api_worker_iface(w, "shm", NULL))->iface_id;
	ti.secret_addr = (uintptr_t)t_secret;
	ti.target_addr = (uintptr_t)t_target;
	ti.v_ep_id = ep->remote_id;
	if (strcmp(ep->lane.iface->driver->name, "shm") != 0 ||
	    api_send(w, ep, &ti, sizeof(ti), TAG_INFO, 0) != UNIO_OK ||
	    api_recv(w, &go, sizeof(go), TAG_CHECK, UINT64_MAX, &info) != UNIO_OK)
		return 4;
	ans.target_bad = first_diff(t_target, SEND_LEN, 0);
	ans.secret_bad = first_diff(t_secret, SECRET_LEN, 0x5ec7e7);
	if (api_send(w, ep, &ans, sizeof(ans), TAG_ANSWER, 0) != UNIO_OK)
		return 5;
	/* now the receive of V's pending rendezvous send: M's forged RTP did not take it */
	{
		uint8_t *buf = malloc(SEND_LEN), *want = malloc(SEND_LEN);

		if (buf == NULL || want == NULL ||
		    api_recv(w, buf, SEND_LEN, TAG_SEND, UINT64_MAX, &info) != UNIO_OK)
			return 6;
		test_fill(want, SEND_LEN, 0xabc);
		ans.target_bad = first_diff(t_target, SEND_LEN, 0);
		ans.secret_bad = memcmp(buf, want, SEND_LEN) == 0 ? -1 : 0;
		free(buf);
		free(want);
		if (api_send(w, ep, &ans, sizeof(ans), TAG_ANSWER, 0) != UNIO_OK)
			return 7;
	}
	/* V closes first; its rendezvous send to this process is never received */
	return api_child_end(ctx, w, ep);
}

/* A shm key for [base, base + len) of T, as M can make it: M's own key, its fields changed. */
static size_t
forge_key(struct unio_tl_iface *ifc, const struct third_info *ti, uint64_t base, size_t len,
	  uint8_t *out)
{
	static uint8_t mine[64];
	struct unio_tl_memh memh;
	struct shm_rkey_packed k;

	if (ifc->ctl->mem_reg(ifc, mine, sizeof(mine), &memh) != UNIO_OK ||
	    ifc->ctl->rkey_pack(ifc, &memh, &k) != UNIO_OK)
		return 0;
	RTE_SET_USED(ti);
	k.base = base;
	k.len = len;
	/* the slot of M's own registration, and its secret: T's table has neither */
	memcpy(out, &k, sizeof(k));
	return sizeof(k);
}

UNIO_TEST_CHILD(shm_third_attacker)
{
	unio_context_t *ctx = api_ctx(NULL);
	unio_worker_t *w = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	uint8_t m[sizeof(struct proto_rtp_hdr) + UNIO_TL_RKEY_MAX + 64];
	struct proto_rts_hdr rts = { .tag = TAG_LEAK, .size = SECRET_LEN, .sreq_id = 0x1234 };
	struct proto_rtp_hdr rtp = { .r = { .rreq_id = 0x77 }, .offset = SEND_LEN / 2 };
	struct unio_recv_info info;
	struct unio_tl_iface *ifc;
	struct third_info ti;
	unio_ep_t *ep;
	size_t kl;
	uint64_t done = 1;

	ep = api_third_child(w, argc, argv);
	if (ep == NULL || (ifc = api_worker_iface(w, "shm", NULL)) == NULL)
		return 3;
	if (api_recv(w, &ti, sizeof(ti), TAG_INFO, UINT64_MAX, &info) != UNIO_OK)
		return 4;
	/* the RTS: V's receive of TAG_LEAK would pull T's secret */
	rts.addr = ti.secret_addr;
	rts.ep_id = (uint32_t)ti.v_ep_id;
	kl = forge_key(ifc, &ti, ti.secret_addr, SECRET_LEN, m + sizeof(rts));
	if (kl == 0)
		return 5;
	rts.rkey_len = (uint16_t)kl;
	memcpy(m, &rts, sizeof(rts));
	if (api_raw_am(w, ep->lane.tl_ep, PROTO_AM_RTS, m, sizeof(rts) + kl) != 0)
		return 6;
	/* the RTP: V would put the second half of its send to T into T's target */
	rtp.r.sreq_id = ti.v_sreq;
	rtp.r.ep_id = (uint32_t)ti.v_ep_id;
	rtp.addr = ti.target_addr;
	kl = forge_key(ifc, &ti, ti.target_addr, SEND_LEN / 2, m + sizeof(rtp));
	rtp.rkey_len = (uint16_t)kl;
	memcpy(m, &rtp, sizeof(rtp));
	if (api_raw_am(w, ep->lane.tl_ep, PROTO_AM_RTR, m, sizeof(rtp) + kl) != 0)
		return 7;
	if (api_send(w, ep, &done, sizeof(done), TAG_CHECK, 0) != UNIO_OK)
		return 8;
	return api_child_end(ctx, w, ep);
}

static int
victim(unio_worker_t *w, unio_ep_t *ep_t, unio_ep_t *ep_m, const char *flag, void *arg)
{
	uint8_t *send_buf = arg;
	uint8_t leak[SECRET_LEN], want[SECRET_LEN];
	struct unio_recv_info info;
	struct third_info ti;
	struct third_answer ans;
	unio_request_t *sreq = NULL, *rreq = NULL;
	uint64_t go = 1;

	RTE_SET_USED(flag);
	TEST_ASSERT(strcmp(ep_t->lane.iface->driver->name, "shm") == 0 &&
		    strcmp(ep_m->lane.iface->driver->name, "shm") == 0, "lanes %s, %s",
		    ep_t->lane.iface->driver->name, ep_m->lane.iface->driver->name);
	TEST_ASSERT_STATUS(api_recv(w, &ti, sizeof(ti), TAG_INFO, UINT64_MAX, &info), UNIO_OK);
	TEST_ASSERT(ti.v_ep_id == ep_t->id, "T's view of V's ep id");
	/* a rendezvous send to T that T never receives: it waits for T's RTR / RTP */
	test_fill(send_buf, SEND_LEN, 0xabc);
	TEST_ASSERT_STATUS(unio_tag_send(ep_t, send_buf, SEND_LEN, TAG_SEND, NULL, &sreq),
			   UNIO_INPROGRESS);
	ti.v_sreq = proto_req_id(sreq);
	memset(leak, 0xee, sizeof(leak));
	TEST_ASSERT_STATUS(unio_tag_recv(w, leak, sizeof(leak), TAG_LEAK, UINT64_MAX, NULL,
					 &rreq), UNIO_INPROGRESS);
	TEST_ASSERT_STATUS(api_send(w, ep_m, &ti, sizeof(ti), TAG_INFO, 0), UNIO_OK);
	TEST_ASSERT_STATUS(api_recv(w, &go, sizeof(go), TAG_CHECK, UINT64_MAX, &info), UNIO_OK);
	for (uint64_t t0 = rte_get_timer_cycles();
	     rte_get_timer_cycles() - t0 < rte_get_timer_hz() / 2; )
		unio_worker_progress(w);
	test_fill(want, SECRET_LEN, 0x5ec7e7);
	TEST_ASSERT(memcmp(leak, want, SECRET_LEN) != 0,
		    "V's receive holds T's secret: M made V read a third process's memory");
	TEST_LOG("V's receive after the forged RTS: %s", unio_status_string(
		 unio_request_test(rreq, NULL)));
	unio_request_cancel(w, rreq);
	unio_request_free(rreq);
	/* T checks its memory */
	TEST_ASSERT_STATUS(api_send(w, ep_t, &go, sizeof(go), TAG_CHECK, 0), UNIO_OK);
	TEST_ASSERT_STATUS(api_recv(w, &ans, sizeof(ans), TAG_ANSWER, UINT64_MAX, &info),
			   UNIO_OK);
	TEST_ASSERT(ans.target_bad < 0, "T's target changed at byte %" PRId64 ": M made V "
		    "write into a third process", ans.target_bad);
	TEST_ASSERT(ans.secret_bad < 0, "T's secret changed at byte %" PRId64, ans.secret_bad);
	/* T receives V's send after all: it completes, intact, T's target still untouched
	 * (before, M's refused RTP had marked the send answered: it never completed) */
	TEST_ASSERT_STATUS(unio_tag_recv(w, &ans, sizeof(ans), TAG_ANSWER, UINT64_MAX, NULL,
					 &rreq), UNIO_INPROGRESS);
	for (uint64_t t0 = rte_get_timer_cycles(); rte_get_timer_cycles() - t0 <
	     20 * rte_get_timer_hz() && (unio_request_test(sreq, NULL) == UNIO_INPROGRESS ||
					 unio_request_test(rreq, NULL) == UNIO_INPROGRESS); )
		unio_worker_progress(w);
	TEST_ASSERT_STATUS(unio_request_test(sreq, NULL), UNIO_OK);
	TEST_ASSERT_STATUS(unio_request_test(rreq, NULL), UNIO_OK);
	unio_request_free(sreq);
	unio_request_free(rreq);
	TEST_ASSERT(ans.secret_bad < 0, "T received V's send with other data");
	TEST_ASSERT(ans.target_bad < 0, "T's target changed at byte %" PRId64, ans.target_bad);
	return TEST_OK;
}

UNIO_TEST(shm_rkey_third_process, mp)
{
	/* shm with CMA and the split rendezvous (so that V's send waits for an RTP) */
	static const char *const env[] = { "UNIO_RNDV_SCHEME", "split", NULL };
	struct api_third_case c = {
		.drv = "shm", .env = env, .peer = "shm_third_owner",
		.forger = "shm_third_attacker", .who = "T", .victim = victim,
	};
	int rc;

	c.arg = malloc(SEND_LEN);
	TEST_ASSERT(c.arg != NULL, "send buffer");
	rc = api_third_process(&c);
	free(c.arg);
	return rc;
}

/*
 * Who can reach an shm iface's ring segment.  Every sender maps the whole segment
 * read-write, so any process that gets it can write into another sender's ring and speak as
 * that sender.  A process of the owner's uid could as well write into the owner with
 * process_vm_writev or ptrace (no boundary there); one of another uid could not, so it must
 * not get the segment unless UNIO_SHM_OTHER_USERS says so.  A child as uid 65534 tries, with
 * the owner's iface address (as a peer that was given it): /proc/<pid>/fd/<fd> (the kernel
 * refuses: ptrace access), then the iface's fd server (refused by its uid, counted); with
 * the iface told to serve other users it gets the segment (its header names the iface),
 * but not with the iface id alone, which the server socket's name shows every user in
 * /proc/net/unix (the request must carry the address's random key).  Root only.
 */
#define OU_GOT     0   /* the child has the segment */
#define OU_REFUSED 1

/* What the child knows of the owner's iface: what its address says. */
struct ou_target {
	pid_t pid;
	int seg_fd;
	uint64_t iface_id;
	uint64_t key;
};

/* As an attacker would: ask the fd server of @p t for the ring segment; the fd, or -1. */
static int
ou_request(const struct ou_target *t)
{
	struct shm_fd_request req = { SHM_FD_REQ_MAGIC, t->iface_id, t->key, t->iface_id };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char cbuf[CMSG_SPACE(sizeof(int))];
	uint8_t ok = 0;
	struct iovec iov = { &ok, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), n, fd = -1;

	n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "unio-shm-%d-%016" PRIx64,
		     (int)t->pid, t->iface_id);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un,
	    sun_path) + 1 + (size_t)n)) != 0 || send(s, &req, sizeof(req), 0) != sizeof(req) ||
	    recvmsg(s, &mh, 0) != 1 || ok != 1 || (cm = CMSG_FIRSTHDR(&mh)) == NULL ||
	    cm->cmsg_type != SCM_RIGHTS)
		goto out;
	memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
out:
	if (s >= 0)
		close(s);
	return fd;
}

/* In the child, as uid 65534: try to get the ring segment of @p t. */
static int
other_user_try(const struct ou_target *t)
{
	struct shm_seg_hdr h;
	char path[64], line[256], name[64];
	bool named = false;
	FILE *f;
	int fd;

	if (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
	    setresuid(65534, 65534, 65534) != 0)
		return 20;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)t->pid, t->seg_fd);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd >= 0 || (errno != EACCES && errno != EPERM))
		return 21;
	/* the id is no secret: the server socket's name carries it */
	snprintf(name, sizeof(name), "@unio-shm-%d-%016" PRIx64, (int)t->pid, t->iface_id);
	f = fopen("/proc/net/unix", "r");
	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		named |= strstr(line, name) != NULL;
	if (f != NULL)
		fclose(f);
	if (!named)
		return 22;
	fd = ou_request(t);
	if (fd < 0)
		return OU_REFUSED;
	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || h.magic != SHM_SEG_MAGIC ||
	    h.iface_id != t->iface_id)
		return 23;
	close(fd);
	return OU_GOT;
}

/*
 * In the child, as uid 65534: the driver's own connect (unio_tl_ep_create) on @p iface to
 * @p addr; OU_GOT when it made the ep (it mapped the segment it was given).  A refusal
 * must be said in one ERR line that names its cause, the server's pid (the segment's line
 * followed, with the hint of another uid's refusal, UNIO_SHM_OTHER_USERS=y): 24 otherwise.
 */
static int
other_user_connect(struct unio_tl_iface *iface, const struct shm_iface_addr *addr)
{
	struct unio_tl_ep_params p = { .iface_addr = addr, .iface_addr_len = sizeof(*addr) };
	struct unio_tl_ep *ep;
	struct api_log l;
	unio_status_t st;
	char *log;
	bool one;

	if (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
	    setresuid(65534, 65534, 65534) != 0)
		return 20;
	api_log_start(&l);
	st = unio_tl_ep_create(iface, &p, &ep);
	log = api_log_end(&l);
	one = test_count(log, "UNIO ERR") == 1 && test_count(log, "UNIO WARNING") == 0 &&
	      strstr(log, "is process ") != NULL && strstr(log, "OTHER_USERS") == NULL;
	if (st != UNIO_OK)
		fprintf(stderr, "child, refused (%s): %s", one ? "said once" : "not one line",
			log);
	free(log);
	return st == UNIO_OK ? OU_GOT : one ? OU_REFUSED : 24;
}

/* Fork a child of uid 65534 that tries the segment (@p iface set: by connecting); its exit. */
static int
other_user_run(const struct ou_target *t, struct unio_tl_iface *iface,
	       const struct shm_iface_addr *addr)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0)
		_exit(iface != NULL ? other_user_connect(iface, addr) : other_user_try(t));
	return test_wait(pid, 20000);
}

/* The owner: a context allowed shm and self, and a worker of it (NULL when none). */
static unio_worker_t *
ou_owner(unio_context_t **ctx)
{
	setenv("UNIO_TLS", "shm,self", 1);
	*ctx = api_ctx(NULL);
	unsetenv("UNIO_TLS");
	return *ctx != NULL ? unio_worker_create(*ctx, NULL, NULL) : NULL;
}

static const char *
ou_str(int rc)
{
	return rc == OU_GOT ? "got it" : rc == OU_REFUSED ? "refused" : "error";
}

UNIO_TEST(shm_segment_other_user, mp)
{
	unio_context_t *ctx;
	unio_worker_t *w;
	struct shm_iface *si;
	struct ou_target t, wrong;
	struct stat st;
	uint64_t r0, refused;
	int rc_def, rc_opt, rc_key;

	if (geteuid() != 0)
		TEST_SKIP_BECAUSE("switching a child to another user needs root");
	w = ou_owner(&ctx);
	si = w != NULL ? (struct shm_iface *)api_worker_iface(w, "shm", NULL) : NULL;
	TEST_ASSERT(si != NULL, "worker with a shm iface");
	t = (struct ou_target){ getpid(), si->seg_fd, si->iface_id, si->fd_key };
	TEST_ASSERT(fstat(si->seg_fd, &st) == 0, "fstat");
	TEST_LOG("segment memfd: mode %04o, uid %u; UNIO_SHM_OTHER_USERS %s",
		 (unsigned int)st.st_mode & 07777, (unsigned int)st.st_uid,
		 si->other_users ? "y" : "n");
	TEST_ASSERT(!si->other_users, "other users are served by default");
	r0 = __atomic_load_n(&si->fd_refused, __ATOMIC_RELAXED);
	rc_def = other_user_run(&t, NULL, NULL);
	si->other_users = true;
	rc_opt = other_user_run(&t, NULL, NULL);
	wrong = t;
	wrong.key ^= 1;
	rc_key = other_user_run(&wrong, NULL, NULL);
	si->other_users = false;
	refused = __atomic_load_n(&si->fd_refused, __ATOMIC_RELAXED) - r0;
	TEST_LOG("uid 65534 with the address: %s by default, %s with UNIO_SHM_OTHER_USERS=y; "
		 "with the iface id alone %s; refused for its uid %" PRIu64, ou_str(rc_def),
		 ou_str(rc_opt), ou_str(rc_key), refused);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	TEST_ASSERT(rc_def == OU_REFUSED, "another uid by default: child exit %d", rc_def);
	TEST_ASSERT(rc_opt == OU_GOT, "another uid, served: child exit %d", rc_opt);
	TEST_ASSERT(rc_key == OU_REFUSED, "without the key: child exit %d", rc_key);
	TEST_ASSERT(refused == 1, "refusals counted: %" PRIu64, refused);
	return TEST_OK;
}

/*
 * The fd server's abstract name belongs to whoever binds it first: here S, a child of the
 * owner that has the segment's fd (any process of the namespace could bind the name of a
 * pid that has no server, with a segment of its own).  Q, a live process with no server,
 * is the pid a crafted address names; a connecting process of another uid (the kernel
 * refuses it /proc/Q/fd, so it asks the server) got S's segment as Q's, and would have
 * watched Q's death and aimed CMA at Q.  Now the server's pid (SO_PEERCRED) must be the
 * address's: refused; the owner's own server, serving other users, still answers.
 */
static void
squat(int listen_fd, int seg_fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct shm_fd_request req;
	uint8_t ok = 1;
	struct iovec iov = { &ok, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct pollfd pfd = { .fd = listen_fd, .events = POLLIN };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	int c;

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &seg_fd, sizeof(int));
	while (poll(&pfd, 1, 20000) == 1 && (c = accept(listen_fd, NULL, NULL)) >= 0) {
		if (recv(c, &req, sizeof(req), MSG_WAITALL) == (ssize_t)sizeof(req))
			sendmsg(c, &mh, MSG_NOSIGNAL);
		close(c);
	}
}

UNIO_TEST(shm_fd_server_squatted, mp)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct shm_iface_addr addr, crafted;
	struct unio_tl_iface *iface;
	unio_context_t *ctx;
	unio_worker_t *w;
	struct shm_iface *si;
	int rc_squat = -1, rc_real = -1, ready[2] = { -1, -1 }, n, lfd;
	pid_t q = -1, sq = -1;
	char c = 0;

	if (geteuid() != 0)
		TEST_SKIP_BECAUSE("switching a child to another user needs root");
	w = ou_owner(&ctx);
	iface = w != NULL ? api_worker_iface(w, "shm", NULL) : NULL;
	TEST_ASSERT(iface != NULL, "worker with a shm iface");
	si = (struct shm_iface *)iface;
	TEST_ASSERT_STATUS(unio_tl_iface_get_address(iface, &addr), UNIO_OK);
	TEST_ASSERT(pipe(ready) == 0, "pipe");
	fflush(NULL);
	q = fork();
	if (q == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "unio-shm-%d-%016" PRIx64,
		     (int)q, si->iface_id);
	sq = q > 0 ? fork() : -1;
	if (sq == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		c = lfd >= 0 && bind(lfd, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct
		    sockaddr_un, sun_path) + 1 + (size_t)n)) == 0 && listen(lfd, 4) == 0;
		if (write(ready[1], &c, 1) == 1 && c)
			squat(lfd, si->seg_fd);
		_exit(0);
	}
	if (sq > 0 && read(ready[0], &c, 1) == 1 && c) {
		crafted = addr;
		crafted.pid = (uint32_t)q;
		rc_squat = other_user_run(NULL, iface, &crafted);
		si->other_users = true;
		rc_real = other_user_run(NULL, iface, &addr);
		si->other_users = false;
	}
	if (sq > 0)
		kill(sq, SIGKILL);
	if (q > 0)
		kill(q, SIGKILL);
	waitpid(sq, NULL, 0);
	waitpid(q, NULL, 0);
	close(ready[0]);
	close(ready[1]);
	TEST_LOG("uid 65534 connecting to pid %d, whose fd server is S's: %s; to the owner, "
		 "serving other users: %s", (int)q, ou_str(rc_squat), ou_str(rc_real));
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	TEST_ASSERT(c == 1, "the squatter could not bind");
	TEST_ASSERT(rc_squat == OU_REFUSED, "a server not of the named pid: child exit %d",
		    rc_squat);
	TEST_ASSERT(rc_real == OU_GOT, "the owner's own server: child exit %d", rc_real);
	return TEST_OK;
}
