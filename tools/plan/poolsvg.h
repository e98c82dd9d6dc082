/* SPDX-License-Identifier: GPL-2.0 */
/* metadef-plan --pool: pool snapshots drawn as SVG (poolsvg.c). */
#ifndef METADEF_PLAN_POOLSVG_H
#define METADEF_PLAN_POOLSVG_H

/*
 * Read the series of pool snapshots in @in, say how many snapshots and
 * blocks, and with @svg draw them there. Return: the exit status.
 */
int pool_svg(const char *prog, const char *in, const char *svg);

#endif /* METADEF_PLAN_POOLSVG_H */
