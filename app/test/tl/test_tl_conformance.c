/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The transport conformance suite, single-process part: every built driver with a device,
 * every check gated on the capabilities the driver advertises.
 */

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_cycles.h>

#include "tl_common.h"

#define ORDER_COUNT 4000u

/* sizes 0, 1, limit-1, limit and a few in between, capped at @p limit */
static size_t
size_class(unsigned int i, size_t limit, int *more)
{
	const size_t fixed[] = { 0, 1, 7, 8, 55, 56, 57, 63, 64, 120, 1000 };
	size_t s;

	*more = 1;
	if (i < RTE_DIM(fixed)) {
		s = fixed[i];
		return s < limit ? s : limit;
	}
	if (i == RTE_DIM(fixed))
		return limit > 0 ? limit - 1 : 0;
	*more = 0;
	return limit;
}

static int
case_am_short(const struct unio_tl_driver *drv, const char *dev)
{
	struct tl_pair p;
	struct tl_rx rx = { 0 };
	uint8_t *buf;
	int more = 1, r = TEST_OK;
	uint64_t sent = 0;

	if (tl_pair_open(&p, drv, dev) != TEST_OK)
		return TEST_FAIL;
	if (!(p.ep->cap & UNIO_TL_CAP_AM_SHORT))
		goto out;
	buf = malloc(p.rx->attr.max_short + 8);
	unio_tl_iface_set_am_handler(p.rx, TL_AM_ID, tl_check_cb, &rx);
	for (unsigned int i = 0; more && r == TEST_OK; i++) {
		size_t len = size_class(i, p.rx->attr.max_short, &more);
		uint64_t seq;

		tl_make_msg(buf, len + 8, sent);
		memcpy(&seq, buf, 8);
		if (unio_tl_ep_am_short(p.ep, TL_AM_ID, seq, buf + 8, len) != UNIO_OK) {
			TEST_LOG("am_short of %zu bytes failed", len);
			r = TEST_FAIL;
			break;
		}
		sent++;
		r = tl_pair_wait(&p, &rx, sent);
		if (r == TEST_OK && (rx.last_len != len + 8 || rx.bad != 0)) {
			TEST_LOG("am_short %zu bytes: got length %zu, %" PRIu64 " bad", len,
				 rx.last_len, rx.bad);
			r = TEST_FAIL;
		}
	}
	free(buf);
out:
	tl_pair_close(&p);
	return r;
}

UNIO_TEST(tl_am_short, fast)
{
	return tl_for_each_driver(case_am_short);
}

struct pack_arg {
	size_t len;
	uint64_t seq;
};

static size_t
pack_msg(void *dest, void *arg)
{
	struct pack_arg *a = arg;

	tl_make_msg(dest, a->len, a->seq);
	return a->len;
}

static int
case_am_bcopy(const struct unio_tl_driver *drv, const char *dev)
{
	struct tl_pair p;
	struct tl_rx rx = { 0 };
	int more = 1, r = TEST_OK;
	uint64_t sent = 0;

	if (tl_pair_open(&p, drv, dev) != TEST_OK)
		return TEST_FAIL;
	if (!(p.ep->cap & UNIO_TL_CAP_AM_BCOPY))
		goto out;
	unio_tl_iface_set_am_handler(p.rx, TL_AM_ID, tl_check_cb, &rx);
	for (unsigned int i = 0; more && r == TEST_OK; i++) {
		struct pack_arg a = { size_class(i, p.rx->attr.max_bcopy, &more), sent };
		ssize_t n;

		if (a.len < 8)
			a.len = 8;
		n = unio_tl_ep_am_bcopy(p.ep, TL_AM_ID, pack_msg, &a, 0);
		if (n != (ssize_t)a.len) {
			TEST_LOG("am_bcopy of %zu bytes returned %zd", a.len, n);
			r = TEST_FAIL;
			break;
		}
		sent++;
		r = tl_pair_wait(&p, &rx, sent);
		if (r == TEST_OK && (rx.last_len != a.len || rx.bad != 0)) {
			TEST_LOG("am_bcopy %zu bytes: got %zu, %" PRIu64 " bad", a.len,
				 rx.last_len, rx.bad);
			r = TEST_FAIL;
		}
	}
out:
	tl_pair_close(&p);
	return r;
}

UNIO_TEST(tl_am_bcopy, fast)
{
	return tl_for_each_driver(case_am_bcopy);
}

static void
comp_done(struct unio_tl_completion *c)
{
	RTE_SET_USED(c);
}

/* header of 24 bytes (the checked message's first part), payload in two iov entries */
static int
send_zcopy(struct tl_pair *p, struct unio_tl_memh *mh, size_t len, uint64_t seq)
{
	struct unio_tl_completion comp = { comp_done, 1, UNIO_OK };
	uint8_t *buf = mh->addr;
	struct iovec iov[2] = {
		{ buf + 24, len / 2 }, { buf + 24 + len / 2, len - len / 2 },
	};
	uint64_t end = rte_rdtsc() + 5 * rte_get_tsc_hz();
	unio_status_t st;

	tl_make_msg(buf, len + 24, seq);
	/* no room (a network sender's window, until acks come back): progress both, retry */
	while ((st = unio_tl_ep_am_zcopy(p->ep, TL_AM_ID, buf, 24, iov, 2, 0, &comp)) ==
	       UNIO_ERR_NO_RESOURCE && rte_rdtsc() < end) {
		unio_tl_iface_progress(p->rx);
		if (p->tx != p->rx)
			unio_tl_iface_progress(p->tx);
	}
	/*
	 * The progress call in which the send completes reports work: a caller that looks at
	 * its requests only after such calls must not see the completion late.
	 */
	while (st == UNIO_INPROGRESS && comp.count != 0 && rte_rdtsc() < end) {
		unsigned int n = unio_tl_iface_progress(p->tx);

		if (comp.count != 0 && p->tx != p->rx)
			n = unio_tl_iface_progress(p->rx);
		TEST_ASSERT(comp.count != 0 || n > 0, "am_zcopy of %zu bytes completed in a "
			    "progress call that returned 0", len);
	}
	if (st == UNIO_INPROGRESS)
		st = comp.count == 0 ? comp.status : UNIO_ERR_TIMED_OUT;
	TEST_ASSERT_STATUS(st, UNIO_OK);
	return TEST_OK;
}

static int
case_am_zcopy(const struct unio_tl_driver *drv, const char *dev)
{
	struct unio_tl_memh mh;
	struct tl_pair p;
	struct tl_rx rx = { 0 };
	int more = 1, r = TEST_OK;
	uint64_t sent = 0;
	void *buf;

	if (tl_pair_open(&p, drv, dev) != TEST_OK)
		return TEST_FAIL;
	if (!(p.ep->cap & UNIO_TL_CAP_AM_ZCOPY) || p.rx->attr.max_zcopy_hdr < 24)
		goto out;
	buf = malloc(p.rx->attr.max_zcopy + 24);
	if (unio_tl_mem_reg(p.tx, buf, p.rx->attr.max_zcopy + 24, &mh) != UNIO_OK)
		r = TEST_FAIL;
	unio_tl_iface_set_am_handler(p.rx, TL_AM_ID, tl_check_cb, &rx);
	for (unsigned int i = 0; more && r == TEST_OK; i++) {
		size_t len = size_class(i, p.rx->attr.max_zcopy, &more);

		r = send_zcopy(&p, &mh, len, sent++);
		if (r == TEST_OK)
			r = tl_pair_wait(&p, &rx, sent);
		if (r == TEST_OK && (rx.last_len != len + 24 || rx.bad != 0)) {
			TEST_LOG("am_zcopy %zu bytes: got %zu, %" PRIu64 " bad", len,
				 rx.last_len, rx.bad);
			r = TEST_FAIL;
		}
	}
	unio_tl_mem_dereg(p.tx, &mh);
	free(buf);
out:
	tl_pair_close(&p);
	return r;
}

UNIO_TEST(tl_am_zcopy, fast)
{
	return tl_for_each_driver(case_am_zcopy);
}

/* many messages of mixed sizes; ordered drivers deliver them in sequence */
static int
case_order_flush(const struct unio_tl_driver *drv, const char *dev)
{
	struct unio_tl_completion comp = { comp_done, 1, UNIO_OK };
	struct tl_pair p;
	struct tl_rx rx = { 0 };
	uint8_t buf[64];
	uint64_t sent = 0;
	unio_status_t st;
	int r = TEST_OK;

	if (tl_pair_open(&p, drv, dev) != TEST_OK)
		return TEST_FAIL;
	if (!(p.ep->cap & UNIO_TL_CAP_AM_SHORT))
		goto out;
	rx.check_order = (p.ep->cap & UNIO_TL_CAP_ORDERED) != 0;
	unio_tl_iface_set_am_handler(p.rx, TL_AM_ID, tl_check_cb, &rx);
	while (sent < ORDER_COUNT) {
		size_t len = RTE_MIN((size_t)(sent % 48), p.rx->attr.max_short);
		/* every other message a multi-line bcopy: the ring wraps several times */
		struct pack_arg a = { 24 + (sent * 37) % 1000, sent };

		if ((sent & 1) && (p.ep->cap & UNIO_TL_CAP_AM_BCOPY) &&
		    a.len <= p.rx->attr.max_bcopy) {
			ssize_t n = unio_tl_ep_am_bcopy(p.ep, TL_AM_ID, pack_msg, &a, 0);

			st = n < 0 ? (unio_status_t)n : UNIO_OK;
		} else {
			tl_make_msg(buf, len + 8, sent);
			st = unio_tl_ep_am_short(p.ep, TL_AM_ID, sent, buf + 8, len);
		}
		if (st == UNIO_ERR_NO_RESOURCE) {
			/* both sides: a network sender learns of free room from acks */
			unio_tl_iface_progress(p.rx);
			if (p.tx != p.rx)
				unio_tl_iface_progress(p.tx);
			continue;
		}
		TEST_ASSERT_STATUS(st, UNIO_OK);
		sent++;
	}
	st = unio_tl_ep_flush(p.ep, &comp);
	TEST_ASSERT(st == UNIO_OK || st == UNIO_INPROGRESS, "flush: %d", st);
	r = tl_pair_wait(&p, &rx, ORDER_COUNT);
	/*
	 * A network driver completes the flush when the peer's ack of the last frames comes
	 * back, which may be after the peer delivered them (ethdev: a delayed ack, 20 us)
	 */
	if (st == UNIO_INPROGRESS)
		tl_pair_wait_comp(&p, &comp);
	if (st == UNIO_INPROGRESS)
		TEST_ASSERT(comp.count == 0 && comp.status == UNIO_OK, "flush never completed");
	TEST_ASSERT_EQ(rx.bad, 0);
	/* nothing outstanding now: a flush completes at once */
	TEST_ASSERT_STATUS(unio_tl_ep_flush(p.ep, NULL), UNIO_OK);
out:
	tl_pair_close(&p);
	return r;
}

UNIO_TEST(tl_order_flush, fast)
{
	return tl_for_each_driver(case_order_flush);
}

/* am_short of the 48-byte checked message number @p seq */
static unio_status_t
send_seq(const struct tl_pair *p, uint64_t seq)
{
	uint8_t buf[64];

	tl_make_msg(buf, 48, seq);
	return unio_tl_ep_am_short(p->ep, TL_AM_ID, seq, buf + 8, 40);
}

/* Messages from number *@p sent on until the FIFO refuses one (the receiver not progressed). */
static int
fifo_fill(const struct tl_pair *p, uint64_t *sent)
{
	unio_status_t st;

	while ((st = send_seq(p, *sent)) == UNIO_OK)
		TEST_ASSERT(++*sent < 100000000, "the FIFO never filled up");
	TEST_ASSERT_STATUS(st, UNIO_ERR_NO_RESOURCE);
	return TEST_OK;
}

/* fill the FIFO without progressing the receiver, then drain it, then send again */
static int
case_fifo_full(const struct unio_tl_driver *drv, const char *dev)
{
	struct tl_pair p;
	struct tl_rx rx = { .check_order = 1 };
	uint64_t sent = 0;
	int r = TEST_OK;

	if (tl_pair_open(&p, drv, dev) != TEST_OK)
		return TEST_FAIL;
	if (!(p.ep->cap & UNIO_TL_CAP_AM_SHORT))
		goto out;
	unio_tl_iface_set_am_handler(p.rx, TL_AM_ID, tl_check_cb, &rx);
	if (fifo_fill(&p, &sent) != TEST_OK)
		return TEST_FAIL;
	TEST_ASSERT(sent > 0, "not one message fit");
	TEST_LOG("%" PRIu64 " messages of 48 bytes fit", sent);
	r = tl_pair_wait(&p, &rx, sent);
	TEST_ASSERT_EQ(rx.bad, 0);
	for (unsigned int i = 0; i < 3 && r == TEST_OK; i++) {
		TEST_ASSERT_STATUS(send_seq(&p, sent), UNIO_OK);
		r = tl_pair_wait(&p, &rx, ++sent);
	}
	TEST_ASSERT_EQ(rx.bad, 0);
out:
	tl_pair_close(&p);
	return r;
}

UNIO_TEST(tl_fifo_full, fast)
{
	return tl_for_each_driver(case_fifo_full);
}

/*
 * shm: a sender that found its ring full gets room back while the receiver is still busy with
 * the ring (credit returns every half ring, not only when the ring is found empty), and the
 * receiver never has to drain it for that; every message arrives, in order.
 */
static int
case_fifo_credit(const struct unio_tl_driver *drv, const char *dev)
{
	struct tl_pair p;
	struct tl_rx rx = { .check_order = 1 };
	uint64_t sent = 0, got_at = 0;
	unio_status_t st;
	int r = TEST_OK;

	if (strcmp(drv->name, "shm") != 0)
		return TEST_OK;
	if (tl_pair_open(&p, drv, dev) != TEST_OK)
		return TEST_FAIL;
	unio_tl_iface_set_am_handler(p.rx, TL_AM_ID, tl_check_cb, &rx);
	if (fifo_fill(&p, &sent) != TEST_OK)
		return TEST_FAIL;
	/* one receiver progress call (a burst), one try, until the send goes through */
	while (rx.count < sent) {
		unio_tl_iface_progress(p.rx);
		st = send_seq(&p, sent);
		if (st == UNIO_OK) {
			got_at = rx.count;
			sent++;
			break;
		}
		TEST_ASSERT_STATUS(st, UNIO_ERR_NO_RESOURCE);
	}
	TEST_LOG("room again after %" PRIu64 " of %" PRIu64 " messages were received",
		 got_at, sent - 1);
	TEST_ASSERT(got_at > 0 && got_at < sent - 1, "no room until the ring was drained");
	r = tl_pair_wait(&p, &rx, sent);
	TEST_ASSERT_EQ(rx.bad, 0);
	TEST_ASSERT_EQ(rx.count, sent);
	tl_pair_close(&p);
	return r;
}

UNIO_TEST(tl_fifo_credit, fast)
{
	return tl_for_each_driver(case_fifo_credit);
}

static void
wait_comp(struct tl_pair *p, struct unio_tl_completion *c, unio_status_t *st)
{
	if (*st != UNIO_INPROGRESS)
		return;
	tl_pair_wait_comp(p, c);
	*st = c->count == 0 ? c->status : UNIO_ERR_TIMED_OUT;
}

static int
rma(struct tl_pair *p, int put, void *local, size_t len, uint64_t raddr,
    const struct unio_tl_rkey *rkey)
{
	struct unio_tl_completion c = { comp_done, 1, UNIO_OK };
	struct iovec iov = { local, len };
	unio_status_t st;

	st = put ? unio_tl_ep_put_zcopy(p->ep, &iov, 1, raddr, rkey, &c) :
		   unio_tl_ep_get_zcopy(p->ep, &iov, 1, raddr, rkey, &c);
	wait_comp(p, &c, &st);
	return st;
}

#define RMA_LEN 65536

/* put and get inside the key's range; out of range fails and touches nothing */
static int
rma_checks(struct tl_pair *p, struct unio_tl_memh *remote, uint8_t *local, int put, int get)
{
	uint8_t packed[UNIO_TL_RKEY_MAX];
	struct unio_tl_rkey rkey;
	uint8_t *rbuf = remote->addr;
	uint64_t base = (uintptr_t)rbuf;
	size_t rlen = RMA_LEN;

	TEST_ASSERT_STATUS(unio_tl_rkey_pack(p->rx, remote, packed), UNIO_OK);
	TEST_ASSERT_STATUS(unio_tl_rkey_unpack(p->ep, packed, p->rx->attr.rkey_packed_len,
					       &rkey), UNIO_OK);
	test_fill(rbuf, rlen, 11);
	if (put) {
		test_fill(local, rlen, 22);
		TEST_ASSERT_STATUS(rma(p, 1, local + 100, 5000, base + 300, &rkey), UNIO_OK);
		TEST_ASSERT(memcmp(rbuf + 300, local + 100, 5000) == 0, "put data differs");
		TEST_ASSERT_STATUS(rma(p, 1, local, rlen, base, &rkey), UNIO_OK);
		TEST_ASSERT(memcmp(rbuf, local, rlen) == 0, "full put differs");
		test_fill(local, rlen, 33);
		uint64_t before = test_checksum(rbuf, rlen);

		TEST_ASSERT(rma(p, 1, local, 2, base + rlen - 1, &rkey) < 0, "put past end");
		TEST_ASSERT(rma(p, 1, local, 1, base - 1, &rkey) < 0, "put before start");
		TEST_ASSERT(rma(p, 1, local, rlen + 1, base, &rkey) < 0, "put too long");
		TEST_ASSERT(test_checksum(rbuf, rlen) == before, "failed put touched memory");
	}
	if (get) {
		test_fill(rbuf, rlen, 44);
		memset(local, 0, rlen);
		TEST_ASSERT_STATUS(rma(p, 0, local, rlen, base, &rkey), UNIO_OK);
		TEST_ASSERT(memcmp(rbuf, local, rlen) == 0, "get data differs");
		TEST_ASSERT_STATUS(rma(p, 0, local, 1, base + rlen - 1, &rkey), UNIO_OK);
		TEST_ASSERT_EQ(local[0], rbuf[rlen - 1]);
		memset(local, 0x5a, rlen);
		TEST_ASSERT(rma(p, 0, local, 2, base + rlen - 1, &rkey) < 0, "get past end");
		TEST_ASSERT(rma(p, 0, local, 1, base - 1, &rkey) < 0, "get before start");
		TEST_ASSERT_EQ(local[0], 0x5a);
	}
	unio_tl_rkey_release(p->ep, &rkey);
	return TEST_OK;
}

static int
case_put_get(const struct unio_tl_driver *drv, const char *dev)
{
	struct unio_tl_memh remote, lmh;
	struct tl_pair p;
	int put, get, r = TEST_OK;
	uint8_t *local = NULL, *rmem = NULL;

	if (tl_pair_open(&p, drv, dev) != TEST_OK)
		return TEST_FAIL;
	put = (p.ep->cap & UNIO_TL_CAP_PUT_ZCOPY) && p.rx->attr.max_put_zcopy >= RMA_LEN + 1;
	get = (p.ep->cap & UNIO_TL_CAP_GET_ZCOPY) && p.rx->attr.max_get_zcopy >= RMA_LEN;
	if (!put && !get)
		goto out;
	local = malloc(RMA_LEN + 1);
	rmem = malloc(RMA_LEN);
	if (unio_tl_mem_reg(p.tx, local, RMA_LEN + 1, &lmh) != UNIO_OK ||
	    unio_tl_mem_reg(p.rx, rmem, RMA_LEN, &remote) != UNIO_OK) {
		TEST_LOG("mem_reg failed");
		r = TEST_FAIL;
		goto out;
	}
	r = rma_checks(&p, &remote, local, put, get);
	unio_tl_mem_dereg(p.rx, &remote);
	unio_tl_mem_dereg(p.tx, &lmh);
	/* memory from mem_alloc works the same (and may be mapped directly) */
	if (r == TEST_OK && unio_tl_mem_alloc(p.rx, RMA_LEN, &remote) == UNIO_OK) {
		r = rma_checks(&p, &remote, local, put, get);
		unio_tl_mem_free(p.rx, &remote);
	}
out:
	free(local);
	free(rmem);
	tl_pair_close(&p);
	return r;
}

UNIO_TEST(tl_put_get, fast)
{
	return tl_for_each_driver(case_put_get);
}

/* direct mapping: the unpacked key of mem_alloc'ed memory has a usable local_ptr */
static int
case_rkey_ptr(const struct unio_tl_driver *drv, const char *dev)
{
	uint8_t packed[UNIO_TL_RKEY_MAX];
	struct unio_tl_memh mh;
	struct unio_tl_rkey rkey;
	struct tl_pair p;
	int r = TEST_OK;

	if (tl_pair_open(&p, drv, dev) != TEST_OK)
		return TEST_FAIL;
	if (!(p.ep->cap & UNIO_TL_CAP_RKEY_PTR))
		goto out;
	TEST_ASSERT_STATUS(unio_tl_mem_alloc(p.rx, 1 << 20, &mh), UNIO_OK);
	test_fill(mh.addr, 1 << 20, 5);
	TEST_ASSERT_STATUS(unio_tl_rkey_pack(p.rx, &mh, packed), UNIO_OK);
	TEST_ASSERT_STATUS(unio_tl_rkey_unpack(p.ep, packed, p.rx->attr.rkey_packed_len,
					       &rkey), UNIO_OK);
	TEST_ASSERT(rkey.local_ptr != NULL, "rkey_ptr capability but no local_ptr");
	TEST_ASSERT_EQ(rkey.remote_len, 1 << 20);
	TEST_ASSERT(test_checksum(rkey.local_ptr, 1 << 20) == test_checksum(mh.addr, 1 << 20),
		    "mapped memory differs");
	((uint8_t *)rkey.local_ptr)[12345] ^= 0xff;
	TEST_ASSERT_EQ(((uint8_t *)mh.addr)[12345], ((uint8_t *)rkey.local_ptr)[12345]);
	unio_tl_rkey_release(p.ep, &rkey);
	unio_tl_mem_free(p.rx, &mh);
out:
	tl_pair_close(&p);
	return r;
}

UNIO_TEST(tl_rkey_ptr, fast)
{
	return tl_for_each_driver(case_rkey_ptr);
}

/* foreign addresses and keys are refused, not trusted */
static int
case_bad_input(const struct unio_tl_driver *drv, const char *dev)
{
	uint8_t junk[UNIO_TL_ADDR_MAX];
	struct unio_tl_ep_params ep_params = { .iface_addr = junk };
	struct unio_tl_rkey rkey;
	struct unio_tl_ep *ep = NULL;
	struct tl_pair p;

	if (tl_pair_open(&p, drv, dev) != TEST_OK)
		return TEST_FAIL;
	test_fill(junk, sizeof(junk), 99);
	ep_params.iface_addr_len = p.rx->attr.iface_addr_len;
	TEST_ASSERT(unio_tl_ep_create(p.tx, &ep_params, &ep) < 0, "junk address accepted");
	TEST_ASSERT(ep == NULL, "ep set on failure");
	ep_params.iface_addr_len = p.rx->attr.iface_addr_len + 1;
	TEST_ASSERT(unio_tl_ep_create(p.tx, &ep_params, &ep) < 0, "wrong length accepted");
	if (p.rx->attr.rkey_packed_len != 0)
		TEST_ASSERT(unio_tl_rkey_unpack(p.ep, junk, p.rx->attr.rkey_packed_len,
						&rkey) < 0, "junk rkey accepted");
	tl_pair_close(&p);
	return TEST_OK;
}

UNIO_TEST(tl_bad_input, fast)
{
	return tl_for_each_driver(case_bad_input);
}

/* unio-info -d: every driver with devices shows its capabilities, sizes with their units
 * and estimates, and a driver that UNIO_TLS denies shows why it has no device */
UNIO_TEST(tl_info_drivers, fast)
{
	static char out[65536];
	const char *name, *p;
	char want[64];

	TEST_ASSERT_EQ(test_capture(out, sizeof(out), "%s/app/info/unio-info -d",
				    test_build_dir()), 0);
	for (unsigned int i = 0; i < unio_tl_driver_count(); i++) {
		snprintf(want, sizeof(want), "driver %s:", unio_tl_driver_get(i)->name);
		TEST_ASSERT(strstr(out, want) != NULL, "no line '%s'", want);
	}
	TEST_ASSERT(strstr(out, "capabilities    am_short") != NULL, "no capabilities");
	TEST_ASSERT(strstr(out, "estimates       latency") != NULL, "no estimates");
	/* every size reads with its unit: "64 KiB", "262016 B", "unlimited" */
	for (p = strstr(out, "      max_"); p != NULL; p = strstr(p + 1, "      max_")) {
		const char *eol = strchr(p, '\n');

		TEST_ASSERT(eol != NULL, "unterminated line");
		if (strncmp(p + 6, "max_iov ", 8) == 0)
			continue;
		TEST_ASSERT(eol[-1] == 'B' || strncmp(eol - 9, "unlimited", 9) == 0,
			    "a size without its unit: %.*s", (int)(eol - p), p);
	}
	TEST_ASSERT(unio_tl_driver_count() > 0, "no driver registered");
	name = unio_tl_driver_get(0)->name;
	TEST_ASSERT_EQ(test_capture(out, sizeof(out), "UNIO_TLS=^%s %s/app/info/unio-info -d",
				    name, test_build_dir()), 0);
	snprintf(want, sizeof(want), "driver %s: ", name);
	p = strstr(out, want);
	TEST_ASSERT(p != NULL && strstr(p, "\n  no device: not allowed by UNIO_TLS") ==
		    strchr(p, '\n'), "%s", out);
	return TEST_OK;
}

#define MANY_SENDERS 64
#define MANY_MSGS    200

struct many_rx {
	struct tl_rx rx[MANY_SENDERS];
};

static unio_status_t
many_cb(void *arg, const void *data, size_t length, unsigned int flags, unio_tl_conn_id_t conn_id)
{
	struct many_rx *m = arg;
	uint64_t seq;

	memcpy(&seq, data, sizeof(seq));
	if ((seq >> 32) >= MANY_SENDERS)
		return UNIO_OK;
	return tl_check_cb(&m->rx[seq >> 32], data, length, flags, conn_id);
}

static int
many_send_round(struct unio_tl_iface *rx, struct unio_tl_iface **tx, struct unio_tl_ep **ep,
		unsigned int n)
{
	uint8_t buf[64];

	for (unsigned int i = 0; i < MANY_SENDERS; i++) {
		uint64_t seq = ((uint64_t)i << 32) | n;
		unio_status_t st;

		tl_make_msg(buf, 8 + (n + i) % 48, seq);
		while ((st = unio_tl_ep_am_short(ep[i], TL_AM_ID, seq, buf + 8,
						 (n + i) % 48)) == UNIO_ERR_NO_RESOURCE) {
			unio_tl_iface_progress(rx);
			unio_tl_iface_progress(tx[i]);
		}
		TEST_ASSERT_STATUS(st, UNIO_OK);
	}
	return TEST_OK;
}

/*
 * Every sender's frames came with one connection id, which the receiver's ep to that sender
 * (made now, after the frames: it attaches to the connection they came on) carries too, and
 * no two senders share one; 0 everywhere only for a driver that cannot tell.
 */
static int
many_conn_ids(const struct unio_tl_driver *drv, struct unio_tl_iface *rx,
	      struct unio_tl_iface **tx, const struct many_rx *m)
{
	static struct unio_tl_ep *back[MANY_SENDERS];
	uint8_t addr[UNIO_TL_ADDR_MAX];
	struct unio_tl_ep_params ep_params = { .iface_addr = addr,
					       .iface_addr_len = rx->attr.iface_addr_len };
	unsigned int zero = 0;
	int r = TEST_OK;

	for (unsigned int i = 0; i < MANY_SENDERS && r == TEST_OK; i++) {
		TEST_ASSERT_STATUS(unio_tl_iface_get_address(tx[i], addr), UNIO_OK);
		if (unio_tl_ep_create(rx, &ep_params, &back[i]) != UNIO_OK) {
			TEST_LOG("no ep back to sender %u", i);
			r = TEST_FAIL;
			break;
		}
		zero += back[i]->conn_id == 0;
		if (m->rx[i].conn_changed != 0 || m->rx[i].last_conn != back[i]->conn_id) {
			TEST_LOG("sender %u: frames with %" PRIu64 " changes, last id %#" PRIx64
				 ", the ep back has %#" PRIx64, i, m->rx[i].conn_changed,
				 m->rx[i].last_conn, back[i]->conn_id);
			r = TEST_FAIL;
		}
		for (unsigned int k = 0; k < i && r == TEST_OK; k++)
			if (back[k]->conn_id == back[i]->conn_id && back[i]->conn_id != 0) {
				TEST_LOG("senders %u and %u share connection id %#" PRIx64, k, i,
					 back[i]->conn_id);
				r = TEST_FAIL;
			}
	}
	if (r == TEST_OK && zero != 0 && zero != MANY_SENDERS) {
		TEST_LOG("%u of the senders have connection id 0", zero);
		r = TEST_FAIL;
	}
	if (r == TEST_OK)
		TEST_LOG("%s: %u senders, %s connection ids", drv->name, MANY_SENDERS,
			 zero != 0 ? "no" : "distinct");
	for (unsigned int i = 0; i < MANY_SENDERS; i++) {
		unio_tl_ep_destroy(back[i]);
		back[i] = NULL;
	}
	return r;
}

/* 64 sender ifaces to one receiver, interleaved: per-sender order and checksums hold, and
 * every sender gets its own ring (a driver that reaches other processes on the host) */
static int
case_many_senders(const struct unio_tl_driver *drv, const char *dev)
{
	static struct unio_tl_iface *tx[MANY_SENDERS];
	static struct unio_tl_ep *ep[MANY_SENDERS];
	static struct many_rx m;
	struct tl_pair p;
	struct unio_tl_iface_params params = { .config = unio_config_env(), .dev_name = dev,
					       .cpu = -1 };
	struct unio_tl_ep_params ep_params = { 0 };
	int r = TEST_OK;
	uint64_t total = 0;

	if (tl_pair_open(&p, drv, dev) != TEST_OK)
		return TEST_FAIL;
	if (p.rx->attr.reach != UNIO_TL_REACH_HOST || !(p.ep->cap & UNIO_TL_CAP_AM_SHORT) ||
	    !(p.ep->cap & UNIO_TL_CAP_ORDERED))
		goto out;
	memset(&m, 0, sizeof(m));
	for (unsigned int i = 0; i < MANY_SENDERS; i++)
		m.rx[i] = (struct tl_rx){ .check_order = 1, .next_seq = (uint64_t)i << 32 };
	unio_tl_iface_set_am_handler(p.rx, TL_AM_ID, many_cb, &m);
	ep_params.iface_addr = p.rx_addr;
	ep_params.iface_addr_len = p.rx->attr.iface_addr_len;
	for (unsigned int i = 0; i < MANY_SENDERS && r == TEST_OK; i++) {
		if (unio_tl_iface_open(drv, &params, &tx[i]) != UNIO_OK ||
		    unio_tl_ep_create(tx[i], &ep_params, &ep[i]) != UNIO_OK) {
			TEST_LOG("sender %u: cannot connect", i);
			r = TEST_FAIL;
		}
		/* a receiver keeps progressing while peers connect */
		for (unsigned int k = 0; k < 16 && r == TEST_OK; k++) {
			unio_tl_iface_progress(p.rx);
			unio_tl_iface_progress(tx[i]);
		}
	}
	for (unsigned int n = 0; n < MANY_MSGS && r == TEST_OK; n++)
		r = many_send_round(p.rx, tx, ep, n);
	for (time_t end = time(NULL) + 10; r == TEST_OK;) {
		total = 0;
		for (unsigned int i = 0; i < MANY_SENDERS; i++)
			total += m.rx[i].count;
		if (total == (uint64_t)MANY_SENDERS * MANY_MSGS || time(NULL) > end)
			break;
		unio_tl_iface_progress(p.rx);
		for (unsigned int i = 0; i < MANY_SENDERS; i++)
			unio_tl_iface_progress(tx[i]);
	}
	for (unsigned int i = 0; i < MANY_SENDERS && r == TEST_OK; i++) {
		if (m.rx[i].count != MANY_MSGS || m.rx[i].bad != 0) {
			TEST_LOG("sender %u: %" PRIu64 " arrived, %" PRIu64 " bad", i,
				 m.rx[i].count, m.rx[i].bad);
			r = TEST_FAIL;
		}
	}
	if (r == TEST_OK)
		r = many_conn_ids(drv, p.rx, tx, &m);
	for (unsigned int i = 0; i < MANY_SENDERS; i++) {
		unio_tl_ep_destroy(ep[i]);
		unio_tl_iface_close(tx[i]);
		ep[i] = NULL;
		tx[i] = NULL;
	}
out:
	tl_pair_close(&p);
	return r;
}

UNIO_TEST(tl_many_senders, fast)
{
	/* 65 ifaces: keep their segments off the hugepages other processes need */
	setenv("UNIO_HUGEPAGES", "no", 1);
	return tl_for_each_driver(case_many_senders);
}

struct echo_state {
	struct unio_tl_ep *ep;
	unsigned int depth;       /* handlers running now */
	unsigned int max_depth;
	uint64_t count;
	uint64_t bad;
	uint64_t retry;           /* the handler's send found no room: sent after progress */
};

/* each message sends the next one from inside the handler, until 100 */
static unio_status_t
echo_cb(void *arg, const void *data, size_t length, unsigned int flags, unio_tl_conn_id_t conn_id)
{
	struct echo_state *e = arg;
	uint64_t seq;

	RTE_SET_USED(flags), RTE_SET_USED(conn_id);
	e->depth++;
	e->max_depth = RTE_MAX(e->max_depth, e->depth);
	memcpy(&seq, data, sizeof(seq));
	if (length != 8 || seq != e->count)
		e->bad++;
	e->count++;
	if (seq + 1 < 100) {
		unio_status_t st = unio_tl_ep_am_short(e->ep, TL_AM_ID, seq + 1, NULL, 0);

		if (st == UNIO_ERR_NO_RESOURCE)
			e->retry = seq + 1;   /* the contract: again after progress */
		else if (st != UNIO_OK)
			e->bad++;
	}
	e->depth--;
	return UNIO_OK;
}

/* a handler may send, and the driver never re-enters it to deliver that message */
static int
case_send_from_handler(const struct unio_tl_driver *drv, const char *dev)
{
	struct echo_state e = { 0 };
	struct tl_pair p;

	if (tl_pair_open(&p, drv, dev) != TEST_OK)
		return TEST_FAIL;
	if (!(p.ep->cap & UNIO_TL_CAP_AM_SHORT))
		goto out;
	e.ep = p.ep;
	unio_tl_iface_set_am_handler(p.rx, TL_AM_ID, echo_cb, &e);
	TEST_ASSERT_STATUS(unio_tl_ep_am_short(p.ep, TL_AM_ID, 0, NULL, 0), UNIO_OK);
	for (time_t end = time(NULL) + 5; e.count < 100 && time(NULL) <= end;) {
		unio_tl_iface_progress(p.rx);
		if (p.tx != p.rx)
			unio_tl_iface_progress(p.tx);
		if (e.retry != 0 &&
		    unio_tl_ep_am_short(p.ep, TL_AM_ID, e.retry, NULL, 0) == UNIO_OK)
			e.retry = 0;
	}
	TEST_ASSERT_EQ(e.count, 100);
	TEST_ASSERT_EQ(e.bad, 0);
	TEST_ASSERT_EQ(e.max_depth, 1);
out:
	tl_pair_close(&p);
	return TEST_OK;
}

UNIO_TEST(tl_send_from_handler, fast)
{
	return tl_for_each_driver(case_send_from_handler);
}

/* one message each way, checked, over @p there (tx -> rx) and @p back (rx -> tx) */
static int
sockaddr_exchange(struct tl_pair *p, struct unio_tl_ep *there, struct unio_tl_ep *back,
		  struct tl_rx *rx, struct tl_rx *tx_rx)
{
	uint64_t seq = rx->count;
	time_t end = time(NULL) + 5;
	uint8_t buf[64];
	unio_status_t st;

	tl_make_msg(buf, 40, seq);
	do {   /* a driver may need to find the peer first (ARP) */
		st = unio_tl_ep_am_short(there, TL_AM_ID, seq, buf + 8, 32);
		unio_tl_iface_progress(p->tx);
		unio_tl_iface_progress(p->rx);
	} while (st == UNIO_ERR_NO_RESOURCE && time(NULL) <= end);
	TEST_ASSERT_STATUS(st, UNIO_OK);
	if (tl_pair_wait(p, rx, seq + 1) != TEST_OK)
		return TEST_FAIL;
	if (back == NULL)
		return TEST_OK;
	tl_make_msg(buf, 40, tx_rx->count);
	TEST_ASSERT_STATUS(unio_tl_ep_am_short(back, TL_AM_ID, tx_rx->count, buf + 8, 32),
			   UNIO_OK);
	while (tx_rx->count == 0 && time(NULL) <= end) {
		unio_tl_iface_progress(p->rx);
		unio_tl_iface_progress(p->tx);
	}
	TEST_ASSERT_EQ(tx_rx->count, 1);
	return TEST_OK;
}

/*
 * CONNECT_SOCKADDR: an ep made from the receiver's socket address alone carries messages;
 * the receiver's ep to the sender's iface address attaches to that connection and answers
 * on it; a driver without the capability says UNSUPPORTED through the generic layer.
 */
static int
case_connect_sockaddr(const struct unio_tl_driver *drv, const char *dev)
{
	struct tl_rx rx = { .check_order = 1 }, tx_rx = { .check_order = 1 };
	struct unio_tl_ep *ep = NULL, *back = NULL;
	uint8_t addr[UNIO_TL_ADDR_MAX], tx_addr[UNIO_TL_ADDR_MAX];
	struct unio_tl_ep_params ep_params = { .iface_addr = addr };
	struct sockaddr_storage ss;
	struct tl_pair p;
	int r = TEST_FAIL;

	if (tl_pair_open(&p, drv, dev) != TEST_OK)
		return TEST_FAIL;
	if (!(p.rx->attr.cap & UNIO_TL_CAP_CONNECT_SOCKADDR)) {
		TEST_ASSERT_STATUS(unio_tl_iface_get_sockaddr(p.rx, &ss), UNIO_ERR_UNSUPPORTED);
		r = TEST_OK;
		goto out;
	}
	TEST_ASSERT_STATUS(unio_tl_iface_get_sockaddr(p.rx, &ss), UNIO_OK);
	TEST_ASSERT_STATUS(unio_tl_sockaddr_to_addr(p.tx, (struct sockaddr *)&ss, sizeof(ss),
						    addr), UNIO_OK);
	TEST_ASSERT(unio_tl_sockaddr_to_addr(p.tx, (struct sockaddr *)&ss, 1, addr) < 0,
		    "a truncated socket address accepted");
	/* the pair's own ep (full address) goes first: this one is a connection of its own */
	unio_tl_ep_destroy(p.ep);
	p.ep = NULL;
	unio_tl_iface_set_am_handler(p.rx, TL_AM_ID, tl_check_cb, &rx);
	unio_tl_iface_set_am_handler(p.tx, TL_AM_ID, tl_check_cb, &tx_rx);
	ep_params.iface_addr_len = p.tx->attr.iface_addr_len;
	TEST_ASSERT_STATUS(unio_tl_ep_create(p.tx, &ep_params, &ep), UNIO_OK);
	if (sockaddr_exchange(&p, ep, NULL, &rx, &tx_rx) != TEST_OK)
		goto out;
	/* the receiver attaches to the connection the message came on, and answers */
	TEST_ASSERT_STATUS(unio_tl_iface_get_address(p.tx, tx_addr), UNIO_OK);
	ep_params.iface_addr = tx_addr;
	TEST_ASSERT_STATUS(unio_tl_ep_create(p.rx, &ep_params, &back), UNIO_OK);
	if (sockaddr_exchange(&p, ep, back, &rx, &tx_rx) != TEST_OK)
		goto out;
	TEST_ASSERT_EQ(rx.bad + tx_rx.bad, 0);
	/* both sides know the connection their frames come on: the ep to the sender's id */
	TEST_ASSERT(rx.conn_changed == 0 && rx.last_conn == back->conn_id &&
		    tx_rx.conn_changed == 0 && tx_rx.last_conn == ep->conn_id,
		    "connection ids: frames %#" PRIx64 " / %#" PRIx64 ", eps %#" PRIx64 " / %#"
		    PRIx64, rx.last_conn, tx_rx.last_conn, back->conn_id, ep->conn_id);
	r = TEST_OK;
out:
	unio_tl_ep_destroy(back);
	unio_tl_ep_destroy(ep);
	tl_pair_close(&p);
	return r;
}

UNIO_TEST(tl_connect_sockaddr, fast)
{
	return tl_for_each_driver(case_connect_sockaddr);
}
