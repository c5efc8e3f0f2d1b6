/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hello_world: the smallest Unio client / server over a socket address.
 *
 *   hello_world server PORT          wait for one client, answer its greeting, exit
 *   hello_world client HOST PORT     greet the server, print its answer, exit
 *
 * Both sides: a context, a worker, then (server) a listener whose handler accepts the
 * connection request, or (client) an endpoint from the server's address.  Messages are
 * tagged; the server receives with a wildcard tag and answers with the tag it got + 1.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <unio.h>

#define GREETING "hello, world"

static unio_ep_t *accepted;

/* The listener's handler: accept every connection request. */
static void
on_connection(unio_conn_request_t *cr, void *arg)
{
	struct unio_ep_params p = { .field_mask = UNIO_EP_PARAM_CONN_REQUEST,
				    .conn_request = cr };
	unio_status_t st;

	accepted = unio_ep_create(arg, &p, &st);
	if (accepted == NULL)
		fprintf(stderr, "accept: %s\n", unio_status_string(st));
}

/* Start a receive and progress until it completes (unio_request_wait does the loop). */
static unio_status_t
recv_blocking(unio_worker_t *w, void *buf, size_t len, uint64_t tag, uint64_t mask,
	      struct unio_recv_info *info)
{
	struct unio_request_param p = { .field_mask = UNIO_REQ_PARAM_RECV_INFO, .recv_info = info };
	unio_request_t *req;
	unio_status_t st = unio_tag_recv(w, buf, len, tag, mask, &p, &req);

	return st == UNIO_INPROGRESS ? unio_request_wait(w, req, info) : st;
}

static unio_status_t
send_blocking(unio_worker_t *w, unio_ep_t *ep, const void *buf, size_t len, uint64_t tag)
{
	unio_request_t *req;
	unio_status_t st = unio_tag_send(ep, buf, len, tag, NULL, &req);

	return st == UNIO_INPROGRESS ? unio_request_wait(w, req, NULL) : st;
}

static int
server(unio_worker_t *w, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct unio_listener_params lp = {
		.field_mask = UNIO_LISTENER_PARAM_SOCKADDR | UNIO_LISTENER_PARAM_HANDLER,
		.sockaddr = (struct sockaddr *)&a, .addrlen = sizeof(a),
		.conn_handler = on_connection, .arg = w,
	};
	struct unio_recv_info info;
	unio_listener_t *l;
	unio_status_t st;
	char buf[64] = "";

	l = unio_listener_create(w, &lp, &st);
	if (l == NULL) {
		fprintf(stderr, "listen on port %d: %s\n", port, unio_status_string(st));
		return 1;
	}
	while (accepted == NULL)
		unio_worker_progress(w);
	st = recv_blocking(w, buf, sizeof(buf) - 1, 0, 0, &info);
	if (st == UNIO_OK)
		st = send_blocking(w, accepted, buf, info.length, info.tag + 1);
	printf("server: got \"%s\" (tag %llu), answered: %s\n", buf,
	       (unsigned long long)info.tag, unio_status_string(st));
	unio_ep_close(accepted, UNIO_EP_CLOSE_FLUSH, NULL);
	unio_listener_destroy(l);
	return st == UNIO_OK && strcmp(buf, GREETING) == 0 ? 0 : 1;
}

static unio_ep_t *
connect_retry(unio_worker_t *w, const char *host, int port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	struct timespec pause = { 0, 20 * 1000 * 1000 };
	/* the library says why through err (and leaves the saying to us: no log line a try) */
	struct unio_ep_error err = { .sys_errno = ECONNREFUSED };
	struct unio_ep_params p = { .field_mask = UNIO_EP_PARAM_SOCKADDR |
						  UNIO_EP_PARAM_ERR_INFO, .err_info = &err };
	unio_status_t st = UNIO_ERR_UNREACHABLE;
	unio_ep_t *ep = NULL;
	char port_s[16];
	int gai;

	snprintf(port_s, sizeof(port_s), "%d", port);
	gai = getaddrinfo(host, port_s, &hints, &ai);
	if (gai != 0) {
		fprintf(stderr, "connect: cannot resolve '%s': %s\n", host, gai_strerror(gai));
		return NULL;
	}
	p.sockaddr = ai->ai_addr;
	p.addrlen = ai->ai_addrlen;
	/* the server may not be listening yet: retry for a few seconds */
	for (int i = 0; i < 250 && ep == NULL && err.sys_errno == ECONNREFUSED; i++) {
		ep = unio_ep_create(w, &p, &st);
		if (ep == NULL)
			nanosleep(&pause, NULL);
	}
	freeaddrinfo(ai);
	if (ep == NULL)
		fprintf(stderr, "%s\n",
			err.reason[0] != '\0' ? err.reason : unio_status_string(st));
	return ep;
}

static int
client(unio_worker_t *w, const char *host, int port)
{
	unio_ep_t *ep = connect_retry(w, host, port);
	struct unio_recv_info info;
	unio_status_t st;
	char buf[64] = "";

	if (ep == NULL)
		return 1;
	st = send_blocking(w, ep, GREETING, strlen(GREETING), 41);
	if (st == UNIO_OK)
		st = recv_blocking(w, buf, sizeof(buf) - 1, 42, UINT64_MAX, &info);
	printf("client: server answered \"%s\": %s\n", buf, unio_status_string(st));
	unio_ep_close(ep, UNIO_EP_CLOSE_FLUSH, NULL);
	return st == UNIO_OK && strcmp(buf, GREETING) == 0 ? 0 : 1;
}

/* A port number, or -1 after saying what is wrong with it. */
static int
port_arg(const char *prog, const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno == 0 && end != s && *end == '\0' && v >= 1 && v <= 65535)
		return (int)v;
	fprintf(stderr, "%s: invalid PORT '%s' (1 to 65535)\n", prog, s);
	return -1;
}

int
main(int argc, char **argv)
{
	int is_server = argc == 3 && strcmp(argv[1], "server") == 0;
	unio_context_t *ctx;
	unio_worker_t *w;
	unio_status_t st;
	int port, rc;

	if (!is_server && !(argc == 4 && strcmp(argv[1], "client") == 0)) {
		fprintf(stderr, "usage: %s server PORT | client HOST PORT\n", argv[0]);
		return 2;
	}
	port = port_arg(argv[0], argv[argc - 1]);
	if (port < 0)
		return 2;
	ctx = unio_context_create(NULL, &st);
	w = ctx != NULL ? unio_worker_create(ctx, NULL, &st) : NULL;
	if (w == NULL) {
		fprintf(stderr, "init: %s\n", unio_status_string(st));
		return 1;
	}
	if (is_server)
		rc = server(w, port);
	else
		rc = client(w, argv[2], port);
	unio_worker_destroy(w);
	unio_context_destroy(ctx);
	return rc;
}
