/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Host tests: small pieces several of them share.
 */
#ifndef METADEF_TEST_UTIL_H
#define METADEF_TEST_UTIL_H

#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <metadef/device.h>
#include <metadef/plan.h>

#include "random.h"

/*
 * The tests' seeded, reproducible pseudo-random numbers: the library's
 * own (lib/random.h). Each test keeps its own state (never 0) and so its
 * own sequence.
 */
static inline uint64_t xorshift64(uint64_t *state)
{
	return md_xorshift64(state);
}

/*
 * A test's seed: METADEF_TEST_SEED from the environment (decimal or 0x
 * hex) if set, else @dflt; said on stderr as a TAP comment so that a
 * failing run can be repeated. Never 0 (xorshift64's fixed point).
 */
static inline uint64_t test_seed(uint64_t dflt)
{
	const char *s = getenv("METADEF_TEST_SEED");
	uint64_t v = s && *s ? strtoull(s, NULL, 0) : dflt;

	if (!v)
		v = dflt;
	fprintf(stderr, "# seed 0x%llx\n", (unsigned long long)v);
	return v;
}

/* MiniMalloc's 5-buffer example: optimum 12. */
static inline void example12(struct md_problem *p)
{
	md_problem_init(p);
	md_problem_add(p, "b1", 0, 3, 4, 0);
	md_problem_add(p, "b2", 3, 9, 4, 0);
	md_problem_add(p, "b3", 0, 9, 4, 0);
	md_problem_add(p, "b4", 9, 21, 4, 0);
	md_problem_add(p, "b5", 0, 21, 4, 0);
}

/* A device on the host backend with block alignment @align, or NULL. */
static inline struct md_device *host_dev(uint64_t align)
{
	struct md_device_config cfg = { .backend = "host", .align = align };
	struct md_device *dev = NULL;

	if (md_device_open(&cfg, &dev))
		return NULL;
	return dev;
}

/* Bytes of @dev's live regions. */
static inline uint64_t dev_bytes(struct md_device *dev)
{
	struct md_device_stats st;

	md_device_stats(dev, &st);
	return st.bytes_current;
}

/* Bytes of address space this process maps now. */
static inline uint64_t vm_bytes(void)
{
	unsigned long long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%llu", &pages) != 1)
			pages = 0;
		fclose(f);
	}
	return pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

/*
 * Cap the address space (each test runs in a child of its own) at what is
 * mapped now plus @room: the host backend's mmap is refused beyond it.
 */
static inline int cap_address_space(uint64_t room)
{
	struct rlimit rl;

	rl.rlim_cur = rl.rlim_max = vm_bytes() + room;
	return setrlimit(RLIMIT_AS, &rl);
}

/*
 * The path of @rel under the build directory, for a test that runs a tool
 * the build made beside it: the test is BUILD/selftests/lib/NAME, so
 * "bin/metadef-plan" is BUILD/bin/metadef-plan. Return: 0 when that file
 * is executable, else -1.
 */
static inline int test_build_path(char *out, size_t len, const char *rel)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return -1;
	exe[n] = '\0';
	snprintf(out, len, "%s/../../%s", dirname(exe), rel);
	return access(out, X_OK) ? -1 : 0;
}

/*
 * Run the shell command @cmd and keep the first @len - 1 bytes of what it
 * prints (NUL-terminated) in @out; the rest is read and dropped, so a
 * long output never ends the command with SIGPIPE. Return: its exit
 * status, or -1 when it could not run or was killed.
 */
static inline int test_capture(const char *cmd, char *out, size_t len)
{
	char drain[4096];
	size_t n = 0;
	FILE *p;
	int st;

	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (n + 1 < len) {
		size_t r = fread(out + n, 1, len - 1 - n, p);

		if (!r)
			break;
		n += r;
	}
	out[n] = '\0';
	while (fread(drain, 1, sizeof(drain), p))
		;
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#endif /* METADEF_TEST_UTIL_H */
