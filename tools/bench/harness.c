// SPDX-License-Identifier: GPL-2.0
/*
 * The benches' shared harness (harness.h): timing, statistics, formatters
 * and the goal check behind every bench's result file and exit status.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

/* ------------------------------------------------------------ timing */

static double clock_secs(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double bench_now(void)
{
	return clock_secs(CLOCK_MONOTONIC);
}

double bench_cpu(void)
{
	return clock_secs(CLOCK_PROCESS_CPUTIME_ID);
}

double bench_thread_cpu(void)
{
	return clock_secs(CLOCK_THREAD_CPUTIME_ID);
}

/* ------------------------------------------------------------ statistics */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The value at rank @p * (n - 1) of sorted @v, interpolated. */
static double quantile(const double *v, size_t n, double p)
{
	double r = p * (double)(n - 1);
	size_t lo = (size_t)r;

	if (lo + 1 >= n)
		return v[n - 1];
	return v[lo] + (r - (double)lo) * (v[lo + 1] - v[lo]);
}

int bench_summarize(const double *v, size_t n, struct bench_stats *s)
{
	double *w, sum = 0;
	size_t i;

	if (!n)
		return -1;
	w = malloc(n * sizeof(*w));
	if (!w)
		return -1;
	for (i = 0; i < n; i++) {
		w[i] = v[i];
		sum += v[i];
	}
	qsort(w, n, sizeof(*w), cmp_double);
	s->n = n;
	s->min = w[0];
	s->max = w[n - 1];
	s->median = quantile(w, n, 0.5);
	s->q1 = quantile(w, n, 0.25);
	s->q3 = quantile(w, n, 0.75);
	s->iqr = s->q3 - s->q1;
	s->mean = sum / (double)n;
	free(w);
	return 0;
}

int bench_repeat(size_t n, double (*fn)(void *arg), void *arg,
		 struct bench_stats *s)
{
	double v[4096];
	size_t i;

	if (!n || n > sizeof(v) / sizeof(v[0]))
		return -1;
	for (i = 0; i < n; i++) {
		v[i] = fn(arg);
		if (v[i] < 0)
			return -1;
	}
	return bench_summarize(v, n, s);
}

/* ------------------------------------------------------------ formatting */

char *bench_bytes(uint64_t v, char *buf, size_t len)
{
	if (v >= (1ull << 30))
		snprintf(buf, len, "%.2f GiB", (double)v / (1ull << 30));
	else if (v >= (1ull << 20))
		snprintf(buf, len, "%.1f MiB", (double)v / (1ull << 20));
	else if (v >= (1ull << 10))
		snprintf(buf, len, "%.1f KiB", (double)v / (1ull << 10));
	else
		snprintf(buf, len, "%llu B", (unsigned long long)v);
	return buf;
}

char *bench_time(double secs, char *buf, size_t len)
{
	if (secs < 1e-6)
		snprintf(buf, len, "%.0f ns", secs * 1e9);
	else if (secs < 1e-3)
		snprintf(buf, len, "%.1f us", secs * 1e6);
	else if (secs < 1)
		snprintf(buf, len, "%.2f ms", secs * 1e3);
	else
		snprintf(buf, len, "%.3f s", secs);
	return buf;
}

/* ------------------------------------------------------------ goals */

static const char *const op_names[] = {
	[BENCH_LE] = "<=", [BENCH_LT] = "<", [BENCH_GE] = ">=",
	[BENCH_GT] = ">",
};

static const char *const verdict_names[] = {
	[BENCH_MET] = "met", [BENCH_MISSED] = "MISSED",
	[BENCH_NOT_JUDGED] = "NOT JUDGED",
};

const char *bench_op_name(enum bench_op op)
{
	return op <= BENCH_GT ? op_names[op] : "?";
}

const char *bench_verdict_name(enum bench_verdict v)
{
	return v <= BENCH_NOT_JUDGED ? verdict_names[v] : "?";
}

int bench_holds(double value, enum bench_op op, double goal)
{
	if (isnan(value) || isnan(goal))
		return 0;
	switch (op) {
	case BENCH_LE:
		return value <= goal;
	case BENCH_LT:
		return value < goal;
	case BENCH_GE:
		return value >= goal;
	case BENCH_GT:
		return value > goal;
	}
	return 0;
}

/* mkdir -p of @path (a directory). */
static int make_dirs(const char *path)
{
	char p[4096];
	size_t i, n = strlen(path);

	if (n >= sizeof(p))
		return -ENAMETOOLONG;
	memcpy(p, path, n + 1);
	for (i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		p[i] = '\0';
		if (mkdir(p, 0755) && errno != EEXIST)
			return -errno;
		p[i] = path[i];
	}
	return 0;
}

int bench_open(struct bench *h, const char *name, const char *dir)
{
	time_t t = time(NULL);
	struct tm tm;
	int err;

	memset(h, 0, sizeof(*h));
	snprintf(h->name, sizeof(h->name), "%s", name);
	gmtime_r(&t, &tm);
	strftime(h->date, sizeof(h->date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (gethostname(h->host, sizeof(h->host)) || !h->host[0])
		snprintf(h->host, sizeof(h->host), "unknown");
	h->host[sizeof(h->host) - 1] = '\0';
	if (!dir)
		dir = getenv("BENCH_RESULTS");
	if (!dir || !dir[0])
		dir = "build/bench/results";
	if (!strcmp(dir, "-"))
		return 0;
	err = make_dirs(dir);
	if (!err &&
	    snprintf(h->path, sizeof(h->path), "%s/%s.tsv", dir, name) >=
	    (int)sizeof(h->path))
		err = -ENAMETOOLONG;
	if (!err) {
		h->tsv = fopen(h->path, "w");
		if (!h->tsv)
			err = -errno;
	}
	if (err) {
		fprintf(stderr, "%s: cannot write results in %s: %s\n", name,
			dir, strerror(-err));
		h->path[0] = '\0';
	}
	return err;
}

/* A field of a row: no tab or newline in it, never empty. */
static void field(FILE *f, const char *s, const char *end)
{
	if (!s || !*s)
		s = "-";
	for (; *s; s++)
		fputc(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s, f);
	fputs(end, f);
}

/* The verdict line: the row's fields, readable, on one line. */
static void say(const char *bench, const char *kase, const char *metric,
		const char *peer, const char *val, const char *lim,
		enum bench_verdict v, const char *why)
{
	fputs("goal ", stdout);
	field(stdout, bench, " / ");
	field(stdout, kase, ": ");
	field(stdout, metric, " vs ");
	field(stdout, peer, ": ");
	printf("%s (goal %s): %s", val, lim, bench_verdict_name(v));
	if (why) {
		fputs(": ", stdout);
		field(stdout, why, "");
	}
	fputc('\n', stdout);
	fflush(stdout);
}

/*
 * @value in five significant digits, or as many more as it takes for the
 * figure shown to get the verdict @value got: 1.00000014 against "<= 1" is
 * shown 1.0000001, not 1.
 */
static void shown(char *buf, size_t len, double value, enum bench_op op,
		  double goal)
{
	int ok = bench_holds(value, op, goal);
	int p;

	for (p = 5; p < 17; p++) {
		snprintf(buf, len, "%.*g", p, value);
		if (bench_holds(strtod(buf, NULL), op, goal) == ok)
			return;
	}
}

static enum bench_verdict judge(struct bench *h, const char *bench,
				const char *kase, const char *metric,
				const char *peer, double value,
				enum bench_op op, double goal,
				const char *why)
{
	enum bench_verdict v;
	char val[32], lim[48];

	if (isnan(value) || why)
		v = BENCH_NOT_JUDGED;
	else
		v = bench_holds(value, op, goal) ? BENCH_MET : BENCH_MISSED;
	if (v == BENCH_NOT_JUDGED)
		snprintf(val, sizeof(val), "-");
	else if (fabs(value) >= 1000 && !isinf(value))
		snprintf(val, sizeof(val), "%.0f", value);
	else
		shown(val, sizeof(val), value, op, goal);
	snprintf(lim, sizeof(lim), "%s %g", bench_op_name(op), goal);
	h->met += v == BENCH_MET;
	h->missed += v == BENCH_MISSED;
	h->not_judged += v == BENCH_NOT_JUDGED;

	say(bench, kase, metric, peer, val, lim, v, why);
	if (h->tsv) {
		field(h->tsv, bench, "\t");
		field(h->tsv, kase, "\t");
		field(h->tsv, metric, "\t");
		field(h->tsv, peer, "\t");
		field(h->tsv, val, "\t");
		field(h->tsv, lim, "\t");
		field(h->tsv, bench_verdict_name(v), "\t");
		field(h->tsv, h->date, "\t");
		field(h->tsv, h->host, "\n");
		fflush(h->tsv);
	}
	return v;
}

enum bench_verdict bench_goal(struct bench *h, const char *bench,
			      const char *kase, const char *metric,
			      const char *peer, double value,
			      enum bench_op op, double goal)
{
	return judge(h, bench, kase, metric, peer, value, op, goal,
		     isnan(value) ? "the peer could not be run" : NULL);
}

enum bench_verdict bench_not_judged(struct bench *h, const char *bench,
				    const char *kase, const char *metric,
				    const char *peer, enum bench_op op,
				    double goal, const char *why)
{
	return judge(h, bench, kase, metric, peer, NAN, op, goal,
		     why && *why ? why : "not measured");
}

int bench_exit(struct bench *h)
{
	int rc = h->missed ? BENCH_EXIT_MISSED :
		 h->not_judged ? BENCH_EXIT_NOT_JUDGED : 0;

	if (h->tsv && fclose(h->tsv)) {
		fprintf(stderr, "%s: %s: %s\n", h->name, h->path,
			strerror(errno));
		rc = rc ? rc : 2;
	}
	h->tsv = NULL;
	printf("%s: %d goal(s) met, %d MISSED, %d NOT JUDGED%s%s: exit "
	       "status %d\n", h->name, h->met, h->missed, h->not_judged,
	       h->path[0] ? "; results in " : "", h->path, rc);
	fflush(stdout);
	return rc;
}
