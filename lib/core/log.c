/* SPDX-License-Identifier: BSD-3-Clause */
#include <rte_log.h>

#include "unio_log.h"

RTE_LOG_REGISTER(unio_logtype_core, unio.core, WARNING);

void
unio_log_set_level(int rte_level)
{
	rte_log_set_level_pattern("unio.*", (uint32_t)rte_level);
}
