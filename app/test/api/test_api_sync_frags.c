/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A sync send of a multi-fragment eager message whose SYNC_ACK arrives while its further
 * fragments still wait for room in the sender's queue: the receiver answers when the first
 * fragment matches (a posted receive) or when a receive matches the message still being
 * reassembled (unexpected).  Over shm with a 16 KiB fifo and a 256 KiB message, the sender
 * stalls after the first fragments.  Asserted: the receive gets the checksummed message,
 * the send completes with UNIO_OK, and the sender dropped nothing (before: the early
 * SYNC_ACK was dropped as "for an unknown request" and the send never completed).
 */

#include <stdlib.h>
#include <string.h>

#include "api_common.h"
#include "unio_proto.h"

#define SF_TAG 0x5e7c000000000001ull
#define SF_LEN (256 * 1024)

static int
sf_round(unio_worker_t *a, unio_worker_t *b, unio_ep_t *ep, uint8_t *s, uint8_t *r,
	 int posted_first, uint64_t seed)
{
	unio_request_t *sreq = NULL, *rreq = NULL;
	uint64_t d0 = a->n_dropped;
	long i;

	test_fill(s, SF_LEN, seed);
	memset(r, 0, SF_LEN);
	if (posted_first)
		TEST_ASSERT_STATUS(unio_tag_recv(b, r, SF_LEN, SF_TAG, UINT64_MAX, NULL, &rreq),
				   UNIO_INPROGRESS);
	TEST_ASSERT_STATUS(unio_tag_send_sync(ep, s, SF_LEN, SF_TAG, NULL, &sreq),
			   UNIO_INPROGRESS);
	TEST_ASSERT(sreq->proto == SEND_FRAGS && sreq->offset < SF_LEN,
		    "multi-fragment send stalled (proto %d, %zu bytes out)", sreq->proto,
		    sreq->offset);
	if (!posted_first) {
		/* part of the message arrives unexpected, then a receive takes it */
		for (i = 0; i < 4; i++) {
			unio_worker_progress(b);
			unio_worker_progress(a);
		}
		TEST_ASSERT(sreq->proto == SEND_FRAGS && sreq->offset < SF_LEN,
			    "still stalled (%zu bytes out)", sreq->offset);
		TEST_ASSERT_STATUS(unio_tag_recv(b, r, SF_LEN, SF_TAG, UINT64_MAX, NULL, &rreq),
				   UNIO_INPROGRESS);
	}
	for (i = 0; i < 2000000 && (unio_request_test(sreq, NULL) == UNIO_INPROGRESS ||
				    unio_request_test(rreq, NULL) == UNIO_INPROGRESS); i++) {
		unio_worker_progress(b);
		unio_worker_progress(a);
	}
	TEST_ASSERT_STATUS(unio_request_test(rreq, NULL), UNIO_OK);
	test_fill(s, SF_LEN, seed);
	TEST_ASSERT(memcmp(r, s, SF_LEN) == 0, "message changed");
	TEST_ASSERT_STATUS(unio_request_test(sreq, NULL), UNIO_OK);
	TEST_ASSERT(a->n_dropped == d0, "sender dropped %" PRIu64, a->n_dropped - d0);
	unio_request_free(sreq);
	unio_request_free(rreq);
	return TEST_OK;
}

UNIO_TEST(api_sync_frags_early_ack, fast)
{
	static const char *const ovr[] = { "TLS", "shm,self", "RNDV_THRESH", "inf",
					   "SHM_FIFO_SIZE", "16k", NULL };
	uint8_t *s = malloc(SF_LEN), *r = malloc(SF_LEN);
	struct api_pair p;
	int rc = api_pair_open(&p, ovr, "shm");

	if (s == NULL || r == NULL)
		rc = TEST_FAIL;
	if (rc == TEST_OK)
		rc = sf_round(p.a, p.b, p.ep, s, r, 1, 0x5f01);
	if (rc == TEST_OK)
		rc = sf_round(p.a, p.b, p.ep, s, r, 0, 0x5f02);
	api_pair_close(&p);
	free(s);
	free(r);
	return rc;
}
