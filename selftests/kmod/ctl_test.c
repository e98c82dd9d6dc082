// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: metadefctl itself, as an operator runs it (the VM tiers put
 * it in /bin): text and --json for every command, the JSON parsed and
 * compared with debugfs and the ioctls, monitor receiving an event, and
 * the exits: 0 on success, 1 for refusals (no such domain, permission
 * denied as nobody), 2 for usage errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/metadef.h>

#include "md_ioctl.h"
#include "../lib/json_mini.h"
#include "kselftest_harness.h"

#define DEV "/dev/metadef"
#define OUT_MAX (1 << 20)

static const char *ctl_path(void)
{
	const char *p = getenv("METADEFCTL");

	return p && *p ? p : "/bin/metadefctl";
}

struct run {
	int status;		/* exit status; -1 if it did not exit */
	char *out, *err;
};

/* Read all of @fd into a NUL-terminated malloc()ed buffer. */
static char *slurp(int fd)
{
	char *buf = malloc(OUT_MAX + 1);
	size_t len = 0;
	ssize_t n;

	if (!buf)
		return NULL;
	while (len < OUT_MAX && (n = read(fd, buf + len, OUT_MAX - len)) > 0)
		len += n;
	buf[len] = 0;
	return buf;
}

/*
 * Run metadefctl with @args (NULL-terminated), as nobody if @nobody.
 * stderr goes to a file so that neither pipe can block the other.
 */
static struct run ctl(int nobody, const char *const *args)
{
	struct run r = { .status = -1 };
	const char *argv[16] = { "metadefctl" };
	char errname[] = "/tmp/ctl_test.XXXXXX";
	int out[2], errfd, i, st;
	pid_t pid;

	for (i = 0; args[i] && i < 14; i++)
		argv[i + 1] = args[i];
	argv[i + 1] = NULL;
	errfd = mkstemp(errname);
	if (errfd < 0 || pipe(out))
		return r;
	unlink(errname);
	pid = fork();
	if (pid == 0) {
		dup2(out[1], 1);
		dup2(errfd, 2);
		close(out[0]);
		if (nobody && become_nobody(0))
			_exit(99);
		execv(ctl_path(), (char **)argv);
		_exit(98);
	}
	close(out[1]);
	r.out = slurp(out[0]);
	close(out[0]);
	if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st))
		r.status = WEXITSTATUS(st);
	lseek(errfd, 0, SEEK_SET);
	r.err = slurp(errfd);
	close(errfd);
	return r;
}

#define CTL(...) ctl(0, (const char *const[]){ __VA_ARGS__, NULL })
#define CTL_NOBODY(...) ctl(1, (const char *const[]){ __VA_ARGS__, NULL })

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

/* A debugfs "NAME\tVALUE" line's value, or -1. */
static long long debugfs_value(const char *file, const char *name)
{
	char path[128], line[256], key[64];
	long long v = -1, x;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/metadef/%s", file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lld", key, &x) == 2 && !strcmp(key, name))
			v = x;
	fclose(f);
	return v;
}

/*
 * One debugfs file as rows of tab-separated fields: "NAME\tVALUE" files
 * give two-field rows, tables a header row of names and then one row per
 * object. Lines starting with '#' are comments.
 */
#define DF_ROWS 256
#define DF_COLS 16

struct dfile {
	int rows;
	int cols[DF_ROWS];
	char *f[DF_ROWS][DF_COLS];
	char *text;
};

static int dfile_read(const char *file, struct dfile *d)
{
	char path[128], *line, *save = NULL;
	FILE *f;
	size_t n;

	memset(d, 0, sizeof(*d));
	snprintf(path, sizeof(path), "/sys/kernel/debug/metadef/%s", file);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	d->text = calloc(1, OUT_MAX + 1);
	n = d->text ? fread(d->text, 1, OUT_MAX, f) : 0;
	fclose(f);
	if (!d->text)
		return -ENOMEM;
	d->text[n] = 0;
	for (line = strtok_r(d->text, "\n", &save); line && d->rows < DF_ROWS;
	     line = strtok_r(NULL, "\n", &save)) {
		char *fs = NULL, *t;

		if (*line == '#')
			continue;
		for (t = strtok_r(line, "\t", &fs); t && d->cols[d->rows] < DF_COLS;
		     t = strtok_r(NULL, "\t", &fs))
			d->f[d->rows][d->cols[d->rows]++] = t;
		d->rows++;
	}
	return 0;
}

/* The VALUE of a "NAME\tVALUE" row, or NULL. */
static const char *dfile_value(const struct dfile *d, const char *name)
{
	for (int i = 0; i < d->rows; i++)
		if (d->cols[i] == 2 && !strcmp(d->f[i][0], name))
			return d->f[i][1];
	return NULL;
}

/* Column @name of the table whose header is row @hdr, or -1. */
static int dfile_col(const struct dfile *d, int hdr, const char *name)
{
	for (int c = 0; c < d->cols[hdr]; c++)
		if (!strcmp(d->f[hdr][c], name))
			return c;
	return -1;
}

/*
 * Does debugfs text @text say what JSON value @v says? Numbers are
 * decimal (or 0x... for offsets), null is "unlimited", strings are equal.
 */
static bool same_value(const char *text, const struct jv *v)
{
	char *end;

	switch (v->t) {
	case J_NULL:
		return !strcmp(text, "unlimited");
	case J_STR:
		return !strcmp(text, v->str);
	case J_NUM:
		return strtoull(text, &end, 0) == v->u && !*end;
	default:
		return false;
	}
}

FIXTURE(ctl) {
	int fd;
	struct metadef_info info;
};

FIXTURE_SETUP(ctl)
{
	if (access(ctl_path(), X_OK))
		SKIP(return, "no %s in this VM", ctl_path());
	self->fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	self->info = info_of(self->fd);
}

FIXTURE_TEARDOWN(ctl)
{
	if (self->fd > 0)
		close(self->fd);
}

TEST_F(ctl, help_and_usage_errors)
{
	struct run r = CTL("--help");

	EXPECT_EQ(0, r.status);
	EXPECT_NE(NULL, strstr(r.out, "set-quota DOMAIN BYTES"));
	EXPECT_NE(NULL, strstr(r.out, "monitor"));
	run_free(&r);
	r = CTL("frobnicate");
	EXPECT_EQ(2, r.status);
	EXPECT_NE(NULL, strstr(r.err, "unknown command"));
	run_free(&r);
	r = CTL("set-quota", "1");
	EXPECT_EQ(2, r.status);
	run_free(&r);
	r = CTL("set-quota", "x", "1M");
	EXPECT_EQ(2, r.status);
	EXPECT_NE(NULL, strstr(r.err, "not a domain id"));
	run_free(&r);
	r = CTL("set-quota", "1", "lots");
	EXPECT_EQ(2, r.status);
	run_free(&r);
	r = CTL("limits", "nonsense=3");
	EXPECT_EQ(2, r.status);
	run_free(&r);
	r = CTL("pool", "extra");
	EXPECT_EQ(2, r.status);
	run_free(&r);
}

TEST_F(ctl, pool_json_matches_debugfs)
{
	struct run r = CTL("--json", "pool");
	const struct jv *orders;
	uint64_t sum = 0;
	struct jv v;

	ASSERT_EQ(0, r.status);
	ASSERT_TRUE(json_parse(r.out, &v));
	EXPECT_STREQ(self->info.backend, json_str(&v, "backend"));
	EXPECT_EQ(debugfs_value("pool", "size"), (long long)json_u64(&v, "size"));
	EXPECT_EQ(debugfs_value("pool", "free"), (long long)json_u64(&v, "free"));
	EXPECT_EQ(debugfs_value("pool", "largest_free"),
		  (long long)json_u64(&v, "largest_free"));
	EXPECT_GE(1000000, json_u64(&v, "fragmentation_ppm"));
	orders = json_get(&v, "orders");
	ASSERT_NE(NULL, orders);
	ASSERT_EQ(J_ARR, orders->t);
	EXPECT_LT(0, orders->n);
	for (size_t i = 0; i < orders->n; i++)
		sum += json_u64(&orders->items[i], "block_size") *
		       json_u64(&orders->items[i], "free_blocks");
	EXPECT_EQ(json_u64(&v, "free"), sum);
	jv_free(&v);
	run_free(&r);

	r = CTL("pool");
	EXPECT_EQ(0, r.status);
	EXPECT_NE(NULL, strstr(r.out, "fragmentation"));
	EXPECT_NE(NULL, strstr(r.out, self->info.backend));
	run_free(&r);
}

TEST_F(ctl, domains_json_matches_debugfs)
{
	struct metadef_alloc a;
	struct dom_row row;
	const struct jv *me = NULL;
	struct run r;
	struct jv v;

	ASSERT_EQ(0, alloc(self->fd, 20480, &a));
	r = CTL("--json", "domains");
	ASSERT_EQ(0, r.status);
	ASSERT_TRUE(json_parse(r.out, &v));
	ASSERT_EQ(J_ARR, v.t);
	for (size_t i = 0; i < v.n; i++)
		if (json_u64(&v.items[i], "id") == self->info.domain_id)
			me = &v.items[i];
	ASSERT_NE(NULL, me);
	ASSERT_EQ(1, my_domains(0, &row));
	EXPECT_EQ(row.used, (long long)json_u64(me, "used"));
	EXPECT_EQ(row.regions, (int)json_u64(me, "regions"));
	EXPECT_EQ(getpid(), (pid_t)json_u64(me, "pid"));
	EXPECT_EQ(0, json_u64(me, "uid"));
	EXPECT_EQ(J_NULL, json_get(me, "quota")->t);	/* unlimited */
	EXPECT_STREQ("ctl_test", json_str(me, "comm"));
	jv_free(&v);
	run_free(&r);

	r = CTL("domains");
	EXPECT_EQ(0, r.status);
	EXPECT_NE(NULL, strstr(r.out, "REGIONS"));
	EXPECT_NE(NULL, strstr(r.out, "ctl_test"));
	run_free(&r);
	ASSERT_EQ(0, release(self->fd, a.handle));
}

TEST_F(ctl, regions_json_and_nobody_refused)
{
	struct metadef_alloc a;
	int found = 0;
	struct run r;
	struct jv v;

	ASSERT_EQ(0, alloc(self->fd, 8192, &a));
	r = CTL("--json", "regions");
	ASSERT_EQ(0, r.status);
	ASSERT_TRUE(json_parse(r.out, &v));
	ASSERT_EQ(J_ARR, v.t);
	for (size_t i = 0; i < v.n; i++) {
		if (json_u64(&v.items[i], "domain") != self->info.domain_id ||
		    json_u64(&v.items[i], "handle") != a.handle)
			continue;
		found++;
		EXPECT_EQ(8192, json_u64(&v.items[i], "size"));
		EXPECT_EQ(1, json_u64(&v.items[i], "refs"));
		EXPECT_EQ(0, json_u64(&v.items[i], "mapped"));
	}
	EXPECT_EQ(1, found);
	jv_free(&v);
	run_free(&r);

	r = CTL_NOBODY("regions");
	EXPECT_EQ(1, r.status);
	EXPECT_NE(NULL, strstr(r.err, "permission denied"));
	run_free(&r);
	ASSERT_EQ(0, release(self->fd, a.handle));
}

TEST_F(ctl, set_quota_and_refusals)
{
	char id[16];
	struct run r;

	snprintf(id, sizeof(id), "%u", self->info.domain_id);
	r = CTL("set-quota", id, "1M");
	EXPECT_EQ(0, r.status);
	EXPECT_EQ(1 << 20, info_of(self->fd).domain_quota);
	run_free(&r);
	r = CTL("set-quota", id, "unlimited");
	EXPECT_EQ(0, r.status);
	EXPECT_EQ(METADEF_QUOTA_UNLIMITED, info_of(self->fd).domain_quota);
	run_free(&r);

	r = CTL("set-quota", "2147483000", "1M");
	EXPECT_EQ(1, r.status);
	EXPECT_NE(NULL, strstr(r.err, "no such domain"));
	run_free(&r);
	r = CTL_NOBODY("set-quota", id, "4096");
	EXPECT_EQ(1, r.status);
	EXPECT_NE(NULL, strstr(r.err, "permission denied"));
	EXPECT_EQ(METADEF_QUOTA_UNLIMITED, info_of(self->fd).domain_quota);
	run_free(&r);
	/* What anyone may see, nobody sees. */
	r = CTL_NOBODY("--json", "pool");
	EXPECT_EQ(0, r.status);
	run_free(&r);
}

TEST_F(ctl, limits_json_and_set)
{
	struct run r = CTL("--json", "limits");
	uint64_t grants;
	struct jv v;

	ASSERT_EQ(0, r.status);
	ASSERT_TRUE(json_parse(r.out, &v));
	grants = json_u64(&v, "max_user_grants");
	EXPECT_NE(UINT64_MAX, grants);
	EXPECT_NE(UINT64_MAX, json_u64(&v, "max_user_domains"));
	EXPECT_EQ(0, json_u64(&v, "low_water"));
	jv_free(&v);
	run_free(&r);

	r = CTL("limits", "max_user_grants=17", "low_water=1M");
	EXPECT_EQ(0, r.status);
	run_free(&r);
	r = CTL("--json", "limits");
	ASSERT_TRUE(json_parse(r.out, &v));
	EXPECT_EQ(17, json_u64(&v, "max_user_grants"));
	EXPECT_EQ(1 << 20, json_u64(&v, "low_water"));
	jv_free(&v);
	run_free(&r);
	r = CTL_NOBODY("limits", "low_water=0");
	EXPECT_EQ(1, r.status);
	EXPECT_NE(NULL, strstr(r.err, "permission denied"));
	run_free(&r);

	char g[32];

	snprintf(g, sizeof(g), "max_user_grants=%llu", (unsigned long long)grants);
	r = CTL("limits", g, "low_water=0");
	EXPECT_EQ(0, r.status);
	run_free(&r);
	r = CTL("limits");
	EXPECT_EQ(0, r.status);
	EXPECT_NE(NULL, strstr(r.out, "max_domain_grants"));
	run_free(&r);
}

/*
 * One source of truth: a figure that debugfs and the netlink family
 * (through metadefctl --json) both show has one name and one value
 * (README, "Observability"). Each JSON key of "pool" and "limits" is a
 * debugfs "pool" or "info" line of that name and value; each debugfs
 * "info" line but pool_size_param is a JSON key; "buddy" agrees with the
 * pool's orders; the domains and regions tables have the JSON keys as
 * their column names, with the same values in this process's rows; a
 * limit that is a module parameter has the parameter's name.
 */
TEST_F(ctl, names_agree_everywhere)
{
	struct dfile pool, info, buddy, doms, regs;
	struct metadef_alloc a;
	const struct jv *orders;
	struct jv jp, jl, jd, jr;
	struct run r;
	int checked = 0;

	ASSERT_EQ(0, alloc(self->fd, 3 * 4096, &a));
	ASSERT_EQ(0, dfile_read("pool", &pool));
	ASSERT_EQ(0, dfile_read("info", &info));
	ASSERT_EQ(0, dfile_read("buddy", &buddy));
	ASSERT_EQ(0, dfile_read("domains", &doms));
	ASSERT_EQ(0, dfile_read("regions", &regs));
	r = CTL("--json", "pool");
	ASSERT_EQ(0, r.status);
	ASSERT_TRUE(json_parse(r.out, &jp));
	run_free(&r);
	r = CTL("--json", "limits");
	ASSERT_EQ(0, r.status);
	ASSERT_TRUE(json_parse(r.out, &jl));
	run_free(&r);

	/* JSON -> debugfs, for pool and limits. */
	for (int w = 0; w < 2; w++) {
		const struct jv *o = w ? &jl : &jp;

		for (size_t i = 0; i < o->n; i++) {
			const char *k = o->keys[i];
			const char *t = dfile_value(&pool, k);

			if (o->items[i].t == J_ARR)
				continue;
			if (!t)
				t = dfile_value(&info, k);
			EXPECT_NE(NULL, t) TH_LOG("JSON key %s in no debugfs file", k);
			if (!t)
				continue;
			EXPECT_TRUE(same_value(t, &o->items[i]))
				TH_LOG("%s: debugfs %s, JSON %llu", k, t,
				       (unsigned long long)o->items[i].u);
			checked++;
		}
	}
	/* debugfs info -> JSON. */
	for (int i = 0; i < info.rows; i++) {
		const char *k = info.f[i][0];

		if (info.cols[i] != 2 || !strcmp(k, "pool_size_param"))
			continue;
		EXPECT_TRUE(json_get(&jp, k) || json_get(&jl, k))
			TH_LOG("debugfs info %s is not in metadefctl --json", k);
	}
	/* Limits that are module parameters are named after them. */
	for (size_t i = 0; i < jl.n; i++) {
		char path[160];

		if (!strcmp(jl.keys[i], "max_user_pct") ||
		    !strcmp(jl.keys[i], "max_user_bytes_effective"))
			continue;
		snprintf(path, sizeof(path), "/sys/module/metadef/parameters/%s",
			 jl.keys[i]);
		EXPECT_EQ(0, access(path, R_OK)) TH_LOG("no parameter %s", path);
	}
	/* buddy: the same totals and one row per order. */
	orders = json_get(&jp, "orders");
	ASSERT_NE(NULL, orders);
	EXPECT_TRUE(same_value(dfile_value(&buddy, "free") ?: "",
			       json_get(&jp, "free")));
	EXPECT_TRUE(same_value(dfile_value(&buddy, "largest_free") ?: "",
			       json_get(&jp, "largest_free")));
	EXPECT_TRUE(same_value(dfile_value(&buddy, "size") ?: "",
			       json_get(&jp, "size")));
	for (int i = 0, o = -1, hdr = -1; i < buddy.rows; i++) {
		if (buddy.cols[i] == 3 && !strcmp(buddy.f[i][0], "order")) {
			hdr = i;
			o = 0;
			continue;
		}
		if (hdr < 0 || buddy.cols[i] != 3)
			continue;
		ASSERT_GT(orders->n, (size_t)o);
		for (int c = 0; c < 3; c++) {
			const struct jv *v = json_get(&orders->items[o],
						      buddy.f[hdr][c]);

			EXPECT_NE(NULL, v) TH_LOG("buddy column %s", buddy.f[hdr][c]);
			if (v)
				EXPECT_TRUE(same_value(buddy.f[i][c], v));
			checked++;
		}
		o++;
	}
	/* The two tables: column names are JSON keys, values agree. */
	r = CTL("--json", "domains");
	ASSERT_EQ(0, r.status);
	ASSERT_TRUE(json_parse(r.out, &jd));
	run_free(&r);
	r = CTL("--json", "regions");
	ASSERT_EQ(0, r.status);
	ASSERT_TRUE(json_parse(r.out, &jr));
	run_free(&r);
	for (int w = 0; w < 2; w++) {
		const struct dfile *d = w ? &regs : &doms;
		const struct jv *arr = w ? &jr : &jd;
		int idc = dfile_col(d, 0, w ? "handle" : "id");
		int domc = w ? dfile_col(d, 0, "domain") : idc;
		unsigned long long want_id = w ? a.handle : self->info.domain_id;
		int rows = 0;

		ASSERT_LE(0, idc);
		ASSERT_LE(0, domc);
		for (int i = 1; i < d->rows; i++) {
			const struct jv *row = NULL;

			if (strtoull(d->f[i][domc], NULL, 0) != self->info.domain_id ||
			    strtoull(d->f[i][idc], NULL, 0) != want_id)
				continue;
			for (size_t j = 0; j < arr->n; j++)
				if (json_u64(&arr->items[j], w ? "domain" : "id") ==
				    self->info.domain_id &&
				    json_u64(&arr->items[j], w ? "handle" : "id") ==
				    want_id)
					row = &arr->items[j];
			ASSERT_NE(NULL, row);
			for (int c = 0; c < d->cols[0] && c < d->cols[i]; c++) {
				const struct jv *v = json_get(row, d->f[0][c]);

				EXPECT_NE(NULL, v) TH_LOG("column %s", d->f[0][c]);
				if (v)
					EXPECT_TRUE(same_value(d->f[i][c], v))
						TH_LOG("%s: debugfs %s", d->f[0][c],
						       d->f[i][c]);
				checked++;
			}
			rows++;
		}
		EXPECT_EQ(1, rows);
		EXPECT_EQ(d->cols[0], (int)arr->items[0].n)
			TH_LOG("%s: debugfs has %d columns, JSON %zu keys",
			       w ? "regions" : "domains", d->cols[0],
			       arr->items[0].n);
	}
	TH_LOG("%d figures compared", checked);
	EXPECT_LT(40, checked);
	jv_free(&jp);
	jv_free(&jl);
	jv_free(&jd);
	jv_free(&jr);
	free(pool.text);
	free(info.text);
	free(buddy.text);
	free(doms.text);
	free(regs.text);
	ASSERT_EQ(0, release(self->fd, a.handle));
}

/* monitor --json --count 1 sees the ALLOC this test has refused. */
TEST_F(ctl, monitor_prints_an_event)
{
	struct metadef_alloc a;
	int out[2], err[2], st;
	char buf[4096] = "", ebuf[512] = "";
	size_t len = 0, elen = 0;
	struct pollfd p;
	struct jv v;
	pid_t pid;

	ASSERT_EQ(0, pipe(out));
	ASSERT_EQ(0, pipe(err));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		dup2(out[1], 1);
		dup2(err[1], 2);
		execl(ctl_path(), "metadefctl", "--json", "--count", "1",
		      "monitor", (char *)NULL);
		_exit(98);
	}
	close(out[1]);
	close(err[1]);
	/* It says on stderr when it listens. */
	p = (struct pollfd){ .fd = err[0], .events = POLLIN };
	while (!strstr(ebuf, "monitoring") && elen < sizeof(ebuf) - 1) {
		ssize_t n;

		ASSERT_LT(0, poll(&p, 1, 20000));
		n = read(err[0], ebuf + elen, sizeof(ebuf) - 1 - elen);
		ASSERT_LT(0, n);
		elen += n;
		ebuf[elen] = 0;
	}
	EXPECT_EQ(-ENOMEM, alloc(self->fd, self->info.pool_size + 8192, &a));
	p = (struct pollfd){ .fd = out[0], .events = POLLIN };
	while (!strchr(buf, '\n') && len < sizeof(buf) - 1) {
		ssize_t n;

		ASSERT_LT(0, poll(&p, 1, 20000));
		n = read(out[0], buf + len, sizeof(buf) - 1 - len);
		ASSERT_LT(0, n);
		len += n;
		buf[len] = 0;
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ASSERT_TRUE(json_parse(buf, &v));
	EXPECT_STREQ("alloc_refused", json_str(&v, "event"));
	EXPECT_EQ(self->info.pool_size + 8192, json_u64(&v, "size"));
	EXPECT_EQ(self->info.domain_id, json_u64(&v, "domain"));
	jv_free(&v);
	close(out[0]);
	close(err[0]);
}

TEST_F(ctl, monitor_refused_to_nobody)
{
	struct run r = CTL_NOBODY("monitor");

	EXPECT_EQ(1, r.status);
	EXPECT_NE(NULL, strstr(r.err, "permission denied"));
	run_free(&r);
}

TEST_HARNESS_MAIN
