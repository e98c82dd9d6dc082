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
#include <net/genetlink.h>
#include <net/net_namespace.h>
#include <net/sock.h>

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

/*
 * Who may join the events multicast group. GENL_MCAST_CAP_SYS_ADMIN came
 * in 6.7 (and stable 6.1.y); 5.10.y's backport of the same check is the
 * cap_sys_admin bit. Where the flag is missing, events are also delivered
 * only to sockets whose opener has CAP_SYS_ADMIN: a filter on the
 * broadcast refuses them to anyone who joined anyway.
 */
#ifdef GENL_MCAST_CAP_SYS_ADMIN
#define MD_GENL_MCGRP_ADMIN	.flags = GENL_MCAST_CAP_SYS_ADMIN

static inline void md_genl_multicast(const struct genl_family *family,
				     struct sk_buff *skb, unsigned int group)
{
	genlmsg_multicast(family, skb, 0, group, GFP_KERNEL);
}
#else
#define MD_GENL_MCGRP_ADMIN	.cap_sys_admin = 1

/* Nonzero: do not deliver to @dsk. */
static inline int md_genl_admin_only(struct sock *dsk, struct sk_buff *skb,
				     void *data)
{
	struct socket *sock = dsk->sk_socket;

	return !sock || !sock->file ||
	       !file_ns_capable(sock->file, &init_user_ns, CAP_SYS_ADMIN);
}

static inline void md_genl_multicast(const struct genl_family *family,
				     struct sk_buff *skb, unsigned int group)
{
	group += family->mcgrp_offset;
	NETLINK_CB(skb).dst_group = group;
	netlink_broadcast_filtered(init_net.genl_sock, skb, 0, group,
				   GFP_KERNEL, md_genl_admin_only, NULL);
}
#endif

/*
 * resv_start_op came in 6.1: at 0 the core checks the header's reserved
 * byte and validates every op against its policy, the strictest setting
 * (genl.c checks the reserved byte itself for older kernels).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 1, 0)
#define MD_GENL_RESV_START_OP	.resv_start_op = 0,
#else
#define MD_GENL_RESV_START_OP
#endif

/* 6.1 (with GENL_REQ_ATTR_CHECK): extack can name a missing attribute. */
#ifdef GENL_REQ_ATTR_CHECK
#define MD_GENL_SET_ATTR_MISS(info, type) \
	NL_SET_ERR_ATTR_MISS((info)->extack, NULL, type)
#else
#define MD_GENL_SET_ATTR_MISS(info, type)	do { } while (0)
#endif

#endif /* _METADEF_COMPAT_H */
