# SPDX-License-Identifier: GPL-2.0
#
# metadef: top-level build.
#
#   make                 module + library + tools + selftests
#   make check           deps + host + fuzz-lib + vm + debug + matrix tiers, one
#                        summary line
#   make check-fuzz      long ioctl fuzzer run in one VM boot (not in check):
#                        METADEF_FUZZ_CALLS (10^6), METADEF_FUZZ_SEED,
#                        METADEF_FUZZ_KERNEL=debug (cached debug kernel)
#   make check-fuzz-lib  the library's libFuzzer targets, 25 s each (in check)
#   make fuzz-lib        the same for FUZZ_SECONDS (300) each
#   make demo            boot a VM, load the module, show what it does
#   make bench           every benchmark, then one table of goals (not in check)
#   make bench-readme    README.md's measured table from the last results
#   make install         library, headers, pkg-config file, tools, man pages
#   make uninstall       what make install put there
#   make modules_install metadef.ko for modprobe (or: make dkms-source)
#
# Variables: KDIR (kernel build tree; default: tools/kdir), PREFIX, MANDIR, DESTDIR,
# CC, CFLAGS, LDFLAGS, BUILD (user-space objects, default build/), FUZZ_CC
# (clang-14), FUZZ_SECONDS, SHARED (the benches' peers, default ../shared),
# BENCH_RESULTS (the benches' result files, default build/bench/results).

# The generated protobuf-c reader's rule comes before "all": keep "all" the
# goal of a plain "make".
.DEFAULT_GOAL	:= all

VERSION		:= 0.1.0
SOVERSION	:= 0

PREFIX		?= /usr/local
LIBDIR		?= $(PREFIX)/lib
INCLUDEDIR	?= $(PREFIX)/include
BINDIR		?= $(PREFIX)/bin
PKGCONFIGDIR	?= $(LIBDIR)/pkgconfig
MANDIR		?= $(PREFIX)/share/man
# The udev rule that gives /dev/metadef to group "metadef" (a local
# install: the administrator's rules directory).
UDEVDIR		?= /etc/udev/rules.d
DESTDIR		?=

# A bare "make" builds everything: the generated ONNX reader's rule below
# comes first in the file and would otherwise be the default goal.
.DEFAULT_GOAL	:= all

KDIR		?= $(shell tools/kdir)
BUILD		?= build
B		:= $(BUILD)

CC		?= cc
AR		?= ar
CFLAGS		?= -O2 -g
LDFLAGS		?=
MD_CFLAGS	:= -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE \
		   -Iinclude -Iinclude/uapi -DMD_VERSION='"$(VERSION)"' -MMD -MP
LIB_CFLAGS	:= $(MD_CFLAGS) -I$(B)/gen -fPIC -fvisibility=hidden
TEST_CFLAGS	:= $(MD_CFLAGS) -I$(B)/ksft -I$(B)/gen -Wno-unused-parameter -Wno-sign-compare -pthread
PTHREAD		:= -pthread

# ---------------------------------------------------------------- library

LIB_SRCS	:= $(wildcard lib/*.c)
LIB_OBJS	:= $(LIB_SRCS:%.c=$(B)/%.o) $(B)/gen/onnx.pb-c.o
# What a program linking libmetadef.a needs besides it (metadef.pc says the same).
LIB_LIBS	:= -lprotobuf-c -lm -pthread

# ONNX import (lib/onnx.c) reads models with protobuf-c. Its reader is
# generated at build time from the schema Debian's libonnx-dev ships,
# never written by hand nor committed. The generated file is compiled
# into libmetadef (hidden, like every symbol but the md_ API).
ONNX_PROTO	?= /usr/include/onnx/onnx.proto
PROTOC_C	?= protoc-c
GEN		:= $(B)/gen
$(GEN)/onnx.pb-c.c $(GEN)/onnx.pb-c.h &: $(ONNX_PROTO)
	@mkdir -p $(GEN)
	$(PROTOC_C) --c_out=$(GEN) -I$(dir $(ONNX_PROTO)) $(ONNX_PROTO)
LIB_A		:= $(B)/libmetadef.a
LIB_SO		:= $(B)/libmetadef.so.$(VERSION)
LIB_SONAME	:= libmetadef.so.$(SOVERSION)

# ---------------------------------------------------------------- tools

TOOLS		:= $(B)/bin/metadefctl
TOOLS		+= $(B)/bin/metadef-plan
# Developer tools: built with the others, not installed.
DEV_TOOLS	:= $(B)/bin/metadef-models
# The benches (tools/bench/) share a harness and lib/random.h.
BENCH_HARNESS	:= tools/bench/harness.c tools/bench/harness.h lib/random.h
BENCH_CFLAGS	:= $(MD_CFLAGS) -Ilib -Itools/bench

# ---------------------------------------------------------------- selftests

# kselftests: run inside the VM tiers, against the module.
KSFT_SRCS	:= $(wildcard selftests/kmod/*_test.c)
KSFT_BINS	:= $(KSFT_SRCS:selftests/kmod/%.c=$(B)/selftests/kmod/%)
# host tests: the library, natively.
HOST_SRCS	:= $(wildcard selftests/lib/*_test.c)
HOST_BINS	:= $(HOST_SRCS:selftests/lib/%.c=$(B)/selftests/lib/%)
# ... and shell tests (install_test.sh), run from the source tree.
HOST_SCRIPTS	:= $(wildcard selftests/lib/*_test.sh)
HOST_BINS	+= $(HOST_SCRIPTS:selftests/lib/%.sh=$(B)/selftests/lib/%)
KSFT_HDR	:= $(B)/ksft/kselftest_harness.h
# ... and every public header compiled as strict C11 and as C++17
# (selftests/lib/headers_lang.c, one source valid in both languages).
HOST_BINS	+= $(B)/selftests/lib/headers_c11_test $(B)/selftests/lib/headers_cxx17_test
CXX		?= g++
LANG_FLAGS	:= -Wall -Wextra -Werror -pedantic-errors -Iinclude -Iinclude/uapi \
		   -DMD_VERSION='"$(VERSION)"'

.PHONY: uninstall
.PHONY: all module lib tools selftests selftests-kmod selftests-host check check-host check-vm \
	check-debug check-matrix check-fuzz demo bench bench-buddy bench-plan bench-exact install modules_install clean deps help

all: module lib tools selftests

help:
	@sed -n '3,24p' Makefile | sed 's/^# \{0,1\}//'

deps:
	tools/deps.sh all

module:
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

lib: $(LIB_A) $(LIB_SO) $(B)/metadef.pc

tools: $(TOOLS) $(DEV_TOOLS)

selftests: selftests-kmod selftests-host

selftests-kmod: $(KSFT_BINS)

selftests-host: $(HOST_BINS)

$(B)/lib/%.o: lib/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LIB_CFLAGS) -c -o $@ $<

# The generated reader, and every library object that includes it.
$(B)/gen/%.o: $(B)/gen/%.c
	$(CC) $(CFLAGS) $(LIB_CFLAGS) -c -o $@ $<
$(B)/lib/onnx.o $(B)/lib/onnx_shape.o: $(GEN)/onnx.pb-c.h

$(LIB_A): $(LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(LIB_SO): $(LIB_OBJS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,$(LIB_SONAME) -o $@ $^ $(LIB_LIBS)
	ln -sf $(notdir $@) $(B)/$(LIB_SONAME)
	ln -sf $(LIB_SONAME) $(B)/libmetadef.so

# The .pc names the install paths: rebuilt whenever they change, not only
# when the Makefile does (make lib; make install PREFIX=/usr).
PC_PATHS	:= $(PREFIX):$(LIBDIR):$(INCLUDEDIR)
$(B)/.pc-paths: FORCE
	@mkdir -p $(@D)
	@[ "$$(cat $@ 2>/dev/null)" = '$(PC_PATHS)' ] || echo '$(PC_PATHS)' >$@

.PHONY: FORCE
FORCE:

$(B)/metadef.pc: Makefile $(B)/.pc-paths
	@mkdir -p $(@D)
	printf '%s\n' \
		'prefix=$(PREFIX)' \
		'libdir=$(LIBDIR)' \
		'includedir=$(INCLUDEDIR)' \
		'' \
		'Name: metadef' \
		'Description: device memory planning, pools and isolation for accelerators' \
		'Version: $(VERSION)' \
		'Libs: -L$${libdir} -lmetadef' \
		'Libs.private: -lm -pthread' \
		'Requires.private: libprotobuf-c' \
		'Cflags: -I$${includedir}' >$@

# Tools link the static library: they run from the build tree and inside
# the VM without an installed libmetadef.
# metadefctl speaks generic netlink through libnl-genl-3.
NL_CFLAGS	:= $(shell pkg-config --cflags libnl-genl-3.0 2>/dev/null || echo -I/usr/include/libnl3)
NL_LIBS		:= $(shell pkg-config --libs libnl-genl-3.0 2>/dev/null || echo -lnl-genl-3 -lnl-3)
$(B)/bin/metadefctl: $(wildcard tools/metadefctl/*.c) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(MD_CFLAGS) $(NL_CFLAGS) -o $@ $(filter %.c,$^) $(LIB_A) $(NL_LIBS) $(LIB_LIBS)

$(B)/bin/metadef-plan: $(wildcard tools/plan/*.c) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(MD_CFLAGS) -o $@ $(filter %.c,$^) $(LIB_A) $(LIB_LIBS)

# The models generator (tools/models/): ONNX files through the protobuf-c
# code generated above (linked from libmetadef.a) and training graphs.
MODELS_SRCS	:= $(wildcard tools/models/*.c)
MODELS_OBJS	:= $(MODELS_SRCS:tools/models/%.c=$(B)/models/%.o)
$(B)/models/%.o: tools/models/%.c $(GEN)/onnx.pb-c.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(MD_CFLAGS) -I$(GEN) -c -o $@ $<

$(B)/bin/metadef-models: $(MODELS_OBJS) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(MODELS_OBJS) $(LIB_A) $(LIB_LIBS) -lm

$(KSFT_HDR):
	tools/ksft-headers $(B)/ksft

$(B)/selftests/kmod/%: selftests/kmod/%.c $(KSFT_HDR) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(TEST_CFLAGS) -Ilib -o $@ $< $(LIB_A) $(LIB_LIBS)

$(B)/selftests/lib/%: selftests/lib/%.sh
	@mkdir -p $(@D)
	printf '#!/bin/sh\nexec %s "$$@"\n' '$(CURDIR)/$<' >$@
	chmod 755 $@

$(B)/selftests/lib/%: selftests/lib/%.c $(KSFT_HDR) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(TEST_CFLAGS) -Ilib -o $@ $< $(LIB_A) $(LIB_LIBS)

$(B)/selftests/lib/headers_c11_test: selftests/lib/headers_lang.c $(wildcard include/metadef/*.h) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -std=c11 $(LANG_FLAGS) -o $@ $< $(LIB_A) $(PTHREAD) -lm

$(B)/selftests/lib/headers_cxx17_test: selftests/lib/headers_lang.c $(wildcard include/metadef/*.h) $(LIB_A)
	@mkdir -p $(@D)
	$(CXX) $(CFLAGS) $(LDFLAGS) -std=c++17 -x c++ $(LANG_FLAGS) -o $@ $< -x none $(LIB_A) $(PTHREAD) -lm

# The library's threaded parts under ThreadSanitizer: the whole library and
# the tests that race it, instrumented (the reuse protocol, the pools'
# threads, the dynamic pool, arenas, devices, the improvement phase's
# chains); tools/check runs them with
# the host tests and a report fails them. TSan does not model
# atomic_thread_fence(): the snapshots' seqlock reads (pool_internal.h) are
# relaxed atomics, so it sees no race there, and checks their ordering less.
TSAN_TESTS	:= reuse_test pool_thread_test pool_owner_test pool_race_test \
		   dynpool_test arena_test device_test improve_test
TSAN_BINS	:= $(TSAN_TESTS:%=$(B)/selftests/lib-tsan/%)
TSAN_A		:= $(B)/lib-tsan/libmetadef.a
TSAN_CFLAGS	:= -fsanitize=thread -Wno-tsan
selftests-host: $(TSAN_BINS)

$(B)/lib-tsan/%.o: lib/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LIB_CFLAGS) $(TSAN_CFLAGS) -c -o $@ $<

$(B)/lib-tsan/gen/%.o: $(B)/gen/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LIB_CFLAGS) $(TSAN_CFLAGS) -c -o $@ $<
$(B)/lib-tsan/onnx.o $(B)/lib-tsan/onnx_shape.o: $(GEN)/onnx.pb-c.h

$(TSAN_A): $(LIB_SRCS:lib/%.c=$(B)/lib-tsan/%.o) $(B)/lib-tsan/gen/onnx.pb-c.o
	rm -f $@
	$(AR) rcs $@ $^

$(B)/selftests/lib-tsan/%: selftests/lib/%.c $(KSFT_HDR) $(TSAN_A)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(TEST_CFLAGS) $(TSAN_CFLAGS) -Ilib -o $@ $< $(TSAN_A) $(LIB_LIBS) -lm

# ---------------------------------------------------------------- fuzzers

# libFuzzer targets (selftests/fuzz/): the library's parsers, plan +
# validate + exact, and metadef-plan's input handling. Built with Debian's
# clang under ASan and UBSan; the library sources are compiled in again
# with the same instrumentation (not libmetadef.a). tools/check runs each
# for FUZZ_SECONDS (25) in its fuzz-lib tier; make fuzz-lib for longer.
FUZZ_CC		?= clang-14
FUZZ_SECONDS	?= 300
FUZZ_TARGETS	:= csv graph size plan cli onnx
FUZZ_BINS	:= $(FUZZ_TARGETS:%=$(B)/fuzz/%_fuzz)
FUZZ_SAN	:= -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS	:= -O1 -g -fno-omit-frame-pointer $(FUZZ_SAN)
FUZZ_A		:= $(B)/fuzz/libmetadef-fuzz.a
FUZZ_CLI_OBJS	:= $(patsubst tools/plan/%.c,$(B)/fuzz/plan/%.o,$(wildcard tools/plan/*.c))

.PHONY: fuzz-lib-build fuzz-lib check-fuzz-lib
fuzz-lib-build: $(FUZZ_BINS) $(B)/fuzz/onnx_seeds

# The writer of selftests/fuzz/seeds/onnx/*.onnx; selftests/fuzz/run checks
# that it still writes the committed seeds.
$(B)/fuzz/onnx_seeds: selftests/fuzz/onnx_seeds.c selftests/lib/onnx_build.h \
		      $(GEN)/onnx.pb-c.c $(GEN)/onnx.pb-c.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Iinclude -I$(GEN) -Iselftests/lib -o $@ $< \
		$(GEN)/onnx.pb-c.c -lprotobuf-c

$(B)/fuzz/lib/%.o: lib/%.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(LIB_CFLAGS) -c -o $@ $<

$(B)/fuzz/gen/%.o: $(B)/gen/%.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(LIB_CFLAGS) -c -o $@ $<
$(B)/fuzz/lib/onnx.o $(B)/fuzz/lib/onnx_shape.o: $(GEN)/onnx.pb-c.h

$(FUZZ_A): $(LIB_SRCS:lib/%.c=$(B)/fuzz/lib/%.o) $(B)/fuzz/gen/onnx.pb-c.o
	rm -f $@
	$(AR) rcs $@ $^

# metadef-plan with its main() renamed, for cli_fuzz.
$(B)/fuzz/plan/%.o: tools/plan/%.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(MD_CFLAGS) \
		-Dmain=plan_cli_main -c -o $@ $<

$(B)/fuzz/cli_fuzz: $(FUZZ_CLI_OBJS)
# onnx_fuzz builds models from recipes with the host tests' builder.
$(B)/fuzz/onnx_fuzz: $(GEN)/onnx.pb-c.h selftests/lib/onnx_build.h
$(B)/fuzz/%_fuzz: selftests/fuzz/%_fuzz.c selftests/fuzz/fuzz.h $(FUZZ_A)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer \
		$(filter-out -MMD -MP,$(MD_CFLAGS)) -Ilib -I$(GEN) -Iselftests/lib \
		-o $@ $< $(filter %.o,$^) $(FUZZ_A) $(LIB_LIBS)

# Every target for FUZZ_SECONDS (default 300) each, from the cached corpora.
fuzz-lib: fuzz-lib-build
	FUZZ_SECONDS=$(FUZZ_SECONDS) selftests/fuzz/run

check-fuzz-lib:
	tools/check fuzz-lib

# ctl_test runs metadefctl in the VM (tools/check passes it in as /bin/metadefctl).
$(B)/selftests/kmod/ctl_test: $(B)/bin/metadefctl

# The caching allocator model of the footprint report is bench code
# (tools/bench/caching.c): its test is built with it.
$(B)/selftests/lib/caching_test: selftests/lib/caching_test.c tools/bench/caching.c \
		tools/bench/caching.h $(KSFT_HDR) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(TEST_CFLAGS) -Ilib -Itools/bench -o $@ \
		$(filter %.c,$^) $(LIB_A) $(LIB_LIBS)

# The bench harness (tools/bench/harness.c) is bench code: its test is
# built with it; bench_report_test.sh runs tools/bench/report and lib.sh.
$(B)/selftests/lib/bench_harness_test: selftests/lib/bench_harness_test.c \
		$(BENCH_HARNESS) $(KSFT_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(TEST_CFLAGS) -Itools/bench -o $@ \
		$(filter %.c,$^) -lm

# The footprint report's smoke test runs models_bench --quick (and it
# metadef-plan) on the graphs in the source tree and a small ONNX model
# from metadef-models.
$(B)/selftests/lib/models_bench_test: selftests/lib/models_bench_test.c $(KSFT_HDR) \
		$(B)/bench/models_bench $(B)/bin/metadef-plan $(B)/bin/metadef-models
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(TEST_CFLAGS) -Ilib -DMD_SRCDIR='"$(CURDIR)"' -o $@ $<

# The real-model demo, on the host backend.
$(B)/selftests/lib/demo_models_test: $(B)/demo/models $(B)/bin/metadef-models

# plan_test checks the bench's scale shapes (tools/bench/shapes.h).
$(B)/selftests/lib/plan_test: TEST_CFLAGS += -Itools/bench

# The CLI test runs the tool: build it with the host tests.
$(B)/selftests/lib/plan_cli_test: $(B)/bin/metadef-plan
# The ONNX tests build their models with the generated protobuf-c structs.
$(B)/selftests/lib/onnx_test $(B)/selftests/lib/plan_cli_test: $(GEN)/onnx.pb-c.h
$(B)/selftests/lib/exact_cli_test: $(B)/bin/metadef-plan
# traces_test runs tracegen, the models generator and the planner.
$(B)/selftests/lib/traces_test: $(B)/bench/tracegen $(B)/bin/metadef-models \
		$(B)/bin/metadef-plan
# models_test runs the generator, the planner and models_check.py (in the
# source tree, with /usr/bin/python3's onnx).
$(B)/selftests/lib/models_test: $(B)/bin/metadef-models $(B)/bin/metadef-plan
$(B)/selftests/lib/models_test: TEST_CFLAGS += \
	-DMODELS_CHECK='"$(CURDIR)/selftests/lib/models_check.py"'

# ---------------------------------------------------------------- tests

# Every tier writes RESULT lines to $(B)/results/<tier>.txt; tools/check
# runs them all and prints the one summary line.
check:
	tools/check all

check-host:
	tools/check host

check-vm:
	tools/check vm

check-debug:
	tools/check debug

# The vm tier's kselftests on Debian's 5.10, 6.12 (bookworm-backports and
# trixie) and 7.3 kernels, fetched into the cache (tools/vm/kernel-fetch).
check-matrix:
	tools/check matrix

# The fuzzer (selftests/kmod/fuzz_test.c) for 10^6 ioctls in one boot of
# Debian's kernel (a couple of minutes under TCG); METADEF_FUZZ_KERNEL=debug
# boots the KASAN/lockdep kernel instead if tools/vm/build-kernel has it
# cached (it is never built for this): 500-2000 calls/s, 10-30 minutes.
check-fuzz:
	tools/check fuzz

demo:
	tools/demo/run

# The real-model tenants (tools/demo/models.c): libmetadef's ONNX import
# and arenas, and the bench's model of a caching allocator beside them.
$(B)/demo/models: tools/demo/models.c tools/bench/caching.c tools/bench/caching.h $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(MD_CFLAGS) -Ilib -o $@ $(filter %.c,$^) $(LIB_A) $(LIB_LIBS)

# The demo's region and runtime walk-throughs (run inside the VM; not
# installed).
$(B)/demo/region $(B)/demo/runtime: $(B)/demo/%: tools/demo/%.c $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(MD_CFLAGS) -o $@ $< $(LIB_A) $(LIB_LIBS)

# Every bench, one after the other, each continuing after a failed one;
# each writes its goal rows to $(BENCH_RESULTS)/NAME.tsv through the
# harness (tools/bench/harness.[ch], tools/bench/lib.sh) and its exit
# status to $(BENCH_RESULTS)/status. tools/bench/report then prints one
# table of every goal, peer, ratio and verdict and fails (exit 1) when a
# goal was missed or not judged or a bench did not run.
# make bench-readme writes that table into README.md.
BENCHES		:= buddy copy plan exact scale dynamic alloc models
BENCH_RESULTS	?= $(B)/bench/results
export BENCH_RESULTS
# The peers' binaries and the benchmark files (read-only): beside the
# repository by default; SHARED=/path for a worktree kept elsewhere.
SHARED		?= $(abspath $(CURDIR)/../shared)
export SHARED

bench:
	@mkdir -p $(BENCH_RESULTS)
	@rm -f $(BENCH_RESULTS)/*.tsv $(BENCH_RESULTS)/status
	@for b in $(BENCHES); do \
		echo "=== make bench-$$b"; \
		$(MAKE) --no-print-directory bench-$$b; \
		echo "$$b $$?" >>$(BENCH_RESULTS)/status; \
	done
	tools/bench/report $(BENCH_RESULTS)

.PHONY: bench-readme bench-report
bench-report:
	tools/bench/report $(BENCH_RESULTS)

bench-readme:
	tools/bench/report --readme README.md $(BENCH_RESULTS)

# The offset planner against TFLite's greedy-by-size, XLA's best-fit heap
# and MiniMalloc (../shared/peers) on ../shared/bench, random families and
# tools/plan/examples; then every shape at 10^5 and 10^6 buffers.
bench-plan: $(B)/bench/plan_bench
	$(B)/bench/plan_bench $(SHARED)/bench/minimalloc-challenging \
		tools/plan/examples $(SHARED)/peers/minimalloc/bin/minimalloc

$(B)/bench/plan_bench: tools/bench/plan_bench.c tools/bench/shapes.h \
		$(BENCH_HARNESS) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(BENCH_CFLAGS) -o $@ $(filter %.c,$^) $(LIB_A) $(LIB_LIBS) -lm

# The exact planner on the MiniMalloc problems at their known capacities
# (against MiniMalloc's published times) and on random problems.
# MiniMalloc, run here, against the exact planner on generated problems
# whose answer is known (EXACT_COUNT of them, EXACT_LIMIT s each).
EXACT_COUNT	?= 120
EXACT_LIMIT	?= 10
bench-exact: $(B)/bench/exact_bench
	$(B)/bench/exact_bench -n $(EXACT_COUNT) -t $(EXACT_LIMIT) \
		-m $(SHARED)/peers/minimalloc/bin/minimalloc \
		-d $(SHARED)/bench/minimalloc-challenging

$(B)/bench/exact_bench: tools/bench/exact_bench.c tools/bench/cutgen.c tools/bench/cutgen.h \
		$(BENCH_HARNESS) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(BENCH_CFLAGS) -o $@ $(filter %.c,$^) $(LIB_A) $(LIB_LIBS) -lm

# The planners on compiler-shaped traces of 10^4-10^5 buffers
# (tools/bench/tracegen) against idealloc and MiniMalloc (../shared/peers),
# run here: heuristic, --minimize at SCALE_SHORT and SCALE_LONG seconds.
.PHONY: bench-scale
bench-scale: $(B)/bench/tracegen $(B)/bin/metadef-plan
	tools/bench/scale-bench

$(B)/bench/tracegen: tools/bench/tracegen.c lib/random.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(BENCH_CFLAGS) -o $@ $<

# A fingerprint of the exact planner's answers and searches (node counts
# included) on a fixed set of problems, with node budgets instead of time
# limits: a change to lib/exact*.c that must not change behaviour (a
# refactor) leaves it as it was. Not part of bench or check.
.PHONY: exact-equiv
exact-equiv: $(B)/bench/exact_equiv
	$(B)/bench/exact_equiv

$(B)/bench/exact_equiv: tools/bench/exact_equiv.c tools/bench/cutgen.c tools/bench/cutgen.h \
		$(BENCH_HARNESS) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(BENCH_CFLAGS) -o $@ $(filter %.c,$^) $(LIB_A) $(LIB_LIBS) -lm

# The dynamic pool on a detection-like trace of varying input sizes, against
# a region per tensor and a planned region per request (host backend).
.PHONY: bench-dynamic
bench-dynamic: $(B)/bench/dynamic_bench
	$(B)/bench/dynamic_bench

$(B)/bench/dynamic_bench: tools/bench/dynamic_bench.c $(BENCH_HARNESS) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(BENCH_CFLAGS) -o $@ $(filter %.c,$^) $(LIB_A) $(LIB_LIBS) -lm

# The footprint report: per workload, device memory without reuse, under a
# model of PyTorch's caching allocator (tools/bench/caching.c), metadef's
# heuristic and exact plans and the lower bound; goals checked; the table
# in $(B)/bench/models/report.md, an SVG per plan beside it. MODELS_LIMIT:
# seconds of exact planning per model. The real models come from a package
# (tools/bench/models-fetch); ONNX Runtime, the inference rows' peer, runs
# in a trixie root (tools/bench/ort-peer --build makes it once): when it
# cannot be made, the bench says why and fails.
MODELS_LIMIT	?= 15
.PHONY: bench-models
bench-models: $(B)/bench/models_bench $(B)/bin/metadef-plan $(B)/bench/dynamic_bench \
		$(B)/bin/metadef-models
	tools/bench/models-gen $(B)/bin/metadef-models $(B)/bench/models/in
	tools/bench/models-fetch $(B)/bench/models/in
	-tools/bench/ort-peer --build
	$(B)/bench/models_bench -t $(MODELS_LIMIT) -m $(B)/bench/models/in \
		-o $(B)/bench/models --dynamic $(B)/bench/dynamic_bench \
		--ort tools/bench/ort-peer

$(B)/bench/models_bench: tools/bench/models_bench.c tools/bench/caching.c \
		tools/bench/caching.h $(BENCH_HARNESS) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(BENCH_CFLAGS) -o $@ $(filter %.c,$^) $(LIB_A) $(LIB_LIBS) -lm

# The tiered pools' alloc+free latency against glibc malloc, jemalloc and
# mimalloc (dlopen()ed when installed: tools/deps.sh bench), same traces.
# Fails (exit 1) when a goal of issue 17 is not met, (exit 3) when jemalloc
# or mimalloc is missing.
.PHONY: bench-alloc
bench-alloc: $(B)/bench/alloc_bench
	$(B)/bench/alloc_bench

$(B)/bench/alloc_bench: tools/bench/alloc_bench.c $(BENCH_HARNESS) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(BENCH_CFLAGS) -o $@ $(filter %.c,$^) $(LIB_A) $(LIB_LIBS) -ldl -lm

# metadef's buddy allocator against the kernel's drm_buddy, in one VM run.
bench-buddy:
	tools/bench/buddy-bench

# The copy engine (kmod/mmu.c) against memcpy() of the same bytes, in a VM.
.PHONY: bench-copy
bench-copy:
	tools/bench/copy-bench

# ---------------------------------------------------------------- install

install: lib tools
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR) \
		$(DESTDIR)$(INCLUDEDIR)/metadef $(DESTDIR)$(INCLUDEDIR)/linux \
		$(DESTDIR)$(BINDIR)
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(LIB_SO)) $(DESTDIR)$(LIBDIR)/$(LIB_SONAME)
	ln -sf $(LIB_SONAME) $(DESTDIR)$(LIBDIR)/libmetadef.so
	install -m 644 include/metadef/*.h $(DESTDIR)$(INCLUDEDIR)/metadef/
	install -m 644 include/uapi/linux/metadef.h $(DESTDIR)$(INCLUDEDIR)/linux/
	install -m 644 $(B)/metadef.pc $(DESTDIR)$(PKGCONFIGDIR)/
	install -m 755 $(TOOLS) $(DESTDIR)$(BINDIR)/
	install -D -m 644 tools/udev/60-metadef.rules \
		$(DESTDIR)$(UDEVDIR)/60-metadef.rules
	install -D -m 644 tools/man/metadefctl.8 $(DESTDIR)$(MANDIR)/man8/metadefctl.8
	install -D -m 644 tools/man/metadef-plan.1 $(DESTDIR)$(MANDIR)/man1/metadef-plan.1

# INSTALL_MOD_PATH (a staging root) reaches depmod too: never the
# machine's own /lib/modules when installing elsewhere.
modules_install:
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules_install
	depmod $(if $(INSTALL_MOD_PATH),-b $(INSTALL_MOD_PATH)) -A \
		$(shell sed -n 's/^\#define UTS_RELEASE "\(.*\)"/\1/p' \
		$(KDIR)/include/generated/utsrelease.h) 2>/dev/null || true

# The module's sources and dkms.conf for DKMS, which rebuilds metadef.ko
# on every kernel upgrade: make dkms-source; dkms install metadef/$(VERSION)
DKMS_SRC	?= /usr/src/metadef-$(VERSION)
.PHONY: dkms-source
dkms-source:
	install -d $(DESTDIR)$(DKMS_SRC)
	cp -r --no-preserve=ownership Kbuild include $(DESTDIR)$(DKMS_SRC)/
	install -d $(DESTDIR)$(DKMS_SRC)/kmod $(DESTDIR)$(DKMS_SRC)/kmod/tests
	install -m 644 kmod/Kbuild $(filter-out %.mod.c,$(wildcard kmod/*.c)) kmod/*.h \
		$(DESTDIR)$(DKMS_SRC)/kmod/
	install -m 644 kmod/tests/Kbuild $(filter-out %.mod.c,$(wildcard kmod/tests/*.c)) \
		$(DESTDIR)$(DKMS_SRC)/kmod/tests/
	sed 's/@VERSION@/$(VERSION)/' tools/dkms/dkms.conf >$(DESTDIR)$(DKMS_SRC)/dkms.conf

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libmetadef.a \
		$(DESTDIR)$(LIBDIR)/libmetadef.so.$(VERSION) \
		$(DESTDIR)$(LIBDIR)/$(LIB_SONAME) \
		$(DESTDIR)$(LIBDIR)/libmetadef.so \
		$(DESTDIR)$(PKGCONFIGDIR)/metadef.pc \
		$(DESTDIR)$(UDEVDIR)/60-metadef.rules \
		$(DESTDIR)$(MANDIR)/man8/metadefctl.8 \
		$(DESTDIR)$(MANDIR)/man1/metadef-plan.1 \
		$(DESTDIR)$(INCLUDEDIR)/linux/metadef.h \
		$(addprefix $(DESTDIR)$(BINDIR)/,$(notdir $(TOOLS))) \
		$(addprefix $(DESTDIR)$(INCLUDEDIR)/metadef/,$(notdir $(wildcard include/metadef/*.h)))
	-rmdir $(DESTDIR)$(INCLUDEDIR)/metadef 2>/dev/null

clean:
	rm -rf $(B)
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean 2>/dev/null || \
		find kmod \( -name '*.o' -o -name '*.ko' -o -name '*.mod*' \
			-o -name '.*.cmd' -o -name 'modules.order' \) -delete
	rm -f Module.symvers modules.order

-include $(LIB_OBJS:.o=.d) $(wildcard $(B)/lib-tsan/*.d $(B)/selftests/*/*.d \
	   $(B)/bin/*.d $(B)/models/*.d $(B)/fuzz/lib/*.d $(B)/fuzz/plan/*.d)
