/* SPDX-License-Identifier: BSD-3-Clause */
/* The CPU's vendor (unio_cpu.h). */

#include "unio_cpu.h"

enum unio_cpu_vendor
unio_cpu_vendor(void)
{
#if defined(__x86_64__)
	__builtin_cpu_init();   /* a constructor may ask before libgcc's own ran */
	if (__builtin_cpu_is("intel"))
		return UNIO_CPU_INTEL;
	if (__builtin_cpu_is("amd"))
		return UNIO_CPU_AMD;
#endif
	return UNIO_CPU_OTHER;
}
