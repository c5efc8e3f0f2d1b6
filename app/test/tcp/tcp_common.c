/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers and scenarios of the tcp driver tests (see tcp_common.h). */

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "tcp_common.h"
#include "unio_test.h"

#define N_SLOTS 8

void
t_hex(const void *buf, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";
	const uint8_t *b = buf;

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * len] = '\0';
}

int
t_unhex(const char *hex, void *buf, size_t len)
{
	uint8_t *b = buf;

	if (strlen(hex) != 2 * len)
		return -1;
	for (size_t i = 0; i < len; i++) {
		unsigned int v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return -1;
		b[i] = (uint8_t)v;
	}
	return 0;
}

/* ---- rx handlers ---- */

static unio_status_t
on_hello(void *arg, const void *data, size_t len, unsigned int flags, unio_tl_conn_id_t conn_id)
{
	struct tpeer *p = arg;

	RTE_SET_USED(flags), RTE_SET_USED(conn_id);
	if (len == p->iface->attr.iface_addr_len + 8 && !p->peer_known) {
		memcpy(p->peer_addr, (const uint8_t *)data + 8, len - 8);
		p->peer_known = true;
		if (p->ep == NULL && tpeer_connect(p, p->peer_addr) != 0)
			p->rx_bad++;
	}
	return UNIO_OK;
}

static unio_status_t
on_data(void *arg, const void *data, size_t len, unsigned int flags, unio_tl_conn_id_t conn_id)
{
	struct tpeer *p = arg;
	uint64_t h[2];

	RTE_SET_USED(flags), RTE_SET_USED(conn_id);
	if (len < sizeof(h)) {
		p->rx_bad++;
		return UNIO_OK;
	}
	memcpy(h, data, sizeof(h));
	if (h[0] != p->rx_next ||
	    test_checksum((const uint8_t *)data + sizeof(h), len - sizeof(h)) != h[1]) {
		if (p->rx_bad++ == 0)
			TEST_LOG("message %" PRIu64 " (want %" PRIu64 ", %zu bytes): bad", h[0],
				 p->rx_next, len);
	}
	p->rx_next++;
	return UNIO_OK;
}

static unio_status_t
on_u64(void *arg, const void *data, size_t len, unsigned int flags, unio_tl_conn_id_t conn_id)
{
	uint64_t *dst = arg;

	RTE_SET_USED(flags), RTE_SET_USED(conn_id);
	if (len >= 8)
		memcpy(dst, data, 8);
	return UNIO_OK;
}

static unio_status_t
on_raw(void *arg, const void *data, size_t len, unsigned int flags, unio_tl_conn_id_t conn_id)
{
	struct tpeer *p = arg;

	RTE_SET_USED(flags), RTE_SET_USED(conn_id);
	if (len == 8 && memcmp(data, "rawframe", 8) == 0)
		p->raw_frames++;
	return UNIO_OK;
}

static void
on_ep_error(void *arg, struct unio_tl_ep *ep, unio_status_t st)
{
	struct tpeer *p = arg;

	RTE_SET_USED(ep);
	p->ep_errors++;
	p->last_err = st;
}

/* ---- peer ---- */

int
tpeer_open_set(struct tpeer *p, const char *dev, const char *const *set)
{
	const struct unio_tl_driver *drv = unio_tl_driver_find("tcp");
	struct unio_tl_iface_params params = { .config = &p->cfg, .dev_name = dev, .cpu = -1,
					       .err_cb = on_ep_error, .err_arg = p };
	unio_status_t st;

	memset(p, 0, sizeof(*p));
	p->done_count = p->result = UINT64_MAX;
	if (drv == NULL || unio_config_snapshot(&p->cfg) != UNIO_OK)
		return -1;
	for (; set != NULL && set[0] != NULL; set += 2)
		if (unio_config_set(&p->cfg, set[0], set[1]) != UNIO_OK) {
			TEST_LOG("%s=%s refused", set[0], set[1]);
			return -1;
		}
	params.config = &p->cfg;
	st = unio_tl_iface_open(drv, &params, &p->iface);
	if (st != UNIO_OK) {
		TEST_LOG("iface_open(%s): %s", dev, unio_status_string(st));
		return -1;
	}
	unio_tl_iface_set_am_handler(p->iface, T_AM_HELLO, on_hello, p);
	unio_tl_iface_set_am_handler(p->iface, T_AM_DATA, on_data, p);
	unio_tl_iface_set_am_handler(p->iface, T_AM_DONE, on_u64, &p->done_count);
	unio_tl_iface_set_am_handler(p->iface, T_AM_RESULT, on_u64, &p->result);
	unio_tl_iface_set_am_handler(p->iface, T_AM_RAW, on_raw, p);
	p->iface->ctl->iface_get_address(p->iface, p->addr);
	return 0;
}

int
tpeer_open(struct tpeer *p, const char *dev)
{
	return tpeer_open_set(p, dev, NULL);
}

void
tpeer_close(struct tpeer *p)
{
	if (p->iface == NULL)
		return;
	unio_tl_ep_destroy(p->ep);
	if (p->region != NULL) {
		p->iface->ctl->mem_dereg(p->iface, &p->memh);
		free(p->region);
	}
	unio_tl_iface_close(p->iface);
	p->iface = NULL;
}

bool
tpeer_wait(struct tpeer *p, bool (*cond)(struct tpeer *), int ms)
{
	uint64_t end = test_now_ms() + (uint64_t)ms;

	while (!cond(p)) {
		if (test_now_ms() > end)
			return false;
		unio_tl_iface_progress(p->iface);
	}
	return true;
}

int
tpeer_connect(struct tpeer *p, const uint8_t *addr)
{
	struct unio_tl_ep_params ep = { .iface_addr = addr,
					.iface_addr_len = p->iface->attr.iface_addr_len };
	unio_status_t st = unio_tl_ep_create(p->iface, &ep, &p->ep);

	if (st != UNIO_OK)
		TEST_LOG("ep_create: %s", unio_status_string(st));
	return st == UNIO_OK ? 0 : -1;
}

int
tpeer_region(struct tpeer *p, char *rkey_hex, size_t len)
{
	uint8_t key[UNIO_TL_RKEY_MAX];
	size_t klen = p->iface->attr.rkey_packed_len;

	p->region = malloc(T_REGION_SIZE);
	if (p->region == NULL || 2 * klen + 1 > len)
		return -1;
	test_fill(p->region, T_REGION_SIZE, T_REGION_SEED);
	if (p->iface->ctl->mem_reg(p->iface, p->region, T_REGION_SIZE, &p->memh) != UNIO_OK ||
	    p->iface->ctl->rkey_pack(p->iface, &p->memh, key) != UNIO_OK)
		return -1;
	t_hex(key, klen, rkey_hex);
	return 0;
}

int
tpeer_region_key(struct tpeer *a, struct tpeer *b, size_t size, struct unio_tl_rkey *rk)
{
	uint8_t key[UNIO_TL_RKEY_MAX];

	b->region = calloc(1, size);
	if (b->region == NULL)
		return -1;
	if (b->iface->ctl->mem_reg(b->iface, b->region, size, &b->memh) != UNIO_OK) {
		free(b->region);
		b->region = NULL;
		return -1;
	}
	if (b->iface->ctl->rkey_pack(b->iface, &b->memh, key) != UNIO_OK ||
	    a->iface->ctl->rkey_unpack(a->ep, key, b->iface->attr.rkey_packed_len, rk) !=
	    UNIO_OK)
		return -1;
	return 0;
}

/* ---- sending with retry ---- */

struct tcomp {
	struct unio_tl_completion c;
	bool busy;
	unio_status_t status;
	uint8_t *buf;
};

static void
tcomp_done(struct unio_tl_completion *c)
{
	struct tcomp *t = (struct tcomp *)c;

	t->busy = false;
	t->status = c->status;
}

static void
tcomp_start(struct tcomp *t)
{
	t->c = (struct unio_tl_completion){ .func = tcomp_done, .count = 1 };
	t->busy = true;
	t->status = UNIO_OK;
}

/* Turn an operation's return into the completion's state. */
static unio_status_t
tcomp_started(struct tcomp *t, unio_status_t st)
{
	if (st != UNIO_INPROGRESS) {
		t->busy = false;
		t->status = st;
	}
	return st;
}

static unio_status_t
tcomp_wait(struct tpeer *p, struct tcomp *t)
{
	uint64_t end = test_now_ms() + 20000;

	while (t->busy && test_now_ms() < end)
		unio_tl_iface_progress(p->iface);
	return t->busy ? UNIO_ERR_TIMED_OUT : t->status;
}

static int
send_hello(struct tpeer *p)
{
	unio_status_t st;

	while ((st = unio_tl_ep_am_short(p->ep, T_AM_HELLO, 0, p->addr,
					 p->iface->attr.iface_addr_len)) ==
	       UNIO_ERR_NO_RESOURCE)
		unio_tl_iface_progress(p->iface);
	return st == UNIO_OK ? 0 : -1;
}

struct pack_arg {
	uint64_t h[2];
	const uint8_t *body;
	size_t len;
};

static size_t
pack_data(void *dest, void *arg)
{
	struct pack_arg *a = arg;

	memcpy(dest, a->h, sizeof(a->h));
	memcpy((uint8_t *)dest + sizeof(a->h), a->body, a->len);
	return sizeof(a->h) + a->len;
}

static size_t
body_size(const struct unio_tl_iface_attr *attr, uint64_t seq)
{
	const size_t shorts[] = { 0, 1, 7, 8, 63, 200, attr->max_short - 8 };
	const size_t bcopies[] = { 0, 100, 1000, 4096, 30000, attr->max_bcopy - 16 };
	const size_t zcopies[] = { 1, 4096, 65536, 100000, attr->max_zcopy };
	uint64_t i = seq / 3;

	switch (seq % 3) {
	case 0:
		return shorts[i % RTE_DIM(shorts)];
	case 1:
		return bcopies[i % RTE_DIM(bcopies)];
	default:
		return zcopies[i % RTE_DIM(zcopies)];
	}
}

static unio_status_t
send_one(struct tpeer *p, uint64_t seq, struct tcomp *slot, uint8_t *buf)
{
	size_t len = body_size(&p->iface->attr, seq);
	uint64_t h[2] = { seq, 0 };
	struct pack_arg a = { .body = buf, .len = len };
	struct iovec iov[3];
	size_t third = len / 3;

	test_fill(buf, len, seq);
	h[1] = test_checksum(buf, len);
	switch (seq % 3) {
	case 0:
		memmove(buf + 8, buf, len);
		memcpy(buf, &h[1], 8);
		return unio_tl_ep_am_short(p->ep, T_AM_DATA, seq, buf, len + 8);
	case 1:
		memcpy(a.h, h, sizeof(h));
		return (unio_status_t)RTE_MIN(unio_tl_ep_am_bcopy(p->ep, T_AM_DATA, pack_data,
								  &a, 0), 0);
	default:
		iov[0] = (struct iovec){ buf, third };
		iov[1] = (struct iovec){ buf + third, third };
		iov[2] = (struct iovec){ buf + 2 * third, len - 2 * third };
		tcomp_start(slot);
		return tcomp_started(slot, unio_tl_ep_am_zcopy(p->ep, T_AM_DATA, h, sizeof(h),
							       iov, 3, 0, &slot->c));
	}
}

static int
stream_loop(struct tpeer *p, unsigned int count, struct tcomp *slots)
{
	for (uint64_t seq = 0; seq < count; seq++) {
		struct tcomp *s = &slots[seq % N_SLOTS];
		unio_status_t st;

		if (tcomp_wait(p, s) != UNIO_OK && s->status != UNIO_OK) {
			TEST_LOG("zcopy completed with %s", unio_status_string(s->status));
			return -1;
		}
		while ((st = send_one(p, seq, s, s->buf)) == UNIO_ERR_NO_RESOURCE)
			unio_tl_iface_progress(p->iface);
		if (UNIO_IS_ERR(st)) {
			TEST_LOG("send %" PRIu64 ": %s", seq, unio_status_string(st));
			return -1;
		}
	}
	for (unsigned int i = 0; i < N_SLOTS; i++)
		if (tcomp_wait(p, &slots[i]) != UNIO_OK)
			return -1;
	return 0;
}

static bool
got_result(struct tpeer *p)
{
	return p->result != UINT64_MAX || p->ep_errors > 0;
}

static int
finish(struct tpeer *p, uint64_t count)
{
	unio_status_t st;

	while ((st = unio_tl_ep_am_short(p->ep, T_AM_DONE, count, NULL, 0)) ==
	       UNIO_ERR_NO_RESOURCE)
		unio_tl_iface_progress(p->iface);
	if (st != UNIO_OK || !tpeer_wait(p, got_result, 20000)) {
		TEST_LOG("no result from the server (%s)", unio_status_string(st));
		return -1;
	}
	if (p->result != count) {
		TEST_LOG("server got %" PRIu64 " good of %" PRIu64 ", %" PRIu64 " bad",
			 p->result & 0xffffffff, count, p->result >> 32);
		return -1;
	}
	return 0;
}

int
t_stream_send(struct tpeer *p, unsigned int count)
{
	struct tcomp slots[N_SLOTS] = { 0 };
	int r = -1;

	for (unsigned int i = 0; i < N_SLOTS; i++)
		if ((slots[i].buf = malloc(p->iface->attr.max_zcopy + 16)) == NULL)
			goto out;
	if (send_hello(p) == 0 && stream_loop(p, count, slots) == 0)
		r = finish(p, count);
out:
	for (unsigned int i = 0; i < N_SLOTS; i++)
		free(slots[i].buf);
	return r;
}

/* ---- put / get ---- */

static int
rma_get(struct tpeer *p, const struct unio_tl_rkey *k, size_t off, size_t len,
	const uint8_t *ref, unsigned int niov)
{
	uint8_t *buf = malloc(len + 1);
	struct iovec iov[3];
	struct tcomp t;
	size_t part = len / niov;
	unio_status_t st;

	if (buf == NULL)
		return -1;
	for (unsigned int i = 0; i < niov; i++)
		iov[i] = (struct iovec){ buf + i * part, i + 1 == niov ? len - i * part : part };
	tcomp_start(&t);
	do {
		st = tcomp_started(&t, unio_tl_ep_get_zcopy(p->ep, iov, niov,
							    k->remote_base + off, k, &t.c));
		if (st == UNIO_ERR_NO_RESOURCE)
			unio_tl_iface_progress(p->iface);
	} while (st == UNIO_ERR_NO_RESOURCE);
	st = tcomp_wait(p, &t);
	if (st == UNIO_OK && memcmp(buf, ref + off, len) != 0)
		st = UNIO_ERR_IO;
	free(buf);
	if (st != UNIO_OK)
		TEST_LOG("get %zu at %zu: %s", len, off, unio_status_string(st));
	return st == UNIO_OK ? 0 : -1;
}

static int
rma_put(struct tpeer *p, const struct unio_tl_rkey *k, size_t off, size_t len, uint8_t *ref,
	uint64_t seed)
{
	uint8_t *buf = malloc(len);
	struct iovec iov;
	struct tcomp t;
	unio_status_t st;

	if (buf == NULL)
		return -1;
	test_fill(buf, len, seed);
	memcpy(ref + off, buf, len);
	iov = (struct iovec){ buf, len };
	tcomp_start(&t);
	st = tcomp_started(&t, unio_tl_ep_put_zcopy(p->ep, &iov, 1, k->remote_base + off, k,
						    &t.c));
	st = tcomp_wait(p, &t);
	free(buf);
	return st == UNIO_OK ? 0 : -1;
}

static int
rma_bounds(struct tpeer *p, const struct unio_tl_rkey *k)
{
	uint8_t buf[64];
	struct iovec iov = { buf, sizeof(buf) };
	struct tcomp t;
	struct unio_tl_rkey forged = *k;

	tcomp_start(&t);
	/* refused by the sender's range check */
	if (unio_tl_ep_put_zcopy(p->ep, &iov, 1, k->remote_base + k->remote_len - 10, k,
				 &t.c) != UNIO_ERR_OUT_OF_RANGE ||
	    unio_tl_ep_get_zcopy(p->ep, &iov, 1, k->remote_base - 1, k, &t.c) !=
	    UNIO_ERR_OUT_OF_RANGE) {
		TEST_LOG("an out-of-range put or get was not refused");
		return -1;
	}
	/* a key that claims more than was registered: the target refuses */
	forged.remote_len += 4096;
	tcomp_start(&t);
	tcomp_started(&t, unio_tl_ep_get_zcopy(p->ep, &iov, 1,
					       k->remote_base + k->remote_len, &forged, &t.c));
	if (tcomp_wait(p, &t) != UNIO_ERR_OUT_OF_RANGE) {
		TEST_LOG("a get beyond the registered region was not refused by the target");
		return -1;
	}
	return 0;
}

static int
rma_body(struct tpeer *p, const struct unio_tl_rkey *k, uint8_t *ref)
{
	static const size_t gets[][2] = { { 0, 1 }, { 1, 7 }, { 4095, 4097 },
					  { 100000, 65536 }, { 3, 250000 } };
	size_t max = p->iface->attr.max_get_zcopy;

	for (size_t i = 0; i < RTE_DIM(gets); i++)
		if (rma_get(p, k, gets[i][0], gets[i][1], ref, 1 + i % 3) != 0)
			return -1;
	if (rma_get(p, k, T_REGION_SIZE - max, max, ref, 3) != 0)
		return -1;
	for (size_t i = 0; i < RTE_DIM(gets); i++)
		if (rma_put(p, k, gets[i][0] + 7, gets[i][1], ref, 100 + i) != 0)
			return -1;
	/* the puts landed: ordered behind them on the connection, gets see them */
	for (size_t off = 0; off < T_REGION_SIZE; off += max)
		if (rma_get(p, k, off, RTE_MIN(max, (size_t)T_REGION_SIZE - off), ref, 2) != 0)
			return -1;
	return rma_bounds(p, k) == 0 && rma_get(p, k, 0, 4096, ref, 1) == 0 ? 0 : -1;
}

int
t_rma_run(struct tpeer *p, const char *rkey_hex)
{
	uint8_t key[UNIO_TL_RKEY_MAX];
	size_t klen = p->iface->attr.rkey_packed_len;
	struct unio_tl_rkey k;
	uint8_t *ref = malloc(T_REGION_SIZE);
	int r = -1;

	if (ref == NULL || t_unhex(rkey_hex, key, klen) != 0 ||
	    p->iface->ctl->rkey_unpack(p->ep, key, klen, &k) != UNIO_OK) {
		free(ref);
		return -1;
	}
	test_fill(ref, T_REGION_SIZE, T_REGION_SEED);
	if (send_hello(p) == 0 && rma_body(p, &k, ref) == 0)
		r = finish(p, 0);
	p->iface->ctl->rkey_release(p->ep, &k);
	free(ref);
	return r;
}

/* ---- serving ---- */

static bool
got_done(struct tpeer *p)
{
	return p->done_count != UINT64_MAX;
}

static bool
client_gone(struct tpeer *p)
{
	return p->ep_errors > 0;
}

int
t_serve(struct tpeer *p, int ms)
{
	uint64_t res;
	unio_status_t st;

	if (!tpeer_wait(p, got_done, ms) || p->ep == NULL) {
		TEST_LOG("server: no DONE (%" PRIu64 " messages in, %" PRIu64 " bad)",
			 p->rx_next, p->rx_bad);
		return -1;
	}
	res = (p->rx_next - p->rx_bad) | p->rx_bad << 32;
	while ((st = unio_tl_ep_am_short(p->ep, T_AM_RESULT, res, NULL, 0)) ==
	       UNIO_ERR_NO_RESOURCE)
		unio_tl_iface_progress(p->iface);
	/* the client closes once it has the result */
	if (st != UNIO_OK || !tpeer_wait(p, client_gone, ms))
		return -1;
	return p->rx_bad == 0 && p->rx_next == p->done_count ? 0 : -1;
}

/* ---- processes ---- */

pid_t
t_spawn_ns(const char *ns, const char *name, const char *const *args)
{
	char self[512];
	const char *argv[32];
	int argc = 0;
	ssize_t n;
	pid_t pid;

	if (ns == NULL)
		return test_spawn(name, args);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return -1;
	self[n] = '\0';
	argv[argc++] = "ip";
	argv[argc++] = "netns";
	argv[argc++] = "exec";
	argv[argc++] = ns;
	argv[argc++] = self;
	argv[argc++] = "--child";
	argv[argc++] = name;
	for (; args != NULL && *args != NULL && argc < 31; args++)
		argv[argc++] = *args;
	argv[argc] = NULL;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		execvp("ip", (char *const *)argv);
		_exit(127);
	}
	return pid;
}

int
t_read_line(int fd, char *buf, size_t len, int ms)
{
	size_t got = 0;
	uint64_t end = test_now_ms() + (uint64_t)ms;

	while (got + 1 < len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (test_now_ms() > end || poll(&pfd, 1, 100) < 0)
			return -1;
		if (!(pfd.revents & (POLLIN | POLLHUP)))
			continue;
		r = read(fd, buf + got, 1);
		if (r <= 0)
			return -1;
		if (buf[got] == '\n') {
			buf[got] = '\0';
			return 0;
		}
		got++;
	}
	return -1;
}
