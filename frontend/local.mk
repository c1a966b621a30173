libubt_a_SOURCES += \
	frontend/arena.c \
	frontend/arena.h \
	frontend/ast.h \
	frontend/compile.h \
	frontend/diag.c \
	frontend/diag.h \
	frontend/types.c \
	frontend/types.h \
	frontend/util.c \
	frontend/util.h
