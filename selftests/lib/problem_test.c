// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unit tests: planning problems, MiniMalloc CSV in and out, the lower
 * bound.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <metadef/plan.h>

#include "kselftest_harness.h"

static int parse(struct md_problem *p, const char *s, struct md_error *e)
{
	md_problem_init(p);
	return md_problem_parse_csv(p, s, strlen(s), e);
}

TEST(csv_parse_minimal)
{
	struct md_problem p;
	struct md_error e;
	const char *s = "id,lower,upper,size\n"
			"b1,0,3,4\r\n"
			"\n"
			"# comment\n"
			"b2, 3 ,9,4\n"
			"b3,0,9,4\n"
			"b4,9,21,4\n"
			"b5,0,21,4";	/* no final newline */

	ASSERT_EQ(0, parse(&p, s, &e));
	ASSERT_EQ(5, p.n);
	EXPECT_STREQ("b2", p.bufs[1].id);
	EXPECT_EQ(3, p.bufs[1].lower);
	EXPECT_EQ(9, p.bufs[1].upper);
	EXPECT_EQ(4, p.bufs[1].size);
	EXPECT_EQ(1, p.bufs[1].align);
	EXPECT_EQ(0, p.has_align);
	EXPECT_EQ(12, md_problem_lower_bound(&p, NULL));
	EXPECT_EQ(20, md_problem_total(&p));
	md_problem_free(&p);
}

TEST(csv_parse_alignment_offset_any_order)
{
	struct md_problem p;
	struct md_error e;
	uint64_t off[2] = { 0, 128 };
	char *out = NULL;
	const char *s = "size,id,upper,lower,alignment,offset\n"
			"100,x,10,0,64,\n"
			"8,y,5,1,8,128\n";

	ASSERT_EQ(0, parse(&p, s, &e));
	ASSERT_EQ(2, p.n);
	EXPECT_EQ(64, p.bufs[0].align);
	EXPECT_EQ(0, p.bufs[0].flags & MD_BUF_FIXED);
	EXPECT_EQ(MD_BUF_FIXED, p.bufs[1].flags & MD_BUF_FIXED);
	EXPECT_EQ(128, p.bufs[1].offset);
	EXPECT_EQ(1, p.has_align);

	ASSERT_EQ(0, md_problem_write_csv(&p, off, &out));
	EXPECT_STREQ("id,lower,upper,size,alignment,offset\n"
		     "x,0,10,100,64,0\n"
		     "y,1,5,8,8,128\n", out);
	free(out);
	md_problem_free(&p);
}

struct bad_case {
	const char *text;
	unsigned int line;
	const char *msg;	/* a substring of the message */
};

TEST(csv_parse_rejects_bad_input)
{
	static const struct bad_case cases[] = {
		{ "", 0, "empty input: no header line" },
		{ "\n  \n# only a comment\r\n", 0, "empty input" },
		{ "id;lower;upper;size\na;0;1;4\n", 1,
		  "the header's columns are separated by ';': MiniMalloc CSV separates them by ','" },
		{ "id\tlower\tupper\tsize\n", 1, "separated by tabs" },
		{ "id lower upper size\n", 1, "separated by blanks" },
		{ "id|lower|upper|size\n", 1, "separated by '|'" },
		{ "idx;lower\n", 1, "unknown column 'idx;lower'" },
		{ "id,lower,upper,size\n\xff\xfe,0,1,4\n", 2,
		  "not valid UTF-8: byte 0xff at column 1" },
		{ "id,lower,upper,size\na\xc0\xaf,0,1,4\n", 2,
		  "not valid UTF-8: byte 0xc0 at column 2" },	/* overlong */
		{ "id,lower,upper,size\na\xed\xa0\x80,0,1,4\n", 2,
		  "not valid UTF-8" },				/* surrogate */
		{ "id,lower,upper,size\na\xe2\x82,0,1,4\n", 2,
		  "not valid UTF-8" },				/* cut short */
		{ "id,lower,upper,size\n\x1b[31mred,0,1,4\n", 2,
		  "control character 0x1b at column 1" },
		{ "id,lower,upper,size\na\x7f,0,1,4\n", 2, "control character 0x7f" },
		{ "id,lower,upper,size\ra,0,1,4\r", 1,
		  "carriage return inside a line at column 20" },
		{ "id,lower,upper,size\n\"a\",0,1,4\n", 2,
		  "quoted field \"a\": MiniMalloc CSV has no quoting" },
		{ "\"id\",lower,upper,size\n", 1, "quoted column name" },
		{ "id,lower,upper\n", 1, "lacks the 'size'" },
		{ "id,lower,upper,size,colour\n", 1, "unknown column 'colour'" },
		{ "id,lower,upper,size,size\n", 1, "given twice" },
		{ "id,lower,upper,size\na,0,1,1\nb,0,x,1\n", 3,
		  "bad upper 'x'" },
		{ "id,lower,upper,size\na,0,1,-5\n", 2, "negative size" },
		{ "id,lower,upper,size\na,-1,1,5\n", 2, "negative lower" },
		{ "id,lower,upper,size\na,4,4,5\n", 2,
		  "must be greater than lower" },
		{ "id,lower,upper,size\na,5,4,5\n", 2,
		  "must be greater than lower" },
		{ "id,lower,upper,size\na,0,1,1\n\nb,0,1,1\na,2,3,1\n", 5,
		  "duplicate id 'a'" },
		{ "id,lower,upper,size\na,0,1\n", 2, "3 fields" },
		{ "id,lower,upper,size\na,0,1,1,7\n", 2, "5 fields" },
		{ "id,lower,upper,size\na,0,1,\n", 2, "empty size" },
		{ "id,lower,upper,size\n,0,1,1\n", 2, "empty id" },
		{ "id,lower,upper,size\na,0,1,1.5\n", 2, "bad size '1.5'" },
		{ "id,lower,upper,size\na,0,1,18446744073709551616\n", 2,
		  "does not fit" },
		{ "id,lower,upper,size,alignment\na,0,1,1,0\n", 2,
		  "alignment must be at least 1" },
		{ "id,lower,upper,size,alignment,offset\na,0,1,1,8,4\n", 2,
		  "not a multiple" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct md_problem p;
		struct md_error e;

		memset(&e, 0, sizeof(e));
		EXPECT_EQ(-EINVAL, parse(&p, cases[i].text, &e));
		EXPECT_EQ(cases[i].line, e.line);
		if (!strstr(e.msg, cases[i].msg))
			TH_LOG("case %zu: '%s' lacks '%s'", i, e.msg,
			       cases[i].msg);
		EXPECT_NE(NULL, strstr(e.msg, cases[i].msg));
		md_problem_free(&p);
	}
}

TEST(problem_add_checks)
{
	struct md_problem p;

	md_problem_init(&p);
	EXPECT_EQ(-EINVAL, md_problem_add(&p, "a", 5, 5, 1, 0));
	EXPECT_EQ(0, md_problem_add(&p, NULL, 0, 5, 1, 0));
	EXPECT_EQ(1, p.bufs[0].align);
	EXPECT_EQ(NULL, p.bufs[0].id);
	md_problem_free(&p);
	EXPECT_EQ(0, p.n);
}

TEST(lower_bound_half_open)
{
	struct md_problem p;
	uint64_t end;

	md_problem_init(&p);
	/* Back to back: [0, 5) and [5, 9) never live together. */
	md_problem_add(&p, NULL, 0, 5, 100, 0);
	md_problem_add(&p, NULL, 5, 9, 70, 0);
	md_problem_add(&p, NULL, 4, 6, 10, 0);
	EXPECT_EQ(110, md_problem_lower_bound(&p, &end));
	EXPECT_EQ(9, end);
	md_problem_free(&p);
	EXPECT_EQ(0, md_problem_lower_bound(&p, NULL));
}

/* A UTF-8 byte order mark before the header is skipped. */
/* Text that is valid UTF-8 passes, CRLF line ends included. */
TEST(csv_utf8_ids_and_crlf)
{
	struct md_problem p;
	struct md_error e;

	ASSERT_EQ(0, parse(&p, "id,lower,upper,size\r\ngr\xc3\xb6\xc3\x9f" "e,0,1,4\r\n"
			   "\xe6\x97\xa5\t,0,1,4\r\n\xf0\x9f\x98\x80,1,2,4\n", &e));
	ASSERT_EQ(3, p.n);
	EXPECT_STREQ("gr\xc3\xb6\xc3\x9f" "e", p.bufs[0].id);
	EXPECT_STREQ("\xe6\x97\xa5", p.bufs[1].id);
	md_problem_free(&p);
}

TEST(csv_bom_is_skipped)
{
	struct md_problem p;
	struct md_error e;

	ASSERT_EQ(0, parse(&p, "\xef\xbb\xbfid,lower,upper,size\na,0,1,4\n", &e));
	ASSERT_EQ(1, p.n);
	EXPECT_STREQ("a", p.bufs[0].id);
	md_problem_free(&p);
}

TEST_HARNESS_MAIN
