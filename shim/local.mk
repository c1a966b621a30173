# shim/: see DESIGN.md
libubt_a_SOURCES += \
	shim/output.c \
	shim/output.h
libubt_a_SOURCES += \
	shim/owner.c \
	shim/owner.h
libubt_a_SOURCES += \
	shim/probes.c \
	shim/probes.h
libubt_a_SOURCES += \
	shim/child.c \
	shim/child.h \
	shim/exitwatch.c \
	shim/exitwatch.h \
	shim/guard.c \
	shim/guard.h \
	shim/kernel.c \
	shim/kernel.h
libubt_a_SOURCES += \
	shim/memfd.c \
	shim/memfd.h \
	shim/merge.c \
	shim/merge.h \
	shim/patch.c \
	shim/patch.h \
	shim/ptrace.c \
	shim/ptrace.h \
	shim/rtpath.c \
	shim/rtpath.h \
	shim/tramp.c \
	shim/tramp.h \
	shim/user.c \
	shim/user.h
libubt_a_SOURCES += \
	shim/run.c \
	shim/run.h
