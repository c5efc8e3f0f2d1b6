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

#include "unio_log.h"
#include "unio_proto.h"

/* Smallest tag rendezvous split between a pull and a put on one host (auto scheme). */
#define PROTO_SPLIT_MIN (256 * 1024)

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

static void
lane_thresholds(const struct unio_config *cfg, const struct unio_tl_iface_attr *a,
		uint64_t cap, struct proto_lane *lane)
{
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
	 * The first fragment of an eager message has the longer header.
	 */
	if (lane->max_eager > 64) {
		lane->frag_last = a->max_bcopy - sizeof(struct proto_frag_hdr);
		lane->frag = RTE_ALIGN_FLOOR(lane->frag_last, (size_t)RTE_CACHE_LINE_SIZE);
		lane->frag_first = a->max_bcopy - sizeof(struct proto_eager_first_hdr);
	} else {
		lane->frag = lane->frag_last = lane->frag_first = 0;
	}
	lane->rndv_scheme = cfg->rndv_scheme;
	/*
	 * auto: on one host the pipelined scheme (both cores copy through the FIFO at once)
	 * beats a single-core CMA pull (measured: doc/guides/protocols.md); elsewhere, and on
	 * lanes whose put and get the target's driver carries out over the same connection
	 * (RMA_TARGET: tcp), the receiver pulls when the lane can.  On such a lane a pipeline
	 * or split moves the same bytes through the same socket with more frames and round
	 * trips (measured: "Performance log" in doc/guides/drivers/tcp.md).  split: the split
	 * wherever the lane can get and put (the auto choice on one host with one-sided copies).
	 */
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
	 * auto on one host: from PROTO_SPLIT_MIN the tag rendezvous is split, the receiver
	 * pulls half and the sender puts the other half, both single-copy (CMA) and at once
	 * (measured: "Performance log" in doc/guides/protocols.md).
	 */
	lane->split_min = UNIO_SIZE_INF;
	if (((cfg->rndv_scheme == UNIO_RNDV_SCHEME_AUTO && a->reach == UNIO_TL_REACH_HOST &&
	      !(cap & UNIO_TL_CAP_RMA_TARGET)) || cfg->rndv_scheme == UNIO_RNDV_SCHEME_SPLIT) &&
	    (cap & UNIO_TL_CAP_GET_ZCOPY) && (cap & UNIO_TL_CAP_PUT_ZCOPY))
		lane->split_min = RTE_MAX((size_t)PROTO_SPLIT_MIN, lane->rndv_thresh);
	lane_zcopy_thresh(cfg, a, cap, lane);
}

void
proto_lane_init(struct unio_worker *w, struct proto_lane *lane, struct unio_tl_ep *tl_ep)
{
	lane->tl_ep = tl_ep;
	lane->iface = tl_ep->iface;
	lane->rx_conn_id = tl_ep->conn_id;   /* the peer sends on the same connection */
	lane_thresholds(&w->ctx->config, &tl_ep->iface->attr, tl_ep->cap, lane);
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
	if (l->split_min == UNIO_SIZE_INF)
		fprintf(f, "  %zu..inf: %s (%s)\n", l->rndv_thresh, scheme_name(l->rndv_scheme),
			drv);
	else if (l->split_min > l->rndv_thresh)
		fprintf(f, "  %zu..inf: %s, split get / put from %zu (%s)\n", l->rndv_thresh,
			scheme_name(l->rndv_scheme), l->split_min, drv);
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
