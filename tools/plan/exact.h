/* SPDX-License-Identifier: GPL-2.0 */
/* metadef-plan: the exact planner's options, run and report. */
#ifndef METADEF_PLAN_EXACT_H
#define METADEF_PLAN_EXACT_H

#include <stdio.h>

#include <metadef/plan.h>

/* Long-only option codes, handled by plan_exact_option(). */
enum {
	OPT_EXACT = 0x100,
	OPT_MINIMIZE,
	OPT_CAPACITY,
	OPT_TIME_LIMIT,
	OPT_DISABLE,
	OPT_SEED,
};

#define PLAN_EXACT_LONGOPTS \
	{ "exact", no_argument, NULL, OPT_EXACT }, \
	{ "minimize", no_argument, NULL, OPT_MINIMIZE }, \
	{ "capacity", required_argument, NULL, OPT_CAPACITY }, \
	{ "time-limit", required_argument, NULL, OPT_TIME_LIMIT }, \
	{ "disable", required_argument, NULL, OPT_DISABLE }, \
	{ "seed", required_argument, NULL, OPT_SEED }

#define PLAN_EXACT_USAGE \
	"  --exact                  exact mode: a plan within --capacity, or a\n" \
	"                           proof that none exists\n" \
	"  --minimize               the smallest peak (proven when time allows)\n" \
	"  --capacity N             capacity for --exact (bytes, K/M/G suffixes)\n" \
	"  --time-limit SEC         stop the exact search after SEC seconds and\n" \
	"                           keep the best plan found (default 5); Ctrl-C\n" \
	"                           does the same\n" \
	"  --disable LIST           turn prunings of the exact search off (to\n" \
	"                           measure them; answers stay exact): any of\n" \
	"                           sections,stacking,dominance,decompose,memo,\n" \
	"                           symmetry,hatless,lb-pair,restarts, or all;\n" \
	"                           window: the window bound (not in all)\n" \
	"  --seed N                 seed of --minimize's improvement phase on\n" \
	"                           large problems (default fixed)\n"

/* Return: 1 when c was one of ours, 0 if not, -1 on a bad argument. */
int plan_exact_option(const char *prog, int c, const char *arg);
/* After parsing: 0, or 2 (usage error, printed). */
int plan_exact_check(const char *prog, int nfiles);
int plan_exact_enabled(void);
/*
 * Replace @plan (from the heuristics, for @p) by the exact planner's.
 * Return: 0 or 1 (failure, printed).
 */
int plan_exact_run(const char *prog, const char *path,
		   const struct md_problem *p, struct md_plan *plan);
/* The exact planner's line in the text report. */
void plan_exact_print(FILE *f);
/* The exact planner's fields in a --json report (", \"exact\": {...}"). */
void plan_exact_json(FILE *f);
/* Release what the exact planner's run kept for the report. */
void plan_exact_free(void);
/* Exit status: 1 when exact mode found no plan within the capacity. */
int plan_exact_status(void);

#endif /* METADEF_PLAN_EXACT_H */
