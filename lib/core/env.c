/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * EAL initialisation with Unio's defaults filled in (see unio_env.h).
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_interrupts.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include "unio_config_priv.h"
#include "unio_env.h"
#include "unio_log.h"

#define ENV_MAX_ARGS 128
#define ENV_MIN_HUGEPAGES 16
#define ENV_HUGE_LOCK_MS 10000   /* longest wait for another process's EAL initialisation */
#define ENV_HUGE_DIR "/sys/kernel/mm/hugepages/hugepages-2048kB"

static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;
static int env_done;
static int env_owner;
static char env_runtime_dir[PATH_MAX];
static char env_rt_name[64];     /* the runtime directory's name when Unio chose it */
static int env_rt_fd = -1;       /* its lock (runtime_dir_take()) */
static pid_t env_pid;            /* the process that initialised EAL (not a forked child) */
static char env_args[1024];

int
unio_env_owns_eal(void)
{
	return env_owner;
}

const char *
unio_env_eal_args(void)
{
	return env_args;
}

/* EAL was initialised by someone (the application or us): its lcore table is filled. */
static int
eal_is_initialised(void)
{
	return rte_lcore_count() > 0;
}

static int
has_opt(int argc, char **argv, const char *const *opts)
{
	for (int i = 0; i < argc; i++)
		for (const char *const *o = opts; *o != NULL; o++) {
			size_t n = strlen(*o);

			/* "-l", "-l0-1", "--lcores", "--lcores=..." */
			if (strncmp(argv[i], *o, n) == 0 &&
			    (argv[i][n] == '\0' || argv[i][n] == '=' || (*o)[1] != '-'))
				return 1;
		}
	return 0;
}

/* The number in file @p dir/@p name ("max": LONG_MAX); -1 when there is no such file. */
static long
read_limit(const char *dir, const char *name)
{
	char path[PATH_MAX + 64], v[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	if (fgets(v, sizeof(v), f) == NULL)
		v[0] = '\0';
	fclose(f);
	return strncmp(v, "max", 3) == 0 ? LONG_MAX : strtol(v, NULL, 10);
}

/* The count in the 2 MiB hugepage sysfs file @p name (0 when unreadable). */
static long
hugepage_count(const char *name)
{
	long n = read_limit(ENV_HUGE_DIR, name);

	return n > 0 ? n : 0;
}

/*
 * The 2 MiB hugepages this process can still get: free minus those reserved by other
 * processes' mappings not yet faulted in (a hugetlb memfd or MAP_HUGETLB mapping holds its
 * pages from mmap() on; the kernel refuses anyone else those pages although they still
 * count as free).  EAL counts a node's free pages without that subtraction, so with every
 * free page reserved it initialises with hugepages and fails at its first heap page.
 */
static long
free_hugepages(void)
{
	long n = hugepage_count("free_hugepages") - hugepage_count("resv_hugepages");

	return n > 0 ? n : 0;
}

/*
 * Unio processes count the free hugepages and initialise EAL one at a time: counted at
 * once, several saw the same pages, each took one or two during rte_eal_init(), and those
 * that found none left failed in rte_service_init() (8 processes, 4 pages: 4 failed), a
 * failure DPDK 22.11 cannot retry in the same process (see eal_init_locked()).  The lock is
 * an flock on the sysfs count itself: host-wide, also across containers, nothing to create
 * or leave behind.  Returns the locked fd, or -1 when none was had within
 * ENV_HUGE_LOCK_MS (a process stuck inside rte_eal_init() holds it).
 */
static int
hugepage_lock(void)
{
	int fd = open(ENV_HUGE_DIR "/free_hugepages", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	for (int ms = 0; ms < ENV_HUGE_LOCK_MS; ms += 5) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return fd;
		if (errno != EWOULDBLOCK && errno != EINTR)
			break;
		usleep(5000);
	}
	close(fd);
	return -1;
}

/*
 * Can this process have @p n 2 MiB hugepages now?  The kernel reserves a MAP_HUGETLB
 * mapping's pages at mmap() (nothing is touched), against what other mappings reserved and
 * against the reservation limit of a hugetlb cgroup (hugetlb.2MB.rsvd.max), which the sysfs
 * counts do not show: a process in such a cgroup saw 256 free pages, chose them and failed
 * in rte_eal_init().
 */
static bool
hugepages_reservable(long n)
{
	size_t len = (size_t)n << 21;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (21 << MAP_HUGE_SHIFT), -1, 0);

	if (p == MAP_FAILED)
		return false;
	munmap(p, len);
	return true;
}

/*
 * The 2 MiB pages the hugetlb cgroup of this process, and each above it, still lets it
 * fault in (LONG_MAX: no limit).  A container's limit (hugetlb.2MB.max, v1's
 * limit_in_bytes) is charged when a page is touched, not when it is reserved, and the sysfs
 * counts are the host's: such a process saw the host's free pages and failed in
 * rte_eal_init() (a limit of 4 pages: 4 of 8 processes failed).
 */
static long
cgroup_hugepages_left(void)
{
	char line[1024], cg[1024] = "", dir[PATH_MAX] = "", root[512], mnt[512], *p;
	const char *max_f = "hugetlb.2MB.max", *cur_f = "hugetlb.2MB.current";
	bool v1 = false, found = false;
	long left = LONG_MAX;
	size_t mnt_len = 0;
	FILE *f = fopen("/proc/self/cgroup", "r");

	if (f == NULL)
		return LONG_MAX;
	while (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if ((p = strstr(line, ":hugetlb:")) != NULL) {
			snprintf(cg, sizeof(cg), "%s", p + 9);
			v1 = true;
			break;
		}
		if (strncmp(line, "0::", 3) == 0)
			snprintf(cg, sizeof(cg), "%s", line + 3);
	}
	fclose(f);
	f = fopen("/proc/self/mountinfo", "r");
	if (cg[0] == '\0' || f == NULL) {
		if (f != NULL)
			fclose(f);
		return LONG_MAX;
	}
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		const char *fs = strstr(line, " - ");

		if (fs == NULL || sscanf(line, "%*s %*s %*s %511s %511s", root, mnt) != 2)
			continue;
		fs += 3;
		found = v1 ? strncmp(fs, "cgroup ", 7) == 0 && strstr(fs, "hugetlb") != NULL :
			     strncmp(fs, "cgroup2 ", 8) == 0;
	}
	fclose(f);
	if (!found)
		return LONG_MAX;
	/* the cgroup's path is from the hierarchy's root; the mount may show a subtree */
	p = cg;
	if (strcmp(root, "/") != 0 && strncmp(cg, root, strlen(root)) == 0)
		p += strlen(root);
	mnt_len = strlen(mnt);
	snprintf(dir, sizeof(dir), "%s%s", mnt, p);
	if (v1) {
		max_f = "hugetlb.2MB.limit_in_bytes";
		cur_f = "hugetlb.2MB.usage_in_bytes";
	}
	for (;;) {
		long max = read_limit(dir, max_f), cur = read_limit(dir, cur_f);

		if (max >= 0 && max != LONG_MAX && cur >= 0)
			left = RTE_MIN(left, max > cur ? (max - cur) >> 21 : 0);
		p = strrchr(dir, '/');
		if (p == NULL || (size_t)(p - dir) < mnt_len)
			break;
		*p = '\0';
	}
	return left;
}

static void
remove_dir(const char *path)
{
	char file[PATH_MAX + 512];
	struct dirent *e;
	DIR *d = opendir(path);

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(file, sizeof(file), "%s/%s", path, e->d_name);
		unlink(file);
	}
	closedir(d);
	rmdir(path);
}

/*
 * Liveness of a runtime directory.  Each Unio process that names its own EAL runtime
 * directory ("unio-<pid>") holds an flock on "unio-<pid>.lock" beside it from before the
 * directory exists until after it was removed; the reaper removes a directory only while
 * holding that lock itself.  The pid in the name says nothing: a process in another pid
 * namespace sharing this directory (containers) is not visible to kill(), and a dead
 * process's pid may be some other process's by now.  EAL's own lock (the primary's fcntl
 * lock on "config") is no help: with --in-memory (Unio's default with hugepages) EAL
 * creates no config file, the directory holds only the telemetry socket.
 *
 * Both sides use the same step: open (create) the lock file, flock it, and check that the
 * path still names the locked file (a reaper unlinks it under the lock, and a process that
 * opened it before then would lock a file nobody else sees).  So a directory is removed
 * only when no live process holds its lock, and a process creates its directory only when
 * it holds a lock that every reaper sees.  A forked child inherits the lock: the directory
 * lives as long as any of them.
 */
#define ENV_RT_LOCK_SUFFIX ".lock"
#define ENV_RT_LOCK_WAIT_MS 2000   /* a reaper holds a dead one's lock for a few ms */

static int
runtime_base(char *dir, size_t len)
{
	const char *base = getuid() == 0 ? "/var/run" : getenv("XDG_RUNTIME_DIR");
	int n = snprintf(dir, len, "%s/dpdk", base != NULL ? base : "/tmp");

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/*
 * Lock "@p dir/@p name.lock": the locked fd, -1 when another process holds it (after
 * @p wait_ms of retries), -2 on an error.  Also the test runner's for its network
 * namespaces (unio_config_priv.h).
 */
int
unio_env_name_lock(const char *dir, const char *name, int wait_ms)
{
	char path[PATH_MAX + 512];
	struct stat a, b;

	snprintf(path, sizeof(path), "%s/%s" ENV_RT_LOCK_SUFFIX, dir, name);
	for (int ms = 0;;) {
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

		if (fd < 0)
			return -2;
		if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
			int err = errno;

			close(fd);
			if (err != EWOULDBLOCK && err != EINTR)
				return -2;
			if (ms >= wait_ms)
				return -1;
			usleep(1000);
			ms++;
			continue;
		}
		if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
		    a.st_ino == b.st_ino)
			return fd;
		close(fd);   /* unlinked by a reaper meanwhile: a fresh one */
	}
}

/* Unlink the lock file of @p name (its lock held by @p fd) and release it. */
void
unio_env_name_unlock(const char *dir, const char *name, int fd)
{
	char path[PATH_MAX + 512];

	snprintf(path, sizeof(path), "%s/%s" ENV_RT_LOCK_SUFFIX, dir, name);
	unlink(path);
	close(fd);
}

/* The length of the decimal number at @p s (at most @p max characters). */
static size_t
digits(const char *s, size_t max)
{
	size_t i = 0;

	while (i < max && s[i] >= '0' && s[i] <= '9')
		i++;
	return i;
}

/* Are the @p len characters at @p name "unio-<pid>" or "unio-<pid>-<k>"? */
static bool
runtime_name(const char *name, size_t len)
{
	size_t i = 5, n;

	if (len <= i || strncmp(name, "unio-", 5) != 0)
		return false;
	n = digits(name + i, len - i);
	if (n == 0)
		return false;
	i += n;
	if (i < len && name[i] == '-') {
		n = digits(name + i + 1, len - i - 1);
		if (n == 0)
			return false;
		i += n + 1;
	}
	return i == len;
}

static bool
runtime_lock_exists(const char *dir, const char *name)
{
	char path[PATH_MAX + 512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s" ENV_RT_LOCK_SUFFIX, dir, name);
	return lstat(path, &st) == 0 || errno != ENOENT;
}

/*
 * A directory without a lock file is one of a Unio from before the lock (or another
 * version beside this one): judged as that Unio did, alive while its pid is.
 */
static bool
legacy_alive(long pid)
{
	return pid == getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH;
}

int
unio_env_name_lock_dead(const char *dir, const char *name, long pid)
{
	if (!runtime_lock_exists(dir, name) && legacy_alive(pid))
		return -1;
	return unio_env_name_lock(dir, name, 0);
}

/* Remove the runtime directories of Unio processes that died uncleanly. */
unsigned int
unio_env_reap_dead(void)
{
	char path[PATH_MAX + 512], dir[PATH_MAX], name[256];
	unsigned int n = 0;
	struct dirent *e;
	DIR *d;

	if (runtime_base(dir, sizeof(dir)) != 0)
		return 0;
	d = opendir(dir);
	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name), sl = strlen(ENV_RT_LOCK_SUFFIX);
		struct stat st;
		int fd;

		/* a directory, or a lock file left without one */
		if (len > sl && strcmp(e->d_name + len - sl, ENV_RT_LOCK_SUFFIX) == 0)
			len -= sl;
		if (len >= sizeof(name) || !runtime_name(e->d_name, len))
			continue;
		memcpy(name, e->d_name, len);
		name[len] = '\0';
		fd = unio_env_name_lock_dead(dir, name, strtol(name + 5, NULL, 10));
		if (fd < 0)
			continue;   /* alive (or not ours to judge) */
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
			remove_dir(path);
			n++;
		}
		unio_env_name_unlock(dir, name, fd);
	}
	closedir(d);
	return n;
}

/*
 * Name this process's runtime directory and lock it (see unio_env_reap_dead()):
 * "unio-<pid>", or "unio-<pid>-<k>" when a live process in another pid namespace has the
 * same pid and holds that name.  Returns the locked fd, or -1.
 */
static int
runtime_dir_take(char *name, size_t len)
{
	char dir[PATH_MAX];

	if (runtime_base(dir, sizeof(dir)) != 0)
		return -1;
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {   /* as EAL makes it */
		CORE_LOG(ERR, "cannot create %s: %s", dir, strerror(errno));
		return -1;
	}
	for (int k = 0; k < 16; k++) {
		int fd;

		if (k == 0)
			snprintf(name, len, "unio-%ld", (long)getpid());
		else
			snprintf(name, len, "unio-%ld-%d", (long)getpid(), k);
		fd = unio_env_name_lock(dir, name, ENV_RT_LOCK_WAIT_MS);
		if (fd >= 0) {
			char path[PATH_MAX + 512];

			/* what is there is a dead process's with the same pid */
			snprintf(path, sizeof(path), "%s/%s", dir, name);
			remove_dir(path);
			return fd;
		}
		if (fd == -2) {
			CORE_LOG(ERR, "cannot lock %s/%s" ENV_RT_LOCK_SUFFIX ": %s", dir, name,
				 strerror(errno));
			return -1;
		}
		CORE_LOG(INFO, "%s/%s is a live process's (another pid namespace)", dir, name);
	}
	CORE_LOG(ERR, "no free runtime directory name for pid %ld in %s", (long)getpid(), dir);
	return -1;
}

/* Remove this process's runtime directory (when Unio named it), then release its lock. */
static void
runtime_dir_release(void)
{
	char dir[PATH_MAX], path[PATH_MAX + 512];

	if (env_rt_fd < 0 || runtime_base(dir, sizeof(dir)) != 0)
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, env_rt_name);
	remove_dir(path);
	unio_env_name_unlock(dir, env_rt_name, env_rt_fd);
	env_rt_fd = -1;
}

/*
 * A barrier with EAL's interrupt thread: an eventfd of our own among its interrupt sources;
 * its callback runs on that thread after whatever the thread runs when the eventfd is
 * written.  (Not an alarm: once an alarm was set, rte_eal_cleanup() unregisters the alarm
 * source late, and that wakes the thread while the memory goes away; see env_atexit.)
 */
static pthread_mutex_t env_intr_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rte_intr_handle *env_intr_ih;
static int env_intr_fd = -1;
static uint64_t env_intr_posted, env_intr_seen;

static void
env_intr_cb(void *arg)
{
	uint64_t v;

	RTE_SET_USED(arg);
	if (read(env_intr_fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
		__atomic_fetch_add(&env_intr_seen, v, __ATOMIC_RELEASE);
}

static int
env_intr_source_locked(void)
{
	if (env_intr_ih != NULL)
		return 0;
	env_intr_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	env_intr_ih = rte_intr_instance_alloc(RTE_INTR_INSTANCE_F_PRIVATE);
	if (env_intr_fd >= 0 && env_intr_ih != NULL &&
	    rte_intr_fd_set(env_intr_ih, env_intr_fd) == 0 &&
	    rte_intr_type_set(env_intr_ih, RTE_INTR_HANDLE_EXT) == 0 &&
	    rte_intr_callback_register(env_intr_ih, env_intr_cb, NULL) == 0)
		return 0;
	rte_intr_instance_free(env_intr_ih);
	env_intr_ih = NULL;
	if (env_intr_fd >= 0)
		close(env_intr_fd);
	env_intr_fd = -1;
	return -1;
}

void
unio_env_intr_drain(void)
{
	const uint64_t one = 1;
	uint64_t want;

	if (rte_lcore_count() == 0)
		return;
	pthread_mutex_lock(&env_intr_lock);
	if (env_intr_source_locked() != 0 ||
	    write(env_intr_fd, &one, sizeof(one)) != (ssize_t)sizeof(one)) {
		pthread_mutex_unlock(&env_intr_lock);
		return;
	}
	want = ++env_intr_posted;
	pthread_mutex_unlock(&env_intr_lock);
	for (int i = 0; i < 5000 && __atomic_load_n(&env_intr_seen, __ATOMIC_ACQUIRE) < want; i++)
		usleep(1000);
}

/*
 * rte_eal_cleanup() (DPDK 22.11) closes the ports of vdevs, whose interrupt sources go
 * away, and then unmaps DPDK's memory while the interrupt thread still runs: woken by
 * those unregistrations it rebuilds its wait list from interrupt handles that live in that
 * memory (memif's), and died with SIGSEGV in rte_intr_fd_get now and then (two memif ports
 * in one process: a few runs in 100 under load).  So the ports are stopped and closed
 * here, and the thread has rebuilt its list (second drain) before rte_eal_cleanup() runs.
 */
static void
env_atexit(void)
{
	uint16_t pid;

	/* a forked child that exits leaves its parent's EAL (and directory) alone */
	if (!env_owner || getpid() != env_pid)
		return;
	RTE_ETH_FOREACH_DEV(pid) {
		rte_eth_dev_stop(pid);
		rte_eth_dev_close(pid);
	}
	unio_env_intr_drain();
	unio_env_intr_drain();
	rte_eal_cleanup();
	if (env_rt_fd >= 0)
		runtime_dir_release();
	else if (env_runtime_dir[0] != '\0')
		remove_dir(env_runtime_dir);
}

static char *
arg_dup(char *buf, size_t *used, size_t cap, const char *fmt, long v)
{
	char *p = buf + *used;
	int n = snprintf(p, cap - *used, fmt, v);

	if (n < 0 || (size_t)n >= cap - *used)
		return NULL;
	*used += (size_t)n + 1;
	return p;
}

static unio_status_t
eal_init_locked(int n_user, char **user)
{
	static const char *const lcore_opts[] = { "-l", "-c", "--lcores", NULL };
	static const char *const prefix_opts[] = { "--file-prefix", "--proc-type", NULL };
	static const char *const pci_opts[] = { "-a", "-b", "--allow", "--block", "--no-pci",
						NULL };
	static const char *const mem_opts[] = { "--no-huge", "--in-memory", "-m",
						"--socket-mem", "--huge-dir", "--legacy-mem",
						"--proc-type", NULL };
	static const char *const log_opts[] = { "--log-level", NULL };
	static const char *const in_memory[] = { "--in-memory", NULL };
	static char strbuf[512], prefix_arg[96];
	const struct unio_config *cfg = unio_config_env();
	char *argv[ENV_MAX_ARGS];
	size_t used = 0, alen = 0;
	int argc = 0, ret, lock_fd = -1;
	int cpu;

	if (cfg == NULL)
		return UNIO_ERR_CONFIG;
	if (n_user > ENV_MAX_ARGS - 12) {
		CORE_LOG(ERR, "too many EAL arguments (%d)", n_user);
		return UNIO_ERR_INVALID_PARAM;
	}
	argv[argc++] = (char *)"unio";
	for (int i = 0; i < n_user; i++)
		argv[argc++] = user[i];
	/* named and locked first: the reaper below, or another process's, leaves it alone */
	if (!has_opt(n_user, user, prefix_opts)) {
		env_rt_fd = runtime_dir_take(env_rt_name, sizeof(env_rt_name));
		if (env_rt_fd < 0)
			return UNIO_ERR_IO;
		snprintf(prefix_arg, sizeof(prefix_arg), "--file-prefix=%s", env_rt_name);
		argv[argc++] = prefix_arg;
	}
	if (!has_opt(n_user, user, lcore_opts)) {
		cpu = cfg->cpu >= 0 ? (int)cfg->cpu : sched_getcpu();
		argv[argc++] = arg_dup(strbuf, &used, sizeof(strbuf), "-l%ld", cpu < 0 ? 0 : cpu);
	}
	if (!has_opt(n_user, user, pci_opts))
		argv[argc++] = (char *)"--no-pci";
	if (!has_opt(n_user, user, mem_opts) && cfg->hugepages != UNIO_HUGEPAGES_NO) {
		/* counted, reserved and taken by EAL under the lock (hugepage_lock()) */
		long free_pages, cg_left;
		bool huge;

		free_pages = free_hugepages();
		/* too few at all: no need to wait for the others (nor to hold them back) */
		if (free_pages >= ENV_MIN_HUGEPAGES) {
			lock_fd = hugepage_lock();
			if (lock_fd < 0)
				CORE_LOG(WARNING, "no turn at the hugepage count within %d ms",
					 ENV_HUGE_LOCK_MS);
			free_pages = free_hugepages();
		}
		cg_left = cgroup_hugepages_left();
		if (free_pages >= ENV_MIN_HUGEPAGES && cg_left < ENV_MIN_HUGEPAGES) {
			CORE_LOG(WARNING, "%ld 2 MiB hugepages free, but this process's hugetlb "
				 "cgroup allows %ld more (need %d)%s", free_pages, cg_left,
				 ENV_MIN_HUGEPAGES, cfg->hugepages == UNIO_HUGEPAGES_YES ? "" :
				 ": using --no-huge");
			free_pages = cg_left;
		}
		huge = (lock_fd >= 0 || cfg->hugepages == UNIO_HUGEPAGES_YES) &&
		       free_pages >= ENV_MIN_HUGEPAGES;
		if (huge && !hugepages_reservable(ENV_MIN_HUGEPAGES)) {
			CORE_LOG(WARNING, "%ld 2 MiB hugepages free, but %d cannot be reserved "
				 "(a hugetlb cgroup's limit, or taken meanwhile)%s", free_pages,
				 ENV_MIN_HUGEPAGES, cfg->hugepages == UNIO_HUGEPAGES_YES ? "" :
				 ": using --no-huge");
			huge = false;
			free_pages = 0;
		}
		if (cfg->hugepages == UNIO_HUGEPAGES_YES && !huge) {
			CORE_LOG(ERR, "UNIO_HUGEPAGES=yes but only %ld free 2 MiB hugepages "
				 "(need %d): reserve them in /sys/kernel/mm/hugepages", free_pages,
				 ENV_MIN_HUGEPAGES);
			if (lock_fd >= 0)
				close(lock_fd);
			runtime_dir_release();
			return UNIO_ERR_NO_MEMORY;
		}
		if (huge) {
			argv[argc++] = (char *)"--in-memory";
		} else {
			argv[argc++] = (char *)"--no-huge";
			argv[argc++] = (char *)"-m256";
			if (lock_fd >= 0)   /* nothing to take: no need to hold the others back */
				close(lock_fd);
			lock_fd = -1;
		}
	} else if (!has_opt(n_user, user, mem_opts)) {
		argv[argc++] = (char *)"--no-huge";
		argv[argc++] = (char *)"-m256";
	}
	/*
	 * EAL's own logs: errors only, unless UNIO_LOG_LEVEL asks for more, and then at most
	 * info: at debug EAL prints some 550 lines of driver loading before Unio's first one.
	 */
	if (!has_opt(n_user, user, log_opts))
		argv[argc++] = arg_dup(strbuf, &used, sizeof(strbuf), "--log-level=lib.*:%ld",
				       cfg->log_level <= (int)RTE_LOG_WARNING ? (long)RTE_LOG_ERR :
				       RTE_MIN((long)cfg->log_level, (long)RTE_LOG_INFO));
	argv[argc] = NULL;
	for (int i = 0; i < argc; i++) {
		if (argv[i] == NULL) {
			if (lock_fd >= 0)
				close(lock_fd);
			runtime_dir_release();
			return UNIO_ERR_NO_MEMORY;
		}
		alen += (size_t)snprintf(env_args + alen, alen < sizeof(env_args) ?
					 sizeof(env_args) - alen : 0, "%s%s",
					 i ? " " : "", argv[i]);
	}

	unio_env_reap_dead();
	/*
	 * Dynamic memory (--in-memory, no -m) takes pages as it needs them: at init, one 2 MiB
	 * page of heap (rte_service_init()).  There is no falling back once rte_eal_init()
	 * failed for want of pages (DPDK 22.11, lib/eal/linux/eal.c): found none when EAL
	 * counts them ("Cannot get hugepage information", EACCES), it may run again, but keeps
	 * what the first call parsed (--in-memory, -l): a second call with --no-huge is
	 * refused ("--legacy-mem is not compatible with --in-memory", which --no-huge implies);
	 * none left at rte_service_init() (ENOMEM), or at memory or heap init, it refuses to
	 * run again at all ("already called initialization").  So the pages are made sure of
	 * before: counted and reserved under the lock, and other Unio processes count only
	 * after this one took its first page.  What remains is a process that is not Unio
	 * taking all but a page or two within the few milliseconds between.
	 */
	ret = rte_eal_init(argc, argv);
	if (lock_fd >= 0)
		close(lock_fd);
	if (ret < 0) {
		int err = rte_errno;

		CORE_LOG(ERR, "rte_eal_init(%s) failed: %s", env_args, rte_strerror(err));
		if ((err == EACCES || err == ENOMEM) && has_opt(argc, argv, in_memory))
			CORE_LOG(ERR, "the hugepages reserved before rte_eal_init() were taken by "
				 "another process before EAL took them (DPDK cannot initialise "
				 "again in this process): retry, or set UNIO_HUGEPAGES=no");
		runtime_dir_release();
		/* EINVAL: arguments EAL refused (its usage is printed above) */
		return err == EINVAL ? UNIO_ERR_INVALID_PARAM : UNIO_ERR_IO;
	}
	env_owner = 1;
	env_pid = getpid();
	snprintf(env_runtime_dir, sizeof(env_runtime_dir), "%s", rte_eal_get_runtime_dir());
	atexit(env_atexit);
	CORE_LOG(INFO, "EAL initialised: %s", env_args);
	return UNIO_OK;
}

/*
 * UNIO_EAL_ARGS of @p cfg (NULL: the environment's) split at spaces into @p argv (pointing
 * into @p buf); returns the count.
 */
static int
config_eal_args(const struct unio_config *cfg, char *buf, size_t len, char **argv, int max)
{
	char *save = NULL, *tok;
	int n = 0;

	if (cfg == NULL)
		cfg = unio_config_env();
	if (cfg == NULL || strcmp(cfg->eal_args, "none") == 0)
		return 0;
	snprintf(buf, len, "%s", cfg->eal_args);
	for (tok = strtok_r(buf, " \t", &save); tok != NULL && n < max;
	     tok = strtok_r(NULL, " \t", &save))
		argv[n++] = tok;
	return n;
}

static unio_status_t
env_init(int n_user, char **user, const struct unio_config *cfg)
{
	static char cfg_buf[UNIO_CFG_STR_MAX];   /* under env_lock */
	char *cfg_argv[UNIO_CFG_STR_MAX / 2];
	unio_status_t st = UNIO_OK;

	pthread_mutex_lock(&env_lock);
	if (!env_done) {
		if (n_user == 0) {   /* none from the application: UNIO_EAL_ARGS */
			n_user = config_eal_args(cfg, cfg_buf, sizeof(cfg_buf), cfg_argv,
						 (int)RTE_DIM(cfg_argv));
			user = cfg_argv;
		}
		if (eal_is_initialised()) {
			CORE_LOG(INFO, "EAL already initialised by the application: "
				 "using it as is");
			if (n_user > 0)
				CORE_LOG(WARNING, "EAL already initialised: "
					 "%d EAL argument(s) ignored", n_user);
		} else {
			st = eal_init_locked(n_user, user);
		}
		env_done = st == UNIO_OK;
	}
	pthread_mutex_unlock(&env_lock);
	return st;
}

int
unio_env_init(int argc, char **argv)
{
	int sep = -1;
	unio_status_t st;

	if (argc < 0 || (argc > 0 && argv == NULL))
		return UNIO_ERR_INVALID_PARAM;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			sep = i;
			break;
		}
	st = env_init(sep > 0 ? sep - 1 : 0, argv + 1, NULL);
	if (st != UNIO_OK)
		return st;
	if (sep < 0)
		return 0;
	/* argv[sep] ("--") now stands for the program name of the application's arguments */
	argv[sep] = argv[0];
	return sep;
}

unio_status_t
unio_env_init_default(void)
{
	return env_init(0, NULL, NULL);
}

unio_status_t
unio_env_init_config(const struct unio_config *cfg)
{
	return env_init(0, NULL, cfg);
}
