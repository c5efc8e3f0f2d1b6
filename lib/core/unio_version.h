/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UNIO_VERSION_H
#define UNIO_VERSION_H

/**
 * @file
 * Library version and build configuration.
 */

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The library version, "major.minor.patch". */
const char *unio_version(void);

/**
 * Print the build configuration: version, compiler, DPDK version, build type, sanitizers,
 * the drivers built and, for each driver not built, why.
 */
void unio_build_info_print(FILE *stream);

#ifdef __cplusplus
}
#endif

#endif /* UNIO_VERSION_H */
