// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target: md_parse_size() (lib/util.c), md_device_parse()
 * (lib/meta.c) and md_format_size(), against a reference written here:
 * digits, then nothing, "B", or one of K M G T P E (either case) with an
 * optional "i" and an optional "B"; the value must fit in 64 bits. What
 * md_format_size() prints parses back to the same value when it is exact
 * ("64 MiB" without the blank) and to within 0.5 % when it is not.
 */
#include <ctype.h>
#include <errno.h>

#include <metadef/meta.h>
#include <metadef/metadef.h>

#include "fuzz.h"

/* Reference: 0, -EINVAL or -ERANGE, the value in *@v. */
static int ref_parse(const char *s, uint64_t *v)
{
	static const char units[] = "kmgtpe";
	const char *u = NULL;
	unsigned int shift = 0;
	__uint128_t x = 0;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	while (isdigit((unsigned char)*s)) {
		x = x * 10 + (unsigned int)(*s++ - '0');
		if (x > UINT64_MAX)
			return -ERANGE;	/* the digits alone, whatever follows */
	}
	if (*s)
		u = strchr(units, tolower((unsigned char)*s));
	if (u) {
		shift = 10 * (unsigned int)(u - units + 1);
		s++;
		if (*s == 'i')
			s++;
		if (*s == 'B')
			s++;
	} else if (*s == 'B' || *s == 'b') {
		s++;
	}
	if (*s)
		return -EINVAL;
	x <<= shift;
	if (x > UINT64_MAX)
		return -ERANGE;
	*v = (uint64_t)x;
	return 0;
}

static void check_format(uint64_t v)
{
	char buf[32], flat[32];
	uint64_t back = 0;
	size_t i, k = 0;
	int ret;

	md_format_size(v, buf, sizeof(buf));
	for (i = 0; buf[i]; i++)
		if (buf[i] != ' ')
			flat[k++] = buf[i];
	flat[k] = '\0';
	if (!strchr(flat, '.')) {
		ret = md_parse_size(flat, &back);
		FUZZ_CHECK(!ret && back == v, "%" PRIu64 " printed as '%s', read back %d %" PRIu64,
			   v, buf, ret, back);
		return;
	}
	{
		double num = strtod(buf, NULL), unit = 1, err;
		const char *sp = strchr(buf, ' ');

		FUZZ_CHECK(sp && strchr("KMGTPE", sp[1]), "'%s': no unit", buf);
		unit = (double)(1ULL << (10 * (strchr("KMGTPE", sp[1]) - "KMGTPE" + 1)));
		err = num * unit - (double)v;
		if (err < 0)
			err = -err;
		FUZZ_CHECK(err <= (double)v * 0.005 + 1, "%" PRIu64 " printed as '%s'", v, buf);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum md_device_kind dev;
	uint64_t v = 0xdeadbeef, r = 0;
	int ret, want;
	char *s;

	if (size > 64)
		return 0;
	s = fuzz_strndup(data, size);
	if (!s)
		return 0;
	ret = md_parse_size(s, &v);
	want = ref_parse(s, &r);
	FUZZ_CHECK(ret == want, "md_parse_size(\"%s\") = %d, reference %d", s, ret, want);
	if (!ret)
		FUZZ_CHECK(v == r, "md_parse_size(\"%s\") = %" PRIu64 ", reference %" PRIu64,
			   s, v, r);
	check_format(r);
	/* Every value, not only the parsed ones: the input's bytes as one. */
	if (size >= 8) {
		memcpy(&v, data, 8);
		check_format(v);
	}

	ret = md_device_parse(s, &dev);
	want = !strcmp(s, "cpu") || !strcmp(s, "gpu") || !strcmp(s, "npu");
	FUZZ_CHECK((ret == 0) == want, "md_device_parse(\"%s\") = %d", s, ret);
	if (!ret)
		FUZZ_CHECK(!strcmp(md_device_name(dev), s), "'%s' is device '%s'", s,
			   md_device_name(dev));
	free(s);
	return 0;
}
