# shim/run/: the run loop: both sides driven, system-wide takes, maps and events merged (shim/run/README)
libubt_a_SOURCES += \
	shim/run/run.c \
	shim/run/run.h \
	shim/run/run_events.c \
	shim/run/run_fallback.c \
	shim/run/run_int.h \
	shim/run/run_limits.c \
	shim/run/run_maps.c \
	shim/run/run_metrics.c \
	shim/run/run_slot.c \
	shim/run/run_user.c \
	shim/run/run_xmap.c \
	shim/run/sysw.c \
	shim/run/sysw.h \
	shim/run/sysw_bpf.c \
	shim/run/sysw_bpf.h \
	shim/run/sysw_execd.c \
	shim/run/sysw_int.h \
	shim/run/sysw_share.c \
	shim/run/sysw_taken.c \
	shim/run/sysw_unseen.c
