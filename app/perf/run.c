/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * unio-perf run modes: serve one client, connect to a server, or --loopback (both sides in
 * this process, each with its own context and worker; the server on the second lcore, or on
 * a plain thread in interactive mode where the main lcore runs the command line).
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE    /* pthread_attr_setaffinity_np */
#endif
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_pause.h>

#include "perf.h"

static int
server_main(void *arg)
{
	struct perf_side *s = arg;
	int rc = perf_side_open(s);

	if (rc == 0)
		rc = perf_server_accept(s);
	if (rc == 0)
		rc = perf_run_server(s);
	perf_side_close(s);
	s->rc = rc;
	__atomic_store_n(&s->finished, 1, __ATOMIC_RELEASE);
	return rc;
}

static void *
server_thread(void *arg)
{
	server_main(arg);
	return NULL;
}

/*
 * A plain thread for a side when no lcore is free (interactive mode): not pinned to the
 * creator's CPU, so that two polling sides never share one core.
 */
int
perf_thread_start(pthread_t *th, void *(*fn)(void *), void *arg)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	pthread_attr_t attr;
	cpu_set_t set;
	int rc;

	CPU_ZERO(&set);
	for (long i = 0; i < n && i < CPU_SETSIZE; i++)
		CPU_SET(i, &set);
	if (pthread_attr_init(&attr) != 0)
		return -1;
	pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	rc = pthread_create(th, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return rc == 0 ? 0 : -1;
}

static int
client_main(struct perf_side *s, uint16_t port)
{
	int rc = perf_side_open(s);

	if (rc == 0)
		rc = perf_client_connect(s, port);
	if (rc == 0)
		rc = perf_run_client(s);
	perf_side_close(s);
	s->rc = rc;
	__atomic_store_n(&s->finished, 1, __ATOMIC_RELEASE);
	return rc;
}

static void
side_init(struct perf_side *s, const struct perf_opts *o, int is_server, int quiet,
	  volatile int *stop, struct perf_live *live)
{
	memset(s, 0, sizeof(*s));
	s->o = o;
	s->is_server = is_server;
	s->quiet = quiet;
	s->stop = stop;
	s->live = live;
}

static int
finish_side(const struct perf_side *s)
{
	perf_report(s);
	if (s->rc == 0 && s->o->json_path != NULL &&
	    perf_write_json(s->o->json_path, s->results, s->n_results) != 0)
		return PERF_EXIT_ERR;
	return s->rc == 0 ? PERF_EXIT_OK : PERF_EXIT_ERR;
}

/* Wait until the loopback server listens (or failed); returns 0 when it listens. */
static int
wait_listening(const struct perf_side *srv)
{
	uint64_t deadline = rte_rdtsc() + (uint64_t)(srv->o->timeout_s * rte_get_tsc_hz());

	while (!__atomic_load_n(&srv->listening, __ATOMIC_ACQUIRE)) {
		if (__atomic_load_n(&srv->finished, __ATOMIC_ACQUIRE) || rte_rdtsc() > deadline) {
			fprintf(stderr, "unio-perf: the loopback server did not start\n");
			return -1;
		}
		rte_delay_us_sleep(1000);
	}
	return 0;
}

/*
 * The server side has its own stop flag: "stop" and SIGINT end the client's measurement,
 * the client then says BYE and the server ends with it.
 */
static int
run_loopback(struct perf_side *cli, struct perf_side *srv, int interactive)
{
	unsigned int lcore = rte_get_next_lcore(-1, 1, 0);
	volatile int srv_stop = 0;
	pthread_t th;
	int rc;

	srv->stop = &srv_stop;
	if (interactive || lcore >= RTE_MAX_LCORE) {
		if (perf_thread_start(&th, server_thread, srv) != 0) {
			fprintf(stderr, "unio-perf: cannot start the server thread\n");
			return PERF_EXIT_ERR;
		}
	} else if (rte_eal_remote_launch(server_main, srv, lcore) != 0) {
		fprintf(stderr, "unio-perf: cannot launch the server on lcore %u\n", lcore);
		return PERF_EXIT_ERR;
	}
	if (wait_listening(srv) == 0) {
		client_main(cli, srv->bound_port);
	} else {
		cli->rc = -1;
	}
	if (cli->rc != 0)
		srv_stop = 1;   /* a server still waiting for a client gives up */
	if (interactive || lcore >= RTE_MAX_LCORE)
		pthread_join(th, NULL);
	else
		rte_eal_wait_lcore(lcore);
	rc = finish_side(cli);
	return rc != PERF_EXIT_OK || srv->rc != 0 ? PERF_EXIT_ERR : PERF_EXIT_OK;
}

/*
 * Run what @p o asks for.  @p cli and @p srv are sides the caller owns (large structs);
 * @p stop ends the run early; @p live is updated as it goes.  Returns an exit code.
 */
int
perf_run(const struct perf_opts *o, struct perf_side *cli, struct perf_side *srv,
	 volatile int *stop, struct perf_live *live, int interactive)
{
	static struct perf_live dummy;

	__atomic_store_n(&live->running, 1, __ATOMIC_RELAXED);
	side_init(cli, o, 0, interactive, stop, live);
	side_init(srv, o, 1, o->loopback || interactive, stop,
		  o->host == NULL && !o->loopback ? live : &dummy);
	if (o->host != NULL) {
		client_main(cli, o->port);
		return finish_side(cli);
	}
	if (!o->loopback) {
		server_main(srv);
		return finish_side(srv);
	}
	return run_loopback(cli, srv, interactive);
}
