# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2034
#
# What the shell tests (selftests/lib/*_test.sh) share, sourced by each:
#
#   . "$(dirname "$0")/../tap.sh"
#   tap_begin NAME COUNT	$top (the source tree), $tmp (a directory of
#				its own, gone at exit), the TAP header for
#				COUNT results
#   ok STATUS NAME		one result: "ok" when STATUS is 0
#   tap_end			the totals; the script's exit status (last)
#
# Not a test itself (no _test.sh): the Makefile runs only those.

set -u
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
n=0 failed=0

tap_begin() {
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/metadef-$1.XXXXXX") || exit 1
	trap 'rm -rf "$tmp"' EXIT
	echo "TAP version 13"
	echo "1..$2"
}

ok() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n $2"
	else
		echo "not ok $n $2"
		failed=$((failed + 1))
	fi
}

tap_end() {
	echo "# Totals: pass:$((n - failed)) fail:$failed"
	[ $failed = 0 ]
}
