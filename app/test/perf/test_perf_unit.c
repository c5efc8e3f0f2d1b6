/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * unio-perf unit tests: the size parser, the command line, the histogram's percentiles and
 * the reporting conventions, with the sources under test included (no EAL needed).
 */

#include "../../perf/options.c"
#include "../../perf/stats.c"

#include <unistd.h>

#include "unio_test.h"

static int
opts_of(struct perf_opts *o, const char *const *args)
{
	char *argv[32];
	int argc = 0;

	argv[argc++] = (char *)"unio-perf";
	while (*args != NULL && argc < 31)
		argv[argc++] = (char *)*args++;
	argv[argc] = NULL;
	opterr = 0;
	return perf_parse_opts(argc, argv, o);
}

UNIO_TEST(perf_sizes_parse, fast)
{
	static const char *const bad[] = {
		"0", "64:8", "", "abc", "4x", ",", "8:", ":8", "-8", "1g:4g",
		"99999999999999999999", "0x40", " 8", "+8",
	};
	struct perf_opts o = { 0 };

	TEST_ASSERT_EQ(perf_parse_sizes("8,64,4k", &o), 0);
	TEST_ASSERT_EQ(o.n_sizes, 3);
	TEST_ASSERT_EQ(o.sizes[0], 8);
	TEST_ASSERT_EQ(o.sizes[1], 64);
	TEST_ASSERT_EQ(o.sizes[2], 4096);
	TEST_ASSERT_EQ(perf_parse_sizes("8:4m", &o), 0);
	TEST_ASSERT_EQ(o.n_sizes, 20);
	TEST_ASSERT_EQ(o.sizes[19], 4u << 20);
	TEST_ASSERT_EQ(perf_parse_sizes("1,1k:4k,1m", &o), 0);
	TEST_ASSERT_EQ(o.n_sizes, 5);
	TEST_ASSERT_EQ(o.sizes[3], 4096);
	TEST_ASSERT_EQ(o.sizes[4], 1u << 20);
	/* decimal only: a leading zero is not octal (it read "010" as 8) */
	TEST_ASSERT_EQ(perf_parse_sizes("010,1,1k:4k,1m", &o), 0);
	TEST_ASSERT_EQ(o.sizes[0], 10);
	TEST_ASSERT_EQ(perf_parse_sizes("1,1k:4k,1m", &o), 0);
	/* a failed parse leaves the previous list alone */
	for (unsigned int i = 0; i < RTE_DIM(bad); i++) {
		TEST_ASSERT(perf_parse_sizes(bad[i], &o) != 0, "'%s' accepted", bad[i]);
		TEST_ASSERT_EQ(o.n_sizes, 5);
	}
	/* more sizes than PERF_MAX_SIZES */
	TEST_ASSERT(perf_parse_sizes("1:1k,1:1k,1:1k,1:1k,1:1k,1:1k,1:1k", &o) != 0, "77 sizes");
	return TEST_OK;
}

UNIO_TEST(perf_opts_parse, fast)
{
	static const char *const good[] = { "-t", "tag_bw", "-s", "8,1m", "-n", "500", "-w",
					    "7", "-O", "32", "-p", "4242", "-V", "-f", "--csv",
					    "--json", "x.json", "--timeout", "3", "10.0.0.1",
					    NULL };
	const char *const *const bad[] = {
		(const char *const[]){ "-x", NULL },
		(const char *const[]){ "-t", "nope", NULL },
		(const char *const[]){ "-n", "0", NULL },
		(const char *const[]){ "-O", "1025", NULL },
		(const char *const[]){ "-p", "65536", NULL },
		(const char *const[]){ "-m", "cuda", NULL },
		(const char *const[]){ "-w", "-1", NULL },
		(const char *const[]){ "--loopback", "host", NULL },
		(const char *const[]){ "a", "b", NULL },
		(const char *const[]){ "--listen", "10.0.0", NULL },
	};
	static const char *const listen[] = { "--listen", "10.77.0.2", "-p", "13337", NULL };
	static const char *const help[] = { "-h", NULL };
	static const char *const dflt[] = { NULL };
	static const char *const iov[] = { "-D", "2", NULL };
	static const char *const am[] = { "-t", "am_lat", NULL };
	static const char *const put4[] = { "-t", "put_lat", "-s", "4", NULL };
	struct perf_opts o;

	TEST_ASSERT_EQ(opts_of(&o, good), 0);
	TEST_ASSERT_EQ(o.test, PERF_TAG_BW);
	TEST_ASSERT_EQ(o.n_sizes, 2);
	TEST_ASSERT_EQ(o.iters, 500);
	TEST_ASSERT_EQ(o.warmup, 7);
	TEST_ASSERT_EQ(o.window, 32);
	TEST_ASSERT_EQ(o.port, 4242);
	TEST_ASSERT(o.validate && o.final_only && o.csv, "flags not set");
	TEST_ASSERT(o.json_path != NULL && strcmp(o.json_path, "x.json") == 0, "json path");
	TEST_ASSERT(o.host != NULL && strcmp(o.host, "10.0.0.1") == 0, "host");
	TEST_ASSERT_EQ(o.timeout_s, 3);
	TEST_ASSERT_EQ(perf_check_supported(&o), 0);
	TEST_ASSERT_EQ(opts_of(&o, dflt), 0);
	TEST_ASSERT(o.test == PERF_TAG_LAT && o.n_sizes == 1 && o.sizes[0] == 8 &&
		    o.host == NULL && o.port == PERF_DEFAULT_PORT, "defaults");
	TEST_ASSERT(o.listen_addr == NULL, "listens on one address by default");
	TEST_ASSERT_EQ(opts_of(&o, listen), 0);
	TEST_ASSERT(o.listen_addr != NULL && strcmp(o.listen_addr, "10.77.0.2") == 0 &&
		    o.port == 13337, "--listen");
	TEST_ASSERT_EQ(opts_of(&o, help), 1);
	for (unsigned int i = 0; i < RTE_DIM(bad); i++)
		TEST_ASSERT(opts_of(&o, bad[i]) < 0, "bad command line %u accepted", i);
	/* parsed, but this build cannot run them: the caller exits 2 */
	TEST_ASSERT_EQ(opts_of(&o, iov), 0);
	TEST_ASSERT(perf_check_supported(&o) != 0, "-D 2 accepted");
	TEST_ASSERT_EQ(opts_of(&o, am), 0);
	TEST_ASSERT_EQ(perf_check_supported(&o), 0);
	TEST_ASSERT_EQ(opts_of(&o, put4), 0);
	TEST_ASSERT(perf_check_supported(&o) != 0, "put_lat of 4 bytes accepted");
	return TEST_OK;
}

static int
starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* A ucx_perftest user's options and test names: refused, each with the Unio way named. */
UNIO_TEST(perf_ucx_hints, fast)
{
	const char *const *const refused[] = {
		(const char *const[]){ "-x", "posix", NULL },
		(const char *const[]){ "-d", "eth0", NULL },
		(const char *const[]){ "-c", "1", NULL },
		(const char *const[]){ "-l", NULL },
		(const char *const[]){ "-D", "bcopy", NULL },
		(const char *const[]){ "-t", "ucp_put_lat", NULL },
		(const char *const[]){ "-t", NULL },
		(const char *const[]){ "--vdev=net_null0", NULL },
	};
	struct perf_opts o;
	char buf[256];

	for (unsigned int i = 0; i < RTE_DIM(refused); i++)
		TEST_ASSERT(opts_of(&o, refused[i]) < 0, "command line %u accepted", i);
	TEST_ASSERT(strstr(perf_opt_hint('x'), "UNIO_TLS") != NULL, "-x");
	TEST_ASSERT(strstr(perf_opt_hint('d'), "UNIO_NET_DEVICES") != NULL, "-d");
	TEST_ASSERT(strstr(perf_opt_hint('c'), "-l 1 --") != NULL, "-c");
	TEST_ASSERT(strstr(perf_opt_hint('l'), "--loopback") != NULL, "-l");
	TEST_ASSERT(perf_opt_hint('q') == NULL, "a hint for -q");
	TEST_ASSERT(strcmp(perf_test_hint("ucp_put_lat", buf, sizeof(buf)),
			   "ucx_perftest's ucp_put_lat is put_lat here; tests: tag_lat, tag_bw, "
			   "tag_sync_lat, am_lat, am_bw, put_lat, put_bw, get_lat, get_bw") == 0,
		    "%s", buf);
	TEST_ASSERT(starts_with(perf_test_hint("ucp_get", buf, sizeof(buf)),
				"ucx_perftest's ucp_get is get_lat or get_bw here; tests: "),
		    "%s", buf);
	TEST_ASSERT(starts_with(perf_test_hint("ucp_fadd", buf, sizeof(buf)),
				"Unio has no counterpart of ucx_perftest's ucp_fadd; tests: "),
		    "%s", buf);
	TEST_ASSERT(starts_with(perf_test_hint("tag_lt", buf, sizeof(buf)), "tests: tag_lat, "),
		    "%s", buf);
	/* every name the hints give is a test of this build */
	for (unsigned int i = 0; i < RTE_DIM(ucx_tests); i++)
		TEST_ASSERT(ucx_tests[i].unio == NULL ||
			    strstr(ucx_tests[i].unio, " or ") != NULL ||
			    perf_test_lookup(ucx_tests[i].unio) >= 0, "%s", ucx_tests[i].unio);
	return TEST_OK;
}

static int
near(double got, double want, double rel)
{
	return got >= want * (1 - rel) && got <= want * (1 + rel);
}

UNIO_TEST(perf_hist_percentiles, fast)
{
	static struct perf_hist h;

	perf_hist_reset(&h);
	TEST_ASSERT_EQ(perf_hist_percentile(&h, 0.5), 0);
	/* 1..100000 once each: the p-quantile is about p * 100000 */
	for (uint64_t v = 1; v <= 100000; v++)
		perf_hist_add(&h, v);
	TEST_ASSERT_EQ(h.count, 100000);
	TEST_ASSERT_EQ(h.min, 1);
	TEST_ASSERT_EQ(h.max, 100000);
	TEST_ASSERT(near((double)perf_hist_percentile(&h, 0.5), 50000, 0.02), "p50 %" PRIu64,
		    perf_hist_percentile(&h, 0.5));
	TEST_ASSERT(near((double)perf_hist_percentile(&h, 0.99), 99000, 0.02), "p99 %" PRIu64,
		    perf_hist_percentile(&h, 0.99));
	TEST_ASSERT(near((double)perf_hist_percentile(&h, 0.999), 99900, 0.02), "p99.9");
	TEST_ASSERT_EQ(perf_hist_percentile(&h, 1.0), 100000);
	/* small values are exact; one value clamps to itself */
	perf_hist_reset(&h);
	for (uint64_t v = 0; v < 64; v++)
		perf_hist_add(&h, v);
	TEST_ASSERT_EQ(perf_hist_percentile(&h, 0.5), 31);
	perf_hist_reset(&h);
	perf_hist_add(&h, 123456789);
	TEST_ASSERT_EQ(perf_hist_percentile(&h, 0.5), 123456789);
	TEST_ASSERT_EQ(perf_hist_percentile(&h, 0.999), 123456789);
	/* a 1 % tail shows in p99.9 and not in p50 */
	perf_hist_reset(&h);
	for (int i = 0; i < 9900; i++)
		perf_hist_add(&h, 1000);
	for (int i = 0; i < 100; i++)
		perf_hist_add(&h, 1000000);
	TEST_ASSERT(near((double)perf_hist_percentile(&h, 0.5), 1000, 0.02), "p50 with tail");
	TEST_ASSERT(near((double)perf_hist_percentile(&h, 0.999), 1000000, 0.02), "p99.9 tail");
	return TEST_OK;
}

/*
 * The timing queue in front of the histogram: what it holds goes in PERF_TQ_LEN at a time and
 * at a flush, every value exactly once, so the histogram ends as if each had been added.
 */
UNIO_TEST(perf_timing_queue, fast)
{
	static struct perf_hist direct, queued;
	static struct perf_tq q;
	const uint64_t n = 10 * PERF_TQ_LEN + 17;

	perf_hist_reset(&direct);
	perf_hist_reset(&queued);
	q.n = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t v = (i * 7919) % 5003 + (i % 97 == 0 ? 1000000 : 0);

		perf_hist_add(&direct, v);
		perf_tq_add(&q, &queued, v);
		/* full batches only until the flush */
		TEST_ASSERT_EQ(queued.count, (i + 1) / PERF_TQ_LEN * PERF_TQ_LEN);
		TEST_ASSERT_EQ(q.n, (i + 1) % PERF_TQ_LEN);
	}
	perf_tq_flush(&q, &queued);
	TEST_ASSERT_EQ(q.n, 0);
	TEST_ASSERT(memcmp(&direct, &queued, sizeof(direct)) == 0, "queued histogram differs");
	TEST_ASSERT_EQ(queued.count, n);
	perf_tq_flush(&q, &queued);   /* empty: nothing changes */
	TEST_ASSERT(memcmp(&direct, &queued, sizeof(direct)) == 0, "empty flush changed it");
	return TEST_OK;
}

UNIO_TEST(perf_result_conventions, fast)
{
	static struct perf_hist h;
	struct perf_result r;
	const uint64_t hz = 1000000000;   /* 1 cycle = 1 ns */

	perf_hist_reset(&h);
	for (int i = 0; i < 1000; i++)
		perf_hist_add(&h, 2000);
	/* ping-pong: half the round trip; bandwidth and rate from the one-way latency */
	perf_result_fill(&r, &h, PERF_TAG_LAT, 1 << 20, 1000, 2000 * 1000, hz);
	TEST_ASSERT(near(r.lat_p50_us, 1.0, 1e-9) && near(r.lat_avg_us, 1.0, 1e-9), "half RTT");
	TEST_ASSERT(near(r.bw_MBps, 1e6, 1e-9), "bw %f", r.bw_MBps);
	TEST_ASSERT(near(r.msg_rate, 1e6, 1e-9), "rate %f", r.msg_rate);
	/* streaming: per message, MB = 2^20 bytes */
	perf_result_fill(&r, &h, PERF_TAG_BW, 1 << 20, 1000, 2000 * 1000, hz);
	TEST_ASSERT(near(r.lat_p50_us, 2.0, 1e-9), "stream latency");
	TEST_ASSERT(near(r.bw_MBps, 500000, 1e-9), "stream bw %f", r.bw_MBps);
	TEST_ASSERT(near(r.msg_rate, 500000, 1e-9), "stream rate %f", r.msg_rate);
	/* nothing measured: zeros, no division by zero */
	perf_result_fill(&r, &h, PERF_TAG_BW, 8, 0, 0, hz);
	TEST_ASSERT(r.bw_MBps == 0 && r.lat_avg_us == 0, "empty result");
	return TEST_OK;
}

UNIO_TEST(perf_json_writer, fast)
{
	struct perf_result r[2] = {
		{ .test = PERF_TAG_LAT, .size = 8, .iters = 100, .lat_p50_us = 0.5 },
		{ .test = PERF_PUT_BW, .size = 65536, .iters = 100, .lat_p50_us = 7.25,
		  .memcpy_p50_us = 6.5, .memcpy_MBps = 9000.125 },
	};
	char path[] = "/tmp/unio-perf-json.XXXXXX", buf[2048];
	const char *second, *mc;
	int fd = mkstemp(path);
	FILE *f;
	size_t n;

	TEST_ASSERT(fd >= 0, "mkstemp");
	close(fd);
	TEST_ASSERT_EQ(perf_write_json(path, r, 2), 0);
	f = fopen(path, "r");
	n = f != NULL ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f != NULL)
		fclose(f);
	unlink(path);
	buf[n] = '\0';
	TEST_ASSERT(buf[0] == '[' && strstr(buf, "]\n") != NULL, "not an array:\n%s", buf);
	TEST_ASSERT(strstr(buf, "{\"test\": \"tag_lat\", \"size\": 8, \"iterations\": 100, "
			   "\"lat_p50_us\": 0.5000,") != NULL, "first record:\n%s", buf);
	second = strstr(buf, "\"size\": 65536");
	TEST_ASSERT(second != NULL && strstr(buf, "7.2500") != NULL, "second record:\n%s", buf);
	/* the memcpy reference only where it was measured (put_* / get_*), last in its record */
	mc = strstr(second, "\"memcpy_p50_us\": 6.5000, \"memcpy_MBps\": 9000.125}\n");
	TEST_ASSERT(mc != NULL && strstr(buf, "\"memcpy") == mc,
		    "memcpy fields missing, or in the record without them:\n%s", buf);
	TEST_ASSERT(perf_write_json("/nonexistent-dir/x.json", r, 2) != 0, "bad path accepted");
	return TEST_OK;
}
