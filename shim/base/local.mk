# shim/base/: the leaves every stage uses: environment, signals, merge and clock (shim/base/README)
libubt_a_SOURCES += \
	shim/base/env.c \
	shim/base/env.h \
	shim/base/merge.c \
	shim/base/merge.h \
	shim/base/progress.c \
	shim/base/progress.h \
	shim/base/signals.c \
	shim/base/signals.h
