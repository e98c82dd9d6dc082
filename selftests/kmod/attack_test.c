// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: metadef.ko attacked as an adversary would, where the other
 * module tests do not go:
 *
 *  - an unprivileged user (nobody, and nobody as root of its own user
 *    namespace) against every ioctl, another domain's handles, device
 *    VAs and mmap offsets (also through remap_file_pages(2)), debugfs,
 *    and the netlink family's privileged commands and events group;
 *  - stale state: a pending grant after its owner's FREE (and after the
 *    handle number is reused), reused handle numbers in general, a
 *    revoked import's mapping read and written by the kernel (write(2)
 *    and read(2) through it, /proc/self/mem, process_vm_readv) and by a
 *    forked child, memory under a stale mapping never handed out again,
 *    a dma-buf kept after everything else is gone, a debugfs dump read
 *    on after its domain is freed;
 *  - numeric edges: sizes, alignments, ranges, device VAs and mmap
 *    offsets near 2^64, lengths that are not page multiples, every
 *    unknown flag bit, pad and reserved word of every command, user
 *    pointers that are NULL, kernel addresses or unmapped; none of the
 *    refused calls may change anything, a malformed one is EINVAL even at
 *    the domain's quota;
 *  - answers that cannot be copied out: a GRANT's token, an EXPORT with
 *    no free descriptor, an IMPORT held in its copy-out by userfaultfd
 *    while the owner FREEs;
 *  - races: GRANT against FREE of the same handle, two FREEs of one
 *    handle, ioctls against close(2) of their descriptor, GRANTs against
 *    the target domain closing, munmap/mremap against faults.
 *
 * Every test ends with the pool all free and debugfs "regions" and
 * "domains" empty. METADEF_ATTACK_ROUNDS (default 400) sizes the races.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/metadef.h>
#include <linux/userfaultfd.h>

#include "md_genl.h"
#include "md_ioctl.h"
#include "md_touch.h"
#include "kselftest_harness.h"

#define DEV	"/dev/metadef"
#define PAGE	4096UL

static int open_dev(void)
{
	return open(DEV, O_RDWR | O_CLOEXEC);
}

static unsigned int rounds(void)
{
	return (unsigned int)md_env_u64("METADEF_ATTACK_ROUNDS", 400);
}

/* Leaks left once everything of a test is closed; 0 without debugfs. */
static long long leaks_after(struct __test_metadata *_metadata)
{
	struct md_leftovers l;
	long long leaks = md_leaks(3000, &l);

	if (leaks > 0)
		TH_LOG("left behind: %d regions, %d domains, %lld of %lld pool bytes not free",
		       l.regions, l.domains, l.pool_size - l.pool_free,
		       l.pool_size);
	return leaks < 0 ? 0 : leaks;
}

static int grant_to(int fd, uint32_t handle, int to, uint32_t flags,
		    uint64_t *token)
{
	return share_grant(fd, handle, domain_of(to), flags, token);
}

static int export(int fd, uint32_t handle, uint32_t flags, int *out)
{
	struct metadef_export e = { .handle = handle, .flags = flags };
	int ret = ioctl(fd, METADEF_IOC_EXPORT_DMABUF, &e) ? -errno : 0;

	*out = e.fd;
	return ret;
}

static int count_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) != -1;
	return n;
}

/* debugfs "regions" rows; -1 without debugfs. */
static int nr_regions(void)
{
	return md_debugfs_rows("regions");
}

/* In a child: report the line of the first failed check. */
#define need(c)								\
	do {								\
		if (!(c)) {						\
			fprintf(stderr, "# child: line %d: %s\n",	\
				__LINE__, #c);				\
			_exit(1);					\
		}							\
	} while (0)

/* ------------------------------------------- unprivileged attacker */

/* What root holds, for the child that becomes nobody. */
struct victim {
	int fd;
	uint32_t dom;
	struct metadef_alloc reg[3];
};

/* An access to a mapping: the byte read, or -signal. */
static int peek(volatile unsigned char *p)
{
	unsigned char v = 0;
	int sig = touch(p, 0, 0, &v);

	return sig ? -sig : v;
}

/*
 * The family's privileged commands and its events group: EPERM, the
 * victim's quota untouched.
 */
static void unprivileged_genl(const struct victim *v)
{
	struct md_nl nl;
	struct md_req r;
	uint32_t grp;

	need(md_nl_open(&nl) == 0);
	md_req(&nl, &r, METADEF_CMD_QUOTA_SET, 0);
	md_req_u32(&r, METADEF_A_DOMAIN_ID, v->dom);
	md_req_u64(&r, METADEF_A_DOMAIN_QUOTA, 0);
	need(md_nl_call(&nl, &r, NULL, NULL) == -EPERM);
	md_req(&nl, &r, METADEF_CMD_LIMITS_SET, 0);
	md_req_u32(&r, METADEF_A_LIMIT_USER_DOMAINS, 1);
	need(md_nl_call(&nl, &r, NULL, NULL) == -EPERM);
	md_req(&nl, &r, METADEF_CMD_REGION_GET, NLM_F_DUMP);
	need(md_nl_call(&nl, &r, NULL, NULL) == -EPERM);
	grp = nl.mcgrp;
	need(grp != 0);
	need(setsockopt(nl.fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &grp,
			sizeof(grp)) == -1 && errno == EPERM);
	md_nl_close(&nl);
}

static void unprivileged_ops(const struct victim *v, int in_userns)
{
	/* The victim's last region: a handle number nobody's own lacks. */
	const struct metadef_alloc *r = &v->reg[2];
	struct metadef_quota q = { .domain_id = v->dom, .quota = 0 };
	struct metadef_alloc mine;
	unsigned char *p;
	uint64_t tok;
	int fd, buf;

	catch_faults();
	fd = open_dev();
	need(fd >= 0);
	need(domain_of(fd) && domain_of(fd) != v->dom);
	need(alloc(fd, PAGE, &mine) == 0);
	need(mine.handle != r->handle);
	/* No physical address for the unprivileged. */
	need(mine.dev_addr == 0 && mine.dev_va != 0);
	/* No quotas: neither its own nor the victim's. */
	need(ioctl(fd, METADEF_IOC_SET_QUOTA, &q) == -1 && errno == EPERM);
	q.domain_id = 0;
	need(ioctl(fd, METADEF_IOC_SET_QUOTA, &q) == -1 && errno == EPERM);
	unprivileged_genl(v);
	if (in_userns)
		return;

	/* The victim's handle means nothing here. */
	need(release(fd, r->handle) == -ENOENT);
	need(share_grant(fd, r->handle, v->dom, METADEF_SHARE_READ, &tok) ==
	     -ENOENT);
	need(share_revoke(fd, r->handle, 0) == -ENOENT);
	need(export(fd, r->handle, METADEF_EXPORT_RDWR, &buf) == -ENOENT);
	/* Its device VA is not mapped for this domain's device. */
	need(copy(fd, mine.dev_va, r->dev_va, PAGE) == -EFAULT);
	need(copy(fd, r->dev_va, mine.dev_va, PAGE) == -EFAULT);
	/* Its mmap offset cannot be mapped, read-only or not. */
	need(mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, r->mmap_offset) ==
	     MAP_FAILED && errno == EINVAL);
	/* remap_file_pages(2) re-mmaps through ->mmap: still refused. */
	p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 mine.mmap_offset);
	need(p != MAP_FAILED);
	p[0] = 0x21;
	need(syscall(SYS_remap_file_pages, p, PAGE, 0,
		     (size_t)(r->mmap_offset / PAGE), 0) == -1);
	need(peek(p) == 0x21 || peek(p) < 0);
	/* debugfs is root's. */
	need(open("/sys/kernel/debug/metadef/regions", O_RDONLY) < 0);
	need(open("/sys/kernel/debug/metadef/mmu", O_RDONLY) < 0);
	close(fd);
}

static void unprivileged_child(const struct victim *v)
{
	pid_t pid;
	int status;

	/* The victim's own descriptor is not ours to use. */
	close(v->fd);
	unprivileged_ops(v, 0);
	/* Root of a user namespace of its own: still no CAP_SYS_ADMIN. */
	pid = fork();
	if (pid == 0) {
		if (unshare(CLONE_NEWUSER)) {
			/* Not allowed here: nothing to try. */
			printf("# no user namespace for nobody: %s\n",
			       strerror(errno));
			fflush(stdout);
			_exit(0);
		}
		printf("# nobody as root of a user namespace\n");
		fflush(stdout);
		unprivileged_ops(v, 1);
		_exit(0);
	}
	need(pid > 0 && waitpid(pid, &status, 0) == pid);
	need(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	_exit(0);
}

TEST(unprivileged_against_everything)
{
	struct victim v;
	unsigned char *vp;
	struct stat st;
	mode_t mode;
	int status;
	pid_t pid;

	ASSERT_EQ(0, stat(DEV, &st));
	mode = st.st_mode & 07777;
	/* Without the udev rule's group, let nobody open it for the test. */
	if (!st.st_gid)
		ASSERT_EQ(0, chmod(DEV, 0666));
	v.fd = open_dev();
	ASSERT_LE(0, v.fd);
	v.dom = domain_of(v.fd);
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, alloc(v.fd, PAGE, &v.reg[i]));
	vp = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, v.fd,
		  v.reg[2].mmap_offset);
	ASSERT_NE(MAP_FAILED, vp);
	memset(vp, 0xa5, PAGE);

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (become_nobody(0))
			_exit(99);
		unprivileged_child(&v);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	if (!st.st_gid)
		chmod(DEV, mode);
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* Nothing of the victim's changed. */
	EXPECT_EQ(METADEF_QUOTA_UNLIMITED, info_of(v.fd).domain_quota);
	for (size_t i = 0; i < PAGE; i++)
		if (vp[i] != 0xa5) {
			EXPECT_EQ(0xa5, vp[i]);
			break;
		}
	munmap(vp, PAGE);
	close(v.fd);
	EXPECT_EQ(0, leaks_after(_metadata));
}

/*
 * A debugfs "mmu/<id>" file opened (and half read) while its domain was
 * open, read on after the domain closed and was freed: an error or the
 * end of the file, never the freed domain's memory (the debug tier's
 * KASAN would see that).
 */
TEST(debugfs_mmu_file_read_after_its_domain_closed)
{
	struct metadef_alloc reg[40];
	char path[96], buf[64];
	int fd = open_dev(), dbg;
	ssize_t n;

	ASSERT_LE(0, fd);
	/* Enough runs for more than one read of the dump. */
	for (int i = 0; i < 40; i++) {
		ASSERT_EQ(0, alloc(fd, PAGE, &reg[i]));
		if (i & 1)
			ASSERT_EQ(0, release(fd, reg[i - 1].handle));
	}
	snprintf(path, sizeof(path), "/sys/kernel/debug/metadef/mmu/%u",
		 domain_of(fd));
	dbg = open(path, O_RDONLY | O_CLOEXEC);
	if (dbg < 0)
		SKIP(return, "no %s: %s", path, strerror(errno));
	ASSERT_EQ((ssize_t)sizeof(buf), read(dbg, buf, sizeof(buf)));
	close(fd);
	EXPECT_EQ(0, leaks_after(_metadata));
	for (int i = 0; i < 100; i++) {
		n = read(dbg, buf, sizeof(buf));
		if (n <= 0)
			break;
	}
	EXPECT_GE(0, n);
	EXPECT_EQ(-1, access(path, F_OK));
	close(dbg);
}

/* ------------------------------------------------- stale grants */

/*
 * A grant the owner can no longer revoke must not outlive its handle:
 * after FREE the token imports nothing (not even once the handle number
 * is reused by a new region), and the memory is back in the pool.
 */
TEST(free_cancels_pending_grants)
{
	struct metadef_alloc reg, again;
	struct metadef_import im;
	uint64_t tok, tok2, free0;
	int a = open_dev(), b = open_dev();

	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	free0 = info_of(a).pool_free;
	ASSERT_EQ(0, alloc(a, 2 * PAGE, &reg));
	ASSERT_EQ(0, grant_to(a, reg.handle, b, METADEF_SHARE_READ |
			      METADEF_SHARE_WRITE, &tok));
	ASSERT_EQ(0, grant_to(a, reg.handle, b, METADEF_SHARE_READ, &tok2));
	ASSERT_EQ(0, release(a, reg.handle));
	/* Nothing maps it and no grant holds it: it is free. */
	EXPECT_EQ(free0, info_of(a).pool_free);
	EXPECT_EQ(0, info_of(a).domain_used);
	/* The same handle number, another region. */
	ASSERT_EQ(0, alloc(a, PAGE, &again));
	EXPECT_EQ(reg.handle, again.handle);
	EXPECT_EQ(-ENOENT, share_import(b, tok, &im));
	EXPECT_EQ(-ENOENT, share_import(b, tok2, &im));
	EXPECT_EQ(0, info_of(b).domain_used);
	ASSERT_EQ(0, release(a, again.handle));
	close(a);
	close(b);
	EXPECT_EQ(0, leaks_after(_metadata));
}

struct gf_race {
	int a;
	uint32_t bdom;
	uint32_t handle;
	pthread_barrier_t go;
	int grant_ret, free_ret;
	uint64_t token;
	unsigned int round;
};

static void *gf_granter(void *arg)
{
	struct gf_race *g = arg;

	pthread_barrier_wait(&g->go);
	/* Half the rounds give FREE a head start, half GRANT. */
	if (!(g->round & 1))
		sched_yield();
	g->grant_ret = share_grant(g->a, g->handle, g->bdom,
				   METADEF_SHARE_READ, &g->token);
	return NULL;
}

/* Read or write a module parameter; 0 or -errno. */
static int param_rw(const char *name, char *val, size_t len, int set)
{
	char path[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/sys/module/metadef/parameters/%s",
		 name);
	fd = open(path, set ? O_WRONLY : O_RDONLY);
	if (fd < 0)
		return -errno;
	n = set ? write(fd, val, strlen(val)) : read(fd, val, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	if (!set)
		val[n] = 0;
	return 0;
}

/*
 * A GRANT whose answer (the token) cannot be copied out fails with
 * EFAULT and leaves no grant behind: with room for one pending grant,
 * the next GRANT still gets it, and the region is not held.
 */
TEST(grant_answer_not_writable_leaves_no_grant)
{
	struct metadef_grant g, *ro;
	struct metadef_import im;
	struct metadef_alloc reg;
	char old[32];
	int a = open_dev(), b = open_dev();
	uint64_t tok, tok2, free0;

	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_EQ(0, param_rw("max_domain_grants", old, sizeof(old), 0));
	ASSERT_EQ(0, param_rw("max_domain_grants", "1", 0, 1));
	free0 = info_of(a).pool_free;
	ASSERT_EQ(0, alloc(a, PAGE, &reg));
	ro = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	memset(&g, 0, sizeof(g));
	g.handle = reg.handle;
	g.domain_id = domain_of(b);
	g.flags = METADEF_SHARE_READ;
	memcpy(ro, &g, sizeof(g));
	ASSERT_EQ(0, mprotect(ro, PAGE, PROT_READ));
	errno = 0;
	EXPECT_EQ(-1, ioctl(a, METADEF_IOC_GRANT, ro));
	EXPECT_EQ(EFAULT, errno);
	/* The one pending grant allowed is still to be had. */
	EXPECT_EQ(0, grant_to(a, reg.handle, b, METADEF_SHARE_READ, &tok));
	EXPECT_EQ(-ENOSPC, grant_to(a, reg.handle, b, METADEF_SHARE_READ,
				    &tok2));
	param_rw("max_domain_grants", old, 0, 1);
	EXPECT_EQ(0, share_import(b, tok, &im));
	EXPECT_EQ(0, release(b, im.handle));
	/* Nothing else holds the region: FREE gives its memory back. */
	EXPECT_EQ(0, share_revoke(a, reg.handle, 0));
	EXPECT_EQ(0, release(a, reg.handle));
	EXPECT_EQ(free0, info_of(a).pool_free);
	munmap(ro, PAGE);
	close(a);
	close(b);
	EXPECT_EQ(0, leaks_after(_metadata));
}

/* GRANT and FREE of one handle at once: never a grant left behind. */
TEST(grant_racing_free_leaves_no_grant)
{
	unsigned int n = rounds(), granted = 0, left = 0, bad = 0;
	struct metadef_import im;
	struct metadef_alloc reg;
	struct gf_race g;
	uint64_t free0;
	pthread_t t;
	int b;

	g.a = open_dev();
	b = open_dev();
	ASSERT_LE(0, g.a);
	ASSERT_LE(0, b);
	g.bdom = domain_of(b);
	free0 = info_of(g.a).pool_free;
	for (unsigned int i = 0; i < n; i++) {
		ASSERT_EQ(0, alloc(g.a, PAGE, &reg));
		g.handle = reg.handle;
		g.token = 0;
		g.round = i;
		ASSERT_EQ(0, pthread_barrier_init(&g.go, NULL, 2));
		ASSERT_EQ(0, pthread_create(&t, NULL, gf_granter, &g));
		pthread_barrier_wait(&g.go);
		/* Some rounds give GRANT (the longer call) a head start. */
		if (i % 4 == 1)
			usleep(i % 50);
		else if (i & 1)
			sched_yield();
		g.free_ret = release(g.a, g.handle);
		pthread_join(t, NULL);
		pthread_barrier_destroy(&g.go);
		if (g.free_ret || (g.grant_ret && g.grant_ret != -ENOENT))
			bad++;
		granted += !g.grant_ret;
		if (!g.grant_ret && !share_import(b, g.token, &im)) {
			left++;
			release(b, im.handle);
		}
		if (info_of(g.a).pool_free != free0)
			left++;
	}
	printf("# grant_racing_free: %u rounds, %u grants made first\n", n,
	       granted);
	printf("# METADEF-FIGURE races_run %u\n", n);
	EXPECT_EQ(0, bad);
	EXPECT_EQ(0, left);
	close(g.a);
	close(b);
	EXPECT_EQ(0, leaks_after(_metadata));
}

/*
 * An IMPORT whose answer cannot be copied out gives its grant back. The
 * answer goes to a page that userfaultfd write-protects, so the IMPORT
 * stops in its copy-out with the import made; meanwhile the owner FREEs
 * the region, then the page is unmapped and the fault woken, and the
 * copy-out fails. The grant must not come back for a region nobody can
 * revoke any more: the token imports nothing, the memory is free.
 */
struct iu_call {
	int fd;
	void *arg;
	int ret;
};

static void *iu_importer(void *arg)
{
	struct iu_call *c = arg;

	c->ret = ioctl(c->fd, METADEF_IOC_IMPORT, c->arg) ? -errno : 0;
	return NULL;
}

static int uffd_wp_open(void)
{
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURE_PAGEFAULT_FLAG_WP,
	};
	int fd = syscall(SYS_userfaultfd, O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (ioctl(fd, UFFDIO_API, &api) ||
	    !(api.features & UFFD_FEATURE_PAGEFAULT_FLAG_WP)) {
		close(fd);
		return -1;
	}
	return fd;
}

TEST(import_undo_after_free_gives_no_grant_back)
{
	struct uffdio_writeprotect wp;
	struct uffdio_register reg_wp;
	struct uffdio_range range;
	struct metadef_import im;
	struct metadef_alloc reg;
	struct uffd_msg msg;
	struct iu_call c;
	uint64_t free0, tok;
	int a, b, uffd;
	char *pages;
	pthread_t t;

	uffd = uffd_wp_open();
	if (uffd < 0)
		SKIP(return, "no userfaultfd write-protection here");
	a = open_dev();
	b = open_dev();
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	free0 = info_of(a).pool_free;
	ASSERT_EQ(0, alloc(a, PAGE, &reg));
	ASSERT_EQ(0, grant_to(a, reg.handle, b, METADEF_SHARE_READ, &tok));

	/* The argument straddles two pages; the second is write-protected. */
	pages = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, pages);
	memset(pages, 0, 2 * PAGE);
	c.arg = pages + PAGE - 16;
	memset(&im, 0, sizeof(im));
	im.token = tok;
	memcpy(c.arg, &im, sizeof(im));
	memset(&reg_wp, 0, sizeof(reg_wp));
	reg_wp.range.start = (uintptr_t)pages + PAGE;
	reg_wp.range.len = PAGE;
	reg_wp.mode = UFFDIO_REGISTER_MODE_WP;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg_wp))
		SKIP(return, "cannot register for write-protection: %s",
		     strerror(errno));
	memset(&wp, 0, sizeof(wp));
	wp.range = reg_wp.range;
	wp.mode = UFFDIO_WRITEPROTECT_MODE_WP;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_WRITEPROTECT, &wp));

	c.fd = b;
	c.ret = 1;
	ASSERT_EQ(0, pthread_create(&t, NULL, iu_importer, &c));
	/* The IMPORT is made and stuck in its copy-out. */
	ASSERT_EQ(sizeof(msg), read(uffd, &msg, sizeof(msg)));
	ASSERT_EQ(UFFD_EVENT_PAGEFAULT, msg.event);
	EXPECT_EQ(0, release(a, reg.handle));
	/* Its answer's page goes; the woken fault fails the copy-out. */
	ASSERT_EQ(0, munmap(pages + PAGE, PAGE));
	range = reg_wp.range;
	ioctl(uffd, UFFDIO_WAKE, &range);
	pthread_join(t, NULL);
	EXPECT_EQ(-EFAULT, c.ret);

	EXPECT_EQ(-ENOENT, share_import(b, tok, &im));
	EXPECT_EQ(free0, info_of(a).pool_free);
	munmap(pages, PAGE);
	close(uffd);
	close(a);
	close(b);
	EXPECT_EQ(0, leaks_after(_metadata));
}

/*
 * Handle numbers are reused after FREE (the lowest free one): a reused
 * number names the new object only. The importer's dropped import
 * number, now its own region, is not touched by the owner's REVOKE; the
 * owner's reused number revokes the new region's imports, not the old
 * one's.
 */
TEST(reused_handles_name_the_new_object_only)
{
	struct metadef_alloc reg, reg2, mine;
	struct metadef_import im, im2;
	int a = open_dev(), b = open_dev();
	unsigned char *bp, *old;
	uint64_t tok;

	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_EQ(0, alloc(a, PAGE, &reg));
	ASSERT_EQ(0, grant_to(a, reg.handle, b, METADEF_SHARE_READ, &tok));
	ASSERT_EQ(0, share_import(b, tok, &im));
	ASSERT_EQ(0, release(b, im.handle));
	/* The importer's number comes back as its own region. */
	ASSERT_EQ(0, alloc(b, PAGE, &mine));
	ASSERT_EQ(im.handle, mine.handle);
	bp = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, b,
		  mine.mmap_offset);
	ASSERT_NE(MAP_FAILED, bp);
	bp[0] = 0x42;
	EXPECT_EQ(0, share_revoke(a, reg.handle, domain_of(b)));
	EXPECT_EQ(0, share_revoke(a, reg.handle, 0));
	EXPECT_EQ(0x42, bp[0]);
	EXPECT_EQ(0, copy(b, mine.dev_va + 1, mine.dev_va, 1));
	EXPECT_EQ(0x42, bp[1]);

	/* The owner's number comes back as another region. */
	ASSERT_EQ(0, grant_to(a, reg.handle, b, METADEF_SHARE_READ, &tok));
	ASSERT_EQ(0, share_import(b, tok, &im));
	old = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, b, im.mmap_offset);
	ASSERT_NE(MAP_FAILED, old);
	ASSERT_EQ(0, release(a, reg.handle));
	ASSERT_EQ(0, alloc(a, PAGE, &reg2));
	ASSERT_EQ(reg.handle, reg2.handle);
	ASSERT_EQ(0, grant_to(a, reg2.handle, b, METADEF_SHARE_READ, &tok));
	ASSERT_EQ(0, share_import(b, tok, &im2));
	/* Revoking by the reused number takes the new import only. */
	EXPECT_EQ(0, share_revoke(a, reg2.handle, 0));
	EXPECT_EQ(-EFAULT, copy(b, mine.dev_va, im2.dev_va, 1));
	EXPECT_EQ(0, copy(b, mine.dev_va, im.dev_va, 1));
	EXPECT_EQ(0, old[0]);
	munmap(old, PAGE);
	munmap(bp, PAGE);
	EXPECT_EQ(0, release(b, im.handle));
	EXPECT_EQ(0, release(b, im2.handle));
	EXPECT_EQ(0, release(b, mine.handle));
	EXPECT_EQ(0, release(a, reg2.handle));
	close(a);
	close(b);
	EXPECT_EQ(0, leaks_after(_metadata));
}

/* ------------------------------------------- stale mappings */

/*
 * An importer's mapping after REVOKE: the kernel's own accesses through
 * it (a write(2) from it, a read(2) into it, /proc/self/mem,
 * process_vm_readv) fail, and so does a forked child's touch; the
 * memory under it is not handed out again while it is mapped.
 */
TEST(revoked_mapping_is_dead_for_the_kernel_too)
{
	struct metadef_alloc reg, other;
	struct metadef_import im;
	int a = open_dev(), b = open_dev();
	int pipefd[2], zero, mem, status;
	unsigned char *ap, *bp, buf[64];
	struct iovec local, remote;
	uint64_t tok, free0;
	pid_t child;
	char go;

	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	free0 = info_of(a).pool_free;
	ASSERT_EQ(0, alloc(a, 2 * PAGE, &reg));
	ap = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, a,
		  reg.mmap_offset);
	ASSERT_NE(MAP_FAILED, ap);
	memset(ap, 0x3c, 2 * PAGE);
	ASSERT_EQ(0, grant_to(a, reg.handle, b, METADEF_SHARE_READ |
			      METADEF_SHARE_WRITE, &tok));
	ASSERT_EQ(0, share_import(b, tok, &im));
	bp = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, b,
		  im.mmap_offset);
	ASSERT_NE(MAP_FAILED, bp);
	ASSERT_EQ(0x3c, bp[PAGE]);
	ASSERT_EQ(0, pipe(pipefd));

	/* A child with the mapping, waiting for the revoke. */
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		catch_faults();
		close(pipefd[1]);
		if (read(pipefd[0], &go, 1) != 1)
			_exit(2);
		_exit(peek(bp) == -SIGBUS && peek(bp + PAGE) == -SIGBUS ?
		      0 : 1);
	}
	close(pipefd[0]);
	ASSERT_EQ(0, share_revoke(a, reg.handle, domain_of(b)));
	ASSERT_EQ(1, write(pipefd[1], "x", 1));
	close(pipefd[1]);
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	/* The kernel reading from it for write(2). */
	ASSERT_EQ(0, pipe(pipefd));
	errno = 0;
	EXPECT_EQ(-1, write(pipefd[1], bp, 64));
	EXPECT_EQ(EFAULT, errno);
	/* The kernel writing into it for read(2): nothing lands. */
	zero = open("/dev/zero", O_RDONLY);
	ASSERT_LE(0, zero);
	errno = 0;
	EXPECT_EQ(-1, read(zero, bp + PAGE, 64));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(0x3c, ap[PAGE]);
	close(zero);
	/* /proc/self/mem and process_vm_readv reach nothing either. */
	mem = open("/proc/self/mem", O_RDONLY);
	if (mem >= 0) {
		EXPECT_GT(0, pread(mem, buf, sizeof(buf), (off_t)bp));
		close(mem);
	}
	local.iov_base = buf;
	local.iov_len = sizeof(buf);
	remote.iov_base = bp;
	remote.iov_len = sizeof(buf);
	EXPECT_GT(0, process_vm_readv(getpid(), &local, 1, &remote, 1, 0));
	EXPECT_EQ(-EFAULT, copy(b, im.dev_va, im.dev_va + PAGE, 64));

	/* The owner frees: the stale mapping still pins the memory. */
	munmap(ap, 2 * PAGE);
	ASSERT_EQ(0, release(a, reg.handle));
	EXPECT_EQ(free0 - 2 * PAGE, info_of(a).pool_free);
	ASSERT_EQ(0, alloc(a, 2 * PAGE, &other));
	EXPECT_NE(reg.dev_va, other.dev_va);
	ASSERT_EQ(0, release(a, other.handle));
	/* Its last mapping gone, it is. */
	munmap(bp, 2 * PAGE);
	EXPECT_EQ(free0, info_of(a).pool_free);
	close(pipefd[0]);
	close(pipefd[1]);
	close(a);
	close(b);
	EXPECT_EQ(0, leaks_after(_metadata));
}

/*
 * A dma-buf kept after FREE, close(2) of the domain and the parent's own
 * mapping and descriptor: a forked child still reads and writes the
 * region through its mapping, and the memory comes back when it exits.
 */
TEST(dmabuf_outlives_the_domain_and_the_parent)
{
	struct metadef_alloc reg;
	unsigned char *ap, *dp;
	int a = open_dev(), buf, status, pipefd[2];
	uint64_t free0;
	pid_t child;
	char go;

	ASSERT_LE(0, a);
	free0 = info_of(a).pool_free;
	ASSERT_EQ(0, alloc(a, PAGE, &reg));
	ap = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, a,
		  reg.mmap_offset);
	ASSERT_NE(MAP_FAILED, ap);
	memset(ap, 0x77, PAGE);
	munmap(ap, PAGE);
	ASSERT_EQ(0, export(a, reg.handle, METADEF_EXPORT_RDWR |
			    METADEF_EXPORT_CLOEXEC, &buf));
	EXPECT_EQ(FD_CLOEXEC, fcntl(buf, F_GETFD) & FD_CLOEXEC);
	ASSERT_EQ(0, release(a, reg.handle));
	close(a);
	/* Private, longer than the region, or past it: refused. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE, buf, 0));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 2 * PAGE, PROT_READ, MAP_SHARED,
				   buf, 0));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ, MAP_SHARED, buf,
				   PAGE));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ, MAP_SHARED, buf,
				   (off_t)((1ULL << 63) - PAGE)));
	dp = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, buf, 0);
	ASSERT_NE(MAP_FAILED, dp);
	ASSERT_EQ(0, pipe(pipefd));
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		close(pipefd[1]);
		close(buf);
		if (read(pipefd[0], &go, 1) != 1)
			_exit(2);
		for (size_t i = 0; i < PAGE; i++)
			if (dp[i] != 0x77)
				_exit(1);
		dp[0] = 0x78;
		_exit(dp[0] == 0x78 ? 0 : 1);
	}
	close(pipefd[0]);
	munmap(dp, PAGE);
	close(buf);
	ASSERT_EQ(1, write(pipefd[1], "x", 1));
	close(pipefd[1]);
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	a = open_dev();
	ASSERT_LE(0, a);
	EXPECT_EQ(free0, info_of(a).pool_free);
	close(a);
	EXPECT_EQ(0, leaks_after(_metadata));
}

/* An EXPORT that finds no free descriptor leaves nothing behind. */
TEST(export_without_a_free_fd_changes_nothing)
{
	struct rlimit old, low;
	struct metadef_alloc reg;
	int a = open_dev(), buf = -1, fds, regions;
	uint64_t free0;

	ASSERT_LE(0, a);
	free0 = info_of(a).pool_free;
	ASSERT_EQ(0, alloc(a, PAGE, &reg));
	regions = nr_regions();
	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &old));
	fds = count_fds();
	/* Room for exactly the descriptors open now. */
	low = old;
	low.rlim_cur = 0;
	for (int fd = 0; fd < 1024; fd++)
		if (fcntl(fd, F_GETFD) != -1)
			low.rlim_cur = fd + 1;
	while ((int)low.rlim_cur > fds) {
		/* Fill the holes below the highest open descriptor. */
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (fd < 0 || fd >= (int)low.rlim_cur) {
			if (fd >= 0)
				close(fd);
			break;
		}
		fds++;
	}
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &low));
	EXPECT_EQ(-EMFILE, export(a, reg.handle, METADEF_EXPORT_RDWR, &buf));
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &old));
	EXPECT_EQ(regions, nr_regions());
	/* The region is not held by a dma-buf: FREE gives it back. */
	ASSERT_EQ(0, release(a, reg.handle));
	EXPECT_EQ(free0, info_of(a).pool_free);
	close(a);
	EXPECT_EQ(0, leaks_after(_metadata));
}

/* ------------------------------------------------- numeric edges */

/* Nothing allocated, charged or mapped since @free0. */
#define EXPECT_UNCHANGED(fd, free0)					\
	do {								\
		EXPECT_EQ(free0, info_of(fd).pool_free);		\
		EXPECT_EQ(0, info_of(fd).domain_used);			\
	} while (0)

static int alloc_raw(int fd, struct metadef_alloc *a)
{
	return ioctl(fd, METADEF_IOC_ALLOC, a) ? -errno : 0;
}

TEST(alloc_numeric_edges)
{
	static const uint64_t sizes[] = {
		~0ULL, ~0ULL - PAGE + 2, 1ULL << 63, (1ULL << 63) + 1,
		~0ULL - (PAGE - 1),
	};
	int fd = open_dev();
	struct metadef_alloc a;
	uint64_t free0, psize;

	ASSERT_LE(0, fd);
	free0 = info_of(fd).pool_free;
	psize = info_of(fd).pool_size;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		EXPECT_EQ(-ENOMEM, alloc(fd, sizes[i], &a));
		EXPECT_UNCHANGED(fd, free0);
	}
	EXPECT_EQ(-ENOMEM, alloc(fd, psize + 1, &a));
	EXPECT_UNCHANGED(fd, free0);
	/* Alignments: powers of two past the pool, and not powers of two. */
	memset(&a, 0, sizeof(a));
	a.size = PAGE;
	a.align = 1ULL << 63;
	EXPECT_EQ(-ENOMEM, alloc_raw(fd, &a));
	a.align = ~0ULL;
	EXPECT_EQ(-EINVAL, alloc_raw(fd, &a));
	a.align = 3 * PAGE;
	EXPECT_EQ(-EINVAL, alloc_raw(fd, &a));
	EXPECT_UNCHANGED(fd, free0);
	/* Ranges at the top of the u64 space. */
	memset(&a, 0, sizeof(a));
	a.size = PAGE;
	a.flags = METADEF_ALLOC_RANGE;
	a.range_start = ~0ULL - 2 * PAGE + 1;
	a.range_end = ~0ULL - PAGE + 1;
	EXPECT_EQ(-EINVAL, alloc_raw(fd, &a));
	a.range_start = psize;
	a.range_end = ~0ULL - PAGE + 1;
	EXPECT_EQ(-EINVAL, alloc_raw(fd, &a));
	a.range_start = 0;
	a.range_end = ~0ULL;		/* not page-aligned */
	EXPECT_EQ(-EINVAL, alloc_raw(fd, &a));
	a.range_start = PAGE;
	a.range_end = PAGE;		/* empty */
	EXPECT_EQ(-EINVAL, alloc_raw(fd, &a));
	a.flags = METADEF_ALLOC_RANGE | METADEF_ALLOC_TOPDOWN;
	a.range_start = psize - PAGE;
	a.range_end = ~0ULL - PAGE + 1;	/* past the pool: its end */
	a.size = 2 * PAGE;
	EXPECT_EQ(-ENOMEM, alloc_raw(fd, &a));
	EXPECT_UNCHANGED(fd, free0);
	a.size = PAGE;
	ASSERT_EQ(0, alloc_raw(fd, &a));
	EXPECT_EQ(PAGE, a.alloc_size);
	EXPECT_EQ(0, release(fd, a.handle));
	/* Every flag bit the uAPI does not know. */
	for (int bit = 2; bit < 32; bit++) {
		memset(&a, 0, sizeof(a));
		a.size = PAGE;
		a.flags = 1u << bit;
		EXPECT_EQ(-EINVAL, alloc_raw(fd, &a));
	}
	EXPECT_UNCHANGED(fd, free0);
	close(fd);
	EXPECT_EQ(0, leaks_after(_metadata));
}

/*
 * A malformed ALLOC is EINVAL whatever the domain's quota: it is refused
 * before anything is charged (or reported as a quota event).
 */
TEST(malformed_alloc_at_quota_is_einval)
{
	struct metadef_quota q = { .quota = 0 };
	int fd = open_dev();
	struct metadef_alloc a;
	uint64_t psize;

	ASSERT_LE(0, fd);
	psize = info_of(fd).pool_size;
	ASSERT_EQ(0, ioctl(fd, METADEF_IOC_SET_QUOTA, &q));
	EXPECT_EQ(-EDQUOT, alloc(fd, PAGE, &a));
	memset(&a, 0, sizeof(a));
	a.size = PAGE;
	a.flags = METADEF_ALLOC_RANGE;
	a.range_start = psize;
	a.range_end = psize + PAGE;
	EXPECT_EQ(-EINVAL, alloc_raw(fd, &a));
	a.range_start = ~0ULL - 2 * PAGE + 1;
	a.range_end = ~0ULL - PAGE + 1;
	EXPECT_EQ(-EINVAL, alloc_raw(fd, &a));
	EXPECT_EQ(0, info_of(fd).domain_used);
	close(fd);
	EXPECT_EQ(0, leaks_after(_metadata));
}

TEST(copy_and_mmap_numeric_edges)
{
	int fd = open_dev();
	struct metadef_alloc a, b;
	struct metadef_copy c;
	unsigned char *p;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, alloc(fd, 2 * PAGE, &a));
	ASSERT_EQ(0, alloc(fd, 2 * PAGE, &b));
	p = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 b.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	memset(p, 0x5e, 2 * PAGE);

	/* Ranges that wrap around 2^64 are malformed. */
	EXPECT_EQ(-EINVAL, copy(fd, a.dev_va, ~0ULL - PAGE + 1, PAGE));
	EXPECT_EQ(-EINVAL, copy(fd, ~0ULL, a.dev_va, 2));
	EXPECT_EQ(-EINVAL, copy(fd, a.dev_va, b.dev_va, ~0ULL));
	/* Ranges that do not wrap but run off the region fault. */
	EXPECT_EQ(-EFAULT, copy(fd, a.dev_va, ~0ULL - PAGE, PAGE));
	EXPECT_EQ(-EFAULT, copy(fd, ~0ULL - PAGE, b.dev_va, PAGE));
	EXPECT_EQ(-EFAULT, copy(fd, a.dev_va, b.dev_va, ~0ULL - b.dev_va));
	EXPECT_EQ(-EFAULT, copy(fd, a.dev_va, b.dev_va, 2 * PAGE + 1));
	EXPECT_EQ(-EFAULT, copy(fd, b.dev_va + 1, a.dev_va, 2 * PAGE));
	EXPECT_EQ(-EFAULT, copy(fd, 0, b.dev_va, 1));
	/* Unknown flags, pad, reserved: refused, nothing copied. */
	for (int bit = 0; bit < 32; bit++) {
		memset(&c, 0, sizeof(c));
		c.src_va = b.dev_va;
		c.dst_va = a.dev_va;
		c.size = PAGE;
		c.flags = 1u << bit;
		EXPECT_EQ(-1, ioctl(fd, METADEF_IOC_COPY, &c));
		EXPECT_EQ(EINVAL, errno);
	}
	memset(&c, 0, sizeof(c));
	c.src_va = b.dev_va;
	c.dst_va = a.dev_va;
	c.size = PAGE;
	c.pad = 1;
	EXPECT_EQ(-1, ioctl(fd, METADEF_IOC_COPY, &c));
	c.pad = 0;
	c.reserved[1] = 1ULL << 63;
	EXPECT_EQ(-1, ioctl(fd, METADEF_IOC_COPY, &c));
	munmap(p, 2 * PAGE);
	p = mmap(NULL, 2 * PAGE, PROT_READ, MAP_SHARED, fd, a.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, p[0]);
	EXPECT_EQ(0, p[2 * PAGE - 1]);
	munmap(p, 2 * PAGE);

	/* A length that is not a page multiple covers whole pages. */
	p = mmap(NULL, PAGE + 1, PROT_READ, MAP_SHARED, fd, b.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0x5e, p[2 * PAGE - 1]);
	munmap(p, PAGE + 1);
	/* Past the region, in its 1 TiB offset window, or nowhere. */
	errno = 0;
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 2 * PAGE + 1, PROT_READ, MAP_SHARED,
				   fd, b.mmap_offset));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd,
				   b.mmap_offset + 2 * PAGE));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd,
				   b.mmap_offset + (1ULL << 40) - PAGE));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, 0));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd,
				   (off_t)((1ULL << 63) - PAGE)));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd,
				   (off_t)(~0ULL - PAGE + 1)));
	/* A private (copy-on-write) mapping of device memory. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, fd,
				   b.mmap_offset));
	EXPECT_EQ(0, release(fd, a.handle));
	EXPECT_EQ(0, release(fd, b.handle));
	close(fd);
	EXPECT_EQ(0, leaks_after(_metadata));
}

/*
 * Every pad, reserved word and unknown flag bit of the sharing and
 * export commands: EINVAL, and the state is exactly as before (the
 * grant still pending, the import still live, no descriptor).
 */
TEST(refused_sharing_calls_change_nothing)
{
	int a = open_dev(), b = open_dev(), fds, buf;
	struct metadef_grant g;
	struct metadef_import im, im2;
	struct metadef_revoke rv;
	struct metadef_export e;
	struct metadef_free f;
	struct metadef_alloc reg, mine;
	uint64_t tok;

	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_EQ(0, alloc(a, PAGE, &reg));
	ASSERT_EQ(0, alloc(b, PAGE, &mine));

	/* GRANT: flags beyond READ|WRITE, pad, reserved. No grant made. */
	for (int bit = 2; bit < 34; bit++) {
		memset(&g, 0, sizeof(g));
		g.handle = reg.handle;
		g.domain_id = domain_of(b);
		g.flags = METADEF_SHARE_READ;
		if (bit < 32)
			g.flags |= 1u << bit;
		else if (bit == 32)
			g.pad = 1;
		else
			g.reserved[0] = 1;
		errno = 0;
		EXPECT_EQ(-1, ioctl(a, METADEF_IOC_GRANT, &g));
		EXPECT_EQ(EINVAL, errno);
		EXPECT_EQ(0, g.token);
	}
	EXPECT_EQ(-EINVAL, grant_to(a, reg.handle, b, METADEF_SHARE_WRITE,
				    &tok));
	EXPECT_EQ(-EINVAL, grant_to(a, reg.handle, a, METADEF_SHARE_READ,
				    &tok));
	EXPECT_EQ(-ENOENT, share_grant(a, reg.handle, 0, METADEF_SHARE_READ,
				       &tok));
	EXPECT_EQ(-ENOENT, share_grant(a, reg.handle, ~0u, METADEF_SHARE_READ,
				       &tok));
	EXPECT_EQ(-ENOENT, share_grant(a, 0, domain_of(b), METADEF_SHARE_READ,
				       &tok));
	EXPECT_EQ(-ENOENT, share_grant(a, ~0u, domain_of(b),
				       METADEF_SHARE_READ, &tok));

	ASSERT_EQ(0, grant_to(a, reg.handle, b, METADEF_SHARE_READ |
			      METADEF_SHARE_WRITE, &tok));
	/* IMPORT: flags, reserved; a token off by one. Still pending. */
	for (int bit = 0; bit < 34; bit++) {
		memset(&im, 0, sizeof(im));
		im.token = tok;
		if (bit < 32)
			im.flags = 1u << bit;
		else
			im.reserved[bit - 32] = 1;
		errno = 0;
		EXPECT_EQ(-1, ioctl(b, METADEF_IOC_IMPORT, &im));
		EXPECT_EQ(EINVAL, errno);
	}
	EXPECT_EQ(-ENOENT, share_import(b, tok + 1, &im));
	EXPECT_EQ(-ENOENT, share_import(b, tok ^ (1ULL << 63), &im));
	EXPECT_EQ(-ENOENT, share_import(b, 0, &im));
	ASSERT_EQ(0, share_import(b, tok, &im));
	/* The same token again; the region a second time (the grant stays). */
	EXPECT_EQ(-ENOENT, share_import(b, tok, &im2));
	ASSERT_EQ(0, grant_to(a, reg.handle, b, METADEF_SHARE_READ, &tok));
	EXPECT_EQ(-EEXIST, share_import(b, tok, &im2));
	EXPECT_EQ(-EEXIST, share_import(b, tok, &im2));

	/* REVOKE: flags, pad, reserved. The import stays live. */
	for (int bit = 0; bit < 35; bit++) {
		memset(&rv, 0, sizeof(rv));
		rv.handle = reg.handle;
		if (bit < 32)
			rv.flags = 1u << bit;
		else if (bit == 32)
			rv.pad = 1;
		else
			rv.reserved[bit - 33] = 1;
		errno = 0;
		EXPECT_EQ(-1, ioctl(a, METADEF_IOC_REVOKE, &rv));
		EXPECT_EQ(EINVAL, errno);
	}
	/* The importer cannot revoke, nor an unknown handle. */
	EXPECT_EQ(-EPERM, share_revoke(b, im.handle, 0));
	EXPECT_EQ(-ENOENT, share_revoke(a, ~0u, 0));
	EXPECT_EQ(0, copy(b, mine.dev_va, im.dev_va, PAGE));
	EXPECT_EQ(0, copy(b, im.dev_va, mine.dev_va, PAGE));

	/* FREE: flags, reserved. The handle stays. */
	for (int bit = 0; bit < 34; bit++) {
		memset(&f, 0, sizeof(f));
		f.handle = im.handle;
		if (bit < 32)
			f.flags = 1u << bit;
		else
			f.reserved[bit - 32] = 1;
		errno = 0;
		EXPECT_EQ(-1, ioctl(b, METADEF_IOC_FREE, &f));
		EXPECT_EQ(EINVAL, errno);
	}
	EXPECT_EQ(0, copy(b, mine.dev_va, im.dev_va, PAGE));

	/* EXPORT: flags, pad, reserved; an import. No descriptor. */
	fds = count_fds();
	for (int bit = 2; bit < 35; bit++) {
		memset(&e, 0, sizeof(e));
		e.handle = reg.handle;
		if (bit < 32)
			e.flags = 1u << bit;
		else if (bit == 32)
			e.pad = 1;
		else
			e.reserved[bit - 33] = 1;
		errno = 0;
		EXPECT_EQ(-1, ioctl(a, METADEF_IOC_EXPORT_DMABUF, &e));
		EXPECT_EQ(EINVAL, errno);
	}
	EXPECT_EQ(-EPERM, export(b, im.handle, 0, &buf));
	EXPECT_EQ(fds, count_fds());

	EXPECT_EQ(0, share_revoke(a, reg.handle, 0));
	EXPECT_EQ(-EFAULT, copy(b, mine.dev_va, im.dev_va, PAGE));
	EXPECT_EQ(-ENOENT, share_import(b, tok, &im2));
	/* A revoked import's handle is still the importer's to drop. */
	EXPECT_EQ(0, release(b, im.handle));
	EXPECT_EQ(-ENOENT, release(b, im.handle));
	EXPECT_EQ(0, release(a, reg.handle));
	EXPECT_EQ(0, release(b, mine.handle));
	close(a);
	close(b);
	EXPECT_EQ(0, leaks_after(_metadata));
}

/*
 * User pointers that are NULL, in the kernel's half, or unmapped, for
 * every command: EFAULT and nothing done.
 */
TEST(bad_user_pointers_change_nothing)
{
	static const unsigned long cmds[] = {
		METADEF_IOC_INFO, METADEF_IOC_ALLOC, METADEF_IOC_FREE,
		METADEF_IOC_SET_QUOTA, METADEF_IOC_COPY, METADEF_IOC_GRANT,
		METADEF_IOC_IMPORT, METADEF_IOC_REVOKE,
		METADEF_IOC_EXPORT_DMABUF,
	};
	int fd = open_dev(), fds;
	struct metadef_alloc reg;
	uint64_t free0;
	void *hole;
	void *ptrs[4];

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, alloc(fd, PAGE, &reg));
	free0 = info_of(fd).pool_free;
	hole = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, hole);
	ASSERT_EQ(0, munmap(hole, PAGE));
	ptrs[0] = NULL;
	ptrs[1] = (void *)0xffffffff81000000UL;
	ptrs[2] = hole;
	ptrs[3] = (void *)(~0UL - 8);
	fds = count_fds();
	for (size_t c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++)
		for (size_t i = 0; i < 4; i++) {
			errno = 0;
			EXPECT_EQ(-1, ioctl(fd, cmds[c], ptrs[i]));
			EXPECT_EQ(EFAULT, errno);
		}
	EXPECT_EQ(fds, count_fds());
	EXPECT_EQ(free0, info_of(fd).pool_free);
	EXPECT_EQ(reg.alloc_size, info_of(fd).domain_used);
	EXPECT_EQ(0, release(fd, reg.handle));
	close(fd);
	EXPECT_EQ(0, leaks_after(_metadata));
}

/* ------------------------------------------------------ races */

struct ff_race {
	int fd;
	uint32_t handle;
	pthread_barrier_t go;
	int ret[2];
};

struct ff_arg {
	struct ff_race *r;
	int i;
};

static void *ff_freer(void *arg)
{
	struct ff_arg *a = arg;

	pthread_barrier_wait(&a->r->go);
	a->r->ret[a->i] = release(a->r->fd, a->r->handle);
	return NULL;
}

/* Two FREEs of one handle: exactly one succeeds, the region goes once. */
TEST(two_threads_free_one_handle)
{
	unsigned int n = rounds(), bad = 0;
	struct metadef_alloc reg;
	struct ff_arg args[2];
	struct ff_race r;
	pthread_t t[2];
	uint64_t free0;

	r.fd = open_dev();
	ASSERT_LE(0, r.fd);
	free0 = info_of(r.fd).pool_free;
	for (unsigned int i = 0; i < n; i++) {
		ASSERT_EQ(0, alloc(r.fd, PAGE, &reg));
		r.handle = reg.handle;
		ASSERT_EQ(0, pthread_barrier_init(&r.go, NULL, 2));
		for (int k = 0; k < 2; k++) {
			args[k].r = &r;
			args[k].i = k;
			ASSERT_EQ(0, pthread_create(&t[k], NULL, ff_freer,
						    &args[k]));
		}
		pthread_join(t[0], NULL);
		pthread_join(t[1], NULL);
		pthread_barrier_destroy(&r.go);
		if (!((r.ret[0] == 0 && r.ret[1] == -ENOENT) ||
		      (r.ret[1] == 0 && r.ret[0] == -ENOENT)) ||
		    info_of(r.fd).pool_free != free0)
			bad++;
	}
	printf("# METADEF-FIGURE races_run %u\n", n);
	EXPECT_EQ(0, bad);
	close(r.fd);
	EXPECT_EQ(0, leaks_after(_metadata));
}

struct rc_race {
	int fd, other;
	uint32_t other_dom;
	volatile int stop;
	unsigned int calls, ebadf;
};

/* Allocate, map, grant and free on a descriptor that may close. */
static void *rc_worker(void *arg)
{
	struct rc_race *r = arg;

	while (!r->stop) {
		struct metadef_alloc a;
		uint64_t tok;
		void *p;
		int ret = alloc(r->fd, PAGE, &a);

		r->calls++;
		if (ret == -EBADF) {
			r->ebadf++;
			continue;
		}
		if (ret)
			continue;
		p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED,
			 r->fd, a.mmap_offset);
		share_grant(r->fd, a.handle, r->other_dom, METADEF_SHARE_READ,
			    &tok);
		if (p != MAP_FAILED)
			munmap(p, PAGE);
		release(r->fd, a.handle);
	}
	return NULL;
}

/*
 * ioctls and mmaps racing close(2) of their descriptor, and GRANTs to a
 * domain that closes: whatever the interleaving, everything is freed.
 */
TEST(ioctls_racing_close)
{
	unsigned int n = rounds() / 4 + 1, calls = 0;
	struct rc_race r;
	pthread_t t;

	for (unsigned int i = 0; i < n; i++) {
		memset(&r, 0, sizeof(r));
		r.fd = open_dev();
		r.other = open_dev();
		ASSERT_LE(0, r.fd);
		ASSERT_LE(0, r.other);
		r.other_dom = domain_of(r.other);
		ASSERT_EQ(0, pthread_create(&t, NULL, rc_worker, &r));
		usleep(i % 7 * 100);
		if (i & 1) {
			close(r.other);
			close(r.fd);
		} else {
			close(r.fd);
			close(r.other);
		}
		usleep(200);
		r.stop = 1;
		pthread_join(t, NULL);
		calls += r.calls;
	}
	printf("# ioctls_racing_close: %u rounds, %u calls\n", n, calls);
	printf("# METADEF-FIGURE races_run %u\n", n);
	EXPECT_EQ(0, leaks_after(_metadata));
}

struct mr_race {
	unsigned char *p;
	size_t len;
	volatile int stop;
	unsigned int touches, faults, wrong;
};

static void *mr_toucher(void *arg)
{
	struct mr_race *r = arg;

	while (!r->stop) {
		for (size_t off = 0; off < r->len; off += PAGE) {
			unsigned char v;
			int sig = touch(r->p + off, 0, 0, &v);

			__atomic_add_fetch(&r->touches, 1, __ATOMIC_RELAXED);
			if (sig)
				r->faults++;
			else if (v != (unsigned char)(off / PAGE + 1))
				r->wrong++;
		}
	}
	return NULL;
}

/*
 * Faults on a region's mapping while it is unmapped in part, moved and
 * mapped again: a touch reads the right page or faults, never another
 * page, and every piece's reference is dropped in the end.
 */
TEST(munmap_and_mremap_racing_faults)
{
	unsigned int n = rounds() / 8 + 1;
	struct metadef_alloc reg;
	struct mr_race r;
	unsigned char *p, *q;
	int fd = open_dev();
	pthread_t t;

	ASSERT_LE(0, fd);
	catch_faults();
	ASSERT_EQ(0, alloc(fd, 8 * PAGE, &reg));
	p = mmap(NULL, 8 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 reg.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	for (int i = 0; i < 8; i++)
		memset(p + i * PAGE, i + 1, PAGE);
	munmap(p, 8 * PAGE);
	/* A reserved window: the pieces come and go inside it only. */
	q = mmap(NULL, 16 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		 0);
	ASSERT_NE(MAP_FAILED, q);
	memset(&r, 0, sizeof(r));
	r.p = q;
	r.len = 8 * PAGE;
	ASSERT_EQ(0, pthread_create(&t, NULL, mr_toucher, &r));
	for (unsigned int i = 0; i < n; i++) {
		unsigned int seen;

		p = mmap(q, 8 * PAGE, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, fd, reg.mmap_offset);
		ASSERT_EQ(q, p);
		/* Let the toucher fault some pages in first. */
		seen = __atomic_load_n(&r.touches, __ATOMIC_RELAXED);
		for (int spin = 0; spin < 100000 &&
		     __atomic_load_n(&r.touches, __ATOMIC_RELAXED) < seen + 4;
		     spin++)
			sched_yield();
		/* A hole in the middle, then the tail moved past the end. */
		ASSERT_EQ(0, munmap(p + 3 * PAGE, PAGE));
		ASSERT_NE(MAP_FAILED, mremap(p + 6 * PAGE, 2 * PAGE, 2 * PAGE,
					     MREMAP_MAYMOVE | MREMAP_FIXED,
					     q + 12 * PAGE));
		/* Growing a device mapping is refused. */
		EXPECT_EQ(MAP_FAILED, mremap(p, 3 * PAGE, 4 * PAGE, 0));
		ASSERT_EQ(0, munmap(q + 12 * PAGE, 2 * PAGE));
		ASSERT_EQ(q, mmap(q, 16 * PAGE, PROT_NONE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
				  0));
	}
	r.stop = 1;
	pthread_join(t, NULL);
	munmap(q, 16 * PAGE);
	printf("# munmap_and_mremap_racing_faults: %u rounds, %u touches, %u faults\n",
	       n, r.touches, r.faults);
	printf("# METADEF-FIGURE races_run %u\n", n);
	EXPECT_LT(n, r.touches);
	EXPECT_EQ(0, r.wrong);
	EXPECT_EQ(0, release(fd, reg.handle));
	close(fd);
	EXPECT_EQ(0, leaks_after(_metadata));
}

TEST_HARNESS_MAIN
