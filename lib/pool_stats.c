// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The pools' figures and diagnosis (include/metadef/pool.h): stats, the
 * OOM report, JSON snapshots and the memory cleaner.
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

/* ------------------------------------------------------------ stats */

static double frag(uint64_t largest, uint64_t free_bytes)
{
	return free_bytes ? 1.0 - (double)largest / (double)free_bytes : 0.0;
}

static uint64_t pos(int64_t v)
{
	return v > 0 ? (uint64_t)v : 0;
}

/*
 * What is left of @in after @out, never below 0: threads count in cells
 * of their own and the cells are added one after the other, so while
 * blocks pass between threads a free can be seen before its allocation.
 */
static uint64_t left(uint64_t in, uint64_t out)
{
	return in > out ? in - out : 0;
}

MD_API void md_pool_stats(struct md_pool *pool, struct md_pool_stats *st)
{
	struct md_tier_stats *tot = &st->total;
	int64_t peak_b[SCOPES], peak_c[SCOPES];
	struct tc_cell sum;
	int t, k;

	memset(st, 0, sizeof(*st));
	pool_sum_cells(pool, &sum, peak_b, peak_c);

	pthread_mutex_lock(&pool->region_lock);
	for (t = 0; t < MD_TIER_COUNT; t++) {
		struct md_tier_stats *s = &st->tier[t];

		s->region_count = pool->region_count[t];
		s->region_bytes = pool->region_bytes[t];
		s->region_peak_bytes = pool->region_peak[t];
		s->region_allocs = pool->region_allocs[t];
		s->region_frees = pool->region_frees[t];
	}
	tot->region_peak_bytes = pool->region_total_peak;
	pthread_mutex_unlock(&pool->region_lock);

	for (t = 0; t < MD_TIER_COUNT; t++) {
		struct md_tier_stats *s = &st->tier[t];

		s->alloc_count = RLD(sum.nalloc[t]);
		s->free_count = RLD(sum.nfree[t]);
		s->current_count = left(s->alloc_count, s->free_count);
		s->allocated_bytes = RLD(sum.balloc[t]);
		s->freed_bytes = RLD(sum.bfree[t]);
		s->current_bytes = left(s->allocated_bytes, s->freed_bytes);
		s->requested_total = RLD(sum.ralloc[t]);
		s->requested_bytes = left(s->requested_total,
					  RLD(sum.rfree[t]));
		s->peak_bytes = pos(peak_b[t]);
		s->peak_count = pos(peak_c[t]);
		if (s->peak_bytes < s->current_bytes)
			s->peak_bytes = s->current_bytes;
		if (s->peak_count < s->current_count)
			s->peak_count = s->current_count;
		s->free_bytes = s->region_bytes > s->current_bytes ?
				s->region_bytes - s->current_bytes : 0;
		s->largest_free = pool->tiers[t]->largest_free(pool);
		if (s->largest_free > s->free_bytes)
			s->largest_free = s->free_bytes;
		s->fragmentation = frag(s->largest_free, s->free_bytes);
		s->oom_count = atomic_load(&pool->oom_count[t]);

		tot->alloc_count += s->alloc_count;
		tot->free_count += s->free_count;
		tot->current_count += s->current_count;
		tot->allocated_bytes += s->allocated_bytes;
		tot->freed_bytes += s->freed_bytes;
		tot->current_bytes += s->current_bytes;
		tot->requested_bytes += s->requested_bytes;
		tot->requested_total += s->requested_total;
		tot->region_count += s->region_count;
		tot->region_bytes += s->region_bytes;
		tot->region_allocs += s->region_allocs;
		tot->region_frees += s->region_frees;
		tot->free_bytes += s->free_bytes;
		if (s->largest_free > tot->largest_free)
			tot->largest_free = s->largest_free;
		tot->oom_count += s->oom_count;
	}
	tot->peak_bytes = pos(peak_b[SCOPE_TOTAL]);
	tot->peak_count = pos(peak_c[SCOPE_TOTAL]);
	if (tot->peak_bytes < tot->current_bytes)
		tot->peak_bytes = tot->current_bytes;
	if (tot->peak_count < tot->current_count)
		tot->peak_count = tot->current_count;
	tot->fragmentation = frag(tot->largest_free, tot->free_bytes);

	for (k = 0; k < MD_POOL_VIOLATION_KINDS; k++) {
		st->violation[k] = atomic_load(&pool->violation[k]);
		st->violations += st->violation[k];
	}
	st->limit = pool->limit;
	st->align = pool->align;
	st->backend = md_device_backend(pool->dev);
}

/* ------------------------------------------------------------ OOM */

void pool_oom_fill(struct md_pool *pool, enum md_pool_tier tier,
		   uint64_t size, uint64_t block, int err, bool limit_hit,
		   struct md_oom_info *oom)
{
	char req[32], blk[32], lim[32], reg[32], cur[32], fr[32], lg[32];
	struct md_oom_info report = { 0 }, *info = &report;
	const struct md_tier_stats *t;
	char why[64];

	info->error = err;
	info->tier = tier;
	info->requested = size;
	info->block_size = block;
	info->limit = pool->limit;
	info->limit_hit = limit_hit;
	md_pool_stats(pool, &info->stats);
	t = &info->stats.total;

	md_format_size(size, req, sizeof(req));
	md_format_size(block, blk, sizeof(blk));
	md_format_size(pool->limit, lim, sizeof(lim));
	md_format_size(t->region_bytes, reg, sizeof(reg));
	md_format_size(t->current_bytes, cur, sizeof(cur));
	md_format_size(t->free_bytes, fr, sizeof(fr));
	md_format_size(t->largest_free, lg, sizeof(lg));
	if (limit_hit)
		snprintf(why, sizeof(why), "the pool's limit of %s", lim);
	else
		snprintf(why, sizeof(why), "the %s backend (%s)",
			 info->stats.backend, strerror(-err));
	snprintf(info->message, sizeof(info->message),
		 "metadef: out of memory: tried to allocate %s (%s tier, a %s block); "
		 "%s reserved in %" PRIu64 " device regions: %s held by %" PRIu64
		 " blocks, %s free (largest free extent %s, fragmentation %.2f); "
		 "%" PRIu64 " allocations refused so far; refused by %s",
		 req, md_pool_tier_name(tier), blk, reg, t->region_count, cur,
		 t->current_count, fr, lg, t->fragmentation, t->oom_count, why);

	pthread_mutex_lock(&pool->oom_lock);
	pool->last_oom = *info;
	pool->has_oom = true;
	pthread_mutex_unlock(&pool->oom_lock);
	if (oom)
		*oom = *info;
}

MD_API int md_pool_last_oom(struct md_pool *pool, struct md_oom_info *oom)
{
	int err = -ENOENT;

	pthread_mutex_lock(&pool->oom_lock);
	if (pool->has_oom) {
		*oom = pool->last_oom;
		err = 0;
	}
	pthread_mutex_unlock(&pool->oom_lock);
	return err;
}

/* ------------------------------------------------------------ walking */

struct collect {
	struct blk_rec *v;
	size_t n, cap;
	bool held_only;
};

static int collect_fn(void *arg, const struct blk_rec *r)
{
	struct collect *c = arg;
	struct blk_rec *v;

	if (c->held_only && r->state != MD_BLOCK_ALLOCATED &&
	    r->state != MD_BLOCK_ACTIVE)
		return 0;
	v = md_grow(c->v, c->n, &c->cap, sizeof(*v), 64);
	if (!v)
		return -ENOMEM;
	c->v = v;
	c->v[c->n++] = *r;
	return 0;
}

static int rec_cmp(const void *a, const void *b)
{
	const struct blk_rec *x = a, *y = b;

	if (x->tier != y->tier)
		return x->tier < y->tier ? -1 : 1;
	return x->dev_va < y->dev_va ? -1 : x->dev_va > y->dev_va;
}

/* Every live block of @pool, in tier and address order. */
static int collect(struct md_pool *pool, struct collect *c)
{
	int err = 0, t;

	for (t = 0; t < MD_TIER_COUNT && !err; t++)
		err = pool->tiers[t]->walk(pool, collect_fn, c);
	if (err) {
		free(c->v);
		return err;
	}
	if (c->n)
		qsort(c->v, c->n, sizeof(*c->v), rec_cmp);
	return 0;
}

/* ------------------------------------------------------------ snapshots */

/* Bytes of the well-formed UTF-8 sequence at @s; 0 if there is none. */
static size_t utf8_len(const unsigned char *s)
{
	uint32_t cp;
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	cp = s[0] & (0x7f >> n);
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)	/* the NUL included */
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates, beyond U+10FFFF. */
	if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return n;
}

/*
 * A C string as a JSON string. JSON text is UTF-8: a byte that does not
 * start a well-formed sequence (a Latin-1 tag, say) becomes U+FFFD.
 */
static void json_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	while (*p) {
		size_t n = utf8_len(p);

		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else if (!n)
			fputs("\\ufffd", f);
		else
			fwrite(p, 1, n, f);
		p += n ? n : 1;
	}
	fputc('"', f);
}

/*
 * A fraction in [0, 1] with six decimals. Not "%f": that writes the
 * locale's decimal point, a comma in many, and the JSON would be invalid.
 */
static void json_frac(FILE *f, double v)
{
	uint64_t m = v > 0 ? (uint64_t)(v * 1e6 + 0.5) : 0;

	fprintf(f, "%" PRIu64 ".%06" PRIu64, m / 1000000, m % 1000000);
}

static void json_tier(FILE *f, const char *name,
		      const struct md_tier_stats *s)
{
	fprintf(f, "\"%s\":{\"alloc_count\":%" PRIu64 ",\"free_count\":%" PRIu64
		",\"current_count\":%" PRIu64 ",\"peak_count\":%" PRIu64
		",\"allocated_bytes\":%" PRIu64 ",\"freed_bytes\":%" PRIu64
		",\"current_bytes\":%" PRIu64 ",\"peak_bytes\":%" PRIu64
		",\"requested_bytes\":%" PRIu64 ",\"requested_total\":%" PRIu64
		",\"region_count\":%" PRIu64 ",\"region_bytes\":%" PRIu64
		",\"region_peak_bytes\":%" PRIu64 ",\"region_allocs\":%" PRIu64
		",\"region_frees\":%" PRIu64 ",\"free_bytes\":%" PRIu64
		",\"largest_free\":%" PRIu64 ",\"fragmentation\":",
		name, s->alloc_count, s->free_count, s->current_count,
		s->peak_count, s->allocated_bytes, s->freed_bytes,
		s->current_bytes, s->peak_bytes, s->requested_bytes,
		s->requested_total, s->region_count, s->region_bytes,
		s->region_peak_bytes, s->region_allocs, s->region_frees,
		s->free_bytes, s->largest_free);
	json_frac(f, s->fragmentation);
	fprintf(f, ",\"oom_count\":%" PRIu64 "}", s->oom_count);
}

static const char *const kind_keys[MD_POOL_VIOLATION_KINDS] = {
	[MD_POOL_DOUBLE_FREE] = "double_free",
	[MD_POOL_FREE_HELD] = "free_while_held",
	[MD_POOL_USE_AFTER_FREE] = "use_after_free",
	[MD_POOL_BAD_TRANSITION] = "illegal_transition",
	[MD_POOL_BAD_HANDLE] = "bad_handle",
};

MD_API int md_snapshot(struct md_pool *pool, FILE *f)
{
	struct collect c = { 0 };
	struct md_pool_stats st;
	size_t i;
	int t, err;

	md_pool_stats(pool, &st);
	err = collect(pool, &c);
	if (err)
		return err;

	fprintf(f, "{\"version\":1,\"backend\":\"%s\",\"align\":%" PRIu64
		",\"limit\":%" PRIu64 ",\n\"stats\":{", st.backend, st.align,
		st.limit);
	for (t = 0; t < MD_TIER_COUNT; t++) {
		json_tier(f, md_pool_tier_name(t), &st.tier[t]);
		fputs(",\n", f);
	}
	json_tier(f, "total", &st.total);
	fprintf(f, ",\n\"violations\":{\"total\":%" PRIu64, st.violations);
	for (t = 0; t < MD_POOL_VIOLATION_KINDS; t++)
		fprintf(f, ",\"%s\":%" PRIu64, kind_keys[t], st.violation[t]);
	fprintf(f, "}},\n\"blocks\":[");
	for (i = 0; i < c.n; i++) {
		const struct blk_rec *r = &c.v[i];

		fprintf(f, "%s\n{\"tier\":\"%s\",\"dev_va\":%" PRIu64
			",\"size\":%" PRIu64 ",\"requested\":%" PRIu64
			",\"state\":\"%s\",\"holders\":%u,\"generation\":%u"
			",\"tag\":", i ? "," : "", md_pool_tier_name(r->tier),
			r->dev_va, r->size, r->requested,
			md_block_state_name(r->state), r->holders,
			r->generation);
		json_str(f, r->tag);
		fputs(",\"site\":", f);
		json_str(f, r->site);
		fputc('}', f);
	}
	fputs("\n]}\n", f);
	free(c.v);
	return fflush(f) || ferror(f) ? -EIO : 0;
}

/*
 * What @print writes of @pool, into @buf as snprintf() would: at most @len
 * bytes with the NUL. Return: the length of the whole text, or what
 * @print returned, or -ENOMEM.
 */
long pool_print_buf(struct md_pool *pool, pool_print_fn print,
		    unsigned int flags, char *buf, size_t len)
{
	char *text = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);
	int err;

	if (!f)
		return -ENOMEM;
	err = print(pool, f, flags);
	if (fclose(f) || err) {
		free(text);
		return err ? err : -ENOMEM;
	}
	if (len) {
		size_t k = n < len - 1 ? n : len - 1;

		memcpy(buf, text, k);
		buf[k] = '\0';
	}
	free(text);
	return (long)n;
}

static int snapshot_print(struct md_pool *pool, FILE *f, unsigned int flags)
{
	(void)flags;
	return md_snapshot(pool, f);
}

MD_API long md_snapshot_buf(struct md_pool *pool, char *buf, size_t len)
{
	return pool_print_buf(pool, snapshot_print, 0, buf, len);
}

/* ------------------------------------------------------------ cleaner */

void pool_reclaim(struct md_pool *pool)
{
	int t;

	for (t = 0; t < MD_TIER_COUNT; t++)
		pool->tiers[t]->clean(pool, false, NULL);
}

/*
 * A tag or site in the cleaner's report: "-" for none, control characters
 * as C escapes, so that every held block stays on a line of its own.
 */
static void report_str(FILE *f, const char *s)
{
	if (!s) {
		fputc('-', f);
		return;
	}
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '\n')
			fputs("\\n", f);
		else if (ch == '\t')
			fputs("\\t", f);
		else if (ch == '\r')
			fputs("\\r", f);
		else if (ch < 0x20 || ch == 0x7f)
			fprintf(f, "\\x%02x", ch);
		else
			fputc(ch, f);
	}
}

/* "s" unless there is exactly one. */
static const char *plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

static long clean_one(struct md_pool *pool, FILE *report,
		      struct md_cleaner_report *total)
{
	struct md_cleaner_report rep = { 0 };
	struct collect c = { .held_only = true };
	char a[32], b[32], d[32];
	size_t i;
	int err, t;

	for (t = 0; t < MD_TIER_COUNT; t++)
		pool->tiers[t]->clean(pool, true, &rep);
	err = collect(pool, &c);
	if (err)
		return err;
	rep.held_blocks = c.n;
	for (i = 0; i < c.n; i++)
		rep.held_bytes += c.v[i].size;

	if (report) {
		fprintf(report,
			"metadef pool %" PRIu64 " (%s): %" PRIu64
			" block%s still held (%s); recycled %" PRIu64
			" released block%s (%s); %" PRIu64 " slab%s and %"
			PRIu64 " region%s (%s) back to the device\n",
			pool->id, md_device_backend(pool->dev), rep.held_blocks,
			plural(rep.held_blocks),
			md_format_size(rep.held_bytes, a, sizeof(a)),
			rep.recycled_blocks, plural(rep.recycled_blocks),
			md_format_size(rep.recycled_bytes, b, sizeof(b)),
			rep.slabs_released, plural(rep.slabs_released),
			rep.regions_released, plural(rep.regions_released),
			md_format_size(rep.region_bytes_released, d,
				       sizeof(d)));
		for (i = 0; i < c.n; i++) {
			const struct blk_rec *r = &c.v[i];

			fprintf(report,
				"  held: %s %s block of %" PRIu64
				" B (requested %" PRIu64 " B) at dev_va 0x%" PRIx64
				", holders %u, generation %u, tag ",
				md_block_state_name(r->state),
				md_pool_tier_name(r->tier), r->size,
				r->requested, r->dev_va, r->holders,
				r->generation);
			report_str(report, r->tag);
			fputs(", site ", report);
			report_str(report, r->site);
			fputc('\n', report);
		}
	}
	free(c.v);

	total->recycled_blocks += rep.recycled_blocks;
	total->recycled_bytes += rep.recycled_bytes;
	total->slabs_released += rep.slabs_released;
	total->regions_released += rep.regions_released;
	total->region_bytes_released += rep.region_bytes_released;
	total->held_blocks += rep.held_blocks;
	total->held_bytes += rep.held_bytes;
	return (long)rep.held_blocks;
}

MD_API long md_memory_cleaner(struct md_pool *pool, FILE *report,
			      struct md_cleaner_report *out)
{
	struct md_cleaner_report rep = { 0 };
	long n = 0, r;

	if (pool) {
		n = clean_one(pool, report, &rep);
	} else {
		pthread_mutex_lock(&md_pool_list_lock);
		for (pool = md_pool_list; pool; pool = pool->next) {
			r = clean_one(pool, report, &rep);
			if (r < 0) {
				n = r;
				break;
			}
			n += r;
		}
		pthread_mutex_unlock(&md_pool_list_lock);
	}
	if (out)
		*out = rep;
	return n;
}
