# shim/user/: the user side: the runtime and memfd placed in the target, sites installed and restored, the guard (shim/user/README)
libubt_a_SOURCES += \
	shim/user/guard.c \
	shim/user/guard.h \
	shim/user/memfd.c \
	shim/user/memfd.h \
	shim/user/memfd_int.h \
	shim/user/memfd_shtab.c \
	shim/user/rtpath.c \
	shim/user/rtpath.h \
	shim/user/user.c \
	shim/user/user.h \
	shim/user/user_attach.c \
	shim/user/user_check.c \
	shim/user/user_claim.c \
	shim/user/user_clock.c \
	shim/user/user_clock.h \
	shim/user/user_comm.c \
	shim/user/user_commit.c \
	shim/user/user_detach.c \
	shim/user/user_exec.c \
	shim/user/user_inject.c \
	shim/user/user_install.c \
	shim/user/user_int.h \
	shim/user/user_ldlock.c \
	shim/user/user_mntns.c \
	shim/user/user_park.c \
	shim/user/user_rsys.c \
	shim/user/user_stop.c \
	shim/user/user_strays.c \
	shim/user/user_sysw.c \
	shim/user/user_unmap.c \
	shim/user/user_unmap.h \
	shim/user/user_vfork.c \
	shim/user/user_vmwatch.c \
	shim/user/user_xmap.c
