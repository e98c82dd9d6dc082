/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The benches' shared harness: timing, statistics over repeats, size and
 * time formatters, and the goal check that writes the result files and
 * sets a bench's exit status.
 *
 * A bench opens a harness for its name, judges each goal with
 * bench_goal() (a verdict line on stdout and a row in
 * RESULTS/<bench>.tsv) and returns bench_exit(): 0 when every goal was
 * met, 1 when one was missed, 3 when none was missed but one could not
 * be judged (its peer could not be run). RESULTS is $BENCH_RESULTS, or
 * build/bench/results; BENCH_RESULTS=- writes no file.
 *
 * A row, tab-separated, one per goal (tools/bench/report reads them):
 *
 *   bench case metric peer value goal verdict date host
 *
 * value: the measured figure (a ratio to the peer when there is one), or
 * "-" when not judged; goal: "<= 0.88" and the like; verdict: met,
 * MISSED or NOT JUDGED; date: UTC, ISO 8601; host: the machine's name.
 */
#ifndef METADEF_BENCH_HARNESS_H
#define METADEF_BENCH_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ------------------------------------------------------------ timing */

/* Seconds on CLOCK_MONOTONIC (wall time, never set back). */
double bench_now(void);
/* CPU seconds of the whole process (every thread). */
double bench_cpu(void);
/* CPU seconds of the calling thread: waiting for a core is not counted. */
double bench_thread_cpu(void);

/* ------------------------------------------------------------ statistics */

struct bench_stats {
	size_t n;
	double median, min, max;
	double q1, q3, iqr;	/* quartiles, linear between order stats */
	double mean;
};

/*
 * Summarize @n values (@n > 0; @v is left as it was): the median (the
 * mean of the middle two for an even count), min, max, the quartiles
 * (the value at rank p * (n - 1), interpolated between neighbours) and
 * the interquartile range. Returns -1 for n == 0, else 0.
 */
int bench_summarize(const double *v, size_t n, struct bench_stats *s);

/*
 * Call @fn(@arg) @n times (at most 4096), each returning one
 * measurement, and summarize them into @s. Returns -1 on a bad @n or
 * when @fn returns a negative value (an error), else 0.
 */
int bench_repeat(size_t n, double (*fn)(void *arg), void *arg,
		 struct bench_stats *s);

/* ------------------------------------------------------------ formatting */

/* "512 B", "4.0 KiB", "1.5 MiB", "2.00 GiB" into @buf; returns @buf. */
char *bench_bytes(uint64_t v, char *buf, size_t len);
/* "850 ns", "12.3 us", "4.56 ms", "1.234 s" for @secs into @buf. */
char *bench_time(double secs, char *buf, size_t len);

/* ------------------------------------------------------------ goals */

enum bench_op { BENCH_LE, BENCH_LT, BENCH_GE, BENCH_GT };

enum bench_verdict { BENCH_MET, BENCH_MISSED, BENCH_NOT_JUDGED };

#define BENCH_EXIT_MISSED	1
#define BENCH_EXIT_NOT_JUDGED	3

struct bench {
	char name[64];		/* the result file's name */
	char path[4096];	/* RESULTS/<name>.tsv, "" when none */
	FILE *tsv;
	char date[32];		/* of bench_open(): the run's */
	char host[64];
	int met, missed, not_judged;
};

/*
 * Start bench @name's results: RESULTS/<name>.tsv (@dir, or when NULL
 * $BENCH_RESULTS or build/bench/results; "-": no file) is created or
 * emptied. Returns 0, or -errno when the file cannot be written (said on
 * stderr).
 */
int bench_open(struct bench *h, const char *name, const char *dir);

/*
 * Judge one goal: @value @op @goal. @peer names what the value is a
 * ratio to, measured in the same run ("-" for an absolute figure). A NaN
 * @value means the peer could not be run: NOT JUDGED. Prints the verdict
 * line, appends the row, returns the verdict.
 */
enum bench_verdict bench_goal(struct bench *h, const char *bench,
			      const char *kase, const char *metric,
			      const char *peer, double value,
			      enum bench_op op, double goal);

/* The same for a goal that could not be judged, saying why on stdout. */
enum bench_verdict bench_not_judged(struct bench *h, const char *bench,
				    const char *kase, const char *metric,
				    const char *peer, enum bench_op op,
				    double goal, const char *why);

/* Whether @value @op @goal holds (NaN: never). */
int bench_holds(double value, enum bench_op op, double goal);
const char *bench_op_name(enum bench_op op);
const char *bench_verdict_name(enum bench_verdict v);

/*
 * Close the result file and print one summary line; returns the exit
 * status: 1 if a goal was missed, else 3 if one was not judged, else 0.
 */
int bench_exit(struct bench *h);

#endif /* METADEF_BENCH_HARNESS_H */
