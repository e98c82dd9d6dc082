#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host test: the real-model demo (tools/demo/models.c) on the host backend,
# as make demo runs it in the VM on /dev/metadef: ResNet-50 and BERT-large
# written by metadef-models, two tenants, every tensor written and checked
# in each arena. Also its refusals: a file that is not a model, an unknown
# symbolic dimension, a bad option. Prints TAP.

# shellcheck source-path=SCRIPTDIR source=../tap.sh
. "$(dirname "$0")/../tap.sh"
tap_begin demo 5
b=${BUILD:-build}
case "$b" in /*) ;; *) b=$top/$b ;; esac
demo=$b/demo/models
gen=$b/bin/metadef-models

"$gen" resnet50 -o "$tmp/resnet50.onnx" >/dev/null 2>&1 &&
	"$gen" bert-large -o "$tmp/bert-large.onnx" >/dev/null 2>&1
ok $? "models_written"

"$demo" --backend host "$tmp/resnet50.onnx" --dim batch=1 -- \
	"$tmp/bert-large.onnx" --dim batch=1 --dim seq=128 >"$tmp/out" 2>&1
rc=$?
sed 's/^/# /' "$tmp/out"
# Both tenants ran, every byte written was checked, and the arenas are
# smaller than what the caching allocator reserved.
grep -q '^  run: written / checked *\([0-9]*\) / \1 MiB *\([0-9]*\) / \2 MiB$' "$tmp/out" &&
	grep -q '^all 2 tenants: .*% less$' "$tmp/out" &&
	! grep -q FAILED "$tmp/out"
ok $((rc || $?)) "two_tenants_run_their_plans"

# metadef's arena is never larger than the caching allocator's reservation.
awk '/caching allocator \(reserved\)/ { c1 = $4; c2 = $6 }
     /metadef plan \(the arena\)/ { p1 = $5; p2 = $7 }
     END { exit !(p1 > 0 && p2 > 0 && p1 <= c1 && p2 <= c2) }' "$tmp/out"
ok $? "arena_within_the_caching_allocator"

printf 'not a model' >"$tmp/bad.onnx"
"$demo" --backend host "$tmp/bad.onnx" >"$tmp/bad" 2>&1
rc1=$?
"$demo" --backend host "$tmp/resnet50.onnx" >"$tmp/nodim" 2>&1
rc2=$?
"$demo" --backend nowhere "$tmp/resnet50.onnx" >/dev/null 2>&1
rc3=$?
sed 's/^/# /' "$tmp/bad" "$tmp/nodim"
[ $rc1 = 1 ] && grep -q 'not an ONNX model' "$tmp/bad" &&
	[ $rc2 = 1 ] && grep -q 'batch' "$tmp/nodim" && [ $rc3 = 2 ]
ok $? "bad_model_unknown_dim_bad_option_refused"

# The check is a real one: two live tensors that share no memory by right
# (no view, no in place) put at one offset fail the run.
METADEF_DEMO_OVERLAP=1 "$demo" --backend host "$tmp/bert-large.onnx" \
	--dim batch=1 --dim seq=16 >"$tmp/overlap" 2>&1
rc=$?
sed 's/^/# /' "$tmp/overlap"
[ $rc != 0 ] && grep -q 'was overwritten while alive' "$tmp/overlap"
ok $? "overlapping_live_tensors_fail_the_check"

tap_end
