/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The transport conformance suite, multi-process part: real child processes connect to a
 * receiver through every driver that reaches other processes on the host (reach HOST and
 * connect-to-iface), gated on capabilities, never on names.
 *
 * Protocol (AM ids): a child sends HELLO (its address and two rkeys), then DATA messages
 * (checked, seq = child << 32 | n, through short, bcopy and zcopy in turn), and waits for
 * WELCOME (the parent's rkeys; the parent has put and got from the child's memory by then).
 * It reads the parent's memory, reports with FINAL, and exits after BYE.
 */

#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tl_common.h"

#define AM_HELLO    1
#define AM_WELCOME  2
#define AM_DATA     3
#define AM_FINAL    4
#define AM_BYE      5
#define MAX_CHILD   16
#define RMA_SIZE    65536
#define WAIT_S      30

#define F_GET_REG     (1u << 0)   /* got the parent's registered memory right (CMA) */
#define F_GET_ALLOC   (1u << 1)   /* got the parent's mem_alloc memory right */
#define F_PTR         (1u << 2)   /* ... through a direct mapping */
#define F_PUT_SEEN    (1u << 3)   /* the parent's put into the child's memory arrived */
#define F_REFUSED_OK  (1u << 4)   /* without GET capability, unpack or get failed cleanly */
#define F_FAIL        (1u << 31)

struct hello {
	uint32_t idx;
	uint32_t pad;
	uint64_t cap;
	uint8_t addr[UNIO_TL_ADDR_MAX];
	uint8_t rkey_alloc[UNIO_TL_RKEY_MAX];
	uint8_t rkey_reg[UNIO_TL_RKEY_MAX];
	uint64_t base_alloc, base_reg;
};

struct welcome {
	uint8_t rkey_alloc[UNIO_TL_RKEY_MAX];
	uint8_t rkey_reg[UNIO_TL_RKEY_MAX];
	uint64_t base_alloc, base_reg;
	uint32_t put_done;
	uint32_t pad;
};

struct final {
	uint32_t idx;
	uint32_t flags;
	uint64_t cap;
	uint64_t sent;
};

/* ---- small helpers shared by both sides ---- */

static void
hex_encode(char *out, const uint8_t *in, size_t len)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * len] = '\0';
}

static int
hex_decode(uint8_t *out, const char *in, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned int v;

		if (sscanf(in + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (uint8_t)v;
	}
	return 0;
}

struct blob {
	const void *p;
	size_t len;
};

static size_t
pack_blob(void *dest, void *arg)
{
	struct blob *b = arg;

	memcpy(dest, b->p, b->len);
	return b->len;
}

/* send a control message by bcopy, progressing while the FIFO is full */
static unio_status_t
send_blob(struct unio_tl_iface *iface, struct unio_tl_ep *ep, uint8_t id, const void *p,
	  size_t len)
{
	struct blob b = { p, len };
	double end = test_now_s() + WAIT_S;
	ssize_t n;

	while ((n = unio_tl_ep_am_bcopy(ep, id, pack_blob, &b, 0)) == UNIO_ERR_NO_RESOURCE &&
	       test_now_s() < end)
		unio_tl_iface_progress(iface);
	return n == (ssize_t)len ? UNIO_OK : (n < 0 ? (unio_status_t)n : UNIO_ERR_IO);
}

static unio_status_t
open_iface(const char *drv_name, struct unio_tl_iface **iface)
{
	const struct unio_tl_driver *drv = unio_tl_driver_find(drv_name);
	struct unio_tl_device_info devs[UNIO_TL_MAX_DEVICES];
	struct unio_tl_iface_params params = { .config = unio_config_env(), .cpu = -1 };
	char reason[128];
	unsigned int n = 0;

	if (drv == NULL || params.config == NULL ||
	    unio_tl_query_devices(drv, params.config, devs, &n, reason, sizeof(reason)) !=
	    UNIO_OK || n == 0)
		return UNIO_ERR_NO_DEVICE;
	params.dev_name = devs[0].name;
	return unio_tl_iface_open(drv, &params, iface);
}

static unio_status_t
connect_to(struct unio_tl_iface *iface, const uint8_t *addr, struct unio_tl_ep **ep)
{
	struct unio_tl_ep_params p = { .iface_addr = addr,
				       .iface_addr_len = iface->attr.iface_addr_len };

	return unio_tl_ep_create(iface, &p, ep);
}

static void
comp_noop(struct unio_tl_completion *c)
{
	RTE_SET_USED(c);
}

/* an operation that may complete later: progress until it does */
static unio_status_t
wait_op(struct unio_tl_iface *iface, unio_status_t st, struct unio_tl_completion *c)
{
	double end = test_now_s() + WAIT_S;

	if (st != UNIO_INPROGRESS)
		return st;
	while (c->count != 0 && test_now_s() < end)
		unio_tl_iface_progress(iface);
	return c->count == 0 ? c->status : UNIO_ERR_TIMED_OUT;
}

static unio_status_t
rma_one(struct unio_tl_ep *ep, int put, void *buf, size_t len, uint64_t raddr,
	const struct unio_tl_rkey *rkey)
{
	struct unio_tl_completion c = { comp_noop, 1, UNIO_OK };
	struct iovec iov = { buf, len };
	unio_status_t st;

	st = put ? unio_tl_ep_put_zcopy(ep, &iov, 1, raddr, rkey, &c) :
		   unio_tl_ep_get_zcopy(ep, &iov, 1, raddr, rkey, &c);
	return wait_op(ep->iface, st, &c);
}

/* ---- the child ---- */

struct child {
	int idx;
	struct unio_tl_iface *iface;
	struct unio_tl_ep *ep;
	struct unio_tl_memh alloc, reg;
	uint8_t *reg_buf;
	struct welcome welcome;
	int got_welcome, got_bye, bye_ok;
};

static unio_status_t
child_welcome_cb(void *arg, const void *data, size_t length, unsigned int flags,
		 unio_tl_conn_id_t conn_id)
{
	struct child *c = arg;

	RTE_SET_USED(flags), RTE_SET_USED(conn_id);
	if (length == sizeof(c->welcome)) {
		memcpy(&c->welcome, data, sizeof(c->welcome));
		c->got_welcome = 1;
	}
	return UNIO_OK;
}

static unio_status_t
child_bye_cb(void *arg, const void *data, size_t length, unsigned int flags,
	     unio_tl_conn_id_t conn_id)
{
	struct child *c = arg;
	uint32_t ok = 0;

	RTE_SET_USED(flags), RTE_SET_USED(conn_id);
	if (length == sizeof(ok))
		memcpy(&ok, data, sizeof(ok));
	c->bye_ok = ok == 1;
	c->got_bye = 1;
	return UNIO_OK;
}

static int
child_wait(struct child *c, int *flag)
{
	double end = test_now_s() + WAIT_S;

	while (!*flag && test_now_s() < end) {
		if (unio_tl_iface_progress(c->iface) == 0)
			sched_yield();
	}
	return *flag ? 0 : -1;
}

/* one data message; the kind (short, bcopy, zcopy) and size follow n */
static unio_status_t
child_send_data(struct child *c, uint64_t n, uint8_t *buf)
{
	const struct unio_tl_iface_attr *a = &c->iface->attr;
	uint64_t seq = ((uint64_t)c->idx << 32) | n;
	unsigned int kind = n % 3;
	size_t len;

	if (kind == 0 && (c->ep->cap & UNIO_TL_CAP_AM_SHORT)) {
		len = (n * 7) % (RTE_MIN(a->max_short, (size_t)300) + 1);
		tl_make_msg(buf, len + 8, seq);
		return unio_tl_ep_am_short(c->ep, AM_DATA, seq, buf + 8, len);
	}
	if (kind == 1 && (c->ep->cap & UNIO_TL_CAP_AM_ZCOPY) && a->max_zcopy_hdr >= 24) {
		struct iovec iov;

		len = (n * 13) % (RTE_MIN(a->max_zcopy, (size_t)4000) + 1);
		tl_make_msg(buf, len + 24, seq);
		struct unio_tl_completion comp = { comp_noop, 1, UNIO_OK };

		iov = (struct iovec){ buf + 24, len };
		return wait_op(c->iface, unio_tl_ep_am_zcopy(c->ep, AM_DATA, buf, 24, &iov, 1, 0,
							      &comp), &comp);
	}
	len = 8 + (n * 11) % (RTE_MIN(a->max_bcopy, (size_t)6000) - 7);
	tl_make_msg(buf, len, seq);
	struct blob b = { buf, len };
	ssize_t r = unio_tl_ep_am_bcopy(c->ep, AM_DATA, pack_blob, &b, 0);

	return r < 0 ? (unio_status_t)r : UNIO_OK;
}

static int
child_send_all(struct child *c, uint64_t count)
{
	uint8_t *buf = malloc(8192);
	double end = test_now_s() + WAIT_S;

	for (uint64_t n = 0; count == 0 || n < count;) {
		unio_status_t st = child_send_data(c, n, buf);

		if (st == UNIO_OK) {
			/* progress now and then, as an application's loop does: drivers that
			 * carry RMA in software (tcp) answer the parent's gets from here */
			if (++n % 64 == 0)
				unio_tl_iface_progress(c->iface);
			continue;
		}
		if (st != UNIO_ERR_NO_RESOURCE || test_now_s() > end) {
			fprintf(stderr, "child %d: send %" PRIu64 ": %d\n", c->idx, n, st);
			free(buf);
			return -1;
		}
		unio_tl_iface_progress(c->iface);
		sched_yield();
	}
	free(buf);
	return 0;
}

/* read the parent's memory the ways the capabilities allow */
static uint32_t
child_check_parent_mem(struct child *c)
{
	struct welcome *w = &c->welcome;
	struct unio_tl_rkey rk;
	uint8_t *buf = malloc(RMA_SIZE), *want = malloc(RMA_SIZE);
	uint32_t f = 0;
	unio_status_t st;

	test_fill(want, RMA_SIZE, 1000);
	if (unio_tl_rkey_unpack(c->ep, w->rkey_reg, c->iface->attr.rkey_packed_len, &rk) ==
	    UNIO_OK) {
		memset(buf, 0, RMA_SIZE);
		st = rma_one(c->ep, 0, buf, RMA_SIZE, w->base_reg, &rk);
		if (c->ep->cap & UNIO_TL_CAP_GET_ZCOPY)
			f |= st == UNIO_OK && memcmp(buf, want, RMA_SIZE) == 0 ? F_GET_REG : F_FAIL;
		else if (st < 0)
			f |= F_REFUSED_OK;
		unio_tl_rkey_release(c->ep, &rk);
	} else if (!(c->ep->cap & UNIO_TL_CAP_GET_ZCOPY)) {
		f |= F_REFUSED_OK;   /* shm: a CMA key is checked with CMA, so refused at once */
	}
	test_fill(want, RMA_SIZE, 2000);
	if (w->base_alloc != 0 &&   /* the parent's driver has mem_alloc */
	    unio_tl_rkey_unpack(c->ep, w->rkey_alloc, c->iface->attr.rkey_packed_len, &rk) ==
	    UNIO_OK) {
		if (rk.local_ptr != NULL)
			f |= memcmp(rk.local_ptr, want, RMA_SIZE) == 0 ? F_PTR : F_FAIL;
		if ((c->ep->cap & UNIO_TL_CAP_GET_ZCOPY) || rk.local_ptr != NULL) {
			memset(buf, 0, RMA_SIZE);
			st = rma_one(c->ep, 0, buf, RMA_SIZE, w->base_alloc, &rk);
			f |= st == UNIO_OK && memcmp(buf, want, RMA_SIZE) == 0 ?
				     F_GET_ALLOC : F_FAIL;
		}
		unio_tl_rkey_release(c->ep, &rk);
	}
	free(buf);
	free(want);
	return f;
}

static int
child_hello(struct child *c)
{
	struct hello h = { .idx = (uint32_t)c->idx, .cap = c->ep->cap };

	if (unio_tl_iface_get_address(c->iface, h.addr) != UNIO_OK)
		return -1;
	c->reg_buf = malloc(RMA_SIZE);
	test_fill(c->reg_buf, RMA_SIZE, 100 + c->idx);
	if (unio_tl_mem_reg(c->iface, c->reg_buf, RMA_SIZE, &c->reg) != UNIO_OK ||
	    unio_tl_rkey_pack(c->iface, &c->reg, h.rkey_reg) != UNIO_OK)
		return -1;
	h.base_reg = (uintptr_t)c->reg_buf;
	if (unio_tl_mem_alloc(c->iface, RMA_SIZE, &c->alloc) == UNIO_OK) {
		test_fill(c->alloc.addr, RMA_SIZE, 200 + c->idx);
		if (unio_tl_rkey_pack(c->iface, &c->alloc, h.rkey_alloc) != UNIO_OK)
			return -1;
		h.base_alloc = (uintptr_t)c->alloc.addr;
	}
	return send_blob(c->iface, c->ep, AM_HELLO, &h, sizeof(h)) == UNIO_OK ? 0 : -1;
}

/* argv: driver, parent address (hex), child index, messages (0: until killed) */
UNIO_TEST_CHILD(tl_mp_child)
{
	struct child c = { 0 };
	uint8_t paddr[UNIO_TL_ADDR_MAX];
	uint64_t count;
	struct final fin = { 0 };
	int rc = 1;

	if (argc < 4)
		return 2;
	c.idx = atoi(argv[2]);
	count = strtoull(argv[3], NULL, 0);
	if (open_iface(argv[0], &c.iface) != UNIO_OK ||
	    hex_decode(paddr, argv[1], c.iface->attr.iface_addr_len) != 0)
		return 3;
	unio_tl_iface_set_am_handler(c.iface, AM_WELCOME, child_welcome_cb, &c);
	unio_tl_iface_set_am_handler(c.iface, AM_BYE, child_bye_cb, &c);
	if (connect_to(c.iface, paddr, &c.ep) != UNIO_OK) {
		fprintf(stderr, "child %d: cannot connect\n", c.idx);
		goto out;
	}
	if (child_hello(&c) != 0 || child_send_all(&c, count) != 0 ||
	    child_wait(&c, &c.got_welcome) != 0)
		goto out;
	fin = (struct final){ (uint32_t)c.idx, child_check_parent_mem(&c), c.ep->cap, count };
	if (c.welcome.put_done) {
		uint8_t *want = malloc(RMA_SIZE / 2);

		test_fill(want, RMA_SIZE / 2, 300 + c.idx);
		fin.flags |= memcmp(c.reg_buf + RMA_SIZE / 2, want, RMA_SIZE / 2) == 0 ?
				     F_PUT_SEEN : F_FAIL;
		free(want);
	}
	if (send_blob(c.iface, c.ep, AM_FINAL, &fin, sizeof(fin)) != UNIO_OK ||
	    child_wait(&c, &c.got_bye) != 0)
		goto out;
	rc = c.bye_ok ? 0 : 4;
out:
	unio_tl_ep_destroy(c.ep);
	if (c.alloc.addr != NULL)
		unio_tl_mem_free(c.iface, &c.alloc);
	unio_tl_iface_close(c.iface);
	free(c.reg_buf);
	return rc;
}

/* ---- the parent ---- */

struct peer {
	pid_t pid;
	int hello, final, exited, err_seen;
	int killed;          /* we sent SIGKILL */
	int failed;          /* exited abnormally without being killed */
	int replaced;        /* (killed child) a replacement was started */
	struct hello h;
	struct final f;
	struct unio_tl_ep *ep;
	struct tl_rx rx;
};

struct parent {
	struct unio_tl_iface *iface;
	struct peer peers[MAX_CHILD];
	unsigned int n;
	uint8_t *reg_buf;
	struct unio_tl_memh alloc, reg;
	struct welcome w;
};

static unio_status_t
parent_hello_cb(void *arg, const void *data, size_t length, unsigned int flags,
		unio_tl_conn_id_t conn_id)
{
	struct parent *p = arg;
	struct hello h;

	RTE_SET_USED(flags), RTE_SET_USED(conn_id);
	if (length != sizeof(h))
		return UNIO_OK;
	memcpy(&h, data, sizeof(h));
	if (h.idx < p->n && !p->peers[h.idx].hello) {
		p->peers[h.idx].h = h;
		p->peers[h.idx].hello = 1;
	}
	return UNIO_OK;
}

static unio_status_t
parent_final_cb(void *arg, const void *data, size_t length, unsigned int flags,
		unio_tl_conn_id_t conn_id)
{
	struct parent *p = arg;
	struct final f;

	RTE_SET_USED(flags), RTE_SET_USED(conn_id);
	if (length != sizeof(f))
		return UNIO_OK;
	memcpy(&f, data, sizeof(f));
	if (f.idx < p->n) {
		p->peers[f.idx].f = f;
		p->peers[f.idx].final = 1;
	}
	return UNIO_OK;
}

static unio_status_t
parent_data_cb(void *arg, const void *data, size_t length, unsigned int flags,
	       unio_tl_conn_id_t conn_id)
{
	struct parent *p = arg;
	uint64_t seq;

	if (length < sizeof(seq))
		return UNIO_OK;
	memcpy(&seq, data, sizeof(seq));
	if ((seq >> 32) >= p->n)
		return UNIO_OK;
	return tl_check_cb(&p->peers[seq >> 32].rx, data, length, flags, conn_id);
}

static void
parent_err_cb(void *arg, struct unio_tl_ep *ep, unio_status_t status)
{
	struct parent *p = arg;

	for (unsigned int i = 0; i < p->n; i++)
		if (p->peers[i].ep == ep && status == UNIO_ERR_CONNECTION_RESET)
			p->peers[i].err_seen = 1;
}

/* get and put the child's memory as the capabilities allow */
static int
parent_rma(struct parent *p, struct peer *c)
{
	const size_t klen = p->iface->attr.rkey_packed_len;
	uint8_t *buf = malloc(RMA_SIZE), *want = malloc(RMA_SIZE);
	struct unio_tl_rkey rk;
	int r = TEST_OK;

	test_fill(want, RMA_SIZE, 100 + c->h.idx);
	if ((c->ep->cap & UNIO_TL_CAP_GET_ZCOPY) &&
	    unio_tl_rkey_unpack(c->ep, c->h.rkey_reg, klen, &rk) == UNIO_OK) {
		unio_status_t st = rma_one(c->ep, 0, buf, RMA_SIZE, c->h.base_reg, &rk);

		if (st != UNIO_OK)
			TEST_LOG("parent: get from child %u: %s", c->h.idx, unio_status_string(st));
		if (st != UNIO_OK || memcmp(buf, want, RMA_SIZE) != 0)
			r = TEST_FAIL;
		test_fill(buf, RMA_SIZE / 2, 300 + c->h.idx);
		if ((c->ep->cap & UNIO_TL_CAP_PUT_ZCOPY) &&
		    rma_one(c->ep, 1, buf, RMA_SIZE / 2, c->h.base_reg + RMA_SIZE / 2, &rk) ==
		    UNIO_OK)
			p->w.put_done = 1;
		unio_tl_rkey_release(c->ep, &rk);
	}
	test_fill(want, RMA_SIZE, 200 + c->h.idx);
	if (c->h.base_alloc != 0 &&
	    unio_tl_rkey_unpack(c->ep, c->h.rkey_alloc, klen, &rk) == UNIO_OK) {
		if (rk.local_ptr != NULL && memcmp(rk.local_ptr, want, RMA_SIZE) != 0)
			r = TEST_FAIL;
		unio_tl_rkey_release(c->ep, &rk);
	}
	free(buf);
	free(want);
	if (r != TEST_OK)
		TEST_LOG("parent: reading child %u's memory failed", c->h.idx);
	return r;
}

static int
parent_on_hello(struct parent *p, struct peer *c)
{
	TEST_ASSERT_STATUS(connect_to(p->iface, c->h.addr, &c->ep), UNIO_OK);
	p->w.put_done = 0;
	if (parent_rma(p, c) != TEST_OK)
		return TEST_FAIL;
	TEST_ASSERT_STATUS(send_blob(p->iface, c->ep, AM_WELCOME, &p->w, sizeof(p->w)),
			   UNIO_OK);
	return TEST_OK;
}

static int
parent_setup(struct parent *p, const char *drv)
{
	TEST_ASSERT_STATUS(open_iface(drv, &p->iface), UNIO_OK);
	p->iface->err_cb = parent_err_cb;
	p->iface->err_arg = p;
	unio_tl_iface_set_am_handler(p->iface, AM_HELLO, parent_hello_cb, p);
	unio_tl_iface_set_am_handler(p->iface, AM_FINAL, parent_final_cb, p);
	unio_tl_iface_set_am_handler(p->iface, AM_DATA, parent_data_cb, p);
	p->reg_buf = malloc(RMA_SIZE);
	test_fill(p->reg_buf, RMA_SIZE, 1000);
	TEST_ASSERT_STATUS(unio_tl_mem_reg(p->iface, p->reg_buf, RMA_SIZE, &p->reg), UNIO_OK);
	TEST_ASSERT_STATUS(unio_tl_rkey_pack(p->iface, &p->reg, p->w.rkey_reg), UNIO_OK);
	p->w.base_reg = (uintptr_t)p->reg_buf;
	if (unio_tl_mem_alloc(p->iface, RMA_SIZE, &p->alloc) == UNIO_OK) {
		test_fill(p->alloc.addr, RMA_SIZE, 2000);
		TEST_ASSERT_STATUS(unio_tl_rkey_pack(p->iface, &p->alloc, p->w.rkey_alloc),
				   UNIO_OK);
		p->w.base_alloc = (uintptr_t)p->alloc.addr;
	}
	return TEST_OK;
}

static void
parent_teardown(struct parent *p)
{
	for (unsigned int i = 0; i < p->n; i++) {
		if (p->peers[i].pid > 0 && !p->peers[i].exited) {
			kill(p->peers[i].pid, SIGKILL);
			waitpid(p->peers[i].pid, NULL, 0);
		}
		unio_tl_ep_destroy(p->peers[i].ep);
	}
	if (p->alloc.addr != NULL)
		unio_tl_mem_free(p->iface, &p->alloc);
	unio_tl_iface_close(p->iface);
	free(p->reg_buf);
}

/* a child as another user (65534) when @p other_user: CMA to us is refused */
static char exe_path[4096];

static pid_t
spawn_child(const char *drv, const char *addr_hex, unsigned int idx, uint64_t count,
	    int other_user)
{
	char sidx[16], scount[24];
	const char *args[] = { drv, addr_hex, sidx, scount, NULL };
	pid_t pid;

	snprintf(sidx, sizeof(sidx), "%u", idx);
	snprintf(scount, sizeof(scount), "%" PRIu64, count);
	if (!other_user)
		return test_spawn("tl_mp_child", args);
	/* as test_spawn does, but dropping to nobody between fork and exec */
	fflush(NULL);
	pid = fork();
	if (pid != 0)
		return pid;
	if (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
	    setresuid(65534, 65534, 65534) != 0)
		_exit(5);
	execl(exe_path, exe_path, "--child", "tl_mp_child", drv, addr_hex, sidx, scount,
	      (char *)NULL);
	_exit(127);
}

struct mp_opts {
	unsigned int n_children;
	uint64_t count;
	int kill_first;      /* child 0 sends until killed; a replacement must then connect */
	int other_user;
};

static void
reap(struct parent *p)
{
	for (unsigned int i = 0; i < p->n; i++) {
		int status;

		if (p->peers[i].exited || p->peers[i].pid <= 0 ||
		    waitpid(p->peers[i].pid, &status, WNOHANG) != p->peers[i].pid)
			continue;
		p->peers[i].exited = 1;
		if (!p->peers[i].killed && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
			TEST_LOG("child %u failed: status %#x", i, status);
			p->peers[i].failed = 1;
		}
	}
}

/* the FINAL of child @p c: everything it reports must be consistent with its capabilities */
static int
check_final(struct parent *p, struct peer *c, const struct mp_opts *o)
{
	uint32_t f = c->f.flags;

	TEST_ASSERT(!(f & F_FAIL), "child %u: data mismatch (flags %#x)", c->f.idx, f);
	TEST_ASSERT_EQ(c->rx.count, c->f.sent);
	TEST_ASSERT_EQ(c->rx.bad, 0);
	if (c->f.cap & UNIO_TL_CAP_GET_ZCOPY)
		TEST_ASSERT(f & F_GET_REG, "child %u: get capability but no get", c->f.idx);
	else
		TEST_ASSERT(f & F_REFUSED_OK, "child %u: get without capability", c->f.idx);
	if (p->w.put_done)
		TEST_ASSERT(f & F_PUT_SEEN, "child %u: parent's put not seen", c->f.idx);
	/* across users a driver may lose capabilities (shm: CMA is refused), but what it
	 * still advertises must work, and what it lost must fail cleanly (checked above) */
	if (o->other_user)
		TEST_LOG("%s: child as uid 65534: ep cap %#" PRIx64 ", get %s, flags %#x",
			 p->iface->driver->name, c->f.cap,
			 (c->f.cap & UNIO_TL_CAP_GET_ZCOPY) ? "advertised" : "refused", f);
	return TEST_OK;
}

static int
finish_peer(struct parent *p, struct peer *c, const struct mp_opts *o)
{
	uint32_t ok;

	if (check_final(p, c, o) != TEST_OK)
		return TEST_FAIL;
	ok = 1;
	TEST_ASSERT_STATUS(send_blob(p->iface, c->ep, AM_BYE, &ok, sizeof(ok)), UNIO_OK);
	c->final = 2;
	return TEST_OK;
}

/* child 0 is killed mid-transfer; its ep must fail, its ring must come back */
static int
kill_step(struct parent *p, const char *drv, const char *hex, const struct mp_opts *o)
{
	struct peer *v = &p->peers[0];
	uint8_t b[16] = { 0 };
	unio_status_t st;

	if (!v->killed && v->ep != NULL && v->rx.count >= 300) {
		TEST_LOG("killing child 0 after %" PRIu64 " messages", v->rx.count);
		kill(v->pid, SIGKILL);
		v->killed = 1;
	}
	if (v->killed && v->err_seen && !v->replaced) {
		st = unio_tl_ep_am_short(v->ep, AM_DATA, 0, b, sizeof(b));
		TEST_ASSERT(st < 0 && st != UNIO_ERR_NO_RESOURCE,
			    "send to a dead peer: status %d", st);
		TEST_ASSERT_EQ(v->rx.bad, 0);
		/* every ring is taken unless the dead peer's came back */
		p->peers[p->n].pid = spawn_child(drv, hex, p->n, o->count, 0);
		p->n++;
		v->replaced = 1;
	}
	return TEST_OK;
}

static int
parent_loop(struct parent *p, const char *drv, const char *hex, const struct mp_opts *o)
{
	double end = test_now_s() + WAIT_S;
	unsigned int done;

	do {
		if (unio_tl_iface_progress(p->iface) == 0)
			sched_yield();
		reap(p);
		if (o->kill_first && kill_step(p, drv, hex, o) != TEST_OK)
			return TEST_FAIL;
		done = 0;
		for (unsigned int i = 0; i < p->n; i++) {
			struct peer *c = &p->peers[i];
			int hold = o->kill_first && !p->peers[0].replaced;

			if (c->hello == 1) {
				c->hello = 2;
				if (parent_on_hello(p, c) != TEST_OK)
					return TEST_FAIL;
			}
			if (c->final == 1 && !hold && finish_peer(p, c, o) != TEST_OK)
				return TEST_FAIL;
			TEST_ASSERT(!c->failed, "child %u failed", i);
			TEST_ASSERT(!(c->exited && c->final != 2 && !c->killed),
				    "child %u exited early", i);
			done += c->exited && (c->killed ? c->replaced : c->final == 2);
		}
	} while (done < p->n && test_now_s() < end);
	TEST_ASSERT(done == p->n, "only %u of %u children finished", done, p->n);
	TEST_ASSERT(!o->kill_first || p->peers[0].replaced, "the killed child was not replaced");
	return TEST_OK;
}

static int
run_mp(const struct unio_tl_driver *drv, const struct mp_opts *o)
{
	struct parent p = { 0 };
	uint8_t addr[UNIO_TL_ADDR_MAX];
	char hex[2 * UNIO_TL_ADDR_MAX + 1];
	int r = TEST_FAIL;

	if (parent_setup(&p, drv->name) != TEST_OK)
		goto out;
	if (p.iface->attr.reach != UNIO_TL_REACH_HOST ||
	    !(p.iface->attr.cap & UNIO_TL_CAP_CONNECT_IFACE) ||
	    (o->kill_first && !(p.iface->attr.cap & UNIO_TL_CAP_PEER_FAILURE))) {
		r = TEST_OK;   /* not a driver for this check */
		goto out;
	}
	TEST_ASSERT_STATUS(unio_tl_iface_get_address(p.iface, addr), UNIO_OK);
	hex_encode(hex, addr, p.iface->attr.iface_addr_len);
	p.n = o->n_children;
	for (unsigned int i = 0; i < p.n; i++) {
		p.peers[i].rx = (struct tl_rx){ .check_order = 1, .next_seq = (uint64_t)i << 32 };
		p.peers[i].pid = spawn_child(drv->name, hex, i,
					     o->kill_first && i == 0 ? 0 : o->count,
					     o->other_user);
		TEST_ASSERT(p.peers[i].pid > 0, "spawn failed");
	}
	if (o->kill_first)   /* the replacement child */
		p.peers[p.n].rx = (struct tl_rx){ .check_order = 1,
						  .next_seq = (uint64_t)p.n << 32 };
	r = parent_loop(&p, drv->name, hex, o);
out:
	parent_teardown(&p);
	return r;
}

static struct mp_opts cur_opts;

static int
case_mp(const struct unio_tl_driver *drv, const char *dev)
{
	RTE_SET_USED(dev);
	return run_mp(drv, &cur_opts);
}

UNIO_TEST(tl_mp_pair, mp)
{
	cur_opts = (struct mp_opts){ .n_children = 1, .count = 5000 };
	return tl_for_each_driver(case_mp);
}

UNIO_TEST(tl_mp_eight_senders, mp)
{
	cur_opts = (struct mp_opts){ .n_children = 8, .count = 1000 };
	return tl_for_each_driver(case_mp);
}

UNIO_TEST(tl_mp_sigkill, mp)
{
	/* three rings: the replacement child connects only if the dead one's came back */
	setenv("UNIO_SHM_MAX_PEERS", "3", 1);
	cur_opts = (struct mp_opts){ .n_children = 3, .count = 1000, .kill_first = 1 };
	return tl_for_each_driver(case_mp);
}

UNIO_TEST(tl_mp_other_user, mp)
{
	ssize_t n = readlink("/proc/self/exe", exe_path, sizeof(exe_path) - 1);

	if (geteuid() != 0)
		TEST_SKIP_BECAUSE("switching a child to another user needs root");
	TEST_ASSERT(n > 0, "readlink /proc/self/exe");
	exe_path[n] = '\0';
	/* shm serves the segment to another uid only when told to (shm_segment_other_user) */
	setenv("UNIO_SHM_OTHER_USERS", "y", 1);
	cur_opts = (struct mp_opts){ .n_children = 1, .count = 2000, .other_user = 1 };
	return tl_for_each_driver(case_mp);
}

/*
 * The conformance suite over the ethdev driver: every case of the fast suite in a process of
 * its own, with UNIO_TLS=ethdev and the ports given by UNIO_EAL_ARGS: af_packet and af_xdp
 * on two ports joined by a veth pair (the sender on the second, so every frame crosses the
 * veth, which its counters show), memif on one port whose two ifaces the driver joins
 * inside the port.  Each case must pass and must have tested ethdev (its log names the
 * device).
 */
static const char *const tl_fast_cases[] = {
	"tl_am_short", "tl_am_bcopy", "tl_am_zcopy", "tl_order_flush", "tl_fifo_full",
	"tl_put_get", "tl_rkey_ptr", "tl_bad_input", "tl_send_from_handler", "tl_many_senders",
	"tl_connect_sockaddr", "tl_crossing_dials", "tl_stale_dial",
};

/*
 * Every fast conformance case in a process of its own: "@p cmd CASE" (the namespace, the
 * environment and the binary); each must pass and must name "driver @p drv device" in its
 * log.
 */
static int
tl_cases_run(const char *cmd, const char *drv, const char *what)
{
	char log[64];
	int rc = TEST_OK;

	snprintf(log, sizeof(log), "/tmp/unio-tl-cases-%d.log", getpid());
	for (unsigned int i = 0; i < RTE_DIM(tl_fast_cases) && rc == TEST_OK; i++) {
		const char *c = tl_fast_cases[i];

		if (test_system("%s %s >%s 2>&1", cmd, c, log) != 0 ||
		    test_system("grep -q 'driver %s device' %s", drv, log) != 0) {
			test_system("cat %s >&2", log);
			TEST_LOG("%s over %s (%s) failed", c, drv, what);
			rc = TEST_FAIL;
		} else {
			TEST_LOG("%s: passed over %s (%s)", c, drv, what);
		}
	}
	unlink(log);
	return rc;
}

/* At least 1 MiB left veth end @p dev in namespace @p ns (its kernel counters). */
static int
veth_sent(const char *ns, const char *dev)
{
	if (test_system("test $(ip netns exec %s cat /sys/class/net/%s/statistics/tx_bytes) "
			"-ge 1048576", ns, dev) == 0)
		return TEST_OK;
	test_system("ip -n %s -s link show %s >&2", ns, dev);
	TEST_LOG("less than 1 MiB left %s: the traffic did not cross the veth", dev);
	return TEST_FAIL;
}

/*
 * The fast cases with UNIO_TLS=ethdev on @p vdev (EAL arguments: one --vdev, or several),
 * @p env added (IPv4 addresses, a sender device).  With @p netns the process runs in
 * namespace -a of a veth pair; with @p both_ends the pair's other end vb is moved into that
 * namespace too, so that two ports of one process are joined by the veth.
 */
static int
tl_over_ethdev(const char *vdev, const char *env, bool netns, bool both_ends)
{
	char name[32], cmd[512], ns[80] = "";
	int rc;

	if (netns && !test_can_netns())
		TEST_SKIP_BECAUSE("needs root and iproute2 network namespaces");
	snprintf(name, sizeof(name), "uniotl-%d", getpid());
	if (netns && (test_topology("veth", "up", name, NULL) != 0 ||
		      (both_ends && test_system("ip -n %s-b link set vb netns %s-a && "
						"ip -n %s-a link set vb up", name, name,
						name) != 0))) {
		test_topology("veth", "down", name, NULL);
		TEST_LOG("topology %s", name);
		return TEST_FAIL;
	}
	if (netns)
		snprintf(ns, sizeof(ns), "ip netns exec %s-a ", name);
	snprintf(cmd, sizeof(cmd), "%senv UNIO_TLS=ethdev %s UNIO_ETHDEV_QUEUES=2 "
		 "'UNIO_EAL_ARGS=--vdev=%s' %s/app/test/unio-test", ns, env, vdev,
		 test_build_dir());
	rc = tl_cases_run(cmd, "ethdev", vdev);
	/* the sender's frames went through the veth, not through a hand-over in a port */
	if (both_ends && rc == TEST_OK) {
		snprintf(ns, sizeof(ns), "%s-a", name);
		rc = veth_sent(ns, "vb");
	}
	if (netns)
		test_topology("veth", "down", name, NULL);
	return rc;
}

/*
 * The fast cases over tcp between two namespaces joined by a veth pair: each case's process
 * opens the receiving iface in namespace -b on vb (10.77.0.2) and the sending one in -a on
 * va (10.77.0.1), UNIO_TEST_TL_RX_NETNS / _TX_NETNS read by tl_pair_open(), so that every
 * connection runs over the veth.
 */
UNIO_TEST(tl_tcp_netns, mp)
{
	char name[32], cmd[512], ns[64];
	int rc;

	if (!test_can_netns())
		TEST_SKIP_BECAUSE("needs root and iproute2 network namespaces");
	snprintf(name, sizeof(name), "uniotcp-%d", getpid());
	if (test_topology("veth", "up", name, NULL) != 0 ||
	    test_system("ip -n %s-a addr add 10.77.0.1/24 dev va && ip -n %s-a link set va up && "
			"ip -n %s-b addr add 10.77.0.2/24 dev vb && ip -n %s-b link set vb up && "
			"ip netns exec %s-a ping -c1 -W5 10.77.0.2 >/dev/null", name, name, name,
			name, name) != 0) {
		test_topology("veth", "down", name, NULL);
		TEST_LOG("topology %s", name);
		return TEST_FAIL;
	}
	snprintf(cmd, sizeof(cmd), "ip netns exec %s-b env UNIO_TLS=tcp UNIO_NET_DEVICES=vb,va "
		 "UNIO_TEST_TL_RX_NETNS=%s-b UNIO_TEST_TL_TX_NETNS=%s-a UNIO_TEST_TL_TX_DEV=va "
		 "%s/app/test/unio-test", name, name, name, test_build_dir());
	rc = tl_cases_run(cmd, "tcp", "vb <- va across namespaces");
	snprintf(ns, sizeof(ns), "%s-a", name);
	if (rc == TEST_OK)
		rc = veth_sent(ns, "va");
	test_topology("veth", "down", name, NULL);
	return rc;
}

UNIO_TEST(tl_ethdev_af_packet, mp)
{
	return tl_over_ethdev("net_af_packet0,iface=va --vdev=net_af_packet1,iface=vb",
			      "UNIO_ETHDEV_IP=net_af_packet0:10.77.0.1,net_af_packet1:10.77.0.2 "
			      "UNIO_TEST_TL_TX_DEV=net_af_packet1", true, true);
}

/*
 * af_xdp gets one queue per port on a veth (DPDK 22.11 takes the queue count from the
 * combined channels, which a veth does not have): both ends of the pair in one namespace,
 * one port each, the sender on the second.
 */
UNIO_TEST(tl_ethdev_af_xdp, mp)
{
	return tl_over_ethdev("net_af_xdp0,iface=va --vdev=net_af_xdp1,iface=vb",
			      "UNIO_ETHDEV_IP=net_af_xdp0:10.77.0.1,net_af_xdp1:10.77.0.2 "
			      "UNIO_TEST_TL_TX_DEV=net_af_xdp1", true, true);
}

/*
 * memif: one server port, whose two ifaces the driver joins inside the port; the memif
 * wire itself is crossed between two processes by ethdev_api_memif, ethdev_pingpong_memif
 * and ethdev_api_cm_memif.  A server and a client port in one process (as af_packet and
 * af_xdp do above) pass every case, but DPDK 22.11's memif makes the EAL interrupt thread
 * panic ("Error adding fd ... epoll_ctl, Bad file descriptor") when such a process exits
 * within a moment of the two ports connecting.
 */
UNIO_TEST(tl_ethdev_memif, mp)
{
	char vdev[128];
	int rc;

	snprintf(vdev, sizeof(vdev), "net_memif0,role=server,socket=/tmp/unio-tl-memif-%d.sock,"
		 "mac=02:00:00:00:04:0a", getpid());
	rc = tl_over_ethdev(vdev, "UNIO_ETHDEV_IP=10.77.0.1", false, false);
	test_system("rm -f /tmp/unio-tl-memif-%d.sock", getpid());
	return rc;
}
