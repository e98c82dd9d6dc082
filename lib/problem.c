// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Planning problems: the buffer list, MiniMalloc CSV in and out, the lower
 * bound. Nothing here knows about solvers.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <metadef/plan.h>

#include "internal.h"
#include "plan_internal.h"

MD_API void md_problem_init(struct md_problem *p)
{
	memset(p, 0, sizeof(*p));
}

MD_API void md_problem_free(struct md_problem *p)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		free(p->bufs[i].id);
	free(p->bufs);
	md_problem_init(p);
}

MD_API int md_problem_add(struct md_problem *p, const char *id,
			  uint64_t lower, uint64_t upper, uint64_t size,
			  uint64_t align)
{
	struct md_buffer *b, *nb;

	if (upper <= lower)
		return -EINVAL;
	if (!align)
		align = 1;
	nb = md_grow(p->bufs, p->n, &p->cap, sizeof(*nb), 64);
	if (!nb)
		return -ENOMEM;
	p->bufs = nb;
	b = &p->bufs[p->n];
	memset(b, 0, sizeof(*b));
	if (id) {
		b->id = strdup(id);
		if (!b->id)
			return -ENOMEM;
	}
	b->lower = lower;
	b->upper = upper;
	b->size = size;
	b->align = align;
	p->n++;
	return 0;
}

MD_API uint64_t md_problem_total(const struct md_problem *p)
{
	uint64_t t = 0;
	size_t i;

	for (i = 0; i < p->n; i++)
		t += p->bufs[i].size;
	return t;
}

MD_API uint64_t md_problem_lower_bound(const struct md_problem *p,
				       uint64_t *t_end)
{
	struct md_kv *lo, *up;
	uint64_t live = 0, best = 0, end = 0;
	size_t i, e = 0, n = p->n;

	for (i = 0; i < n; i++)
		if (p->bufs[i].upper > end)
			end = p->bufs[i].upper;
	if (t_end)
		*t_end = end;
	lo = malloc((n + 1) * sizeof(*lo));
	up = malloc((n + 1) * sizeof(*up));
	for (i = 0; lo && up && i < n; i++) {
		lo[i] = (struct md_kv){ p->bufs[i].lower, (uint32_t)i };
		up[i] = (struct md_kv){ p->bufs[i].upper, (uint32_t)i };
	}
	if (!lo || !up || md_sort_kv(lo, n) || md_sort_kv(up, n)) {
		/* Without memory, the largest buffer is still a bound. */
		for (i = 0; i < n; i++)
			if (p->bufs[i].size > best)
				best = p->bufs[i].size;
		goto out;
	}
	/* Half-open: what ends at t is gone before what starts at t. */
	for (i = 0; i < n; i++) {
		while (up[e].key <= lo[i].key)
			live -= p->bufs[up[e++].idx].size;
		live += p->bufs[lo[i].idx].size;
		if (live > best)
			best = live;
	}
out:
	free(lo);
	free(up);
	return best;
}

/* ------------------------------------------------------------ CSV */

int md_parse_fail(struct md_error *err, unsigned int line, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		err->line = line;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* Length of the UTF-8 sequence at @s (@n bytes left), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;	/* continuation byte, overlong lead, > U+10FFFF */
	if (n < len)
		return 0;
	/* No overlong forms, no surrogates, nothing past U+10FFFF. */
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

int md_check_line(const char *s, size_t len, unsigned int ln,
		  struct md_error *err)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, k;

	while (i < len) {
		if (u[i] == '\0')
			return md_parse_fail(err, ln, "NUL byte in the input");
		if (u[i] == '\r' && i + 1 < len)
			return md_parse_fail(err, ln, "carriage return inside a line at column %zu (lines end with \\n or \\r\\n)",
					     i + 1);
		if ((u[i] < 0x20 && u[i] != '\t' && u[i] != '\r') ||
		    u[i] == 0x7f)
			return md_parse_fail(err, ln, "control character 0x%02x at column %zu",
					     u[i], i + 1);
		k = utf8_len(u + i, len - i);
		if (!k)
			return md_parse_fail(err, ln, "not valid UTF-8: byte 0x%02x at column %zu",
					     u[i], i + 1);
		i += k;
	}
	return 0;
}

/* Strict unsigned decimal: digits only, no sign, fits in 64 bits. */
int md_parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		unsigned int d;

		if (*s < '0' || *s > '9')
			return -EINVAL;
		d = *s - '0';
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* Trim blanks in place; returns the start. */
static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

/* An open-addressing set of strings, to find duplicate ids. */
struct strset {
	const char **slot;
	size_t mask;
};

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static int strset_init(struct strset *s, size_t n)
{
	size_t cap = 64;

	while (cap < 2 * n)
		cap <<= 1;
	s->slot = calloc(cap, sizeof(*s->slot));
	s->mask = cap - 1;
	return s->slot ? 0 : -ENOMEM;
}

/* 0 when added, -EEXIST when present, -ENOSPC when full (grow first). */
static int strset_add(struct strset *s, const char *str)
{
	size_t i = str_hash(str) & s->mask, k;

	for (k = 0; k <= s->mask; k++, i = (i + 1) & s->mask) {
		if (!s->slot[i]) {
			s->slot[i] = str;
			return 0;
		}
		if (!strcmp(s->slot[i], str))
			return -EEXIST;
	}
	return -ENOSPC;
}

enum { COL_ID, COL_LOWER, COL_UPPER, COL_SIZE, COL_ALIGN, COL_OFFSET,
       COL_NR };

static const char *const col_names[COL_NR] = {
	"id", "lower", "upper", "size", "alignment", "offset"
};

#define MAX_COLS 16

static int split(char *line, char **f, int max)
{
	int n = 0;
	char *c;

	for (;;) {
		c = strchr(line, ',');
		if (c)
			*c = '\0';
		if (n < max)
			f[n] = trim(line);
		n++;
		if (!c)
			break;
		line = c + 1;
	}
	return n;
}

/*
 * A header of one field that starts with a column name and goes on with
 * another separator ("id;lower;upper;size"): which one, or NULL.
 */
static const char *other_separator(const char *s)
{
	static const struct { char c; const char *name; } seps[] = {
		{ ';', "';'" }, { '\t', "tabs" }, { '|', "'|'" },
		{ ' ', "blanks" }, { ':', "':'" },
	};
	size_t w = strspn(s, "abcdefghijklmnopqrstuvwxyz"), i, k;

	for (k = 0; k < COL_NR; k++)
		if (w == strlen(col_names[k]) && !strncmp(s, col_names[k], w))
			break;
	if (k == COL_NR)
		return NULL;
	for (i = 0; i < sizeof(seps) / sizeof(seps[0]); i++)
		if (s[w] == seps[i].c)
			return seps[i].name;
	return NULL;
}

static int parse_header(char *line, unsigned int ln, int *col, int *ncols,
			struct md_error *err)
{
	char *f[MAX_COLS];
	int n = split(line, f, MAX_COLS), i, k;
	const char *sep = n == 1 ? other_separator(f[0]) : NULL;

	if (sep)
		return md_parse_fail(err, ln, "the header's columns are separated by %s: MiniMalloc CSV separates them by ',' (id,lower,upper,size)",
				     sep);
	if (n > MAX_COLS)
		return md_parse_fail(err, ln, "too many columns in the header");
	for (k = 0; k < COL_NR; k++)
		col[k] = -1;
	for (i = 0; i < n; i++) {
		if (*f[i] == '"')
			return md_parse_fail(err, ln, "quoted column name %s: MiniMalloc CSV has no quoting",
					     f[i]);
		for (k = 0; k < COL_NR; k++)
			if (!strcmp(f[i], col_names[k]))
				break;
		if (k == COL_NR)
			return md_parse_fail(err, ln,
				    "unknown column '%s' (expected id, lower, upper, size[, alignment][, offset])",
				    f[i]);
		if (col[k] >= 0)
			return md_parse_fail(err, ln, "column '%s' given twice", f[i]);
		col[k] = i;
	}
	for (k = 0; k <= COL_SIZE; k++)
		if (col[k] < 0)
			return md_parse_fail(err, ln, "header lacks the '%s' column",
				    col_names[k]);
	*ncols = n;
	return 0;
}

static int parse_num(const char *s, const char *what, unsigned int ln,
		     uint64_t *v, struct md_error *err)
{
	int ret;

	if (!*s)
		return md_parse_fail(err, ln, "empty %s", what);
	if (*s == '-' && s[1])
		return md_parse_fail(err, ln, "negative %s '%s'", what, s);
	ret = md_parse_u64(s, v);
	if (ret == -ERANGE)
		return md_parse_fail(err, ln, "%s '%s' does not fit in 64 bits", what, s);
	if (ret)
		return md_parse_fail(err, ln, "bad %s '%s': not a non-negative integer",
			    what, s);
	return 0;
}

static int parse_row(struct md_problem *p, char *line, unsigned int ln,
		     const int *col, int ncols, struct strset *ids,
		     struct md_error *err)
{
	char *f[MAX_COLS];
	uint64_t v[COL_NR] = { 0 };
	struct md_buffer *b;
	int n = split(line, f, MAX_COLS), k, ret;
	int fixed = 0;

	if (n != ncols)
		return md_parse_fail(err, ln, "%d fields, the header has %d", n, ncols);
	for (k = 0; k < n; k++)
		if (*f[k] == '"')
			return md_parse_fail(err, ln, "quoted field %s: MiniMalloc CSV has no quoting",
					     f[k]);
	if (!*f[col[COL_ID]])
		return md_parse_fail(err, ln, "empty id");
	/* Written back id first, it would read as a comment. */
	if (*f[col[COL_ID]] == '#')
		return md_parse_fail(err, ln, "id '%s' starts with '#'", f[col[COL_ID]]);
	for (k = COL_LOWER; k < COL_NR; k++) {
		if (col[k] < 0)
			continue;
		if (k == COL_OFFSET && !*f[col[k]])
			continue;	/* not fixed */
		ret = parse_num(f[col[k]], col_names[k], ln, &v[k], err);
		if (ret)
			return ret;
		if (k == COL_OFFSET)
			fixed = 1;
	}
	if (v[COL_UPPER] <= v[COL_LOWER])
		return md_parse_fail(err, ln,
			    "upper %" PRIu64 " must be greater than lower %" PRIu64 " (intervals are [lower, upper))",
			    v[COL_UPPER], v[COL_LOWER]);
	if (col[COL_ALIGN] >= 0 && !v[COL_ALIGN])
		return md_parse_fail(err, ln, "alignment must be at least 1");
	if (fixed && v[COL_ALIGN] && v[COL_OFFSET] % v[COL_ALIGN])
		return md_parse_fail(err, ln, "offset %" PRIu64 " is not a multiple of alignment %" PRIu64,
			    v[COL_OFFSET], v[COL_ALIGN]);
	if (fixed && v[COL_OFFSET] + v[COL_SIZE] < v[COL_OFFSET])
		return md_parse_fail(err, ln, "offset + size overflows");
	ret = md_problem_add(p, f[col[COL_ID]], v[COL_LOWER], v[COL_UPPER],
			     v[COL_SIZE], v[COL_ALIGN]);
	if (ret)
		return ret == -ENOMEM ? ret : md_parse_fail(err, ln, "bad buffer");
	b = &p->bufs[p->n - 1];
	if (fixed) {
		b->flags |= MD_BUF_FIXED;
		b->offset = v[COL_OFFSET];
	}
	ret = strset_add(ids, b->id);
	if (ret == -EEXIST)
		return md_parse_fail(err, ln, "duplicate id '%s'", b->id);
	return ret;
}

static int rehash(struct strset *s, const struct md_problem *p)
{
	size_t i;

	free(s->slot);
	if (strset_init(s, 2 * p->n + 64))
		return -ENOMEM;
	for (i = 0; i < p->n; i++)
		strset_add(s, p->bufs[i].id);
	return 0;
}

MD_API int md_problem_parse_csv(struct md_problem *p, const char *text,
				size_t len, struct md_error *err)
{
	struct strset ids;
	int col[COL_NR], ncols = 0, ret = 0, have_header = 0;
	unsigned int ln = 0;
	size_t pos = 0;
	char *line = NULL;
	size_t line_cap = 0;

	/* A UTF-8 byte order mark, as some editors write, is no text. */
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) {
		text += 3;
		len -= 3;
	}
	if (err) {
		err->line = 0;
		err->msg[0] = '\0';
	}
	if (strset_init(&ids, 1024))
		return -ENOMEM;
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - (text + pos)) : len - pos;
		char *s;

		ln++;
		if (l + 1 > line_cap) {
			char *nb = realloc(line, l + 1);

			if (!nb) {
				ret = -ENOMEM;
				break;
			}
			line = nb;
			line_cap = l + 1;
		}
		memcpy(line, text + pos, l);
		line[l] = '\0';
		pos += l + 1;
		ret = md_check_line(line, l, ln, err);
		if (ret)
			break;
		s = trim(line);
		if (!*s || *s == '#')
			continue;
		if (!have_header) {
			ret = parse_header(s, ln, col, &ncols, err);
			if (ret)
				break;
			have_header = 1;
			p->has_align = col[COL_ALIGN] >= 0;
			p->has_offset = col[COL_OFFSET] >= 0;
			continue;
		}
		if (2 * p->n + 2 > ids.mask && rehash(&ids, p)) {
			ret = -ENOMEM;
			break;
		}
		ret = parse_row(p, s, ln, col, ncols, &ids, err);
		if (ret)
			break;
	}
	if (!ret && !have_header)
		ret = md_parse_fail(err, 0, "empty input: no header line (id,lower,upper,size)");
	free(line);
	free(ids.slot);
	return ret;
}

struct sbuf {
	char *s;
	size_t len, cap;
	int err;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->err)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->err = -EINVAL;
			return;
		}
		if ((size_t)n < b->cap - b->len) {
			b->len += n;
			return;
		}
		{
			size_t cap = 2 * b->cap + n + 64;
			char *ns = realloc(b->s, cap);

			if (!ns) {
				b->err = -ENOMEM;
				return;
			}
			b->s = ns;
			b->cap = cap;
		}
	}
}

MD_API int md_problem_write_csv(const struct md_problem *p,
				const uint64_t *offsets, char **out)
{
	struct sbuf b = { NULL, 0, 0, 0 };
	size_t i;

	b.s = malloc(256);
	if (!b.s)
		return -ENOMEM;
	b.cap = 256;
	b.s[0] = '\0';
	sb_printf(&b, "id,lower,upper,size%s%s\n",
		  p->has_align ? ",alignment" : "",
		  offsets ? ",offset" : "");
	for (i = 0; i < p->n; i++) {
		const struct md_buffer *x = &p->bufs[i];

		if (x->id)
			sb_printf(&b, "%s,", x->id);
		else
			sb_printf(&b, "%zu,", i);
		sb_printf(&b, "%" PRIu64 ",%" PRIu64 ",%" PRIu64,
			  x->lower, x->upper, x->size);
		if (p->has_align)
			sb_printf(&b, ",%" PRIu64, x->align);
		if (offsets)
			sb_printf(&b, ",%" PRIu64, offsets[i]);
		sb_printf(&b, "\n");
	}
	if (b.err) {
		free(b.s);
		return b.err;
	}
	*out = b.s;
	return 0;
}
