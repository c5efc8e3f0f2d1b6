/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UNIO_CPU_H
#define UNIO_CPU_H

/**
 * @file
 * The CPU this process runs on (private, not installed): the one place that asks which vendor
 * made it, for the defaults that depend on it (UNIO_COPY_LOOP_MAX=auto in lib/core/memcpy.c,
 * UNIO_RNDV_SCHEME=auto in lib/proto/proto.c).
 */

#ifdef __cplusplus
extern "C" {
#endif

/** Who made the CPU. */
enum unio_cpu_vendor {
	UNIO_CPU_OTHER,   /**< neither below, or not x86-64 */
	UNIO_CPU_INTEL,
	UNIO_CPU_AMD,
};

/** The CPU's vendor (GCC's __builtin_cpu_is; safe in a constructor). */
enum unio_cpu_vendor unio_cpu_vendor(void);

#ifdef __cplusplus
}
#endif

#endif /* UNIO_CPU_H */
