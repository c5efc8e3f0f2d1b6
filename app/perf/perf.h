/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UNIO_PERF_H
#define UNIO_PERF_H

/*
 * unio-perf internals: options, statistics, the two sides of a run, interactive mode.
 * Not installed; only app/perf includes it.
 */

#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <unio.h>

#define PERF_MAX_SIZES   64
#define PERF_MAX_WINDOW  1024
#define PERF_MAX_MSG     (1ull << 30)
#define PERF_DEFAULT_PORT 13337

/* Exit codes: 0 success, 1 run-time error, 2 usage or unsupported request. */
#define PERF_EXIT_OK    0
#define PERF_EXIT_ERR   1
#define PERF_EXIT_USAGE 2

enum perf_test {
	PERF_TAG_LAT,
	PERF_TAG_BW,
	PERF_TAG_SYNC_LAT,
	PERF_AM_LAT,
	PERF_AM_BW,
	PERF_PUT_LAT,
	PERF_PUT_BW,
	PERF_GET_LAT,
	PERF_GET_BW,
	PERF_TEST_COUNT,
};

struct perf_test_info {
	const char *name;
	int supported;      /* implemented in this build */
	int pingpong;       /* latency test: report half the round trip */
	int sync;           /* unio_tag_send_sync */
	const char *desc;
};

extern const struct perf_test_info perf_tests[PERF_TEST_COUNT];

/* Everything the command line sets. */
struct perf_opts {
	enum perf_test test;
	size_t sizes[PERF_MAX_SIZES];
	unsigned int n_sizes;
	uint64_t iters;
	uint64_t warmup;
	unsigned int window;
	uint16_t port;
	unsigned int iov;
	int validate;
	int final_only;
	int ep_info;          /**< --ep-info: unio_ep_print_info() before the close */
	int csv;
	int loopback;
	int interactive;
	double timeout_s;
	const char *json_path;
	const char *cmdline_file;
	const char *host;
	const char *listen_addr;        /* server: IPv4 to listen on (NULL: any) */
};

/* Log-linear histogram of TSC cycles: 64 sub-buckets per power of two (~1.6 % error). */
#define PERF_HIST_SUB_BITS 6
#define PERF_HIST_SUB      (1u << PERF_HIST_SUB_BITS)
#define PERF_HIST_BUCKETS  ((64 - PERF_HIST_SUB_BITS + 1) * PERF_HIST_SUB)

/* count and sum apart: side by side, the compiler pairs their updates in a vector register
 * (seven instructions a sample instead of two) */
struct perf_hist {
	uint64_t count;
	uint64_t min;
	uint64_t sum;
	uint64_t max;
	uint64_t b[PERF_HIST_BUCKETS];
};

/*
 * A timing queue in front of the histogram (ucx_perftest keeps one too): a loop stores each
 * iteration's time in the next entry and the histogram takes PERF_TQ_LEN of them at a time.
 * Adding to the histogram at once puts a read-modify-write whose address (the bucket) depends
 * on the clock read just before into every iteration: on the AMD EPYC host that made an
 * 8-byte put_bw iteration 30 ns instead of 20 (doc/guides/am-rma.md, "8-byte put_bw on the
 * AMD host"); the queue's address depends only on its count.
 */
#define PERF_TQ_LEN 64

struct perf_tq {
	unsigned int n;
	uint64_t v[PERF_TQ_LEN];
};

/* One measured size. */
struct perf_result {
	enum perf_test test;
	size_t size;
	uint64_t iters;
	double lat_p50_us;
	double lat_p99_us;
	double lat_p999_us;
	double lat_avg_us;
	double bw_MBps;
	double msg_rate;
	double elapsed_s;
	double memcpy_p50_us;   /* put_* / get_*: one core's memcpy of the same size, same run */
	double memcpy_MBps;     /* ... its mean as bandwidth (0: not measured) */
};

/* Progress of the running size, read by the live line and "show stats" (another thread). */
struct perf_live {
	uint64_t done;          /* timed iterations completed */
	uint64_t total;         /* timed iterations planned */
	uint64_t tsc_start;     /* first timed iteration */
	uint64_t size;
	uint32_t size_idx;
	uint32_t running;
};

/* One side of a run (client or server), with its own context and worker. */
struct perf_side {
	const struct perf_opts *o;
	int is_server;
	int quiet;                      /* no live line, no table (loopback server, -i) */
	volatile int *stop;             /* set by stop / SIGINT: end the current size early */
	struct perf_live *live;
	unio_context_t *ctx;
	unio_worker_t *worker;
	unio_listener_t *listener;
	unio_ep_t *ep;
	unio_conn_request_t *conn_req;
	volatile int ep_failed;
	unio_status_t ep_status;
	uint64_t timeout_tsc;
	uint16_t bound_port;            /* server: the port it listens on */
	volatile int listening;         /* server: bound_port is valid */
	volatile int finished;          /* the side's thread returned */
	int rc;                         /* its result: 0 or -1 */
	struct perf_hist hist;
	struct perf_tq tq;              /* every loop's samples, in front of hist */
	struct perf_result results[PERF_MAX_SIZES];
	unsigned int n_results;
};

/* options.c */
int perf_parse_opts(int argc, char **argv, struct perf_opts *o);
int perf_parse_sizes(const char *s, struct perf_opts *o);
int perf_test_lookup(const char *name);
const char *perf_test_hint(const char *name, char *buf, size_t len);
const char *perf_opt_hint(int opt);
int perf_check_supported(const struct perf_opts *o);
void perf_usage(FILE *f);
void perf_print_config(const struct perf_opts *o, FILE *f);

/* stats.c */
void perf_hist_reset(struct perf_hist *h);
void perf_hist_add(struct perf_hist *h, uint64_t v);
uint64_t perf_hist_percentile(const struct perf_hist *h, double p);
void perf_tq_flush(struct perf_tq *q, struct perf_hist *h);

/* Record @p v; the histogram has it after the next perf_tq_flush() at the latest. */
static inline void
perf_tq_add(struct perf_tq *q, struct perf_hist *h, uint64_t v)
{
	q->v[q->n] = v;
	if (__builtin_expect(++q->n == PERF_TQ_LEN, 0))
		perf_tq_flush(q, h);
}
void perf_result_fill(struct perf_result *r, const struct perf_hist *h, enum perf_test t,
		      size_t size, uint64_t iters, uint64_t elapsed_tsc, uint64_t hz);
void perf_print_header(FILE *f);
void perf_print_row(FILE *f, const struct perf_result *r);
void perf_print_final_line(FILE *f, const struct perf_result *r);
void perf_print_memcpy(FILE *f, const struct perf_result *r);
void perf_print_csv(FILE *f, const struct perf_result *r, unsigned int n);
int perf_write_json(const char *path, const struct perf_result *r, unsigned int n);
void perf_live_print(FILE *f, enum perf_test t, const struct perf_live *l,
		     uint64_t *last_done, uint64_t *last_tsc);

/* side.c: connection setup and the control exchange */
int perf_side_open(struct perf_side *s);
void perf_side_close(struct perf_side *s);
int perf_server_accept(struct perf_side *s);
int perf_client_connect(struct perf_side *s, uint16_t port);
int perf_run_client(struct perf_side *s);
int perf_run_server(struct perf_side *s);
void perf_report(const struct perf_side *s);

/* run.c: serve, connect, or both in one process (the server on another lcore or thread) */
int perf_run(const struct perf_opts *o, struct perf_side *cli, struct perf_side *srv,
	     volatile int *stop, struct perf_live *live, int interactive);

int perf_thread_start(pthread_t *th, void *(*fn)(void *), void *arg);

/* xfer.c: the data phase of am_lat, am_bw, put_*, get_* (side.c runs the control exchange) */
struct perf_xfer {
	enum perf_test test;
	size_t size;
	uint64_t iters;
	uint64_t warmup;
	unsigned int window;
	int validate;
	uint64_t ctrl_tag;      /* server: the END control message ends the loop ... */
	void *ctrl_buf;         /* ... and is received here */
	size_t ctrl_len;
	size_t ctrl_got;        /* its length */
	uint64_t done;          /* client: iterations (streaming: all sent, warmup included) */
	uint64_t elapsed;       /* TSC cycles of the timed part */
	uint64_t tsc_start;     /* when the first timed iteration started */
	int timed_end;          /* client: elapsed ends when the last operation completed */
	uint64_t received;      /* server: AMs handled */
	uint64_t bad_iter;      /* server: first payload mismatch, UINT64_MAX when none */
	double memcpy_p50_us;   /* client, put_* / get_*: the memcpy reference (see xfer.c) */
	double memcpy_MBps;
	void *state;            /* client: kept by perf_xfer_client() for perf_xfer_release() */
};

/*
 * The client's data phase.  Its buffer (whose key the server holds) stays mapped until
 * perf_xfer_release(), which the caller runs after the server's FIN: a server slow to
 * unpack the key must not find it stale.
 */
int perf_xfer_client(struct perf_side *s, struct perf_xfer *x);
void perf_xfer_release(struct perf_xfer *x);
int perf_xfer_server(struct perf_side *s, struct perf_xfer *x);

/* interactive.c */
int perf_interactive(struct perf_opts *o);

#endif /* UNIO_PERF_H */
