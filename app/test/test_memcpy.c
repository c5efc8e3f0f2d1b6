/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * unio_memcpy_part(): every routine it picks (memcpy, the backward AVX2 loop for aliased
 * pairs, the forward one for pairs not 32 bytes apart, non-temporal stores) copies exactly
 * the bytes asked, at every alignment of source and destination and at the lengths around
 * each routine's edges, and writes nothing around the destination.  unio_cpu_vendor(), whose
 * answer sets UNIO_COPY_LOOP_MAX=auto, names the vendor /proc/cpuinfo names.
 */

#include <stdbool.h>
#include <stdio.h>
#include <sys/mman.h>

#include "unio_config_priv.h"
#include "unio_cpu.h"
#include "unio_memcpy.h"
#include "unio_test.h"

#define GUARD   128
#define MAX_LEN ((1u << 20) + 4096 + 33)

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint8_t
rnd8(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint8_t)rng;
}

/* thresholds through the configuration, as unio_context_create() applies them */
static int
configure(const char *alias_min, const char *skew_min, const char *nt_thresh,
	  const char *loop_max)
{
	struct unio_config cfg;

	if (unio_config_snapshot(&cfg) != UNIO_OK ||
	    unio_config_set(&cfg, "COPY_ALIAS_MIN", alias_min) != UNIO_OK ||
	    unio_config_set(&cfg, "COPY_SKEW_MIN", skew_min) != UNIO_OK ||
	    unio_config_set(&cfg, "COPY_NT_THRESH", nt_thresh) != UNIO_OK ||
	    unio_config_set(&cfg, "COPY_LOOP_MAX", loop_max) != UNIO_OK)
		return -1;
	unio_memcpy_configure(&cfg);
	return 0;
}

/*
 * Copy @p len bytes from src_base + @p soff to a destination placed so that
 * (dst - src) mod 4096 == @p delta, through @p fn (0: unio_memcpy_part(), 1: the
 * out-of-line routine itself, which also takes lengths under UNIO_MEMCPY_LARGE_MIN); check
 * the copy and the guard bytes on both sides.
 */
static int
one(uint8_t *src_base, uint8_t *dst_base, size_t len, size_t soff, size_t delta, int fn,
    size_t total)
{
	const uint8_t *src = src_base + soff;
	size_t doff = 4096 + ((soff + delta) & 4095);   /* >= GUARD bytes in */
	uint8_t *dst = dst_base + doff;

	TEST_ASSERT((((uintptr_t)dst - (uintptr_t)src) & 4095) == delta, "placement");
	memset(dst - GUARD, 0xa5, len + 2 * GUARD);
	if (fn == 0)
		unio_memcpy_part(dst, src, len, total);
	else
		unio_memcpy_part_(dst, src, len, total);
	if (memcmp(dst, src, len) != 0) {
		size_t i = 0;

		while (dst[i] == src[i])
			i++;
		TEST_LOG("len %zu src offset %zu delta %zu total %zu: byte %zu differs", len,
			 soff, delta, total, i);
		return TEST_FAIL;
	}
	for (size_t i = 1; i <= GUARD; i++)
		TEST_ASSERT(dst[-(ssize_t)i] == 0xa5 && dst[len + i - 1] == 0xa5,
			    "len %zu src offset %zu delta %zu: guard byte %zu written", len, soff,
			    delta, i);
	return TEST_OK;
}

static int
sweep(uint8_t *src, uint8_t *dst, size_t total_mode)
{
	static const size_t lens[] = {
		256, 257, 300, 383, 384, 385, 1000, 2047, 2048, 2049, 2112, 2113, 4095, 4096, 4097,
		8192 + 13, 65536 + 7, 262144 + 64, (1u << 20) + 33,
	};
	static const size_t soffs[] = { 0, 1, 7, 16, 31, 32, 63, 4095 };
	static const size_t deltas[] = { 0, 1, 8, 16, 31, 32, 48, 63, 64, 65, 112, 3984, 4080,
					 4095 };

	for (unsigned int l = 0; l < RTE_DIM(lens); l++)
		for (unsigned int s = 0; s < RTE_DIM(soffs); s++)
			for (unsigned int d = 0; d < RTE_DIM(deltas); d++)
				for (int fn = 0; fn < 2; fn++) {
					size_t total = total_mode == 0 ? 0 : lens[l];

					if (one(src, dst, lens[l], soffs[s], deltas[d], fn,
						total) != TEST_OK)
						return TEST_FAIL;
				}
	return TEST_OK;
}

UNIO_TEST(memcpy_large_routines, fast)
{
	size_t blen = MAX_LEN + 2 * 4096 + 2 * GUARD;
	uint8_t *src = mmap(NULL, blen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
	uint8_t *dst = mmap(NULL, blen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
	int rc = TEST_FAIL;

	TEST_ASSERT(src != MAP_FAILED && dst != MAP_FAILED, "mmap");
	for (size_t i = 0; i < blen; i++)
		src[i] = rnd8();
	/*
	 * the defaults: memcpy, the backward loop for aliased pairs and the forward one for
	 * pairs not 32 bytes apart above 2112 bytes and below the host's loop bound, NT from
	 * 8 MiB
	 */
	if (configure("2113", "2113", "8m", "auto") != 0 || sweep(src, dst, 1) != TEST_OK)
		goto out;
	TEST_LOG("%s", unio_memcpy_describe());
	/* the backward loop from 256 bytes on (the out-of-line routine takes them), any length */
	if (configure("0", "inf", "inf", "inf") != 0 || sweep(src, dst, 1) != TEST_OK)
		goto out;
	/* the forward loop from 256 bytes on, for every pair not 32 bytes apart */
	if (configure("inf", "0", "inf", "inf") != 0 || sweep(src, dst, 1) != TEST_OK)
		goto out;
	/* both loops, memcpy from 64 KiB on: the lengths on either side of the bound */
	if (configure("0", "0", "inf", "64k") != 0 || sweep(src, dst, 1) != TEST_OK)
		goto out;
	/* non-temporal stores for every copy of a transfer (total), none for staging (0) */
	if (configure("inf", "inf", "0", "inf") != 0 || sweep(src, dst, 1) != TEST_OK ||
	    sweep(src, dst, 0) != TEST_OK)
		goto out;
	/* memcpy only */
	if (configure("inf", "inf", "inf", "inf") != 0 || sweep(src, dst, 1) != TEST_OK)
		goto out;
	if (strstr(unio_memcpy_describe(), "inf") == NULL &&
	    strstr(unio_memcpy_describe(), "no AVX2") == NULL) {
		TEST_LOG("describe: %s", unio_memcpy_describe());
		goto out;
	}
	rc = TEST_OK;
out:
	configure("2113", "2113", "8m", "auto");
	munmap(src, blen);
	munmap(dst, blen);
	return rc;
}

/*
 * Overlapping ranges (a put within one buffer) give memmove's result through every routine
 * of unio_memcpy_large() (any length) and of unio_memcpy_part() from UNIO_MEMCPY_LARGE_MIN
 * (below it, memcpy: overlap is not allowed there): the destination 1 .. 63 bytes past the
 * source (where the backward loop would be taken) and before it, with each routine enabled
 * from the smallest length.
 */
UNIO_TEST(memcpy_overlap, fast)
{
	static const size_t deltas[] = { 1, 16, 63, 64, 4097 };
	static uint8_t buf[3 * 8192], want[3 * 8192];
	static const char *const rows[][4] = {
		{ "0", "inf", "inf", "inf" }, { "inf", "0", "inf", "inf" },
		{ "inf", "inf", "0", "inf" }, { "0", "0", "inf", "4k" },
		{ "2113", "2113", "8m", "auto" },
	};
	int rc = TEST_FAIL;

	for (size_t r = 0; r < RTE_DIM(rows); r++) {
		if (configure(rows[r][0], rows[r][1], rows[r][2], rows[r][3]) != 0)
			goto out;
		for (size_t d = 0; d < RTE_DIM(deltas); d++)
			for (int dir = 0; dir < 2; dir++)
				for (size_t len = 1; len <= 8192; len += 1021) {
					size_t so = dir ? 8192 + deltas[d] : 8192;
					size_t dof = dir ? 8192 : 8192 + deltas[d];

					for (size_t i = 0; i < sizeof(buf); i++)
						buf[i] = rnd8();
					memcpy(want, buf, sizeof(buf));
					memmove(want + dof, want + so, len);
					if (len >= UNIO_MEMCPY_LARGE_MIN && (len & 1))
						unio_memcpy_part(buf + dof, buf + so, len, len);
					else
						unio_memcpy_large(buf + dof, buf + so, len);
					if (memcmp(buf, want, sizeof(buf)) != 0) {
						TEST_LOG("rows %s/%s/%s delta %s%zu len %zu: "
							 "differs", rows[r][0], rows[r][1],
							 rows[r][2], dir ? "-" : "", deltas[d],
							 len);
						goto out;
					}
				}
	}
	rc = TEST_OK;
out:
	configure("2113", "2113", "8m", "auto");
	return rc;
}

UNIO_TEST(memcpy_config_rows, fast)
{
	struct unio_config cfg;

	TEST_ASSERT_STATUS(unio_config_snapshot(&cfg), UNIO_OK);
	TEST_ASSERT_EQ(cfg.copy_alias_min, 2113);
	TEST_ASSERT_EQ(cfg.copy_skew_min, 2113);
	TEST_ASSERT_EQ(cfg.copy_nt_thresh, 8u << 20);
	TEST_ASSERT(cfg.copy_loop_max == UNIO_SIZE_AUTO, "COPY_LOOP_MAX defaults to auto");
	/* auto resolves to a size or inf, never shows as auto */
	unio_memcpy_configure(&cfg);
	TEST_ASSERT(strstr(unio_memcpy_describe(), "auto") == NULL, "%s",
		    unio_memcpy_describe());
	TEST_ASSERT_STATUS(unio_config_set(&cfg, "COPY_LOOP_MAX", "512k"), UNIO_OK);
	TEST_ASSERT_EQ(cfg.copy_loop_max, 512u << 10);
	unio_memcpy_configure(&cfg);
	TEST_ASSERT(strstr(unio_memcpy_describe(), "below 512k") != NULL ||
		    strstr(unio_memcpy_describe(), "no AVX2") != NULL, "%s",
		    unio_memcpy_describe());
	TEST_ASSERT_STATUS(unio_config_set(&cfg, "COPY_SKEW_MIN", "inf"), UNIO_OK);
	TEST_ASSERT(cfg.copy_skew_min == UNIO_SIZE_INF, "inf");
	TEST_ASSERT_STATUS(unio_config_set(&cfg, "COPY_NT_THRESH", "inf"), UNIO_OK);
	TEST_ASSERT(cfg.copy_nt_thresh == UNIO_SIZE_INF, "inf");
	TEST_ASSERT_STATUS(unio_config_set(&cfg, "COPY_ALIAS_MIN", "auto"), UNIO_ERR_CONFIG);
	TEST_ASSERT_STATUS(unio_config_set(&cfg, "COPY_ALIAS_MIN", "64k"), UNIO_OK);
	TEST_ASSERT_EQ(cfg.copy_alias_min, 65536);
	unio_memcpy_configure(&cfg);
	TEST_ASSERT(strstr(unio_memcpy_describe(), "64k") != NULL ||
		    strstr(unio_memcpy_describe(), "no AVX2") != NULL, "%s",
		    unio_memcpy_describe());
	TEST_ASSERT_STATUS(unio_config_snapshot(&cfg), UNIO_OK);
	unio_memcpy_configure(&cfg);
	unio_memcpy_configure(NULL);   /* ignored */
	return TEST_OK;
}

/* The vendor the one core helper reports is the kernel's vendor_id (x86-64; other: none). */
UNIO_TEST(cpu_vendor, fast)
{
	enum unio_cpu_vendor v = unio_cpu_vendor(), want = UNIO_CPU_OTHER;
#if defined(__x86_64__)
	char line[256];
	FILE *f = fopen("/proc/cpuinfo", "r");

	TEST_ASSERT(f != NULL, "/proc/cpuinfo");
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "vendor_id", 9) != 0)
			continue;
		want = strstr(line, "GenuineIntel") != NULL ? UNIO_CPU_INTEL :
		       strstr(line, "AuthenticAMD") != NULL ? UNIO_CPU_AMD : UNIO_CPU_OTHER;
		break;
	}
	fclose(f);
#endif
	TEST_LOG("vendor %d, /proc/cpuinfo %d", (int)v, (int)want);
	TEST_ASSERT_EQ((int)v, (int)want);
	TEST_ASSERT_EQ((int)unio_cpu_vendor(), (int)v);   /* the same on every call */
	return TEST_OK;
}
