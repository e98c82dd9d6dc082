/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libmetadef: the user-space half of metadef.
 *
 * Conventions: functions return 0 or a negative errno; out-parameters come
 * last; nothing here prints. Link with -lmetadef (pkg-config metadef).
 */
#ifndef METADEF_METADEF_H
#define METADEF_METADEF_H

#include <stddef.h>
#include <stdint.h>

#include <linux/metadef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MD_DEFAULT_DEVICE "/dev/" METADEF_DEVICE_NAME

/* The library's version, e.g. "0.1.0". */
const char *md_version(void);

/*
 * md_parse_size() - parse a byte count such as "4096", "64K" or "64MiB":
 * an integer with an optional K/M/G/T suffix (powers of 1024), optionally
 * followed by "B" or "iB". Rejects empty strings, signs,
 * junk after the number and values that do not fit in 64 bits.
 *
 * Return: 0, -EINVAL (not a size) or -ERANGE (too large).
 */
int md_parse_size(const char *str, uint64_t *out);

/*
 * md_format_size() - "64 MiB", "1.50 GiB", "512 B": human-readable, exact
 * when the value is a whole number of the unit. Writes at most @len bytes
 * including the terminating NUL and returns @buf.
 */
char *md_format_size(uint64_t bytes, char *buf, size_t len);

/*
 * md_read_file() - the whole of @path ("-": standard input) in a malloc()ed
 * buffer with a NUL after its @len bytes; NULL with errno set on failure.
 * For the tools and tests that read problems, graphs and plans.
 */
char *md_read_file(const char *path, size_t *len);

/*
 * Raw access to the kernel module (/dev/metadef). md_kmod_open() opens a
 * new memory domain; close(2) the descriptor to leave it.
 */
int md_kmod_open(const char *path);
int md_kmod_info(int fd, struct metadef_info *info);

#ifdef __cplusplus
}
#endif

#endif /* METADEF_METADEF_H */
