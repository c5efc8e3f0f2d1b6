/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * unio-test: runs one registered test (the way meson test calls it), a whole suite, or a
 * child process of a multi-process test.
 *
 *   unio-test NAME              run one test
 *   unio-test --suite SUITE     run every test of a suite, print "N passed, N failed"
 *   unio-test --list            list "NAME SUITE" lines
 *   unio-test --child NAME ...  (internal) run a child entry point
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <sched.h>
#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <unio_env.h>

#include "unio_config_priv.h"
#include "unio_test.h"

#define MAX_TESTS 512

struct test_entry {
	const char *name;
	const char *suite;
	unio_test_fn_t fn;
};

struct child_entry {
	const char *name;
	unio_test_child_fn_t fn;
};

static struct test_entry tests[MAX_TESTS];
static unsigned int n_tests;
static struct child_entry children[MAX_TESTS];
static unsigned int n_children;
static char self_exe[PATH_MAX];
static char build_dir[PATH_MAX];

void
unio_test_register(const char *name, const char *suite, unio_test_fn_t fn)
{
	if (n_tests < MAX_TESTS)
		tests[n_tests++] = (struct test_entry){ name, suite, fn };
}

void
unio_test_register_child(const char *name, unio_test_child_fn_t fn)
{
	if (n_children < MAX_TESTS)
		children[n_children++] = (struct child_entry){ name, fn };
}

const char *
test_build_dir(void)
{
	return build_dir;
}

pid_t
test_spawn(const char *name, const char *const *args)
{
	const char *argv[64];
	int argc = 0;
	pid_t pid;

	argv[argc++] = self_exe;
	argv[argc++] = "--child";
	argv[argc++] = name;
	for (; args != NULL && *args != NULL && argc < 63; args++)
		argv[argc++] = *args;
	argv[argc] = NULL;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);   /* never outlive the test (exec keeps it) */
		execv(self_exe, (char *const *)argv);
		_exit(127);
	}
	return pid;
}

double
test_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t
test_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int
test_wait(pid_t pid, int timeout_ms)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	int status;

	for (int waited = 0;; waited += 10) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			break;
		if (r < 0)
			return -1;
		if (waited >= timeout_ms) {
			TEST_LOG("child %d still running after %d ms: killing it", (int)pid,
				 timeout_ms);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		nanosleep(&ts, NULL);
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	TEST_LOG("child %d killed by signal %d", (int)pid, WTERMSIG(status));
	return -1;
}

static int
vsystem(char *out, size_t len, const char *fmt, va_list ap)
{
	char cmd[4096];
	size_t n = 0;
	FILE *p;
	int st;

	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	if (out == NULL) {
		st = system(cmd);
		return st == -1 ? -1 : (WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	}
	strncat(cmd, " 2>&1", sizeof(cmd) - strlen(cmd) - 1);
	p = popen(cmd, "r");
	if (p == NULL)
		return -1;
	while (n + 1 < len) {
		size_t r = fread(out + n, 1, len - n - 1, p);

		if (r == 0)
			break;
		n += r;
	}
	out[n] = '\0';
	st = pclose(p);
	return st == -1 ? -1 : (WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

int
test_enter_netns(const char *ns)
{
	char path[PATH_MAX];
	int fd, rc;

	if (strcmp(ns, "-") == 0)
		return 0;
	snprintf(path, sizeof(path), "/var/run/netns/%s", ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	rc = setns(fd, CLONE_NEWNET);
	close(fd);
	return rc;
}

int
test_can_netns(void)
{
	return geteuid() == 0 && test_system("ip netns list >/dev/null 2>&1") == 0;
}

int
test_topology(const char *kind, const char *op, const char *name, const char *extra)
{
	const char *src = getenv("UNIO_TEST_SOURCE_DIR");

	return test_system("%s/usertools/unio-topology.sh %s %s %s %s >/dev/null 2>&1",
			   src != NULL ? src : ".", kind, op, name, extra != NULL ? extra : "");
}

int
test_system(const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vsystem(NULL, 0, fmt, ap);
	va_end(ap);
	return r;
}

int
test_capture(char *out, size_t len, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vsystem(out, len, fmt, ap);
	va_end(ap);
	return r;
}

uint64_t
test_checksum(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

unsigned int
test_count(const char *hay, const char *needle)
{
	unsigned int n = 0;

	for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + 1, needle))
		n++;
	return n;
}

void
test_fill(void *buf, size_t len, uint64_t seed)
{
	uint8_t *p = buf;
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

/* Does /proc/@p pid/net/@p file list a socket in state LISTEN (0A) on @p port? */
static bool
listens(pid_t pid, const char *file, int port)
{
	char path[64], line[512], local[64], state[8];
	bool found = false;
	unsigned int p;
	FILE *f;

	if (pid > 0)
		snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)pid, file);
	else
		snprintf(path, sizeof(path), "/proc/self/net/%s", file);
	f = fopen(path, "r");
	if (f == NULL)
		return false;
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		char *colon;

		/* "  sl  local_address rem_address   st ...": local is ADDR:PORT in hex */
		if (sscanf(line, "%*s %63s %*s %7s", local, state) != 2 ||
		    (colon = strrchr(local, ':')) == NULL)
			continue;
		found = sscanf(colon + 1, "%x", &p) == 1 && (int)p == port &&
			strcmp(state, "0A") == 0;
	}
	fclose(f);
	return found;
}

int
test_wait_listen(pid_t pid, int port, int timeout_ms)
{
	uint64_t end = test_now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		if (listens(pid, "tcp", port) || listens(pid, "tcp6", port))
			return 0;
		if (test_now_ms() >= end || (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH))
			return -1;
		usleep(5000);
	}
}

/*
 * Ports for tests' listeners.  Binding port 0, reading the port and closing the socket left
 * a window in which any process could take the port before the test's listener bound it:
 * every connect() takes its source port from the same ephemeral range, and so does every
 * other test's bind to port 0.  Ports are handed out instead from just below the ephemeral
 * range (the kernel never picks those by itself), and each one is reserved across processes
 * (other tests, other build trees) by an fcntl lock on the byte at its offset in PORT_LOCK,
 * held until this process exits: the kernel drops it even when the process is killed.  A
 * port something else has bound (a daemon, a socket in TIME_WAIT) is skipped.
 */
#define PORT_LOCK  "/tmp/unio-test-ports.lock"
#define PORT_SPAN  8192

static int
port_probe(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_ANY) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ok;

	if (fd < 0)
		return 0;
	ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;   /* no SO_REUSEADDR: strict */
	close(fd);
	return ok;
}

int
test_free_port(void)
{
	static int lock_fd = -2;
	static unsigned int next;   /* offset of the next candidate in the span */
	unsigned int lo = 32768, hi = 60999, first;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");

	if (f != NULL) {
		if (fscanf(f, "%u %u", &lo, &hi) != 2 || lo > 65535)
			lo = 32768;
		fclose(f);
	}
	RTE_SET_USED(hi);
	first = lo > 1024 + PORT_SPAN ? lo - PORT_SPAN : 1024;
	if (lock_fd == -2) {
		/* never closed: closing any descriptor of the file drops this process's locks */
		lock_fd = open(PORT_LOCK, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
		if (lock_fd >= 0)
			fchmod(lock_fd, 0666);   /* shared with tests run as other users */
		next = (unsigned int)getpid() * 7919u;
	}
	for (unsigned int tries = 0; lo > first && tries < lo - first; tries++) {
		unsigned int port = first + next++ % (lo - first);
		struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
				   .l_start = (off_t)port, .l_len = 1 };

		if (lock_fd >= 0 && fcntl(lock_fd, F_SETLK, &l) != 0)
			continue;   /* another process holds it */
		if (port_probe((uint16_t)port))
			return (int)port;
		/* in use outside the tests: keep the lock, nobody else tries it either */
	}
	TEST_LOG("no free port in %u-%u", first, lo - 1);
	return -1;
}

/*
 * Network namespaces a test made ("unio...-PID", "unio...-PID-a") whose process is gone: a
 * test that crashed or was killed by its timeout could not remove them.  Gone means that
 * nobody holds the lock "unio-PID" in TEST_NETNS_LOCKS, which every test process takes
 * before its test runs (test_netns_hold()): the runtime directories' liveness
 * (unio_env_name_lock_dead()).  kill(PID, 0) said "alive" for a dead test whose pid was
 * reused, and "dead" for a live one in another pid namespace (its PID is not ours).  A
 * namespace with no lock file (a runner from before the lock) is still judged by its pid.
 */
static int
locks_dir_make(void)
{
	return mkdir(TEST_NETNS_LOCKS, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

/* TEST_NETNS_LOCKS removed when empty: a lock file (a live test's, a leak) keeps it. */
static void
locks_dir_drop(void)
{
	rmdir(TEST_NETNS_LOCKS);
}

int
test_netns_hold(long pid)
{
	char name[32];
	int fd = -2;

	snprintf(name, sizeof(name), "unio-%ld", pid);
	/* another test's locks_dir_drop() may remove the directory between the two calls */
	for (int i = 0; i < 3 && fd == -2; i++) {
		if (locks_dir_make() != 0)
			return -1;
		fd = unio_env_name_lock(TEST_NETNS_LOCKS, name, 2000);
		if (fd == -2 && errno != ENOENT)
			break;
	}
	return fd;
}

/* The pid in a test's namespace name: its first all-digit part after a '-', or 0. */
static long
netns_pid(const char *ns)
{
	const char *p = strchr(ns, '-');
	long pid = 0;

	while (p != NULL && pid <= 0) {
		char *end;

		pid = strtol(p + 1, &end, 10);
		if (end == p + 1 || (*end != '\0' && *end != '-'))
			pid = 0;
		p = strchr(p + 1, '-');
	}
	return pid;
}

/* Does a namespace "unio...-@p pid..." still exist? */
static bool
netns_of(DIR *d, long pid)
{
	struct dirent *e;

	rewinddir(d);
	while ((e = readdir(d)) != NULL)
		if (strncmp(e->d_name, "unio", 4) == 0 && netns_pid(e->d_name) == pid)
			return true;
	return false;
}

unsigned int
test_sweep_dead_netns(void)
{
	DIR *d = geteuid() == 0 ? opendir("/var/run/netns") : NULL, *l;
	unsigned int n = 0;
	struct dirent *e;

	if (d != NULL)
		locks_dir_make();   /* a dead test's lock is judged in it (no directory: alive) */
	while (d != NULL && (e = readdir(d)) != NULL) {
		long pid = strncmp(e->d_name, "unio", 4) == 0 ? netns_pid(e->d_name) : 0;
		char name[32];
		int fd;

		if (pid <= 0)
			continue;
		snprintf(name, sizeof(name), "unio-%ld", pid);
		fd = unio_env_name_lock_dead(TEST_NETNS_LOCKS, name, pid);
		if (fd < 0)
			continue;   /* its test runs */
		if (test_system("ip netns del '%s' 2>/dev/null", e->d_name) == 0) {
			fprintf(stderr, "unio-test: removed namespace %s of dead test %ld\n",
				e->d_name, pid);
			n++;
		}
		close(fd);   /* the lock file stays for the pid's other namespaces */
	}
	/* lock files of dead tests with no namespace left */
	l = d != NULL ? opendir(TEST_NETNS_LOCKS) : NULL;
	while (l != NULL && (e = readdir(l)) != NULL) {
		char name[32];
		long pid;
		int fd;

		if (sscanf(e->d_name, "unio-%ld.lock", &pid) != 1 || pid <= 0)
			continue;
		snprintf(name, sizeof(name), "unio-%ld", pid);
		if (netns_of(d, pid))
			continue;
		fd = unio_env_name_lock(TEST_NETNS_LOCKS, name, 0);
		if (fd >= 0)
			unio_env_name_unlock(TEST_NETNS_LOCKS, name, fd);
	}
	if (l != NULL)
		closedir(l);
	if (d != NULL) {
		closedir(d);
		locks_dir_drop();
	}
	return n;
}

/*
 * After the test: the lock and its file go when no namespace of @p pid is left; one the test
 * did not remove keeps it until this process exits, and the next sweep removes both.
 */
static void
netns_release(long pid, int fd)
{
	DIR *d = fd >= 0 ? opendir("/var/run/netns") : NULL;
	char name[32];

	snprintf(name, sizeof(name), "unio-%ld", pid);
	if (fd >= 0 && (d == NULL || !netns_of(d, pid))) {
		unio_env_name_unlock(TEST_NETNS_LOCKS, name, fd);
		locks_dir_drop();
	}
	if (d != NULL)
		closedir(d);
}

static int
run_one(const struct test_entry *t)
{
	unsigned int n;
	int r, netns_fd;

	fprintf(stderr, "=== %s (%s)\n", t->name, t->suite);
	/* held while the test runs: its namespaces are a live test's meanwhile */
	netns_fd = geteuid() == 0 ? test_netns_hold(getpid()) : -1;
	r = t->fn();
	netns_release(getpid(), netns_fd);
	/* processes a test killed on purpose leave their EAL runtime directory behind */
	n = unio_env_reap_dead();
	if (n != 0)
		fprintf(stderr, "  removed %u runtime dir(s) of killed processes\n", n);
	fprintf(stderr, "=== %s: %s\n", t->name,
		r == TEST_OK ? "PASS" : r == TEST_SKIP ? "SKIP" : "FAIL");
	return r;
}

static int
run_suite(const char *suite)
{
	unsigned int pass = 0, fail = 0, skip = 0;

	for (unsigned int i = 0; i < n_tests; i++) {
		pid_t pid;
		int r;

		if (strcmp(tests[i].suite, suite) != 0 && strcmp(suite, "all") != 0)
			continue;
		/* each test in its own process, as under meson test */
		pid = fork();
		if (pid == 0)
			_exit(run_one(&tests[i]));
		r = test_wait(pid, 600000);
		if (r == TEST_OK)
			pass++;
		else if (r == TEST_SKIP)
			skip++;
		else
			fail++;
	}
	printf("%u passed, %u failed, %u skipped\n", pass, fail, skip);
	return fail ? 1 : 0;
}

int
main(int argc, char **argv)
{
	ssize_t n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	char *slash;

	if (n <= 0)
		return 2;
	self_exe[n] = '\0';
	snprintf(build_dir, sizeof(build_dir), "%s", self_exe);
	slash = strrchr(build_dir, '/');
	if (slash != NULL)
		*slash = '\0';
	strncat(build_dir, "/../..", sizeof(build_dir) - strlen(build_dir) - 1);
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (argc >= 3 && strcmp(argv[1], "--child") == 0) {
		for (unsigned int i = 0; i < n_children; i++)
			if (strcmp(children[i].name, argv[2]) == 0)
				return children[i].fn(argc - 3, argv + 3);
		fprintf(stderr, "unio-test: no child entry '%s'\n", argv[2]);
		return 2;
	}
	if (argc == 2 && strcmp(argv[1], "--list") == 0) {
		for (unsigned int i = 0; i < n_tests; i++)
			printf("%s %s\n", tests[i].name, tests[i].suite);
		return 0;
	}
	test_sweep_dead_netns();
	if (argc == 3 && strcmp(argv[1], "--suite") == 0)
		return run_suite(argv[2]);
	if (argc == 2) {
		for (unsigned int i = 0; i < n_tests; i++)
			if (strcmp(tests[i].name, argv[1]) == 0)
				return run_one(&tests[i]);
		fprintf(stderr, "unio-test: no test '%s' (try --list)\n", argv[1]);
		return 2;
	}
	fprintf(stderr, "usage: unio-test NAME | --suite SUITE | --list\n");
	return 2;
}
