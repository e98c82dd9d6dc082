/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Symbols the KUnit suites in tests/ need are exported with the kernel's
 * EXPORT_SYMBOL_IF_KUNIT() (<kunit/visibility.h>; compat.h has it before
 * 6.2): into the EXPORTED_FOR_KUNIT_TESTING namespace, and only on kernels
 * that can run KUnit at all. A header of its own so that the parts that
 * stand alone (buddy.c, mmu.c) need nothing else of the module's.
 */
#ifndef _METADEF_EXPORT_H
#define _METADEF_EXPORT_H

#include "compat.h"

#endif /* _METADEF_EXPORT_H */
