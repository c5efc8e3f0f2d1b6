/* SPDX-License-Identifier: BSD-3-Clause */
/* The UNIO_* configuration table: every type, every bad form, API overrides, unio-info -c. */

#include <rte_log.h>

#include <unio_config.h>

#include "unio_config_priv.h"
#include "unio_test.h"

static struct unio_config cfg;

static int
set(const char *name, const char *value)
{
	return unio_config_set(&cfg, name, value);
}

static int
defaults(void)
{
	return unio_config_snapshot(&cfg) == UNIO_OK ? 0 : -1;
}

UNIO_TEST(config_size, fast)
{
	static const struct { const char *in; size_t out; } good[] = {
		{ "0", 0 }, { "512", 512 }, { "4k", 4096 }, { "4K", 4096 }, { "8kb", 8192 },
		{ "8KiB", 8192 }, { "1m", 1 << 20 }, { "2g", 2ull << 30 }, { "1t", 1ull << 40 },
		{ "inf", UNIO_SIZE_INF }, { "auto", UNIO_SIZE_AUTO },
	};
	static const char *const bad[] = {
		"12q", "", "-1", "k", "4kx", "4 k", "1.5m", "0x10", "99999999999999999999",
		"16777216t", "autox", "infinite",
	};

	TEST_ASSERT(defaults() == 0, "defaults");
	for (unsigned int i = 0; i < RTE_DIM(good); i++) {
		TEST_ASSERT_STATUS(set("RNDV_THRESH", good[i].in), UNIO_OK);
		TEST_ASSERT(cfg.rndv_thresh == good[i].out, "'%s' -> %zu", good[i].in,
			    cfg.rndv_thresh);
	}
	for (unsigned int i = 0; i < RTE_DIM(bad); i++) {
		size_t before = cfg.rndv_thresh;

		TEST_ASSERT_STATUS(set("UNIO_RNDV_THRESH", bad[i]), UNIO_ERR_CONFIG);
		TEST_ASSERT(cfg.rndv_thresh == before, "'%s' changed the value", bad[i]);
		TEST_ASSERT(strstr(unio_config_error(), "UNIO_RNDV_THRESH") != NULL, "%s",
			    unio_config_error());
		TEST_ASSERT(strstr(unio_config_error(), "'inf' or 'auto'") != NULL, "%s",
			    unio_config_error());
	}
	/* a size without "auto" among its forms refuses it */
	TEST_ASSERT_STATUS(set("SHM_FIFO_SIZE", "auto"), UNIO_ERR_CONFIG);
	TEST_ASSERT_STATUS(set("SHM_FIFO_SIZE", "64k"), UNIO_OK);
	TEST_ASSERT_EQ(cfg.shm_fifo_size, 65536);
	return TEST_OK;
}

UNIO_TEST(config_bool_int_enum, fast)
{
	static const char *const yes[] = { "y", "yes", "on", "1", "true", "TRUE", "Yes" };
	static const char *const no[] = { "n", "no", "off", "0", "false", "OFF" };
	static const char *const bad_bool[] = { "", "2", "yess", "maybe", "-" };
	static const char *const bad_int[] = { "", "x", "1x", "1024", "-2", "3.5" };

	TEST_ASSERT(defaults() == 0, "defaults");
	for (unsigned int i = 0; i < RTE_DIM(yes); i++) {
		TEST_ASSERT_STATUS(set("SHM_CMA", "n"), UNIO_OK);
		TEST_ASSERT_STATUS(set("SHM_CMA", yes[i]), UNIO_OK);
		TEST_ASSERT(cfg.shm_cma, "%s", yes[i]);
	}
	for (unsigned int i = 0; i < RTE_DIM(no); i++) {
		TEST_ASSERT_STATUS(set("SHM_CMA", "y"), UNIO_OK);
		TEST_ASSERT_STATUS(set("SHM_CMA", no[i]), UNIO_OK);
		TEST_ASSERT(!cfg.shm_cma, "%s", no[i]);
	}
	for (unsigned int i = 0; i < RTE_DIM(bad_bool); i++) {
		TEST_ASSERT_STATUS(set("SHM_CMA", bad_bool[i]), UNIO_ERR_CONFIG);
		TEST_ASSERT(strstr(unio_config_error(), "UNIO_SHM_CMA") != NULL, "msg");
	}
	TEST_ASSERT_STATUS(set("MAX_RNDV_RAILS", "8"), UNIO_OK);
	TEST_ASSERT_EQ(cfg.max_rndv_rails, 8);
	TEST_ASSERT_STATUS(set("CPU", "0x10"), UNIO_OK);
	TEST_ASSERT_EQ(cfg.cpu, 16);
	TEST_ASSERT_STATUS(set("MAX_RNDV_RAILS", "9"), UNIO_ERR_CONFIG);
	TEST_ASSERT(strstr(unio_config_error(), "from 1 to 8") != NULL, "%s",
		    unio_config_error());
	TEST_ASSERT_STATUS(set("MAX_RNDV_RAILS", "0"), UNIO_ERR_CONFIG);
	for (unsigned int i = 0; i < RTE_DIM(bad_int); i++)
		TEST_ASSERT_STATUS(set("CPU", bad_int[i]), UNIO_ERR_CONFIG);
	TEST_ASSERT_EQ(cfg.cpu, 16);

	TEST_ASSERT_STATUS(set("RNDV_SCHEME", "pipeline"), UNIO_OK);
	TEST_ASSERT_EQ(cfg.rndv_scheme, UNIO_RNDV_SCHEME_PIPELINE);
	TEST_ASSERT_STATUS(set("RNDV_SCHEME", "GET"), UNIO_OK);
	TEST_ASSERT_EQ(cfg.rndv_scheme, UNIO_RNDV_SCHEME_GET);
	TEST_ASSERT_STATUS(set("RNDV_SCHEME", "push"), UNIO_ERR_CONFIG);
	TEST_ASSERT(strstr(unio_config_error(), "one of: auto get pipeline am") != NULL, "%s",
		    unio_config_error());
	TEST_ASSERT_STATUS(set("LOG_LEVEL", "debug"), UNIO_OK);
	TEST_ASSERT_EQ(cfg.log_level, RTE_LOG_DEBUG);
	TEST_ASSERT_STATUS(set("LOG_LEVEL", "loud"), UNIO_ERR_CONFIG);
	TEST_ASSERT_STATUS(set("NO_SUCH_VARIABLE", "1"), UNIO_ERR_NOT_FOUND);
	return TEST_OK;
}

UNIO_TEST(config_list, fast)
{
	static const char *const bad[] = { "", "^", ",shm", "shm,", "a,,b", "sh m", "a;b",
		"x,x,x,x,x,x,x,x,x,x,x,x,x,x,x,x,x",
		"a_name_that_is_longer_than_thirty_two_bytes", "all,tpc", "shm,all", "^all" };

	TEST_ASSERT(defaults() == 0, "defaults");
	/* default "all" */
	TEST_ASSERT(unio_cfg_list_allows(&cfg.tls, "shm"), "all allows shm");
	TEST_ASSERT(unio_cfg_list_allows(&cfg.tls, "anything"), "all allows anything");
	TEST_ASSERT_STATUS(set("TLS", "shm,self"), UNIO_OK);
	TEST_ASSERT(unio_cfg_list_allows(&cfg.tls, "shm"), "shm");
	TEST_ASSERT(unio_cfg_list_allows(&cfg.tls, "self"), "self");
	TEST_ASSERT(!unio_cfg_list_allows(&cfg.tls, "tcp"), "tcp denied");
	TEST_ASSERT_STATUS(set("TLS", "^tcp"), UNIO_OK);
	TEST_ASSERT(unio_cfg_list_allows(&cfg.tls, "shm"), "^tcp allows shm");
	TEST_ASSERT(!unio_cfg_list_allows(&cfg.tls, "tcp"), "^tcp denies tcp");
	TEST_ASSERT_STATUS(set("NET_DEVICES", "eth*,lo"), UNIO_OK);
	TEST_ASSERT(unio_cfg_list_allows(&cfg.net_devices, "eth0"), "glob");
	TEST_ASSERT(!unio_cfg_list_allows(&cfg.net_devices, "docker0"), "glob deny");
	TEST_ASSERT_STATUS(set("NET_DEVICES", "^docker*,^x"), UNIO_ERR_CONFIG);
	for (unsigned int i = 0; i < RTE_DIM(bad); i++) {
		TEST_ASSERT_STATUS(set("TLS", bad[i]), UNIO_ERR_CONFIG);
		TEST_ASSERT(strstr(unio_config_error(), "UNIO_TLS") != NULL, "msg");
	}
	TEST_ASSERT(!unio_cfg_list_allows(&cfg.tls, "tcp"), "bad values left it unchanged");
	return TEST_OK;
}

UNIO_TEST(config_time, fast)
{
	static const struct { const char *in; uint64_t ns; } good[] = {
		{ "10s", 10000000000ull }, { "500us", 500000 }, { "3ms", 3000000 },
		{ "7ns", 7 }, { "2m", 120000000000ull }, { "1.5s", 1500000000 },
		{ "4", 4000000000ull },
		{ "inf", UNIO_TIME_INF },
	};
	static const char *const bad[] = { "", "s", "10x", "-1s", "1h", "10 s", "abc" };

	TEST_ASSERT(defaults() == 0, "defaults");
	for (unsigned int i = 0; i < RTE_DIM(good); i++) {
		TEST_ASSERT_STATUS(set("PEER_TIMEOUT", good[i].in), UNIO_OK);
		TEST_ASSERT(cfg.peer_timeout_ns == good[i].ns, "%s", good[i].in);
	}
	for (unsigned int i = 0; i < RTE_DIM(bad); i++) {
		TEST_ASSERT_STATUS(set("PEER_TIMEOUT", bad[i]), UNIO_ERR_CONFIG);
		TEST_ASSERT(strstr(unio_config_error(), "a time") != NULL, "msg");
	}
	return TEST_OK;
}

UNIO_TEST(config_string, fast)
{
	char longer[UNIO_CFG_STR_MAX + 1];

	TEST_ASSERT(defaults() == 0, "defaults");
	TEST_ASSERT(strcmp(cfg.eal_args, "none") == 0, "default %s", cfg.eal_args);
	TEST_ASSERT_STATUS(set("EAL_ARGS", "--vdev=net_af_packet0,iface=va,qpairs=2 -a 0:0.0"),
			   UNIO_OK);
	TEST_ASSERT(strcmp(cfg.eal_args, "--vdev=net_af_packet0,iface=va,qpairs=2 -a 0:0.0") ==
		    0, "%s", cfg.eal_args);
	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	TEST_ASSERT_STATUS(set("EAL_ARGS", longer), UNIO_ERR_CONFIG);
	TEST_ASSERT(strstr(unio_config_error(), "at most 255") != NULL, "msg");
	longer[UNIO_CFG_STR_MAX - 1] = '\0';    /* 255 characters: the most that fit */
	TEST_ASSERT_STATUS(set("EAL_ARGS", longer), UNIO_OK);
	TEST_ASSERT_EQ(strlen(cfg.eal_args), UNIO_CFG_STR_MAX - 1);
	return TEST_OK;
}

UNIO_TEST(config_api_roundtrip, fast)
{
	struct unio_config *c = NULL;
	char buf[64];

	TEST_ASSERT_STATUS(unio_config_read(NULL), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_config_read(&c), UNIO_OK);
	TEST_ASSERT_STATUS(unio_config_modify(NULL, "TLS", "shm"), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_config_modify(c, NULL, "shm"), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_config_modify(c, "TLS", NULL), UNIO_ERR_INVALID_PARAM);
	TEST_ASSERT_STATUS(unio_config_modify(c, "UNIO_ZCOPY_THRESH", "16k"), UNIO_OK);
	TEST_ASSERT_STATUS(unio_config_get(c, "ZCOPY_THRESH", buf, sizeof(buf)), UNIO_OK);
	TEST_ASSERT(strcmp(buf, "16k") == 0, "%s", buf);
	TEST_ASSERT_STATUS(unio_config_modify(c, "TLS", "^tcp,eth*"), UNIO_OK);
	TEST_ASSERT_STATUS(unio_config_get(c, "TLS", buf, sizeof(buf)), UNIO_OK);
	TEST_ASSERT(strcmp(buf, "^tcp,eth*") == 0, "%s", buf);
	TEST_ASSERT_STATUS(unio_config_get(c, "TLS", buf, 3), UNIO_ERR_NO_RESOURCE);
	TEST_ASSERT_STATUS(unio_config_get(c, "NOPE", buf, sizeof(buf)), UNIO_ERR_NOT_FOUND);
	TEST_ASSERT_STATUS(unio_config_modify(c, "PEER_TIMEOUT", "250ms"), UNIO_OK);
	TEST_ASSERT_STATUS(unio_config_get(c, "PEER_TIMEOUT", buf, sizeof(buf)), UNIO_OK);
	TEST_ASSERT(strcmp(buf, "250ms") == 0, "%s", buf);
	unio_config_release(c);
	unio_config_release(NULL);
	return TEST_OK;
}

/* unio-info -c lists every variable with its doc; a bad value names it and exits non-zero. */
UNIO_TEST(config_info_tool, fast)
{
	static const char *const vars[] = { "UNIO_TLS", "UNIO_NET_DEVICES", "UNIO_ZCOPY_THRESH",
		"UNIO_RNDV_THRESH", "UNIO_RNDV_SCHEME", "UNIO_LOG_LEVEL", "UNIO_MAX_RNDV_RAILS" };
	static char out[65536];
	int r;

	r = test_capture(out, sizeof(out), "%s/app/info/unio-info -c", test_build_dir());
	TEST_ASSERT_EQ(r, 0);
	for (unsigned int i = 0; i < RTE_DIM(vars); i++) {
		char line[64];

		snprintf(line, sizeof(line), "\n%s=", vars[i]);
		TEST_ASSERT(strstr(out, line) != NULL, "%s missing", vars[i]);
	}
	TEST_ASSERT(strstr(out, "# type: size;") != NULL, "doc lines");
	r = test_capture(out, sizeof(out),
			 "UNIO_RNDV_SCHEME=get UNIO_TLS=^tcp %s/app/info/unio-info -c",
			 test_build_dir());
	TEST_ASSERT_EQ(r, 0);
	TEST_ASSERT(strstr(out, "\nUNIO_RNDV_SCHEME=get  [default: auto]") != NULL, "env value");
	TEST_ASSERT(strstr(out, "\nUNIO_TLS=^tcp  [default: all]") != NULL, "env list");
	r = test_capture(out, sizeof(out), "UNIO_RNDV_THRESH=12q %s/app/info/unio-info -c",
			 test_build_dir());
	TEST_ASSERT(r != 0, "bad value must fail");
	TEST_ASSERT(strstr(out, "UNIO_RNDV_THRESH") != NULL, "%s", out);
	TEST_ASSERT(strstr(out, "k, m, g or t suffix") != NULL, "%s", out);
	return TEST_OK;
}

/* doc/guides/config.md is generated from the table: it must not drift. */
UNIO_TEST(config_reference_doc, fast)
{
	const char *src = getenv("UNIO_TEST_SOURCE_DIR");
	static char out[4096];
	int r;

	if (src == NULL)
		TEST_SKIP_BECAUSE("UNIO_TEST_SOURCE_DIR not set (run through meson test)");
	r = test_capture(out, sizeof(out),
			 "%s/app/info/unio-info --config-reference | "
			 "diff -u %s/doc/guides/config.md -",
			 test_build_dir(), src);
	TEST_ASSERT(r == 0, "doc/guides/config.md is stale; regenerate with "
		    "unio-info --config-reference > doc/guides/config.md\n%s", out);
	return TEST_OK;
}
