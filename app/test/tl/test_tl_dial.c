/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Dialling by socket address (UNIO_TL_CAP_CONNECT_SOCKADDR) where two ifaces dial each other
 * at once: neither connection resets the other, every message of both arrives once, in
 * order, checked.  And a dial after one that gave up, whose late answer left a passive ep
 * behind: the new dial is a connection of its own, its message arrives.  Runs over the
 * drivers that connect by socket address (ethdev: through tl_ethdev_*, two ifaces of one
 * port); a no-op elsewhere.
 */

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tl_common.h"
#include "unio_env.h"

#define CD_MSGS 16

static unsigned int cd_errs;
static struct unio_tl_ep *cd_err_ep;

static void
cd_err(void *arg, struct unio_tl_ep *ep, unio_status_t st)
{
	RTE_SET_USED(arg);
	cd_errs++;
	cd_err_ep = ep;
	TEST_LOG("err_cb: ep %p %s", (void *)ep, unio_status_string(st));
}

static int
cd_open(const struct unio_tl_driver *drv, const char *dev, struct unio_tl_iface **i)
{
	struct unio_tl_iface_params params = {
		.config = unio_config_env(), .dev_name = dev, .cpu = -1, .err_cb = cd_err,
	};

	TEST_ASSERT_STATUS(unio_tl_iface_open(drv, &params, i), UNIO_OK);
	return TEST_OK;
}

/* The receiving side's iface in *@p rx, the sending side's in *@p tx (tl_side()). */
static int
cd_open_pair(const struct unio_tl_driver *drv, const char *dev, struct unio_tl_iface **rx,
	     struct unio_tl_iface **tx)
{
	const char *side = tl_side(dev, false);

	if (side == NULL || cd_open(drv, side, rx) != TEST_OK)
		return TEST_FAIL;
	side = tl_side(dev, true);
	return side != NULL ? cd_open(drv, side, tx) : TEST_FAIL;
}

static void
cd_progress(struct unio_tl_iface *a, struct unio_tl_iface *b, double secs)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		unio_tl_iface_progress(a);
		unio_tl_iface_progress(b);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
}

static unio_status_t
cd_send(struct unio_tl_ep *ep, struct unio_tl_iface *a, struct unio_tl_iface *b, uint64_t seq)
{
	uint8_t buf[64];
	unio_status_t st;
	time_t end = time(NULL) + 3;

	tl_make_msg(buf, 40, seq);
	do {
		st = unio_tl_ep_am_short(ep, TL_AM_ID, seq, buf + 8, 32);
		if (st == UNIO_ERR_NO_RESOURCE) {
			unio_tl_iface_progress(a);
			unio_tl_iface_progress(b);
		}
	} while (st == UNIO_ERR_NO_RESOURCE && time(NULL) <= end);
	return st;
}

static int
case_crossing(const struct unio_tl_driver *drv, const char *dev)
{
	struct unio_tl_iface *a = NULL, *b = NULL;
	struct tl_rx ra = { .check_order = 1 }, rb = { .check_order = 1 };
	struct sockaddr_storage sa, sb;
	uint8_t aa[UNIO_TL_ADDR_MAX], ab[UNIO_TL_ADDR_MAX];
	struct unio_tl_ep *ea = NULL, *eb = NULL;
	struct unio_tl_ep_params pa = { .iface_addr = ab }, pb = { .iface_addr = aa };
	int rc = TEST_FAIL;

	if (cd_open_pair(drv, dev, &a, &b) != TEST_OK)
		goto out;
	if (!(a->attr.cap & UNIO_TL_CAP_CONNECT_SOCKADDR)) {
		rc = TEST_OK;
		goto out;
	}
	TEST_LOG("crossing dials over %s/%s", drv->name, dev);
	unio_tl_iface_set_am_handler(a, TL_AM_ID, tl_check_cb, &ra);
	unio_tl_iface_set_am_handler(b, TL_AM_ID, tl_check_cb, &rb);
	unio_tl_iface_get_sockaddr(a, &sa);
	unio_tl_iface_get_sockaddr(b, &sb);
	if (unio_tl_sockaddr_to_addr(a, (struct sockaddr *)&sb, sizeof(sb), ab) != UNIO_OK ||
	    unio_tl_sockaddr_to_addr(b, (struct sockaddr *)&sa, sizeof(sa), aa) != UNIO_OK) {
		TEST_LOG("sockaddr_to_addr");
		goto out;
	}
	pa.iface_addr_len = a->attr.iface_addr_len;
	pb.iface_addr_len = b->attr.iface_addr_len;
	cd_errs = 0;
	if (unio_tl_ep_create(a, &pa, &ea) != UNIO_OK ||
	    unio_tl_ep_create(b, &pb, &eb) != UNIO_OK) {
		TEST_LOG("ep_create");
		goto out;
	}
	/* both first messages leave before either side reads anything */
	if (cd_send(ea, a, b, 0) != UNIO_OK || cd_send(eb, a, b, 0) != UNIO_OK) {
		TEST_LOG("first sends");
		goto out;
	}
	for (uint64_t i = 1; i < CD_MSGS; i++)
		if (cd_send(ea, a, b, i) != UNIO_OK || cd_send(eb, a, b, i) != UNIO_OK) {
			TEST_LOG("send %" PRIu64, i);
			goto out;
		}
	for (int i = 0; i < 300 && (ra.count < CD_MSGS || rb.count < CD_MSGS); i++)
		cd_progress(a, b, 0.01);
	cd_progress(a, b, 0.1);   /* nothing more, nothing twice */
	TEST_LOG("crossing dials: a got %" PRIu64 " (bad %" PRIu64 "), b got %" PRIu64
		 " (bad %" PRIu64 "), %u ep errors", ra.count, ra.bad, rb.count, rb.bad, cd_errs);
	if (ra.count == CD_MSGS && rb.count == CD_MSGS && ra.bad == 0 && rb.bad == 0 &&
	    cd_errs == 0)
		rc = TEST_OK;
out:
	if (ea != NULL)
		unio_tl_ep_destroy(ea);
	if (eb != NULL)
		unio_tl_ep_destroy(eb);
	if (a != NULL)
		unio_tl_iface_close(a);
	if (b != NULL)
		unio_tl_iface_close(b);
	return rc;
}

UNIO_TEST(tl_crossing_dials, fast)
{
	return tl_for_each_driver(case_crossing);
}

/*
 * a dials b (message 0); b answers on that connection (its ep by a's full address) after a
 * gave up on it (a's ep destroyed): the answer leaves a passive ep at a.  a dials b again:
 * the new dial must not take that ep over, and its message reaches b.
 */
static int
case_stale(const struct unio_tl_driver *drv, const char *dev)
{
	struct unio_tl_iface *a = NULL, *b = NULL;
	struct tl_rx ra = { 0 }, rb = { 0 };
	struct sockaddr_storage sb;
	uint8_t ab[UNIO_TL_ADDR_MAX], aa_full[UNIO_TL_ADDR_MAX];
	struct unio_tl_ep *ea = NULL, *back = NULL;
	struct unio_tl_ep_params pa = { .iface_addr = ab }, pb = { .iface_addr = aa_full };
	int rc = TEST_FAIL;

	if (cd_open_pair(drv, dev, &b, &a) != TEST_OK)
		goto out;
	if (!(a->attr.cap & UNIO_TL_CAP_CONNECT_SOCKADDR)) {
		rc = TEST_OK;
		goto out;
	}
	TEST_LOG("a dial after a stale one over %s/%s", drv->name, dev);
	unio_tl_iface_set_am_handler(a, TL_AM_ID, tl_check_cb, &ra);
	unio_tl_iface_set_am_handler(b, TL_AM_ID, tl_check_cb, &rb);
	unio_tl_iface_get_sockaddr(b, &sb);
	unio_tl_iface_get_address(a, aa_full);
	if (unio_tl_sockaddr_to_addr(a, (struct sockaddr *)&sb, sizeof(sb), ab) != UNIO_OK)
		goto out;
	pa.iface_addr_len = a->attr.iface_addr_len;
	pb.iface_addr_len = b->attr.iface_addr_len;
	cd_errs = 0;
	cd_err_ep = NULL;
	if (unio_tl_ep_create(a, &pa, &ea) != UNIO_OK || cd_send(ea, a, b, 0) != UNIO_OK)
		goto out;
	for (int i = 0; i < 300 && rb.count < 1; i++)
		cd_progress(a, b, 0.01);
	if (unio_tl_ep_create(b, &pb, &back) != UNIO_OK)   /* b attaches to that connection */
		goto out;
	unio_tl_ep_destroy(ea);                              /* a gave up meanwhile */
	ea = NULL;
	if (cd_send(back, a, b, 0) != UNIO_OK)               /* the late answer */
		goto out;
	for (int i = 0; i < 300 && ra.count < 1; i++)
		cd_progress(a, b, 0.01);
	cd_errs = 0;
	if (unio_tl_ep_create(a, &pa, &ea) != UNIO_OK || cd_send(ea, a, b, 1) != UNIO_OK) {
		TEST_LOG("the second dial");
		goto out;
	}
	for (int i = 0; i < 300 && rb.count < 2; i++)
		cd_progress(a, b, 0.01);
	TEST_LOG("stale dial: b got %" PRIu64 " of 2 (bad %" PRIu64 "), a %" PRIu64
		 ", %u ep errors (the second dial's: %s)", rb.count, rb.bad, ra.count, cd_errs,
		 cd_err_ep == ea && cd_errs != 0 ? "yes" : "no");
	if (rb.count == 2 && rb.bad == 0 && (cd_errs == 0 || cd_err_ep != ea))
		rc = TEST_OK;
out:
	if (ea != NULL)
		unio_tl_ep_destroy(ea);
	if (back != NULL)
		unio_tl_ep_destroy(back);
	if (a != NULL)
		unio_tl_iface_close(a);
	if (b != NULL)
		unio_tl_iface_close(b);
	return rc;
}

UNIO_TEST(tl_stale_dial, fast)
{
	return tl_for_each_driver(case_stale);
}
