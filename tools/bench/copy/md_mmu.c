// SPDX-License-Identifier: GPL-2.0
/*
 * metadef's soft-MMU and copy engine, compiled into the bench module as
 * is: the bench measures exactly the code metadef.ko's COPY runs.
 */
#include "../../../kmod/mmu.c"
