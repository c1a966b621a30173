/*
 * BPF maps as BTF-described globals, the way libbpf reads them:
 *
 *   struct {
 *           int (*type)[BPF_MAP_TYPE_X];
 *           char (*key)[key_size];        (or u32 *key, u64 *key)
 *           char (*value)[value_size];    (or u32 *, u64 *)
 *           int (*max_entries)[N];
 *           int (*map_flags)[F];          (when not 0)
 *   } name SEC(".maps");
 *
 * built with the LLVM-C DIBuilder; the BPF backend turns the debug info
 * into BTF.
 */
#include <string.h>

#include <llvm-c/DebugInfo.h>

#include "irb.h"
#include "irb_native.h"
#include "util.h"

/* int (*)[n] or char (*)[n] */
static LLVMMetadataRef bpfmap_ptr_to_array(struct irb *ir, bool is_char,
					   uint64_t n)
{
	LLVMMetadataRef elem, sub, arr;

	if (is_char)
		elem = LLVMDIBuilderCreateBasicType(ir->di, "char", 4, 8,
						    0x06 /* DW_ATE_signed_char */,
						    LLVMDIFlagZero);
	else
		elem = LLVMDIBuilderCreateBasicType(ir->di, "int", 3, 32,
						    0x05 /* DW_ATE_signed */,
						    LLVMDIFlagZero);
	sub = LLVMDIBuilderGetOrCreateSubrange(ir->di, 0, n);
	arr = LLVMDIBuilderCreateArrayType(ir->di, n * (is_char ? 8 : 32),
					   is_char ? 8 : 32, elem, &sub, 1);
	return LLVMDIBuilderCreatePointerType(ir->di, arr, 64, 64, 0, NULL,
					      0);
}

/* Key and value types: an unsigned int of 4 or 8 bytes (array maps need
 * an int key), else char[size]. */
static LLVMMetadataRef bpfmap_ptr_to_bytes(struct irb *ir, size_t size)
{
	LLVMMetadataRef t;

	if (size != 4 && size != 8)
		return bpfmap_ptr_to_array(ir, true, size);
	t = LLVMDIBuilderCreateBasicType(ir->di, size == 4 ? "u32" : "u64", 3,
					 size * 8, 0x07 /* DW_ATE_unsigned */,
					 LLVMDIFlagZero);
	return LLVMDIBuilderCreatePointerType(ir->di, t, 64, 64, 0, NULL, 0);
}

LLVMValueRef irb_map_define(struct irb *ir, const char *name, int bpf_type,
			    size_t key_size, size_t value_size,
			    uint32_t max_entries)
{
	return irb_map_define_flags(ir, name, bpf_type, key_size, value_size,
				    max_entries, 0);
}

LLVMValueRef irb_map_define_flags(struct irb *ir, const char *name,
				  int bpf_type, size_t key_size,
				  size_t value_size, uint32_t max_entries,
				  uint32_t map_flags)
{
	const char *names[5] = { "type", "key", "value", "max_entries" };
	LLVMMetadataRef mtypes[5], members[5], st, gve, expr;
	LLVMTypeRef fields[5];
	LLVMTypeRef sty;
	LLVMValueRef g;
	int n = 0;

	if (irb_is_native(ir))
		return irb_native_map_define(ir, name, bpf_type, key_size,
					     value_size, max_entries);
	mtypes[n] = bpfmap_ptr_to_array(ir, false, bpf_type);
	names[n++] = "type";
	if (key_size) {
		mtypes[n] = bpfmap_ptr_to_bytes(ir, key_size);
		names[n++] = "key";
	}
	if (value_size) {
		mtypes[n] = bpfmap_ptr_to_bytes(ir, value_size);
		names[n++] = "value";
	}
	mtypes[n] = bpfmap_ptr_to_array(ir, false, max_entries);
	names[n++] = "max_entries";
	if (map_flags) {
		mtypes[n] = bpfmap_ptr_to_array(ir, false, map_flags);
		names[n++] = "map_flags";
	}

	for (int i = 0; i < n; i++) {
		members[i] = LLVMDIBuilderCreateMemberType(
			ir->di, ir->di_file, names[i], strlen(names[i]),
			ir->di_file, 0, 64, 64, 64 * i, LLVMDIFlagZero,
			mtypes[i]);
		fields[i] = ir->ptr;
	}
	st = LLVMDIBuilderCreateStructType(ir->di, ir->di_file, "", 0,
					   ir->di_file, 0, 64 * n, 64,
					   LLVMDIFlagZero, NULL, members, n, 0,
					   NULL, "", 0);

	sty = LLVMStructTypeInContext(ir->ctx, fields, n, 0);
	g = LLVMAddGlobal(ir->mod, sty, name);
	LLVMSetInitializer(g, LLVMConstNull(sty));
	LLVMSetSection(g, ".maps");
	LLVMSetLinkage(g, LLVMExternalLinkage);
	LLVMSetAlignment(g, 8);

	expr = LLVMDIBuilderCreateExpression(ir->di, NULL, 0);
	gve = LLVMDIBuilderCreateGlobalVariableExpression(
		ir->di, ir->di_cu, name, strlen(name), name, strlen(name),
		ir->di_file, 0, st, 0, expr, NULL, 64);
	LLVMGlobalSetMetadata(g, LLVMGetMDKindIDInContext(ir->ctx, "dbg", 3),
			      gve);
	return g;
}
