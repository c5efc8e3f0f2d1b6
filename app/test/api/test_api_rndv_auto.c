/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The auto rendezvous scheme on a host lane (proto.c): below the split the sender offers a get
 * and the receiver times each rendezvous until the data is delivered and uses get or
 * pipeline, whichever costs less per byte, probing the other in short bursts.  The tests make
 * one scheme look slow (unio_proto_rndv_skew() on the receiver's ep multiplies its samples),
 * check from the sender's and the receiver's counts that both were probed and the cheaper
 * one carried the rest, then turn the skew round and check that the choice follows.  Every
 * payload is checksummed.  A forced scheme stays what it names: no probe, no other scheme.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_common.h"
#include "unio_am.h"
#include "unio_cpu.h"
#include "unio_proto.h"
#include "unio_test.h"

#define WINDOW 8
#define LEN_MIN (48 * 1024)    /* one size class: 48 KiB .. 64 KiB - 1 */
#define LEN_SPAN (16 * 1024)

struct counts {
	uint64_t get, pipe, split, probe, rx_get, rx_pipe;
};

/* the receiver's ep of the pair: b's to a */
static unio_ep_t *
rx_ep(const struct api_pair *p)
{
	return proto_ep_lookup(p->b, p->ep->remote_id);
}

/* what the sender sent, and what the receiver chose, timed and probed */
static struct counts
counts_of(const struct api_pair *p)
{
	const struct proto_adapt *a = &p->ep->adapt, *r = &rx_ep(p)->adapt;

	return (struct counts){ a->n[PROTO_ADAPT_GET], a->n[PROTO_ADAPT_PIPE],
				a->n[PROTO_ADAPT_SPLIT], r->n_probe, r->n_rx[PROTO_ADAPT_GET],
				r->n_rx[PROTO_ADAPT_PIPE] };
}

/* AM: the handler keeps each rendezvous' descriptor; the test receives it after */
#define AM_ID 5

struct am_rx {
	void *desc[WINDOW];
	size_t len[WINDOW];
	unsigned int n;
	unsigned int bad;
};

static unio_status_t
am_keep(void *arg, const void *header, size_t hlen, void *data, size_t len,
	const struct unio_am_recv_param *p)
{
	struct am_rx *rx = arg;
	uint32_t i;

	if (hlen != sizeof(i) || !(p->recv_attr & UNIO_AM_RECV_ATTR_FLAG_RNDV)) {
		rx->bad++;
		return UNIO_OK;
	}
	memcpy(&i, header, sizeof(i));
	if (i >= WINDOW || rx->desc[i] != NULL) {
		rx->bad++;
		return UNIO_OK;
	}
	rx->desc[i] = data;
	rx->len[i] = len;
	rx->n++;
	return UNIO_INPROGRESS;
}

/* One window of AM rendezvous a -> b: all sent, then each received once its RTS came. */
static void
am_window(struct api_pair *p, struct am_rx *rx, uint8_t *s, uint8_t *r, const size_t *len,
	  unio_request_t **sreq, unio_status_t *sst, unio_request_t **rreq, unio_status_t *rst)
{
	memset(rx->desc, 0, sizeof(rx->desc));
	rx->n = 0;
	for (uint32_t i = 0; i < WINDOW; i++)
		sst[i] = unio_am_send(p->ep, AM_ID, &i, sizeof(i),
				      s + (size_t)i * (LEN_MIN + LEN_SPAN), len[i], NULL,
				      UNIO_AM_SEND_FLAG_RNDV, &sreq[i]);
	for (int k = 0; k < 1000000 && rx->n < WINDOW; k++) {
		unio_worker_progress(p->a);
		unio_worker_progress(p->b);
	}
	for (unsigned int i = 0; i < WINDOW; i++)
		rst[i] = rx->desc[i] == NULL || rx->len[i] != len[i] ? UNIO_ERR_PROTO :
			 unio_am_recv_data(p->b, rx->desc[i], r + (size_t)i * (LEN_MIN + LEN_SPAN),
					   len[i], NULL, &rreq[i]);
}

/* @p rounds windows of WINDOW sends a -> b (tag, or AM rendezvous with @p am), sizes in one
 * class, every payload verified */
static int
windows(struct api_pair *p, bool am, unsigned int rounds, uint64_t seed)
{
	uint8_t *s = malloc((size_t)WINDOW * (LEN_MIN + LEN_SPAN));
	uint8_t *r = malloc((size_t)WINDOW * (LEN_MIN + LEN_SPAN));
	struct am_rx rx = { .n = 0 };
	int rc = TEST_OK;

	TEST_ASSERT(s != NULL && r != NULL, "malloc");
	if (am && unio_worker_set_am_handler(p->b, AM_ID, am_keep, &rx, 0) != UNIO_OK)
		rc = TEST_FAIL;
	for (unsigned int n = 0; n < rounds && rc == TEST_OK; n++) {
		unio_request_t *sreq[WINDOW] = { NULL }, *rreq[WINDOW] = { NULL };
		unio_status_t sst[WINDOW], rst[WINDOW];
		size_t len[WINDOW];

		for (unsigned int i = 0; i < WINDOW; i++) {
			uint8_t *sb = s + (size_t)i * (LEN_MIN + LEN_SPAN);
			uint8_t *rb = r + (size_t)i * (LEN_MIN + LEN_SPAN);

			len[i] = LEN_MIN + (size_t)((seed + n * 7919u + i * 131u) % LEN_SPAN);
			test_fill(sb, len[i], seed + n * WINDOW + i);
			memset(rb, 0xee, len[i]);
			if (am)
				continue;
			rst[i] = unio_tag_recv(p->b, rb, len[i], 100 + i, UINT64_MAX, NULL,
					       &rreq[i]);
			sst[i] = unio_tag_send(p->ep, sb, len[i], 100 + i, NULL, &sreq[i]);
		}
		if (am)
			am_window(p, &rx, s, r, len, sreq, sst, rreq, rst);
		for (unsigned int i = 0; i < WINDOW; i++) {
			uint8_t *sb = s + (size_t)i * (LEN_MIN + LEN_SPAN);
			uint8_t *rb = r + (size_t)i * (LEN_MIN + LEN_SPAN);

			sst[i] = api_op_wait(p->a, p->b, sst[i], sreq[i]);
			rst[i] = api_op_wait(p->b, p->a, rst[i], rreq[i]);
			if (sst[i] != UNIO_OK || rst[i] != UNIO_OK ||
			    test_checksum(rb, len[i]) != test_checksum(sb, len[i])) {
				TEST_LOG("round %u send %u (%zu bytes): %s / %s%s", n, i, len[i],
					 unio_status_string(sst[i]), unio_status_string(rst[i]),
					 sst[i] == UNIO_OK && rst[i] == UNIO_OK ? ", bytes differ" :
					 "");
				rc = TEST_FAIL;
			}
		}
	}
	if (rx.bad != 0) {
		TEST_LOG("%u AM deliveries not as sent", rx.bad);
		rc = TEST_FAIL;
	}
	free(s);
	free(r);
	return rc;
}

static void
log_info(const unio_ep_t *ep)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (f == NULL)
		return;
	unio_ep_print_info(ep, f);
	fclose(f);
	TEST_LOG("%s", text != NULL ? text : "");
	free(text);
}

/* the choice for the test's size class on @p ep: the scheme of the lower cost per byte */
static int
cheaper(const unio_ep_t *ep)
{
	const struct proto_adapt_class *c =
		&ep->adapt.cls[63 - __builtin_clzll(LEN_MIN) - ep->adapt.shift];

	/* ticks per byte: get's ratio against the pipeline's */
	return c->ticks[PROTO_ADAPT_GET] * c->bytes[PROTO_ADAPT_PIPE] <=
	       c->ticks[PROTO_ADAPT_PIPE] * c->bytes[PROTO_ADAPT_GET] ? PROTO_ADAPT_GET :
	       PROTO_ADAPT_PIPE;
}

static int
measure(bool am)
{
	/* measure: auto's choice by measure on every CPU (auto is the pipeline on AMD) */
	static const char *const ovr[] = { "TLS", "shm,self", "RNDV_SCHEME", "measure", NULL };
	enum { ROUNDS = 60, TURN = 120 };
	struct counts c0, c1, c2, c3;
	struct api_pair p;
	int rc = api_pair_open(&p, ovr, "shm");

	if (rc == TEST_OK)
		rc = p.ep->lane.rndv_adapt && p.ep->lane.rndv_thresh <= LEN_MIN &&
		     p.ep->lane.split_min >= LEN_MIN + LEN_SPAN && rx_ep(&p) != NULL &&
		     rx_ep(&p)->lane.rndv_adapt ? TEST_OK : TEST_FAIL;
	if (rc != TEST_OK) {
		api_pair_close(&p);
		TEST_ASSERT(0, "no measured scheme on the shm lane for %d bytes", LEN_MIN);
	}
	/* the pipeline looks 16 times slower: get carries all but the probes */
	unio_proto_rndv_skew(rx_ep(&p), 1, 16);
	c0 = counts_of(&p);
	rc = windows(&p, am, ROUNDS, 1);
	c1 = counts_of(&p);
	log_info(rx_ep(&p));
	if (rc == TEST_OK && cheaper(rx_ep(&p)) != PROTO_ADAPT_GET)
		rc = TEST_FAIL;
	/*
	 * get 64 times slower: the pipeline takes over once get's cost passed the pipeline's
	 * last (old) measure or a probe measured it anew (within TURN rounds, two probes)
	 */
	unio_proto_rndv_skew(rx_ep(&p), 64, 1);
	if (rc == TEST_OK)
		rc = windows(&p, am, TURN, 2);
	c2 = counts_of(&p);
	if (rc == TEST_OK)
		rc = windows(&p, am, ROUNDS, 3);
	c3 = counts_of(&p);
	log_info(rx_ep(&p));
	if (rc == TEST_OK && cheaper(rx_ep(&p)) != PROTO_ADAPT_PIPE)
		rc = TEST_FAIL;
	api_pair_close(&p);
	TEST_ASSERT_EQ(rc, TEST_OK);
	/* exact totals: every rendezvous counted once, none split at this size */
	TEST_ASSERT_EQ(c1.get + c1.pipe - c0.get - c0.pipe, (uint64_t)ROUNDS * WINDOW);
	TEST_ASSERT_EQ(c3.get + c3.pipe - c1.get - c1.pipe, (uint64_t)(TURN + ROUNDS) * WINDOW);
	TEST_ASSERT_EQ(c3.split, 0);
	/* the receiver delivered each as the sender saw it go */
	TEST_ASSERT_EQ(c3.rx_get - c0.rx_get, c3.get - c0.get);
	TEST_ASSERT_EQ(c3.rx_pipe - c0.rx_pipe, c3.pipe - c0.pipe);
	/* both carried some in each phase, the cheaper one at least 3/4 */
	TEST_ASSERT(c1.pipe - c0.pipe >= 1 && (c1.get - c0.get) * 4 >= ROUNDS * WINDOW * 3,
		    "get phase: %" PRIu64 " get, %" PRIu64 " pipeline", c1.get - c0.get,
		    c1.pipe - c0.pipe);
	TEST_ASSERT(c3.get - c1.get >= 1 && (c3.pipe - c2.pipe) * 4 >= ROUNDS * WINDOW * 3,
		    "pipeline phase: %" PRIu64 " get, %" PRIu64 " pipeline, of which after the "
		    "turn %" PRIu64 " get, %" PRIu64 " pipeline", c3.get - c1.get,
		    c3.pipe - c1.pipe, c3.get - c2.get, c3.pipe - c2.pipe);
	TEST_ASSERT(c3.probe > c0.probe, "no probe");
	return TEST_OK;
}

UNIO_TEST(api_rndv_auto_measure, fast)
{
	TEST_ASSERT_EQ(measure(false), TEST_OK);
	return TEST_OK;
}

/* The same through AM rendezvous: the receiver chooses in unio_am_recv_data() */
UNIO_TEST(api_rndv_auto_measure_am, fast)
{
	TEST_ASSERT_EQ(measure(true), TEST_OK);
	return TEST_OK;
}

/* A forced scheme: every rendezvous by it, no probe, whatever the skew says. */
static int
forced(const char *scheme, int want, bool am)
{
	const char *const ovr[] = { "TLS", "shm,self", "RNDV_SCHEME", scheme, NULL };
	struct counts c = { 0 };
	struct api_pair p;
	int rc = api_pair_open(&p, ovr, "shm");

	if (rc == TEST_OK && (p.ep->lane.rndv_adapt || rx_ep(&p) == NULL ||
			      rx_ep(&p)->lane.rndv_adapt))
		rc = TEST_FAIL;
	if (rc == TEST_OK) {
		unio_proto_rndv_skew(rx_ep(&p), want == PROTO_ADAPT_GET ? 64 : 1,
				     want == PROTO_ADAPT_PIPE ? 64 : 1);
		rc = windows(&p, am, 8, 3);
	}
	if (rc == TEST_OK)
		c = counts_of(&p);
	api_pair_close(&p);
	TEST_ASSERT_EQ(rc, TEST_OK);
	TEST_ASSERT(c.probe == 0 && c.split == 0 &&
		    (want == PROTO_ADAPT_GET ? c.get : c.pipe) == 8 * WINDOW &&
		    (want == PROTO_ADAPT_GET ? c.pipe : c.get) == 0 &&
		    c.rx_get == c.get && c.rx_pipe == c.pipe,
		    "%s: %" PRIu64 " get, %" PRIu64 " pipeline, %" PRIu64 " split, %" PRIu64
		    " probes; received %" PRIu64 " get, %" PRIu64 " pipeline", scheme, c.get,
		    c.pipe, c.split, c.probe, c.rx_get, c.rx_pipe);
	return TEST_OK;
}

UNIO_TEST(api_rndv_auto_forced, fast)
{
	TEST_ASSERT_EQ(forced("get", PROTO_ADAPT_GET, false), TEST_OK);
	TEST_ASSERT_EQ(forced("pipeline", PROTO_ADAPT_PIPE, false), TEST_OK);
	TEST_ASSERT_EQ(forced("get", PROTO_ADAPT_GET, true), TEST_OK);
	TEST_ASSERT_EQ(forced("pipeline", PROTO_ADAPT_PIPE, true), TEST_OK);
	return TEST_OK;
}

/*
 * auto by CPU: on an AMD CPU the pipeline below 256 KiB, not measured (whatever the skew
 * says, no probe, no get), the split from there; elsewhere get or pipeline by measure below
 * 64 KiB, the split from there.  Both sides' lanes, and the data checksummed.
 */
static int
auto_by_cpu(bool am)
{
	static const char *const ovr[] = { "TLS", "shm,self", NULL };
	bool amd = unio_cpu_vendor() == UNIO_CPU_AMD;
	size_t want_split = amd ? 256 * 1024 : 64 * 1024;
	struct api_pair p;
	int rc = api_pair_open(&p, ovr, "shm");

	TEST_ASSERT_EQ(rc, TEST_OK);
	if (p.ep->lane.rndv_adapt == amd || rx_ep(&p) == NULL ||
	    rx_ep(&p)->lane.rndv_adapt == amd || p.ep->lane.split_min != want_split ||
	    rx_ep(&p)->lane.split_min != want_split ||
	    p.ep->lane.rndv_scheme != UNIO_RNDV_SCHEME_PIPELINE) {
		TEST_LOG("amd %d: adapt %d / %d, split from %zu, scheme %d", amd,
			 p.ep->lane.rndv_adapt, rx_ep(&p) ? rx_ep(&p)->lane.rndv_adapt : -1,
			 p.ep->lane.split_min, p.ep->lane.rndv_scheme);
		api_pair_close(&p);
		TEST_ASSERT(0, "auto on this CPU (amd %d): wrong lane", amd);
	}
	api_pair_close(&p);
	if (amd)
		TEST_ASSERT_EQ(forced("auto", PROTO_ADAPT_PIPE, am), TEST_OK);
	return TEST_OK;
}

UNIO_TEST(api_rndv_auto_cpu, fast)
{
	TEST_ASSERT_EQ(auto_by_cpu(false), TEST_OK);
	TEST_ASSERT_EQ(auto_by_cpu(true), TEST_OK);
	return TEST_OK;
}

/*
 * The measure's samples at a change of scheme (entry 39): a pipeline during whose flight a
 * get started is no sample (the get, on the receiver's core, runs before the pipeline's
 * fragments behind it are copied out), one alone is; and a probe burst goes on past its
 * length until it has its samples.  Rendezvous started and delivered without a transfer.
 */
UNIO_TEST(api_rndv_measure_transition, fast)
{
	static const char *const ovr[] = { "TLS", "shm,self", "RNDV_SCHEME", "measure",
					   "RNDV_SPLIT_MIN", "256k", NULL };
	struct unio_request r[4];
	struct proto_adapt_class *c;
	struct api_pair p;
	unio_ep_t *ep;
	bool g[4];
	int rc = api_pair_open(&p, ovr, "shm");

	TEST_ASSERT_EQ(rc, TEST_OK);
	ep = rx_ep(&p);
	if (ep == NULL || !ep->lane.rndv_adapt || ep->lane.rndv_thresh > LEN_MIN) {
		api_pair_close(&p);
		TEST_ASSERT(0, "no measured scheme on the shm lane for %d bytes", LEN_MIN);
	}
	c = &ep->adapt.cls[63 - __builtin_clzll(LEN_MIN) - ep->adapt.shift];
	memset(r, 0, sizeof(r));
	/* a pipeline (no key offered), then a get (the first choice) while it is in flight */
	g[0] = unio_proto_test_rndv_start(&r[0], ep, LEN_MIN, false);
	g[1] = unio_proto_test_rndv_start(&r[1], ep, LEN_MIN, true);
	unio_proto_test_rndv_done(&r[1], true);
	unio_proto_test_rndv_done(&r[0], false);
	TEST_LOG("pipeline with a get started meanwhile: %" PRIu64 " pipeline, %" PRIu64
		 " get bytes sampled", c->bytes[PROTO_ADAPT_PIPE], c->bytes[PROTO_ADAPT_GET]);
	rc = !g[0] && g[1] && c->bytes[PROTO_ADAPT_PIPE] == 0 &&
	     c->bytes[PROTO_ADAPT_GET] == 0 && ep->adapt.flight[0] == 0 &&
	     ep->adapt.flight[1] == 0 ? TEST_OK : TEST_FAIL;
	/* alone, each is a sample */
	if (rc == TEST_OK) {
		g[2] = unio_proto_test_rndv_start(&r[2], ep, LEN_MIN, false);
		unio_proto_test_rndv_done(&r[2], false);
		rc = !g[2] && c->bytes[PROTO_ADAPT_PIPE] == LEN_MIN ? TEST_OK : TEST_FAIL;
	}
	/*
	 * get chosen (cheaper), a pipeline burst whose length ran out without a sample: it goes
	 * on (the pipeline chosen) until half its length (here 2) are samples, then get
	 */
	if (rc == TEST_OK) {
		c->ticks[PROTO_ADAPT_GET] = LEN_MIN;
		c->bytes[PROTO_ADAPT_GET] = LEN_MIN;
		c->ticks[PROTO_ADAPT_PIPE] = 4 * (uint64_t)LEN_MIN;
		c->bytes[PROTO_ADAPT_PIPE] = LEN_MIN;
		c->best = PROTO_ADAPT_GET;
		c->probe = PROTO_ADAPT_PIPE;
		c->probe_left = 0;
		c->probe_want = 2;
		c->probe_got = 0;
		c->probe_more = 8;
		for (unsigned int i = 0; i < 2 && rc == TEST_OK; i++) {
			g[3] = unio_proto_test_rndv_start(&r[3], ep, LEN_MIN, true);
			unio_proto_test_rndv_done(&r[3], g[3]);
			rc = !g[3] ? TEST_OK : TEST_FAIL;
		}
		if (rc == TEST_OK) {
			g[3] = unio_proto_test_rndv_start(&r[3], ep, LEN_MIN, true);
			unio_proto_test_rndv_done(&r[3], g[3]);
			rc = g[3] && c->probe_want == 0 ? TEST_OK : TEST_FAIL;
		}
	}
	log_info(ep);
	api_pair_close(&p);
	TEST_ASSERT_EQ(rc, TEST_OK);
	return TEST_OK;
}
