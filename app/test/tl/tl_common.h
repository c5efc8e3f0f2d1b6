/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef TL_COMMON_H
#define TL_COMMON_H

/*
 * Helpers of the transport conformance suite: a loop over every built driver that has
 * devices, a sender/receiver pair of ifaces, and an rx handler that checks payloads.
 * Checks are gated on the capabilities a driver advertises, never on its name.
 */

#include "unio_test.h"
#include "unio_tl.h"

#define TL_AM_ID 3

/** A sender iface, a receiver iface (the same one when reach is SELF), and an ep. */
struct tl_pair {
	const struct unio_tl_driver *drv;
	struct unio_tl_iface *rx;
	struct unio_tl_iface *tx;
	struct unio_tl_ep *ep;
	uint8_t rx_addr[UNIO_TL_ADDR_MAX];
};

/** What the checking handler saw. */
struct tl_rx {
	uint64_t count;
	uint64_t bad;            /**< messages whose checksum or order was wrong */
	uint64_t next_seq;       /**< expected sequence number (ordered checks) */
	int check_order;
	size_t last_len;
	unio_tl_conn_id_t last_conn;  /**< the connection id the last message came with */
	uint64_t conn_changed;   /**< messages that came with another id than the one before */
};

typedef int (*tl_case_fn_t)(const struct unio_tl_driver *drv, const char *dev);

/** Run @p fn on the first device of every driver that has one; TEST_OK when all pass. */
int tl_for_each_driver(tl_case_fn_t fn);

/**
 * Open a pair on @p drv / @p dev with the environment's configuration.  The sender iface
 * opens on the device named by UNIO_TEST_TL_TX_DEV when that is set (two ports joined by a
 * wire, for PMDs with one queue per port such as af_xdp on a veth), else on @p dev too.
 */
int tl_pair_open(struct tl_pair *p, const struct unio_tl_driver *drv, const char *dev);

/**
 * The device of one side of a pair on @p dev: for the sender (@p tx) the one in
 * UNIO_TEST_TL_TX_DEV when set; enters that side's network namespace first when
 * UNIO_TEST_TL_RX_NETNS / UNIO_TEST_TL_TX_NETNS name one.  NULL when it cannot.
 */
const char *tl_side(const char *dev, bool tx);

/** Close what tl_pair_open opened. */
void tl_pair_close(struct tl_pair *p);

/** Progress both ifaces until @p rx counts @p want messages or ~5 s pass; TEST_OK/FAIL. */
int tl_pair_wait(struct tl_pair *p, struct tl_rx *rx, uint64_t want);

/** Progress both ifaces until @p c completes or ~5 s pass. */
void tl_pair_wait_comp(struct tl_pair *p, struct unio_tl_completion *c);

/**
 * The checking handler (arg: struct tl_rx), which also notes the connection id.  A message
 * is [u64 seq][u64 len][u64 sum][payload...] where sum = test_checksum(payload) and
 * payload = test_fill(len, seq); below 24 bytes it is [u64 seq][test_fill(length - 8,
 * seq)].  Short AMs carry seq as the header.
 */
unio_status_t tl_check_cb(void *arg, const void *data, size_t length, unsigned int flags,
			  unio_tl_conn_id_t conn_id);

/** Build a checked message of @p total bytes (>= 8) with @p seq into @p buf. */
void tl_make_msg(void *buf, size_t total, uint64_t seq);

#endif /* TL_COMMON_H */
