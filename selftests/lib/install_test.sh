#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host test: installing as a user or a distribution would. Builds the
# library into a private build directory, installs it into a DESTDIR with
# PREFIX=/usr after the library was first built for the default prefix,
# builds a program against the staged copy with pkg-config, checks that
# LDFLAGS reach the links, that modules_install sends depmod to
# INSTALL_MOD_PATH, and that uninstall takes everything away. Prints TAP.

# shellcheck source-path=SCRIPTDIR source=../tap.sh
. "$(dirname "$0")/../tap.sh"
tap_begin install 6
b=$tmp/build
dest=$tmp/dest
# A distribution's flags for the whole build: -z now must reach the link.
make=(make -s -C "$top" BUILD="$b" CFLAGS=-O0 LDFLAGS=-Wl,-z,now)

# The library first built for the default prefix, then installed for
# /usr: the .pc must say /usr, not what it was first made with.
"${make[@]}" lib >"$tmp/log" 2>&1 &&
	"${make[@]}" install DESTDIR="$dest" PREFIX=/usr >>"$tmp/log" 2>&1
rc=$?
[ $rc = 0 ] || sed 's/^/# /' "$tmp/log"
ok $rc "install_into_destdir"

pc=$dest/usr/lib/pkgconfig/metadef.pc
grep -qx 'prefix=/usr' "$pc" 2>/dev/null &&
	grep -qx 'libdir=/usr/lib' "$pc" &&
	grep -q 'GROUP="metadef"' "$dest/etc/udev/rules.d/60-metadef.rules" &&
	grep -q '^\.TH METADEFCTL 8' "$dest/usr/share/man/man8/metadefctl.8" &&
	grep -q '^\.TH METADEF-PLAN 1' "$dest/usr/share/man/man1/metadef-plan.1"
rc=$?
[ $rc = 0 ] || { echo "# $pc:"; sed 's/^/#   /' "$pc" 2>/dev/null; }
ok $rc "pc_file_follows_prefix_udev_rule_and_man_pages_installed"

# A program against the staged copy, found through pkg-config alone.
cat >"$tmp/prog.c" <<'EOF'
#include <stdio.h>
#include <string.h>
#include <metadef/metadef.h>

int main(void)
{
	const char *v = md_version();

	printf("%s\n", v);
	return !v || !strlen(v);
}
EOF
# The staged copy first; the system's .pc files after it, for what
# metadef.pc requires (libprotobuf-c), as in a distribution's sysroot.
syspc=$(pkg-config --variable pc_path pkg-config 2>/dev/null)
export PKG_CONFIG_SYSROOT_DIR=$dest PKG_CONFIG_LIBDIR=$dest/usr/lib/pkgconfig${syspc:+:$syspc}
flags=$(pkg-config --cflags --libs --static metadef 2>"$tmp/log") &&
	# shellcheck disable=SC2086
	cc -o "$tmp/prog" "$tmp/prog.c" $flags -Wl,-rpath,"$dest/usr/lib" \
		2>>"$tmp/log" && "$tmp/prog" >"$tmp/out" 2>>"$tmp/log" &&
	[ -s "$tmp/out" ]
rc=$?
[ $rc = 0 ] || sed 's/^/# /' "$tmp/log"
ok $rc "program_builds_with_pkg_config"

# LDFLAGS reach the shared library's link (here: -z now).
readelf -d "$dest/usr/lib/libmetadef.so.0" 2>/dev/null | grep -q 'BIND_NOW'
rc=$?
ok $rc "ldflags_reach_the_link"

# modules_install into a staging root runs depmod there, not on /lib (a
# stand-in kernel tree: only the depmod line is looked at).
mkdir -p "$tmp/kdir/include/generated"
printf 'modules_install:\n\t@:\n' >"$tmp/kdir/Makefile"
echo '#define UTS_RELEASE "9.9.9-test"' >"$tmp/kdir/include/generated/utsrelease.h"
out=$(make -n -C "$top" BUILD="$b" KDIR="$tmp/kdir" \
	INSTALL_MOD_PATH="$tmp/mods" modules_install 2>/dev/null |
	grep depmod)
case "$out" in
*"depmod -b $tmp/mods "*) rc=0 ;;
*) rc=1; echo "# depmod line: $out" ;;
esac
ok $rc "depmod_follows_install_mod_path"

"${make[@]}" uninstall DESTDIR="$dest" PREFIX=/usr >"$tmp/log" 2>&1
left=$(find "$dest" -type f -o -type l)
[ -z "$left" ]
rc=$?
[ $rc = 0 ] || echo "$left" | sed 's/^/# left: /'
ok $rc "uninstall_removes_everything"

tap_end
