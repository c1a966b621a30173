# shim/output/: output: printf, maps, hist/lhist, values, as bpftrace prints them (shim/output/README)
libubt_a_SOURCES += \
	shim/output/output.c \
	shim/output/output.h \
	shim/output/output_gfp.c \
	shim/output/output_hist.c \
	shim/output/output_tseries.c \
	shim/output/output_int.h \
	shim/output/output_map.c \
	shim/output/output_printf.c \
	shim/output/output_sb.c \
	shim/output/output_syscall.c \
	shim/output/output_value.c

# The system call names, generated from the installed <asm/unistd.h>.
nodist_libubt_a_SOURCES = shim/output/syscall_names.h
BUILT_SOURCES += shim/output/syscall_names.h
CLEANFILES += shim/output/syscall_names.h
EXTRA_DIST += shim/output/gen-syscalls.sh
shim/output/syscall_names.h: $(top_srcdir)/shim/output/gen-syscalls.sh
	$(AM_V_GEN)$(MKDIR_P) $(@D) && \
	$(SHELL) $(top_srcdir)/shim/output/gen-syscalls.sh '$(CC) -E $(CPPFLAGS)' >$@.tmp && \
	mv $@.tmp $@
