// SPDX-License-Identifier: GPL-2.0
/*
 * The generic netlink family "metadef": the pool, the domains, the regions
 * and the limits for operators, and the events multicast group. The
 * commands and attributes are described in include/uapi/linux/metadef.h.
 *
 * Validation: one policy for every attribute, strict parsing for every op
 * (no GENL_DONT_VALIDATE_*; resv_start_op 0 where the kernel has it), the
 * header's reserved byte checked here on kernels that do not, extack
 * messages on every refusal.
 *
 * Locking: the walks are debugfs.c's: domains under the xa_lock of
 * mdev->domains, regions under that of mdev->mmap_ids (a region leaves it
 * before it is freed), reading the same counters with the same accessors.
 * Filling a message allocates nothing, so it may run under those locks; a
 * dump that fills its buffer stops and resumes after the last object sent
 * (cb->args[0]).
 *
 * Events are built and sent in process context with no lock held, only
 * when somebody listens.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/math64.h>
#include <linux/slab.h>
#include <net/genetlink.h>
#include <net/netlink.h>
#include <net/sock.h>

#include "compat.h"
#include "metadef.h"
#include "pool.h"

static struct md_device *md_genl_dev;

static const struct nla_policy md_genl_policy[METADEF_A_MAX + 1] = {
	[METADEF_A_PAD] = { .type = NLA_REJECT,
			    .reject_message = "padding is not a request attribute" },
#define OUT_ONLY { .type = NLA_REJECT, \
		   .reject_message = "attribute is reported by the module, not accepted" }
	[METADEF_A_ABI_VERSION] = OUT_ONLY,
	[METADEF_A_PAGE_SIZE] = OUT_ONLY,
	[METADEF_A_POOL_BACKEND] = OUT_ONLY,
	[METADEF_A_POOL_SIZE] = OUT_ONLY,
	[METADEF_A_POOL_FREE] = OUT_ONLY,
	[METADEF_A_POOL_LARGEST_FREE] = OUT_ONLY,
	[METADEF_A_POOL_FRAGMENTATION] = OUT_ONLY,
	[METADEF_A_POOL_ORDERS] = OUT_ONLY,
	[METADEF_A_ORDER] = OUT_ONLY,
	[METADEF_A_ORDER_INDEX] = OUT_ONLY,
	[METADEF_A_ORDER_BLOCK_SIZE] = OUT_ONLY,
	[METADEF_A_ORDER_FREE_BLOCKS] = OUT_ONLY,
	[METADEF_A_DOMAIN_ID] = { .type = NLA_U32 },
	[METADEF_A_DOMAIN_UID] = OUT_ONLY,
	[METADEF_A_DOMAIN_PID] = OUT_ONLY,
	[METADEF_A_DOMAIN_COMM] = OUT_ONLY,
	[METADEF_A_DOMAIN_COLOR] = OUT_ONLY,
	[METADEF_A_DOMAIN_QUOTA] = { .type = NLA_U64 },
	[METADEF_A_DOMAIN_USED] = OUT_ONLY,
	[METADEF_A_DOMAIN_REGIONS] = OUT_ONLY,
	[METADEF_A_DOMAIN_IMPORTS] = OUT_ONLY,
	[METADEF_A_DOMAIN_GRANTS] = OUT_ONLY,
	[METADEF_A_DOMAIN_FAULTS] = OUT_ONLY,
	[METADEF_A_REGION_DOMAIN] = OUT_ONLY,
	[METADEF_A_REGION_HANDLE] = OUT_ONLY,
	[METADEF_A_REGION_PID] = OUT_ONLY,
	[METADEF_A_REGION_OFFSET] = OUT_ONLY,
	[METADEF_A_REGION_SIZE] = OUT_ONLY,
	[METADEF_A_REGION_REFS] = OUT_ONLY,
	[METADEF_A_REGION_MAPPED] = OUT_ONLY,
	[METADEF_A_REGION_DMABUFS] = OUT_ONLY,
	[METADEF_A_LIMIT_DEFAULT_QUOTA] = { .type = NLA_U64 },
	[METADEF_A_LIMIT_USER_DOMAINS] = { .type = NLA_U32 },
	[METADEF_A_LIMIT_USER_BYTES] = { .type = NLA_U64 },
	[METADEF_A_LIMIT_USER_PCT] = { .type = NLA_U32 },
	[METADEF_A_LIMIT_USER_BYTES_EFFECTIVE] = OUT_ONLY,
	[METADEF_A_LIMIT_USER_GRANTS] = { .type = NLA_U32 },
	[METADEF_A_LIMIT_DOMAIN_GRANTS] = { .type = NLA_U32 },
	[METADEF_A_LIMIT_LOW_WATER] = { .type = NLA_U64 },
	[METADEF_A_EVENT_SIZE] = OUT_ONLY,
	[METADEF_A_EVENT_SCOPE] = OUT_ONLY,
	[METADEF_A_EVENT_LIMIT] = OUT_ONLY,
	[METADEF_A_EVENT_USED] = OUT_ONLY,
	[METADEF_A_FAULT_VA] = OUT_ONLY,
	[METADEF_A_FAULT_ACCESS] = OUT_ONLY,
	[METADEF_A_FAULT_REASON] = OUT_ONLY,
#undef OUT_ONLY
};

enum { MD_GENL_MCGRP_EVENTS };

static const struct genl_multicast_group md_genl_mcgrps[] = {
	[MD_GENL_MCGRP_EVENTS] = { .name = METADEF_GENL_MCGRP_EVENTS,
				   MD_GENL_MCGRP_ADMIN },
};

static struct genl_family md_genl_family;

static int put_u64(struct sk_buff *skb, int type, u64 v)
{
	return nla_put_u64_64bit(skb, type, v, METADEF_A_PAD);
}

/*
 * Checks common to every request; 0 or -EINVAL with extack. A request
 * of a later family version than this module's may mean attributes this
 * module reads differently: refused. Version 0 (a generic client that
 * does not set it) is taken as version 1.
 */
static int check_header(const struct genlmsghdr *hdr,
			struct netlink_ext_ack *extack)
{
	if (hdr->version > METADEF_GENL_VERSION) {
		NL_SET_ERR_MSG(extack, "metadef: request of a later family version");
		return -EINVAL;
	}
	/* The core checks this too where it knows resv_start_op (6.0+). */
	if (hdr->reserved) {
		NL_SET_ERR_MSG(extack, "metadef: genetlink header reserved field must be 0");
		return -EINVAL;
	}
	return 0;
}

static int check_admin(struct sk_buff *skb, struct netlink_ext_ack *extack)
{
	if (!netlink_capable(skb, CAP_SYS_ADMIN)) {
		NL_SET_ERR_MSG(extack, "metadef: CAP_SYS_ADMIN required");
		return -EPERM;
	}
	return 0;
}

/* True, with extack naming it, when attribute @type is not in the request. */
#define attr_missing(info, type, msg) ({				\
	struct genl_info *__info = (info);				\
	bool __missing = !__info->attrs[type];				\
									\
	if (__missing) {						\
		MD_GENL_SET_ATTR_MISS(__info, type);			\
		NL_SET_ERR_MSG(__info->extack, msg);			\
	}								\
	__missing;							\
})

/* ---------------------------------------------------------------- pool */

static int fill_pool(struct sk_buff *skb, struct md_pool *pool)
{
	u64 avail, largest, *nr_free;
	unsigned int k, max_order;
	struct nlattr *orders, *o;
	int ret = -EMSGSIZE;

	nr_free = kcalloc(MD_BUDDY_MAX_ORDER + 1, sizeof(*nr_free), GFP_KERNEL);
	if (!nr_free)
		return -ENOMEM;
	mutex_lock(&pool->lock);
	avail = pool->buddy.avail;
	largest = md_buddy_largest(&pool->buddy);
	max_order = pool->buddy.max_order;
	memcpy(nr_free, pool->buddy.nr_free, (max_order + 1) * sizeof(*nr_free));
	mutex_unlock(&pool->lock);

	if (nla_put_u32(skb, METADEF_A_ABI_VERSION, METADEF_ABI_VERSION) ||
	    nla_put_u32(skb, METADEF_A_PAGE_SIZE, PAGE_SIZE) ||
	    nla_put_string(skb, METADEF_A_POOL_BACKEND, pool->backend) ||
	    put_u64(skb, METADEF_A_POOL_SIZE, pool->buddy.size) ||
	    put_u64(skb, METADEF_A_POOL_FREE, avail) ||
	    put_u64(skb, METADEF_A_POOL_LARGEST_FREE, largest) ||
	    nla_put_u32(skb, METADEF_A_POOL_FRAGMENTATION,
			md_fragmentation_ppm(avail, largest)))
		goto out;
	orders = nla_nest_start(skb, METADEF_A_POOL_ORDERS);
	if (!orders)
		goto out;
	for (k = 0; k <= max_order; k++) {
		o = nla_nest_start(skb, METADEF_A_ORDER);
		if (!o ||
		    nla_put_u32(skb, METADEF_A_ORDER_INDEX, k) ||
		    put_u64(skb, METADEF_A_ORDER_BLOCK_SIZE,
			    md_buddy_block_size(&pool->buddy, k)) ||
		    put_u64(skb, METADEF_A_ORDER_FREE_BLOCKS, nr_free[k]))
			goto out;
		nla_nest_end(skb, o);
	}
	nla_nest_end(skb, orders);
	ret = 0;
out:
	kfree(nr_free);
	return ret;
}

static int md_genl_pool_get(struct sk_buff *skb, struct genl_info *info)
{
	struct md_pool *pool;
	struct sk_buff *msg;
	void *hdr;
	int ret;

	ret = check_header(info->genlhdr, info->extack);
	if (ret)
		return ret;
	pool = md_pool_current(md_genl_dev);
	if (!pool) {
		NL_SET_ERR_MSG(info->extack, "metadef: no pool (no device bound yet)");
		return -ENODEV;
	}
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg) {
		ret = -ENOMEM;
		goto out;
	}
	hdr = genlmsg_put_reply(msg, info, &md_genl_family, 0,
				METADEF_CMD_POOL_GET);
	if (!hdr) {
		ret = -EMSGSIZE;
		goto err_free;
	}
	ret = fill_pool(msg, pool);
	if (ret)
		goto err_free;
	genlmsg_end(msg, hdr);
	md_pool_put(pool);
	return genlmsg_reply(msg, info);

err_free:
	nlmsg_free(msg);
out:
	md_pool_put(pool);
	return ret;
}

/* ---------------------------------------------------------------- dumps */

static int md_genl_dump_start(struct netlink_callback *cb)
{
	return check_header(nlmsg_data(cb->nlh), cb->extack);
}

static int md_genl_dump_start_admin(struct netlink_callback *cb)
{
	int ret = md_genl_dump_start(cb);

	return ret ?: check_admin(cb->skb, cb->extack);
}

static void *dump_put(struct sk_buff *skb, struct netlink_callback *cb, u8 cmd)
{
	return genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			   &md_genl_family, NLM_F_MULTI, cmd);
}

/* The domain's identity: shared by the dump and the events. */
static int put_domain_id(struct sk_buff *skb, struct md_domain *dom)
{
	if (nla_put_u32(skb, METADEF_A_DOMAIN_ID, dom->id) ||
	    nla_put_u32(skb, METADEF_A_DOMAIN_UID,
			from_kuid(&init_user_ns, dom->uid)) ||
	    nla_put_u32(skb, METADEF_A_DOMAIN_PID, dom->pid) ||
	    nla_put_string(skb, METADEF_A_DOMAIN_COMM, dom->comm))
		return -EMSGSIZE;
	return 0;
}

/* Under the xa_lock of mdev->domains, as debugfs "domains". */
static int fill_domain(struct sk_buff *skb, struct md_domain *dom)
{
	if (put_domain_id(skb, dom) ||
	    nla_put_u32(skb, METADEF_A_DOMAIN_COLOR, dom->color) ||
	    put_u64(skb, METADEF_A_DOMAIN_QUOTA, READ_ONCE(dom->quota)) ||
	    put_u64(skb, METADEF_A_DOMAIN_USED, atomic64_read(&dom->used)) ||
	    nla_put_u32(skb, METADEF_A_DOMAIN_REGIONS,
			atomic_read(&dom->nr_regions)) ||
	    nla_put_u32(skb, METADEF_A_DOMAIN_IMPORTS,
			atomic_read(&dom->nr_imports)) ||
	    nla_put_u32(skb, METADEF_A_DOMAIN_GRANTS,
			READ_ONCE(dom->nr_grants)) ||
	    nla_put_u32(skb, METADEF_A_DOMAIN_FAULTS,
			atomic_read(&dom->nr_faults)))
		return -EMSGSIZE;
	return 0;
}

/*
 * One message per object of @xa from where the last message stopped, under
 * its xa_lock; @fill adds an object's attributes. A full buffer ends this
 * message: the rest comes in the next one.
 */
static int dump_xa(struct sk_buff *skb, struct netlink_callback *cb,
		   struct xarray *xa, u8 cmd,
		   int (*fill)(struct sk_buff *skb, void *obj))
{
	unsigned long id;
	void *obj, *hdr;
	int ret = 0;

	xa_lock(xa);
	xa_for_each_start(xa, id, obj, cb->args[0]) {
		hdr = dump_put(skb, cb, cmd);
		if (!hdr) {
			ret = -EMSGSIZE;
			break;
		}
		ret = fill(skb, obj);
		if (ret) {
			genlmsg_cancel(skb, hdr);
			break;
		}
		genlmsg_end(skb, hdr);
		cb->args[0] = id + 1;
	}
	xa_unlock(xa);
	if (ret == -EMSGSIZE && skb->len)
		return skb->len;
	return ret ?: skb->len;
}

static int fill_domain_obj(struct sk_buff *skb, void *obj)
{
	return fill_domain(skb, obj);
}

static int md_genl_domain_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	return dump_xa(skb, cb, &md_genl_dev->domains, METADEF_CMD_DOMAIN_GET,
		       fill_domain_obj);
}

/* Under the xa_lock of mdev->mmap_ids, as debugfs "regions". */
static int fill_region(struct sk_buff *skb, struct md_region *r)
{
	if (nla_put_u32(skb, METADEF_A_REGION_DOMAIN, r->owner) ||
	    nla_put_u32(skb, METADEF_A_REGION_HANDLE, READ_ONCE(r->handle)) ||
	    nla_put_u32(skb, METADEF_A_REGION_PID, r->pid) ||
	    put_u64(skb, METADEF_A_REGION_OFFSET, r->alloc.offset) ||
	    put_u64(skb, METADEF_A_REGION_SIZE, r->alloc.size) ||
	    nla_put_u32(skb, METADEF_A_REGION_REFS, kref_read(&r->ref)) ||
	    nla_put_u32(skb, METADEF_A_REGION_MAPPED, atomic_read(&r->vmas)) ||
	    nla_put_u32(skb, METADEF_A_REGION_DMABUFS,
			atomic_read(&r->dmabufs)))
		return -EMSGSIZE;
	return 0;
}

static int fill_region_obj(struct sk_buff *skb, void *obj)
{
	return fill_region(skb, obj);
}

static int md_genl_region_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	return dump_xa(skb, cb, &md_genl_dev->mmap_ids, METADEF_CMD_REGION_GET,
		       fill_region_obj);
}

/* ---------------------------------------------------------------- quota */

static int md_genl_quota_set(struct sk_buff *skb, struct genl_info *info)
{
	struct md_device *mdev = md_genl_dev;
	struct md_domain *target;
	u64 quota;
	u32 id;
	int ret;

	ret = check_header(info->genlhdr, info->extack);
	if (ret)
		return ret;
	ret = check_admin(skb, info->extack);
	if (ret)
		return ret;
	if (attr_missing(info, METADEF_A_DOMAIN_ID, "metadef: domain id missing") ||
	    attr_missing(info, METADEF_A_DOMAIN_QUOTA, "metadef: quota missing"))
		return -EINVAL;
	id = nla_get_u32(info->attrs[METADEF_A_DOMAIN_ID]);
	quota = nla_get_u64(info->attrs[METADEF_A_DOMAIN_QUOTA]);

	xa_lock(&mdev->domains);
	target = id ? xa_load(&mdev->domains, id) : NULL;
	if (target)
		WRITE_ONCE(target->quota, quota);
	xa_unlock(&mdev->domains);
	if (!target) {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[METADEF_A_DOMAIN_ID],
				    "metadef: no such domain");
		return -ENOENT;
	}
	return 0;
}

/* ---------------------------------------------------------------- limits */

static int fill_limits(struct sk_buff *skb, struct md_device *mdev)
{
	struct md_pool *pool = md_pool_current(mdev);
	u64 eff = U64_MAX;

	if (pool) {
		eff = md_user_byte_limit(mdev, pool->buddy.size);
		md_pool_put(pool);
	}
	if (put_u64(skb, METADEF_A_LIMIT_DEFAULT_QUOTA,
		    READ_ONCE(mdev->default_quota)) ||
	    nla_put_u32(skb, METADEF_A_LIMIT_USER_DOMAINS,
			READ_ONCE(mdev->max_user_domains)) ||
	    put_u64(skb, METADEF_A_LIMIT_USER_BYTES,
		    READ_ONCE(mdev->max_user_bytes)) ||
	    nla_put_u32(skb, METADEF_A_LIMIT_USER_PCT,
			READ_ONCE(mdev->max_user_pct)) ||
	    (eff != U64_MAX &&
	     put_u64(skb, METADEF_A_LIMIT_USER_BYTES_EFFECTIVE, eff)) ||
	    nla_put_u32(skb, METADEF_A_LIMIT_USER_GRANTS,
			READ_ONCE(mdev->max_user_grants)) ||
	    nla_put_u32(skb, METADEF_A_LIMIT_DOMAIN_GRANTS,
			READ_ONCE(mdev->max_domain_grants)) ||
	    put_u64(skb, METADEF_A_LIMIT_LOW_WATER, READ_ONCE(mdev->low_water)))
		return -EMSGSIZE;
	return 0;
}

static int md_genl_limits_get(struct sk_buff *skb, struct genl_info *info)
{
	struct sk_buff *msg;
	void *hdr;
	int ret;

	ret = check_header(info->genlhdr, info->extack);
	if (ret)
		return ret;
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &md_genl_family, 0,
				METADEF_CMD_LIMITS_GET);
	if (!hdr || fill_limits(msg, md_genl_dev)) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
}

static int md_genl_limits_set(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **a = info->attrs;
	struct md_device *mdev = md_genl_dev;
	u32 pct;
	int ret;

	ret = check_header(info->genlhdr, info->extack);
	if (ret)
		return ret;
	ret = check_admin(skb, info->extack);
	if (ret)
		return ret;
	if (a[METADEF_A_LIMIT_USER_BYTES] && a[METADEF_A_LIMIT_USER_PCT]) {
		NL_SET_ERR_MSG_ATTR(info->extack, a[METADEF_A_LIMIT_USER_PCT],
				    "metadef: user bytes and user percentage exclude each other");
		return -EINVAL;
	}
	if (a[METADEF_A_LIMIT_USER_PCT]) {
		pct = nla_get_u32(a[METADEF_A_LIMIT_USER_PCT]);
		if (!pct || pct > 100) {
			NL_SET_ERR_MSG_ATTR(info->extack, a[METADEF_A_LIMIT_USER_PCT],
					    "metadef: user percentage must be 1-100");
			return -ERANGE;
		}
	}
	/* Every value is checked: now change them, as the parameters do. */
	if (a[METADEF_A_LIMIT_DEFAULT_QUOTA])
		WRITE_ONCE(mdev->default_quota,
			   nla_get_u64(a[METADEF_A_LIMIT_DEFAULT_QUOTA]));
	if (a[METADEF_A_LIMIT_USER_DOMAINS])
		WRITE_ONCE(mdev->max_user_domains,
			   nla_get_u32(a[METADEF_A_LIMIT_USER_DOMAINS]));
	if (a[METADEF_A_LIMIT_USER_BYTES]) {
		WRITE_ONCE(mdev->max_user_pct, 0);
		WRITE_ONCE(mdev->max_user_bytes,
			   nla_get_u64(a[METADEF_A_LIMIT_USER_BYTES]));
	}
	if (a[METADEF_A_LIMIT_USER_PCT]) {
		WRITE_ONCE(mdev->max_user_bytes, 0);
		WRITE_ONCE(mdev->max_user_pct,
			   nla_get_u32(a[METADEF_A_LIMIT_USER_PCT]));
	}
	if (a[METADEF_A_LIMIT_USER_GRANTS])
		WRITE_ONCE(mdev->max_user_grants,
			   nla_get_u32(a[METADEF_A_LIMIT_USER_GRANTS]));
	if (a[METADEF_A_LIMIT_DOMAIN_GRANTS])
		WRITE_ONCE(mdev->max_domain_grants,
			   nla_get_u32(a[METADEF_A_LIMIT_DOMAIN_GRANTS]));
	if (a[METADEF_A_LIMIT_LOW_WATER]) {
		WRITE_ONCE(mdev->low_water,
			   nla_get_u64(a[METADEF_A_LIMIT_LOW_WATER]));
		atomic_set(&mdev->low_water_armed, 1);
	}
	return 0;
}

/* ---------------------------------------------------------------- family */

static const struct genl_ops md_genl_ops[] = {
	{
		.cmd = METADEF_CMD_POOL_GET,
		.doit = md_genl_pool_get,
	},
	{
		.cmd = METADEF_CMD_DOMAIN_GET,
		.start = md_genl_dump_start,
		.dumpit = md_genl_domain_dump,
	},
	{
		.cmd = METADEF_CMD_REGION_GET,
		.start = md_genl_dump_start_admin,
		.dumpit = md_genl_region_dump,
	},
	{
		.cmd = METADEF_CMD_QUOTA_SET,
		.doit = md_genl_quota_set,
	},
	{
		.cmd = METADEF_CMD_LIMITS_GET,
		.doit = md_genl_limits_get,
	},
	{
		.cmd = METADEF_CMD_LIMITS_SET,
		.doit = md_genl_limits_set,
	},
};

static struct genl_family md_genl_family __ro_after_init = {
	.name = METADEF_GENL_NAME,
	.version = METADEF_GENL_VERSION,
	.maxattr = METADEF_A_MAX,
	.policy = md_genl_policy,
	.module = THIS_MODULE,
	.parallel_ops = true,
	.ops = md_genl_ops,
	.n_ops = ARRAY_SIZE(md_genl_ops),
	.mcgrps = md_genl_mcgrps,
	.n_mcgrps = ARRAY_SIZE(md_genl_mcgrps),
	MD_GENL_RESV_START_OP
};

/* ---------------------------------------------------------------- events */

static bool md_genl_listening(void)
{
	return md_genl_dev &&
	       genl_has_listeners(&md_genl_family, &init_net,
				  MD_GENL_MCGRP_EVENTS);
}

static struct sk_buff *event_new(u8 cmd, void **hdr)
{
	struct sk_buff *skb = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);

	if (!skb)
		return NULL;
	*hdr = genlmsg_put(skb, 0, 0, &md_genl_family, 0, cmd);
	if (!*hdr) {
		nlmsg_free(skb);
		return NULL;
	}
	return skb;
}

static void event_send(struct sk_buff *skb, void *hdr, int err)
{
	if (err) {
		nlmsg_free(skb);
		return;
	}
	genlmsg_end(skb, hdr);
	md_genl_multicast(&md_genl_family, skb, MD_GENL_MCGRP_EVENTS);
}

/* An ALLOC of @size found no room in @pool. */
void md_genl_alloc_refused(struct md_domain *dom, struct md_pool *pool,
			   u64 size)
{
	u64 avail, largest;
	struct sk_buff *skb;
	void *hdr;
	int err;

	if (!md_genl_listening())
		return;
	md_pool_usage(pool, &avail, &largest);
	skb = event_new(METADEF_CMD_EVENT_ALLOC_REFUSED, &hdr);
	if (!skb)
		return;
	err = put_u64(skb, METADEF_A_EVENT_SIZE, size) ||
	      nla_put_u32(skb, METADEF_A_DOMAIN_ID, dom->id) ||
	      put_u64(skb, METADEF_A_POOL_SIZE, pool->buddy.size) ||
	      put_u64(skb, METADEF_A_POOL_FREE, avail) ||
	      put_u64(skb, METADEF_A_POOL_LARGEST_FREE, largest) ||
	      nla_put_u32(skb, METADEF_A_POOL_FRAGMENTATION,
			  md_fragmentation_ppm(avail, largest));
	event_send(skb, hdr, err);
}

/* An ALLOC of @size went past @limit (@used before it) of @scope. */
void md_genl_quota_reached(struct md_domain *dom, u64 size, u32 scope,
			   u64 limit, u64 used)
{
	struct sk_buff *skb;
	void *hdr;
	int err;

	if (!md_genl_listening())
		return;
	skb = event_new(METADEF_CMD_EVENT_QUOTA_REACHED, &hdr);
	if (!skb)
		return;
	err = put_u64(skb, METADEF_A_EVENT_SIZE, size) ||
	      nla_put_u32(skb, METADEF_A_DOMAIN_ID, dom->id) ||
	      nla_put_u32(skb, METADEF_A_DOMAIN_UID,
			  from_kuid(&init_user_ns, dom->uid)) ||
	      nla_put_u32(skb, METADEF_A_EVENT_SCOPE, scope) ||
	      put_u64(skb, METADEF_A_EVENT_LIMIT, limit) ||
	      put_u64(skb, METADEF_A_EVENT_USED, used);
	event_send(skb, hdr, err);
}

/* The copy engine faulted at @va. */
void md_genl_mmu_fault(struct md_domain *dom, u64 va, unsigned int access,
		       enum md_mmu_fault reason)
{
	static const u32 reasons[] = {
		[MD_MMU_UNMAPPED] = METADEF_FAULT_UNMAPPED,
		[MD_MMU_PERM] = METADEF_FAULT_PERM,
		[MD_MMU_COLOR] = METADEF_FAULT_COLOR,
	};
	struct sk_buff *skb;
	void *hdr;
	int err;

	if (!md_genl_listening() || reason >= ARRAY_SIZE(reasons))
		return;
	skb = event_new(METADEF_CMD_EVENT_MMU_FAULT, &hdr);
	if (!skb)
		return;
	err = nla_put_u32(skb, METADEF_A_DOMAIN_ID, dom->id) ||
	      put_u64(skb, METADEF_A_FAULT_VA, va) ||
	      nla_put_u32(skb, METADEF_A_FAULT_ACCESS,
			  access & MD_MMU_WRITE ? METADEF_ACCESS_WRITE :
						  METADEF_ACCESS_READ) ||
	      nla_put_u32(skb, METADEF_A_FAULT_REASON, reasons[reason]);
	event_send(skb, hdr, err);
}

/* @dom's file closed and its handles are gone, but memory is still held. */
void md_genl_domain_leak(struct md_domain *dom)
{
	u64 used = atomic64_read(&dom->used);
	struct sk_buff *skb;
	void *hdr;
	int err;

	if (!used || !md_genl_listening())
		return;
	skb = event_new(METADEF_CMD_EVENT_DOMAIN_LEAK, &hdr);
	if (!skb)
		return;
	err = put_domain_id(skb, dom) ||
	      put_u64(skb, METADEF_A_DOMAIN_USED, used) ||
	      nla_put_u32(skb, METADEF_A_DOMAIN_REGIONS,
			  atomic_read(&dom->nr_regions));
	event_send(skb, hdr, err);
}

/*
 * After an allocation from (@freed false) or a free to @pool: below the
 * low-water mark, one event per crossing; back at or above it, armed
 * again.
 */
void md_genl_pool_check(struct md_device *mdev, struct md_pool *pool,
			bool freed)
{
	u64 low = READ_ONCE(mdev->low_water);
	u64 avail = READ_ONCE(pool->buddy.avail);
	struct sk_buff *skb;
	void *hdr;
	int err;

	if (!low)
		return;
	if (avail >= low) {
		if (freed)
			atomic_set(&mdev->low_water_armed, 1);
		return;
	}
	if (freed || !atomic_cmpxchg(&mdev->low_water_armed, 1, 0))
		return;
	if (!md_genl_listening())
		return;
	skb = event_new(METADEF_CMD_EVENT_POOL_LOW, &hdr);
	if (!skb)
		return;
	err = put_u64(skb, METADEF_A_POOL_SIZE, pool->buddy.size) ||
	      put_u64(skb, METADEF_A_POOL_FREE, avail) ||
	      put_u64(skb, METADEF_A_LIMIT_LOW_WATER, low);
	event_send(skb, hdr, err);
}

int md_genl_init(struct md_device *mdev)
{
	int ret = genl_register_family(&md_genl_family);

	if (!ret)
		WRITE_ONCE(md_genl_dev, mdev);
	return ret;
}

void md_genl_exit(void)
{
	genl_unregister_family(&md_genl_family);
	WRITE_ONCE(md_genl_dev, NULL);
}
