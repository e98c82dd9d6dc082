// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unit tests: size parsing and formatting; the library's array
 * growth (lib/internal.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <metadef/metadef.h>

#include "internal.h"
#include "kselftest_harness.h"

TEST(parse_size_plain_and_suffixes)
{
	uint64_t v = 0;

	ASSERT_EQ(0, md_parse_size("4096", &v));
	EXPECT_EQ(4096, v);
	ASSERT_EQ(0, md_parse_size("0", &v));
	EXPECT_EQ(0, v);
	ASSERT_EQ(0, md_parse_size("64K", &v));
	EXPECT_EQ(64 << 10, v);
	ASSERT_EQ(0, md_parse_size("64m", &v));
	EXPECT_EQ(64 << 20, v);
	ASSERT_EQ(0, md_parse_size("64MiB", &v));
	EXPECT_EQ(64 << 20, v);
	ASSERT_EQ(0, md_parse_size("3GB", &v));
	EXPECT_EQ(3ULL << 30, v);
	ASSERT_EQ(0, md_parse_size("512B", &v));
	EXPECT_EQ(512, v);
	ASSERT_EQ(0, md_parse_size("15E", &v));
	EXPECT_EQ(15ULL << 60, v);
}

TEST(parse_size_rejects_junk)
{
	uint64_t v = 7;

	EXPECT_EQ(-EINVAL, md_parse_size("", &v));
	EXPECT_EQ(-EINVAL, md_parse_size("-1", &v));
	EXPECT_EQ(-EINVAL, md_parse_size("+1", &v));
	EXPECT_EQ(-EINVAL, md_parse_size(" 1", &v));
	EXPECT_EQ(-EINVAL, md_parse_size("1 ", &v));
	EXPECT_EQ(-EINVAL, md_parse_size("1X", &v));
	EXPECT_EQ(-EINVAL, md_parse_size("1KK", &v));
	EXPECT_EQ(-EINVAL, md_parse_size("K", &v));
	EXPECT_EQ(-EINVAL, md_parse_size("1.5M", &v));
	EXPECT_EQ(-EINVAL, md_parse_size(NULL, &v));
	EXPECT_EQ(7, v);	/* untouched on error */
}

TEST(parse_size_overflow)
{
	uint64_t v = 7;

	ASSERT_EQ(0, md_parse_size("18446744073709551615", &v));
	EXPECT_EQ(UINT64_MAX, v);
	EXPECT_EQ(-ERANGE, md_parse_size("18446744073709551616", &v));
	EXPECT_EQ(-ERANGE, md_parse_size("16E", &v));
	EXPECT_EQ(-ERANGE, md_parse_size("17179869184G", &v));
	ASSERT_EQ(0, md_parse_size("17179869183G", &v));
}

TEST(format_size)
{
	char buf[32];

	EXPECT_STREQ("0 B", md_format_size(0, buf, sizeof(buf)));
	EXPECT_STREQ("1023 B", md_format_size(1023, buf, sizeof(buf)));
	EXPECT_STREQ("1 KiB", md_format_size(1024, buf, sizeof(buf)));
	EXPECT_STREQ("64 MiB", md_format_size(64ULL << 20, buf, sizeof(buf)));
	EXPECT_STREQ("1.50 GiB", md_format_size(3ULL << 29, buf, sizeof(buf)));
	EXPECT_STREQ("16.00 EiB", md_format_size(UINT64_MAX, buf, sizeof(buf)));
	/* Truncated, still terminated. */
	EXPECT_STREQ("64 ", md_format_size(64ULL << 20, buf, 4));
}

/* The real reason a file cannot be read, not a generic EIO. */
TEST(read_file_errors)
{
	size_t len = 1;

	errno = 0;
	EXPECT_EQ(NULL, md_read_file("/", &len));
	EXPECT_EQ(EISDIR, errno);
	errno = 0;
	EXPECT_EQ(NULL, md_read_file("/nonexistent/metadef", &len));
	EXPECT_EQ(ENOENT, errno);
}

TEST(read_file_empty)
{
	size_t len = 1;
	char *s = md_read_file("/dev/null", &len);

	ASSERT_NE(NULL, s);
	EXPECT_EQ(0, len);
	EXPECT_EQ('\0', s[0]);
	free(s);
}

TEST(version_string)
{
	EXPECT_NE(NULL, md_version());
	EXPECT_NE(0, strlen(md_version()));
}

/* md_grow(): @first, then doubled when full; never past SIZE_MAX bytes. */
TEST(grow_doubles_when_full)
{
	size_t cap = 0, big, i;
	int *v = NULL;

	for (i = 0; i < 10; i++) {
		v = md_grow(v, i, &cap, sizeof(*v), 4);
		ASSERT_NE(NULL, v);
		v[i] = (int)i;
		EXPECT_EQ(i < 4 ? 4 : i < 8 ? 8 : 16, cap);
	}
	for (i = 0; i < 10; i++)
		EXPECT_EQ((int)i, v[i]);
	/* Too many bytes to ask for: NULL, the capacity kept. */
	big = SIZE_MAX / 2 / sizeof(*v) + 1;
	EXPECT_EQ(NULL, md_grow(NULL, big, &big, sizeof(*v), 4));
	EXPECT_EQ(SIZE_MAX / 2 / sizeof(*v) + 1, big);
	free(v);
}

TEST_HARNESS_MAIN
