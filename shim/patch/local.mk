# shim/patch/: patching: a site decoded, its instructions relocated, trampolines, whose site it is (shim/patch/README)
libubt_a_SOURCES += \
	shim/patch/owner.c \
	shim/patch/owner.h \
	shim/patch/patch.c \
	shim/patch/patch.h \
	shim/patch/patch_elf.c \
	shim/patch/patch_icall.c \
	shim/patch/patch_icall.h \
	shim/patch/patch_ldlock.c \
	shim/patch/patch_memo.c \
	shim/patch/patch_memo.h \
	shim/patch/patch_room.c \
	shim/patch/patch_symidx.c \
	shim/patch/patch_symidx.h \
	shim/patch/tramp.c \
	shim/patch/tramp.h \
	shim/patch/tramp_inline.c
