// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Devices (include/metadef/device.h): the kmod backend over /dev/metadef and
 * the host backend over anonymous memory, behind one set of calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <metadef/device.h>
#include <metadef/metadef.h>

#include "bitmath.h"
#include "internal.h"
#include "rbtree.h"

enum backend { BACKEND_HOST, BACKEND_KMOD };

struct live {
	struct md_rb_node rb;	/* first: in the tree of live regions */
	struct md_region r;
	void *map;		/* host: the whole mapping (before trimming) */
	size_t map_len;
};

struct md_device {
	enum backend backend;
	int fd;			/* kmod: the domain */
	uint32_t domain;	/* kmod: its id; 0 on the host */
	uint64_t align;
	uint64_t page;
	pthread_mutex_t lock;	/* the tree and the counters */
	struct md_rb_tree live;	/* struct live by dev_va */
	struct md_device_stats st;
};

static int live_cmp(const struct md_rb_node *a, const struct md_rb_node *b)
{
	const struct live *x = (const struct live *)a;
	const struct live *y = (const struct live *)b;

	return x->r.dev_va < y->r.dev_va ? -1 : x->r.dev_va > y->r.dev_va;
}

/* The live region with the highest dev_va <= @va, or NULL. */
static struct live *live_floor(const struct md_device *dev, uint64_t va)
{
	const struct md_rb_node *n = dev->live.root;
	const struct live *best = NULL;

	while (n) {
		const struct live *l = (const struct live *)n;

		if (l->r.dev_va <= va) {
			best = l;
			n = n->right;
		} else {
			n = n->left;
		}
	}
	return (struct live *)best;
}

MD_API int md_device_open(const struct md_device_config *cfg,
			  struct md_device **out)
{
	const char *name = cfg && cfg->backend ? cfg->backend : "auto";
	const char *path = cfg && cfg->path ? cfg->path : MD_DEFAULT_DEVICE;
	uint64_t align = cfg && cfg->align ? cfg->align : MD_ALIGN_CPU;
	struct md_device *dev;
	int fd = -1;

	*out = NULL;
	if (!md_is_pow2(align))
		return -EINVAL;
	if (strcmp(name, "auto") && strcmp(name, "kmod") &&
	    strcmp(name, "host"))
		return -EINVAL;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->backend = BACKEND_HOST;
	dev->page = (uint64_t)sysconf(_SC_PAGESIZE);
	dev->fd = -1;

	if (strcmp(name, "host")) {
		fd = md_kmod_open(path);
		if (fd >= 0) {
			struct metadef_info info;
			int err = md_kmod_info(fd, &info);

			if (err) {
				close(fd);
				free(dev);
				return err;
			}
			dev->backend = BACKEND_KMOD;
			dev->fd = fd;
			dev->domain = info.domain_id;
			dev->page = info.page_size;
		} else if (!strcmp(name, "kmod")) {
			free(dev);
			return fd;
		}
	}
	dev->align = align;
	pthread_mutex_init(&dev->lock, NULL);
	*out = dev;
	return 0;
}

static void backend_free(struct md_device *dev, struct live *l)
{
	struct metadef_free f = { .handle = l->r.handle };

	if (dev->backend == BACKEND_HOST) {
		munmap(l->map, l->map_len);
		return;
	}
	if (l->r.cpu)
		munmap(l->r.cpu, l->r.size);
	ioctl(dev->fd, METADEF_IOC_FREE, &f);
}

MD_API void md_device_close(struct md_device *dev)
{
	if (!dev)
		return;
	while (dev->live.root) {
		struct live *l = (struct live *)dev->live.root;

		md_rb_erase(&dev->live, &l->rb);
		backend_free(dev, l);
		free(l);
	}
	if (dev->fd >= 0)
		close(dev->fd);	/* the domain goes, and whatever it held */
	pthread_mutex_destroy(&dev->lock);
	free(dev);
}

MD_API const char *md_device_backend(const struct md_device *dev)
{
	return dev->backend == BACKEND_KMOD ? "kmod" : "host";
}

MD_API uint64_t md_device_align(const struct md_device *dev)
{
	return dev->align;
}

MD_API uint64_t md_device_page_size(const struct md_device *dev)
{
	return dev->page;
}

MD_API uint32_t md_device_domain(const struct md_device *dev)
{
	return dev->domain;
}

MD_API void md_device_stats(const struct md_device *dev,
			    struct md_device_stats *st)
{
	pthread_mutex_lock((pthread_mutex_t *)&dev->lock);
	*st = dev->st;
	pthread_mutex_unlock((pthread_mutex_t *)&dev->lock);
}

/* Anonymous memory, over-mapped and trimmed to the alignment. */
static int host_alloc(struct md_device *dev, uint64_t size, uint64_t align,
		      struct live *l)
{
	size_t len = size + (align > dev->page ? align - dev->page : 0);
	uintptr_t base, start;
	void *p;

	if (len < size)
		return -ENOMEM;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	base = (uintptr_t)p;
	start = (base + align - 1) & ~(uintptr_t)(align - 1);
	if (start > base)
		munmap(p, start - base);
	if (start + size < base + len)
		munmap((void *)(start + size), base + len - start - size);
	l->map = (void *)start;
	l->map_len = size;
	l->r.size = size;
	l->r.dev_va = start;
	l->r.cpu = (void *)start;
	return 0;
}

static int kmod_alloc(struct md_device *dev, uint64_t size, uint64_t align,
		      struct live *l)
{
	struct metadef_alloc a = { .size = size, .align = align };
	struct metadef_free f = { 0 };
	void *p;
	int err;

	if (ioctl(dev->fd, METADEF_IOC_ALLOC, &a) < 0)
		return -errno;
	p = mmap(NULL, a.alloc_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 dev->fd, (off_t)a.mmap_offset);
	if (p == MAP_FAILED) {
		err = -errno;
		f.handle = a.handle;
		ioctl(dev->fd, METADEF_IOC_FREE, &f);
		return err;
	}
	l->r.size = a.alloc_size;
	l->r.dev_va = a.dev_va;
	l->r.cpu = p;
	l->r.handle = a.handle;
	return 0;
}

MD_API int md_region_alloc(struct md_device *dev, uint64_t size,
			   uint64_t align, struct md_region *out)
{
	struct live *l;
	int err;

	if (!align)
		align = dev->page;
	if (!size || !md_is_pow2(align) || size > UINT64_MAX - dev->page) {
		l = NULL;
		err = -EINVAL;
		goto count;
	}
	size = (size + dev->page - 1) & ~(dev->page - 1);
	if (align < dev->page)
		align = dev->page;

	l = calloc(1, sizeof(*l));
	if (!l)
		err = -ENOMEM;
	else if (dev->backend == BACKEND_HOST)
		err = host_alloc(dev, size, align, l);
	else
		err = kmod_alloc(dev, size, align, l);

count:
	pthread_mutex_lock(&dev->lock);
	if (!err) {
		struct live *at = live_floor(dev, l->r.dev_va);

		/* Another live region at this address would be a backend bug. */
		if (at && at->r.dev_va == l->r.dev_va) {
			backend_free(dev, l);
			err = -EIO;
		} else {
			md_rb_insert(&dev->live, &l->rb, live_cmp);
		}
	}
	if (err) {
		dev->st.region_failures++;
	} else {
		dev->st.region_allocs++;
		dev->st.bytes_current += l->r.size;
		if (dev->st.bytes_current > dev->st.bytes_peak)
			dev->st.bytes_peak = dev->st.bytes_current;
	}
	pthread_mutex_unlock(&dev->lock);
	if (err) {
		free(l);
		return err;
	}
	*out = l->r;
	return 0;
}

MD_API int md_region_free(struct md_device *dev, struct md_region *region)
{
	struct live *l;

	pthread_mutex_lock(&dev->lock);
	l = live_floor(dev, region->dev_va);
	if (!l || memcmp(&l->r, region, sizeof(*region))) {
		pthread_mutex_unlock(&dev->lock);
		return -EINVAL;
	}
	md_rb_erase(&dev->live, &l->rb);
	dev->st.region_frees++;
	dev->st.bytes_current -= l->r.size;
	pthread_mutex_unlock(&dev->lock);

	backend_free(dev, l);
	free(l);
	return 0;
}

/*
 * Is [@va, @va + @size) inside one live region? The regions do not
 * overlap, so the one that could hold it is the last that starts at or
 * below @va. Called with the lock held.
 */
static bool covered(const struct md_device *dev, uint64_t va, uint64_t size)
{
	const struct live *l = live_floor(dev, va);

	return l && va - l->r.dev_va < l->r.size &&
	       size <= l->r.size - (va - l->r.dev_va);
}

MD_API int md_device_copy(struct md_device *dev, uint64_t dst_va,
			  uint64_t src_va, uint64_t size)
{
	struct metadef_copy c = {
		.src_va = src_va,
		.dst_va = dst_va,
		.size = size,
	};
	bool ok;

	if (!size || src_va + size < src_va || dst_va + size < dst_va)
		return -EINVAL;
	if (dev->backend == BACKEND_KMOD)
		return ioctl(dev->fd, METADEF_IOC_COPY, &c) < 0 ? -errno : 0;
	/*
	 * Host: the regions stay live while we copy only if the caller does
	 * not free them meanwhile, as with any DMA it starts.
	 */
	pthread_mutex_lock(&dev->lock);
	ok = covered(dev, src_va, size) && covered(dev, dst_va, size);
	pthread_mutex_unlock(&dev->lock);
	if (!ok)
		return -EFAULT;
	memmove((void *)(uintptr_t)dst_va, (const void *)(uintptr_t)src_va,
		size);
	return 0;
}
