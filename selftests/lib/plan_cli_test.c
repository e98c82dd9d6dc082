// SPDX-License-Identifier: GPL-2.0
/*
 * Host tests of the metadef-plan command: exit codes, "FILE:LINE: why"
 * messages for malformed input, and the -o / --svg / --json outputs. Runs
 * the binary the Makefile builds beside this test (build/bin/).
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <metadef/device.h>
#include <metadef/plan.h>
#include <metadef/pool.h>

#include "json_mini.h"
#include "kselftest_harness.h"
#include "onnx_build.h"
#include "test_util.h"

static char bin[PATH_MAX];
static char dir[PATH_MAX];

static int find_bin(void)
{
	return test_build_path(bin, sizeof(bin), "bin/metadef-plan");
}

static void put(const char *name, const char *text)
{
	char path[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/*
 * Run "@pre metadef-plan @args @redir" in dir; what it prints into @out.
 * Return: its exit status, or -1.
 */
static int run_cmd(const char *pre, const char *args, const char *redir,
		   char *out, size_t len)
{
	char cmd[PATH_MAX * 2 + 1024];

	snprintf(cmd, sizeof(cmd), "cd '%s' && %s '%s' %s %s", dir, pre, bin,
		 args, redir);
	return test_capture(cmd, out, len);
}

/* @name in dir holding the @len bytes of @text (NULs included). */
static void putn(const char *name, const char *text, size_t len)
{
	char path[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (f) {
		fwrite(text, 1, len, f);
		fclose(f);
	}
}

/* Run metadef-plan with @args (in dir); stdout+stderr into @out. */
static int run(const char *args, char *out, size_t len)
{
	return run_cmd("", args, "2>&1", out, len);
}

/* Run metadef-plan with @args, stdout into /dev/full, stderr into @out. */
static int run_full(const char *args, char *out, size_t len)
{
	return run_cmd("", args, "2>&1 >/dev/full", out, len);
}

/* Run @args, expect exit status @rc and @want in the output. */
#define H_NUL_CSV "id,lower,upper,size\na\0,0,1,4\n"

#define EXPECT_RUN(rc, args, want) do {					\
	int __rc = run(args, self->out, sizeof(self->out));		\
									\
	if (__rc != (rc) || !strstr(self->out, want))			\
		TH_LOG("%s: rc %d, got: %s", args, __rc, self->out);	\
	EXPECT_EQ(rc, __rc);						\
	EXPECT_NE(NULL, strstr(self->out, want));			\
} while (0)

FIXTURE(cli) {
	char out[1 << 16];
};

/*
 * ONNX models in dir: m.onnx (Conv -> Relu -> Sigmoid, input x of
 * symbolic batch, a weight), garbage.onnx, and cycle.onnx.
 */
static void put_onnx(void)
{
	char path[PATH_MAX + 64];
	struct mb *b = mb_new(17);
	Onnx__NodeProto *n;

	mb_input(b, "x", MB_F32, "batch,3,8,8");
	mb_init(b, "w", MB_F32, "4,3,3,3", NULL);
	n = mb_node(b, "Conv", "x,w", "c");
	mb_ints(b, n, "pads", "1,1,1,1");
	mb_node(b, "Relu", "c", "r");
	mb_node(b, "Sigmoid", "r", "y");
	mb_output(b, "y", MB_F32, NULL);
	snprintf(path, sizeof(path), "%s/m.onnx", dir);
	mb_save(b, path);
	snprintf(path, sizeof(path), "%s/model.bin", dir);
	mb_save(b, path);
	mb_free(b);
	b = mb_new(17);
	mb_input(b, "x", MB_F32, "4");
	mb_node(b, "Add", "x,b", "a");
	mb_node(b, "Relu", "a", "b");
	mb_output(b, "b", MB_F32, NULL);
	snprintf(path, sizeof(path), "%s/cycle.onnx", dir);
	mb_save(b, path);
	mb_free(b);
	putn("garbage.onnx", "\xff\xff\xff\xff\x0f\x12", 6);
}

FIXTURE_SETUP(cli)
{
	if (find_bin())
		SKIP(return, "build/bin/metadef-plan not built (make tools)");
	snprintf(dir, sizeof(dir), "/tmp/metadef-plan-test.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(dir));
	put("good.csv", "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\n"
			"b3,0,9,4\nb4,9,21,4\nb5,0,21,4\n");
	put("neg.csv", "id,lower,upper,size\na,0,3,4\nb,0,3,-4\n");
	put("num.csv", "id,lower,upper,size\na,0,3,4\n\nb,0,x3,4\n");
	put("order.csv", "id,lower,upper,size\na,5,5,4\n");
	put("dup.csv", "id,lower,upper,size\na,0,3,4\nb,0,3,4\na,1,2,1\n");
	put("clash.csv", "id,lower,upper,size,offset\na,0,3,4,0\nb,2,5,4,2\n"
			 "c,0,9,4,\n");
	put("bad.graph", "input x 10\nop f x -> a:10\nop g y -> b:1\n");
	put("good.graph", "input x 1K\nop f x -> a:4K\nop g a -> b:4K=a\n"
			  "op h b -> c:1K\noutput c\n");
	put_onnx();
}

FIXTURE_TEARDOWN(cli)
{
	char cmd[PATH_MAX + 16];

	if (dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			TH_LOG("could not remove %s", dir);
	}
}

TEST_F(cli, usage_and_help)
{
	EXPECT_EQ(2, run("", self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "no input file"));
	EXPECT_EQ(0, run("--help", self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "usage: metadef-plan"));
	EXPECT_EQ(2, run("--bogus good.csv", self->out, sizeof(self->out)));
	EXPECT_EQ(2, run("-S nope good.csv", self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "unknown strategy 'nope'"));
	EXPECT_EQ(2, run("-i x good.csv", self->out, sizeof(self->out)));
	EXPECT_RUN(2, "-i ' 5' good.csv", "--improve: a number of passes");
	EXPECT_RUN(2, "-i +5 good.csv", "--improve: a number of passes");
	EXPECT_RUN(2, "-i -1 good.csv", "--improve: a number of passes");
	EXPECT_RUN(2, "-i '' good.csv", "--improve: a number of passes");
	EXPECT_RUN(2, "-i 1000001 good.csv", "--improve: a number of passes");
	EXPECT_RUN(2, "-i 99999999999999999999 good.csv",
		   "--improve: a number of passes");
	EXPECT_RUN(0, "-i 3 good.csv", "peak");
	EXPECT_EQ(2, run("-o p.csv good.csv good.csv", self->out,
			 sizeof(self->out)));
	EXPECT_EQ(1, run("missing.csv", self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "missing.csv: No such file"));
}

TEST_F(cli, unreadable_input_says_why)
{
	char cmd[PATH_MAX + 32];

	snprintf(cmd, sizeof(cmd), "mkdir '%s/d'", dir);
	ASSERT_EQ(0, system(cmd));
	EXPECT_RUN(1, "d", "metadef-plan: d: Is a directory");
	EXPECT_RUN(1, "- < d", "metadef-plan: -: Is a directory");
}

/* A plan that ends at exactly 2^64 - 1 is planned, not "Bad address". */
TEST_F(cli, peak_of_2_to_the_64_minus_1)
{
	put("top.csv", "id,lower,upper,size\n"
		       "a,0,2,9223372036854775808\n"
		       "b,1,3,9223372036854775807\n");
	EXPECT_RUN(0, "top.csv", "peak                18446744073709551615 ");
	EXPECT_EQ(NULL, strstr(self->out, "strategy            ?"));
}

/* Sizes whose sum wraps past 2^64: an error naming it, never a plan. */
TEST_F(cli, sizes_past_2_to_the_64)
{
	put("wrap.graph", "input x 8E\ninput y 8E\nop f x y -> a:1K\n"
			  "contig x y\n");
	put("wrap.csv", "id,lower,upper,size\na,0,2,9223372036854775808\n"
			"b,1,3,9223372036854775808\n");
	put("fixed.csv", "id,lower,upper,size,offset\n"
			 "a,0,2,4611686018427387904,9223372036854775808\n"
			 "b,1,3,9223372036854775809,\n");
	EXPECT_RUN(1, "wrap.graph", "wrap.graph:4: contig group starting with 'x': its tensors and their alignment padding need more than 2^64-1 bytes");
	EXPECT_RUN(1, "wrap.csv", "wrap.csv: no plan within 64 bits");
	EXPECT_RUN(1, "fixed.csv", "fixed.csv: no plan within 64 bits");
}

/* Every output is checked: a full disk is an error, never exit 0. */
TEST_F(cli, write_errors_fail)
{
	static const char *const to_stdout[] = {
		"good.csv", "--json good.csv", "good.graph", "-o - good.csv",
		"--help", "--version", "--json good.graph good.csv",
	};
	size_t i;
	int rc;

	if (access("/dev/full", W_OK))
		SKIP(return, "no /dev/full");
	for (i = 0; i < sizeof(to_stdout) / sizeof(to_stdout[0]); i++) {
		rc = run_full(to_stdout[i], self->out, sizeof(self->out));
		if (rc != 1 || !strstr(self->out, "standard output: No space"))
			TH_LOG("%s: rc %d: %s", to_stdout[i], rc, self->out);
		EXPECT_EQ(1, rc);
		EXPECT_NE(NULL, strstr(self->out,
				       "metadef-plan: standard output: No space left on device"));
	}
	EXPECT_RUN(1, "-o /dev/full good.csv",
		   "metadef-plan: /dev/full: No space left on device");
	EXPECT_RUN(1, "--svg /dev/full good.csv",
		   "metadef-plan: /dev/full: No space left on device");
	EXPECT_RUN(1, "-o /dev/full good.graph",
		   "metadef-plan: /dev/full: No space left on device");
	EXPECT_RUN(1, "-o nodir/plan.csv good.csv",
		   "metadef-plan: nodir/plan.csv: No such file or directory");
}

/*
 * Every error path frees what it allocated: each failing run under
 * valgrind, any leak (definite, indirect, possible) or memory error is
 * exit status 99. Some thirty runs under valgrind take longer than the
 * harness's default 30 s on a busy machine: five minutes.
 */
TEST_F_TIMEOUT(cli, error_paths_leak_nothing, 300)
{
	static const struct { const char *args; int rc; } cases[] = {
		{ "missing.csv", 1 }, { "d", 1 }, { "neg.csv", 1 },
		{ "num.csv", 1 }, { "order.csv", 1 }, { "dup.csv", 1 },
		{ "clash.csv", 1 }, { "bad.graph", 1 }, { "wrap.graph", 1 },
		{ "wrap.csv", 1 }, { "fixed.csv", 1 },
		{ "good.csv dup.csv", 1 }, { "good.graph good.csv bad.graph", 1 },
		{ "-o /dev/full good.csv", 1 }, { "--svg /dev/full good.graph", 1 },
		{ "-o nodir/p.csv good.graph", 1 },
		{ "--exact --capacity 11 good.csv", 1 },
		{ "--minimize --time-limit nan good.csv", 2 },
		{ "-S nope good.csv", 2 }, { "good.csv good.graph", 0 },
		{ "empty.csv", 1 }, { "junk.txt", 1 },
		{ "garbage.onnx", 1 }, { "cycle.onnx", 1 }, { "m.onnx", 1 },
		{ "--input x m.onnx", 2 }, { "--dim batch=x m.onnx", 2 },
		{ "--input y=2 m.onnx", 1 }, { "--dim batch=2 m.onnx", 0 },
		{ "--input x=1x3x8x8 --json m.onnx m.onnx", 0 },
	};
	const char *vg = "valgrind -q --leak-check=full --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99";
	char cmd[PATH_MAX + 32];
	size_t i;
	int rc;

	if (system("valgrind --version >/dev/null 2>&1"))
		SKIP(return, "valgrind not installed (tools/deps.sh host)");
	snprintf(cmd, sizeof(cmd), "mkdir '%s/d'", dir);
	ASSERT_EQ(0, system(cmd));
	put("empty.csv", "");
	put("junk.txt", "hello world\n");
	put("wrap.graph", "input x 8E\ninput y 8E\ncontig x y\n");
	put("wrap.csv", "id,lower,upper,size\na,0,2,9223372036854775808\n"
			"b,1,3,9223372036854775808\n");
	put("fixed.csv", "id,lower,upper,size,offset\n"
			 "a,0,2,4611686018427387904,9223372036854775808\n"
			 "b,1,3,9223372036854775809,\n");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rc = run_cmd(vg, cases[i].args, "2>&1 >/dev/null", self->out,
			     sizeof(self->out));
		if (rc != cases[i].rc)
			TH_LOG("%s: rc %d: %s", cases[i].args, rc, self->out);
		EXPECT_EQ(cases[i].rc, rc);
	}
	rc = run_cmd(vg, "good.graph", "2>&1 >/dev/full", self->out,
		     sizeof(self->out));
	EXPECT_EQ(1, rc);
}

/* A UTF-8 byte order mark at the start is skipped, in either format. */
TEST_F(cli, bom_is_skipped)
{
	put("bom.csv", "\xef\xbb\xbfid,lower,upper,size\na,0,1,4\n");
	put("bom.graph", "\xef\xbb\xbfinput x 4\nop f x -> y:4\n");
	EXPECT_RUN(0, "bom.csv", "bom.csv (csv)");
	EXPECT_RUN(0, "bom.graph", "bom.graph (graph)");
	EXPECT_RUN(0, "-f graph bom.graph", "tensors             2");
}

/*
 * The format comes from the first statement line: a graph keyword, or a
 * CSV column name; anything else is an error, not a guess. --format
 * overrides it.
 */
TEST_F(cli, format_detection)
{
	put("empty.csv", "");
	put("blank.csv", "\n# just a comment\r\n   \n");
	put("semi.csv", "id;lower;upper;size\na;0;1;4\n");
	put("tab.csv", "id\tlower\tupper\tsize\na\t0\t1\t4\n");
	put("one.csv", "id\n");
	put("upper.csv", "ID,LOWER,UPPER,SIZE\na,0,1,4\n");
	put("junk.txt", "hello world\n");
	put("comment.graph", "# a graph\n\nbarrier\ninput x 4\n");
	put("mode.graph", "mode parallel # comment\ninput x 4\n");
	put("size.csv", "size,id,lower,upper\n4,a,0,1\n");

	EXPECT_RUN(1, "empty.csv",
		   "empty.csv: empty input: no CSV header and no graph statement");
	EXPECT_RUN(1, "blank.csv", "blank.csv: empty input");
	EXPECT_RUN(1, "-f csv empty.csv", "empty.csv: empty input: no header line");
	EXPECT_RUN(1, "-f graph empty.csv", "empty.csv: empty input: no statements");
	EXPECT_RUN(1, "semi.csv",
		   "semi.csv:1: the header's columns are separated by ';': MiniMalloc CSV separates them by ','");
	EXPECT_RUN(1, "tab.csv", "tab.csv:1: the header's columns are separated by tabs");
	EXPECT_RUN(1, "one.csv", "one.csv:1: header lacks the 'lower' column");
	EXPECT_RUN(1, "upper.csv", "upper.csv:1: unknown column 'ID'");
	EXPECT_RUN(1, "junk.txt",
		   "junk.txt:1: neither a CSV header (id,lower,upper,size...) nor a graph statement");
	EXPECT_RUN(1, "-f csv junk.txt", "junk.txt:1: unknown column 'hello world'");
	EXPECT_RUN(1, "-f graph junk.txt", "junk.txt:1: unknown statement 'hello'");
	EXPECT_RUN(0, "comment.graph", "comment.graph (graph)");
	EXPECT_RUN(0, "mode.graph", "mode.graph (graph)");
	EXPECT_RUN(0, "size.csv", "size.csv (csv)");
	EXPECT_RUN(1, "-f csv good.graph", "good.graph:1: unknown column 'input x 1K'");
	EXPECT_RUN(1, "-f graph good.csv", "good.csv:1: unknown statement");
	EXPECT_RUN(2, "-f xml good.csv", "--format: csv, graph or onnx, not 'xml'");
}

/* The tensor_plan / buffer_plan entry with id @id, or NULL. */
static const struct jv *placement(const struct jv *model, const char *list,
				  const char *id)
{
	const struct jv *a = json_get(model, list);
	size_t i;

	for (i = 0; a && a->t == J_ARR && i < a->n; i++)
		if (!strcmp(json_str(&a->items[i], "id"), id))
			return &a->items[i];
	return NULL;
}

/*
 * --json carries every buffer's offset and, for a graph, every tensor's;
 * a graph's -o has one row per tensor with its own offset and buffer.
 */
TEST_F(cli, offsets_in_json_and_per_tensor_csv)
{
	const struct jv *m, *a, *b, *x, *c;
	char path[PATH_MAX + 64], text[4096];
	struct jv doc;
	size_t n;
	FILE *f;

	ASSERT_EQ(0, run("--json good.csv", self->out, sizeof(self->out)));
	ASSERT_TRUE(json_parse(self->out, &doc));
	m = &json_get(&doc, "models")->items[0];
	ASSERT_NE(NULL, placement(m, "buffer_plan", "b5"));
	EXPECT_EQ(21, json_u64(placement(m, "buffer_plan", "b5"), "upper"));
	EXPECT_EQ(5, json_get(m, "buffer_plan")->n);
	EXPECT_EQ(NULL, json_get(m, "tensor_plan"));
	jv_free(&doc);

	ASSERT_EQ(0, run("--json good.graph", self->out, sizeof(self->out)));
	ASSERT_TRUE(json_parse(self->out, &doc));
	m = &json_get(&doc, "models")->items[0];
	a = placement(m, "tensor_plan", "a");
	b = placement(m, "tensor_plan", "b");
	x = placement(m, "tensor_plan", "x");
	c = placement(m, "tensor_plan", "c");
	ASSERT_TRUE(a && b && x && c);
	EXPECT_EQ(4, json_get(m, "tensor_plan")->n);
	/* b is written into a in place: same offset, same buffer. */
	EXPECT_EQ(json_u64(a, "offset"), json_u64(b, "offset"));
	EXPECT_STREQ("a+b", json_str(b, "buffer"));
	EXPECT_EQ(4096, json_u64(b, "size"));
	EXPECT_EQ(json_u64(placement(m, "buffer_plan", "a+b"), "offset"),
		  json_u64(a, "offset"));
	EXPECT_EQ(1024, json_u64(x, "size"));
	EXPECT_NE(json_u64(x, "offset"), json_u64(a, "offset"));
	jv_free(&doc);

	ASSERT_EQ(0, run("good.graph -o plan.csv", self->out,
			 sizeof(self->out)));
	snprintf(path, sizeof(path), "%s/plan.csv", dir);
	f = fopen(path, "r");
	ASSERT_NE(NULL, f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	EXPECT_EQ(0, strncmp(text, "id,lower,upper,size,alignment,offset,buffer\n", 44));
	EXPECT_NE(NULL, strstr(text, "\nx,0,3,1024,1,"));
	EXPECT_NE(NULL, strstr(text, "\na,0,2,4096,1,"));
	EXPECT_NE(NULL, strstr(text, "\nb,1,3,4096,1,"));
	EXPECT_NE(NULL, strstr(text, ",a+b\n"));
	EXPECT_NE(NULL, strstr(text, "\nc,2,3,1024,1,"));
}

/*
 * What a hostile user may feed it: each a clear "FILE:LINE: reason" and
 * exit status 1 (or a plan, for what is merely unusual).
 */
TEST_F(cli, hostile_inputs)
{
#define H "id,lower,upper,size\n"
	static const struct { const char *text; int rc; const char *want; } cases[] = {
		{ H "a,0,1,99999999999999999999\n", 1,
		  ":2: size '99999999999999999999' does not fit in 64 bits" },
		{ H "a,0,18446744073709551616,4\n", 1, "does not fit in 64 bits" },
		{ H "a,0,1,-4\n", 1, ":2: negative size '-4'" },
		{ H "a,+0,1,4\n", 1, ":2: bad lower '+0'" },
		{ H "a,0x1,2,4\n", 1, ":2: bad lower '0x1'" },
		{ H "a,0,1,4e3\n", 1, ":2: bad size '4e3'" },
		{ H "a,5,2,4\n", 1, ":2: upper 2 must be greater than lower 5" },
		{ H "a,3,3,4\n", 1, ":2: upper 3 must be greater than lower 3" },
		{ H "a,0,1,4\nb,0,1,4\na,2,3,4\n", 1, ":4: duplicate id 'a'" },
		{ "id,lower,size\n", 1, ":1: header lacks the 'upper' column" },
		{ H "a,0,1\n", 1, ":2: 3 fields, the header has 4" },
		{ H "a,0,1,4,5\n", 1, ":2: 5 fields, the header has 4" },
		{ "id,lower,upper,size,colour\n", 1, ":1: unknown column 'colour'" },
		{ H "\xff\xfe,0,1,4\n", 1, ":2: not valid UTF-8: byte 0xff" },
		{ H "\x1b[2Jx,0,1,4\n", 1, ":2: control character 0x1b" },
		{ H "\"a\",0,1,4\n", 1, ":2: quoted field \"a\"" },
		{ "id,lower,upper,size\ra,0,1,4\r", 1,
		  ":1: carriage return inside a line" },
		{ H "a,0,1,4\r\nb,0,1,4\r\n", 0, "peak                8 " },
		{ "input x 4\r\nop f x -> y:4\r\noutput y\r\n", 0,
		  "peak                8 " },
		{ "input x 16E\n", 1, ":1: size '16E' does not fit in 64 bits" },
		{ "input x -4\n", 1, ":1: negative size '-4'" },
		{ "input x 4\ninput x 4\n", 1, ":2: tensor 'x' already defined" },
		{ "input x 4\nop f x -> y:4 y:4\n", 1, ":2: an output of op 'f' is named twice" },
		{ "input x 4\nop f x -> y:4 z\n", 1, ":2: output 'z' needs a size" },
		{ "input \xc3\x28 4\n", 1, ":1: not valid UTF-8: byte 0xc3" },
		{ "input x 4 3\n", 1, ":1: alignment 3 is not a power of two" },
	};
#undef H
	char name[32], args[64], *big;
	size_t i, n;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(name, sizeof(name), "h%zu.in", i);
		put(name, cases[i].text);
		snprintf(args, sizeof(args), "%s", name);
		EXPECT_RUN(cases[i].rc, args, cases[i].want);
	}
	/* NUL bytes, in either format. */
	putn("nul.csv", H_NUL_CSV, sizeof(H_NUL_CSV) - 1);
	putn("nul.graph", "input x 4\0\n", 12);
	EXPECT_RUN(1, "nul.csv", "nul.csv:2: NUL byte in the input");
	EXPECT_RUN(1, "nul.graph", "nul.graph:1: NUL byte in the input");
	/* A 4 MiB line: an id (fine) and a number (does not fit). */
	n = 4u << 20;
	big = malloc(n + 64);
	ASSERT_NE(NULL, big);
	memcpy(big, "id,lower,upper,size\n", 20);
	memset(big + 20, 'a', n);
	memcpy(big + 20 + n, ",0,1,4\n", 8);
	putn("long.csv", big, 27 + n);
	EXPECT_RUN(0, "long.csv", "buffers             1");
	memcpy(big, "id,lower,upper,size\na,0,1,", 26);
	memset(big + 26, '9', n);
	big[26 + n] = '\n';
	putn("longnum.csv", big, 27 + n);
	EXPECT_RUN(1, "longnum.csv", "longnum.csv:2: size '9999");
	free(big);
	/* More words on one line than a graph statement takes. */
	big = malloc(8192);
	ASSERT_NE(NULL, big);
	n = snprintf(big, 8192, "input x 4\nop f x ->");
	for (i = 0; i < 300; i++)
		n += snprintf(big + n, 8192 - n, " t%zu:4", i);
	big[n++] = '\n';
	putn("wide.graph", big, n);
	EXPECT_RUN(1, "wide.graph", "wide.graph:2: too many words on one line (max 256)");
	free(big);
}

/*
 * With --minimize the exact planner moves the buffers (here to a plan of
 * the same peak but other offsets): every tensor moves with its buffer.
 */
TEST_F(cli, exact_plan_moves_the_tensors)
{
	const struct jv *m, *bp, *tp;
	struct jv doc;
	size_t i, k;

	put("r.graph", "input x0 1\n"
		       "op o0 x0 -> t0_0:5 t0_1:4\n"
		       "op o1 t0_0 -> t1_0:3 t1_1:5\n"
		       "op o2 -> t2_0:3\n"
		       "op o3 -> t3_0:5\n"
		       "op o4 t1_1 -> t4_0:3\n"
		       "op o5 -> t5_0:7\n"
		       "op o6 t4_0 -> t6_0:3\n"
		       "op o7 t2_0 -> t7_0:5\n");
	ASSERT_EQ(0, run("--json -S size-first-fit --minimize --time-limit 5 r.graph",
			 self->out, sizeof(self->out)));
	ASSERT_TRUE(json_parse(self->out, &doc));
	m = &json_get(&doc, "models")->items[0];
	bp = json_get(m, "buffer_plan");
	tp = json_get(m, "tensor_plan");
	ASSERT_TRUE(bp && tp);
	EXPECT_EQ(11, tp->n);
	for (i = 0; i < tp->n; i++) {
		const char *buf = json_str(&tp->items[i], "buffer");

		for (k = 0; k < bp->n; k++)
			if (!strcmp(json_str(&bp->items[k], "id"), buf))
				break;
		ASSERT_LT(k, bp->n);
		EXPECT_EQ(json_u64(&bp->items[k], "offset"),
			  json_u64(&tp->items[i], "offset"));
	}
	jv_free(&doc);
}

TEST_F(cli, malformed_input_names_file_and_line)
{
	static const struct { const char *file, *want; } cases[] = {
		{ "neg.csv", "neg.csv:3: negative size '-4'" },
		{ "num.csv", "num.csv:4: bad upper 'x3'" },
		{ "order.csv", "order.csv:2: upper 5 must be greater than lower 5" },
		{ "dup.csv", "dup.csv:4: duplicate id 'a'" },
		{ "bad.graph", "bad.graph:3: unknown tensor 'y'" },
		{ "clash.csv", "clash.csv: fixed offsets overlap: 'a' alive [0, 3) at [0, 4) and 'b' alive [2, 5) at [2, 6)" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		EXPECT_EQ(1, run(cases[i].file, self->out, sizeof(self->out)));
		if (!strstr(self->out, cases[i].want))
			TH_LOG("got: %s", self->out);
		EXPECT_NE(NULL, strstr(self->out, cases[i].want));
	}
}

TEST_F(cli, plan_csv_svg_json)
{
	char path[PATH_MAX + 64], *text;
	struct md_problem p;
	struct md_error err;
	uint64_t off[5];
	size_t i, n, rects = 0;
	FILE *f;

	ASSERT_EQ(0, run("good.csv -o plan.csv --svg plan.svg", self->out,
			 sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "lower bound         12"));
	EXPECT_NE(NULL, strstr(self->out, "peak                12"));
	EXPECT_NE(NULL, strstr(self->out, "peak/lower bound    1.000"));
	EXPECT_NE(NULL, strstr(self->out, "saving vs no reuse  40.0 %"));
	EXPECT_NE(NULL, strstr(self->out, "time "));

	/* The plan reads back as CSV with fixed offsets, and is valid. */
	snprintf(path, sizeof(path), "%s/plan.csv", dir);
	f = fopen(path, "r");
	ASSERT_NE(NULL, f);
	text = calloc(1, 4096);
	n = fread(text, 1, 4095, f);
	fclose(f);
	md_problem_init(&p);
	ASSERT_EQ(0, md_problem_parse_csv(&p, text, n, &err));
	ASSERT_EQ(5, p.n);
	for (i = 0; i < p.n; i++) {
		EXPECT_TRUE(p.bufs[i].flags & MD_BUF_FIXED);
		off[i] = p.bufs[i].offset;
	}
	EXPECT_EQ(0, md_plan_validate(&p, off, NULL));
	EXPECT_EQ(12, md_plan_peak(&p, off));
	md_problem_free(&p);
	free(text);

	/* One rectangle per buffer, peak and lower bound lines. */
	snprintf(path, sizeof(path), "%s/plan.svg", dir);
	f = fopen(path, "r");
	ASSERT_NE(NULL, f);
	text = calloc(1, 1 << 16);
	n = fread(text, 1, (1 << 16) - 1, f);
	fclose(f);
	EXPECT_NE(NULL, strstr(text, "<svg"));
	EXPECT_NE(NULL, strstr(text, ">peak 12 B<"));
	EXPECT_NE(NULL, strstr(text, ">lower bound 12 B<"));
	for (char *s = text; (s = strstr(s, "<title>")); s++)
		rects++;
	EXPECT_EQ(5, rects);
	free(text);

	ASSERT_EQ(0, run("--json good.csv", self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "\"peak\": 12,"));
	EXPECT_NE(NULL, strstr(self->out, "\"lower_bound\": 12,"));
	EXPECT_NE(NULL, strstr(self->out, "\"strategies\": {"));
}

/*
 * --pool: a series of pool snapshots (a runtime appending md_snapshot()
 * to a file) counted and drawn: well-formed SVG (xmllint when installed,
 * else the structure checked here) with one rectangle per block life;
 * lives counted by the test from its own handles.
 */
TEST_F(cli, pool_snapshots_svg_one_rect_per_block)
{
	struct md_device_config dc = { .backend = "host", .align = 256 };
	struct md_pool_config pc = { .flags = MD_POOL_DYNAMIC };
	char path[PATH_MAX + 64], want[128], *text;
	struct md_buf b[8];
	int seen[8] = { 0 }, lives = 0, i, k, rects = 0;
	uint64_t seed = 0x5eed5eedULL;
	struct md_device *dev;
	struct md_pool *pool;
	size_t n;
	FILE *f;

	ASSERT_EQ(0, md_device_open(&dc, &dev));
	ASSERT_EQ(0, md_pool_create(dev, &pc, &pool));
	snprintf(path, sizeof(path), "%s/snaps.json", dir);
	f = fopen(path, "w");
	ASSERT_NE(NULL, f);
	memset(b, 0, sizeof(b));
	for (i = 0; i < 10; i++) {
		for (k = 0; k < 3; k++) {
			int j;

			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			j = (int)(seed % 8);
			if (b[j].block) {
				ASSERT_EQ(0, md_free(pool, &b[j]));
				b[j].block = NULL;
			} else {
				ASSERT_EQ(0, md_alloc_tagged(pool, 1 + (seed >> 8) %
							     (24u << 20),
							     "a<b>&c", &b[j]));
				seen[j] = 0;
			}
		}
		/* A life is counted once, in the first snapshot it is in. */
		for (k = 0; k < 8; k++)
			if (b[k].block && !seen[k]) {
				seen[k] = 1;
				lives++;
			}
		ASSERT_EQ(0, md_snapshot(pool, f));
	}
	ASSERT_EQ(0, fclose(f));
	md_pool_destroy(pool);
	md_device_close(dev);
	ASSERT_GT(lives, 5);

	ASSERT_EQ(0, run("--pool --svg pool.svg snaps.json", self->out,
			 sizeof(self->out)));
	snprintf(want, sizeof(want), "10 snapshots, %d blocks", lives);
	EXPECT_NE(NULL, strstr(self->out, want)) TH_LOG("%s", self->out);
	snprintf(path, sizeof(path), "%s/pool.svg", dir);
	f = fopen(path, "r");
	ASSERT_NE(NULL, f);
	text = calloc(1, 1 << 18);
	ASSERT_NE(NULL, text);
	n = fread(text, 1, (1 << 18) - 1, f);
	fclose(f);
	ASSERT_GT(n, 0u);
	for (char *s = text; (s = strstr(s, "<rect class=\"block\"")); s++)
		rects++;
	EXPECT_EQ(lives, rects);
	/* Tags escaped; one <svg> element, closed at the end. */
	EXPECT_NE(NULL, strstr(text, "a&lt;b&gt;&amp;c dynamic"));
	EXPECT_EQ(NULL, strstr(text, "a<b>"));
	EXPECT_EQ(text, strstr(text, "<?xml version=\"1.0\""));
	EXPECT_NE(NULL, strstr(text, "<svg xmlns="));
	EXPECT_EQ(NULL, strstr(strstr(text, "<svg xmlns=") + 1, "<svg"));
	EXPECT_EQ(0, strcmp(text + n - 7, "</svg>\n"));
	free(text);
	if (!system("command -v xmllint >/dev/null 2>&1")) {
		char cmd[PATH_MAX + 96];

		snprintf(cmd, sizeof(cmd), "xmllint --noout '%s'", path);
		EXPECT_EQ(0, system(cmd));
	}

	/* Not snapshots; --pool with -o, or two files. */
	EXPECT_RUN(1, "--pool good.csv", "not a series of pool snapshots");
	EXPECT_RUN(2, "--pool -o x.csv snaps.json", "--pool takes one file");
	EXPECT_RUN(2, "--pool snaps.json snaps.json", "--pool takes one file");
	EXPECT_RUN(1, "--pool nosuch.json", "nosuch.json");
}

TEST_F(cli, graph_and_inter_model)
{
	ASSERT_EQ(0, run("good.graph", self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "(graph)"));
	EXPECT_NE(NULL, strstr(self->out, "1 in place"));
	ASSERT_EQ(0, run("good.graph good.csv", self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "inter-model reuse: 2 models"));
	ASSERT_EQ(0, run("--json good.graph good.csv", self->out,
			 sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "\"inter_model\""));
	EXPECT_NE(NULL, strstr(self->out, "\"intra_op_saved\": 4096"));
}

/* Views and in place: both bounds, and what each tensor aliases. */
TEST_F(cli, graph_aliases_and_both_bounds)
{
	put("alias.graph", "input x 64\n"
			   "op f x -> a:1000\n"
			   "op resh a -> b^a\n"
			   "op relu b -> c:1000=b\n"
			   "op g c -> d:8\n"
			   "output d\n");
	ASSERT_EQ(0, run("alias.graph", self->out, sizeof(self->out)));
	/* Apart: x + a + b at step 1; aliased: x + a+b+c + d at step 3. */
	EXPECT_NE(NULL, strstr(self->out, "lower bound         1072 "));
	EXPECT_NE(NULL, strstr(self->out, "bound (no alias)    2064 "));
	EXPECT_NE(NULL, strstr(self->out, "(1 in place, 0 refused, 1 views)"));
	ASSERT_EQ(0, run("--json alias.graph", self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "\"lower_bound_noalias\": 2064"));
	EXPECT_NE(NULL, strstr(self->out, "\"view_of\": \"a\""));
	EXPECT_NE(NULL, strstr(self->out, "\"inplace_of\": \"b\""));
	EXPECT_NE(NULL, strstr(self->out, "\"views\": 1"));
}

/* An ONNX model: text, --json with the import figures, -o, --svg. */
TEST_F(cli, onnx_model)
{
	const struct jv *m, *o, *y, *r;
	struct jv doc;

	EXPECT_RUN(0, "m.onnx --input x=2x3x8x8", "m.onnx (onnx)");
	EXPECT_NE(NULL, strstr(self->out, "onnx nodes          3 (opset 17, 3 shapes inferred)"));
	EXPECT_NE(NULL, strstr(self->out, "weights             432 (432 B)"));
	EXPECT_NE(NULL, strstr(self->out, "activations         6144 (6 KiB)"));
	EXPECT_NE(NULL, strstr(self->out, "2 in place, 0 refused"));
	/* 1536 input + 432 weight + 2048 for c, r and y in one buffer. */
	EXPECT_NE(NULL, strstr(self->out, "peak                4016 "));

	ASSERT_EQ(0, run_cmd("", "--json --dim batch=2 m.onnx", "2>/dev/null",
			     self->out, sizeof(self->out)));
	ASSERT_TRUE(json_parse(self->out, &doc)) TH_LOG("%s", self->out);
	m = &json_get(&doc, "models")->items[0];
	EXPECT_STREQ("onnx", json_str(m, "format"));
	o = json_get(m, "onnx");
	ASSERT_NE(NULL, o);
	EXPECT_EQ(3, json_u64(o, "nodes"));
	EXPECT_EQ(5, json_u64(o, "tensors"));
	EXPECT_EQ(3, json_u64(o, "inferred"));
	EXPECT_EQ(2, json_u64(o, "inplace"));
	EXPECT_EQ(432, json_u64(o, "weight_bytes"));
	EXPECT_EQ(1536, json_u64(o, "input_bytes"));
	EXPECT_EQ(6144, json_u64(o, "activation_bytes"));
	EXPECT_EQ(17, json_u64(o, "opset"));
	y = placement(m, "tensor_plan", "y");
	r = placement(m, "tensor_plan", "r");
	ASSERT_TRUE(y && r);
	EXPECT_EQ(json_u64(y, "offset"), json_u64(r, "offset"));
	EXPECT_STREQ("c+r+y", json_str(y, "buffer"));
	jv_free(&doc);

	/* fp16 halves the floats, --no-weights leaves x and w out. */
	EXPECT_RUN(0, "--dim batch=2 --dtype fp16 m.onnx",
		   "peak                2008 ");
	EXPECT_RUN(0, "--dim batch=2 --no-weights m.onnx",
		   "peak                2048 ");
	EXPECT_NE(NULL, strstr(self->out, "tensors             3\n"));
	/* -f onnx for another name; -o and --svg; two models, one arena */
	EXPECT_RUN(0, "-f onnx --dim batch=1 -o p.csv --svg p.svg model.bin",
		   "model.bin (onnx)");
	EXPECT_RUN(0, "--dim batch=1 m.onnx good.graph", "inter-model reuse: 2 models");
	EXPECT_RUN(0, "--dim batch=1 --minimize --time-limit 1 m.onnx", "peak");
}

/* --fuse: Relu and Sigmoid one op, r no tensor, y written into c. */
TEST_F(cli, onnx_fuse)
{
	const struct jv *o, *y, *c;
	struct jv doc;

	EXPECT_RUN(0, "--dim batch=2 --no-weights --fuse m.onnx",
		   "fused ops           1 (of 2 nodes)");
	EXPECT_NE(NULL, strstr(self->out, "tensors             2\n"));
	EXPECT_NE(NULL, strstr(self->out, "peak                2048 "));
	EXPECT_NE(NULL, strstr(self->out, "1 in place, 0 refused"));
	EXPECT_RUN(0, "--dim batch=2 --no-weights m.onnx",
		   "tensors             3\n");
	EXPECT_EQ(NULL, strstr(self->out, "fused ops"));

	ASSERT_EQ(0, run_cmd("", "--json --dim batch=2 --no-weights --fuse m.onnx",
			     "2>/dev/null", self->out, sizeof(self->out)));
	ASSERT_TRUE(json_parse(self->out, &doc)) TH_LOG("%s", self->out);
	o = json_get(&json_get(&doc, "models")->items[0], "onnx");
	ASSERT_NE(NULL, o);
	EXPECT_EQ(1, json_u64(o, "fused_ops"));
	EXPECT_EQ(2, json_u64(o, "fused_nodes"));
	EXPECT_EQ(2, json_u64(o, "tensors"));
	y = placement(&json_get(&doc, "models")->items[0], "tensor_plan", "y");
	c = placement(&json_get(&doc, "models")->items[0], "tensor_plan", "c");
	ASSERT_TRUE(y && c);
	EXPECT_EQ(json_u64(c, "offset"), json_u64(y, "offset"));
	EXPECT_EQ(NULL, placement(&json_get(&doc, "models")->items[0],
				  "tensor_plan", "r"));
	jv_free(&doc);
}

/* ONNX errors: the reason, exit 1; a bad option: usage, exit 2. */
TEST_F(cli, onnx_errors)
{
	EXPECT_RUN(1, "m.onnx", "m.onnx: graph input 'x': symbolic dimension 'batch' has no value (--dim batch=N, or --input x=DIMS)");
	EXPECT_RUN(1, "garbage.onnx", "garbage.onnx: not an ONNX model (protobuf parse failed)");
	EXPECT_RUN(1, "cycle.onnx", "cycle.onnx: the graph has a cycle");
	EXPECT_RUN(1, "--input y=1 m.onnx", "input shape given for 'y', which is not a graph input");
	EXPECT_RUN(1, "--input x=1x3x0x0 m.onnx", "kernel (3) larger than the padded input (2)");
	EXPECT_RUN(2, "--input x m.onnx", "--input 'x': expected NAME=DIMS (e.g. x=1x3x224x224)");
	EXPECT_RUN(2, "--input x=1x3xx8 m.onnx", "--input 'x=1x3xx8': DIMS are numbers >= 0 separated by 'x'");
	EXPECT_RUN(2, "--input =1 m.onnx", "expected NAME=DIMS");
	EXPECT_RUN(2, "--dim batch m.onnx", "--dim 'batch': expected NAME=N");
	EXPECT_RUN(2, "--dim batch=1x2 m.onnx", "the value must be one number >= 0");
	EXPECT_RUN(2, "--dtype fp8 m.onnx", "--dtype: fp32, fp16 or bf16, not 'fp8'");
	EXPECT_RUN(1, "-f graph m.onnx", "m.onnx:1: ");
}

TEST_HARNESS_MAIN
