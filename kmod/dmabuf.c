// SPDX-License-Identifier: GPL-2.0
/*
 * dma-buf export: a region handed to other drivers (and processes) as a
 * dma-buf, for zero-copy interop.
 *
 * The dma-buf holds a reference to its region, so the memory outlives the
 * owner's FREE and close(2) for as long as the dma-buf, an attachment or a
 * CPU mapping of it lives; it stays charged to the owner meanwhile. Only a
 * region's owner may export it, never an importer.
 *
 * Pool memory with struct pages (sysram) is mapped for an importer with
 * dma_map_sgtable(); memory behind a PCI BAR has no struct pages and is
 * mapped with dma_map_resource(), the scatterlist then carrying only DMA
 * addresses. Either way the region is physically contiguous, and the
 * scatterlist splits it into segments the importer's device accepts.
 *
 * CPU mappings of the dma-buf are moved onto a file of the device's shared
 * address_space (md_mapping_file()), so pulling a PCI device out zaps them
 * like every other mapping of its memory.
 */
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/sizes.h>
#include <linux/slab.h>

#include "compat.h"
#include "metadef.h"
#include "pool.h"

/**
 * struct md_dmabuf - what one exported dma-buf holds
 * @r: the region (holds a reference)
 * @mapping: the file CPU mappings are moved onto (holds a reference)
 * @lock: guards @attachments
 * @attachments: struct md_dmabuf_attachment, by link
 */
struct md_dmabuf {
	struct md_region *r;
	struct file *mapping;
	struct mutex lock;	/* guards @attachments */
	struct list_head attachments;
};

/**
 * struct md_dmabuf_attachment - one importing device
 * @link: in md_dmabuf.attachments
 * @dev: the importer's device
 * @sgt: the mapping handed out, NULL while unmapped
 * @dir: its direction
 * @resource: @sgt maps device memory with dma_map_resource() at @addr
 * @addr: DMA address of the whole region (@resource only)
 */
struct md_dmabuf_attachment {
	struct list_head link;
	struct device *dev;
	struct sg_table *sgt;
	enum dma_data_direction dir;
	bool resource;
	dma_addr_t addr;
};

static int md_dmabuf_attach(struct dma_buf *dmabuf,
			    struct dma_buf_attachment *attach)
{
	struct md_dmabuf *p = dmabuf->priv;
	struct md_dmabuf_attachment *a;

	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return -ENOMEM;
	a->dev = attach->dev;
	attach->priv = a;
	mutex_lock(&p->lock);
	list_add(&a->link, &p->attachments);
	mutex_unlock(&p->lock);
	return 0;
}

static void md_dmabuf_detach(struct dma_buf *dmabuf,
			     struct dma_buf_attachment *attach)
{
	struct md_dmabuf *p = dmabuf->priv;
	struct md_dmabuf_attachment *a = attach->priv;

	mutex_lock(&p->lock);
	list_del(&a->link);
	mutex_unlock(&p->lock);
	kfree(a);
}

/* Largest segment @dev takes, a whole number of pages. */
static unsigned int seg_size(struct device *dev)
{
	unsigned int max = min_t(unsigned int, dma_get_max_seg_size(dev),
				 SZ_1G);

	return max(max & PAGE_MASK, (unsigned int)PAGE_SIZE);
}

/* Memory with struct pages: a page scatterlist, mapped for @dev. */
static int map_pages(struct md_region *r, struct md_dmabuf_attachment *a,
		     struct sg_table *sgt, unsigned int seg)
{
	struct md_pool *pool = r->pool;
	struct scatterlist *sg;
	u64 off = 0;
	int ret;

	ret = sg_alloc_table(sgt, DIV_ROUND_UP_ULL(r->alloc.size, seg),
			     GFP_KERNEL);
	if (ret)
		return ret;
	for (sg = sgt->sgl; sg; sg = sg_next(sg)) {
		unsigned int len = min_t(u64, seg, r->alloc.size - off);
		unsigned long pfn = pool->ops->pfn(pool, r->alloc.offset + off);

		sg_set_page(sg, pfn_to_page(pfn), len, 0);
		off += len;
	}
	ret = dma_map_sgtable(a->dev, sgt, a->dir, 0);
	if (ret)
		sg_free_table(sgt);
	return ret;
}

/* Device memory: one resource mapping, cut into DMA-address segments. */
static int map_resource(struct md_region *r, struct md_dmabuf_attachment *a,
			struct sg_table *sgt, unsigned int seg)
{
	struct md_pool *pool = r->pool;
	phys_addr_t phys = PFN_PHYS(pool->ops->pfn(pool, r->alloc.offset));
	struct scatterlist *sg;
	u64 off = 0;
	int ret;

	a->addr = dma_map_resource(a->dev, phys, r->alloc.size, a->dir, 0);
	if (dma_mapping_error(a->dev, a->addr))
		return -EIO;
	ret = sg_alloc_table(sgt, DIV_ROUND_UP_ULL(r->alloc.size, seg),
			     GFP_KERNEL);
	if (ret) {
		dma_unmap_resource(a->dev, a->addr, r->alloc.size, a->dir, 0);
		return ret;
	}
	for (sg = sgt->sgl; sg; sg = sg_next(sg)) {
		unsigned int len = min_t(u64, seg, r->alloc.size - off);

		sg_dma_address(sg) = a->addr + off;
		sg_dma_len(sg) = len;
		off += len;
	}
	a->resource = true;
	return 0;
}

static struct sg_table *md_dmabuf_map(struct dma_buf_attachment *attach,
				      enum dma_data_direction dir)
{
	struct md_dmabuf *p = attach->dmabuf->priv;
	struct md_dmabuf_attachment *a = attach->priv;
	struct md_region *r = p->r;
	struct md_pool *pool = r->pool;
	struct sg_table *sgt;
	int ret;

	/* A read-only dma-buf is only ever read by devices. */
	if (!(attach->dmabuf->file->f_mode & FMODE_WRITE) &&
	    dir != DMA_TO_DEVICE)
		return ERR_PTR(-EACCES);
	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);

	mutex_lock(&p->lock);
	if (a->sgt) {
		ret = -EBUSY;		/* the core maps an attachment once */
		goto out;
	}
	a->dir = dir;
	a->resource = false;
	/* A pool whose device went away is not handed out again. */
	down_read(&pool->gone_sem);
	if (pool->gone)
		ret = -ENODEV;
	else if (pfn_valid(pool->ops->pfn(pool, r->alloc.offset)))
		ret = map_pages(r, a, sgt, seg_size(a->dev));
	else
		ret = map_resource(r, a, sgt, seg_size(a->dev));
	up_read(&pool->gone_sem);
	if (!ret)
		a->sgt = sgt;
out:
	mutex_unlock(&p->lock);
	if (ret) {
		kfree(sgt);
		return ERR_PTR(ret);
	}
	return sgt;
}

static void md_dmabuf_unmap(struct dma_buf_attachment *attach,
			    struct sg_table *sgt, enum dma_data_direction dir)
{
	struct md_dmabuf *p = attach->dmabuf->priv;
	struct md_dmabuf_attachment *a = attach->priv;

	mutex_lock(&p->lock);
	if (WARN_ON(a->sgt != sgt)) {
		mutex_unlock(&p->lock);
		return;
	}
	if (a->resource)
		dma_unmap_resource(a->dev, a->addr, p->r->alloc.size, a->dir, 0);
	else
		dma_unmap_sgtable(a->dev, sgt, a->dir, 0);
	a->sgt = NULL;
	mutex_unlock(&p->lock);
	sg_free_table(sgt);
	kfree(sgt);
}

/*
 * CPU access brackets: make the importers' DMA and the CPU's view agree.
 * A PCI BAR mapped with dma_map_resource() has nothing to sync.
 */
static void md_dmabuf_sync(struct md_dmabuf *p, bool for_cpu)
{
	struct md_dmabuf_attachment *a;

	mutex_lock(&p->lock);
	list_for_each_entry(a, &p->attachments, link) {
		if (!a->sgt || a->resource)
			continue;
		if (for_cpu)
			dma_sync_sgtable_for_cpu(a->dev, a->sgt, a->dir);
		else
			dma_sync_sgtable_for_device(a->dev, a->sgt, a->dir);
	}
	mutex_unlock(&p->lock);
}

static int md_dmabuf_begin_cpu(struct dma_buf *dmabuf,
			       enum dma_data_direction dir)
{
	md_dmabuf_sync(dmabuf->priv, true);
	return 0;
}

static int md_dmabuf_end_cpu(struct dma_buf *dmabuf,
			     enum dma_data_direction dir)
{
	md_dmabuf_sync(dmabuf->priv, false);
	return 0;
}

static int md_dmabuf_mmap(struct dma_buf *dmabuf, struct vm_area_struct *vma)
{
	struct md_dmabuf *p = dmabuf->priv;

	/* Our address_space, so that zapping the device's memory reaches it. */
	return md_mmap_region(p->r, vma, p->mapping);
}

static void md_dmabuf_release(struct dma_buf *dmabuf)
{
	struct md_dmabuf *p = dmabuf->priv;

	WARN_ON(!list_empty(&p->attachments));
	atomic_dec(&p->r->dmabufs);
	fput(p->mapping);
	md_region_put(p->r);
	mutex_destroy(&p->lock);
	kfree(p);
}

static const struct dma_buf_ops md_dmabuf_ops = {
	.attach = md_dmabuf_attach,
	.detach = md_dmabuf_detach,
	.map_dma_buf = md_dmabuf_map,
	.unmap_dma_buf = md_dmabuf_unmap,
	.begin_cpu_access = md_dmabuf_begin_cpu,
	.end_cpu_access = md_dmabuf_end_cpu,
	.mmap = md_dmabuf_mmap,
	.release = md_dmabuf_release,
};

/**
 * md_dmabuf_export() - a dma-buf of a region @dom owns
 * @dom: the caller's domain
 * @arg: the validated request; @arg->fd is filled in
 * @priv: set to the dma_buf, for md_dmabuf_export_commit() or _undo()
 *
 * The descriptor is reserved here but installed only by the commit, once
 * the caller has been told its number: nobody can use (or close) it
 * before, and an undo leaves no trace.
 *
 * Return: 0 or a negative errno, nothing exported on error.
 */
int md_dmabuf_export(struct md_domain *dom, struct metadef_export *arg,
		     void **priv)
{
	DEFINE_DMA_BUF_EXPORT_INFO(exp);
	struct dma_buf *dmabuf;
	struct md_dmabuf *p;
	struct md_region *r;
	int ret = 0, fd;

	r = md_region_get_owned(dom, arg->handle, &ret);
	if (!r)
		return ret;
	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p) {
		ret = -ENOMEM;
		goto err_region;
	}
	mutex_init(&p->lock);
	INIT_LIST_HEAD(&p->attachments);
	p->r = r;
	p->mapping = md_mapping_file();
	if (IS_ERR(p->mapping)) {
		ret = PTR_ERR(p->mapping);
		goto err_priv;
	}

	fd = get_unused_fd_flags(arg->flags & METADEF_EXPORT_CLOEXEC ?
				 O_CLOEXEC : 0);
	if (fd < 0) {
		ret = fd;
		goto err_file;
	}
	exp.ops = &md_dmabuf_ops;
	exp.size = r->alloc.size;
	exp.flags = arg->flags & METADEF_EXPORT_RDWR ? O_RDWR : O_RDONLY;
	exp.priv = p;
	dmabuf = dma_buf_export(&exp);
	if (IS_ERR(dmabuf)) {
		ret = PTR_ERR(dmabuf);
		put_unused_fd(fd);
		goto err_file;
	}
	/* From here on md_dmabuf_release() owns @p and the reference. */
	atomic_inc(&r->dmabufs);
	arg->fd = fd;
	*priv = dmabuf;
	return 0;

err_file:
	fput(p->mapping);
err_priv:
	mutex_destroy(&p->lock);
	kfree(p);
err_region:
	md_region_put(r);
	return ret;
}

/* The caller knows the number: the descriptor goes live. */
void md_dmabuf_export_commit(struct metadef_export *arg, void *priv)
{
	struct dma_buf *dmabuf = priv;

	fd_install(arg->fd, dmabuf->file);
}

/* The caller could not be told: no descriptor, no dma-buf. */
void md_dmabuf_export_undo(struct metadef_export *arg, void *priv)
{
	put_unused_fd(arg->fd);
	dma_buf_put(priv);
}

MODULE_IMPORT_NS(MD_NS(DMA_BUF));
