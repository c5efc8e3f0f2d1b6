/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * unio-tlbench: the shm transport against its floors, as ratios measured in one run.
 *
 *   (a) 8-byte am_short round trip between two processes (pinned to two CPUs) against a raw
 *       cache-line ping-pong and against an rte_ring pair in a shared memfd;
 *   (b) CMA get_zcopy of 1 MiB against raw process_vm_readv;
 *   (c) get_zcopy of 1 MiB through a direct mapping against single-core memcpy.
 *
 * Each run measures every method in turn (interleaved), so that the ratios compare numbers
 * taken under the same conditions; the median of the per-run ratios is reported.
 *
 *   unio-tlbench [-r runs] [-n round trips] [-c cpu0,cpu1]
 *   unio-tlbench -i N [-p K]  one process, N 8-byte am_shorts between two shm ifaces, each
 *                         received at once, with K more idle senders connected to the
 *                         receiver: run it under valgrind --tool=callgrind to count the
 *                         instructions of shm_am_short and shm_progress per message
 *   unio-tlbench -m N [-R]  one process, N 8-byte round trips over two memif ports joined
 *                         by one socket, through ethdev ifaces (-R: raw frames, as
 *                         e5_ethdev.c): for callgrind (see memif.c)
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_pause.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "unio_config_priv.h"
#include "unio_tl.h"

#include "tlbench.h"

#define MAX_RUNS   16
#define BIG        (1u << 20)
#define RING_ELEMS 1024
#define AM_PING    1

enum phase {
	PH_NONE, PH_RAW, PH_RTE, PH_SHM, PH_EXIT,
};

/* the control block both processes map */
struct ctl {
	volatile uint64_t phase;
	volatile uint64_t ack;
	volatile uint64_t child_ready;
	volatile uint64_t parent_ready;
	uint8_t child_addr[UNIO_TL_ADDR_MAX];
	uint8_t parent_addr[UNIO_TL_ADDR_MAX];
	uint8_t rkey_reg[UNIO_TL_RKEY_MAX];
	uint8_t rkey_alloc[UNIO_TL_RKEY_MAX];
	uint64_t base_reg, base_alloc;
	uint64_t child_pid;
	uint64_t ping __rte_aligned(128);
	uint64_t pong __rte_aligned(128);
	uint8_t rings[] __rte_aligned(4096);
};

struct opts {
	unsigned int instr;   /**< -i: messages of the instruction-count mode */
	unsigned int idle;    /**< -p: idle senders connected in that mode */
	unsigned int memif;   /**< -m: round trips of the memif mode */
	bool raw;             /**< -R: raw frames in that mode */
	bool put;             /**< -P: 1 MiB puts in that mode */
	unsigned int runs;
	unsigned int iters;
	int cpu[2];
};

struct side {
	struct ctl *ctl;
	struct rte_ring *to_child, *to_parent;
	struct unio_tl_iface *iface;
	struct unio_tl_ep *ep;
	volatile uint64_t got;
	unsigned int iters;
};

static double ns_per_cycle;

/*
 * Spin, but give the CPU away after a long fruitless spin: on an overcommitted machine the
 * peer may be waiting for this very CPU.  An uncontended round trip never gets here.
 */
static pid_t child_pid;   /* in the parent: the child, whose death ends the run */

static void
check_child(void)
{
	int st;

	if (child_pid > 0 && waitpid(child_pid, &st, WNOHANG) == child_pid) {
		fprintf(stderr, "unio-tlbench: the child died (status %#x)\n", st);
		exit(1);
	}
}

static inline void
spin_wait(unsigned int *spins)
{
	if (++*spins >= 20000) {
		*spins = 0;
		sched_yield();
		check_child();
	}
}

static void
pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	if (sched_setaffinity(0, sizeof(s), &s) != 0)
		fprintf(stderr, "unio-tlbench: cannot pin to cpu %d: %s\n", cpu, strerror(errno));
}

static uint64_t
mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void
calibrate(void)
{
	uint64_t n0 = mono_ns(), c0 = rte_rdtsc(), n1;

	while ((n1 = mono_ns()) - n0 < 50000000ull)
		;
	ns_per_cycle = (double)(n1 - n0) / (double)(rte_rdtsc() - c0);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int
cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_dbl);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- the child: answers whatever the parent measures ---- */

static unio_status_t
child_ping_cb(void *arg, const void *data, size_t length, unsigned int flags,
	      unio_tl_conn_id_t conn_id)
{
	struct side *s = arg;
	uint64_t hdr;

	RTE_SET_USED(length), RTE_SET_USED(flags), RTE_SET_USED(conn_id);
	memcpy(&hdr, data, sizeof(hdr));
	while (unio_tl_ep_am_short(s->ep, AM_PING, hdr, NULL, 0) != UNIO_OK)
		;
	s->got++;
	return UNIO_OK;
}

static void
child_raw(struct side *s)
{
	struct ctl *c = s->ctl;

	unsigned int spins = 0;

	for (uint64_t i = 1; i <= s->iters; i++) {
		while (__atomic_load_n(&c->ping, __ATOMIC_ACQUIRE) != i)
			spin_wait(&spins);
		__atomic_store_n(&c->pong, i, __ATOMIC_RELEASE);
	}
}

static void
child_rte(struct side *s)
{
	unsigned int spins = 0;
	uint64_t e[2];

	for (unsigned int i = 0; i < s->iters; i++) {
		while (rte_ring_dequeue_elem(s->to_child, e, sizeof(e)) != 0)
			spin_wait(&spins);
		while (rte_ring_enqueue_elem(s->to_parent, e, sizeof(e)) != 0)
			spin_wait(&spins);
	}
}

static void
child_shm(struct side *s)
{
	unsigned int spins = 0;

	s->got = 0;
	while (s->got < s->iters)
		if (unio_tl_iface_progress(s->iface) == 0)
			spin_wait(&spins);
}

static void
child_loop(struct side *s)
{
	uint64_t seen = 0;

	for (;;) {
		uint64_t ph;

		unsigned int spins = 0;

		while ((ph = __atomic_load_n(&s->ctl->phase, __ATOMIC_ACQUIRE)) == seen) {
			unio_tl_iface_progress(s->iface);
			spin_wait(&spins);
		}
		seen = ph;
		switch (ph & 0xff) {
		case PH_RAW:
			child_raw(s);
			break;
		case PH_RTE:
			child_rte(s);
			break;
		case PH_SHM:
			child_shm(s);
			break;
		case PH_EXIT:
			return;
		}
		__atomic_store_n(&s->ctl->ack, ph, __ATOMIC_RELEASE);
	}
}

/* ---- setup ---- */

static int
open_shm(struct side *s)
{
	const struct unio_tl_driver *drv = unio_tl_driver_find("shm");
	struct unio_tl_iface_params p = { .config = unio_config_env(), .dev_name = "memory",
					  .cpu = -1 };

	if (drv == NULL || p.config == NULL ||
	    unio_tl_iface_open(drv, &p, &s->iface) != UNIO_OK) {
		fprintf(stderr, "unio-tlbench: cannot open the shm driver\n");
		return -1;
	}
	return 0;
}

static int
connect_peer(struct side *s, const uint8_t *addr)
{
	struct unio_tl_ep_params p = { .iface_addr = addr,
				       .iface_addr_len = s->iface->attr.iface_addr_len };

	return unio_tl_ep_create(s->iface, &p, &s->ep) == UNIO_OK ? 0 : -1;
}

static void
wait_flag(volatile uint64_t *flag)
{
	while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) == 0) {
		sched_yield();
		check_child();
	}
}

static void
run_child(struct side *s, int cpu)
{
	struct unio_tl_memh reg, alloc;
	void *buf = malloc(BIG);

	pin(cpu);
	if (open_shm(s) != 0)
		_exit(1);
	unio_tl_iface_set_am_handler(s->iface, AM_PING, child_ping_cb, s);
	memset(buf, 0x5a, BIG);
	if (unio_tl_iface_get_address(s->iface, s->ctl->child_addr) != UNIO_OK ||
	    unio_tl_mem_reg(s->iface, buf, BIG, &reg) != UNIO_OK ||
	    unio_tl_rkey_pack(s->iface, &reg, s->ctl->rkey_reg) != UNIO_OK ||
	    unio_tl_mem_alloc(s->iface, BIG, &alloc) != UNIO_OK ||
	    unio_tl_rkey_pack(s->iface, &alloc, s->ctl->rkey_alloc) != UNIO_OK)
		_exit(1);
	memset(alloc.addr, 0xa5, BIG);
	s->ctl->base_reg = (uintptr_t)buf;
	s->ctl->base_alloc = (uintptr_t)alloc.addr;
	s->ctl->child_pid = (uint64_t)getpid();
	wait_flag(&s->ctl->parent_ready);
	if (connect_peer(s, s->ctl->parent_addr) != 0)
		_exit(1);
	__atomic_store_n(&s->ctl->child_ready, 1, __ATOMIC_RELEASE);
	child_loop(s);
	unio_tl_ep_destroy(s->ep);
	unio_tl_mem_free(s->iface, &alloc);
	unio_tl_iface_close(s->iface);
	_exit(0);
}

/* ---- the parent's measurements ---- */

struct lat {
	uint64_t *ns;
	double p50, p99;
};

static void
lat_done(struct lat *l, unsigned int n)
{
	qsort(l->ns, n, sizeof(*l->ns), cmp_u64);
	l->p50 = (double)l->ns[n / 2];
	l->p99 = (double)l->ns[(size_t)n * 99 / 100];
}

static void
phase_start(struct side *s, uint64_t *seq, enum phase ph)
{
	*seq += 0x100;
	__atomic_store_n(&s->ctl->phase, *seq | ph, __ATOMIC_RELEASE);
}

static void
phase_end(struct side *s, uint64_t seq, enum phase ph)
{
	unsigned int spins = 0;

	while (__atomic_load_n(&s->ctl->ack, __ATOMIC_ACQUIRE) != (seq | ph)) {
		unio_tl_iface_progress(s->iface);
		spin_wait(&spins);
	}
}

static void
measure_raw(struct side *s, struct lat *l, uint64_t *seq)
{
	struct ctl *c = s->ctl;
	unsigned int spins = 0;

	__atomic_store_n(&c->ping, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&c->pong, 0, __ATOMIC_RELAXED);
	phase_start(s, seq, PH_RAW);
	for (uint64_t i = 1; i <= s->iters; i++) {
		uint64_t t0 = rte_rdtsc();

		__atomic_store_n(&c->ping, i, __ATOMIC_RELEASE);
		while (__atomic_load_n(&c->pong, __ATOMIC_ACQUIRE) != i)
			spin_wait(&spins);
		l->ns[i - 1] = (uint64_t)((double)(rte_rdtsc() - t0) * ns_per_cycle);
	}
	phase_end(s, *seq, PH_RAW);
	lat_done(l, s->iters);
}

static void
measure_rte(struct side *s, struct lat *l, uint64_t *seq)
{
	uint64_t e[2] = { 0, 0 }, r[2];
	unsigned int spins = 0;

	phase_start(s, seq, PH_RTE);
	for (unsigned int i = 0; i < s->iters; i++) {
		uint64_t t0 = rte_rdtsc();

		e[0] = i;
		while (rte_ring_enqueue_elem(s->to_child, e, sizeof(e)) != 0)
			spin_wait(&spins);
		while (rte_ring_dequeue_elem(s->to_parent, r, sizeof(r)) != 0)
			spin_wait(&spins);
		l->ns[i] = (uint64_t)((double)(rte_rdtsc() - t0) * ns_per_cycle);
	}
	phase_end(s, *seq, PH_RTE);
	lat_done(l, s->iters);
}

static unio_status_t
parent_pong_cb(void *arg, const void *data, size_t length, unsigned int flags,
	       unio_tl_conn_id_t conn_id)
{
	struct side *s = arg;

	RTE_SET_USED(data), RTE_SET_USED(length), RTE_SET_USED(flags), RTE_SET_USED(conn_id);
	s->got++;
	return UNIO_OK;
}

static void
measure_shm(struct side *s, struct lat *l, uint64_t *seq)
{
	unsigned int spins = 0;

	phase_start(s, seq, PH_SHM);
	s->got = 0;
	for (unsigned int i = 0; i < s->iters; i++) {
		uint64_t t0 = rte_rdtsc();

		while (unio_tl_ep_am_short(s->ep, AM_PING, i, NULL, 0) != UNIO_OK)
			unio_tl_iface_progress(s->iface);
		while (s->got == i)
			if (unio_tl_iface_progress(s->iface) == 0)
				spin_wait(&spins);
		l->ns[i] = (uint64_t)((double)(rte_rdtsc() - t0) * ns_per_cycle);
	}
	phase_end(s, *seq, PH_SHM);
	lat_done(l, s->iters);
}

/*
 * GB/s of BIG-byte copies by @p fa and @p fb, alternating one by one so that both see the
 * same conditions, from the median time of a copy (a preempted copy does not count); 0 when
 * a copy fails
 */
typedef int (*copy_fn_t)(struct side *s, void *dst, void *arg);

#define BW_REPS 201

static void
bandwidth_pair(struct side *s, copy_fn_t fa, void *arg_a, copy_fn_t fb, void *arg_b,
	       void *dst, double *gbps_a, double *gbps_b)
{
	uint64_t ta[BW_REPS], tb[BW_REPS], t0;

	*gbps_a = *gbps_b = 0;
	if (fa(s, dst, arg_a) != 0 || fb(s, dst, arg_b) != 0)   /* warm up and check */
		return;
	for (unsigned int i = 0; i < BW_REPS; i++) {
		t0 = mono_ns();
		if (fa(s, dst, arg_a) != 0)
			return;
		ta[i] = mono_ns() - t0;
		t0 = mono_ns();
		if (fb(s, dst, arg_b) != 0)
			return;
		tb[i] = mono_ns() - t0;
	}
	qsort(ta, BW_REPS, sizeof(ta[0]), cmp_u64);
	qsort(tb, BW_REPS, sizeof(tb[0]), cmp_u64);
	*gbps_a = (double)BIG / (double)ta[BW_REPS / 2];
	*gbps_b = (double)BIG / (double)tb[BW_REPS / 2];
}

static int
copy_raw_cma(struct side *s, void *dst, void *arg)
{
	struct iovec l = { dst, BIG }, r = { (void *)(uintptr_t)s->ctl->base_reg, BIG };

	RTE_SET_USED(arg);
	return process_vm_readv((pid_t)s->ctl->child_pid, &l, 1, &r, 1, 0) == BIG ? 0 : -1;
}

static int
copy_get(struct side *s, void *dst, void *arg)
{
	const struct unio_tl_rkey *rk = arg;
	struct iovec l = { dst, BIG };

	return unio_tl_ep_get_zcopy(s->ep, &l, 1, rk->remote_base, rk, NULL) == UNIO_OK ? 0 : -1;
}

static int
copy_memcpy(struct side *s, void *dst, void *arg)
{
	RTE_SET_USED(s);
	memcpy(dst, arg, BIG);
	__asm__ volatile("" ::: "memory");
	return 0;
}

/* ---- the report ---- */

struct results {
	struct lat raw, rte, shm;
	double r_shm_raw[MAX_RUNS], r_rte_raw[MAX_RUNS], r_shm_rte[MAX_RUNS];
	double bw_cma[MAX_RUNS], bw_get[MAX_RUNS], bw_cpy[MAX_RUNS], bw_map[MAX_RUNS];
	double r_cma[MAX_RUNS], r_map[MAX_RUNS];
};

static void
print_lat(const char *name, const struct lat *l)
{
	printf("  %-34s p50 %7.1f ns   p99 %7.1f ns\n", name, l->p50, l->p99);
}

static void
report(struct results *r, unsigned int runs, bool cma, bool map)
{
	printf("\nmedians of %u interleaved runs:\n", runs);
	printf("  am_short 8 B RTT / raw cache-line RTT  %.2f  (target <= 2.0)\n",
	       median(r->r_shm_raw, runs));
	printf("  rte_ring RTT / raw cache-line RTT      %.2f\n", median(r->r_rte_raw, runs));
	printf("  am_short 8 B RTT / rte_ring RTT        %.2f  (< 1: the unio ring wins)\n",
	       median(r->r_shm_rte, runs));
	if (cma)
		printf("  CMA get 1 MiB: %.2f GB/s, raw process_vm_readv %.2f GB/s, ratio %.2f "
		       "(target >= 0.90)\n", median(r->bw_get, runs), median(r->bw_cma, runs),
		       median(r->r_cma, runs));
	else
		printf("  CMA get: not available to this peer\n");
	if (map)
		printf("  mapped get 1 MiB: %.2f GB/s, memcpy %.2f GB/s, ratio %.2f "
		       "(target >= 0.80)\n", median(r->bw_map, runs), median(r->bw_cpy, runs),
		       median(r->r_map, runs));
	else
		printf("  direct mapping: not available\n");
}

static int
measure_all(struct side *s, const struct opts *o)
{
	struct unio_tl_rkey rk_reg, rk_alloc;
	struct results *r = calloc(1, sizeof(*r));
	void *dst = malloc(BIG), *src = malloc(BIG);
	uint64_t seq = 0;
	bool cma, map;
	size_t kl = s->iface->attr.rkey_packed_len;

	r->raw.ns = calloc(o->iters, sizeof(uint64_t));
	r->rte.ns = calloc(o->iters, sizeof(uint64_t));
	r->shm.ns = calloc(o->iters, sizeof(uint64_t));
	memset(dst, 1, BIG);
	memset(src, 2, BIG);
	if (unio_tl_rkey_unpack(s->ep, s->ctl->rkey_reg, kl, &rk_reg) != UNIO_OK ||
	    unio_tl_rkey_unpack(s->ep, s->ctl->rkey_alloc, kl, &rk_alloc) != UNIO_OK)
		return -1;
	cma = (s->ep->cap & UNIO_TL_CAP_GET_ZCOPY) != 0;
	map = rk_alloc.local_ptr != NULL;
	for (unsigned int i = 0; i < o->runs; i++) {
		printf("run %u\n", i + 1);
		measure_raw(s, &r->raw, &seq);
		measure_rte(s, &r->rte, &seq);
		measure_shm(s, &r->shm, &seq);
		print_lat("raw cache-line ping-pong RTT", &r->raw);
		print_lat("rte_ring (shared memfd) RTT", &r->rte);
		print_lat("shm am_short 8 B RTT", &r->shm);
		r->r_shm_raw[i] = r->shm.p50 / r->raw.p50;
		r->r_rte_raw[i] = r->rte.p50 / r->raw.p50;
		r->r_shm_rte[i] = r->shm.p50 / r->rte.p50;
		if (cma) {
			bandwidth_pair(s, copy_raw_cma, NULL, copy_get, &rk_reg, dst,
				       &r->bw_cma[i], &r->bw_get[i]);
			r->r_cma[i] = r->bw_get[i] / r->bw_cma[i];
			printf("  CMA 1 MiB: raw %.2f GB/s, get_zcopy %.2f GB/s\n", r->bw_cma[i],
			       r->bw_get[i]);
		}
		if (map) {
			bandwidth_pair(s, copy_memcpy, src, copy_get, &rk_alloc, dst,
				       &r->bw_cpy[i], &r->bw_map[i]);
			r->r_map[i] = r->bw_map[i] / r->bw_cpy[i];
			printf("  1 MiB: memcpy %.2f GB/s, mapped get_zcopy %.2f GB/s\n",
			       r->bw_cpy[i], r->bw_map[i]);
		}
	}
	report(r, o->runs, cma, map);
	unio_tl_rkey_release(s->ep, &rk_reg);
	unio_tl_rkey_release(s->ep, &rk_alloc);
	free(r->raw.ns), free(r->rte.ns), free(r->shm.ns), free(r);
	free(dst), free(src);
	return 0;
}

static struct ctl *
map_ctl(size_t *len)
{
	size_t rsz = RTE_ALIGN_CEIL(rte_ring_get_memsize_elem(16, RING_ELEMS), 4096);
	struct ctl *c;

	*len = sizeof(struct ctl) + 2 * rsz;
	c = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (c == MAP_FAILED)
		return NULL;
	if (rte_ring_init((struct rte_ring *)(void *)c->rings, "to_child", RING_ELEMS,
			  RING_F_SP_ENQ | RING_F_SC_DEQ) != 0 ||
	    rte_ring_init((struct rte_ring *)(void *)(c->rings + rsz), "to_parent", RING_ELEMS,
			  RING_F_SP_ENQ | RING_F_SC_DEQ) != 0)
		return NULL;
	return c;
}

static int
parse(int argc, char **argv, struct opts *o)
{
	int opt;

	*o = (struct opts){ .runs = 5, .iters = 100000, .cpu = { 0, 1 } };
	while ((opt = getopt(argc, argv, "i:p:r:n:c:m:RPh")) != -1) {
		switch (opt) {
		case 'm':
			o->memif = (unsigned int)atoi(optarg);
			break;
		case 'R':
			o->raw = true;
			break;
		case 'P':
			o->put = true;
			break;
		case 'p':
			o->idle = (unsigned int)atoi(optarg);
			break;
		case 'i':
			o->instr = (unsigned int)atoi(optarg);
			break;
		case 'r':
			o->runs = (unsigned int)atoi(optarg);
			break;
		case 'n':
			o->iters = (unsigned int)atoi(optarg);
			break;
		case 'c':
			if (sscanf(optarg, "%d,%d", &o->cpu[0], &o->cpu[1]) != 2)
				return -1;
			break;
		default:
			return -1;
		}
	}
	if (o->instr > 0 || o->memif > 0)
		return 0;
	return o->runs >= 1 && o->runs <= MAX_RUNS && o->iters >= 100 ? 0 : -1;
}

static unio_status_t
count_cb(void *arg, const void *data, size_t length, unsigned int flags, unio_tl_conn_id_t conn_id)
{
	RTE_SET_USED(data), RTE_SET_USED(length), RTE_SET_USED(flags), RTE_SET_USED(conn_id);
	(*(uint64_t *)arg)++;
	return UNIO_OK;
}

/* the instruction-count mode: a steady stream of 8-byte am_shorts, one in flight */
static int
instr_mode(unsigned int n, unsigned int idle)
{
	struct side tx = { 0 }, rx = { 0 }, *quiet = calloc(idle + 1, sizeof(*quiet));
	uint8_t addr[UNIO_TL_ADDR_MAX];
	uint64_t got = 0;

	if (quiet == NULL || open_shm(&tx) != 0 || open_shm(&rx) != 0)
		return 1;
	unio_tl_iface_set_am_handler(rx.iface, AM_PING, count_cb, &got);
	unio_tl_iface_get_address(rx.iface, addr);
	if (connect_peer(&tx, addr) != 0)
		return 1;
	for (unsigned int i = 0; i < idle; i++)
		if (open_shm(&quiet[i]) != 0 || connect_peer(&quiet[i], addr) != 0)
			return 1;
	unio_tl_iface_progress(rx.iface);   /* the receiver takes the new rings in */
	for (unsigned int i = 0; i < n; i++) {
		if (unio_tl_ep_am_short(tx.ep, AM_PING, i, NULL, 0) != UNIO_OK)
			return 1;
		unio_tl_iface_progress(rx.iface);
	}
	printf("%u sent, %" PRIu64 " received, %u idle senders\n", n, got, idle);
	for (unsigned int i = 0; i < idle; i++) {
		unio_tl_ep_destroy(quiet[i].ep);
		unio_tl_iface_close(quiet[i].iface);
	}
	free(quiet);
	unio_tl_ep_destroy(tx.ep);
	unio_tl_iface_close(tx.iface);
	unio_tl_iface_close(rx.iface);
	return got == n ? 0 : 1;
}

int
main(int argc, char **argv)
{
	struct side s = { 0 };
	struct opts o;
	size_t clen;
	pid_t pid;
	int st = 0, rc;

	if (parse(argc, argv, &o) != 0) {
		fprintf(stderr, "usage: unio-tlbench [-r runs (1-%d)] [-n round trips (>= 100)] "
			"[-c cpu0,cpu1] | -i messages | -m round trips [-R | -P]\n", MAX_RUNS);
		return 2;
	}
	if (o.instr != 0)
		return instr_mode(o.instr, o.idle);
	if (o.memif != 0)
		return memif_mode(o.memif, o.raw, o.put);
	s.ctl = map_ctl(&clen);
	if (s.ctl == NULL) {
		fprintf(stderr, "unio-tlbench: cannot set up the shared control block\n");
		return 1;
	}
	s.to_child = (struct rte_ring *)(void *)s.ctl->rings;
	s.to_parent = (struct rte_ring *)(void *)(s.ctl->rings +
		RTE_ALIGN_CEIL(rte_ring_get_memsize_elem(16, RING_ELEMS), 4096));
	s.iters = o.iters;
	calibrate();
	fflush(NULL);
	pid = fork();
	if (pid == 0)
		run_child(&s, o.cpu[1]);
	child_pid = pid;
	pin(o.cpu[0]);
	if (pid < 0 || open_shm(&s) != 0)
		return 1;
	unio_tl_iface_set_am_handler(s.iface, AM_PING, parent_pong_cb, &s);
	unio_tl_iface_get_address(s.iface, s.ctl->parent_addr);
	__atomic_store_n(&s.ctl->parent_ready, 1, __ATOMIC_RELEASE);
	wait_flag(&s.ctl->child_ready);
	printf("unio-tlbench: cpus %d,%d, %u round trips x %u runs, FIFO %zu B\n", o.cpu[0],
	       o.cpu[1], o.iters, o.runs, unio_config_env()->shm_fifo_size);
	if (connect_peer(&s, s.ctl->child_addr) != 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return 1;
	}
	rc = measure_all(&s, &o);
	__atomic_store_n(&s.ctl->phase, PH_EXIT, __ATOMIC_RELEASE);
	waitpid(pid, &st, 0);
	unio_tl_ep_destroy(s.ep);
	unio_tl_iface_close(s.iface);
	munmap(s.ctl, clen);
	return rc == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
