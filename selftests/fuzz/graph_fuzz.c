// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target: md_graph_parse() (the graph text format, lib/graph.c),
 * then md_graph_plan() of what it accepts.
 *
 * The parser returns 0 or -EINVAL (or -ERANGE: too many steps) and names
 * a line of the input. A graph it accepts, if small, is lowered and
 * planned; the plan must be valid for the independent checker
 * (fuzz.h), every tensor must lie inside its buffer in memory and in time,
 * and the buffers written as CSV must read back (graph buffers are what
 * metadef-plan -o writes for a graph).
 */
#include <errno.h>

#include <metadef/graph.h>

#include "fuzz.h"

#define MAX_TENSORS 96

static void check_tensors(const struct md_graph *g,
			  const struct md_graph_plan *gp)
{
	const struct md_problem *p = &gp->problem;
	size_t i;

	FUZZ_CHECK(gp->ntensors == md_graph_tensor_count(g), "tensor count");
	for (i = 0; i < gp->ntensors; i++) {
		uint32_t b = gp->buffer[i];
		const struct md_buffer *x;
		uint64_t boff;

		FUZZ_CHECK(b < p->n, "tensor %zu in buffer %u of %zu", i, b, p->n);
		x = &p->bufs[b];
		boff = gp->plan.offsets[b];
		FUZZ_CHECK(gp->lower[i] < gp->upper[i], "tensor %zu: empty lifetime", i);
		FUZZ_CHECK(gp->lower[i] >= x->lower && gp->upper[i] <= x->upper,
			   "tensor '%s' alive [%" PRIu64 ", %" PRIu64 ") outside its buffer '%s' [%"
			   PRIu64 ", %" PRIu64 ")", md_graph_tensor_name(g, (int)i),
			   gp->lower[i], gp->upper[i], x->id, x->lower, x->upper);
		FUZZ_CHECK(gp->offset[i] >= boff &&
			   gp->offset[i] - boff <= x->size,
			   "tensor '%s' at %" PRIu64 " outside its buffer '%s' at %" PRIu64
			   " size %" PRIu64, md_graph_tensor_name(g, (int)i),
			   gp->offset[i], x->id, boff, x->size);
	}
}

static void check_roundtrip(const struct md_problem *p)
{
	struct md_problem q;
	struct md_error err;
	char *out = NULL;
	size_t i;
	int ret;

	ret = md_problem_write_csv(p, NULL, &out);
	FUZZ_CHECK(!ret, "write_csv returned %d", ret);
	md_problem_init(&q);
	ret = md_problem_parse_csv(&q, out, strlen(out), &err);
	FUZZ_CHECK(!ret, "graph buffers as CSV do not parse: line %u: %s\n%s",
		   err.line, err.msg, out);
	FUZZ_CHECK(q.n == p->n, "%zu buffers read back as %zu", p->n, q.n);
	for (i = 0; i < p->n; i++)
		FUZZ_CHECK(q.bufs[i].lower == p->bufs[i].lower &&
			   q.bufs[i].upper == p->bufs[i].upper &&
			   q.bufs[i].size == p->bufs[i].size &&
			   q.bufs[i].align == p->bufs[i].align &&
			   !strcmp(q.bufs[i].id, p->bufs[i].id),
			   "buffer %zu ('%s') changed on the way back", i, p->bufs[i].id);
	md_problem_free(&q);
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct md_graph_plan gp;
	struct md_graph *g;
	struct md_error err;
	unsigned int lines = 1;
	size_t i;
	int ret;

	for (i = 0; i < size; i++)
		lines += data[i] == '\n';
	if (md_graph_new(&g))
		return 0;
	ret = md_graph_parse(g, (const char *)data, size, &err);
	FUZZ_CHECK(ret == 0 || ret == -EINVAL || ret == -ERANGE, "parse returned %d", ret);
	if (ret == -EINVAL) {
		FUZZ_CHECK(err.line <= lines, "error on line %u of %u", err.line, lines);
		FUZZ_CHECK(err.msg[0] && memchr(err.msg, '\0', sizeof(err.msg)),
			   "no reason given");
	}
	if (ret || md_graph_tensor_count(g) > MAX_TENSORS)
		goto out;
	for (i = 0; i < md_graph_tensor_count(g); i++)
		FUZZ_CHECK(md_graph_find(g, md_graph_tensor_name(g, (int)i)) == (int)i,
			   "tensor %zu not found by its name", i);
	ret = md_graph_plan(g, NULL, &gp);
	/* Sizes that add up past 2^64 cannot be planned; nothing else fails. */
	FUZZ_CHECK(ret == 0 || ret == -EOVERFLOW, "md_graph_plan returned %d", ret);
	if (ret)
		goto out;
	ret = md_plan_validate(&gp.problem, gp.plan.offsets, NULL);
	FUZZ_CHECK(!ret, "md_plan_validate of the graph's plan: %d", ret);
	fuzz_check_plan(&gp.problem, gp.plan.offsets, "graph plan");
	FUZZ_CHECK(gp.plan.peak == fuzz_peak(&gp.problem, gp.plan.offsets), "peak");
	check_tensors(g, &gp);
	check_roundtrip(&gp.problem);
	md_graph_plan_free(&gp);
out:
	md_graph_free(g);
	return 0;
}
