// SPDX-License-Identifier: GPL-2.0
/*
 * Demo: two tenants. Two processes each open /dev/metadef, so each is
 * its own memory domain. A grants B read-only access to one region; B
 * reads it through the device (COPY) and the CPU (mmap), tries two things
 * it was not granted (refused, logged in debugfs "faults"), then A
 * revokes and B is cut off. Runs inside the demo VM, as root (it reads
 * debugfs). Every step is checked: the exit status is non-zero when one
 * did not go as described, so the demo is also a smoke test.
 *
 * The tenants take turns over a socketpair: one acts and prints, then
 * hands the turn (and what the other must know) to the other.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/metadef.h>

#define DEV		"/dev/metadef"
#define DEBUGFS		"/sys/kernel/debug/metadef/"
#define SHARED_SIZE	(64 << 10)	/* A's region that B may read */
#define PRIVATE_SIZE	(16 << 10)	/* A's region that B may not */
#define OWN_SIZE	(64 << 10)	/* B's own region */

/* The columns of debugfs "domains" this demo reads. */
enum {
	COL_ID, COL_PID, COL_UID, COL_COMM, COL_COLOR, COL_QUOTA, COL_USED,
	COL_REGIONS, COL_IMPORTS, COL_FAULTS,
};

/* What the tenants tell each other when they pass the turn. */
struct turn {
	uint32_t domain_id;
	uint32_t handle;	/* A's region that it shares */
	uint64_t token;
	uint64_t shared_va;
	uint64_t private_va;
};

static const char *who = "A";	/* "A" or "B": this process's tenant */
static int sock = -1;		/* to the other tenant */

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void die(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

/* A line of this tenant's doing. */
static void say(const char *fmt, ...)
{
	va_list ap;

	printf("[%s] ", who);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* What it means, for the reader: indented, wrapped at 100 columns. */
static void note(const char *fmt, ...)
{
	char text[512], *p = text;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	while (*p) {
		size_t len = strlen(p), cut = len;

		if (len > 94) {
			cut = 94;
			while (cut > 0 && p[cut] != ' ')
				cut--;
			if (!cut)
				cut = 94;
		}
		printf("    %s %.*s\n", p == text ? ">" : " ", (int)cut, p);
		p += cut;
		while (*p == ' ')
			p++;
	}
}

static void heading(int n, const char *title)
{
	printf("\n\033[1m-- %d. %s\033[0m\n", n, title);
}

static void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	printf("tenants-demo: [%s] FAILED: ", who);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(1);
}

/* Hand the turn over; all printed so far comes before the other's lines. */
static void pass(const struct turn *t)
{
	fflush(stdout);
	if (send(sock, t, sizeof(*t), 0) != sizeof(*t))
		die("cannot reach the other tenant: %s", strerror(errno));
}

static void await(struct turn *t)
{
	if (recv(sock, t, sizeof(*t), 0) != sizeof(*t))
		die("the other tenant stopped (see its lines above)");
}

/* A debugfs file of the module, as it is now. */
static void show(const char *name)
{
	char path[128], buf[4096];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), DEBUGFS "%s", name);
	f = fopen(path, "r");
	if (!f)
		die("cannot read %s: %s", path, strerror(errno));
	printf("    --- %s\n", path);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, stdout);
	fclose(f);
}

/* Column @col of domain @id in debugfs "domains"; -1 when it is not there. */
static long long domain_field(uint32_t id, int col)
{
	char line[256];
	long long v = -1;
	FILE *f = fopen(DEBUGFS "domains", "r");

	if (!f)
		die("cannot read " DEBUGFS "domains: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *tok, *save = NULL;
		int i = 0;

		tok = strtok_r(line, "\t\n", &save);
		if (!tok || strtoul(tok, NULL, 10) != id)
			continue;
		while (tok && i < col) {
			tok = strtok_r(NULL, "\t\n", &save);
			i++;
		}
		if (tok)
			v = strtoll(tok, NULL, 10);
		break;
	}
	fclose(f);
	return v;
}

static struct metadef_info info_of(int fd)
{
	struct metadef_info info;

	memset(&info, 0, sizeof(info));
	if (ioctl(fd, METADEF_IOC_INFO, &info))
		die("INFO: %s", strerror(errno));
	return info;
}

/* The color tag of domain @id, from debugfs "domains". */
static long long color_of(uint32_t id)
{
	long long color = domain_field(id, COL_COLOR);

	if (color < 1)
		die("domain %u is not in " DEBUGFS "domains", id);
	return color;
}

static int open_domain(struct metadef_info *info)
{
	int fd = open(DEV, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		die("open " DEV ": %s", strerror(errno));
	*info = info_of(fd);
	return fd;
}

/* ALLOC @size and map it: the region's description and its bytes. */
static void *alloc_map(int fd, uint64_t size, struct metadef_alloc *a)
{
	void *p;

	memset(a, 0, sizeof(*a));
	a->size = size;
	if (ioctl(fd, METADEF_IOC_ALLOC, a))
		die("ALLOC %" PRIu64 " bytes: %s", size, strerror(errno));
	p = mmap(NULL, a->alloc_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 a->mmap_offset);
	if (p == MAP_FAILED)
		die("mmap of handle %u: %s", a->handle, strerror(errno));
	return p;
}

static int copy(int fd, uint64_t dst, uint64_t src, uint64_t size)
{
	struct metadef_copy c = { .src_va = src, .dst_va = dst, .size = size };

	return ioctl(fd, METADEF_IOC_COPY, &c) ? -errno : 0;
}

/* What A writes into the region it shares, and what B must find there. */
static void fill(unsigned char *p, uint32_t owner)
{
	for (size_t i = 0; i < SHARED_SIZE; i++)
		p[i] = (unsigned char)(i * 7 + 1);
	snprintf((char *)p, 64, "model weights of tenant A (domain %u)", owner);
}

static int matches(const unsigned char *p, uint32_t owner)
{
	static unsigned char want[SHARED_SIZE];

	fill(want, owner);
	return !memcmp(p, want, SHARED_SIZE);
}

/* Does reading *p kill a child process with SIGBUS? */
static int touch_gets_sigbus(const char *p)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		signal(SIGBUS, SIG_DFL);
		_exit(p[0] == 'm' ? 10 : 11);	/* read something: bad */
	}
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid: %s", strerror(errno));
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS;
}

static int tenant_b(void)
{
	struct metadef_info info;
	struct metadef_import im = { 0 };
	struct metadef_alloc own;
	struct metadef_free fr = { 0 };
	struct turn t, a;
	unsigned char *own_p;
	char *ip;
	long long faults;
	char name[32];
	void *wp;
	int fd, ret;

	who = "B";
	await(&a);			/* A is open */
	fd = open_domain(&info);
	say("pid %d opened " DEV ": domain %u, color %lld", getpid(),
	    info.domain_id, color_of(info.domain_id));
	if (info.domain_id == a.domain_id)
		die("both opens got domain %u", a.domain_id);
	if (color_of(info.domain_id) == color_of(a.domain_id))
		die("domains %u and %u have the same color", a.domain_id,
		    info.domain_id);
	note("Two opens, two domains: own id, own color tag (carried by every entry of its device page table), own quota.");
	memset(&t, 0, sizeof(t));
	t.domain_id = info.domain_id;
	pass(&t);

	await(&a);			/* A has allocated */
	own_p = alloc_map(fd, OWN_SIZE, &own);
	say("ALLOC 64 KiB -> handle %u at device VA %#" PRIx64, own.handle,
	    (uint64_t)own.dev_va);
	note("Handles are small numbers that mean something only in their own domain: A's handle %u and B's handle %u are different regions.",
	     a.handle, own.handle);
	pass(&t);

	await(&a);			/* A has granted */
	heading(4, "B imports the grant and reads A's bytes through it");
	im.token = a.token;
	if (ioctl(fd, METADEF_IOC_IMPORT, &im))
		die("IMPORT: %s", strerror(errno));
	say("IMPORT token -> handle %u at device VA %#" PRIx64 "%s", im.handle,
	    (uint64_t)im.dev_va,
	    im.dev_va == a.shared_va ? " (the same VA as in A's table)" : "");
	if (copy(fd, own.dev_va, im.dev_va, SHARED_SIZE))
		die("COPY from the import: %s", strerror(errno));
	if (!matches(own_p, a.domain_id))
		die("the copy does not hold A's bytes");
	say("COPY 64 KiB from the import into its own region: \"%s\", all 65536 bytes are A's",
	    (char *)own_p);
	ip = mmap(NULL, SHARED_SIZE, PROT_READ, MAP_SHARED, fd, im.mmap_offset);
	if (ip == MAP_FAILED)
		die("read-only mmap of the import: %s", strerror(errno));
	if (!matches((unsigned char *)ip, a.domain_id))
		die("the mapping does not show A's bytes");
	say("mmap of the import, read-only: reads \"%s\"", ip);
	wp = mmap(NULL, SHARED_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		  im.mmap_offset);
	if (wp != MAP_FAILED)
		die("a writable mmap of a read-only import was allowed");
	say("mmap of the import for writing: refused (%s)", strerror(errno));
	if (domain_field(info.domain_id, COL_IMPORTS) != 1)
		die("debugfs domains does not count B's import");
	snprintf(name, sizeof(name), "mmu/%u", info.domain_id);
	show(name);
	note("COPY is the stand-in for the accelerator's DMA: it reads A's pages through B's own device page table (above: B's own region read-write, A's import read-only, both in B's color).");

	heading(5, "B tries what it was not granted");
	faults = domain_field(info.domain_id, COL_FAULTS);
	memcpy(own_p, "B was here", 11);
	ret = copy(fd, im.dev_va, own.dev_va, 11);
	if (ret != -EFAULT)
		die("COPY into the read-only import: %s, not EFAULT",
		    ret ? strerror(-ret) : "it worked");
	say("COPY its own bytes into A's region through the read-only import: refused (EFAULT)");
	ret = copy(fd, own.dev_va, a.private_va, 64);
	if (ret != -EFAULT)
		die("COPY from A's private region: %s, not EFAULT",
		    ret ? strerror(-ret) : "it worked");
	say("COPY from %#" PRIx64 ", A's other region, never granted: refused (EFAULT)",
	    a.private_va);
	if (domain_field(info.domain_id, COL_FAULTS) != faults + 2)
		die("domain %u's fault count went from %lld to %lld, not up by 2",
		    info.domain_id, faults,
		    domain_field(info.domain_id, COL_FAULTS));
	note("Before a byte moves, every page of both ranges is looked up in B's device page table: a missing permission (write to a read-only import) or a page that is not there (A's private region) fails the whole copy, and the fault is logged:");
	show("faults");
	show("domains");
	note("The last two faults are domain %u's: the write was a permission fault, the read of A's private region found nothing mapped. The domains view counts them in B's faults column; A's shows none.",
	     info.domain_id);
	pass(&t);

	await(&a);			/* A has revoked */
	ret = copy(fd, own.dev_va, im.dev_va, 64);
	if (ret != -EFAULT)
		die("COPY from the revoked import: %s, not EFAULT",
		    ret ? strerror(-ret) : "it worked");
	say("COPY from the import again: refused (EFAULT): the grant's pages left B's device page table");
	if (!touch_gets_sigbus(ip))
		die("reading the revoked import's mapping did not fault");
	say("read through its old mmap of the import (in a child process): killed by SIGBUS");
	note("REVOKE removed B's translations and zapped its CPU mappings: B can no longer read A's memory, nor whatever that memory holds after A frees it.");
	fr.handle = im.handle;
	if (ioctl(fd, METADEF_IOC_FREE, &fr))
		die("FREE of the revoked import: %s", strerror(errno));
	say("FREE of the dead import's handle %u: only B's handle goes", im.handle);
	munmap(ip, SHARED_SIZE);
	munmap(own_p, own.alloc_size);
	pass(&t);

	await(&a);			/* A has closed */
	close(fd);
	say("closed " DEV ": domain %u is gone with its region", info.domain_id);
	fflush(stdout);
	return 0;
}

int main(void)
{
	struct metadef_alloc shared, priv;
	struct metadef_grant g = { 0 };
	struct metadef_revoke rv = { 0 };
	struct metadef_info info, end;
	unsigned char *sp, *pp;
	struct turn t, b;
	int sv[2], fd, status;
	pid_t pid;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv))
		die("socketpair: %s", strerror(errno));
	heading(1, "two tenants: two processes, each opens " DEV);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		close(sv[0]);
		sock = sv[1];
		exit(tenant_b());
	}
	close(sv[1]);
	sock = sv[0];

	fd = open_domain(&info);
	say("pid %d opened " DEV ": domain %u, color %lld", getpid(),
	    info.domain_id, color_of(info.domain_id));
	memset(&t, 0, sizeof(t));
	t.domain_id = info.domain_id;
	pass(&t);
	await(&b);

	heading(2, "each allocates a region");
	sp = alloc_map(fd, SHARED_SIZE, &shared);
	fill(sp, info.domain_id);
	say("ALLOC 64 KiB -> handle %u at device VA %#" PRIx64 "; wrote \"%s\" and a byte pattern through mmap",
	    shared.handle, (uint64_t)shared.dev_va, (char *)sp);
	pp = alloc_map(fd, PRIVATE_SIZE, &priv);
	strcpy((char *)pp, "tenant A's private notes");
	say("ALLOC 16 KiB -> handle %u at device VA %#" PRIx64 ": private, it will not be granted",
	    priv.handle, (uint64_t)priv.dev_va);
	t.handle = shared.handle;
	pass(&t);
	await(&b);

	heading(3, "A grants B read-only access to its 64 KiB region");
	g.handle = shared.handle;
	g.domain_id = b.domain_id;
	g.flags = METADEF_SHARE_READ;
	if (ioctl(fd, METADEF_IOC_GRANT, &g))
		die("GRANT: %s", strerror(errno));
	say("GRANT handle %u to domain %u, read-only -> token %#" PRIx64,
	    shared.handle, b.domain_id, (uint64_t)g.token);
	note("A token is random, good once, and only for the domain it names. It travels like any other number (here over a socket); B also learns the VA of A's private region, to try it.");
	t.token = g.token;
	t.shared_va = shared.dev_va;
	t.private_va = priv.dev_va;
	pass(&t);
	await(&b);

	if (!matches(sp, info.domain_id) ||
	    strcmp((char *)pp, "tenant A's private notes"))
		die("A's memory changed");
	say("its memory is untouched: all 64 KiB as written, the private notes too");

	heading(6, "A revokes the grant");
	rv.handle = shared.handle;
	rv.domain_id = b.domain_id;
	if (ioctl(fd, METADEF_IOC_REVOKE, &rv))
		die("REVOKE: %s", strerror(errno));
	say("REVOKE handle %u from domain %u", shared.handle, b.domain_id);
	pass(&t);
	await(&b);

	if (!matches(sp, info.domain_id))
		die("A lost its own memory in the revoke");
	say("its own mapping still reads \"%s\"", (char *)sp);

	heading(7, "both close " DEV);
	munmap(sp, shared.alloc_size);
	munmap(pp, priv.alloc_size);
	close(fd);
	say("closed " DEV ": domain %u is gone with its two regions",
	    info.domain_id);
	pass(&t);
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		die("tenant B failed");
	if (domain_field(info.domain_id, COL_ID) != -1 ||
	    domain_field(b.domain_id, COL_ID) != -1)
		die("a closed domain is still in " DEBUGFS "domains");
	fd = open_domain(&end);
	close(fd);
	if (end.pool_free != info.pool_free)
		die("the pool has %" PRIu64 " bytes free, %" PRIu64 " before",
		    (uint64_t)end.pool_free, (uint64_t)info.pool_free);
	printf("Both domains have left " DEBUGFS "domains; the pool is back to %" PRIu64 " KiB free, as before the two tenants came.\n",
	       (uint64_t)end.pool_free >> 10);
	return 0;
}
