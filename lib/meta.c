// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Block metadata and per-device alignment.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <metadef/meta.h>

#include "bitmath.h"
#include "internal.h"

static const char *const dev_names[MD_DEV_COUNT] = { "cpu", "gpu", "npu" };

MD_API void md_align_cfg_default(struct md_align_cfg *cfg)
{
	cfg->align[MD_DEV_CPU] = 64;
	cfg->align[MD_DEV_GPU] = 128;
	cfg->align[MD_DEV_NPU] = 256;
}

MD_API int md_align_cfg_set(struct md_align_cfg *cfg, enum md_device_kind dev,
			    uint64_t align)
{
	if ((unsigned int)dev >= MD_DEV_COUNT || !md_is_pow2(align))
		return -EINVAL;
	cfg->align[dev] = align;
	return 0;
}

MD_API uint64_t md_align_for(const struct md_align_cfg *cfg,
			     enum md_device_kind dev, uint64_t tensor_align)
{
	if ((unsigned int)dev >= MD_DEV_COUNT)
		return 0;
	return tensor_align ? tensor_align : cfg->align[dev];
}

MD_API int md_device_parse(const char *name, enum md_device_kind *dev)
{
	int i;

	for (i = 0; i < MD_DEV_COUNT; i++) {
		if (!strcmp(name, dev_names[i])) {
			*dev = i;
			return 0;
		}
	}
	return -EINVAL;
}

MD_API const char *md_device_name(enum md_device_kind dev)
{
	return (unsigned int)dev < MD_DEV_COUNT ? dev_names[dev] : "?";
}

MD_API int md_meta_init(struct md_meta *m, uint64_t handle, uint64_t size,
			uint64_t align)
{
	memset(m, 0, sizeof(*m));
	if (!align)
		align = 1;
	if (!md_is_pow2(align))
		return -EINVAL;
	if (size > UINT64_MAX - (align - 1))
		return -EOVERFLOW;
	m->handle = handle;
	m->base_size = size;
	m->align = align;
	m->aligned_size = (size + align - 1) & ~(align - 1);
	m->compat = ~0ULL;
	return 0;
}

MD_API void md_meta_free(struct md_meta *m)
{
	free(m->iv);
	m->iv = NULL;
	m->niv = m->cap = 0;
}

MD_API int md_meta_add_interval(struct md_meta *m, uint64_t op_start,
				uint64_t op_end, int allow_overlap)
{
	struct md_interval *n;
	size_t i;

	if (op_end <= op_start)
		return -EINVAL;
	n = md_grow(m->iv, m->niv, &m->cap, sizeof(*n), 4);
	if (!n)
		return -ENOMEM;
	m->iv = n;
	for (i = m->niv; i > 0 && m->iv[i - 1].op_start > op_start; i--)
		m->iv[i] = m->iv[i - 1];
	m->iv[i].op_start = op_start;
	m->iv[i].op_end = op_end;
	m->iv[i].allow_overlap = !!allow_overlap;
	m->niv++;
	return 0;
}

MD_API int md_meta_lifetime(const struct md_meta *m, uint64_t *start,
			    uint64_t *end)
{
	uint64_t s = UINT64_MAX, e = 0;
	size_t i;

	for (i = 0; i < m->niv; i++) {
		if (m->iv[i].allow_overlap)
			continue;
		if (m->iv[i].op_start < s)
			s = m->iv[i].op_start;
		if (m->iv[i].op_end > e)
			e = m->iv[i].op_end;
	}
	if (s == UINT64_MAX)
		return -ENOENT;
	*start = s;
	*end = e;
	return 0;
}

MD_API int md_meta_can_share(const struct md_meta *a, const struct md_meta *b)
{
	size_t i, j;

	if (!(a->compat & b->compat))
		return 0;
	/* Both lists are sorted by start: a merge-like walk would do; the
	 * lists are short, keep it obvious. */
	for (i = 0; i < a->niv; i++) {
		if (a->iv[i].allow_overlap)
			continue;
		for (j = 0; j < b->niv; j++) {
			if (b->iv[j].allow_overlap)
				continue;
			if (b->iv[j].op_start >= a->iv[i].op_end)
				break;
			if (b->iv[j].op_end > a->iv[i].op_start)
				return 0;
		}
	}
	return 1;
}
