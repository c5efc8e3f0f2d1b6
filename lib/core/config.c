/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The UNIO_* configuration table and its parsers.  One row per variable: name, type, default,
 * where it lands in struct unio_config, and its documentation.  Everything else (env parsing,
 * API overrides, unio-info -c, the generated reference in doc/) is derived from the table.
 */

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <rte_debug.h>
#include <rte_log.h>

#include "unio_config_priv.h"
#include "unio_log.h"

enum cfg_type {
	CFG_BOOL,
	CFG_INT,
	CFG_SIZE,
	CFG_LIST,
	CFG_ENUM,
	CFG_TIME,
	CFG_STRING,
};

struct cfg_row {
	const char *name;          /**< without the UNIO_ prefix */
	enum cfg_type type;
	const char *dflt;
	size_t offset;
	/** CFG_ENUM: the words, NULL-terminated; CFG_SIZE: non-NULL allows "auto" */
	const char *const *words;
	int64_t min, max;          /**< CFG_INT range */
	const char *doc;
};

static const char *const log_levels[] = {
	"fatal", "error", "warn", "notice", "info", "debug", "trace", NULL,
};
static const int log_level_rte[] = {
	RTE_LOG_CRIT, RTE_LOG_ERR, RTE_LOG_WARNING, RTE_LOG_NOTICE, RTE_LOG_INFO, RTE_LOG_DEBUG,
	RTE_LOG_DEBUG,
};
static const char *const rndv_schemes[] = { "auto", "get", "pipeline", "am", "split", "measure",
					     NULL };
static const char *const hugepage_modes[] = { "try", "yes", "no", NULL };
static const char *const size_auto[] = { "auto", NULL };
static const char *const tcp_poll_modes[] = { "busy", "epoll", NULL };
static const char *const yield_modes[] = { "auto", "yes", "no", NULL };
static const char *const lossless_modes[] = { "auto", "no", NULL };

#define OFF(f) offsetof(struct unio_config, f)

static const struct cfg_row cfg_table[] = {
	{ "CONN_BACKLOG", CFG_INT, "64", OFF(conn_backlog), NULL, 1, 4096,
	  "Connection requests that came over a driver's own channel (unio_ep_create() by "
	  "socket address to a listener on an ethdev iface's address) and wait for the worker's "
	  "next progress call to serve them.  A request beyond them is answered at once with a "
	  "refusal: the dialling unio_ep_create() fails with UNIO_ERR_NO_RESOURCE, and the "
	  "iface counts it (conn_refused_busy).  Consumer: the protocol layer." },
	{ "COPY_ALIAS_MIN", CFG_SIZE, "2113", OFF(copy_alias_min), NULL, 0, 0,
	  "Copies on the data path (puts and gets through a mapping, rendezvous and pipelined "
	  "copies) of at least this many bytes whose destination is 1 to 63 bytes past the "
	  "source modulo 4 KiB run through Unio's own backward AVX2 loop instead of memcpy, "
	  "whose 'rep movsb' (glibc 2.36 on AMD, above 2112 bytes up to 512 KiB) runs 15 to "
	  "30 times slower for them; at 2112 bytes and below glibc's vector loop is faster "
	  "than Unio's.  'inf': always memcpy.  Process-wide: the last context created sets "
	  "it.  Without AVX2 (other CPUs, aarch64) every copy is memcpy." },
	{ "COPY_LOOP_MAX", CFG_SIZE, "auto", OFF(copy_loop_max), size_auto, 0, 0,
	  "Copies on the data path of at least this many bytes skip the loops of "
	  "UNIO_COPY_ALIAS_MIN and UNIO_COPY_SKEW_MIN and are memcpy whatever their alignment "
	  "(below UNIO_COPY_NT_THRESH).  'auto': on Intel CPUs half a core's L2 cache (1 MiB "
	  "on the Xeon measured, 2 MiB of L2), where source and destination together no longer "
	  "fit it: glibc's 'rep movsb' then writes whole lines without reading them first, "
	  "and ran 15 to 25 % faster than either loop at 1 MiB at every alignment, with no "
	  "4 KiB aliasing penalty; elsewhere 'inf' (on the AMD EPYC measured, glibc and the "
	  "loops copied 1 MiB alike).  Process-wide, as UNIO_COPY_ALIAS_MIN." },
	{ "COPY_NT_THRESH", CFG_SIZE, "8m", OFF(copy_nt_thresh), NULL, 0, 0,
	  "Transfers of at least this many bytes (a put, a get, a rendezvous message) are "
	  "copied into their final buffer with non-temporal stores, which write memory "
	  "without reading the destination into the cache first: faster once source and "
	  "destination no longer fit the last-level cache.  Staging copies (FIFO cells, "
	  "pipeline buffers) stay cached.  'inf': never.  Process-wide, as UNIO_COPY_ALIAS_MIN." },
	{ "COPY_SKEW_MIN", CFG_SIZE, "2113", OFF(copy_skew_min), NULL, 0, 0,
	  "Copies on the data path of at least this many bytes whose destination's distance "
	  "from the source is not a multiple of 32 bytes (a malloc'ed buffer against a "
	  "page-aligned mapping) run through Unio's own forward AVX2 loop (unaligned loads, "
	  "aligned stores) instead of memcpy, whose 'rep movsb' (glibc 2.36 on AMD, above "
	  "2112 bytes) runs 10 to 30 % slower for them than for aligned pairs; 'inf': "
	  "memcpy.  The non-temporal stores of UNIO_COPY_NT_THRESH and the backward loop of "
	  "UNIO_COPY_ALIAS_MIN come first.  Process-wide, as UNIO_COPY_ALIAS_MIN." },
	{ "CPU", CFG_INT, "-1", OFF(cpu), NULL, -1, 1023,
	  "CPU the default EAL initialisation pins the calling thread to (-l); -1 means the CPU "
	  "the process is running on when Unio initialises EAL.  Ignored when the application "
	  "passes -l/-c/--lcores or initialised EAL itself." },
	{ "EAL_ARGS", CFG_STRING, "none", OFF(eal_args), NULL, 0, 0,
	  "EAL arguments, separated by spaces (no quoting), for the EAL initialisation Unio does "
	  "itself when the application passes none (no arguments before '--' to unio_env_init(), "
	  "or a context created without it), e.g. '--vdev=net_af_packet0,iface=veth0' to give "
	  "the ethdev driver a port; the defaults (-l, --no-pci, memory, --file-prefix, "
	  "--log-level) still fill in what they do not set; 'none' for none.  A context's own "
	  "configuration counts (unio_config_modify() on the one given to "
	  "unio_context_create()).  Ignored when EAL is initialised already (once per process) "
	  "or the application passes EAL arguments." },
	{ "ETHDEV_ARP", CFG_LIST, "none", OFF(ethdev_arp), NULL, 0, 0,
	  "Static neighbours of the ethdev driver, 'A.B.C.D/aabbccddeeff' items (IPv4 / MAC in "
	  "12 hex digits), used instead of ARP for peers whose address carries no MAC; 'none' "
	  "for none.  Consumer: the ethdev driver." },
	{ "ETHDEV_IDLE_YIELD", CFG_ENUM, "auto", OFF(ethdev_idle_yield), yield_modes, 0, 0,
	  "Whether a worker whose ethdev iface found nothing to receive or send in 16 "
	  "consecutive progress calls gives its CPU away once (sched_yield).  PMDs that are "
	  "kernel sockets (af_xdp, af_packet, tap) move every frame with kernel work (softirqs, "
	  "ksoftirqd) that runs on the same CPUs as the busy-polling workers and waits behind "
	  "them; 'auto' yields on those ports only, 'yes' on every port, 'no' never.  "
	  "Consumer: the ethdev driver." },
	{ "ETHDEV_IP", CFG_LIST, "auto", OFF(ethdev_ip), NULL, 0, 0,
	  "IPv4 address of the ethdev driver's ifaces: 'auto' takes the address of the kernel "
	  "interface a vdev wraps (iface= devarg); 'A.B.C.D' applies to every port; "
	  "'PORT:A.B.C.D' (PORT an ethdev port name such as net_af_packet0) to one port.  "
	  "Consumer: the ethdev driver." },
	{ "ETHDEV_LOSSLESS", CFG_ENUM, "auto", OFF(ethdev_lossless), lossless_modes, 0, 0,
	  "Whether the ethdev driver treats a port as a lossless, in-order link: 'auto' on "
	  "memif ports with one queue pair (shared memory: the PMD puts a frame in the ring or "
	  "refuses it, nothing is lost or reordered while the link is up), where an endpoint whose "
	  "peer acknowledged all it sent keeps no copy of its frames from then on (no "
	  "retransmission, RTT sampling or congestion window; ordering, acknowledgements, flush "
	  "and the timeouts that fail an endpoint whose peer went silent stay); 'no' never.  "
	  "Every other PMD is always treated as lossy.  Consumer: the ethdev driver." },
	{ "ETHDEV_PORT", CFG_INT, "13337", OFF(ethdev_port), NULL, 1, 65535,
	  "UDP port of the ethdev driver's ifaces.  Consumer: the ethdev driver." },
	{ "ETHDEV_QUEUES", CFG_INT, "1", OFF(ethdev_queues), NULL, 1, 16,
	  "Queue pairs the ethdev driver configures per port (at most what the PMD offers: "
	  "af_packet qpairs=, af_xdp queue_count=); each worker's iface takes one, with UDP port "
	  "UNIO_ETHDEV_PORT + queue.  Frames reaching the wrong queue are handed over through a "
	  "lock-free ring.  Consumer: the ethdev driver." },
	{ "ETHDEV_RETRIES", CFG_INT, "12", OFF(ethdev_retries), NULL, 1, 1000,
	  "Consecutive retransmission timeouts (10 ms doubling up to 250 ms) after which an "
	  "ethdev endpoint fails with UNIO_ERR_TIMED_OUT.  Consumer: the ethdev driver." },
	{ "ETHDEV_TARGET_DELAY", CFG_TIME, "1ms", OFF(ethdev_target_delay_ns), NULL, 0, 0,
	  "Queueing delay the ethdev driver's delay-based congestion window aims at, above twice "
	  "the lowest RTT seen: lower keeps switch queues short, higher keeps a link busy when "
	  "the hosts' scheduling jitter is large.  Consumer: the ethdev driver." },
	{ "HUGEPAGES", CFG_ENUM, "try", OFF(hugepages), hugepage_modes, 0, 0,
	  "Hugepage use of the default EAL initialisation: 'try' uses --in-memory hugepages "
	  "when at least 16 2 MiB pages are free (not counting those other processes' mappings "
	  "reserved), the process's hugetlb cgroup allows 16 more and 16 can be reserved "
	  "(Unio processes count and initialise one at a time), and falls back to --no-huge "
	  "with a warning otherwise, 'yes' "
	  "requires them, 'no' always uses --no-huge.  Also selects hugetlb backing for shared-"
	  "memory segments." },
	{ "LOG_LEVEL", CFG_ENUM, "warn", OFF(log_level), log_levels, 0, 0,
	  "Log level of every unio.* log type (fatal, error, warn, notice, info, debug, trace).  "
	  "Per-component levels can be set with EAL's --log-level=unio.<component>:<level>.  "
	  "EAL's own logs (lib.*, when Unio initialises EAL) show errors up to warn and follow "
	  "above it up to info; --log-level=lib.eal:debug among the EAL arguments for more." },
	{ "MAX_RNDV_RAILS", CFG_INT, "1", OFF(max_rndv_rails), NULL, 1, 8,
	  "Most lanes a rendezvous pull of 256 KiB or more is striped over (4 at most are "
	  "used): the ep's lane and up to N-1 rails, eps to the same peer from other ifaces of "
	  "the lane's driver (tcp: other interfaces, for a peer on this host).  1 (the "
	  "default): one lane; over loopback tcp a second rail made 4 MiB tag_bw slower "
	  "(doc/guides/drivers/tcp.md, entry 16)." },
	{ "NET_DEVICES", CFG_LIST, "all", OFF(net_devices), NULL, 0, 0,
	  "Network devices (kernel interface names or DPDK port names, globs allowed) the network "
	  "drivers may use; '^' denies.  Consumers: the tcp driver (loopback 'lo' only reaches the "
	  "same host and network namespace); the ethdev driver (ethdev port names).  A name "
	  "that matches no usable device is reported when a context is created (a warning); "
	  "UCX's DEVICE:PORT form (mlx5_0:1) is not taken." },
	{ "PEER_TIMEOUT", CFG_TIME, "10s", OFF(peer_timeout_ns), NULL, 0, 0,
	  "How long a peer may stay silent while requests to it are outstanding before the "
	  "endpoint fails with UNIO_ERR_TIMED_OUT or UNIO_ERR_CONNECTION_RESET." },
	{ "RNDV_SCHEME", CFG_ENUM, "auto", OFF(rndv_scheme), rndv_schemes, 0, 0,
	  "Rendezvous protocol: 'get' (receiver pulls: CMA or direct mapping), 'pipeline' (both "
	  "sides copy through shared staging buffers at once), 'am' (fragments over active "
	  "messages), 'split' (from UNIO_RNDV_SPLIT_MIN the receiver pulls the first half while "
	  "the sender puts the second; below, get), 'auto' (chosen per size and lane: on one "
	  "host with one-sided copies, below UNIO_RNDV_SPLIT_MIN get or pipeline chosen by the "
	  "receiver by measure, on AMD CPUs the pipeline (measured 1.3-3x the get and the "
	  "split there from 32 to 128 KiB), then the split; get on lanes whose target driver "
	  "carries put and get (tcp) and between hosts), or 'measure' (as 'auto', with get or "
	  "pipeline by measure on every CPU)." },
	{ "RNDV_SPLIT_MIN", CFG_SIZE, "auto", OFF(rndv_split_min), size_auto, 0, 0,
	  "Smallest tagged rendezvous that is split (the receiver pulls the first half while the "
	  "sender puts the second) under 'auto' or 'measure' on a host lane and under 'split'; "
	  "never below the rendezvous threshold.  'auto': 256 KiB under 'auto' on AMD CPUs (the "
	  "pipeline below it), 64 KiB elsewhere.  'inf': 'auto' never splits, 'split' is get "
	  "throughout." },
	{ "RNDV_THRESH", CFG_SIZE, "auto", OFF(rndv_thresh), size_auto, 0, 0,
	  "Message size from which tagged and active messages use rendezvous; 'auto' derives it "
	  "from the lane's performance model, 'inf' never uses rendezvous." },
	{ "SHM_CMA", CFG_BOOL, "y", OFF(shm_cma), NULL, 0, 0,
	  "Allow the shm driver's single-copy path through process_vm_readv (CMA).  When the "
	  "kernel refuses it (another user) the capability is absent whatever this says." },
	{ "SHM_FIFO_SIZE", CFG_SIZE, "256k", OFF(shm_fifo_size), NULL, 0, 0,
	  "Bytes of the receive FIFO each shm peer pair has (a power of two, 4k to 64m)." },
	{ "SHM_MAP_CACHE", CFG_SIZE, "4g", OFF(shm_map_cache), NULL, 0, 0,
	  "Most bytes of peers' allocations (UNIO_MEM_MAP_FLAG_ALLOCATE memory) one shm iface "
	  "keeps mapped for direct-mapped remote keys.  Mappings no key uses stay cached for "
	  "the next key of the same allocation and are unmapped, least recently used first, "
	  "when a new one needs room; a key that does not fit is served through CMA." },
	{ "SHM_MAX_PEERS", CFG_INT, "128", OFF(shm_max_peers), NULL, 2, 1024,
	  "Receive rings in each shm iface's segment: how many peer ifaces can send to one "
	  "worker at once.  A ring is taken at ep creation and given back when the sender "
	  "destroys its ep or dies." },
	{ "SHM_OTHER_USERS", CFG_BOOL, "n", OFF(shm_other_users), NULL, 0, 0,
	  "Let shm peers of another user (uid) reach this process's shm ifaces: its fd server "
	  "then hands them the ring segment, in which such a peer can write into every "
	  "sender's ring, i.e. speak as any process that sends to this one.  Off: such peers "
	  "are refused (their lane is another driver), as is any other uid that learnt the "
	  "address; processes of one uid can reach each other's memory anyway." },
	{ "SHM_SEG_SIZE", CFG_SIZE, "4m", OFF(shm_seg_size), NULL, 0, 0,
	  "Bytes of the shared staging segment each shm peer pair has for medium and pipelined "
	  "messages." },
	{ "TCP_KEEPALIVE", CFG_TIME, "5s", OFF(tcp_keepalive_ns), NULL, 0, 0,
	  "Idle time before the tcp driver probes a silent peer (TCP keepalive, probes 1 s "
	  "apart; the endpoint fails with UNIO_ERR_TIMED_OUT once they went unanswered for "
	  "UNIO_PEER_TIMEOUT); 'inf' or 0 disables it.  Consumer: the tcp driver." },
	{ "TCP_POLL_MODE", CFG_ENUM, "busy", OFF(tcp_poll_mode), tcp_poll_modes, 0, 0,
	  "How the tcp driver finds sockets with data: 'busy' reads every connection on each "
	  "progress call (lowest latency, few peers), 'epoll' asks epoll which sockets are "
	  "ready (many peers).  Both modes offer the iface's event fd for sleeping." },
	{ "TCP_RCVBUF", CFG_SIZE, "auto", OFF(tcp_rcvbuf), size_auto, 0, 0,
	  "SO_RCVBUF of tcp driver sockets; 'auto' keeps the kernel's autotuning.  Consumer: the "
	  "tcp driver." },
	{ "TCP_SNDBUF", CFG_SIZE, "auto", OFF(tcp_sndbuf), size_auto, 0, 0,
	  "SO_SNDBUF of tcp driver sockets; 'auto' keeps the kernel's autotuning.  Consumer: the "
	  "tcp driver." },
	{ "TCP_SPLICE", CFG_BOOL, "y", OFF(tcp_splice), NULL, 0, 0,
	  "Send the payload of large PUT and GET_RESP frames (64 KiB and more) by vmsplice + "
	  "splice from the user's pages instead of copying it into the socket: the sender makes "
	  "no copy, the receiver reads the pages.  Only frames whose completion waits for the "
	  "peer (a put's ack, the requester of a get) go this way.  Consumer: the tcp driver." },
	{ "TLS", CFG_LIST, "all", OFF(tls), NULL, 0, 0,
	  "Transport drivers Unio may use (self, shm, tcp, ethdev: those built, unio-info -v; "
	  "globs allowed); a leading '^' denies the listed ones, e.g. UNIO_TLS=^tcp; 'all' "
	  "stands alone.  A name that matches no driver of the build is reported when a "
	  "context is created and by unio-info -d (a warning: UNIO_TLS=tpc allows nothing); "
	  "for UCX's names the "
	  "warning says what stands for them (posix, sysv, cma, sm: shm; rc, ud, dc, cuda_copy: "
	  "none yet)." },
	{ "UNEXP_MEM", CFG_SIZE, "inf", OFF(unexp_mem), NULL, 0, 0,
	  "Most bytes of unexpected tagged-message data one worker holds (messages that arrived "
	  "before their receive was posted, beyond the 256 bytes each keeps inline).  A message "
	  "that would pass the bound, or whose buffer cannot be allocated, is dropped whole and "
	  "counted once as 'dropped: no memory' (unio_worker_print_info()); a synchronous send of "
	  "it fails with UNIO_ERR_NO_MEMORY, as does a rendezvous send whose request finds no "
	  "record.  'inf': no bound but the system's memory." },
	{ "ZCOPY_THRESH", CFG_SIZE, "auto", OFF(zcopy_thresh), size_auto, 0, 0,
	  "Message size from which eager messages are sent zero-copy from the user buffer instead "
	  "of being copied into a driver buffer; 'auto' derives it from the performance model." },
};

#define CFG_ROWS (sizeof(cfg_table) / sizeof(cfg_table[0]))

static __thread char cfg_errbuf[512];

const char *
unio_config_error(void)
{
	return cfg_errbuf;
}

void
unio_config_error_report(const char *prog)
{
	if (!rte_log_can_log(unio_logtype_core, RTE_LOG_ERR))
		fprintf(stderr, "%s: %s\n", prog, cfg_errbuf);
}

static unio_status_t
cfg_fail(const struct cfg_row *row, const char *value, const char *forms)
{
	snprintf(cfg_errbuf, sizeof(cfg_errbuf),
		 "UNIO_%s: invalid value '%s': expected %s", row->name, value, forms);
	CORE_LOG(ERR, "%s", cfg_errbuf);
	return UNIO_ERR_CONFIG;
}

static int
parse_bool(const char *v)
{
	static const char *const yes[] = { "y", "yes", "on", "1", "true" };
	static const char *const no[] = { "n", "no", "off", "0", "false" };

	for (unsigned int i = 0; i < 5; i++) {
		if (strcasecmp(v, yes[i]) == 0)
			return 1;
		if (strcasecmp(v, no[i]) == 0)
			return 0;
	}
	return -1;
}

static int
parse_int(const char *v, int64_t *out)
{
	char *end;

	errno = 0;
	long long x = strtoll(v, &end, 0);
	if (errno != 0 || end == v || *end != '\0')
		return -1;
	*out = x;
	return 0;
}

/* Parses "<digits>[k|m|g|t][b|ib]" case-insensitively; "inf". */
static int
parse_size(const char *v, size_t *out)
{
	static const char units[] = "kmgt";
	unsigned long long x, mult = 1;
	char *end;

	if (strcasecmp(v, "inf") == 0) {
		*out = UNIO_SIZE_INF;
		return 0;
	}
	if (!isdigit((unsigned char)v[0]))
		return -1;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno != 0)
		return -1;
	if (*end != '\0') {
		const char *u = strchr(units, tolower((unsigned char)*end));

		if (u == NULL)
			return -1;
		mult = 1ull << (10 * (u - units + 1));
		end++;
		if (strcasecmp(end, "b") != 0 && strcasecmp(end, "ib") != 0 && *end != '\0')
			return -1;
	}
	if (x != 0 && mult > UNIO_SIZE_AUTO / x)
		return -1;
	*out = x * mult;
	return 0;
}

static int
parse_time(const char *v, uint64_t *out)
{
	static const struct { const char *unit; uint64_t ns; } units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", UINT64_C(1000000000) },
		{ "m", UINT64_C(60000000000) }, { "", UINT64_C(1000000000) },
	};
	char *end;
	double x;

	if (strcasecmp(v, "inf") == 0) {
		*out = UNIO_TIME_INF;
		return 0;
	}
	if (!isdigit((unsigned char)v[0]) && v[0] != '.')
		return -1;
	errno = 0;
	x = strtod(v, &end);
	if (errno != 0 || end == v || x < 0)
		return -1;
	for (unsigned int i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit) == 0) {
			double ns = x * (double)units[i].ns;

			if (ns >= 1.8e19)
				return -1;
			*out = (uint64_t)ns;
			return 0;
		}
	}
	return -1;
}

static int
parse_list(const char *v, struct unio_cfg_list *out)
{
	struct unio_cfg_list l = { 0 };
	const char *p = v;

	if (*p == '^') {
		l.deny = true;
		p++;
	}
	if (!l.deny && strcmp(p, "all") == 0) {
		l.deny = true;      /* "all" is an empty deny list */
		*out = l;
		return 0;
	}
	while (*p != '\0') {
		size_t n = strcspn(p, ",");

		if (n == 0 || n >= UNIO_CFG_NAME_MAX || l.count == UNIO_CFG_LIST_MAX)
			return -1;
		if (n == 3 && memcmp(p, "all", 3) == 0)
			return -1;          /* "all" stands alone: "all,tpc" allowed nothing */
		for (size_t i = 0; i < n; i++)
			if (!isalnum((unsigned char)p[i]) && strchr("_-.:*?[]/", p[i]) == NULL)
				return -1;
		memcpy(l.items[l.count++], p, n);
		p += n;
		if (*p == ',' && *++p == '\0')
			return -1;
	}
	if (l.count == 0)
		return -1;
	*out = l;
	return 0;
}

static int
parse_enum(const char *v, const char *const *words)
{
	for (int i = 0; words[i] != NULL; i++)
		if (strcasecmp(v, words[i]) == 0)
			return i;
	return -1;
}

static const char *
type_forms(const struct cfg_row *row, char *buf, size_t len)
{
	size_t n;

	switch (row->type) {
	case CFG_BOOL:
		return "a boolean: y, yes, on, 1, true, n, no, off, 0 or false";
	case CFG_INT:
		snprintf(buf, len, "an integer from %" PRId64 " to %" PRId64, row->min, row->max);
		return buf;
	case CFG_SIZE:
		return row->words != NULL ?
		       "a size: a number with an optional k, m, g or t suffix (e.g. 512, 8k, 4m), "
		       "'inf' or 'auto'" :
		       "a size: a number with an optional k, m, g or t suffix (e.g. 512, 8k, 4m) "
		       "or 'inf'";
	case CFG_LIST:
		return "a comma-separated list of names (globs allowed), 'all', or '^' followed by "
		       "names to deny";
	case CFG_TIME:
		return "a time: a number with a unit ns, us, ms, s or m (e.g. 500us, 10s; no "
		       "unit: seconds), or 'inf'";
	case CFG_STRING:
		return "text of at most 255 characters";
	case CFG_ENUM:
		n = (size_t)snprintf(buf, len, "one of:");
		for (int i = 0; row->words[i] != NULL && n < len; i++)
			n += (size_t)snprintf(buf + n, len - n, " %s", row->words[i]);
		return buf;
	}
	return "?";
}

static unio_status_t
row_parse(const struct cfg_row *row, const char *value, struct unio_config *cfg)
{
	void *field = (char *)cfg + row->offset;
	char forms[256];
	int64_t i64;
	int r;

	switch (row->type) {
	case CFG_BOOL:
		r = parse_bool(value);
		if (r < 0)
			break;
		*(bool *)field = r;
		return UNIO_OK;
	case CFG_INT:
		if (parse_int(value, &i64) != 0 || i64 < row->min || i64 > row->max)
			break;
		*(int64_t *)field = i64;
		return UNIO_OK;
	case CFG_SIZE:
		if (row->words != NULL && strcasecmp(value, "auto") == 0) {
			*(size_t *)field = UNIO_SIZE_AUTO;
			return UNIO_OK;
		}
		if (parse_size(value, (size_t *)field) != 0)
			break;
		return UNIO_OK;
	case CFG_LIST:
		if (parse_list(value, (struct unio_cfg_list *)field) != 0)
			break;
		return UNIO_OK;
	case CFG_ENUM:
		r = parse_enum(value, row->words);
		if (r < 0)
			break;
		*(int *)field = row->words == log_levels ? log_level_rte[r] : r;
		return UNIO_OK;
	case CFG_TIME:
		if (parse_time(value, (uint64_t *)field) != 0)
			break;
		return UNIO_OK;
	case CFG_STRING:
		if (strlen(value) >= UNIO_CFG_STR_MAX)
			break;
		strcpy(field, value);
		return UNIO_OK;
	}
	return cfg_fail(row, value, type_forms(row, forms, sizeof(forms)));
}

static const struct cfg_row *
row_find(const char *name)
{
	if (strncmp(name, "UNIO_", 5) == 0)
		name += 5;
	for (unsigned int i = 0; i < CFG_ROWS; i++)
		if (strcasecmp(cfg_table[i].name, name) == 0)
			return &cfg_table[i];
	return NULL;
}

static void
row_format(const struct cfg_row *row, const struct unio_config *cfg, char *buf, size_t len)
{
	const void *field = (const char *)cfg + row->offset;
	const struct unio_cfg_list *l;
	size_t n, sz;
	uint64_t t;

	switch (row->type) {
	case CFG_BOOL:
		snprintf(buf, len, "%s", *(const bool *)field ? "y" : "n");
		return;
	case CFG_INT:
		snprintf(buf, len, "%" PRId64, *(const int64_t *)field);
		return;
	case CFG_SIZE:
		sz = *(const size_t *)field;
		if (sz == UNIO_SIZE_AUTO)
			snprintf(buf, len, "auto");
		else if (sz == UNIO_SIZE_INF)
			snprintf(buf, len, "inf");
		else if (sz != 0 && sz % ((size_t)1 << 30) == 0)
			snprintf(buf, len, "%zug", sz >> 30);
		else if (sz != 0 && sz % ((size_t)1 << 20) == 0)
			snprintf(buf, len, "%zum", sz >> 20);
		else if (sz != 0 && sz % ((size_t)1 << 10) == 0)
			snprintf(buf, len, "%zuk", sz >> 10);
		else
			snprintf(buf, len, "%zu", sz);
		return;
	case CFG_LIST:
		l = field;
		if (l->deny && l->count == 0) {
			snprintf(buf, len, "all");
			return;
		}
		n = (size_t)snprintf(buf, len, "%s", l->deny ? "^" : "");
		for (unsigned int i = 0; i < l->count && n < len; i++)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? "," : "", l->items[i]);
		return;
	case CFG_ENUM:
		if (row->words == log_levels) {
			int lvl = *(const int *)field;

			for (int i = 0; log_levels[i] != NULL; i++)
				if (log_level_rte[i] == lvl) {
					snprintf(buf, len, "%s", log_levels[i]);
					return;
				}
		}
		snprintf(buf, len, "%s", row->words[*(const int *)field]);
		return;
	case CFG_TIME:
		t = *(const uint64_t *)field;
		if (t == UNIO_TIME_INF)
			snprintf(buf, len, "inf");
		else if (t % UINT64_C(1000000000) == 0)
			snprintf(buf, len, "%" PRIu64 "s", t / UINT64_C(1000000000));
		else if (t % UINT64_C(1000000) == 0)
			snprintf(buf, len, "%" PRIu64 "ms", t / UINT64_C(1000000));
		else if (t % UINT64_C(1000) == 0)
			snprintf(buf, len, "%" PRIu64 "us", t / UINT64_C(1000));
		else
			snprintf(buf, len, "%" PRIu64 "ns", t);
		return;
	case CFG_STRING:
		snprintf(buf, len, "%s", (const char *)field);
		return;
	}
}

static void
config_defaults(struct unio_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	for (unsigned int i = 0; i < CFG_ROWS; i++) {
		unio_status_t st = row_parse(&cfg_table[i], cfg_table[i].dflt, cfg);

		RTE_VERIFY(st == UNIO_OK); /* a malformed default is a programming error */
	}
}

static struct unio_config env_config;
static unio_status_t env_status;
static char env_error[512];
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void
env_parse_once(void)
{
	char name[64];

	config_defaults(&env_config);
	env_status = UNIO_OK;
	for (unsigned int i = 0; i < CFG_ROWS; i++) {
		const char *v;

		snprintf(name, sizeof(name), "UNIO_%s", cfg_table[i].name);
		v = getenv(name);
		if (v == NULL)
			continue;
		if (row_parse(&cfg_table[i], v, &env_config) != UNIO_OK && env_status == UNIO_OK) {
			env_status = UNIO_ERR_CONFIG;
			snprintf(env_error, sizeof(env_error), "%s", cfg_errbuf);
		}
	}
	if (env_status == UNIO_OK)
		unio_log_set_level(env_config.log_level);
}

const struct unio_config *
unio_config_env(void)
{
	pthread_once(&env_once, env_parse_once);
	if (env_status != UNIO_OK) {
		snprintf(cfg_errbuf, sizeof(cfg_errbuf), "%s", env_error);
		return NULL;
	}
	return &env_config;
}

unio_status_t
unio_config_snapshot(struct unio_config *out)
{
	const struct unio_config *env = unio_config_env();

	if (env == NULL)
		return UNIO_ERR_CONFIG;
	*out = *env;
	return UNIO_OK;
}

bool
unio_cfg_list_allows(const struct unio_cfg_list *list, const char *name)
{
	for (unsigned int i = 0; i < list->count; i++)
		if (fnmatch(list->items[i], name, 0) == 0)
			return !list->deny;
	return list->deny;
}

unio_status_t
unio_config_set(struct unio_config *config, const char *name, const char *value)
{
	const struct cfg_row *row = row_find(name);
	struct unio_config tmp;
	unio_status_t st;

	if (row == NULL) {
		snprintf(cfg_errbuf, sizeof(cfg_errbuf), "unknown configuration variable '%s'",
			 name);
		CORE_LOG(ERR, "%s", cfg_errbuf);
		return UNIO_ERR_NOT_FOUND;
	}
	tmp = *config;
	st = row_parse(row, value, &tmp);
	if (st == UNIO_OK)
		*config = tmp;
	return st;
}

unio_status_t
unio_config_read(struct unio_config **config_p)
{
	struct unio_config *cfg;
	unio_status_t st;

	if (config_p == NULL)
		return UNIO_ERR_INVALID_PARAM;
	cfg = malloc(sizeof(*cfg));
	if (cfg == NULL)
		return UNIO_ERR_NO_MEMORY;
	st = unio_config_snapshot(cfg);
	if (st != UNIO_OK) {
		free(cfg);
		return st;
	}
	*config_p = cfg;
	return UNIO_OK;
}

unio_status_t
unio_config_modify(struct unio_config *config, const char *name, const char *value)
{
	if (config == NULL || name == NULL || value == NULL)
		return UNIO_ERR_INVALID_PARAM;
	return unio_config_set(config, name, value);
}

unio_status_t
unio_config_get(const struct unio_config *config, const char *name, char *buf, size_t len)
{
	const struct cfg_row *row;
	char tmp[UNIO_CFG_LIST_MAX * (UNIO_CFG_NAME_MAX + 1) + 2];

	if (config == NULL || name == NULL || buf == NULL)
		return UNIO_ERR_INVALID_PARAM;
	row = row_find(name);
	if (row == NULL)
		return UNIO_ERR_NOT_FOUND;
	row_format(row, config, tmp, sizeof(tmp));
	if (strlen(tmp) >= len)
		return UNIO_ERR_NO_RESOURCE;
	strcpy(buf, tmp);
	return UNIO_OK;
}

static const char *const type_names[] = {
	[CFG_BOOL] = "bool", [CFG_INT] = "integer", [CFG_SIZE] = "size",
	[CFG_LIST] = "list", [CFG_ENUM] = "enum", [CFG_TIME] = "time", [CFG_STRING] = "string",
};

static void
print_doc(FILE *f, const char *prefix, const char *doc)
{
	const char *p = doc;

	while (*p != '\0') {
		size_t n = strlen(p);

		if (n > 88) {
			n = 88;
			while (n > 0 && p[n] != ' ')
				n--;
			if (n == 0)
				n = 88;
		}
		fprintf(f, "%s%.*s\n", prefix, (int)n, p);
		p += n;
		while (*p == ' ')
			p++;
	}
}

void
unio_config_print(const struct unio_config *config, FILE *stream, unsigned int flags)
{
	char val[UNIO_CFG_LIST_MAX * (UNIO_CFG_NAME_MAX + 1) + 2], forms[256];

	if (config == NULL || stream == NULL)
		return;
	if (flags & UNIO_CONFIG_PRINT_HEADER)
		fprintf(stream, "# Unio configuration (environment variables; value [default])\n");
	for (unsigned int i = 0; i < CFG_ROWS; i++) {
		const struct cfg_row *row = &cfg_table[i];

		row_format(row, config, val, sizeof(val));
		if (flags & UNIO_CONFIG_PRINT_DOC) {
			fprintf(stream, "#\n");
			print_doc(stream, "# ", row->doc);
			fprintf(stream, "#\n# type: %s; %s\n", type_names[row->type],
				type_forms(row, forms, sizeof(forms)));
		}
		fprintf(stream, "UNIO_%s=%s  [default: %s]\n", row->name, val, row->dflt);
	}
}

void
unio_config_print_reference(FILE *stream)
{
	char forms[256];

	fprintf(stream, "# Configuration reference\n\n"
		"Generated from the configuration table in `lib/core/config.c` by "
		"`unio-info --config-reference`; do not edit by hand.\n\n"
		"Every variable can also be set from the API with `unio_config_modify()` on the "
		"configuration given to `unio_context_create()`.\n\n");
	for (unsigned int i = 0; i < CFG_ROWS; i++) {
		const struct cfg_row *row = &cfg_table[i];

		fprintf(stream, "## UNIO_%s\n\n- type: %s (%s)\n- default: `%s`\n\n%s\n\n",
			row->name, type_names[row->type], type_forms(row, forms, sizeof(forms)),
			row->dflt, row->doc);
	}
}

void
unio_config_release(struct unio_config *config)
{
	free(config);
}
