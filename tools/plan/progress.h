/* SPDX-License-Identifier: GPL-2.0 */
/* metadef-plan: a progress line on stderr while a plan takes long. */
#ifndef METADEF_PLAN_PROGRESS_H
#define METADEF_PLAN_PROGRESS_H

/*
 * Around one md_plan_solve() or md_graph_plan() of @path: when stderr is a
 * terminal and planning has taken more than a second, a line says which
 * pass runs and how far it is; it is erased at the end.
 */
void plan_progress_start(const char *path);
void plan_progress_end(void);

#endif /* METADEF_PLAN_PROGRESS_H */
