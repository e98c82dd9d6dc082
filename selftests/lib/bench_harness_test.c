// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests: the bench harness (tools/bench/harness.[ch]): its
 * statistics on known arrays, its formatters, and its goal check: the
 * verdicts, the result file's rows and the exit status they make.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "kselftest_harness.h"

#define NEAR(a, b)	(fabs((a) - (b)) < 1e-12)

TEST(stats_odd_count)
{
	/* Unsorted on purpose: the input must be left as it was. */
	double v[] = { 5, 1, 4, 2, 3 };
	double copy[5];
	struct bench_stats s;

	memcpy(copy, v, sizeof(v));
	ASSERT_EQ(0, bench_summarize(v, 5, &s));
	EXPECT_EQ(5, s.n);
	EXPECT_TRUE(NEAR(s.median, 3));
	EXPECT_TRUE(NEAR(s.min, 1));
	EXPECT_TRUE(NEAR(s.max, 5));
	EXPECT_TRUE(NEAR(s.q1, 2));
	EXPECT_TRUE(NEAR(s.q3, 4));
	EXPECT_TRUE(NEAR(s.iqr, 2));
	EXPECT_TRUE(NEAR(s.mean, 3));
	EXPECT_EQ(0, memcmp(v, copy, sizeof(v)));
}

TEST(stats_even_count)
{
	double v[] = { 40, 10, 30, 20 };
	struct bench_stats s;

	ASSERT_EQ(0, bench_summarize(v, 4, &s));
	/* The mean of the middle two; quartiles at ranks 0.75 and 2.25. */
	EXPECT_TRUE(NEAR(s.median, 25));
	EXPECT_TRUE(NEAR(s.q1, 17.5));
	EXPECT_TRUE(NEAR(s.q3, 32.5));
	EXPECT_TRUE(NEAR(s.iqr, 15));
	EXPECT_TRUE(NEAR(s.min, 10));
	EXPECT_TRUE(NEAR(s.max, 40));
}

TEST(stats_skewed_and_single)
{
	/* An outlier moves the mean and max, not the median or the IQR. */
	double v[] = { 7, 1, 1000, 3, 5, 9 };
	double one = 42;
	struct bench_stats s;

	ASSERT_EQ(0, bench_summarize(v, 6, &s));
	EXPECT_TRUE(NEAR(s.median, 6));
	EXPECT_TRUE(NEAR(s.q1, 3.5));
	EXPECT_TRUE(NEAR(s.q3, 8.5));
	EXPECT_TRUE(NEAR(s.max, 1000));
	EXPECT_TRUE(NEAR(s.mean, 1025.0 / 6));

	ASSERT_EQ(0, bench_summarize(&one, 1, &s));
	EXPECT_TRUE(NEAR(s.median, 42));
	EXPECT_TRUE(NEAR(s.iqr, 0));
	EXPECT_EQ(-1, bench_summarize(&one, 0, &s));
}

static double next_value(void *arg)
{
	int *k = arg;

	return (double)(++*k % 3) * 10;	/* 10, 20, 0, 10, 20, 0, 10 */
}

static double fails(void *arg)
{
	(void)arg;
	return -1;
}

TEST(repeat)
{
	struct bench_stats s;
	int k = 0;

	ASSERT_EQ(0, bench_repeat(7, next_value, &k, &s));
	EXPECT_EQ(7, k);
	EXPECT_EQ(7, s.n);
	EXPECT_TRUE(NEAR(s.median, 10));
	EXPECT_TRUE(NEAR(s.min, 0));
	EXPECT_TRUE(NEAR(s.max, 20));
	EXPECT_EQ(-1, bench_repeat(0, next_value, &k, &s));
	EXPECT_EQ(-1, bench_repeat(3, fails, NULL, &s));
}

TEST(formatters)
{
	char b[32];

	EXPECT_STREQ("512 B", bench_bytes(512, b, sizeof(b)));
	EXPECT_STREQ("4.0 KiB", bench_bytes(4096, b, sizeof(b)));
	EXPECT_STREQ("1.5 MiB", bench_bytes(3ull << 19, b, sizeof(b)));
	EXPECT_STREQ("2.00 GiB", bench_bytes(2ull << 30, b, sizeof(b)));
	EXPECT_STREQ("850 ns", bench_time(850e-9, b, sizeof(b)));
	EXPECT_STREQ("12.3 us", bench_time(12.3e-6, b, sizeof(b)));
	EXPECT_STREQ("4.56 ms", bench_time(4.56e-3, b, sizeof(b)));
	EXPECT_STREQ("1.234 s", bench_time(1.234, b, sizeof(b)));
}

TEST(clocks)
{
	double t0 = bench_now(), c0 = bench_thread_cpu(), p0 = bench_cpu();
	volatile double x = 0;
	long i;

	for (i = 0; i < 2000000; i++)
		x += (double)i;
	EXPECT_GT(bench_now(), t0);
	EXPECT_GT(bench_thread_cpu(), c0);
	EXPECT_GT(bench_cpu(), p0);
}

TEST(holds)
{
	EXPECT_TRUE(bench_holds(1.0, BENCH_LE, 1.0));
	EXPECT_FALSE(bench_holds(1.0, BENCH_LT, 1.0));
	EXPECT_TRUE(bench_holds(0.99, BENCH_LT, 1.0));
	EXPECT_TRUE(bench_holds(2.0, BENCH_GE, 2.0));
	EXPECT_FALSE(bench_holds(2.0, BENCH_GT, 2.0));
	EXPECT_FALSE(bench_holds(1.0000001, BENCH_LE, 1.0));
	EXPECT_FALSE(bench_holds(NAN, BENCH_LE, 1.0));
	EXPECT_FALSE(bench_holds(NAN, BENCH_GE, 1.0));
	EXPECT_FALSE(bench_holds(INFINITY, BENCH_LT, 10));
}

FIXTURE(goals) {
	char dir[64];
	char buf[8192];
};

FIXTURE_SETUP(goals)
{
	snprintf(self->dir, sizeof(self->dir), "/tmp/bench-harness-test.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
}

FIXTURE_TEARDOWN(goals)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->dir);
	if (system(cmd))
		TH_LOG("could not remove %s", self->dir);
}

/* The result file @name.tsv of the test's dir, into self->buf. */
static int slurp(const char *dir, const char *name, char *buf, size_t len)
{
	char path[256];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.tsv", dir, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return 0;
}

static int count(const char *s, char c)
{
	int n = 0;

	for (; *s; s++)
		n += *s == c;
	return n;
}

TEST_F(goals, all_met_exit_0)
{
	struct bench h;
	char *line;

	ASSERT_EQ(0, bench_open(&h, "t0", self->dir));
	EXPECT_EQ(BENCH_MET, bench_goal(&h, "t0", "case a", "x / peer's",
					"peer", 0.5, BENCH_LE, 0.88));
	EXPECT_EQ(BENCH_MET, bench_goal(&h, "t0", "case b", "ns", "-", 80,
					BENCH_LT, 1000));
	EXPECT_EQ(0, bench_exit(&h));
	ASSERT_EQ(0, slurp(self->dir, "t0", self->buf, sizeof(self->buf)));
	/* Two rows of nine fields: eight tabs and a newline each. */
	EXPECT_EQ(2, count(self->buf, '\n'));
	EXPECT_EQ(16, count(self->buf, '\t'));
	line = self->buf;
	EXPECT_EQ(0, strncmp(line, "t0\tcase a\tx / peer's\tpeer\t0.5\t<= 0.88\tmet\t",
			     strlen("t0\tcase a\tx / peer's\tpeer\t0.5\t<= 0.88\tmet\t")));
	EXPECT_NE(NULL, strstr(self->buf, "t0\tcase b\tns\t-\t80\t< 1000\tmet\t"));
	EXPECT_NE(NULL, strstr(self->buf, h.date));
	EXPECT_NE(NULL, strstr(self->buf, h.host));
}

TEST_F(goals, a_miss_exit_1)
{
	struct bench h;

	ASSERT_EQ(0, bench_open(&h, "t1", self->dir));
	EXPECT_EQ(BENCH_MET, bench_goal(&h, "t1", "a", "m", "p", 1.0,
					BENCH_LE, 1.0));
	EXPECT_EQ(BENCH_MISSED, bench_goal(&h, "t1", "b", "m", "p", 1.75,
					   BENCH_LE, 1.0));
	/* A peer missing beside a miss: the miss decides. */
	EXPECT_EQ(BENCH_NOT_JUDGED, bench_goal(&h, "t1", "c", "m", "p", NAN,
					       BENCH_LE, 1.0));
	EXPECT_EQ(BENCH_EXIT_MISSED, bench_exit(&h));
	ASSERT_EQ(0, slurp(self->dir, "t1", self->buf, sizeof(self->buf)));
	EXPECT_NE(NULL, strstr(self->buf, "\tb\tm\tp\t1.75\t<= 1\tMISSED\t"));
	EXPECT_NE(NULL, strstr(self->buf, "\tc\tm\tp\t-\t<= 1\tNOT JUDGED\t"));
}

/* A figure shown never reads as the other verdict: 1.00000014 is no "1". */
TEST_F(goals, shown_value_keeps_its_verdict)
{
	struct bench h;

	ASSERT_EQ(0, bench_open(&h, "t6", self->dir));
	EXPECT_EQ(BENCH_MISSED, bench_goal(&h, "t6", "a", "m", "p",
					   1.00000014, BENCH_LE, 1.0));
	EXPECT_EQ(BENCH_MISSED, bench_goal(&h, "t6", "b", "m", "p",
					   0.89999999, BENCH_GE, 0.9));
	EXPECT_EQ(BENCH_MET, bench_goal(&h, "t6", "c", "m", "p", 0.174441234,
					BENCH_LE, 0.88));
	EXPECT_EQ(BENCH_EXIT_MISSED, bench_exit(&h));
	ASSERT_EQ(0, slurp(self->dir, "t6", self->buf, sizeof(self->buf)));
	EXPECT_NE(NULL, strstr(self->buf, "\ta\tm\tp\t1.0000001\t<= 1\tMISSED\t"));
	EXPECT_NE(NULL, strstr(self->buf, "\tb\tm\tp\t0.89999999\t>= 0.9\tMISSED\t"));
	EXPECT_NE(NULL, strstr(self->buf, "\tc\tm\tp\t0.17444\t<= 0.88\tmet\t"));
}

TEST_F(goals, peer_missing_exit_3)
{
	struct bench h;

	ASSERT_EQ(0, bench_open(&h, "t3", self->dir));
	EXPECT_EQ(BENCH_MET, bench_goal(&h, "t3", "a", "m", "p", 3, BENCH_GE,
					2));
	EXPECT_EQ(BENCH_NOT_JUDGED,
		  bench_not_judged(&h, "t3", "b", "m", "jemalloc", BENCH_LE,
				   1.0, "jemalloc is missing"));
	EXPECT_EQ(BENCH_EXIT_NOT_JUDGED, bench_exit(&h));
	ASSERT_EQ(0, slurp(self->dir, "t3", self->buf, sizeof(self->buf)));
	/* Never dropped: the goal is a row. */
	EXPECT_NE(NULL, strstr(self->buf, "\tb\tm\tjemalloc\t-\t<= 1\tNOT JUDGED\t"));
	EXPECT_EQ(2, count(self->buf, '\n'));
}

TEST_F(goals, reopen_empties_and_fields_are_clean)
{
	struct bench h;

	ASSERT_EQ(0, bench_open(&h, "t4", self->dir));
	bench_goal(&h, "t4", "old", "m", "p", 1, BENCH_LE, 2);
	bench_exit(&h);
	ASSERT_EQ(0, bench_open(&h, "t4", self->dir));
	bench_goal(&h, "t4", "new\tcase\n", "", "p", 2500.4, BENCH_LE, 3000);
	EXPECT_EQ(0, bench_exit(&h));
	ASSERT_EQ(0, slurp(self->dir, "t4", self->buf, sizeof(self->buf)));
	EXPECT_EQ(NULL, strstr(self->buf, "old"));
	/* Tabs and newlines in a field are blanks; an empty one is "-". */
	EXPECT_NE(NULL, strstr(self->buf, "t4\tnew case \t-\tp\t2500\t<= 3000\tmet\t"));
	EXPECT_EQ(1, count(self->buf, '\n'));
}

TEST_F(goals, no_file_with_dash)
{
	struct bench h;

	ASSERT_EQ(0, setenv("BENCH_RESULTS", "-", 1));
	ASSERT_EQ(0, bench_open(&h, "t5", NULL));
	unsetenv("BENCH_RESULTS");
	EXPECT_EQ(BENCH_MISSED, bench_goal(&h, "t5", "a", "m", "p", 2,
					   BENCH_LT, 1));
	EXPECT_EQ(BENCH_EXIT_MISSED, bench_exit(&h));
	EXPECT_EQ(-1, slurp(self->dir, "t5", self->buf, sizeof(self->buf)));
	EXPECT_EQ(-1, slurp("build/bench/results", "t5", self->buf,
			    sizeof(self->buf)));
}

TEST_F(goals, env_dir_is_made)
{
	char sub[128];
	struct bench h;

	snprintf(sub, sizeof(sub), "%s/a/b", self->dir);
	ASSERT_EQ(0, setenv("BENCH_RESULTS", sub, 1));
	ASSERT_EQ(0, bench_open(&h, "t6", NULL));
	unsetenv("BENCH_RESULTS");
	bench_goal(&h, "t6", "a", "m", "p", 1, BENCH_LE, 1);
	EXPECT_EQ(0, bench_exit(&h));
	EXPECT_EQ(0, slurp(sub, "t6", self->buf, sizeof(self->buf)));
}

TEST_HARNESS_MAIN
