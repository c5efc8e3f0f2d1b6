/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UNIO_MEMCPY_H
#define UNIO_MEMCPY_H

/**
 * @file
 * Copies on the data path (driver SDK, not installed): puts and gets through a peer's
 * mapping, rendezvous copies, pipelined fragments.  Three cases where the C library's memcpy
 * is slow on the machines measured (doc/guides/protocols.md, performance log 19):
 * - the destination 1 to 63 bytes past the source modulo 4 KiB: glibc 2.36 copies 2113
 *   bytes to 512 KiB with "rep movsb", which on AMD then runs 15 to 30 times slower (every
 *   load waits on a store to the same page offset); from UNIO_COPY_ALIAS_MIN such copies
 *   go through a vector loop that runs backwards, whose loads never meet a pending store;
 * - the destination's distance from the source not a multiple of 32 bytes: "rep movsb"
 *   runs 10 to 30 % slower there (the AMD EPYC measured, 2200 bytes to 256 KiB); from
 *   UNIO_COPY_SKEW_MIN such copies go through a forward vector loop with aligned stores;
 * - transfers from UNIO_COPY_NT_THRESH on (source and destination no longer fit the cache):
 *   non-temporal stores write the destination without reading it first.
 * Everything else, and every copy where AVX2 is missing (other CPUs, aarch64), is memcpy.
 */

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

struct unio_config;

/** Copies shorter than this are memcpy, inline, whatever the configuration says. */
#define UNIO_MEMCPY_LARGE_MIN 2048

/**
 * Copy @p len bytes that are part (or all) of a transfer of @p total bytes into its final
 * destination.  @p total decides the non-temporal stores: pass 0 for copies into a staging
 * buffer that another core reads at once (a FIFO or ring), so that they stay in the cache.
 * The buffers must not overlap (from UNIO_MEMCPY_LARGE_MIN on, overlapping ones are moved
 * as memmove does; below it, memcpy's rules hold).
 */
void unio_memcpy_part_(void *dst, const void *src, size_t len, size_t total);

static inline void
unio_memcpy_part(void *dst, const void *src, size_t len, size_t total)
{
	if (len < UNIO_MEMCPY_LARGE_MIN)
		memcpy(dst, src, len);
	else
		unio_memcpy_part_(dst, src, len, total);
}

/**
 * Copy @p len <= 16 bytes inline, without a call into the C library (an 8-byte put, a small
 * message's payload): every load before the first store, so overlapping buffers get
 * memmove's result.
 */
static inline void
unio_memcpy_upto16(void *dst, const void *src, size_t len)
{
	uint8_t *d = (uint8_t *)dst;
	const uint8_t *s = (const uint8_t *)src;

	if (len >= 8) {
		uint64_t a, b;

		memcpy(&a, s, 8);
		memcpy(&b, s + len - 8, 8);
		memcpy(d, &a, 8);
		memcpy(d + len - 8, &b, 8);
	} else if (len >= 4) {
		uint32_t a, b;

		memcpy(&a, s, 4);
		memcpy(&b, s + len - 4, 4);
		memcpy(d, &a, 4);
		memcpy(d + len - 4, &b, 4);
	} else if (len != 0) {
		uint8_t a = s[0], b = s[len / 2], c = s[len - 1];

		d[0] = a;
		d[len / 2] = b;
		d[len - 1] = c;
	}
}

/**
 * A whole transfer of @p len bytes into its final destination (a put, a get); the source
 * and destination may overlap (a put within one buffer of the process): the result is
 * memmove's.
 */
static inline void
unio_memcpy_large(void *dst, const void *src, size_t len)
{
	if (len < UNIO_MEMCPY_LARGE_MIN)
		memmove(dst, src, len);
	else
		unio_memcpy_part_(dst, src, len, len);
}

#if defined(__x86_64__)
/**
 * The forward AVX2 loop of unio_memcpy_part_() itself (not a copy of it), exported for tools
 * that time it (unio-copybench): @p n >= 256 bytes, no overlap, and only where the CPU has
 * AVX2.  32-byte aligned stores from the first boundary of @p d on; the _nt_ one streams
 * them (non-temporal) and ends with an sfence.
 */
void unio_memcpy_avx2_fwd_(uint8_t *d, const uint8_t *s, size_t n);
void unio_memcpy_avx2_nt_(uint8_t *d, const uint8_t *s, size_t n);
#endif

/**
 * Set the thresholds from @p cfg (UNIO_COPY_ALIAS_MIN, UNIO_COPY_SKEW_MIN,
 * UNIO_COPY_NT_THRESH).  They are process-wide: unio_context_create() applies its
 * context's, the last one created wins; before any, the defaults of the configuration
 * table hold.
 */
void unio_memcpy_configure(const struct unio_config *cfg);

/** The routine and thresholds in force, as text (a static buffer), for tools and logs. */
const char *unio_memcpy_describe(void);

#ifdef __cplusplus
}
#endif

#endif /* UNIO_MEMCPY_H */
