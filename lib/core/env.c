/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * EAL initialisation with Unio's defaults filled in (see unio_env.h).
 */

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
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

static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;
static int env_done;
static int env_owner;
static char env_runtime_dir[PATH_MAX];
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

static long
hugepage_count(const char *name)
{
	char path[128];
	FILE *f;
	long n = 0;

	snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/hugepages-2048kB/%s", name);
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	if (fscanf(f, "%ld", &n) != 1)
		n = 0;
	fclose(f);
	return n;
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

/* Remove the runtime directories "unio-<pid>" of Unio processes that died uncleanly. */
unsigned int
unio_env_reap_dead(void)
{
	const char *base = getuid() == 0 ? "/var/run/dpdk" : getenv("XDG_RUNTIME_DIR");
	char path[PATH_MAX + 512], dir[PATH_MAX];
	struct dirent *e;
	DIR *d;

	if (base == NULL)
		base = "/tmp";
	snprintf(dir, sizeof(dir), "%s%s", base, getuid() == 0 ? "" : "/dpdk");
	unsigned int n = 0;

	d = opendir(dir);
	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		char *end;
		long pid;

		if (strncmp(e->d_name, "unio-", 5) != 0)
			continue;
		pid = strtol(e->d_name + 5, &end, 10);
		if (*end != '\0' || pid <= 0 || pid == getpid())
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		remove_dir(path);
		n++;
	}
	closedir(d);
	return n;
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

	if (!env_owner)
		return;
	RTE_ETH_FOREACH_DEV(pid) {
		rte_eth_dev_stop(pid);
		rte_eth_dev_close(pid);
	}
	unio_env_intr_drain();
	unio_env_intr_drain();
	rte_eal_cleanup();
	if (env_runtime_dir[0] != '\0')
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
	static char strbuf[512];
	const struct unio_config *cfg = unio_config_env();
	char *argv[ENV_MAX_ARGS];
	size_t used = 0, alen = 0;
	int argc = 0, ret;
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
	if (!has_opt(n_user, user, lcore_opts)) {
		cpu = cfg->cpu >= 0 ? (int)cfg->cpu : sched_getcpu();
		argv[argc++] = arg_dup(strbuf, &used, sizeof(strbuf), "-l%ld", cpu < 0 ? 0 : cpu);
	}
	if (!has_opt(n_user, user, pci_opts))
		argv[argc++] = (char *)"--no-pci";
	if (!has_opt(n_user, user, mem_opts)) {
		long free_pages = free_hugepages();
		int huge = cfg->hugepages != UNIO_HUGEPAGES_NO &&
			   free_pages >= ENV_MIN_HUGEPAGES;

		if (cfg->hugepages == UNIO_HUGEPAGES_YES && !huge) {
			CORE_LOG(ERR, "UNIO_HUGEPAGES=yes but only %ld free 2 MiB hugepages "
				 "(need %d): reserve them in /sys/kernel/mm/hugepages", free_pages,
				 ENV_MIN_HUGEPAGES);
			return UNIO_ERR_NO_MEMORY;
		}
		if (huge) {
			argv[argc++] = (char *)"--in-memory";
		} else {
			argv[argc++] = (char *)"--no-huge";
			argv[argc++] = (char *)"-m256";
		}
	}
	if (!has_opt(n_user, user, prefix_opts))
		argv[argc++] = arg_dup(strbuf, &used, sizeof(strbuf), "--file-prefix=unio-%ld",
				       (long)getpid());
	if (!has_opt(n_user, user, log_opts))
		argv[argc++] = arg_dup(strbuf, &used, sizeof(strbuf), "--log-level=lib.*:%ld",
				       cfg->log_level > (int)RTE_LOG_WARNING ?
				       (long)cfg->log_level : (long)RTE_LOG_ERR);
	argv[argc] = NULL;
	for (int i = 0; i < argc; i++) {
		if (argv[i] == NULL)
			return UNIO_ERR_NO_MEMORY;
		alen += (size_t)snprintf(env_args + alen, alen < sizeof(env_args) ?
					 sizeof(env_args) - alen : 0, "%s%s",
					 i ? " " : "", argv[i]);
	}

	unio_env_reap_dead();
	/*
	 * Dynamic memory (--in-memory, no -m) takes pages as it needs them: at init, one 2 MiB
	 * page of heap.  Still, when other processes take every free page between the count
	 * above and EAL's own, EAL fails ("Cannot get hugepage information", EACCES), and
	 * there is no falling back then: DPDK 22.11 lets rte_eal_init() run again after that
	 * failure, but keeps what the first call parsed (--in-memory, -l), so a second call
	 * with --no-huge is refused as an invalid command line.
	 */
	ret = rte_eal_init(argc, argv);
	if (ret < 0) {
		int err = rte_errno;

		CORE_LOG(ERR, "rte_eal_init(%s) failed: %s", env_args, rte_strerror(err));
		if (err == EACCES && has_opt(argc, argv, in_memory))
			CORE_LOG(ERR, "the free hugepages counted before rte_eal_init() were "
				 "taken by other processes before EAL counted them: retry, or "
				 "set UNIO_HUGEPAGES=no");
		return UNIO_ERR_IO;
	}
	env_owner = 1;
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
