/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdio.h>
#include <string.h>

#include "unio_build_config.h"
#include "unio_version.h"

const char *
unio_version(void)
{
	return UNIO_VERSION;
}

void
unio_build_info_print(FILE *f)
{
	const char *skipped = UNIO_DRIVERS_SKIPPED;

	fprintf(f, "# Unio version %s\n", UNIO_VERSION);
	fprintf(f, "# build: %s, %s, %s, sanitizers: %s\n", UNIO_BUILD_TYPE, UNIO_BUILD_COMPILER,
		UNIO_BUILD_MACHINE, UNIO_BUILD_SANITIZE);
	fprintf(f, "# DPDK: %s\n", UNIO_DPDK_VERSION);
	fprintf(f, "# drivers built: %s\n", UNIO_DRIVERS_BUILT);
	fprintf(f, "# drivers not built:%s\n", skipped[0] == '\0' ? " none" : "");
	while (*skipped != '\0') {
		size_t n = strcspn(skipped, ";");

		fprintf(f, "#   %.*s\n", (int)n, skipped);
		skipped += n;
		while (*skipped == ';' || *skipped == ' ')
			skipped++;
	}
}
