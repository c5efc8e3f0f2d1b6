/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The installed library as an application sees it: `meson install` into a temporary
 * prefix, then a program built with nothing but `pkg-config --cflags --libs libunio` from
 * there.  libunio.pc used to require libdpdk, whose Cflags (-march=<the build host's CPU>,
 * -include rte_config.h, DPDK's include directories) then reached every application.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unio.h"
#include "unio_test.h"

static const char program[] =
	"#include <stdio.h>\n"
	"#include <string.h>\n"
	"#include <unio.h>\n"
	"int main(void)\n"
	"{\n"
	"	struct unio_config *c;\n"
	"	char v[64];\n"
	"	if (unio_config_read(&c) != UNIO_OK ||\n"
	"	    unio_config_get(c, \"TLS\", v, sizeof(v)) != UNIO_OK)\n"
	"		return 1;\n"
	"	printf(\"version %s tls %s: %s\\n\", unio_version(), v,\n"
	"	       unio_status_string(UNIO_ERR_UNREACHABLE));\n"
	"	unio_config_release(c);\n"
	"	return 0;\n"
	"}\n";

/* The check, in @p dir (made and removed by the caller, whatever this returns). */
static int
install_check(const char *build, const char *dir)
{
	char path[320], flags[512], want[256];
	static char out[8192];
	const char *san;
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/app.c", dir);
	f = fopen(path, "w");
	TEST_ASSERT(f != NULL && fputs(program, f) >= 0 && fclose(f) == 0, "write %s", path);
	rc = test_capture(out, sizeof(out), "meson install -C '%s' --no-rebuild --quiet "
			  "--destdir '%s/root' 2>&1", build, dir);
	TEST_ASSERT(rc == 0, "meson install: exit %d\n%s", rc, out);
	/* the prefix is the destdir's: the .pc file's ${prefix} redefined to it */
	rc = test_capture(out, sizeof(out), "cd '%s' && pc=$(dirname $(find root -name libunio.pc))"
			  " && pkg-config --define-variable=prefix=\"$PWD/root$(sed -n "
			  "'s/^prefix=//p' $pc/libunio.pc)\" --cflags --libs $pc/libunio.pc",
			  dir);
	TEST_ASSERT(rc == 0, "pkg-config: exit %d\n%s", rc, out);
	out[strcspn(out, "\n")] = '\0';
	TEST_ASSERT(strlen(out) < sizeof(flags) - 1, "pkg-config: %s", out);
	snprintf(flags, sizeof(flags), "%.510s", out);
	printf("pkg-config --cflags --libs libunio: %s\n", flags);
	TEST_ASSERT(strstr(flags, "-march") == NULL && strstr(flags, "-mcpu") == NULL &&
		    strstr(flags, "-include") == NULL && strstr(flags, "dpdk") == NULL &&
		    strstr(flags, "-lunio") != NULL,
		    "flags an application does not need: %s", flags);
	/* a sanitized library needs its runtime in the program: the application's own flag */
	san = getenv("UNIO_TEST_SANITIZE");
	snprintf(want, sizeof(want), "-fsanitize=%s", san != NULL ? san : "none");
	rc = test_capture(out, sizeof(out), "cd '%s' && cc -Wall -Werror %s app.c -o app %s "
			  ">cc.log 2>&1 || cat cc.log; LD_LIBRARY_PATH=$(dirname $(find "
			  "\"$PWD/root\" -name 'libunio.so*' | head -1)) ./app 2>&1", dir,
			  strcmp(want, "-fsanitize=none") != 0 ? want : "", flags);
	snprintf(want, sizeof(want), "version %s tls all: %s\n", unio_version(),
		 unio_status_string(UNIO_ERR_UNREACHABLE));
	TEST_ASSERT(rc == 0 && strcmp(out, want) == 0, "build and run: exit %d, output:\n%s"
		    "want:\n%s", rc, out, want);
	return TEST_OK;
}

/* install_check() of the build tree @p build in a directory of $TMPDIR, removed after. */
static int
install_in_tmp(const char *build)
{
	const char *tmp = getenv("TMPDIR");
	char dir[256];
	int rc;

	snprintf(dir, sizeof(dir), "%s/unio-install-XXXXXX",
		 tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
	TEST_ASSERT(mkdtemp(dir) != NULL, "mkdtemp %s: %s", dir, strerror(errno));
	rc = install_check(build, dir);
	test_system("rm -rf '%s'", dir);
	return rc;
}

UNIO_TEST(install_pkgconfig, fast)
{
	const char *build = getenv("UNIO_TEST_BUILD_DIR");

	if (build == NULL)
		TEST_SKIP_BECAUSE("UNIO_TEST_BUILD_DIR not set (run through meson test)");
	return install_in_tmp(build);
}

/*
 * install_pkgconfig failing (here: no build tree to install from) leaves no directory
 * behind: it left /tmp/unio-install-* on every failed step.  Its TMPDIR is one of this
 * test's, which must be empty after.
 */
UNIO_TEST(install_pkgconfig_cleanup, fast)
{
	char tmp[] = "/tmp/unio-install-test-XXXXXX", *old = getenv("TMPDIR"), left[256];
	int rc;

	TEST_ASSERT(mkdtemp(tmp) != NULL, "mkdtemp: %s", strerror(errno));
	old = old != NULL ? strdup(old) : NULL;
	setenv("TMPDIR", tmp, 1);
	TEST_LOG("install_pkgconfig from no build tree: the failure below is expected");
	rc = install_in_tmp("/nonexistent/unio-build");
	if (old != NULL)
		setenv("TMPDIR", old, 1);
	else
		unsetenv("TMPDIR");
	free(old);
	test_capture(left, sizeof(left), "ls -A '%s'", tmp);
	test_system("rm -rf '%s'", tmp);
	TEST_ASSERT(rc == TEST_FAIL, "installing from no build tree: %d", rc);
	TEST_ASSERT(left[0] == '\0', "left behind in TMPDIR: %s", left);
	return TEST_OK;
}
