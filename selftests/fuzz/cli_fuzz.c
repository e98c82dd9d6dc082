// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: metadef-plan's own input handling (tools/plan/), the
 * tool's main() built in under another name. The input is a file given
 * to "metadef-plan -o PLAN.csv --svg /dev/null --json FILE": the format
 * guess (CSV or graph), either parser, the fixed-offset report, planning
 * and the CSV and SVG writers. The tool must exit 0 or 1 (2 is a usage
 * error, and the usage is good), and a plan it wrote must be read back by
 * the tool as valid: the README's promise that metadef-plan plan.csv
 * re-validates a plan (a CSV's plan; a graph's is a per-tensor report).
 *
 * Files are memfds, named /proc/self/fd/N. Run with -close_fd_mask=3: the
 * tool prints on every run.
 */
#include <errno.h>
#include <getopt.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"

int plan_cli_main(int argc, char **argv);

static int in_fd = -1, out_fd = -1;
static char in_path[64], out_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	in_fd = memfd_create("metadef-plan-in", 0);
	out_fd = memfd_create("metadef-plan-out", 0);
	if (in_fd < 0 || out_fd < 0) {
		perror("memfd_create");
		abort();
	}
	snprintf(in_path, sizeof(in_path), "/proc/self/fd/%d", in_fd);
	snprintf(out_path, sizeof(out_path), "/proc/self/fd/%d", out_fd);
	return 0;
}

static int run(char **argv, int argc)
{
	optind = 0;	/* glibc: start getopt afresh */
	return plan_cli_main(argc, argv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char prog[] = "metadef-plan", o[] = "-o", svg[] = "--svg",
	     devnull[] = "/dev/null", json[] = "--json";
	char *first[] = { prog, o, out_path, svg, devnull, json, in_path, NULL };
	char *again[] = { prog, out_path, NULL };
	int rc;

	if (size > 8192)
		return 0;
	if (ftruncate(in_fd, 0) || pwrite(in_fd, data, size, 0) != (ssize_t)size ||
	    ftruncate(out_fd, 0))
		abort();
	rc = run(first, 7);
	FUZZ_CHECK(rc == 0 || rc == 1, "metadef-plan exited %d", rc);
	if (rc)
		return 0;
	/*
	 * A graph's plan has a row per tensor and the buffer it lives in
	 * (in-place tensors overlap their inputs): it is a report, not a
	 * problem, and is not read back. A CSV's plan is.
	 */
	{
		char head[256] = "";
		ssize_t got = pread(out_fd, head, sizeof(head) - 1, 0);
		char *nl;

		if (got > 0) {
			head[got] = '\0';
			nl = strchr(head, '\n');
			if (nl)
				*nl = '\0';
			if (strstr(head, ",buffer"))
				return 0;
		}
	}
	rc = run(again, 2);
	FUZZ_CHECK(rc == 0, "metadef-plan does not take back the plan it wrote (exit %d)", rc);
	return 0;
}
