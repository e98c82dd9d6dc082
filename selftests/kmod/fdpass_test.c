// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: one tenant, several processes. The open file of /dev/metadef
 * is the capability: passed over a UNIX socket (SCM_RIGHTS) it makes the
 * receiver the same domain (same id, same handles, same quota, grants made
 * to it), while a process with its own open gets ENOENT for those handles
 * however it learnt them. Privileges stay with the process, not the fd.
 * Two processes of one domain racing each other free a handle once and
 * never overrun the quota. The domain lives as long as any copy of the
 * file (an fd, a mapping, an fd in flight) and everything goes back to
 * the pool with the last one.
 *
 * The processes talk over SOCK_SEQPACKET pairs; a helper process that
 * finds something wrong says what on stderr and exits non-zero.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/metadef.h>

#include "md_ioctl.h"
#include "kselftest_harness.h"

#define DEV "/dev/metadef"
#define NREG 3

/* What a process learns about a domain: its id and some of its regions. */
struct dom_msg {
	uint32_t domain_id;
	uint32_t nr;
	uint32_t other_id;	/* some other domain, when a test needs one */
	uint32_t pad;
	struct {
		uint32_t handle;
		uint32_t pad;
		uint64_t mmap_offset;
		uint64_t dev_va;
		uint64_t size;
	} reg[NREG];
};

static int set_quota(int fd, uint32_t id, uint64_t quota)
{
	struct metadef_quota q = { .domain_id = id, .quota = quota };

	return ioctl(fd, METADEF_IOC_SET_QUOTA, &q) ? -errno : 0;
}

/* Does @id still exist? (SET_QUOTA to unlimited: a no-op if it does.) */
static int domain_exists(int fd, uint32_t id)
{
	return set_quota(fd, id, METADEF_QUOTA_UNLIMITED) == 0;
}

/* The byte at @i of region @r of a test domain. */
static unsigned char pattern(int r, size_t i)
{
	return (unsigned char)(i * 13 + r * 101 + 7);
}

static int check_pattern(const unsigned char *p, int r, size_t size)
{
	for (size_t i = 0; i < size; i++)
		if (p[i] != pattern(r, i))
			return 0;
	return 1;
}

/*
 * A domain with @n regions of @size bytes each, filled with pattern()
 * through mmap (then unmapped): returns its fd and describes it in @m.
 */
static int make_domain(int n, uint64_t size, struct dom_msg *m)
{
	int fd = open(DEV, O_RDWR);

	memset(m, 0, sizeof(*m));
	if (fd < 0)
		return -1;
	m->domain_id = info_of(fd).domain_id;
	for (int r = 0; r < n; r++) {
		struct metadef_alloc a;
		unsigned char *p;

		if (alloc(fd, size, &a))
			return -1;
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			 a.mmap_offset);
		if (p == MAP_FAILED)
			return -1;
		for (size_t i = 0; i < size; i++)
			p[i] = pattern(r, i);
		munmap(p, size);
		m->reg[r].handle = a.handle;
		m->reg[r].mmap_offset = a.mmap_offset;
		m->reg[r].dev_va = a.dev_va;
		m->reg[r].size = a.alloc_size;
		m->nr++;
	}
	return fd;
}

/* ---------------------------------------------------------- messaging */

/* Send @len bytes of @buf, with @fd attached when it is >= 0. */
static int send_msg(int sock, const void *buf, size_t len, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;

	if (fd >= 0) {
		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	return sendmsg(sock, &mh, 0) == (ssize_t)len ? 0 : -1;
}

/*
 * Receive exactly @len bytes into @buf; returns the fd that came with
 * them, -1 when none did, -2 on error or a short message (peer gone).
 */
static int recv_msg(int sock, void *buf, size_t len)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int fd = -1;

	if (recvmsg(sock, &mh, MSG_CMSG_CLOEXEC) != (ssize_t)len)
		return -2;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

static int send_word(int sock, uint64_t w)
{
	return send_msg(sock, &w, sizeof(w), -1);
}

static uint64_t recv_word(int sock)
{
	uint64_t w = ~0ULL;

	if (recv_msg(sock, &w, sizeof(w)) == -2)
		return ~0ULL;
	return w;
}

/* ----------------------------------------------------- helper processes */

/* A helper process's check: on failure say which and exit 1. */
#define need(cond) need_at(!!(cond), #cond, __LINE__)

static void need_at(int ok, const char *what, int line)
{
	int e = errno;

	if (ok)
		return;
	fprintf(stderr, "# fdpass_test.c:%d: pid %d: %s failed (last errno: %s)\n",
		line, getpid(), what, strerror(e));
	_exit(1);
}

/*
 * Fork a process that runs @role on @sv[1] and holds no other descriptor
 * of ours; the caller keeps only @sv[0]. So when either side dies, the
 * other's reads see EOF instead of waiting for the harness's timeout.
 */
static pid_t spawn(void (*role)(int sock), int sv[2])
{
	pid_t pid = fork();

	if (pid == 0) {
		for (int fd = 3; fd < 1024; fd++)
			if (fd != sv[1])
				close(fd);
		errno = 0;
		role(sv[1]);
		_exit(0);
	}
	close(sv[1]);
	sv[1] = -1;
	return pid;
}

/* The exit status of @pid, or 128 + the signal that killed it. */
static int reap(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

static void pair(int sv[2])
{
	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv))
		sv[0] = sv[1] = -1;
}

FIXTURE(fdpass) {
	int obs;		/* an unrelated domain that watches the pool */
	uint64_t free0;		/* the pool's free bytes before the test */
	int sv[2];		/* [0]: the test's end, [1]: a helper's */
};

FIXTURE_SETUP(fdpass)
{
	self->obs = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->obs);
	self->free0 = info_of(self->obs).pool_free;
	ASSERT_NE(0, self->free0);
	pair(self->sv);
	ASSERT_LE(0, self->sv[0]);
}

FIXTURE_TEARDOWN(fdpass)
{
	close(self->sv[0]);
	close(self->sv[1]);
	close(self->obs);
}

/*
 * The receiver: gets the fd and the sender's description, proves it is
 * the same domain by using the sender's handles, allocates one region of
 * its own and tells the sender its handle; once the sender has freed that
 * one, it frees the sender's first region.
 */
static void same_tenant(int sock)
{
	struct metadef_alloc mine;
	struct dom_msg m;
	unsigned char *p;
	int fd, other;

	fd = recv_msg(sock, &m, sizeof(m));
	need(fd >= 0);
	need(info_of(fd).domain_id == m.domain_id);
	/* An open of our own is another domain. */
	other = open(DEV, O_RDWR);
	need(other >= 0);
	need(info_of(other).domain_id != m.domain_id);
	close(other);

	/* mmap: the sender's bytes. */
	p = mmap(NULL, m.reg[0].size, PROT_READ, MAP_SHARED, fd,
		 m.reg[0].mmap_offset);
	need(p != MAP_FAILED);
	need(check_pattern(p, 0, m.reg[0].size));
	munmap(p, m.reg[0].size);
	/* COPY: from the sender's VA into a region of ours. */
	need(alloc(fd, m.reg[1].size, &mine) == 0);
	need(copy(fd, mine.dev_va, m.reg[1].dev_va, m.reg[1].size) == 0);
	p = mmap(NULL, mine.alloc_size, PROT_READ, MAP_SHARED, fd,
		 mine.mmap_offset);
	need(p != MAP_FAILED);
	need(check_pattern(p, 1, mine.alloc_size));
	munmap(p, mine.alloc_size);

	need(send_word(sock, mine.handle) == 0);
	need(recv_word(sock) == 1);	/* the sender freed it */
	need(release(fd, mine.handle) == -ENOENT);
	/* FREE: one of the sender's regions. */
	need(release(fd, m.reg[0].handle) == 0);
	need(release(fd, m.reg[0].handle) == -ENOENT);
	close(fd);
}

TEST_F(fdpass, receiver_is_the_same_tenant)
{
	struct metadef_info before, after;
	struct dom_msg m;
	uint64_t h;
	pid_t pid;
	int fd;

	/* The receiver exists before the open: it cannot have inherited it. */
	pid = spawn(same_tenant, self->sv);
	ASSERT_LE(0, pid);
	fd = make_domain(2, 16384, &m);
	ASSERT_LE(0, fd);
	before = info_of(fd);
	EXPECT_EQ(2 * 16384, before.domain_used);
	ASSERT_EQ(0, send_msg(self->sv[0], &m, sizeof(m), fd));

	h = recv_word(self->sv[0]);
	ASSERT_NE(~0ULL, h);
	/* Its allocation is charged here and its handle is ours too. */
	after = info_of(fd);
	EXPECT_EQ(before.domain_used + 16384, after.domain_used);
	EXPECT_EQ(before.pool_free - 16384, after.pool_free);
	EXPECT_EQ(0, release(fd, (uint32_t)h));
	EXPECT_EQ(before.domain_used, info_of(fd).domain_used);
	ASSERT_EQ(0, send_word(self->sv[0], 1));

	EXPECT_EQ(0, reap(pid));
	/* It freed our first region; the second is still ours. */
	EXPECT_EQ(-ENOENT, release(fd, m.reg[0].handle));
	EXPECT_EQ(16384, info_of(fd).domain_used);
	EXPECT_EQ(0, release(fd, m.reg[1].handle));
	close(fd);
	EXPECT_EQ(self->free0, info_of(self->obs).pool_free);
}

/* Fills the quota it shares with the sender, then frees its part. */
static void shared_quota(int sock)
{
	struct metadef_alloc a, b;
	struct dom_msg m;
	int fd;

	fd = recv_msg(sock, &m, sizeof(m));
	need(fd >= 0);
	need(info_of(fd).domain_quota == 64 << 10);
	need(info_of(fd).domain_used == 32 << 10);
	need(alloc(fd, 32 << 10, &a) == 0);
	need(info_of(fd).domain_used == 64 << 10);
	need(alloc(fd, 4096, &b) == -EDQUOT);
	need(send_word(sock, a.handle) == 0);
	need(recv_word(sock) == 1);
	need(release(fd, a.handle) == 0);
	need(info_of(fd).domain_used == 32 << 10);
	close(fd);
}

TEST_F(fdpass, quota_is_shared)
{
	struct metadef_alloc a;
	struct dom_msg m;
	pid_t pid;
	int fd;

	pid = spawn(shared_quota, self->sv);
	ASSERT_LE(0, pid);
	fd = open(DEV, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, set_quota(fd, 0, 64 << 10));
	ASSERT_EQ(0, alloc(fd, 32 << 10, &a));
	memset(&m, 0, sizeof(m));
	ASSERT_EQ(0, send_msg(self->sv[0], &m, sizeof(m), fd));
	ASSERT_NE(~0ULL, recv_word(self->sv[0]));
	/* The receiver's half counts here: the quota is full for both. */
	EXPECT_EQ(64 << 10, info_of(fd).domain_used);
	EXPECT_EQ(-EDQUOT, alloc(fd, 4096, &a));
	ASSERT_EQ(0, send_word(self->sv[0], 1));
	EXPECT_EQ(0, reap(pid));
	EXPECT_EQ(32 << 10, info_of(fd).domain_used);
	close(fd);
	EXPECT_EQ(self->free0, info_of(self->obs).pool_free);
}

/*
 * A bystander with its own open that has learnt everything about the
 * tenant's regions but holds no copy of its file. Every use must fail:
 * handles are ENOENT, mmap offsets and device VAs are not its own.
 * Replies with the number of attempts, then of successes (or of failures
 * with the wrong error).
 */
static void bystander(int sock)
{
	int attempts = 0, successes = 0, wrong = 0;
	struct metadef_alloc mine;
	struct dom_msg m;
	int fd, ret;

	need(recv_msg(sock, &m, sizeof(m)) == -1);
	fd = open(DEV, O_RDWR);
	need(fd >= 0);
	need(info_of(fd).domain_id != m.domain_id);

	/*
	 * Handles first, while this domain has none of its own (handles are
	 * per domain, so its own first one would have the tenant's number):
	 * the tenant's, and every small number besides.
	 */
	for (uint32_t h = 0; h < 64; h++) {
		struct metadef_grant g = { .handle = h, .flags = METADEF_SHARE_READ,
					   .domain_id = m.domain_id };
		struct metadef_revoke rv = { .handle = h };

		attempts++;
		ret = release(fd, h);
		successes += !ret;
		wrong += ret && ret != -ENOENT;
		attempts++;
		ret = ioctl(fd, METADEF_IOC_GRANT, &g) ? -errno : 0;
		successes += !ret;
		wrong += ret && ret != -ENOENT;
		attempts++;
		ret = ioctl(fd, METADEF_IOC_REVOKE, &rv) ? -errno : 0;
		successes += !ret;
		wrong += ret && ret != -ENOENT;
	}
	for (uint32_t r = 0; r < m.nr; r++) {
		void *p;

		attempts++;
		p = mmap(NULL, m.reg[r].size, PROT_READ, MAP_SHARED, fd,
			 m.reg[r].mmap_offset);
		successes += p != MAP_FAILED;
		if (p != MAP_FAILED)
			munmap(p, m.reg[r].size);
	}
	/* The device side: COPY to and from the tenant's VAs. */
	need(alloc(fd, 4096, &mine) == 0);
	for (uint32_t r = 0; r < m.nr; r++) {
		attempts++;
		ret = copy(fd, mine.dev_va, m.reg[r].dev_va, 4096);
		successes += !ret;
		wrong += ret && ret != -EFAULT;
		attempts++;
		ret = copy(fd, m.reg[r].dev_va, mine.dev_va, 4096);
		successes += !ret;
		wrong += ret && ret != -EFAULT;
	}
	need(release(fd, mine.handle) == 0);
	close(fd);
	need(send_word(sock, attempts) == 0);
	need(send_word(sock, successes) == 0);
	need(send_word(sock, wrong) == 0);
}

/* The tenant's second process: uses the same handles, all with success. */
static void partner(int sock)
{
	struct dom_msg m;
	int fd, ok = 0;

	fd = recv_msg(sock, &m, sizeof(m));
	need(fd >= 0);
	for (uint32_t r = 0; r < m.nr; r++) {
		unsigned char *p = mmap(NULL, m.reg[r].size, PROT_READ,
					MAP_SHARED, fd, m.reg[r].mmap_offset);

		need(p != MAP_FAILED);
		ok += check_pattern(p, r, m.reg[r].size);
		munmap(p, m.reg[r].size);
		ok += copy(fd, m.reg[0].dev_va + 4096, m.reg[r].dev_va, 64) == 0;
	}
	close(fd);
	need(send_word(sock, ok) == 0);
}

TEST_F(fdpass, third_domain_gets_enoent)
{
	uint64_t attempts, successes, wrong;
	int fd, sv2[2];
	struct dom_msg m;
	pid_t p1, p2;
	unsigned char *p;

	p1 = spawn(partner, self->sv);
	ASSERT_LE(0, p1);
	pair(sv2);
	ASSERT_LE(0, sv2[0]);
	p2 = spawn(bystander, sv2);
	ASSERT_LE(0, p2);

	fd = make_domain(NREG, 8192, &m);
	ASSERT_LE(0, fd);
	/* The partner gets the fd, the bystander only the numbers. */
	ASSERT_EQ(0, send_msg(self->sv[0], &m, sizeof(m), fd));
	ASSERT_EQ(0, send_msg(sv2[0], &m, sizeof(m), -1));

	EXPECT_EQ(2 * NREG, recv_word(self->sv[0]));
	attempts = recv_word(sv2[0]);
	successes = recv_word(sv2[0]);
	wrong = recv_word(sv2[0]);
	TH_LOG("%llu uses of another tenant's handles, mmap offsets and VAs, %llu succeeded, %llu with the wrong error",
	       (unsigned long long)attempts, (unsigned long long)successes,
	       (unsigned long long)wrong);
	EXPECT_EQ(64 * 3 + NREG * 3, attempts);
	EXPECT_EQ(0, successes);
	EXPECT_EQ(0, wrong);
	EXPECT_EQ(0, reap(p1));
	EXPECT_EQ(0, reap(p2));
	close(sv2[0]);

	/* The bystander changed nothing; the partner wrote only into reg 0. */
	for (uint32_t r = 1; r < m.nr; r++) {
		p = mmap(NULL, m.reg[r].size, PROT_READ, MAP_SHARED, fd,
			 m.reg[r].mmap_offset);
		ASSERT_NE(MAP_FAILED, p);
		EXPECT_TRUE(check_pattern(p, r, m.reg[r].size));
		munmap(p, m.reg[r].size);
	}
	for (uint32_t r = 0; r < m.nr; r++)
		EXPECT_EQ(0, release(fd, m.reg[r].handle));
	close(fd);
	EXPECT_EQ(self->free0, info_of(self->obs).pool_free);
}

/*
 * The sender: gets a socket to the receiver from the test, builds a
 * domain, passes its fd on, closes it, tells the test which domain it
 * was and exits.
 */
static void sender(int sock)
{
	struct dom_msg m;
	int fd, to;

	to = recv_msg(sock, &m, sizeof(m));	/* the receiver's socket */
	need(to >= 0);
	fd = make_domain(2, 65536, &m);
	need(fd >= 0);
	need(send_msg(to, &m, sizeof(m), fd) == 0);
	close(fd);
	close(to);
	need(send_msg(sock, &m, sizeof(m), -1) == 0);
}

/*
 * The receiver: uses the domain after its sender is gone, then closes
 * the last fd while staying alive, and waits for the word to exit.
 */
static void receiver(int sock)
{
	struct metadef_alloc a;
	struct dom_msg m;
	unsigned char *p;
	int fd, from;

	from = recv_msg(sock, &m, sizeof(m));	/* the sender's socket */
	need(from >= 0);
	fd = recv_msg(from, &m, sizeof(m));
	need(fd >= 0);
	close(from);
	need(recv_word(sock) == 1);		/* the sender has exited */

	need(info_of(fd).domain_id == m.domain_id);
	need(info_of(fd).domain_used == 2 * 65536);
	p = mmap(NULL, m.reg[0].size, PROT_READ, MAP_SHARED, fd,
		 m.reg[0].mmap_offset);
	need(p != MAP_FAILED);
	need(check_pattern(p, 0, m.reg[0].size));
	munmap(p, m.reg[0].size);
	need(copy(fd, m.reg[0].dev_va, m.reg[1].dev_va, m.reg[1].size) == 0);
	need(release(fd, m.reg[1].handle) == 0);
	need(alloc(fd, 4096, &a) == 0);
	need(send_word(sock, 2) == 0);
	need(recv_word(sock) == 3);
	close(fd);				/* the last one */
	need(send_word(sock, 4) == 0);
	need(recv_word(sock) == 5);
}

TEST_F(fdpass, domain_outlives_the_senders_close)
{
	int sv2[2], link[2];
	struct dom_msg m;
	pid_t ps, pr;

	pr = spawn(receiver, self->sv);
	ASSERT_LE(0, pr);
	pair(sv2);
	ASSERT_LE(0, sv2[0]);
	ps = spawn(sender, sv2);
	ASSERT_LE(0, ps);
	/* A socket between the two, one end to each. */
	pair(link);
	ASSERT_LE(0, link[0]);
	memset(&m, 0, sizeof(m));
	ASSERT_EQ(0, send_msg(self->sv[0], &m, sizeof(m), link[0]));
	ASSERT_EQ(0, send_msg(sv2[0], &m, sizeof(m), link[1]));
	close(link[0]);
	close(link[1]);

	ASSERT_EQ(-1, recv_msg(sv2[0], &m, sizeof(m)));
	EXPECT_EQ(0, reap(ps));
	close(sv2[0]);
	/* The sender and its fd are gone; the domain and its memory stay. */
	EXPECT_TRUE(domain_exists(self->obs, m.domain_id));
	EXPECT_EQ(self->free0 - 2 * 65536, info_of(self->obs).pool_free);

	ASSERT_EQ(0, send_word(self->sv[0], 1));
	ASSERT_EQ(2, recv_word(self->sv[0]));
	/* It freed one region and allocated a page. */
	EXPECT_EQ(self->free0 - 65536 - 4096, info_of(self->obs).pool_free);
	ASSERT_EQ(0, send_word(self->sv[0], 3));
	ASSERT_EQ(4, recv_word(self->sv[0]));
	/* The last fd is closed, its process still alive: all is freed. */
	EXPECT_EQ(self->free0, info_of(self->obs).pool_free);
	EXPECT_FALSE(domain_exists(self->obs, m.domain_id));
	ASSERT_EQ(0, send_word(self->sv[0], 5));
	EXPECT_EQ(0, reap(pr));
}

/*
 * A receiver that maps the tenant's region and closes the fd: the mapping
 * is a copy of the file too, so the domain lives until the munmap.
 */
static void mapper(int sock)
{
	struct dom_msg m;
	unsigned char *p;
	int fd;

	fd = recv_msg(sock, &m, sizeof(m));
	need(fd >= 0);
	p = mmap(NULL, m.reg[0].size, PROT_READ, MAP_SHARED, fd,
		 m.reg[0].mmap_offset);
	need(p != MAP_FAILED);
	close(fd);
	need(send_word(sock, 1) == 0);
	need(recv_word(sock) == 2);
	need(check_pattern(p, 0, m.reg[0].size));
	munmap(p, m.reg[0].size);
	need(send_word(sock, 3) == 0);
	need(recv_word(sock) == 4);
}

TEST_F(fdpass, last_mapping_keeps_the_domain)
{
	struct dom_msg m;
	pid_t pid;
	int fd;

	pid = spawn(mapper, self->sv);
	ASSERT_LE(0, pid);
	fd = make_domain(1, 65536, &m);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, send_msg(self->sv[0], &m, sizeof(m), fd));
	close(fd);
	ASSERT_EQ(1, recv_word(self->sv[0]));
	/* No fd left anywhere, one mapping. */
	EXPECT_TRUE(domain_exists(self->obs, m.domain_id));
	EXPECT_EQ(self->free0 - 65536, info_of(self->obs).pool_free);
	ASSERT_EQ(0, send_word(self->sv[0], 2));
	ASSERT_EQ(3, recv_word(self->sv[0]));
	EXPECT_FALSE(domain_exists(self->obs, m.domain_id));
	EXPECT_EQ(self->free0, info_of(self->obs).pool_free);
	ASSERT_EQ(0, send_word(self->sv[0], 4));
	EXPECT_EQ(0, reap(pid));
}

/* Holds the tenant's fd, a mapping and a region of its own until killed. */
static void holder(int sock)
{
	struct metadef_alloc a;
	struct dom_msg m;
	unsigned char *p;
	int fd;

	fd = recv_msg(sock, &m, sizeof(m));
	need(fd >= 0);
	need(alloc(fd, 65536, &a) == 0);
	p = mmap(NULL, a.alloc_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 a.mmap_offset);
	need(p != MAP_FAILED);
	memset(p, 0x5a, a.alloc_size);
	need(send_word(sock, 1) == 0);
	for (;;)
		pause();
}

TEST_F(fdpass, killed_receiver_frees_everything)
{
	struct dom_msg m;
	pid_t pid;
	int fd;

	pid = spawn(holder, self->sv);
	ASSERT_LE(0, pid);
	fd = make_domain(2, 16384, &m);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, send_msg(self->sv[0], &m, sizeof(m), fd));
	close(fd);
	ASSERT_EQ(1, recv_word(self->sv[0]));
	EXPECT_EQ(self->free0 - 2 * 16384 - 65536,
		  info_of(self->obs).pool_free);
	kill(pid, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, reap(pid));
	EXPECT_FALSE(domain_exists(self->obs, m.domain_id));
	EXPECT_EQ(self->free0, info_of(self->obs).pool_free);
}

/* Does reading *p kill a child process with SIGBUS? */
static int read_faults(const char *p)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(p[0] == 0x7f ? 3 : 0);
	waitpid(pid, &status, 0);
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS;
}

/*
 * An importer's second process: it holds the importing domain's only fd,
 * redeems the grant the owner made to that domain, reads through it, and
 * is cut off when the owner revokes.
 */
static void importer(int sock)
{
	struct metadef_import im;
	struct metadef_alloc own;
	struct dom_msg m;
	uint64_t token;
	char *p;
	int fd;

	fd = recv_msg(sock, &m, sizeof(m));
	need(fd >= 0);
	token = recv_word(sock);
	memset(&im, 0, sizeof(im));
	im.token = token;
	need(ioctl(fd, METADEF_IOC_IMPORT, &im) == 0);
	need(alloc(fd, 4096, &own) == 0);
	need(copy(fd, own.dev_va, im.dev_va, 4096) == 0);
	p = mmap(NULL, im.size, PROT_READ, MAP_SHARED, fd, im.mmap_offset);
	need(p != MAP_FAILED);
	need(check_pattern((unsigned char *)p, 0, im.size));
	need(send_word(sock, 1) == 0);
	need(recv_word(sock) == 2);		/* revoked */
	need(read_faults(p));
	need(copy(fd, own.dev_va, im.dev_va, 4096) == -EFAULT);
	munmap(p, im.size);
	close(fd);
}

TEST_F(fdpass, grant_to_a_domain_not_a_process)
{
	struct metadef_grant g;
	struct metadef_revoke rv;
	struct dom_msg m, none;
	pid_t pid;
	int a, b;

	pid = spawn(importer, self->sv);
	ASSERT_LE(0, pid);
	a = make_domain(1, 8192, &m);
	ASSERT_LE(0, a);
	/* The importing domain, opened here and handed over. */
	b = open(DEV, O_RDWR);
	ASSERT_LE(0, b);
	memset(&g, 0, sizeof(g));
	g.handle = m.reg[0].handle;
	g.domain_id = info_of(b).domain_id;
	g.flags = METADEF_SHARE_READ;
	memset(&none, 0, sizeof(none));
	ASSERT_EQ(0, send_msg(self->sv[0], &none, sizeof(none), b));
	close(b);
	ASSERT_EQ(0, ioctl(a, METADEF_IOC_GRANT, &g));
	ASSERT_EQ(0, send_word(self->sv[0], g.token));
	ASSERT_EQ(1, recv_word(self->sv[0]));

	memset(&rv, 0, sizeof(rv));
	rv.handle = m.reg[0].handle;
	ASSERT_EQ(0, ioctl(a, METADEF_IOC_REVOKE, &rv));
	ASSERT_EQ(0, send_word(self->sv[0], 2));
	EXPECT_EQ(0, reap(pid));
	EXPECT_EQ(0, release(a, m.reg[0].handle));
	close(a);
	EXPECT_EQ(self->free0, info_of(self->obs).pool_free);
}

/*
 * A process without privileges that receives a root-opened fd: it is the
 * tenant, but CAP_SYS_ADMIN's extras stay with root.
 */
static void unprivileged(int sock)
{
	struct metadef_alloc a;
	struct dom_msg m;
	int fd;

	need(become_nobody(0) == 0);
	need(send_word(sock, 1) == 0);		/* privileges dropped */
	fd = recv_msg(sock, &m, sizeof(m));
	need(fd >= 0);
	need(info_of(fd).domain_id == m.domain_id);
	need(set_quota(fd, 0, METADEF_QUOTA_UNLIMITED) == -EPERM);
	need(set_quota(fd, m.other_id, METADEF_QUOTA_UNLIMITED) == -EPERM);
	need(alloc(fd, 4096, &a) == 0);
	need(a.dev_addr == 0 && a.dev_va != 0);
	need(release(fd, a.handle) == 0);
	need(release(fd, m.reg[0].handle) == 0);
	close(fd);
}

TEST_F(fdpass, privileges_stay_with_the_process)
{
	struct dom_msg m;
	pid_t pid;
	int fd;

	pid = spawn(unprivileged, self->sv);
	ASSERT_LE(0, pid);
	ASSERT_EQ(1, recv_word(self->sv[0]));
	fd = make_domain(1, 4096, &m);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, set_quota(fd, 0, 1 << 20));
	m.other_id = info_of(self->obs).domain_id;
	ASSERT_EQ(0, send_msg(self->sv[0], &m, sizeof(m), fd));
	EXPECT_EQ(0, reap(pid));
	EXPECT_EQ(1 << 20, info_of(fd).domain_quota);
	EXPECT_EQ(METADEF_QUOTA_UNLIMITED, info_of(self->obs).domain_quota);
	EXPECT_EQ(0, info_of(fd).domain_used);
	close(fd);
	EXPECT_EQ(self->free0, info_of(self->obs).pool_free);
}

#define NRACE 256

/*
 * One of two processes of the tenant that race each other: FREE every
 * handle from 1 to NRACE, then ALLOC pages until the quota says no.
 * Reports how many of each succeeded and how many FREEs failed with
 * something other than ENOENT.
 */
static void racer(int sock)
{
	unsigned int freed = 0, wrong = 0, pages = 0;
	struct metadef_alloc a;
	struct dom_msg m;
	int fd, ret;

	fd = recv_msg(sock, &m, sizeof(m));
	need(fd >= 0);
	need(recv_word(sock) == 1);		/* go */
	for (uint32_t h = 1; h <= NRACE; h++) {
		ret = release(fd, h);
		freed += !ret;
		wrong += ret && ret != -ENOENT;
	}
	need(send_word(sock, freed) == 0);
	need(send_word(sock, wrong) == 0);
	need(recv_word(sock) == 2);		/* go again */
	while ((ret = alloc(fd, 4096, &a)) == 0)
		pages++;
	need(ret == -EDQUOT);
	need(send_word(sock, pages) == 0);
	need(recv_word(sock) == 3);
	close(fd);
}

/*
 * Two processes of one tenant at once: each handle is freed exactly once,
 * and the quota they share is never exceeded by racing charges.
 */
TEST_F(fdpass, two_processes_race_on_one_domain)
{
	uint64_t freed, wrong, pages;
	struct metadef_alloc a;
	struct dom_msg m;
	pid_t pid;
	int fd;

	pid = spawn(racer, self->sv);
	ASSERT_LE(0, pid);
	fd = open(DEV, O_RDWR);
	ASSERT_LE(0, fd);
	for (int i = 1; i <= NRACE; i++) {
		ASSERT_EQ(0, alloc(fd, 4096, &a));
		ASSERT_EQ(i, a.handle);
	}
	memset(&m, 0, sizeof(m));
	ASSERT_EQ(0, send_msg(self->sv[0], &m, sizeof(m), fd));

	ASSERT_EQ(0, send_word(self->sv[0], 1));
	freed = 0;
	wrong = 0;
	for (uint32_t h = 1; h <= NRACE; h++) {
		int ret = release(fd, h);

		freed += !ret;
		wrong += ret && ret != -ENOENT;
	}
	freed += recv_word(self->sv[0]);
	wrong += recv_word(self->sv[0]);
	EXPECT_EQ(NRACE, freed);
	EXPECT_EQ(0, wrong);
	EXPECT_EQ(0, info_of(fd).domain_used);
	EXPECT_EQ(self->free0, info_of(self->obs).pool_free);

	ASSERT_EQ(0, set_quota(fd, 0, 64 * 4096));
	ASSERT_EQ(0, send_word(self->sv[0], 2));
	pages = 0;
	while (alloc(fd, 4096, &a) == 0)
		pages++;
	pages += recv_word(self->sv[0]);
	EXPECT_EQ(64, pages);
	EXPECT_EQ(64 * 4096, info_of(fd).domain_used);
	ASSERT_EQ(0, send_word(self->sv[0], 3));
	EXPECT_EQ(0, reap(pid));
	close(fd);
	EXPECT_EQ(self->free0, info_of(self->obs).pool_free);
}

/* An fd in flight is a copy of the file too; dropped with its socket. */
TEST_F(fdpass, fd_lost_in_flight_frees_everything)
{
	struct dom_msg m;
	int fd;

	fd = make_domain(2, 16384, &m);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, send_msg(self->sv[0], &m, sizeof(m), fd));
	close(fd);
	/* Sent, never received: the domain waits in the socket. */
	EXPECT_TRUE(domain_exists(self->obs, m.domain_id));
	EXPECT_EQ(self->free0 - 2 * 16384, info_of(self->obs).pool_free);
	close(self->sv[1]);
	self->sv[1] = -1;
	EXPECT_FALSE(domain_exists(self->obs, m.domain_id));
	EXPECT_EQ(self->free0, info_of(self->obs).pool_free);
}

TEST_HARNESS_MAIN
