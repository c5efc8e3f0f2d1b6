/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * unio-copybench: one core copying one buffer into another, again and again, the way a put,
 * a get and the pipelined rendezvous copies do, with several copy routines, source and
 * destination backings, and optionally a second process that reads the destination after
 * every copy (what a receiver does with a pipelined fragment).  Not a test: a measurement
 * tool for choosing the large-copy routine (doc/guides/protocols.md, "Performance log").
 *
 *   unio-copybench [-s 64k,1m,16m] [-r ROUNDS] [-c CPU] [-C READER_CPU] [-R]
 *                  [-m glibc,movsb,avx2,avx2nt,unio] [-S malloc,page,huge]
 *                  [-D malloc,page,huge] [-A]
 *
 * Routines: glibc memcpy; "rep movsb"; avx2, the library's forward AVX2 loop (unaligned
 * loads, stores aligned to 32 bytes, 128 bytes an iteration: unio_memcpy_avx2_fwd_(), what
 * unio_memcpy_part_() calls); avx2nt, the same loop with non-temporal stores and an sfence
 * (unio_memcpy_avx2_nt_()); unio, the library's unio_memcpy_large() with the configured
 * thresholds.  Each below 256 bytes is memcpy.
 * Sources: malloc (malloc(size + 8): what unio-perf's put and get copy from, 16 bytes past a
 * page boundary from 128 KiB on), page (a page-aligned 4 KiB-page memfd mapping, what
 * ucx_perftest's buffers are), huge (a 2 MiB-page memfd mapping).  Destinations: malloc
 * (what a get copies into), page, huge (MAP_SHARED memfd mappings: what a peer's mapped
 * buffer or a shm segment is).  -A sweeps (dst - src) mod 4096 instead (run_sweep()).
 * With -R only the shared destinations (page, huge): the reader, forked after the buffers
 * exist, would see a malloc destination as a copy of its own; every sum it reads is checked
 * against the source's, so a reader that read anything else fails the run.
 * Every buffer is allocated and written once, then reused for every copy of every round.
 *
 * A round times every combination once, in an order rotated from round to round: a few
 * warm-up copies, then batches of copies (at least 256 KiB a batch; one copy a batch with
 * -R), the median batch giving the round's figure.  The output is, per size and
 * combination, the median MB/s (2^20 bytes/s) over the rounds, its range, and the median of
 * the per-round ratios against glibc memcpy with the same source and destination.
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#include <x86intrin.h>
#endif

#include "unio_config.h"
#include "unio_memcpy.h"

#define MAX_SIZES  8
#define MAX_ROUNDS 64
#define HUGE_SZ    (2u << 20)

enum { M_GLIBC, M_MOVSB, M_AVX2, M_AVX2NT, M_UNIO, M_N };
enum { S_MALLOC, S_PAGE, S_HUGE, S_N };
enum { D_MALLOC, D_PAGE, D_HUGE, D_N };

static const char *const m_names[M_N] = { "glibc", "movsb", "avx2", "avx2nt", "unio" };
static const char *const s_names[S_N] = { "malloc", "page", "huge" };
static const char *const d_names[D_N] = { "malloc", "page", "huge" };

typedef void (*copy_fn)(void *dst, const void *src, size_t len);

/* the reader process's mailbox, in a shared page */
struct mbox {
	volatile uint64_t seq;       /* written by the copier: read dst[0, len) now */
	volatile uint64_t ack;       /* written by the reader when done */
	volatile uint64_t quit;
	uint8_t *volatile dst;
	volatile size_t len;
	volatile uint64_t sum;
};

static void
copy_glibc(void *dst, const void *src, size_t len)
{
	memcpy(dst, src, len);
}

#if defined(__x86_64__)
static void
copy_movsb(void *dst, const void *src, size_t len)
{
	__asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(len) : : "memory");
}

/* the library's own forward loops (unio_memcpy_part_() calls them), memcpy below 256 bytes */
static void
copy_avx2(void *dst, const void *src, size_t len)
{
	if (len < 256)
		memcpy(dst, src, len);
	else
		unio_memcpy_avx2_fwd_(dst, src, len);
}

static void
copy_avx2nt(void *dst, const void *src, size_t len)
{
	if (len < 256)
		memcpy(dst, src, len);
	else
		unio_memcpy_avx2_nt_(dst, src, len);
}

static bool
method_ok(int m)
{
	return m != M_AVX2 && m != M_AVX2NT ? true : __builtin_cpu_supports("avx2");
}

static inline uint64_t
ticks(void)
{
	return __rdtsc();
}

static inline void
cpu_relax(void)
{
	_mm_pause();
}
#else
/* elsewhere only glibc and the library's routine (which falls back to memcpy) */
#define copy_movsb  copy_glibc
#define copy_avx2   copy_glibc
#define copy_avx2nt copy_glibc

static bool
method_ok(int m)
{
	return m == M_GLIBC || m == M_UNIO;
}

static inline uint64_t
ticks(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void
cpu_relax(void)
{
	__asm__ volatile("" : : : "memory");
}
#endif

static const copy_fn m_fns[M_N] = { copy_glibc, copy_movsb, copy_avx2, copy_avx2nt,
				     unio_memcpy_large };

/* ---- options ---- */

static size_t sizes[MAX_SIZES];
static unsigned int n_sizes;
static unsigned int rounds = 5;
static int cpu = -1, reader_cpu = -1;
static bool with_reader;
static bool sweep;
static bool m_on[M_N] = { true, true, true, true, true };
static bool s_on[S_N] = { true, true, true };
static bool d_on[D_N] = { true, true, true };

static int
parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end != '\0' || v == 0 || v > (1ull << 32))
		return -1;
	*out = (size_t)v;
	return 0;
}

static int
parse_names(char *arg, const char *const *names, int n, bool *on)
{
	for (int i = 0; i < n; i++)
		on[i] = false;
	for (char *t = strtok(arg, ","); t != NULL; t = strtok(NULL, ",")) {
		int i;

		for (i = 0; i < n && strcmp(t, names[i]) != 0; i++)
			;
		if (i == n) {
			fprintf(stderr, "unknown name '%s'\n", t);
			return -1;
		}
		on[i] = true;
	}
	return 0;
}

static void
usage(const char *prog)
{
	fprintf(stderr, "usage: %s [-s 64k,1m,16m] [-r rounds] [-c cpu] [-C reader_cpu] [-R]\n"
		"  [-m glibc,movsb,avx2,avx2nt,unio] [-S malloc,page,huge] [-D malloc,page,huge]"
		" [-A]\n",
		prog);
}

static int
parse(int argc, char **argv)
{
	int o;

	while ((o = getopt(argc, argv, "s:r:c:C:RAm:S:D:h")) != -1) {
		switch (o) {
		case 's':
			n_sizes = 0;
			for (char *t = strtok(optarg, ","); t != NULL; t = strtok(NULL, ",")) {
				if (n_sizes == MAX_SIZES || parse_size(t, &sizes[n_sizes]) != 0)
					return -1;
				n_sizes++;
			}
			break;
		case 'r':
			rounds = (unsigned int)atoi(optarg);
			if (rounds == 0 || rounds > MAX_ROUNDS)
				return -1;
			break;
		case 'c': cpu = atoi(optarg); break;
		case 'C': reader_cpu = atoi(optarg); break;
		case 'R': with_reader = true; break;
		case 'A': sweep = true; break;
		case 'm':
			if (parse_names(optarg, m_names, M_N, m_on) != 0)
				return -1;
			break;
		case 'S':
			if (parse_names(optarg, s_names, S_N, s_on) != 0)
				return -1;
			break;
		case 'D':
			if (parse_names(optarg, d_names, D_N, d_on) != 0)
				return -1;
			break;
		default:
			return -1;
		}
	}
	if (n_sizes == 0) {
		sizes[0] = 64u << 10;
		sizes[1] = 1u << 20;
		sizes[2] = 16u << 20;
		n_sizes = 3;
	}
	return 0;
}

/* ---- buffers ---- */

static void
pin(int c)
{
	cpu_set_t set;

	if (c < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(c, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		perror("sched_setaffinity");
}

/* a MAP_SHARED memfd mapping of @p len bytes, 2 MiB pages when @p huge; NULL on failure */
static uint8_t *
memfd_map(size_t len, bool huge)
{
	size_t l = huge ? (len + HUGE_SZ - 1) / HUGE_SZ * HUGE_SZ : len;
	int fd = memfd_create("unio-copybench", MFD_CLOEXEC | (huge ? MFD_HUGETLB : 0));
	void *p;

	if (fd < 0)
		return NULL;
	if (ftruncate(fd, (off_t)l) != 0) {
		close(fd);
		return NULL;
	}
	p = mmap(NULL, l, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

static uint8_t *
src_alloc(int kind, size_t len)
{
	uint8_t *p = kind == S_MALLOC ? malloc(len + 8) : memfd_map(len, kind == S_HUGE);

	if (p != NULL)
		for (size_t i = 0; i < len; i++)
			p[i] = (uint8_t)(i * 7 + 3);
	return p;
}

static uint8_t *
dst_alloc(int kind, size_t len)
{
	uint8_t *p = kind == D_MALLOC ? malloc(len + 8) : memfd_map(len, kind == D_HUGE);

	if (p != NULL)
		memset(p, 0, len);
	return p;
}

/* ---- the reader process ---- */

/* the sum of the first word of every 64-byte line of @p p (the reader's loads) */
static uint64_t
line_sum(const uint8_t *p, size_t len)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < len; i += 64)   /* a load from every line */
		sum += *(const volatile uint64_t *)(p + i);
	return sum;
}

static void
reader_loop(struct mbox *mb)
{
	uint64_t seen = 0;

	pin(reader_cpu);
	while (!mb->quit) {
		uint64_t s = mb->seq, sum = 0;
		const uint8_t *p;
		size_t len;

		if (s == seen) {
			cpu_relax();
			continue;
		}
		p = mb->dst;
		len = mb->len;
		sum = line_sum(p, len);
		mb->sum = sum;
		seen = s;
		mb->ack = s;
	}
	_exit(0);
}

/*
 * After a copy: let the reader read the destination and wait until it did.  False when what
 * it read is not the copy (@p expect: the same sum over the source), e.g. a destination that
 * fork() gave the reader a copy of instead of sharing it.
 */
static bool
reader_turn(struct mbox *mb, uint8_t *dst, size_t len, uint64_t expect)
{
	uint64_t s = mb->seq + 1;

	mb->dst = dst;
	mb->len = len;
	__atomic_store_n(&mb->seq, s, __ATOMIC_RELEASE);
	while (__atomic_load_n(&mb->ack, __ATOMIC_ACQUIRE) != s)
		cpu_relax();
	return mb->sum == expect;
}

/* ---- measurement ---- */

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

static double tick_hz;

static void
calibrate(void)
{
	struct timespec a, b;
	uint64_t t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &a);
	t0 = ticks();
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000l + (b.tv_nsec - a.tv_nsec) < 200000000l);
	t1 = ticks();
	tick_hz = (double)(t1 - t0) /
		  ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9);
}

/* MB/s of the median batch; -1 when the reader did not read the copy */
static double
measure(copy_fn fn, uint8_t *dst, const uint8_t *src, size_t len, struct mbox *mb)
{
	enum { BATCHES = 64 };
	uint64_t t[BATCHES];
	size_t per = mb != NULL ? 1 : (len >= (256u << 10) ? 1 : (256u << 10) / len);
	unsigned int warm = len >= (16u << 20) ? 2 : 8;
	uint64_t expect = mb != NULL ? line_sum(src, len) : 0;

	for (unsigned int i = 0; i < warm; i++) {
		fn(dst, src, len);
		if (mb != NULL && !reader_turn(mb, dst, len, expect))
			return -1;
	}
	for (unsigned int b = 0; b < BATCHES; b++) {
		uint64_t t0 = ticks();

		for (size_t i = 0; i < per; i++) {
			fn(dst, src, len);
			__asm__ volatile("" : : "r"(dst) : "memory");
		}
		t[b] = ticks() - t0;
		if (mb != NULL && !reader_turn(mb, dst, len, expect))
			return -1;
	}
	qsort(t, BATCHES, sizeof(t[0]), cmp_u64);
	return (double)len * (double)per / ((double)t[BATCHES / 2] / tick_hz) / 1048576.0;
}

/*
 * -A: the destination's offset against the source's within a page: both 4 KiB-page memfd
 * mappings, the source at a page boundary, the destination @c delta bytes past one (or
 * 4096 - |delta| for a negative one: what counts is (dst - src) mod 4096).
 */
static int
run_sweep(size_t len)
{
	static const int deltas[] = { 0, 1, 8, 16, 32, 48, 63, 64, 65, 80, 96, 112, 127, 128, 192,
				      256, 512, 1024,
				      2048, 3072, 3968, 4032, 4064, 4080, 4095 };
	enum { ND = sizeof(deltas) / sizeof(deltas[0]) };
	uint8_t *src = src_alloc(S_PAGE, len), *dbase = dst_alloc(D_PAGE, len + 4096);
	double v[M_N][ND][MAX_ROUNDS];

	if (src == NULL || dbase == NULL)
		return -1;
	for (unsigned int r = 0; r < rounds; r++)
		for (int i = 0; i < ND; i++)
			for (int m = 0; m < M_N; m++)
				if (m_on[m] && method_ok(m))
					v[m][i][r] = measure(m_fns[m], dbase + deltas[i], src, len,
							     NULL);
	printf("\nsize %zu, source page-aligned, destination at the offset (median MB/s of %u "
	       "rounds)\n%6s", len, rounds, "offset");
	for (int m = 0; m < M_N; m++)
		if (m_on[m] && method_ok(m))
			printf(" %9s", m_names[m]);
	printf("\n");
	for (int i = 0; i < ND; i++) {
		printf("%6d", deltas[i]);
		for (int m = 0; m < M_N; m++) {
			if (!m_on[m] || !method_ok(m))
				continue;
			qsort(v[m][i], rounds, sizeof(double), cmp_dbl);
			printf(" %9.0f", v[m][i][rounds / 2]);
		}
		printf("\n");
	}
	fflush(stdout);
	munmap(src, len);
	munmap(dbase, len + 4096);
	return 0;
}

struct combo {
	int m, s, d;
	double mbps[MAX_ROUNDS];
	double ratio[MAX_ROUNDS];
};

static int
run_size(size_t len, struct mbox *mb)
{
	uint8_t *src[S_N] = { NULL }, *dst[D_N] = { NULL };
	struct combo *c = calloc(M_N * S_N * D_N, sizeof(*c));
	unsigned int n = 0;
	pid_t child = -1;
	int rc = 0;

	if (c == NULL)
		return -1;
	for (int s = 0; s < S_N; s++)
		if (s_on[s] && (src[s] = src_alloc(s, len)) == NULL)
			fprintf(stderr, "source %s of %zu bytes: unavailable\n", s_names[s], len);
	for (int d = 0; d < D_N; d++)
		if (d_on[d] && d == D_MALLOC && mb != NULL)   /* fork() copies, never shares it */
			fprintf(stderr, "destination malloc: private to this process, the reader "
				"would read a copy of its own (-R): skipped\n");
		else if (d_on[d] && (dst[d] = dst_alloc(d, len)) == NULL)
			fprintf(stderr, "destination %s of %zu bytes: unavailable\n", d_names[d],
				len);
	if (mb != NULL) {   /* the reader sees the buffers: it forks after they exist */
		mb->quit = 0;
		mb->seq = mb->ack = 0;
		child = fork();
		if (child == 0)
			reader_loop(mb);
		if (child < 0) {
			perror("fork");
			rc = -1;
			goto out;
		}
	}
	for (int m = 0; m < M_N; m++)
		for (int s = 0; s < S_N; s++)
			for (int d = 0; d < D_N; d++)
				if (m_on[m] && method_ok(m) && src[s] != NULL && dst[d] != NULL)
					c[n++] = (struct combo){ .m = m, .s = s, .d = d };
	for (unsigned int r = 0; r < rounds; r++) {
		for (unsigned int k = 0; k < n; k++) {
			struct combo *x = &c[(k + r * 7) % n];

			x->mbps[r] = measure(m_fns[x->m], dst[x->d], src[x->s], len, mb);
			if (x->mbps[r] < 0) {
				fprintf(stderr, "the reader process did not read %s's copy into "
					"%s\n", m_names[x->m], d_names[x->d]);
				rc = -1;
				goto out;
			}
			if (memcmp(dst[x->d], src[x->s], len) != 0) {
				fprintf(stderr, "%s copied wrong data\n", m_names[x->m]);
				rc = -1;
				goto out;
			}
		}
		for (unsigned int k = 0; k < n; k++)   /* against glibc, same buffers, same round */
			for (unsigned int g = 0; g < n; g++)
				if (c[g].m == M_GLIBC && c[g].s == c[k].s && c[g].d == c[k].d)
					c[k].ratio[r] = c[k].mbps[r] / c[g].mbps[r];
	}
	printf("\nsize %zu%s\n%-8s %-7s %-5s %10s %21s %8s %15s\n", len,
	       mb != NULL ? " (a reader process reads the destination after each copy)" : "",
	       "routine", "src", "dst", "MB/s", "range", "/glibc", "range");
	for (unsigned int k = 0; k < n; k++) {
		double v[MAX_ROUNDS], q[MAX_ROUNDS];

		memcpy(v, c[k].mbps, rounds * sizeof(v[0]));
		memcpy(q, c[k].ratio, rounds * sizeof(q[0]));
		qsort(v, rounds, sizeof(v[0]), cmp_dbl);
		qsort(q, rounds, sizeof(q[0]), cmp_dbl);
		printf("%-8s %-7s %-5s %10.0f %10.0f - %8.0f %8.3f %6.3f - %6.3f\n",
		       m_names[c[k].m], s_names[c[k].s], d_names[c[k].d], v[rounds / 2], v[0],
		       v[rounds - 1], q[rounds / 2], q[0], q[rounds - 1]);
	}
	fflush(stdout);
out:
	if (child > 0) {
		mb->quit = 1;
		waitpid(child, NULL, 0);
	}
	free(c);
	for (int s = 0; s < S_N; s++)
		if (src[s] != NULL && s == S_MALLOC)
			free(src[s]);
		else if (src[s] != NULL)
			munmap(src[s], s == S_HUGE ? (len + HUGE_SZ - 1) / HUGE_SZ * HUGE_SZ : len);
	for (int d = 0; d < D_N; d++)
		if (dst[d] != NULL && d == D_MALLOC)
			free(dst[d]);
		else if (dst[d] != NULL)
			munmap(dst[d], d == D_HUGE ? (len + HUGE_SZ - 1) / HUGE_SZ * HUGE_SZ : len);
	return rc;
}

int
main(int argc, char **argv)
{
	struct mbox *mb = NULL;
	int rc = 0;

	if (parse(argc, argv) != 0) {
		usage(argv[0]);
		return 2;
	}
	pin(cpu);
	calibrate();
	{   /* the thresholds of the environment (UNIO_COPY_*), as a context would set them */
		struct unio_config *cfg;

		if (unio_config_read(&cfg) != UNIO_OK)
			return 2;
		unio_memcpy_configure(cfg);
		unio_config_release(cfg);
	}
	printf("unio-copybench: cpu %d, %u rounds, unio_memcpy_large: %s\n", cpu, rounds,
	       unio_memcpy_describe());
	if (with_reader) {
		mb = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (mb == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
	}
	for (unsigned int i = 0; i < n_sizes && rc == 0; i++)
		rc = sweep ? run_sweep(sizes[i]) : run_size(sizes[i], mb);
	return rc == 0 ? 0 : 1;
}
