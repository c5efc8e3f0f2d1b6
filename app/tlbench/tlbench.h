/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UNIO_TLBENCH_H
#define UNIO_TLBENCH_H

#include <stdbool.h>

/** -m N [-R]: N 8-byte round trips over memif in one process (memif.c). */
int memif_mode(unsigned int n, bool raw);

#endif /* UNIO_TLBENCH_H */
