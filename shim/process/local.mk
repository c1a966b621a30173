# shim/process/: process control: ptrace, remote calls, the -c child, /proc/PID/stat (shim/process/README)
libubt_a_SOURCES += \
	shim/process/child.c \
	shim/process/child.h \
	shim/process/errbuf.c \
	shim/process/errbuf.h \
	shim/process/exitwatch.c \
	shim/process/exitwatch.h \
	shim/process/procstat.c \
	shim/process/procstat.h \
	shim/process/ptrace.c \
	shim/process/ptrace.h \
	shim/process/ptrace_call.c \
	shim/process/ptrace_int.h \
	shim/process/ptrace_mem.c \
	shim/process/ptrace_stop.c \
	shim/process/ptrace_stub.c \
	shim/process/ptrace_done.c
