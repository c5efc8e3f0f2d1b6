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
		snprintf(buf, len, "%s/examples/%s", test_build_dir(), name);
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

/*
 * Start every process, the first one's clients once it listens on @p port (they retry a
 * refused connect, each one logged), then wait for each; all must exit 0 within @p ms.
 */
static int
run_all(const char *name, const char *const *const *argvs, int n, int ms, const char *port)
{
	char path[4096];
	pid_t pids[8];
	int bad = 0;

	if (example_path(name, path, sizeof(path)) == NULL)
		TEST_SKIP_BECAUSE("examples not built (-Dexamples=false)");
	for (int i = 0; i < n; i++) {
		pids[i] = run(path, argvs[i]);
		TEST_ASSERT(pids[i] > 0, "spawn %s", path);
		if (i == 0 && test_wait_listen(pids[0], atoi(port), ms) != 0)
			TEST_LOG("%s: nothing listens on port %s", name, port);
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
	return run_all("hello_world", argvs, 2, 30000, port);
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
	return run_all(name, argvs, 4, 50000, port);
}

UNIO_TEST(api_example_grad_agg_callbacks, mp)
{
	return grad_agg("grad_agg_callbacks");
}

UNIO_TEST(api_example_grad_agg_wait, mp)
{
	return grad_agg("grad_agg_wait");
}

/*
 * A worker that never starts (here rank 0 of 2): the root gives up after
 * GRAD_AGG_CONNECT_TIMEOUT seconds and exits 1, naming how many connected; the worker that
 * did connect sees its endpoint fail (its pending receive is not tied to the endpoint: the
 * error handler ends the wait) and exits 1 too.  Both used to spin for ever.
 */
static int
grad_agg_missing_worker(const char *name)
{
	char path[4096], out[4096];
	int port = test_free_port(), rc;

	if (example_path(name, path, sizeof(path)) == NULL)
		TEST_SKIP_BECAUSE("examples not built (-Dexamples=false)");
	rc = test_capture(out, sizeof(out),
			  "GRAD_AGG_CONNECT_TIMEOUT=2 timeout 60 '%s' root %d 2 1024 3 2>&1 & "
			  "r=$!; "
			  "timeout 60 '%s' worker 127.0.0.1 %d 1 2 1024 3 2>&1; w=$?; wait $r; "
			  "echo \"exit root=$? worker=$w\"", path, port, path, port);
	TEST_ASSERT(rc == 0 && strstr(out, "exit root=1 worker=1\n") != NULL &&
		    strstr(out, "root: 1 of 2 workers connected in 2 s, giving up") != NULL &&
		    strstr(out, "a connection failed") != NULL,
		    "%s: exit %d, output:\n%s", name, rc, out);
	return TEST_OK;
}

UNIO_TEST(api_example_grad_agg_missing_worker, mp)
{
	int rc = grad_agg_missing_worker("grad_agg_callbacks");

	return rc != TEST_OK ? rc : grad_agg_missing_worker("grad_agg_wait");
}

/*
 * Bad command lines: a role the example does not know, a count or a port out of range.
 * Each ends at once with exit 2 and one line that names the argument (a role other than
 * server / root used to be taken for the client's and read past argv: SIGSEGV).
 */
UNIO_TEST(api_example_bad_args, fast)
{
	static const struct {
		const char *name;
		const char *args;
		const char *msg;
	} cases[] = {
		{ "hello_world", "foo 1", " server PORT | client HOST PORT\n" },
		{ "hello_world", "client 127.0.0.1", " server PORT | client HOST PORT\n" },
		{ "hello_world", "server 0", ": invalid PORT '0' (1 to 65535)\n" },
		{ "hello_world", "client 127.0.0.1 12ab", ": invalid PORT '12ab' (1 to 65535)\n" },
		{ "grad_agg_wait", "foo a b c d", " worker HOST PORT RANK NWORKERS ELEMS ITERS\n" },
		{ "grad_agg_wait", "worker 127.0.0.1 1 2 2 10 2", ": invalid RANK '2' (0 to 1)\n" },
		{ "grad_agg_wait", "root 1 2 0 2", ": invalid ELEMS '0' (1 to 16777216)\n" },
		{ "grad_agg_callbacks", "foo a b c d", " root PORT NWORKERS ELEMS ITERS\n" },
		{ "grad_agg_callbacks", "root 1 65 10 2", ": invalid NWORKERS '65' (1 to 64)\n" },
		{ "grad_agg_callbacks", "worker h 70000 0 1 1 1",
		  ": invalid PORT '70000' (1 to 65535)\n" },
	};
	char path[4096], out[1024];

	for (unsigned int i = 0; i < RTE_DIM(cases); i++) {
		int rc;

		if (example_path(cases[i].name, path, sizeof(path)) == NULL)
			TEST_SKIP_BECAUSE("examples not built (-Dexamples=false)");
		rc = test_capture(out, sizeof(out), "timeout 20 '%s' %s", path, cases[i].args);
		TEST_ASSERT(rc == 2 && strstr(out, cases[i].msg) != NULL &&
			    strstr(out, "UNIO") == NULL,
			    "%s %s: exit %d, output:\n%s", cases[i].name, cases[i].args, rc, out);
	}
	return TEST_OK;
}
