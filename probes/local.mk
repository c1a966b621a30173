# probes/: binary inspection, see probes/README
libubt_a_SOURCES += \
	probes/kfeat.c \
	probes/kfeat.h \
	probes/probes.h \
	probes/probes_btf.c \
	probes/probes_debuginfo.c \
	probes/probes_elf.c \
	probes/probes_elfio.c \
	probes/probes_expand.c \
	probes/probes_insn.c \
	probes/probes_int.h \
	probes/probes_kernel.c \
	probes/probes_kvmlinux.c \
	probes/probes_list.c \
	probes/probes_srcline.c \
	probes/probes_symcache.c \
	probes/probes_target.c \
	probes/probes_usdt.c \
	probes/probes_watch.c
