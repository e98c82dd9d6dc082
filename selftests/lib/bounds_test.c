// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host tests of the lower bounds beyond the load (lib/exact_bounds.c):
 * the aligned load bound and the window bound never pass the optimum,
 * which a brute force of its own finds on thousands of small random
 * problems (seeded), and each is above the load, and at the optimum, on
 * some of them; minimize mode reports the load and the stronger bound.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <metadef/exact.h>
#include <metadef/plan.h>

#include "exact_internal.h"
#include "kselftest_harness.h"

static uint64_t rng = 0x2545f4914f6cdd1dULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/*
 * The optimum by trying every order: each buffer in turn at the lowest
 * offset, a multiple of its alignment, clear of those placed before it.
 * Sorting an optimal plan by offset gives an order in which each buffer
 * lands at or below where that plan has it, so the best order's peak is
 * the optimum.
 */
struct brute {
	const struct md_problem *p;
	uint64_t off[8];
	int used[8];
	uint64_t best;
};

static uint64_t lowest_clear(const struct brute *b, size_t x)
{
	const struct md_buffer *a = &b->p->bufs[x];
	uint64_t o = 0;
	int moved = 1;

	/* move up past every placed neighbour it meets until none */
	while (moved) {
		size_t k;

		moved = 0;
		for (k = 0; k < b->p->n; k++) {
			const struct md_buffer *c = &b->p->bufs[k];

			if (!b->used[k] || !c->size || !a->size ||
			    c->upper <= a->lower || a->upper <= c->lower)
				continue;
			if (b->off[k] < o + a->size && o < b->off[k] + c->size) {
				o = b->off[k] + c->size;
				o = (o + a->align - 1) / a->align * a->align;
				moved = 1;
			}
		}
	}
	return o;
}

static void brute_rec(struct brute *b, size_t left, uint64_t peak)
{
	size_t x;

	if (peak >= b->best)
		return;
	if (!left) {
		b->best = peak;
		return;
	}
	for (x = 0; x < b->p->n; x++) {
		uint64_t o, top;

		if (b->used[x])
			continue;
		o = lowest_clear(b, x);
		top = o + b->p->bufs[x].size;
		b->used[x] = 1;
		b->off[x] = o;
		brute_rec(b, left - 1, top > peak ? top : peak);
		b->used[x] = 0;
	}
}

static uint64_t brute_optimum(const struct md_problem *p)
{
	struct brute b;

	memset(&b, 0, sizeof(b));
	b.p = p;
	b.best = UINT64_MAX;
	brute_rec(&b, p->n, 0);
	return b.best;
}

/*
 * A small random problem: @n buffers, sizes 1 to 16 (now and then 0),
 * lifetimes within 12 steps; alignment @mode 0: none, 1: one value for
 * all (2, 4 or 8), 2: mixed multiples of 2.
 */
static int random_problem(struct md_problem *p, size_t n, int mode)
{
	uint64_t g = 2u << rnd() % 3;
	size_t i;

	md_problem_init(p);
	for (i = 0; i < n; i++) {
		uint64_t lo = rnd() % 10, life = 1 + rnd() % 5;
		uint64_t size = rnd() % 16 ? 1 + rnd() % 16 : 0;
		uint64_t align = mode == 0 ? 1 : mode == 1 ? g :
				 2u << rnd() % 3;

		if (md_problem_add(p, NULL, lo, lo + life, size, align))
			return -1;
	}
	return 0;
}

TEST(bounds_never_pass_the_optimum)
{
	unsigned int cases = 0, aligned_up = 0, aligned_proves = 0;
	unsigned int window_up = 0, window_proves = 0;
	int round;

	for (round = 0; round < 3000; round++) {
		struct md_problem p;
		struct md_plan heur;
		uint64_t opt, load, a, w;
		size_t n = 2 + rnd() % 6;

		ASSERT_EQ(0, random_problem(&p, n, round % 3));
		opt = brute_optimum(&p);
		load = md_problem_lower_bound(&p, NULL);
		ASSERT_EQ(0, md_plan_solve(&p, NULL, &heur));
		ASSERT_GE(heur.peak, opt);

		a = exact_bound_aligned(&p);
		EXPECT_LE(a, opt) TH_LOG("round %d: aligned %llu > optimum %llu",
					 round, (unsigned long long)a,
					 (unsigned long long)opt);
		aligned_up += a > load;
		aligned_proves += a > load && a == opt;

		/*
		 * Windows that leave out at least one buffer (at most n - 1
		 * of them), so that the bound is not the whole search.
		 */
		w = exact_bound_window(&p, load, heur.peak, n - 1, 2000, 0);
		EXPECT_LE(w, opt) TH_LOG("round %d: window %llu > optimum %llu",
					 round, (unsigned long long)w,
					 (unsigned long long)opt);
		EXPECT_GE(w, load);
		window_up += w > load;
		window_proves += w > load && w == opt;
		cases++;
		md_plan_free(&heur);
		md_problem_free(&p);
	}
	TH_LOG("%u problems: aligned above the load on %u (the optimum on %u), window on %u (%u)",
	       cases, aligned_up, aligned_proves, window_up, window_proves);
	/* both do something: they are not the load bound again */
	EXPECT_GT(aligned_proves, 20);
	EXPECT_GT(window_proves, 20);
}

/*
 * A hand-made case: 5-byte buffers with alignment 8 take 8 bytes each
 * but the top one: the load is 15, no plan is below 21.
 */
TEST(aligned_bound_by_hand)
{
	struct md_problem p;

	md_problem_init(&p);
	ASSERT_EQ(0, md_problem_add(&p, "a", 0, 4, 5, 8));
	ASSERT_EQ(0, md_problem_add(&p, "b", 0, 4, 5, 8));
	ASSERT_EQ(0, md_problem_add(&p, "c", 0, 4, 5, 8));
	EXPECT_EQ(15, md_problem_lower_bound(&p, NULL));
	EXPECT_EQ(21, exact_bound_aligned(&p));
	EXPECT_EQ(21, brute_optimum(&p));
	md_problem_free(&p);
	/* alignment 1 anywhere: no rounding to speak of */
	md_problem_init(&p);
	ASSERT_EQ(0, md_problem_add(&p, "a", 0, 4, 5, 8));
	ASSERT_EQ(0, md_problem_add(&p, "b", 0, 4, 5, 1));
	EXPECT_EQ(0, exact_bound_aligned(&p));
	md_problem_free(&p);
}

/*
 * The window bound in minimize mode, on a problem of more than
 * MD_EXACT_IMPROVE_MIN buffers: a chain of 1200 buffers of 64 bytes, two
 * alive at a time, and after it a small problem whose optimum (brute
 * force) is above its load: the first such of the seeded random ones
 * with one alignment for all (without, none of 10,000 had a gap), its
 * sizes and alignments times 64 (its load above the chain's). The
 * chain's alignment of 1 keeps the aligned bound of the whole at 0. With a search of one node nothing else
 * proves anything, so the proven bound is the window bound's, the
 * gadget's optimum; without it (MD_EXACT_NO_WINDOW_BOUND) the load.
 */
TEST(window_bound_in_minimize_mode)
{
	struct md_exact_opts o = { 0 };
	struct md_exact_result r, s;
	struct md_problem p, g;
	uint64_t opt = 0, load = 0;
	size_t i;
	int tries;

	for (tries = 0; tries < 10000; tries++) {
		ASSERT_EQ(0, random_problem(&g, 7, 1));
		opt = brute_optimum(&g);
		load = md_problem_lower_bound(&g, NULL);
		if (opt > load)
			break;
		md_problem_free(&g);
	}
	ASSERT_LT(tries, 10000);
	md_problem_init(&p);
	for (i = 0; i < 1200; i++)
		ASSERT_EQ(0, md_problem_add(&p, NULL, 2 * i, 2 * i + 3, 64, 1));
	for (i = 0; i < g.n; i++)
		ASSERT_EQ(0, md_problem_add(&p, NULL, 5000 + g.bufs[i].lower,
					    5000 + g.bufs[i].upper,
					    64 * g.bufs[i].size,
					    64 * g.bufs[i].align));
	/* sizes and alignments times 64: so are the optimum and the load */
	opt *= 64;
	load *= 64;
	ASSERT_GT(load, 128);
	EXPECT_EQ(load, md_problem_lower_bound(&p, NULL));
	o.minimize = 1;
	o.max_nodes = 1;
	o.improve_iters = 50;
	ASSERT_EQ(0, md_exact_solve(&p, &o, &r));
	ASSERT_EQ(0, md_plan_validate(&p, r.offsets, NULL));
	EXPECT_EQ(load, r.load_bound);
	EXPECT_EQ(opt, r.lower_bound);
	EXPECT_LE(r.lower_bound, r.peak);
	o.disable = MD_EXACT_NO_WINDOW_BOUND;
	ASSERT_EQ(0, md_exact_solve(&p, &o, &s));
	EXPECT_EQ(load, s.load_bound);
	/* the search's round below the best peak may prove it too */
	EXPECT_GE(s.lower_bound, load);
	EXPECT_LE(s.lower_bound, opt);
	TH_LOG("gadget after %d tries: load %llu, optimum %llu; proven %llu with the window bound, %llu without; peaks %llu %llu",
	       tries, (unsigned long long)load, (unsigned long long)opt,
	       (unsigned long long)r.lower_bound,
	       (unsigned long long)s.lower_bound,
	       (unsigned long long)r.peak, (unsigned long long)s.peak);
	md_exact_result_free(&r);
	md_exact_result_free(&s);
	md_problem_free(&p);
	md_problem_free(&g);
}

TEST_HARNESS_MAIN
