/* SPDX-License-Identifier: BSD-3-Clause */
/* Status strings and logging. */

#include <rte_log.h>

#include <unio_status.h>
#include <unio_version.h>

#include "unio_config_priv.h"
#include "unio_log.h"
#include "unio_tl.h"
#include "unio_test.h"

UNIO_TEST(status_strings, fast)
{
	/* every value has its own string; unknown values say so */
	for (int s = UNIO_INPROGRESS; s > UNIO_ERR_LAST; s--) {
		const char *str = unio_status_string((unio_status_t)s);

		TEST_ASSERT(str != NULL && strcmp(str, "unknown status") != 0, "status %d", s);
		for (int t = s - 1; t > UNIO_ERR_LAST; t--)
			TEST_ASSERT(strcmp(str, unio_status_string((unio_status_t)t)) != 0,
				    "%d and %d share '%s'", s, t, str);
	}
	TEST_ASSERT(strcmp(unio_status_string(UNIO_ERR_LAST), "unknown status") == 0, "last");
	TEST_ASSERT(strcmp(unio_status_string((unio_status_t)2), "unknown status") == 0, "2");
	TEST_ASSERT(strcmp(unio_status_string((unio_status_t)-1000), "unknown status") == 0,
		    "-1000");
	TEST_ASSERT(strcmp(unio_status_string(UNIO_ERR_MESSAGE_TRUNCATED),
			   "message truncated") == 0, "truncated");
	return TEST_OK;
}

UNIO_TEST(version_build_info, fast)
{
	static char out[8192];

	TEST_ASSERT(strcmp(unio_version(), "0.0.0") > 0, "version %s", unio_version());
	TEST_ASSERT_EQ(test_capture(out, sizeof(out), "%s/app/info/unio-info -v",
				    test_build_dir()), 0);
	TEST_ASSERT(strstr(out, "# drivers built:") != NULL, "%s", out);
	TEST_ASSERT(strstr(out, "# DPDK: 22.") != NULL || strstr(out, "# DPDK: 2") != NULL,
		    "%s", out);
	return TEST_OK;
}

/* UNIO_LOG_LEVEL sets every unio.* log type, including ones registered later. */
UNIO_TEST_CHILD(log_level)
{
	int want = atoi(argv[0]);

	RTE_SET_USED(argc);
	if (unio_config_env() == NULL)
		return 9;
	if (rte_log_get_level(unio_logtype_core) != want)
		return 10;
	if (rte_log_get_level(unio_logtype_tl) != want)
		return 11;
	return 0;
}

UNIO_TEST(log_levels_from_env, fast)
{
	static const struct { const char *env; int lvl; } cases[] = {
		{ "debug", RTE_LOG_DEBUG }, { "error", RTE_LOG_ERR }, { "info", RTE_LOG_INFO },
		{ "warn", RTE_LOG_WARNING },
	};

	for (unsigned int i = 0; i < RTE_DIM(cases); i++) {
		char lvl[8];
		const char *args[] = { lvl, NULL };
		pid_t pid;

		snprintf(lvl, sizeof(lvl), "%d", cases[i].lvl);
		setenv("UNIO_LOG_LEVEL", cases[i].env, 1);
		pid = test_spawn("log_level", args);
		unsetenv("UNIO_LOG_LEVEL");
		TEST_ASSERT(test_wait(pid, 30000) == 0, "UNIO_LOG_LEVEL=%s", cases[i].env);
	}
	return TEST_OK;
}

/* A bad UNIO_LOG_LEVEL is refused like any other bad value. */
UNIO_TEST(log_level_bad, fast)
{
	static char out[4096];
	int r = test_capture(out, sizeof(out), "UNIO_LOG_LEVEL=loud %s/app/info/unio-info -c",
			     test_build_dir());

	TEST_ASSERT(r != 0, "must fail");
	TEST_ASSERT(strstr(out, "UNIO_LOG_LEVEL") != NULL && strstr(out, "one of: fatal") != NULL,
		    "%s", out);
	return TEST_OK;
}
