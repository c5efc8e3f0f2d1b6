/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The protocol stage's shared parts: the request pool, request completion, lane thresholds
 * from the drivers' performance models, and the selection printout for unio-info -e.
 */

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <rte_cycles.h>
#include <rte_log.h>

#include "unio_cpu.h"
#include "unio_log.h"
#include "unio_proto.h"

RTE_LOG_REGISTER(unio_logtype_proto, unio.proto, WARNING);

static uint16_t wire_version_override;

void
unio_proto_test_set_wire_version(uint16_t version)
{
	wire_version_override = version;
}

uint16_t
proto_wire_version(void)
{
	return wire_version_override != 0 ? wire_version_override : UNIO_WIRE_VERSION;
}

/* ---- requests: a free list over chunks, no allocation once warm ---- */

int
proto_req_grow(struct unio_worker *w)
{
	struct unio_request *chunk;

	if (w->n_req_chunks == REQ_MAX_CHUNKS)
		return -1;
	chunk = calloc(REQ_CHUNK, sizeof(*chunk));
	if (chunk == NULL)
		return -1;
	for (unsigned int i = REQ_CHUNK; i-- > 0;) {   /* the lowest index on top */
		chunk[i].idx = w->n_req_chunks * REQ_CHUNK + i;
		chunk[i].gen = 1;
		chunk[i].worker = w;
		TAILQ_NEXT(&chunk[i], link) = w->req_free;
		w->req_free = &chunk[i];
	}
	w->req_chunks[w->n_req_chunks++] = chunk;
	return 0;
}

void
proto_req_tl_release(struct unio_request *req)
{
	req->tl_held = false;
	proto_rndv_release_rkey(req);
	if (req->put_deferred) {
		req->put_deferred = false;
		proto_req_put(req);
	}
}

struct unio_request *
proto_req_lookup(struct unio_worker *w, uint64_t id)
{
	return proto_req_at_slot(w, proto_id_open(w->id_key, id));
}

struct unio_request *
proto_req_at_slot(struct unio_worker *w, uint64_t slot)
{
	uint32_t idx = (uint32_t)slot, gen = (uint32_t)(slot >> 32);
	struct unio_request *req;

	if (idx >= w->n_req_chunks * REQ_CHUNK)
		return NULL;
	req = &w->req_chunks[idx / REQ_CHUNK][idx % REQ_CHUNK];
	return req->gen == gen && req->state != REQ_FREE ? req : NULL;
}

void
proto_req_dereg(struct unio_request *req)
{
	req->memh_iface->ctl->mem_dereg(req->memh_iface, &req->memh);
	req->memh_valid = false;
}

unio_status_t
proto_req_hand_out_done(struct unio_request *req, const struct unio_request_param *param,
			unio_request_t **req_p)
{
	uint64_t fm = param != NULL ? param->field_mask : 0;
	bool noimm = (fm & UNIO_REQ_PARAM_FLAGS) &&
		     (param->flags & UNIO_REQ_FLAG_NO_IMM_COMPLETION);
	unio_status_t st;

	if (!(noimm && req_p != NULL)) {
		st = req->status;
		if (req->type == REQ_RECV && (fm & UNIO_REQ_PARAM_RECV_INFO) &&
		    param->recv_info != NULL)
			*param->recv_info = req->info;
		proto_req_put(req);
		return st;
	}
	req->user_owned = true;
	*req_p = req;
	if (req->cb != NULL)
		req->cb(req, req->status, req->type == REQ_RECV ? &req->info : NULL,
			req->user_data);
	return UNIO_INPROGRESS;
}


/* ---- lanes and thresholds ---- */

/*
 * Rendezvous pays one extra round trip (RTS, then ATS or RTR) plus the zero-copy setup to
 * save a copy of the payload.  It starts where the copy saved costs more than that: at
 * bandwidth B bytes/ns, a copy of n bytes costs n/B, so n = B * (2 * latency + zcopy
 * overhead), doubled for the receiver's copy out of the unexpected buffer, clamped to a
 * sane range and never below the single-fragment eager limit.
 */
static size_t
auto_rndv_thresh(const struct unio_tl_iface_attr *a, size_t max_eager)
{
	double bytes_per_ns = a->perf.bandwidth_MBps / 1000.0;
	double cost_ns = 2 * a->perf.latency_ns + a->perf.zcopy_overhead_ns;
	size_t t = (size_t)(2 * bytes_per_ns * cost_ns);

	t = RTE_MAX(t, (size_t)16384);
	t = RTE_MIN(t, (size_t)512 * 1024);
	return RTE_MAX(t, max_eager + 1);
}

/*
 * Eager zero-copy (am_zcopy straight from the user's buffer, tag_send.c) saves the copy
 * into the driver's buffer, at PROTO_COPY_BYTES_PER_NS, for the driver's fixed zero-copy
 * cost: worth it from n = zcopy_overhead * copy speed; never below PROTO_ZCOPY_MIN (a
 * zero-copy send keeps the buffer until the driver is done, so it usually costs the caller
 * a request).  Up to the driver's am_zcopy limit; rendezvous still starts at rndv_thresh.
 */
#define PROTO_COPY_BYTES_PER_NS 10.0
#define PROTO_ZCOPY_MIN 4096u

static void
lane_zcopy_thresh(const struct unio_config *cfg, const struct unio_tl_iface_attr *a,
		  uint64_t cap, struct proto_lane *lane)
{
	lane->zcopy_thresh = UNIO_SIZE_INF;
	lane->max_zcopy = 0;
	if (!(cap & UNIO_TL_CAP_AM_ZCOPY) || a->max_zcopy_hdr < sizeof(struct proto_eager_hdr))
		return;
	lane->max_zcopy = a->max_zcopy;
	if (cfg->zcopy_thresh != UNIO_SIZE_AUTO)
		lane->zcopy_thresh = cfg->zcopy_thresh;
	else
		lane->zcopy_thresh = RTE_MAX((size_t)PROTO_ZCOPY_MIN,
					     (size_t)(a->perf.zcopy_overhead_ns *
						      PROTO_COPY_BYTES_PER_NS));
}

/* UNIO_RNDV_SPLIT_MIN=auto: under auto on a host lane of an AMD CPU, and elsewhere */
#define PROTO_SPLIT_MIN_AMD     (256 * 1024)
#define PROTO_SPLIT_MIN_DEFAULT (64 * 1024)

static void
lane_thresholds(const struct unio_config *cfg, const struct unio_tl_iface_attr *a,
		uint64_t cap, struct proto_lane *lane)
{
	size_t split_min;
	bool host_auto, amd_pipe;

	lane->short_ok = (cap & UNIO_TL_CAP_AM_SHORT) != 0;
	lane->max_short = lane->short_ok ? a->max_short : 0;
	lane->am_short_end = lane->short_ok ?
			     RTE_MIN(lane->max_short, (size_t)PROTO_AM_SHORT_MAX) + 1 : 0;
	lane->max_eager = a->max_bcopy > sizeof(struct proto_rts_hdr) + UNIO_TL_RKEY_MAX ?
			  a->max_bcopy - sizeof(struct proto_eager_hdr) : 0;
	/*
	 * Further fragments (EAGER_MID, PIPE) carry a whole number of cache lines, so that they
	 * land line-aligned in an aligned buffer and a power-of-two message divides evenly
	 * (shm: 8 KiB, a 64 KiB message in 8 fragments); the last takes what is left up to
	 * what its header leaves room for, so no message ends with a fragment of a few bytes.
	 * The first fragment of an eager message has the longer header, and whole cache lines
	 * too: the further ones then start line-aligned in the buffer, and a copy between a
	 * page-aligned buffer and a ring cell is at the same distance modulo 32 as the single
	 * message's (shm: 16 KiB as 8192 + 8192, not 8232 + 8152; protocols.md entry 44).
	 */
	if (lane->max_eager > 64) {
		lane->frag_last = a->max_bcopy - sizeof(struct proto_frag_hdr);
		lane->frag = RTE_ALIGN_FLOOR(lane->frag_last, (size_t)RTE_CACHE_LINE_SIZE);
		lane->frag_first = RTE_ALIGN_FLOOR(a->max_bcopy -
						   sizeof(struct proto_eager_first_hdr),
						   (size_t)RTE_CACHE_LINE_SIZE);
	} else {
		lane->frag = lane->frag_last = lane->frag_first = 0;
	}
	lane->rndv_scheme = cfg->rndv_scheme == UNIO_RNDV_SCHEME_MEASURE ? UNIO_RNDV_SCHEME_AUTO :
			    cfg->rndv_scheme;
	host_auto = lane->rndv_scheme == UNIO_RNDV_SCHEME_AUTO &&
		    a->reach == UNIO_TL_REACH_HOST && !(cap & UNIO_TL_CAP_RMA_TARGET);
	/*
	 * auto: on a lane whose put and get the target's driver carries out over the same
	 * connection (RMA_TARGET: tcp), and off the host, the receiver pulls when the lane can.
	 * On such a lane a pipeline or split moves the same bytes through the same socket with
	 * more frames and round trips (measured: "Performance log" in doc/guides/drivers/tcp.md).
	 * On one host neither a single-core CMA pull nor the pipeline (both cores copy through
	 * the FIFO at once) is the faster everywhere, nor on one host at every moment (measured:
	 * doc/guides/protocols.md): below the split, the sender offers a get and the receiver
	 * chooses per rendezvous by what it measures (proto_rndv_recv_pull()); the pipeline is
	 * what it names.  On an AMD CPU auto is the pipeline below the split, not measured: it
	 * ran 1.3-3x the get and the split there from 32 to 128 KiB, while the measure rated
	 * it at 4-5x its steady cost and kept the get (performance log 38);
	 * measure: by measure on every CPU.  split: the split wherever the lane can get and put
	 * (the auto choice on one host from split_min).
	 */
	amd_pipe = host_auto && cfg->rndv_scheme == UNIO_RNDV_SCHEME_AUTO &&
		   unio_cpu_vendor() == UNIO_CPU_AMD;
	lane->rndv_adapt = host_auto && (cap & UNIO_TL_CAP_GET_ZCOPY) && !amd_pipe;
	if (lane->rndv_scheme == UNIO_RNDV_SCHEME_AUTO ||
	    lane->rndv_scheme == UNIO_RNDV_SCHEME_SPLIT)
		lane->rndv_scheme = (a->reach != UNIO_TL_REACH_HOST ||
				     (cap & UNIO_TL_CAP_RMA_TARGET) ||
				     cfg->rndv_scheme == UNIO_RNDV_SCHEME_SPLIT) &&
				    (cap & UNIO_TL_CAP_GET_ZCOPY) ? UNIO_RNDV_SCHEME_GET :
				    UNIO_RNDV_SCHEME_PIPELINE;
	if (cfg->rndv_thresh != UNIO_SIZE_AUTO)
		lane->rndv_thresh = cfg->rndv_thresh;
	else if (a->reach == UNIO_TL_REACH_SELF || lane->rndv_scheme == UNIO_RNDV_SCHEME_AM)
		lane->rndv_thresh = UNIO_SIZE_INF;
	else
		lane->rndv_thresh = auto_rndv_thresh(a, lane->max_eager);
	if (lane->rndv_scheme == UNIO_RNDV_SCHEME_AM)
		lane->rndv_thresh = UNIO_SIZE_INF;
	/*
	 * auto on one host: from UNIO_RNDV_SPLIT_MIN the tag rendezvous is split, the receiver
	 * pulls half and the sender puts the other half, both single-copy (CMA) and at once
	 * (measured: "Performance log" in doc/guides/protocols.md).  Its auto: 256 KiB where
	 * auto runs the pipeline below it (an AMD CPU: faster there, entries 4 and 38), 64 KiB
	 * elsewhere (entry 36).
	 */
	split_min = cfg->rndv_split_min != UNIO_SIZE_AUTO ? cfg->rndv_split_min :
		    amd_pipe ? PROTO_SPLIT_MIN_AMD : PROTO_SPLIT_MIN_DEFAULT;
	lane->split_min = UNIO_SIZE_INF;
	if ((host_auto || cfg->rndv_scheme == UNIO_RNDV_SCHEME_SPLIT) &&
	    (cap & UNIO_TL_CAP_GET_ZCOPY) && (cap & UNIO_TL_CAP_PUT_ZCOPY))
		lane->split_min = RTE_MAX(split_min, lane->rndv_thresh);
	lane_zcopy_thresh(cfg, a, cap, lane);
}

/* ---- the auto rendezvous scheme on one host: get or pipeline, by measure ---- */

/*
 * The receiver measures and chooses: both of its samples end where the data is delivered
 * (the get done, the last PIPE fragment copied out), while a sender's would end at the
 * ATS for a get but at its last fragment written for a pipeline (before the receiver
 * copied anything out of the FIFO: the pipeline looked cheaper than it delivers).
 *
 * Probe the scheme not chosen every ADAPT_EVERY rendezvous of a class (ADAPT_EVERY_FAR while
 * it costs more than 3/2 of the chosen one), and every ADAPT_EVERY / 2 once it went
 * ADAPT_STALE_MS without a sample, in a burst of ADAPT_BURST or twice the rendezvous in
 * flight (a window), at most ADAPT_BURST_MAX: its second half starts behind its first.  A
 * sample is a rendezvous during whose flight none of the other scheme started (a get started
 * behind a pipeline runs on this core before the pipeline's fragments, already in the FIFO,
 * are copied out: the pipeline would pay for the gets), and a burst goes on until half of
 * its length are samples (at most ADAPT_BURST_MAX more): entry 39 of protocols.md.
 */
#define ADAPT_EVERY      256
#define ADAPT_EVERY_FAR  768
#define ADAPT_BURST      8
#define ADAPT_BURST_MAX  64
#define ADAPT_STALE_MS   5
/* ... and ADAPT_CONFIRM after the cheaper one changed */
#define ADAPT_CONFIRM    32

static void
adapt_init(struct proto_adapt *a, const struct proto_lane *lane)
{
	memset(a->cls, 0, sizeof(a->cls));
	for (unsigned int i = 0; i < PROTO_ADAPT_CLASSES; i++)
		a->cls[i].best = UINT8_MAX;   /* the first choice by cost is a turn */
	a->flight_bytes = 0;
	a->flight[0] = a->flight[1] = 0;
	a->stale_tsc = rte_get_tsc_hz() / 1000 * ADAPT_STALE_MS;
	a->shift = lane->rndv_thresh == UNIO_SIZE_INF || lane->rndv_thresh == 0 ? 0 :
		   (uint8_t)(63 - __builtin_clzll(lane->rndv_thresh));
	if (a->skew[0] == 0)
		a->skew[0] = a->skew[1] = 1;
}

void
unio_proto_rndv_skew(struct unio_ep *ep, uint32_t get_x, uint32_t pipe_x)
{
	ep->adapt.skew[PROTO_ADAPT_GET] = RTE_MAX(get_x, 1u);
	ep->adapt.skew[PROTO_ADAPT_PIPE] = RTE_MAX(pipe_x, 1u);
}

bool
unio_proto_test_rndv_start(struct unio_request *req, struct unio_ep *ep, size_t size,
			   bool offered)
{
	req->info.length = size;
	return proto_rndv_recv_pull(req, ep, size, offered);
}

void
unio_proto_test_rndv_done(struct unio_request *req, bool by_get)
{
	proto_rndv_delivered(req, by_get, true);
}

static unsigned int
adapt_class(const struct proto_adapt *a, size_t len)
{
	unsigned int c;

	if ((len >> a->shift) == 0)   /* an AM forced to rendezvous below the threshold */
		return 0;
	c = (unsigned int)(63 - __builtin_clzll(len)) - a->shift;
	return RTE_MIN(c, (unsigned int)PROTO_ADAPT_CLASSES - 1);
}

/* get costs more per byte than pipeline in @p c (both measured) */
static bool
adapt_get_dearer(const struct proto_adapt_class *c)
{
	return (unsigned __int128)c->ticks[PROTO_ADAPT_GET] * c->bytes[PROTO_ADAPT_PIPE] >
	       (unsigned __int128)c->ticks[PROTO_ADAPT_PIPE] * c->bytes[PROTO_ADAPT_GET];
}

/* The scheme for the next rendezvous of class @p c, at TSC @p now. */
static unsigned int
adapt_choose(struct proto_adapt *a, struct proto_adapt_class *c, uint64_t now)
{
	unsigned int best, other, burst;
	bool far;

	if (c->probe_left != 0) {
		c->probe_left--;
		a->n_probe++;
		return c->probe;
	}
	/* the burst goes on until it has its samples (ADAPT_BURST_MAX more at most) */
	if (c->probe_want != 0) {
		if (c->probe_got < c->probe_want && c->probe_more != 0) {
			c->probe_more--;
			a->n_probe++;
			return c->probe;
		}
		c->probe_want = 0;
	}
	/*
	 * Get until it has a sample; then the pipeline is probed like any other, the first
	 * time ADAPT_CONFIRM later (as after a turn below).
	 */
	if (c->bytes[PROTO_ADAPT_GET] == 0 && c->bytes[PROTO_ADAPT_PIPE] == 0)
		return PROTO_ADAPT_GET;
	best = c->bytes[PROTO_ADAPT_PIPE] == 0 ? PROTO_ADAPT_GET :
	       c->bytes[PROTO_ADAPT_GET] == 0 || adapt_get_dearer(c) ? PROTO_ADAPT_PIPE :
	       PROTO_ADAPT_GET;
	other = best ^ 1;
	/* a turn: confirm it soon with the one left (a preemption may have made it) */
	if (best != c->best) {
		c->best = (uint8_t)best;
		c->since_probe = RTE_MAX(c->since_probe,
					 (uint32_t)(ADAPT_EVERY_FAR - ADAPT_CONFIRM));
	}
	/* the other costs more than 3/2 of the best */
	far = (unsigned __int128)c->ticks[other] * c->bytes[best] * 2 >
	      (unsigned __int128)c->ticks[best] * c->bytes[other] * 3;
	c->since_probe++;
	if (c->since_probe < (far ? ADAPT_EVERY_FAR : ADAPT_EVERY) &&
	    (c->since_probe < ADAPT_EVERY / 2 || now - c->seen[other] <= a->stale_tsc))
		return best;
	burst = 2 * (a->flight[0] + a->flight[1] + 1);
	burst = RTE_MAX(burst, (unsigned int)ADAPT_BURST);
	c->since_probe = 0;
	c->probe = (uint8_t)other;
	burst = RTE_MIN(burst, (unsigned int)ADAPT_BURST_MAX);
	c->probe_left = (uint8_t)(burst - 1);
	c->probe_want = (uint8_t)(burst / 2);
	c->probe_got = 0;
	c->probe_more = ADAPT_BURST_MAX;
	a->n_probe++;
	return other;
}

bool
proto_rndv_offer_get(struct unio_request *req)
{
	const struct proto_lane *lane = &req->ep->lane;

	req->adapt = PROTO_ADAPT_RNDV;
	/* auto: the receiver chooses, so that it has the choice */
	return req->slen >= lane->split_min || lane->rndv_adapt ||
	       lane->rndv_scheme == UNIO_RNDV_SCHEME_GET;
}

void
proto_rndv_sent(struct unio_request *req, bool by_get, bool ok)
{
	struct proto_adapt *a = &req->ep->adapt;

	if (ok)
		a->n[by_get && req->slen >= req->ep->lane.split_min ? PROTO_ADAPT_SPLIT :
		     by_get ? PROTO_ADAPT_GET : PROTO_ADAPT_PIPE]++;
}

bool
proto_rndv_recv_pull(struct unio_request *req, struct unio_ep *ep, size_t size, bool offered)
{
	struct proto_adapt *a = &ep->adapt;
	unsigned int c = adapt_class(a, size), s;

	/* a forced scheme (or the auto one off the host) is timed too: ep info shows it */
	req->t_start = rte_rdtsc();
	if (offered && ep->lane.rndv_adapt)
		s = adapt_choose(a, &a->cls[c], req->t_start);
	else
		s = offered ? PROTO_ADAPT_GET : PROTO_ADAPT_PIPE;
	req->adapt = (uint8_t)(PROTO_ADAPT_TIMED | c |
			       (s == PROTO_ADAPT_PIPE ? PROTO_ADAPT_BY_PIPE : 0) |
			       (a->flight[s ^ 1] == 0 ? PROTO_ADAPT_PURE : 0));
	req->rndv_ep = ep;
	a->flight[s]++;
	a->flight_bytes += size;
	req->t_flight = a->flight_bytes;
	req->t_other = a->starts[s ^ 1];
	a->starts[s]++;
	return s == PROTO_ADAPT_GET;
}

void
proto_rndv_delivered(struct unio_request *req, bool by_get, bool ok)
{
	struct proto_adapt *a = &req->rndv_ep->adapt;
	unsigned int s = by_get ? PROTO_ADAPT_GET : PROTO_ADAPT_PIPE;
	unsigned int chosen = (req->adapt & PROTO_ADAPT_BY_PIPE) ? PROTO_ADAPT_PIPE :
			      PROTO_ADAPT_GET;
	struct proto_adapt_class *c;
	uint64_t now, x;

	if (!(req->adapt & PROTO_ADAPT_TIMED))
		return;
	req->adapt &= (uint8_t)~PROTO_ADAPT_TIMED;
	if (a->flight[chosen] != 0)   /* 0: the lane was set up again meanwhile */
		a->flight[chosen]--;
	a->flight_bytes -= RTE_MIN(a->flight_bytes, (uint64_t)req->info.length);
	if (ok)
		a->n_rx[s]++;
	/*
	 * A sample: done as chosen, started behind rendezvous of the same scheme only, and
	 * none of the other started meanwhile (a get started behind a pipeline runs, on the
	 * receiver's core, before the pipeline's fragments behind it in the FIFO are copied
	 * out: entry 39)
	 */
	if (!ok || s != chosen || !(req->adapt & PROTO_ADAPT_PURE) ||
	    req->t_other != a->starts[s ^ 1])
		return;
	now = rte_rdtsc();
	c = &a->cls[req->adapt & PROTO_ADAPT_CLASS_MASK];
	x = (now - req->t_start) * a->skew[s];
	/* a preemption (more than 4x the cost so far) counts as 4x */
	if (c->bytes[s] != 0)
		x = RTE_MIN(x, c->ticks[s] * 4 * req->t_flight / c->bytes[s] + 1);
	c->ticks[s] = c->ticks[s] - c->ticks[s] / 16 + x;
	c->bytes[s] = c->bytes[s] - c->bytes[s] / 16 + req->t_flight;
	c->seen[s] = now;
	c->all_ticks[s] += x;
	c->all_bytes[s] += req->t_flight;
	if (c->probe_want != 0 && s == c->probe)
		c->probe_got++;
}

void
proto_lane_init(struct unio_worker *w, struct proto_lane *lane, struct unio_tl_ep *tl_ep)
{
	lane->tl_ep = tl_ep;
	lane->iface = tl_ep->iface;
	lane->rx_conn_id = tl_ep->conn_id;   /* the peer sends on the same connection */
	lane_thresholds(&w->ctx->config, &tl_ep->iface->attr, tl_ep->cap, lane);
	adapt_init(&container_of(lane, struct unio_ep, lane)->adapt, lane);
}

/* A fresh random key for the worker's request ids (never the same in two workers). */
static void
id_key_new(struct unio_worker *w)
{
	uint32_t key[4];

	if (getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key)) {
		/* no entropy source: the ids are at least not the bare slots */
		uint64_t a = rte_rdtsc() ^ w->uuid, b = (uintptr_t)w ^ (a * 0x9e3779b97f4a7c15ull);

		PROTO_LOG(WARNING, "getrandom failed: request ids sealed with a weak key");
		memcpy(key, &a, sizeof(a));
		memcpy(key + 2, &b, sizeof(b));
	}
	proto_id_key_init(w->id_key, key);
}

unio_status_t
proto_worker_init(struct unio_worker *w)
{
	w->req_free = NULL;
	id_key_new(w);
	proto_match_init(w);
	for (unsigned int i = 0; i < w->n_ifaces; i++) {
		unio_status_t st = proto_set_handlers(w, w->ifaces[i]);

		if (st != UNIO_OK)
			return st;
	}
	return UNIO_OK;
}

void
proto_worker_fini(struct unio_worker *w)
{
	proto_match_fini(w);
	for (unsigned int i = 0; i < w->n_req_chunks; i++)
		free(w->req_chunks[i]);
	w->n_req_chunks = 0;
}

void
proto_rndv_print(const struct unio_ep *ep, FILE *f)
{
	const struct proto_adapt *a = &ep->adapt;
	double ns_per_kib = 1024 * 1e9 / (double)rte_get_tsc_hz();   /* from ticks per byte */

	fprintf(f, "#   rendezvous sent: %" PRIu64 " get, %" PRIu64 " pipeline, %" PRIu64
		" split\n", a->n[PROTO_ADAPT_GET], a->n[PROTO_ADAPT_PIPE],
		a->n[PROTO_ADAPT_SPLIT]);
	fprintf(f, "#   rendezvous received (timed): %" PRIu64 " get, %" PRIu64 " pipeline (%"
		PRIu64 " to probe)\n", a->n_rx[PROTO_ADAPT_GET], a->n_rx[PROTO_ADAPT_PIPE],
		a->n_probe);
	for (unsigned int i = 0; i < PROTO_ADAPT_CLASSES; i++) {
		const struct proto_adapt_class *c = &a->cls[i];
		size_t lo = (size_t)1 << (a->shift + i);
		double cost[2] = { 0, 0 }, all[2] = { 0, 0 };

		if (lo >= ep->lane.split_min)
			break;
		if (c->bytes[PROTO_ADAPT_GET] == 0 && c->bytes[PROTO_ADAPT_PIPE] == 0)
			continue;
		for (unsigned int s = 0; s < 2; s++) {
			if (c->bytes[s] != 0)
				cost[s] = (double)c->ticks[s] / (double)c->bytes[s] * ns_per_kib;
			if (c->all_bytes[s] != 0)
				all[s] = (double)c->all_ticks[s] / (double)c->all_bytes[s] *
					 ns_per_kib;
		}
		fprintf(f, "#   rendezvous from %zu: get %.0f, pipeline %.0f ns/KiB (all along"
			" %.0f, %.0f): %s\n", lo, cost[PROTO_ADAPT_GET], cost[PROTO_ADAPT_PIPE],
			all[PROTO_ADAPT_GET], all[PROTO_ADAPT_PIPE],
			!ep->lane.rndv_adapt ? "fixed" :
			c->bytes[PROTO_ADAPT_GET] == 0 ? "pipeline" :
			c->bytes[PROTO_ADAPT_PIPE] == 0 || !adapt_get_dearer(c) ? "get" :
			"pipeline");
	}
}

/* ---- selection printout ---- */

static const char *
scheme_name(int s)
{
	switch (s) {
	case UNIO_RNDV_SCHEME_GET: return "rendezvous get";
	case UNIO_RNDV_SCHEME_PIPELINE: return "rendezvous pipeline";
	default: return "rendezvous am";
	}
}

static void
print_lane(const struct proto_lane *l, const char *drv, FILE *f)
{
	const char *name;
	size_t next = 0;

	if (l->short_ok) {
		fprintf(f, "  0..%zu: eager short (%s)\n", l->max_short, drv);
		next = l->max_short + 1;
	}
	if (l->max_eager >= next && next < l->rndv_thresh) {
		fprintf(f, "  %zu..%zu: eager bcopy (%s)\n", next,
			RTE_MIN(l->max_eager, l->rndv_thresh - 1), drv);
		next = l->max_eager + 1;
	}
	if (next < l->rndv_thresh) {
		if (l->rndv_thresh == UNIO_SIZE_INF)
			fprintf(f, "  %zu..inf: eager multi-fragment (%s)\n", next, drv);
		else
			fprintf(f, "  %zu..%zu: eager multi-fragment (%s)\n", next,
				l->rndv_thresh - 1, drv);
	}
	if (l->rndv_thresh == UNIO_SIZE_INF)
		return;
	name = l->rndv_adapt ? "rendezvous get or pipeline by measure" :
	       scheme_name(l->rndv_scheme);
	if (l->split_min == UNIO_SIZE_INF)
		fprintf(f, "  %zu..inf: %s (%s)\n", l->rndv_thresh, name, drv);
	else if (l->split_min > l->rndv_thresh)
		fprintf(f, "  %zu..inf: %s, split get / put from %zu (%s)\n", l->rndv_thresh,
			name, l->split_min, drv);
	else
		fprintf(f, "  %zu..inf: rendezvous split get / put (%s)\n", l->rndv_thresh, drv);
}

static enum unio_tl_reach
reach_of(const char *peer_class)
{
	if (peer_class != NULL && strcmp(peer_class, "self") == 0)
		return UNIO_TL_REACH_SELF;
	if (peer_class != NULL && strcmp(peer_class, "host") == 0)
		return UNIO_TL_REACH_HOST;
	return UNIO_TL_REACH_NET;
}

void
unio_proto_print_selection(unio_context_t *ctx, const char *peer_class, FILE *f)
{
	enum unio_tl_reach want = reach_of(peer_class);
	struct unio_worker *w;
	struct proto_lane lane;

	if (ctx == NULL || f == NULL)
		return;
	w = unio_worker_create(ctx, NULL, NULL);
	if (w == NULL) {
		fprintf(f, "tag messages to a %s peer: no worker could be created\n", peer_class);
		return;
	}
	fprintf(f, "tag messages to a %s peer:\n", peer_class != NULL ? peer_class : "net");
	for (unsigned int r = want; r <= UNIO_TL_REACH_NET; r++) {
		for (unsigned int i = 0; i < w->n_ifaces; i++) {
			struct unio_tl_iface *ifc = w->ifaces[i];

			if (ifc->attr.reach != r)
				continue;
			memset(&lane, 0, sizeof(lane));
			lane_thresholds(&ctx->config, &ifc->attr, ifc->attr.cap, &lane);
			print_lane(&lane, ifc->driver->name, f);
			unio_worker_destroy(w);
			return;
		}
	}
	fprintf(f, "  no driver reaches a %s peer\n", peer_class);
	unio_worker_destroy(w);
}
