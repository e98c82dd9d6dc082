// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: the generic netlink family "metadef". Every command; dumps
 * larger than one message (300 domains, 300 regions); malformed requests
 * (unknown, wrongly typed, output-only or missing attributes, a reserved
 * header byte, an unknown command) refused with an extack message;
 * set-quota, regions, limits and the events group refused to nobody;
 * each event seen by a listener when its cause is provoked.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/metadef.h>

#include "md_ioctl.h"
#include "md_genl.h"
#include "kselftest_harness.h"

#define DEV "/dev/metadef"
#define MANY 300

static int set_quota_nl(struct md_nl *nl, uint32_t id, uint64_t quota)
{
	struct md_req r;

	md_req(nl, &r, METADEF_CMD_QUOTA_SET, 0);
	md_req_u32(&r, METADEF_A_DOMAIN_ID, id);
	md_req_u64(&r, METADEF_A_DOMAIN_QUOTA, quota);
	return md_nl_call(nl, &r, NULL, NULL);
}

static int limits_set_u64(struct md_nl *nl, int type, uint64_t v)
{
	struct md_req r;

	md_req(nl, &r, METADEF_CMD_LIMITS_SET, 0);
	md_req_u64(&r, type, v);
	return md_nl_call(nl, &r, NULL, NULL);
}

static void copy_cb(struct md_attrs *m, void *ctx)
{
	md_attrs_copy(ctx, m);
}

/* The dump's rows with their attributes, copied out of the buffer. */
struct row {
	uint32_t id, pid, handle, uid;
	uint64_t used, quota, size;
	int regions;
};

struct rows {
	int n;
	struct row r[4096];
};

static void domain_cb(struct md_attrs *m, void *ctx)
{
	struct rows *rows = ctx;
	struct row *r;

	if (rows->n >= 4096 || m->cmd != METADEF_CMD_DOMAIN_GET)
		return;
	r = &rows->r[rows->n++];
	r->id = md_u32(m, METADEF_A_DOMAIN_ID);
	r->pid = md_u32(m, METADEF_A_DOMAIN_PID);
	r->uid = md_u32(m, METADEF_A_DOMAIN_UID);
	r->used = md_u64(m, METADEF_A_DOMAIN_USED);
	r->quota = md_u64(m, METADEF_A_DOMAIN_QUOTA);
	r->regions = md_u32(m, METADEF_A_DOMAIN_REGIONS);
}

static void region_cb(struct md_attrs *m, void *ctx)
{
	struct rows *rows = ctx;
	struct row *r;

	if (rows->n >= 4096 || m->cmd != METADEF_CMD_REGION_GET)
		return;
	r = &rows->r[rows->n++];
	r->id = md_u32(m, METADEF_A_REGION_DOMAIN);
	r->handle = md_u32(m, METADEF_A_REGION_HANDLE);
	r->pid = md_u32(m, METADEF_A_REGION_PID);
	r->size = md_u64(m, METADEF_A_REGION_SIZE);
}

static int dump(struct md_nl *nl, uint8_t cmd, md_nl_cb cb, struct rows *rows)
{
	struct md_req r;

	rows->n = 0;
	md_req(nl, &r, cmd, NLM_F_DUMP);
	return md_nl_call(nl, &r, cb, rows);
}

/* Bytes free over the ORDER nests of @n; returns how many orders. */
static int sum_orders(struct nlattr *n, uint64_t *sum)
{
	struct nlattr *o[MD_NL_MAXATTR + 1];
	int len = md_attr_len(n), off = 0, orders = 0;

	*sum = 0;
	while (off + (int)NLA_HDRLEN <= len) {
		struct nlattr *a = (void *)((char *)md_attr_data(n) + off);
		uint64_t bs = 0, nb = 0;

		md_parse(md_attr_data(a), md_attr_len(a), o, MD_NL_MAXATTR);
		if (!o[METADEF_A_ORDER_BLOCK_SIZE] || !o[METADEF_A_ORDER_FREE_BLOCKS])
			return -1;
		memcpy(&bs, md_attr_data(o[METADEF_A_ORDER_BLOCK_SIZE]), 8);
		memcpy(&nb, md_attr_data(o[METADEF_A_ORDER_FREE_BLOCKS]), 8);
		*sum += bs * nb;
		orders++;
		off += NLA_ALIGN(a->nla_len);
	}
	return orders;
}

FIXTURE(nl) {
	struct md_nl nl;
	int fd;
	struct metadef_info info;
};

FIXTURE_SETUP(nl)
{
	ASSERT_EQ(0, md_nl_open(&self->nl));
	self->fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	self->info = info_of(self->fd);
}

FIXTURE_TEARDOWN(nl)
{
	close(self->fd);
	md_nl_close(&self->nl);
}

TEST_F(nl, family_version_and_events_group)
{
	EXPECT_EQ(METADEF_GENL_VERSION, self->nl.version);
	EXPECT_NE(0, self->nl.mcgrp);
}

TEST_F(nl, pool_matches_info_and_orders_add_up)
{
	struct md_attrs m = {};
	struct md_req r;
	uint64_t sum = 0, free_, largest;
	int orders = 0;

	md_req(&self->nl, &r, METADEF_CMD_POOL_GET, 0);
	ASSERT_EQ(0, md_nl_call(&self->nl, &r, copy_cb, &m));
	ASSERT_EQ(METADEF_CMD_POOL_GET, m.cmd);
	EXPECT_EQ(METADEF_ABI_VERSION, md_u32(&m, METADEF_A_ABI_VERSION));
	EXPECT_EQ(self->info.page_size, md_u32(&m, METADEF_A_PAGE_SIZE));
	EXPECT_STREQ(self->info.backend, md_str(&m, METADEF_A_POOL_BACKEND));
	EXPECT_EQ(self->info.pool_size, md_u64(&m, METADEF_A_POOL_SIZE));
	free_ = md_u64(&m, METADEF_A_POOL_FREE);
	largest = md_u64(&m, METADEF_A_POOL_LARGEST_FREE);
	EXPECT_EQ(self->info.pool_free, free_);
	EXPECT_LE(largest, free_);
	EXPECT_GE(METADEF_PPM, md_u32(&m, METADEF_A_POOL_FRAGMENTATION));
	ASSERT_NE(NULL, m.a[METADEF_A_POOL_ORDERS]);
	/* The per-order free blocks add up to the free bytes. */
	orders = sum_orders(m.a[METADEF_A_POOL_ORDERS], &sum);
	EXPECT_LT(0, orders);
	EXPECT_EQ(free_, sum);
}

TEST_F(nl, fragmentation_follows_the_free_blocks)
{
	struct metadef_alloc a[8];
	struct md_attrs m = {};
	struct md_req r;
	uint64_t f, l;

	/* Every other block taken: free memory in pieces. */
	for (int i = 0; i < 8; i++)
		ASSERT_EQ(0, alloc(self->fd, 1 << 20, &a[i]));
	for (int i = 0; i < 8; i += 2)
		ASSERT_EQ(0, release(self->fd, a[i].handle));
	md_req(&self->nl, &r, METADEF_CMD_POOL_GET, 0);
	ASSERT_EQ(0, md_nl_call(&self->nl, &r, copy_cb, &m));
	f = md_u64(&m, METADEF_A_POOL_FREE);
	l = md_u64(&m, METADEF_A_POOL_LARGEST_FREE);
	ASSERT_LT(0, f);
	EXPECT_EQ((uint32_t)((f - l) * (double)METADEF_PPM / f),
		  md_u32(&m, METADEF_A_POOL_FRAGMENTATION));
	for (int i = 1; i < 8; i += 2)
		ASSERT_EQ(0, release(self->fd, a[i].handle));
}

TEST_F(nl, domains_dump_of_300_takes_several_messages)
{
	static struct rows rows;
	int fds[MANY], mine = 0, found_self = 0;

	for (int i = 0; i < MANY; i++) {
		fds[i] = open(DEV, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, fds[i]);
	}
	ASSERT_EQ(0, dump(&self->nl, METADEF_CMD_DOMAIN_GET, domain_cb, &rows));
	EXPECT_LT(1, self->nl.parts);
	for (int i = 0; i < rows.n; i++) {
		if (rows.r[i].pid != (uint32_t)getpid())
			continue;
		mine++;
		if (rows.r[i].id == self->info.domain_id) {
			found_self = 1;
			EXPECT_EQ(getuid(), rows.r[i].uid);
			EXPECT_EQ(self->info.domain_quota, rows.r[i].quota);
		}
	}
	EXPECT_EQ(MANY + 1, mine);
	EXPECT_TRUE(found_self);
	/* Ids ascend: each once, none skipped where messages were cut. */
	for (int i = 1; i < rows.n; i++)
		EXPECT_LT(rows.r[i - 1].id, rows.r[i].id);
	for (int i = 0; i < MANY; i++)
		close(fds[i]);
}

TEST_F(nl, regions_dump_of_300_takes_several_messages)
{
	static struct rows rows;
	struct metadef_alloc a[MANY];
	int seen = 0;

	for (int i = 0; i < MANY; i++)
		ASSERT_EQ(0, alloc(self->fd, 4096 * (1 + i % 3), &a[i]));
	ASSERT_EQ(0, dump(&self->nl, METADEF_CMD_REGION_GET, region_cb, &rows));
	EXPECT_LT(1, self->nl.parts);
	for (int i = 0; i < rows.n; i++) {
		if (rows.r[i].id != self->info.domain_id)
			continue;
		for (int j = 0; j < MANY; j++) {
			if (a[j].handle == rows.r[i].handle) {
				EXPECT_EQ(a[j].alloc_size, rows.r[i].size);
				seen++;
			}
		}
	}
	EXPECT_EQ(MANY, seen);
	for (int i = 0; i < MANY; i++)
		ASSERT_EQ(0, release(self->fd, a[i].handle));
}

TEST_F(nl, domains_dump_shows_usage)
{
	static struct rows rows;
	struct metadef_alloc a;
	int found = 0;

	ASSERT_EQ(0, alloc(self->fd, 12288, &a));
	ASSERT_EQ(0, dump(&self->nl, METADEF_CMD_DOMAIN_GET, domain_cb, &rows));
	for (int i = 0; i < rows.n; i++) {
		if (rows.r[i].id != self->info.domain_id)
			continue;
		found = 1;
		EXPECT_EQ(12288, rows.r[i].used);
		EXPECT_EQ(1, rows.r[i].regions);
	}
	EXPECT_TRUE(found);
	ASSERT_EQ(0, release(self->fd, a.handle));
}

TEST_F(nl, set_quota_by_id)
{
	EXPECT_EQ(0, set_quota_nl(&self->nl, self->info.domain_id, 1 << 20));
	EXPECT_EQ(1 << 20, info_of(self->fd).domain_quota);
	EXPECT_EQ(0, set_quota_nl(&self->nl, self->info.domain_id,
				  METADEF_QUOTA_UNLIMITED));
	EXPECT_EQ(METADEF_QUOTA_UNLIMITED, info_of(self->fd).domain_quota);
}

TEST_F(nl, set_quota_unknown_domain_enoent)
{
	EXPECT_EQ(-ENOENT, set_quota_nl(&self->nl, 0x7fffff00, 4096));
	EXPECT_NE(NULL, strstr(self->nl.msg, "no such domain"));
	EXPECT_EQ(-ENOENT, set_quota_nl(&self->nl, 0, 4096));
}

TEST_F(nl, set_quota_missing_attribute_einval)
{
	struct md_req r;

	md_req(&self->nl, &r, METADEF_CMD_QUOTA_SET, 0);
	md_req_u32(&r, METADEF_A_DOMAIN_ID, self->info.domain_id);
	EXPECT_EQ(-EINVAL, md_nl_call(&self->nl, &r, NULL, NULL));
	EXPECT_NE(NULL, strstr(self->nl.msg, "quota missing"));
	TH_LOG("extack: %s (missing type %u)", self->nl.msg, self->nl.miss_type);
}

TEST_F(nl, unknown_attribute_einval)
{
	struct md_req r;

	md_req(&self->nl, &r, METADEF_CMD_POOL_GET, 0);
	md_req_u32(&r, METADEF_A_MAX + 7, 1);
	EXPECT_EQ(-EINVAL, md_nl_call(&self->nl, &r, NULL, NULL));
	EXPECT_NE(0, self->nl.msg[0]);
	TH_LOG("extack: %s", self->nl.msg);
}

/* A later family version is refused; 0, from a generic client, is not. */
TEST_F(nl, later_family_version_refused)
{
	struct md_req r;

	md_req_init(&r, self->nl.family, 0, METADEF_CMD_POOL_GET,
		    METADEF_GENL_VERSION + 1);
	EXPECT_EQ(-EINVAL, md_nl_call(&self->nl, &r, NULL, NULL));
	EXPECT_NE(NULL, strstr(self->nl.msg, "version"));
	TH_LOG("extack: %s", self->nl.msg);
	md_req_init(&r, self->nl.family, 0, METADEF_CMD_POOL_GET, 0);
	EXPECT_EQ(0, md_nl_call(&self->nl, &r, NULL, NULL));
}

TEST_F(nl, wrongly_typed_attribute_einval)
{
	struct md_req r;
	uint8_t one = 1;

	md_req(&self->nl, &r, METADEF_CMD_QUOTA_SET, 0);
	md_req_put(&r, METADEF_A_DOMAIN_ID, &one, 1);
	md_req_u64(&r, METADEF_A_DOMAIN_QUOTA, 4096);
	EXPECT_EQ(-EINVAL, md_nl_call(&self->nl, &r, NULL, NULL));
	EXPECT_NE(0, self->nl.msg[0]);
	TH_LOG("extack: %s", self->nl.msg);
	EXPECT_EQ(METADEF_QUOTA_UNLIMITED, info_of(self->fd).domain_quota);
}

TEST_F(nl, output_only_attribute_einval)
{
	struct md_req r;

	md_req(&self->nl, &r, METADEF_CMD_LIMITS_GET, 0);
	md_req_u64(&r, METADEF_A_POOL_FREE, 1);
	EXPECT_EQ(-EINVAL, md_nl_call(&self->nl, &r, NULL, NULL));
	EXPECT_NE(NULL, strstr(self->nl.msg, "reported by the module"));
}

TEST_F(nl, reserved_header_byte_einval)
{
	struct md_req r;

	md_req(&self->nl, &r, METADEF_CMD_POOL_GET, 0);
	md_req_genl(&r)->reserved = 1;
	EXPECT_EQ(-EINVAL, md_nl_call(&self->nl, &r, NULL, NULL));
	EXPECT_NE(NULL, strstr(self->nl.msg, "reserved"));
	md_req(&self->nl, &r, METADEF_CMD_DOMAIN_GET, NLM_F_DUMP);
	md_req_genl(&r)->reserved = 1;
	EXPECT_EQ(-EINVAL, md_nl_call(&self->nl, &r, NULL, NULL));
}

TEST_F(nl, unknown_and_event_commands_refused)
{
	struct md_req r;

	md_req(&self->nl, &r, METADEF_CMD_MAX + 3, 0);
	EXPECT_EQ(-EOPNOTSUPP, md_nl_call(&self->nl, &r, NULL, NULL));
	md_req(&self->nl, &r, METADEF_CMD_EVENT_MMU_FAULT, 0);
	EXPECT_EQ(-EOPNOTSUPP, md_nl_call(&self->nl, &r, NULL, NULL));
}

TEST_F(nl, limits_get_and_set)
{
	struct md_attrs m = {}, after = {};
	struct md_req r;
	uint32_t pct, grants;
	uint64_t bytes;

	md_req(&self->nl, &r, METADEF_CMD_LIMITS_GET, 0);
	ASSERT_EQ(0, md_nl_call(&self->nl, &r, copy_cb, &m));
	ASSERT_NE(NULL, m.a[METADEF_A_LIMIT_USER_DOMAINS]);
	grants = md_u32(&m, METADEF_A_LIMIT_USER_GRANTS);
	pct = md_u32(&m, METADEF_A_LIMIT_USER_PCT);
	bytes = md_u64(&m, METADEF_A_LIMIT_USER_BYTES);

	md_req(&self->nl, &r, METADEF_CMD_LIMITS_SET, 0);
	md_req_u32(&r, METADEF_A_LIMIT_USER_GRANTS, grants + 1);
	md_req_u32(&r, METADEF_A_LIMIT_USER_PCT, 25);
	ASSERT_EQ(0, md_nl_call(&self->nl, &r, NULL, NULL));
	md_req(&self->nl, &r, METADEF_CMD_LIMITS_GET, 0);
	ASSERT_EQ(0, md_nl_call(&self->nl, &r, copy_cb, &after));
	EXPECT_EQ(grants + 1, md_u32(&after, METADEF_A_LIMIT_USER_GRANTS));
	EXPECT_EQ(25, md_u32(&after, METADEF_A_LIMIT_USER_PCT));
	EXPECT_EQ(self->info.pool_size / 4,
		  md_u64(&after, METADEF_A_LIMIT_USER_BYTES_EFFECTIVE));

	/* Out of range, or both byte forms: refused, nothing changed. */
	md_req(&self->nl, &r, METADEF_CMD_LIMITS_SET, 0);
	md_req_u32(&r, METADEF_A_LIMIT_USER_PCT, 101);
	EXPECT_EQ(-ERANGE, md_nl_call(&self->nl, &r, NULL, NULL));
	md_req(&self->nl, &r, METADEF_CMD_LIMITS_SET, 0);
	md_req_u32(&r, METADEF_A_LIMIT_USER_GRANTS, 7);
	md_req_u32(&r, METADEF_A_LIMIT_USER_PCT, 10);
	md_req_u64(&r, METADEF_A_LIMIT_USER_BYTES, 4096);
	EXPECT_EQ(-EINVAL, md_nl_call(&self->nl, &r, NULL, NULL));
	EXPECT_NE(NULL, strstr(self->nl.msg, "exclude"));

	md_req(&self->nl, &r, METADEF_CMD_LIMITS_SET, 0);
	md_req_u32(&r, METADEF_A_LIMIT_USER_GRANTS, grants);
	if (pct)
		md_req_u32(&r, METADEF_A_LIMIT_USER_PCT, pct);
	else
		md_req_u64(&r, METADEF_A_LIMIT_USER_BYTES, bytes);
	ASSERT_EQ(0, md_nl_call(&self->nl, &r, NULL, NULL));
	md_req(&self->nl, &r, METADEF_CMD_LIMITS_GET, 0);
	ASSERT_EQ(0, md_nl_call(&self->nl, &r, copy_cb, &after));
	EXPECT_EQ(grants, md_u32(&after, METADEF_A_LIMIT_USER_GRANTS));
	EXPECT_EQ(pct, md_u32(&after, METADEF_A_LIMIT_USER_PCT));
}

/*
 * In a child turned nobody: what anyone may ask works, what changes or
 * reveals more is EPERM, and so is joining the events group.
 */
TEST_F(nl, unprivileged_refused)
{
	int status;
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct md_nl nl;
		struct md_req r;
		struct md_attrs m;
		static struct rows rows;
		uint32_t grp;

		if (become_nobody(0) || md_nl_open(&nl))
			_exit(10);
		md_req(&nl, &r, METADEF_CMD_POOL_GET, 0);
		if (md_nl_call(&nl, &r, copy_cb, &m))
			_exit(11);
		if (dump(&nl, METADEF_CMD_DOMAIN_GET, domain_cb, &rows) ||
		    !rows.n)
			_exit(12);
		if (set_quota_nl(&nl, self->info.domain_id, 4096) != -EPERM)
			_exit(13);
		if (!strstr(nl.msg, "CAP_SYS_ADMIN"))
			_exit(14);
		if (dump(&nl, METADEF_CMD_REGION_GET, region_cb, &rows) != -EPERM)
			_exit(15);
		if (limits_set_u64(&nl, METADEF_A_LIMIT_LOW_WATER, 1) != -EPERM)
			_exit(16);
		grp = nl.mcgrp;
		if (!setsockopt(nl.fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP,
				&grp, sizeof(grp)) || errno != EPERM)
			_exit(17);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(METADEF_QUOTA_UNLIMITED, info_of(self->fd).domain_quota);
}

/* ---------------------------------------------------------------- events */

FIXTURE(ev) {
	struct md_nl nl;	/* requests */
	struct md_nl ev;	/* the listener */
	int fd;
	struct metadef_info info;
};

FIXTURE_SETUP(ev)
{
	uint32_t grp;

	ASSERT_EQ(0, md_nl_open(&self->nl));
	ASSERT_EQ(0, md_nl_open(&self->ev));
	grp = self->ev.mcgrp;
	ASSERT_EQ(0, setsockopt(self->ev.fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP,
				&grp, sizeof(grp)));
	self->fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	self->info = info_of(self->fd);
}

FIXTURE_TEARDOWN(ev)
{
	close(self->fd);
	md_nl_close(&self->ev);
	md_nl_close(&self->nl);
}

/* The next event @cmd (others are skipped); 0, or -errno on timeout. */
static int next_event(struct md_nl *ev, uint8_t cmd, struct md_attrs *out)
{
	static char buf[65536];

	for (;;) {
		int len = recv(ev->fd, buf, sizeof(buf), 0);
		struct nlmsghdr *h;

		if (len < 0)
			return -errno;
		for (h = (void *)buf; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
			struct genlmsghdr *g = NLMSG_DATA(h);

			if (h->nlmsg_type != ev->family || g->cmd != cmd)
				continue;
			/* Its own copy: the buffer is reused. */
			md_attrs_load(out, g->cmd, (char *)g + GENL_HDRLEN,
				      h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN));
			return 0;
		}
	}
}

TEST_F(ev, alloc_refused)
{
	struct metadef_alloc a;
	struct md_attrs m;

	EXPECT_EQ(-ENOMEM, alloc(self->fd, self->info.pool_size + 4096, &a));
	ASSERT_EQ(0, next_event(&self->ev, METADEF_CMD_EVENT_ALLOC_REFUSED, &m));
	EXPECT_EQ(self->info.pool_size + 4096, md_u64(&m, METADEF_A_EVENT_SIZE));
	EXPECT_EQ(self->info.domain_id, md_u32(&m, METADEF_A_DOMAIN_ID));
	EXPECT_EQ(self->info.pool_free, md_u64(&m, METADEF_A_POOL_FREE));
	EXPECT_EQ(self->info.pool_largest_free,
		  md_u64(&m, METADEF_A_POOL_LARGEST_FREE));
	EXPECT_NE(NULL, m.a[METADEF_A_POOL_FRAGMENTATION]);
}

TEST_F(ev, quota_reached)
{
	struct metadef_alloc a, b;
	struct md_attrs m;

	ASSERT_EQ(0, set_quota_nl(&self->nl, self->info.domain_id, 16384));
	ASSERT_EQ(0, alloc(self->fd, 12288, &a));
	EXPECT_EQ(-EDQUOT, alloc(self->fd, 8192, &b));
	ASSERT_EQ(0, next_event(&self->ev, METADEF_CMD_EVENT_QUOTA_REACHED, &m));
	EXPECT_EQ(self->info.domain_id, md_u32(&m, METADEF_A_DOMAIN_ID));
	EXPECT_EQ(8192, md_u64(&m, METADEF_A_EVENT_SIZE));
	EXPECT_EQ(METADEF_SCOPE_DOMAIN, md_u32(&m, METADEF_A_EVENT_SCOPE));
	EXPECT_EQ(16384, md_u64(&m, METADEF_A_EVENT_LIMIT));
	EXPECT_EQ(12288, md_u64(&m, METADEF_A_EVENT_USED));
	ASSERT_EQ(0, release(self->fd, a.handle));
}

/* Past the user's limit (nobody's domain, the byte limit set by root). */
TEST_F(ev, user_limit_reached)
{
	struct md_attrs m, lim = {};
	struct md_req r;
	int status;
	pid_t pid;

	md_req(&self->nl, &r, METADEF_CMD_LIMITS_GET, 0);
	ASSERT_EQ(0, md_nl_call(&self->nl, &r, copy_cb, &lim));
	ASSERT_EQ(0, limits_set_u64(&self->nl, METADEF_A_LIMIT_USER_BYTES,
				    65536));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct metadef_alloc a, b;
		int fd;

		if (become_nobody(0))
			_exit(10);
		fd = open(DEV, O_RDWR);
		if (fd < 0)
			_exit(11);
		if (alloc(fd, 61440, &a) || alloc(fd, 8192, &b) != -EDQUOT)
			_exit(12);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ASSERT_EQ(0, next_event(&self->ev, METADEF_CMD_EVENT_QUOTA_REACHED, &m));
	EXPECT_EQ(MD_NOBODY, md_u32(&m, METADEF_A_DOMAIN_UID));
	EXPECT_EQ(METADEF_SCOPE_USER, md_u32(&m, METADEF_A_EVENT_SCOPE));
	EXPECT_EQ(65536, md_u64(&m, METADEF_A_EVENT_LIMIT));
	EXPECT_EQ(61440, md_u64(&m, METADEF_A_EVENT_USED));
	EXPECT_EQ(8192, md_u64(&m, METADEF_A_EVENT_SIZE));

	/* Back to what it was: a percentage or bytes. */
	md_req(&self->nl, &r, METADEF_CMD_LIMITS_SET, 0);
	if (md_u32(&lim, METADEF_A_LIMIT_USER_PCT))
		md_req_u32(&r, METADEF_A_LIMIT_USER_PCT,
			   md_u32(&lim, METADEF_A_LIMIT_USER_PCT));
	else
		md_req_u64(&r, METADEF_A_LIMIT_USER_BYTES,
			   md_u64(&lim, METADEF_A_LIMIT_USER_BYTES));
	ASSERT_EQ(0, md_nl_call(&self->nl, &r, NULL, NULL));
}

TEST_F(ev, mmu_fault)
{
	struct metadef_alloc a;
	struct md_attrs m;
	uint64_t bad;

	ASSERT_EQ(0, alloc(self->fd, 4096, &a));
	bad = a.dev_va + (64ull << 30);	/* nothing is mapped there */
	EXPECT_EQ(-EFAULT, copy(self->fd, a.dev_va, bad, 4096));
	ASSERT_EQ(0, next_event(&self->ev, METADEF_CMD_EVENT_MMU_FAULT, &m));
	EXPECT_EQ(self->info.domain_id, md_u32(&m, METADEF_A_DOMAIN_ID));
	EXPECT_EQ(bad, md_u64(&m, METADEF_A_FAULT_VA));
	EXPECT_EQ(METADEF_ACCESS_READ, md_u32(&m, METADEF_A_FAULT_ACCESS));
	EXPECT_EQ(METADEF_FAULT_UNMAPPED, md_u32(&m, METADEF_A_FAULT_REASON));
	ASSERT_EQ(0, release(self->fd, a.handle));
}

/*
 * A mapping keeps its file open, so a domain closes with memory held when
 * another domain imported it (or a dma-buf holds it).
 */
TEST_F(ev, domain_closed_with_memory_shared)
{
	struct metadef_import im;
	struct metadef_alloc a;
	struct md_attrs m;
	int fd = open(DEV, O_RDWR | O_CLOEXEC);
	uint32_t id = domain_of(fd);
	uint64_t token;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, alloc(fd, 8192, &a));
	ASSERT_EQ(0, share_grant(fd, a.handle, self->info.domain_id,
				 METADEF_SHARE_READ, &token));
	ASSERT_EQ(0, share_import(self->fd, token, &im));
	close(fd);
	ASSERT_EQ(0, next_event(&self->ev, METADEF_CMD_EVENT_DOMAIN_LEAK, &m));
	EXPECT_EQ(id, md_u32(&m, METADEF_A_DOMAIN_ID));
	EXPECT_EQ(8192, md_u64(&m, METADEF_A_DOMAIN_USED));
	EXPECT_EQ(1, md_u32(&m, METADEF_A_DOMAIN_REGIONS));
	EXPECT_EQ(getpid(), md_u32(&m, METADEF_A_DOMAIN_PID));
	EXPECT_EQ(0, release(self->fd, im.handle));
}

TEST_F(ev, pool_low_water_once_per_crossing)
{
	struct metadef_alloc a, b;
	struct md_attrs m;
	uint64_t low = info_of(self->fd).pool_free;

	ASSERT_EQ(0, limits_set_u64(&self->nl, METADEF_A_LIMIT_LOW_WATER, low));
	ASSERT_EQ(0, alloc(self->fd, 4096, &a));
	ASSERT_EQ(0, next_event(&self->ev, METADEF_CMD_EVENT_POOL_LOW, &m));
	EXPECT_EQ(low, md_u64(&m, METADEF_A_LIMIT_LOW_WATER));
	EXPECT_EQ(low - 4096, md_u64(&m, METADEF_A_POOL_FREE));
	EXPECT_EQ(self->info.pool_size, md_u64(&m, METADEF_A_POOL_SIZE));
	/* Still below: no second event until free memory is back. */
	ASSERT_EQ(0, alloc(self->fd, 4096, &b));
	ASSERT_EQ(0, release(self->fd, b.handle));
	ASSERT_EQ(0, release(self->fd, a.handle));
	ASSERT_EQ(0, alloc(self->fd, 12288, &a));
	ASSERT_EQ(0, next_event(&self->ev, METADEF_CMD_EVENT_POOL_LOW, &m));
	EXPECT_EQ(low - 12288, md_u64(&m, METADEF_A_POOL_FREE));
	ASSERT_EQ(0, release(self->fd, a.handle));
	ASSERT_EQ(0, limits_set_u64(&self->nl, METADEF_A_LIMIT_LOW_WATER, 0));
}

TEST_HARNESS_MAIN
