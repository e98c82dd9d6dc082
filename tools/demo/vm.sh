#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs inside the demo VM (tools/demo), after metadef.ko was loaded.
set -e

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "the module is loaded"
grep '^metadef ' /proc/modules
echo "pool_size parameter: $(cat /sys/module/metadef/parameters/pool_size) bytes"
dmesg | grep 'metadef:' | sed 's/^\[[^]]*\] //'

# Every event of the demo, for the end (the group is CAP_SYS_ADMIN only).
metadefctl monitor >/tmp/events.txt 2>/tmp/monitor.err &
monitor=$!
while ! grep -q monitoring /tmp/monitor.err 2>/dev/null; do sleep 0.1; done

step "its device node"
ls -l /dev/metadef

step "metadefctl info (METADEF_IOC_INFO on a new domain)"
metadefctl info

step "metadefctl --json info (for scripts)"
metadefctl --json info

step "an unknown ioctl is refused, not ignored"
metadefctl --device /dev/null info || echo "(exit status $?)"

step "one region's life: ALLOC, mmap, write, FREE while mapped, munmap"
region-demo 4M

step "two tenants: two domains, a read-only grant, refused accesses, a revoke"
tenants-demo

step "libmetadef on the module: an arena, the tiered pools, a leak, the dynamic pool"
runtime-demo

step "real models: ResNet-50 and BERT-large, two tenants, two domains, one arena each"
METADEF_DEMO_WHILE="metadefctl domains" models-demo \
	/models/resnet50.onnx --dim batch=1 -- \
	/models/bert-large.onnx --dim batch=1 --dim seq=128

step "debugfs: /sys/kernel/debug/metadef/ (this shell holds a domain open)"
exec 3<>/dev/metadef
ls -l /sys/kernel/debug/metadef/
for f in /sys/kernel/debug/metadef/* /sys/kernel/debug/metadef/mmu/*; do
	[ -f "$f" ] || continue
	echo "--- $f"
	cat "$f"
done

step "metadefctl pool (generic netlink: the pool and its free blocks per order)"
metadefctl pool

step "metadefctl domains (this shell's domain, and any still holding memory)"
metadefctl domains

step "metadefctl --json limits"
metadefctl --json limits

step "the events metadefctl monitor saw during the demo"
kill "$monitor"
wait "$monitor" || true
cat /tmp/events.txt
grep -q . /tmp/events.txt
