/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Host tests: finding and loading ../shared/bench/minimalloc-challenging.
 *
 * The benchmark data sits beside the repository (../shared from the repo
 * root, where the tests run); else it is looked for from the test binary's
 * path (build/selftests/lib/ → ../../..), or in $METADEF_BENCH_DIR.
 */
#ifndef METADEF_TEST_BENCH_FILES_H
#define METADEF_TEST_BENCH_FILES_H

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <metadef/metadef.h>
#include <metadef/plan.h>

static inline int bench_dir(char *out, size_t len)
{
	static const char sub[] = "shared/bench/minimalloc-challenging";
	char exe[PATH_MAX];
	ssize_t n;

	if (getenv("METADEF_BENCH_DIR")) {
		snprintf(out, len, "%s", getenv("METADEF_BENCH_DIR"));
		return access(out, R_OK) ? -ENOENT : 0;
	}
	snprintf(out, len, "../%s", sub);
	if (!access(out, R_OK))
		return 0;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		snprintf(out, len, "%s/../../../../%s", dirname(exe), sub);
		if (!access(out, R_OK))
			return 0;
	}
	return -ENOENT;
}

/* Parse @dir/@name as MiniMalloc CSV into @p (initialised here). */
static inline int bench_load(const char *dir, const char *name,
			     struct md_problem *p)
{
	char path[PATH_MAX + 64];
	struct md_error err;
	size_t len;
	char *s;
	int ret;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	s = md_read_file(path, &len);
	if (!s)
		return -errno;
	md_problem_init(p);
	ret = md_problem_parse_csv(p, s, len, &err);
	free(s);
	return ret;
}

#endif /* METADEF_TEST_BENCH_FILES_H */
