# tools/: the ubt command line. Everything but main() is in libubt.a.
libubt_a_SOURCES += \
	tools/cli.c \
	tools/cli.h \
	tools/driver.c \
	tools/driver.h \
	tools/info.c \
	tools/info.h

bin_PROGRAMS += ubt
ubt_SOURCES = tools/main.c
ubt_LDADD = $(UBT_LIBS)
# Drop the parts of the static LLVM libraries ubt never calls: start-up
# RSS is mostly the binary's own pages (39 instead of 42 MiB here).
ubt_LDFLAGS = $(AM_LDFLAGS) -Wl,--gc-sections

# The quick start, CI, docs and bundled scripts.
EXTRA_DIST += \
	.ci/packages \
	.ci/run \
	doc/command-line.md \
	examples/demo-target.c \
	examples/demo.bt \
	examples/io-engine.c \
	examples/io-latency.bt \
	examples/opensnoop.bt \
	examples/prometheus.yml \
	examples/readlat.bt \
	examples/syscount.bt \
	setup

# The bundled demo target of the README's quick start (built by make).
noinst_PROGRAMS += examples/demo-target
examples_demo_target_SOURCES = examples/demo-target.c
examples_demo_target_CFLAGS = $(AM_CFLAGS) -O2 -g
# The --metrics example's IO engine (examples/io-latency.bt).
noinst_PROGRAMS += examples/io-engine
examples_io_engine_SOURCES = examples/io-engine.c
examples_io_engine_CFLAGS = $(AM_CFLAGS) -O2 -g
