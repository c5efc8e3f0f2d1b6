/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UNIO_CONFIG_PRIV_H
#define UNIO_CONFIG_PRIV_H

/**
 * @file
 * The parsed configuration as the library reads it (internal).  Each field is described by
 * one row of the table in config.c.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unio_config.h"

#define UNIO_CFG_LIST_MAX   16
#define UNIO_CFG_NAME_MAX   32
#define UNIO_CFG_STR_MAX    256     /**< bytes of a string value, with its NUL */

/** A size value meaning "choose from the drivers' performance models". */
#define UNIO_SIZE_AUTO ((size_t)-2)
/** A size value meaning "no limit". */
#define UNIO_SIZE_INF ((size_t)-1)
/** A time value meaning "never". */
#define UNIO_TIME_INF UINT64_MAX

/** A list value: allow list, or with deny=true everything except the items. */
struct unio_cfg_list {
	bool deny;
	unsigned int count;               /**< 0 with deny=false never happens: "all" is deny={} */
	char items[UNIO_CFG_LIST_MAX][UNIO_CFG_NAME_MAX];
};

enum unio_rndv_scheme {
	UNIO_RNDV_SCHEME_AUTO,
	UNIO_RNDV_SCHEME_GET,         /**< receiver pulls (CMA, direct mapping, RDMA read) */
	UNIO_RNDV_SCHEME_PIPELINE,    /**< both sides copy through shared staging buffers */
	UNIO_RNDV_SCHEME_AM,          /**< fragments over active messages */
	UNIO_RNDV_SCHEME_SPLIT,       /**< receiver pulls one half, sender puts the other */
	UNIO_RNDV_SCHEME_MEASURE,     /**< auto, with get or pipeline by measure on any CPU */
};

enum unio_tcp_poll_mode {
	UNIO_TCP_POLL_BUSY,           /**< read every connection on each progress call */
	UNIO_TCP_POLL_EPOLL,          /**< epoll finds the ready connections */
};

enum unio_ethdev_idle_yield {
	UNIO_ETHDEV_YIELD_AUTO,       /**< on ports whose PMD is a kernel socket */
	UNIO_ETHDEV_YIELD_YES,
	UNIO_ETHDEV_YIELD_NO,
};

enum unio_ethdev_lossless {
	UNIO_ETHDEV_LOSSLESS_AUTO,    /**< memif ports with one queue pair */
	UNIO_ETHDEV_LOSSLESS_NO,
};

enum unio_hugepages_mode {
	UNIO_HUGEPAGES_TRY,
	UNIO_HUGEPAGES_YES,
	UNIO_HUGEPAGES_NO,
};

struct unio_config {
	int log_level;                    /**< rte_log level */
	struct unio_cfg_list tls;
	struct unio_cfg_list net_devices;
	size_t zcopy_thresh;
	size_t rndv_thresh;
	size_t unexp_mem;                 /**< bytes of unexpected message data per worker */
	int rndv_scheme;                  /**< enum unio_rndv_scheme */
	size_t rndv_split_min;            /**< smallest split rendezvous (auto, split) or AUTO */
	int64_t max_rndv_rails;
	int64_t cpu;                      /**< -1: the CPU the caller runs on */
	int hugepages;                    /**< enum unio_hugepages_mode */
	uint64_t peer_timeout_ns;
	int64_t conn_backlog;             /**< HELLOs waiting for the control progress */
	size_t shm_fifo_size;
	size_t shm_seg_size;
	size_t shm_map_cache;
	int64_t shm_max_peers;
	bool shm_cma;
	bool shm_other_users;             /**< shm: peers of other uids get the segment */
	size_t tcp_sndbuf;
	size_t tcp_rcvbuf;
	uint64_t tcp_keepalive_ns;
	int tcp_poll_mode;                /**< enum unio_tcp_poll_mode */
	bool tcp_splice;                  /**< large PUT / GET_RESP payloads by splice */
	struct unio_cfg_list ethdev_arp;  /**< static neighbours "A.B.C.D/aabbccddeeff" */
	struct unio_cfg_list ethdev_ip;   /**< "auto", "A.B.C.D" or "PORT:A.B.C.D" items */
	int64_t ethdev_port;              /**< UDP port of ethdev ifaces */
	int64_t ethdev_retries;           /**< timeouts before an ethdev ep fails */
	int64_t ethdev_queues;            /**< queue pairs per ethdev port */
	uint64_t ethdev_target_delay_ns;  /**< ethdev congestion control target delay */
	char eal_args[UNIO_CFG_STR_MAX];  /**< EAL arguments of Unio's own EAL init, "none" */
	int ethdev_idle_yield;            /**< enum unio_ethdev_idle_yield */
	int ethdev_lossless;              /**< enum unio_ethdev_lossless */
	size_t copy_alias_min;            /**< unio_memcpy_part(): backward loop from here */
	size_t copy_skew_min;             /**< unio_memcpy_part(): forward loop from here */
	size_t copy_nt_thresh;            /**< unio_memcpy_part(): non-temporal from here */
	size_t copy_loop_max;             /**< unio_memcpy_part(): no loop from here; auto */
};

/** The environment snapshot, parsed once; NULL and unio_config_error() set when malformed. */
const struct unio_config *unio_config_env(void);

/**
 * Report a malformed configuration for tool @p prog (unio-info, unio-perf): the library
 * logged unio_config_error() at ERR when it parsed the value; the tool's own line follows only
 * when that log level is off, so that the user reads the error once either way.
 */
void unio_config_error_report(const char *prog);

/** True when @p list allows @p name (glob match on the items). */
bool unio_cfg_list_allows(const struct unio_cfg_list *list, const char *name);

/** Copy of the environment snapshot into @p out; UNIO_ERR_CONFIG when the env is malformed. */
unio_status_t unio_config_snapshot(struct unio_config *out);

/** Apply one override to a struct (see unio_config_modify()). */
unio_status_t unio_config_set(struct unio_config *config, const char *name, const char *value);

/**
 * Initialise EAL as unio_env_init_default() does, with @p cfg's UNIO_EAL_ARGS instead of the
 * environment's (what unio_context_create() does with the context's configuration).
 */
unio_status_t unio_env_init_config(const struct unio_config *cfg);

/*
 * Liveness by lock, as for EAL runtime directories (lib/core/env.c): the owner of a name
 * holds an flock on "<dir>/<name>.lock" while it lives, and whoever removes what a dead
 * owner left (a runtime directory, the test runner's network namespaces) does so holding
 * that lock.  A pid says nothing across pid namespaces, nor once it was reused.
 */
/** Lock @p name in @p dir: the fd, -1 when another process holds it after @p wait_ms, -2. */
int unio_env_name_lock(const char *dir, const char *name, int wait_ms);
/** Unlink the lock file of @p name (held by @p fd) and release the lock. */
void unio_env_name_unlock(const char *dir, const char *name, int fd);
/**
 * The lock of @p name when its owner is dead (the fd: the caller removes what the name
 * stands for, then releases it), -1 while alive.  A name without a lock file (an owner from
 * before the lock) is judged by @p pid, the pid in the name: alive while a process has it.
 */
int unio_env_name_lock_dead(const char *dir, const char *name, long pid);

#endif /* UNIO_CONFIG_PRIV_H */
