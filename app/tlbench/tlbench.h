/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UNIO_TLBENCH_H
#define UNIO_TLBENCH_H

#include <stdbool.h>

/** -m N [-R | -P]: N 8-byte round trips (-P: 1 MiB puts) over memif in one process (memif.c). */
int memif_mode(unsigned int n, bool raw, bool put);

#endif /* UNIO_TLBENCH_H */
