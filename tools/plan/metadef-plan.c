// SPDX-License-Identifier: GPL-2.0
/*
 * metadef-plan: plan the memory of a graph, an ONNX model or a MiniMalloc
 * CSV problem, report how good the plan is, write it as CSV, JSON or an SVG
 * timeline.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <metadef/graph.h>
#include <metadef/metadef.h>
#include <metadef/onnx.h>
#include <metadef/plan.h>

#include "exact.h"
#include "poolsvg.h"
#include "progress.h"

static const char *prog = "metadef-plan";
static int all_strategies = 1;	/* no -S */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [options] FILE...\n"
		"\n"
		"Plan the offsets of every buffer of FILE: a MiniMalloc CSV problem\n"
		"(id,lower,upper,size[,alignment][,offset]; [lower, upper) half-open),\n"
		"a graph (one op per line, see include/metadef/graph.h) or an ONNX\n"
		"model (FILE.onnx; shapes inferred here, see include/metadef/onnx.h;\n"
		"weights and graph inputs resident). Prints the buffers, the lower\n"
		"bound (most bytes alive at once), the peak, their ratio, the saving\n"
		"against no reuse and the time the planner took; for a graph also the\n"
		"bound without aliasing (every tensor its own memory: no views, no in\n"
		"place) and the in-place requests taken and the views.\n"
		"Several FILEs are models that never run at the same time: each is\n"
		"planned, then all share one arena (inter-model reuse).\n"
		"\n"
		"options:\n"
		"  -o, --output PLAN.csv    write the plan: the input's columns + offset;\n"
		"                           for a graph one row per tensor:\n"
		"                           id,lower,upper,size,alignment,offset,buffer\n"
		"                           (buffer: the block it shares, 'a+b')\n"
		"  -s, --svg PLAN.svg       draw the plan: x = time, y = offset\n"
		"  --pool                   FILE is a series of pool snapshots\n"
		"                           (md_snapshot() JSON, one after another):\n"
		"                           count them and their blocks; with --svg,\n"
		"                           one rectangle per block life, x = snapshot,\n"
		"                           y = device address (ranges in use stacked)\n"
		"  --export-csv PROB.csv    write the problem planned (for a graph\n"
		"                           or an ONNX model: one row per buffer) as\n"
		"                           MiniMalloc CSV, id,lower,upper,size\n"
		"                           [,alignment] ([lower, upper) as here;\n"
		"                           the alignment column when a buffer has\n"
		"                           one above 1), no offsets: the same\n"
		"                           problem read back with -f csv\n"
		"  -j, --json               print JSON instead of text; each model has\n"
		"                           \"buffer_plan\" (id, lower, upper, size,\n"
		"                           alignment, offset of every buffer) and for\n"
		"                           a graph \"tensor_plan\" (the same per tensor,\n"
		"                           its buffer, and \"view_of\" or \"inplace_of\"\n"
		"                           the tensor whose memory it shares)\n"
		"  -f, --format FORMAT      csv, graph or onnx (default: onnx for\n"
		"                           FILE.onnx, else from the first line: a graph\n"
		"                           keyword, or a CSV column name)\n"
		"  --input NAME=DIMS        ONNX: the shape of graph input NAME, e.g.\n"
		"                           --input x=1x3x224x224 (repeatable)\n"
		"  --dim NAME=N             ONNX: the value of symbolic dimension NAME\n"
		"                           (dim_param), e.g. --dim batch=8 (repeatable)\n"
		"  --dtype fp32|fp16|bf16   ONNX: store float tensors (weights and\n"
		"                           activations) as this type\n"
		"  --no-weights             ONNX: leave weights, constants and graph\n"
		"                           inputs out of the plan (memory of their own)\n"
		"  --fuse                   ONNX: fuse element-wise groups (GELU,\n"
		"                           bias + activation, ...) into one op each,\n"
		"                           their intermediates never in memory\n"
		"  -S, --strategy NAME      one strategy instead of all (see below)\n"
		"  -i, --improve N          N passes of local search after the strategies\n"
		"  -x, --exhaustive         all strategies even on large inputs\n"
		PLAN_EXACT_USAGE
		"  -V, --version            print the version and exit\n"
		"  -h, --help               this text\n"
		"\n"
		"strategies:",
		prog);
	for (int s = 0; s < MD_STRAT_COUNT; s++)
		fprintf(f, " %s", md_strategy_name(s));
	fprintf(f, "\n\nexit status: 0 ok, 1 bad input or failure, 2 bad usage\n");
}

/*
 * Flush and close an output: 0, or 1 with a message naming @name. A write
 * that failed earlier (ferror) fails it too, even if the flush does not.
 */
static int close_output(FILE *f, const char *name)
{
	int failed = ferror(f);

	errno = 0;
	if (fclose(f))
		failed = 1;
	if (!failed)
		return 0;
	fprintf(stderr, "%s: %s: %s\n", prog, name,
		errno ? strerror(errno) : "write error");
	return 1;
}

/*
 * The exit status once everything is printed: stdout must have made it.
 * It is flushed, not closed, so that main() can run again in one process
 * (the cli_fuzz target does); the error flag is reset for the same reason.
 */
static int finish(int rc)
{
	int failed = ferror(stdout);

	errno = 0;
	if (fflush(stdout))
		failed = 1;
	clearerr(stdout);
	if (!failed)
		return rc;
	fprintf(stderr, "%s: standard output: %s\n", prog,
		errno ? strerror(errno) : "write error");
	return 1;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

enum { FMT_GUESS, FMT_CSV, FMT_GRAPH, FMT_ONNX };

enum {
	OPT_ONNX_INPUT = 0x200,
	OPT_ONNX_DIM,
	OPT_ONNX_DTYPE,
	OPT_ONNX_NO_WEIGHTS,
	OPT_ONNX_FUSE,
	OPT_POOL,
	OPT_EXPORT_CSV,
};

/* ONNX import options from --input, --dim, --dtype, --no-weights, --fuse. */
struct onnx_args {
	struct md_onnx_opts o;
	struct md_onnx_input *inputs;
	struct md_onnx_dim *dims;
	int64_t (*shapes)[MD_ONNX_MAX_RANK];
	char **names;
	size_t nnames;
};

static void onnx_args_free(struct onnx_args *a)
{
	size_t i;

	for (i = 0; i < a->nnames; i++)
		free(a->names[i]);
	free(a->names);
	free(a->inputs);
	free(a->dims);
	free(a->shapes);
	memset(a, 0, sizeof(*a));
}

/* Keep a copy of @s (the NAME of NAME=...) up to @len bytes. */
static char *onnx_name(struct onnx_args *a, const char *s, size_t len)
{
	char **n = realloc(a->names, (a->nnames + 1) * sizeof(*n));

	if (!n)
		return NULL;
	a->names = n;
	n[a->nnames] = strndup(s, len);
	return n[a->nnames] ? n[a->nnames++] : NULL;
}

/*
 * --input NAME=DIMS (@dim 0) or --dim NAME=N (@dim 1): 0, 2 with a message
 * (bad usage) or 1 (no memory).
 */
static int onnx_arg(struct onnx_args *a, const char *arg, int dim)
{
	const char *eq = strrchr(arg, '=');
	const char *opt = dim ? "--dim" : "--input";
	int64_t v[MD_ONNX_MAX_RANK], (*sh)[MD_ONNX_MAX_RANK];
	struct md_onnx_input *in;
	size_t rank;
	char *name;
	int ret;

	if (!eq || eq == arg) {
		fprintf(stderr, "%s: %s '%s': expected NAME=%s\n", prog, opt, arg,
			dim ? "N (e.g. batch=8)" : "DIMS (e.g. x=1x3x224x224)");
		return 2;
	}
	ret = md_onnx_parse_dims(eq + 1, v, &rank);
	if (ret || (dim && rank != 1)) {
		fprintf(stderr, "%s: %s '%s': %s\n", prog, opt, arg,
			dim ? "the value must be one number >= 0" :
			ret == -ERANGE ? "a dimension past 2^63-1 or more than 16 of them" :
			"DIMS are numbers >= 0 separated by 'x' (e.g. 1x3x224x224)");
		return 2;
	}
	name = onnx_name(a, arg, (size_t)(eq - arg));
	if (!name)
		return 1;
	if (dim) {
		struct md_onnx_dim *d = realloc(a->dims, (a->o.ndims + 1) *
						sizeof(*d));

		if (!d)
			return 1;
		a->dims = d;
		d[a->o.ndims].name = name;
		d[a->o.ndims++].value = v[0];
		a->o.dims = a->dims;
		return 0;
	}
	in = realloc(a->inputs, (a->o.ninputs + 1) * sizeof(*in));
	if (!in)
		return 1;
	a->inputs = in;
	sh = realloc(a->shapes, (a->o.ninputs + 1) * sizeof(*sh));
	if (!sh)
		return 1;
	a->shapes = sh;
	memcpy(sh[a->o.ninputs], v, sizeof(v));
	in[a->o.ninputs].name = name;
	in[a->o.ninputs].rank = rank;
	a->o.ninputs++;
	/* The arrays may have moved: point every entry again. */
	for (size_t i = 0; i < a->o.ninputs; i++)
		a->inputs[i].dims = a->shapes[i];
	a->o.inputs = a->inputs;
	return 0;
}

/* Does @path end in ".onnx"? */
static int onnx_path(const char *path)
{
	size_t l = strlen(path);

	return l > 5 && !strcasecmp(path + l - 5, ".onnx");
}

/* Is @word (of @n letters) one of @list, ignoring case if @icase? */
static int is_word(const char *word, size_t n, const char *const *list,
		   int icase)
{
	for (; *list; list++)
		if (strlen(*list) == n &&
		    !(icase ? strncasecmp : strncmp)(word, *list, n))
			return 1;
	return 0;
}

/*
 * The format of @s, from its first statement line (a byte order mark,
 * blank lines and '#' comments skipped): a graph statement is a keyword
 * and a blank (or the end of the line), a CSV header starts with a column
 * name and a separator. Return: FMT_CSV, FMT_GRAPH, FMT_GUESS for an
 * empty input, -1 for neither (its line in *@ln).
 */
static int guess_format(const char *s, size_t len, unsigned int *ln)
{
	static const char *const graph[] = {
		"op", "input", "output", "barrier", "contig", "mode", "device",
		"align", NULL
	};
	static const char *const columns[] = {
		"id", "lower", "upper", "size", "alignment", "offset", NULL
	};
	size_t i = 0, w;

	if (len >= 3 && !memcmp(s, "\xef\xbb\xbf", 3))
		i = 3;
	for (*ln = 1; i < len; ++*ln) {
		size_t e = i;

		while (e < len && s[e] != '\n')
			e++;
		while (i < e && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
			i++;
		if (i < e && s[i] != '#') {
			for (w = 0; i + w < e && isalpha((unsigned char)s[i + w]);
			     w++)
				;
			if (is_word(s + i, w, graph, 0) &&
			    (i + w == e || strchr(" \t\r#", s[i + w])))
				return FMT_GRAPH;
			if (is_word(s + i, w, columns, 1) &&
			    (i + w == e || !isalnum((unsigned char)s[i + w])))
				return FMT_CSV;
			return -1;
		}
		i = e + 1;
	}
	return FMT_GUESS;
}

struct model {
	const char *path;
	int is_graph;			/* a graph file or an ONNX model */
	int is_onnx;
	struct md_onnx_stats onnx;
	struct md_problem prob;		/* CSV input */
	struct md_graph *graph;		/* graph input */
	struct md_graph_plan gp;	/* graph input */
	struct md_problem *p;		/* the one planned */
	struct md_plan *plan;
	struct md_plan own;
	double ms;
};

/*
 * A CSV with an offset column fixes those buffers (a plan read back, or
 * pre-placed buffers). Say which two overlap rather than failing later.
 */
static int report_fixed_conflict(const struct model *m)
{
	const struct md_problem *p = &m->prob;
	struct md_problem f;
	struct md_conflict c;
	uint64_t *off;
	size_t *map, i;
	int ret;

	md_problem_init(&f);
	f.bufs = malloc((p->n + 1) * sizeof(*f.bufs));
	off = malloc((p->n + 1) * sizeof(*off));
	map = malloc((p->n + 1) * sizeof(*map));
	if (!f.bufs || !off || !map) {
		free(f.bufs);
		free(off);
		free(map);
		return 0;	/* md_plan_solve() will say -ENOMEM */
	}
	for (i = 0; i < p->n; i++) {
		if (!(p->bufs[i].flags & MD_BUF_FIXED))
			continue;
		map[f.n] = i;
		off[f.n] = p->bufs[i].offset;
		f.bufs[f.n++] = p->bufs[i];
	}
	ret = md_plan_validate(&f, off, &c);
	if (ret == -EEXIST)
		fprintf(stderr, "%s: fixed offsets overlap: '%s' alive [%" PRIu64
			", %" PRIu64 ") at [%" PRIu64 ", %" PRIu64 ") and '%s' alive [%"
			PRIu64 ", %" PRIu64 ") at [%" PRIu64 ", %" PRIu64 ")\n",
			m->path, p->bufs[map[c.a]].id, c.a_lower, c.a_upper,
			c.a_off, c.a_end, p->bufs[map[c.b]].id, c.b_lower,
			c.b_upper, c.b_off, c.b_end);
	free(f.bufs);
	free(off);
	free(map);
	return ret == -EEXIST;
}

/*
 * A graph's plan checked per tensor (views, in place): a planner bug would
 * show here. 1 (printed) on a conflict.
 */
static int report_alias_conflict(const struct model *m)
{
	struct md_conflict c;
	int ret = md_graph_plan_validate(m->graph, &m->gp, &c);

	if (!ret || ret == -ENOMEM)
		return 0;
	if (ret == -EEXIST)
		fprintf(stderr, "%s: internal error: tensors '%s' [%" PRIu64 ", %"
			PRIu64 ") and '%s' [%" PRIu64 ", %" PRIu64
			") overlap at [%" PRIu64 ", %" PRIu64 ")\n", m->path,
			md_graph_tensor_name(m->graph, (int)c.a), c.a_lower,
			c.a_upper, md_graph_tensor_name(m->graph, (int)c.b),
			c.b_lower, c.b_upper, c.b_off, c.a_end);
	else
		fprintf(stderr, "%s: internal error: tensor '%s' misplaced\n",
			m->path, md_graph_tensor_name(m->graph, (int)c.a));
	return 1;
}

static void unload(struct model *m)
{
	md_graph_plan_free(&m->gp);
	md_graph_free(m->graph);
	md_plan_free(&m->own);
	md_problem_free(&m->prob);
	m->graph = NULL;
}

/*
 * The exact planner replaces the buffers' offsets; a graph's tensors then
 * move with their buffers, and its reuse figures follow the new peak.
 */
static int run_exact(struct model *m)
{
	struct md_graph_plan *gp = &m->gp;
	uint64_t *old = NULL;
	size_t i;

	if (m->is_graph) {
		old = malloc((m->p->n + 1) * sizeof(*old));
		if (!old) {
			fprintf(stderr, "%s: %s: %s\n", prog, m->path,
				strerror(ENOMEM));
			return 1;
		}
		memcpy(old, m->plan->offsets, m->p->n * sizeof(*old));
	}
	if (plan_exact_run(prog, m->path, m->p, m->plan)) {
		free(old);
		return 1;
	}
	if (!m->is_graph)
		return 0;
	for (i = 0; i < gp->ntensors; i++)
		gp->offset[i] = gp->offset[i] - old[gp->buffer[i]] +
				m->plan->offsets[gp->buffer[i]];
	gp->stats.peak = m->plan->peak;
	gp->stats.inter_op_saved = gp->stats.buffer_bytes > m->plan->peak ?
				   gp->stats.buffer_bytes - m->plan->peak : 0;
	free(old);
	return 0;
}

/* Read, parse and plan @path into @m: 0, or 1 (printed, @m freed). */
static int load(struct model *m, const char *path, int format,
		const struct md_plan_opts *o, const struct md_onnx_opts *oo)
{
	struct md_error err = { 0, "" };
	size_t len;
	char *text;
	double t0;
	int ret;

	memset(m, 0, sizeof(*m));
	md_problem_init(&m->prob);
	m->path = path;
	text = md_read_file(path, &len);
	if (!text) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		return 1;
	}
	if (!format && onnx_path(path))
		format = FMT_ONNX;
	if (!format) {
		unsigned int ln;

		format = guess_format(text, len, &ln);
		if (format == FMT_GUESS) {
			fprintf(stderr, "%s: empty input: no CSV header and no graph statement\n",
				path);
			free(text);
			goto fail;
		}
		if (format < 0) {
			fprintf(stderr, "%s:%u: neither a CSV header (id,lower,upper,size...) nor a graph statement (op, input, ...): say --format csv|graph\n",
				path, ln);
			free(text);
			goto fail;
		}
	}
	m->is_graph = format == FMT_GRAPH || format == FMT_ONNX;
	m->is_onnx = format == FMT_ONNX;
	if (m->is_onnx) {
		ret = md_graph_new(&m->graph);
		if (!ret)
			ret = md_graph_from_onnx(m->graph, text, len, oo,
						 &m->onnx, &err);
		if (ret == -EOVERFLOW && err.msg[0])
			ret = -EINVAL;	/* the message says it */
	} else if (m->is_graph) {
		ret = md_graph_new(&m->graph);
		if (!ret)
			ret = md_graph_parse(m->graph, text, len, &err);
	} else {
		ret = md_problem_parse_csv(&m->prob, text, len, &err);
	}
	free(text);
	if (ret) {
		if (ret == -EINVAL && err.line)
			fprintf(stderr, "%s:%u: %s\n", path, err.line, err.msg);
		else if (ret == -EINVAL)
			fprintf(stderr, "%s: %s\n", path, err.msg);
		else
			fprintf(stderr, "%s: %s: %s\n", prog, path,
				strerror(-ret));
		goto fail;
	}
	if (!m->is_graph && report_fixed_conflict(m))
		goto fail;
	t0 = now_ms();
	plan_progress_start(path);
	if (m->is_graph) {
		ret = md_graph_plan(m->graph, o, &m->gp);
		m->p = &m->gp.problem;
		m->plan = &m->gp.plan;
	} else {
		ret = md_plan_solve(&m->prob, o, &m->own);
		m->p = &m->prob;
		m->plan = &m->own;
	}
	plan_progress_end();
	if (ret == -EOVERFLOW) {
		fprintf(stderr, "%s: no plan within 64 bits: the buffers' sizes and alignment padding (and any fixed offset with what must go above it) exceed 2^64-1 bytes\n",
			path);
		goto fail;
	}
	if (ret) {
		fprintf(stderr, "%s: %s: planning failed: %s\n", prog, path,
			strerror(-ret));
		goto fail;
	}
	if (plan_exact_enabled() && run_exact(m))
		goto fail;
	m->ms = now_ms() - t0;
	if (m->is_graph && report_alias_conflict(m))
		goto fail;
	return 0;
fail:
	unload(m);
	return 1;
}

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 1.0;
}

/* Bytes without any reuse: every tensor (graph) or buffer (CSV) apart. */
static uint64_t no_reuse(const struct model *m)
{
	return m->is_graph ? m->gp.stats.tensor_bytes : m->plan->total;
}

static double saving(const struct model *m)
{
	uint64_t total = no_reuse(m);

	return total ? 100.0 * (1.0 - ratio(m->plan->peak, total)) : 0.0;
}

static const char *strat_label(const struct md_plan *pl, char *buf,
			       size_t len)
{
	snprintf(buf, len, "%s%s", md_strategy_name(pl->strategy),
		 pl->improved ? " + local search" : "");
	return buf;
}

static const char *fmt_name(const struct model *m)
{
	return m->is_onnx ? "onnx" : m->is_graph ? "graph" : "csv";
}

static void print_text(const struct model *m)
{
	const struct md_plan *pl = m->plan;
	char a[32], b[32], c[32], s[64];

	printf("%s (%s)\n", m->path, fmt_name(m));
	if (m->is_onnx) {
		const struct md_onnx_stats *os = &m->onnx;

		printf("  onnx nodes          %zu (opset %" PRId64 ", %zu shapes inferred)\n",
		       os->nodes, os->opset, os->inferred);
		printf("  weights             %" PRIu64 " (%s)\n",
		       os->weight_bytes,
		       md_format_size(os->weight_bytes, a, sizeof(a)));
		printf("  graph inputs        %" PRIu64 " (%s)\n",
		       os->input_bytes,
		       md_format_size(os->input_bytes, a, sizeof(a)));
		printf("  activations         %" PRIu64 " (%s)\n",
		       os->activation_bytes,
		       md_format_size(os->activation_bytes, a, sizeof(a)));
		printf("  ops in place        %zu marked\n", os->inplace);
		printf("  views               %zu marked\n", os->views);
		if (os->fused_ops)
			printf("  fused ops           %zu (of %zu nodes)\n",
			       os->fused_ops, os->fused_nodes);
	}
	if (m->is_graph)
		printf("  tensors             %zu\n", m->gp.ntensors);
	printf("  buffers             %zu\n", m->p->n);
	printf("  no reuse            %" PRIu64 " (%s)\n", no_reuse(m),
	       md_format_size(no_reuse(m), a, sizeof(a)));
	printf("  lower bound         %" PRIu64 " (%s)\n", pl->lower_bound,
	       md_format_size(pl->lower_bound, b, sizeof(b)));
	if (m->is_graph)
		printf("  bound (no alias)    %" PRIu64 " (%s)\n",
		       m->gp.stats.lower_bound_noalias,
		       md_format_size(m->gp.stats.lower_bound_noalias, b,
				      sizeof(b)));
	printf("  peak                %" PRIu64 " (%s)\n", pl->peak,
	       md_format_size(pl->peak, c, sizeof(c)));
	printf("  peak/lower bound    %.3f\n", ratio(pl->peak, pl->lower_bound));
	printf("  saving vs no reuse  %.1f %%\n", saving(m));
	printf("  strategy            %s\n", strat_label(pl, s, sizeof(s)));
	printf("  all strategies     ");
	for (int i = 0; i < MD_STRAT_COUNT; i++)
		if (pl->ran & (1u << i))
			printf(" %s %.3f", md_strategy_name(i),
			       ratio(pl->strategy_peak[i], pl->lower_bound));
	printf("%s\n", !all_strategies ||
	       pl->ran == (1u << MD_STRAT_COUNT) - 1 ? "" :
	       " (others skipped: work budget, see -x)");
	printf("  time                %.3f ms\n", m->ms);
	plan_exact_print(stdout);
	if (m->is_graph) {
		const struct md_reuse_stats *st = &m->gp.stats;

		printf("  intra-op reuse      %" PRIu64 " bytes (%u in place, %u refused, %u views)\n",
		       st->intra_op_saved, st->inplace_taken,
		       st->inplace_refused, st->views);
		printf("  inter-op reuse      %" PRIu64 " bytes\n",
		       st->inter_op_saved);
	}
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = *s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

/* A buffer's id; the index when it has none (a problem built by hand). */
static const char *buf_id(const struct md_problem *p, size_t i, char *tmp,
			  size_t len)
{
	if (p->bufs[i].id)
		return p->bufs[i].id;
	snprintf(tmp, len, "%zu", i);
	return tmp;
}

/*
 * "buffer_plan": every buffer planned with its offset; for a graph also
 * "tensor_plan": every tensor with its own offset and its buffer's id, and
 * "view_of" or "inplace_of" the tensor whose memory it shares.
 */
static void print_json_placements(const struct model *m)
{
	const struct md_problem *p = m->p;
	char tmp[32];
	size_t i;

	printf(", \"buffer_plan\": [");
	for (i = 0; i < p->n; i++) {
		const struct md_buffer *b = &p->bufs[i];

		printf("%s\n      {\"id\": ", i ? "," : "");
		json_str(stdout, buf_id(p, i, tmp, sizeof(tmp)));
		printf(", \"lower\": %" PRIu64 ", \"upper\": %" PRIu64
		       ", \"size\": %" PRIu64 ", \"alignment\": %" PRIu64
		       ", \"offset\": %" PRIu64 "}", b->lower, b->upper, b->size,
		       b->align, m->plan->offsets[i]);
	}
	printf("%s]", p->n ? "\n    " : "");
	if (!m->is_graph)
		return;
	printf(", \"tensor_plan\": [");
	for (i = 0; i < m->gp.ntensors; i++) {
		int t = (int)i;

		printf("%s\n      {\"id\": ", i ? "," : "");
		json_str(stdout, md_graph_tensor_name(m->graph, t));
		printf(", \"lower\": %" PRIu64 ", \"upper\": %" PRIu64
		       ", \"size\": %" PRIu64 ", \"alignment\": %" PRIu64
		       ", \"offset\": %" PRIu64 ", \"buffer\": ",
		       m->gp.lower[i], m->gp.upper[i],
		       md_graph_tensor_size(m->graph, t),
		       md_graph_tensor_align(m->graph, t), m->gp.offset[i]);
		json_str(stdout, buf_id(p, m->gp.buffer[i], tmp, sizeof(tmp)));
		if (m->gp.kind[i] != MD_ALIAS_NONE) {
			printf(", \"%s\": ", m->gp.kind[i] == MD_ALIAS_VIEW ?
			       "view_of" : "inplace_of");
			json_str(stdout, md_graph_tensor_name(m->graph,
							      m->gp.alias[i]));
		}
		printf("}");
	}
	printf("%s]", m->gp.ntensors ? "\n    " : "");
}

static void print_json(const struct model *m, int last)
{
	const struct md_plan *pl = m->plan;
	int s, first = 1;

	printf("    {\"file\": ");
	json_str(stdout, m->path);
	printf(", \"format\": \"%s\", \"buffers\": %zu, ", fmt_name(m),
	       m->p->n);
	if (m->is_onnx)
		printf("\"onnx\": {\"nodes\": %zu, \"tensors\": %zu, "
		       "\"inferred\": %zu, \"inplace\": %zu, \"views\": %zu, "
		       "\"fused_ops\": %zu, \"fused_nodes\": %zu, "
		       "\"weight_bytes\": %" PRIu64 ", \"input_bytes\": %" PRIu64
		       ", \"activation_bytes\": %" PRIu64 ", \"ir_version\": %"
		       PRId64 ", \"opset\": %" PRId64 "}, ",
		       m->onnx.nodes, m->onnx.tensors, m->onnx.inferred,
		       m->onnx.inplace, m->onnx.views, m->onnx.fused_ops,
		       m->onnx.fused_nodes, m->onnx.weight_bytes,
		       m->onnx.input_bytes, m->onnx.activation_bytes,
		       m->onnx.ir_version, m->onnx.opset);
	if (m->is_graph)
		printf("\"tensors\": %zu, \"lower_bound_noalias\": %" PRIu64
		       ", ", m->gp.ntensors, m->gp.stats.lower_bound_noalias);
	printf("\"no_reuse\": %" PRIu64 ", \"lower_bound\": %" PRIu64
	       ", \"peak\": %" PRIu64 ", \"peak_over_lower_bound\": %.4f, "
	       "\"saving_percent\": %.2f, \"strategy\": \"%s\", "
	       "\"local_search_improved\": %s, \"time_ms\": %.3f, ",
	       no_reuse(m), pl->lower_bound, pl->peak,
	       ratio(pl->peak, pl->lower_bound), saving(m),
	       md_strategy_name(pl->strategy), pl->improved ? "true" : "false",
	       m->ms);
	printf("\"strategies\": {");
	for (s = 0; s < MD_STRAT_COUNT; s++) {
		if (!(pl->ran & (1u << s)))
			continue;
		printf("%s\"%s\": %" PRIu64, first ? "" : ", ",
		       md_strategy_name(s), pl->strategy_peak[s]);
		first = 0;
	}
	printf("}");
	if (m->is_graph) {
		const struct md_reuse_stats *st = &m->gp.stats;

		printf(", \"reuse\": {\"tensor_bytes\": %" PRIu64
		       ", \"intra_op_saved\": %" PRIu64
		       ", \"inter_op_saved\": %" PRIu64
		       ", \"inplace_taken\": %u, \"inplace_refused\": %u"
		       ", \"views\": %u}",
		       st->tensor_bytes, st->intra_op_saved,
		       st->inter_op_saved, st->inplace_taken,
		       st->inplace_refused, st->views);
	}
	plan_exact_json(stdout);
	print_json_placements(m);
	printf("}%s\n", last ? "" : ",");
}

/*
 * A graph's plan: one row per tensor at its own offset, and the buffer
 * (merged by in-place and contig) it lives in.
 */
static void write_tensor_csv(const struct model *m, FILE *f)
{
	const struct md_graph_plan *gp = &m->gp;
	char tmp[32];
	size_t i;

	fprintf(f, "id,lower,upper,size,alignment,offset,buffer\n");
	for (i = 0; i < gp->ntensors; i++)
		fprintf(f, "%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			",%" PRIu64 ",%s\n",
			md_graph_tensor_name(m->graph, (int)i), gp->lower[i],
			gp->upper[i], md_graph_tensor_size(m->graph, (int)i),
			md_graph_tensor_align(m->graph, (int)i), gp->offset[i],
			buf_id(m->p, gp->buffer[i], tmp, sizeof(tmp)));
}

/*
 * --export-csv: the problem that was planned, without offsets. A graph's
 * problem has no alignment column of its own; it gets one when any
 * buffer asks for more than 1, so that reading it back is the same
 * problem.
 */
static int export_csv(const struct model *m, const char *path)
{
	struct md_problem q = *m->p;
	char *out = NULL;
	size_t i;
	FILE *f;
	int ret;

	for (i = 0; i < q.n; i++) {
		if (q.bufs[i].align > 1)
			q.has_align = 1;
		if (q.bufs[i].flags & MD_BUF_FIXED) {
			fprintf(stderr, "%s: --export-csv: buffer %zu has a fixed offset, which the export cannot say\n",
				prog, i);
			return 1;
		}
	}
	ret = md_problem_write_csv(&q, NULL, &out);
	if (ret) {
		fprintf(stderr, "%s: %s\n", prog, strerror(-ret));
		return 1;
	}
	f = strcmp(path, "-") ? fopen(path, "w") : stdout;
	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		free(out);
		return 1;
	}
	fputs(out, f);
	free(out);
	return f == stdout ? 0 : close_output(f, path);
}

static int write_csv(const struct model *m, const char *path)
{
	char *out = NULL;
	FILE *f;
	int ret = 0;

	if (!m->is_graph)
		ret = md_problem_write_csv(m->p, m->plan->offsets, &out);
	if (ret) {
		fprintf(stderr, "%s: %s\n", prog, strerror(-ret));
		return 1;
	}
	/* stdout is checked with the rest of it, by finish(). */
	f = strcmp(path, "-") ? fopen(path, "w") : stdout;
	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		free(out);
		return 1;
	}
	if (m->is_graph)
		write_tensor_csv(m, f);
	else
		fputs(out, f);
	free(out);
	return f == stdout ? 0 : close_output(f, path);
}

/* ------------------------------------------------------------ SVG */

/* A "nice" tick step: 1, 2 or 5 times a power of ten, about @n ticks. */
static double tick_step(double range, int n)
{
	double raw = range / n, p = 1;

	while (p * 10 <= raw)
		p *= 10;
	while (p > raw && p > 1e-9)
		p /= 10;
	if (raw / p >= 5)
		return 5 * p;
	if (raw / p >= 2)
		return 2 * p;
	return p;
}

static int write_svg(const struct model *m, const char *path)
{
	const struct md_problem *p = m->p;
	const struct md_plan *pl = m->plan;
	const double W = 1200, H = 720, L = 110, R = 170, T = 56, B = 56;
	double pw = W - L - R, ph = H - T - B, xs, ys, step, v;
	uint64_t t0 = UINT64_MAX, t1 = 0, ymax;
	char a[32], b[32];
	double unit;
	size_t i;
	FILE *f;

	for (i = 0; i < p->n; i++) {
		if (p->bufs[i].lower < t0)
			t0 = p->bufs[i].lower;
		if (p->bufs[i].upper > t1)
			t1 = p->bufs[i].upper;
	}
	if (!p->n) {
		t0 = 0;
		t1 = 1;
	}
	ymax = pl->peak > pl->lower_bound ? pl->peak : pl->lower_bound;
	if (!ymax)
		ymax = 1;
	xs = pw / (double)(t1 - t0);
	ys = ph / ((double)ymax * 1.08);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		return 1;
	}
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
		"viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"13\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
		W, H, W, H);
	fprintf(f, "<text x=\"%.0f\" y=\"22\" font-size=\"16\" font-weight=\"bold\">",
		L);
	for (const char *c = m->path; *c; c++)
		fputs(*c == '<' ? "&lt;" : *c == '&' ? "&amp;" : (char[]){ *c, 0 },
		      f);
	fprintf(f, "</text>\n<text x=\"%.0f\" y=\"42\" fill=\"#444\">%zu buffers, "
		"peak %s = %.3f x lower bound %s, %s, %.2f ms</text>\n",
		L, p->n, md_format_size(pl->peak, a, sizeof(a)),
		ratio(pl->peak, pl->lower_bound),
		md_format_size(pl->lower_bound, b, sizeof(b)),
		md_strategy_name(pl->strategy), m->ms);
	/* Plot frame and grid. */
	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
		"fill=\"#fafafa\" stroke=\"#999\"/>\n", L, T, pw, ph);
	/* Offset ticks on binary units: 256 KiB, not 262144. */
	unit = ymax >= (4ull << 30) ? 1024.0 * 1024 * 1024 :
	       ymax >= (4u << 20) ? 1024.0 * 1024 : ymax >= (4u << 10) ? 1024 : 1;
	step = tick_step((double)ymax * 1.08 / unit, 8) * unit;
	for (v = 0; v <= (double)ymax * 1.08; v += step) {
		double y = T + ph - v * ys;

		fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"#e4e4e4\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
			"text-anchor=\"end\" fill=\"#444\">%s</text>\n",
			L, L + pw, y, y, L - 6, y + 4,
			/* ticks may pass 2^64 - 1 (peak x 1.08) */
			md_format_size(v >= 18446744073709551615.0 ? UINT64_MAX :
				       (uint64_t)v, a, sizeof(a)));
	}
	step = tick_step((double)(t1 - t0), 10);
	for (v = 0; v <= (double)(t1 - t0); v += step) {
		double x = L + v * xs;

		fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"#e4e4e4\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
			"text-anchor=\"middle\" fill=\"#444\">%.0f</text>\n",
			x, x, T, T + ph, x, T + ph + 18, (double)t0 + v);
	}
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">time</text>\n",
		L + pw / 2, H - 10);
	fprintf(f, "<text transform=\"translate(18 %.1f) rotate(-90)\" "
		"text-anchor=\"middle\">offset</text>\n", T + ph / 2);
	/* One rectangle per buffer, colour from its index. */
	for (i = 0; i < p->n; i++) {
		const struct md_buffer *bf = &p->bufs[i];
		double x = L + (double)(bf->lower - t0) * xs;
		double w = (double)(bf->upper - bf->lower) * xs;
		double y = T + ph - (double)(pl->offsets[i] + bf->size) * ys;
		double h = (double)bf->size * ys;
		unsigned int hue = (unsigned int)((i * 137u) % 360u);

		if (!bf->size)
			continue;
		fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
			"fill=\"hsl(%u,65%%,62%%)\" stroke=\"#333\" stroke-width=\"0.4\">"
			"<title>", x, y, w > 0.5 ? w : 0.5, h > 0.3 ? h : 0.3, hue);
		for (const char *c = bf->id ? bf->id : ""; *c; c++)
			fputs(*c == '<' ? "&lt;" : *c == '&' ? "&amp;" :
			      (char[]){ *c, 0 }, f);
		fprintf(f, " [%" PRIu64 ", %" PRIu64 ") %" PRIu64 " B at %" PRIu64
			"</title></rect>\n", bf->lower, bf->upper, bf->size,
			pl->offsets[i]);
	}
	/* Peak and lower bound. */
	fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" "
		"stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"8 4\"/>\n"
		"<text x=\"%.1f\" y=\"%.1f\" fill=\"#d62728\">peak %s</text>\n",
		L, L + pw, T + ph - (double)pl->peak * ys,
		T + ph - (double)pl->peak * ys, L + pw + 6,
		T + ph - (double)pl->peak * ys - 2,
		md_format_size(pl->peak, a, sizeof(a)));
	fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" "
		"stroke=\"#1f77b4\" stroke-width=\"2\" stroke-dasharray=\"3 3\"/>\n"
		"<text x=\"%.1f\" y=\"%.1f\" fill=\"#1f77b4\">lower bound %s</text>\n",
		L, L + pw, T + ph - (double)pl->lower_bound * ys,
		T + ph - (double)pl->lower_bound * ys, L + pw + 6,
		T + ph - (double)pl->lower_bound * ys + 14,
		md_format_size(pl->lower_bound, b, sizeof(b)));
	fprintf(f, "</svg>\n");
	return close_output(f, path);
}

static int strategy_arg(const char *s, int *out)
{
	int i;

	for (i = 0; i < MD_STRAT_COUNT; i++) {
		if (!strcmp(s, md_strategy_name(i))) {
			*out = i;
			return 0;
		}
	}
	if (!strcmp(s, "all")) {
		*out = MD_STRAT_ALL;
		return 0;
	}
	return -EINVAL;
}

/* main() without the ONNX options' memory, which main() frees. */
static int plan_main(int argc, char **argv, struct onnx_args *oa)
{
	static const struct option lopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "svg", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "format", required_argument, NULL, 'f' },
		{ "strategy", required_argument, NULL, 'S' },
		{ "improve", required_argument, NULL, 'i' },
		{ "exhaustive", no_argument, NULL, 'x' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ "input", required_argument, NULL, OPT_ONNX_INPUT },
		{ "dim", required_argument, NULL, OPT_ONNX_DIM },
		{ "dtype", required_argument, NULL, OPT_ONNX_DTYPE },
		{ "no-weights", no_argument, NULL, OPT_ONNX_NO_WEIGHTS },
		{ "fuse", no_argument, NULL, OPT_ONNX_FUSE },
		{ "pool", no_argument, NULL, OPT_POOL },
		{ "export-csv", required_argument, NULL, OPT_EXPORT_CSV },
		PLAN_EXACT_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct md_plan_opts o = { .strategy = MD_STRAT_ALL };
	const char *csv_out = NULL, *svg_out = NULL, *export_out = NULL;
	struct model *models;
	int json = 0, format = 0, pool = 0, c, i, n, rc = 0;

	while ((c = getopt_long(argc, argv, "o:s:jf:S:i:xVh", lopts,
				NULL)) != -1) {
		switch (c) {
		case 'o':
			csv_out = optarg;
			break;
		case 's':
			svg_out = optarg;
			break;
		case OPT_EXPORT_CSV:
			export_out = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'f':
			if (!strcmp(optarg, "csv")) {
				format = FMT_CSV;
			} else if (!strcmp(optarg, "graph")) {
				format = FMT_GRAPH;
			} else if (!strcmp(optarg, "onnx")) {
				format = FMT_ONNX;
			} else {
				fprintf(stderr, "%s: --format: csv, graph or onnx, not '%s'\n",
					prog, optarg);
				return 2;
			}
			break;
		case OPT_ONNX_INPUT:
		case OPT_ONNX_DIM:
			rc = onnx_arg(oa, optarg, c == OPT_ONNX_DIM);
			if (rc == 1)
				fprintf(stderr, "%s: %s\n", prog, strerror(ENOMEM));
			if (rc)
				return rc;
			break;
		case OPT_ONNX_DTYPE:
			if (!strcmp(optarg, "fp32")) {
				oa->o.dtype = MD_ONNX_DTYPE_FP32;
			} else if (!strcmp(optarg, "fp16")) {
				oa->o.dtype = MD_ONNX_DTYPE_FP16;
			} else if (!strcmp(optarg, "bf16")) {
				oa->o.dtype = MD_ONNX_DTYPE_BF16;
			} else {
				fprintf(stderr, "%s: --dtype: fp32, fp16 or bf16, not '%s'\n",
					prog, optarg);
				return 2;
			}
			break;
		case OPT_ONNX_NO_WEIGHTS:
			oa->o.flags |= MD_ONNX_NO_WEIGHTS;
			break;
		case OPT_ONNX_FUSE:
			oa->o.flags |= MD_ONNX_FUSE;
			break;
		case OPT_POOL:
			pool = 1;
			break;
		case 'S':
			all_strategies = 0;
			if (strategy_arg(optarg, &o.strategy)) {
				fprintf(stderr, "%s: unknown strategy '%s' (see --help)\n",
					prog, optarg);
				return 2;
			}
			break;
		case 'i': {
			char *end;
			long v;

			errno = 0;
			v = strtol(optarg, &end, 10);
			/* Digits only: strtol() takes blanks and a sign. */
			if (*end || !isdigit((unsigned char)*optarg) || errno ||
			    v > 1000000) {
				fprintf(stderr, "%s: --improve: a number of passes, not '%s'\n",
					prog, optarg);
				return 2;
			}
			o.improve = (int)v;
			break;
		}
		case 'x':
			o.exhaustive = 1;
			break;
		case 'V':
			printf("%s %s\n", prog, md_version());
			return finish(0);
		case 'h':
			usage(stdout);
			return finish(0);
		default:
			switch (plan_exact_option(prog, c, optarg)) {
			case 1:
				continue;
			case -1:
				return 2;
			}
			usage(stderr);
			return 2;
		}
	}
	n = argc - optind;
	rc = plan_exact_check(prog, n);
	if (rc)
		return rc;
	if (n < 1) {
		fprintf(stderr, "%s: no input file\n", prog);
		usage(stderr);
		return 2;
	}
	if (n > 1 && (csv_out || svg_out || export_out)) {
		fprintf(stderr, "%s: -o, --svg and --export-csv take one input file\n",
			prog);
		return 2;
	}
	if (pool) {
		if (n > 1 || csv_out || json) {
			fprintf(stderr, "%s: --pool takes one file, and --svg only\n",
				prog);
			return 2;
		}
		return finish(pool_svg(prog, argv[optind], svg_out));
	}
	models = calloc(n, sizeof(*models));
	if (!models) {
		fprintf(stderr, "%s: %s\n", prog, strerror(ENOMEM));
		return 1;
	}
	for (i = 0; i < n; i++) {
		if (load(&models[i], argv[optind + i], format, &o, &oa->o)) {
			/* load() freed what it had; the others are loaded. */
			while (i--)
				unload(&models[i]);
			free(models);
			return 1;
		}
	}
	if (json)
		printf("{\n  \"models\": [\n");
	for (i = 0; i < n; i++) {
		if (json)
			print_json(&models[i], i == n - 1);
		else
			print_text(&models[i]);
	}
	if (n > 1) {
		uint64_t *peaks = calloc(n, sizeof(*peaks));
		struct md_overlay_stats st = { 0, 0, 0 };
		char a[32], b[32];

		for (i = 0; peaks && i < n; i++)
			peaks[i] = models[i].plan->peak;
		if (!peaks || md_overlay(peaks, n, NULL, &st)) {
			fprintf(stderr, "%s: overlay failed\n", prog);
			rc = 1;
		} else if (json) {
			printf("  ],\n  \"inter_model\": {\"sum_of_peaks\": %" PRIu64
			       ", \"arena\": %" PRIu64 ", \"saved\": %" PRIu64 "}\n",
			       st.sum_peaks, st.arena, st.saved);
		} else {
			printf("inter-model reuse: %d models, one arena of %s instead of %s (saves %" PRIu64 " bytes)\n",
			       n, md_format_size(st.arena, a, sizeof(a)),
			       md_format_size(st.sum_peaks, b, sizeof(b)),
			       st.saved);
		}
		free(peaks);
	} else if (json) {
		printf("  ]\n");
	}
	if (json)
		printf("}\n");
	if (!rc && csv_out)
		rc = write_csv(&models[0], csv_out);
	if (!rc && svg_out)
		rc = write_svg(&models[0], svg_out);
	if (!rc && export_out)
		rc = export_csv(&models[0], export_out);
	if (!rc)
		rc = plan_exact_status();
	for (i = 0; i < n; i++)
		unload(&models[i]);
	free(models);
	plan_exact_free();
	return finish(rc);
}

int main(int argc, char **argv)
{
	struct onnx_args oa;
	int rc;

	memset(&oa, 0, sizeof(oa));
	rc = plan_main(argc, argv, &oa);
	onnx_args_free(&oa);
	return rc;
}
