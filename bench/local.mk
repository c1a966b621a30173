# bench/: `make bench` (issue 5), never part of make check. Builds the
# hot-loop target and ubt, then runs bench/run, which prints the table.
# BENCH_FLAGS passes options to bench/run (bench/run --help).
EXTRA_PROGRAMS = bench/ubt-hotloop
CLEANFILES += $(EXTRA_PROGRAMS)
EXTRA_DIST += \
	bench/README.md \
	bench/coverage.py \
	bench/metrics.py \
	bench/pause.py \
	bench/run
# plain -O2 code, no sanitizers: the loop must measure the call only
bench_ubt_hotloop_SOURCES = \
	bench/floor.c \
	bench/floor.h \
	bench/hotloop.c
bench_ubt_hotloop_CFLAGS = -std=gnu11 -Wall -Wextra -O2 -g \
	-fno-omit-frame-pointer -pthread
bench_ubt_hotloop_LDFLAGS = -pthread

bench: bench/ubt-hotloop$(EXEEXT) ubt$(EXEEXT) \
		tests/targets/ubt-many$(EXEEXT) tests/targets/ubt-loop$(EXEEXT)
	/usr/bin/python3 $(srcdir)/bench/run --ubt ./ubt$(EXEEXT) \
		--hotloop bench/ubt-hotloop$(EXEEXT) \
		--many tests/targets/ubt-many$(EXEEXT) $(BENCH_FLAGS)
	/usr/bin/python3 $(srcdir)/bench/coverage.py --ubt ./ubt$(EXEEXT) \
		--target bench/ubt-hotloop$(EXEEXT)
.PHONY: bench
