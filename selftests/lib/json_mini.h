/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A small strict JSON parser for the host tests: enough to read a pool
 * snapshot back (objects, arrays, strings with escapes, integers kept
 * exact, numbers, true/false/null). Any syntax error fails the parse.
 */
#ifndef METADEF_SELFTEST_JSON_MINI_H
#define METADEF_SELFTEST_JSON_MINI_H

#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
	enum jtype t;
	bool b;
	bool is_int;
	uint64_t u;		/* J_NUM, non-negative integers */
	double num;
	char *str;		/* J_STR */
	size_t n;		/* J_ARR, J_OBJ */
	struct jv *items;
	char **keys;		/* J_OBJ */
};

struct jparse {
	const char *p;
	int depth;
};

static void jv_free(struct jv *v)
{
	size_t i;

	if (!v)
		return;
	free(v->str);
	for (i = 0; i < v->n; i++) {
		jv_free(&v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	memset(v, 0, sizeof(*v));
}

static void jws(struct jparse *j)
{
	while (*j->p == ' ' || *j->p == '\n' || *j->p == '\t' || *j->p == '\r')
		j->p++;
}

static int jhex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static char *jstring(struct jparse *j)
{
	size_t cap = 16, n = 0;
	char *s;

	if (*j->p != '"')
		return NULL;
	j->p++;
	s = malloc(cap);
	if (!s)
		return NULL;
	for (;;) {
		unsigned int c = (unsigned char)*j->p++;
		bool esc_u = false;

		if (!c || c < 0x20)
			goto bad;
		if (c == '"')
			break;
		if (c == '\\') {
			c = (unsigned char)*j->p++;
			switch (c) {
			case '"': case '\\': case '/':
				break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'n': c = '\n'; break;
			case 'r': c = '\r'; break;
			case 't': c = '\t'; break;
			case 'u': {
				int k, h;

				c = 0;
				for (k = 0; k < 4; k++) {
					h = jhex(*j->p++);
					if (h < 0)
						goto bad;
					c = c * 16 + (unsigned int)h;
				}
				/* Surrogate pairs: not needed by the tests. */
				if (c >= 0xd800 && c <= 0xdfff)
					goto bad;
				esc_u = true;
				break;
			}
			default:
				goto bad;
			}
		}
		if (n + 4 > cap) {
			char *t = realloc(s, cap *= 2);

			if (!t)
				goto bad;
			s = t;
		}
		if (!esc_u || c < 0x80) {
			s[n++] = (char)c;
		} else if (c < 0x800) {		/* \uXXXX as UTF-8 */
			s[n++] = (char)(0xc0 | c >> 6);
			s[n++] = (char)(0x80 | (c & 0x3f));
		} else {
			s[n++] = (char)(0xe0 | c >> 12);
			s[n++] = (char)(0x80 | (c >> 6 & 0x3f));
			s[n++] = (char)(0x80 | (c & 0x3f));
		}
	}
	s[n] = '\0';
	return s;
bad:
	free(s);
	return NULL;
}

static bool jvalue(struct jparse *j, struct jv *v);

static bool jpush(struct jv *v, struct jv *item, char *key)
{
	struct jv *items = realloc(v->items, (v->n + 1) * sizeof(*items));

	if (!items)
		return false;
	v->items = items;
	if (v->t == J_OBJ) {
		char **keys = realloc(v->keys, (v->n + 1) * sizeof(*keys));

		if (!keys)
			return false;
		v->keys = keys;
		keys[v->n] = key;
	}
	items[v->n++] = *item;
	return true;
}

static bool jvalue(struct jparse *j, struct jv *v)
{
	memset(v, 0, sizeof(*v));
	if (++j->depth > 64)
		return false;
	jws(j);
	if (*j->p == '{' || *j->p == '[') {
		bool obj = *j->p == '{';
		char close = obj ? '}' : ']';

		v->t = obj ? J_OBJ : J_ARR;
		j->p++;
		jws(j);
		if (*j->p == close) {
			j->p++;
			goto done;
		}
		for (;;) {
			struct jv item;
			char *key = NULL;

			jws(j);
			if (obj) {
				key = jstring(j);
				if (!key)
					return false;
				jws(j);
				if (*j->p++ != ':') {
					free(key);
					return false;
				}
			}
			if (!jvalue(j, &item)) {
				free(key);
				jv_free(&item);
				return false;
			}
			if (!jpush(v, &item, key)) {
				free(key);
				jv_free(&item);
				return false;
			}
			jws(j);
			if (*j->p == ',') {
				j->p++;
				continue;
			}
			if (*j->p++ != close)
				return false;
			goto done;
		}
	}
	if (*j->p == '"') {
		v->t = J_STR;
		v->str = jstring(j);
		if (!v->str)
			return false;
		goto done;
	}
	if (!strncmp(j->p, "null", 4)) {
		j->p += 4;
		v->t = J_NULL;
		goto done;
	}
	if (!strncmp(j->p, "true", 4) || !strncmp(j->p, "false", 5)) {
		v->t = J_BOOL;
		v->b = *j->p == 't';
		j->p += v->b ? 4 : 5;
		goto done;
	}
	if (*j->p == '-' || isdigit((unsigned char)*j->p)) {
		const char *s = j->p;
		char *end;

		v->t = J_NUM;
		v->num = strtod(s, &end);
		if (end == s)
			return false;
		v->is_int = *s != '-' && strspn(s, "0123456789") ==
			    (size_t)(end - s);
		if (v->is_int)
			v->u = strtoull(s, NULL, 10);
		j->p = end;
		goto done;
	}
	return false;
done:
	j->depth--;
	return true;
}

/* Parse all of @text (nothing but white space after the value). */
static bool json_parse(const char *text, struct jv *out)
{
	struct jparse j = { .p = text };

	if (!jvalue(&j, out)) {
		jv_free(out);
		return false;
	}
	jws(&j);
	if (*j.p) {
		jv_free(out);
		return false;
	}
	return true;
}

static const struct jv *json_get(const struct jv *o, const char *key)
{
	size_t i;

	if (!o || o->t != J_OBJ)
		return NULL;
	for (i = 0; i < o->n; i++)
		if (!strcmp(o->keys[i], key))
			return &o->items[i];
	return NULL;
}

/* The non-negative integer at @key, or UINT64_MAX if there is none. */
static uint64_t json_u64(const struct jv *o, const char *key)
{
	const struct jv *v = json_get(o, key);

	return v && v->t == J_NUM && v->is_int ? v->u : UINT64_MAX;
}

/* The string at @key; NULL for null or none. */
static const char *json_str(const struct jv *o, const char *key)
{
	const struct jv *v = json_get(o, key);

	return v && v->t == J_STR ? v->str : NULL;
}

#endif /* METADEF_SELFTEST_JSON_MINI_H */
