/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UNIO_ENV_H
#define UNIO_ENV_H

/**
 * @file
 * Environment (DPDK EAL) initialisation.
 *
 * Applications pass EAL arguments before "--" and their own after it, like every DPDK
 * application: `app [EAL args --] [app args]`.  Whatever the EAL arguments leave out is
 * filled in with Unio's defaults:
 * - `-l <cpu>`: the CPU the caller runs on (or UNIO_CPU);
 * - `--no-pci` unless PCI devices are named (-a/-b);
 * - `--in-memory` when at least 16 2 MiB hugepages are free, not counting those reserved by
 *   other processes' mappings (free_hugepages - resv_hugepages), the process's hugetlb
 *   cgroup (v1 or v2) allows 16 more and 16 can be reserved, else `--no-huge -m 256` with a
 *   warning (UNIO_HUGEPAGES).  Unio processes count and initialise EAL one at a time (an
 *   flock on the sysfs count, 10 s at most), so two never take the same last pages;
 *   rte_eal_init() cannot be retried in a process once it failed for want of pages;
 * - `--file-prefix=unio-<pid>`, so any number of Unio processes run side by side
 *   (`unio-<pid>-<k>` when a live process in another pid namespace has that name);
 * - `--log-level=lib.*:<level>`: errors only, unless UNIO_LOG_LEVEL asks for info or debug.
 *
 * An application that initialised EAL itself keeps it: Unio never calls rte_eal_init()
 * twice, and never cleans up an EAL it did not initialise.  When Unio initialised EAL, it
 * calls rte_eal_cleanup() at exit and removes its runtime directory, so nothing is left in
 * /var/run/dpdk after a clean exit; runtime directories of dead Unio processes are removed
 * at the next initialisation.  A process is alive while it holds the flock on
 * `unio-<pid>.lock` beside its directory (taken before the directory is made, released
 * after it is removed), not while its pid is: a process in another pid namespace sharing
 * /var/run/dpdk keeps its directory, and a dead one's is removed though its pid was reused.
 */

#include "unio_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Initialise EAL from an application's command line, once per process.
 *
 * @param argc number of arguments in @p argv (argv[0] is the program name).
 * @param argv the command line; EAL arguments end at "--".  Without "--" every argument is
 *             the application's and EAL gets only the defaults.
 * @return the number of leading arguments consumed (>= 0): the application's arguments are
 *         then `argv[ret + 1 .. argc - 1]` with `argv[ret]` standing for the program name,
 *         as with rte_eal_init(); or a negative unio_status_t.  When EAL was initialised
 *         already, nothing is initialised again and only the "--" split is done.
 */
int unio_env_init(int argc, char **argv);

/** Initialise EAL with the defaults only (what unio_context_create() does). */
unio_status_t unio_env_init_default(void);

/** True when Unio (not the application) initialised EAL in this process. */
int unio_env_owns_eal(void);

/**
 * Remove the EAL runtime directories (`/var/run/dpdk/unio-<pid>`, or under
 * `$XDG_RUNTIME_DIR/dpdk` for other users) of Unio processes that died without cleaning up
 * (killed by a signal): those whose lock file nobody holds, with the lock file.  A
 * directory without a lock file (a Unio from before the lock) is removed when no process
 * has its pid, as before.  Also done at every initialisation.
 *
 * @return the number of directories removed.
 */
unsigned int unio_env_reap_dead(void);

/** The EAL arguments Unio used (empty when the application initialised EAL); for logs. */
const char *unio_env_eal_args(void);

/**
 * Wait until EAL's interrupt thread has finished the callback it runs now (5 s at most).
 * DPDK's memif PMD handles its peer's disconnect on that thread, and stopping or closing a
 * port while it does frees the same memory twice: drivers and tools call this between
 * seeing a memif link go down and stopping the port.  No-op before EAL is initialised.
 */
void unio_env_intr_drain(void);

#ifdef __cplusplus
}
#endif

#endif /* UNIO_ENV_H */
