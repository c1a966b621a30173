# shim/output/: output: printf, maps, hist/lhist, values, as bpftrace prints them (shim/output/README)
libubt_a_SOURCES += \
	shim/output/output.c \
	shim/output/output.h \
	shim/output/output_hist.c \
	shim/output/output_int.h \
	shim/output/output_map.c \
	shim/output/output_printf.c \
	shim/output/output_sb.c \
	shim/output/output_syscall.c \
	shim/output/output_value.c
