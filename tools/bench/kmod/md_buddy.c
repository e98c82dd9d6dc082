// SPDX-License-Identifier: GPL-2.0
/*
 * metadef's buddy allocator, compiled into the bench module as is: the
 * bench measures exactly the code metadef.ko runs, without relying on
 * metadef.ko's test-only exports.
 */
#include "../../../kmod/buddy.c"
