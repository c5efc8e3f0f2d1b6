/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * unio-perf interactive mode (-i, --cmdline-file), on DPDK's cmdline library like testpmd:
 *   start | stop | show stats | show config | set test NAME | set size LIST |
 *   set iters N | quit
 * "start" runs the configured test in the background (against HOST, or in loopback when no
 * HOST was given); "stop" ends it early and prints the table.
 */

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmdline.h>
#include <cmdline_parse.h>
#include <cmdline_parse_string.h>
#include <cmdline_socket.h>
#include <rte_common.h>
#include <rte_cycles.h>

#include "perf.h"

struct ia_state {
	struct perf_opts o;             /* what "set" changes */
	struct perf_opts run_o;         /* the running test's snapshot */
	struct perf_side *cli;
	struct perf_side *srv;
	struct perf_live live;
	volatile int stop;
	volatile int finished;
	int rc;
	int started;                    /* a runner thread exists (not joined yet) */
	int have_results;
	pthread_t th;
};

static struct ia_state ia;

static void *
runner(void *arg)
{
	RTE_SET_USED(arg);
	ia.rc = perf_run(&ia.run_o, ia.cli, ia.srv, &ia.stop, &ia.live, 1);
	__atomic_store_n(&ia.finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void
print_results(void)
{
	unsigned int n = __atomic_load_n(&ia.cli->n_results, __ATOMIC_ACQUIRE);

	if (n == 0) {
		printf("no completed size yet\n");
		return;
	}
	perf_print_header(stdout);
	for (unsigned int i = 0; i < n; i++)
		perf_print_row(stdout, &ia.cli->results[i]);
}

static void
join_runner(void)
{
	if (!ia.started)
		return;
	pthread_join(ia.th, NULL);
	ia.started = 0;
	ia.have_results = 1;
}

static void
cmd_start(void)
{
	if (ia.started && !__atomic_load_n(&ia.finished, __ATOMIC_ACQUIRE)) {
		printf("a test is running: stop it first\n");
		return;
	}
	join_runner();
	if (perf_check_supported(&ia.o) != 0) {     /* what the command line refuses */
		printf("not started\n");
		return;
	}
	ia.run_o = ia.o;
	ia.run_o.loopback = ia.o.host == NULL;
	ia.stop = 0;
	ia.finished = 0;
	memset(&ia.live, 0, sizeof(ia.live));
	if (perf_thread_start(&ia.th, runner, NULL) != 0) {
		printf("cannot start the test thread\n");
		return;
	}
	ia.started = 1;
	printf("started %s, %u size(s), %" PRIu64 " iterations each\n",
	       perf_tests[ia.run_o.test].name, ia.run_o.n_sizes, ia.run_o.iters);
}

static void
cmd_stop(void)
{
	if (!ia.started) {
		printf("no test running\n");
		return;
	}
	ia.stop = 1;
	join_runner();
	print_results();
	printf("stopped: %s\n", ia.rc == PERF_EXIT_OK ? "ok" : "failed (see the errors above)");
}

static void
cmd_show_stats(void)
{
	const struct perf_live *l = &ia.live;
	uint64_t done = __atomic_load_n(&l->done, __ATOMIC_RELAXED);
	double secs = (double)(rte_rdtsc() - l->tsc_start) / (double)rte_get_tsc_hz();

	if (ia.started && !__atomic_load_n(&ia.finished, __ATOMIC_ACQUIRE) && l->total == 0)
		printf("starting %s\n", perf_tests[ia.run_o.test].name);
	else if (ia.started && !__atomic_load_n(&ia.finished, __ATOMIC_ACQUIRE))
		printf("running %s: size %" PRIu64 " (%u/%u), %" PRIu64 "/%" PRIu64
		       " iterations in %.2f s\n", perf_tests[ia.run_o.test].name, l->size,
		       l->size_idx + 1, ia.run_o.n_sizes, done, l->total, secs);
	else if (ia.started || ia.have_results)
		printf("finished: %s\n", ia.rc == PERF_EXIT_OK ? "ok" : "failed");
	else
		printf("not started\n");
	if (ia.started || ia.have_results)
		print_results();
}

/* ---- cmdline glue ---- */

struct cmd_word_result {
	cmdline_fixed_string_t word;
};

struct cmd_show_result {
	cmdline_fixed_string_t show;
	cmdline_fixed_string_t what;
};

struct cmd_set_result {
	cmdline_fixed_string_t set;
	cmdline_fixed_string_t what;
	cmdline_fixed_string_t value;
};

static void
word_parsed(void *parsed, struct cmdline *cl, void *data)
{
	struct cmd_word_result *r = parsed;

	RTE_SET_USED(data);
	if (strcmp(r->word, "start") == 0) {
		cmd_start();
	} else if (strcmp(r->word, "stop") == 0) {
		cmd_stop();
	} else {
		if (ia.started) {
			ia.stop = 1;
			join_runner();
		}
		cmdline_quit(cl);
	}
	fflush(stdout);
}

static void
show_parsed(void *parsed, struct cmdline *cl, void *data)
{
	struct cmd_show_result *r = parsed;

	RTE_SET_USED(cl);
	RTE_SET_USED(data);
	if (strcmp(r->what, "stats") == 0)
		cmd_show_stats();
	else
		perf_print_config(&ia.o, stdout);
	fflush(stdout);
}

static void
set_test(const char *v)
{
	int t = perf_test_lookup(v);
	char hint[256];

	if (t < 0) {
		printf("unknown test '%s' (%s)\n", v, perf_test_hint(v, hint, sizeof(hint)));
	} else if (!perf_tests[t].supported) {
		printf("test '%s' is not supported yet\n", v);
	} else {
		ia.o.test = (enum perf_test)t;
		printf("test %s\n", v);
	}
}

static void
set_parsed(void *parsed, struct cmdline *cl, void *data)
{
	struct cmd_set_result *r = parsed;
	char *end;
	unsigned long long n;

	RTE_SET_USED(cl);
	RTE_SET_USED(data);
	if (strcmp(r->what, "test") == 0) {
		set_test(r->value);
	} else if (strcmp(r->what, "size") == 0) {
		if (perf_parse_sizes(r->value, &ia.o) != 0)
			printf("invalid size list '%s'\n", r->value);
		else
			printf("%u size(s)\n", ia.o.n_sizes);
	} else {
		n = strtoull(r->value, &end, 10);
		if (*end != '\0' || n == 0 || r->value[0] < '0' || r->value[0] > '9')
			printf("invalid iteration count '%s'\n", r->value);
		else
			ia.o.iters = n;
	}
	fflush(stdout);
}

static cmdline_parse_token_string_t tok_word =
	TOKEN_STRING_INITIALIZER(struct cmd_word_result, word, "start#stop#quit");
static cmdline_parse_inst_t inst_word = {
	.f = word_parsed,
	.help_str = "start | stop | quit",
	.tokens = { (void *)&tok_word, NULL },
};

static cmdline_parse_token_string_t tok_show =
	TOKEN_STRING_INITIALIZER(struct cmd_show_result, show, "show");
static cmdline_parse_token_string_t tok_show_what =
	TOKEN_STRING_INITIALIZER(struct cmd_show_result, what, "stats#config");
static cmdline_parse_inst_t inst_show = {
	.f = show_parsed,
	.help_str = "show stats | show config",
	.tokens = { (void *)&tok_show, (void *)&tok_show_what, NULL },
};

static cmdline_parse_token_string_t tok_set =
	TOKEN_STRING_INITIALIZER(struct cmd_set_result, set, "set");
static cmdline_parse_token_string_t tok_set_what =
	TOKEN_STRING_INITIALIZER(struct cmd_set_result, what, "test#size#iters");
static cmdline_parse_token_string_t tok_set_value =
	TOKEN_STRING_INITIALIZER(struct cmd_set_result, value, NULL);
static cmdline_parse_inst_t inst_set = {
	.f = set_parsed,
	.help_str = "set test NAME | set size LIST | set iters N",
	.tokens = { (void *)&tok_set, (void *)&tok_set_what, (void *)&tok_set_value, NULL },
};

static cmdline_parse_ctx_t ia_ctx[] = {
	(cmdline_parse_inst_t *)&inst_word,
	(cmdline_parse_inst_t *)&inst_show,
	(cmdline_parse_inst_t *)&inst_set,
	NULL,
};

int
perf_interactive(struct perf_opts *o)
{
	struct cmdline *cl;

	ia.o = *o;
	ia.cli = calloc(1, sizeof(*ia.cli));
	ia.srv = calloc(1, sizeof(*ia.srv));
	if (ia.cli == NULL || ia.srv == NULL) {
		fprintf(stderr, "unio-perf: out of memory\n");
		return PERF_EXIT_ERR;
	}
	if (o->cmdline_file != NULL) {
		/*
		 * cmdline_file_new() writes nothing back: a mistyped command vanished without a
		 * word.  With stdout as its output the script is echoed after the prompt and a
		 * bad line answered ("Command not found", "Bad arguments"), as on a terminal.
		 */
		int fd = open(o->cmdline_file, O_RDONLY);

		cl = fd >= 0 ? cmdline_new(ia_ctx, "unio-perf> ", fd, STDOUT_FILENO) : NULL;
		if (cl == NULL && fd >= 0)
			close(fd);
	} else
		cl = cmdline_stdin_new(ia_ctx, "unio-perf> ");
	if (cl == NULL) {
		fprintf(stderr, "unio-perf: cannot open %s\n",
			o->cmdline_file != NULL ? o->cmdline_file : "the terminal");
		return PERF_EXIT_ERR;
	}
	cmdline_interact(cl);
	if (o->cmdline_file != NULL)
		cmdline_free(cl);
	else
		cmdline_stdin_exit(cl);
	if (ia.started) {
		ia.stop = 1;
		join_runner();
	}
	free(ia.cli);
	free(ia.srv);
	return ia.have_results && ia.rc != PERF_EXIT_OK ? PERF_EXIT_ERR : PERF_EXIT_OK;
}
