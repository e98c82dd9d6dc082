// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: sharing between domains. A grant names one domain and is
 * good once; an import reads (and, if granted, writes) the owner's memory
 * through mmap and COPY; REVOKE cuts the importer off at once (SIGBUS,
 * EFAULT) and leaves the owner alone; importers cannot re-grant, and
 * dropping an import never frees the owner's memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/metadef.h>

#include "md_ioctl.h"
#include "kselftest_harness.h"

#define DEV "/dev/metadef"

FIXTURE(share) {
	int a, b, c;		/* owner, importer, bystander */
	struct metadef_alloc reg, mine;
	char *ap;
};

FIXTURE_SETUP(share)
{
	self->a = open(DEV, O_RDWR | O_CLOEXEC);
	self->b = open(DEV, O_RDWR | O_CLOEXEC);
	self->c = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->a);
	ASSERT_LE(0, self->b);
	ASSERT_LE(0, self->c);
	memset(&self->reg, 0, sizeof(self->reg));
	self->reg.size = 8192;
	ASSERT_EQ(0, ioctl(self->a, METADEF_IOC_ALLOC, &self->reg));
	self->ap = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, self->a,
			self->reg.mmap_offset);
	ASSERT_NE(MAP_FAILED, self->ap);
	strcpy(self->ap, "owner's data");
	/* The importer's own region, for COPY. */
	memset(&self->mine, 0, sizeof(self->mine));
	self->mine.size = 4096;
	ASSERT_EQ(0, ioctl(self->b, METADEF_IOC_ALLOC, &self->mine));
}

FIXTURE_TEARDOWN(share)
{
	munmap(self->ap, 8192);
	close(self->a);
	close(self->b);
	close(self->c);
}

TEST_F(share, import_reads_and_writes)
{
	struct metadef_import im;
	uint64_t tok;
	char *bp;

	ASSERT_EQ(0, share_grant(self->a, self->reg.handle, domain_of(self->b),
			   METADEF_SHARE_READ | METADEF_SHARE_WRITE, &tok));
	EXPECT_NE(0, tok);
	ASSERT_EQ(0, share_import(self->b, tok, &im));
	EXPECT_EQ(8192, im.size);
	EXPECT_EQ(self->reg.dev_va, im.dev_va);
	bp = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, self->b,
		  im.mmap_offset);
	ASSERT_NE(MAP_FAILED, bp);
	EXPECT_STREQ("owner's data", bp);
	strcpy(bp + 100, "importer's answer");
	EXPECT_STREQ("importer's answer", self->ap + 100);
	/* The device path too: COPY into the importer's own region. */
	EXPECT_EQ(0, copy(self->b, self->mine.dev_va, im.dev_va, 13));
	munmap(bp, 8192);
}

TEST_F(share, read_only_import)
{
	struct metadef_import im;
	uint64_t tok;
	char *bp;

	ASSERT_EQ(0, share_grant(self->a, self->reg.handle, domain_of(self->b),
			   METADEF_SHARE_READ, &tok));
	ASSERT_EQ(0, share_import(self->b, tok, &im));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 8192, PROT_READ | PROT_WRITE,
				   MAP_SHARED, self->b, im.mmap_offset));
	bp = mmap(NULL, 8192, PROT_READ, MAP_SHARED, self->b, im.mmap_offset);
	ASSERT_NE(MAP_FAILED, bp);
	EXPECT_STREQ("owner's data", bp);
	/* Cannot be made writable later either. */
	EXPECT_NE(0, mprotect(bp, 8192, PROT_READ | PROT_WRITE));
	EXPECT_EQ(0, copy(self->b, self->mine.dev_va, im.dev_va, 13));
	EXPECT_EQ(-EFAULT, copy(self->b, im.dev_va, self->mine.dev_va, 13));
	EXPECT_STREQ("owner's data", self->ap);
	munmap(bp, 8192);
}

TEST_F(share, token_single_use_and_bound_to_its_domain)
{
	struct metadef_import im;
	uint64_t tok;
	int attempts = 0, successes = 0;

	ASSERT_EQ(0, share_grant(self->a, self->reg.handle, domain_of(self->b),
			   METADEF_SHARE_READ, &tok));
	/* The bystander and the owner itself cannot use it. */
	attempts++;
	successes += !share_import(self->c, tok, &im);
	attempts++;
	successes += !share_import(self->a, tok, &im);
	/* Guessed tokens. */
	for (uint64_t g = 0; g < 16; g++) {
		attempts++;
		successes += !share_import(self->c, tok ^ (1ULL << g), &im);
	}
	attempts++;
	successes += !share_import(self->b, 0, &im);
	ASSERT_EQ(0, share_import(self->b, tok, &im));
	/* Once only. */
	attempts++;
	successes += !share_import(self->b, tok, &im);
	TH_LOG("%d attempts to use another's token, %d succeeded", attempts,
	       successes);
	EXPECT_EQ(0, successes);
}

TEST_F(share, revoke_cuts_off_cpu_and_device)
{
	struct metadef_import im;
	uint64_t tok;
	char *bp;

	ASSERT_EQ(0, share_grant(self->a, self->reg.handle, domain_of(self->b),
			   METADEF_SHARE_READ | METADEF_SHARE_WRITE, &tok));
	ASSERT_EQ(0, share_import(self->b, tok, &im));
	bp = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, self->b,
		  im.mmap_offset);
	ASSERT_NE(MAP_FAILED, bp);
	EXPECT_STREQ("owner's data", bp);
	EXPECT_EQ(0, copy(self->b, self->mine.dev_va, im.dev_va, 8));

	ASSERT_EQ(0, share_revoke(self->a, self->reg.handle, domain_of(self->b)));
	EXPECT_EQ(1, touch_faults(bp, 0));
	EXPECT_EQ(-EFAULT, copy(self->b, self->mine.dev_va, im.dev_va, 8));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 8192, PROT_READ, MAP_SHARED, self->b,
				   im.mmap_offset));
	/* The owner carries on. */
	EXPECT_STREQ("owner's data", self->ap);
	strcpy(self->ap, "still mine");
	EXPECT_STREQ("still mine", self->ap);
	/* The importer's handle is dead; dropping it is all it can do. */
	EXPECT_EQ(0, release(self->b, im.handle));
	munmap(bp, 8192);
}

TEST_F(share, importer_cannot_regrant_or_free_the_memory)
{
	struct metadef_import im;
	struct metadef_info before;
	uint64_t tok, tok2;

	ASSERT_EQ(0, share_grant(self->a, self->reg.handle, domain_of(self->b),
			   METADEF_SHARE_READ | METADEF_SHARE_WRITE, &tok));
	ASSERT_EQ(0, share_import(self->b, tok, &im));
	EXPECT_EQ(-EPERM, share_grant(self->b, im.handle, domain_of(self->c),
				METADEF_SHARE_READ, &tok2));
	EXPECT_EQ(-EPERM, share_revoke(self->b, im.handle, 0));
	memset(&before, 0, sizeof(before));
	ioctl(self->a, METADEF_IOC_INFO, &before);
	/* FREE on the import drops the import, not the owner's memory. */
	EXPECT_EQ(0, release(self->b, im.handle));
	EXPECT_STREQ("owner's data", self->ap);
	EXPECT_EQ(0, copy(self->a, self->reg.dev_va + 4096, self->reg.dev_va, 13));
	EXPECT_STREQ("owner's data", self->ap + 4096);
	EXPECT_EQ(-EFAULT, copy(self->b, self->mine.dev_va, im.dev_va, 8));
}

TEST_F(share, owner_free_keeps_memory_for_importer)
{
	struct metadef_import im;
	uint64_t tok;
	char *bp;

	ASSERT_EQ(0, share_grant(self->a, self->reg.handle, domain_of(self->b),
			   METADEF_SHARE_READ, &tok));
	ASSERT_EQ(0, share_import(self->b, tok, &im));
	munmap(self->ap, 8192);
	self->ap = mmap(NULL, 8192, PROT_READ, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	EXPECT_EQ(0, release(self->a, self->reg.handle));
	/* The owner's view is gone; the importer's is not. */
	EXPECT_EQ(-EFAULT, copy(self->a, self->reg.dev_va, self->reg.dev_va, 8));
	bp = mmap(NULL, 8192, PROT_READ, MAP_SHARED, self->b, im.mmap_offset);
	ASSERT_NE(MAP_FAILED, bp);
	EXPECT_STREQ("owner's data", bp);
	EXPECT_EQ(0, copy(self->b, self->mine.dev_va, im.dev_va, 8));
	munmap(bp, 8192);
	EXPECT_EQ(0, release(self->b, im.handle));
}

TEST_F(share, bad_requests)
{
	struct metadef_grant g;
	struct metadef_revoke rv;
	uint64_t tok;

	EXPECT_EQ(-ENOENT, share_grant(self->a, 9999, domain_of(self->b),
				 METADEF_SHARE_READ, &tok));
	EXPECT_EQ(-EINVAL, share_grant(self->a, self->reg.handle, domain_of(self->a),
				 METADEF_SHARE_READ, &tok));
	EXPECT_EQ(-ENOENT, share_grant(self->a, self->reg.handle, 0x7ffffff0,
				 METADEF_SHARE_READ, &tok));
	EXPECT_EQ(-EINVAL, share_grant(self->a, self->reg.handle, domain_of(self->b),
				 0, &tok));
	EXPECT_EQ(-EINVAL, share_grant(self->a, self->reg.handle, domain_of(self->b),
				 METADEF_SHARE_WRITE, &tok));
	EXPECT_EQ(-EINVAL, share_grant(self->a, self->reg.handle, domain_of(self->b),
				 1u << 7 | METADEF_SHARE_READ, &tok));
	memset(&g, 0, sizeof(g));
	g.handle = self->reg.handle;
	g.domain_id = domain_of(self->b);
	g.flags = METADEF_SHARE_READ;
	g.reserved[1] = 1;
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->a, METADEF_IOC_GRANT, &g));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-ENOENT, share_revoke(self->a, 9999, 0));
	memset(&rv, 0, sizeof(rv));
	rv.handle = self->reg.handle;
	rv.flags = 2;
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->a, METADEF_IOC_REVOKE, &rv));
	EXPECT_EQ(EINVAL, errno);
	/* Revoking what was never shared is fine. */
	EXPECT_EQ(0, share_revoke(self->a, self->reg.handle, 0));
}

TEST_HARNESS_MAIN
