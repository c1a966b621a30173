# shim/kernel/: the kernel side: BPF objects loaded and attached through libbpf (shim/kernel/README)
libubt_a_SOURCES += \
	shim/kernel/kernel.c \
	shim/kernel/kernel.h \
	shim/kernel/kernel_attach.c \
	shim/kernel/kernel_attach_err.c \
	shim/kernel/kernel_child.c \
	shim/kernel/kernel_display.c \
	shim/kernel/kernel_events.c \
	shim/kernel/kernel_int.h \
	shim/kernel/kernel_kprobe.c \
	shim/kernel/kernel_libbpf.c \
	shim/kernel/kernel_link.c \
	shim/kernel/kernel_load.c \
	shim/kernel/kernel_maps.c \
	shim/kernel/kernel_metrics.c \
	shim/kernel/kernel_watch.c \
	shim/kernel/stack_sym.c \
	shim/kernel/stack_sym.h \
	shim/kernel/xmap.c \
	shim/kernel/xmap.h
