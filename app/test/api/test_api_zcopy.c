/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Eager zero-copy over tcp (am_zcopy from the user's buffer): the threshold from the
 * driver's performance model or UNIO_ZCOPY_THRESH, and the size boundaries around it and
 * around the rendezvous threshold (each -1 / 0 / +1), payloads verified, the protocol
 * checked by the lane's count of zero-copy sends (unio_ep_print_info).
 */

#include <stdio.h>
#include <string.h>

#include "api_common.h"

struct lane_info {
	size_t zthresh, zmax, rndv;
	unsigned long long sent;
	int zcopy_on;
};

static int
lane_info(unio_ep_t *ep, struct lane_info *li)
{
	char buf[1024] = { 0 }, *p;
	FILE *f = fmemopen(buf, sizeof(buf) - 1, "w");

	TEST_ASSERT(f != NULL, "fmemopen");
	unio_ep_print_info(ep, f);
	fclose(f);
	memset(li, 0, sizeof(*li));
	p = strstr(buf, "rndv >= ");
	TEST_ASSERT(p != NULL && sscanf(p, "rndv >= %zu", &li->rndv) == 1, "no rndv in: %s", buf);
	p = strstr(buf, "eager zcopy ");
	TEST_ASSERT(p != NULL, "no eager zcopy line in: %s", buf);
	if (sscanf(p, "eager zcopy %zu .. %zu (%llu sent)", &li->zthresh, &li->zmax,
		   &li->sent) == 3)
		li->zcopy_on = 1;
	else
		TEST_ASSERT(sscanf(p, "eager zcopy off (%llu sent)", &li->sent) == 1, "%s", p);
	return TEST_OK;
}

/* send @p len bytes a -> b (sync or not), receive and verify them, progressing both */
static int
xfer(unio_worker_t *a, unio_worker_t *b, unio_ep_t *ab, size_t len, int sync)
{
	uint8_t *s = malloc(len + 1), *r = malloc(len + 1);
	unio_request_t *sreq = NULL, *rreq = NULL;
	unio_status_t sst, rst;
	uint64_t tag = 0x2c0000 + len;

	TEST_ASSERT(s != NULL && r != NULL, "malloc");
	test_fill(s, len, tag);
	r[len] = 0xee;
	rst = unio_tag_recv(b, r, len, tag, UINT64_MAX, NULL, &rreq);
	sst = sync ? unio_tag_send_sync(ab, s, len, tag, NULL, &sreq) :
	      unio_tag_send(ab, s, len, tag, NULL, &sreq);
	TEST_ASSERT(sst == UNIO_OK || sst == UNIO_INPROGRESS, "send %zu: %s", len,
		    unio_status_string(sst));
	TEST_ASSERT(rst == UNIO_OK || rst == UNIO_INPROGRESS, "recv %zu: %s", len,
		    unio_status_string(rst));
	while (sst == UNIO_INPROGRESS || rst == UNIO_INPROGRESS) {
		unio_worker_progress(a);
		unio_worker_progress(b);
		if (sst == UNIO_INPROGRESS)
			sst = unio_request_test(sreq, NULL);
		if (rst == UNIO_INPROGRESS)
			rst = unio_request_test(rreq, NULL);
	}
	TEST_ASSERT_STATUS(sst, UNIO_OK);
	TEST_ASSERT_STATUS(rst, UNIO_OK);
	unio_request_free(sreq);
	unio_request_free(rreq);
	TEST_ASSERT(test_checksum(s, len) == test_checksum(r, len) && r[len] == 0xee,
		    "%zu bytes differ", len);
	free(s);
	free(r);
	return TEST_OK;
}

/* one transfer; the lane's zero-copy count must grow by @p want_zc */
static int
check(unio_worker_t *a, unio_worker_t *b, unio_ep_t *ab, size_t len, int sync, int want_zc)
{
	struct lane_info before, after;

	TEST_ASSERT_EQ(lane_info(ab, &before), TEST_OK);
	TEST_ASSERT_EQ(xfer(a, b, ab, len, sync), TEST_OK);
	TEST_ASSERT_EQ(lane_info(ab, &after), TEST_OK);
	TEST_ASSERT(after.sent - before.sent == (unsigned long long)want_zc,
		    "%zu bytes%s: %llu zero-copy sends, want %d", len, sync ? " (sync)" : "",
		    after.sent - before.sent, want_zc);
	return TEST_OK;
}

static int
zcopy_run(const char *thresh, size_t want_thresh)
{
	const char *ovr[] = { "TLS", "tcp,self", thresh != NULL ? "ZCOPY_THRESH" : NULL, thresh,
			      NULL };
	unio_context_t *ctx = api_ctx(ovr);
	unio_worker_t *a = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	unio_worker_t *b = ctx != NULL ? unio_worker_create(ctx, NULL, NULL) : NULL;
	struct lane_info li;
	unio_status_t st;
	unio_ep_t *ab;
	size_t t;

	TEST_ASSERT(a != NULL && b != NULL, "workers");
	ab = api_ep_to_worker(a, b, &st);
	TEST_ASSERT(ab != NULL, "ep: %s", unio_status_string(st));
	TEST_ASSERT_EQ(xfer(a, b, ab, 8, 0), TEST_OK);   /* connected */
	TEST_ASSERT_EQ(lane_info(ab, &li), TEST_OK);
	TEST_ASSERT(li.zcopy_on, "eager zcopy is off on the tcp lane");
	TEST_ASSERT_EQ(li.zthresh, want_thresh);
	TEST_ASSERT(li.rndv > li.zthresh + 1, "rndv %zu", li.rndv);
	t = li.zthresh;
	TEST_ASSERT_EQ(check(a, b, ab, t - 1, 0, 0), TEST_OK);
	TEST_ASSERT_EQ(check(a, b, ab, t, 0, 1), TEST_OK);
	TEST_ASSERT_EQ(check(a, b, ab, t + 1, 0, 1), TEST_OK);
	TEST_ASSERT_EQ(check(a, b, ab, t, 1, 0), TEST_OK);   /* sync: copied, then acked */
	/* the top: the largest eager is zero-copy when the driver takes it in one call */
	TEST_ASSERT_EQ(check(a, b, ab, li.rndv - 1, 0, li.rndv - 1 <= li.zmax), TEST_OK);
	TEST_ASSERT_EQ(check(a, b, ab, li.rndv, 0, 0), TEST_OK);
	TEST_ASSERT_EQ(check(a, b, ab, li.rndv + 1, 0, 0), TEST_OK);
	unio_ep_close(ab, UNIO_EP_CLOSE_FORCE, NULL);
	unio_worker_destroy(a);
	unio_worker_destroy(b);
	unio_context_destroy(ctx);
	return TEST_OK;
}

/* auto: tcp's model says 500 ns of zero-copy overhead, i.e. 5000 bytes of copying */
UNIO_TEST(api_zcopy_auto_tcp, fast)
{
	return zcopy_run(NULL, 5000);
}

UNIO_TEST(api_zcopy_thresh_tcp, fast)
{
	return zcopy_run("12k", 12288);
}
