# codegen/: see codegen/README
libubt_a_SOURCES += \
	codegen/bpf_maps.c \
	codegen/cg.c \
	codegen/cg_btf.c \
	codegen/cg_builtin.c \
	codegen/cg.h \
	codegen/cg_call.c \
	codegen/cg_call_out.c \
	codegen/cg_aggval.c \
	codegen/cg_arrcast.c \
	codegen/cg_call_new.c \
	codegen/cg_call_val.c \
	codegen/cg_div.c \
	codegen/cg_dump.c \
	codegen/cg_expr.c \
	codegen/cg_field.c \
	codegen/cg_kernel.c \
	codegen/cg_helper.c \
	codegen/cg_int.h \
	codegen/cg_map.c \
	codegen/cg_path.c \
	codegen/cg_stack.c \
	codegen/cg_stack_native.c \
	codegen/cg_stmt.c \
	codegen/cg_tseries.c \
	codegen/cg_usermode.c \
	codegen/cg_util.c \
	codegen/cg_value.c \
	codegen/cg_watch.c \
	codegen/cg_xmap.c \
	codegen/cg_xmap.h \
	codegen/irb.c \
	codegen/irb_base.c \
	codegen/irb.h \
	codegen/irb_scratch.c \
	codegen/irb_split.c
libubt_a_SOURCES += \
	codegen/irb_native.c \
	codegen/irb_native_helper.c \
	codegen/irb_native_map.c \
	codegen/irb_native_stack.c \
	codegen/irb_native_xmap.c \
	codegen/irb_native_int.h \
	codegen/irb_native.h \
	codegen/native.c \
	codegen/native.h
