/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UNIO_TEST_H
#define UNIO_TEST_H

/**
 * @file
 * The test harness.  Tests register themselves into suites; app/test/meson.build turns each
 * one into a `meson test` entry (`meson test --suite fast`).  A test returns TEST_OK,
 * TEST_FAIL or TEST_SKIP (exit code 77, which meson reports as SKIP); a skip must say why.
 *
 *     UNIO_TEST(config_size, fast)
 *     {
 *             TEST_ASSERT_EQ(parse("4k"), 4096);
 *             return TEST_OK;
 *     }
 *
 * Suites: fast (unit tests, also run under ASan+UBSan), mp (several real processes),
 * slow (long or heavy), open (the acceptance check of a requirement that is not met yet:
 * kept, run by hand, not by CI, and listed in the driver's doc).  Multi-process tests
 * start children with test_spawn(), which re-executes this binary as
 * "unio-test --child NAME ARGS..." and runs the function registered with
 * UNIO_TEST_CHILD(NAME).
 */

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <rte_common.h>

#define TEST_OK   0
#define TEST_FAIL 1
#define TEST_SKIP 77

typedef int (*unio_test_fn_t)(void);
typedef int (*unio_test_child_fn_t)(int argc, char **argv);

void unio_test_register(const char *name, const char *suite, unio_test_fn_t fn);
void unio_test_register_child(const char *name, unio_test_child_fn_t fn);

/** Define and register test @p name in suite @p suite (fast, mp, slow). */
#define UNIO_TEST(name, suite) \
	static int test_##name(void); \
	RTE_INIT(unio_test_reg_##name) \
	{ \
		unio_test_register(#name, #suite, test_##name); \
	} \
	static int test_##name(void)

/** Define a child-process entry point @p name for test_spawn(). */
#define UNIO_TEST_CHILD(name) \
	static int child_##name(int argc, char **argv); \
	RTE_INIT(unio_test_regc_##name) \
	{ \
		unio_test_register_child(#name, child_##name); \
	} \
	static int child_##name(int argc, char **argv)

#define TEST_LOG(fmt, ...) fprintf(stderr, "  %s:%d: " fmt "\n", __FILE__, __LINE__, \
				   ##__VA_ARGS__)

#define TEST_ASSERT(cond, fmt, ...) do { \
	if (!(cond)) { \
		TEST_LOG("assertion '%s' failed: " fmt, #cond, ##__VA_ARGS__); \
		return TEST_FAIL; \
	} \
} while (0)

#define TEST_ASSERT_EQ(a, b) do { \
	long long a_ = (long long)(a), b_ = (long long)(b); \
	if (a_ != b_) { \
		TEST_LOG("%s == %s failed: %lld != %lld", #a, #b, a_, b_); \
		return TEST_FAIL; \
	} \
} while (0)

#define TEST_ASSERT_STATUS(expr, want) do { \
	int got_ = (int)(expr); \
	if (got_ != (int)(want)) { \
		TEST_LOG("%s: got status %d, want %d (%s)", #expr, got_, (int)(want), #want); \
		return TEST_FAIL; \
	} \
} while (0)

#define TEST_SKIP_BECAUSE(fmt, ...) do { \
	fprintf(stderr, "  SKIP: " fmt "\n", ##__VA_ARGS__); \
	return TEST_SKIP; \
} while (0)

/** Start this binary as a child running UNIO_TEST_CHILD(@p name) with @p args (NULL-ended). */
pid_t test_spawn(const char *name, const char *const *args);

/** Wait for @p pid up to @p timeout_ms; kill it when late.  Returns its exit code or -1. */
int test_wait(pid_t pid, int timeout_ms);

/** CLOCK_MONOTONIC in seconds, and in whole milliseconds. */
double test_now_s(void);
uint64_t test_now_ms(void);

/** Run a shell command, return its exit status (or -1). */
int test_system(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** Run a shell command and capture stdout+stderr into @p out (NUL-terminated). */
int test_capture(char *out, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/**
 * Move the calling process into network namespace @p ns (a name under /var/run/netns, as
 * `ip netns add` makes); "-" stays where it is.  0, or -1 with errno set.
 */
int test_enter_netns(const char *ns);

/** Nonzero when this process can make network namespaces (root, iproute2's `ip netns`). */
int test_can_netns(void);

/**
 * usertools/unio-topology.sh @p kind @p op @p name [@p extra]: build ("up") or remove
 * ("down") the veth or bridge topology of namespaces NAME-a, NAME-b (and NAME-m); 0 when
 * it succeeded.  @p extra (topology options) may be NULL.
 */
int test_topology(const char *kind, const char *op, const char *name, const char *extra);

/** Path of the build directory's tools (unio-info, unio-perf): "<dir of this binary>/..". */
const char *test_build_dir(void);

/** Simple deterministic checksum (FNV-1a, 64-bit). */
uint64_t test_checksum(const void *buf, size_t len);

/** Fill @p buf with a pattern derived from @p seed. */
void test_fill(void *buf, size_t len, uint64_t seed);

/** Where the locks of test_netns_hold() live ("unio-<pid>.lock"). */
#define TEST_NETNS_LOCKS "/var/run/unio-test-netns"

/**
 * Mark the network namespaces named "unio...-@p pid..." as a live test's: the lock fd, held
 * until the caller exits (-1, -2: not held).  The runner takes it for its own pid before a
 * test runs.
 */
int test_netns_hold(long pid);

/** Remove the network namespaces of dead tests (nobody holds their lock): how many. */
unsigned int test_sweep_dead_netns(void);

/** How many times @p needle occurs in @p hay (a message said once, not twice). */
unsigned int test_count(const char *hay, const char *needle);

/**
 * Wait up to @p timeout_ms until a TCP socket listens on @p port (any address) in the network
 * namespace of process @p pid (0: this one's), as /proc/PID/net/tcp and tcp6 say: a client
 * need not try refused connections, each one logged, while its server comes up.  0 when
 * one listens, -1 when none did in time or @p pid is gone.
 */
int test_wait_listen(pid_t pid, int port, int timeout_ms);

/**
 * A free TCP port for a listener of this test (on any address), reserved for this process
 * until it exits: no other test, in this or another build tree, gets it meanwhile, and the
 * kernel hands it to nobody (it lies below the ephemeral port range).  -1 when none is left.
 */
int test_free_port(void);

#endif /* UNIO_TEST_H */
