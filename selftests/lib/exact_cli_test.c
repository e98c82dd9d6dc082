// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host tests of metadef-plan --exact / --minimize: exit codes, the plan
 * written with -o, usage errors, and Ctrl-C keeping the best plan so far.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <metadef/plan.h>

#include "test_util.h"
#include "kselftest_harness.h"

static char bin[PATH_MAX];

static int find_bin(void)
{
	return test_build_path(bin, sizeof(bin), "bin/metadef-plan") ?
	       -ENOENT : 0;
}

/* Run metadef-plan with @args; stdout+stderr into @out. */
static int run(const char *args, char *out, size_t len)
{
	char cmd[PATH_MAX + 1024];

	snprintf(cmd, sizeof(cmd), "'%s' %s 2>&1", bin, args);
	return test_capture(cmd, out, len);
}

static const char example12_csv[] =
	"id,lower,upper,size\n"
	"b1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\nb5,0,21,4\n";

FIXTURE(cli)
{
	char dir[64];
	char in[128], plan[128], hard[128];
	char out[16384];
};

FIXTURE_SETUP(cli)
{
	uint64_t s = 0x2545f4914f6cdd1dULL;
	FILE *f;
	int i;

	if (find_bin())
		SKIP(return, "build/bin/metadef-plan not built (make tools)");
	snprintf(self->dir, sizeof(self->dir), "/tmp/metadef-exact-test.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->in, sizeof(self->in), "%s/ex12.csv", self->dir);
	snprintf(self->plan, sizeof(self->plan), "%s/plan.csv", self->dir);
	snprintf(self->hard, sizeof(self->hard), "%s/hard.csv", self->dir);
	f = fopen(self->in, "w");
	ASSERT_NE(NULL, f);
	fputs(example12_csv, f);
	fclose(f);
	/* dense random: the search runs until stopped */
	f = fopen(self->hard, "w");
	ASSERT_NE(NULL, f);
	fputs("id,lower,upper,size\n", f);
	for (i = 0; i < 400; i++) {
		uint64_t lo, life, size;

		lo = xorshift64(&s) % 300;
		life = 1 + xorshift64(&s) % 60;
		size = 1 + xorshift64(&s) % 1000;
		fprintf(f, "b%d,%llu,%llu,%llu\n", i, (unsigned long long)lo,
			(unsigned long long)(lo + life),
			(unsigned long long)size);
	}
	fclose(f);
}

FIXTURE_TEARDOWN(cli)
{
	char cmd[256];

	if (!self->dir[0] || self->dir[0] != '/')
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->dir);
	if (system(cmd))
		TH_LOG("could not remove %s", self->dir);
}

TEST_F(cli, exact_writes_a_plan_within_the_capacity)
{
	char args[512], *text;
	struct md_problem p;
	uint64_t *off;
	size_t i, len;
	FILE *f;

	snprintf(args, sizeof(args), "--exact '%s' --capacity 12 -o '%s'",
		 self->in, self->plan);
	ASSERT_EQ(0, run(args, self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "a plan within capacity 12"));

	/* read it back: the offset column makes every buffer fixed */
	f = fopen(self->plan, "r");
	ASSERT_NE(NULL, f);
	text = malloc(4096);
	len = fread(text, 1, 4096, f);
	fclose(f);
	md_problem_init(&p);
	ASSERT_EQ(0, md_problem_parse_csv(&p, text, len, NULL));
	free(text);
	ASSERT_EQ(5, p.n);
	off = calloc(p.n, sizeof(*off));
	for (i = 0; i < p.n; i++) {
		ASSERT_TRUE(p.bufs[i].flags & MD_BUF_FIXED);
		off[i] = p.bufs[i].offset;
	}
	EXPECT_EQ(0, md_plan_validate(&p, off, NULL));
	EXPECT_LE(md_plan_peak(&p, off), 12);
	free(off);
	md_problem_free(&p);
}

TEST_F(cli, exact_proves_infeasible_and_fails)
{
	char args[512];

	snprintf(args, sizeof(args), "--exact '%s' --capacity 11", self->in);
	EXPECT_EQ(1, run(args, self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "no plan within capacity 11"));
	EXPECT_NE(NULL, strstr(self->out, "proven"));
}

TEST_F(cli, minimize_is_optimal)
{
	char args[512];

	snprintf(args, sizeof(args), "--minimize '%s'", self->in);
	EXPECT_EQ(0, run(args, self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "optimal"));
}

TEST_F(cli, usage_errors)
{
	char args[512];

	snprintf(args, sizeof(args), "--exact '%s'", self->in);
	EXPECT_EQ(2, run(args, self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "--capacity"));
	snprintf(args, sizeof(args), "--minimize --time-limit 0 '%s'", self->in);
	EXPECT_EQ(2, run(args, self->out, sizeof(self->out)));
	snprintf(args, sizeof(args), "--capacity 12 '%s'", self->in);
	EXPECT_EQ(2, run(args, self->out, sizeof(self->out)));
	snprintf(args, sizeof(args), "--exact --minimize --capacity 12 '%s'",
		 self->in);
	EXPECT_EQ(2, run(args, self->out, sizeof(self->out)));
}

/* Only a finite number of seconds > 0: NaN compares false to everything. */
TEST_F(cli, time_limit_must_be_a_number_of_seconds)
{
	static const char *const bad[] = {
		"nan", "NAN", "-nan", "inf", "infinity", "-inf", "-1", "0",
		"-0", "", " 5", "5 ", "1x", "5s", "0x", "1e308", "1e-400",
	};
	char args[512];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(args, sizeof(args), "--minimize --time-limit '%s' '%s'",
			 bad[i], self->in);
		EXPECT_EQ(2, run(args, self->out, sizeof(self->out)));
		if (!strstr(self->out, "--time-limit: seconds"))
			TH_LOG("'%s': %s", bad[i], self->out);
		EXPECT_NE(NULL, strstr(self->out, "--time-limit: seconds"));
	}
	snprintf(args, sizeof(args), "--minimize --time-limit 0.5 '%s'",
		 self->in);
	EXPECT_EQ(0, run(args, self->out, sizeof(self->out)));
}

TEST_F(cli, seed_must_be_a_number)
{
	static const char *const bad[] = { "", "-1", "x", "1x", " 1",
					   "18446744073709551616" };
	char args[512];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(args, sizeof(args), "--minimize --seed '%s' '%s'",
			 bad[i], self->in);
		EXPECT_EQ(2, run(args, self->out, sizeof(self->out)));
		EXPECT_NE(NULL, strstr(self->out, "--seed: a number"));
	}
	snprintf(args, sizeof(args), "--minimize --seed 7 '%s'", self->in);
	EXPECT_EQ(0, run(args, self->out, sizeof(self->out)));
}

/* --json says how it ended: status, bound, gap and the trajectory. */
TEST_F(cli, minimize_json_has_the_trajectory)
{
	char args[512];

	snprintf(args, sizeof(args),
		 "--json --minimize --time-limit 0.3 --seed 3 '%s'", self->hard);
	EXPECT_EQ(0, run(args, self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "\"status\": "));
	EXPECT_NE(NULL, strstr(self->out, "\"lower_bound\": "));
	EXPECT_NE(NULL, strstr(self->out, "\"gap_pct\": "));
	EXPECT_NE(NULL, strstr(self->out, "\"trajectory\": [{\"seconds\": "));
}

TEST_F(cli, time_limit_keeps_the_best_plan)
{
	char args[512];

	snprintf(args, sizeof(args), "--minimize --time-limit 0.3 '%s'",
		 self->hard);
	EXPECT_EQ(0, run(args, self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "minimize"));
}

TEST_F(cli, sigint_keeps_the_best_plan)
{
	struct timespec t0, t1, d = { 0, 300 * 1000 * 1000 };
	int fd[2], st;
	pid_t pid;
	char buf[8192];
	ssize_t n, got = 0;

	ASSERT_EQ(0, pipe(fd));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		dup2(fd[1], 1);
		dup2(fd[1], 2);
		close(fd[0]);
		execl(bin, bin, "--minimize", "--time-limit", "60", self->hard,
		      (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	nanosleep(&d, NULL);
	kill(pid, SIGINT);
	while ((n = read(fd[0], buf + got, sizeof(buf) - 1 - got)) > 0)
		got += n;
	buf[got] = '\0';
	close(fd[0]);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ASSERT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st));
	EXPECT_LT(t1.tv_sec - t0.tv_sec, 10);
	/* interrupted, unless it was proven optimal before the signal */
	EXPECT_TRUE(strstr(buf, "interrupted") || strstr(buf, "optimal"))
		TH_LOG("%s", buf);
}

TEST_HARNESS_MAIN
