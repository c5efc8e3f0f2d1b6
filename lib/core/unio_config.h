/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UNIO_CONFIG_H
#define UNIO_CONFIG_H

/**
 * @file
 * The configuration table: every UNIO_* environment variable with its type, default and
 * documentation.  The environment is parsed once per process; a context takes a snapshot
 * and may override any value from the API (unio_config_modify) before it is created.
 *
 * Value forms by type:
 * - bool: y, yes, on, 1, true / n, no, off, 0, false
 * - integer: decimal or 0x-hex, within the variable's range
 * - size: a number with an optional k, m, g or t suffix (powers of 1024; kb, KiB also
 *   accepted), "inf", and "auto" where the variable allows it
 * - list: comma-separated names (globs allowed); "all" for everything; a leading '^' makes it
 *   a deny list ("^tcp" = everything but tcp)
 * - enum: one of the listed words
 * - time: a number with a unit ns, us, ms, s or m (no unit = seconds), or "inf"
 */

#include <stdio.h>

#include "unio_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A configuration snapshot (opaque): unio_config_read(), unio_config_modify(). */
struct unio_config;

/** Flags of unio_config_print(). */
#define UNIO_CONFIG_PRINT_DOC    (1u << 0) /**< Include each variable's doc string. */
#define UNIO_CONFIG_PRINT_HEADER (1u << 1) /**< Print a header line first. */

/**
 * Read the configuration: the defaults overridden by the process environment.
 *
 * @param[out] config_p set to a new snapshot on success; release with unio_config_release().
 * @return UNIO_OK, UNIO_ERR_CONFIG when a variable is malformed (the error, naming the
 *         variable and the accepted forms, is logged and kept for unio_config_error()),
 *         UNIO_ERR_INVALID_PARAM or UNIO_ERR_NO_MEMORY.
 */
unio_status_t unio_config_read(struct unio_config **config_p);

/**
 * Override one value of a snapshot, as if it came from the environment.
 *
 * @param config a snapshot from unio_config_read().
 * @param name   the variable, with or without the "UNIO_" prefix (e.g. "RNDV_THRESH").
 * @param value  the value in the variable's textual form.
 * @return UNIO_OK, UNIO_ERR_NOT_FOUND for an unknown name, UNIO_ERR_CONFIG for a malformed
 *         value (nothing changes), UNIO_ERR_INVALID_PARAM for NULL arguments.
 */
unio_status_t unio_config_modify(struct unio_config *config, const char *name,
				 const char *value);

/**
 * Write a value of a snapshot as text.
 *
 * @return UNIO_OK, UNIO_ERR_NOT_FOUND, UNIO_ERR_INVALID_PARAM, or UNIO_ERR_NO_RESOURCE when
 *         @p len is too small.
 */
unio_status_t unio_config_get(const struct unio_config *config, const char *name, char *buf,
			      size_t len);

/** Print every variable of @p config (current value, default, and doc with the flag). */
void unio_config_print(const struct unio_config *config, FILE *stream, unsigned int flags);

/** Print the configuration reference (Markdown) generated from the table. */
void unio_config_print_reference(FILE *stream);

/** Release a snapshot.  NULL is accepted. */
void unio_config_release(struct unio_config *config);

/** The message of the last configuration error of the calling thread ("" if none). */
const char *unio_config_error(void);

#ifdef __cplusplus
}
#endif

#endif /* UNIO_CONFIG_H */
