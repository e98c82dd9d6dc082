// SPDX-License-Identifier: GPL-2.0
/*
 * The "sysram" pool adapter: host RAM taken at load time.
 *
 * First choice is one physically contiguous range from alloc_contig_range(),
 * searched from the top of each zone downwards (movable memory can be
 * migrated out of the way). When no range of the whole size can be had, the
 * pool falls back to the largest blocks the page allocator gives, all of one
 * size, and caps the buddy at that size so that every allocation is still
 * physically contiguous. Device addresses come from the DMA API.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dma-mapping.h>
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/moduleparam.h>
#include <linux/pageblock-flags.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "compat.h"
#include "pool.h"

static bool sysram_contig = true;
module_param(sysram_contig, bool, 0444);
MODULE_PARM_DESC(sysram_contig, "Try one contiguous range first (default Y; N forces the block fallback, for tests)");

struct sysram_chunk {
	struct page *page;
	dma_addr_t dma;
	bool mapped;
};

struct md_sysram {
	struct md_pool pool;
	struct device *dev;
	bool contig;
	unsigned int chunk_shift;	/* log2 bytes of each chunk */
	unsigned int nr_chunks;
	struct sysram_chunk chunks[];
};

static inline struct md_sysram *to_sysram(struct md_pool *pool)
{
	return container_of(pool, struct md_sysram, pool);
}

static struct sysram_chunk *chunk_of(struct md_sysram *s, u64 offset,
				     u64 *within)
{
	unsigned int i = s->contig ? 0 : offset >> s->chunk_shift;

	*within = s->contig ? offset : offset & (BIT_ULL(s->chunk_shift) - 1);
	return &s->chunks[i];
}

static unsigned long sysram_pfn(struct md_pool *pool, u64 offset)
{
	u64 within;
	struct sysram_chunk *c = chunk_of(to_sysram(pool), offset, &within);

	return page_to_pfn(c->page) + (within >> PAGE_SHIFT);
}

static u64 sysram_dev_addr(struct md_pool *pool, u64 offset)
{
	u64 within;
	struct sysram_chunk *c = chunk_of(to_sysram(pool), offset, &within);

	return c->dma + within;
}

static void sysram_scrub(struct md_pool *pool, u64 offset, u64 size)
{
	struct md_sysram *s = to_sysram(pool);

	while (size) {
		u64 within, n;
		struct sysram_chunk *c = chunk_of(s, offset, &within);

		/* A megabyte at a time, with a chance to reschedule between. */
		n = min_t(u64, size, SZ_1M - (within & (SZ_1M - 1)));
		if (!s->contig)
			n = min_t(u64, n, BIT_ULL(s->chunk_shift) - within);
		memset(page_address(c->page) + within, 0, n);
		offset += n;
		size -= n;
		cond_resched();
	}
}

static void *sysram_kaddr(struct md_sysram *s, u64 offset)
{
	u64 within;
	struct sysram_chunk *c = chunk_of(s, offset, &within);

	return page_address(c->page) + within;
}

/* Contiguous in the pool, but maybe not across chunks of the fallback. */
static void sysram_copy(struct md_pool *pool, u64 dst, u64 src, u64 len)
{
	struct md_sysram *s = to_sysram(pool);
	u64 chunk = BIT_ULL(s->chunk_shift), n;

	while (len) {
		n = len;
		if (!s->contig)
			n = min3(n, chunk - (dst & (chunk - 1)),
				 chunk - (src & (chunk - 1)));
		memcpy(sysram_kaddr(s, dst), sysram_kaddr(s, src), n);
		dst += n;
		src += n;
		len -= n;
	}
}

static pgprot_t sysram_pgprot(struct md_pool *pool, pgprot_t prot)
{
	return prot;	/* ordinary cached RAM */
}

static void sysram_show(struct md_pool *pool, struct seq_file *m)
{
	struct md_sysram *s = to_sysram(pool);

	seq_printf(m, "contiguous\t%s\n", s->contig ? "yes" : "no");
	seq_printf(m, "chunks\t%u\n", s->nr_chunks);
	seq_printf(m, "phys_base\t%#llx\n",
		   (u64)page_to_phys(s->chunks[0].page));
	seq_printf(m, "dma_base\t%#llx\n", (u64)s->chunks[0].dma);
}

static void sysram_free_chunks(struct md_sysram *s)
{
	unsigned int i;
	u64 csize = s->contig ? s->pool.size : BIT_ULL(s->chunk_shift);

	for (i = 0; i < s->nr_chunks; i++) {
		struct sysram_chunk *c = &s->chunks[i];

		if (!c->page)
			continue;
		if (c->mapped)
			dma_unmap_page(s->dev, c->dma, csize, DMA_BIDIRECTIONAL);
		if (s->contig)
			free_contig_range(page_to_pfn(c->page), csize >> PAGE_SHIFT);
		else
			__free_pages(c->page, s->chunk_shift - PAGE_SHIFT);
	}
}

static void sysram_release(struct md_pool *pool)
{
	struct md_sysram *s = to_sysram(pool);

	sysram_free_chunks(s);
	kfree(s);
}

static const struct md_pool_ops sysram_ops = {
	.pfn = sysram_pfn,
	.dev_addr = sysram_dev_addr,
	.scrub = sysram_scrub,
	.copy = sysram_copy,
	.pgprot = sysram_pgprot,
	.show = sysram_show,
	.release = sysram_release,
};

/* Every page of [pfn, pfn + nr) is online and in @zone. */
static bool range_in_zone(struct zone *zone, unsigned long pfn,
			  unsigned long nr)
{
	unsigned long i;

	for (i = 0; i < nr; i += pageblock_nr_pages) {
		struct page *page = pfn_to_online_page(pfn + i);

		if (!page || page_zone(page) != zone)
			return false;
	}
	return true;
}

/*
 * One physically contiguous range of @nr pages, or NULL. Candidates are
 * aligned to the pageblock (the unit alloc_contig_range isolates) and
 * tried from the top of each zone down, stepping by the range size so a
 * busy stretch costs one attempt.
 */
static struct page *sysram_take_contig(unsigned long nr)
{
	int nid, z;

	for_each_online_node(nid) {
		for (z = MAX_NR_ZONES - 1; z >= 0; z--) {
			struct zone *zone = &NODE_DATA(nid)->node_zones[z];
			unsigned long lo, pfn;

			if (!populated_zone(zone) || zone_idx(zone) == ZONE_DMA)
				continue;
			lo = ALIGN(zone->zone_start_pfn, pageblock_nr_pages);
			if (zone_end_pfn(zone) < lo + nr)
				continue;
			for (pfn = ALIGN_DOWN(zone_end_pfn(zone) - nr,
					      pageblock_nr_pages);
			     pfn >= lo; pfn -= nr) {
				if (fatal_signal_pending(current))
					return NULL;
				if (range_in_zone(zone, pfn, nr) &&
				    !alloc_contig_range(pfn, pfn + nr,
							MIGRATE_MOVABLE,
							GFP_KERNEL | __GFP_NOWARN))
					return pfn_to_page(pfn);
				if (pfn < lo + nr)
					break;
				cond_resched();
			}
		}
	}
	return NULL;
}

static struct md_sysram *sysram_alloc_struct(unsigned int nr_chunks)
{
	return kzalloc(struct_size((struct md_sysram *)NULL, chunks, nr_chunks),
		       GFP_KERNEL);
}

/**
 * md_sysram_create() - take @size bytes of host RAM as a pool
 * @dma_dev: the device the pool is mapped for
 * @size: bytes, rounded up to a pageblock
 *
 * Return: the pool (one reference, the caller's) or an ERR_PTR.
 */
struct md_pool *md_sysram_create(struct device *dma_dev, u64 size)
{
	const unsigned int corder = MD_MAX_PAGE_ORDER;
	const u64 csize = PAGE_SIZE << corder;
	unsigned long nr;
	struct md_sysram *s;
	struct page *page;
	unsigned int i, n;
	int ret;

	size = round_up(size, PAGE_SIZE << pageblock_order);
	nr = size >> PAGE_SHIFT;

	page = sysram_contig ? sysram_take_contig(nr) : NULL;
	if (page) {
		s = sysram_alloc_struct(1);
		if (!s) {
			free_contig_range(page_to_pfn(page), nr);
			return ERR_PTR(-ENOMEM);
		}
		s->contig = true;
		s->nr_chunks = 1;
		s->chunks[0].page = page;
		s->chunk_shift = 0;
	} else {
		n = DIV_ROUND_UP_ULL(size, csize);
		size = (u64)n * csize;
		pr_info("no contiguous %llu bytes free, using %u blocks of %llu\n",
			size, n, csize);
		s = sysram_alloc_struct(n);
		if (!s)
			return ERR_PTR(-ENOMEM);
		s->chunk_shift = PAGE_SHIFT + corder;
		s->nr_chunks = n;
		for (i = 0; i < n; i++) {
			s->chunks[i].page = alloc_pages(GFP_KERNEL | __GFP_NOWARN |
							__GFP_NORETRY, corder);
			if (!s->chunks[i].page) {
				ret = -ENOMEM;
				goto fail;
			}
		}
	}
	s->dev = dma_dev;
	s->pool.size = size;

	for (i = 0; i < s->nr_chunks; i++) {
		u64 len = s->contig ? size : csize;
		dma_addr_t dma = dma_map_page(dma_dev, s->chunks[i].page, 0, len,
					      DMA_BIDIRECTIONAL);

		if (dma_mapping_error(dma_dev, dma)) {
			ret = -EIO;
			goto fail;
		}
		s->chunks[i].dma = dma;
		s->chunks[i].mapped = true;
	}

	ret = md_pool_init(&s->pool, &sysram_ops, "sysram", size,
			   s->contig ? 0 : csize);
	if (ret)
		goto fail;
	return &s->pool;

fail:
	sysram_free_chunks(s);
	kfree(s);
	return ERR_PTR(ret);
}
