/* SPDX-License-Identifier: GPL-2.0 */
/*
 * metadef's tracepoints, for ftrace (tracefs events/metadef/) and
 * perf record -e 'metadef:*'. One event per operation a tenant asks for,
 * fired whether it succeeded or not (ret is 0 or the negative errno the
 * caller got), plus the faults of the device's MMU and of CPU mappings.
 *
 * The fields are plain numbers, no strings (whose macros changed in 6.10),
 * and the output decodes flags with literal values only, so that perf's
 * parser of the format files reads every field on every kernel. Access
 * bits are the uAPI's: 1 read, 2 write. Latencies are ktime_get_ns()
 * deltas, taken only while the event is enabled.
 *
 * trace.c instantiates them (CREATE_TRACE_POINTS); everything else
 * includes this header and calls trace_metadef_*().
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM metadef

#if !defined(_METADEF_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _METADEF_TRACE_H

#include <linux/tracepoint.h>
#include <linux/types.h>

#include <uapi/linux/metadef.h>

/* Access bits as "rw", "r-", "-w" or "--": TP_printk's "%s%s". */
#define md_tp_r(a)	((a) & 1 ? "r" : "-")
#define md_tp_w(a)	((a) & 2 ? "w" : "-")

TRACE_EVENT(metadef_alloc,
	TP_PROTO(u32 domain, const struct metadef_alloc *arg, int ret,
		 u64 latency_ns),
	TP_ARGS(domain, arg, ret, latency_ns),
	TP_STRUCT__entry(
		__field(u32, domain)
		__field(u32, handle)
		__field(u64, size)
		__field(u64, alloc_size)
		__field(u64, align)
		__field(u64, dev_va)
		__field(u32, flags)
		__field(int, ret)
		__field(u64, latency_ns)
	),
	TP_fast_assign(
		__entry->domain = domain;
		__entry->handle = arg->handle;
		__entry->size = arg->size;
		__entry->alloc_size = arg->alloc_size;
		__entry->align = arg->align;
		__entry->dev_va = arg->dev_va;
		__entry->flags = arg->flags;
		__entry->ret = ret;
		__entry->latency_ns = latency_ns;
	),
	TP_printk("domain=%u handle=%u size=%llu alloc_size=%llu align=%llu flags=%s dev_va=0x%llx ret=%d latency_ns=%llu",
		  __entry->domain, __entry->handle, __entry->size,
		  __entry->alloc_size, __entry->align,
		  __print_flags(__entry->flags, "|",
				{ 1, "topdown" }, { 2, "range" }),
		  __entry->dev_va, __entry->ret, __entry->latency_ns)
);

TRACE_EVENT(metadef_free,
	TP_PROTO(u32 domain, u32 handle, bool import, u64 size, u64 dev_va,
		 unsigned int mapped, int ret, u64 latency_ns),
	TP_ARGS(domain, handle, import, size, dev_va, mapped, ret, latency_ns),
	TP_STRUCT__entry(
		__field(u32, domain)
		__field(u32, handle)
		__field(u64, size)
		__field(u64, dev_va)
		__field(u32, mapped)
		__field(u8, import)
		__field(int, ret)
		__field(u64, latency_ns)
	),
	TP_fast_assign(
		__entry->domain = domain;
		__entry->handle = handle;
		__entry->size = size;
		__entry->dev_va = dev_va;
		__entry->mapped = mapped;
		__entry->import = import;
		__entry->ret = ret;
		__entry->latency_ns = latency_ns;
	),
	TP_printk("domain=%u handle=%u import=%u size=%llu dev_va=0x%llx mapped=%u ret=%d latency_ns=%llu",
		  __entry->domain, __entry->handle, __entry->import,
		  __entry->size, __entry->dev_va, __entry->mapped,
		  __entry->ret, __entry->latency_ns)
);

TRACE_EVENT(metadef_map,
	TP_PROTO(u32 domain, u32 owner, u32 handle, u64 import_id, u64 size,
		 u64 offset, unsigned int access, int ret),
	TP_ARGS(domain, owner, handle, import_id, size, offset, access, ret),
	TP_STRUCT__entry(
		__field(u32, domain)
		__field(u32, owner)
		__field(u32, handle)
		__field(u32, access)
		__field(u64, import_id)
		__field(u64, size)
		__field(u64, offset)
		__field(int, ret)
	),
	TP_fast_assign(
		__entry->domain = domain;
		__entry->owner = owner;
		__entry->handle = handle;
		__entry->access = access;
		__entry->import_id = import_id;
		__entry->size = size;
		__entry->offset = offset;
		__entry->ret = ret;
	),
	TP_printk("domain=%u owner=%u handle=%u import_id=%llu size=%llu offset=%llu access=%s%s ret=%d",
		  __entry->domain, __entry->owner, __entry->handle,
		  __entry->import_id, __entry->size, __entry->offset,
		  md_tp_r(__entry->access), md_tp_w(__entry->access), __entry->ret)
);

TRACE_EVENT(metadef_cpu_fault,
	TP_PROTO(u32 domain, u32 owner, u32 handle, u64 offset, int ret),
	TP_ARGS(domain, owner, handle, offset, ret),
	TP_STRUCT__entry(
		__field(u32, domain)
		__field(u32, owner)
		__field(u32, handle)
		__field(int, ret)
		__field(u64, offset)
	),
	TP_fast_assign(
		__entry->domain = domain;
		__entry->owner = owner;
		__entry->handle = handle;
		__entry->ret = ret;
		__entry->offset = offset;
	),
	TP_printk("domain=%u owner=%u handle=%u offset=%llu ret=%d",
		  __entry->domain, __entry->owner, __entry->handle,
		  __entry->offset, __entry->ret)
);

TRACE_EVENT(metadef_fault,
	TP_PROTO(u32 domain, u64 va, unsigned int access, unsigned int reason),
	TP_ARGS(domain, va, access, reason),
	TP_STRUCT__entry(
		__field(u32, domain)
		__field(u32, access)
		__field(u64, va)
		__field(u32, reason)
	),
	TP_fast_assign(
		__entry->domain = domain;
		__entry->access = access;
		__entry->va = va;
		__entry->reason = reason;
	),
	TP_printk("domain=%u va=0x%llx access=%s%s reason=%s",
		  __entry->domain, __entry->va, md_tp_r(__entry->access), md_tp_w(__entry->access),
		  __print_symbolic(__entry->reason, { 1, "unmapped" },
				   { 2, "permission" }, { 3, "color" }))
);

TRACE_EVENT(metadef_grant,
	TP_PROTO(u32 domain, u32 target, u32 handle, u64 size,
		 unsigned int access, int ret),
	TP_ARGS(domain, target, handle, size, access, ret),
	TP_STRUCT__entry(
		__field(u32, domain)
		__field(u32, target)
		__field(u32, handle)
		__field(u32, access)
		__field(u64, size)
		__field(int, ret)
	),
	TP_fast_assign(
		__entry->domain = domain;
		__entry->target = target;
		__entry->handle = handle;
		__entry->access = access;
		__entry->size = size;
		__entry->ret = ret;
	),
	TP_printk("domain=%u target=%u handle=%u size=%llu access=%s%s ret=%d",
		  __entry->domain, __entry->target, __entry->handle,
		  __entry->size, md_tp_r(__entry->access), md_tp_w(__entry->access), __entry->ret)
);

TRACE_EVENT(metadef_import,
	TP_PROTO(u32 domain, u32 handle, u32 owner, u32 owner_handle, u64 size,
		 u64 dev_va, unsigned int access, int ret),
	TP_ARGS(domain, handle, owner, owner_handle, size, dev_va, access, ret),
	TP_STRUCT__entry(
		__field(u32, domain)
		__field(u32, handle)
		__field(u32, owner)
		__field(u32, owner_handle)
		__field(u64, size)
		__field(u64, dev_va)
		__field(u32, access)
		__field(int, ret)
	),
	TP_fast_assign(
		__entry->domain = domain;
		__entry->handle = handle;
		__entry->owner = owner;
		__entry->owner_handle = owner_handle;
		__entry->size = size;
		__entry->dev_va = dev_va;
		__entry->access = access;
		__entry->ret = ret;
	),
	TP_printk("domain=%u handle=%u owner=%u owner_handle=%u size=%llu dev_va=0x%llx access=%s%s ret=%d",
		  __entry->domain, __entry->handle, __entry->owner,
		  __entry->owner_handle, __entry->size, __entry->dev_va,
		  md_tp_r(__entry->access), md_tp_w(__entry->access), __entry->ret)
);

TRACE_EVENT(metadef_revoke,
	TP_PROTO(u32 domain, u32 handle, u32 target, u64 size,
		 unsigned int imports, unsigned int grants, int ret,
		 u64 latency_ns),
	TP_ARGS(domain, handle, target, size, imports, grants, ret, latency_ns),
	TP_STRUCT__entry(
		__field(u32, domain)
		__field(u32, handle)
		__field(u32, target)
		__field(u32, imports)
		__field(u64, size)
		__field(u32, grants)
		__field(int, ret)
		__field(u64, latency_ns)
	),
	TP_fast_assign(
		__entry->domain = domain;
		__entry->handle = handle;
		__entry->target = target;
		__entry->imports = imports;
		__entry->size = size;
		__entry->grants = grants;
		__entry->ret = ret;
		__entry->latency_ns = latency_ns;
	),
	TP_printk("domain=%u handle=%u target=%u size=%llu imports=%u grants=%u ret=%d latency_ns=%llu",
		  __entry->domain, __entry->handle, __entry->target,
		  __entry->size, __entry->imports, __entry->grants,
		  __entry->ret, __entry->latency_ns)
);

TRACE_EVENT(metadef_copy,
	TP_PROTO(u32 domain, const struct metadef_copy *arg, int ret,
		 u64 latency_ns),
	TP_ARGS(domain, arg, ret, latency_ns),
	TP_STRUCT__entry(
		__field(u32, domain)
		__field(int, ret)
		__field(u64, src_va)
		__field(u64, dst_va)
		__field(u64, size)
		__field(u64, latency_ns)
	),
	TP_fast_assign(
		__entry->domain = domain;
		__entry->ret = ret;
		__entry->src_va = arg->src_va;
		__entry->dst_va = arg->dst_va;
		__entry->size = arg->size;
		__entry->latency_ns = latency_ns;
	),
	TP_printk("domain=%u src_va=0x%llx dst_va=0x%llx size=%llu ret=%d latency_ns=%llu",
		  __entry->domain, __entry->src_va, __entry->dst_va,
		  __entry->size, __entry->ret, __entry->latency_ns)
);

#endif /* _METADEF_TRACE_H */

/* Outside the guard above: define_trace.h reads this file again. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
