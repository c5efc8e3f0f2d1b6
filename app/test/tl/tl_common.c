/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers of the transport conformance suite (see tl_common.h). */

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tl_common.h"
#include "unio_env.h"

int
tl_for_each_driver(tl_case_fn_t fn)
{
	const struct unio_config *cfg = unio_config_env();
	unsigned int tested = 0;

	TEST_ASSERT(cfg != NULL, "malformed UNIO_* environment");
	/* EAL ports for the ethdev driver: UNIO_EAL_ARGS="--vdev=net_af_packet0,iface=..." */
	if (strcmp(cfg->eal_args, "none") != 0)
		TEST_ASSERT_STATUS(unio_env_init_default(), UNIO_OK);
	for (unsigned int i = 0; i < unio_tl_driver_count(); i++) {
		const struct unio_tl_driver *drv = unio_tl_driver_get(i);
		struct unio_tl_device_info devs[UNIO_TL_MAX_DEVICES];
		unsigned int n = 0;
		char reason[128];
		int r;

		if (unio_tl_query_devices(drv, cfg, devs, &n, reason, sizeof(reason)) !=
		    UNIO_OK || n == 0) {
			TEST_LOG("driver %s: no device (%s), not tested", drv->name, reason);
			continue;
		}
		TEST_LOG("driver %s device %s (%s)", drv->name, devs[0].name, devs[0].detail);
		r = fn(drv, devs[0].name);
		if (r == TEST_FAIL) {
			TEST_LOG("driver %s: FAILED", drv->name);
			return TEST_FAIL;
		}
		tested++;
	}
	TEST_ASSERT(tested > 0, "no driver with a device");
	return TEST_OK;
}

static int
open_iface(const struct unio_tl_driver *drv, const char *dev, struct unio_tl_iface **iface)
{
	struct unio_tl_iface_params params = {
		.config = unio_config_env(), .dev_name = dev, .cpu = -1,
	};

	TEST_ASSERT_STATUS(unio_tl_iface_open(drv, &params, iface), UNIO_OK);
	return TEST_OK;
}

const char *
tl_side(const char *dev, bool tx)
{
	const char *tx_dev = getenv("UNIO_TEST_TL_TX_DEV");
	const char *ns = getenv(tx ? "UNIO_TEST_TL_TX_NETNS" : "UNIO_TEST_TL_RX_NETNS");

	/* sockets keep the namespace they were made in */
	if (ns != NULL && *ns != '\0' && test_enter_netns(ns) != 0) {
		TEST_LOG("cannot enter network namespace %s", ns);
		return NULL;
	}
	return tx && tx_dev != NULL && *tx_dev != '\0' ? tx_dev : dev;
}

int
tl_pair_open(struct tl_pair *p, const struct unio_tl_driver *drv, const char *dev)
{
	struct unio_tl_ep_params ep_params = { 0 };
	const char *rx_dev = tl_side(dev, false), *tx_dev;

	memset(p, 0, sizeof(*p));
	p->drv = drv;
	if (rx_dev == NULL || open_iface(drv, rx_dev, &p->rx) != TEST_OK)
		return TEST_FAIL;
	tx_dev = tl_side(dev, true);
	if (p->rx->attr.reach == UNIO_TL_REACH_SELF)
		p->tx = p->rx;
	else if (tx_dev == NULL || open_iface(drv, tx_dev, &p->tx) != TEST_OK)
		goto close;
	TEST_ASSERT(p->rx->attr.iface_addr_len <= sizeof(p->rx_addr), "address too long");
	if (unio_tl_iface_get_address(p->rx, p->rx_addr) != UNIO_OK)
		goto close;
	ep_params.iface_addr = p->rx_addr;
	ep_params.iface_addr_len = p->rx->attr.iface_addr_len;
	if (unio_tl_ep_create(p->tx, &ep_params, &p->ep) != UNIO_OK) {
		TEST_LOG("ep_create failed");
		goto close;
	}
	return TEST_OK;
close:
	tl_pair_close(p);
	return TEST_FAIL;
}

void
tl_pair_close(struct tl_pair *p)
{
	unio_tl_ep_destroy(p->ep);
	if (p->tx != p->rx)
		unio_tl_iface_close(p->tx);
	unio_tl_iface_close(p->rx);
	memset(p, 0, sizeof(*p));
}

int
tl_pair_wait(struct tl_pair *p, struct tl_rx *rx, uint64_t want)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (rx->count < want) {
		unio_tl_iface_progress(p->rx);
		if (p->tx != p->rx)
			unio_tl_iface_progress(p->tx);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 5) {
			TEST_LOG("only %" PRIu64 " of %" PRIu64 " messages arrived", rx->count,
				 want);
			return TEST_FAIL;
		}
	}
	TEST_ASSERT_EQ(rx->count, want);
	return TEST_OK;
}

void
tl_pair_wait_comp(struct tl_pair *p, struct unio_tl_completion *c)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (c->count != 0) {
		unio_tl_iface_progress(p->tx);
		if (p->tx != p->rx)
			unio_tl_iface_progress(p->rx);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 5)
			return;
	}
}

void
tl_make_msg(void *buf, size_t total, uint64_t seq)
{
	uint64_t h[3] = { seq, total - sizeof(h), 0 };

	if (total < sizeof(h)) {   /* [seq][pattern of seq] */
		memcpy(buf, &seq, sizeof(seq));
		test_fill((uint8_t *)buf + sizeof(seq), total - sizeof(seq), seq);
		return;
	}
	test_fill((uint8_t *)buf + sizeof(h), h[1], seq);
	h[2] = test_checksum((uint8_t *)buf + sizeof(h), h[1]);
	memcpy(buf, h, sizeof(h));
}

static unio_status_t
short_check(struct tl_rx *rx, const void *data, size_t length, uint64_t seq)
{
	uint8_t want[24];

	test_fill(want, length - sizeof(seq), seq);
	if (memcmp(want, (const uint8_t *)data + sizeof(seq), length - sizeof(seq)) != 0)
		rx->bad++;
	return UNIO_OK;
}

unio_status_t
tl_check_cb(void *arg, const void *data, size_t length, unsigned int flags,
	    unio_tl_conn_id_t conn_id)
{
	struct tl_rx *rx = arg;
	uint64_t h[3];

	RTE_SET_USED(flags);
	if (rx->count != 0 && conn_id != rx->last_conn)
		rx->conn_changed++;
	rx->last_conn = conn_id;
	rx->count++;
	rx->last_len = length;
	if (length < sizeof(uint64_t)) {
		rx->bad++;
		return UNIO_OK;
	}
	memcpy(h, data, length < sizeof(h) ? sizeof(uint64_t) : sizeof(h));
	if (rx->check_order && h[0] != rx->next_seq)
		rx->bad++;
	rx->next_seq = h[0] + 1;
	if (length < sizeof(h))
		return short_check(rx, data, length, h[0]);
	if (h[1] != length - sizeof(h) ||
	    test_checksum((const uint8_t *)data + sizeof(h), h[1]) != h[2])
		rx->bad++;
	return UNIO_OK;
}
