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
		"  info        ABI version, page size, pool size and this caller's domain\n"
		"\n"
		"options:\n"
		"  -d, --device PATH   device node (default %s)\n"
		"  -j, --json          print JSON instead of text\n"
		"  -V, --version       print the version and exit\n"
		"  -h, --help          this text\n",
		prog, MD_DEFAULT_DEVICE);
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
	char pool[32];
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

	if (json) {
		printf("{\"device\": \"%s\", \"abi_version\": %u, "
		       "\"page_size\": %u, \"pool_size\": %" PRIu64 ", "
		       "\"domain_id\": %u}\n",
		       path ? path : MD_DEFAULT_DEVICE, info.abi_version,
		       info.page_size, (uint64_t)info.pool_size,
		       info.domain_id);
		return 0;
	}
	printf("metadef on %s\n", path ? path : MD_DEFAULT_DEVICE);
	printf("  abi version  %u\n", info.abi_version);
	printf("  page size    %u\n", info.page_size);
	printf("  pool size    %s (%" PRIu64 " bytes)\n",
	       md_format_size(info.pool_size, pool, sizeof(pool)),
	       (uint64_t)info.pool_size);
	printf("  domain       %u (this open file)\n", info.domain_id);
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
