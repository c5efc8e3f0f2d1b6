/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef API_COMMON_H
#define API_COMMON_H

/**
 * @file
 * Helpers of the API tests: contexts with overrides, blocking wrappers that progress until a
 * request completes, connecting over a socket address, and payload checks.
 */

#include <netinet/in.h>
#include <stdbool.h>
#include <sys/types.h>

#include "unio.h"
#include "unio_test.h"

/** A context with @p n overrides given as "NAME", "VALUE" pairs (NULL-terminated). */
unio_context_t *api_ctx(const char *const *overrides);

/** Send and progress until done; returns the final status. */
unio_status_t api_send(unio_worker_t *w, unio_ep_t *ep, const void *buf, size_t len,
		       uint64_t tag, int sync);

/** Receive and progress until done; info filled. */
unio_status_t api_recv(unio_worker_t *w, void *buf, size_t len, uint64_t tag, uint64_t mask,
		       struct unio_recv_info *info);

/** An ep from @p w to @p peer's worker address (may be @p w itself). */
unio_ep_t *api_ep_to_worker(unio_worker_t *w, unio_worker_t *peer, unio_status_t *st);

/**
 * Progress @p w and @p peer (once when they are the same worker) until @p ep, made from a
 * worker address, is connected: its wireup needs both.  False when it never connects.
 */
bool api_ep_connected(unio_worker_t *w, unio_worker_t *peer, const unio_ep_t *ep);

/** A context, two of its workers and an ep from @p a to @p b (see api_pair_open()). */
struct api_pair {
	unio_context_t *ctx;
	unio_worker_t *a, *b;
	unio_ep_t *ep;
};

/**
 * Fill @p p: a context with @p overrides, two workers and an ep a -> b, connected, whose
 * lane is of driver @p drv (unless NULL), as is an iface of b.  TEST_OK, or TEST_FAIL with
 * why logged; either way api_pair_close() undoes what was made.
 */
int api_pair_open(struct api_pair *p, const char *const *overrides, const char *drv);

/** Close the ep and destroy the workers and context of @p p that exist. */
void api_pair_close(struct api_pair *p);

/**
 * Wait for an operation that returned @p st (its request @p req, then freed) while
 * progressing @p a and @p b (once when the same); the final status.
 */
unio_status_t api_op_wait(unio_worker_t *a, unio_worker_t *b, unio_status_t st,
			  unio_request_t *req);

/**
 * Wait for a send that returned *@p sst (request @p sreq) and a receive that returned *@p rst
 * (request @p rreq) while progressing @p a and @p b (once when the same): both statuses
 * final, the requests freed, @p info (may be NULL) filled from the receive's request.
 */
void api_pair_wait(unio_worker_t *a, unio_worker_t *b, unio_status_t *sst,
		   unio_request_t *sreq, unio_status_t *rst, unio_request_t *rreq,
		   struct unio_recv_info *info);

/** unio_put() / unio_get() on @p ep, waited for with api_op_wait(). */
unio_status_t api_put(unio_worker_t *a, unio_worker_t *b, unio_ep_t *ep, const void *buf,
		      size_t len, uint64_t raddr, unio_rkey_t *rk);
unio_status_t api_get(unio_worker_t *a, unio_worker_t *b, unio_ep_t *ep, void *buf,
		      size_t len, uint64_t raddr, unio_rkey_t *rk);

/** 127.0.0.1:@p port. */
struct sockaddr_in api_loopback(int port);

/**
 * Connect to 127.0.0.1:@p port once a socket of this network namespace listens there (up
 * to 10 s): no refused tries, each logged at warning level, while the peer comes up.
 */
unio_ep_t *api_connect(unio_worker_t *w, int port, unio_ep_err_handler_t eh, void *arg,
		       unio_status_t *st);

/** api_connect(), waiting up to @p wait_ms for the listener. */
unio_ep_t *api_connect_within(unio_worker_t *w, int port, int wait_ms,
			      unio_ep_err_handler_t eh, void *arg, unio_status_t *st);

/** What Unio logs between api_log_start() and api_log_end(), in memory. */
struct api_log {
	FILE *f;
	FILE *prev;     /**< the log stream before, restored */
	char *text;
	size_t len;
};

/** Send this process's log (every thread's) to @p l until api_log_end(). */
void api_log_start(struct api_log *l);

/** The log's stream restored; what was logged (malloc'd, "" when nothing: the caller frees). */
char *api_log_end(struct api_log *l);

/**
 * unio_ep_create() once, with what Unio logged meanwhile (at the levels set) in *@p log
 * (malloc'd, "" when nothing; the caller frees it).
 */
unio_ep_t *api_ep_create_logged(unio_worker_t *w, const struct unio_ep_params *p,
				unio_status_t *st, char **log);

/** Listener params: @p handler called with @p arg for connections to *@p a. */
struct unio_listener_params api_listener_params(struct sockaddr_in *a,
						unio_conn_handler_t handler, void *arg);

/** Listen on 127.0.0.1:@p port; accepted eps land in *@p ep_slot. */
unio_listener_t *api_listen(unio_worker_t *w, int port, unio_ep_t **ep_slot,
			    unio_ep_err_handler_t eh, void *arg);

/** The line of unio_worker_print_info() that counts messages dropped from peers. */
#define API_DROPPED_FROM_PEERS "# dropped from peers: "

/**
 * The number after @p line (e.g. API_DROPPED_FROM_PEERS) in unio_worker_print_info() of
 * @p w; UINT64_MAX when there is no such line.
 */
uint64_t api_worker_counter(unio_worker_t *w, const char *line);

struct unio_tl_ep;

/**
 * Send @p n bytes at @p p as AM @p id on transport ep @p tl, bypassing the protocol stage
 * (a forged or malformed message), progressing @p w while there is no room: 0, or 1 when
 * the transport refused it or found no room within a million tries.
 */
int api_raw_am(unio_worker_t *w, struct unio_tl_ep *tl, uint8_t id, const void *p, size_t n);

/**
 * Progress @p w until a listener put an ep into *@p slot or child @p pid exited; the ep,
 * or NULL.
 */
unio_ep_t *api_accept_child(unio_worker_t *w, unio_ep_t *volatile *slot, pid_t pid);

/**
 * Progress @p w until child @p pid exits, killed when @p ms pass; its exit code, or -1 when
 * a signal ended it.  *@p status (unless NULL) gets its wait status.
 */
int api_wait_child(unio_worker_t *w, pid_t pid, int ms, int *status);

/**
 * Progress @p w until child @p pid exits (killed after 30 s); TEST_OK when it exited 0,
 * else TEST_FAIL with @p who and its status logged.
 */
int api_reap_child(unio_worker_t *w, pid_t pid, const char *who);

/** This process, the parent of one child process that connects to it (api_parent_open()). */
struct api_parent {
	unio_context_t *ctx;
	unio_worker_t *w;
	unio_listener_t *l;
	unio_ep_t *ep;          /**< accepted from the child; NULL when it never connected */
	pid_t pid;              /**< the child; -1 when none was spawned */
};

/**
 * Fill @p p: a context with @p overrides, a worker (with an iface of @p drv unless NULL)
 * listening on 127.0.0.1:@p port, child @p child spawned with argv { port, @p arg (unless
 * NULL) }, and its connection accepted, or not (p->ep NULL) once the child exited.
 * TEST_OK once the child was spawned, else TEST_FAIL with why logged; either way
 * api_parent_close() undoes the rest (the child is waited for with api_wait_child()).
 */
int api_parent_open(struct api_parent *p, const char *const *overrides, const char *drv,
		    int port, const char *child, const char *arg);

/**
 * TEST_OK when the child of @p p connected.  Else wait for it (1 s): TEST_SKIP when it
 * exited 77 and no built driver reaches another process of this host
 * (api_no_host_driver()), TEST_FAIL otherwise; logged.
 */
int api_parent_connected(struct api_parent *p);

/** Close the ep and destroy the listener, worker and context of @p p that exist. */
void api_parent_close(struct api_parent *p);

/**
 * The end of a child connected by @p ep: progress @p w until the parent closes (or two
 * million rounds), then close @p ep and destroy @p w and @p ctx; returns 0 (its exit code).
 */
int api_child_end(unio_context_t *ctx, unio_worker_t *w, unio_ep_t *ep);

/**
 * A case of a victim (this process) with endpoints to an honest peer and to a forger M,
 * both children that connect to it over @p drv (see api_third_process()).
 */
struct api_third_case {
	const char *drv;            /**< UNIO_TLS=drv,self; the children must take it */
	const char *const *env;     /**< more "NAME", "VALUE" pairs to set, NULL-terminated */
	/** Pairs set on top just before the peer, then M, is spawned (its own ethdev port),
	 *  or NULL. */
	const char *const *child_env[2];
	const char *peer;           /**< UNIO_TEST_CHILD of the honest peer */
	const char *forger;         /**< UNIO_TEST_CHILD of M */
	const char *who;            /**< the honest peer's name in logs ("A") */
	const char *flag;           /**< a name for a flag file, or NULL for none */
	/** The case, given the ep to the peer, the ep to M, the flag file's path ("" with
	 *  none) and @p arg; TEST_OK or TEST_FAIL. */
	int (*victim)(unio_worker_t *w, unio_ep_t *ep_peer, unio_ep_t *ep_m, const char *flag,
		      void *arg);
	void *arg;
};

/**
 * In a child of api_third_process() (argv port, flag, driver): die with the parent, and
 * connect @p w to it.  The ep, or NULL (logged) when the arguments or @p w are missing, the
 * connect failed or the ep's lane is not of the driver named.
 */
unio_ep_t *api_third_child(unio_worker_t *w, int argc, char **argv);

/**
 * Run case @p c: set the environment; listen; spawn the peer then M (each with argv port,
 * flag file path, driver) and accept each; run the victim (unio logs at CRIT) and close
 * both eps; create the flag file (a peer may wait for it), reap both children, restore
 * the environment, remove the flag.  TEST_OK when the victim and both children passed.
 */
int api_third_process(const struct api_third_case *c);

/** Progress @p w until *@p flag is nonzero or @p ms pass; returns the flag. */
int api_progress_until(unio_worker_t *w, volatile int *flag, int ms);

/**
 * The size classes of the protocol limits of @p ep: 0, 1, each finite limit -1/0/+1 (eager
 * short, single eager, two fragments, rendezvous, split rendezvous, eager zero-copy from
 * and up to), 64 KiB, 1 MiB, and @p big; returns the count written to @p sizes (at most 32).
 */
unsigned int api_size_classes(unio_ep_t *ep, size_t big, size_t *sizes);

/**
 * The tagged echo, driving side: send every size class of @p ep (api_size_classes(), up to
 * @p big) with tags drawn from @p seed, every fourth sync, and receive each echo (any tag)
 * checksummed against what was sent.  TEST_OK or TEST_FAIL.
 */
int api_echo_drive(unio_worker_t *w, unio_ep_t *ep, size_t big, uint64_t seed);

/**
 * The tagged echo, echoing side (the same @p seed): receive each message by exact, masked
 * and wildcard tags, check its tag, length, checksum and the byte after it, send it back.
 */
int api_echo_serve(unio_worker_t *w, unio_ep_t *ep, uint64_t seed);

/**
 * True when no built driver but self has a device under the environment's UNIO_* settings:
 * then, and only then, may a test that needs another worker or process skip on
 * UNIO_ERR_UNREACHABLE (otherwise it is a lane-selection failure).
 */
bool api_no_host_driver(void);

struct unio_tl_iface;

/** The first iface of @p w of driver @p driver (on device @p dev unless NULL), or NULL. */
struct unio_tl_iface *api_worker_iface(unio_worker_t *w, const char *driver, const char *dev);

#endif /* API_COMMON_H */
