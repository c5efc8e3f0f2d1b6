/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Split rendezvous (receiver pulls half, sender puts half): chosen on a host lane with the
 * auto (or measure) scheme only, from UNIO_RNDV_SPLIT_MIN (auto: 64 KiB; 256 KiB under auto
 * on an AMD CPU), and not on a lane whose target driver carries put and get (tcp: a plain
 * get there); UNIO_RNDV_SCHEME=split forces it, another forced scheme keeps it off.  The
 * data path itself is covered, checksummed, by
 * api_tag_two_workers_sizes and api_mp_tag_sizes (64 KiB, 1 MiB and 64 MiB messages go
 * through it on shm), and from 32 KiB by api_mp_tag_sizes_split_low.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_common.h"
#include "unio_cpu.h"
#include "unio_proto.h"
#include "unio_test.h"

static int
selection_has(const char *const *ovr, const char *want, int expect)
{
	unio_context_t *ctx = api_ctx(ovr);
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int found;

	TEST_ASSERT(ctx != NULL, "context");
	f = open_memstream(&text, &len);
	TEST_ASSERT(f != NULL, "memstream");
	unio_proto_print_selection(ctx, "host", f);
	fclose(f);
	found = text != NULL && strstr(text, want) != NULL;
	TEST_LOG("selection:\n%s", text != NULL ? text : "");
	free(text);
	unio_context_destroy(ctx);
	TEST_ASSERT(found == expect, "\"%s\" %s", want, expect ? "missing" : "printed");
	return TEST_OK;
}

UNIO_TEST(api_rndv_split_selection, fast)
{
	static const char *const dflt[] = { "TLS", "shm,self", NULL };
	static const char *const get[] = { "TLS", "shm,self", "RNDV_SCHEME", "get", NULL };
	static const char *const pipe[] = { "TLS", "shm,self", "RNDV_SCHEME", "pipeline", NULL };
	static const char *const big[] = { "TLS", "shm,self", "RNDV_THRESH", "300000", NULL };
	static const char *const high[] = { "TLS", "shm,self", "RNDV_SPLIT_MIN", "256k", NULL };
	static const char *const never[] = { "TLS", "shm,self", "RNDV_SPLIT_MIN", "inf", NULL };
	static const char *const below[] = { "TLS", "shm,self", "RNDV_SPLIT_MIN", "1k",
					     "RNDV_THRESH", "40000", NULL };

	static const char *const meas[] = { "TLS", "shm,self", "RNDV_SCHEME", "measure",
					    "RNDV_SPLIT_MIN", "64k", NULL };
	/* auto: the pipeline below 256 KiB on an AMD CPU, by measure below 64 KiB elsewhere */
	const char *dflt_line = unio_cpu_vendor() == UNIO_CPU_AMD ?
		"..inf: rendezvous pipeline, split get / put from 262144 (shm)" :
		"..inf: rendezvous get or pipeline by measure, split get / put from 65536 (shm)";

	TEST_ASSERT_EQ(selection_has(dflt, dflt_line, 1), TEST_OK);
	TEST_ASSERT_EQ(selection_has(meas, "..inf: rendezvous get or pipeline by measure, split "
				     "get / put from 65536 (shm)", 1), TEST_OK);
	TEST_ASSERT_EQ(selection_has(get, "split", 0), TEST_OK);
	TEST_ASSERT_EQ(selection_has(get, "..inf: rendezvous get (shm)", 1), TEST_OK);
	TEST_ASSERT_EQ(selection_has(pipe, "split", 0), TEST_OK);
	/* a threshold above 64 KiB: the split starts there, no pipelined range */
	TEST_ASSERT_EQ(selection_has(big, "300000..inf: rendezvous split get / put (shm)", 1),
		       TEST_OK);
	/* UNIO_RNDV_SPLIT_MIN moves the split, never below the rendezvous threshold */
	TEST_ASSERT_EQ(selection_has(high, "split get / put from 262144 (shm)", 1), TEST_OK);
	TEST_ASSERT_EQ(selection_has(never, "split", 0), TEST_OK);
	TEST_ASSERT_EQ(selection_has(below, "40000..inf: rendezvous split get / put (shm)", 1),
		       TEST_OK);
	return TEST_OK;
}

/*
 * tcp on one host: the put and the get both travel through the one connection and the
 * target's driver carries both out, so a split or a pipeline only adds frames and round
 * trips: the auto scheme pulls with gets; "split" still forces the split.
 */
UNIO_TEST(api_rndv_tcp_selection, fast)
{
	static const char *const dflt[] = { "TLS", "tcp,self", "NET_DEVICES", "lo", NULL };
	static const char *const split[] = { "TLS", "tcp,self", "NET_DEVICES", "lo",
					     "RNDV_SCHEME", "split", NULL };
	static const char *const shm_split[] = { "TLS", "shm,self", "RNDV_SCHEME", "split",
						 NULL };

	TEST_ASSERT_EQ(selection_has(dflt, "..inf: rendezvous get (tcp)", 1), TEST_OK);
	TEST_ASSERT_EQ(selection_has(dflt, "split", 0), TEST_OK);
	TEST_ASSERT_EQ(selection_has(dflt, "pipeline", 0), TEST_OK);
	/* tcp's rendezvous threshold is above 64 KiB: the forced split starts with it */
	TEST_ASSERT_EQ(selection_has(split, "..inf: rendezvous split get / put (tcp)", 1),
		       TEST_OK);
	TEST_ASSERT_EQ(selection_has(shm_split,
				     "rendezvous get, split get / put from 65536 (shm)", 1),
		       TEST_OK);
	return TEST_OK;
}
