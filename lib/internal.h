/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libmetadef internals: not installed. */
#ifndef METADEF_INTERNAL_H
#define METADEF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Marks the functions that make up the shared library's ABI. */
#define MD_API __attribute__((visibility("default")))

#ifndef MD_VERSION
#define MD_VERSION "unknown"
#endif

/*
 * Room for element @n of the array @v, which has *@cap elements of @size
 * bytes: when it is full, it grows to twice as many (@first the first
 * time) and *@cap says so. Return: the array (moved, perhaps), or NULL
 * when out of memory; @v is then unchanged and still the caller's.
 */
static inline void *md_grow(void *v, size_t n, size_t *cap, size_t size,
			    size_t first)
{
	size_t c;

	if (n < *cap)
		return v;
	c = *cap ? 2 * *cap : first;
	if (c > SIZE_MAX / size)
		return NULL;
	v = realloc(v, c * size);
	if (v)
		*cap = c;
	return v;
}

#endif /* METADEF_INTERNAL_H */
