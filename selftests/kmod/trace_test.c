// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: the module's tracepoints (kmod/trace.h). A tracefs instance
 * of its own records the metadef events while two domains go through
 * ALLOC, mmap and page faults, GRANT, IMPORT, COPY (and a refused one, with
 * its device-MMU fault), REVOKE and FREE; every event must be there with
 * the domain, handle, size, device VA, access and result the ioctls
 * reported, and a sane latency where it has one. Unprivileged users may
 * neither enable the events nor record them through perf_event_open().
 * Where perf is in the guest (tools/check adds Debian's linux-perf),
 * perf record -e 'metadef:*' must see them too.
 *
 * Skips only when the kernel has no tracefs at all (no CONFIG_TRACING).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/metadef.h>
#include <linux/perf_event.h>

#include "md_ioctl.h"
#include "kselftest_harness.h"

#define DEV "/dev/metadef"
#define INSTANCE "metadef_trace_test"
#define PERF "/usr/bin/perf"
#define MAX_EVENTS 512
/* Under qemu TCG an ioctl may take long; a latency past this is broken. */
#define LATENCY_MAX_NS 5000000000ULL

/* tracefs's mount point, mounting it if need be; NULL: no tracefs. */
static const char *tracefs(void)
{
	static const char *const dirs[] = {
		"/sys/kernel/tracing", "/sys/kernel/debug/tracing",
	};
	char path[PATH_MAX];
	unsigned int i;

	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/events", dirs[i]);
		if (!access(path, F_OK))
			return dirs[i];
	}
	/* The guest's /init mounts debugfs, not tracefs. */
	if (!mount("tracefs", dirs[0], "tracefs", 0, NULL))
		return dirs[0];
	return NULL;
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -EIO;
}

/* A file's contents, NUL-terminated (free() it), or NULL. */
static char *read_file(const char *path)
{
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0 || !buf) {
		if (fd >= 0)
			close(fd);
		free(buf);
		return NULL;
	}
	while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
		len += n;
		if (cap - len < 4096) {
			char *nb = realloc(buf, cap *= 2);

			if (!nb)
				break;
			buf = nb;
		}
	}
	close(fd);
	buf[len] = 0;
	return buf;
}

/* One metadef event: its name and " key=value ..." (leading space). */
struct ev {
	char name[32];
	char args[480];
};

struct evs {
	int n;
	struct ev ev[MAX_EVENTS];
};

/*
 * The metadef events of a trace listing: ftrace's "...: metadef_alloc:
 * domain=1 ..." and perf script's "...: metadef:metadef_alloc: ..." alike.
 */
static void parse_events(const char *text, struct evs *out)
{
	const char *line = text;

	out->n = 0;
	while (line && *line && out->n < MAX_EVENTS) {
		const char *end = strchr(line, '\n');
		const char *p = line, *name, *colon;
		size_t len = end ? (size_t)(end - line) : strlen(line);
		struct ev *e = &out->ev[out->n];

		while ((p = memmem(p, len - (p - line), "metadef_", 8))) {
			if (p > line && (p[-1] == ' ' || p[-1] == ':'))
				break;
			p += 8;
		}
		if (p && line[0] != '#') {
			name = p;
			colon = memchr(name, ':', len - (name - line));
			if (colon && colon - name < (long)sizeof(e->name) &&
			    colon[1] == ' ') {
				size_t alen = len - (colon + 1 - line);

				memcpy(e->name, name, colon - name);
				e->name[colon - name] = 0;
				if (alen >= sizeof(e->args))
					alen = sizeof(e->args) - 1;
				memcpy(e->args, colon + 1, alen);
				e->args[alen] = 0;
				out->n++;
			}
		}
		line = end ? end + 1 : NULL;
	}
}

/* Does @e carry the token "key=value" @tok? */
static int has_token(const struct ev *e, const char *tok, size_t len)
{
	const char *p = e->args;

	while ((p = strstr(p, tok))) {
		if (p[-1] == ' ' && (p[len] == ' ' || p[len] == 0))
			return 1;
		p++;
	}
	return 0;
}

/*
 * The first event named @name at or after @from whose fields include
 * every "key=value" of @want (space separated); its index or -1.
 */
static int find_ev(const struct evs *evs, int from, const char *name,
		   const char *want)
{
	int i;

	for (i = from; i < evs->n; i++) {
		const struct ev *e = &evs->ev[i];
		const char *w = want;
		int ok = 1;

		if (strcmp(e->name, name))
			continue;
		while (ok && *w) {
			size_t len = strcspn(w, " ");
			char tok[64];

			if (len && len < sizeof(tok)) {
				memcpy(tok, w, len);
				tok[len] = 0;
				ok = has_token(e, tok, len);
			}
			w += len;
			w += strspn(w, " ");
		}
		if (ok)
			return i;
	}
	return -1;
}

/* A number field of event @i ("0x" hex too); ULLONG_MAX if missing. */
static unsigned long long ev_field(const struct evs *evs, int i,
				   const char *key)
{
	char pat[40];
	const char *p;

	if (i < 0 || i >= evs->n)
		return ULLONG_MAX;
	snprintf(pat, sizeof(pat), " %s=", key);
	p = strstr(evs->ev[i].args, pat);
	return p ? strtoull(p + strlen(pat), NULL, 0) : ULLONG_MAX;
}

static void dump_events(struct __test_metadata *_metadata,
			const struct evs *evs)
{
	int i;

	for (i = 0; i < evs->n; i++)
		TH_LOG("%s:%s", evs->ev[i].name, evs->ev[i].args);
}

#define EXPECT_LATENCY(evs, i) do {					\
	unsigned long long ns_ = ev_field(evs, i, "latency_ns");	\
	EXPECT_LT(0, ns_);						\
	EXPECT_GT(LATENCY_MAX_NS, ns_);					\
} while (0)

FIXTURE(trace) {
	const char *tfs;
	char inst[PATH_MAX];
	struct evs evs;
};

FIXTURE_SETUP(trace)
{
	char path[PATH_MAX + 64];

	self->tfs = tracefs();
	if (!self->tfs)
		SKIP(return, "no tracefs: this kernel has no CONFIG_TRACING");
	snprintf(path, sizeof(path), "%s/events/metadef", self->tfs);
	ASSERT_EQ(0, access(path, F_OK)) {
		TH_LOG("tracefs is there but %s is not: metadef.ko without its tracepoints?",
		       path);
	}
	/* An instance: nothing else's events, nobody else's settings. */
	snprintf(self->inst, sizeof(self->inst), "%s/instances/" INSTANCE,
		 self->tfs);
	rmdir(self->inst);
	ASSERT_EQ(0, mkdir(self->inst, 0700)) {
		TH_LOG("mkdir %s: %s", self->inst, strerror(errno));
	}
	snprintf(path, sizeof(path), "%s/events/metadef/enable", self->inst);
	ASSERT_EQ(0, write_file(path, "1"));
}

FIXTURE_TEARDOWN(trace)
{
	char path[PATH_MAX + 64];

	if (!self->tfs)
		return;
	snprintf(path, sizeof(path), "%s/events/metadef/enable", self->inst);
	write_file(path, "0");
	rmdir(self->inst);
}

/* Stop recording and parse what the instance holds. */
static void collect(struct __test_metadata *_metadata,
		    FIXTURE_DATA(trace) *self)
{
	char path[PATH_MAX + 64];
	char *text;

	snprintf(path, sizeof(path), "%s/events/metadef/enable", self->inst);
	ASSERT_EQ(0, write_file(path, "0"));
	snprintf(path, sizeof(path), "%s/trace", self->inst);
	text = read_file(path);
	ASSERT_NE(NULL, text);
	parse_events(text, &self->evs);
	free(text);
}

TEST_F(trace, every_event_with_its_fields)
{
	struct metadef_alloc reg, mine, bad;
	struct metadef_import im;
	unsigned int a_id, b_id;
	struct evs *evs = &self->evs;
	char want[256];
	uint64_t tok;
	int a, b, i, at;
	char *p;

	a = open(DEV, O_RDWR | O_CLOEXEC);
	b = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	a_id = domain_of(a);
	b_id = domain_of(b);

	ASSERT_EQ(0, alloc(a, 8192, &reg));
	ASSERT_EQ(0, alloc(b, 4096, &mine));
	EXPECT_EQ(-EINVAL, alloc(a, 0, &bad));
	p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, a,
		 reg.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 1;		/* a page fault at offset 0 */
	p[4096] = 2;		/* and at 4096 */
	ASSERT_EQ(0, share_grant(a, reg.handle, b_id, METADEF_SHARE_READ,
				 &tok));
	ASSERT_EQ(0, share_import(b, tok, &im));
	ASSERT_EQ(0, copy(b, mine.dev_va, im.dev_va + 4096, 4096));
	/* Into a read-only import: refused, and the device MMU faults. */
	EXPECT_EQ(-EFAULT, copy(b, im.dev_va, mine.dev_va, 4096));
	ASSERT_EQ(0, share_revoke(a, reg.handle, b_id));
	ASSERT_EQ(0, release(b, im.handle));
	ASSERT_EQ(0, release(a, reg.handle));	/* still mapped */
	EXPECT_EQ(-ENOENT, release(a, reg.handle));
	munmap(p, 8192);
	ASSERT_EQ(0, release(b, mine.handle));
	close(a);
	close(b);

	collect(_metadata, self);
	if (evs->n < 14)
		dump_events(_metadata, evs);
	else
		TH_LOG("%d metadef events, the first: %s:%s", evs->n,
		       evs->ev[0].name, evs->ev[0].args);

	snprintf(want, sizeof(want),
		 "domain=%u handle=%u size=8192 alloc_size=8192 align=0 dev_va=0x%llx ret=0",
		 a_id, reg.handle, (unsigned long long)reg.dev_va);
	i = find_ev(evs, 0, "metadef_alloc", want);
	ASSERT_LE(0, i) TH_LOG("no metadef_alloc: %s", want);
	EXPECT_LATENCY(evs, i);
	at = i;

	snprintf(want, sizeof(want), "domain=%u size=0 ret=%d", a_id, -EINVAL);
	EXPECT_LE(0, find_ev(evs, 0, "metadef_alloc", want))
		TH_LOG("no failed metadef_alloc: %s", want);

	snprintf(want, sizeof(want),
		 "domain=%u owner=%u handle=%u import_id=0 size=8192 offset=0 access=rw ret=0",
		 a_id, a_id, reg.handle);
	i = find_ev(evs, at, "metadef_map", want);
	ASSERT_LE(0, i) TH_LOG("no metadef_map after the alloc: %s", want);
	at = i;

	snprintf(want, sizeof(want),
		 "domain=%u owner=%u handle=%u offset=0 ret=0", a_id, a_id,
		 reg.handle);
	EXPECT_LE(0, find_ev(evs, at, "metadef_cpu_fault", want))
		TH_LOG("no metadef_cpu_fault: %s", want);
	snprintf(want, sizeof(want),
		 "domain=%u owner=%u handle=%u offset=4096 ret=0", a_id, a_id,
		 reg.handle);
	EXPECT_LE(0, find_ev(evs, at, "metadef_cpu_fault", want))
		TH_LOG("no metadef_cpu_fault: %s", want);

	snprintf(want, sizeof(want),
		 "domain=%u target=%u handle=%u size=8192 access=r- ret=0",
		 a_id, b_id, reg.handle);
	i = find_ev(evs, at, "metadef_grant", want);
	ASSERT_LE(0, i) TH_LOG("no metadef_grant: %s", want);
	at = i;

	snprintf(want, sizeof(want),
		 "domain=%u handle=%u owner=%u owner_handle=%u size=8192 dev_va=0x%llx access=r- ret=0",
		 b_id, im.handle, a_id, reg.handle,
		 (unsigned long long)reg.dev_va);
	i = find_ev(evs, at, "metadef_import", want);
	ASSERT_LE(0, i) TH_LOG("no metadef_import: %s", want);
	at = i;

	snprintf(want, sizeof(want),
		 "domain=%u src_va=0x%llx dst_va=0x%llx size=4096 ret=0", b_id,
		 (unsigned long long)im.dev_va + 4096,
		 (unsigned long long)mine.dev_va);
	i = find_ev(evs, at, "metadef_copy", want);
	ASSERT_LE(0, i) TH_LOG("no metadef_copy: %s", want);
	EXPECT_LATENCY(evs, i);
	at = i;

	snprintf(want, sizeof(want), "domain=%u size=4096 ret=%d", b_id,
		 -EFAULT);
	i = find_ev(evs, at, "metadef_copy", want);
	EXPECT_LE(0, i) TH_LOG("no refused metadef_copy: %s", want);
	snprintf(want, sizeof(want),
		 "domain=%u va=0x%llx access=-w reason=permission", b_id,
		 (unsigned long long)im.dev_va);
	EXPECT_LE(0, find_ev(evs, at, "metadef_fault", want))
		TH_LOG("no metadef_fault: %s", want);

	snprintf(want, sizeof(want),
		 "domain=%u handle=%u target=%u size=8192 imports=1 grants=0 ret=0",
		 a_id, reg.handle, b_id);
	i = find_ev(evs, at, "metadef_revoke", want);
	ASSERT_LE(0, i) TH_LOG("no metadef_revoke: %s", want);
	EXPECT_LATENCY(evs, i);
	at = i;

	/* The revoked import reached nothing any more. */
	snprintf(want, sizeof(want),
		 "domain=%u handle=%u import=1 size=0 ret=0", b_id, im.handle);
	EXPECT_LE(0, find_ev(evs, at, "metadef_free", want))
		TH_LOG("no metadef_free of the import: %s", want);
	snprintf(want, sizeof(want),
		 "domain=%u handle=%u import=0 size=8192 dev_va=0x%llx mapped=1 ret=0",
		 a_id, reg.handle, (unsigned long long)reg.dev_va);
	i = find_ev(evs, at, "metadef_free", want);
	ASSERT_LE(0, i) TH_LOG("no metadef_free: %s", want);
	EXPECT_LATENCY(evs, i);
	snprintf(want, sizeof(want), "domain=%u handle=%u ret=%d", a_id,
		 reg.handle, -ENOENT);
	EXPECT_LE(0, find_ev(evs, i, "metadef_free", want))
		TH_LOG("no refused metadef_free: %s", want);
}

/*
 * Answers the caller never got, and frees nobody asked for: an ALLOC whose
 * answer cannot be written back is undone and traced with the -EFAULT the
 * caller saw (never ret=0), and closing a domain that still holds a
 * region traces that region's free.
 */
TEST_F(trace, undone_alloc_and_free_at_close)
{
	struct evs *evs = &self->evs;
	struct metadef_import *rim, im;
	struct metadef_alloc held, *ro;
	struct metadef_grant *rg;
	unsigned int a_id, c_id;
	uint64_t free0, tok;
	char want[256];
	int a, c;

	a = open(DEV, O_RDWR | O_CLOEXEC);
	c = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, a);
	ASSERT_LE(0, c);
	a_id = domain_of(a);
	c_id = domain_of(c);
	free0 = info_of(a).pool_free;

	/* The request is readable, its answer cannot be written. */
	ro = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	memset(ro, 0, sizeof(*ro));
	ro->size = 12288;
	ASSERT_EQ(0, mprotect(ro, 4096, PROT_READ));
	EXPECT_EQ(-1, ioctl(a, METADEF_IOC_ALLOC, ro));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(free0, info_of(a).pool_free);	/* nothing stayed behind */
	munmap(ro, 4096);

	/* The same for a GRANT: undone, traced as the -EFAULT it was. */
	ASSERT_EQ(0, alloc(c, 8192, &held));
	rg = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, rg);
	memset(rg, 0, sizeof(*rg));
	rg->handle = held.handle;
	rg->domain_id = a_id;
	rg->flags = METADEF_SHARE_READ | METADEF_SHARE_WRITE;
	ASSERT_EQ(0, mprotect(rg, 4096, PROT_READ));
	EXPECT_EQ(-1, ioctl(c, METADEF_IOC_GRANT, rg));
	EXPECT_EQ(EFAULT, errno);
	munmap(rg, 4096);

	/* The same for an IMPORT: undone, and the grant can be taken again. */
	ASSERT_EQ(0, share_grant(c, held.handle, a_id, METADEF_SHARE_READ,
				 &tok));
	rim = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, rim);
	memset(rim, 0, sizeof(*rim));
	rim->token = tok;
	ASSERT_EQ(0, mprotect(rim, 4096, PROT_READ));
	EXPECT_EQ(-1, ioctl(a, METADEF_IOC_IMPORT, rim));
	EXPECT_EQ(EFAULT, errno);
	munmap(rim, 4096);
	ASSERT_EQ(0, share_import(a, tok, &im));

	close(c);			/* still holding it */
	close(a);

	collect(_metadata, self);
	snprintf(want, sizeof(want), "domain=%u size=12288 alloc_size=12288 ret=%d",
		 a_id, -EFAULT);
	EXPECT_LE(0, find_ev(evs, 0, "metadef_alloc", want)) {
		TH_LOG("no undone metadef_alloc: %s", want);
		dump_events(_metadata, evs);
	}
	snprintf(want, sizeof(want), "domain=%u size=12288 ret=0", a_id);
	EXPECT_EQ(-1, find_ev(evs, 0, "metadef_alloc", want))
		TH_LOG("the undone ALLOC was traced as a success");
	snprintf(want, sizeof(want), "domain=%u handle=%u size=8192 ret=0",
		 c_id, held.handle);
	EXPECT_LE(0, find_ev(evs, 0, "metadef_alloc", want));
	snprintf(want, sizeof(want),
		 "domain=%u target=%u handle=%u size=8192 access=rw ret=%d",
		 c_id, a_id, held.handle, -EFAULT);
	EXPECT_LE(0, find_ev(evs, 0, "metadef_grant", want))
		TH_LOG("no undone metadef_grant: %s", want);
	snprintf(want, sizeof(want),
		 "domain=%u target=%u handle=%u size=8192 access=rw ret=0",
		 c_id, a_id, held.handle);
	EXPECT_EQ(-1, find_ev(evs, 0, "metadef_grant", want))
		TH_LOG("the undone GRANT was traced as a success");
	snprintf(want, sizeof(want),
		 "domain=%u owner=%u owner_handle=%u size=8192 access=r- ret=%d",
		 a_id, c_id, held.handle, -EFAULT);
	EXPECT_LE(0, find_ev(evs, 0, "metadef_import", want))
		TH_LOG("no undone metadef_import: %s", want);
	snprintf(want, sizeof(want),
		 "domain=%u handle=%u owner=%u owner_handle=%u size=8192 ret=0",
		 a_id, im.handle, c_id, held.handle);
	EXPECT_LE(0, find_ev(evs, 0, "metadef_import", want))
		TH_LOG("no metadef_import: %s", want);
	/* Both closes: the owner's region and the importer's handle. */
	snprintf(want, sizeof(want), "domain=%u handle=%u import=1 ret=0",
		 a_id, im.handle);
	EXPECT_LE(0, find_ev(evs, 0, "metadef_free", want))
		TH_LOG("no metadef_free of the import at close: %s", want);
	snprintf(want, sizeof(want),
		 "domain=%u handle=%u import=0 size=8192 dev_va=0x%llx ret=0",
		 c_id, held.handle, (unsigned long long)held.dev_va);
	EXPECT_LE(0, find_ev(evs, 0, "metadef_free", want)) {
		TH_LOG("no metadef_free at close: %s", want);
		dump_events(_metadata, evs);
	}
}

/* The importer's mapping and the refusals of map and fault. */
TEST_F(trace, import_map_and_refusals)
{
	struct metadef_alloc reg;
	struct metadef_import im;
	unsigned int a_id, b_id;
	struct evs *evs = &self->evs;
	char want[256];
	uint64_t tok;
	char *p, *q;
	int a, b;

	a = open(DEV, O_RDWR | O_CLOEXEC);
	b = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	a_id = domain_of(a);
	b_id = domain_of(b);
	ASSERT_EQ(0, alloc(a, 4096, &reg));
	ASSERT_EQ(0, share_grant(a, reg.handle, b_id, METADEF_SHARE_READ,
				 &tok));
	ASSERT_EQ(0, share_import(b, tok, &im));
	/* Writable is refused on a read-only import; read-only maps. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				   MAP_SHARED, b, im.mmap_offset));
	q = mmap(NULL, 4096, PROT_READ, MAP_SHARED, b, im.mmap_offset);
	ASSERT_NE(MAP_FAILED, q);
	(void)*(volatile char *)q;
	ASSERT_EQ(0, share_revoke(a, reg.handle, 0));
	EXPECT_EQ(1, touch_faults(q, 0));	/* SIGBUS, traced */
	/* A grant to a domain that does not exist. */
	EXPECT_EQ(-ENOENT, share_grant(a, reg.handle, 0x7fffffff,
				       METADEF_SHARE_READ, &tok));
	EXPECT_EQ(-ENOENT, share_import(b, 12345, &im));
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, a, reg.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	munmap(p, 4096);
	munmap(q, 4096);
	close(a);
	close(b);

	collect(_metadata, self);

	snprintf(want, sizeof(want),
		 "domain=%u owner=%u handle=%u size=4096 access=rw ret=%d",
		 b_id, a_id, reg.handle, -EACCES);
	EXPECT_LE(0, find_ev(evs, 0, "metadef_map", want))
		TH_LOG("no refused metadef_map: %s", want);
	snprintf(want, sizeof(want),
		 "domain=%u owner=%u handle=%u size=4096 access=r- ret=0",
		 b_id, a_id, reg.handle);
	EXPECT_LE(0, find_ev(evs, 0, "metadef_map", want))
		TH_LOG("no importer's metadef_map: %s", want);
	EXPECT_NE(0, ev_field(evs, find_ev(evs, 0, "metadef_map", want),
			      "import_id"));
	snprintf(want, sizeof(want),
		 "domain=%u owner=%u handle=%u offset=0 ret=0", b_id, a_id,
		 reg.handle);
	EXPECT_LE(0, find_ev(evs, 0, "metadef_cpu_fault", want))
		TH_LOG("no importer's metadef_cpu_fault: %s", want);
	snprintf(want, sizeof(want),
		 "domain=%u owner=%u handle=%u offset=0 ret=%d", b_id, a_id,
		 reg.handle, -EFAULT);
	EXPECT_LE(0, find_ev(evs, 0, "metadef_cpu_fault", want))
		TH_LOG("no refused metadef_cpu_fault: %s", want);
	snprintf(want, sizeof(want),
		 "domain=%u handle=%u target=0 size=4096 imports=1 grants=0 ret=0",
		 a_id, reg.handle);
	EXPECT_LE(0, find_ev(evs, 0, "metadef_revoke", want))
		TH_LOG("no metadef_revoke of all: %s", want);
	snprintf(want, sizeof(want),
		 "domain=%u target=%u handle=%u size=4096 ret=%d", a_id,
		 0x7fffffff, reg.handle, -ENOENT);
	EXPECT_LE(0, find_ev(evs, 0, "metadef_grant", want))
		TH_LOG("no refused metadef_grant: %s", want);
	snprintf(want, sizeof(want), "domain=%u handle=0 owner=0 size=0 ret=%d",
		 b_id, -ENOENT);
	EXPECT_LE(0, find_ev(evs, 0, "metadef_import", want))
		TH_LOG("no refused metadef_import: %s", want);
}

/* Nothing is recorded while the events are off. */
TEST_F(trace, nothing_while_disabled)
{
	char path[PATH_MAX + 64];
	struct metadef_alloc reg;
	int a;

	snprintf(path, sizeof(path), "%s/events/metadef/enable", self->inst);
	ASSERT_EQ(0, write_file(path, "0"));
	a = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, a);
	ASSERT_EQ(0, alloc(a, 4096, &reg));
	ASSERT_EQ(0, release(a, reg.handle));
	close(a);
	collect(_metadata, self);
	EXPECT_EQ(0, self->evs.n);
}

static long perf_open(struct perf_event_attr *attr)
{
	return syscall(__NR_perf_event_open, attr, 0, -1, -1, 0);
}

/* The tracepoint's perf id, from tracefs; -1 if unreadable. */
static long event_id(const char *tfs, const char *event)
{
	char path[PATH_MAX];
	char *s;
	long id;

	snprintf(path, sizeof(path), "%s/events/metadef/%s/id", tfs, event);
	s = read_file(path);
	if (!s)
		return -1;
	id = strtol(s, NULL, 10);
	free(s);
	return id;
}

TEST(unprivileged_cannot_enable_or_record)
{
	const char *tfs = tracefs();
	char enable[PATH_MAX], pipe[PATH_MAX], inst[PATH_MAX];
	int status;
	long id;
	pid_t pid;

	if (!tfs)
		SKIP(return, "no tracefs: this kernel has no CONFIG_TRACING");
	snprintf(enable, sizeof(enable), "%s/events/metadef/enable", tfs);
	snprintf(pipe, sizeof(pipe), "%s/trace_pipe", tfs);
	snprintf(inst, sizeof(inst), "%s/instances/md_nobody", tfs);
	id = event_id(tfs, "metadef_alloc");
	ASSERT_LT(0, id);

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct perf_event_attr attr;
		long fd;

		if (become_nobody(0))
			_exit(99);
		if (open(enable, O_WRONLY) >= 0)
			_exit(1);
		if (errno != EACCES && errno != EPERM)
			_exit(2);
		if (open(pipe, O_RDONLY) >= 0)
			_exit(3);
		if (!mkdir(inst, 0700))
			_exit(4);
		/* The records themselves (PERF_SAMPLE_RAW) through perf. */
		memset(&attr, 0, sizeof(attr));
		attr.type = PERF_TYPE_TRACEPOINT;
		attr.size = sizeof(attr);
		attr.config = id;
		attr.sample_period = 1;
		attr.sample_type = PERF_SAMPLE_RAW;
		fd = perf_open(&attr);
		if (fd >= 0)
			_exit(5);
		if (errno != EACCES && errno != EPERM)
			_exit(6);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) {
		TH_LOG("as nobody: step %d was allowed (99: could not drop privileges)",
		       WEXITSTATUS(status));
	}
	/* And nothing got switched on. */
	{
		char *s = read_file(enable);

		ASSERT_NE(NULL, s);
		EXPECT_EQ('0', s[0]);
		free(s);
	}
}

/*
 * The workload perf records: this program run again with
 * MD_TRACE_WORKLOAD=FILE set, before the harness's main(). It allocates
 * 12 KiB, maps and touches it, copies inside it, frees it, and writes
 * "DOMAIN HANDLE DEV_VA" to FILE.
 */
__attribute__((constructor)) static void perf_workload(void)
{
	const char *out = getenv("MD_TRACE_WORKLOAD");
	struct metadef_alloc reg;
	FILE *f;
	char *p;
	int fd;

	if (!out)
		return;
	fd = open(DEV, O_RDWR | O_CLOEXEC);
	if (fd < 0 || alloc(fd, 12288, &reg))
		_exit(1);
	p = mmap(NULL, 12288, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 reg.mmap_offset);
	if (p == MAP_FAILED)
		_exit(2);
	p[0] = 1;
	if (copy(fd, reg.dev_va + 8192, reg.dev_va, 4096))
		_exit(3);
	munmap(p, 12288);
	if (release(fd, reg.handle))
		_exit(4);
	f = fopen(out, "w");
	if (!f)
		_exit(5);
	fprintf(f, "%u %u %llu\n", domain_of(fd), reg.handle,
		(unsigned long long)reg.dev_va);
	fclose(f);
	close(fd);
	_exit(0);
}

/* Run @argv with stdout and stderr into @log; its exit status or -1. */
static int run(char *const argv[], const char *log, int workload,
	       const char *work_out)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd < 0)
			_exit(127);
		dup2(fd, 1);
		dup2(fd, 2);
		if (workload)
			setenv("MD_TRACE_WORKLOAD", work_out, 1);
		setenv("PAGER", "cat", 1);
		setenv("HOME", "/tmp", 1);
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

TEST(perf_record)
{
	const char *data = "/tmp/md-trace.perf.data";
	const char *work = "/tmp/md-trace.work";
	const char *rlog = "/tmp/md-trace.record.log";
	const char *slog = "/tmp/md-trace.script.txt";
	char self_exe[PATH_MAX], want[200];
	unsigned long long dev_va;
	unsigned int dom, handle;
	static struct evs evs;
	char *text;
	ssize_t n;
	FILE *f;
	int i;

	if (!tracefs())
		SKIP(return, "no tracefs: this kernel has no CONFIG_TRACING");
	if (access(PERF, X_OK))
		SKIP(return, "no %s in this guest (tools/check adds Debian's linux-perf when the host has it)",
		     PERF);
	n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	ASSERT_LT(0, n);
	self_exe[n] = 0;
	unlink(work);
	{
		char *argv[] = { PERF, "record", "-N", "-B",
				 "-e", "metadef:*", "-o", (char *)data, "--",
				 self_exe, NULL };
		int rc = run(argv, rlog, 1, work);

		text = read_file(rlog);
		EXPECT_EQ(0, rc) TH_LOG("perf record: %s", text ? text : "");
		free(text);
		ASSERT_EQ(0, rc);
	}
	f = fopen(work, "r");
	ASSERT_NE(NULL, f) TH_LOG("the workload did not finish");
	ASSERT_EQ(3, fscanf(f, "%u %u %llu", &dom, &handle, &dev_va));
	fclose(f);
	{
		char *argv[] = { PERF, "script", "-i", (char *)data, NULL };
		int rc = run(argv, slog, 0, NULL);

		text = read_file(slog);
		ASSERT_NE(NULL, text);
		EXPECT_EQ(0, rc) TH_LOG("perf script: %s", text);
	}
	parse_events(text, &evs);
	free(text);
	if (evs.n < 5)
		dump_events(_metadata, &evs);
	else
		TH_LOG("perf script: %d metadef events, the first: %s:%s",
		       evs.n, evs.ev[0].name, evs.ev[0].args);

	snprintf(want, sizeof(want),
		 "domain=%u handle=%u size=12288 alloc_size=12288 dev_va=0x%llx ret=0",
		 dom, handle, dev_va);
	i = find_ev(&evs, 0, "metadef_alloc", want);
	EXPECT_LE(0, i) TH_LOG("perf: no metadef_alloc: %s", want);
	EXPECT_LATENCY(&evs, i);
	snprintf(want, sizeof(want),
		 "domain=%u owner=%u handle=%u size=12288 access=rw ret=0", dom,
		 dom, handle);
	EXPECT_LE(0, find_ev(&evs, 0, "metadef_map", want))
		TH_LOG("perf: no metadef_map: %s", want);
	snprintf(want, sizeof(want), "domain=%u handle=%u offset=0 ret=0", dom,
		 handle);
	EXPECT_LE(0, find_ev(&evs, 0, "metadef_cpu_fault", want))
		TH_LOG("perf: no metadef_cpu_fault: %s", want);
	snprintf(want, sizeof(want),
		 "domain=%u src_va=0x%llx dst_va=0x%llx size=4096 ret=0", dom,
		 dev_va, dev_va + 8192);
	i = find_ev(&evs, 0, "metadef_copy", want);
	EXPECT_LE(0, i) TH_LOG("perf: no metadef_copy: %s", want);
	EXPECT_LATENCY(&evs, i);
	snprintf(want, sizeof(want),
		 "domain=%u handle=%u import=0 size=12288 ret=0", dom, handle);
	EXPECT_LE(0, find_ev(&evs, 0, "metadef_free", want))
		TH_LOG("perf: no metadef_free: %s", want);
	unlink(data);
}

TEST_HARNESS_MAIN
