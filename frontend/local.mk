libubt_a_SOURCES += \
	frontend/arena.c \
	frontend/arena.h \
	frontend/ast.c \
	frontend/ast.h \
	frontend/attach.c \
	frontend/attach.h \
	frontend/compat.c \
	frontend/compat.h \
	frontend/compile.h \
	frontend/diag.c \
	frontend/diag.h \
	frontend/hits.c \
	frontend/hits.h \
	frontend/kprov.c \
	frontend/kprov.h \
	frontend/lexer.l \
	frontend/parse.c \
	frontend/parser.y \
	frontend/probe_filter.c \
	frontend/probe_filter.h \
	frontend/types.c \
	frontend/types.h \
	frontend/types_btf.c \
	frontend/types_btf.h \
	frontend/types_btf_func.c \
	frontend/types_dwarf.c \
	frontend/types_dwarf.h \
	frontend/util.c \
	frontend/util.h
# the lexer includes the parser's header; bison runs in -y mode
BUILT_SOURCES += frontend/parser.h
AM_YFLAGS += -Wno-yacc
libubt_a_SOURCES += \
	frontend/tracepoint.c \
	frontend/tracepoint.h
libubt_a_SOURCES += \
	frontend/format.c \
	frontend/format.h
libubt_a_SOURCES += \
	frontend/builtins.c \
	frontend/cdefs.c \
	frontend/cdefs.h \
	frontend/cdefs_btf.c \
	frontend/cdefs_clang.c \
	frontend/cdefs_enum.c \
	frontend/cdefs_eval.c \
	frontend/cdefs_int.h \
	frontend/cdefs_types.c \
	frontend/func_agg.c \
	frontend/func_print.c \
	frontend/func_net.c \
	frontend/func_macro.c \
	frontend/func_new.c \
	frontend/func_tseries.c \
	frontend/tseries.h \
	frontend/func_out.c \
	frontend/func_str.c \
	frontend/func_sym.c \
	frontend/func_sys.c \
	frontend/func_watch.c \
	frontend/sema.c \
	frontend/sema_addr.c \
	frontend/sema_arrcast.c \
	frontend/sema_binop.c \
	frontend/sema.h \
	frontend/sema_config.c \
	frontend/sema_context.c \
	frontend/sema_dump.c \
	frontend/sema_dwarf.c \
	frontend/sema_getopt.c \
	frontend/sema_macro.c \
	frontend/sema_expr.c \
	frontend/sema_field.c \
	frontend/sema_int.h \
	frontend/sema_kernel.c \
	frontend/sema_resolve.c \
	frontend/sema_tables.c \
	frontend/sema_type_int.h \
	frontend/sema_typelookup.c \
	frontend/sema_types.c \
	frontend/sema_typeutil.c \
	frontend/sema_util.c \
	frontend/stack.h
