/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The public API over the ethdev driver: two processes in two network namespaces joined by
 * a veth pair, each with EAL `--vdev net_af_packet0,iface=...` (or net_af_xdp0) and
 * UNIO_TLS=ethdev,self, connect through a listener (the control connection is kernel TCP)
 * and exchange tagged messages of every size class with wildcard receives (echoed back,
 * payloads checksummed both ways), active messages eager and by rendezvous, and put / get
 * (every size class, up to 4 MiB, read back and checked at the owner, a stale and a forged
 * key refused by the target).  The lane must be the ethdev one.
 *
 * af_packet shares the veth with the kernel, so the control connection runs over it (kernel
 * addresses 10.77.0.1/.2, the DPDK ifaces 10.77.0.11/.12); af_xdp takes every frame of the
 * veth's queue, so the control connection runs over a second veth pair (10.78.0.1/.2).
 * memif joins two processes of the root namespace (control connection on loopback).
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_common.h>

#include "../api/api_common.h"
#include "ethdev_priv.h"
#include "unio_am.h"
#include "unio_api_priv.h"
#include "unio_env.h"
#include "unio_proto.h"
#include "unio_rma.h"
#include "unio_test.h"

#define MIB ((size_t)1024 * 1024)
#define DONE_TAG  0xfeedfacecafe0003ull
#define AM_ID     7

static const size_t am_sizes[] = { 0, 1, 100, 1300, 1400, 1500, 9000, 65536, 200000, MIB };

/* ---- the tagged echo: role 0 sends every size class, role 1 echoes with wildcards ---- */

static int
tag_drive(unio_worker_t *w, unio_ep_t *ep, uint64_t seed)
{
	if (api_echo_drive(w, ep, 4 * MIB, seed) != TEST_OK)
		return TEST_FAIL;
	TEST_LOG("tagged: size classes (0 .. 4 MiB) echoed and verified");
	return TEST_OK;
}

/* ---- active messages: each side sends every size eagerly where it fits and by rndv ---- */

struct am_state {
	unio_worker_t *w;
	unsigned int got;        /* messages verified */
	unsigned int bad;
	unsigned int rndv;       /* of them by rendezvous */
	unsigned int pending;    /* rendezvous receives in flight */
	uint8_t *rbuf[2 * RTE_DIM(am_sizes)];
	uint64_t want[2 * RTE_DIM(am_sizes)];
	size_t rlen[2 * RTE_DIM(am_sizes)];
	unio_request_t *rreq[2 * RTE_DIM(am_sizes)];
	unsigned int n_rreq;
};

static struct am_state ams;

struct am_hdr {
	uint64_t seed;
	uint64_t len;
	uint32_t idx;
};

static unio_status_t
am_cb(void *arg, const void *header, size_t header_len, void *data, size_t length,
      const struct unio_am_recv_param *param)
{
	struct am_state *s = arg;
	struct am_hdr h;
	uint8_t *want;

	if (header_len != sizeof(h)) {
		s->bad++;
		return UNIO_OK;
	}
	memcpy(&h, header, sizeof(h));
	if (h.len != length || s->n_rreq >= RTE_DIM(s->rbuf)) {
		s->bad++;
		return UNIO_OK;
	}
	if (param->recv_attr & UNIO_AM_RECV_ATTR_FLAG_RNDV) {
		unsigned int k = s->n_rreq++;
		unio_status_t st;

		s->rbuf[k] = malloc(length + 1);
		s->want[k] = h.seed;
		s->rlen[k] = length;
		s->rndv++;
		st = unio_am_recv_data(s->w, data, s->rbuf[k], length, NULL, &s->rreq[k]);
		if (st == UNIO_OK)
			s->rreq[k] = NULL;
		else if (st != UNIO_INPROGRESS)
			s->bad++;
		return UNIO_OK;
	}
	want = malloc(length + 1);
	test_fill(want, length, h.seed);
	if (test_checksum(want, length) == test_checksum(data, length) &&
	    (length == 0 || memcmp(want, data, length) == 0))
		s->got++;
	else
		s->bad++;
	free(want);
	return UNIO_OK;
}

/* Send every AM size eagerly (where the lane takes it) and by rendezvous. */
static int
am_send_all(unio_worker_t *w, unio_ep_t *ep, int role, unsigned int *n_sent)
{
	unio_request_t *req[2 * RTE_DIM(am_sizes)];
	struct am_hdr hdr[2 * RTE_DIM(am_sizes)];
	uint8_t *buf[2 * RTE_DIM(am_sizes)];
	unsigned int n = 0, n_eager = 0;

	for (unsigned int i = 0; i < RTE_DIM(am_sizes); i++)
		for (unsigned int rndv = 0; rndv < 2; rndv++) {
			unsigned int flags = rndv ? UNIO_AM_SEND_FLAG_RNDV :
					     UNIO_AM_SEND_FLAG_EAGER;
			unio_status_t st;

			hdr[n] = (struct am_hdr){ .seed = 0xa11ull * (n + 1) + (uint64_t)role,
						  .len = am_sizes[i], .idx = n };
			buf[n] = malloc(am_sizes[i] + 1);
			TEST_ASSERT(buf[n] != NULL, "malloc");
			test_fill(buf[n], am_sizes[i], hdr[n].seed);
			st = unio_am_send(ep, AM_ID, &hdr[n], sizeof(hdr[n]), buf[n], am_sizes[i],
					  NULL, flags, &req[n]);
			if (st == UNIO_ERR_UNSUPPORTED && !rndv) {
				free(buf[n]);      /* too large for an eager message on this lane */
				continue;
			}
			TEST_ASSERT(st == UNIO_OK || st == UNIO_INPROGRESS, "am %zu B %s: %s",
				    am_sizes[i], rndv ? "rndv" : "eager", unio_status_string(st));
			if (st == UNIO_OK)
				req[n] = NULL;
			n_eager += !rndv;
			n++;
		}
	for (unsigned int i = 0; i < n; i++) {
		if (req[i] != NULL)
			TEST_ASSERT_STATUS(unio_request_wait(w, req[i], NULL), UNIO_OK);
		free(buf[i]);
	}
	TEST_ASSERT(n_eager >= 6, "only %u eager AMs fit the lane", n_eager);
	*n_sent = n;
	return TEST_OK;
}

static int
am_run(unio_worker_t *w, unio_ep_t *ep, int role)
{
	unsigned int n_sent = 0;
	double end;
	uint32_t peer_sent = 0, ours;
	struct unio_recv_info info;

	ams.w = w;
	TEST_ASSERT_STATUS(unio_worker_set_am_handler(w, AM_ID, am_cb, &ams, 0), UNIO_OK);
	TEST_ASSERT(am_send_all(w, ep, role, &n_sent) == TEST_OK, "am sends");
	ours = n_sent;
	TEST_ASSERT_STATUS(api_send(w, ep, &ours, sizeof(ours), DONE_TAG, 0), UNIO_OK);
	TEST_ASSERT_STATUS(api_recv(w, &peer_sent, sizeof(peer_sent), DONE_TAG, UINT64_MAX,
				    &info), UNIO_OK);
	end = test_now_s() + 30;
	for (;;) {
		unsigned int done = 0;

		unio_worker_progress(w);
		for (unsigned int k = 0; k < ams.n_rreq; k++)
			done += ams.rreq[k] == NULL ||
				unio_request_test(ams.rreq[k], NULL) != UNIO_INPROGRESS;
		if ((ams.got + ams.rndv >= peer_sent && done == ams.n_rreq) || test_now_s() > end)
			break;
	}
	for (unsigned int k = 0; k < ams.n_rreq; k++) {
		if (ams.rreq[k] != NULL) {
			TEST_ASSERT_STATUS(unio_request_test(ams.rreq[k], NULL), UNIO_OK);
			unio_request_free(ams.rreq[k]);
		}
		uint8_t *want = malloc(ams.rlen[k] + 1);

		test_fill(want, ams.rlen[k], ams.want[k]);
		TEST_ASSERT(memcmp(want, ams.rbuf[k], ams.rlen[k]) == 0,
			    "rendezvous AM of %zu bytes differs", ams.rlen[k]);
		free(want);
		free(ams.rbuf[k]);
	}
	TEST_ASSERT_EQ(ams.bad, 0);
	TEST_ASSERT_EQ(ams.got + ams.rndv, peer_sent);
	TEST_ASSERT(ams.rndv >= RTE_DIM(am_sizes), "rendezvous AMs %u", ams.rndv);
	TEST_LOG("role %d: AMs received %u eager + %u rendezvous, all verified", role, ams.got,
		 ams.rndv);
	return TEST_OK;
}

/* ---- put / get: each side maps a region, the other writes and reads it ---- */

#define RMA_LEN  (4 * MIB + 4096)
#define RKEY_TAG 0xfeedfacecafe0004ull
#define SYNC_TAG 0xfeedfacecafe0005ull

struct rkey_msg {
	uint64_t addr;
	uint8_t key[256];
};

static const struct { size_t off, len; } puts_done[] = {
	{ 0, 1 }, { 17, 1000 }, { 4096, 65536 + 3 }, { 200000, 300001 }, { 1 * MIB, 3 * MIB + 5 },
};

/* What the region of @p role holds once its peer's puts landed. */
static void
rma_expect(uint8_t *buf, int role)
{
	test_fill(buf, RMA_LEN, 0x5151ull + (uint64_t)role);
	for (unsigned int i = 0; i < RTE_DIM(puts_done); i++)
		test_fill(buf + puts_done[i].off, puts_done[i].len,
			  0x9090ull + i + (uint64_t)!role);
}

/* @p req_p: read after the call that set it (argument order is unspecified) */
static unio_status_t
rma_wait(unio_worker_t *w, unio_status_t st, unio_request_t **req_p)
{
	return st == UNIO_INPROGRESS ? unio_request_wait(w, *req_p, NULL) : st;   /* frees it */
}

static int
sync_peer(unio_worker_t *w, unio_ep_t *ep, uint32_t step)
{
	struct unio_recv_info info;
	uint32_t got = 0;

	TEST_ASSERT_STATUS(api_send(w, ep, &step, sizeof(step), SYNC_TAG, 0), UNIO_OK);
	TEST_ASSERT_STATUS(api_recv(w, &got, sizeof(got), SYNC_TAG, UINT64_MAX, &info), UNIO_OK);
	TEST_ASSERT_EQ(got, step);
	return TEST_OK;
}

/*
 * A 1 MiB get and, before it completes, a put into the end of its range: the target reads
 * the get's data from the registered memory as its frames go out (a window is far less than
 * 1 MiB), so the put arrives while most of the range is still to be sent; the get must
 * return the bytes from before the put (operations of an ep apply in issue order).  The
 * put is undone afterwards.  @p want holds the peer's region.
 */
static int
get_then_put(unio_worker_t *w, unio_ep_t *ep, const struct rkey_msg *theirs, unio_rkey_t *rkey,
	     uint8_t *local, const uint8_t *want)
{
	static uint8_t junk[64 * 1024];
	const size_t at = MIB - sizeof(junk);
	unio_request_t *g = NULL, *p = NULL;
	unio_status_t sg, sp;
	size_t frag, chunk;

	struct unio_tl_iface *ifc = api_worker_iface(w, "ethdev", NULL);
	struct unio_tl_ethdev_stats s0, s1;

	TEST_ASSERT(ifc != NULL, "no ethdev iface");
	memset(junk, 0xa5, sizeof(junk));
	memset(local, 0, MIB);
	TEST_ASSERT_STATUS(unio_tl_ethdev_stats(ifc, &s0), UNIO_OK);
	sg = unio_get(ep, local, MIB, theirs->addr, rkey, NULL, &g);
	sp = unio_put(ep, junk, sizeof(junk), theirs->addr + at, rkey, NULL, &p);
	TEST_ASSERT_STATUS(rma_wait(w, sg, &g), UNIO_OK);
	TEST_ASSERT_STATUS(rma_wait(w, sp, &p), UNIO_OK);
	TEST_ASSERT(memcmp(local, want, MIB) == 0, "a later put changed what a get returned");
	/*
	 * The answer: GET_RESP messages of whole frames (eth_rma_chunk(): 46 frames of 1408
	 * bytes at MTU 1500, 16 of them a MiB), each copied straight to local as its frames
	 * arrived, and the rest (12,864 bytes at 1500: ten frames, copied straight too); a rest
	 * that fits one frame goes the ordinary way.  With 64 KiB - 36 byte chunks it was 16
	 * and a 576-byte rest.
	 */
	TEST_ASSERT_STATUS(unio_tl_ethdev_stats(ifc, &s1), UNIO_OK);
	frag = ifc->attr.max_short + sizeof(uint64_t);
	chunk = eth_rma_chunk(frag);
	TEST_ASSERT_EQ((chunk + sizeof(struct eth_rma_hdr)) % frag, 0);
	TEST_ASSERT_EQ(s1.rx_get_direct - s0.rx_get_direct,
		       MIB / chunk + (MIB % chunk + sizeof(struct eth_rma_hdr) > frag));
	TEST_ASSERT_STATUS(rma_wait(w, unio_get(ep, local, sizeof(junk), theirs->addr + at, rkey,
						 NULL, &g), &g), UNIO_OK);
	TEST_ASSERT(memcmp(local, junk, sizeof(junk)) == 0, "the put did not land");
	TEST_ASSERT_STATUS(rma_wait(w, unio_put(ep, want + at, sizeof(junk), theirs->addr + at,
						 rkey, NULL, &p), &p), UNIO_OK);
	return TEST_OK;
}

/*
 * A forged key: the ethdev part of the peer's key with the right slot and generation but
 * another cookie (struct eth_rkey: base, len, slot, generation, cookie).  It unpacks (only
 * the target knows its cookies), and the target refuses put and get: nothing is written
 * (the owner checks its whole region later).
 */
static int
forged_key(unio_worker_t *w, unio_ep_t *ep, const struct rkey_msg *theirs, size_t plen)
{
	uint64_t pat[2] = { theirs->addr, RMA_LEN };
	uint8_t forged[sizeof(theirs->key)], junk[64] = { 0 };
	unio_request_t *req = NULL;
	unio_rkey_t *fk = NULL;
	size_t at = SIZE_MAX;

	memcpy(forged, theirs->key, plen);
	/* the first key after the driver name "ethdev" with the region's base and length */
	for (size_t i = 0, drv = SIZE_MAX; i + 32 <= plen && at == SIZE_MAX; i++) {
		if (drv == SIZE_MAX && memcmp(forged + i, "ethdev", 7) == 0)
			drv = i;
		if (drv != SIZE_MAX && memcmp(forged + i, pat, sizeof(pat)) == 0)
			at = i;
	}
	TEST_ASSERT(at != SIZE_MAX, "no ethdev key in the packed key");
	forged[at + 24] ^= 0x5a;
	TEST_ASSERT_STATUS(unio_ep_rkey_unpack(ep, forged, plen, &fk), UNIO_OK);
	TEST_ASSERT_STATUS(rma_wait(w, unio_put(ep, junk, sizeof(junk), theirs->addr, fk, NULL,
						&req), &req), UNIO_ERR_INVALID_ADDR);
	TEST_ASSERT_STATUS(rma_wait(w, unio_get(ep, junk, sizeof(junk), theirs->addr, fk, NULL,
						&req), &req), UNIO_ERR_INVALID_ADDR);
	unio_rkey_destroy(fk);
	return TEST_OK;
}

/*
 * The put messages of @p len bytes a zero-copy put sends from the user's memory: chunks of
 * eth_rma_chunk() bytes (the last one shorter) of at least ETH_ZCOPY_MIN.
 */
static uint64_t
put_zc_chunks(const struct unio_tl_iface *ifc, size_t len)
{
	size_t chunk = eth_rma_chunk(ifc->attr.max_short + sizeof(uint64_t));
	uint64_t n = len / chunk * (chunk >= ETH_ZCOPY_MIN);

	return n + (len % chunk >= ETH_ZCOPY_MIN);
}

/* @p zc: the PMD sends mbuf chains (af_packet, memif), so puts go zero copy */
static int
rma_run(unio_worker_t *w, unio_ep_t *ep, int role, bool zc)
{
	struct unio_tl_iface *ifc = api_worker_iface(w, "ethdev", NULL);
	struct unio_tl_ethdev_stats s0, s1;
	uint64_t n_zc = 0;
	struct unio_mem_map_params mp = { .field_mask = UNIO_MEM_MAP_PARAM_ADDRESS |
							UNIO_MEM_MAP_PARAM_LENGTH,
					  .length = RMA_LEN };
	uint8_t *region = malloc(RMA_LEN), *local = malloc(RMA_LEN), *want = malloc(RMA_LEN);
	struct rkey_msg mine = { 0 }, theirs;
	struct unio_recv_info info;
	unio_rkey_t *rkey = NULL;
	unio_request_t *req = NULL;
	unio_mem_h memh;
	void *packed;
	size_t plen;

	TEST_ASSERT(region != NULL && local != NULL && want != NULL, "malloc");
	TEST_ASSERT(ifc != NULL, "no ethdev iface");
	test_fill(region, RMA_LEN, 0x5151ull + (uint64_t)role);
	mp.address = region;
	TEST_ASSERT_STATUS(unio_mem_map(w, &mp, &memh), UNIO_OK);
	TEST_ASSERT_STATUS(unio_rkey_pack(memh, &packed, &plen), UNIO_OK);
	TEST_ASSERT(plen <= sizeof(mine.key), "rkey of %zu bytes", plen);
	mine.addr = (uint64_t)(uintptr_t)region;
	memcpy(mine.key, packed, plen);
	unio_rkey_buffer_release(packed);
	TEST_ASSERT_STATUS(api_send(w, ep, &mine, sizeof(mine), RKEY_TAG, 0), UNIO_OK);
	TEST_ASSERT_STATUS(api_recv(w, &theirs, sizeof(theirs), RKEY_TAG, UINT64_MAX, &info),
			   UNIO_OK);
	TEST_ASSERT_STATUS(unio_ep_rkey_unpack(ep, theirs.key, plen, &rkey), UNIO_OK);
	TEST_ASSERT(forged_key(w, ep, &theirs, plen) == TEST_OK, "forged key");

	/* get the whole region in pieces of the driver's largest get, and check it */
	test_fill(want, RMA_LEN, 0x5151ull + (uint64_t)!role);
	memset(local, 0, RMA_LEN);
	for (size_t off = 0; off < RMA_LEN; off += MIB) {
		size_t n = RTE_MIN(MIB, RMA_LEN - off);

		TEST_ASSERT_STATUS(rma_wait(w, unio_get(ep, local + off, n, theirs.addr + off, rkey,
							 NULL, &req), &req), UNIO_OK);
	}
	TEST_ASSERT(memcmp(local, want, RMA_LEN) == 0, "get of %zu bytes: data differs", RMA_LEN);
	TEST_ASSERT(get_then_put(w, ep, &theirs, rkey, local, want) == TEST_OK, "get, then put");
	/*
	 * puts of every size class, then a get of each range behind them (ordered); local is
	 * refilled for the next put as soon as one completes, so a put that completed while
	 * its zero-copy frames could still be read (a retransmission) would land wrong bytes
	 */
	TEST_ASSERT_STATUS(unio_tl_ethdev_stats(ifc, &s0), UNIO_OK);
	for (unsigned int i = 0; i < RTE_DIM(puts_done); i++) {
		size_t off = puts_done[i].off, len = puts_done[i].len;

		test_fill(local, len, 0x9090ull + i + (uint64_t)role);
		TEST_ASSERT_STATUS(rma_wait(w, unio_put(ep, local, len, theirs.addr + off, rkey,
							 NULL, &req), &req), UNIO_OK);
		n_zc += zc ? put_zc_chunks(ifc, len) : 0;
	}
	/* every chunk of 8 KiB and more went from local itself (af_xdp: no mbuf chains) */
	TEST_ASSERT_STATUS(unio_tl_ethdev_stats(ifc, &s1), UNIO_OK);
	TEST_ASSERT_EQ(s1.tx_zcopy_put - s0.tx_zcopy_put, n_zc);
	TEST_ASSERT_EQ(s1.tx_zcopy - s0.tx_zcopy, n_zc);
	for (unsigned int i = 0; i < RTE_DIM(puts_done); i++) {
		size_t off = puts_done[i].off, len = RTE_MIN(puts_done[i].len, (size_t)MIB);

		memset(local, 0, len);
		TEST_ASSERT_STATUS(rma_wait(w, unio_get(ep, local, len, theirs.addr + off, rkey,
							 NULL, &req), &req), UNIO_OK);
		test_fill(want, len, 0x9090ull + i + (uint64_t)role);
		TEST_ASSERT(memcmp(local, want, len) == 0, "get after put %u differs", i);
	}
	/* outside the key's range: refused before anything is sent */
	TEST_ASSERT_STATUS(unio_put(ep, local, 2, theirs.addr + RMA_LEN - 1, rkey, NULL, &req),
			   UNIO_ERR_OUT_OF_RANGE);
	TEST_ASSERT_STATUS(unio_ep_flush(ep, NULL, NULL), UNIO_OK);
	TEST_ASSERT(sync_peer(w, ep, 1) == TEST_OK, "sync 1");
	/* the peer's puts landed in our region, and nothing else changed */
	rma_expect(want, role);
	TEST_ASSERT(memcmp(region, want, RMA_LEN) == 0, "our region after the peer's puts");
	/* a stale key: the peer unmapped its region; the target refuses, nothing is touched */
	TEST_ASSERT_STATUS(unio_mem_unmap(w, memh), UNIO_OK);
	TEST_ASSERT(sync_peer(w, ep, 2) == TEST_OK, "sync 2");
	TEST_ASSERT_STATUS(rma_wait(w, unio_get(ep, local, 64, theirs.addr, rkey, NULL, &req),
				    &req), UNIO_ERR_INVALID_ADDR);
	TEST_ASSERT_STATUS(rma_wait(w, unio_put(ep, local, 64, theirs.addr, rkey, NULL, &req),
				    &req), UNIO_ERR_INVALID_ADDR);
	TEST_ASSERT(sync_peer(w, ep, 3) == TEST_OK, "sync 3");
	TEST_ASSERT(memcmp(region, want, RMA_LEN) == 0, "a stale key's put changed the region");
	unio_rkey_destroy(rkey);
	free(region);
	free(local);
	free(want);
	TEST_LOG("role %d: put / get over ethdev: %zu puts, %zu bytes got in 1 MiB gets, stale key "
		 "refused, all verified", role, RTE_DIM(puts_done), RMA_LEN);
	return TEST_OK;
}

/* ---- the processes ---- */

struct conn {
	unio_context_t *ctx;
	unio_worker_t *w;
	unio_ep_t *ep;
	unio_listener_t *l;
	bool cm;                /* by the DPDK address: the handler rejects the first request */
	unsigned int n_req;
	struct sockaddr_in peer; /* cm: the client's address from the request */
	unio_status_t reject_st;
};

static void
on_conn(unio_conn_request_t *cr, void *arg)
{
	struct conn *c = arg;
	struct unio_ep_params p = { .field_mask = UNIO_EP_PARAM_CONN_REQUEST, .conn_request = cr };
	struct sockaddr_storage peer;
	unio_status_t st;

	if (c->cm) {
		unio_conn_request_query(cr, &peer);
		memcpy(&c->peer, &peer, sizeof(c->peer));
		if (c->n_req++ == 0) {
			c->reject_st = unio_listener_reject(c->l, cr);
			return;
		}
	}
	c->ep = unio_ep_create(c->w, &p, &st);
	if (c->ep == NULL)
		TEST_LOG("accept: %s", unio_status_string(st));
}

/* ep_create by @p a, again while nothing answers at that address yet */
static unio_ep_t *
dial(struct conn *c, const struct sockaddr_in *a, double end, unio_status_t *st)
{
	struct unio_ep_params p = { .field_mask = UNIO_EP_PARAM_SOCKADDR,
				    .sockaddr = (const struct sockaddr *)a,
				    .addrlen = sizeof(*a) };
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	unio_ep_t *ep = NULL;

	while (ep == NULL && test_now_s() < end) {
		ep = unio_ep_create(c->w, &p, st);
		if (ep == NULL && *st != UNIO_ERR_UNREACHABLE)
			break;
		nanosleep(&ts, NULL);
	}
	return ep;
}

/*
 * The client by the listener's DPDK address, with no kernel socket anywhere: a peer of
 * another wire version is refused, the handler rejects the first request and accepts the
 * second.
 */
static int
dial_cm(struct conn *c, const struct sockaddr_in *a, double end)
{
	unio_status_t st;
	unio_ep_t *ep;

	unio_proto_test_set_wire_version(UNIO_WIRE_VERSION + 1);
	ep = dial(c, a, end, &st);
	unio_proto_test_set_wire_version(0);
	TEST_ASSERT(ep == NULL && st == UNIO_ERR_VERSION_MISMATCH, "another wire version: %s",
		    unio_status_string(st));
	ep = dial(c, a, end, &st);
	TEST_ASSERT(ep == NULL && st == UNIO_ERR_REJECTED, "first request: %s",
		    unio_status_string(st));
	c->ep = dial(c, a, end, &st);
	TEST_ASSERT(c->ep != NULL, "second request: %s", unio_status_string(st));
	TEST_LOG("client: wire version refused, first request rejected, second accepted");
	return TEST_OK;
}

/*
 * Out of band: each side writes its worker address to @p prefix.ROLE, reads the other's and
 * makes its ep from it (UNIO_EP_PARAM_WORKER_ADDR), as UCX applications exchange addresses
 * through MPI or a file.  Both eps then run over the ethdev lane between the two ifaces.
 */
static int
connect_oob(struct conn *c, int role, const char *prefix)
{
	struct unio_ep_params p = { .field_mask = UNIO_EP_PARAM_WORKER_ADDR };
	static uint8_t theirs[8192];
	char path[256], tmp[272];
	double end = test_now_s() + 20;
	unio_status_t st;
	size_t len = 0;
	void *mine;
	FILE *f;

	TEST_ASSERT_STATUS(unio_worker_get_address(c->w, &mine, &len), UNIO_OK);
	snprintf(path, sizeof(path), "%s.%d", prefix, role);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "wb");
	TEST_ASSERT(f != NULL && fwrite(mine, 1, len, f) == len && fclose(f) == 0 &&
		    rename(tmp, path) == 0, "writing %s", path);
	unio_worker_release_address(c->w, mine);
	snprintf(path, sizeof(path), "%s.%d", prefix, 1 - role);
	while (access(path, F_OK) != 0 && test_now_s() < end)
		usleep(10000);
	f = fopen(path, "rb");
	TEST_ASSERT(f != NULL, "the peer's address never came (%s)", path);
	len = fread(theirs, 1, sizeof(theirs), f);
	fclose(f);
	p.worker_addr = theirs;
	p.worker_addr_len = len;
	c->ep = unio_ep_create(c->w, &p, &st);
	TEST_ASSERT(c->ep != NULL, "ep from the peer's worker address: %s", unio_status_string(st));
	while (c->ep->state == EP_CONNECTING && test_now_s() < end)
		unio_worker_progress(c->w);
	TEST_ASSERT(c->ep->state == EP_CONNECTED, "ep by worker address: state %u",
		    c->ep->state);
	TEST_ASSERT(strcmp(c->ep->lane.iface->driver->name, "ethdev") == 0, "lane %s",
		    c->ep->lane.iface->driver->name);
	TEST_LOG("role %d: connected by the peer's worker address (%zu bytes)", role, len);
	return TEST_OK;
}

static int
connect_ctl(struct conn *c, int role, const char *ctl_ip, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	unio_status_t st = UNIO_OK;
	double end = test_now_s() + 20;

	a.sin_addr.s_addr = inet_addr(ctl_ip);
	if (role == 0) {
		struct unio_listener_params lp = {
			.field_mask = UNIO_LISTENER_PARAM_SOCKADDR | UNIO_LISTENER_PARAM_HANDLER,
			.sockaddr = (struct sockaddr *)&a, .addrlen = sizeof(a),
			.conn_handler = on_conn, .arg = c,
		};

		c->l = unio_listener_create(c->w, &lp, &st);
		TEST_ASSERT(c->l != NULL, "listen on %s:%d: %s", ctl_ip, port,
			    unio_status_string(st));
		if (c->cm) {   /* the DPDK iface's own address: no kernel socket bound */
			struct sockaddr_storage q;
			struct sockaddr_in *qi = (struct sockaddr_in *)&q;

			TEST_ASSERT_STATUS(unio_listener_query(c->l, &q), UNIO_OK);
			TEST_ASSERT(qi->sin_family == AF_INET && qi->sin_port == a.sin_port &&
				    qi->sin_addr.s_addr == a.sin_addr.s_addr, "listener address");
			TEST_ASSERT(c->l->fd < 0 && c->l->iface != NULL &&
				    strcmp(c->l->iface->driver->name, "ethdev") == 0,
				    "the listener has a kernel socket");
		}
		while (c->ep == NULL && test_now_s() < end)
			unio_worker_progress(c->w);
		if (c->cm) {
			char ip[INET_ADDRSTRLEN];

			inet_ntop(AF_INET, &c->peer.sin_addr, ip, sizeof(ip));
			TEST_ASSERT(c->n_req == 2, "%u requests reached the handler", c->n_req);
			TEST_ASSERT_STATUS(c->reject_st, UNIO_OK);
			TEST_ASSERT(c->peer.sin_family == AF_INET &&
				    ntohs(c->peer.sin_port) == (uint16_t)port &&
				    (ntohl(c->peer.sin_addr.s_addr) & 0xff) == 2,
				    "request from %s:%u", ip,
				    ntohs(c->peer.sin_port));
		}
	} else if (c->cm) {
		TEST_ASSERT(dial_cm(c, &a, end) == TEST_OK, "dial by the DPDK address");
	} else {
		c->ep = dial(c, &a, end, &st);
	}
	TEST_ASSERT(c->ep != NULL, "role %d: no connection: %s", role, unio_status_string(st));
	TEST_ASSERT(strcmp(c->ep->lane.iface->driver->name, "ethdev") == 0, "lane %s",
		    c->ep->lane.iface->driver->name);
	return TEST_OK;
}

/*
 * Everything we sent is acked (flush), then each side waits for the other's goodbye and
 * keeps progressing a little, so that the acks of the goodbyes cross too (memif drops what
 * is still in its rings when a side closes its port).  Then neither needs anything from the
 * other, and a forced close loses nothing.
 */
static int
goodbye(struct conn *c)
{
	struct unio_recv_info info;
	uint32_t bye = 0xb7e, got = 0;

	TEST_ASSERT_STATUS(unio_ep_flush(c->ep, NULL, NULL), UNIO_OK);
	TEST_ASSERT_STATUS(api_send(c->w, c->ep, &bye, sizeof(bye), DONE_TAG + 1, 0), UNIO_OK);
	TEST_ASSERT_STATUS(api_recv(c->w, &got, sizeof(got), DONE_TAG + 1, UINT64_MAX, &info),
			   UNIO_OK);
	TEST_ASSERT_EQ(got, bye);
	for (double end = test_now_s() + 0.1; test_now_s() < end;)
		unio_worker_progress(c->w);
	return TEST_OK;
}

/*
 * Without the kernel there is no control connection: the client's close with flush sends
 * CLOSE over the lane, and the server's endpoint learns of it (sends then fail at once
 * instead of after the driver's timeouts; its own close with flush completes).
 */
static int
close_cm(struct conn *c, int role)
{
	uint32_t x = 1;
	unio_request_t *req = NULL;

	if (role == 1) {
		TEST_ASSERT_STATUS(unio_ep_close(c->ep, UNIO_EP_CLOSE_FLUSH, NULL), UNIO_OK);
		c->ep = NULL;
		for (double end = test_now_s() + 0.3; test_now_s() < end;)
			unio_worker_progress(c->w);   /* the CLOSE is acked meanwhile */
		return TEST_OK;
	}
	for (double end = test_now_s() + 5; !c->ep->remote_closed && test_now_s() < end;)
		unio_worker_progress(c->w);
	TEST_ASSERT(c->ep->remote_closed, "the client's CLOSE did not arrive");
	TEST_ASSERT_STATUS(unio_tag_send(c->ep, &x, sizeof(x), DONE_TAG + 2, NULL, &req),
			   UNIO_ERR_CONNECTION_RESET);
	TEST_ASSERT_STATUS(unio_ep_close(c->ep, UNIO_EP_CLOSE_FLUSH, NULL), UNIO_OK);
	c->ep = NULL;
	TEST_LOG("server: the client's CLOSE arrived over the lane");
	return TEST_OK;
}

/* argv: netns vdev dpdk_ip role ctl_ip|addr_prefix ctl_port ready_file|- [cm|oob] */
UNIO_TEST_CHILD(ethdev_api_peer)
{
	static struct conn c;
	struct unio_context_params cp = {
		.field_mask = UNIO_CONTEXT_PARAM_FEATURES,
		.features = UNIO_FEATURE_TAG | UNIO_FEATURE_AM | UNIO_FEATURE_RMA,
	};
	char vdev_arg[256], lcore[8];
	char *eal[] = { (char *)"unio-test", (char *)"-l", lcore, vdev_arg, (char *)"--" };
	unio_status_t st;
	int role, rc;

	TEST_ASSERT(argc == 7 || argc == 8, "argc %d", argc);
	role = atoi(argv[3]);
	c.cm = argc == 8 && strcmp(argv[7], "cm") == 0;
	TEST_ASSERT(test_enter_netns(argv[0]) == 0, "setns %s: %s", argv[0], strerror(errno));
	snprintf(vdev_arg, sizeof(vdev_arg), "--vdev=%s", argv[1]);
	snprintf(lcore, sizeof(lcore), "%d", role);
	setenv("UNIO_TLS", "ethdev,self", 1);
	setenv("UNIO_ETHDEV_IP", argv[2], 1);
	/* this shared 2-core host delays the kernel's forwarding by milliseconds */
	setenv("UNIO_ETHDEV_TARGET_DELAY", "5ms", 1);
	TEST_ASSERT(unio_env_init((int)RTE_DIM(eal), eal) >= 0, "EAL init failed");
	c.ctx = unio_context_create(&cp, &st);
	TEST_ASSERT(c.ctx != NULL, "context: %s", unio_status_string(st));
	c.w = unio_worker_create(c.ctx, NULL, &st);
	TEST_ASSERT(c.w != NULL, "worker: %s", unio_status_string(st));
	if (strcmp(argv[6], "-") != 0)
		close(open(argv[6], O_CREAT | O_WRONLY | O_CLOEXEC, 0600));   /* port started */
	if (argc == 8 && strcmp(argv[7], "oob") == 0)
		rc = connect_oob(&c, role, argv[4]);
	else
		rc = connect_ctl(&c, role, argv[4], atoi(argv[5]));
	if (rc == TEST_OK)
		rc = role == 0 ? tag_drive(c.w, c.ep, 0x5eedull) :
		     api_echo_serve(c.w, c.ep, 0x5eedull);
	if (rc == TEST_OK)
		rc = am_run(c.w, c.ep, role);
	if (rc == TEST_OK)
		rc = rma_run(c.w, c.ep, role, strstr(argv[1], "af_xdp") == NULL);
	if (rc == TEST_OK)
		rc = goodbye(&c);
	if (rc == TEST_OK && c.cm)
		rc = close_cm(&c, role);
	if (role == 0 && strcmp(argv[6], "-") != 0) {
		/*
		 * memif: the client closes first, and the server does not poll meanwhile: the
		 * PMD's rx/tx on a ring its control thread is unmapping (the peer left) crashed
		 * about once in 20 runs.  The parent signals the client's exit.
		 */
		char done[300];

		snprintf(done, sizeof(done), "%s.done", argv[6]);
		for (int i = 0; i < 3000 && access(done, F_OK) != 0; i++)
			usleep(10000);
	}
	if (c.ep != NULL)
		unio_ep_close(c.ep, UNIO_EP_CLOSE_FORCE, NULL);
	unio_listener_destroy(c.l);
	unio_worker_destroy(c.w);
	unio_context_destroy(c.ctx);
	return rc;
}

/* ---- the tests ---- */

/*
 * @p cm: the listener and the client use the DPDK address 10.77.0.1:13337 (the iface's
 * UNIO_ETHDEV_PORT), and the kernel has no address at all: the handshake runs over the
 * driver's own channel.
 */
static int
api_pair(const char *pmd, bool cm)
{
	bool xdp = strcmp(pmd, "net_af_xdp") == 0;
	const char *ctl_a = cm ? "10.77.0.1" : xdp ? "10.78.0.1" : "10.77.0.1";
	char name[32], na[40], nb[40], port_s[16];
	int rc = TEST_FAIL, ra = -1, rb = -1;
	pid_t a, b;

	if (!test_can_netns())
		TEST_SKIP_BECAUSE("needs root and iproute2 network namespaces");
	snprintf(name, sizeof(name), "unioapi-%d", getpid());
	snprintf(na, sizeof(na), "%s-a", name);
	snprintf(nb, sizeof(nb), "%s-b", name);
	snprintf(port_s, sizeof(port_s), "%d", cm ? 13337 : 20000 + getpid() % 20000);
	if (test_topology("veth", "up", name, NULL) != 0)
		goto out;
	if (cm)
		;   /* no kernel address: nothing but the DPDK ifaces can answer */
	else if (xdp ? test_system("ip link add ca netns %s type veth peer name cb netns %s && "
			      "ip -n %s addr add 10.78.0.1/24 dev ca && "
			      "ip -n %s addr add 10.78.0.2/24 dev cb && "
			      "ip -n %s link set ca up && ip -n %s link set cb up",
			      na, nb, na, nb, na, nb) != 0 :
		  test_system("ip -n %s addr add 10.77.0.1/24 dev va && "
			      "ip -n %s addr add 10.77.0.2/24 dev vb", na, nb) != 0) {
		TEST_LOG("control addresses");
		goto out;
	}
	{
		char va[64], vb[64];
		const char *args_a[] = { na, va, xdp || cm ? "10.77.0.1" : "10.77.0.11", "0",
					 ctl_a, port_s, "-", cm ? "cm" : NULL, NULL };
		const char *args_b[] = { nb, vb, xdp || cm ? "10.77.0.2" : "10.77.0.12", "1",
					 ctl_a, port_s, "-", cm ? "cm" : NULL, NULL };

		snprintf(va, sizeof(va), "%s0,iface=va", pmd);
		snprintf(vb, sizeof(vb), "%s0,iface=vb", pmd);
		a = test_spawn("ethdev_api_peer", args_a);
		/* b starts when a listens: no refused tries, each logged (none with cm to see) */
		if (!cm && a > 0 && test_wait_listen(a, atoi(port_s), 60000) != 0)
			TEST_LOG("peer a does not listen on %s:%s", ctl_a, port_s);
		b = test_spawn("ethdev_api_peer", args_b);
		ra = test_wait(a, 120000);
		rb = test_wait(b, 120000);
	}
	if (ra != 0 || rb != 0)
		TEST_LOG("peer exit codes %d %d", ra, rb);
	rc = ra == 0 && rb == 0 ? TEST_OK : TEST_FAIL;
out:
	test_topology("veth", "down", name, NULL);
	return rc;
}

/*
 * memif between two processes of the root namespace; the control connection on loopback, or
 * with @p cm none: the listener and the client use the DPDK address 10.79.0.1:13337.
 */
static int
memif_pair(bool cm)
{
	char sock[64], va[160], vb[160], port_s[16], ready[80], done[100];
	const char *ctl = cm ? "10.79.0.1" : "127.0.0.1", *mode = cm ? "cm" : NULL;
	const char *args_a[] = { "-", va, "10.79.0.1", "0", ctl, port_s, ready, mode, NULL };
	const char *args_b[] = { "-", vb, "10.79.0.2", "1", ctl, port_s, "-", mode, NULL };
	int ra, rb;
	pid_t a, b;

	if (cm)
		snprintf(port_s, sizeof(port_s), "13337");
	else
		snprintf(port_s, sizeof(port_s), "%d", test_free_port());
	snprintf(sock, sizeof(sock), "/tmp/unio-memif-api-%d.sock", getpid());
	snprintf(ready, sizeof(ready), "%s.ready", sock);
	snprintf(va, sizeof(va), "net_memif0,role=server,socket=%s,mac=02:00:00:00:02:0a", sock);
	snprintf(vb, sizeof(vb), "net_memif0,role=client,socket=%s,mac=02:00:00:00:02:0b", sock);
	a = test_spawn("ethdev_api_peer", args_a);
	for (int i = 0; i < 400 && access(ready, F_OK) != 0; i++)
		usleep(50000);     /* a memif client cannot start before the server's port */
	if (!cm && a > 0 && test_wait_listen(a, atoi(port_s), 20000) != 0)
		TEST_LOG("peer a does not listen on port %s", port_s);
	b = test_spawn("ethdev_api_peer", args_b);
	rb = test_wait(b, 120000);
	snprintf(done, sizeof(done), "%s.done", ready);
	close(open(done, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));   /* the server may close */
	ra = test_wait(a, 120000);
	unlink(sock);
	unlink(ready);
	unlink(done);
	if (ra != 0 || rb != 0)
		TEST_LOG("peer exit codes %d %d", ra, rb);
	return ra == 0 && rb == 0 ? TEST_OK : TEST_FAIL;
}

/*
 * The same flows between two processes over af_packet on a veth pair, connected only by
 * worker addresses exchanged through files: no listener, no control connection, no kernel
 * address on the veth.
 */
UNIO_TEST(ethdev_api_worker_addr, mp)
{
	char name[32], na[40], nb[40], prefix[64], pa[80], pb[80];
	const char *args_a[] = { na, "net_af_packet0,iface=va", "10.77.0.1", "0", prefix, "0",
				 "-", "oob", NULL };
	const char *args_b[] = { nb, "net_af_packet0,iface=vb", "10.77.0.2", "1", prefix, "0",
				 "-", "oob", NULL };
	int rc = TEST_FAIL, ra = -1, rb = -1;

	if (!test_can_netns())
		TEST_SKIP_BECAUSE("needs root and iproute2 network namespaces");
	snprintf(name, sizeof(name), "unioapi-%d", getpid());
	snprintf(na, sizeof(na), "%s-a", name);
	snprintf(nb, sizeof(nb), "%s-b", name);
	snprintf(prefix, sizeof(prefix), "/tmp/unio-ethdev-addr-%d", getpid());
	snprintf(pa, sizeof(pa), "%s.0", prefix);
	snprintf(pb, sizeof(pb), "%s.1", prefix);
	if (test_topology("veth", "up", name, NULL) == 0) {
		pid_t a = test_spawn("ethdev_api_peer", args_a);
		pid_t b = test_spawn("ethdev_api_peer", args_b);

		ra = test_wait(a, 120000);
		rb = test_wait(b, 120000);
		if (ra != 0 || rb != 0)
			TEST_LOG("peer exit codes %d %d", ra, rb);
		rc = ra == 0 && rb == 0 ? TEST_OK : TEST_FAIL;
	}
	unlink(pa);
	unlink(pb);
	test_topology("veth", "down", name, NULL);
	return rc;
}

UNIO_TEST(ethdev_api_memif, mp)
{
	return memif_pair(false);
}

UNIO_TEST(ethdev_api_af_packet, mp)
{
	return api_pair("net_af_packet", false);
}

UNIO_TEST(ethdev_api_af_xdp, mp)
{
	return api_pair("net_af_xdp", false);
}

/*
 * Two workers of one process, each on its own queue of one af_packet port (UDP ports 13337
 * and 13338): the first dials the second's address, whose worker a thread progresses.
 * Without a listener there the answer is REFUSED (UNIO_ERR_UNREACHABLE, at once: the
 * address is on this port, no ARP); with one, the request is accepted and a tagged message
 * crosses each way, handed over inside the port.
 */
struct two_workers {
	unio_worker_t *srv;
	unio_listener_t *l;
	unio_ep_t *ep;
	int want_listener;     /* main -> thread: create the listener */
	int stop;
};

static void
tw_conn(unio_conn_request_t *cr, void *arg)
{
	struct two_workers *t = arg;
	struct unio_ep_params p = { .field_mask = UNIO_EP_PARAM_CONN_REQUEST, .conn_request = cr };

	__atomic_store_n(&t->ep, unio_ep_create(t->srv, &p, NULL), __ATOMIC_RELEASE);
}

static void *
tw_server(void *arg)
{
	struct two_workers *t = arg;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(13338) };
	struct unio_listener_params lp = {
		.field_mask = UNIO_LISTENER_PARAM_SOCKADDR | UNIO_LISTENER_PARAM_HANDLER,
		.sockaddr = (struct sockaddr *)&a, .addrlen = sizeof(a),
		.conn_handler = tw_conn, .arg = t,
	};

	a.sin_addr.s_addr = inet_addr("10.77.0.1");
	while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE)) {
		if (t->l == NULL && __atomic_load_n(&t->want_listener, __ATOMIC_ACQUIRE))
			t->l = unio_listener_create(t->srv, &lp, NULL);
		unio_worker_progress(t->srv);
	}
	return NULL;
}

UNIO_TEST_CHILD(ethdev_api_two_workers)
{
	static struct two_workers t;
	struct unio_worker_params wp = { .field_mask = UNIO_WORKER_PARAM_THREAD_MODE,
					 .thread_mode = UNIO_THREAD_MODE_MULTI };
	char *eal[] = { (char *)"unio-test", (char *)"-l", (char *)"0",
			(char *)"--vdev=net_af_packet0,iface=va,qpairs=2", (char *)"--" };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(13338) };
	struct unio_ep_params p = { .field_mask = UNIO_EP_PARAM_SOCKADDR,
				    .sockaddr = (struct sockaddr *)&a, .addrlen = sizeof(a) };
	struct unio_recv_info info;
	uint64_t x = 0x1234567890abcdefull, y = 0;
	unio_context_t *ctx;
	unio_worker_t *cli;
	unio_status_t st;
	unio_ep_t *ep;
	pthread_t th;
	int rc = TEST_FAIL;

	TEST_ASSERT(argc == 1 && test_enter_netns(argv[0]) == 0, "setns: %s", strerror(errno));
	setenv("UNIO_TLS", "ethdev,self", 1);
	setenv("UNIO_ETHDEV_IP", "10.77.0.1", 1);
	setenv("UNIO_ETHDEV_QUEUES", "2", 1);
	TEST_ASSERT(unio_env_init((int)RTE_DIM(eal), eal) >= 0, "EAL init failed");
	ctx = unio_context_create(NULL, &st);
	TEST_ASSERT(ctx != NULL, "context: %s", unio_status_string(st));
	cli = unio_worker_create(ctx, &wp, &st);
	t.srv = unio_worker_create(ctx, &wp, &st);
	TEST_ASSERT(cli != NULL && t.srv != NULL, "workers: %s", unio_status_string(st));
	a.sin_addr.s_addr = inet_addr("10.77.0.1");
	{   /* the DPDK address on a port that is not the iface's: the error names the port */
		struct sockaddr_in bad = a;
		struct unio_listener_params lp = {
			.field_mask = UNIO_LISTENER_PARAM_SOCKADDR | UNIO_LISTENER_PARAM_HANDLER,
			.sockaddr = (struct sockaddr *)&bad, .addrlen = sizeof(bad),
			.conn_handler = tw_conn, .arg = &t,
		};
		unio_listener_t *l;
		struct api_log lg;
		char *text;
		int said;

		bad.sin_port = htons(9);
		api_log_start(&lg);
		l = unio_listener_create(cli, &lp, &st);
		text = api_log_end(&lg);
		said = strstr(text, "ethdev/") != NULL &&
		       strstr(text, "takes connection requests on its UDP port 13337 only") != NULL;
		if (l != NULL || st != UNIO_ERR_IO || !said) {
			TEST_LOG("listener on 10.77.0.1:9: %s, logged: %s", unio_status_string(st),
				 text);
			free(text);
			unio_listener_destroy(l);
			goto done;
		}
		free(text);
	}
	TEST_ASSERT_EQ(pthread_create(&th, NULL, tw_server, &t), 0);
	ep = unio_ep_create(cli, &p, &st);
	if (ep != NULL || st != UNIO_ERR_UNREACHABLE) {
		TEST_LOG("no listener yet: %s", unio_status_string(st));
		goto out;
	}
	__atomic_store_n(&t.want_listener, 1, __ATOMIC_RELEASE);
	for (double end = test_now_s() + 10; ep == NULL && test_now_s() < end;)
		ep = unio_ep_create(cli, &p, &st);   /* REFUSED until the thread listens */
	if (ep == NULL || strcmp(ep->lane.iface->driver->name, "ethdev") != 0) {
		TEST_LOG("with a listener: %s", unio_status_string(st));
		goto out;
	}
	while (__atomic_load_n(&t.ep, __ATOMIC_ACQUIRE) == NULL)
		unio_worker_progress(cli);
	if (api_send(cli, ep, &x, sizeof(x), 7, 0) != UNIO_OK) {
		TEST_LOG("send");
		goto out;
	}
	__atomic_store_n(&t.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	if (api_recv(t.srv, &y, sizeof(y), 7, UINT64_MAX, &info) != UNIO_OK || y != x ||
	    api_send(t.srv, t.ep, &y, sizeof(y), 8, 0) != UNIO_OK ||
	    api_recv(cli, &y, sizeof(y), 8, UINT64_MAX, &info) != UNIO_OK || y != x) {
		TEST_LOG("tagged exchange between the workers");
		goto done;
	}
	TEST_LOG("refused without a listener, then connected between two queues of the port");
	rc = TEST_OK;
	goto done;
out:
	__atomic_store_n(&t.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
done:
	unio_listener_destroy(t.l);
	unio_worker_destroy(cli);
	unio_worker_destroy(t.srv);
	unio_context_destroy(ctx);
	return rc;
}

/* Run test child @p child in namespace -a of a veth pair named @p prefix-PID, then remove it. */
static int
netns_child(const char *prefix, const char *child)
{
	char name[32], na[40];
	const char *args[] = { na, NULL };
	int rc = TEST_FAIL;

	if (!test_can_netns())
		TEST_SKIP_BECAUSE("needs root and iproute2 network namespaces");
	snprintf(name, sizeof(name), "%s-%d", prefix, getpid());
	snprintf(na, sizeof(na), "%s-a", name);
	if (test_topology("veth", "up", name, NULL) == 0)
		rc = test_wait(test_spawn(child, args), 60000) == 0 ? TEST_OK : TEST_FAIL;
	test_topology("veth", "down", name, NULL);
	return rc;
}

UNIO_TEST(ethdev_api_cm_two_workers, mp)
{
	return netns_child("unioapi2", "ethdev_api_two_workers");
}

/* Listener and ep_create by the DPDK address: the handshake over the driver, no kernel */
UNIO_TEST(ethdev_api_cm_af_packet, mp)
{
	return api_pair("net_af_packet", true);
}

UNIO_TEST(ethdev_api_cm_af_xdp, mp)
{
	return api_pair("net_af_xdp", true);
}

UNIO_TEST(ethdev_api_cm_memif, mp)
{
	return memif_pair(true);
}

/*
 * A simultaneous open over ethdev: two workers (two queues of one af_packet port, UDP 13337
 * and 13338), each with a listener, dial each other at the same moment.  Both
 * unio_ep_create() calls must succeed quickly over the ethdev lane (since the driver made
 * crossing dials one connection, both used to wait UNIO_PEER_TIMEOUT and fail), and a
 * checksummed message must cross each way.
 */
struct md_side {
	unio_worker_t *w;
	unio_listener_t *l;
	uint16_t own, peer;
	unio_ep_t *ep, *acc;
	unio_status_t st;
	double secs;
	int *go;
};

static void
md_conn(unio_conn_request_t *cr, void *arg)
{
	struct md_side *s = arg;
	struct unio_ep_params p = { .field_mask = UNIO_EP_PARAM_CONN_REQUEST, .conn_request = cr };
	unio_status_t st;

	s->acc = unio_ep_create(s->w, &p, &st);
	TEST_LOG("port %u accepted: %s", s->own, unio_status_string(st));
}

/* 4 KiB from each side's dialled ep to the other worker, received and checksummed */
static int
md_exchange(struct md_side *s)
{
	static uint8_t out[2][4096], in[2][4096];
	unio_request_t *sr[2] = { NULL, NULL }, *rr[2] = { NULL, NULL };
	struct unio_recv_info info;
	int done = 0;
	double end;

	for (int i = 0; i < 2; i++) {
		for (size_t k = 0; k < sizeof(out[i]); k++)
			out[i][k] = (uint8_t)(k * 7 + (size_t)i * 13 + 1);
		TEST_ASSERT(unio_tag_recv(s[i].w, in[i], sizeof(in[i]), 0x6d64, ~0ull, NULL,
					  &rr[i]) == UNIO_INPROGRESS, "recv %d", i);
		TEST_ASSERT(unio_tag_send(s[i].ep, out[i], sizeof(out[i]), 0x6d64, NULL,
					  &sr[i]) >= 0, "send %d", i);
	}
	for (end = test_now_s() + 10; done != 4 && test_now_s() < end;) {
		done = 0;
		for (int i = 0; i < 2; i++) {
			unio_worker_progress(s[i].w);
			done += sr[i] == NULL || unio_request_test(sr[i], NULL) != UNIO_INPROGRESS;
			done += unio_request_test(rr[i], NULL) != UNIO_INPROGRESS;
		}
	}
	TEST_ASSERT_EQ(done, 4);
	for (int i = 0; i < 2; i++) {
		TEST_ASSERT_STATUS(unio_request_test(rr[i], &info), UNIO_OK);
		TEST_ASSERT_EQ(info.length, sizeof(in[i]));
		TEST_ASSERT(memcmp(in[i], out[1 - i], sizeof(in[i])) == 0, "side %d: payload", i);
		unio_request_free(rr[i]);
		unio_request_free(sr[i]);
	}
	return TEST_OK;
}

static void *
md_thread(void *arg)
{
	struct md_side *s = arg;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(s->peer) };
	struct unio_ep_params p = { .field_mask = UNIO_EP_PARAM_SOCKADDR,
				    .sockaddr = (struct sockaddr *)&a, .addrlen = sizeof(a) };
	double t0;

	a.sin_addr.s_addr = inet_addr("10.77.0.1");
	while (!__atomic_load_n(s->go, __ATOMIC_ACQUIRE))
		unio_worker_progress(s->w);
	t0 = test_now_s();
	s->ep = unio_ep_create(s->w, &p, &s->st);
	s->secs = test_now_s() - t0;
	for (double end = test_now_s() + 1; test_now_s() < end;)
		unio_worker_progress(s->w);
	return NULL;
}

UNIO_TEST_CHILD(ethdev_api_mutual_dial_child)
{
	static struct md_side s[2];
	static int go;
	struct unio_worker_params wp = { .field_mask = UNIO_WORKER_PARAM_THREAD_MODE,
					 .thread_mode = UNIO_THREAD_MODE_MULTI };
	char *eal[] = { (char *)"unio-test", (char *)"-l", (char *)"0",
			(char *)"--vdev=net_af_packet0,iface=va,qpairs=2", (char *)"--" };
	unio_context_t *ctx;
	unio_status_t st;
	pthread_t th[2];
	int rc;

	TEST_ASSERT(argc == 1 && test_enter_netns(argv[0]) == 0, "setns: %s", strerror(errno));
	setenv("UNIO_TLS", "ethdev,self", 1);
	setenv("UNIO_ETHDEV_IP", "10.77.0.1", 1);
	setenv("UNIO_ETHDEV_QUEUES", "2", 1);
	setenv("UNIO_PEER_TIMEOUT", "4s", 1);
	TEST_ASSERT(unio_env_init((int)RTE_DIM(eal), eal) >= 0, "EAL init failed");
	ctx = unio_context_create(NULL, &st);
	TEST_ASSERT(ctx != NULL, "context: %s", unio_status_string(st));
	for (int i = 0; i < 2; i++) {
		struct sockaddr_in a = { .sin_family = AF_INET };
		struct unio_listener_params lp = {
			.field_mask = UNIO_LISTENER_PARAM_SOCKADDR | UNIO_LISTENER_PARAM_HANDLER,
			.sockaddr = (struct sockaddr *)&a, .addrlen = sizeof(a),
			.conn_handler = md_conn, .arg = &s[i],
		};

		s[i].own = (uint16_t)(13337 + i);
		s[i].peer = (uint16_t)(13338 - i);
		s[i].go = &go;
		s[i].w = unio_worker_create(ctx, &wp, &st);
		TEST_ASSERT(s[i].w != NULL, "worker: %s", unio_status_string(st));
		a.sin_port = htons(s[i].own);
		a.sin_addr.s_addr = inet_addr("10.77.0.1");
		s[i].l = unio_listener_create(s[i].w, &lp, &st);
		TEST_ASSERT(s[i].l != NULL, "listener: %s", unio_status_string(st));
	}
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, md_thread, &s[i]);
	usleep(100000);
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 2; i++) {
		TEST_LOG("side %u -> %u: ep %p %s after %.3f s, driver %s, accepted %p", s[i].own,
			 s[i].peer, (void *)s[i].ep, unio_status_string(s[i].st), s[i].secs,
			 s[i].ep != NULL ? s[i].ep->lane.iface->driver->name : "-",
			 (void *)s[i].acc);
		/*
		 * Crossing dials are one connection and no listener handler runs.  A side whose
		 * thread got to its dial only after its worker had served the other's request
		 * (a loaded host) accepted it instead, and its own dial is UNIO_ERR_EXISTS.
		 */
		if (s[i].ep == NULL && s[i].st == UNIO_ERR_EXISTS && s[i].acc != NULL) {
			TEST_LOG("side %d accepted before it dialled", i);
			s[i].ep = s[i].acc;
			s[i].acc = NULL;
		} else {
			TEST_ASSERT(s[i].ep != NULL && s[i].st == UNIO_OK, "side %d: %s", i,
				    unio_status_string(s[i].st));
			TEST_ASSERT(s[i].acc == NULL, "side %d: a listener handler ran for a "
				    "dial that crossed its own", i);
		}
		TEST_ASSERT(strcmp(s[i].ep->lane.iface->driver->name, "ethdev") == 0, "lane");
		TEST_ASSERT(s[i].secs < 2.0, "side %d waited %.3f s", i, s[i].secs);
	}
	rc = md_exchange(s);
	for (int i = 0; i < 2; i++) {
		unio_ep_close(s[i].ep, UNIO_EP_CLOSE_FORCE, NULL);
		if (s[i].acc != NULL)
			unio_ep_close(s[i].acc, UNIO_EP_CLOSE_FORCE, NULL);
		unio_listener_destroy(s[i].l);
		unio_worker_destroy(s[i].w);
	}
	unio_context_destroy(ctx);
	return rc;
}

UNIO_TEST(ethdev_api_mutual_dial, mp)
{
	return netns_child("unioapimd", "ethdev_api_mutual_dial_child");
}

/*
 * Three eps of one worker to one peer worker over ethdev share one driver connection (a
 * connection and two more handles).  The peer worker goes silent; the error handler of the
 * first ep told closes every ep to that peer, as applications do.  The driver walked on to
 * handles and a connection the handler had freed (a crash, or a use after free under
 * ASan); now the handler runs once, every ep is closed, a pending synchronous send fails,
 * and the worker goes on.
 */
static unio_ep_t *ae_eps[3];
static int ae_errs;

static void
ae_err(void *arg, unio_ep_t *ep, unio_status_t st)
{
	RTE_SET_USED(arg);
	ae_errs++;
	TEST_LOG("error handler: ep %p %s: closing every ep to that peer", (void *)ep,
		 unio_status_string(st));
	for (int i = 0; i < 3; i++)
		if (ae_eps[i] != NULL) {
			unio_ep_close(ae_eps[i], UNIO_EP_CLOSE_FORCE, NULL);
			ae_eps[i] = NULL;
		}
}

UNIO_TEST_CHILD(ethdev_api_alias_err_close_child)
{
	char *eal[] = { (char *)"unio-test", (char *)"-l", (char *)"0",
			(char *)"--vdev=net_af_packet0,iface=va,qpairs=2", (char *)"--" };
	unio_context_t *ctx;
	unio_worker_t *wa, *wb;
	unio_request_t *req = NULL;
	uint64_t x = 42;
	unio_status_t st;
	void *addr;
	size_t len;

	TEST_ASSERT(argc == 1 && test_enter_netns(argv[0]) == 0, "setns: %s", strerror(errno));
	setenv("UNIO_TLS", "ethdev,self", 1);
	setenv("UNIO_ETHDEV_IP", "10.77.0.1", 1);
	setenv("UNIO_ETHDEV_QUEUES", "2", 1);
	setenv("UNIO_ETHDEV_RETRIES", "2", 1);
	TEST_ASSERT(unio_env_init((int)RTE_DIM(eal), eal) >= 0, "EAL init failed");
	ctx = unio_context_create(NULL, &st);
	TEST_ASSERT(ctx != NULL, "context: %s", unio_status_string(st));
	wa = unio_worker_create(ctx, NULL, &st);
	wb = unio_worker_create(ctx, NULL, &st);
	TEST_ASSERT(wa != NULL && wb != NULL, "workers");
	TEST_ASSERT_STATUS(unio_worker_get_address(wb, &addr, &len), UNIO_OK);
	for (int i = 0; i < 3; i++) {
		struct unio_ep_params p = {
			.field_mask = UNIO_EP_PARAM_WORKER_ADDR | UNIO_EP_PARAM_ERR_HANDLER,
			.worker_addr = addr, .worker_addr_len = len, .err_handler = ae_err,
		};

		ae_eps[i] = unio_ep_create(wa, &p, &st);
		TEST_ASSERT(ae_eps[i] != NULL, "ep %d: %s", i, unio_status_string(st));
	}
	unio_worker_release_address(wb, addr);
	for (double end = test_now_s() + 10; test_now_s() < end;) {
		unio_worker_progress(wa);
		unio_worker_progress(wb);
		if (ae_eps[0]->state == EP_CONNECTED && ae_eps[1]->state == EP_CONNECTED &&
		    ae_eps[2]->state == EP_CONNECTED)
			break;
	}
	for (int i = 0; i < 3; i++)
		TEST_ASSERT(ae_eps[i]->state == EP_CONNECTED &&
			    strcmp(ae_eps[i]->lane.iface->driver->name, "ethdev") == 0,
			    "ep %d not connected over ethdev", i);
	/* wb is never progressed again: its acks stop */
	TEST_ASSERT_STATUS(unio_tag_send_sync(ae_eps[0], &x, sizeof(x), 1, NULL, &req),
			   UNIO_INPROGRESS);      /* done when matched: never */
	for (double end = test_now_s() + 20; ae_errs == 0 && test_now_s() < end;)
		unio_worker_progress(wa);
	for (double end = test_now_s() + 0.5; test_now_s() < end;)
		unio_worker_progress(wa);    /* the driver's timers free the connection */
	TEST_ASSERT_EQ(ae_errs, 1);
	for (int i = 0; i < 3; i++)
		TEST_ASSERT(ae_eps[i] == NULL, "ep %d not closed", i);
	st = unio_request_test(req, NULL);
	TEST_ASSERT(UNIO_IS_ERR(st), "the send to the silent peer: %s", unio_status_string(st));
	unio_request_free(req);
	unio_worker_destroy(wb);
	unio_worker_destroy(wa);
	unio_context_destroy(ctx);
	return TEST_OK;
}

UNIO_TEST(ethdev_api_alias_err_close, mp)
{
	return netns_child("unioapiae", "ethdev_api_alias_err_close_child");
}

/* ---- a worker with an iface that has no event fd cannot sleep, however often it asks ---- */

UNIO_TEST_CHILD(ethdev_efd_child)
{
	static const char *const ovr[] = { "TLS", "ethdev,self", "EAL_ARGS", "--vdev=net_null0",
					   "ETHDEV_IP", "10.99.0.1", "HUGEPAGES", "no", NULL };
	unio_context_t *ctx = api_ctx(ovr);
	unio_worker_t *w;
	unio_status_t st;
	int efd = -1, rc = 0;

	RTE_SET_USED(argc), RTE_SET_USED(argv);
	if (ctx == NULL)
		return 20;
	w = unio_worker_create(ctx, NULL, &st);
	if (w == NULL || api_worker_iface(w, "ethdev", NULL) == NULL) {
		rc = 21;
	} else if ((st = unio_worker_get_efd(w, &efd)) != UNIO_ERR_UNSUPPORTED) {
		fprintf(stderr, "first unio_worker_get_efd: %s\n", unio_status_string(st));
		rc = 22;
	} else if ((st = unio_worker_get_efd(w, &efd)) != UNIO_ERR_UNSUPPORTED) {
		/* an epoll fd without the ethdev iface in it: a sleep there misses its frames */
		fprintf(stderr, "second unio_worker_get_efd: %s\n", unio_status_string(st));
		rc = 23;
	} else if ((st = unio_worker_arm(w)) != UNIO_ERR_INVALID_PARAM) {
		fprintf(stderr, "unio_worker_arm: %s\n", unio_status_string(st));
		rc = 24;
	}
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return rc;
}

/*
 * unio_worker_get_efd() on a worker with an ethdev iface (no event fd) fails, and keeps
 * failing: a failed first call left a half-built epoll fd behind, which a second call
 * returned as the worker's (and unio_worker_arm() then armed), so that a sleep on it missed
 * every frame of the ethdev iface.  net_null gives the port: no namespace needed.
 */
UNIO_TEST(ethdev_api_efd_unsupported, mp)
{
	pid_t pid = test_spawn("ethdev_efd_child", NULL);

	TEST_ASSERT_EQ(test_wait(pid, 60000), 0);
	return TEST_OK;
}
