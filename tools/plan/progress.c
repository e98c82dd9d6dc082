// SPDX-License-Identifier: GPL-2.0
/*
 * metadef-plan: the planner's progress (md_plan_set_progress()) as one line
 * on stderr, rewritten in place, only on a terminal and only once the
 * plan has taken a second: short runs and pipes see nothing.
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <metadef/plan.h>

#include "progress.h"

static struct {
	const char *path;
	double t0, last;
	int shown;
} st;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void show(void *arg, const struct md_plan_progress *pr)
{
	double t = now(), pct;

	(void)arg;
	if (t - st.t0 < 1.0 || t - st.last < 0.1)
		return;
	st.last = t;
	pct = pr->n ? 100.0 * (pr->placed < pr->n ? pr->placed : pr->n) /
		      pr->n : 100;
	fprintf(stderr, "\r\033[K%s: planning %zu buffers: pass %u of %u (%s) %3.0f%%, %.0f s",
		st.path, pr->n, pr->pass, pr->passes,
		pr->strategy < MD_STRAT_COUNT ?
		md_strategy_name(pr->strategy) : "local search", pct,
		t - st.t0);
	st.shown = 1;
}

void plan_progress_start(const char *path)
{
	st.path = path;
	st.t0 = now();
	st.last = 0;
	st.shown = 0;
	md_plan_set_progress(isatty(STDERR_FILENO) ? show : NULL, NULL);
}

void plan_progress_end(void)
{
	md_plan_set_progress(NULL, NULL);
	if (st.shown)
		fprintf(stderr, "\r\033[K");
	st.shown = 0;
}
