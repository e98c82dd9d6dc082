/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every difference between the kernels metadef.ko builds on (Debian's
 * 5.10, 6.1, 6.12 and 7.3), in one place: each keyed on the release that
 * changed it, with the reason. No other file tests LINUX_VERSION_CODE.
 * (An out-of-tree module must build on kernels it was not merged into,
 * which is why checkpatch's LINUX_VERSION_CODE and constant-comparison
 * warnings are expected here and only here; tools/checkpatch skips them
 * for this file.)
 */
#ifndef _METADEF_COMPAT_H
#define _METADEF_COMPAT_H

#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/version.h>

/*
 * MD_MAX_PAGE_ORDER: the largest order alloc_pages() accepts. Before 6.4
 * MAX_ORDER was one past it; 6.4 made MAX_ORDER inclusive,
 * and 6.8 renamed it MAX_PAGE_ORDER.
 */
#if defined(MAX_PAGE_ORDER)
#define MD_MAX_PAGE_ORDER	MAX_PAGE_ORDER
#elif LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0)
#define MD_MAX_PAGE_ORDER	MAX_ORDER
#else
#define MD_MAX_PAGE_ORDER	(MAX_ORDER - 1)
#endif

/*
 * vm_flags became read-only in 6.3: changed only through
 * vm_flags_set() and vm_flags_clear(), which take care of the VMA lock.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
static inline void md_vm_flags_set(struct vm_area_struct *vma,
				   unsigned long flags)
{
	vma->vm_flags |= flags;
}

static inline void md_vm_flags_clear(struct vm_area_struct *vma,
				     unsigned long flags)
{
	vma->vm_flags &= ~flags;
}
#else
#define md_vm_flags_set(vma, flags)	vm_flags_set(vma, flags)
#define md_vm_flags_clear(vma, flags)	vm_flags_clear(vma, flags)
#endif

/* vma_set_file() came in 5.11; before, drivers did this. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(5, 11, 0)
static inline void md_vma_set_file(struct vm_area_struct *vma,
				   struct file *file)
{
	struct file *old = vma->vm_file;

	vma->vm_file = get_file(file);
	fput(old);
}
#else
#define md_vma_set_file(vma, file)	vma_set_file(vma, file)
#endif

/*
 * Symbol namespaces are string literals since 6.13; before,
 * bare tokens that the macros stringified.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
#define MD_NS(ns)	#ns
#else
#define MD_NS(ns)	ns
#endif

/*
 * EXPORT_SYMBOL_IF_KUNIT() came with <kunit/visibility.h> in 6.2; before,
 * the same by hand (5.10, 6.1).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
#include <kunit/visibility.h>
#else
#include <linux/export.h>
#if IS_ENABLED(CONFIG_KUNIT)
#define EXPORT_SYMBOL_IF_KUNIT(sym) \
	EXPORT_SYMBOL_NS(sym, EXPORTED_FOR_KUNIT_TESTING)
#else
#define EXPORT_SYMBOL_IF_KUNIT(sym)
#endif
#endif

#endif /* _METADEF_COMPAT_H */
