/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * unio-perf: Unio's performance tool, in the spirit of ucx_perftest and dpdk-testpmd.
 *
 *   unio-perf [EAL args --] [options]          serve one client on -p PORT
 *   unio-perf [EAL args --] [options] HOST     connect to HOST and run the test
 *   unio-perf -l 0-1 -- --loopback [options]   both sides in this process
 *   unio-perf [EAL args --] -i [options]       interactive (testpmd-like command line)
 *
 * Exit codes: 0 success, 1 run-time error (refused connection, lost peer, corrupted
 * payload), 2 bad usage or a test this build does not support.  See doc/guides/perf-tool.md.
 */

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_lcore.h>

#include "perf.h"
#include "unio_config_priv.h"

static volatile int stop_flag;
static volatile sig_atomic_t interrupted;

/* The first SIGINT/SIGTERM ends the run cleanly (BYE to the peer); the second one exits. */
static void
on_signal(int sig)
{
	if (interrupted)
		_exit(PERF_EXIT_ERR);
	interrupted = sig;
	stop_flag = 1;
}

static void
install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static int
run(const struct perf_opts *o)
{
	static struct perf_live live;
	struct perf_side *cli = calloc(1, sizeof(*cli));
	struct perf_side *srv = calloc(1, sizeof(*srv));
	int rc = PERF_EXIT_ERR;

	if (cli == NULL || srv == NULL) {
		fprintf(stderr, "unio-perf: out of memory\n");
		goto free_sides;
	}
	rc = perf_run(o, cli, srv, &stop_flag, &live, 0);
	if (interrupted) {
		fprintf(stderr, "unio-perf: interrupted by signal %d\n", (int)interrupted);
		rc = PERF_EXIT_ERR;
	}
free_sides:
	free(cli);
	free(srv);
	return rc;
}

int
main(int argc, char **argv)
{
	struct perf_opts o;
	int n, rc;

	n = unio_env_init(argc, argv);
	if (n == UNIO_ERR_CONFIG) {   /* the library said which value, at ERR */
		unio_config_error_report("unio-perf");
		return PERF_EXIT_USAGE;
	}
	if (n == UNIO_ERR_INVALID_PARAM) {     /* said above */
		fprintf(stderr, "unio-perf: invalid EAL arguments\n");
		return PERF_EXIT_USAGE;
	}
	if (n < 0) {
		fprintf(stderr, "unio-perf: EAL initialisation failed: %s\n",
			unio_status_string((unio_status_t)n));
		return PERF_EXIT_ERR;
	}
	argc -= n;
	argv += n;
	rc = perf_parse_opts(argc, argv, &o);
	if (rc > 0) {
		perf_usage(stdout);
		return PERF_EXIT_OK;
	}
	if (rc < 0) {   /* the line above says what: the 25 lines of usage would bury it */
		fprintf(stderr, "unio-perf: -h lists the options\n");
		return PERF_EXIT_USAGE;
	}
	if (perf_check_supported(&o) != 0)
		return PERF_EXIT_USAGE;
	install_signals();
	if (o.interactive) {
		rc = perf_interactive(&o);
		if (interrupted) {      /* the signal ended the command line: not a clean quit */
			fprintf(stderr, "unio-perf: interrupted by signal %d\n", (int)interrupted);
			rc = PERF_EXIT_ERR;
		}
		return rc;
	}
	if (o.loopback && rte_lcore_count() < 2) {
		fprintf(stderr, "unio-perf: --loopback needs two lcores, e.g. "
			"unio-perf -l 0-1 -- --loopback ...\n");
		return PERF_EXIT_USAGE;
	}
	return run(&o);
}
