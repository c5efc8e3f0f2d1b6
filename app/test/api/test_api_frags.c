/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fragment sizes on a shm lane.  Further fragments (PIPE, EAGER_MID) carry whole cache lines,
 * 8 KiB with the default fifo, so a 64 KiB pipelined message, tagged or AM, is 8 ring messages
 * landing at multiples of 8 KiB; the last one takes up to 8248 bytes, so 64 KiB + 8 is 8
 * too; a 16 KiB eager message is a first fragment of 8192 bytes (whole cache lines too) and
 * a last of 8192, one of 8248 bytes (UCX's posix am_bcopy) is one EAGER message, 8249 bytes
 * 8192 + 57.  Counted
 * by wrapping the receiving iface's handlers; every payload checksummed.  Before: 8184-byte
 * fragments (the eager first fragment's header size), a 64 KiB message in 9 ring messages,
 * the ninth of 64 bytes, and every fragment at an offset that was no multiple of 64.
 */

#include <stdlib.h>
#include <string.h>

#include "api_common.h"
#include "unio_proto.h"

#define FR_TAG 0xf4a6000000000001ull
#define FR_AM_ID 5
#define FR_MAX (64 * 1024 + 8)

/* what the wrapped handlers of the receiving iface saw */
static struct {
	struct unio_tl_am_handler orig[PROTO_AM_MAX];
	unsigned int n[PROTO_AM_MAX];
	size_t first;        /* payload of the eager first fragment */
	size_t max_further;  /* largest payload of a further fragment */
	size_t last;         /* payload of the last further fragment */
	unsigned int unaligned;   /* further fragments at an offset that is no multiple of 64 */
} fr;

/* the wrapper of the handlers of PROTO_AM_PIPE, _EAGER_FIRST, _EAGER_MID: @p arg is the id */
static unio_status_t
fr_count(void *arg, const void *data, size_t len, unsigned int flags,
	 unio_tl_conn_id_t conn_id)
{
	uint8_t id = (uint8_t)(uintptr_t)arg;
	struct proto_frag_hdr h;

	fr.n[id]++;
	if (id == PROTO_AM_EAGER_FIRST && len >= sizeof(struct proto_eager_first_hdr)) {
		fr.first = len - sizeof(struct proto_eager_first_hdr);
	} else if (id != PROTO_AM_EAGER_FIRST && len >= sizeof(h)) {
		memcpy(&h, data, sizeof(h));
		fr.last = len - sizeof(h);
		fr.max_further = RTE_MAX(fr.max_further, fr.last);
		fr.unaligned += h.offset % 64 != 0 && id == PROTO_AM_PIPE;
	}
	return fr.orig[id].cb(fr.orig[id].arg, data, len, flags, conn_id);
}

static void
fr_wrap(struct unio_tl_iface *iface)
{
	static const uint8_t wrap[] = { PROTO_AM_PIPE, PROTO_AM_EAGER_FIRST, PROTO_AM_EAGER_MID };

	for (unsigned int i = 0; i < RTE_DIM(wrap); i++) {
		fr.orig[wrap[i]] = iface->am[wrap[i]];
		iface->am[wrap[i]].cb = fr_count;
		iface->am[wrap[i]].arg = (void *)(uintptr_t)wrap[i];
	}
}

struct fr_am {
	void *desc;
	size_t len;
};

static unio_status_t
fr_am_cb(void *arg, const void *header, size_t hlen, void *data, size_t len,
	 const struct unio_am_recv_param *p)
{
	struct fr_am *am = arg;

	RTE_SET_USED(header), RTE_SET_USED(hlen), RTE_SET_USED(p);
	am->desc = data;
	am->len = len;
	return UNIO_INPROGRESS;   /* received after the callback */
}

static void
fr_progress(unio_worker_t *a, unio_worker_t *b, unio_request_t **r1, unio_request_t **r2)
{
	for (long i = 0; i < 2000000 && ((*r1 != NULL && unio_request_test(*r1, NULL) ==
					  UNIO_INPROGRESS) ||
					 (*r2 != NULL && unio_request_test(*r2, NULL) ==
					  UNIO_INPROGRESS)); i++) {
		unio_worker_progress(a);
		unio_worker_progress(b);
	}
}

/* one message of @p len bytes a -> b; @p n messages of AM id @p id expected at b */
static int
fr_round(unio_worker_t *a, unio_worker_t *b, unio_ep_t *ep, uint8_t *s, uint8_t *r,
	 size_t len, bool am, uint8_t id, unsigned int n)
{
	unio_request_t *sreq = NULL, *rreq = NULL;
	struct fr_am amrx = { 0 };
	unio_status_t st;

	memset(fr.n, 0, sizeof(fr.n));
	fr.first = fr.max_further = fr.last = 0;
	fr.unaligned = 0;
	test_fill(s, len, len + am);
	memset(r, 0, len);
	if (am) {
		TEST_ASSERT_STATUS(unio_worker_set_am_handler(b, FR_AM_ID, fr_am_cb, &amrx, 0),
				   UNIO_OK);
		st = unio_am_send(ep, FR_AM_ID, NULL, 0, s, len, NULL, 0, &sreq);
		TEST_ASSERT(st == UNIO_INPROGRESS, "am_send: %s", unio_status_string(st));
		for (int i = 0; i < 100000 && amrx.desc == NULL; i++) {
			unio_worker_progress(a);
			unio_worker_progress(b);
		}
		TEST_ASSERT(amrx.desc != NULL && amrx.len == len, "no rendezvous AM of %zu", len);
		st = unio_am_recv_data(b, amrx.desc, r, len, NULL, &rreq);
		TEST_ASSERT(st == UNIO_INPROGRESS, "recv_data: %s", unio_status_string(st));
	} else {
		TEST_ASSERT_STATUS(unio_tag_recv(b, r, len, FR_TAG, UINT64_MAX, NULL, &rreq),
				   UNIO_INPROGRESS);
		st = unio_tag_send(ep, s, len, FR_TAG, NULL, &sreq);
		TEST_ASSERT(st == UNIO_OK || st == UNIO_INPROGRESS, "send: %s",
			    unio_status_string(st));
	}
	fr_progress(a, b, &sreq, &rreq);
	if (sreq != NULL) {
		TEST_ASSERT_STATUS(unio_request_test(sreq, NULL), UNIO_OK);
		unio_request_free(sreq);
	}
	TEST_ASSERT_STATUS(unio_request_test(rreq, NULL), UNIO_OK);
	unio_request_free(rreq);
	TEST_ASSERT(test_checksum(r, len) == test_checksum(s, len), "%zu bytes changed", len);
	TEST_LOG("%s %zu B: %u PIPE, %u EAGER_FIRST (%zu B), %u EAGER_MID, further up to %zu B, "
		 "last %zu B", am ? "AM" : "tag", len, fr.n[PROTO_AM_PIPE],
		 fr.n[PROTO_AM_EAGER_FIRST], fr.first, fr.n[PROTO_AM_EAGER_MID],
		 fr.max_further, fr.last);
	TEST_ASSERT(fr.n[id] == n, "%zu bytes in %u messages of id %u, want %u", len, fr.n[id],
		    id, n);
	TEST_ASSERT(fr.unaligned == 0, "%u pipelined fragments at unaligned offsets",
		    fr.unaligned);
	return TEST_OK;
}

UNIO_TEST(api_frag_sizes_shm, fast)
{
	/* the pipeline forced: the auto scheme may pull by get at these sizes */
	static const char *const ovr[] = { "TLS", "shm,self", "RNDV_SCHEME", "pipeline", NULL };
	uint8_t *s = malloc(FR_MAX), *r = malloc(FR_MAX);
	const struct proto_lane *l;
	struct api_pair p;
	unio_worker_t *a, *b;
	unio_ep_t *ep;
	int rc = TEST_FAIL;

	if (api_pair_open(&p, ovr, "shm") != TEST_OK || s == NULL || r == NULL)
		goto out;
	a = p.a;
	b = p.b;
	ep = p.ep;
	l = &ep->lane;
	TEST_LOG("lane: fragments %zu B, last up to %zu B, eager first %zu B, rendezvous from "
		 "%zu B, split from %zu B", l->frag, l->frag_last, l->frag_first, l->rndv_thresh,
		 l->split_min);
	if (l->frag != 8192 || l->frag_last != 8248 || l->frag_first != 8192 ||
	    l->rndv_thresh > 40960 || l->split_min <= FR_MAX || 16384 >= l->rndv_thresh) {
		TEST_LOG("lane sizes are not the default shm ones");
		goto out;
	}
	fr_wrap(api_worker_iface(b, "shm", NULL));
	if (fr_round(a, b, ep, s, r, 64 * 1024, false, PROTO_AM_PIPE, 8) != TEST_OK ||
	    fr.max_further != 8192 ||
	    fr_round(a, b, ep, s, r, 64 * 1024 + 8, false, PROTO_AM_PIPE, 8) != TEST_OK ||
	    fr.last != 8200 ||
	    fr_round(a, b, ep, s, r, 40 * 1024, false, PROTO_AM_PIPE, 5) != TEST_OK ||
	    fr_round(a, b, ep, s, r, 16 * 1024, false, PROTO_AM_EAGER_MID, 1) != TEST_OK ||
	    fr.n[PROTO_AM_EAGER_FIRST] != 1 || fr.first != 8192 || fr.last != 8192 ||
	    fr_round(a, b, ep, s, r, 8248, false, PROTO_AM_EAGER_FIRST, 0) != TEST_OK ||
	    fr.n[PROTO_AM_EAGER_MID] != 0 ||
	    fr_round(a, b, ep, s, r, 8249, false, PROTO_AM_EAGER_MID, 1) != TEST_OK ||
	    fr.n[PROTO_AM_EAGER_FIRST] != 1 || fr.first != 8192 || fr.last != 57 ||
	    fr_round(a, b, ep, s, r, 64 * 1024, true, PROTO_AM_PIPE, 8) != TEST_OK) {
		TEST_LOG("fragments: %u PIPE, %u EAGER_FIRST of %zu B, further up to %zu B, "
			 "last %zu B", fr.n[PROTO_AM_PIPE], fr.n[PROTO_AM_EAGER_FIRST], fr.first,
			 fr.max_further, fr.last);
		goto out;
	}
	rc = TEST_OK;
out:
	api_pair_close(&p);
	free(s);
	free(r);
	return rc;
}
