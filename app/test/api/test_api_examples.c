/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The examples run as tests: hello_world client / server, and the gradient aggregation with
 * callbacks and with the wait (future) style, root plus three workers, sums verified by the
 * workers (a wrong sum or a failed operation is a nonzero exit).
 */

#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api_common.h"

extern char **environ;

static const char *
example_path(const char *name, char *buf, size_t len)
{
	const char *dir = getenv("UNIO_TEST_BUILD_DIR");
	struct stat sb;

	if (dir != NULL)
		snprintf(buf, len, "%s/examples/%s", dir, name);
	else
		snprintf(buf, len, "%s/../examples/%s", test_build_dir(), name);
	return stat(buf, &sb) == 0 ? buf : NULL;
}

static pid_t
run(const char *path, const char *const *args)
{
	const char *argv[16];
	int n = 0;
	pid_t pid;

	argv[n++] = path;
	for (; *args != NULL && n < 15; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	if (posix_spawn(&pid, path, NULL, NULL, (char *const *)argv, environ) != 0)
		return -1;
	return pid;
}

/* Start every process, then wait for each; all must exit 0 within @p ms. */
static int
run_all(const char *name, const char *const *const *argvs, int n, int ms)
{
	char path[4096];
	pid_t pids[8];
	int bad = 0;

	if (example_path(name, path, sizeof(path)) == NULL)
		TEST_SKIP_BECAUSE("examples not built (-Dexamples=false)");
	for (int i = 0; i < n; i++) {
		pids[i] = run(path, argvs[i]);
		TEST_ASSERT(pids[i] > 0, "spawn %s", path);
	}
	for (int i = 0; i < n; i++) {
		int rc = test_wait(pids[i], ms);

		if (rc != 0) {
			TEST_LOG("%s process %d exited with %d", name, i, rc);
			bad = 1;
		}
	}
	return bad ? TEST_FAIL : TEST_OK;
}

UNIO_TEST(api_example_hello_world, mp)
{
	char port[16];
	const char *server[] = { "server", port, NULL };
	const char *client[] = { "client", "127.0.0.1", port, NULL };
	const char *const *argvs[] = { server, client };

	snprintf(port, sizeof(port), "%d", test_free_port());
	return run_all("hello_world", argvs, 2, 30000);
}

static int
grad_agg(const char *name)
{
	char port[16];
	const char *root[] = { "root", port, "3", "262144", "5", NULL };
	const char *w0[] = { "worker", "127.0.0.1", port, "0", "3", "262144", "5", NULL };
	const char *w1[] = { "worker", "127.0.0.1", port, "1", "3", "262144", "5", NULL };
	const char *w2[] = { "worker", "127.0.0.1", port, "2", "3", "262144", "5", NULL };
	const char *const *argvs[] = { root, w0, w1, w2 };

	snprintf(port, sizeof(port), "%d", test_free_port());
	return run_all(name, argvs, 4, 50000);
}

UNIO_TEST(api_example_grad_agg_callbacks, mp)
{
	return grad_agg("grad_agg_callbacks");
}

UNIO_TEST(api_example_grad_agg_wait, mp)
{
	return grad_agg("grad_agg_wait");
}
