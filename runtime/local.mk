# runtime/: see DESIGN.md
# libubt-rt.so, the agent loaded into the traced process: no libc, no LLVM,
# no sanitizers (it runs inside someone else's process).  Unwind tables
# (.eh_frame, found through PT_GNU_EH_FRAME) are wanted: the return address
# of every wrapped call lies in rt_wrap_call, and exceptions, pthread_exit()
# and backtrace() in the target unwind through it.
pkglibexec_PROGRAMS += libubt-rt.so
libubt_rt_so_SOURCES = \
	runtime/rt.c \
	runtime/rt_abi.h \
	runtime/rt_asm.h \
	runtime/rt_block.c \
	runtime/rt_builtin.c \
	runtime/rt_chunk.c \
	runtime/rt_clock.c \
	runtime/rt_clock.h \
	runtime/rt_htab.c \
	runtime/rt_int.h \
	runtime/rt_kept.c \
	runtime/rt_shadow.c \
	runtime/rt_shtab.c \
	runtime/rt_stack.c \
	runtime/rt_state.c \
	runtime/rt_tslot.c \
	runtime/rt_vfork.c
libubt_rt_so_CFLAGS = -std=gnu11 -Wall -Wextra -O2 -fPIC -ffreestanding \
	-fno-stack-protector -fno-builtin -mgeneral-regs-only \
	-fvisibility=hidden -fasynchronous-unwind-tables
libubt_rt_so_LDFLAGS = -shared -nostdlib -Wl,-z,now -Wl,-z,noexecstack \
	-Wl,--hash-style=both -Wl,--eh-frame-hdr
