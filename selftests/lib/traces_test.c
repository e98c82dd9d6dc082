// SPDX-License-Identifier: GPL-2.0
/*
 * Host tests of the traces bench-scale plans (issue 22): tracegen's CSVs
 * hold what tracegen knows of them (-k: the buffer count, the lower
 * bound by its own sweep, the largest and smallest size), read back by
 * metadef-plan and by this test's own reader; the same seed gives the
 * same bytes; -b puts GB-sized buffers beside tiny ones; 10^3 to 10^5
 * buffers. metadef-plan --export-csv writes the problem of a training
 * graph (metadef-models) that reads back as the same problem: the same
 * buffers, the same lower bound, every row the same. Runs the binaries
 * the Makefile builds beside this test (build/bin/, build/bench/).
 */
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <metadef/plan.h>

#include "kselftest_harness.h"
#include "test_util.h"

static char tracegen[PATH_MAX], models[PATH_MAX], plan[PATH_MAX];
static char dir[PATH_MAX];

static int find_bins(void)
{
	return test_build_path(tracegen, sizeof(tracegen), "bench/tracegen") ||
	       test_build_path(models, sizeof(models), "bin/metadef-models") ||
	       test_build_path(plan, sizeof(plan), "bin/metadef-plan");
}

/* Run @cmd in dir; stdout+stderr into @out. */
static int sh(const char *cmd, char *out, size_t len)
{
	char full[PATH_MAX * 4 + 2048];

	snprintf(full, sizeof(full), "cd '%s' && { %s ; } 2>&1", dir, cmd);
	return test_capture(full, out, len);
}

/* Read @name (in dir) whole, NUL-terminated; NULL on failure. */
static char *slurp(const char *name, size_t *len)
{
	char path[PATH_MAX + 64];
	char *s = NULL;
	long n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET))
		goto out;
	s = malloc(n + 1);
	if (s && fread(s, 1, n, f) != (size_t)n) {
		free(s);
		s = NULL;
	}
	if (s) {
		s[n] = '\0';
		*len = n;
	}
out:
	fclose(f);
	return s;
}

/* "NAME N" in tracegen -k's output, UINT64_MAX when missing. */
static uint64_t known(const char *out, const char *name)
{
	const char *p = out;
	size_t l = strlen(name);

	while ((p = strstr(p, name))) {
		if ((p == out || p[-1] == '\n') && p[l] == ' ')
			return strtoull(p + l + 1, NULL, 10);
		p += l;
	}
	return UINT64_MAX;
}

/*
 * What this test sees in a four-column trace, read without the library:
 * rows, the shortest lifetime, sizes not a multiple of 512, the largest
 * and smallest size, and how many are at most 4 KiB or at least 1 GiB.
 */
struct seen {
	uint64_t rows, shortest, unpadded, largest, smallest, tiny, huge;
};

static int scan(const char *csv, struct seen *s)
{
	const char *p = strchr(csv, '\n');
	unsigned long long id, lo, up, size;

	memset(s, 0, sizeof(*s));
	s->shortest = s->smallest = UINT64_MAX;
	if (!p || strncmp(csv, "id,lower,upper,size\n", 20))
		return -1;
	for (p++; *p; p = strchr(p, '\n') + 1) {
		if (sscanf(p, "%llu,%llu,%llu,%llu", &id, &lo, &up, &size) != 4 ||
		    id != s->rows || up <= lo || !strchr(p, '\n'))
			return -1;
		s->rows++;
		if (up - lo < s->shortest)
			s->shortest = up - lo;
		if (size % 512)
			s->unpadded++;
		if (size > s->largest)
			s->largest = size;
		if (size < s->smallest)
			s->smallest = size;
		s->tiny += size <= 4096;
		s->huge += size >= (1ull << 30);
	}
	return 0;
}

FIXTURE(traces) {
	char out[1 << 16];
	char cmd[PATH_MAX * 2 + 512];
};

FIXTURE_SETUP(traces)
{
	if (find_bins())
		SKIP(return, "build/bench/tracegen or build/bin/ not built");
	snprintf(dir, sizeof(dir), "/tmp/metadef-traces-test.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(dir));
}

FIXTURE_TEARDOWN(traces)
{
	char cmd[PATH_MAX + 16];

	if (dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			TH_LOG("could not remove %s", dir);
	}
}

/* "  NAME   N ..." in metadef-plan's text report, UINT64_MAX if none. */
static uint64_t field(const char *out, const char *name)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), "\n  %s ", name);
	p = strstr(out, key);
	return p ? strtoull(p + strlen(key), NULL, 10) : UINT64_MAX;
}

/* metadef-plan's text report on @file into self->out. */
#define PLAN(file) do {							\
	snprintf(self->cmd, sizeof(self->cmd), "'%s' %s", plan, file);	\
	ASSERT_EQ(0, sh(self->cmd, self->out, sizeof(self->out)))	\
		TH_LOG("%.300s", self->out);				\
} while (0)

/*
 * Every shape at 10^3 and 10^4 buffers (10^5 for one): tracegen's
 * known answers hold in the CSV and in what metadef-plan reads from it.
 */
TEST_F(traces, tracegen_known_answers)
{
	static const char *const shapes[] = {
		"cnn", "bert", "unet", "train-cnn", "train-bert",
	};
	static const unsigned int sizes[] = { 1000, 10000 };
	struct seen s;
	size_t i, k, len;

	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		for (k = 0; k < 2; k++) {
			uint64_t n = sizes[k], lb;
			char *csv;

			snprintf(self->cmd, sizeof(self->cmd),
				 "'%s' -k -s %zu -n %u %s 2>&1 >t.csv",
				 tracegen, 40 + i, sizes[k], shapes[i]);
			ASSERT_EQ(0, sh(self->cmd, self->out,
					sizeof(self->out)));
			lb = known(self->out, "lower_bound");
			ASSERT_NE(UINT64_MAX, lb) TH_LOG("%s", self->out);
			csv = slurp("t.csv", &len);
			ASSERT_NE(NULL, csv);
			EXPECT_EQ(0, scan(csv, &s)) TH_LOG("%s", shapes[i]);
			free(csv);
			EXPECT_EQ(known(self->out, "buffers"), s.rows);
			/* about n: the last block finishes past it */
			EXPECT_GE(s.rows, n);
			EXPECT_LT(s.rows, n * 3 / 2);
			EXPECT_GE(s.shortest, 2);	/* idealloc needs it */
			EXPECT_EQ(0, s.unpadded);
			EXPECT_EQ(known(self->out, "largest"), s.largest);
			EXPECT_EQ(known(self->out, "smallest"), s.smallest);
			/* many tiny buffers: scratch beside each operator */
			EXPECT_GT(s.tiny, s.rows / 4);
			PLAN("t.csv");
			EXPECT_EQ(s.rows, field(self->out, "buffers"));
			EXPECT_EQ(lb, field(self->out, "lower bound"));
			EXPECT_GE(field(self->out, "peak"), lb);
		}
	}
}

/* -b: GB-sized activations beside the tiny buffers; 10^5 buffers. */
TEST_F(traces, tracegen_big_batch_and_scale)
{
	struct seen s;
	size_t len;
	char *csv;

	snprintf(self->cmd, sizeof(self->cmd),
		 "'%s' -k -b 256 -s 104 -n 100000 unet 2>&1 >u.csv", tracegen);
	ASSERT_EQ(0, sh(self->cmd, self->out, sizeof(self->out)));
	csv = slurp("u.csv", &len);
	ASSERT_NE(NULL, csv);
	ASSERT_EQ(0, scan(csv, &s));
	EXPECT_EQ(known(self->out, "buffers"), s.rows);
	EXPECT_GE(s.rows, 100000);
	EXPECT_GT(s.huge, 100);
	EXPECT_GT(s.tiny, s.rows / 4);
	EXPECT_GE(s.largest, 1ull << 30);
	EXPECT_LE(s.smallest, 4096);
	/* the same seed, the same trace; another batch, another trace */
	snprintf(self->cmd, sizeof(self->cmd),
		 "'%s' -b 256 -s 104 -n 100000 unet >u2.csv && cmp -s u.csv u2.csv && "
		 "'%s' -b 128 -s 104 -n 100000 unet >u3.csv && ! cmp -s u.csv u3.csv",
		 tracegen, tracegen);
	EXPECT_EQ(0, sh(self->cmd, self->out, sizeof(self->out)));
	free(csv);
	/* a bad batch is refused */
	snprintf(self->cmd, sizeof(self->cmd), "'%s' -b 0 cnn >/dev/null",
		 tracegen);
	EXPECT_EQ(2, sh(self->cmd, self->out, sizeof(self->out)));
}

/*
 * --export-csv of a training graph reads back as the same problem: the
 * same number of buffers and lower bound as the graph's report, and row
 * for row the same buffers as the library parses them.
 */
static void export_roundtrip(struct __test_metadata *_metadata,
			     FIXTURE_DATA(traces) *self, const char *args)
{
	struct md_problem a, b;
	uint64_t nbuf, lb;
	size_t len, i;
	char *csv;

	snprintf(self->cmd, sizeof(self->cmd),
		 "'%s' %s -o g.graph 2>/dev/null && '%s' --export-csv e.csv g.graph",
		 models, args, plan);
	ASSERT_EQ(0, sh(self->cmd, self->out, sizeof(self->out)))
		TH_LOG("%.300s", self->out);
	nbuf = field(self->out, "buffers");
	lb = field(self->out, "lower bound");
	ASSERT_GT(nbuf, 1000);
	ASSERT_NE(UINT64_MAX, lb);
	PLAN("e.csv");
	EXPECT_EQ(nbuf, field(self->out, "buffers"));
	EXPECT_EQ(lb, field(self->out, "lower bound"));
	/* the library's own reading of it, and once more through -f csv */
	csv = slurp("e.csv", &len);
	ASSERT_NE(NULL, csv);
	md_problem_init(&a);
	md_problem_init(&b);
	ASSERT_EQ(0, md_problem_parse_csv(&a, csv, len, NULL));
	free(csv);
	EXPECT_EQ(nbuf, a.n);
	EXPECT_EQ(lb, md_problem_lower_bound(&a, NULL));
	EXPECT_TRUE(a.has_align);	/* the graph aligns every buffer */
	snprintf(self->cmd, sizeof(self->cmd),
		 "'%s' -f csv --export-csv e2.csv e.csv >/dev/null", plan);
	ASSERT_EQ(0, sh(self->cmd, self->out, sizeof(self->out)));
	csv = slurp("e2.csv", &len);
	ASSERT_NE(NULL, csv);
	ASSERT_EQ(0, md_problem_parse_csv(&b, csv, len, NULL));
	free(csv);
	ASSERT_EQ(a.n, b.n);
	for (i = 0; i < a.n; i++) {
		EXPECT_STREQ(a.bufs[i].id, b.bufs[i].id);
		EXPECT_EQ(a.bufs[i].lower, b.bufs[i].lower);
		EXPECT_EQ(a.bufs[i].upper, b.bufs[i].upper);
		EXPECT_EQ(a.bufs[i].size, b.bufs[i].size);
		EXPECT_EQ(a.bufs[i].align, b.bufs[i].align);
		if (a.bufs[i].size != b.bufs[i].size)
			break;
	}
	md_problem_free(&a);
	md_problem_free(&b);
}

TEST_F(traces, export_resnet50_train)
{
	export_roundtrip(_metadata, self, "resnet50-train");
}

TEST_F(traces, export_bert_large_train_grad_reuse)
{
	export_roundtrip(_metadata, self, "bert-large-train --grad-reuse");
}

/* A plan read back (fixed offsets) cannot be exported as a problem. */
TEST_F(traces, export_refuses_fixed_offsets)
{
	FILE *f;
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/fixed.csv", dir);
	f = fopen(path, "w");
	ASSERT_NE(NULL, f);
	fputs("id,lower,upper,size,offset\na,0,2,8,0\nb,1,3,8,8\n", f);
	ASSERT_EQ(0, fclose(f));
	snprintf(self->cmd, sizeof(self->cmd),
		 "'%s' --export-csv x.csv fixed.csv", plan);
	EXPECT_EQ(1, sh(self->cmd, self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "fixed offset"));
}

TEST_HARNESS_MAIN
