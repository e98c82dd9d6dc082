#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host test: the benches' report (tools/bench/report) on result files
# made here: its table and exit status for met, missed and not judged
# goals and for benches that did not run; a malformed line named by file
# and line; --readme rewriting only what is between its markers. And the
# shell side of the harness (tools/bench/lib.sh): its verdicts, rows and
# exit status. Prints TAP.

# shellcheck source-path=SCRIPTDIR source=../tap.sh
. "$(dirname "$0")/../tap.sh"
tap_begin bench-report 11
report=$top/tools/bench/report

# row BENCH CASE METRIC PEER VALUE GOAL VERDICT: one result line
row() {
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t2026-12-03T10:00:00Z\ttesthost\n' "$@"
}

# run DIR [ARGS...]: the report's output in $out, its status in $rc
run() {
	out=$("$report" "$@" 2>&1)
	rc=$?
}

# All met: exit 0, every row in the table.
d=$tmp/met
mkdir -p "$d"
row a "tiny" "md / peer's" jemalloc 0.5 "<= 1" met >"$d/a.tsv"
row a "small" "ns per pair" - 80 "< 1000" met >>"$d/a.tsv"
row b "trace" "allocs / peer's" "region per tensor" 0.0003 "<= 0.15" met >"$d/b.tsv"
run "$d"
r=0
[ $rc = 0 ] || r=1
echo "$out" | grep -q '^a  *tiny  *md / peer.s  *jemalloc  *0.5  *<= 1  *met$' || r=1
echo "$out" | grep -q '^b  *trace  *allocs / peer.s  *region per tensor  *0.0003  *<= 0.15  *met$' || r=1
echo "$out" | grep -q '^report: 3 met, 0 MISSED, 0 NOT JUDGED, 0 bench(es) failed' || r=1
[ $r = 0 ] || echo "$out" | sed 's/^/# /'
ok $r "all_met_exit_0"

# A miss: exit 1.
d=$tmp/miss
mkdir -p "$d"
cp "$tmp/met/a.tsv" "$d/"
row c "tiny" "md / peer's" mimalloc 1.54 "<= 1.5" MISSED >"$d/c.tsv"
run "$d"
r=0
[ $rc = 1 ] || r=1
echo "$out" | grep -q 'mimalloc  *1.54  *<= 1.5  *MISSED$' || r=1
echo "$out" | grep -q '^report: 2 met, 1 MISSED, 0 NOT JUDGED' || r=1
[ $r = 0 ] || echo "$out" | sed 's/^/# /'
ok $r "a_miss_exit_1"

# A goal not judged (its peer missing): exit 1 as well, never a pass.
d=$tmp/nj
mkdir -p "$d"
cp "$tmp/met/a.tsv" "$d/"
row c "tiny" "md / peer's" jemalloc - "<= 1" "NOT JUDGED" >"$d/c.tsv"
run "$d"
r=0
[ $rc = 1 ] || r=1
echo "$out" | grep -q 'jemalloc  *-  *<= 1  *NOT JUDGED$' || r=1
[ $r = 0 ] || echo "$out" | sed 's/^/# /'
ok $r "not_judged_exit_1"

# make bench's status file: a bench that crashed, one that exited 1 with
# no missed row, one that wrote nothing: each FAILED; exit 1.
d=$tmp/status
mkdir -p "$d"
cp "$tmp/met/a.tsv" "$tmp/met/b.tsv" "$d/"
printf 'a 0\nb 1\nx 2\ny 0\n' >"$d/status"
run "$d"
r=0
[ $rc = 1 ] || r=1
echo "$out" | grep -q '^b .*FAILED: exit status 1 but no goal MISSED$' || r=1
echo "$out" | grep -q '^x .*FAILED: exit status 2$' || r=1
echo "$out" | grep -q '^y .*FAILED: exit status 0, no goal row written$' || r=1
echo "$out" | grep -q '^a .*FAILED' && r=1
echo "$out" | grep -q '3 bench(es) failed' || r=1
[ $r = 0 ] || echo "$out" | sed 's/^/# /'
ok $r "failed_benches_exit_1"

# make's 2 for a bench that exited 1 with a MISSED row: a miss, not a
# failure; the same 2 with only met rows is a failure.
d=$tmp/make2
mkdir -p "$d"
cp "$tmp/met/a.tsv" "$d/"
row m "tiny" "md / peer's" jemalloc 1.14 "<= 1" MISSED >"$d/m.tsv"
printf 'a 2\nm 2\n' >"$d/status"
run "$d"
r=0
[ $rc = 1 ] || r=1
echo "$out" | grep -q '^m .*FAILED' && r=1
echo "$out" | grep -q '^a .*FAILED: exit status 2$' || r=1
echo "$out" | grep -q '1 MISSED, 0 NOT JUDGED, 1 bench(es) failed' || r=1
[ $r = 0 ] || echo "$out" | sed 's/^/# /'
ok $r "make_status_2_with_a_miss_is_a_miss"

# Malformed lines: exit 2 and the file and line named.
d=$tmp/bad
r=0
for case in fields verdict value goal; do
	rm -rf "$d"
	mkdir -p "$d"
	cp "$tmp/met/a.tsv" "$d/z.tsv"
	case $case in
	fields) printf 'z\tonly\tthree\n' >>"$d/z.tsv"; want='z.tsv:3: expected 9 tab-separated fields' ;;
	verdict) row z c m p 1 "<= 2" passed >>"$d/z.tsv"; want='z.tsv:3: verdict "passed"' ;;
	value) row z c m p fast "<= 2" met >>"$d/z.tsv"; want='z.tsv:3: value "fast" is not a number' ;;
	goal) row z c m p 1 "about 2" met >>"$d/z.tsv"; want='z.tsv:3: goal "about 2"' ;;
	esac
	run "$d"
	if [ $rc != 2 ] || ! echo "$out" | grep -qF "report: $d/$want"; then
		echo "# $case: rc $rc: $out"
		r=1
	fi
done
ok $r "malformed_line_names_file_and_line"

# No results at all: exit 2.
mkdir -p "$tmp/empty"
run "$tmp/empty"
r=0
[ $rc = 2 ] && echo "$out" | grep -q 'no results' || r=1
ok $r "no_results_exit_2"

# --readme: the table between the markers, the rest kept, the date said.
f=$tmp/README.md
printf '# x\n\nbefore\n<!-- bench-table:begin -->\nold table\n<!-- bench-table:end -->\nafter\n' >"$f"
run --readme "$f" "$tmp/miss"
r=0
[ $rc = 0 ] || r=1
grep -q 'old table' "$f" && r=1
[ "$(sed -n 1,4p "$f")" = "$(printf '# x\n\nbefore\n<!-- bench-table:begin -->')" ] || r=1
[ "$(tail -n 2 "$f")" = "$(printf '<!-- bench-table:end -->\nafter')" ] || r=1
grep -q '^| c | tiny | md / peer.s | mimalloc | 1.54 | <= 1.5 | \*\*MISSED\*\* |$' "$f" || r=1
grep -q '^| a | small | ns per pair | - | 80 | < 1000 | met |$' "$f" || r=1
grep -q 'runs of 2026-12-03T10:00:00Z (UTC) on testhost' "$f" || r=1
grep -q '2 met, 1 missed, 0 not judged' "$f" || r=1
# Again: the same file (the markers stay, nothing doubles).
cp "$f" "$tmp/once"
run --readme "$f" "$tmp/miss"
cmp -s "$f" "$tmp/once" || r=1
[ $r = 0 ] || sed 's/^/# /' "$f"
ok $r "readme_between_markers"

printf 'no markers\n' >"$tmp/plain.md"
run --readme "$tmp/plain.md" "$tmp/met"
r=0
[ $rc = 2 ] && echo "$out" | grep -q 'has no <!-- bench-table:begin -->' || r=1
[ "$(cat "$tmp/plain.md")" = "no markers" ] || r=1
ok $r "readme_without_markers_exit_2"

# lib.sh: verdicts, rows in the C harness's columns, exit status.
lib() {
	(
		cd "$tmp" || exit 9
		export BENCH_RESULTS=$tmp/sh
		. "$top/tools/bench/lib.sh"
		bench_open s || exit 9
		eval "$1"
		bench_exit
	) >"$tmp/lib.out" 2>&1
}
r=0
lib 'bench_goal s c1 m p 0.5 "<=" 1; bench_goal s c2 m - 2.5 ">=" 2'
[ $? = 0 ] || r=1
[ "$(cut -f 1-7 "$tmp/sh/s.tsv")" = "$(printf 's\tc1\tm\tp\t0.5\t<= 1\tmet\ns\tc2\tm\t-\t2.5\t>= 2\tmet')" ] || r=1
[ "$(awk -F '\t' '{ print NF }' "$tmp/sh/s.tsv" | sort -u)" = 9 ] || r=1
lib 'bench_goal s c1 m p 1.0000001 "<=" 1; bench_goal s c2 m p 1 "<" 1; bench_not_judged s c3 m q "<=" 1 "q missing"'
[ $? = 1 ] || r=1
grep -q "^s	c1	m	p	1.0000001	<= 1	MISSED	" "$tmp/sh/s.tsv" || r=1
grep -q "^s	c2	m	p	1	< 1	MISSED	" "$tmp/sh/s.tsv" || r=1
grep -q "^s	c3	m	q	-	<= 1	NOT JUDGED	" "$tmp/sh/s.tsv" || r=1
grep -q 'NOT JUDGED: q missing' "$tmp/lib.out" || r=1
lib 'bench_goal s c1 m p 3 ">" 2; bench_goal s c2 m p "" "<=" 1'
[ $? = 3 ] || r=1
grep -q "^s	c2	m	p	-	<= 1	NOT JUDGED	" "$tmp/sh/s.tsv" || r=1
# What lib.sh writes, the report reads.
"$report" "$tmp/sh" >/dev/null 2>&1
[ $? = 1 ] || r=1
[ $r = 0 ] || sed 's/^/# /' "$tmp/lib.out" "$tmp/sh/s.tsv"
ok $r "lib_sh_rows_and_exit_status"

# A non-number is never met.
lib 'bench_goal s c1 m p fast "<=" 1'
r=$?
[ $r = 1 ] && grep -q "^s	c1	m	p	nan	<= 1	MISSED	" "$tmp/sh/s.tsv"
ok $? "lib_sh_non_number_missed"

tap_end
