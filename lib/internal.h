/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libmetadef internals: not installed. */
#ifndef METADEF_INTERNAL_H
#define METADEF_INTERNAL_H

/* Marks the functions that make up the shared library's ABI. */
#define MD_API __attribute__((visibility("default")))

#ifndef MD_VERSION
#define MD_VERSION "unknown"
#endif

#endif /* METADEF_INTERNAL_H */
