/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * unio-placebench: is a cross-core transfer's speed a property of the memory it goes
 * through or of the moment?  Two threads on two CPUs, and REGIONS regions of 2 MiB (one
 * transparent hugepage each where the kernel gives one: physically contiguous, so that a
 * region has one placement on the host).  Each pass visits every region in turn and times
 * in it:
 * - a ping-pong of one cache line (the other thread answers on the next line): the median
 *   of 100 batches of 100 round trips, in ns a round trip;
 * - a stream shaped like shm's pipelined rendezvous: 64 KiB messages cut into 8 KiB
 *   fragments, each copied by the sender into a 256 KiB ring of 32-byte cells behind an
 *   8-byte header word (8224 bytes a fragment), and by the receiver out of it, which then
 *   zeroes the first word of every cell it consumed and publishes its tail every half ring,
 *   as shm's consumer does: the median ns of one 8 KiB copy on each side and GB/s overall.
 * A region whose figures stay put from pass to pass while other regions differ points at the
 * memory's placement (the host page behind it); figures that move together from one visit
 * to the next, whatever the region, point at the CPUs' placement at that moment.  "wait" is
 * the time either thread waited for its CPU during the visit (/proc schedstat): a visit with
 * a wait of more than a few microseconds shared a CPU with another task, and its figures are
 * not the machine's.  With -V each message carries its number and the receiver checks a sum
 * of every fragment it copied out against the sender's: a stream that lost, repeated or mixed
 * data fails the run (exit 1); the sums cost time on both sides, so measure without -V.
 * With -F (root) both threads run each visit under SCHED_FIFO and sleep 150 ms between
 * visits, so that on a loaded machine a visit is not preempted by other tasks (its wait
 * stays near 0) while those tasks keep most of the CPUs' time: both threads are pinned
 * before they raise their priority and drop it at the visit's end (two threads spinning at
 * real-time priority on one CPU would wait for each other until the kernel's real-time
 * throttling let one run).
 *
 * With -H the consumer zeroes only each fragment's header word, not every cell's first word:
 * not enough for shm's rings, whose variable-length messages may start on any cell, but the
 * difference is what the consumer's write-back of every line costs the sender.
 *
 *   unio-placebench [-c CPU,CPU] [-r REGIONS] [-p PASSES] [-n MESSAGES] [-V] [-F] [-H]
 *
 * Guest-physical addresses are printed where /proc/self/pagemap gives them (root).
 * Not a test of the library: a measurement tool (doc/guides/protocols.md, performance log).
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define REGION    (2u << 20)
#define RING      (256u << 10)
#define CELL      32u
#define FRAG      8192u
#define MSG_BYTES (CELL + FRAG)     /* header word and fragment header: one cell */
#define MSG_SIZE  (64u << 10)
#define BATCHES   100u
#define TRIPS     100u
#define SAMPLES   16384u

/* a region: [ring][source][destination][ping line][pong line] */
#define SRC_OFF   RING
#define DST_OFF   (RING + MSG_SIZE + 4096u)
#define PING_OFF  (DST_OFF + MSG_SIZE + 4096u)

enum phase { IDLE, PINGPONG, STREAM, QUIT };

struct shared {
	_Atomic int phase;
	_Atomic int done;
	_Atomic uint64_t tail __attribute__((aligned(64)));   /* receiver's published bytes */
	uint8_t *region;
	uint64_t msgs;
	uint64_t rx_sum;
	int validate;
	int fifo;
	int header_only;
	pid_t peer_tid;
	size_t n_rx;
	uint64_t rx_ns[SAMPLES];
};

static struct shared sh;

static uint64_t
now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int
pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t
median(uint64_t *v, size_t n)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

/* ns the thread @p tid has waited on a run queue (0: this thread) */
static uint64_t
run_wait(pid_t tid)
{
	unsigned long long run, wait = 0;
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat",
		 tid != 0 ? tid : (pid_t)syscall(SYS_gettid));
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	if (fscanf(f, "%llu %llu", &run, &wait) != 2)
		wait = 0;
	fclose(f);
	return wait;
}

/* SCHED_FIFO for this thread during a visit with -F (pinned already), else nothing */
static void
visit_priority(int on)
{
	struct sched_param sp = { .sched_priority = on ? 10 : 0 };

	if (sh.fifo)
		(void)pthread_setschedparam(pthread_self(), on ? SCHED_FIFO : SCHED_OTHER, &sp);
}

static uint64_t
guest_phys(const void *p)
{
	uint64_t e = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (pread(fd, &e, sizeof(e), (off_t)((uintptr_t)p / 4096 * sizeof(e))) != sizeof(e))
		e = 0;
	close(fd);
	return (e & ((UINT64_C(1) << 55) - 1)) * 4096;
}

static uint64_t
sum_bytes(const uint8_t *p, size_t n)
{
	uint64_t s = 0;

	for (size_t i = 0; i < n; i += 8) {
		uint64_t w;

		memcpy(&w, p + i, sizeof(w));
		s += w;
	}
	return s;
}

static void
answer_pings(void)
{
	_Atomic uint64_t *ping = (_Atomic uint64_t *)(void *)(sh.region + PING_OFF);
	_Atomic uint64_t *pong = (_Atomic uint64_t *)(void *)(sh.region + PING_OFF + 64);
	uint64_t last = 0, v;

	for (;;) {
		while ((v = atomic_load_explicit(ping, memory_order_acquire)) == last)
			;
		if (v == UINT64_MAX)
			return;
		last = v;
		atomic_store_explicit(pong, v, memory_order_release);
	}
}

/* the receiver: copy every fragment out, zero its cells' first words, credit every half ring */
static void
receive_stream(void)
{
	uint8_t *ring = sh.region, *dst = sh.region + DST_OFF;
	uint64_t pos = 0, consumed = 0, sum = 0;
	size_t k = 0;

	for (uint64_t m = 0; m < sh.msgs; m++) {
		for (uint32_t off = 0; off < MSG_SIZE; off += FRAG) {
			_Atomic uint64_t *hdr;
			uint64_t t0;

			if (pos + MSG_BYTES > RING) {
				consumed += RING - pos;
				pos = 0;
			}
			hdr = (_Atomic uint64_t *)(void *)(ring + pos);
			while (atomic_load_explicit(hdr, memory_order_acquire) == 0)
				;
			t0 = now_ns();
			memcpy(dst + off, ring + pos + CELL, FRAG);
			if (k < SAMPLES)
				sh.rx_ns[k++] = now_ns() - t0;
			if (sh.validate)
				sum += sum_bytes(dst + off, FRAG);
			for (uint32_t c = sh.header_only ? CELL : MSG_BYTES; c > 0; c -= CELL)
				*(volatile uint64_t *)(void *)(ring + pos + c - CELL) = 0;
			pos += MSG_BYTES;
			consumed += MSG_BYTES;
			if (consumed - atomic_load_explicit(&sh.tail, memory_order_relaxed) >=
			    RING / 2)
				atomic_store_explicit(&sh.tail, consumed, memory_order_release);
		}
	}
	atomic_store_explicit(&sh.tail, consumed, memory_order_release);
	sh.rx_sum = sum;
	sh.n_rx = k;
}

static void *
peer_main(void *arg)
{
	int cpu = *(int *)arg;

	sh.peer_tid = (pid_t)syscall(SYS_gettid);
	if (pin(cpu) != 0) {   /* before any real-time priority (-F) */
		fprintf(stderr, "unio-placebench: cannot run on CPU %d\n", cpu);
		exit(2);
	}
	for (;;) {
		int ph;

		while ((ph = atomic_load_explicit(&sh.phase, memory_order_acquire)) == IDLE)
			usleep(50);
		if (ph == QUIT)
			return NULL;
		visit_priority(1);
		if (ph == PINGPONG)
			answer_pings();
		else
			receive_stream();
		visit_priority(0);
		atomic_store_explicit(&sh.phase, IDLE, memory_order_relaxed);
		atomic_store_explicit(&sh.done, 1, memory_order_release);
	}
}

static void
run_phase(int ph)
{
	atomic_store_explicit(&sh.done, 0, memory_order_relaxed);
	atomic_store_explicit(&sh.phase, ph, memory_order_release);
}

static void
wait_phase(void)
{
	while (!atomic_load_explicit(&sh.done, memory_order_acquire))
		;
}

/* median ns of a round trip of one line */
static uint64_t
time_pingpong(void)
{
	_Atomic uint64_t *ping = (_Atomic uint64_t *)(void *)(sh.region + PING_OFF);
	_Atomic uint64_t *pong = (_Atomic uint64_t *)(void *)(sh.region + PING_OFF + 64);
	uint64_t batch[BATCHES], i = 0;

	atomic_store(ping, 0);
	atomic_store(pong, 0);
	run_phase(PINGPONG);
	for (unsigned int b = 0; b < BATCHES; b++) {
		uint64_t t0 = now_ns();

		for (unsigned int n = 0; n < TRIPS; n++) {
			i++;
			atomic_store_explicit(ping, i, memory_order_release);
			while (atomic_load_explicit(pong, memory_order_acquire) != i)
				;
		}
		batch[b] = (now_ns() - t0) / TRIPS;
	}
	atomic_store_explicit(ping, UINT64_MAX, memory_order_release);
	wait_phase();
	return median(batch, BATCHES);
}

struct stream_result {
	uint64_t tx_ns, rx_ns;
	double gbps;
	int ok;
};

/* the sender: each message's 8 KiB fragments into the ring, header word last */
static struct stream_result
time_stream(uint64_t *tx_ns)
{
	uint8_t *ring = sh.region, *src = sh.region + SRC_OFF;
	uint64_t pos = 0, head = 0, sum = 0, t_start;
	struct stream_result r;
	size_t k = 0;

	memset(ring, 0, RING);
	atomic_store(&sh.tail, 0);
	run_phase(STREAM);
	t_start = now_ns();
	for (uint64_t m = 0; m < sh.msgs; m++) {
		/* each message differs, so that a fragment copied twice or lost changes the sum */
		if (sh.validate)
			memcpy(src, &m, sizeof(m));
		for (uint32_t off = 0; off < MSG_SIZE; off += FRAG) {
			uint64_t t0;

			if (pos + MSG_BYTES > RING) {
				head += RING - pos;
				pos = 0;
			}
			while (head + MSG_BYTES - atomic_load_explicit(&sh.tail,
								       memory_order_acquire) > RING)
				;
			t0 = now_ns();
			memcpy(ring + pos + CELL, src + off, FRAG);
			if (k < SAMPLES)
				tx_ns[k++] = now_ns() - t0;
			if (sh.validate)
				sum += sum_bytes(src + off, FRAG);
			atomic_store_explicit((_Atomic uint64_t *)(void *)(ring + pos), MSG_BYTES,
					      memory_order_release);
			pos += MSG_BYTES;
			head += MSG_BYTES;
		}
	}
	wait_phase();
	r.gbps = (double)sh.msgs * MSG_SIZE / (double)(now_ns() - t_start);
	r.tx_ns = median(tx_ns, k);
	r.rx_ns = median(sh.rx_ns, sh.n_rx);
	r.ok = sh.rx_sum == sum;
	return r;
}

static int
parse_args(int argc, char **argv, int cpu[2], unsigned int *regions, unsigned int *passes,
	   uint64_t *msgs)
{
	int c;

	while ((c = getopt(argc, argv, "c:r:p:n:VFHh")) != -1) {
		switch (c) {
		case 'c':
			if (sscanf(optarg, "%d,%d", &cpu[0], &cpu[1]) != 2 || cpu[0] < 0 ||
			    cpu[1] < 0 || cpu[0] == cpu[1])
				return -1;
			break;
		case 'r':
			*regions = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'p':
			*passes = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'n':
			*msgs = strtoull(optarg, NULL, 0);
			break;
		case 'V':
			sh.validate = 1;
			break;
		case 'F':
			sh.fifo = 1;
			break;
		case 'H':
			sh.header_only = 1;
			break;
		default:
			return -1;
		}
	}
	if (*regions == 0 || *regions > 256 || *passes == 0 || *msgs == 0 || optind != argc)
		return -1;
	return 0;
}

int
main(int argc, char **argv)
{
	int cpu[2] = { 0, 1 }, failed = 0;
	unsigned int regions = 8, passes = 3;
	uint64_t msgs = 1000, *tx_ns;
	uint8_t *map, *base;
	pthread_t peer;

	if (parse_args(argc, argv, cpu, &regions, &passes, &msgs) != 0) {
		fprintf(stderr, "usage: unio-placebench [-c CPU,CPU] [-r REGIONS (1-256)] "
			"[-p PASSES] [-n MESSAGES] [-V] [-F] [-H]\n");
		return 2;
	}
	map = mmap(NULL, (size_t)(regions + 1) * REGION, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	tx_ns = malloc(SAMPLES * sizeof(*tx_ns));
	if (map == MAP_FAILED || tx_ns == NULL) {
		fprintf(stderr, "unio-placebench: %s\n", strerror(errno));
		return 2;
	}
	base = (uint8_t *)(((uintptr_t)map + REGION - 1) & ~(uintptr_t)(REGION - 1));
	(void)madvise(base, (size_t)regions * REGION, MADV_HUGEPAGE);
	for (size_t i = 0; i < (size_t)regions * REGION; i += 8)
		memcpy(base + i, &i, sizeof(i));
	if (pin(cpu[0]) != 0) {
		fprintf(stderr, "unio-placebench: cannot run on CPU %d\n", cpu[0]);
		return 2;
	}
	sh.msgs = msgs;
	if (pthread_create(&peer, NULL, peer_main, &cpu[1]) != 0)
		return 2;
	for (unsigned int r = 0; r < regions; r++)
		printf("region %u guest-physical 0x%" PRIx64 "\n", r,
		       guest_phys(base + (size_t)r * REGION));
	printf("%4s %6s %10s %8s %8s %8s %7s\n", "pass", "region", "wait_us", "rtt_ns",
	       "tx_ns", "rx_ns", "GB/s");
	for (unsigned int p = 0; p < passes; p++) {
		for (unsigned int r = 0; r < regions; r++) {
			uint64_t w0 = run_wait(0) + run_wait(sh.peer_tid), rtt;
			struct stream_result s;

			sh.region = base + (size_t)r * REGION;
			if (sh.fifo)
				usleep(150000);
			w0 = run_wait(0) + run_wait(sh.peer_tid);
			visit_priority(1);
			rtt = time_pingpong();
			s = time_stream(tx_ns);
			visit_priority(0);
			printf("%4u %6u %10" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64
			       " %7.2f%s\n", p, r,
			       (run_wait(0) + run_wait(sh.peer_tid) - w0) / 1000, rtt,
			       s.tx_ns, s.rx_ns, s.gbps, s.ok ? "" : "  DATA MISMATCH");
			fflush(stdout);
			failed |= !s.ok;
		}
	}
	atomic_store_explicit(&sh.phase, QUIT, memory_order_release);
	pthread_join(peer, NULL);
	free(tx_ns);
	munmap(map, (size_t)(regions + 1) * REGION);
	return failed;
}
