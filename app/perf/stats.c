/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * unio-perf statistics and reports: a log-linear histogram of per-iteration times (constant
 * memory, no sorting), the live line, the final table, and the CSV and JSON writers.
 *
 * Conventions (the same as ucx_perftest, so the two tools compare directly):
 * - ping-pong tests report half the round trip;
 * - MB/s means 2^20 bytes per second;
 * - latency tests: bandwidth = size / one-way latency, rate = 1 / one-way latency;
 *   streaming tests: bandwidth and rate over the whole timed run.
 */

#include <errno.h>
#include <string.h>

#include <rte_common.h>
#include <rte_cycles.h>

#include "perf.h"

#define MB (1024.0 * 1024.0)

void
perf_hist_reset(struct perf_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

static unsigned int
bucket_of(uint64_t v)
{
	unsigned int msb, shift;

	if (v < PERF_HIST_SUB)
		return (unsigned int)v;
	msb = 63u - (unsigned int)__builtin_clzll(v);
	shift = msb - PERF_HIST_SUB_BITS;
	return shift * PERF_HIST_SUB + (unsigned int)(v >> shift);
}

/* The middle of bucket @p idx. */
static uint64_t
bucket_value(unsigned int idx)
{
	unsigned int shift;

	if (idx < 2 * PERF_HIST_SUB)
		return idx;
	shift = idx / PERF_HIST_SUB - 1;
	return ((uint64_t)(idx - shift * PERF_HIST_SUB) << shift) + ((1ull << shift) >> 1);
}

void
perf_hist_add(struct perf_hist *h, uint64_t v)
{
	h->b[bucket_of(v)]++;
	h->count++;
	h->sum += v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

/* Move what @p q holds into @p h. */
void
perf_tq_flush(struct perf_tq *q, struct perf_hist *h)
{
	for (unsigned int i = 0; i < q->n; i++)
		perf_hist_add(h, q->v[i]);
	q->n = 0;
}

/* The @p p quantile (0 < p <= 1), clamped to the observed minimum and maximum. */
uint64_t
perf_hist_percentile(const struct perf_hist *h, double p)
{
	uint64_t rank, seen = 0, v;

	if (h->count == 0)
		return 0;
	rank = (uint64_t)(p * (double)h->count + 0.999999);
	if (rank == 0)
		rank = 1;
	if (rank >= h->count)
		return h->max;
	for (unsigned int i = 0; i < PERF_HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= rank) {
			v = bucket_value(i);
			v = v > h->max ? h->max : v;
			return v < h->min ? h->min : v;
		}
	}
	return h->max;
}

void
perf_result_fill(struct perf_result *r, const struct perf_hist *h, enum perf_test t,
		 size_t size, uint64_t iters, uint64_t elapsed_tsc, uint64_t hz)
{
	double to_us = 1e6 / (double)hz;
	double div = perf_tests[t].pingpong ? 2.0 : 1.0;

	memset(r, 0, sizeof(*r));
	r->test = t;
	r->size = size;
	r->iters = iters;
	r->elapsed_s = (double)elapsed_tsc / (double)hz;
	if (iters == 0 || elapsed_tsc == 0)
		return;
	r->lat_p50_us = (double)perf_hist_percentile(h, 0.50) * to_us / div;
	r->lat_p99_us = (double)perf_hist_percentile(h, 0.99) * to_us / div;
	r->lat_p999_us = (double)perf_hist_percentile(h, 0.999) * to_us / div;
	r->lat_avg_us = r->elapsed_s * 1e6 / (double)iters / div;
	if (perf_tests[t].pingpong) {
		r->bw_MBps = (double)size / (r->lat_avg_us * 1e-6) / MB;
		r->msg_rate = 1e6 / r->lat_avg_us;
	} else {
		r->bw_MBps = (double)size * (double)iters / r->elapsed_s / MB;
		r->msg_rate = (double)iters / r->elapsed_s;
	}
}

#define RULE "+--------------+----------+------------+-----------+-----------+-----------+" \
	     "-----------+------------+--------------+\n"

void
perf_print_header(FILE *f)
{
	fprintf(f, RULE "| %-12s | %8s | %10s | %9s | %9s | %9s | %9s | %10s | %12s |\n"
		"| %-12s | %8s | %10s | %9s | %9s | %9s | %9s | %10s | %12s |\n" RULE,
		"test", "size", "iterations", "p50", "p99", "p99.9", "average", "bandwidth",
		"message rate", "", "(bytes)", "", "(usec)", "(usec)", "(usec)", "(usec)",
		"(MB/s)", "(msg/s)");
}

void
perf_print_row(FILE *f, const struct perf_result *r)
{
	fprintf(f, "| %-12s | %8zu | %10" PRIu64 " | %9.3f | %9.3f | %9.3f | %9.3f | %10.2f |"
		" %12.0f |\n", perf_tests[r->test].name, r->size, r->iters, r->lat_p50_us,
		r->lat_p99_us, r->lat_p999_us, r->lat_avg_us, r->bw_MBps, r->msg_rate);
}

void
perf_print_final_line(FILE *f, const struct perf_result *r)
{
	fprintf(f, "Final: %s size=%zu iterations=%" PRIu64 " lat_p50_us=%.3f lat_p99_us=%.3f "
		"lat_p999_us=%.3f lat_avg_us=%.3f bw_MBps=%.2f msg_rate=%.0f\n",
		perf_tests[r->test].name, r->size, r->iters, r->lat_p50_us, r->lat_p99_us,
		r->lat_p999_us, r->lat_avg_us, r->bw_MBps, r->msg_rate);
}

/* put_* / get_*: the same-run memcpy reference under the row (nothing for other tests) */
void
perf_print_memcpy(FILE *f, const struct perf_result *r)
{
	if (r->memcpy_MBps <= 0)
		return;
	fprintf(f, "  memcpy of %zu bytes on one core, same run: p50 %.3f us, %.2f MB/s; "
		"%s / memcpy %.3f (bandwidth), %.3f (p50)\n", r->size, r->memcpy_p50_us,
		r->memcpy_MBps, perf_tests[r->test].name, r->bw_MBps / r->memcpy_MBps,
		r->lat_p50_us > 0 ? r->memcpy_p50_us / r->lat_p50_us : 0.0);
}

void
perf_print_csv(FILE *f, const struct perf_result *r, unsigned int n)
{
	fprintf(f, "test,size,iterations,lat_p50_us,lat_p99_us,lat_p999_us,lat_avg_us,"
		"bw_MBps,msg_rate\n");
	for (unsigned int i = 0; i < n; i++)
		fprintf(f, "%s,%zu,%" PRIu64 ",%.4f,%.4f,%.4f,%.4f,%.3f,%.1f\n",
			perf_tests[r[i].test].name, r[i].size, r[i].iters, r[i].lat_p50_us,
			r[i].lat_p99_us, r[i].lat_p999_us, r[i].lat_avg_us, r[i].bw_MBps,
			r[i].msg_rate);
}

/*
 * A JSON array with one object per size.  The bandwidth in significant digits: a round trip
 * of 8 bytes that averaged 10 ms (a loaded host) is 0.0008 MB/s, not 0.  Returns 0 or -1
 * (message printed).
 */
int
perf_write_json(const char *path, const struct perf_result *r, unsigned int n)
{
	FILE *f = fopen(path, "w");
	int err;

	if (f == NULL) {
		fprintf(stderr, "unio-perf: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	fprintf(f, "[\n");
	for (unsigned int i = 0; i < n; i++) {
		fprintf(f, "  {\"test\": \"%s\", \"size\": %zu, \"iterations\": %" PRIu64 ", "
			"\"lat_p50_us\": %.4f, \"lat_p99_us\": %.4f, \"lat_p999_us\": %.4f, "
			"\"lat_avg_us\": %.4f, \"bw_MBps\": %.6g, \"msg_rate\": %.1f, "
			"\"elapsed_s\": %.6f", perf_tests[r[i].test].name, r[i].size,
			r[i].iters, r[i].lat_p50_us, r[i].lat_p99_us, r[i].lat_p999_us,
			r[i].lat_avg_us, r[i].bw_MBps, r[i].msg_rate, r[i].elapsed_s);
		if (r[i].memcpy_MBps > 0)
			fprintf(f, ", \"memcpy_p50_us\": %.4f, \"memcpy_MBps\": %.3f",
				r[i].memcpy_p50_us, r[i].memcpy_MBps);
		fprintf(f, "}%s\n", i + 1 < n ? "," : "");
	}
	fprintf(f, "]\n");
	err = ferror(f);
	if (fclose(f) != 0 || err) {
		fprintf(stderr, "unio-perf: error writing %s\n", path);
		return -1;
	}
	return 0;
}

/* The live line: what happened since the previous one (like testpmd --stats-period). */
void
perf_live_print(FILE *f, enum perf_test t, const struct perf_live *l, uint64_t *last_done,
		uint64_t *last_tsc)
{
	uint64_t now = rte_rdtsc(), hz = rte_get_tsc_hz();
	uint64_t done = __atomic_load_n(&l->done, __ATOMIC_RELAXED);
	uint64_t d = done - *last_done;
	double secs = (double)(now - *last_tsc) / (double)hz;
	double rate = secs > 0 ? (double)d / secs : 0;
	double lat = d > 0 ? secs * 1e6 / (double)d / (perf_tests[t].pingpong ? 2.0 : 1.0) : 0;

	fprintf(f, "[%s %" PRIu64 " B] %" PRIu64 "/%" PRIu64 " iterations  lat %.3f us  "
		"%.2f MB/s  %.0f msg/s\n", perf_tests[t].name, l->size, done, l->total, lat,
		rate * (double)l->size / MB, rate);
	fflush(f);
	*last_done = done;
	*last_tsc = now;
}
