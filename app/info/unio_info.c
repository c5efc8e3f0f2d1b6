/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * unio-info: what this Unio build and this machine offer, like ucx_info.
 *   -v  version and build configuration (drivers built, and why the others were not)
 *   -c  every UNIO_* variable with its current value, default and doc
 *   -d  every transport driver, its devices, capabilities, limits and performance
 *       estimates; for a driver without devices, the reason
 *   -e [CLASS]  the protocol selection table for a peer class (self, host, net; default all):
 *       which protocol and lane serve each message-size range, like UCX_PROTO_INFO
 *   --config-reference  the configuration reference in Markdown (doc/guides/config.md)
 *
 * EAL arguments (for the ethdev driver's ports) go before "--": unio-info --vdev ... -- -d;
 * without them, -d and -e take them from UNIO_EAL_ARGS as the library does
 */

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unio.h>
#include <unio_config.h>
#include <unio_version.h>

#include "unio_config_priv.h"
#include "unio_proto.h"
#include "unio_tl.h"

static void
usage(FILE *f)
{
	fprintf(f, "usage: unio-info [EAL args --] [-v] [-c] [-d] [-e [CLASS]] [--config-reference]"
		" [-h]\n"
		"  -v                  version and build configuration\n"
		"  -c                  configuration: every UNIO_* variable, value, default, doc\n"
		"  -d                  transport drivers: devices, capabilities, limits, perf\n"
		"  -e [CLASS]          protocol selection for a peer class: self, host, net, all\n"
		"                      (default all): which protocol and lane serve which sizes\n"
		"  --config-reference  the configuration reference (Markdown)\n"
		"  -h                  this help\n");
}

static const char *
reach_name(enum unio_tl_reach r)
{
	return r == UNIO_TL_REACH_SELF ? "self (same worker)" :
	       r == UNIO_TL_REACH_HOST ? "host (processes on this host)" : "network";
}

/* a size in bytes: the largest binary unit that divides it exactly (64 KiB, 1 GiB), else
 * bytes (262016 B), so that every size line reads the same way */
static void
print_size(FILE *f, const char *name, size_t v)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	unsigned int u = 0;

	if (v == SIZE_MAX) {
		fprintf(f, "      %-15s unlimited\n", name);
		return;
	}
	while (v != 0 && v % 1024 == 0 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		v /= 1024;
		u++;
	}
	fprintf(f, "      %-15s %zu %s\n", name, v, unit[u]);
}

/* open the device once to learn what an iface on it offers */
static void
print_iface(FILE *f, const struct unio_tl_driver *drv, const struct unio_config *cfg,
	    const char *dev)
{
	struct unio_tl_iface_params params = { .config = cfg, .dev_name = dev, .cpu = -1 };
	struct unio_tl_iface *iface;
	const struct unio_tl_iface_attr *a;
	char caps[256];
	unio_status_t st;

	st = unio_tl_iface_open(drv, &params, &iface);
	if (st != UNIO_OK) {
		fprintf(f, "      cannot open: %s\n", unio_status_string(st));
		return;
	}
	a = &iface->attr;
	unio_tl_cap_string(a->cap, caps, sizeof(caps));
	fprintf(f, "      %-15s %s\n", "capabilities", caps);
	print_size(f, "max_short", a->max_short);
	print_size(f, "max_bcopy", a->max_bcopy);
	print_size(f, "max_zcopy", a->max_zcopy);
	print_size(f, "max_zcopy_hdr", a->max_zcopy_hdr);
	fprintf(f, "      %-15s %zu\n", "max_iov", a->max_iov);
	print_size(f, "max_put_zcopy", a->max_put_zcopy);
	print_size(f, "max_get_zcopy", a->max_get_zcopy);
	print_size(f, "iface_addr", a->iface_addr_len);
	print_size(f, "rkey", a->rkey_packed_len);
	fprintf(f, "      %-15s latency %.0f ns, overhead %.0f ns, bandwidth %.0f MB/s, "
		"zcopy overhead %.0f ns\n", "estimates", a->perf.latency_ns, a->perf.overhead_ns,
		a->perf.bandwidth_MBps, a->perf.zcopy_overhead_ns);
	unio_tl_iface_close(iface);
}

static unio_status_t
print_drivers(FILE *f)
{
	const struct unio_config *cfg = unio_config_env();

	if (cfg == NULL) {
		unio_config_error_report("unio-info");
		return UNIO_ERR_CONFIG;
	}
	unio_tl_check_tls(cfg);   /* what unio_context_create() says, before the list */
	for (unsigned int i = 0; i < unio_tl_driver_count(); i++) {
		const struct unio_tl_driver *drv = unio_tl_driver_get(i);
		struct unio_tl_device_info devs[UNIO_TL_MAX_DEVICES];
		unsigned int n = 0;
		char reason[256] = "";
		unio_status_t st;

		fprintf(f, "driver %s: %s\n", drv->name, drv->description);
		st = unio_tl_query_devices(drv, cfg, devs, &n, reason, sizeof(reason));
		if (st != UNIO_OK || n == 0) {
			fprintf(f, "  no device: %s\n", st != UNIO_OK ? unio_status_string(st) :
				reason[0] != '\0' ? reason : "none found");
			continue;
		}
		for (unsigned int d = 0; d < n; d++) {
			fprintf(f, "  device %s: %s\n", devs[d].name, reach_name(devs[d].reach));
			if (devs[d].detail[0] != '\0')
				fprintf(f, "      %-15s %s\n", "detail", devs[d].detail);
			print_iface(f, drv, cfg, devs[d].name);
		}
	}
	return UNIO_OK;
}

static int
print_selection(const char *peer_class)
{
	static const char *const classes[] = { "self", "host", "net" };
	unio_context_t *ctx;
	unio_status_t st;
	int found = 0;

	ctx = unio_context_create(NULL, &st);
	if (ctx == NULL) {
		fprintf(stderr, "unio-info: cannot create a context: %s\n", unio_status_string(st));
		return 1;
	}
	for (unsigned int i = 0; i < RTE_DIM(classes); i++) {
		if (strcmp(peer_class, "all") != 0 && strcmp(peer_class, classes[i]) != 0)
			continue;
		found = 1;
		unio_proto_print_selection(ctx, classes[i], stdout);
	}
	unio_context_destroy(ctx);
	if (!found) {
		fprintf(stderr, "unio-info: unknown peer class '%s' (self, host, net, all)\n",
			peer_class);
		return 2;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config-reference", no_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int show_version = 0, show_config = 0, show_ref = 0, show_drivers = 0, opt, n;
	const char *sel_class = NULL;
	struct unio_config *cfg = NULL;
	unio_status_t st;

	/* EAL arguments before "--" (needed only for the ethdev driver's ports) */
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") != 0)
			continue;
		n = unio_env_init(argc, argv);
		if (n < 0) {
			fprintf(stderr, "unio-info: EAL initialisation failed: %s\n",
				unio_status_string((unio_status_t)n));
			return 1;
		}
		argc -= n;
		argv += n;
		break;
	}
	while ((opt = getopt_long(argc, argv, "vcde::h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'v':
			show_version = 1;
			break;
		case 'c':
			show_config = 1;
			break;
		case 'd':
			show_drivers = 1;
			break;
		case 'e':
			/* optional argument: "-e host", "-ehost" */
			if (optarg != NULL)
				sel_class = optarg;
			else if (optind < argc && argv[optind][0] != '-')
				sel_class = argv[optind++];
			else
				sel_class = "all";
			break;
		case 'R':
			show_ref = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "unio-info: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (!show_version && !show_config && !show_ref && !show_drivers && sel_class == NULL) {
		usage(stderr);
		return 2;
	}
	if (show_ref) {
		unio_config_print_reference(stdout);
		return 0;
	}
	if (show_version)
		unio_build_info_print(stdout);
	if (show_config) {
		st = unio_config_read(&cfg);
		if (st != UNIO_OK) {
			unio_config_error_report("unio-info");
			return 1;
		}
		unio_config_print(cfg, stdout, UNIO_CONFIG_PRINT_DOC | UNIO_CONFIG_PRINT_HEADER);
		unio_config_release(cfg);
	}
	/* without EAL arguments here, UNIO_EAL_ARGS names the ports, as for the library */
	if ((show_drivers || sel_class != NULL) && unio_config_env() != NULL &&
	    strcmp(unio_config_env()->eal_args, "none") != 0) {
		st = unio_env_init_default();
		if (st != UNIO_OK) {
			fprintf(stderr, "unio-info: EAL initialisation from UNIO_EAL_ARGS failed: "
				"%s\n", unio_status_string(st));
			return 1;
		}
	}
	if (show_drivers && print_drivers(stdout) != UNIO_OK)
		return 1;
	if (sel_class != NULL)
		return print_selection(sel_class);
	return 0;
}
