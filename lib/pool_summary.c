// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * md_pool_summary(): the pool's figures as a table for people, one column
 * per tier and one for the whole pool (include/metadef/pool.h). Calls
 * md_pool_stats() and the tiers' walks; nothing calls back into it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <metadef/metadef.h>
#include <metadef/pool.h>

#include "internal.h"
#include "pool_internal.h"

#define COLS	(MD_TIER_COUNT + 1)

/* Blocks held by users right now (ACTIVE), per tier. */
struct active {
	uint64_t count[COLS], bytes[COLS];
};

static int active_fn(void *arg, const struct blk_rec *r)
{
	struct active *a = arg;

	if (r->state != MD_BLOCK_ACTIVE || r->tier >= MD_TIER_COUNT)
		return 0;
	a->count[r->tier]++;
	a->bytes[r->tier] += r->size;
	a->count[MD_TIER_COUNT]++;
	a->bytes[MD_TIER_COUNT] += r->size;
	return 0;
}

/* @v bytes in 10 columns: exact, or in B, KiB, MiB, GiB, TiB. */
static void put_bytes(FILE *f, uint64_t v, unsigned int flags)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB" };
	double x = (double)v;
	int u = -1;

	if ((flags & MD_SUMMARY_BYTES) || v < 1024) {
		fprintf(f, (flags & MD_SUMMARY_BYTES) ? " %14" PRIu64 :
			" %10" PRIu64 " B", v);
		return;
	}
	while (x >= 1024 && u < 3) {
		x /= 1024;
		u++;
	}
	fprintf(f, " %8.2f %s", x, unit[u]);
}

static void put_count(FILE *f, uint64_t v, unsigned int flags)
{
	fprintf(f, (flags & MD_SUMMARY_BYTES) ? " %14" PRIu64 : " %12" PRIu64,
		v);
}

static void put_frac(FILE *f, double v, unsigned int flags)
{
	fprintf(f, (flags & MD_SUMMARY_BYTES) ? " %14.4f" : " %12.4f", v);
}

enum kind { BYTES, COUNT, FRAC };

/* One row: a label and a figure per tier, then the total. */
struct row {
	const char *label;
	enum kind kind;
	size_t off;		/* in struct md_tier_stats, or SIZE_MAX */
};

#define ROW(l, k, field)	{ l, k, offsetof(struct md_tier_stats, field) }

static const struct row rows[] = {
	ROW("reserved", BYTES, region_bytes),
	ROW("  peak", BYTES, region_peak_bytes),
	ROW("allocated", BYTES, current_bytes),
	ROW("  peak", BYTES, peak_bytes),
	ROW("  ever", BYTES, allocated_bytes),
	{ "active", BYTES, SIZE_MAX },
	ROW("requested", BYTES, requested_bytes),
	ROW("free", BYTES, free_bytes),
	ROW("largest free", BYTES, largest_free),
	ROW("fragmentation", FRAC, fragmentation),
	ROW("blocks", COUNT, current_count),
	ROW("  peak", COUNT, peak_count),
	ROW("  ever", COUNT, alloc_count),
	{ "active blocks", COUNT, SIZE_MAX },
	ROW("regions", COUNT, region_count),
	ROW("  ever", COUNT, region_allocs),
	ROW("out of memory", COUNT, oom_count),
};

static const char *const kind_names[MD_POOL_VIOLATION_KINDS] = {
	[MD_POOL_DOUBLE_FREE] = "double free",
	[MD_POOL_FREE_HELD] = "free while held",
	[MD_POOL_USE_AFTER_FREE] = "use after free",
	[MD_POOL_BAD_TRANSITION] = "bad transition",
	[MD_POOL_BAD_HANDLE] = "bad handle",
};

MD_API int md_pool_summary(struct md_pool *pool, FILE *f, unsigned int flags)
{
	const int w = (flags & MD_SUMMARY_BYTES) ? 14 : 12;
	struct md_pool_stats st;
	struct active act;
	size_t r;
	int t, k;

	if (!pool || !f || (flags & ~MD_SUMMARY_FLAGS))
		return -EINVAL;
	memset(&act, 0, sizeof(act));
	for (t = 0; t < MD_TIER_COUNT; t++)
		(void)pool->tiers[t]->walk(pool, active_fn, &act);
	md_pool_stats(pool, &st);

	fprintf(f, "metadef pool summary: backend %s, alignment %" PRIu64
		", limit ", st.backend ? st.backend : "?", st.align);
	if (st.limit)
		fprintf(f, "%" PRIu64 " bytes\n", st.limit);
	else
		fprintf(f, "none\n");
	fprintf(f, "%-14s", "");
	for (t = 0; t < COLS; t++)
		fprintf(f, " %*s", w, t < MD_TIER_COUNT ?
			md_pool_tier_name((enum md_pool_tier)t) : "total");
	fputc('\n', f);
	for (r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		fprintf(f, "%-14s", rows[r].label);
		for (t = 0; t < COLS; t++) {
			const struct md_tier_stats *s = t < MD_TIER_COUNT ?
							&st.tier[t] : &st.total;
			const char *p = (const char *)s + rows[r].off;
			uint64_t v;

			if (rows[r].kind == FRAC) {
				double d;

				memcpy(&d, p, sizeof(d));
				put_frac(f, d, flags);
				continue;
			}
			if (rows[r].off == SIZE_MAX)
				v = rows[r].kind == BYTES ? act.bytes[t] :
							    act.count[t];
			else
				memcpy(&v, p, sizeof(v));
			if (rows[r].kind == BYTES)
				put_bytes(f, v, flags);
			else
				put_count(f, v, flags);
		}
		fputc('\n', f);
	}
	fprintf(f, "refused operations %" PRIu64 ":", st.violations);
	for (k = 0; k < MD_POOL_VIOLATION_KINDS; k++)
		fprintf(f, "%s %s %" PRIu64, k ? "," : "", kind_names[k],
			st.violation[k]);
	fputc('\n', f);
	return ferror(f) ? -EIO : 0;
}

MD_API long md_pool_summary_buf(struct md_pool *pool, char *buf, size_t len,
				unsigned int flags)
{
	if (!pool || (len && !buf))
		return -EINVAL;
	return pool_print_buf(pool, md_pool_summary, flags, buf, len);
}
