// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Usage graphs: parsing, lifetimes, in-place and contiguity, barriers, and
 * the reuse levels (see include/metadef/graph.h for the format).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <metadef/graph.h>
#include <metadef/metadef.h>

#include "internal.h"
#include "plan_internal.h"

struct tensor {
	char *name;
	uint64_t size, align;	/* align 0: the graph's default */
	uint32_t flags;		/* MD_T_* */
	int def;		/* step of the producing op, -1: input */
	int last_use;		/* last step reading it, -1: none */
	int inplace_of;		/* input it may overwrite, or -1 */
	int view_of;		/* input it is a view of, or -1 */
	int group;		/* contiguity group, or -1 */
	unsigned int line;	/* where the parser met it, 0: by hand */
};

struct md_graph {
	struct tensor *t;
	size_t nt, tcap;
	int nsteps;
	int *stage;		/* stage of each step */
	size_t stage_cap;
	int nstages;
	int parallel;
	uint64_t align;		/* default alignment */
	int **groups;		/* contiguity groups: -1 terminated */
	unsigned int *group_line;	/* the parser's line of each, or 0 */
	size_t ngroups;
	/* name -> tensor id + 1 (0: empty), open addressing */
	int *slot;
	size_t mask;
};

MD_API int md_graph_new(struct md_graph **gp)
{
	struct md_graph *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	g->mask = 255;
	g->slot = calloc(g->mask + 1, sizeof(*g->slot));
	if (!g->slot) {
		free(g);
		return -ENOMEM;
	}
	g->align = 1;
	*gp = g;
	return 0;
}

MD_API void md_graph_free(struct md_graph *g)
{
	size_t i;

	if (!g)
		return;
	for (i = 0; i < g->nt; i++)
		free(g->t[i].name);
	for (i = 0; i < g->ngroups; i++)
		free(g->groups[i]);
	free(g->groups);
	free(g->group_line);
	free(g->t);
	free(g->stage);
	free(g->slot);
	free(g);
}

static uint64_t name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

MD_API int md_graph_find(const struct md_graph *g, const char *name)
{
	size_t i = name_hash(name) & g->mask;

	for (; g->slot[i]; i = (i + 1) & g->mask)
		if (!strcmp(g->t[g->slot[i] - 1].name, name))
			return g->slot[i] - 1;
	return -ENOENT;
}

static int rehash(struct md_graph *g)
{
	size_t mask = 2 * g->mask + 1, i;
	int *slot = calloc(mask + 1, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (i = 0; i < g->nt; i++) {
		size_t k = name_hash(g->t[i].name) & mask;

		while (slot[k])
			k = (k + 1) & mask;
		slot[k] = (int)i + 1;
	}
	free(g->slot);
	g->slot = slot;
	g->mask = mask;
	return 0;
}

static int valid_name(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.-/", *s))
			return 0;
	return 1;
}

static int new_tensor(struct md_graph *g, const char *name, uint64_t size,
		      uint64_t align, int def)
{
	struct tensor *t;
	size_t k;

	if (!name || !valid_name(name) || (align & (align - 1)))
		return -EINVAL;
	if (md_graph_find(g, name) >= 0)
		return -EEXIST;
	if (g->nt >= INT32_MAX - 1)
		return -ERANGE;
	t = md_grow(g->t, g->nt, &g->tcap, sizeof(*t), 64);
	if (!t)
		return -ENOMEM;
	g->t = t;
	if (2 * (g->nt + 1) > g->mask && rehash(g))
		return -ENOMEM;
	t = &g->t[g->nt];
	memset(t, 0, sizeof(*t));
	t->name = strdup(name);
	if (!t->name)
		return -ENOMEM;
	t->size = size;
	t->align = align;
	t->def = def;
	t->last_use = -1;
	t->inplace_of = -1;
	t->view_of = -1;
	t->group = -1;
	k = name_hash(name) & g->mask;
	while (g->slot[k])
		k = (k + 1) & g->mask;
	g->slot[k] = (int)g->nt + 1;
	return (int)g->nt++;
}

static int new_step(struct md_graph *g)
{
	int *n;

	if (g->nsteps >= INT32_MAX - 1)
		return -ERANGE;
	n = md_grow(g->stage, g->nsteps, &g->stage_cap, sizeof(*n), 64);
	if (!n)
		return -ENOMEM;
	g->stage = n;
	g->stage[g->nsteps] = g->nstages;
	return g->nsteps++;
}

MD_API int md_graph_set_device(struct md_graph *g, enum md_device_kind dev,
			       const struct md_align_cfg *cfg)
{
	struct md_align_cfg def;

	if (!cfg) {
		md_align_cfg_default(&def);
		cfg = &def;
	}
	if ((unsigned int)dev >= MD_DEV_COUNT)
		return -EINVAL;
	g->align = md_align_for(cfg, dev, 0);
	return 0;
}

MD_API int md_graph_set_parallel(struct md_graph *g, int parallel)
{
	g->parallel = !!parallel;
	return 0;
}

MD_API int md_graph_input(struct md_graph *g, const char *name,
			  uint64_t size, uint64_t align)
{
	int id = new_tensor(g, name, size, align, -1);

	if (id >= 0)
		g->t[id].flags |= MD_T_INPUT;
	return id;
}

static int is_input_of(const int *in, size_t nin, int t)
{
	size_t j;

	for (j = 0; j < nin && in[j] != t; j++)
		;
	return j < nin;
}

MD_API int md_graph_op_view(struct md_graph *g, const char *name,
			    const int *in, size_t nin,
			    const char *const *out_names,
			    const uint64_t *out_sizes, const uint64_t *out_align,
			    const int *inplace, const int *view, size_t nout)
{
	int step, first = -1, id;
	size_t i;

	(void)name;
	for (i = 0; i < nin; i++)
		if (in[i] < 0 || (size_t)in[i] >= g->nt)
			return -ENOENT;
	for (i = 0; inplace && i < nout; i++)
		if (inplace[i] >= 0 && !is_input_of(in, nin, inplace[i]))
			return -EINVAL;	/* not an input of this op */
	for (i = 0; view && i < nout; i++) {
		if (view[i] < 0)
			continue;
		if (!is_input_of(in, nin, view[i]) ||
		    (inplace && inplace[i] >= 0) ||
		    out_sizes[i] > g->t[view[i]].size)
			return -EINVAL;
	}
	step = new_step(g);
	if (step < 0)
		return step;
	for (i = 0; i < nin; i++)
		g->t[in[i]].last_use = step;
	for (i = 0; i < nout; i++) {
		id = new_tensor(g, out_names[i], out_sizes[i],
				out_align ? out_align[i] : 0, step);
		if (id < 0)
			return id;
		if (inplace)
			g->t[id].inplace_of = inplace[i];
		if (view)
			g->t[id].view_of = view[i];
		if (first < 0)
			first = id;
	}
	return first < 0 ? (int)g->nt : first;
}

MD_API int md_graph_op(struct md_graph *g, const char *name, const int *in,
		       size_t nin, const char *const *out_names,
		       const uint64_t *out_sizes, const uint64_t *out_align,
		       const int *inplace, size_t nout)
{
	return md_graph_op_view(g, name, in, nin, out_names, out_sizes,
				out_align, inplace, NULL, nout);
}

MD_API int md_graph_view_of(const struct md_graph *g, int tensor)
{
	if (tensor < 0 || (size_t)tensor >= g->nt)
		return -ENOENT;
	return g->t[tensor].view_of;
}

MD_API int md_graph_barrier(struct md_graph *g)
{
	int step = new_step(g);

	if (step < 0)
		return step;
	g->nstages++;
	return 0;
}

MD_API int md_graph_output(struct md_graph *g, int tensor)
{
	if (tensor < 0 || (size_t)tensor >= g->nt)
		return -ENOENT;
	g->t[tensor].flags |= MD_T_OUTPUT;
	return 0;
}

MD_API int md_graph_contig(struct md_graph *g, const int *tensors, size_t n)
{
	unsigned int *nl;
	int **ng, *grp;
	size_t i, j;

	if (n < 2)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (tensors[i] < 0 || (size_t)tensors[i] >= g->nt)
			return -ENOENT;
		if (g->t[tensors[i]].group >= 0)
			return -EEXIST;
		if (g->t[tensors[i]].view_of >= 0)
			return -EINVAL;	/* a view has its base's place */
		for (j = 0; j < i; j++)
			if (tensors[j] == tensors[i])
				return -EEXIST;
	}
	grp = malloc((n + 1) * sizeof(*grp));
	ng = realloc(g->groups, (g->ngroups + 1) * sizeof(*ng));
	if (ng)
		g->groups = ng;
	nl = realloc(g->group_line, (g->ngroups + 1) * sizeof(*nl));
	if (nl)
		g->group_line = nl;
	if (!grp || !ng || !nl) {
		free(grp);
		return -ENOMEM;
	}
	g->group_line[g->ngroups] = 0;
	for (i = 0; i < n; i++) {
		grp[i] = tensors[i];
		g->t[tensors[i]].group = (int)g->ngroups;
	}
	grp[n] = -1;
	g->groups[g->ngroups++] = grp;
	return 0;
}

MD_API size_t md_graph_tensor_count(const struct md_graph *g)
{
	return g->nt;
}

MD_API const char *md_graph_tensor_name(const struct md_graph *g, int tensor)
{
	if (tensor < 0 || (size_t)tensor >= g->nt)
		return NULL;
	return g->t[tensor].name;
}

static uint64_t umax(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static uint64_t tensor_align(const struct md_graph *g, const struct tensor *t)
{
	return t->align ? t->align : g->align;
}

/*
 * Contiguity group @k laid out: each member's offset inside the group
 * (into @inner, indexed by tensor; may be NULL), the group's size and
 * alignment. -EOVERFLOW when it does not fit in 64 bits.
 */
static int group_layout(const struct md_graph *g, size_t k, uint64_t *inner,
			uint64_t *size, uint64_t *align)
{
	const int *m = g->groups[k];
	uint64_t end = 0, a = 1;
	size_t i;

	for (i = 0; m[i] >= 0; i++) {
		const struct tensor *u = &g->t[m[i]];
		uint64_t ua = tensor_align(g, u), r = end % ua;

		if (r && __builtin_add_overflow(end, ua - r, &end))
			return -EOVERFLOW;
		if (inner)
			inner[m[i]] = end;
		if (__builtin_add_overflow(end, u->size, &end))
			return -EOVERFLOW;
		a = umax(a, ua);
	}
	*size = end;
	*align = a;
	return 0;
}

/* The size and alignment of tensor @i's buffer before in-place merges. */
static int own_buffer(const struct md_graph *g, size_t i, uint64_t *size,
		      uint64_t *align)
{
	const struct tensor *t = &g->t[i];

	if (t->group < 0) {
		*size = t->size;
		*align = tensor_align(g, t);
		return 0;
	}
	return group_layout(g, t->group, NULL, size, align);
}

MD_API uint64_t md_graph_tensor_size(const struct md_graph *g, int tensor)
{
	if (tensor < 0 || (size_t)tensor >= g->nt)
		return 0;
	return g->t[tensor].size;
}

MD_API uint64_t md_graph_tensor_align(const struct md_graph *g, int tensor)
{
	if (tensor < 0 || (size_t)tensor >= g->nt)
		return 0;
	return tensor_align(g, &g->t[tensor]);
}

/* ------------------------------------------------------------ parser */


#define MAX_TOK 256

static int tokenize(char *s, char **tok)
{
	int n = 0;

	for (;;) {
		while (*s == ' ' || *s == '\t' || *s == '\r')
			s++;
		if (!*s || *s == '#')
			return n;
		if (n == MAX_TOK)
			return -1;
		tok[n++] = s;
		while (*s && *s != ' ' && *s != '\t' && *s != '\r' &&
		       *s != '#')
			s++;
		if (*s == '#') {
			*s = '\0';
			return n;
		}
		if (*s)
			*s++ = '\0';
	}
}

static int size_arg(const char *s, const char *what, unsigned int ln,
		    uint64_t *v, struct md_error *err)
{
	int ret;

	if (*s == '-')
		return md_parse_fail(err, ln, "negative %s '%s'", what, s);
	ret = md_parse_size(s, v);
	if (ret == -ERANGE)
		return md_parse_fail(err, ln, "%s '%s' does not fit in 64 bits", what,
			    s);
	if (ret)
		return md_parse_fail(err, ln, "bad %s '%s'", what, s);
	return 0;
}

static int tensor_arg(struct md_graph *g, const char *s, unsigned int ln,
		      struct md_error *err)
{
	int id = md_graph_find(g, s);

	if (id < 0)
		return md_parse_fail(err, ln, "unknown tensor '%s' (not an input, not made by an earlier op)",
			    s);
	return id;
}

static int parse_align(const char *s, unsigned int ln, uint64_t *v,
		       struct md_error *err)
{
	int ret = size_arg(s, "alignment", ln, v, err);

	if (ret)
		return ret;
	if (!*v || (*v & (*v - 1)))
		return md_parse_fail(err, ln, "alignment %s is not a power of two", s);
	return 0;
}

static int parse_op(struct md_graph *g, char **tok, int n, unsigned int ln,
		    struct md_error *err)
{
	int in[MAX_TOK], inplace[MAX_TOK], view[MAX_TOK];
	const char *names[MAX_TOK];
	uint64_t sizes[MAX_TOK], aligns[MAX_TOK];
	int nin = 0, nout = 0, i, arrow = -1, ret;

	if (n < 2)
		return md_parse_fail(err, ln, "op without a name");
	for (i = 2; i < n; i++)
		if (!strcmp(tok[i], "->"))
			arrow = i;
	if (arrow < 0)
		return md_parse_fail(err, ln, "op '%s': missing '->' between inputs and outputs",
			    tok[1]);
	for (i = 2; i < arrow; i++) {
		ret = tensor_arg(g, tok[i], ln, err);
		if (ret < 0)
			return ret;
		in[nin++] = ret;
	}
	for (i = arrow + 1; i < n; i++) {
		char *name = tok[i], *sz = strchr(name, ':'), *at, *eq, *vw;

		vw = strchr(name, '^');
		if (vw)
			*vw++ = '\0';
		if (!sz && !vw)
			return md_parse_fail(err, ln, "output '%s' needs a size (NAME:SIZE)",
				    name);
		if (sz)
			*sz++ = '\0';
		eq = sz ? strchr(sz, '=') : NULL;
		if (eq)
			*eq++ = '\0';
		at = sz ? strchr(sz, '@') : NULL;
		if (at)
			*at++ = '\0';
		if (!valid_name(name))
			return md_parse_fail(err, ln, "bad tensor name '%s'", name);
		view[nout] = -1;
		if (vw) {
			if (eq)
				return md_parse_fail(err, ln, "'%s': a view ('^') is not written in place ('=')",
					    name);
			ret = tensor_arg(g, vw, ln, err);
			if (ret < 0)
				return ret;
			if (!is_input_of(in, nin, ret))
				return md_parse_fail(err, ln, "'%s^%s': a view needs an input of this op",
					    name, vw);
			view[nout] = ret;
		}
		if (sz) {
			ret = size_arg(sz, "size", ln, &sizes[nout], err);
			if (ret)
				return ret;
		} else {
			sizes[nout] = g->t[view[nout]].size;
		}
		if (vw && sizes[nout] > g->t[view[nout]].size)
			return md_parse_fail(err, ln, "view '%s' (%" PRIu64 " bytes) is larger than its base '%s' (%" PRIu64 " bytes)",
				    name, sizes[nout], vw,
				    g->t[view[nout]].size);
		aligns[nout] = 0;
		if (at) {
			ret = parse_align(at, ln, &aligns[nout], err);
			if (ret)
				return ret;
		}
		inplace[nout] = -1;
		if (eq) {
			int k;

			ret = tensor_arg(g, eq, ln, err);
			if (ret < 0)
				return ret;
			for (k = 0; k < nin && in[k] != ret; k++)
				;
			if (k == nin)
				return md_parse_fail(err, ln, "'%s=%s': in place needs an input of this op",
					    name, eq);
			inplace[nout] = ret;
		}
		if (md_graph_find(g, name) >= 0)
			return md_parse_fail(err, ln, "tensor '%s' already defined",
				    name);
		names[nout++] = name;
	}
	if (!nout)
		return md_parse_fail(err, ln, "op '%s' has no outputs", tok[1]);
	ret = md_graph_op_view(g, tok[1], in, nin, names, sizes, aligns,
			       inplace, view, nout);
	if (ret == -EEXIST)
		return md_parse_fail(err, ln, "an output of op '%s' is named twice",
			    tok[1]);
	if (ret < 0)
		return ret;
	for (i = 0; i < nout; i++)
		g->t[ret + i].line = ln;
	return 0;
}

static int parse_line(struct md_graph *g, char *line, unsigned int ln,
		      struct md_error *err)
{
	char *tok[MAX_TOK];
	int n = tokenize(line, tok), ret, i;
	uint64_t v, a = 0;

	if (n < 0)
		return md_parse_fail(err, ln, "too many words on one line (max %d)",
			    MAX_TOK);
	if (!n)
		return 0;
	if (!strcmp(tok[0], "op"))
		return parse_op(g, tok, n, ln, err);
	if (!strcmp(tok[0], "input")) {
		if (n != 3 && n != 4)
			return md_parse_fail(err, ln, "usage: input NAME SIZE [ALIGN]");
		ret = size_arg(tok[2], "size", ln, &v, err);
		if (!ret && n == 4)
			ret = parse_align(tok[3], ln, &a, err);
		if (ret)
			return ret;
		if (!valid_name(tok[1]))
			return md_parse_fail(err, ln, "bad tensor name '%s'", tok[1]);
		ret = md_graph_input(g, tok[1], v, a);
		if (ret == -EEXIST)
			return md_parse_fail(err, ln, "tensor '%s' already defined",
				    tok[1]);
		if (ret < 0)
			return ret;
		g->t[ret].line = ln;
		return 0;
	}
	if (!strcmp(tok[0], "output")) {
		if (n < 2)
			return md_parse_fail(err, ln, "usage: output NAME...");
		for (i = 1; i < n; i++) {
			ret = tensor_arg(g, tok[i], ln, err);
			if (ret < 0)
				return ret;
			md_graph_output(g, ret);
		}
		return 0;
	}
	if (!strcmp(tok[0], "barrier")) {
		if (n != 1)
			return md_parse_fail(err, ln, "barrier takes no arguments");
		return md_graph_barrier(g);
	}
	if (!strcmp(tok[0], "contig")) {
		int ids[MAX_TOK];

		if (n < 3)
			return md_parse_fail(err, ln, "usage: contig NAME NAME...");
		for (i = 1; i < n; i++) {
			ret = tensor_arg(g, tok[i], ln, err);
			if (ret < 0)
				return ret;
			ids[i - 1] = ret;
		}
		ret = md_graph_contig(g, ids, n - 1);
		if (ret == -EEXIST)
			return md_parse_fail(err, ln, "a tensor may be in one contig group, once");
		if (ret == -EINVAL)
			return md_parse_fail(err, ln, "a view cannot be in a contig group (it has its base's place)");
		if (!ret)
			g->group_line[g->ngroups - 1] = ln;
		return ret;
	}
	if (!strcmp(tok[0], "mode")) {
		if (n == 2 && !strcmp(tok[1], "parallel"))
			return md_graph_set_parallel(g, 1);
		if (n == 2 && !strcmp(tok[1], "sequential"))
			return md_graph_set_parallel(g, 0);
		return md_parse_fail(err, ln, "usage: mode sequential|parallel");
	}
	if (!strcmp(tok[0], "device")) {
		enum md_device_kind dev;

		if (n != 2 || md_device_parse(tok[1], &dev))
			return md_parse_fail(err, ln, "usage: device cpu|gpu|npu");
		return md_graph_set_device(g, dev, NULL);
	}
	if (!strcmp(tok[0], "align")) {
		if (n != 2)
			return md_parse_fail(err, ln, "usage: align N");
		ret = parse_align(tok[1], ln, &g->align, err);
		return ret;
	}
	return md_parse_fail(err, ln, "unknown statement '%s' (op, input, output, barrier, contig, mode, device, align)",
		    tok[0]);
}

/*
 * Every buffer apart, with its alignment padding, must fit in 64 bits (the
 * planner's own limit, md_plan_solve()): checked once the whole graph is
 * read, since "align" and "device" may come after the tensors.
 */
static int check_sizes(const struct md_graph *g, struct md_error *err)
{
	uint64_t total = 0, size, align;
	size_t i;

	for (i = 0; i < g->ngroups; i++) {
		if (!group_layout(g, i, NULL, &size, &align))
			continue;
		return md_parse_fail(err, g->group_line[i],
				     "contig group starting with '%s': its tensors and their alignment padding need more than 2^64-1 bytes",
				     g->t[g->groups[i][0]].name);
	}
	for (i = 0; i < g->nt; i++) {
		const struct tensor *t = &g->t[i];

		if (t->group >= 0 && g->groups[t->group][0] != (int)i)
			continue;	/* a group counts once */
		own_buffer(g, i, &size, &align);
		if (__builtin_add_overflow(total, size, &total) ||
		    __builtin_add_overflow(total, align - 1, &total))
			return md_parse_fail(err, t->line,
					     "with tensor '%s' the tensors and their alignment padding need more than 2^64-1 bytes",
					     t->name);
	}
	return 0;
}

MD_API int md_graph_parse(struct md_graph *g, const char *text, size_t len,
			  struct md_error *err)
{
	unsigned int ln = 0;
	size_t pos = 0;
	char *line = NULL;
	int ret = 0, statements = 0;

	/* A UTF-8 byte order mark, as some editors write, is no text. */
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) {
		text += 3;
		len -= 3;
	}
	if (err) {
		err->line = 0;
		err->msg[0] = '\0';
	}
	while (pos < len && !ret) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - (text + pos)) : len - pos;

		ln++;
		line = malloc(l + 1);
		if (!line)
			return -ENOMEM;
		memcpy(line, text + pos, l);
		line[l] = '\0';
		pos += l + 1;
		statements |= line[strspn(line, " \t\r")] &&
			      line[strspn(line, " \t\r")] != '#';
		ret = md_check_line(line, l, ln, err);
		if (!ret)
			ret = parse_line(g, line, ln, err);
		free(line);
	}
	if (!ret && !statements)
		ret = md_parse_fail(err, 0, "empty input: no statements");
	else if (!ret && !g->nt)
		ret = md_parse_fail(err, ln, "no tensors: expected input/op lines");
	if (!ret)
		ret = check_sizes(g, err);
	return ret;
}

/* ------------------------------------------------------------ lowering */

MD_API void md_graph_plan_free(struct md_graph_plan *gp)
{
	md_problem_free(&gp->problem);
	md_plan_free(&gp->plan);
	free(gp->buffer);
	free(gp->offset);
	free(gp->lower);
	free(gp->upper);
	free(gp->alias);
	free(gp->kind);
	memset(gp, 0, sizeof(*gp));
}

/* Make the id of a buffer from the names of its tensors: "a+b+c". */
static int add_name(char **id, const char *name)
{
	size_t a = *id ? strlen(*id) : 0, b = strlen(name);
	char *n = realloc(*id, a + b + 2);

	if (!n)
		return -ENOMEM;
	if (a)
		n[a++] = '+';
	memcpy(n + a, name, b + 1);
	*id = n;
	return 0;
}

/*
 * Tensor lifetimes into @lower, @upper (see graph.h: "Time"). @sstart,
 * @send: room for nstages + 1 entries each.
 */
static void lifetimes(const struct md_graph *g, uint64_t *lower,
		      uint64_t *upper, uint64_t *sstart, uint64_t *send)
{
	uint64_t T = g->nsteps ? (uint64_t)g->nsteps : 1;
	size_t i;

	/* Stages: [first step, last step + 1) of each. */
	for (i = 0; i <= (size_t)g->nstages; i++) {
		sstart[i] = T;
		send[i] = 0;
	}
	for (i = 0; i < (size_t)g->nsteps; i++) {
		int s = g->stage[i];

		sstart[s] = i < sstart[s] ? i : sstart[s];
		send[s] = umax(send[s], i + 1);
	}
	for (i = 0; i < g->nt; i++) {
		const struct tensor *t = &g->t[i];
		uint64_t lo, hi;

		lo = t->def < 0 ? 0 : (uint64_t)t->def;
		if (t->last_use >= 0)
			hi = (uint64_t)t->last_use + 1;
		else
			hi = lo + 1;
		if (t->flags & MD_T_INPUT)
			hi = T;
		if (t->flags & MD_T_OUTPUT)
			hi = T;
		if (hi > T)
			hi = T;
		if (hi <= lo)
			hi = lo + 1;
		if (g->parallel && g->nsteps) {
			/* Alive for every whole stage it touches. */
			int s0 = g->stage[lo < T ? lo : T - 1];
			int s1 = g->stage[hi - 1 < T ? hi - 1 : T - 1];

			if (sstart[s0] < lo)
				lo = sstart[s0];
			if (send[s1] > hi)
				hi = send[s1];
		}
		lower[i] = lo;
		upper[i] = hi;
	}
}

/*
 * The alias facts both the lowering and the validator decide on: @root[i]
 * the tensor i is a view of at the end of its view chain (i itself if it
 * is no view); @flast[r] for a root r, the last step that reads r or any
 * view of it (INT_MAX when one is a graph input or output).
 */
static void view_roots(const struct md_graph *g, int *root, int *flast)
{
	size_t i;

	for (i = 0; i < g->nt; i++) {
		const struct tensor *t = &g->t[i];

		root[i] = t->view_of >= 0 ? root[t->view_of] : (int)i;
		flast[i] = t->flags & (MD_T_INPUT | MD_T_OUTPUT) ? INT_MAX :
			   t->last_use;
	}
	for (i = g->nt; i-- > 0;) {
		int r = root[i];

		if (r != (int)i && flast[i] > flast[r])
			flast[r] = flast[i];
	}
}

/*
 * May tensor @i be written in place into its request's memory? @taken
 * marks the roots already written into.
 */
static int inplace_ok(const struct md_graph *g, size_t i, const int *root,
		      const int *flast, const int *taken)
{
	const struct tensor *t = &g->t[i];
	int r = root[t->inplace_of];

	return flast[r] <= t->def && !taken[r] && g->t[r].group < 0;
}

/* Max bytes alive at once with every tensor (or group) a buffer apart. */
static uint64_t noalias_bound(const struct md_graph *g, const uint64_t *lo,
			      const uint64_t *hi, uint64_t T)
{
	uint64_t *d = calloc(T + 2, sizeof(*d)), cur = 0, best = 0, sz, al;
	size_t i, k;

	if (!d)
		return 0;
	for (i = 0; i < g->nt; i++) {
		const struct tensor *t = &g->t[i];
		uint64_t l = lo[i], h = hi[i];

		if (t->group >= 0) {
			const int *m = g->groups[t->group];

			if (m[0] != (int)i)
				continue;
			for (k = 0; m[k] >= 0; k++) {
				l = lo[m[k]] < l ? lo[m[k]] : l;
				h = umax(h, hi[m[k]]);
			}
		}
		own_buffer(g, i, &sz, &al);
		d[l] += sz;
		d[h] -= sz;
	}
	for (i = 0; i <= T; i++) {
		cur += d[i];
		best = umax(best, cur);
	}
	free(d);
	return best;
}

/*
 * @no_grow: refuse the in-place merges that would make the input's buffer
 * larger (an output larger than its input): the buffer would hold the
 * larger size for the input's whole life. @grown (may be NULL) counts the
 * merges taken that did.
 */
static int lower(const struct md_graph *g, struct md_graph_plan *gp,
		 int no_grow, unsigned int *grown)
{
	size_t nt = g->nt, i, nb = 0;
	uint64_t T = g->nsteps ? (uint64_t)g->nsteps : 1;
	uint64_t *sstart = NULL, *send = NULL;
	uint64_t *bsize = NULL, *balign = NULL, *blo = NULL, *bhi = NULL;
	uint64_t *inner = NULL;
	int *taken = NULL, *grp_buf = NULL, *root = NULL, *flast = NULL;
	char **bname = NULL;
	int ret = -ENOMEM;

	memset(gp, 0, sizeof(*gp));
	md_problem_init(&gp->problem);
	gp->ntensors = nt;
	gp->buffer = calloc(nt + 1, sizeof(*gp->buffer));
	gp->offset = calloc(nt + 1, sizeof(*gp->offset));
	gp->lower = calloc(nt + 1, sizeof(*gp->lower));
	gp->upper = calloc(nt + 1, sizeof(*gp->upper));
	inner = calloc(nt + 1, sizeof(*inner));
	bsize = calloc(nt + 1, sizeof(*bsize));
	balign = calloc(nt + 1, sizeof(*balign));
	blo = calloc(nt + 1, sizeof(*blo));
	bhi = calloc(nt + 1, sizeof(*bhi));
	bname = calloc(nt + 1, sizeof(*bname));
	taken = calloc(nt + 1, sizeof(*taken));
	root = calloc(nt + 1, sizeof(*root));
	flast = calloc(nt + 1, sizeof(*flast));
	gp->alias = malloc((nt + 1) * sizeof(*gp->alias));
	gp->kind = calloc(nt + 1, sizeof(*gp->kind));
	grp_buf = malloc((g->ngroups + 1) * sizeof(*grp_buf));
	sstart = calloc(g->nstages + 2, sizeof(*sstart));
	send = calloc(g->nstages + 2, sizeof(*send));
	if (!gp->buffer || !gp->offset || !gp->lower || !gp->upper ||
	    !inner || !bsize || !balign || !blo || !bhi || !bname || !taken ||
	    !grp_buf || !sstart || !send || !root || !flast || !gp->alias ||
	    !gp->kind)
		goto out;
	for (i = 0; i < nt; i++)
		gp->alias[i] = -1;

	lifetimes(g, gp->lower, gp->upper, sstart, send);
	view_roots(g, root, flast);

	/* Buffers: contiguity groups, in-place merges, the rest. */
	for (i = 0; i < g->ngroups; i++)
		grp_buf[i] = -1;
	for (i = 0; i < nt; i++) {
		const struct tensor *t = &g->t[i];
		uint64_t al = tensor_align(g, t);
		int src = t->inplace_of;
		size_t b;

		if (t->group >= 0) {
			if (grp_buf[t->group] < 0) {
				const int *m = g->groups[t->group];
				size_t k;

				b = nb++;
				grp_buf[t->group] = (int)b;
				blo[b] = UINT64_MAX;
				if (group_layout(g, t->group, inner, &bsize[b],
						 &balign[b])) {
					ret = -EOVERFLOW;
					goto out;
				}
				for (k = 0; m[k] >= 0; k++) {
					const struct tensor *u = &g->t[m[k]];

					if (gp->lower[m[k]] < blo[b])
						blo[b] = gp->lower[m[k]];
					bhi[b] = umax(bhi[b], gp->upper[m[k]]);
					gp->buffer[m[k]] = (uint32_t)b;
					if (add_name(&bname[b], u->name))
						goto out;
				}
			}
			if (src >= 0)
				gp->stats.inplace_refused++;
			continue;
		}
		if (t->view_of >= 0) {
			size_t sb = gp->buffer[t->view_of];

			/* Its base's bytes: the buffer lives as long as both. */
			gp->buffer[i] = (uint32_t)sb;
			inner[i] = inner[t->view_of];
			gp->alias[i] = t->view_of;
			gp->kind[i] = MD_ALIAS_VIEW;
			gp->stats.views++;
			gp->stats.intra_op_saved += t->size;
			bhi[sb] = umax(bhi[sb], gp->upper[i]);
			if (gp->lower[i] < blo[sb])
				blo[sb] = gp->lower[i];
			continue;
		}
		if (src >= 0) {
			size_t sb = gp->buffer[src];
			uint64_t sa = balign[sb];

			/*
			 * Legal when nothing reads that memory after this
			 * op (the input, its views, its base: see
			 * view_roots()), none is a graph input/output or in
			 * a group, no other output took it, and alignments
			 * nest.
			 */
			if (inplace_ok(g, i, root, flast, taken) &&
			    (sa % al == 0 || al % sa == 0) &&
			    !(no_grow && t->size > bsize[sb])) {
				if (grown && t->size > bsize[sb])
					(*grown)++;
				taken[root[src]] = 1;
				gp->alias[i] = src;
				gp->kind[i] = MD_ALIAS_INPLACE;
				gp->buffer[i] = (uint32_t)sb;
				gp->stats.intra_op_saved += t->size <
					bsize[sb] ? t->size : bsize[sb];
				bsize[sb] = umax(bsize[sb], t->size);
				balign[sb] = umax(sa, al);
				bhi[sb] = umax(bhi[sb], gp->upper[i]);
				if (gp->lower[i] < blo[sb])
					blo[sb] = gp->lower[i];
				if (add_name(&bname[sb], t->name))
					goto out;
				gp->stats.inplace_taken++;
				continue;
			}
			gp->stats.inplace_refused++;
		}
		b = nb++;
		gp->buffer[i] = (uint32_t)b;
		bsize[b] = t->size;
		balign[b] = al;
		blo[b] = gp->lower[i];
		bhi[b] = gp->upper[i];
		if (add_name(&bname[b], t->name))
			goto out;
	}
	for (i = 0; i < nb; i++) {
		ret = md_problem_add(&gp->problem, bname[i], blo[i], bhi[i],
				     bsize[i], balign[i]);
		if (ret)
			goto out;
		if (__builtin_add_overflow(gp->stats.buffer_bytes, bsize[i],
					   &gp->stats.buffer_bytes)) {
			ret = -EOVERFLOW;
			goto out;
		}
	}
	gp->problem.has_align = 1;
	for (i = 0; i < nt; i++) {
		if (__builtin_add_overflow(gp->stats.tensor_bytes, g->t[i].size,
					   &gp->stats.tensor_bytes)) {
			ret = -EOVERFLOW;
			goto out;
		}
		gp->offset[i] = inner[i];	/* until planned */
	}
	gp->stats.lower_bound = md_problem_lower_bound(&gp->problem, NULL);
	gp->stats.lower_bound_noalias = noalias_bound(g, gp->lower, gp->upper,
						      T);
	ret = 0;
out:
	for (i = 0; bname && i < nt; i++)
		free(bname[i]);
	free(bname);
	free(inner);
	free(bsize);
	free(balign);
	free(blo);
	free(bhi);
	free(taken);
	free(root);
	free(flast);
	free(grp_buf);
	free(sstart);
	free(send);
	if (ret)
		md_graph_plan_free(gp);
	return ret;
}

MD_API int md_graph_lower(const struct md_graph *g, struct md_graph_plan *gp)
{
	return lower(g, gp, 0, NULL);
}

static int solve(const struct md_graph *g, const struct md_plan_opts *opts,
		 struct md_graph_plan *gp, int no_grow, unsigned int *grown)
{
	size_t i;
	int ret;

	ret = lower(g, gp, no_grow, grown);
	if (ret)
		return ret;
	ret = md_plan_solve(&gp->problem, opts, &gp->plan);
	if (ret) {
		md_graph_plan_free(gp);
		return ret;
	}
	for (i = 0; i < gp->ntensors; i++)
		gp->offset[i] += gp->plan.offsets[gp->buffer[i]];
	gp->stats.peak = gp->plan.peak;
	gp->stats.inter_op_saved = gp->stats.buffer_bytes > gp->plan.peak ?
		gp->stats.buffer_bytes - gp->plan.peak : 0;
	return 0;
}

/*
 * In place into a smaller input may raise the peak: when the plan took
 * such a merge, plan again without those and keep the better of the two
 * (the first on a tie).
 */
MD_API int md_graph_plan(const struct md_graph *g,
			 const struct md_plan_opts *opts,
			 struct md_graph_plan *gp)
{
	struct md_graph_plan alt;
	unsigned int grown = 0;
	int ret;

	ret = solve(g, opts, gp, 0, &grown);
	if (ret || !grown)
		return ret;
	if (solve(g, opts, &alt, 1, NULL))
		return 0;	/* the first plan stands */
	if (alt.plan.peak < gp->plan.peak) {
		md_graph_plan_free(gp);
		*gp = alt;
	} else {
		md_graph_plan_free(&alt);
	}
	return 0;
}

/* ------------------------------------------------------------ validation */

struct toff {
	uint64_t off;
	size_t idx;
};

static int cmp_toff(const void *a, const void *b)
{
	const struct toff *x = a, *y = b;

	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static size_t uf_find(size_t *set, size_t i)
{
	while (set[i] != i) {
		set[i] = set[set[i]];
		i = set[i];
	}
	return i;
}

static void conflict_fill(struct md_conflict *c, const uint64_t *lo,
			  const uint64_t *hi, const uint64_t *off,
			  const struct md_graph *g, size_t a, size_t b)
{
	if (!c)
		return;
	memset(c, 0, sizeof(*c));
	c->a = a;
	c->a_lower = lo[a];
	c->a_upper = hi[a];
	c->a_off = off[a];
	c->a_end = off[a] + g->t[a].size;
	c->b = b;
	if (b == (size_t)-1)
		return;
	c->b_lower = lo[b];
	c->b_upper = hi[b];
	c->b_off = off[b];
	c->b_end = off[b] + g->t[b].size;
}

MD_API int md_graph_plan_validate(const struct md_graph *g,
				  const struct md_graph_plan *gp,
				  struct md_conflict *c)
{
	size_t nt = g->nt, i, j, *set = NULL;
	uint64_t *lo = NULL, *hi = NULL, *sstart = NULL, *send = NULL;
	const uint64_t *off = gp->offset;
	uint64_t arena = gp->stats.peak;
	int *root = NULL, *flast = NULL, *taken = NULL, ret = -ENOMEM;
	struct toff *ord = NULL;

	if (gp->ntensors != nt)
		return -EINVAL;
	lo = calloc(nt + 1, sizeof(*lo));
	hi = calloc(nt + 1, sizeof(*hi));
	sstart = calloc(g->nstages + 2, sizeof(*sstart));
	send = calloc(g->nstages + 2, sizeof(*send));
	root = calloc(nt + 1, sizeof(*root));
	flast = calloc(nt + 1, sizeof(*flast));
	taken = calloc(nt + 1, sizeof(*taken));
	set = calloc(nt + 1, sizeof(*set));
	ord = calloc(nt + 1, sizeof(*ord));
	if (!lo || !hi || !sstart || !send || !root || !flast || !taken ||
	    !set || !ord)
		goto out;
	lifetimes(g, lo, hi, sstart, send);
	view_roots(g, root, flast);

	/* Who may share memory with whom: sets of tensors, in graph order. */
	for (i = 0; i < nt; i++) {
		const struct tensor *t = &g->t[i];
		uint64_t end;

		set[i] = i;
		ret = -EINVAL;
		if (__builtin_add_overflow(off[i], t->size, &end) ||
		    (arena && t->size && end > arena)) {
			conflict_fill(c, lo, hi, off, g, i, (size_t)-1);
			goto out;
		}
		if (t->view_of >= 0) {
			if (off[i] != off[t->view_of] ||
			    t->size > g->t[t->view_of].size) {
				conflict_fill(c, lo, hi, off, g, i, (size_t)-1);
				goto out;
			}
			set[i] = uf_find(set, t->view_of);
			continue;
		}
		if (t->size && off[i] % tensor_align(g, t)) {
			conflict_fill(c, lo, hi, off, g, i, (size_t)-1);
			goto out;
		}
		if (t->inplace_of >= 0 && t->group < 0 &&
		    off[i] == off[t->inplace_of] &&
		    inplace_ok(g, i, root, flast, taken)) {
			taken[root[t->inplace_of]] = 1;
			set[i] = uf_find(set, t->inplace_of);
		}
	}

	/* Pairs overlapping in memory, by offset; then in time. */
	for (i = 0; i < nt; i++)
		ord[i] = (struct toff){ off[i], i };
	qsort(ord, nt, sizeof(*ord), cmp_toff);
	ret = 0;
	for (i = 0; i < nt && !ret; i++) {
		size_t a = ord[i].idx;
		uint64_t end = off[a] + g->t[a].size;

		if (!g->t[a].size)
			continue;
		for (j = i + 1; j < nt && ord[j].off < end; j++) {
			size_t b = ord[j].idx;

			if (!g->t[b].size || lo[a] >= hi[b] || lo[b] >= hi[a] ||
			    uf_find(set, a) == uf_find(set, b))
				continue;
			conflict_fill(c, lo, hi, off, g, a, b);
			ret = -EEXIST;
			break;
		}
	}
out:
	free(lo);
	free(hi);
	free(sstart);
	free(send);
	free(root);
	free(flast);
	free(taken);
	free(set);
	free(ord);
	return ret;
}

MD_API int md_overlay(const uint64_t *peaks, size_t n, uint64_t *base,
		      struct md_overlay_stats *st)
{
	uint64_t sum = 0, arena = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (sum + peaks[i] < sum)
			return -EOVERFLOW;
		sum += peaks[i];
		arena = umax(arena, peaks[i]);
		if (base)
			base[i] = 0;
	}
	st->sum_peaks = sum;
	st->arena = arena;
	st->saved = sum - arena;
	return 0;
}
