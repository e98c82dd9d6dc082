/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libmetadef planning internals: not installed. */
#ifndef METADEF_PLAN_INTERNAL_H
#define METADEF_PLAN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <metadef/plan.h>

/* Strict unsigned decimal. Return: 0, -EINVAL or -ERANGE. */
int md_parse_u64(const char *s, uint64_t *out);

/*
 * Record a parse error (line and printf-style message) in @err, which may
 * be NULL, for the CSV and graph parsers. Return: -EINVAL, to return on.
 */
int md_parse_fail(struct md_error *err, unsigned int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Check that line @ln (@len bytes, without its '\n') is text: valid UTF-8,
 * no NUL or other control character but tabs, a '\r' only at its end
 * (CRLF). Both parsers run it before looking at a line, so nothing else
 * ever echoes such bytes in a message. Return: 0 or md_parse_fail().
 */
int md_check_line(const char *s, size_t len, unsigned int ln,
		  struct md_error *err);

/* Round @v up to a multiple of @a (a >= 1); UINT64_MAX on overflow. */
static inline uint64_t md_round_up(uint64_t v, uint64_t a)
{
	uint64_t r;

	if (a <= 1)
		return v;
	r = v % a;
	if (!r)
		return v;
	if (v > UINT64_MAX - (a - r))
		return UINT64_MAX;
	return v + (a - r);
}

/* Tests only: plan without neighbour lists (gap tree path). */
extern int md_plan_test_no_lists;
/* Tests only: and without the gap tree (the stab tree's neighbours). */
extern int md_plan_test_no_gaptree;
/* Tests only: the start order placed like any other (no sweep). */
extern int md_plan_test_no_sweep;

/* A sort key and the index it belongs to. */
struct md_kv {
	uint64_t key;
	uint32_t idx;
};

/*
 * Stable sort of @a by key, ascending (LSD radix, skipping bytes that are
 * the same everywhere). Equal keys keep their order. Return: 0 or -ENOMEM.
 */
int md_sort_kv(struct md_kv *a, size_t n);
/*
 * Stable sort of @n 16-byte records at @a by their first 64 bits (an
 * unsigned key), @tmp scratch room for as many (lib/sort.c).
 */
void md_radix_sort16(void *a, void *tmp, size_t n);

#endif /* METADEF_PLAN_INTERNAL_H */
