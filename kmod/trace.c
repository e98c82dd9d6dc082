// SPDX-License-Identifier: GPL-2.0
/*
 * Instantiates the tracepoints of trace.h. The events decode the MMU's
 * fault reasons with literal numbers (for perf's format parser): they
 * must stay those of enum md_mmu_fault.
 */
#include <linux/build_bug.h>

#include "mmu.h"

#define CREATE_TRACE_POINTS
#include "trace.h"

static_assert(MD_MMU_UNMAPPED == 1 && MD_MMU_PERM == 2 && MD_MMU_COLOR == 3);
static_assert(METADEF_SHARE_READ == 1 && METADEF_SHARE_WRITE == 2);
static_assert(METADEF_ALLOC_TOPDOWN == 1 && METADEF_ALLOC_RANGE == 2);
