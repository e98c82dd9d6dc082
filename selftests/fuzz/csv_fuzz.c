// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target: md_problem_parse_csv() (MiniMalloc CSV, lib/problem.c).
 *
 * Any input: the parser returns 0 or -EINVAL (never -ENOMEM here, inputs
 * are small), names a line within the input on -EINVAL and leaves a
 * problem that md_problem_free() releases. A problem it accepts keeps its
 * promises (upper > lower, alignment >= 1, fixed offsets aligned and
 * inside 64 bits, ids unique and non-empty), and md_problem_write_csv()
 * of it parses back to the same buffers: what metadef-plan -o writes,
 * metadef-plan reads.
 */
#include <errno.h>

#include "fuzz.h"

static void same_problem(const struct md_problem *p,
			 const struct md_problem *q)
{
	size_t i;

	FUZZ_CHECK(p->n == q->n, "written back: %zu buffers, read %zu", p->n, q->n);
	for (i = 0; i < p->n; i++) {
		const struct md_buffer *a = &p->bufs[i], *b = &q->bufs[i];

		FUZZ_CHECK(!strcmp(a->id, b->id), "buffer %zu: id '%s' read back as '%s'",
			   i, a->id, b->id);
		FUZZ_CHECK(a->lower == b->lower && a->upper == b->upper &&
			   a->size == b->size && a->align == b->align,
			   "buffer %zu ('%s') changed on the way back", i, a->id);
		FUZZ_CHECK(!(b->flags & MD_BUF_FIXED), "buffer %zu: fixed without an offset column", i);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct md_problem p, q;
	struct md_error err;
	unsigned int lines = 1;
	char *out = NULL;
	size_t i, j;
	int ret;

	for (i = 0; i < size; i++)
		lines += data[i] == '\n';
	md_problem_init(&p);
	ret = md_problem_parse_csv(&p, (const char *)data, size, &err);
	FUZZ_CHECK(ret == 0 || ret == -EINVAL, "parse returned %d", ret);
	if (ret) {
		FUZZ_CHECK(err.line <= lines, "error on line %u of %u", err.line, lines);
		FUZZ_CHECK(err.msg[0] && memchr(err.msg, '\0', sizeof(err.msg)),
			   "no reason given");
		md_problem_free(&p);
		return 0;
	}
	for (i = 0; i < p.n; i++) {
		const struct md_buffer *b = &p.bufs[i];

		FUZZ_CHECK(b->id && b->id[0], "buffer %zu has no id", i);
		FUZZ_CHECK(b->upper > b->lower, "buffer '%s': empty lifetime", b->id);
		FUZZ_CHECK(b->align >= 1, "buffer '%s': alignment 0", b->id);
		FUZZ_CHECK(!(b->flags & MD_BUF_FIXED) ||
			   (!(b->offset % b->align) && b->offset <= UINT64_MAX - b->size),
			   "buffer '%s': bad fixed offset %" PRIu64, b->id, b->offset);
		FUZZ_CHECK(p.has_align || b->align == 1, "buffer '%s': align without a column", b->id);
		for (j = 0; j < i && p.n <= 256; j++)
			FUZZ_CHECK(strcmp(p.bufs[j].id, b->id), "id '%s' twice", b->id);
	}
	/* The bound is bytes alive at one instant: at most the sum. */
	if (p.n <= 256) {
		uint64_t lb = md_problem_lower_bound(&p, NULL), sum = 0;
		int wrapped = 0;

		for (i = 0; i < p.n; i++) {
			wrapped |= sum + p.bufs[i].size < sum;
			sum += p.bufs[i].size;
		}
		FUZZ_CHECK(wrapped || lb <= sum, "lower bound %" PRIu64 " > total %" PRIu64, lb, sum);
	}

	ret = md_problem_write_csv(&p, NULL, &out);
	FUZZ_CHECK(!ret, "write_csv returned %d", ret);
	md_problem_init(&q);
	ret = md_problem_parse_csv(&q, out, strlen(out), &err);
	FUZZ_CHECK(!ret, "written CSV does not parse: line %u: %s\n%s", err.line, err.msg, out);
	same_problem(&p, &q);
	md_problem_free(&q);
	free(out);
	md_problem_free(&p);
	return 0;
}
