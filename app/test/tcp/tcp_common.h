/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef TCP_COMMON_H
#define TCP_COMMON_H

/*
 * Helpers of the tcp driver tests: open an iface from the environment's configuration,
 * exchange addresses as hex through pipes, and the two scenarios (a checksummed stream of
 * short / bcopy / zcopy messages of every size class; put/get with bounds) that run between
 * processes, over loopback or between network namespaces.
 */

#include <stdbool.h>
#include <stdint.h>

#include "unio_config_priv.h"
#include "unio_tl.h"
#include "unio_tl_tcp.h"

/* AM ids the scenarios use. */
#define T_AM_HELLO   0   /* payload: the sender's iface address */
#define T_AM_DATA    1   /* [seq u64][checksum u64][body] */
#define T_AM_DONE    2   /* hdr: messages sent */
#define T_AM_RESULT  3   /* hdr: messages received ok | errors << 32 */
#define T_AM_RAW     5   /* the fuzzer's one well-formed frame */

#define T_REGION_SIZE (1 << 20)
#define T_REGION_SEED 7

struct tpeer {
	struct unio_config cfg;
	struct unio_tl_iface *iface;
	struct unio_tl_ep *ep;          /* to the other side, once known */
	uint8_t addr[UNIO_TL_ADDR_MAX];
	/* rx state of the stream */
	uint64_t rx_next;               /* next sequence number expected */
	uint64_t rx_bad;                /* out of order or bad checksum */
	uint64_t done_count;            /* T_AM_DONE's count, UINT64_MAX until it came */
	uint64_t result;                /* T_AM_RESULT's header, UINT64_MAX until it came */
	uint64_t raw_frames;
	int ep_errors;
	unio_status_t last_err;
	uint8_t peer_addr[UNIO_TL_ADDR_MAX];
	bool peer_known;
	/* registered region (server) */
	uint8_t *region;
	struct unio_tl_memh memh;
};

/* Open a tcp iface on @p dev with the environment's UNIO_* values; 0 or -1. */
int tpeer_open(struct tpeer *p, const char *dev);
/*
 * The same with configuration rows set on the peer's own copy: @p set holds name, value
 * pairs (UNIO_ optional), NULL-terminated.  The environment is parsed once per process,
 * so setenv() between two opens changes nothing.
 */
int tpeer_open_set(struct tpeer *p, const char *dev, const char *const *set);
void tpeer_close(struct tpeer *p);
/* Progress until @p cond(p) or @p ms pass; true when the condition holds. */
bool tpeer_wait(struct tpeer *p, bool (*cond)(struct tpeer *), int ms);
/* Register the region (pattern T_REGION_SEED) and pack its key as hex into @p rkey_hex. */
int tpeer_region(struct tpeer *p, char *rkey_hex, size_t len);
/*
 * Register @p size zeroed bytes as @p b's region (tpeer_close() deregisters and frees it)
 * and unpack its key on @p a's ep into @p rk; 0 or -1.
 */
int tpeer_region_key(struct tpeer *a, struct tpeer *b, size_t size, struct unio_tl_rkey *rk);
int tpeer_connect(struct tpeer *p, const uint8_t *addr);

void t_hex(const void *buf, size_t len, char *out);
int t_unhex(const char *hex, void *buf, size_t len);

/* Send @p count data messages of every class and size, then DONE; 0 on success. */
int t_stream_send(struct tpeer *p, unsigned int count);
/* Put/get scenario against the peer's region (key in hex); 0 on success. */
int t_rma_run(struct tpeer *p, const char *rkey_hex);

/* Serve (server side) until the client's DONE was answered, or @p ms pass; 0 on success. */
int t_serve(struct tpeer *p, int ms);

/* Spawn a child of this binary inside network namespace @p ns (NULL: here). */
pid_t t_spawn_ns(const char *ns, const char *name, const char *const *args);
/* Read one line from @p fd within @p ms; 0 or -1. */
int t_read_line(int fd, char *buf, size_t len, int ms);

#endif /* TCP_COMMON_H */
