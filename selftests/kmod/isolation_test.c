// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: the breaches an outside attack suite found, one test each, and
 * the limits that keep one user from exhausting the module:
 *
 *  - a CPU mapping is only as good as the import it was made through: a
 *    later read-only import does not make an old writable mapping usable;
 *  - an ALLOC or IMPORT whose answer cannot be copied out leaves nothing
 *    behind (and gives the grant back), however other threads of the same
 *    descriptor race it; no WARN on the way;
 *  - a huge ALLOC is refused before it is charged;
 *  - grants are bounded per domain and per user, pool bytes per user.
 *
 * The race-free cases fail before their fix on the first try; the two
 * races (a FREE of the handle an ALLOC is still answering, a huge ALLOC
 * against frees) reached the kernel's WARN within their rounds there.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/metadef.h>

#include "md_ioctl.h"
#include "kselftest_harness.h"

#define DEV "/dev/metadef"
#define PARAMS "/sys/module/metadef/parameters/"

static int open_dev(void)
{
	return open(DEV, O_RDWR | O_CLOEXEC);
}

/* Read or write a module parameter; 0 or -errno. */
static int param_get(const char *name, char *buf, size_t len)
{
	char path[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), PARAMS "%s", name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

static int param_set(const char *name, const char *val)
{
	char path[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), PARAMS "%s", name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n < 0 ? -errno : 0;
}

/*
 * Run @fn(@arg) in a child that has become nobody (outside the device's
 * group if @outsider); its exit status.
 */
static int as_nobody_in(int outsider, int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		if (become_nobody(outsider))
			_exit(99);
		_exit(fn(arg));
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int as_nobody(int (*fn)(void *), void *arg)
{
	return as_nobody_in(0, fn, arg);
}

/* 0 if /dev/metadef opens read-write, else errno. */
static int try_open(void *arg)
{
	int fd = open_dev();

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

/*
 * The module makes the node root-only; the udev rule (done by the VM's
 * init, which has no udev) gives it to group "metadef", mode 0660. A user
 * in the group opens it, a user outside does not.
 */
TEST(device_node_is_for_its_group)
{
	struct stat st;

	ASSERT_EQ(0, stat(DEV, &st));
	if (!st.st_gid)
		SKIP(return, "/dev/metadef has no group: no udev rule here");
	EXPECT_EQ(0660, st.st_mode & 07777);
	EXPECT_EQ(0, as_nobody_in(0, try_open, NULL));
	EXPECT_EQ(EACCES, as_nobody_in(1, try_open, NULL));
}

/* A page the kernel can read the argument from but not answer into. */
static void *readonly_arg(const void *arg, size_t size)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memcpy(p, arg, size);
	if (mprotect(p, 4096, PROT_READ)) {
		munmap(p, 4096);
		return NULL;
	}
	return p;
}

/*
 * An importer maps a read-write import writable; the import goes
 * (revoked, or dropped by the importer); the owner grants read-only and
 * the importer imports again. The old mapping must not write (or read)
 * the owner's memory: it was made through an import that is gone.
 */
FIXTURE(reimport) {
	int a, b;
	struct metadef_alloc reg;
	volatile char *ap;
};

FIXTURE_VARIANT(reimport) {
	int revoke;		/* the owner revokes, else the importer drops */
};

FIXTURE_VARIANT_ADD(reimport, revoked) { .revoke = 1 };
FIXTURE_VARIANT_ADD(reimport, dropped) { .revoke = 0 };

FIXTURE_SETUP(reimport)
{
	self->a = open_dev();
	self->b = open_dev();
	ASSERT_LE(0, self->a);
	ASSERT_LE(0, self->b);
	ASSERT_EQ(0, alloc(self->a, 4096, &self->reg));
	self->ap = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED,
			self->a, self->reg.mmap_offset);
	ASSERT_NE(MAP_FAILED, self->ap);
	self->ap[0] = 0x11;
}

FIXTURE_TEARDOWN(reimport)
{
	munmap((void *)self->ap, 4096);
	close(self->a);
	close(self->b);
}

/* Take the import @im away the way the variant says. */
static int take_away(int a, int b, uint32_t handle, uint32_t import_handle,
		     int by_revoke)
{
	if (by_revoke)
		return share_revoke(a, handle, domain_of(b));
	return release(b, import_handle);
}

TEST_F(reimport, old_writable_mapping_stays_dead)
{
	struct metadef_import im, im2;
	volatile char *bp, *bp2;
	uint64_t tok;

	ASSERT_EQ(0, share_grant(self->a, self->reg.handle, domain_of(self->b),
			   METADEF_SHARE_READ | METADEF_SHARE_WRITE, &tok));
	ASSERT_EQ(0, share_import(self->b, tok, &im));
	bp = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->b,
		  im.mmap_offset);
	ASSERT_NE(MAP_FAILED, bp);
	bp[1] = 0x22;			/* legitimately, under the RW import */
	EXPECT_EQ(0x22, self->ap[1]);

	ASSERT_EQ(0, take_away(self->a, self->b, self->reg.handle, im.handle,
			       variant->revoke));
	ASSERT_EQ(0, share_grant(self->a, self->reg.handle, domain_of(self->b),
			   METADEF_SHARE_READ, &tok));
	ASSERT_EQ(0, share_import(self->b, tok, &im2));

	/* Writing, even reading, through the old mapping dies. */
	EXPECT_EQ(1, touch_faults(bp, 1));
	EXPECT_EQ(1, touch_faults(bp, 0));
	EXPECT_EQ(0x11, self->ap[0]);
	/* The new import maps read-only, and reads. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				   MAP_SHARED, self->b, im2.mmap_offset));
	bp2 = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->b, im2.mmap_offset);
	ASSERT_NE(MAP_FAILED, bp2);
	EXPECT_EQ(0x11, bp2[0]);
	EXPECT_NE(0, mprotect((void *)bp2, 4096, PROT_READ | PROT_WRITE));
	munmap((void *)bp2, 4096);
	munmap((void *)bp, 4096);
}

/*
 * A mapping made read-only while the import was read-write keeps
 * VM_MAYWRITE; after the import is replaced by a read-only one, making it
 * writable must not give write access to the owner's memory.
 */
TEST_F(reimport, mprotect_after_downgrade_cannot_write)
{
	struct metadef_import im, im2;
	volatile char *bp;
	uint64_t tok;

	ASSERT_EQ(0, share_grant(self->a, self->reg.handle, domain_of(self->b),
			   METADEF_SHARE_READ | METADEF_SHARE_WRITE, &tok));
	ASSERT_EQ(0, share_import(self->b, tok, &im));
	bp = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->b, im.mmap_offset);
	ASSERT_NE(MAP_FAILED, bp);
	EXPECT_EQ(0x11, bp[0]);

	ASSERT_EQ(0, take_away(self->a, self->b, self->reg.handle, im.handle,
			       variant->revoke));
	ASSERT_EQ(0, share_grant(self->a, self->reg.handle, domain_of(self->b),
			   METADEF_SHARE_READ, &tok));
	ASSERT_EQ(0, share_import(self->b, tok, &im2));
	/* mprotect itself may succeed; no write may land. */
	if (!mprotect((void *)bp, 4096, PROT_READ | PROT_WRITE))
		EXPECT_EQ(1, touch_faults(bp, 1));
	EXPECT_EQ(0x11, self->ap[0]);
	munmap((void *)bp, 4096);
}

struct free_racer {
	int fd;
	atomic_int stop;
	atomic_long frees;
};

/* FREE the lowest handles, where an ALLOC or IMPORT in flight lands. */
static void *free_low_handles(void *arg)
{
	struct free_racer *fr = arg;

	while (!atomic_load(&fr->stop))
		for (uint32_t h = 1; h <= 4; h++)
			if (!release(fr->fd, h))
				atomic_fetch_add(&fr->frees, 1);
	return NULL;
}

#define COPYOUT_ROUNDS 2000

/*
 * ALLOC with the answer going into a read-only page: EFAULT, and no
 * region, no charge, no handle left behind, while another thread of the
 * same descriptor frees whatever handle it can find.
 */
TEST(alloc_copyout_fails_leaves_nothing)
{
	struct metadef_alloc a = { .size = 8192 };
	struct free_racer fr = { 0 };
	struct metadef_info info;
	struct dom_row row;
	pthread_t t;
	void *ro;
	int i, efault = 0;

	fr.fd = open_dev();
	ASSERT_LE(0, fr.fd);
	ro = readonly_arg(&a, sizeof(a));
	ASSERT_NE(NULL, ro);
	ASSERT_EQ(0, pthread_create(&t, NULL, free_low_handles, &fr));
	for (i = 0; i < COPYOUT_ROUNDS; i++) {
		errno = 0;
		if (ioctl(fr.fd, METADEF_IOC_ALLOC, ro) == -1 && errno == EFAULT)
			efault++;
	}
	atomic_store(&fr.stop, 1);
	pthread_join(t, NULL);
	TH_LOG("%d ALLOCs into a read-only answer, %d EFAULT, %ld racing FREEs succeeded",
	       COPYOUT_ROUNDS, efault, atomic_load(&fr.frees));
	EXPECT_EQ(COPYOUT_ROUNDS, efault);
	/* No FREE ever found a handle: none was published. */
	EXPECT_EQ(0, atomic_load(&fr.frees));
	info = info_of(fr.fd);
	EXPECT_EQ(0, info.domain_used);
	if (my_domains(0, &row) == 1)
		EXPECT_EQ(0, row.regions);
	/* The descriptor still works. */
	EXPECT_EQ(0, alloc(fr.fd, 4096, &a));
	EXPECT_EQ(1, a.handle);
	munmap(ro, 4096);
	close(fr.fd);
}

/*
 * IMPORT whose answer cannot be copied out: EFAULT, the import is undone
 * and the grant is pending again, so a second IMPORT with a good argument
 * takes it up.
 */
TEST(import_copyout_fails_gives_grant_back)
{
	struct metadef_import im = { 0 }, good;
	struct metadef_alloc reg;
	struct free_racer fr = { 0 };
	int a, i, efault = 0;
	pthread_t t;
	uint64_t tok;
	void *ro;

	a = open_dev();
	fr.fd = open_dev();
	ASSERT_LE(0, a);
	ASSERT_LE(0, fr.fd);
	ASSERT_EQ(0, alloc(a, 4096, &reg));
	ASSERT_EQ(0, share_grant(a, reg.handle, domain_of(fr.fd), METADEF_SHARE_READ,
			   &tok));
	im.token = tok;
	ro = readonly_arg(&im, sizeof(im));
	ASSERT_NE(NULL, ro);
	ASSERT_EQ(0, pthread_create(&t, NULL, free_low_handles, &fr));
	for (i = 0; i < COPYOUT_ROUNDS / 4; i++) {
		errno = 0;
		if (ioctl(fr.fd, METADEF_IOC_IMPORT, ro) == -1 && errno == EFAULT)
			efault++;
	}
	atomic_store(&fr.stop, 1);
	pthread_join(t, NULL);
	EXPECT_EQ(COPYOUT_ROUNDS / 4, efault);
	EXPECT_EQ(0, atomic_load(&fr.frees));
	/* The grant survived every failed answer. */
	ASSERT_EQ(0, share_import(fr.fd, tok, &good));
	EXPECT_EQ(reg.dev_va, good.dev_va);
	EXPECT_EQ(-ENOENT, share_import(fr.fd, tok, &good));
	munmap(ro, 4096);
	close(fr.fd);
	close(a);
}

struct churn {
	int fd;
	atomic_int stop;
};

static void *alloc_free_loop(void *arg)
{
	struct churn *c = arg;
	struct metadef_alloc a;

	while (!atomic_load(&c->stop))
		if (!alloc(c->fd, 4096, &a))
			release(c->fd, a.handle);
	return NULL;
}

/*
 * A size no pool holds is refused as ENOMEM before anything is charged:
 * charging 2^63 first made the domain's usage look negative to a racing
 * free (a WARN any user could reach).
 */
TEST(huge_alloc_is_refused_before_charging)
{
	static const uint64_t sizes[] = { 1ULL << 63, ~0ULL, ~0ULL - 4095,
					  1ULL << 62 };
	struct churn c = { 0 };
	struct metadef_alloc a;
	pthread_t t;
	int i, enomem = 0, rounds = 0;

	c.fd = open_dev();
	ASSERT_LE(0, c.fd);
	ASSERT_EQ(0, pthread_create(&t, NULL, alloc_free_loop, &c));
	for (i = 0; i < COPYOUT_ROUNDS; i++, rounds++)
		enomem += alloc(c.fd, sizes[i % 4], &a) == -ENOMEM;
	atomic_store(&c.stop, 1);
	pthread_join(t, NULL);
	EXPECT_EQ(rounds, enomem);
	EXPECT_EQ(0, info_of(c.fd).domain_used);
	close(c.fd);
}

/* The per-domain bound on pending grants, and that revoking frees room. */
TEST(grants_are_bounded_per_domain)
{
	struct metadef_alloc reg;
	char saved[32];
	uint64_t tok, last = 0;
	int a, b, i, ok = 0;

	ASSERT_EQ(0, param_get("max_domain_grants", saved, sizeof(saved)));
	ASSERT_EQ(0, param_set("max_domain_grants", "64"));
	a = open_dev();
	b = open_dev();
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_EQ(0, alloc(a, 4096, &reg));
	for (i = 0; i < 64; i++) {
		if (share_grant(a, reg.handle, domain_of(b),
				METADEF_SHARE_READ, &tok))
			continue;
		ok++;
		last = tok;
	}
	EXPECT_EQ(64, ok);
	EXPECT_EQ(-ENOSPC, share_grant(a, reg.handle, domain_of(b),
				 METADEF_SHARE_READ, &tok));
	/* Taking one up makes room for one more. */
	{
		struct metadef_import im;

		EXPECT_EQ(0, share_import(b, last, &im));
	}
	EXPECT_EQ(0, share_grant(a, reg.handle, domain_of(b), METADEF_SHARE_READ,
			   &tok));
	EXPECT_EQ(-ENOSPC, share_grant(a, reg.handle, domain_of(b),
				 METADEF_SHARE_READ, &tok));
	EXPECT_EQ(0, share_revoke(a, reg.handle, 0));
	EXPECT_EQ(0, share_grant(a, reg.handle, domain_of(b), METADEF_SHARE_READ,
			   &tok));
	close(a);
	close(b);
	EXPECT_EQ(0, param_set("max_domain_grants", saved));
}

/* Pending grants of one unprivileged user over all of its domains. */
static int user_grants(void *arg)
{
	int fds[5], i, d, n = 0;
	struct metadef_alloc reg;
	uint64_t tok;

	for (i = 0; i < 5; i++) {
		fds[i] = open_dev();
		if (fds[i] < 0)
			return 2;
	}
	/* 3 domains x 10 = 30 = max_user_grants; the 31st is refused. */
	for (d = 0; d < 3; d++) {
		if (alloc(fds[d], 4096, &reg))
			return 3;
		for (i = 0; i < 10; i++)
			n += !share_grant(fds[d], reg.handle, domain_of(fds[4]),
				    METADEF_SHARE_READ, &tok);
	}
	if (n != 30)
		return 4;
	if (alloc(fds[3], 4096, &reg))
		return 5;
	if (share_grant(fds[3], reg.handle, domain_of(fds[4]), METADEF_SHARE_READ,
		  &tok) != -ENOSPC)
		return 6;
	/* Closing the target takes every grant to it away. */
	close(fds[4]);
	if (share_grant(fds[3], reg.handle, domain_of(fds[0]), METADEF_SHARE_READ,
		  &tok))
		return 7;
	return 0;
}

TEST(grants_are_bounded_per_user)
{
	char saved[32];

	ASSERT_EQ(0, param_get("max_user_grants", saved, sizeof(saved)));
	ASSERT_EQ(0, param_set("max_user_grants", "30"));
	EXPECT_EQ(0, as_nobody(user_grants, NULL));
	EXPECT_EQ(0, param_set("max_user_grants", saved));
}

/* Fill as much as the user may over two domains; report bytes held. */
static int user_bytes(void *arg)
{
	uint64_t want = *(uint64_t *)arg, held = 0;
	struct metadef_alloc a;
	int fd[2], i, ret = 0;

	fd[0] = open_dev();
	fd[1] = open_dev();
	if (fd[0] < 0 || fd[1] < 0)
		return 2;
	for (i = 0; held < want + (1 << 20); i++) {
		ret = alloc(fd[i & 1], 1 << 20, &a);
		if (ret)
			break;
		held += 1 << 20;
	}
	if (ret != -EDQUOT)
		return 3;
	/* Exactly the limit, to the MiB: whichever domain asks. */
	if (held != want)
		return 4;
	if (alloc(fd[0], 4096, &a) != -EDQUOT ||
	    alloc(fd[1], 4096, &a) != -EDQUOT)
		return 5;
	return 0;
}

TEST(pool_bytes_are_bounded_per_user)
{
	struct metadef_alloc a;
	uint64_t want;
	char saved[32];
	int root;

	root = open_dev();
	ASSERT_LE(0, root);
	want = info_of(root).pool_size / 4;
	want &= ~((1ULL << 20) - 1);
	ASSERT_LT(0, want);
	ASSERT_EQ(0, param_get("max_user_bytes", saved, sizeof(saved)));
	ASSERT_EQ(0, param_set("max_user_bytes", "25%"));
	EXPECT_EQ(0, as_nobody(user_bytes, &want));
	/* Bytes as well as a percentage; "0" lifts the limit. */
	want = 3ULL << 20;
	ASSERT_EQ(0, param_set("max_user_bytes", "3M"));
	EXPECT_EQ(0, as_nobody(user_bytes, &want));
	EXPECT_EQ(-EINVAL, param_set("max_user_bytes", "101%"));
	EXPECT_EQ(-EINVAL, param_set("max_user_bytes", "12Q"));
	/* Root is not bound by it. */
	EXPECT_EQ(0, alloc(root, 4 << 20, &a));
	EXPECT_EQ(0, param_set("max_user_bytes", saved));
	close(root);
}

TEST_HARNESS_MAIN
