/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The usertools scripts: -h / --help prints the script's usage and exits 0 without doing
 * anything else, and a bad argument exits 2 with a message.  Before, --help was taken for an
 * argument: unio-test.sh --help started the whole CI run, unio-setup.sh --help a build,
 * unio-perf-report.sh --help a "meson setup --help" build directory.  And unio-topology.sh
 * leaves nothing behind when bringing a topology up fails midway.
 */

#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "unio_test.h"

UNIO_TEST(usertools_help, fast)
{
	static const struct {
		const char *cmd;
		int rc;
		const char *text;
	} cases[] = {
		{ "unio-deps.sh --help", 0, "Installs the Debian 12 packages" },
		{ "unio-deps.sh now", 2, "Installs the Debian 12 packages" },
		{ "unio-hugepages.sh -h", 0, "unio-hugepages.sh [N]: make sure at least N" },
		{ "unio-hugepages.sh --help", 0, "2 when N is not a number" },
		{ "unio-hugepages.sh 12x", 2,
		  "unio-hugepages: N must be a number of 2 MiB pages, not '12x'" },
		{ "unio-setup.sh --help", 0, "usertools/unio-setup.sh [unio-perf options...]" },
		{ "unio-test.sh --help", 0, "usertools/unio-test.sh [--quick]" },
		{ "unio-test.sh --quick --now", 2, "unio-test: unknown arguments: --quick --now" },
		{ "unio-perf-report.sh -h", 0, "usertools/unio-perf-report.sh [BUILD_DIR]" },
		{ "unio-perf-report.sh --bogus", 2,
		  "unio-perf-report: unknown arguments: --bogus" },
		{ "unio-netns.sh --help", 0, "unio-netns.sh create [NAME]" },
		{ "unio-topology.sh --help", 0, "unio-topology.sh bridge up|down NAME" },
		{ "unio-cross-arm64.sh --help", 0,
		  "usertools/unio-cross-arm64.sh [-b BUILDDIR] [-m MACHINE] [--test [NAME...]]" },
		{ "unio-cross-arm64.sh --bogus", 2, "unio-cross-arm64: unknown argument: --bogus" },
		{ "unio-cross-arm64.sh -m nope", 2, "unio-cross-arm64: no cross file" },
	};
	const char *src = getenv("UNIO_TEST_SOURCE_DIR");
	static char out[8192];

	if (src == NULL)
		TEST_SKIP_BECAUSE("UNIO_TEST_SOURCE_DIR not set (run through meson test)");
	for (unsigned int i = 0; i < RTE_DIM(cases); i++) {
		/* a script that ignored the option would build, test or install: cut it short */
		int rc = test_capture(out, sizeof(out), "cd /tmp && timeout 20 '%s/usertools/'%s",
				      src, cases[i].cmd);

		TEST_ASSERT(rc == cases[i].rc && strstr(out, cases[i].text) != NULL &&
			    strstr(out, "ninja") == NULL && strstr(out, "unio-deps:") == NULL,
			    "%s: exit %d (want %d), output:\n%s", cases[i].cmd, rc, cases[i].rc,
			    out);
	}
	return TEST_OK;
}

/* Is any namespace of topology @p name there (NAME-a, NAME-b, NAME-m)? */
static bool
topo_left(const char *name)
{
	return test_system("test -e /var/run/netns/%s-a -o -e /var/run/netns/%s-b -o "
			   "-e /var/run/netns/%s-m", name, name, name) == 0;
}

/*
 * usertools/unio-topology.sh cleans up after itself when "up" fails midway (issue 8: "tests
 * clean up after themselves, also when they fail"): a tbf rate tc refuses, an nft loss rule
 * nft refuses and an MTU no veth takes each fail after the namespaces and veths exist, and
 * the script must exit non-zero and leave none of them.  A topology that comes up is removed
 * by "down", which a second time succeeds with nothing to do.
 */
UNIO_TEST(topology_up_failure_cleans, fast)
{
	static const struct {
		const char *kind, *opts;
	} bad[] = {
		{ "bridge", "--rate nonsense" },
		{ "bridge", "--loss 5x" },
		{ "veth", "--mtu 99999999" },
		{ "bridge", "--loss 5 --mtu 99999999" },
	};
	const char *src = getenv("UNIO_TEST_SOURCE_DIR");
	char name[32];
	bool left;
	int rc;

	if (src == NULL)
		TEST_SKIP_BECAUSE("UNIO_TEST_SOURCE_DIR not set (run through meson test)");
	if (!test_can_netns())
		TEST_SKIP_BECAUSE("needs root and iproute2 network namespaces");
	snprintf(name, sizeof(name), "uniotopo-%d", (int)getpid());
	for (unsigned int i = 0; i < RTE_DIM(bad); i++) {
		rc = test_system("'%s/usertools/unio-topology.sh' %s up %s %s >/dev/null 2>&1", src,
				 bad[i].kind, name, bad[i].opts);
		left = topo_left(name);
		if (rc == 0 || left)   /* never leave them to the next case or test */
			test_system("'%s/usertools/unio-topology.sh' %s down %s", src, bad[i].kind,
				    name);
		TEST_ASSERT(rc != 0, "%s up %s succeeded", bad[i].kind, bad[i].opts);
		TEST_ASSERT(!left, "%s up %s failed and left namespaces behind", bad[i].kind,
			    bad[i].opts);
	}
	rc = test_system("'%s/usertools/unio-topology.sh' bridge up %s --loss 5 --rate 100mbit",
			 src, name);
	TEST_ASSERT(rc == 0 && test_system("test -e /var/run/netns/%s-m", name) == 0,
		    "bridge up: %d", rc);
	TEST_ASSERT_EQ(test_system("'%s/usertools/unio-topology.sh' bridge down %s", src, name),
		       0);
	TEST_ASSERT(!topo_left(name), "bridge down left namespaces");
	TEST_ASSERT_EQ(test_system("'%s/usertools/unio-topology.sh' bridge down %s", src, name),
		       0);
	return TEST_OK;
}
