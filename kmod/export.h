/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Symbols the KUnit suites in tests/ need are exported into a namespace of
 * their own, and only on kernels that can run KUnit at all. A header of its
 * own so that the parts that stand alone (buddy.c, mmu.c) need nothing else
 * of the module's.
 */
#ifndef _METADEF_EXPORT_H
#define _METADEF_EXPORT_H

#include <linux/export.h>
#include <linux/kconfig.h>

#include "compat.h"

#if IS_ENABLED(CONFIG_KUNIT)
#define MD_EXPORT_FOR_TESTS(sym) EXPORT_SYMBOL_NS_GPL(sym, MD_NS(METADEF_KUNIT))
#else
#define MD_EXPORT_FOR_TESTS(sym)
#endif

#endif /* _METADEF_EXPORT_H */
