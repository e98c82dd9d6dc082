# SPDX-License-Identifier: GPL-2.0
#
# The bench harness for shell benches (sourced; tools/bench/harness.h is
# the C side): each goal a verdict line on stdout and a row in
# $BENCH_RESULTS/<bench>.tsv (default build/bench/results; "-": no file),
# the same columns as the C benches write:
#
#   bench case metric peer value goal verdict date host
#
#   bench_open NAME             start NAME's result file (emptied)
#   bench_goal BENCH CASE METRIC PEER VALUE OP GOAL
#                               judge VALUE OP GOAL (OP: <= < >= >); PEER
#                               "-" for an absolute figure; VALUE "" or
#                               "-": not judged
#   bench_not_judged BENCH CASE METRIC PEER OP GOAL WHY
#                               a goal whose peer could not be run
#   bench_exit                  the summary line; returns 1 when a goal
#                               was missed, else 3 when one was not
#                               judged, else 0
#
# No tab or newline in a field (they become blanks).

bench_met=0
bench_missed=0
bench_not_judged_n=0
bench_tsv=
bench_name=
bench_date=
bench_host=

bench_open() {
	local dir=${BENCH_RESULTS:-build/bench/results}

	bench_name=$1
	bench_met=0 bench_missed=0 bench_not_judged_n=0
	bench_date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	bench_host=$(hostname 2>/dev/null || uname -n)
	bench_tsv=
	[ "$dir" = - ] && return 0
	mkdir -p "$dir" && : >"$dir/$1.tsv" || {
		echo "$1: cannot write results in $dir" >&2
		return 1
	}
	bench_tsv=$dir/$1.tsv
}

# bench_row FIELD... (nine): one line of the result file.
bench_row() {
	[ -n "$bench_tsv" ] || return 0
	local f out= sep=
	for f in "$@"; do
		f=${f//$'\t'/ }
		f=${f//$'\n'/ }
		[ -n "$f" ] || f=-
		out+=$sep$f
		sep=$'\t'
	done
	printf '%s\n' "$out" >>"$bench_tsv"
}

# bench_verdict VALUE OP GOAL: met or MISSED (awk's arithmetic).
bench_verdict() {
	awk -v v="$1" -v op="$2" -v g="$3" 'BEGIN {
		num = v ~ /^[-+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$/
		if (op == "<=") ok = v + 0 <= g + 0
		else if (op == "<") ok = v + 0 < g + 0
		else if (op == ">=") ok = v + 0 >= g + 0
		else if (op == ">") ok = v + 0 > g + 0
		else { print "bad"; exit }
		print num && ok ? "met" : "MISSED"
	}'
}

bench_goal() {
	local bench=$1 kase=$2 metric=$3 peer=$4 value=$5 op=$6 goal=$7 v
	local shown

	if [ -z "$value" ] || [ "$value" = - ]; then
		bench_not_judged "$bench" "$kase" "$metric" "$peer" "$op" "$goal" \
			"the peer could not be run"
		return
	fi
	v=$(bench_verdict "$value" "$op" "$goal")
	if [ "$v" = bad ]; then
		echo "bench_goal: unknown operator '$op'" >&2
	fi
	[ "$v" = met ] || v=MISSED
	# five digits, or as many more as it takes for the figure shown to
	# get the verdict the value got (1.00000014 is not "1" <= 1)
	shown=$(awk -v v="$value" -v op="$op" -v g="$goal" '
	function ok(x) {
		return op == "<=" ? x <= g : op == "<" ? x < g : op == ">=" ? x >= g : x > g
	}
	BEGIN {
		if (v !~ /^[-+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$/) {
			print "nan"
			exit
		}
		if (v >= 1000 || v <= -1000) {
			printf "%.0f\n", v
			exit
		}
		for (p = 5; p < 15; p++) {
			s = sprintf("%." p "g", v)
			if (ok(s + 0) == ok(v + 0))
				break
		}
		print s
	}')
	case $v in
	met) bench_met=$((bench_met + 1)) ;;
	*) bench_missed=$((bench_missed + 1)) ;;
	esac
	echo "goal $bench / $kase: $metric vs ${peer:--}: $shown (goal $op $goal): $v"
	bench_row "$bench" "$kase" "$metric" "$peer" "$shown" "$op $goal" "$v" \
		"$bench_date" "$bench_host"
}

bench_not_judged() {
	local bench=$1 kase=$2 metric=$3 peer=$4 op=$5 goal=$6 why=${7:-not measured}

	bench_not_judged_n=$((bench_not_judged_n + 1))
	echo "goal $bench / $kase: $metric vs ${peer:--}: - (goal $op $goal): NOT JUDGED: $why"
	bench_row "$bench" "$kase" "$metric" "$peer" - "$op $goal" "NOT JUDGED" \
		"$bench_date" "$bench_host"
}

bench_exit() {
	local rc=0

	if [ "$bench_missed" -gt 0 ]; then
		rc=1
	elif [ "$bench_not_judged_n" -gt 0 ]; then
		rc=3
	fi
	echo "$bench_name: $bench_met goal(s) met, $bench_missed MISSED, $bench_not_judged_n NOT JUDGED${bench_tsv:+; results in $bench_tsv}: exit status $rc"
	return $rc
}
