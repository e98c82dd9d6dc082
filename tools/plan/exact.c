// SPDX-License-Identifier: GPL-2.0
/*
 * metadef-plan --exact / --minimize: run md_exact_solve() on the problem,
 * with a time limit, Ctrl-C to stop early (the best plan so far is kept),
 * and progress on stderr when it is a terminal.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <metadef/exact.h>
#include <metadef/metadef.h>

#include "exact.h"

static struct {
	int exact, minimize, have_cap, ran, fits;
	unsigned int disable;
	uint64_t capacity, seed;
	double time_limit;
	struct md_exact_result res;
} ex = { .time_limit = 5 };

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

int plan_exact_option(const char *prog, int c, const char *arg)
{
	char *end;

	switch (c) {
	case OPT_EXACT:
		ex.exact = 1;
		return 1;
	case OPT_MINIMIZE:
		ex.minimize = 1;
		return 1;
	case OPT_CAPACITY:
		if (md_parse_size(arg, &ex.capacity)) {
			fprintf(stderr, "%s: --capacity: a size in bytes, not '%s'\n",
				prog, arg);
			return -1;
		}
		ex.have_cap = 1;
		return 1;
	case OPT_TIME_LIMIT:
		/*
		 * A finite number of seconds in (0, 1e7]: !(t > 0) also
		 * catches NaN, which every comparison calls false; strtod()
		 * would skip leading blanks and take "inf".
		 */
		errno = 0;
		ex.time_limit = strtod(arg, &end);
		if (errno || *end || end == arg || isspace((unsigned char)*arg) ||
		    !(ex.time_limit > 0) || !(ex.time_limit <= 1e7)) {
			fprintf(stderr, "%s: --time-limit: seconds, a number > 0 and at most 1e7, not '%s'\n",
				prog, arg);
			return -1;
		}
		return 1;
	case OPT_SEED:
		errno = 0;
		ex.seed = strtoull(arg, &end, 0);
		if (errno || *end || end == arg || !isdigit((unsigned char)*arg)) {
			fprintf(stderr, "%s: --seed: a number from 0 to 2^64 - 1, not '%s'\n",
				prog, arg);
			return -1;
		}
		return 1;
	case OPT_DISABLE:
		if (md_exact_prune_parse(arg, &ex.disable)) {
			fprintf(stderr, "%s: --disable: a comma-separated list of sections, stacking, dominance, decompose, memo, symmetry, hatless, lb-pair, restarts (or all), window, not '%s'\n",
				prog, arg);
			return -1;
		}
		return 1;
	}
	return 0;
}

int plan_exact_check(const char *prog, int nfiles)
{
	if (!ex.exact && !ex.minimize) {
		if (ex.have_cap) {
			fprintf(stderr, "%s: --capacity needs --exact\n", prog);
			return 2;
		}
		return 0;
	}
	if (ex.exact && ex.minimize) {
		fprintf(stderr, "%s: --exact or --minimize, not both\n", prog);
		return 2;
	}
	if (ex.exact && !ex.have_cap) {
		fprintf(stderr, "%s: --exact needs --capacity N\n", prog);
		return 2;
	}
	if (nfiles != 1) {
		fprintf(stderr, "%s: --exact and --minimize take one input file\n",
			prog);
		return 2;
	}
	return 0;
}

int plan_exact_enabled(void)
{
	return ex.exact || ex.minimize;
}

static void progress(const struct md_exact_progress *pr, void *arg)
{
	char a[32], b[32];

	(void)arg;
	fprintf(stderr, "\r\033[K  exact: %.1f s, best peak %s, lower bound %s, gap %.3f%%, %.0f nodes/s",
		pr->seconds,
		pr->best_peak == UINT64_MAX ? "-" :
		md_format_size(pr->best_peak, a, sizeof(a)),
		md_format_size(pr->lower_bound, b, sizeof(b)),
		pr->best_peak == UINT64_MAX || !pr->lower_bound ? 0.0 :
		100.0 * ((double)pr->best_peak / (double)pr->lower_bound - 1),
		pr->nodes_per_sec);
}

int plan_exact_run(const char *prog, const char *path,
		   const struct md_problem *p, struct md_plan *plan)
{
	struct md_exact_opts o = { 0 };
	struct sigaction sa, old;
	int tty = isatty(STDERR_FILENO), ret;

	o.capacity = ex.capacity;
	o.minimize = ex.minimize;
	o.time_limit = ex.time_limit;
	o.disable = ex.disable;
	o.seed = ex.seed;
	o.cancel = &interrupted;
	if (tty)
		o.progress = progress;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old);
	ret = md_exact_solve(p, &o, &ex.res);
	sigaction(SIGINT, &old, NULL);
	if (tty)
		fprintf(stderr, "\r\033[K");
	if (ret) {
		fprintf(stderr, "%s: %s: exact planning failed: %s\n", prog,
			path, strerror(-ret));
		return 1;
	}
	ex.ran = 1;
	ex.fits = ex.minimize || ex.res.peak <= ex.capacity;
	memcpy(plan->offsets, ex.res.offsets, p->n * sizeof(*plan->offsets));
	plan->peak = ex.res.peak;
	free(ex.res.offsets);
	ex.res.offsets = NULL;
	return 0;
}

/* How far above the proven bound the plan is, in percent. */
static double gap_pct(const struct md_exact_result *r)
{
	if (!r->lower_bound || r->peak <= r->lower_bound)
		return 0;
	return 100.0 * ((double)r->peak / (double)r->lower_bound - 1);
}

/* Why the search ended without a proof, for the report. */
static const char *stop_reason(const struct md_exact_result *r)
{
	if (r->stopped == MD_EXACT_STOP_CANCEL || interrupted)
		return "interrupted";
	return md_exact_stop_name(r->stopped);
}

void plan_exact_print(FILE *f)
{
	const struct md_exact_result *r = &ex.res;
	char a[32], b[32];

	if (!ex.ran)
		return;
	if (ex.exact)
		fprintf(f, "  exact               %s within capacity %" PRIu64 " (%s)%s%s\n",
			r->status == MD_EXACT_FEASIBLE ? "a plan" :
			r->status == MD_EXACT_INFEASIBLE ? "no plan" :
			"no plan found",
			ex.capacity, md_format_size(ex.capacity, a, sizeof(a)),
			r->status == MD_EXACT_INFEASIBLE ? ", proven" :
			r->status == MD_EXACT_LIMIT ? ", stopped: " : "",
			r->status == MD_EXACT_LIMIT ? stop_reason(r) : "");
	else
		fprintf(f, "  minimize            peak %s, %s%s (proven lower bound %s)\n",
			md_format_size(r->peak, a, sizeof(a)),
			r->status == MD_EXACT_OPTIMAL ? "optimal" :
			"not proven optimal, stopped: ",
			r->status == MD_EXACT_OPTIMAL ? "" : stop_reason(r),
			md_format_size(r->lower_bound, b, sizeof(b)));
	fprintf(f, "  exact search        %.3f s, %" PRIu64 " nodes, lower bound %" PRIu64 " (load %" PRIu64 "), gap %.3f%%%s\n",
		r->seconds, r->nodes, r->lower_bound, r->load_bound,
		gap_pct(r), r->heuristic ? ", plan from the heuristics" : "");
	if (r->improve_iters)
		fprintf(f, "  improvement         %" PRIu64 " steps, %zu lowerings of the peak\n",
			r->improve_iters, r->nsteps ? r->nsteps - 1 : 0);
}

void plan_exact_json(FILE *f)
{
	const struct md_exact_result *r = &ex.res;
	size_t i;

	if (!ex.ran)
		return;
	fprintf(f, ", \"exact\": {\"mode\": \"%s\", ",
		ex.exact ? "exact" : "minimize");
	if (ex.exact)
		fprintf(f, "\"capacity\": %" PRIu64 ", ", ex.capacity);
	fprintf(f, "\"status\": \"%s\", \"proven\": %s, \"stopped\": \"%s\", "
		"\"peak\": %" PRIu64 ", \"lower_bound\": %" PRIu64 ", "
		"\"load_bound\": %" PRIu64 ", \"gap_pct\": %.4f, "
		"\"nodes\": %" PRIu64 ", \"seconds\": %.3f, "
		"\"plan_from_heuristics\": %s, "
		"\"improve_steps\": %" PRIu64 ", \"trajectory\": [",
		md_exact_status_name(r->status), r->proven ? "true" : "false",
		r->proven ? "none" : stop_reason(r), r->peak, r->lower_bound,
		r->load_bound, gap_pct(r), r->nodes, r->seconds,
		r->heuristic ? "true" : "false", r->improve_iters);
	for (i = 0; i < r->nsteps; i++)
		fprintf(f, "%s{\"seconds\": %.3f, \"peak\": %" PRIu64 "}",
			i ? ", " : "", r->steps[i].seconds, r->steps[i].peak);
	fprintf(f, "]}");
}

int plan_exact_status(void)
{
	return ex.ran && !ex.fits;
}

void plan_exact_free(void)
{
	md_exact_result_free(&ex.res);
}
