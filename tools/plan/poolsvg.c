// SPDX-License-Identifier: GPL-2.0
/*
 * metadef-plan --pool: a series of pool snapshots (md_snapshot()'s JSON
 * objects one after another, as a runtime appends them to a file) drawn
 * as SVG: one rectangle per block life (a block's address and generation,
 * from the first snapshot that lists it to the last), x = snapshot, y =
 * device address. Addresses are far apart between regions: the address
 * ranges in use are laid out one above the other with a small gap, each
 * labelled with its first address.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <metadef/metadef.h>

#include "poolsvg.h"

struct life {
	uint64_t dev_va, size;
	uint32_t gen;
	char tier[12];
	char *tag;
	size_t first, last;	/* snapshots */
	double y;		/* bytes from the bottom of the drawing */
};

struct series {
	struct life *v;
	size_t n, cap;
	size_t snaps;
};

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0, k;

	if (!f)
		return NULL;
	do {
		if (cap - n < 65536) {
			char *nb = realloc(buf, cap + 65536 + 1);

			if (!nb) {
				free(buf);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
			cap += 65536;
		}
		k = fread(buf + n, 1, cap - n, f);
		n += k;
	} while (k);
	if (ferror(f)) {
		free(buf);
		fclose(f);
		errno = EIO;
		return NULL;
	}
	fclose(f);
	buf[n] = '\0';
	return buf;
}

/* The JSON string at @s (after its opening quote), escapes kept. */
static char *json_string(const char *s, const char **end)
{
	const char *p = s;
	char *out;

	while (*p && *p != '"')
		p += (*p == '\\' && p[1]) ? 2 : 1;
	if (!*p)
		return NULL;
	out = strndup(s, (size_t)(p - s));
	*end = p + 1;
	return out;
}

static int field_u64(const char *s, const char *key, const char *stop,
		     uint64_t *v)
{
	const char *p = strstr(s, key);
	char *e;

	if (!p || (stop && p > stop))
		return -1;
	p += strlen(key);
	errno = 0;
	*v = strtoull(p, &e, 10);
	return e == p || errno ? -1 : 0;
}

/* The life of (@dev_va, @gen) seen in snapshot @snap: extend or add. */
static struct life *find_life(struct series *s, uint64_t dev_va,
			      uint32_t gen, const char *tier, size_t snap)
{
	size_t i;

	/* Lives still open end in the previous snapshot: few of them. */
	for (i = s->n; i-- > 0;) {
		struct life *l = &s->v[i];

		if (l->last + 1 < snap)
			continue;
		if (l->dev_va == dev_va && l->gen == gen &&
		    !strcmp(l->tier, tier) && l->last + 1 == snap)
			return l;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct life *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		s->v = v;
		s->cap = cap;
	}
	memset(&s->v[s->n], 0, sizeof(s->v[0]));
	s->v[s->n].dev_va = dev_va;
	s->v[s->n].gen = gen;
	snprintf(s->v[s->n].tier, sizeof(s->v[0].tier), "%s", tier);
	s->v[s->n].first = snap;
	s->v[s->n].last = snap - 1;	/* set by the caller */
	return &s->v[s->n++];
}

/* Every block of every snapshot of @text. Return: 0 or -EINVAL/-ENOMEM. */
static int parse(const char *text, struct series *s)
{
	const char *snap = strstr(text, "{\"version\":");

	while (snap) {
		const char *next = strstr(snap + 1, "{\"version\":");
		const char *b = strstr(snap, "\"blocks\":[");

		if (!b || (next && b > next))
			return -EINVAL;
		for (b = strstr(b, "{\"tier\":\""); b && (!next || b < next);
		     b = strstr(b, "{\"tier\":\"")) {
			const char *stop = strchr(b + 1, '{');
			uint64_t va, size, gen;
			struct life *l;
			char tier[12];
			size_t k;

			b += strlen("{\"tier\":\"");
			for (k = 0; b[k] && b[k] != '"' && k < sizeof(tier) - 1;
			     k++)
				tier[k] = b[k];
			tier[k] = '\0';
			if (b[k] != '"' ||
			    field_u64(b, "\"dev_va\":", stop, &va) ||
			    field_u64(b, "\"size\":", stop, &size) ||
			    field_u64(b, "\"generation\":", stop, &gen))
				return -EINVAL;
			l = find_life(s, va, (uint32_t)gen, tier, s->snaps);
			if (!l)
				return -ENOMEM;
			l->size = size;
			l->last = s->snaps;
			b = strstr(b, "\"tag\":");
			if (!b)
				return -EINVAL;
			b += strlen("\"tag\":");
			if (*b == '"' && !l->tag) {
				l->tag = json_string(b + 1, &b);
				if (!l->tag)
					return -EINVAL;
			}
		}
		s->snaps++;
		snap = next;
	}
	return s->snaps ? 0 : -EINVAL;
}

static int by_va(const void *a, const void *b)
{
	const struct life *x = *(struct life *const *)a;
	const struct life *y = *(struct life *const *)b;

	return x->dev_va < y->dev_va ? -1 : x->dev_va > y->dev_va;
}

static void xml_text(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else if ((unsigned char)*s >= 0x20 && *s != 0x7f)
			fputc(*s, f);
	}
}

static const char *tier_fill(const char *tier)
{
	if (!strcmp(tier, "slab"))
		return "#9ecae1";
	if (!strcmp(tier, "buddy"))
		return "#a1d99b";
	if (!strcmp(tier, "large"))
		return "#fdae6b";
	if (!strcmp(tier, "dynamic"))
		return "#bcbddc";
	return "#cccccc";
}

/*
 * Lay the address ranges in use out bottom up (lives sorted by address in
 * @o), a gap of @gap bytes between ranges that do not touch; the starts
 * of the ranges into @seg_va/@seg_y (room for s->n). Return: the height.
 */
static double layout(struct series *s, struct life **o, double gap,
		     uint64_t *seg_va, double *seg_y, size_t *nseg)
{
	uint64_t end = 0;
	double base = 0;	/* y of address seg_va[k] */
	size_t i;

	*nseg = 0;
	for (i = 0; i < s->n; i++) {
		struct life *l = o[i];

		if (!*nseg || l->dev_va > end) {
			if (*nseg)
				base += (double)(end - seg_va[*nseg - 1]) + gap;
			seg_va[*nseg] = l->dev_va;
			seg_y[*nseg] = base;
			(*nseg)++;
		}
		l->y = base + (double)(l->dev_va - seg_va[*nseg - 1]);
		if (l->dev_va + l->size > end)
			end = l->dev_va + l->size;
	}
	return *nseg ? base + (double)(end - seg_va[*nseg - 1]) : 1;
}

static int draw(const struct series *s, struct life **o, const char *in,
		const char *path, const char *prog)
{
	const double W = 1200, H = 720, L = 150, R = 40, T = 56, B = 56;
	double pw = W - L - R, ph = H - T - B, total, xs, ys, gap;
	uint64_t *seg_va = calloc(s->n + 1, sizeof(*seg_va)), bytes = 0;
	double *seg_y = calloc(s->n + 1, sizeof(*seg_y));
	size_t i, nseg;
	char a[32];
	FILE *f;

	if (!seg_va || !seg_y) {
		free(seg_va);
		free(seg_y);
		fprintf(stderr, "%s: %s\n", prog, strerror(ENOMEM));
		return 1;
	}
	for (i = 0; i < s->n; i++)
		bytes += s->v[i].size;
	gap = bytes ? (double)bytes / 40 : 1;
	total = layout((struct series *)s, o, gap, seg_va, seg_y, &nseg);
	xs = pw / (double)(s->snaps ? s->snaps : 1);
	ys = ph / (total > 0 ? total : 1);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		free(seg_va);
		free(seg_y);
		return 1;
	}
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
		"height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\""
		"DejaVu Sans, Arial, sans-serif\" font-size=\"13\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
		"<text x=\"%.0f\" y=\"22\" font-size=\"16\" "
		"font-weight=\"bold\">", W, H, W, H, L);
	xml_text(f, in);
	fprintf(f, "</text>\n<text x=\"%.0f\" y=\"42\" fill=\"#444\">%zu "
		"snapshots, %zu blocks; colour: slab, buddy, large, dynamic"
		"</text>\n", L, s->snaps, s->n);
	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\""
		" fill=\"#fafafa\" stroke=\"#999\"/>\n", L, T, pw, ph);
	for (i = 0; i < nseg; i++)
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
			"fill=\"#444\">%#" PRIx64 "</text>\n", L - 6,
			T + ph - seg_y[i] * ys, seg_va[i]);
	for (i = 0; i < s->snaps; i++)
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
			"fill=\"#444\">%zu</text>\n", L + ((double)i + 0.5) * xs,
			T + ph + 18, i);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">"
		"snapshot</text>\n<text transform=\"translate(18 %.1f) "
		"rotate(-90)\" text-anchor=\"middle\">device address</text>\n",
		L + pw / 2, H - 10, T + ph / 2);
	for (i = 0; i < s->n; i++) {
		const struct life *l = &s->v[i];
		double h = (double)l->size * ys;

		fprintf(f, "<rect class=\"block\" x=\"%.2f\" y=\"%.2f\" "
			"width=\"%.2f\" height=\"%.2f\" fill=\"%s\" "
			"stroke=\"#333\" stroke-width=\"0.4\"><title>",
			L + (double)l->first * xs,
			T + ph - (l->y + (double)l->size) * ys,
			(double)(l->last + 1 - l->first) * xs, h > 0.3 ? h : 0.3,
			tier_fill(l->tier));
		xml_text(f, l->tag ? l->tag : "(no tag)");
		fprintf(f, " %s %s at %#" PRIx64 ", generation %u, snapshots "
			"%zu..%zu</title></rect>\n", l->tier,
			md_format_size(l->size, a, sizeof(a)), l->dev_va, l->gen,
			l->first, l->last);
	}
	fprintf(f, "</svg>\n");
	free(seg_va);
	free(seg_y);
	if (fclose(f)) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		return 1;
	}
	return 0;
}

int pool_svg(const char *prog, const char *in, const char *svg)
{
	struct series s = { 0 };
	struct life **o = NULL;
	char *text = read_all(in);
	int rc = 1, err;
	size_t i;

	if (!text) {
		fprintf(stderr, "%s: %s: %s\n", prog, in, strerror(errno));
		return 1;
	}
	err = parse(text, &s);
	if (err) {
		fprintf(stderr, err == -ENOMEM ? "%s: %s: %s\n" :
			"%s: %s: not a series of pool snapshots (md_snapshot())"
			"%.0s\n", prog, in, strerror(ENOMEM));
		goto out;
	}
	o = malloc((s.n + 1) * sizeof(*o));
	if (!o) {
		fprintf(stderr, "%s: %s\n", prog, strerror(ENOMEM));
		goto out;
	}
	for (i = 0; i < s.n; i++)
		o[i] = &s.v[i];
	qsort(o, s.n, sizeof(*o), by_va);
	printf("%s: %zu snapshots, %zu blocks\n", in, s.snaps, s.n);
	rc = svg ? draw(&s, o, in, svg, prog) : 0;
out:
	for (i = 0; i < s.n; i++)
		free(s.v[i].tag);
	free(s.v);
	free(o);
	free(text);
	return rc;
}
