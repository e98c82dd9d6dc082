/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Doubly linked lists of the library's own structs, through a @next and a
 * @prev pointer of the element type itself (the pools' live, cached and
 * spare lists of block descriptors). MD_DLIST_DEFINE(name, type) defines
 *
 *   name_add(type **head, type *x)	x first in the list at *head
 *   name_del(type **head, type *x)	x out of it, its links cleared
 *
 * both O(1). The element type keeps typed links, so a walk is a plain
 * "for (x = head; x; x = x->next)". Not installed.
 */
#ifndef METADEF_DLIST_H
#define METADEF_DLIST_H

#define MD_DLIST_DEFINE(name, type)					\
static inline void name##_add(type **head, type *x)			\
{									\
	x->prev = NULL;							\
	x->next = *head;						\
	if (*head)							\
		(*head)->prev = x;					\
	*head = x;							\
}									\
									\
static inline void name##_del(type **head, type *x)			\
{									\
	if (x->prev)							\
		x->prev->next = x->next;				\
	else								\
		*head = x->next;					\
	if (x->next)							\
		x->next->prev = x->prev;				\
	x->next = NULL;							\
	x->prev = NULL;							\
}

#endif /* METADEF_DLIST_H */
