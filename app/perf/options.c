/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * unio-perf command line: tests, sizes (lists and sweeps), counts, and the checks that turn a
 * request this build cannot serve into a clear error.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

const struct perf_test_info perf_tests[PERF_TEST_COUNT] = {
	[PERF_TAG_LAT] = { "tag_lat", 1, 1, 0, "tagged ping-pong latency" },
	[PERF_TAG_BW] = { "tag_bw", 1, 0, 0, "tagged streaming bandwidth" },
	[PERF_TAG_SYNC_LAT] = { "tag_sync_lat", 1, 1, 1, "tag_send_sync ping-pong latency" },
	[PERF_AM_LAT] = { "am_lat", 1, 1, 0, "active message ping-pong latency" },
	[PERF_AM_BW] = { "am_bw", 1, 0, 0, "active message bandwidth" },
	[PERF_PUT_LAT] = { "put_lat", 1, 1, 0, "put latency" },
	[PERF_PUT_BW] = { "put_bw", 1, 0, 0, "put bandwidth" },
	[PERF_GET_LAT] = { "get_lat", 1, 0, 0, "get latency" },
	[PERF_GET_BW] = { "get_bw", 1, 0, 0, "get bandwidth" },
};

void
perf_usage(FILE *f)
{
	fprintf(f,
		"usage: unio-perf [EAL args --] [options] [HOST]\n"
		"  without HOST: serve one client on -p PORT; with HOST: connect and run\n"
		"  -t TEST        tag_lat (default), tag_bw, tag_sync_lat, am_lat, am_bw,\n"
		"                 put_lat (sizes >= 8), put_bw, get_lat, get_bw\n"
		"  -s SIZES       list and/or doubling sweeps: 8,64,4k or 8:4m (default 8)\n"
		"  -n ITERS       timed iterations per size (default 100000)\n"
		"  -w WARMUP      untimed iterations first (default 1000)\n"
		"  -O WINDOW      outstanding messages for *_bw (default 16, max %d)\n"
		"  -p PORT        TCP port of the connection setup (default %d)\n"
		"  -m MEM         memory type: host (only host today)\n"
		"  -D IOV         iov count: 1 (only 1 today)\n"
		"  -V             validate: every payload carries a pattern the receiver checks\n"
		"  -f             print the final line per size only\n"
		"  --csv          CSV on stdout instead of the table\n"
		"  --json FILE    one JSON record per size\n"
		"  --ep-info      print the endpoint's lane and rendezvous counts at the end\n"
		"  --loopback     both sides in this process, the server on the second lcore\n"
		"  --listen IP    server: listen on this IPv4 only (an ethdev iface's own address\n"
		"                 with -p its UDP port: no kernel socket at all)\n"
		"  --timeout SEC  fail when an operation makes no progress this long (default 10)\n"
		"  -i             interactive: start, stop, show stats, show config, set, quit\n"
		"  --cmdline-file FILE  run interactive commands from FILE\n"
		"  -h             this help\n", PERF_MAX_WINDOW, PERF_DEFAULT_PORT);
}

int
perf_test_lookup(const char *name)
{
	for (int i = 0; i < PERF_TEST_COUNT; i++)
		if (strcmp(perf_tests[i].name, name) == 0)
			return i;
	return -1;
}

/* ucx_perftest's test names and what unio-perf calls them (NULL: no such test here). */
static const struct { const char *ucx, *unio; } ucx_tests[] = {
	{ "ucp_put_lat", "put_lat" }, { "ucp_put_bw", "put_bw" },
	{ "ucp_get", "get_lat or get_bw" }, { "ucp_am_lat", "am_lat" },
	{ "ucp_am_bw", "am_bw" }, { "ucp_tag_lat", "tag_lat" }, { "ucp_tag_bw", "tag_bw" },
	{ "stream_bw", NULL }, { "stream_lat", NULL }, { "ucp_add", NULL },
	{ "ucp_fadd", NULL }, { "ucp_swap", NULL }, { "ucp_cswap", NULL },
};

/*
 * What to say about a test name perf_test_lookup() does not know: ucx_perftest's name for one
 * of ours, or that Unio has no such operation, then the list of tests.  Into @p buf.
 */
const char *
perf_test_hint(const char *name, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (unsigned int i = 0; i < sizeof(ucx_tests) / sizeof(ucx_tests[0]); i++) {
		if (strcmp(ucx_tests[i].ucx, name) != 0)
			continue;
		if (ucx_tests[i].unio != NULL)
			n = (size_t)snprintf(buf, len, "ucx_perftest's %s is %s here; ", name,
					     ucx_tests[i].unio);
		else
			n = (size_t)snprintf(buf, len, "Unio has no counterpart of ucx_perftest's "
					     "%s; ", name);
	}
	for (int i = 0; i < PERF_TEST_COUNT && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i == 0 ? "tests: " : ", ",
				      perf_tests[i].name);
	return buf;
}

/*
 * ucx_perftest options that unio-perf does not take, and the Unio way to the same end: an
 * unknown option is most often one of these, typed by a ucx_perftest user.
 */
static const struct { char opt; const char *hint; } ucx_opts[] = {
	{ 'x', "Unio chooses the transport; to force one set UNIO_TLS (shm, tcp, self, "
	       "ethdev), e.g. UNIO_TLS=tcp unio-perf ..." },
	{ 'd', "Unio chooses the devices; set UNIO_NET_DEVICES (kernel interfaces or DPDK "
	       "ports), e.g. UNIO_NET_DEVICES=eth0 unio-perf ..." },
	{ 'c', "CPUs are EAL's to set, before '--': unio-perf -l 1 -- ..." },
	{ 'l', "EAL options go before '--' (unio-perf -l 1 -- ...); ucx_perftest's -l is "
	       "--loopback here: unio-perf -l 0-1 -- --loopback ..." },
	{ 'E', "unio-perf always polls (the servers of put_bw, get_lat and get_bw sleep while "
	       "idle); there is no wait mode to choose" },
	{ 'T', "one thread per side; multi-threaded tests are not supported" },
	{ 'M', "one thread per side; multi-threaded tests are not supported" },
	{ 'P', "no MPI launch: start the server (no HOST) and the client (with HOST) yourself" },
	{ 'H', "the AM tests send no user header; its size cannot be set" },
	{ 'a', "EAL options go before '--' (unio-perf -a PCI -- ...); only host memory is "
	       "measured today (-m host)" },
};

const char *
perf_opt_hint(int opt)
{
	for (unsigned int i = 0; i < sizeof(ucx_opts) / sizeof(ucx_opts[0]); i++)
		if (ucx_opts[i].opt == opt)
			return ucx_opts[i].hint;
	return NULL;
}

static int
parse_u64(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long x;
	uint64_t mul = 1;

	if (s == NULL || *s < '0' || *s > '9')    /* no sign, no blank */
		return -1;
	errno = 0;
	x = strtoull(s, &end, 10);      /* decimal: "010" is ten, not eight */
	if (errno != 0 || end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': mul = 1ull << 10; end++; break;
	case 'm': case 'M': mul = 1ull << 20; end++; break;
	case 'g': case 'G': mul = 1ull << 30; end++; break;
	default: break;
	}
	if (*end != '\0' || (x != 0 && mul > UINT64_MAX / x))
		return -1;
	*v = x * mul;
	return 0;
}

static int
add_size(struct perf_opts *o, uint64_t v)
{
	if (v == 0 || v > PERF_MAX_MSG || o->n_sizes >= PERF_MAX_SIZES)
		return -1;
	o->sizes[o->n_sizes++] = (size_t)v;
	return 0;
}

/* One item of -s: "N" or a doubling sweep "LO:HI". */
static int
parse_size_item(char *item, struct perf_opts *o)
{
	char *colon = strchr(item, ':');
	uint64_t lo, hi;

	if (colon == NULL)
		return parse_u64(item, &lo) == 0 ? add_size(o, lo) : -1;
	*colon = '\0';
	if (parse_u64(item, &lo) != 0 || parse_u64(colon + 1, &hi) != 0 || lo == 0 || hi < lo)
		return -1;
	for (uint64_t v = lo; v <= hi; v *= 2)
		if (add_size(o, v) != 0)
			return -1;
	return 0;
}

int
perf_parse_sizes(const char *s, struct perf_opts *o)
{
	char buf[512], *save = NULL, *item;
	struct perf_opts tmp = *o;

	if (strlen(s) >= sizeof(buf))
		return -1;
	snprintf(buf, sizeof(buf), "%s", s);
	tmp.n_sizes = 0;
	for (item = strtok_r(buf, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save))
		if (parse_size_item(item, &tmp) != 0)
			return -1;
	if (tmp.n_sizes == 0)
		return -1;
	*o = tmp;
	return 0;
}

static void
set_defaults(struct perf_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->test = PERF_TAG_LAT;
	o->sizes[0] = 8;
	o->n_sizes = 1;
	o->iters = 100000;
	o->warmup = 1000;
	o->window = 16;
	o->port = PERF_DEFAULT_PORT;
	o->iov = 1;
	o->timeout_s = 10.0;
}

static int
bad(const char *opt, const char *val)
{
	fprintf(stderr, "unio-perf: invalid value '%s' for %s\n", val, opt);
	return -1;
}

/* bad() with the reason on the same line */
static int
bad_why(const char *opt, const char *val, const char *why)
{
	fprintf(stderr, "unio-perf: invalid value '%s' for %s: %s\n", val, opt, why);
	return -1;
}

enum { OPT_CSV = 256, OPT_JSON, OPT_LOOPBACK, OPT_CMDFILE, OPT_TIMEOUT, OPT_LISTEN,
	OPT_EP_INFO };

static int
parse_one(int opt, const char *arg, struct perf_opts *o)
{
	char hint[256];
	uint64_t v;
	int t;

	switch (opt) {
	case 't':
		t = perf_test_lookup(arg);
		if (t < 0)
			return bad_why("-t", arg, perf_test_hint(arg, hint, sizeof(hint)));
		o->test = (enum perf_test)t;
		return 0;
	case 's':
		return perf_parse_sizes(arg, o) == 0 ? 0 :
		       bad_why("-s", arg, "sizes from 1 byte to 1g, 64 at most, as N, LO:HI "
			       "(doubling) or a comma-separated list of them; suffixes k, m, g");
	case 'n':
		if (parse_u64(arg, &v) != 0 || v == 0)
			return bad("-n", arg);
		o->iters = v;
		return 0;
	case 'w':
		if (parse_u64(arg, &v) != 0)
			return bad("-w", arg);
		o->warmup = v;
		return 0;
	case 'O':
		if (parse_u64(arg, &v) != 0 || v == 0 || v > PERF_MAX_WINDOW)
			return bad("-O", arg);
		o->window = (unsigned int)v;
		return 0;
	case 'p':
		if (parse_u64(arg, &v) != 0 || v > 65535)
			return bad("-p", arg);
		o->port = (uint16_t)v;
		return 0;
	case 'm':
		if (strcmp(arg, "host") != 0) {
			fprintf(stderr, "unio-perf: memory type '%s' is not supported "
				"(only 'host' today)\n", arg);
			return -1;
		}
		return 0;
	case 'D':
		if (arg[0] < '0' || arg[0] > '9')   /* ucx_perftest's -D is a datatype */
			return bad_why("-D", arg, "-D is the iov count here (only 1 today); Unio "
				       "copies or sends zero-copy by size (UNIO_ZCOPY_THRESH)");
		if (parse_u64(arg, &v) != 0 || v == 0 || v > 1024)
			return bad("-D", arg);
		o->iov = (unsigned int)v;
		return 0;
	case OPT_TIMEOUT:
		if (parse_u64(arg, &v) != 0 || v == 0 || v > 3600)
			return bad("--timeout", arg);
		o->timeout_s = (double)v;
		return 0;
	case 'V': o->validate = 1; return 0;
	case 'f': o->final_only = 1; return 0;
	case 'i': o->interactive = 1; return 0;
	case OPT_CSV: o->csv = 1; return 0;
	case OPT_EP_INFO: o->ep_info = 1; return 0;
	case OPT_JSON: o->json_path = arg; return 0;
	case OPT_LOOPBACK: o->loopback = 1; return 0;
	case OPT_LISTEN: {
		struct in_addr a;

		if (inet_pton(AF_INET, arg, &a) != 1)
			return bad("--listen", arg);
		o->listen_addr = arg;
		return 0;
	}
	case OPT_CMDFILE: o->cmdline_file = arg; o->interactive = 1; return 0;
	default:
		return -1;
	}
}

/*
 * Parse argv[1..] (argv[0] is the program name).  Returns 0, 1 for -h (help printed), or -1
 * (message printed; the caller points to -h and exits 2).
 */
int
perf_parse_opts(int argc, char **argv, struct perf_opts *o)
{
	static const struct option longopts[] = {
		{ "csv", no_argument, NULL, OPT_CSV },
		{ "ep-info", no_argument, NULL, OPT_EP_INFO },
		{ "json", required_argument, NULL, OPT_JSON },
		{ "loopback", no_argument, NULL, OPT_LOOPBACK },
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "cmdline-file", required_argument, NULL, OPT_CMDFILE },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	set_defaults(o);
	optind = 1;
	opterr = 0;     /* our own messages, with the ucx_perftest hints */
	while ((opt = getopt_long(argc, argv, ":t:s:n:w:O:p:m:D:Vfih", longopts, NULL)) != -1) {
		if (opt == 'h')
			return 1;
		if (opt == ':') {
			fprintf(stderr, "unio-perf: %s needs a value\n", argv[optind - 1]);
			return -1;
		}
		if (opt == '?') {
			const char *h = perf_opt_hint(optopt);

			if (optopt == 0)    /* a long one: --vdev, --no-huge ... are EAL's */
				fprintf(stderr, "unio-perf: unknown option %s (EAL options go "
					"before '--')\n", argv[optind - 1]);
			else
				fprintf(stderr, "unio-perf: unknown option -%c%s%s\n", optopt,
					h != NULL ? ": " : "", h != NULL ? h : "");
			return -1;
		}
		if (parse_one(opt, optarg, o) != 0)
			return -1;
	}
	if (optind < argc)
		o->host = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "unio-perf: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (o->host != NULL && o->loopback) {
		fprintf(stderr, "unio-perf: --loopback and HOST exclude each other\n");
		return -1;
	}
	return 0;
}

/* What this build cannot run yet: a clear message, and exit code 2 from the caller. */
int
perf_check_supported(const struct perf_opts *o)
{
	if (!perf_tests[o->test].supported) {
		fprintf(stderr, "unio-perf: test '%s' (%s) is not supported yet\n",
			perf_tests[o->test].name, perf_tests[o->test].desc);
		return -1;
	}
	if (o->iov != 1) {
		fprintf(stderr, "unio-perf: -D %u: iov counts other than 1 are not supported "
			"yet\n", o->iov);
		return -1;
	}
	for (unsigned int i = 0; i < o->n_sizes && o->test == PERF_PUT_LAT; i++)
		if (o->sizes[i] < 8) {
			fprintf(stderr, "unio-perf: put_lat: sizes start at 8 bytes (the last 8 "
				"carry the iteration)\n");
			return -1;
		}
	return 0;
}

void
perf_print_config(const struct perf_opts *o, FILE *f)
{
	fprintf(f, "test        %s\nsizes      ", perf_tests[o->test].name);
	for (unsigned int i = 0; i < o->n_sizes; i++)
		fprintf(f, " %zu", o->sizes[i]);
	fprintf(f, "\niterations  %" PRIu64 "\nwarmup      %" PRIu64 "\nwindow      %u\n"
		"port        %u\nvalidate    %s\ntimeout     %.0f s\npeer        %s\n",
		o->iters, o->warmup, o->window, o->port, o->validate ? "yes" : "no",
		o->timeout_s, o->host != NULL ? o->host : "loopback (this process)");
	if (o->json_path != NULL)
		fprintf(f, "json        %s\n", o->json_path);
}
