/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * unio-info: what this Unio build and this machine offer, like ucx_info.
 *   -v  version and build configuration (drivers built, and why the others were not)
 *   -c  every UNIO_* variable with its current value, default and doc
 *   --config-reference  the configuration reference in Markdown (doc/guides/config.md)
 */

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include <unio_config.h>
#include <unio_version.h>

static void
usage(FILE *f)
{
	fprintf(f, "usage: unio-info [-v] [-c] [--config-reference] [-h]\n"
		"  -v                  version and build configuration\n"
		"  -c                  configuration: every UNIO_* variable, value, default, doc\n"
		"  --config-reference  the configuration reference (Markdown)\n"
		"  -h                  this help\n");
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config-reference", no_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int show_version = 0, show_config = 0, show_ref = 0, opt;
	struct unio_config *cfg = NULL;
	unio_status_t st;

	while ((opt = getopt_long(argc, argv, "vch", longopts, NULL)) != -1) {
		switch (opt) {
		case 'v':
			show_version = 1;
			break;
		case 'c':
			show_config = 1;
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
	if (!show_version && !show_config && !show_ref) {
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
			fprintf(stderr, "unio-info: %s\n", unio_config_error());
			return 1;
		}
		unio_config_print(cfg, stdout, UNIO_CONFIG_PRINT_DOC | UNIO_CONFIG_PRINT_HEADER);
		unio_config_release(cfg);
	}
	return 0;
}
