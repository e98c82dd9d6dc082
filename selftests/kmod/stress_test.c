// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: races and kills.
 *
 *  - revoke_vs_fault: an owner grants a 256-page region read-only to a
 *    second domain; the importer maps it and threads touch its pages
 *    while the owner REVOKEs, at a random point of a pass of faults (a
 *    few REVOKEs of a bystander domain first zap the mapping without
 *    taking access away, so that faults keep coming). Once REVOKE has
 *    returned and the touchers have stopped, every page of the old
 *    mapping must SIGBUS. Many rounds.
 *  - free_vs_import_and_copy: the owner FREEs a granted region while one
 *    thread imports it and copies from the import and another copies from
 *    and maps the owner's handle. Each call may succeed or fail with its
 *    documented errno only, and whatever is read is the region's bytes.
 *  - sigkill_with_live_mappings: processes (every other one unprivileged)
 *    holding mappings, imports, grants and dma-bufs, with a second thread
 *    in the middle of ioctls and page faults, are killed with SIGKILL at a
 *    random moment.
 *
 * After each test (all children reaped, all descriptors closed) the pool
 * must be all free and debugfs "regions" and "domains" empty.
 *
 * Sizes: METADEF_STRESS_ROUNDS (revoke rounds, default 1500: about 5 s
 * on Debian's kernel under TCG), METADEF_STRESS_FREE_ROUNDS (default
 * 1000), METADEF_STRESS_SECONDS (time budget of each test, default 15:
 * what bounds them on the KASAN/lockdep kernel, where a revoke round
 * takes about half a second),
 * METADEF_STRESS_KILLS (default 100), METADEF_STRESS_SEED (default: from
 * the clock; printed).
 *
 * Figures: "# METADEF-FIGURE races_run N", "# METADEF-FIGURE
 * kills_survived N", "# METADEF-FIGURE leaks N" (regions and domains left
 * plus pool bytes not free).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/metadef.h>

#include "md_ioctl.h"
#include "md_touch.h"
#include "kselftest_harness.h"

#define DEV "/dev/metadef"
#define PAGE 4096

static struct {
	uint64_t seed;
	unsigned int rounds, free_rounds, seconds, kills;
} cfg;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int grant(int fd, uint32_t handle, uint32_t to, uint32_t flags,
		 uint64_t *token)
{
	struct metadef_grant g = { .handle = handle, .domain_id = to,
				   .flags = flags };
	int ret = ioctl(fd, METADEF_IOC_GRANT, &g) ? -errno : 0;

	*token = g.token;
	return ret;
}

static int import(int fd, uint64_t token, struct metadef_import *im)
{
	memset(im, 0, sizeof(*im));
	im->token = token;
	return ioctl(fd, METADEF_IOC_IMPORT, im) ? -errno : 0;
}

static int md_revoke(int fd, uint32_t handle, uint32_t from)
{
	struct metadef_revoke r = { .handle = handle, .domain_id = from };

	return ioctl(fd, METADEF_IOC_REVOKE, &r) ? -errno : 0;
}

static int export(int fd, uint32_t handle, uint32_t flags)
{
	struct metadef_export e = { .handle = handle, .flags = flags };

	return ioctl(fd, METADEF_IOC_EXPORT_DMABUF, &e) ? -errno : e.fd;
}

/* Leftovers after a test; prints the figure and says what is left. */
static long long leaks_after(struct __test_metadata *_metadata)
{
	struct md_leftovers l;
	long long leaks = md_leaks(3000, &l);

	printf("# METADEF-FIGURE leaks %lld\n", leaks < 0 ? 0 : leaks);
	fflush(stdout);
	if (leaks)
		TH_LOG("left behind: %d regions, %d domains, %lld of %lld pool bytes not free",
		       l.regions, l.domains, l.pool_size - l.pool_free,
		       l.pool_size);
	return leaks;
}

/* ------------------------------------------------- touching safely */

/* catch_faults() and touch(): md_touch.h */

/* ------------------------------------------------- revoke vs. fault */

#define RV_PAGES	256
#define RV_TOUCHERS	2

static struct {
	pthread_barrier_t go, done;	/* a round's start and end */
	volatile unsigned char *map;	/* the importer's mapping, this round */
	uint32_t stop;			/* this round's touching is over */
	uint32_t quit;
	uint64_t reads;			/* pages read before REVOKE */
	uint64_t seed;
} rv;

static void *rv_toucher(void *arg)
{
	uint64_t rng = rv.seed ^ (uintptr_t)arg;
	unsigned char v;

	catch_faults();
	while (pthread_barrier_wait(&rv.go), !rv.quit) {
		size_t i = md_rand(&rng) % RV_PAGES;

		while (!__atomic_load_n(&rv.stop, __ATOMIC_ACQUIRE)) {
			if (!touch(rv.map + i * PAGE + (i & 0xff), 0, 0, &v))
				__atomic_add_fetch(&rv.reads, 1,
						   __ATOMIC_RELAXED);
			i = (i + 1) % RV_PAGES;
		}
		pthread_barrier_wait(&rv.done);
	}
	return arg;
}

/* Nanoseconds one thread takes to fault in all pages of a fresh import. */
static uint64_t first_pass_ns(int a, int b, uint32_t handle, uint32_t bdom)
{
	struct metadef_import im;
	volatile unsigned char *p;
	uint64_t token, t0, t;
	unsigned char v;

	if (grant(a, handle, bdom, METADEF_SHARE_READ, &token) ||
	    import(b, token, &im))
		return 0;
	p = mmap(NULL, RV_PAGES * PAGE, PROT_READ, MAP_SHARED, b,
		 im.mmap_offset);
	if (p == MAP_FAILED)
		return 0;
	t0 = now_ns();
	for (size_t i = 0; i < RV_PAGES; i++)
		touch(p + i * PAGE, 0, 0, &v);
	t = now_ns() - t0;
	munmap((void *)p, RV_PAGES * PAGE);
	md_revoke(a, handle, bdom);
	release(b, im.handle);
	return t;
}

static void spin_ns(uint64_t ns)
{
	uint64_t t0 = now_ns();

	while (now_ns() - t0 < ns)
		;
}

TEST(revoke_vs_fault)
{
	pthread_t tid[RV_TOUCHERS];
	struct metadef_alloc reg;
	struct metadef_import im;
	uint64_t rng = cfg.seed, token, pass, start, first_bad_ns = 0;
	unsigned int round, bad_rounds = 0, first_bad = 0, errors = 0;
	unsigned long long stale = 0;
	unsigned long long zaps = 0;
	uint32_t bdom, cdom;
	int a, b, c, ret;
	unsigned char v;

	catch_faults();
	a = open(DEV, O_RDWR | O_CLOEXEC);
	b = open(DEV, O_RDWR | O_CLOEXEC);
	c = open(DEV, O_RDWR | O_CLOEXEC);	/* a bystander */
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_LE(0, c);
	bdom = domain_of(b);
	cdom = domain_of(c);
	ASSERT_EQ(0, alloc(a, RV_PAGES * PAGE, &reg));
	pass = first_pass_ns(a, b, reg.handle, bdom);
	ASSERT_NE(0, pass);
	rv.seed = md_rand(&rng);
	ASSERT_EQ(0, pthread_barrier_init(&rv.go, NULL, RV_TOUCHERS + 1));
	ASSERT_EQ(0, pthread_barrier_init(&rv.done, NULL, RV_TOUCHERS + 1));
	for (int i = 0; i < RV_TOUCHERS; i++)
		ASSERT_EQ(0, pthread_create(&tid[i], NULL, rv_toucher,
					    (void *)(uintptr_t)(i + 1)));

	start = now_ns();
	for (round = 0; round < cfg.rounds; round++) {
		volatile unsigned char *p;
		int alive = 0, n;

		if (now_ns() - start > cfg.seconds * 1000000000ULL)
			break;
		if (grant(a, reg.handle, bdom, METADEF_SHARE_READ, &token) ||
		    import(b, token, &im)) {
			errors++;
			break;
		}
		p = mmap(NULL, RV_PAGES * PAGE, PROT_READ, MAP_SHARED, b,
			 im.mmap_offset);
		if (p == MAP_FAILED) {
			errors++;
			break;
		}
		rv.map = p;
		__atomic_store_n(&rv.stop, 0, __ATOMIC_RELEASE);
		pthread_barrier_wait(&rv.go);

		/*
		 * Faults happen only while pages are not mapped yet. A REVOKE
		 * of the bystander (which holds nothing) zaps every CPU
		 * mapping of the region all the same and leaves the importer
		 * its access: its touchers fault everything in again. So a
		 * few of those first, then the real one, each somewhere in
		 * the touchers' pass.
		 */
		n = md_rand(&rng) % 4;
		while (n--) {
			spin_ns(md_rand(&rng) % (pass + 1));
			if (md_revoke(a, reg.handle, cdom))
				errors++;
			zaps++;
		}
		spin_ns(md_rand(&rng) % (pass + 1));
		ret = md_revoke(a, reg.handle, bdom);
		/* Their faults in flight all end before the check. */
		__atomic_store_n(&rv.stop, 1, __ATOMIC_RELEASE);
		pthread_barrier_wait(&rv.done);
		if (ret) {
			TH_LOG("round %u: REVOKE: %s", round, strerror(-ret));
			errors++;
		}
		/* Every page must be gone now. */
		for (size_t i = 0; i < RV_PAGES; i++)
			alive += touch(p + i * PAGE, 0, 0, &v) != SIGBUS;
		if (alive) {
			if (!bad_rounds++) {
				first_bad = round + 1;
				first_bad_ns = now_ns() - start;
			}
			stale += alive;
		}
		munmap((void *)p, RV_PAGES * PAGE);
		if (release(b, im.handle))
			errors++;
	}
	rv.quit = 1;
	pthread_barrier_wait(&rv.go);
	for (int i = 0; i < RV_TOUCHERS; i++)
		pthread_join(tid[i], NULL);

	printf("# revoke_vs_fault: %u rounds in %.1f s (first pass %llu us), %llu pages read before REVOKE, %llu bystander REVOKEs; %u rounds left %llu pages mapped",
	       round, (now_ns() - start) / 1e9, (unsigned long long)pass / 1000,
	       (unsigned long long)rv.reads, zaps, bad_rounds, stale);
	if (bad_rounds)
		printf(" (the first in round %u, after %.1f s)", first_bad,
		       first_bad_ns / 1e9);
	printf("\n# METADEF-FIGURE races_run %u\n", round);
	fflush(stdout);
	EXPECT_EQ(0, bad_rounds);
	EXPECT_EQ(0, errors);
	EXPECT_LT(0, rv.reads);
	EXPECT_LT(0, round);
	EXPECT_EQ(0, release(a, reg.handle));
	close(a);
	close(b);
	close(c);
	EXPECT_EQ(0, leaks_after(_metadata));
}

/* ------------------------------------- FREE vs. IMPORT and COPY */

#define FR_PAGES	16
#define FR_SIZE		(FR_PAGES * PAGE)

static struct {
	pthread_barrier_t go, done;
	int a, b;
	uint32_t bdom;
	struct metadef_alloc reg, aown, bown;	/* reg: this round's region */
	uint64_t token;
	unsigned int round, writable;
	uint32_t quit;
	/* what went wrong, by kind */
	unsigned int bad_errno, bad_bytes, imports, copies;
	char why[160];
} fr;

static unsigned char fr_byte(unsigned int round, size_t i)
{
	return (unsigned char)(i * 31 + round * 7 + 1);
}

static void fr_wrong(unsigned int *what, const char *msg, int err)
{
	if (!__atomic_fetch_add(what, 1, __ATOMIC_RELAXED) && !fr.why[0])
		snprintf(fr.why, sizeof(fr.why), "round %u: %s%s%s", fr.round,
			 msg, err ? ": " : "", err ? strerror(-err) : "");
}

/* Does region @a of @fd (mapped read-only) hold round @round's bytes? */
static int fr_check(int fd, uint64_t off, unsigned int round)
{
	const unsigned char *p;
	int ok = 1;

	p = mmap(NULL, FR_SIZE, PROT_READ, MAP_SHARED, fd, off);
	if (p == MAP_FAILED)
		return -1;
	for (size_t i = 0; i < FR_SIZE && ok; i++)
		ok = p[i] == fr_byte(round, i);
	munmap((void *)p, FR_SIZE);
	return ok;
}

/* The owner's other thread: COPY out of the region and map it. */
static void *fr_owner_copier(void *arg)
{
	while (pthread_barrier_wait(&fr.go), !fr.quit) {
		void *p;
		int ret = copy(fr.a, fr.aown.dev_va, fr.reg.dev_va, FR_SIZE);

		if (ret && ret != -EFAULT)
			fr_wrong(&fr.bad_errno, "owner's COPY", ret);
		if (!ret && fr_check(fr.a, fr.aown.mmap_offset, fr.round) != 1)
			fr_wrong(&fr.bad_bytes, "owner's COPY read wrong bytes", 0);
		p = mmap(NULL, FR_SIZE, PROT_READ, MAP_SHARED, fr.a,
			 fr.reg.mmap_offset);
		if (p == MAP_FAILED && errno != EINVAL)
			fr_wrong(&fr.bad_errno, "owner's mmap", -errno);
		if (p != MAP_FAILED) {
			const unsigned char *q = p;

			for (size_t i = 0; i < FR_SIZE; i += 509)
				if (q[i] != fr_byte(fr.round, i)) {
					fr_wrong(&fr.bad_bytes, "owner's late mapping has wrong bytes", 0);
					break;
				}
			munmap(p, FR_SIZE);
		}
		pthread_barrier_wait(&fr.done);
	}
	return arg;
}

/* The importer: IMPORT, COPY both ways, map, drop the import. */
static void *fr_importer(void *arg)
{
	while (pthread_barrier_wait(&fr.go), !fr.quit) {
		struct metadef_import im;
		int ret = import(fr.b, fr.token, &im);

		if (ret && ret != -ENOENT)
			fr_wrong(&fr.bad_errno, "IMPORT", ret);
		if (!ret) {
			int copied = 0;

			__atomic_add_fetch(&fr.imports, 1, __ATOMIC_RELAXED);
			ret = copy(fr.b, fr.bown.dev_va, im.dev_va, FR_SIZE);
			if (ret)
				fr_wrong(&fr.bad_errno, "COPY from a live import", ret);
			else if (fr_check(fr.b, fr.bown.mmap_offset, fr.round) != 1)
				fr_wrong(&fr.bad_bytes, "COPY from the import read wrong bytes", 0);
			else
				copied = 1;
			fr.copies += copied;
			if (fr_check(fr.b, im.mmap_offset, fr.round) != 1)
				fr_wrong(&fr.bad_bytes, "the import's mapping is wrong or missing", 0);
			/* Writing back what is there changes nothing. */
			if (copied) {
				ret = copy(fr.b, im.dev_va, fr.bown.dev_va,
					   FR_SIZE);
				if (fr.writable ? ret != 0 : ret != -EFAULT)
					fr_wrong(&fr.bad_errno, "COPY into the import",
						 ret ? ret : -EPERM);
			}
			ret = release(fr.b, im.handle);
			if (ret)
				fr_wrong(&fr.bad_errno, "FREE of the import", ret);
		}
		pthread_barrier_wait(&fr.done);
	}
	return arg;
}

TEST(free_vs_import_and_copy)
{
	uint64_t rng = cfg.seed ^ 0xf4ee, start, free0;
	unsigned int bad_free = 0, leaked_rounds = 0, setup = 0;
	pthread_t t1, t2;
	unsigned char *p;
	int ret;

	fr.a = open(DEV, O_RDWR | O_CLOEXEC);
	fr.b = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fr.a);
	ASSERT_LE(0, fr.b);
	fr.bdom = domain_of(fr.b);
	ASSERT_EQ(0, alloc(fr.a, FR_SIZE, &fr.aown));
	ASSERT_EQ(0, alloc(fr.b, FR_SIZE, &fr.bown));
	ASSERT_EQ(0, pthread_barrier_init(&fr.go, NULL, 3));
	ASSERT_EQ(0, pthread_barrier_init(&fr.done, NULL, 3));
	ASSERT_EQ(0, pthread_create(&t1, NULL, fr_owner_copier, NULL));
	ASSERT_EQ(0, pthread_create(&t2, NULL, fr_importer, NULL));
	free0 = info_of(fr.a).pool_free;

	start = now_ns();
	for (fr.round = 0; fr.round < cfg.free_rounds; fr.round++) {
		if (now_ns() - start > cfg.seconds * 1000000000ULL)
			break;
		setup++;
		if (alloc(fr.a, FR_SIZE, &fr.reg))
			break;
		p = mmap(NULL, FR_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
			 fr.a, fr.reg.mmap_offset);
		if (p == MAP_FAILED)
			break;
		for (size_t i = 0; i < FR_SIZE; i++)
			p[i] = fr_byte(fr.round, i);
		munmap(p, FR_SIZE);
		fr.writable = md_rand(&rng) & 1;
		if (grant(fr.a, fr.reg.handle, fr.bdom, METADEF_SHARE_READ |
			  (fr.writable ? METADEF_SHARE_WRITE : 0), &fr.token))
			break;
		setup--;
		pthread_barrier_wait(&fr.go);
		/* A moment for the others to get going, now and then. */
		if (md_rand(&rng) & 1)
			usleep(md_rand(&rng) % 200);
		ret = release(fr.a, fr.reg.handle);
		if (ret) {
			bad_free++;
			TH_LOG("round %u: FREE: %s", fr.round, strerror(-ret));
		}
		pthread_barrier_wait(&fr.done);
		/* Everything of the round is gone: the pool is as it was. */
		if (info_of(fr.a).pool_free != free0) {
			/* Unless a grant nobody took up still holds it. */
			struct metadef_import im;

			if (!import(fr.b, fr.token, &im))
				release(fr.b, im.handle);
			if (info_of(fr.a).pool_free != free0)
				leaked_rounds++;
		}
	}
	fr.quit = 1;
	pthread_barrier_wait(&fr.go);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);

	printf("# free_vs_import_and_copy: %u rounds in %.1f s, %u imports, %u checked copies; %u wrong errnos, %u wrong bytes\n",
	       fr.round, (now_ns() - start) / 1e9, fr.imports, fr.copies,
	       fr.bad_errno, fr.bad_bytes);
	printf("# METADEF-FIGURE races_run %u\n", fr.round);
	fflush(stdout);
	if (fr.why[0])
		TH_LOG("first: %s", fr.why);
	EXPECT_EQ(0, setup);
	EXPECT_LT(0, fr.round);
	EXPECT_EQ(0, bad_free);
	EXPECT_EQ(0, fr.bad_errno);
	EXPECT_EQ(0, fr.bad_bytes);
	EXPECT_EQ(0, leaked_rounds);
	EXPECT_LT(0, fr.imports);
	close(fr.a);
	close(fr.b);
	EXPECT_EQ(0, leaks_after(_metadata));
}

/* ------------------------------------------------ SIGKILL anywhere */

#define K_SLOTS 6

struct kslot {
	uint32_t handle, imp;
	void *own, *imported, *buf;
	int dmabuf;
	uint64_t va;
};

static struct {
	int a, b;
	uint32_t bdom;
	uint64_t rng;
	struct kslot s[K_SLOTS];
} kc;

/* The victim's second thread: COPY and touch, forever. */
static void *kill_busy(void *arg)
{
	uint64_t rng = kc.rng ^ 0xb5;
	unsigned char v;

	for (;;) {
		struct kslot *s = &kc.s[md_rand(&rng) % K_SLOTS];
		volatile unsigned char *p = s->own;

		/* Reads only: the main thread unmaps and remaps these. */
		copy(kc.a, s->va, s->va + PAGE, PAGE);
		if (p)
			touch(p + PAGE * (md_rand(&rng) % 4), 0, 0, &v);
		p = s->imported;
		if (p)
			touch(p, 0, 0, &v);
	}
	return arg;
}

/* One round of the victim: replace a slot's region, import and dma-buf. */
static void kill_cycle(struct kslot *s)
{
	struct metadef_alloc r;
	struct metadef_import im;
	uint64_t token;
	unsigned char v;

	if (s->own)
		munmap(s->own, 4 * PAGE);
	if (s->imported)
		munmap(s->imported, 4 * PAGE);
	if (s->buf)
		munmap(s->buf, 4 * PAGE);
	if (s->dmabuf >= 0)
		close(s->dmabuf);
	if (s->imp)
		release(kc.b, s->imp);
	if (s->handle)
		release(kc.a, s->handle);
	memset(s, 0, sizeof(*s));
	s->dmabuf = -1;
	if (alloc(kc.a, 4 * PAGE, &r))
		return;
	s->handle = r.handle;
	s->va = r.dev_va;
	s->own = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, kc.a,
		      r.mmap_offset);
	if (s->own == MAP_FAILED)
		s->own = NULL;
	else
		memset(s->own, 0x3c, 4 * PAGE);
	if (!grant(kc.a, r.handle, kc.bdom, METADEF_SHARE_READ, &token) &&
	    !import(kc.b, token, &im)) {
		s->imp = im.handle;
		s->imported = mmap(NULL, 4 * PAGE, PROT_READ, MAP_SHARED, kc.b,
				   im.mmap_offset);
		if (s->imported == MAP_FAILED)
			s->imported = NULL;
		else
			touch(s->imported, 0, 0, &v);
	}
	/* A grant left pending, for close to clean up. */
	grant(kc.a, r.handle, kc.bdom, METADEF_SHARE_READ, &token);
	s->dmabuf = export(kc.a, r.handle, METADEF_EXPORT_RDWR);
	if (s->dmabuf >= 0) {
		s->buf = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE,
			      MAP_SHARED, s->dmabuf, 0);
		if (s->buf == MAP_FAILED)
			s->buf = NULL;
		else
			touch(s->buf, 1, 7, &v);
	}
}

/* The victim: says when it holds something, then works until killed. */
static void victim(int ready, int unprivileged, uint64_t seed)
{
	pthread_t t;
	int said = 0;

	alarm(60);
	if (unprivileged && become_nobody(0))
		_exit(10);
	catch_faults();
	kc.rng = seed;
	kc.a = open(DEV, O_RDWR);
	kc.b = open(DEV, O_RDWR);
	if (kc.a < 0 || kc.b < 0)
		_exit(11);
	kc.bdom = domain_of(kc.b);
	for (int i = 0; i < K_SLOTS; i++)
		kc.s[i].dmabuf = -1;
	for (int i = 0; i < K_SLOTS; i++)
		kill_cycle(&kc.s[i]);
	if (pthread_create(&t, NULL, kill_busy, NULL))
		_exit(12);
	for (;;) {
		if (!said++ && write(ready, "r", 1) != 1)
			_exit(13);
		kill_cycle(&kc.s[md_rand(&kc.rng) % K_SLOTS]);
	}
}

TEST(sigkill_with_live_mappings)
{
	uint64_t rng = cfg.seed ^ 0x5197, start;
	unsigned int kills = 0, survived = 0, odd = 0;

	start = now_ns();
	for (kills = 0; kills < cfg.kills; kills++) {
		struct pollfd pfd;
		int fds[2], status;
		pid_t pid;
		char c;

		if (now_ns() - start > cfg.seconds * 1000000000ULL)
			break;
		ASSERT_EQ(0, pipe(fds));
		fflush(stdout);
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			close(fds[0]);
			victim(fds[1], kills & 1, md_rand(&rng));
			_exit(14);
		}
		close(fds[1]);
		pfd.fd = fds[0];
		pfd.events = POLLIN;
		/* Up and holding things, then a random while more. */
		if (poll(&pfd, 1, 20000) != 1 || read(fds[0], &c, 1) != 1) {
			TH_LOG("victim %u never got going", kills);
			odd++;
		}
		usleep(md_rand(&rng) % 20000);
		kill(pid, SIGKILL);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		close(fds[0]);
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
			survived++;
		} else {
			TH_LOG("victim %u ended with status %#x, not by SIGKILL",
			       kills, status);
			odd++;
		}
	}
	printf("# sigkill_with_live_mappings: %u processes killed in %.1f s\n",
	       survived, (now_ns() - start) / 1e9);
	printf("# METADEF-FIGURE kills_survived %u\n", survived);
	fflush(stdout);
	EXPECT_EQ(0, odd);
	EXPECT_LT(0, survived);
	EXPECT_EQ(0, leaks_after(_metadata));
}

int main(int argc, char **argv)
{
	unsigned int timeout;

	cfg.seed = md_env_u64("METADEF_STRESS_SEED",
			      now_ns() ^ ((uint64_t)getpid() << 32));
	cfg.rounds = md_env_u64("METADEF_STRESS_ROUNDS", 1500);
	cfg.free_rounds = md_env_u64("METADEF_STRESS_FREE_ROUNDS", 1000);
	cfg.seconds = md_env_u64("METADEF_STRESS_SECONDS", 15);
	cfg.kills = md_env_u64("METADEF_STRESS_KILLS", 100);
	printf("# stress: seed %#llx, %u revoke rounds, %u free rounds, %u kills, %u s per test at most (replay: METADEF_STRESS_SEED=%#llx)\n",
	       (unsigned long long)cfg.seed, cfg.rounds, cfg.free_rounds, cfg.kills,
	       cfg.seconds, (unsigned long long)cfg.seed);
	fflush(stdout);
	/* The budget, and time to clean up and check after it. */
	timeout = cfg.seconds + 60;
	_revoke_vs_fault_object.timeout = timeout;
	_free_vs_import_and_copy_object.timeout = timeout;
	_sigkill_with_live_mappings_object.timeout = timeout;
	return test_harness_run(argc, argv);
}
