// SPDX-License-Identifier: GPL-2.0
/*
 * Demo: one region's life, as a runtime would live it. Allocate, map,
 * write, read back, free; print each step. Runs inside the demo VM.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <metadef/metadef.h>

static void show(const char *title, const char *path)
{
	char buf[4096];
	size_t n;
	FILE *f = fopen(path, "r");

	printf("--- %s (%s)\n", title, path);
	if (!f) {
		printf("(cannot read: %s)\n", strerror(errno));
		return;
	}
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, stdout);
	fclose(f);
}

static int fail(const char *what)
{
	fprintf(stderr, "region-demo: %s: %s\n", what, strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	uint64_t size = 4 << 20;
	struct metadef_alloc a = { 0 };
	struct metadef_free f = { 0 };
	struct metadef_info info;
	char sz[32], *p;
	int fd;

	if (argc > 1 && md_parse_size(argv[1], &size)) {
		fprintf(stderr, "usage: region-demo [SIZE]\n");
		return 2;
	}
	fd = md_kmod_open(NULL);
	if (fd < 0) {
		errno = -fd;
		return fail("open " MD_DEFAULT_DEVICE);
	}
	if (md_kmod_info(fd, &info))
		return fail("INFO");
	printf("domain %u, %s pool: %s free of %s\n", info.domain_id,
	       info.backend, md_format_size(info.pool_free, sz, sizeof(sz)),
	       md_format_size(info.pool_size, sz + 16, 16));

	show("before ALLOC", "/sys/kernel/debug/metadef/regions");
	a.size = size;
	if (ioctl(fd, METADEF_IOC_ALLOC, &a))
		return fail("ALLOC");
	printf("ALLOC %s -> handle %u, device address %#" PRIx64
	       ", mmap offset %#" PRIx64 "\n",
	       md_format_size(a.alloc_size, sz, sizeof(sz)), a.handle,
	       (uint64_t)a.dev_addr, (uint64_t)a.mmap_offset);
	show("after ALLOC", "/sys/kernel/debug/metadef/regions");

	p = mmap(NULL, a.alloc_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 a.mmap_offset);
	if (p == MAP_FAILED)
		return fail("mmap");
	printf("mmap at %p; first byte is %d (new memory is zeroed)\n",
	       (void *)p, p[0]);
	snprintf(p, 64, "hello from domain %u", info.domain_id);
	snprintf(p + a.alloc_size - 64, 64, "and from its last page");
	printf("wrote and read back: \"%s\" ... \"%s\"\n", p,
	       p + a.alloc_size - 64);

	f.handle = a.handle;
	if (ioctl(fd, METADEF_IOC_FREE, &f))
		return fail("FREE");
	printf("FREE handle %u while still mapped: data still there: \"%s\"\n",
	       a.handle, p);
	show("freed but mapped", "/sys/kernel/debug/metadef/regions");
	munmap(p, a.alloc_size);
	printf("munmap: the last reference is gone\n");
	show("after munmap", "/sys/kernel/debug/metadef/regions");
	if (md_kmod_info(fd, &info))
		return fail("INFO");
	printf("pool: %s free of %s\n",
	       md_format_size(info.pool_free, sz, sizeof(sz)),
	       md_format_size(info.pool_size, sz + 16, 16));
	close(fd);
	return 0;
}
