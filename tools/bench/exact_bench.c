// SPDX-License-Identifier: GPL-2.0
/*
 * exact_bench: the exact planner (md_exact_solve, exact mode) against
 * MiniMalloc (google/minimalloc, ASPLOS '23), both run here, one after the
 * other on each problem, in the same run.
 *
 * usage: exact_bench [-n COUNT] [-t SECONDS] [-s FIRST_SEED] [-m MINIMALLOC]
 *                    [-d CHALLENGING_DIR] [-k KEEP_DIR]
 *
 * Problems: MiniMalloc's challenging files found in CHALLENGING_DIR (at
 * capacity 1,048,576), then COUNT generated ones (tools/bench/cutgen.c):
 * a 2^20 x 2^20 rectangle cut into 150-500 rectangles of three families,
 * with 0-6 % of them left out, so each is feasible at 2^20 by
 * construction. Each solver gets SECONDS per problem. Times are wall clock:
 * MiniMalloc's whole process (it reads a CSV of a few KiB), our whole call
 * (heuristics, set-up and search).
 *
 * Goal: metadef solves every problem MiniMalloc solves, in at most half
 * MiniMalloc's total time over them; judged on each set (challenging,
 * generated), two rows each in build/bench/results/exact.tsv (harness.h).
 * Exit status 0 when met, 1 when not, 3 when MiniMalloc cannot be run
 * (the goals are then not judged), 2 bad options.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <metadef/exact.h>
#include <metadef/metadef.h>

#include "cutgen.h"
#include "harness.h"

#define CAP		(1ull << 20)
#define MAX_BUFS	512

struct run {
	char name[64];
	size_t n;
	int mm_ok, md_ok;
	double mm_s, md_s;
	uint64_t nodes;
};

static const char *minimalloc = "../shared/peers/minimalloc/bin/minimalloc";
static char tmpdir[256];

/* MiniMalloc on @csv: 1 solved within CAP, 0 not; its wall time. */
static int run_minimalloc(const char *csv, double limit, double *secs)
{
	char cap[64], in[4200], out[4200], to[64];
	double t0 = bench_now();
	pid_t pid;
	int st;

	snprintf(cap, sizeof(cap), "--capacity=%llu", CAP);
	snprintf(in, sizeof(in), "--input=%s", csv);
	snprintf(out, sizeof(out), "--output=%s/mm-out.csv", tmpdir);
	snprintf(to, sizeof(to), "--timeout=%.3fs", limit);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		int fd = open("/dev/null", O_WRONLY);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execl(minimalloc, minimalloc, cap, in, out, to, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	*secs = bench_now() - t0;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
		return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Ours on @p: 1 solved within CAP, 0 not, -1 a wrong answer or error. */
static int run_metadef(const struct md_problem *p, double limit,
		       double *secs, uint64_t *nodes)
{
	struct md_exact_opts o = { .capacity = CAP, .time_limit = limit };
	struct md_exact_result r;
	double t0 = bench_now();
	int ok;

	if (md_exact_solve(p, &o, &r))
		return -1;
	*secs = bench_now() - t0;
	*nodes = r.nodes;
	ok = r.status == MD_EXACT_FEASIBLE && r.peak <= CAP &&
	     !md_plan_validate(p, r.offsets, NULL);
	if (r.status == MD_EXACT_INFEASIBLE)
		ok = -1;	/* every problem here fits: a wrong proof */
	md_exact_result_free(&r);
	return ok;
}

static int load(const char *path, struct md_problem *p)
{
	struct md_error err;
	size_t len;
	char *s = md_read_file(path, &len);

	if (!s)
		return -1;
	md_problem_init(p);
	if (md_problem_parse_csv(p, s, len, &err)) {
		fprintf(stderr, "%s:%u: %s\n", path, err.line, err.msg);
		free(s);
		md_problem_free(p);
		return -1;
	}
	free(s);
	return 0;
}

static int write_csv(const char *path, const struct cutgen_buf *b, size_t n)
{
	FILE *f = fopen(path, "w");
	size_t i;

	if (!f)
		return -1;
	fprintf(f, "id,lower,upper,size\n");
	for (i = 0; i < n; i++)
		fprintf(f, "%zu,%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", i,
			b[i].lower, b[i].upper, b[i].size);
	return fclose(f) ? -1 : 0;
}

static void line(const struct run *r)
{
	printf("%-22s %5zu  %-3s %8.3f  %-3s %8.3f %11" PRIu64 "\n", r->name,
	       r->n, r->mm_ok ? "yes" : "no", r->mm_s,
	       r->md_ok ? "yes" : "no", r->md_s, r->nodes);
	fflush(stdout);
}

/* One problem, both solvers; -1 on a wrong answer or a broken peer. */
static int one(struct run *r, const char *csv, double limit)
{
	struct md_problem p;
	int ret;

	if (load(csv, &p))
		return -1;
	r->n = p.n;
	ret = run_minimalloc(csv, limit, &r->mm_s);
	if (ret < 0) {
		fprintf(stderr, "exact_bench: cannot run %s\n", minimalloc);
		md_problem_free(&p);
		return -2;
	}
	r->mm_ok = ret;
	ret = run_metadef(&p, limit, &r->md_s, &r->nodes);
	md_problem_free(&p);
	if (ret < 0) {
		fprintf(stderr, "exact_bench: %s: metadef gave a wrong answer\n",
			r->name);
		return -1;
	}
	r->md_ok = ret;
	line(r);
	return 0;
}

static void summary(const char *what, const struct run *v, size_t n)
{
	double mm = 0, md = 0, mm_all = 0, md_all = 0;
	size_t i, mm_solved = 0, md_solved = 0, both = 0, missed = 0;
	const struct run *wmm = NULL, *wmd = NULL;

	for (i = 0; i < n; i++) {
		mm_solved += v[i].mm_ok;
		md_solved += v[i].md_ok;
		mm_all += v[i].mm_s;
		md_all += v[i].md_s;
		if (v[i].mm_ok) {
			mm += v[i].mm_s;
			md += v[i].md_s;
			if (!v[i].md_ok)
				missed++;
			if (!wmm || v[i].mm_s > wmm->mm_s)
				wmm = &v[i];
		}
		if (v[i].md_ok && (!wmd || v[i].md_s > wmd->md_s))
			wmd = &v[i];
		both += v[i].mm_ok && v[i].md_ok;
	}
	printf("\n%s: %zu problems\n", what, n);
	printf("  solved            MiniMalloc %zu, metadef %zu (both %zu); MiniMalloc solved, metadef not: %zu\n",
	       mm_solved, md_solved, both, missed);
	printf("  on MiniMalloc's   MiniMalloc %.3f s, metadef %.3f s, ratio %.3f (goal <= 0.5)\n",
	       mm, md, mm > 0 ? md / mm : 0);
	printf("  on all            MiniMalloc %.3f s, metadef %.3f s\n",
	       mm_all, md_all);
	if (wmm)
		printf("  MiniMalloc's worst %s: %.3f s (metadef %.3f s)\n",
		       wmm->name, wmm->mm_s, wmm->md_s);
	if (wmd)
		printf("  metadef's worst    %s: %.3f s (MiniMalloc %.3f s)\n",
		       wmd->name, wmd->md_s, wmd->mm_s);
	for (i = 0; i < n; i++)
		if (v[i].mm_ok && !v[i].md_ok)
			printf("  missed by metadef: %s\n", v[i].name);
}

static struct bench harness;

/*
 * The goal on one set: every problem MiniMalloc solves, solved (the
 * number missed: 0), in at most half its time over them.
 */
static void goals(const char *set, const struct run *v, size_t n)
{
	double mm = 0, md = 0;
	size_t i, solved = 0, missed = 0;

	for (i = 0; i < n; i++) {
		if (!v[i].mm_ok)
			continue;
		solved++;
		missed += !v[i].md_ok;
		mm += v[i].mm_s;
		md += v[i].md_s;
	}
	bench_goal(&harness, "exact", set,
		   "MiniMalloc's solved, metadef not", "MiniMalloc",
		   (double)missed, BENCH_LE, 0);
	if (solved)
		bench_goal(&harness, "exact", set,
			   "seconds on MiniMalloc's solved / peer's",
			   "MiniMalloc",
			   mm > 0 ? md / mm : md > 0 ? INFINITY : 0,
			   BENCH_LE, 0.5);
	else
		printf("  %s: MiniMalloc solved none: no time to compare\n",
		       set);
}

/* MiniMalloc cannot be run: the goals stand, not judged. */
static int no_peer(const char *why)
{
	static const char *const sets[] = { "challenging", "generated" };
	int i;

	for (i = 0; i < 2; i++) {
		bench_not_judged(&harness, "exact", sets[i],
				 "MiniMalloc's solved, metadef not",
				 "MiniMalloc", BENCH_LE, 0, why);
		bench_not_judged(&harness, "exact", sets[i],
				 "seconds on MiniMalloc's solved / peer's",
				 "MiniMalloc", BENCH_LE, 0.5, why);
	}
	return bench_exit(&harness);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: exact_bench [-n COUNT] [-t SECONDS] [-s FIRST_SEED] [-m MINIMALLOC]\n"
		   "                   [-d CHALLENGING_DIR] [-k KEEP_DIR]\n"
		   "MiniMalloc and metadef's exact mode, side by side, on MiniMalloc's\n"
		   "challenging problems and COUNT (default 120) generated ones, SECONDS\n"
		   "(default 10) each; exit 0 when metadef solves all MiniMalloc solves in\n"
		   "at most half its time.\n");
}

int main(int argc, char **argv)
{
	static const char *const files[] = { "A", "C", "G", "K" };
	const char *dir = "../shared/bench/minimalloc-challenging";
	const char *keep = NULL;
	struct run *gen, chal[4];
	size_t count = 120, nchal = 0, i;
	uint64_t seed0 = 1;
	double limit = 10;
	char what[128], why[4200];
	int c;

	while ((c = getopt(argc, argv, "n:t:s:m:d:k:h")) != -1) {
		switch (c) {
		case 'n':
			count = strtoul(optarg, NULL, 10);
			break;
		case 't':
			limit = atof(optarg);
			break;
		case 's':
			seed0 = strtoull(optarg, NULL, 10);
			break;
		case 'm':
			minimalloc = optarg;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'k':
			keep = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!count || count > 100000 || !(limit > 0 && limit < 1e6)) {
		fprintf(stderr, "exact_bench: -n 1..100000 and -t > 0 seconds\n");
		return 2;
	}
	if (bench_open(&harness, "exact", NULL))
		return 2;
	if (access(minimalloc, X_OK)) {
		fprintf(stderr, "exact_bench: the peer %s: %s (it is needed: the bench measures it in the same run)\n",
			minimalloc, strerror(errno));
		snprintf(why, sizeof(why), "%s: %s", minimalloc,
			 strerror(errno));
		return no_peer(why);
	}
	if (keep) {
		snprintf(tmpdir, sizeof(tmpdir), "%s", keep);
		mkdir(tmpdir, 0755);
	} else {
		snprintf(tmpdir, sizeof(tmpdir), "/tmp/exact_bench.XXXXXX");
		if (!mkdtemp(tmpdir)) {
			perror("exact_bench: mkdtemp");
			return 2;
		}
	}
	gen = calloc(count, sizeof(*gen));
	if (!gen)
		return 2;

	printf("exact mode at capacity %llu, %.0f s per problem and solver; peer: MiniMalloc (%s), run here\n\n",
	       CAP, limit, minimalloc);
	printf("%-22s %5s  %-12s  %-12s %11s\n", "problem", "bufs",
	       "MiniMalloc s", "metadef s", "nodes");
	for (i = 0; i < 4; i++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/%s.1048576.csv", dir, files[i]);
		if (access(path, R_OK))
			continue;
		snprintf(chal[nchal].name, sizeof(chal[0].name), "challenging %s",
			 files[i]);
		c = one(&chal[nchal], path, limit);
		if (c == -2)
			return no_peer("cannot run MiniMalloc");
		if (c < 0)
			return 1;
		nchal++;
	}
	for (i = 0; i < count; i++) {
		static const unsigned int holes[] = { 0, 2, 4, 6 };
		struct cutgen_buf b[MAX_BUFS];
		struct cutgen_opts o = { 0 };
		uint64_t seed = seed0 + i;
		char path[4096];
		size_t n;

		o.seed = seed;
		o.n = 150 + (size_t)((seed * 2654435761u) % 351);
		o.family = (enum cutgen_family)(seed % CUTGEN_NFAMILIES);
		o.holes_pct = holes[(seed / CUTGEN_NFAMILIES) % 4];
		n = cutgen(&o, b);
		snprintf(gen[i].name, sizeof(gen[0].name), "%s-h%u-s%" PRIu64,
			 cutgen_family_name(o.family), o.holes_pct, seed);
		snprintf(path, sizeof(path), "%s/%s.csv", tmpdir, gen[i].name);
		if (!n || write_csv(path, b, n)) {
			fprintf(stderr, "exact_bench: cannot write %s\n", path);
			return 2;
		}
		c = one(&gen[i], path, limit);
		if (!keep)
			unlink(path);
		if (c == -2)
			return no_peer("cannot run MiniMalloc");
		if (c < 0)
			return 1;
	}
	if (!keep) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/mm-out.csv", tmpdir);
		unlink(path);
		rmdir(tmpdir);
	}
	if (nchal)
		summary("MiniMalloc's challenging problems here", chal, nchal);
	summary("generated problems (cut rectangles, feasible at 2^20)", gen,
		count);
	printf("\ngoal (every problem MiniMalloc solves, in <= 0.5x its time):\n");
	if (nchal) {
		snprintf(what, sizeof(what), "challenging (%zu of A C G K)",
			 nchal);
		goals(what, chal, nchal);
	}
	snprintf(what, sizeof(what), "generated (%zu, %g s each)", count,
		 limit);
	goals(what, gen, count);
	free(gen);
	return bench_exit(&harness);
}
