/* SPDX-License-Identifier: BSD-3-Clause */
/* EAL initialisation modes, each in a real process. */

#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mempool.h>

#include <unio.h>
#include <unio_env.h>
#include <unio_rma.h>

#include "unio_test.h"

static const char *
run_base(void)
{
	return getuid() == 0 ? "/var/run/dpdk" : "/tmp/dpdk";
}

static int
runtime_dir_exists(pid_t pid)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/unio-%d", run_base(), (int)pid);
	return stat(path, &st) == 0;
}

/* Initialise with the defaults, check memory works, report the mode. */
UNIO_TEST_CHILD(env_default)
{
	int want_huge = argc > 0 ? atoi(argv[0]) : -1;
	struct rte_mempool *mp;
	void *p;

	if (unio_env_init_default() != UNIO_OK)
		return 10;
	if (!unio_env_owns_eal() || rte_lcore_count() != 1)
		return 11;
	if (want_huge >= 0 && rte_eal_has_hugepages() != want_huge) {
		fprintf(stderr, "hugepages %d, want %d (args: %s)\n", rte_eal_has_hugepages(),
			want_huge, unio_env_eal_args());
		return 12;
	}
	p = rte_malloc("t", 1 << 20, 64);
	if (p == NULL)
		return 13;
	memset(p, 0xa5, 1 << 20);
	rte_free(p);
	mp = rte_mempool_create("t", 1023, 256, 32, 0, NULL, NULL, NULL, NULL, SOCKET_ID_ANY, 0);
	if (mp == NULL)
		return 14;
	rte_mempool_free(mp);
	/* a second call initialises nothing again */
	if (unio_env_init_default() != UNIO_OK)
		return 15;
	/* optional rendezvous with a sibling: create my marker, wait for the other's */
	if (argc >= 3) {
		FILE *f = fopen(argv[1], "w");
		struct stat st;

		if (f == NULL)
			return 16;
		fclose(f);
		for (int i = 0; stat(argv[2], &st) != 0; i++) {
			if (i > 3000)
				return 17;
			usleep(10000);
		}
	}
	return 0;
}

UNIO_TEST(env_no_hugepages, mp)
{
	static const char *const args[] = { "0", NULL };
	pid_t pid;

	setenv("UNIO_HUGEPAGES", "no", 1);
	pid = test_spawn("env_default", args);
	unsetenv("UNIO_HUGEPAGES");
	TEST_ASSERT_EQ(test_wait(pid, 60000), 0);
	TEST_ASSERT(!runtime_dir_exists(pid), "runtime dir left behind");
	return TEST_OK;
}

static long
free_hugepages(void)
{
	FILE *f = fopen("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "r");
	long n = 0;

	if (f != NULL) {
		if (fscanf(f, "%ld", &n) != 1)
			n = 0;
		fclose(f);
	}
	return n;
}

UNIO_TEST(env_hugepages, mp)
{
	static const char *const args[] = { "1", NULL };
	long before = free_hugepages();
	pid_t pid;

	if (before < 16)
		TEST_SKIP_BECAUSE("only %ld free 2 MiB hugepages (need 16): .ci/run reserves them",
				  before);
	setenv("UNIO_HUGEPAGES", "yes", 1);
	pid = test_spawn("env_default", args);
	unsetenv("UNIO_HUGEPAGES");
	TEST_ASSERT_EQ(test_wait(pid, 60000), 0);
	TEST_ASSERT(!runtime_dir_exists(pid), "runtime dir left behind");
	/*
	 * The pages of a process that exited go back unless a hugetlbfs file keeps them (the
	 * free count itself moves with whatever else runs on the machine)
	 */
	TEST_ASSERT(test_system("ls /dev/hugepages 2>/dev/null | grep -q '^unio-%d'",
				(int)pid) != 0, "the child left hugepage files in /dev/hugepages");
	return TEST_OK;
}

/*
 * A view of the hugepage counts in sysfs for one child: in a mount namespace of its own,
 * files with the given counts are bound over the 2 MiB free, reserved and overcommit
 * counts (and node 0's free count, which EAL reads).  Nothing else on the machine sees
 * it, so a test needs neither to take every hugepage of the machine (which made every other
 * process starting EAL meanwhile fail: 24 of 36 in a loop beside this test's former
 * version) nor to skip where hugepages are reserved.
 */
static int
bind_count(const char *dir, const char *name, long v, const char *target)
{
	char file[256];
	FILE *f;

	if (access(target, F_OK) != 0)
		return 0;
	snprintf(file, sizeof(file), "%s/%s", dir, name);
	f = fopen(file, "w");
	if (f == NULL)
		return -1;
	fprintf(f, "%ld\n", v);
	fclose(f);
	return mount(file, target, NULL, MS_BIND, NULL);
}

/* argv: the view's directory, free, reserved, then env_default's arguments */
UNIO_TEST_CHILD(env_hugepage_view)
{
	static const char *const sys = "/sys/kernel/mm/hugepages/hugepages-2048kB";
	static const char *const node = "/sys/devices/system/node/node0/hugepages/"
					"hugepages-2048kB";
	char path[256];
	long n_free, n_resv;

	if (argc < 3)
		return 20;
	n_free = atol(argv[1]);
	n_resv = atol(argv[2]);
	if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return 21;
	snprintf(path, sizeof(path), "%s/free_hugepages", sys);
	if (bind_count(argv[0], "free", n_free, path) != 0)
		return 22;
	snprintf(path, sizeof(path), "%s/resv_hugepages", sys);
	if (bind_count(argv[0], "resv", n_resv, path) != 0)
		return 23;
	snprintf(path, sizeof(path), "%s/nr_overcommit_hugepages", sys);
	if (bind_count(argv[0], "over", 0, path) != 0)
		return 24;
	snprintf(path, sizeof(path), "%s/free_hugepages", node);
	if (bind_count(argv[0], "node", n_free, path) != 0)
		return 25;
	return child_env_default(argc - 3, argv + 3);
}

/* env_default under a view of @p n_free free and @p n_resv reserved pages; its exit code */
static int
run_in_view(const char *hugepages, const char *n_free, const char *n_resv, const char *want)
{
	char dir[64];
	const char *args[] = { dir, n_free, n_resv, want, NULL };
	pid_t pid;
	int r;

	snprintf(dir, sizeof(dir), "/tmp/unio-test-hp-%d", (int)getpid());
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return -1;
	setenv("UNIO_HUGEPAGES", hugepages, 1);
	pid = test_spawn("env_hugepage_view", args);
	unsetenv("UNIO_HUGEPAGES");
	r = test_wait(pid, 60000);
	test_system("rm -rf %s", dir);
	if (runtime_dir_exists(pid))
		return 99;
	return r;
}

/* UNIO_HUGEPAGES=yes on a machine without free hugepages is refused. */
UNIO_TEST(env_hugepages_required_missing, mp)
{
	if (getuid() != 0)
		TEST_SKIP_BECAUSE("a mount namespace needs root");
	TEST_ASSERT_EQ(run_in_view("yes", "0", "0", "1"), 10);
	/* free, but every one reserved by another process's mapping */
	TEST_ASSERT_EQ(run_in_view("yes", "64", "64", "1"), 10);
	return TEST_OK;
}

/*
 * Free hugepages that other processes' mappings reserved are not there to take: the kernel
 * refuses them to anyone else, but EAL counts them (a node's free count) and failed in
 * rte_service_init() when every free page was reserved.  Unio counts free minus reserved
 * and initialises without hugepages.  (The pages in the view are the machine's real ones;
 * EAL would take them had Unio chosen hugepages: the child then fails with 12.)
 */
UNIO_TEST(env_hugepages_reserved, mp)
{
	if (getuid() != 0)
		TEST_SKIP_BECAUSE("a mount namespace needs root");
	TEST_ASSERT_EQ(run_in_view("try", "256", "256", "0"), 0);
	TEST_ASSERT_EQ(run_in_view("try", "256", "250", "0"), 0);
	return TEST_OK;
}

/* Two processes with the default init at the same time: both work, nothing left behind. */
UNIO_TEST(env_two_processes, mp)
{
	char a[64], b[64];
	const char *args_a[] = { "-1", a, b, NULL };
	const char *args_b[] = { "-1", b, a, NULL };
	pid_t pa, pb;

	snprintf(a, sizeof(a), "/tmp/unio-test-env-%d-a", (int)getpid());
	snprintf(b, sizeof(b), "/tmp/unio-test-env-%d-b", (int)getpid());
	unlink(a);
	unlink(b);
	pa = test_spawn("env_default", args_a);
	pb = test_spawn("env_default", args_b);
	TEST_ASSERT_EQ(test_wait(pa, 60000), 0);
	TEST_ASSERT_EQ(test_wait(pb, 60000), 0);
	unlink(a);
	unlink(b);
	TEST_ASSERT(!runtime_dir_exists(pa) && !runtime_dir_exists(pb), "runtime dir left");
	return TEST_OK;
}

/* The application initialised EAL: Unio keeps it and never calls rte_eal_init again. */
UNIO_TEST_CHILD(env_app_eal)
{
	char prefix[64];
	char *eal[] = { (char *)"app", (char *)"-l0", (char *)"--no-huge", (char *)"-m128",
			(char *)"--no-pci", prefix, (char *)"--log-level=lib.*:warning", NULL };
	char *app[] = { (char *)"app", (char *)"-l", (char *)"0", (char *)"--", (char *)"-x",
			NULL };
	int n;

	RTE_SET_USED(argc), RTE_SET_USED(argv);
	snprintf(prefix, sizeof(prefix), "--file-prefix=apptest-%d", (int)getpid());
	if (rte_eal_init(7, eal) < 0)
		return 10;
	if (unio_env_init_default() != UNIO_OK || unio_env_owns_eal())
		return 11;
	n = unio_env_init(5, app);
	if (n != 3 || strcmp(app[n], "app") != 0 || strcmp(app[n + 1], "-x") != 0)
		return 12;
	if (unio_env_eal_args()[0] != '\0')
		return 13;
	rte_eal_cleanup();
	return 0;
}

UNIO_TEST(env_app_owns_eal, mp)
{
	pid_t pid = test_spawn("env_app_eal", NULL);

	TEST_ASSERT_EQ(test_wait(pid, 60000), 0);
	test_system("rm -rf %s/apptest-%d", run_base(), (int)pid);
	return TEST_OK;
}

/* EAL arguments before "--" are used, the defaults fill in the rest. */
UNIO_TEST_CHILD(env_split)
{
	char *args[] = { (char *)"prog", (char *)"--no-huge", (char *)"-m", (char *)"64",
			 (char *)"--", (char *)"-t", (char *)"tag_lat", NULL };
	int n;

	RTE_SET_USED(argc), RTE_SET_USED(argv);
	n = unio_env_init(7, args);
	if (n != 4 || strcmp(args[n], "prog") != 0 || strcmp(args[n + 1], "-t") != 0)
		return 10;
	if (strstr(unio_env_eal_args(), "--file-prefix=unio-") == NULL ||
	    strstr(unio_env_eal_args(), "--no-pci") == NULL ||
	    strstr(unio_env_eal_args(), "--in-memory") != NULL ||
	    strstr(unio_env_eal_args(), "-l") == NULL) {
		fprintf(stderr, "args: %s\n", unio_env_eal_args());
		return 11;
	}
	return rte_eal_has_hugepages() == 0 ? 0 : 12;
}

UNIO_TEST(env_args_split, mp)
{
	pid_t pid = test_spawn("env_split", NULL);

	TEST_ASSERT_EQ(test_wait(pid, 60000), 0);
	TEST_ASSERT(!runtime_dir_exists(pid), "runtime dir left behind");
	return TEST_OK;
}

UNIO_TEST_CHILD(env_bad)
{
	char *args[] = { (char *)"prog", (char *)"--no-such-eal-option", (char *)"--", NULL };

	RTE_SET_USED(argc), RTE_SET_USED(argv);
	return unio_env_init(3, args) < 0 ? 0 : 10;
}

UNIO_TEST(env_bad_eal_args, mp)
{
	pid_t pid = test_spawn("env_bad", NULL);

	TEST_ASSERT_EQ(test_wait(pid, 60000), 0);
	test_system("rm -rf %s/unio-%d", run_base(), (int)pid);
	return TEST_OK;
}

/*
 * ---- runtime directories: alive is who holds the lock, not what the pid says ----
 *
 * A Unio process holds an flock on "unio-<pid>.lock" beside its runtime directory for its
 * life.  The reaper used to ask kill(pid, 0): it removed the directory of a live process
 * in another pid namespace (ESRCH here), and kept a dead one's whose pid was reused (the
 * flake of env_reaps_dead_dirs under load).
 */
static int
file_exists(const char *head, const char *tail)
{
	char path[300];
	struct stat st;

	snprintf(path, sizeof(path), "%s%s", head, tail);
	return stat(path, &st) == 0;
}

/* The lock file of runtime directory @p dir */
#define lock_file_exists(dir) file_exists(dir, ".lock")

/* Wait (up to 60 s) for @p path to exist while @p pid runs; 0 when it does. */
static int
wait_file(const char *path, pid_t pid)
{
	struct stat st;

	for (int i = 0; i < 6000; i++) {
		siginfo_t si = { .si_pid = 0 };

		if (stat(path, &st) == 0)
			return 0;
		/* exited: left for test_wait() to collect */
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0 ||
		    si.si_pid == pid)
			return -1;
		usleep(10000);
	}
	return -1;
}

/* A child that sleeps until it is killed, or its parent dies: a live pid that is no Unio. */
static pid_t
sleeper(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	return pid;
}

/* Is network namespace @p ns there? */
#define netns_exists(ns) file_exists("/var/run/netns/", ns)

/*
 * Sweep until @p ns is gone (up to 5 s); whether it is.  Another test's runner may be
 * sweeping at the same moment: it holds the dead test's lock while it deletes the
 * namespace, and this sweep then takes the test for alive and leaves it to that one.
 */
static bool
swept(const char *ns)
{
	for (int i = 0; i < 50; i++) {
		test_sweep_dead_netns();
		if (!netns_exists(ns))
			return true;
		usleep(100000);
	}
	return false;
}

/*
 * The runner's sweep of dead tests' network namespaces judges a test by the lock it holds
 * (test_netns_hold()), not by kill(pid, 0): a namespace named for a pid no process of ours
 * has (a live test in another pid namespace: here a child that holds the lock for a pid
 * that just died) is kept while the lock is held and removed once its holder died, and one
 * named for a pid that lives but holds no lock (a dead test's pid, reused) is removed.
 * kill() got both wrong.
 */
UNIO_TEST(netns_sweep_by_lock, fast)
{
	char held[64], reused[64], lock[128];
	int ready[2], ok = 0, fd;
	pid_t dead, holder, other;
	struct stat st;

	if (!test_can_netns())
		TEST_SKIP_BECAUSE("network namespaces need root and ip netns");
	dead = fork();
	if (dead == 0)
		_exit(0);
	TEST_ASSERT(dead > 0 && waitpid(dead, NULL, 0) == dead, "fork");
	TEST_ASSERT_EQ(pipe(ready), 0);
	holder = fork();
	if (holder == 0) {
		char c = test_netns_hold(dead) >= 0 ? 'y' : 'n';

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (write(ready[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	other = sleeper();
	TEST_ASSERT(holder > 0 && other > 0, "fork");
	TEST_ASSERT(read(ready[0], held, 1) == 1 && held[0] == 'y', "the holder has no lock");
	snprintf(held, sizeof(held), "uniosweep-%d-a", (int)dead);
	snprintf(reused, sizeof(reused), "uniosweep-%d-a", (int)other);
	fd = test_system("ip netns add %s && ip netns add %s", held, reused) == 0 ? 0 : -2;
	/*
	 * What a dead test leaves: its lock file, held by nobody, made after the namespace
	 * (a lock file with no namespace is what another runner's sweep removes at once).
	 */
	if (fd == 0)
		fd = test_netns_hold(other);
	if (fd >= 0) {
		close(fd);
		ok = swept(reused) ? 2 : 0;
		ok |= netns_exists(held) ? 1 : 0;
		kill(holder, SIGKILL);
		waitpid(holder, NULL, 0);
		ok |= swept(held) ? 4 : 0;
	}
	kill(holder, SIGKILL);
	kill(other, SIGKILL);
	waitpid(holder, NULL, 0);
	waitpid(other, NULL, 0);
	test_system("ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null", held, reused);
	close(ready[0]);
	close(ready[1]);
	TEST_ASSERT(fd != -2, "ip netns add %s, %s", held, reused);
	TEST_ASSERT(fd >= 0, "no lock for pid %d", (int)other);
	TEST_ASSERT(ok & 1, "%s removed while its lock was held (pid %d is no process here)",
		    held, (int)dead);
	TEST_ASSERT(ok & 2, "%s kept: pid %d lives, but holds no lock", reused, (int)other);
	TEST_ASSERT(ok & 4, "%s kept after its holder died", held);
	snprintf(lock, sizeof(lock), TEST_NETNS_LOCKS "/unio-%d.lock", (int)dead);
	TEST_ASSERT(stat(lock, &st) != 0, "%s left behind", lock);
	return TEST_OK;
}

/*
 * The runner's lock directory (TEST_NETNS_LOCKS) goes with the last lock in it: a test run
 * in a /run of its own leaves nothing there (it left the empty directory for good).  A file
 * left in it is a leak, which usertools/unio-test.sh reports.
 */
UNIO_TEST(netns_lock_dir_removed, fast)
{
	char self[512], out[512];
	ssize_t n;
	int rc;

	if (geteuid() != 0)
		TEST_SKIP_BECAUSE("a mount namespace needs root");
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	TEST_ASSERT(n > 0, "/proc/self/exe");
	self[n] = '\0';
	rc = test_capture(out, sizeof(out), "unshare -m --propagation private sh -c \"mount -t "
			  "tmpfs unio-test /run && '%s' config_size >/dev/null 2>&1; echo "
			  "rc=\\$?; ls -A /run\" 2>&1", self);
	TEST_ASSERT(rc == 0 && strcmp(out, "rc=0\n") == 0, "exit %d; a test in a /run of its "
		    "own, then what is in it:\n%s", rc, out);
	return TEST_OK;
}

/*
 * The directory of a killed Unio process is removed by the next initialisation, and so
 * is a directory whose lock nobody holds although its pid number is a live process's
 * (here one that is not Unio: a dead process's pid may be anyone's by now).  (A directory
 * without any lock file is a Unio's from before the lock: judged by its pid, as then.)
 */
UNIO_TEST(env_reaps_dead_dirs, mp)
{
	static const char *const plain[] = { "-1", NULL };
	char up[64], go[64], dead_dir[256], other_dir[256];
	const char *args[] = { "-1", up, go, NULL };
	pid_t dead, other;
	struct stat st;

	snprintf(up, sizeof(up), "/tmp/unio-test-reap-%d.up", (int)getpid());
	snprintf(go, sizeof(go), "/tmp/unio-test-reap-%d.go", (int)getpid());
	dead = test_spawn("env_default", args);
	TEST_ASSERT(wait_file(up, dead) == 0, "the Unio child did not initialise");
	unlink(up);
	kill(dead, SIGKILL);
	TEST_ASSERT_EQ(test_wait(dead, 60000), -1);
	snprintf(dead_dir, sizeof(dead_dir), "%s/unio-%d", run_base(), (int)dead);
	other = sleeper();
	TEST_ASSERT(other > 0, "fork");
	snprintf(other_dir, sizeof(other_dir), "%s/unio-%d", run_base(), (int)other);
	/* what a killed Unio leaves: its directory, and its lock file with no lock held */
	if (test_system("mkdir -p %s && touch %s/config %s.lock", other_dir, other_dir,
			other_dir) != 0 ||
	    test_wait(test_spawn("env_default", plain), 60000) != 0) {
		kill(other, SIGKILL);
		waitpid(other, NULL, 0);
		test_system("rm -rf %s", other_dir);
		TEST_ASSERT(0, "setup or initialisation failed");
	}
	TEST_ASSERT(kill(other, 0) == 0, "the process %d named by %s died", (int)other,
		    other_dir);
	kill(other, SIGKILL);
	waitpid(other, NULL, 0);
	TEST_ASSERT(stat(dead_dir, &st) != 0 && !lock_file_exists(dead_dir),
		    "%s (or its lock file) still there", dead_dir);
	TEST_ASSERT(stat(other_dir, &st) != 0 && !lock_file_exists(other_dir),
		    "%s, locked by nobody, still there", other_dir);
	return TEST_OK;
}

/*
 * argv: the pid to have in a new pid namespace (0: any), then "reap" (unio_env_reap_dead()
 * first) or "-", then env_default's arguments.  Its pid 1 mounts the namespace's own /proc
 * (in a mount namespace of its own, as a container has: LeakSanitizer reads
 * /proc/<its pid>) and sets the namespace's last pid so that the Unio process it forks
 * gets that one.  Exit 40: no namespaces here (no CAP_SYS_ADMIN).
 */
UNIO_TEST_CHILD(env_in_pidns)
{
	pid_t init, unio;
	long want;
	int status;
	FILE *f;

	if (argc < 2)
		return 20;
	want = atol(argv[0]);
	if (unshare(CLONE_NEWPID | CLONE_NEWNS) != 0)
		return errno == EPERM ? 40 : 21;
	init = fork();
	if (init == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
		    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
			_exit(28);
		f = want > 0 ? fopen("/proc/sys/kernel/ns_last_pid", "w") : NULL;
		if (want > 0 && (f == NULL || fprintf(f, "%ld", want - 1) < 0 || fclose(f) != 0))
			_exit(22);
		unio = fork();
		if (unio == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (want > 0 && getpid() != want)
				_exit(23);
			if (strcmp(argv[1], "reap") == 0)
				unio_env_reap_dead();
			exit(child_env_default(argc - 2, argv + 2));   /* Unio cleans up at exit */
		}
		if (unio < 0 || waitpid(unio, &status, 0) != unio)
			_exit(24);
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 25);
	}
	/* _exit: this process's children (LeakSanitizer's at exit too) land in the dead ns */
	if (init < 0 || waitpid(init, &status, 0) != init)
		_exit(26);
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 27);
}

/*
 * A live Unio process in one pid namespace keeps its directory when a Unio process in
 * another (containers sharing /var/run/dpdk) reaps and initialises: there, no process has
 * its pid.  It removes the directory itself at exit.  Here its pid is a live process's (a
 * sleeping child of the test), so that Unio processes of before the lock on this host
 * (other builds' tests, their reaper judging by the pid) leave it alone.
 */
UNIO_TEST(env_keeps_live_dirs_other_pidns, mp)
{
	char up[64], go[64], ns_pid[16], dir[256];
	const char *args[] = { ns_pid, "-", "-1", up, go, NULL };
	static const char *const reaper[] = { "0", "reap", "-1", NULL };
	struct stat st;
	pid_t c, hold;
	int r;

	if (getuid() != 0)
		TEST_SKIP_BECAUSE("a pid namespace needs root");
	hold = sleeper();
	TEST_ASSERT(hold > 0, "fork");
	snprintf(ns_pid, sizeof(ns_pid), "%d", (int)hold);
	snprintf(dir, sizeof(dir), "%s/unio-%d", run_base(), (int)hold);
	snprintf(up, sizeof(up), "/tmp/unio-test-pidns-%d.up", (int)getpid());
	snprintf(go, sizeof(go), "/tmp/unio-test-pidns-%d.go", (int)getpid());
	c = test_spawn("env_in_pidns", args);
	if (wait_file(up, c) != 0) {
		r = test_wait(c, 1000);
		kill(hold, SIGKILL);
		waitpid(hold, NULL, 0);
		if (r == 40)
			TEST_SKIP_BECAUSE("no pid namespace here (CAP_SYS_ADMIN)");
		TEST_ASSERT(0, "the Unio child in a pid namespace did not initialise (%d)", r);
	}
	unlink(up);
	r = stat(dir, &st) == 0 && lock_file_exists(dir) &&
	    test_wait(test_spawn("env_in_pidns", reaper), 60000) == 0 && stat(dir, &st) == 0;
	test_system("touch %s", go);
	kill(hold, SIGKILL);
	waitpid(hold, NULL, 0);
	TEST_ASSERT_EQ(test_wait(c, 60000), 0);
	unlink(go);
	TEST_ASSERT(r, "%s of a live process in another pid namespace was removed", dir);
	TEST_ASSERT(stat(dir, &st) != 0 && !lock_file_exists(dir), "%s left behind", dir);
	return TEST_OK;
}

/*
 * ---- hugepages a cgroup does not allow ----
 *
 * Eight processes initialise at once inside a hugetlb cgroup (v2) that allows 4 pages,
 * while the host's free count shows plenty: each chooses --no-huge (with a warning) and
 * works.  They used to see the host's count, choose hugepages and fail in rte_eal_init()
 * (rte_service_init() found no page: 4 of 8), which DPDK cannot retry in the same process.
 * The limit is either on the pages touched (hugetlb.2MB.max: Unio reads the cgroup's
 * headroom) or on those reserved (rsvd.max: Unio's reservation of 16 pages under the
 * host-wide lock fails).  The cgroup is the test's own: the host's pages are not touched.
 */
static int
cgroup2_mount(char *mnt, size_t len)
{
	char line[1024], dir[512], fs[64];
	FILE *f = fopen("/proc/self/mounts", "r");
	int r = -1;

	if (f == NULL)
		return -1;
	while (r != 0 && fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "%*s %511s %63s", dir, fs) == 2 && strcmp(fs, "cgroup2") == 0) {
			snprintf(mnt, len, "%s", dir);
			r = 0;
		}
	fclose(f);
	return r;
}

static int
write_file(const char *dir, const char *name, const char *v)
{
	char path[640];
	FILE *f;
	int r;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (f == NULL)
		return -1;
	r = fputs(v, f) < 0 ? -1 : 0;
	return fclose(f) != 0 ? -1 : r;
}

/* argv: cgroup directory, then env_default's arguments */
UNIO_TEST_CHILD(env_in_cgroup)
{
	if (argc < 1 || write_file(argv[0], "cgroup.procs", "0") != 0)
		return 20;
	return child_env_default(argc - 1, argv + 1);
}

/*
 * argv: cgroup directory.  In the cgroup, a 16 MiB region allocated through the shm driver
 * (hugetlb-backed when the host's count allows) is written whole and read back.  With a
 * limit on the pages faulted in, MAP_POPULATE gave up silently and the first store past
 * it raised SIGBUS (exit 135); now the driver sees it and uses 4 KiB pages.
 */
UNIO_TEST_CHILD(env_shm_in_cgroup)
{
	struct unio_context_params cp = { .field_mask = UNIO_CONTEXT_PARAM_FEATURES,
					  .features = UNIO_FEATURE_TAG | UNIO_FEATURE_RMA };
	struct unio_mem_map_params mp = {
		.field_mask = UNIO_MEM_MAP_PARAM_LENGTH | UNIO_MEM_MAP_PARAM_FLAGS,
		.length = 16 << 20, .flags = UNIO_MEM_MAP_FLAG_ALLOCATE };
	struct unio_mem_attr attr;
	unio_context_t *ctx;
	unio_worker_t *w;
	unio_mem_h mh;
	unio_status_t st;
	int rc = 0;

	if (argc < 1 || write_file(argv[0], "cgroup.procs", "0") != 0)
		return 20;
	setenv("UNIO_TLS", "shm,self", 1);
	ctx = unio_context_create(&cp, &st);
	w = ctx != NULL ? unio_worker_create(ctx, NULL, &st) : NULL;
	if (w == NULL)
		rc = 21;
	else if (unio_mem_map(w, &mp, &mh) != UNIO_OK || unio_mem_query(mh, &attr) != UNIO_OK)
		rc = 22;
	if (rc == 0) {
		uint64_t *q = attr.address;
		size_t n = attr.length / 8;

		for (size_t i = 0; i < n; i++)
			q[i] = i * 0x9e3779b97f4a7c15ull;
		for (size_t i = 0; i < n && rc == 0; i++)
			if (q[i] != i * 0x9e3779b97f4a7c15ull)
				rc = 23;
		unio_mem_unmap(w, mh);
	}
	if (w != NULL)
		unio_worker_destroy(w);
	if (ctx != NULL)
		unio_context_destroy(ctx);
	return rc;
}

#define CG_PROCS 8

/* CG_PROCS children in @p cg at once, each holding its memory until all initialised */
static int
run_in_cgroup(const char *cg, const char *want)
{
	char mk[CG_PROCS][96], go[96];
	pid_t pid[CG_PROCS];
	int ok = 0, rc[CG_PROCS];

	snprintf(go, sizeof(go), "/tmp/unio-test-cg-%d-go", (int)getpid());
	unlink(go);
	for (int i = 0; i < CG_PROCS; i++) {
		const char *args[] = { cg, want, mk[i], go, NULL };

		snprintf(mk[i], sizeof(mk[i]), "/tmp/unio-test-cg-%d-%d", (int)getpid(), i);
		unlink(mk[i]);
		pid[i] = test_spawn("env_in_cgroup", args);
	}
	/* all initialised (or some failed: they never make their marker) */
	for (int t = 0; t < 3000; t++) {
		int made = 0, alive = 0;

		for (int i = 0; i < CG_PROCS; i++) {
			made += access(mk[i], F_OK) == 0;
			alive += kill(pid[i], 0) == 0;
		}
		if (made == CG_PROCS || (t > 100 && made >= alive))
			break;
		usleep(10000);
	}
	test_system("touch %s", go);
	for (int i = 0; i < CG_PROCS; i++) {
		rc[i] = test_wait(pid[i], 60000);
		ok += rc[i] == 0;
		unlink(mk[i]);
		if (runtime_dir_exists(pid[i]))
			rc[i] = 99;
	}
	unlink(go);
	TEST_LOG("%d of %d initialised and used their memory (exit codes %d %d %d %d %d %d %d %d)",
		 ok, CG_PROCS, rc[0], rc[1], rc[2], rc[3], rc[4], rc[5], rc[6], rc[7]);
	return ok == CG_PROCS ? TEST_OK : TEST_FAIL;
}

UNIO_TEST(env_hugepages_cgroup_limit, mp)
{
	char mnt[512], cg[600], ctl[256] = "";
	bool enabled = false;
	int r1, r2, r3 = -1;
	FILE *f;

	if (getuid() != 0 || cgroup2_mount(mnt, sizeof(mnt)) != 0)
		TEST_SKIP_BECAUSE("needs root and a cgroup2 mount");
	snprintf(cg, sizeof(cg), "%s/cgroup.controllers", mnt);
	f = fopen(cg, "r");
	if (f != NULL) {
		if (fgets(ctl, sizeof(ctl), f) == NULL)
			ctl[0] = '\0';
		fclose(f);
	}
	if (strstr(ctl, "hugetlb") == NULL)
		TEST_SKIP_BECAUSE("no hugetlb controller in cgroup2");
	if (free_hugepages() < 16)
		TEST_SKIP_BECAUSE("only %ld free 2 MiB hugepages: every process falls back anyway",
				  free_hugepages());
	snprintf(cg, sizeof(cg), "%s/cgroup.subtree_control", mnt);
	f = fopen(cg, "r");
	if (f != NULL) {
		if (fgets(ctl, sizeof(ctl), f) == NULL)
			ctl[0] = '\0';
		fclose(f);
	}
	if (strstr(ctl, "hugetlb") == NULL) {
		TEST_ASSERT_EQ(write_file(mnt, "cgroup.subtree_control", "+hugetlb"), 0);
		enabled = true;
	}
	snprintf(cg, sizeof(cg), "%s/unio-test-hp-%d", mnt, (int)getpid());
	TEST_ASSERT(mkdir(cg, 0755) == 0, "mkdir %s: %s", cg, strerror(errno));
	/* 4 pages touched at most, reservations unlimited */
	r1 = write_file(cg, "hugetlb.2MB.max", "8388608") == 0 ? run_in_cgroup(cg, "0") :
	     TEST_FAIL;
	/* 4 pages reserved at most, touched unlimited */
	r2 = write_file(cg, "hugetlb.2MB.max", "max") == 0 &&
	     write_file(cg, "hugetlb.2MB.rsvd.max", "8388608") == 0 ? run_in_cgroup(cg, "0") :
	     TEST_FAIL;
	/* 4 pages touched at most: a 16 MiB shared-memory region in it */
	if (write_file(cg, "hugetlb.2MB.max", "8388608") == 0 &&
	    write_file(cg, "hugetlb.2MB.rsvd.max", "max") == 0) {
		const char *args[] = { cg, NULL };

		r3 = test_wait(test_spawn("env_shm_in_cgroup", args), 60000);
	}
	rmdir(cg);
	if (enabled)
		write_file(mnt, "cgroup.subtree_control", "-hugetlb");
	TEST_ASSERT_EQ(r1, TEST_OK);
	TEST_ASSERT_EQ(r2, TEST_OK);
	TEST_ASSERT_EQ(r3, 0);
	return TEST_OK;
}
