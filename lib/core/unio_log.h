/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UNIO_LOG_H
#define UNIO_LOG_H

/**
 * @file
 * Internal logging: one dynamic rte_log type per component ("unio.core", "unio.tl",
 * "unio.drv.shm", ...), all set from UNIO_LOG_LEVEL.  Log an error once, where it is first
 * detected.  UNIO_LOG_DP is for the data path and is compiled out of release builds.
 */

#include <rte_log.h>

/** Log through component log type @p type at DPDK level @p lvl (ERR, WARNING, INFO, ...). */
#define UNIO_LOG(lvl, type, fmt, ...) \
	rte_log(RTE_LOG_##lvl, (type), "UNIO %s: " fmt "\n", #lvl, ##__VA_ARGS__)

#ifdef UNIO_LOG_DP_ENABLE
#define UNIO_LOG_DP(lvl, type, fmt, ...) UNIO_LOG(lvl, type, fmt, ##__VA_ARGS__)
#else
#define UNIO_LOG_DP(lvl, type, fmt, ...) do { } while (0)
#endif

extern int unio_logtype_core;
#define CORE_LOG(lvl, fmt, ...) UNIO_LOG(lvl, unio_logtype_core, fmt, ##__VA_ARGS__)

/** Apply a UNIO_LOG_LEVEL value (an rte_log level) to every "unio.*" log type. */
void unio_log_set_level(int rte_level);

#endif /* UNIO_LOG_H */
