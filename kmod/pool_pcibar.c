// SPDX-License-Identifier: GPL-2.0
/*
 * The "pcibar" pool adapter: a device's own memory behind a PCI BAR (an
 * accelerator's DDR, or qemu's ivshmem-plain device in the VM tests).
 *
 * metadef binds as a PCI driver; the first matching device that probes
 * becomes the pool, the whole BAR of it. The CPU maps it write-combined
 * through the BAR's physical address; the device sees it at the BAR's bus
 * address. On removal the pool is killed first (user mappings zapped, new
 * faults refused), then the BAR is released; regions still held by their
 * owners stay valid as handles until they are freed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/io.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/sizes.h>

#include "metadef.h"
#include "pool.h"

struct md_pcibar {
	struct md_pool pool;
	struct pci_dev *pdev;
	int bar;
	resource_size_t phys;	/* CPU physical address of the BAR */
	u64 bus;		/* the device-side (bus) address of the BAR */
	void __iomem *vaddr;	/* kernel mapping, for scrubbing */
};

static struct md_device *pcibar_mdev;
static int pcibar_bar;

static inline struct md_pcibar *to_pcibar(struct md_pool *pool)
{
	return container_of(pool, struct md_pcibar, pool);
}

static unsigned long pcibar_pfn(struct md_pool *pool, u64 offset)
{
	return (to_pcibar(pool)->phys + offset) >> PAGE_SHIFT;
}

static u64 pcibar_dev_addr(struct md_pool *pool, u64 offset)
{
	return to_pcibar(pool)->bus + offset;
}

static void pcibar_scrub(struct md_pool *pool, u64 offset, u64 size)
{
	struct md_pcibar *b = to_pcibar(pool);

	while (size) {
		u64 n = min_t(u64, size, SZ_1M - (offset & (SZ_1M - 1)));

		memset_io(b->vaddr + offset, 0, n);
		offset += n;
		size -= n;
		cond_resched();
	}
}

/* BAR to BAR, through a small bounce buffer on the stack, in pieces. */
static void pcibar_copy(struct md_pool *pool, u64 dst, u64 src, u64 len)
{
	struct md_pcibar *b = to_pcibar(pool);
	u8 buf[256];

	while (len) {
		u64 n = min_t(u64, len, sizeof(buf));

		memcpy_fromio(buf, b->vaddr + src, n);
		memcpy_toio(b->vaddr + dst, buf, n);
		src += n;
		dst += n;
		len -= n;
	}
}

static pgprot_t pcibar_pgprot(struct md_pool *pool, pgprot_t prot)
{
	return pgprot_writecombine(prot);
}

static void pcibar_show(struct md_pool *pool, struct seq_file *m)
{
	struct md_pcibar *b = to_pcibar(pool);

	seq_printf(m, "pci_device\t%s\n", pci_name(b->pdev));
	seq_printf(m, "bar\t%d\n", b->bar);
	seq_printf(m, "phys_base\t%#llx\n", (u64)b->phys);
	seq_printf(m, "bus_base\t%#llx\n", b->bus);
	seq_printf(m, "gone\t%s\n", READ_ONCE(pool->gone) ? "yes" : "no");
}

/* The device was released at remove; only the bookkeeping is left. */
static void pcibar_release(struct md_pool *pool)
{
	struct md_pcibar *b = to_pcibar(pool);

	pci_dev_put(b->pdev);
	kfree(b);
}

static const struct md_pool_ops pcibar_ops = {
	.pfn = pcibar_pfn,
	.dev_addr = pcibar_dev_addr,
	.scrub = pcibar_scrub,
	.copy = pcibar_copy,
	.pgprot = pcibar_pgprot,
	.show = pcibar_show,
	.release = pcibar_release,
};

static int pcibar_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	int bar = pcibar_bar;
	struct md_pool *other;
	struct md_pcibar *b;
	resource_size_t len;
	int ret;

	/* Only one pool: leave other devices' memory alone, untouched. */
	other = md_pool_current(pcibar_mdev);
	if (other) {
		md_pool_put(other);
		dev_info(&pdev->dev, "metadef already has a pool, not using this device\n");
		return -EBUSY;
	}

	if (bar < 0 || bar >= PCI_STD_NUM_BARS ||
	    !(pci_resource_flags(pdev, bar) & IORESOURCE_MEM)) {
		dev_err(&pdev->dev, "BAR %d is not a memory BAR\n", bar);
		return -ENODEV;
	}
	len = pci_resource_len(pdev, bar);
	if (len < PAGE_SIZE) {
		dev_err(&pdev->dev, "BAR %d is too small (%llu bytes)\n", bar,
			(u64)len);
		return -ENODEV;
	}

	ret = pci_enable_device_mem(pdev);
	if (ret)
		return ret;
	ret = pci_request_region(pdev, bar, KBUILD_MODNAME);
	if (ret)
		goto err_disable;

	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b) {
		ret = -ENOMEM;
		goto err_region;
	}
	b->pdev = pci_dev_get(pdev);
	b->bar = bar;
	b->phys = pci_resource_start(pdev, bar);
	b->bus = pci_bus_address(pdev, bar);
	b->vaddr = pci_iomap_wc(pdev, bar, 0);
	if (!b->vaddr) {
		ret = -ENOMEM;
		goto err_free;
	}

	ret = md_pool_init(&b->pool, &pcibar_ops, "pcibar", len, 0);
	if (ret)
		goto err_unmap;
	ret = md_pool_attach(pcibar_mdev, &b->pool);
	if (ret) {
		dev_info(&pdev->dev, "metadef already has a pool, not using this device\n");
		md_buddy_fini(&b->pool.buddy);
		goto err_unmap;
	}
	pci_set_drvdata(pdev, b);
	dev_info(&pdev->dev, "pool: BAR %d, %llu bytes at bus address %#llx\n",
		 bar, (u64)len, b->bus);
	return 0;

err_unmap:
	pci_iounmap(pdev, b->vaddr);
err_free:
	pci_dev_put(pdev);
	kfree(b);
err_region:
	pci_release_region(pdev, bar);
err_disable:
	pci_disable_device(pdev);
	return ret;
}

static void pcibar_remove(struct pci_dev *pdev)
{
	struct md_pcibar *b = pci_get_drvdata(pdev);

	/* No mapping, fault or scrub touches the BAR after this... */
	md_pool_detach(pcibar_mdev, &b->pool);
	/* ...so it can go; the pool's bookkeeping waits for its regions. */
	pci_iounmap(pdev, b->vaddr);
	b->vaddr = NULL;
	pci_release_region(pdev, b->bar);
	pci_disable_device(pdev);
	md_pool_put(&b->pool);
}

static const struct pci_device_id pcibar_ids[] = {
	/* qemu's ivshmem-plain: BAR 2 is the shared memory. */
	{ PCI_DEVICE(PCI_VENDOR_ID_REDHAT_QUMRANET, 0x1110) },
	{}
};
MODULE_DEVICE_TABLE(pci, pcibar_ids);

static struct pci_driver pcibar_driver = {
	.name = "metadef_pcibar",
	.id_table = pcibar_ids,
	.probe = pcibar_probe,
	.remove = pcibar_remove,
};

/* Other devices can be bound through the driver's sysfs new_id file. */
int md_pcibar_register(struct md_device *mdev, int bar)
{
	pcibar_mdev = mdev;
	pcibar_bar = bar;
	return pci_register_driver(&pcibar_driver);
}

void md_pcibar_unregister(void)
{
	pci_unregister_driver(&pcibar_driver);
}
