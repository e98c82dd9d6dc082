// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Small helpers shared by the library and the tools: size parsing and
 * formatting.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <metadef/metadef.h>

#include "internal.h"

MD_API const char *md_version(void)
{
	return MD_VERSION;
}

MD_API int md_parse_size(const char *str, uint64_t *out)
{
	static const char units[] = "KMGTPE";
	const char *p = str;
	uint64_t v = 0;
	unsigned int shift = 0;

	if (!str || !isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		unsigned int d = *p - '0';

		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (*p) {
		char c = toupper((unsigned char)*p);
		const char *u;

		for (u = units; *u && *u != c; u++)
			;
		if (*u) {
			shift = 10 * (unsigned int)(u - units + 1);
			p++;
			if (*p == 'i')
				p++;
			if (*p == 'B')
				p++;
		} else if (c == 'B') {
			p++;
		}
	}
	if (*p)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = v << shift;
	return 0;
}

MD_API char *md_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = {
		"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"
	};
	unsigned int i = 0;

	while (i + 1 < sizeof(units) / sizeof(units[0]) &&
	       bytes >= (1ULL << (10 * (i + 1))))
		i++;
	if (i == 0 || !(bytes & ((1ULL << (10 * i)) - 1)))
		snprintf(buf, len, "%" PRIu64 " %s", bytes >> (10 * i), units[i]);
	else
		snprintf(buf, len, "%.2f %s",
			 (double)bytes / (double)(1ULL << (10 * i)), units[i]);
	return buf;
}

MD_API char *md_read_file(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	size_t cap = 0, n = 0, r;
	struct stat st;
	char *s = NULL;
	int err = 0;

	if (!f)
		return NULL;
	/* fopen() opens a directory; say so rather than fail the read. */
	if (!fstat(fileno(f), &st) && S_ISDIR(st.st_mode)) {
		if (f != stdin)
			fclose(f);
		errno = EISDIR;
		return NULL;
	}
	for (;;) {
		if (n + 65536 > cap) {
			char *ns;

			cap = 2 * cap + 65536;
			ns = realloc(s, cap + 1);
			if (!ns) {
				err = ENOMEM;
				break;
			}
			s = ns;
		}
		errno = 0;
		r = fread(s + n, 1, cap - n, f);
		n += r;
		if (!r) {
			/* fread() leaves the read(2) errno: keep it. */
			if (ferror(f))
				err = errno ? errno : EIO;
			break;
		}
	}
	if (f != stdin)
		fclose(f);
	if (err) {
		free(s);
		errno = err;
		return NULL;
	}
	s[n] = '\0';
	*len = n;
	return s;
}
