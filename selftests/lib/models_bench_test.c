// SPDX-License-Identifier: GPL-2.0
/*
 * Host test: the footprint report's quick mode (models_bench --quick on
 * the small graphs of tools/bench/models), so that a broken bench shows
 * in make check without the long run: every row measured, the figures
 * consistent (the bench checks them itself), report.md and an SVG per
 * row written; a missing model is reported as such and fails a full run.
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "test_util.h"

#ifndef MD_SRCDIR
#define MD_SRCDIR "."
#endif

static const char *const rows[] = {
	"cnn", "mlp", "mixed", "train", "train-reuse", "train-reuse-recompute",
	"lstm", "resnet50-32px", NULL
};

static char bin[PATH_MAX], gen[PATH_MAX];

static int find_bin(void)
{
	return test_build_path(bin, sizeof(bin), "bench/models_bench") ||
	       test_build_path(gen, sizeof(gen), "bin/metadef-models");
}

/* Run models_bench with @args in the source tree; its output into @out. */
static int run(const char *args, char *out, size_t len)
{
	char cmd[PATH_MAX * 2 + 512];

	snprintf(cmd, sizeof(cmd), "cd '%s' && '%s' %s 2>&1", MD_SRCDIR, bin,
		 args);
	return test_capture(cmd, out, len);
}

static char *slurp(const char *dir, const char *name)
{
	char path[PATH_MAX + 64];
	char *buf = NULL;
	size_t len = 0;
	FILE *f, *m;
	int c;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return NULL;
	m = open_memstream(&buf, &len);
	if (m) {
		while ((c = fgetc(f)) != EOF)
			fputc(c, m);
		fclose(m);
	}
	fclose(f);
	return buf;
}

FIXTURE(bench) {
	char dir[64];
	char out[1 << 16];
};

FIXTURE_SETUP(bench)
{
	if (find_bin())
		SKIP(return, "build/bench/models_bench not built");
	snprintf(self->dir, sizeof(self->dir), "/tmp/models-bench-test.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	/* Result files (tools/bench/harness.h) go to the test's dir. */
	ASSERT_EQ(0, setenv("BENCH_RESULTS", self->dir, 1));
}

FIXTURE_TEARDOWN(bench)
{
	char cmd[128];

	if (self->dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->dir);
		if (system(cmd) != 0)
			TH_LOG("could not remove %s", self->dir);
	}
}

TEST_F(bench, quick_report)
{
	const int nrows = sizeof(rows) / sizeof(rows[0]) - 1;
	char args[PATH_MAX + 256], line[128], name[128];
	char *report, *svg;
	int rc, i;

	/* The small ONNX model, as tools/bench/models-gen writes it. */
	snprintf(args, sizeof(args), "'%s' resnet50 --image 32 -o '%s/resnet50-32px.onnx' 2>/dev/null",
		 gen, self->dir);
	ASSERT_EQ(0, system(args));
	snprintf(args, sizeof(args), "--quick -t 0.5 -r 3 -m '%s' -o '%s'",
		 self->dir, self->dir);
	rc = run(args, self->out, sizeof(self->out));
	if (rc)
		TH_LOG("rc %d: %s", rc, self->out);
	ASSERT_EQ(0, rc);
	EXPECT_NE(NULL, strstr(self->out, "quick run: goals shown"));
	/* A quick run judges nothing and writes no result file. */
	EXPECT_EQ(NULL, slurp(self->dir, "models.tsv"));
	EXPECT_EQ(NULL, strstr(self->out, "a bug"));
	EXPECT_EQ(NULL, strstr(self->out, "not measured"));

	report = slurp(self->dir, "report.md");
	ASSERT_NE(NULL, report);
	EXPECT_NE(NULL, strstr(report, "| workload | tensors | no reuse |"));
	EXPECT_NE(NULL, strstr(report, "### Goals"));
	EXPECT_NE(NULL, strstr(report, "mixed serving"));
	EXPECT_NE(NULL, strstr(report, "conflict detection"));
	/* the training goal: reuse + recomputation vs the plain graph's caching */
	EXPECT_NE(NULL, strstr(report, "training: metadef's exact plan of train-reuse-recompute"));
	EXPECT_NE(NULL, strstr(report, "the caching allocator on the same train-reuse-recompute graph reserves"));
	/* The ORT peer's column, not run: a quick run needs no trixie root. */
	EXPECT_NE(NULL, strstr(report, "| ORT arena |"));
	EXPECT_NE(NULL, strstr(report, "### ONNX Runtime peer\n\nNot run in a quick run"));
	for (i = 0; i < nrows; i++) {
		/* A measured row: its name, then its tensor count. */
		snprintf(line, sizeof(line), "\n| %s | ", rows[i]);
		EXPECT_NE(NULL, strstr(report, line));
		snprintf(name, sizeof(name), "%s.svg", rows[i]);
		svg = slurp(self->dir, name);
		EXPECT_NE(NULL, svg);
		if (svg) {
			EXPECT_NE(NULL, strstr(svg, "<svg"));
			EXPECT_NE(NULL, strstr(svg, "</svg>"));
		}
		free(svg);
	}
	/* Small graphs: every plan at the lower bound. */
	snprintf(line, sizeof(line), "%d of %d measured rows within", nrows,
		 nrows);
	EXPECT_NE(NULL, strstr(report, line));
	free(report);
}

TEST_F(bench, missing_models_fail_a_full_run)
{
	char args[256], *tsv;
	int rc;

	snprintf(args, sizeof(args), "-t 0.2 -r 1 -m '%s/none' -o '%s'",
		 self->dir, self->dir);
	rc = run(args, self->out, sizeof(self->out));
	/* Nothing missed, nothing judged: exit status 3, not 0. */
	EXPECT_EQ(3, rc);
	EXPECT_NE(NULL, strstr(self->out, "not measured"));
	EXPECT_NE(NULL, strstr(self->out, "NOT JUDGED"));
	EXPECT_NE(NULL, strstr(self->out, "\n| lstm | - |"));
	/* The ORT rows too, and their goal: not judged without the model. */
	EXPECT_NE(NULL, strstr(self->out, "\n| ppocr-v4-det | - |"));
	EXPECT_NE(NULL, strstr(self->out, "ppocr-v4-det: metadef <= 0.95x ONNX Runtime's best arena (metadef not measured"));
	/* Every goal a row of the result file, not judged. */
	tsv = slurp(self->dir, "models.tsv");
	ASSERT_NE(NULL, tsv);
	EXPECT_NE(NULL, strstr(tsv, "models\tmixed serving\tshared arena / peer's reserved\t"));
	EXPECT_NE(NULL, strstr(tsv, "\t-\t<= 0.95\tNOT JUDGED\t"));
	EXPECT_EQ(NULL, strstr(tsv, "\tmet\t"));
	EXPECT_EQ(NULL, strstr(tsv, "\tMISSED\t"));
	free(tsv);
}

TEST_F(bench, usage)
{
	EXPECT_EQ(2, run("--no-such-option", self->out, sizeof(self->out)));
	EXPECT_EQ(2, run("-t 0", self->out, sizeof(self->out)));
	EXPECT_EQ(2, run("extra", self->out, sizeof(self->out)));
	EXPECT_EQ(0, run("--help", self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "usage: models_bench"));
}

TEST_HARNESS_MAIN
