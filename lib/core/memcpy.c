/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Large copies on the data path (unio_memcpy.h).  Three routines besides memcpy, all AVX2
 * with 128 bytes an iteration and 32-byte aligned stores:
 * - backward: for a destination 1 to 63 bytes past the source modulo 4 KiB.  A forward copy
 *   then loads, at each step, from the page offset it stored to a moment before (the
 *   destination's offset - 16, say, is the source's offset now), and the CPU holds each
 *   such load until it knows the two addresses differ ("4K aliasing"); with glibc's
 *   "rep movsb" (above 2112 bytes up to 512 KiB in glibc 2.36 on AMD) that costs 15 to 30
 *   times the copy's time.  Backwards, the stores still pending are at higher page offsets than any
 *   load's alias: none waits.
 * - forward: for a destination whose distance from the source is not a multiple of 32
 *   bytes (a malloc'ed buffer, 16 bytes past a 32-byte boundary, against a page-aligned
 *   mapping).  "rep movsb" runs 10 to 30 % slower for such pairs than for aligned ones on
 *   the AMD EPYC measured (2200 bytes to 256 KiB, doc/guides/am-rma.md); loads at any
 *   alignment with aligned stores run as fast as the aligned case.
 * Both start above glibc's rep_movsb_threshold (2112 bytes with FSRM): below it glibc's
 * vector loop copies fast at any alignment, faster than either loop here.
 * - non-temporal: for transfers of UNIO_COPY_NT_THRESH and more, streaming stores, then
 *   an sfence so that the data is visible to other cores (and the peer's flag written
 *   after it is seen after it) before the call returns.
 * The two loops stop at UNIO_COPY_LOOP_MAX: on Intel, from half a core's L2 on (source and
 * destination no longer fit it together), glibc's "rep movsb" stores whole lines without
 * fetching them and knows no 4K aliasing: 1 MiB ran at 21-22 GB/s with it at every
 * distance against 17-19 GB/s through either loop on the Xeon measured
 * (doc/guides/am-rma.md, "1 MiB put and get on the Intel host").
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "unio_config_priv.h"
#include "unio_cpu.h"
#include "unio_memcpy.h"

#define ALIAS_WINDOW 64        /* (dst - src) mod 4096 in [1, ALIAS_WINDOW) goes backwards */
#define PAGE_MASK    4095u
#define SKEW_MASK    31u       /* (dst - src) mod 32 != 0 goes forward through AVX2 */

/* the defaults of the configuration table, until a context applies its own */
static size_t alias_min = 2113;
static size_t skew_min = 2113;
static size_t nt_thresh = (size_t)8 << 20;
static size_t loop_max = UNIO_SIZE_INF;   /* the probe sets the 'auto' of the table */
static size_t loop_max_auto = UNIO_SIZE_INF;
static bool have_avx2;

#if defined(__x86_64__)
__attribute__((constructor)) static void
memcpy_probe(void)
{
	long l2;

	__builtin_cpu_init();
	have_avx2 = __builtin_cpu_supports("avx2");
	if (unio_cpu_vendor() == UNIO_CPU_INTEL) {
		l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
		loop_max_auto = l2 > 0 ? (size_t)l2 / 2 : (size_t)1 << 20;
	}
	loop_max = loop_max_auto;
}

/* @p n >= 256, no overlap; the last 32-byte aligned store ends at d + n rounded down */
__attribute__((target("avx2"))) static void
copy_backward(uint8_t *d, const uint8_t *s, size_t n)
{
	__m256i h0 = _mm256_loadu_si256((const __m256i *)s);
	__m256i h1 = _mm256_loadu_si256((const __m256i *)(s + 32));
	__m256i h2 = _mm256_loadu_si256((const __m256i *)(s + 64));
	__m256i h3 = _mm256_loadu_si256((const __m256i *)(s + 96));
	size_t k = (size_t)(((uintptr_t)(d + n) & ~(uintptr_t)31) - (uintptr_t)d);

	_mm256_storeu_si256((__m256i *)(d + n - 32),
			    _mm256_loadu_si256((const __m256i *)(s + n - 32)));
	for (; k > 128; k -= 128) {     /* [k - 128, k), d + k aligned */
		__m256i a = _mm256_loadu_si256((const __m256i *)(s + k - 32));
		__m256i b = _mm256_loadu_si256((const __m256i *)(s + k - 64));
		__m256i c = _mm256_loadu_si256((const __m256i *)(s + k - 96));
		__m256i e = _mm256_loadu_si256((const __m256i *)(s + k - 128));

		_mm256_store_si256((__m256i *)(d + k - 32), a);
		_mm256_store_si256((__m256i *)(d + k - 64), b);
		_mm256_store_si256((__m256i *)(d + k - 96), c);
		_mm256_store_si256((__m256i *)(d + k - 128), e);
	}
	_mm256_storeu_si256((__m256i *)d, h0);      /* [0, k), k <= 128 */
	_mm256_storeu_si256((__m256i *)(d + 32), h1);
	_mm256_storeu_si256((__m256i *)(d + 64), h2);
	_mm256_storeu_si256((__m256i *)(d + 96), h3);
}

/*
 * @p n >= 256, no overlap: 32-byte aligned stores from the first boundary of @p d on,
 * streaming ones with @p nt (then an sfence); the last 128 bytes are stored last.
 */
static inline __attribute__((always_inline, target("avx2"))) void
copy_fwd_body(uint8_t *d, const uint8_t *s, size_t n, bool nt)
{
	uint8_t *dend = d + n;
	const uint8_t *send = s + n;
	size_t skew = 32 - ((uintptr_t)d & 31);

	_mm256_storeu_si256((__m256i *)d, _mm256_loadu_si256((const __m256i *)s));
	d += skew;
	s += skew;
	n -= skew;
	for (; n >= 128; n -= 128, d += 128, s += 128) {
		__m256i a = _mm256_loadu_si256((const __m256i *)s);
		__m256i b = _mm256_loadu_si256((const __m256i *)(s + 32));
		__m256i c = _mm256_loadu_si256((const __m256i *)(s + 64));
		__m256i e = _mm256_loadu_si256((const __m256i *)(s + 96));

		if (nt) {
			_mm256_stream_si256((__m256i *)d, a);
			_mm256_stream_si256((__m256i *)(d + 32), b);
			_mm256_stream_si256((__m256i *)(d + 64), c);
			_mm256_stream_si256((__m256i *)(d + 96), e);
		} else {
			_mm256_store_si256((__m256i *)d, a);
			_mm256_store_si256((__m256i *)(d + 32), b);
			_mm256_store_si256((__m256i *)(d + 64), c);
			_mm256_store_si256((__m256i *)(d + 96), e);
		}
	}
	if (nt)
		_mm_sfence();
	for (size_t i = 128; i > 0; i -= 32)   /* the last 128 bytes, over what the loop wrote */
		_mm256_storeu_si256((__m256i *)(dend - i),
				    _mm256_loadu_si256((const __m256i *)(send - i)));
}

__attribute__((target("avx2"))) static void
copy_forward(uint8_t *d, const uint8_t *s, size_t n)
{
	copy_fwd_body(d, s, n, false);
}

__attribute__((target("avx2"))) static void
copy_nt(uint8_t *d, const uint8_t *s, size_t n)
{
	copy_fwd_body(d, s, n, true);
}

/* the same two functions under exported names, for the tools that time them */
extern __typeof__(copy_forward) unio_memcpy_avx2_fwd_ __attribute__((alias("copy_forward")));
extern __typeof__(copy_nt) unio_memcpy_avx2_nt_ __attribute__((alias("copy_nt")));
#endif

void
unio_memcpy_part_(void *dst, const void *src, size_t len, size_t total)
{
	/*
	 * Overlapping ranges (a put or get within one buffer of the same process): undefined
	 * for memcpy, and the backward loop would read bytes it already overwrote.  memmove
	 * gives the result of a copy through a temporary buffer, as the glibc memcpy this
	 * replaced happened to.
	 */
	if ((uintptr_t)dst - (uintptr_t)src < len || (uintptr_t)src - (uintptr_t)dst < len) {
		memmove(dst, src, len);
		return;
	}
#if defined(__x86_64__)
	if (have_avx2 && len >= 256) {
		size_t delta = ((uintptr_t)dst - (uintptr_t)src) & PAGE_MASK;

		if (total >= __atomic_load_n(&nt_thresh, __ATOMIC_RELAXED)) {
			copy_nt(dst, src, len);
			return;
		}
		if (len >= __atomic_load_n(&loop_max, __ATOMIC_RELAXED)) {
			memcpy(dst, src, len);
			return;
		}
		if (delta != 0 && delta < ALIAS_WINDOW &&
		    len >= __atomic_load_n(&alias_min, __ATOMIC_RELAXED)) {
			copy_backward(dst, src, len);
			return;
		}
		if ((delta & SKEW_MASK) != 0 &&
		    len >= __atomic_load_n(&skew_min, __ATOMIC_RELAXED)) {
			copy_forward(dst, src, len);
			return;
		}
	}
#else
	(void)total;
#endif
	memcpy(dst, src, len);
}

void
unio_memcpy_configure(const struct unio_config *cfg)
{
	if (cfg == NULL)
		return;
	__atomic_store_n(&alias_min, cfg->copy_alias_min, __ATOMIC_RELAXED);
	__atomic_store_n(&skew_min, cfg->copy_skew_min, __ATOMIC_RELAXED);
	__atomic_store_n(&nt_thresh, cfg->copy_nt_thresh, __ATOMIC_RELAXED);
	__atomic_store_n(&loop_max, cfg->copy_loop_max == UNIO_SIZE_AUTO ? loop_max_auto :
			 cfg->copy_loop_max, __ATOMIC_RELAXED);
}

static void
fmt_size(char *buf, size_t len, size_t v)
{
	if (v == UNIO_SIZE_INF)
		snprintf(buf, len, "inf");
	else if (v != 0 && v % (1u << 20) == 0)
		snprintf(buf, len, "%zum", v >> 20);
	else if (v != 0 && v % 1024 == 0)
		snprintf(buf, len, "%zuk", v >> 10);
	else
		snprintf(buf, len, "%zu", v);
}

const char *
unio_memcpy_describe(void)
{
	static char buf[384];
	char a[32], k[32], n[32], m[32];

	fmt_size(a, sizeof(a), __atomic_load_n(&alias_min, __ATOMIC_RELAXED));
	fmt_size(k, sizeof(k), __atomic_load_n(&skew_min, __ATOMIC_RELAXED));
	fmt_size(n, sizeof(n), __atomic_load_n(&nt_thresh, __ATOMIC_RELAXED));
	fmt_size(m, sizeof(m), __atomic_load_n(&loop_max, __ATOMIC_RELAXED));
	if (!have_avx2)
		snprintf(buf, sizeof(buf), "memcpy (no AVX2)");
	else
		snprintf(buf, sizeof(buf), "memcpy; AVX2 backward from %s when dst - src is 1-%u "
			 "mod 4 KiB; AVX2 forward from %s when it is not a multiple of %u; "
			 "both below %s; non-temporal stores from %s", a, ALIAS_WINDOW - 1, k,
			 SKEW_MASK + 1, m, n);
	return buf;
}
