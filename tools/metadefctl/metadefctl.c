// SPDX-License-Identifier: GPL-2.0
/*
 * metadefctl: inspect and control metadef from the command line.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <metadef/metadef.h>

static const char *prog = "metadefctl";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--device PATH] [--json] COMMAND\n"
		"\n"
		"commands:\n"
		"  info        ABI version, page size, the pool (backend, size, free,\n"
		"              largest free block), and a new domain's id, quota and usage\n"
		"\n"
		"options:\n"
		"  -d, --device PATH   device node (default %s)\n"
		"  -j, --json          print JSON instead of text\n"
		"  -V, --version       print the version and exit\n"
		"  -h, --help          this text\n",
		prog, MD_DEFAULT_DEVICE);
}

/* A JSON string literal: quotes, backslashes and control bytes escaped. */
static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static int open_device(const char *path)
{
	int fd = md_kmod_open(path);

	if (fd < 0) {
		fprintf(stderr, "%s: cannot open %s: %s%s\n", prog,
			path ? path : MD_DEFAULT_DEVICE, strerror(-fd),
			fd == -ENOENT ? " (is metadef.ko loaded? modprobe metadef)" : "");
	}
	return fd;
}

static int cmd_info(const char *path, int json)
{
	struct metadef_info info;
	char pool[32], avail[32], quota[32], used[32];
	int fd, ret;

	fd = open_device(path);
	if (fd < 0)
		return 1;
	ret = md_kmod_info(fd, &info);
	close(fd);
	if (ret) {
		fprintf(stderr, "%s: METADEF_IOC_INFO failed: %s\n", prog,
			strerror(-ret));
		return 1;
	}

	info.backend[sizeof(info.backend) - 1] = 0;
	if (json) {
		printf("{\"device\": ");
		json_string(path ? path : MD_DEFAULT_DEVICE);
		printf(", \"abi_version\": %u, \"page_size\": %u, "
		       "\"backend\": ", info.abi_version, info.page_size);
		json_string(info.backend);
		printf(", \"pool_size\": %" PRIu64 ", \"pool_free\": %" PRIu64
		       ", \"pool_largest_free\": %" PRIu64 ", \"domain_id\": %u"
		       ", \"domain_quota\": ",
		       (uint64_t)info.pool_size, (uint64_t)info.pool_free,
		       (uint64_t)info.pool_largest, info.domain_id);
		if (info.domain_quota == METADEF_QUOTA_UNLIMITED)
			printf("null");
		else
			printf("%" PRIu64, (uint64_t)info.domain_quota);
		printf(", \"domain_used\": %" PRIu64 "}\n",
		       (uint64_t)info.domain_used);
		return 0;
	}
	printf("metadef on %s\n", path ? path : MD_DEFAULT_DEVICE);
	printf("  abi version  %u\n", info.abi_version);
	printf("  page size    %u\n", info.page_size);
	printf("  pool         %s, %s: %s free, largest free block %s\n",
	       info.backend, md_format_size(info.pool_size, pool, sizeof(pool)),
	       md_format_size(info.pool_free, avail, sizeof(avail)),
	       md_format_size(info.pool_largest, used, sizeof(used)));
	if (info.domain_quota == METADEF_QUOTA_UNLIMITED)
		snprintf(quota, sizeof(quota), "no quota");
	else
		md_format_size(info.domain_quota, quota, sizeof(quota));
	printf("  domain       %u (this open file): %s used, %s\n",
	       info.domain_id,
	       md_format_size(info.domain_used, used, sizeof(used)), quota);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *device = NULL;
	int json = 0, c;

	while ((c = getopt_long(argc, argv, "+d:jVh", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			device = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'V':
			printf("metadefctl %s\n", md_version());
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "%s: no command given\n", prog);
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[optind], "info") && optind + 1 == argc)
		return cmd_info(device, json);

	fprintf(stderr, "%s: unknown command '%s'\n", prog, argv[optind]);
	usage(stderr);
	return 2;
}
