/* SPDX-License-Identifier: BSD-3-Clause */
/* unio-info: the protocol selection table (-e) and the device list (-d) follow the drivers and
 * the configuration. */

#include <unistd.h>

#include "unio_tl.h"
#include "unio_test.h"

/* The warning a UNIO_TLS name gets when no transport driver of this build has it. */
#define NO_DRIVER(name) \
	"UNIO WARNING: UNIO_TLS: '" name "' names no transport driver of this build ("

/* Skip the test unless drivers @p a and @p b are built. */
#define NEED_DRIVERS(a, b) do { \
	if (unio_tl_driver_find(a) == NULL || unio_tl_driver_find(b) == NULL) \
		TEST_SKIP_BECAUSE("the " a " or the " b " driver is not built"); \
} while (0)

/* unio-info -e host under the environment assignments @p env: its exit code, output in @p out */
static int
info_host_with(char *out, size_t len, const char *env)
{
	return test_capture(out, len, "%s %s/app/info/unio-info -e host", env, test_build_dir());
}

UNIO_TEST(info_selection_table, fast)
{
	static char out[16384];
	int r;

	if (unio_tl_driver_find("shm") == NULL)
		TEST_SKIP_BECAUSE("the shm driver is not built");
	r = test_capture(out, sizeof(out), "%s/app/info/unio-info -e host", test_build_dir());
	TEST_ASSERT(r == 0, "%s", out);
	TEST_ASSERT(strstr(out, "tag messages to a host peer:\n  0..") != NULL, "%s", out);
	TEST_ASSERT(strstr(out, ": eager short (shm)") != NULL, "%s", out);
	TEST_ASSERT(strstr(out, "..inf: rendezvous") != NULL, "%s", out);
	TEST_ASSERT(strstr(out, "self peer") == NULL, "only the class asked for: %s", out);

	/* the threshold variable moves the rendezvous boundary */
	r = info_host_with(out, sizeof(out), "UNIO_RNDV_THRESH=100k");
	TEST_ASSERT(r == 0 && strstr(out, "102400..inf: rendezvous") != NULL, "%s", out);
	r = info_host_with(out, sizeof(out), "UNIO_RNDV_THRESH=inf");
	TEST_ASSERT(r == 0 && strstr(out, "rendezvous") == NULL, "%s", out);

	/* with only self allowed nothing reaches another process */
	r = info_host_with(out, sizeof(out), "UNIO_TLS=self");
	TEST_ASSERT(r == 0 && strstr(out, "no driver reaches a host peer") != NULL, "%s", out);

	r = test_capture(out, sizeof(out), "%s/app/info/unio-info -e bogus", test_build_dir());
	TEST_ASSERT(r == 2 && strstr(out, "unknown peer class 'bogus'") != NULL, "%s", out);
	r = test_capture(out, sizeof(out), "%s/app/info/unio-info -e", test_build_dir());
	TEST_ASSERT(r == 0 && strstr(out, "self peer") != NULL && strstr(out, "net peer") != NULL,
		    "%s", out);
	return TEST_OK;
}

/*
 * unio-info -d lists the ethdev ports that UNIO_EAL_ARGS creates, filtered by
 * UNIO_NET_DEVICES as the driver opens them: two memif server ports, then one allowed by
 * name, then one denied.
 */
UNIO_TEST(info_ethdev_net_devices, mp)
{
	static char out[32768];
	char eal[256];
	int r;

	if (unio_tl_driver_find("ethdev") == NULL)
		TEST_SKIP_BECAUSE("the ethdev driver is not built");
	snprintf(eal, sizeof(eal), "UNIO_EAL_ARGS='--vdev=net_memif0,role=server,"
		 "socket=/tmp/unio-info-%d.0 --vdev=net_memif1,role=server,"
		 "socket=/tmp/unio-info-%d.1'", (int)getpid(), (int)getpid());
	r = test_capture(out, sizeof(out), "%s %s/app/info/unio-info -d", eal, test_build_dir());
	TEST_ASSERT(r == 0 && strstr(out, "device net_memif0: network") != NULL &&
		    strstr(out, "device net_memif1: network") != NULL, "both ports: %s", out);
	r = test_capture(out, sizeof(out), "%s UNIO_NET_DEVICES=net_memif1 %s/app/info/unio-info "
			 "-d", eal, test_build_dir());
	TEST_ASSERT(r == 0 && strstr(out, "device net_memif0:") == NULL &&
		    strstr(out, "device net_memif1: network") != NULL, "allowed by name: %s", out);
	r = test_capture(out, sizeof(out), "%s UNIO_NET_DEVICES=^net_memif1 "
			 "%s/app/info/unio-info -d", eal, test_build_dir());
	TEST_ASSERT(r == 0 && strstr(out, "device net_memif0: network") != NULL &&
		    strstr(out, "device net_memif1:") == NULL, "denied by name: %s", out);
	test_system("rm -f /tmp/unio-info-%d.0 /tmp/unio-info-%d.1", (int)getpid(),
		    (int)getpid());
	return TEST_OK;
}

/*
 * A UNIO_TLS typo: the context warns about the name that matches no driver, and when
 * nothing is left the error says, driver by driver, why it has no device (it used to say
 * only "no transport driver has a usable device (UNIO_TLS?)").
 */
UNIO_TEST(info_tls_typo, fast)
{
	static char out[16384];
	int r;

	NEED_DRIVERS("shm", "self");
	r = info_host_with(out, sizeof(out), "UNIO_TLS=tpc");
	TEST_ASSERT(r == 1 && strstr(out, NO_DRIVER("tpc")) != NULL &&
		    strstr(out, "UNIO ERR: no transport driver has a usable device: ") != NULL &&
		    strstr(out, "shm: not allowed by UNIO_TLS") != NULL &&
		    strstr(out, "self: not allowed by UNIO_TLS") != NULL, "%s", out);
	/* a typo beside a good name: the good one works, the typo is still reported */
	r = info_host_with(out, sizeof(out), "UNIO_TLS=shm,tpc");
	TEST_ASSERT(r == 0 && strstr(out, "'tpc' names no transport driver") != NULL &&
		    strstr(out, ": eager short (shm)") != NULL, "%s", out);
	r = info_host_with(out, sizeof(out), "UNIO_TLS=shm");
	TEST_ASSERT(r == 0 && strstr(out, "UNIO WARNING") == NULL, "%s", out);
	/* "all" in a list allowed nothing; now the value is refused */
	r = info_host_with(out, sizeof(out), "UNIO_TLS=all,tpc");
	TEST_ASSERT(r == 1 && strstr(out, "UNIO_TLS: invalid value 'all,tpc'") != NULL, "%s",
		    out);
	return TEST_OK;
}

/*
 * unio-info -d checks UNIO_TLS as a context does (it said nothing of a typo and listed every
 * driver "not allowed"), and a malformed UNIO_* value is one line, the library's (the tool
 * printed it a second time).
 */
UNIO_TEST(info_config_said_once, fast)
{
	static const char *const opts[] = { "-c", "-d", "-e host" };
	static char out[16384];
	int r;

	r = test_capture(out, sizeof(out), "UNIO_TLS=tpc %s/app/info/unio-info -d",
			 test_build_dir());
	TEST_ASSERT(r == 0 && test_count(out, NO_DRIVER("tpc")) == 1 &&
		    strstr(out, "not allowed by UNIO_TLS") != NULL, "%s", out);
	r = test_capture(out, sizeof(out), "UNIO_TLS=posix,tcp %s/app/info/unio-info -d",
			 test_build_dir());
	TEST_ASSERT(r == 0 && test_count(out, "): UCX's posix is Unio's shm\n") == 1, "%s", out);
	r = test_capture(out, sizeof(out), "%s/app/info/unio-info -d", test_build_dir());
	TEST_ASSERT(r == 0 && strstr(out, "UNIO WARNING") == NULL, "%s", out);
	for (unsigned int i = 0; i < RTE_DIM(opts); i++) {
		r = test_capture(out, sizeof(out), "UNIO_TCP_SNDBUF=abc %s/app/info/unio-info %s",
				 test_build_dir(), opts[i]);
		TEST_ASSERT(r == 1 && test_count(out, "TCP_SNDBUF: invalid value 'abc'") == 1 &&
			    strstr(out, "UNIO ERR: UNIO_TCP_SNDBUF: invalid value 'abc': expected "
				   "a size") != NULL, "unio-info %s: exit %d:\n%s", opts[i], r,
			    out);
	}
	return TEST_OK;
}

/*
 * A UCX user's values: UCX's transport names in UNIO_TLS are answered with Unio's driver for
 * the job (or that it has none), and a UNIO_NET_DEVICES name that matches no device (an
 * absent interface, UCX's "mlx5_0:1") is reported instead of leaving the host unreachable.
 */
UNIO_TEST(info_ucx_names, fast)
{
	static char out[16384];
	int r;

	NEED_DRIVERS("shm", "tcp");
	r = info_host_with(out, sizeof(out), "UNIO_TLS=posix,tcp");
	TEST_ASSERT(r == 0 && strstr(out, NO_DRIVER("posix")) != NULL &&
		    strstr(out, "): UCX's posix is Unio's shm\n") != NULL, "%s", out);
	r = info_host_with(out, sizeof(out), "UNIO_TLS=rc_mlx5,shm");
	TEST_ASSERT(r == 0 && strstr(out, "UCX's rc_mlx5 is an RDMA transport, which Unio has "
				     "no driver for yet") != NULL, "%s", out);
	r = info_host_with(out, sizeof(out), "UNIO_NET_DEVICES=mlx5_0:1");
	TEST_ASSERT(r == 0 && strstr(out, "UNIO WARNING: UNIO_NET_DEVICES: 'mlx5_0:1' names no "
				     "usable network device") != NULL &&
		    strstr(out, "UCX's DEVICE:PORT form is not Unio's") != NULL, "%s", out);
	r = info_host_with(out, sizeof(out), "UNIO_NET_DEVICES=lo,nosuch9");
	TEST_ASSERT(r == 0 && strstr(out, "'nosuch9' names no usable network device") != NULL &&
		    strstr(out, "'lo' names") == NULL && strstr(out, "DEVICE:PORT") == NULL,
		    "%s", out);
	/* no word when the names match, when they deny, or when no network driver may run */
	r = info_host_with(out, sizeof(out), "UNIO_NET_DEVICES=l?");
	TEST_ASSERT(r == 0 && strstr(out, "UNIO WARNING") == NULL, "%s", out);
	r = info_host_with(out, sizeof(out), "UNIO_NET_DEVICES=^nosuch9");
	TEST_ASSERT(r == 0 && strstr(out, "UNIO WARNING") == NULL, "%s", out);
	r = info_host_with(out, sizeof(out), "UNIO_TLS=shm UNIO_NET_DEVICES=nosuch9");
	TEST_ASSERT(r == 0 && strstr(out, "UNIO WARNING") == NULL, "%s", out);
	return TEST_OK;
}

/*
 * UNIO_LOG_LEVEL=debug shows Unio's debug logs, not EAL's: EAL follows up to info (its
 * debug level printed some 550 lines of driver loading first), errors only at warn.
 */
UNIO_TEST(info_log_level_eal, fast)
{
	static char out[65536];
	int r, eal_lines = 0;

	r = test_capture(out, sizeof(out), "UNIO_LOG_LEVEL=debug %s/app/info/unio-info -e self",
			 test_build_dir());
	TEST_ASSERT(r == 0 && strstr(out, "UNIO INFO: EAL initialised: ") != NULL &&
		    strstr(out, " --log-level=lib.*:7\n") != NULL, "%s", out);
	for (const char *p = out; (p = strstr(p, "EAL: ")) != NULL; p++)
		eal_lines++;
	TEST_ASSERT(eal_lines < 50, "%d EAL lines at UNIO_LOG_LEVEL=debug", eal_lines);
	r = test_capture(out, sizeof(out), "UNIO_LOG_LEVEL=warn %s/app/info/unio-info -e self",
			 test_build_dir());
	TEST_ASSERT(r == 0 && strstr(out, "EAL: ") == NULL, "%s", out);
	/* an explicit EAL option wins */
	r = test_capture(out, sizeof(out), "UNIO_LOG_LEVEL=info %s/app/info/unio-info "
			 "--log-level=lib.eal:debug -- -e self", test_build_dir());
	TEST_ASSERT(r == 0 && strstr(out, "--log-level=lib.eal:debug") != NULL &&
		    strstr(out, "--log-level=lib.*:") == NULL, "%s", out);
	return TEST_OK;
}
