/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tag matching.
 *
 * Posted receives: those with a full mask sit in a hash keyed by tag; every other mask
 * value has its own "mask class", a hash keyed by (tag & mask).  Every receive carries a
 * sequence number, so an arrival looks at the head of one bucket per class (plus the exact
 * one) and takes the oldest candidate: O(1 + number of distinct masks), ordered correctly
 * against wildcards.  Buckets are FIFO lists; a bucket may hold several keys, the walk skips
 * the others.
 *
 * Unexpected messages: one list in arrival order (wildcard receives and probes walk it) and
 * a hash by tag (full-mask receives look at one bucket).
 */

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "unio_log.h"
#include "unio_proto.h"

#define bucket_of proto_bucket_of

void
proto_match_init(struct unio_worker *w)
{
	for (unsigned int i = 0; i < PROTO_HASH_BUCKETS; i++) {
		TAILQ_INIT(&w->exp_exact[i]);
		TAILQ_INIT(&w->unexp_hash[i]);
	}
	TAILQ_INIT(&w->mclasses);
	TAILQ_INIT(&w->unexp);
}

void
proto_match_fini(struct unio_worker *w)
{
	struct proto_mclass *mc;
	struct proto_unexp *ux;

	while ((mc = TAILQ_FIRST(&w->mclasses)) != NULL) {
		TAILQ_REMOVE(&w->mclasses, mc, link);
		free(mc);
	}
	while ((ux = TAILQ_FIRST(&w->unexp)) != NULL) {
		proto_unexp_remove(w, ux);
		proto_unexp_free(w, ux);
	}
	while ((ux = w->ux_free) != NULL) {
		w->ux_free = TAILQ_NEXT(ux, link);
		free(ux);
	}
}

static struct proto_mclass *
mclass_get(struct unio_worker *w, uint64_t mask)
{
	struct proto_mclass *mc;

	TAILQ_FOREACH(mc, &w->mclasses, link)
		if (mc->mask == mask)
			return mc;
	mc = calloc(1, sizeof(*mc));
	if (mc == NULL)
		return NULL;
	mc->mask = mask;
	for (unsigned int i = 0; i < PROTO_HASH_BUCKETS; i++)
		TAILQ_INIT(&mc->bucket[i]);
	TAILQ_INSERT_TAIL(&w->mclasses, mc, link);
	return mc;
}

unio_status_t
proto_exp_add(struct unio_worker *w, struct unio_request *req)
{
	if (req->rmask == UINT64_MAX) {
		proto_exp_add_exact(w, req);
		return UNIO_OK;
	}
	req->mclass = mclass_get(w, req->rmask);
	if (req->mclass == NULL)
		return UNIO_ERR_NO_MEMORY;
	req->mclass->count++;
	w->n_exp_masked++;
	TAILQ_INSERT_TAIL(&req->mclass->bucket[bucket_of(req->rtag & req->rmask)], req, link);
	req->seq = ++w->recv_seq;
	req->posted = true;
	return UNIO_OK;
}

void
proto_exp_remove(struct unio_worker *w, struct unio_request *req)
{
	req->posted = false;
	if (req->mclass == NULL) {
		TAILQ_REMOVE(&w->exp_exact[bucket_of(req->rtag)], req, link);
		w->n_exp_exact--;
		return;
	}
	TAILQ_REMOVE(&req->mclass->bucket[bucket_of(req->rtag & req->rmask)], req, link);
	req->mclass->count--;
	w->n_exp_masked--;
}

static struct unio_request *
bucket_first(struct req_list *b, uint64_t key, uint64_t mask)
{
	struct unio_request *r;

	TAILQ_FOREACH(r, b, link)
		if ((r->rtag & mask) == key)
			return r;
	return NULL;
}

/* An arrival while receives with other masks are posted: the oldest candidate of all. */
static __rte_noinline struct unio_request *
exp_match_masked(struct unio_worker *w, uint64_t tag, struct unio_request *best)
{
	struct proto_mclass *mc;
	struct unio_request *r;

	TAILQ_FOREACH(mc, &w->mclasses, link) {
		if (mc->count == 0)
			continue;
		r = bucket_first(&mc->bucket[bucket_of(tag & mc->mask)], tag & mc->mask,
				 mc->mask);
		if (r != NULL && (best == NULL || r->seq < best->seq))
			best = r;
	}
	if (best != NULL)
		proto_exp_remove(w, best);
	return best;
}

struct unio_request *
proto_exp_match(struct unio_worker *w, uint64_t tag)
{
	struct req_list *b = &w->exp_exact[bucket_of(tag)];
	struct unio_request *best = w->n_exp_exact != 0 ? bucket_first(b, tag, UINT64_MAX) : NULL;

	if (unlikely(w->n_exp_masked != 0))
		return exp_match_masked(w, tag, best);
	if (best != NULL) {   /* proto_exp_remove() of an exact receive, its bucket known */
		best->posted = false;
		TAILQ_REMOVE(b, best, link);
		w->n_exp_exact--;
	}
	return best;
}

/*
 * The buffer of a large unexpected message, whose length the peer announced: mapped, so
 * that a length no memory can back is refused (NULL) instead of ending the process (as
 * malloc does under a sanitizer), and pages are only used as the data arrives.
 */
#define PROTO_UNEXP_MMAP (64u << 20)

static void *
unexp_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

struct proto_unexp *
proto_unexp_alloc(struct unio_worker *w, size_t len)
{
	struct proto_unexp *ux = w->ux_free;

	if (ux != NULL)
		w->ux_free = TAILQ_NEXT(ux, link);
	else
		ux = malloc(sizeof(*ux));
	if (ux == NULL)
		return NULL;
	RTE_BUILD_BUG_ON(offsetof(struct proto_unexp, rts) % 16 != 0);
	proto_clear16(ux, offsetof(struct proto_unexp, rts));
	ux->length = len;
	if (len <= sizeof(ux->inl)) {
		ux->data = ux->inl;
		return ux;
	}
	if (len > w->ctx->config.unexp_mem - RTE_MIN(w->unexp_bytes, w->ctx->config.unexp_mem))
		ux->data = NULL;   /* past UNIO_UNEXP_MEM */
	else
		ux->data = len < PROTO_UNEXP_MMAP ? malloc(len) : unexp_map(len);
	if (ux->data == NULL) {
		proto_unexp_free(w, ux);
		return NULL;
	}
	w->unexp_bytes += len;
	return ux;
}

void
proto_unexp_free(struct unio_worker *w, struct proto_unexp *ux)
{
	if (ux->data != NULL && ux->data != ux->inl) {
		w->unexp_bytes -= ux->length;
		if (ux->length < PROTO_UNEXP_MMAP)
			free(ux->data);
		else
			munmap(ux->data, ux->length);
	}
	ux->data = NULL;
	TAILQ_NEXT(ux, link) = w->ux_free;
	w->ux_free = ux;
}

void
proto_unexp_add(struct unio_worker *w, struct proto_unexp *ux)
{
	TAILQ_INSERT_TAIL(&w->unexp, ux, link);
	TAILQ_INSERT_TAIL(&w->unexp_hash[bucket_of(ux->tag)], ux, hlink);
	w->n_unexp++;
}

void
proto_unexp_remove(struct unio_worker *w, struct proto_unexp *ux)
{
	TAILQ_REMOVE(&w->unexp, ux, link);
	TAILQ_REMOVE(&w->unexp_hash[bucket_of(ux->tag)], ux, hlink);
	w->n_unexp--;
}

struct proto_unexp *
proto_unexp_match(struct unio_worker *w, uint64_t tag, uint64_t mask)
{
	struct proto_unexp *ux;

	if (w->n_unexp == 0)
		return NULL;
	if (mask == UINT64_MAX) {
		TAILQ_FOREACH(ux, &w->unexp_hash[bucket_of(tag)], hlink)
			if (ux->tag == tag)
				return ux;
		return NULL;
	}
	TAILQ_FOREACH(ux, &w->unexp, link)
		if (((ux->tag ^ tag) & mask) == 0)
			return ux;
	return NULL;
}
