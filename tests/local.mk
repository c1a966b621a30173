# Tests: see tests/README.md. Each entry in TESTS prints TAP.

# Target programs the runtime corpus traces (tests/targets/*.c): plain
# code, built without sanitizers, no inlining, frame pointers.
UBT_TARGET_CFLAGS = -O1 -g -fno-inline -fno-omit-frame-pointer
check_PROGRAMS += \
	tests/targets/libubt-many.so \
	tests/targets/libubt-target.so \
	tests/targets/ubt-alt \
	tests/targets/ubt-calls \
	tests/targets/ubt-churn \
	tests/targets/ubt-classes \
	tests/targets/ubt-cover \
	tests/targets/ubt-cold \
	tests/targets/ubt-dwsplit \
	tests/targets/ubt-dwtypes \
	tests/targets/ubt-exc \
	tests/targets/ubt-ldlock \
	tests/targets/ubt-libuser \
	tests/targets/ubt-loop \
	tests/targets/ubt-many \
	tests/targets/ubt-nofp \
	tests/targets/ubt-nosys \
	tests/targets/ubt-patch \
	tests/targets/ubt-sacred \
	tests/targets/ubt-share \
	tests/targets/ubt-sigjmp \
	tests/targets/ubt-sites \
	tests/targets/ubt-spawn \
	tests/targets/ubt-static \
	tests/targets/ubt-strs \
	tests/targets/ubt-threads \
	tests/targets/ubt-types \
	tests/targets/ubt-vfork \
	tests/targets/ubt-wait \
	tests/targets/ubt-watch
EXTRA_DIST += tests/targets/target.h
# 500 functions written out by the preprocessor (uprobe:LIB:*, issue 15)
tests_targets_libubt_many_so_SOURCES = tests/targets/libmany.c
tests_targets_libubt_many_so_CFLAGS = $(UBT_TARGET_CFLAGS) -fPIC
tests_targets_libubt_many_so_LDFLAGS = -shared \
	-Wl,-soname,libubt-many.so
tests_targets_libubt_target_so_SOURCES = tests/targets/libtarget.c
tests_targets_libubt_target_so_CFLAGS = $(UBT_TARGET_CFLAGS) -fPIC
tests_targets_libubt_target_so_LDFLAGS = -shared \
	-Wl,-soname,libubt-target.so
tests_targets_ubt_alt_SOURCES = tests/targets/alt.c
tests_targets_ubt_alt_CFLAGS = $(UBT_TARGET_CFLAGS)
tests_targets_ubt_alt_LDFLAGS =
tests_targets_ubt_alt_LDADD = -lpthread
tests_targets_ubt_calls_SOURCES = tests/targets/calls.c
tests_targets_ubt_calls_CFLAGS = $(UBT_TARGET_CFLAGS)
tests_targets_ubt_calls_LDFLAGS =
tests_targets_ubt_churn_SOURCES = tests/targets/churn.c
tests_targets_ubt_churn_CFLAGS = $(UBT_TARGET_CFLAGS)
tests_targets_ubt_churn_LDFLAGS =
tests_targets_ubt_churn_LDADD = -lpthread
# C++: exceptions, pthread_exit and backtrace() through wrapped calls;
# -rdynamic so that dladdr() names main; ubt_exc_deep stays recursive
tests_targets_ubt_dwtypes_SOURCES = tests/targets/dwtypes.c
tests_targets_ubt_dwtypes_CFLAGS = $(UBT_TARGET_CFLAGS)
tests_targets_ubt_dwtypes_LDFLAGS =
# ubt-dwsplit: ubt-dwtypes with split DWARF: its functions and types in
# a .dwo file beside its object, named by a skeleton unit (v0.26's DWO
# case)
tests_targets_ubt_dwsplit_SOURCES = tests/targets/dwtypes.c
tests_targets_ubt_dwsplit_CFLAGS = $(UBT_TARGET_CFLAGS) -gsplit-dwarf
tests_targets_ubt_dwsplit_LDFLAGS =
CLEANFILES += tests/targets/*.dwo
# ubt-dwstrip: ubt-dwtypes stripped, its symbols and DWARF in
# ubt-dwstrip.debug, found through .gnu_debuglink
check_SCRIPTS += tests/targets/ubt-dwstrip
CLEANFILES += tests/targets/ubt-dwstrip tests/targets/ubt-dwstrip.debug
tests/targets/ubt-dwstrip: tests/targets/ubt-dwtypes$(EXEEXT)
	$(AM_V_GEN)$(OBJCOPY) --only-keep-debug $< $@.debug && \
	$(OBJCOPY) --strip-all --add-gnu-debuglink=$@.debug $< $@
# C++ classes with base classes (types from DWARF)
tests_targets_ubt_classes_SOURCES = tests/targets/classes.cc
tests_targets_ubt_classes_CXXFLAGS = $(UBT_TARGET_CFLAGS)
# C++ at -O2: thrower() has a .cold part (tests/user/sacred.sh)
tests_targets_ubt_cold_SOURCES = tests/targets/cold.cc
tests_targets_ubt_cold_CXXFLAGS = -O2 -g
tests_targets_ubt_exc_SOURCES = tests/targets/exc.cc
tests_targets_ubt_exc_CXXFLAGS = $(UBT_TARGET_CFLAGS) -fno-optimize-sibling-calls
tests_targets_ubt_exc_LDFLAGS = -rdynamic
tests_targets_ubt_exc_LDADD = -lpthread
# signal handlers that siglongjmp() or throw out of wrapped calls
tests_targets_ubt_sigjmp_SOURCES = tests/targets/sigjmp.cc
tests_targets_ubt_sigjmp_CXXFLAGS = $(UBT_TARGET_CFLAGS)
tests_targets_ubt_libuser_SOURCES = tests/targets/libuser.c
tests_targets_ubt_libuser_CFLAGS = $(UBT_TARGET_CFLAGS)
tests_targets_ubt_libuser_LDFLAGS = -Wl,-rpath,'$$ORIGIN'
tests_targets_ubt_libuser_LDADD = tests/targets/libubt-target.so
tests_targets_ubt_many_SOURCES = tests/targets/many.c
tests_targets_ubt_many_CFLAGS = $(UBT_TARGET_CFLAGS)
tests_targets_ubt_many_LDFLAGS = -Wl,-rpath,'$$ORIGIN'
tests_targets_ubt_many_LDADD = tests/targets/libubt-many.so -lpthread
tests_targets_ubt_nosys_SOURCES = tests/targets/nosys.c
tests_targets_ubt_nosys_CFLAGS = $(UBT_TARGET_CFLAGS)
tests_targets_ubt_nosys_LDFLAGS =
tests_targets_ubt_nosys_LDADD = -lpthread
tests_targets_ubt_loop_SOURCES = tests/targets/loop.c
tests_targets_ubt_loop_CFLAGS = $(UBT_TARGET_CFLAGS)
tests_targets_ubt_loop_LDFLAGS =
tests_targets_ubt_nofp_SOURCES = tests/targets/nofp.c
tests_targets_ubt_nofp_CFLAGS = $(UBT_TARGET_CFLAGS) -fomit-frame-pointer \
	-mno-red-zone
tests_targets_ubt_nofp_LDFLAGS =
tests_targets_ubt_spawn_SOURCES = tests/targets/spawn.c
tests_targets_ubt_spawn_CFLAGS = $(UBT_TARGET_CFLAGS)
tests_targets_ubt_spawn_LDFLAGS =
# tests/user/cover.py: entries user mode used to refuse (issue 26)
tests_targets_ubt_cover_SOURCES = tests/targets/cover.c
tests_targets_ubt_cover_CFLAGS = $(UBT_TARGET_CFLAGS)
tests_targets_ubt_cover_LDFLAGS =
# tests/user/ldlock.py: a thread holds the loader's lock (issue 25)
tests_targets_ubt_ldlock_SOURCES = tests/targets/ldlock.c
tests_targets_ubt_ldlock_CFLAGS = $(UBT_TARGET_CFLAGS)
tests_targets_ubt_ldlock_LDFLAGS =
tests_targets_ubt_ldlock_LDADD = -lpthread -ldl
tests_targets_ubt_share_SOURCES = tests/targets/share.c
tests_targets_ubt_share_CFLAGS = $(UBT_TARGET_CFLAGS)
tests_targets_ubt_share_LDFLAGS =
tests_targets_ubt_patch_SOURCES = tests/targets/patch.c
tests_targets_ubt_patch_CFLAGS = $(UBT_TARGET_CFLAGS)
tests_targets_ubt_patch_LDFLAGS =
# CLONE_VM children: clone, vfork, posix_spawn (tests/user/sacred-vfork.sh)
tests_targets_ubt_vfork_SOURCES = tests/targets/vfork.c
tests_targets_ubt_vfork_CFLAGS = $(UBT_TARGET_CFLAGS)
tests_targets_ubt_vfork_LDFLAGS =
# processes ubt did not expect (issue 24): tests/user/sacred.sh
tests_targets_ubt_sacred_SOURCES = tests/targets/sacred.c
tests_targets_ubt_sacred_CFLAGS = $(UBT_TARGET_CFLAGS)
tests_targets_ubt_sacred_LDFLAGS =
tests_targets_ubt_sacred_LDADD = -lpthread
# the same, linked statically: no libc in the process (tests/user/sacred-static.sh)
tests_targets_ubt_static_SOURCES = tests/targets/sacred.c
tests_targets_ubt_static_CFLAGS = $(UBT_TARGET_CFLAGS)
tests_targets_ubt_static_LDFLAGS = -static
tests_targets_ubt_static_LDADD = -lpthread
tests_targets_ubt_sites_SOURCES = tests/targets/sites.c
tests_targets_ubt_sites_CFLAGS = $(UBT_TARGET_CFLAGS)
tests_targets_ubt_sites_LDFLAGS =
tests_targets_ubt_strs_SOURCES = tests/targets/strs.c
tests_targets_ubt_strs_CFLAGS = $(UBT_TARGET_CFLAGS)
tests_targets_ubt_strs_LDFLAGS =
tests_targets_ubt_threads_SOURCES = tests/targets/threads.c
tests_targets_ubt_threads_CFLAGS = $(UBT_TARGET_CFLAGS)
tests_targets_ubt_threads_LDFLAGS =
tests_targets_ubt_threads_LDADD = -lpthread
tests_targets_ubt_types_SOURCES = tests/targets/types.c
tests_targets_ubt_types_CFLAGS = $(UBT_TARGET_CFLAGS)
tests_targets_ubt_types_LDFLAGS =
tests_targets_ubt_wait_SOURCES = tests/targets/wait.c
tests_targets_ubt_wait_CFLAGS = $(UBT_TARGET_CFLAGS)
tests_targets_ubt_wait_LDFLAGS =
# not PIE: watchpoints on a global's address from nm
tests_targets_ubt_watch_SOURCES = tests/targets/watch.c
tests_targets_ubt_watch_CFLAGS = $(UBT_TARGET_CFLAGS) -fno-pie
tests_targets_ubt_watch_LDFLAGS = -no-pie
if HAVE_SDT
check_PROGRAMS += tests/targets/ubt-usdt
tests_targets_ubt_usdt_SOURCES = tests/targets/usdt.c
tests_targets_ubt_usdt_CFLAGS = $(UBT_TARGET_CFLAGS)
tests_targets_ubt_usdt_LDFLAGS =
endif

# CLI tests (tests/cli/): command-line misuse and use, the man page, long
# tokens and deep nesting, compile time against the number of statements.
UBT_CLI_TESTS = \
	tests/cli/cmdline.sh \
	tests/cli/compile-scale.py \
	tests/cli/layering.sh \
	tests/cli/long-tokens.sh \
	tests/cli/man-examples.sh \
	tests/cli/manpage.sh \
	tests/cli/nofile.sh \
	tests/cli/nonroot.sh \
	tests/cli/output-file.sh \
	tests/cli/sigint-compile.sh \
	tests/cli/sigint-drain.sh \
	tests/cli/sigint-load.sh
TESTS += $(UBT_CLI_TESTS) tests/cli/unit-cli
EXTRA_DIST += $(UBT_CLI_TESTS) tests/cli/tap.sh
check_PROGRAMS += tests/cli/unit-cli
tests_cli_unit_cli_SOURCES = tests/cli/unit-cli.c
tests_cli_unit_cli_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tools
tests_cli_unit_cli_LDADD = $(UBT_LIBS)

# The end of a -c command (shim/process/child.c): seen and brought about in bounds.
check_PROGRAMS += tests/unit-child
TESTS += tests/unit-child
tests_unit_child_SOURCES = tests/unit-child.c
tests_unit_child_LDADD = $(UBT_LIBS)

# Output formatting: printf, maps, hist/lhist, JSON (shim/output/output.c).
check_PROGRAMS += tests/unit-output
TESTS += tests/unit-output
tests_unit_output_SOURCES = tests/unit-output.c
tests_unit_output_LDADD = $(UBT_LIBS)

# Kernel and user-mode events in time order (shim/base/merge.c): the queue's
# order, the time-stamp counter (where it is a clock) and the fallback,
# the runtime's vDSO clock (everywhere), against clock_gettime and the
# kernel.
check_PROGRAMS += tests/unit-merge
TESTS += tests/unit-merge
tests_unit_merge_SOURCES = tests/unit-merge.c
tests_unit_merge_LDADD = $(UBT_LIBS) -ldl

# Probes: ELF symbols, USDT notes, targets, wildcards, tracepoint args
# (probes/, frontend/tracepoint.c) and `ubt -l` against bpftrace.
check_PROGRAMS += \
	tests/probes/probes-target \
	tests/unit-probes
TESTS += \
	tests/probes-list.sh \
	tests/unit-probes
EXTRA_DIST += tests/probes-list.sh
tests_probes_probes_target_SOURCES = \
	tests/probes/target-sem.c \
	tests/probes/target.c
tests_probes_probes_target_CFLAGS = -O2 -g -fno-inline
tests_unit_probes_SOURCES = \
	tests/tap.c \
	tests/tap.h \
	tests/unit-probes.c
tests_unit_probes_LDADD = $(UBT_LIBS)

# Where the runtime comes from (shim/user/rtpath.c): only a file root alone
# can have written; the build tree's copy, or the installed one.
check_PROGRAMS += tests/unit-rtpath
TESTS += \
	tests/rtpath.sh \
	tests/unit-rtpath
EXTRA_DIST += tests/rtpath.sh
tests_unit_rtpath_SOURCES = \
	tests/tap.c \
	tests/tap.h \
	tests/unit-rtpath.c
tests_unit_rtpath_LDADD = $(UBT_LIBS)

# User mode (shim/process/ptrace.c patch.c tramp.c memfd.c user.c, runtime/):
# attach, patch, trampolines, per-thread blocks, detach, with native blobs.
check_PROGRAMS += \
	tests/user/exiting \
	tests/user/lockhold \
	tests/user/parked \
	tests/user/scribble \
	tests/user/target \
	tests/user/test-user \
	tests/user/umulti \
	tests/user/unit-aggiter \
	tests/user/unit-corrupt \
	tests/user/unit-memfd \
	tests/user/unit-shadow \
	tests/user/unit-shtab \
	tests/user/unit-tramp
TESTS += \
	tests/user/corrupt.sh \
	tests/user/cover.py \
	tests/user/exiting.py \
	tests/user/fork-leave.py \
	tests/user/group-kill.py \
	tests/user/hold.sh \
	tests/user/kept-ret.py \
	tests/user/killed-memory.py \
	tests/user/kill-stress.py \
	tests/user/ldlock.py \
	tests/user/lock-wait.sh \
	tests/user/mem-sessions.py \
	tests/user/no-alias.py \
	tests/user/pipe-sigint.py \
	tests/user/race.py \
	tests/user/sacred-libc.sh \
	tests/user/sacred-mntns.sh \
	tests/user/sacred-pidns.sh \
	tests/user/sacred-progress.py \
	tests/user/sacred-static.sh \
	tests/user/sacred-storm.sh \
	tests/user/sacred-syswide.sh \
	tests/user/sacred-threads.sh \
	tests/user/sacred-uring.sh \
	tests/user/sacred-vfork.sh \
	tests/user/sacred.sh \
	tests/user/share.py \
	tests/user/stop-late.sh \
	tests/user/call-stops.sh \
	tests/user/sigjmp.py \
	tests/user/stale-call.py \
	tests/user/stray-killed.py \
	tests/user/stray-memfd.py \
	tests/user/syswide-kill.py \
	tests/user/sysw-share.py \
	tests/user/test-user \
	tests/user/tracer-holds.py \
	tests/user/unit-aggiter \
	tests/user/unit-corrupt \
	tests/user/unit-memfd \
	tests/user/unit-shadow \
	tests/user/unit-shtab \
	tests/user/unit-tramp \
	tests/user/unwind-detach.py \
	tests/user/unwind-far.sh \
	tests/user/unwind.sh \
	tests/user/worker-kill.py \
	tests/user/wrap-near.sh
# tests/user/worker-kill.py: 16 kills of the worker in make check,
# UBT_WORKER_KILLS=500 by hand
# tests/user/unwind.*: C++ exceptions, pthread_exit and backtrace() through
# user-mode return probes (the ubt-exc target)
EXTRA_DIST += \
	tests/user/codebytes.py \
	tests/user/corrupt.sh \
	tests/user/lock-wait.sh \
	tests/user/memfd-map.h \
	tests/user/cover.py \
	tests/user/exiting.py \
	tests/user/fork-leave.py \
	tests/user/group-kill.py \
	tests/user/hold.sh \
	tests/user/kept-ret.py \
	tests/user/killed-memory.py \
	tests/user/kill-stress.py \
	tests/user/ldlock.py \
	tests/user/mem-sessions.py \
	tests/user/no-alias.py \
	tests/user/pipe-sigint.py \
	tests/user/procmem.py \
	tests/user/race.py \
	tests/user/sacred-lib.sh \
	tests/user/sacred-libc.sh \
	tests/user/sacred-mntns.sh \
	tests/user/sacred-pidns.sh \
	tests/user/sacred-progress.py \
	tests/user/sacred-static.sh \
	tests/user/sacred-storm.sh \
	tests/user/sacred-syswide.sh \
	tests/user/sacred-threads.sh \
	tests/user/sacred-uring.sh \
	tests/user/sacred-vfork.sh \
	tests/user/sacred.sh \
	tests/user/share.py \
	tests/user/stop-late.sh \
	tests/user/call-stops.sh \
	tests/user/sigjmp.py \
	tests/user/stale-call.py \
	tests/user/stray-killed.py \
	tests/user/stray-memfd.py \
	tests/user/syswide-kill.py \
	tests/user/sysw-share.py \
	tests/user/tracer-holds.py \
	tests/user/unwind-detach.py \
	tests/user/unwind-far.sh \
	tests/user/unwind.sh \
	tests/user/unwind.test \
	tests/user/worker-kill.py \
	tests/user/wrap-near.sh
# tests/user/mem-sessions.py: two threads inside a wrapped call at a detach
tests_user_parked_SOURCES = tests/user/parked.c
tests_user_parked_CPPFLAGS = -I$(top_srcdir)/tests/targets
tests_user_parked_CFLAGS = $(UBT_TARGET_CFLAGS)
tests_user_parked_LDFLAGS =
tests_user_parked_LDADD = -lpthread
# tests/user/exiting.py: threads that exit while ubt stops them
tests_user_exiting_SOURCES = tests/user/exiting.c
tests_user_exiting_CPPFLAGS = -I$(top_srcdir)/tests/targets
tests_user_exiting_CFLAGS = $(UBT_TARGET_CFLAGS)
tests_user_exiting_LDFLAGS =
tests_user_exiting_LDADD = -lpthread
# tests/user/lock-wait.sh: a target that holds a map's insert lock
tests_user_lockhold_SOURCES = tests/user/lockhold.c
tests_user_lockhold_CPPFLAGS = -I$(top_srcdir)/runtime \
	-I$(top_srcdir)/tests/targets
tests_user_lockhold_CFLAGS = $(UBT_TARGET_CFLAGS)
tests_user_lockhold_LDFLAGS =
# tests/user/corrupt.sh: a target that writes garbage over ubt's memfd
tests_user_scribble_SOURCES = tests/user/scribble.c
tests_user_scribble_CPPFLAGS = -I$(top_srcdir)/runtime \
	-I$(top_srcdir)/tests/targets
tests_user_scribble_CFLAGS = $(UBT_TARGET_CFLAGS)
tests_user_scribble_LDFLAGS =
# share.py's uprobe_multi tracer (BPF_LINK_CREATE, as libbpf's newer API)
tests_user_umulti_SOURCES = tests/user/umulti.c
tests_user_umulti_CPPFLAGS = $(AM_CPPFLAGS) $(LIBBPF_CFLAGS)
tests_user_umulti_LDADD = $(LIBBPF_LIBS)
tests_user_target_SOURCES = tests/user/target.c
tests_user_target_CFLAGS = -O2 -pthread
tests_user_target_LDFLAGS =
tests_user_test_user_SOURCES = \
	tests/tap.c \
	tests/tap.h \
	tests/user/proc.c \
	tests/user/proc.h \
	tests/user/test-user.c
tests_user_test_user_LDADD = $(UBT_LIBS)
tests_user_unit_aggiter_SOURCES = \
	tests/tap.c \
	tests/tap.h \
	tests/user/unit-aggiter.c
tests_user_unit_aggiter_LDADD = $(UBT_LIBS) -ldl
tests_user_unit_corrupt_SOURCES = \
	tests/tap.c \
	tests/tap.h \
	tests/user/unit-corrupt.c
tests_user_unit_corrupt_LDADD = $(UBT_LIBS) -ldl
tests_user_unit_memfd_SOURCES = \
	tests/tap.c \
	tests/tap.h \
	tests/user/unit-memfd.c
tests_user_unit_memfd_LDADD = $(UBT_LIBS) -ldl
tests_user_unit_shadow_SOURCES = \
	tests/tap.c \
	tests/tap.h \
	tests/user/unit-shadow.c
tests_user_unit_shadow_LDADD = $(UBT_LIBS) -ldl
tests_user_unit_shtab_SOURCES = \
	tests/tap.c \
	tests/tap.h \
	tests/user/unit-shtab.c
tests_user_unit_shtab_LDADD = $(UBT_LIBS) -ldl
tests_user_unit_tramp_SOURCES = \
	tests/tap.c \
	tests/tap.h \
	tests/user/unit-tramp.c
tests_user_unit_tramp_LDADD = $(UBT_LIBS)

# Frontend stanzas (tests/frontend/*.test, format in tests/README.md):
# one TAP test per stanza; a new test is an appended stanza.
check_PROGRAMS += tests/frontend-test
TESTS += tests/frontend-test
EXTRA_DIST += tests/frontend
tests_frontend_test_SOURCES = tests/frontend-test.c
tests_frontend_test_LDADD = $(UBT_LIBS)

# Runtime corpus (tests/runtime/*.test, format in tests/README.md): make
# check runs the cases tests/runtime/enabled names; check-runtime runs them
# all through $(TRACER) (default ubt, TRACER=bpftrace for the reference);
# check-bpftrace compares ubt with bpftrace on every case.
TESTS += \
	tests/runtime-check.sh \
	tests/targets-check.sh
EXTRA_DIST += \
	tests/runtime \
	tests/runtime-check.sh \
	tests/runtime-runner \
	tests/targets-check.sh
UBT_RUNTIME_ENV = top_srcdir='$(abs_top_srcdir)' \
	top_builddir='$(abs_top_builddir)' UBT='$(abs_top_builddir)/ubt'
check-runtime: $(check_PROGRAMS) tests/targets/ubt-dwstrip ubt$(EXEEXT)
	$(UBT_RUNTIME_ENV) python3 $(top_srcdir)/tests/runtime-runner $(CASES)
check-bpftrace: $(check_PROGRAMS) tests/targets/ubt-dwstrip ubt$(EXEEXT)
	$(UBT_RUNTIME_ENV) python3 $(top_srcdir)/tests/runtime-runner \
		--differential $(CASES)
.PHONY: check-bpftrace check-runtime

# Semantic analysis: the typed AST and program tables (frontend/sema*.c).
check_PROGRAMS += tests/unit-sema
TESTS += tests/unit-sema
tests_unit_sema_SOURCES = tests/unit-sema.c
tests_unit_sema_CPPFLAGS = $(AM_CPPFLAGS) \
	-DUBT_BUILDDIR='"$(abs_top_builddir)"'
tests_unit_sema_LDADD = $(UBT_LIBS)

# Codegen and the kernel shim (codegen/, shim/kernel/kernel.c): a hand-built
# module loaded and attached; programs run end to end with kernel_run().
check_PROGRAMS += \
	tests/unit-codegen \
	tests/unit-kernel
TESTS += \
	tests/unit-codegen \
	tests/unit-kernel
tests_unit_codegen_SOURCES = tests/unit-codegen.c
tests_unit_codegen_CPPFLAGS = $(AM_CPPFLAGS) $(LLVM_CPPFLAGS) $(LIBBPF_CFLAGS)
tests_unit_codegen_LDADD = $(UBT_LIBS)
tests_unit_kernel_SOURCES = tests/unit-kernel.c
# the traced functions stay whole (no .cold parts matching ukt_*)
tests_unit_kernel_CFLAGS = $(AM_CFLAGS) -fno-reorder-blocks-and-partition
tests_unit_kernel_LDADD = $(UBT_LIBS)

# The tables user-mode and kernel probes share (codegen/cg_xmap.h) as ubt
# reads them back (shim/kernel/xmap.c): only what probe code can have written.
check_PROGRAMS += tests/unit-xmap
TESTS += tests/unit-xmap
tests_unit_xmap_SOURCES = \
	tests/tap.c \
	tests/tap.h \
	tests/unit-xmap.c
tests_unit_xmap_CPPFLAGS = $(AM_CPPFLAGS) $(LLVM_CPPFLAGS) $(LIBBPF_CFLAGS)
tests_unit_xmap_LDADD = $(UBT_LIBS)

# Parser fuzzer (tests/fuzz/, see tests/README.md): libFuzzer with clang.
# `make fuzz` fuzzes for FUZZ_SECONDS inputs of up to 4 KiB, then for
# FUZZ_LONG_SECONDS inputs of up to 1.1 MB grown from the long-token seeds;
# make check runs a short smoke run.
FUZZ_SECONDS = 300
FUZZ_LONG_SECONDS = 120
UBT_FUZZ_CFLAGS = -g -O1 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined
UBT_FUZZ_SRCS = \
	frontend/arena.c \
	frontend/ast.c \
	frontend/attach.c \
	frontend/compat.c \
	frontend/diag.c \
	frontend/lexer.c \
	frontend/parser.c \
	frontend/types.c \
	frontend/util.c \
	tests/fuzz/fuzz-parser.c
EXTRA_DIST += \
	tests/fuzz/bpftrace.dict \
	tests/fuzz/corpus \
	tests/fuzz/fuzz-parser.c \
	tests/fuzz/fuzz-smoke.sh
CLEANFILES += tests/fuzz/fuzz-parser
tests/fuzz/fuzz-parser: $(UBT_FUZZ_SRCS) frontend/parser.h
	@$(MKDIR_P) tests/fuzz
	$(AM_V_CC)$(FUZZ_CC) $(UBT_FUZZ_CFLAGS) -I$(top_builddir)/frontend \
		-I$(top_srcdir)/frontend -o $@ \
		`for f in $(UBT_FUZZ_SRCS); do \
			if test -f $$f; then echo $$f; \
			else echo $(srcdir)/$$f; fi; done`
fuzz: tests/fuzz/fuzz-parser
	@$(MKDIR_P) tests/fuzz/corpus-new tests/fuzz/corpus-long
	tests/fuzz/fuzz-parser -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
		-max_len=4096 -dict=$(srcdir)/tests/fuzz/bpftrace.dict \
		tests/fuzz/corpus-new $(srcdir)/tests/fuzz/corpus
	cp $(srcdir)/tests/fuzz/corpus/long-*.bt tests/fuzz/corpus-long/
	tests/fuzz/fuzz-parser -max_total_time=$(FUZZ_LONG_SECONDS) \
		-timeout=30 -max_len=1100000 -len_control=0 \
		-dict=$(srcdir)/tests/fuzz/bpftrace.dict tests/fuzz/corpus-long
.PHONY: fuzz
if HAVE_FUZZ_CC
check_SCRIPTS += tests/fuzz/fuzz-parser
TESTS += tests/fuzz/fuzz-smoke.sh
endif

# Native target and the combined run loop (codegen/native.c,
# codegen/irb_native.c, shim/run/run.c).
check_PROGRAMS += tests/native/unit-native
TESTS += tests/native/unit-native
tests_native_unit_native_SOURCES = \
	tests/native/unit-native.c \
	tests/tap.c \
	tests/tap.h \
	tests/user/proc.c \
	tests/user/proc.h
tests_native_unit_native_CPPFLAGS = $(AM_CPPFLAGS) $(LLVM_CPPFLAGS) \
	-I$(top_srcdir)/tests/user
tests_native_unit_native_LDADD = $(UBT_LIBS)
# Map key limits in user mode: the runtime's tables, ubt's reading back.
check_PROGRAMS += tests/native/unit-limits
TESTS += tests/native/unit-limits
tests_native_unit_limits_SOURCES = \
	tests/native/unit-limits.c \
	tests/tap.c \
	tests/tap.h
tests_native_unit_limits_CPPFLAGS = $(AM_CPPFLAGS) $(LLVM_CPPFLAGS)
tests_native_unit_limits_LDADD = $(UBT_LIBS) -ldl
TESTS += \
	tests/native/user-mode-diff.py \
	tests/native/user-mode-run.py
EXTRA_DIST += \
	tests/native/kernel-only.txt \
	tests/native/limits.test \
	tests/native/tslot.test \
	tests/native/uiter.test \
	tests/native/umaps.test \
	tests/native/user-mode-diff.py \
	tests/native/user-mode-run.py

# cpu and numaid in user-mode probes, both ways (rdtscp, getcpu).
TESTS += tests/native/cpu-paths.sh
EXTRA_DIST += tests/native/cpu-paths.sh

# @m[tid] in per-thread slots: which maps user mode keeps there.
TESTS += tests/native/tslot.sh
EXTRA_DIST += tests/native/tslot.sh

# nsecs in user-mode probes: the kernel's clock, both user-side clocks.
TESTS += tests/native/nsecs-clock.sh
EXTRA_DIST += tests/native/nsecs-clock.sh

# printf events of user-mode probes: rings drained, losses reported.
TESTS += tests/native/printf-events.sh
EXTRA_DIST += tests/native/printf-events.sh

# clear() of keyless aggregations while a thread hammers them: no clear
# undone by the probe's read-modify-write (shim/run/run.c struct run_agg).
TESTS += tests/native/agg-race.sh
EXTRA_DIST += tests/native/agg-race.sh

# Kernel and user-mode events merged by time: when, and under overflow.
TESTS += tests/native/merge-events.sh
EXTRA_DIST += tests/native/merge-events.sh

# A probe of several sites in user mode and the kernel at once
# (tests/runtime/sites.test): as --mode kernel, byte for byte.
TESTS += tests/native/sites-diff.py
EXTRA_DIST += tests/native/sites-diff.py

# --metrics against Debian's prometheus and promtool (issue 29).
TESTS += tests/metrics/prometheus.py
EXTRA_DIST += tests/metrics/prometheus.py

# The kernel matrix (tests/kernels/run.sh, tests/kernels/cases): the tests
# that touch the kernel, in emulated guests of Debian's 6.1 and 6.12
# (tests/kernels/vm.sh); one TAP result per case per kernel, through the
# same driver as make check (tests/kernels/run.log, run.trs).
EXTRA_DIST += tests/kernels
check-kernels: $(check_PROGRAMS) tests/targets/ubt-dwstrip ubt$(EXEEXT)
	@$(MKDIR_P) tests/kernels
	@$(LOG_DRIVER) --test-name tests/kernels/run.sh \
		--log-file tests/kernels/run.log \
		--trs-file tests/kernels/run.trs --color-tests no \
		--enable-hard-errors yes --expect-failure no -- \
		timeout -k 10 3600 env $(UBT_RUNTIME_ENV) \
		$(top_srcdir)/tests/kernels/run.sh
	@awk '$$1 == ":test-result:" { n[$$2]++ } END { \
		printf "check-kernels: %d passed, %d failed, %d skipped\n", \
		n["PASS"], n["FAIL"] + n["XPASS"] + n["ERROR"], n["SKIP"] }' \
		tests/kernels/run.trs
	@grep -q '^:global-test-result: PASS' tests/kernels/run.trs
.PHONY: check-kernels
