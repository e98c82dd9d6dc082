/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kselftests: a raw generic netlink client for the "metadef" family, small
 * enough to send malformed requests on purpose (metadefctl uses libnl).
 */
#ifndef METADEF_KSFT_MD_GENL_H
#define METADEF_KSFT_MD_GENL_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/metadef.h>

#ifndef NETLINK_EXT_ACK
#define NETLINK_EXT_ACK 11
#endif

struct md_nl {
	int fd;
	uint16_t family;
	uint32_t version;
	uint32_t mcgrp;		/* the events group's id */
	uint32_t seq;
	char msg[256];		/* the last extack message */
	uint32_t miss_type;	/* the last extack missing attribute */
	int parts;		/* datagrams the last answer took */
};

/* A request being built. */
struct md_req {
	union {
		struct nlmsghdr nlh;
		char buf[4096];
	};
};

static inline void md_req_init(struct md_req *r, uint16_t type, uint16_t flags,
			       uint8_t cmd, uint8_t version)
{
	struct genlmsghdr *g;

	memset(r, 0, sizeof(*r));
	r->nlh.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	r->nlh.nlmsg_type = type;
	r->nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	g = NLMSG_DATA(&r->nlh);
	g->cmd = cmd;
	g->version = version;
}

static inline struct genlmsghdr *md_req_genl(struct md_req *r)
{
	return NLMSG_DATA(&r->nlh);
}

static inline void md_req_put(struct md_req *r, uint16_t type,
			      const void *data, uint16_t len)
{
	struct nlattr *a = (void *)(r->buf + NLMSG_ALIGN(r->nlh.nlmsg_len));

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	memcpy((char *)a + NLA_HDRLEN, data, len);
	r->nlh.nlmsg_len = NLMSG_ALIGN(r->nlh.nlmsg_len) + NLA_ALIGN(a->nla_len);
}

static inline void md_req_u32(struct md_req *r, uint16_t type, uint32_t v)
{
	md_req_put(r, type, &v, sizeof(v));
}

static inline void md_req_u64(struct md_req *r, uint16_t type, uint64_t v)
{
	md_req_put(r, type, &v, sizeof(v));
}

#define MD_NL_MAXATTR 64

/*
 * One message: its attributes by type (the last one of each type),
 * pointing into its own copy of the payload (md_attrs_copy() to keep one).
 */
struct md_attrs {
	uint8_t cmd;
	int len;
	struct nlattr *a[MD_NL_MAXATTR + 1];
	char raw[8192] __attribute__((aligned(8)));
};

static inline void md_parse(void *data, int len, struct nlattr **tb, int max)
{
	struct nlattr *a = data;

	memset(tb, 0, (max + 1) * sizeof(*tb));
	while (len >= (int)NLA_HDRLEN && a->nla_len >= NLA_HDRLEN &&
	       a->nla_len <= len) {
		int type = a->nla_type & NLA_TYPE_MASK;

		if (type <= max)
			tb[type] = a;
		len -= NLA_ALIGN(a->nla_len);
		a = (void *)((char *)a + NLA_ALIGN(a->nla_len));
	}
}

static inline void *md_attr_data(const struct nlattr *a)
{
	return (char *)a + NLA_HDRLEN;
}

static inline int md_attr_len(const struct nlattr *a)
{
	return a->nla_len - NLA_HDRLEN;
}

static inline uint32_t md_u32(const struct md_attrs *m, int type)
{
	uint32_t v = 0;

	if (m->a[type])
		memcpy(&v, md_attr_data(m->a[type]), sizeof(v));
	return v;
}

static inline uint64_t md_u64(const struct md_attrs *m, int type)
{
	uint64_t v = 0;

	if (m->a[type])
		memcpy(&v, md_attr_data(m->a[type]), sizeof(v));
	return v;
}

static inline const char *md_str(const struct md_attrs *m, int type)
{
	return m->a[type] ? md_attr_data(m->a[type]) : "";
}

static inline void md_attrs_load(struct md_attrs *m, uint8_t cmd,
				 const void *data, int len)
{
	if (len > (int)sizeof(m->raw))
		len = sizeof(m->raw);
	m->cmd = cmd;
	m->len = len;
	memcpy(m->raw, data, len);
	md_parse(m->raw, len, m->a, MD_NL_MAXATTR);
}

static inline void md_attrs_copy(struct md_attrs *dst,
				 const struct md_attrs *src)
{
	md_attrs_load(dst, src->cmd, src->raw, src->len);
}

typedef void (*md_nl_cb)(struct md_attrs *m, void *ctx);

/* The extack of an error message: its text and missing attribute. */
static inline void md_nl_extack(struct md_nl *nl, struct nlmsghdr *h)
{
	struct nlmsgerr *e = NLMSG_DATA(h);
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	int off = sizeof(*e);

	if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	if (!(h->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - sizeof(e->msg);
	md_parse((char *)e + off, (int)h->nlmsg_len - NLMSG_HDRLEN - off, tb,
		 NLMSGERR_ATTR_MAX);
	if (tb[NLMSGERR_ATTR_MSG])
		snprintf(nl->msg, sizeof(nl->msg), "%s",
			 (char *)md_attr_data(tb[NLMSGERR_ATTR_MSG]));
#ifdef NLMSGERR_ATTR_MISS_TYPE
	if (tb[NLMSGERR_ATTR_MISS_TYPE])
		memcpy(&nl->miss_type, md_attr_data(tb[NLMSGERR_ATTR_MISS_TYPE]),
		       sizeof(nl->miss_type));
#endif
}

/*
 * Read the answer to request @seq: every message to @cb, until the ACK, an
 * error or the end of a dump. 0 or -errno (the kernel's).
 */
static inline int md_nl_answer(struct md_nl *nl, uint32_t seq, md_nl_cb cb,
			       void *ctx)
{
	static char buf[65536];

	nl->msg[0] = 0;
	nl->miss_type = 0;
	nl->parts = 0;
	for (;;) {
		int len = recv(nl->fd, buf, sizeof(buf), 0);
		struct nlmsghdr *h;

		if (len < 0)
			return -errno;
		nl->parts++;
		for (h = (void *)buf; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_seq != seq)
				continue;
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);

				md_nl_extack(nl, h);
				return e->error;
			}
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == nl->family && cb) {
				struct genlmsghdr *g = NLMSG_DATA(h);
				static struct md_attrs m;

				md_attrs_load(&m, g->cmd, (char *)g + GENL_HDRLEN,
					      h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN));
				cb(&m, ctx);
			}
		}
	}
}

static inline int md_nl_send(struct md_nl *nl, struct md_req *r)
{
	r->nlh.nlmsg_seq = ++nl->seq;
	if (send(nl->fd, r->buf, r->nlh.nlmsg_len, 0) < 0)
		return -errno;
	return 0;
}

static inline int md_nl_call(struct md_nl *nl, struct md_req *r, md_nl_cb cb,
			     void *ctx)
{
	int ret = md_nl_send(nl, r);

	return ret ? ret : md_nl_answer(nl, nl->seq, cb, ctx);
}

/* The controller's answer about our family: its id, version, group. */
static inline void md_nl_family_cb(struct md_attrs *m, void *ctx)
{
	struct md_nl *nl = ctx;
	struct nlattr *grp[CTRL_ATTR_MCAST_GRP_MAX + 1];
	struct nlattr *a = m->a[CTRL_ATTR_MCAST_GROUPS];

	if (m->a[CTRL_ATTR_FAMILY_ID])
		memcpy(&nl->family, md_attr_data(m->a[CTRL_ATTR_FAMILY_ID]), 2);
	if (m->a[CTRL_ATTR_VERSION])
		memcpy(&nl->version, md_attr_data(m->a[CTRL_ATTR_VERSION]), 4);
	if (!a)
		return;
	/* A nest of nests, one per group. */
	for (int len = md_attr_len(a), off = 0; off + NLA_HDRLEN <= len;) {
		struct nlattr *g = (void *)((char *)md_attr_data(a) + off);

		md_parse(md_attr_data(g), md_attr_len(g), grp,
			 CTRL_ATTR_MCAST_GRP_MAX);
		if (grp[CTRL_ATTR_MCAST_GRP_NAME] && grp[CTRL_ATTR_MCAST_GRP_ID] &&
		    !strcmp(md_attr_data(grp[CTRL_ATTR_MCAST_GRP_NAME]),
			    METADEF_GENL_MCGRP_EVENTS))
			memcpy(&nl->mcgrp,
			       md_attr_data(grp[CTRL_ATTR_MCAST_GRP_ID]), 4);
		off += NLA_ALIGN(g->nla_len);
	}
}

/* A socket with extack, the family resolved. 0 or -errno. */
static inline int md_nl_open(struct md_nl *nl)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct timeval tv = { .tv_sec = 5 };
	struct md_req r;
	int one = 1, ret;

	memset(nl, 0, sizeof(*nl));
	nl->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (nl->fd < 0)
		return -errno;
	if (bind(nl->fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    setsockopt(nl->fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one)) ||
	    setsockopt(nl->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))) {
		ret = -errno;
		close(nl->fd);
		return ret;
	}
	nl->family = GENL_ID_CTRL;
	md_req_init(&r, GENL_ID_CTRL, 0, CTRL_CMD_GETFAMILY, 1);
	md_req_put(&r, CTRL_ATTR_FAMILY_NAME, METADEF_GENL_NAME,
		   sizeof(METADEF_GENL_NAME));
	ret = md_nl_call(nl, &r, md_nl_family_cb, nl);
	if (!ret && nl->family == GENL_ID_CTRL)
		ret = -ENOENT;
	if (ret)
		close(nl->fd);
	return ret;
}

static inline void md_nl_close(struct md_nl *nl)
{
	close(nl->fd);
}

/* A request of ours, version METADEF_GENL_VERSION. */
static inline void md_req(struct md_nl *nl, struct md_req *r, uint8_t cmd,
			  uint16_t flags)
{
	md_req_init(r, nl->family, flags, cmd, METADEF_GENL_VERSION);
}

#endif /* METADEF_KSFT_MD_GENL_H */
