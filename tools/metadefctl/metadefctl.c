// SPDX-License-Identifier: GPL-2.0
/*
 * metadefctl: inspect and control metadef from the command line. "info"
 * asks the device node; everything else speaks the generic netlink family
 * "metadef" (include/uapi/linux/metadef.h) through libnl-genl-3.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include <linux/netlink.h>

#include <metadef/metadef.h>

static const char *prog = "metadefctl";
static int json;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--device PATH] [--json] COMMAND [ARGS]\n"
		"\n"
		"commands:\n"
		"  info                 ABI version, page size, the pool, and a new domain's\n"
		"                       id, quota and usage (asks %s)\n"
		"  pool                 the pool: backend, size, free, largest free block,\n"
		"                       fragmentation, free blocks per order\n"
		"  domains              every open domain: id, uid, pid, command, color,\n"
		"                       quota, used, regions, imports, grants, faults\n"
		"  regions              every live region (CAP_SYS_ADMIN): domain, handle,\n"
		"                       pid, offset, size, references, mappings, dma-bufs\n"
		"  set-quota DOMAIN BYTES\n"
		"                       set a domain's quota (CAP_SYS_ADMIN); BYTES with\n"
		"                       K/M/G suffix, or \"unlimited\"\n"
		"  limits [NAME=VALUE...]\n"
		"                       show the limits, or set them (CAP_SYS_ADMIN):\n"
		"                       default_quota, max_user_domains, max_user_bytes\n"
		"                       (bytes or N%%), max_user_grants, max_domain_grants,\n"
		"                       low_water\n"
		"  monitor              print events until interrupted (CAP_SYS_ADMIN)\n"
		"\n"
		"options:\n"
		"  -d, --device PATH   device node for info (default %s)\n"
		"  -j, --json          print JSON instead of text\n"
		"  -n, --count N       monitor: exit after N events\n"
		"  -V, --version       print the version and exit\n"
		"  -h, --help          this text\n"
		"\n"
		"Exit status: 0 on success, 1 when the module refuses or is not loaded,\n"
		"2 on a usage error.\n",
		prog, MD_DEFAULT_DEVICE, MD_DEFAULT_DEVICE);
}

/* A JSON string literal: quotes, backslashes and control bytes escaped. */
static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* A size, or "unlimited" for METADEF_QUOTA_UNLIMITED. */
static const char *size_or_unlimited(uint64_t v, char *buf, size_t len)
{
	if (v == METADEF_QUOTA_UNLIMITED)
		return "unlimited";
	return md_format_size(v, buf, len);
}

static void json_u64_or_null(uint64_t v)
{
	if (v == METADEF_QUOTA_UNLIMITED)
		printf("null");
	else
		printf("%" PRIu64, v);
}

/* ---------------------------------------------------------------- info */

static int open_device(const char *path)
{
	int fd = md_kmod_open(path);

	if (fd < 0) {
		fprintf(stderr, "%s: cannot open %s: %s%s\n", prog,
			path ? path : MD_DEFAULT_DEVICE, strerror(-fd),
			fd == -ENOENT ? " (is metadef.ko loaded? modprobe metadef)" : "");
	}
	return fd;
}

static int cmd_info(const char *path)
{
	struct metadef_info info;
	char pool[32], avail[32], quota[32], used[32];
	int fd, ret;

	fd = open_device(path);
	if (fd < 0)
		return 1;
	ret = md_kmod_info(fd, &info);
	close(fd);
	if (ret) {
		fprintf(stderr, "%s: METADEF_IOC_INFO failed: %s\n", prog,
			strerror(-ret));
		return 1;
	}

	info.backend[sizeof(info.backend) - 1] = 0;
	if (json) {
		printf("{\"device\": ");
		json_string(path ? path : MD_DEFAULT_DEVICE);
		printf(", \"abi_version\": %u, \"page_size\": %u, "
		       "\"backend\": ", info.abi_version, info.page_size);
		json_string(info.backend);
		printf(", \"pool_size\": %" PRIu64 ", \"pool_free\": %" PRIu64
		       ", \"pool_largest_free\": %" PRIu64 ", \"domain_id\": %u"
		       ", \"domain_quota\": ",
		       (uint64_t)info.pool_size, (uint64_t)info.pool_free,
		       (uint64_t)info.pool_largest_free, info.domain_id);
		json_u64_or_null(info.domain_quota);
		printf(", \"domain_used\": %" PRIu64 "}\n",
		       (uint64_t)info.domain_used);
		return 0;
	}
	printf("metadef on %s\n", path ? path : MD_DEFAULT_DEVICE);
	printf("  abi version  %u\n", info.abi_version);
	printf("  page size    %u\n", info.page_size);
	printf("  pool         %s, %s: %s free, largest free block %s\n",
	       info.backend, md_format_size(info.pool_size, pool, sizeof(pool)),
	       md_format_size(info.pool_free, avail, sizeof(avail)),
	       md_format_size(info.pool_largest_free, used, sizeof(used)));
	if (info.domain_quota == METADEF_QUOTA_UNLIMITED)
		snprintf(quota, sizeof(quota), "no quota");
	else
		md_format_size(info.domain_quota, quota, sizeof(quota));
	printf("  domain       %u (this open file): %s used, %s\n",
	       info.domain_id,
	       md_format_size(info.domain_used, used, sizeof(used)), quota);
	return 0;
}

/* ---------------------------------------------------------------- netlink */

struct ctl {
	struct nl_sock *sock;
	int family;
};

/* How one request ended: the kernel's errno and extack message. */
struct answer {
	int done;
	int error;
	char msg[256];
};

static int on_error(struct sockaddr_nl *nla, struct nlmsgerr *err, void *arg)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)((char *)err - NLMSG_HDRLEN);
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	struct answer *a = arg;
	int off = sizeof(*err);

	(void)nla;
	a->done = 1;
	a->error = err->error;
	if (nlh->nlmsg_flags & NLM_F_ACK_TLVS) {
		if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
			off += err->msg.nlmsg_len - NLMSG_HDRLEN;
		if (nla_parse(tb, NLMSGERR_ATTR_MAX,
			      (struct nlattr *)((char *)err + off),
			      (int)nlh->nlmsg_len - NLMSG_HDRLEN - off, NULL) == 0 &&
		    tb[NLMSGERR_ATTR_MSG])
			snprintf(a->msg, sizeof(a->msg), "%s",
				 nla_get_string(tb[NLMSGERR_ATTR_MSG]));
	}
	return NL_STOP;
}

static int on_end(struct nl_msg *msg, void *arg)
{
	(void)msg;
	((struct answer *)arg)->done = 1;
	return NL_STOP;
}

static int ctl_open(struct ctl *c)
{
	int one = 1, ret;

	c->sock = nl_socket_alloc();
	if (!c->sock) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return -1;
	}
	ret = genl_connect(c->sock);
	if (ret) {
		fprintf(stderr, "%s: cannot open a generic netlink socket: %s\n",
			prog, nl_geterror(ret));
		goto err;
	}
	/* Error messages from the module (extack): best effort. */
	setsockopt(nl_socket_get_fd(c->sock), SOL_NETLINK, NETLINK_EXT_ACK,
		   &one, sizeof(one));
	c->family = genl_ctrl_resolve(c->sock, METADEF_GENL_NAME);
	if (c->family < 0) {
		fprintf(stderr, "%s: the metadef module is not loaded (no generic netlink family \"%s\"; modprobe metadef)\n",
			prog, METADEF_GENL_NAME);
		goto err;
	}
	return 0;
err:
	nl_socket_free(c->sock);
	c->sock = NULL;
	return -1;
}

static void ctl_close(struct ctl *c)
{
	nl_socket_free(c->sock);
}

/* A request for @cmd, to fill with attributes; NULL when out of memory. */
static struct nl_msg *ctl_msg(struct ctl *c, uint8_t cmd, int flags)
{
	struct nl_msg *msg = nlmsg_alloc();

	if (!msg)
		return NULL;
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, c->family, 0, flags,
			 cmd, METADEF_GENL_VERSION)) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

/*
 * Send @msg (consumed) and read the answer: every message to @valid.
 * Returns 0 or the kernel's -errno, its extack message in @a.
 */
static int ctl_call(struct ctl *c, struct nl_msg *msg,
		    nl_recvmsg_msg_cb_t valid, void *arg, struct answer *a)
{
	struct nl_cb *cb = nl_cb_clone(nl_socket_get_cb(c->sock));
	int ret;

	memset(a, 0, sizeof(*a));
	if (!cb) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	if (valid)
		nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, valid, arg);
	nl_cb_err(cb, NL_CB_CUSTOM, on_error, a);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_end, a);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, on_end, a);
	ret = nl_send_auto(c->sock, msg);
	nlmsg_free(msg);
	while (ret >= 0 && !a->done)
		ret = nl_recvmsgs(c->sock, cb);
	nl_cb_put(cb);
	if (a->error)
		return a->error;
	if (ret < 0) {
		snprintf(a->msg, sizeof(a->msg), "%s", nl_geterror(ret));
		return -EIO;
	}
	return 0;
}

/* The message for a refusal, and exit status 1. */
static int refused(const char *what, int err, const struct answer *a)
{
	const char *why = strerror(-err);

	if (err == -EPERM)
		why = "permission denied (needs CAP_SYS_ADMIN)";
	fprintf(stderr, "%s: %s: %s%s%s\n", prog, what, why,
		a->msg[0] ? ": " : "", a->msg);
	return 1;
}

static struct nlattr **parse(struct nl_msg *msg, struct nlattr **tb)
{
	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, METADEF_A_MAX, NULL))
		return NULL;
	return tb;
}

static uint64_t u64_of(struct nlattr **tb, int type)
{
	return tb[type] ? nla_get_u64(tb[type]) : 0;
}

static uint32_t u32_of(struct nlattr **tb, int type)
{
	return tb[type] ? nla_get_u32(tb[type]) : 0;
}

static const char *str_of(struct nlattr **tb, int type)
{
	return tb[type] ? nla_get_string(tb[type]) : "";
}

/* ---------------------------------------------------------------- pool */

static int pool_cb(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[METADEF_A_MAX + 1], *o[METADEF_A_MAX + 1], *n;
	char s[32], f[32], l[32], b[32];
	uint32_t frag;
	int rem, first = 1;

	(void)arg;
	if (!parse(msg, tb))
		return NL_SKIP;
	frag = u32_of(tb, METADEF_A_POOL_FRAGMENTATION);
	if (json) {
		printf("{\"abi_version\": %u, \"page_size\": %u, \"backend\": ",
		       u32_of(tb, METADEF_A_ABI_VERSION),
		       u32_of(tb, METADEF_A_PAGE_SIZE));
		json_string(str_of(tb, METADEF_A_POOL_BACKEND));
		printf(", \"size\": %" PRIu64 ", \"free\": %" PRIu64
		       ", \"largest_free\": %" PRIu64
		       ", \"fragmentation_ppm\": %u, \"orders\": [",
		       u64_of(tb, METADEF_A_POOL_SIZE),
		       u64_of(tb, METADEF_A_POOL_FREE),
		       u64_of(tb, METADEF_A_POOL_LARGEST_FREE), frag);
	} else {
		printf("pool: %s, %s, %s free, largest free block %s, fragmentation %.2f %%\n",
		       str_of(tb, METADEF_A_POOL_BACKEND),
		       md_format_size(u64_of(tb, METADEF_A_POOL_SIZE), s, sizeof(s)),
		       md_format_size(u64_of(tb, METADEF_A_POOL_FREE), f, sizeof(f)),
		       md_format_size(u64_of(tb, METADEF_A_POOL_LARGEST_FREE),
				      l, sizeof(l)),
		       frag / 10000.0);
		printf("%5s  %10s  %11s\n", "ORDER", "BLOCK", "FREE_BLOCKS");
	}
	if (tb[METADEF_A_POOL_ORDERS]) {
		nla_for_each_nested(n, tb[METADEF_A_POOL_ORDERS], rem) {
			if (nla_parse_nested(o, METADEF_A_MAX, n, NULL))
				continue;
			if (json) {
				printf("%s{\"order\": %u, \"block_size\": %" PRIu64
				       ", \"free_blocks\": %" PRIu64 "}",
				       first ? "" : ", ",
				       u32_of(o, METADEF_A_ORDER_INDEX),
				       u64_of(o, METADEF_A_ORDER_BLOCK_SIZE),
				       u64_of(o, METADEF_A_ORDER_FREE_BLOCKS));
			} else {
				printf("%5u  %10s  %11" PRIu64 "\n",
				       u32_of(o, METADEF_A_ORDER_INDEX),
				       md_format_size(u64_of(o, METADEF_A_ORDER_BLOCK_SIZE),
						      b, sizeof(b)),
				       u64_of(o, METADEF_A_ORDER_FREE_BLOCKS));
			}
			first = 0;
		}
	}
	if (json)
		printf("]}\n");
	return NL_OK;
}

static int cmd_pool(struct ctl *c)
{
	struct nl_msg *msg = ctl_msg(c, METADEF_CMD_POOL_GET, 0);
	struct answer a;
	int ret;

	if (!msg)
		return 1;
	ret = ctl_call(c, msg, pool_cb, NULL, &a);
	return ret ? refused("pool", ret, &a) : 0;
}

/* ---------------------------------------------------------------- dumps */

struct dump {
	int rows;
};

static int domain_cb(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[METADEF_A_MAX + 1];
	struct dump *d = arg;
	char q[32], u[32];

	if (!parse(msg, tb))
		return NL_SKIP;
	if (json) {
		printf("%s{\"id\": %u, \"uid\": %u, \"pid\": %u, \"comm\": ",
		       d->rows ? ",\n " : "", u32_of(tb, METADEF_A_DOMAIN_ID),
		       u32_of(tb, METADEF_A_DOMAIN_UID),
		       u32_of(tb, METADEF_A_DOMAIN_PID));
		json_string(str_of(tb, METADEF_A_DOMAIN_COMM));
		printf(", \"color\": %u, \"quota\": ",
		       u32_of(tb, METADEF_A_DOMAIN_COLOR));
		json_u64_or_null(u64_of(tb, METADEF_A_DOMAIN_QUOTA));
		printf(", \"used\": %" PRIu64 ", \"regions\": %u, \"imports\": %u"
		       ", \"grants\": %u, \"faults\": %u}",
		       u64_of(tb, METADEF_A_DOMAIN_USED),
		       u32_of(tb, METADEF_A_DOMAIN_REGIONS),
		       u32_of(tb, METADEF_A_DOMAIN_IMPORTS),
		       u32_of(tb, METADEF_A_DOMAIN_GRANTS),
		       u32_of(tb, METADEF_A_DOMAIN_FAULTS));
	} else {
		if (!d->rows)
			printf("%6s %6s %7s %-16s %5s %10s %10s %7s %7s %6s %6s\n",
			       "ID", "UID", "PID", "COMM", "COLOR", "QUOTA",
			       "USED", "REGIONS", "IMPORTS", "GRANTS", "FAULTS");
		printf("%6u %6u %7u %-16s %5u %10s %10s %7u %7u %6u %6u\n",
		       u32_of(tb, METADEF_A_DOMAIN_ID),
		       u32_of(tb, METADEF_A_DOMAIN_UID),
		       u32_of(tb, METADEF_A_DOMAIN_PID),
		       str_of(tb, METADEF_A_DOMAIN_COMM),
		       u32_of(tb, METADEF_A_DOMAIN_COLOR),
		       size_or_unlimited(u64_of(tb, METADEF_A_DOMAIN_QUOTA),
					 q, sizeof(q)),
		       md_format_size(u64_of(tb, METADEF_A_DOMAIN_USED), u,
				      sizeof(u)),
		       u32_of(tb, METADEF_A_DOMAIN_REGIONS),
		       u32_of(tb, METADEF_A_DOMAIN_IMPORTS),
		       u32_of(tb, METADEF_A_DOMAIN_GRANTS),
		       u32_of(tb, METADEF_A_DOMAIN_FAULTS));
	}
	d->rows++;
	return NL_OK;
}

static int region_cb(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[METADEF_A_MAX + 1];
	struct dump *d = arg;
	char s[32];

	if (!parse(msg, tb))
		return NL_SKIP;
	if (json) {
		printf("%s{\"domain\": %u, \"handle\": %u, \"pid\": %u, \"offset\": %"
		       PRIu64 ", \"size\": %" PRIu64 ", \"refs\": %u, \"mapped\": %u"
		       ", \"dmabufs\": %u}",
		       d->rows ? ",\n " : "", u32_of(tb, METADEF_A_REGION_DOMAIN),
		       u32_of(tb, METADEF_A_REGION_HANDLE),
		       u32_of(tb, METADEF_A_REGION_PID),
		       u64_of(tb, METADEF_A_REGION_OFFSET),
		       u64_of(tb, METADEF_A_REGION_SIZE),
		       u32_of(tb, METADEF_A_REGION_REFS),
		       u32_of(tb, METADEF_A_REGION_MAPPED),
		       u32_of(tb, METADEF_A_REGION_DMABUFS));
	} else {
		if (!d->rows)
			printf("%6s %6s %7s %12s %10s %4s %6s %7s\n", "DOMAIN",
			       "HANDLE", "PID", "OFFSET", "SIZE", "REFS",
			       "MAPPED", "DMABUFS");
		printf("%6u %6u %7u %#12" PRIx64 " %10s %4u %6u %7u\n",
		       u32_of(tb, METADEF_A_REGION_DOMAIN),
		       u32_of(tb, METADEF_A_REGION_HANDLE),
		       u32_of(tb, METADEF_A_REGION_PID),
		       u64_of(tb, METADEF_A_REGION_OFFSET),
		       md_format_size(u64_of(tb, METADEF_A_REGION_SIZE), s,
				      sizeof(s)),
		       u32_of(tb, METADEF_A_REGION_REFS),
		       u32_of(tb, METADEF_A_REGION_MAPPED),
		       u32_of(tb, METADEF_A_REGION_DMABUFS));
	}
	d->rows++;
	return NL_OK;
}

static int cmd_dump(struct ctl *c, uint8_t cmd, const char *what,
		    nl_recvmsg_msg_cb_t cb)
{
	struct nl_msg *msg = ctl_msg(c, cmd, NLM_F_DUMP);
	struct dump d = { 0 };
	struct answer a;
	int ret;

	if (!msg)
		return 1;
	if (json)
		printf("[");
	fflush(stdout);
	ret = ctl_call(c, msg, cb, &d, &a);
	if (ret) {
		if (json)
			printf("]\n");
		return refused(what, ret, &a);
	}
	if (json)
		printf("]\n");
	else if (!d.rows)
		printf("no %s\n", what);
	return 0;
}

/* ---------------------------------------------------------------- quota */

static int parse_bytes(const char *s, uint64_t *v, int unlimited_ok)
{
	if (unlimited_ok && !strcmp(s, "unlimited")) {
		*v = METADEF_QUOTA_UNLIMITED;
		return 0;
	}
	return md_parse_size(s, v);
}

/* DOMAIN and BYTES of set-quota; 0, or 2 (usage error) with a message. */
static int quota_args(const char *dom, const char *bytes, unsigned long *idp,
		      uint64_t *quotap)
{
	unsigned long id;
	uint64_t quota;
	char *end;

	errno = 0;
	id = strtoul(dom, &end, 10);
	if (errno || *end || !*dom || id > UINT32_MAX) {
		fprintf(stderr, "%s: set-quota: '%s' is not a domain id\n", prog, dom);
		return 2;
	}
	if (parse_bytes(bytes, &quota, 1)) {
		fprintf(stderr, "%s: set-quota: '%s' is not a size (BYTES with K/M/G suffix, or unlimited)\n",
			prog, bytes);
		return 2;
	}
	*idp = id;
	*quotap = quota;
	return 0;
}

static int cmd_set_quota(struct ctl *c, const char *dom, const char *bytes)
{
	struct nl_msg *msg;
	struct answer a;
	unsigned long id;
	uint64_t quota;
	int ret;

	ret = quota_args(dom, bytes, &id, &quota);
	if (ret)
		return ret;
	msg = ctl_msg(c, METADEF_CMD_QUOTA_SET, 0);
	if (!msg || nla_put_u32(msg, METADEF_A_DOMAIN_ID, id) ||
	    nla_put_u64(msg, METADEF_A_DOMAIN_QUOTA, quota))
		return 1;
	ret = ctl_call(c, msg, NULL, NULL, &a);
	if (ret == -ENOENT) {
		fprintf(stderr, "%s: set-quota: no such domain %lu\n", prog, id);
		return 1;
	}
	if (ret)
		return refused("set-quota", ret, &a);
	if (json) {
		printf("{\"domain\": %lu, \"quota\": ", id);
		json_u64_or_null(quota);
		printf("}\n");
	}
	return 0;
}

/* ---------------------------------------------------------------- limits */

static int limits_cb(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[METADEF_A_MAX + 1];
	char b[32];
	uint64_t eff;

	(void)arg;
	if (!parse(msg, tb))
		return NL_SKIP;
	eff = tb[METADEF_A_LIMIT_USER_BYTES_EFFECTIVE] ?
		u64_of(tb, METADEF_A_LIMIT_USER_BYTES_EFFECTIVE) :
		METADEF_QUOTA_UNLIMITED;
	if (json) {
		printf("{\"default_quota\": ");
		json_u64_or_null(u64_of(tb, METADEF_A_LIMIT_DEFAULT_QUOTA));
		printf(", \"max_user_domains\": %u, \"max_user_bytes\": %" PRIu64
		       ", \"max_user_pct\": %u, \"max_user_bytes_effective\": ",
		       u32_of(tb, METADEF_A_LIMIT_USER_DOMAINS),
		       u64_of(tb, METADEF_A_LIMIT_USER_BYTES),
		       u32_of(tb, METADEF_A_LIMIT_USER_PCT));
		json_u64_or_null(eff);
		printf(", \"max_user_grants\": %u, \"max_domain_grants\": %u"
		       ", \"low_water\": %" PRIu64 "}\n",
		       u32_of(tb, METADEF_A_LIMIT_USER_GRANTS),
		       u32_of(tb, METADEF_A_LIMIT_DOMAIN_GRANTS),
		       u64_of(tb, METADEF_A_LIMIT_LOW_WATER));
		return NL_OK;
	}
	printf("default_quota      %s\n",
	       size_or_unlimited(u64_of(tb, METADEF_A_LIMIT_DEFAULT_QUOTA), b,
				 sizeof(b)));
	printf("max_user_domains   %u\n", u32_of(tb, METADEF_A_LIMIT_USER_DOMAINS));
	if (u32_of(tb, METADEF_A_LIMIT_USER_PCT))
		printf("max_user_bytes     %u%% of the pool",
		       u32_of(tb, METADEF_A_LIMIT_USER_PCT));
	else
		printf("max_user_bytes     %s",
		       u64_of(tb, METADEF_A_LIMIT_USER_BYTES) ?
		       md_format_size(u64_of(tb, METADEF_A_LIMIT_USER_BYTES), b,
				      sizeof(b)) : "0");
	printf(" (%s)\n", size_or_unlimited(eff, b, sizeof(b)));
	printf("max_user_grants    %u\n", u32_of(tb, METADEF_A_LIMIT_USER_GRANTS));
	printf("max_domain_grants  %u\n",
	       u32_of(tb, METADEF_A_LIMIT_DOMAIN_GRANTS));
	printf("low_water          %s\n",
	       u64_of(tb, METADEF_A_LIMIT_LOW_WATER) ?
	       md_format_size(u64_of(tb, METADEF_A_LIMIT_LOW_WATER), b, sizeof(b)) :
	       "0 (no event)");
	return NL_OK;
}

/* Add NAME=VALUE to @msg; 0, or 2 (usage error) with a message. */
static int put_limit(struct nl_msg *msg, const char *arg)
{
	static const struct {
		const char *name;
		int attr;
		int u64;	/* else u32 */
	} names[] = {
		{ "default_quota", METADEF_A_LIMIT_DEFAULT_QUOTA, 1 },
		{ "max_user_domains", METADEF_A_LIMIT_USER_DOMAINS, 0 },
		{ "max_user_bytes", METADEF_A_LIMIT_USER_BYTES, 1 },
		{ "max_user_grants", METADEF_A_LIMIT_USER_GRANTS, 0 },
		{ "max_domain_grants", METADEF_A_LIMIT_DOMAIN_GRANTS, 0 },
		{ "low_water", METADEF_A_LIMIT_LOW_WATER, 1 },
	};
	const char *eq = strchr(arg, '=');
	size_t n = eq ? (size_t)(eq - arg) : 0, i;
	const char *val = eq ? eq + 1 : "";
	uint64_t v;
	char *end;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (eq && strlen(names[i].name) == n &&
		    !strncmp(names[i].name, arg, n))
			break;
	if (i == sizeof(names) / sizeof(names[0])) {
		fprintf(stderr, "%s: limits: '%s' is not NAME=VALUE with a known NAME (see --help)\n",
			prog, arg);
		return 2;
	}
	if (names[i].attr == METADEF_A_LIMIT_USER_BYTES && *val &&
	    val[strlen(val) - 1] == '%') {
		errno = 0;
		v = strtoull(val, &end, 10);
		if (errno || end != val + strlen(val) - 1 || !v || v > 100) {
			fprintf(stderr, "%s: limits: max_user_bytes wants bytes or 1-100%%\n",
				prog);
			return 2;
		}
		return nla_put_u32(msg, METADEF_A_LIMIT_USER_PCT, v) ? 1 : 0;
	}
	if (names[i].u64) {
		/* The module parameters' convention: 0 is no quota. */
		if (parse_bytes(val, &v, names[i].attr == METADEF_A_LIMIT_DEFAULT_QUOTA)) {
			fprintf(stderr, "%s: limits: %.*s: '%s' is not a size\n",
				prog, (int)n, arg, val);
			return 2;
		}
		if (names[i].attr == METADEF_A_LIMIT_DEFAULT_QUOTA && !v)
			v = METADEF_QUOTA_UNLIMITED;
		return nla_put_u64(msg, names[i].attr, v) ? 1 : 0;
	}
	errno = 0;
	v = strtoull(val, &end, 10);
	if (errno || *end || !*val || v > UINT32_MAX) {
		fprintf(stderr, "%s: limits: %.*s: '%s' is not a count\n", prog,
			(int)n, arg, val);
		return 2;
	}
	return nla_put_u32(msg, names[i].attr, v) ? 1 : 0;
}

static int cmd_limits(struct ctl *c, int argc, char **argv)
{
	struct nl_msg *msg;
	struct answer a;
	int i, ret;

	if (!argc) {
		msg = ctl_msg(c, METADEF_CMD_LIMITS_GET, 0);
		if (!msg)
			return 1;
		ret = ctl_call(c, msg, limits_cb, NULL, &a);
		return ret ? refused("limits", ret, &a) : 0;
	}
	msg = ctl_msg(c, METADEF_CMD_LIMITS_SET, 0);
	if (!msg)
		return 1;
	for (i = 0; i < argc; i++) {
		ret = put_limit(msg, argv[i]);
		if (ret) {
			nlmsg_free(msg);
			return ret;
		}
	}
	ret = ctl_call(c, msg, NULL, NULL, &a);
	return ret ? refused("limits", ret, &a) : 0;
}

/* ---------------------------------------------------------------- monitor */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct monitor {
	long count;	/* events left to print; < 0: no limit */
};

static const char *reason_name(uint32_t r)
{
	switch (r) {
	case METADEF_FAULT_UNMAPPED:
		return "unmapped";
	case METADEF_FAULT_PERM:
		return "permission";
	case METADEF_FAULT_COLOR:
		return "color";
	}
	return "unknown";
}

static int event_cb(struct nl_msg *msg, void *arg)
{
	struct genlmsghdr *g = genlmsg_hdr(nlmsg_hdr(msg));
	struct nlattr *tb[METADEF_A_MAX + 1];
	struct monitor *mon = arg;
	char a[32], b[32], c[32];
	const char *name;

	if (!parse(msg, tb))
		return NL_SKIP;
	switch (g->cmd) {
	case METADEF_CMD_EVENT_ALLOC_REFUSED:
		name = "alloc_refused";
		break;
	case METADEF_CMD_EVENT_QUOTA_REACHED:
		name = "quota_reached";
		break;
	case METADEF_CMD_EVENT_MMU_FAULT:
		name = "mmu_fault";
		break;
	case METADEF_CMD_EVENT_DOMAIN_LEAK:
		name = "domain_leak";
		break;
	case METADEF_CMD_EVENT_POOL_LOW:
		name = "pool_low";
		break;
	default:
		return NL_SKIP;
	}
	if (json) {
		printf("{\"event\": \"%s\"", name);
		if (tb[METADEF_A_DOMAIN_ID])
			printf(", \"domain\": %u", u32_of(tb, METADEF_A_DOMAIN_ID));
	} else {
		printf("%s", name);
		if (tb[METADEF_A_DOMAIN_ID])
			printf(" domain %u", u32_of(tb, METADEF_A_DOMAIN_ID));
	}
	switch (g->cmd) {
	case METADEF_CMD_EVENT_ALLOC_REFUSED:
		if (json)
			printf(", \"size\": %" PRIu64 ", \"free\": %" PRIu64
			       ", \"largest_free\": %" PRIu64
			       ", \"fragmentation_ppm\": %u",
			       u64_of(tb, METADEF_A_EVENT_SIZE),
			       u64_of(tb, METADEF_A_POOL_FREE),
			       u64_of(tb, METADEF_A_POOL_LARGEST_FREE),
			       u32_of(tb, METADEF_A_POOL_FRAGMENTATION));
		else
			printf(": %s asked, %s free, largest free block %s, fragmentation %.2f %%",
			       md_format_size(u64_of(tb, METADEF_A_EVENT_SIZE), a, sizeof(a)),
			       md_format_size(u64_of(tb, METADEF_A_POOL_FREE), b, sizeof(b)),
			       md_format_size(u64_of(tb, METADEF_A_POOL_LARGEST_FREE),
					      c, sizeof(c)),
			       u32_of(tb, METADEF_A_POOL_FRAGMENTATION) / 10000.0);
		break;
	case METADEF_CMD_EVENT_QUOTA_REACHED:
		if (json)
			printf(", \"uid\": %u, \"scope\": \"%s\", \"size\": %" PRIu64
			       ", \"limit\": %" PRIu64 ", \"used\": %" PRIu64,
			       u32_of(tb, METADEF_A_DOMAIN_UID),
			       u32_of(tb, METADEF_A_EVENT_SCOPE) == METADEF_SCOPE_USER ?
			       "user" : "domain",
			       u64_of(tb, METADEF_A_EVENT_SIZE),
			       u64_of(tb, METADEF_A_EVENT_LIMIT),
			       u64_of(tb, METADEF_A_EVENT_USED));
		else
			printf(" (uid %u): %s asked past the %s limit of %s, %s used",
			       u32_of(tb, METADEF_A_DOMAIN_UID),
			       md_format_size(u64_of(tb, METADEF_A_EVENT_SIZE), a, sizeof(a)),
			       u32_of(tb, METADEF_A_EVENT_SCOPE) == METADEF_SCOPE_USER ?
			       "user's" : "domain's",
			       md_format_size(u64_of(tb, METADEF_A_EVENT_LIMIT), b, sizeof(b)),
			       md_format_size(u64_of(tb, METADEF_A_EVENT_USED), c, sizeof(c)));
		break;
	case METADEF_CMD_EVENT_MMU_FAULT:
		if (json)
			printf(", \"va\": %" PRIu64 ", \"access\": \"%s\", \"reason\": \"%s\"",
			       u64_of(tb, METADEF_A_FAULT_VA),
			       u32_of(tb, METADEF_A_FAULT_ACCESS) == METADEF_ACCESS_WRITE ?
			       "write" : "read",
			       reason_name(u32_of(tb, METADEF_A_FAULT_REASON)));
		else
			printf(": %s at device VA %#" PRIx64 ": %s",
			       u32_of(tb, METADEF_A_FAULT_ACCESS) == METADEF_ACCESS_WRITE ?
			       "write" : "read",
			       u64_of(tb, METADEF_A_FAULT_VA),
			       reason_name(u32_of(tb, METADEF_A_FAULT_REASON)));
		break;
	case METADEF_CMD_EVENT_DOMAIN_LEAK:
		if (json) {
			printf(", \"uid\": %u, \"pid\": %u, \"comm\": ",
			       u32_of(tb, METADEF_A_DOMAIN_UID),
			       u32_of(tb, METADEF_A_DOMAIN_PID));
			json_string(str_of(tb, METADEF_A_DOMAIN_COMM));
			printf(", \"used\": %" PRIu64 ", \"regions\": %u",
			       u64_of(tb, METADEF_A_DOMAIN_USED),
			       u32_of(tb, METADEF_A_DOMAIN_REGIONS));
		} else {
			printf(" (%s, pid %u, uid %u) closed holding %s in %u regions (mapped or shared)",
			       str_of(tb, METADEF_A_DOMAIN_COMM),
			       u32_of(tb, METADEF_A_DOMAIN_PID),
			       u32_of(tb, METADEF_A_DOMAIN_UID),
			       md_format_size(u64_of(tb, METADEF_A_DOMAIN_USED), a, sizeof(a)),
			       u32_of(tb, METADEF_A_DOMAIN_REGIONS));
		}
		break;
	case METADEF_CMD_EVENT_POOL_LOW:
		if (json)
			printf(", \"pool_size\": %" PRIu64 ", \"free\": %" PRIu64
			       ", \"low_water\": %" PRIu64,
			       u64_of(tb, METADEF_A_POOL_SIZE),
			       u64_of(tb, METADEF_A_POOL_FREE),
			       u64_of(tb, METADEF_A_LIMIT_LOW_WATER));
		else
			printf(": %s free of %s, below the low-water mark %s",
			       md_format_size(u64_of(tb, METADEF_A_POOL_FREE), a, sizeof(a)),
			       md_format_size(u64_of(tb, METADEF_A_POOL_SIZE), b, sizeof(b)),
			       md_format_size(u64_of(tb, METADEF_A_LIMIT_LOW_WATER),
					      c, sizeof(c)));
		break;
	}
	printf(json ? "}\n" : "\n");
	fflush(stdout);
	if (mon->count > 0 && !--mon->count)
		stop = 1;
	return NL_OK;
}

static int cmd_monitor(struct ctl *c, long count)
{
	struct monitor mon = { .count = count };
	struct sigaction sa = { .sa_handler = on_signal };
	struct pollfd pfd;
	int grp, ret;

	grp = genl_ctrl_resolve_grp(c->sock, METADEF_GENL_NAME,
				    METADEF_GENL_MCGRP_EVENTS);
	if (grp < 0) {
		fprintf(stderr, "%s: monitor: no events group: %s\n", prog,
			nl_geterror(grp));
		return 1;
	}
	ret = nl_socket_add_membership(c->sock, grp);
	if (ret) {
		fprintf(stderr, "%s: monitor: cannot join the events group: %s\n",
			prog, ret == -NLE_PERM ?
			"permission denied (needs CAP_SYS_ADMIN)" : nl_geterror(ret));
		return 1;
	}
	nl_socket_disable_seq_check(c->sock);
	nl_socket_modify_cb(c->sock, NL_CB_VALID, NL_CB_CUSTOM, event_cb, &mon);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* Ready (on stderr, even with --json): events are seen from now on. */
	fprintf(stderr, "%s: monitoring metadef events (Ctrl-C to stop)\n", prog);
	pfd.fd = nl_socket_get_fd(c->sock);
	pfd.events = POLLIN;
	while (!stop) {
		ret = poll(&pfd, 1, -1);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0) {
			fprintf(stderr, "%s: monitor: %s\n", prog, strerror(errno));
			return 1;
		}
		ret = nl_recvmsgs_default(c->sock);
		if (ret < 0 && ret != -NLE_INTR) {
			fprintf(stderr, "%s: monitor: %s\n", prog, nl_geterror(ret));
			return 1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "count", required_argument, NULL, 'n' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *device = NULL, *cmd;
	long count = -1;
	struct ctl c;
	char *end;
	int opt, ret, nargs;

	while ((opt = getopt_long(argc, argv, "+d:jn:Vh", opts, NULL)) != -1) {
		switch (opt) {
		case 'd':
			device = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'n':
			count = strtol(optarg, &end, 10);
			if (*end || count <= 0) {
				fprintf(stderr, "%s: --count wants a positive number\n",
					prog);
				return 2;
			}
			break;
		case 'V':
			printf("metadefctl %s\n", md_version());
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "%s: no command given\n", prog);
		usage(stderr);
		return 2;
	}
	cmd = argv[optind];
	nargs = argc - optind - 1;
	if (!strcmp(cmd, "info") && !nargs)
		return cmd_info(device);

	if (!((!strcmp(cmd, "pool") || !strcmp(cmd, "domains") ||
	       !strcmp(cmd, "regions") || !strcmp(cmd, "monitor")) && !nargs) &&
	    !(!strcmp(cmd, "set-quota") && nargs == 2) && strcmp(cmd, "limits")) {
		if (!strcmp(cmd, "set-quota"))
			fprintf(stderr, "%s: usage: set-quota DOMAIN BYTES\n", prog);
		else if (!strcmp(cmd, "info") || !strcmp(cmd, "pool") ||
			 !strcmp(cmd, "domains") || !strcmp(cmd, "regions") ||
			 !strcmp(cmd, "monitor"))
			fprintf(stderr, "%s: %s takes no arguments\n", prog, cmd);
		else
			fprintf(stderr, "%s: unknown command '%s'\n", prog, cmd);
		usage(stderr);
		return 2;
	}

	/* Usage errors before the module is asked anything. */
	if (!strcmp(cmd, "set-quota")) {
		unsigned long id;
		uint64_t q;

		ret = quota_args(argv[optind + 1], argv[optind + 2], &id, &q);
		if (ret)
			return ret;
	}
	if (!strcmp(cmd, "limits") && nargs) {
		struct nl_msg *scratch = nlmsg_alloc();

		for (int i = 0; scratch && i < nargs; i++) {
			ret = put_limit(scratch, argv[optind + 1 + i]);
			if (ret) {
				nlmsg_free(scratch);
				return ret;
			}
		}
		nlmsg_free(scratch);
	}
	if (ctl_open(&c))
		return 1;
	if (!strcmp(cmd, "pool"))
		ret = cmd_pool(&c);
	else if (!strcmp(cmd, "domains"))
		ret = cmd_dump(&c, METADEF_CMD_DOMAIN_GET, "domains", domain_cb);
	else if (!strcmp(cmd, "regions"))
		ret = cmd_dump(&c, METADEF_CMD_REGION_GET, "regions", region_cb);
	else if (!strcmp(cmd, "set-quota"))
		ret = cmd_set_quota(&c, argv[optind + 1], argv[optind + 2]);
	else if (!strcmp(cmd, "limits"))
		ret = cmd_limits(&c, nargs, argv + optind + 1);
	else
		ret = cmd_monitor(&c, count);
	ctl_close(&c);
	return ret;
}
