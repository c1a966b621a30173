/*
 * irb: IR-building helpers for the BPF target. Helpers are called by id
 * (inttoptr of the BPF_FUNC_* number), as the BPF backend expects.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/bpf.h>
#include <llvm-c/Analysis.h>
#include <llvm-c/ErrorHandling.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "irb.h"
#include "irb_native.h"
#include "util.h"

/* The target machine is created once per process: it is the costly part. */
static LLVMTargetMachineRef irb_bpf_tm;

static LLVMTargetMachineRef irb_target_machine(void)
{
	LLVMTargetRef target;
	char *err = NULL;

	if (irb_bpf_tm)
		return irb_bpf_tm;
	LLVMInitializeBPFTargetInfo();
	LLVMInitializeBPFTarget();
	LLVMInitializeBPFTargetMC();
	LLVMInitializeBPFAsmPrinter();
	if (LLVMGetTargetFromTriple("bpfel", &target, &err)) {
		fprintf(stderr, "ubt: cannot find the BPF target: %s\n", err);
		LLVMDisposeMessage(err);
		return NULL;
	}
	irb_bpf_tm = LLVMCreateTargetMachine(target, "bpfel", "generic", "",
					     LLVMCodeGenLevelDefault,
					     LLVMRelocDefault,
					     LLVMCodeModelDefault);
	return irb_bpf_tm;
}

int irb_init(struct irb *ir, enum cg_target t, const char *name)
{
	LLVMMetadataRef flag;

	if (t == CG_TARGET_NATIVE)
		return irb_native_init(ir, name);
	if (t != CG_TARGET_BPF)
		return -ENOTSUP;
	if (!irb_target_machine())
		return -ENOENT;
	irb_module_init(ir, t, name, "bpfel", irb_bpf_tm);

	/* Debug info: BTF for the maps comes from it. */
	ir->di = LLVMCreateDIBuilder(ir->mod);
	ir->di_file = LLVMDIBuilderCreateFile(ir->di, "ubt.bt", 6, ".", 1);
	ir->di_cu = LLVMDIBuilderCreateCompileUnit(
		ir->di, LLVMDWARFSourceLanguageC, ir->di_file, "ubt", 3, 0,
		"", 0, 0, "", 0, LLVMDWARFEmissionFull, 0, 0, 0, "", 0, "",
		0);
	flag = LLVMValueAsMetadata(LLVMConstInt(ir->i32, 4, 0));
	LLVMAddModuleFlag(ir->mod, LLVMModuleFlagBehaviorWarning,
			  "Dwarf Version", 13, flag);
	flag = LLVMValueAsMetadata(
		LLVMConstInt(ir->i32, LLVMDebugMetadataVersion(), 0));
	LLVMAddModuleFlag(ir->mod, LLVMModuleFlagBehaviorWarning,
			  "Debug Info Version", 18, flag);

	/* license */
	{
		LLVMValueRef lic = LLVMConstStringInContext(ir->ctx, "GPL", 3,
							     0);
		LLVMValueRef g = LLVMAddGlobal(ir->mod, LLVMTypeOf(lic),
					       "LICENSE");

		LLVMSetInitializer(g, lic);
		LLVMSetSection(g, "license");
		LLVMSetLinkage(g, LLVMExternalLinkage);
	}
	return 0;
}

void irb_release(struct irb *ir)
{
	if (!ir->ctx)
		return;
	irb_native_release(ir);
	free(ir->temps);
	free(ir->spare);
	free(ir->sfn);
	if (ir->di)
		LLVMDisposeDIBuilder(ir->di);
	LLVMDisposeBuilder(ir->b);
	LLVMDisposeModule(ir->mod);
	LLVMContextDispose(ir->ctx);
	memset(ir, 0, sizeof(*ir));
}

/*
 * fn's debug info: `long name(types[1..nparams])` (types[0] the result),
 * its arguments named, as BTF wants every argument of a function.
 */
static void irb_di_func(struct irb *ir, LLVMValueRef fn, const char *name,
			LLVMMetadataRef *types, int nparams, bool local)
{
	LLVMMetadataRef sub, sp;

	sub = LLVMDIBuilderCreateSubroutineType(ir->di, ir->di_file, types,
						nparams + 1,
						LLVMDIFlagPrototyped);
	sp = LLVMDIBuilderCreateFunction(ir->di, ir->di_file, name,
					 strlen(name), name, strlen(name),
					 ir->di_file, 1, sub, local, 1, 1,
					 LLVMDIFlagPrototyped, 1);
	for (int i = 1; i <= nparams; i++) {
		char an[16];

		snprintf(an, sizeof(an), "a%d", i);
		LLVMDIBuilderCreateParameterVariable(ir->di, sp, an,
						     strlen(an), i,
						     ir->di_file, 1, types[i],
						     1, LLVMDIFlagZero);
	}
	LLVMSetSubprogram(fn, sp);
}

/*
 * Debug info for a function `long name(void *, ...)`: the BPF backend
 * makes BTF func_info of it, which the kernel needs for callbacks
 * (bpf_for_each_map_elem()).
 */
static void irb_func_debug(struct irb *ir, LLVMValueRef fn, const char *name,
			   int nparams, bool local)
{
	LLVMMetadataRef types[8];

	BUG_ON(nparams > 7);
	types[0] = LLVMDIBuilderCreateBasicType(ir->di, "long", 4, 64,
						0x05 /* DW_ATE_signed */,
						LLVMDIFlagZero);
	for (int i = 1; i <= nparams; i++)
		types[i] = LLVMDIBuilderCreatePointerType(ir->di, NULL, 64, 64,
							  0, NULL, 0);
	irb_di_func(ir, fn, name, types, nparams, local);
}

static LLVMValueRef irb_func_new(struct irb *ir, const char *name,
				 const char *section, int nparams, bool local)
{
	LLVMTypeRef params[8];
	LLVMTypeRef ft;
	LLVMValueRef fn;
	unsigned kind = LLVMGetEnumAttributeKindForName("nounwind", 8);

	for (int i = 0; i < nparams; i++)
		params[i] = ir->ptr;
	ft = LLVMFunctionType(ir->i64, params, nparams, 0);
	fn = LLVMAddFunction(ir->mod, name, ft);
	LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
				LLVMCreateEnumAttribute(ir->ctx, kind, 0));
	LLVMSetSection(fn, section);
	LLVMSetLinkage(fn, local ? LLVMInternalLinkage : LLVMExternalLinkage);
	irb_func_debug(ir, fn, name, nparams, local);
	ir->fn = fn;
	ir->entry = LLVMAppendBasicBlockInContext(ir->ctx, fn, "entry");
	irb_scratch_prologue(ir, local, section);
	return fn;
}

LLVMValueRef irb_func_begin(struct irb *ir, const char *name,
			    const char *section)
{
	if (irb_is_native(ir))
		return irb_native_func_begin(ir, name);
	return LLVMGetParam(irb_func_new(ir, name, section, 1, false), 0);
}

LLVMValueRef irb_callback_begin(struct irb *ir, const char *name,
				int nparams)
{
	if (irb_is_native(ir))
		return irb_native_callback_begin(ir, name, nparams);
	return irb_func_new(ir, name, ".text", nparams, true);
}

/*
 * Debug info for a global function `long name(...)` whose parameter i is
 * a long when mem[i] is 0, else a pointer to mem[i] bytes (a long, or a
 * struct ubt_mem_N of no members): BTF gives the verifier its prototype
 * (a scalar, or memory of that size that may be null).
 */
static void irb_subprog_debug(struct irb *ir, LLVMValueRef fn,
			      const char *name, int nparams,
			      const uint64_t *mem)
{
	LLVMMetadataRef types[6], lng;

	BUG_ON(nparams > 5);
	lng = LLVMDIBuilderCreateBasicType(ir->di, "long", 4, 64,
					   0x05 /* DW_ATE_signed */,
					   LLVMDIFlagZero);
	types[0] = lng;
	for (int i = 0; i < nparams; i++) {
		LLVMMetadataRef to = lng;
		char sn[32];

		if (!mem[i]) {
			types[i + 1] = lng;
			continue;
		}
		if (mem[i] != 8) {
			snprintf(sn, sizeof(sn), "ubt_mem_%llu",
				 (unsigned long long)mem[i]);
			to = LLVMDIBuilderCreateStructType(
				ir->di, ir->di_cu, sn, strlen(sn), ir->di_file,
				1, mem[i] * 8, 64, LLVMDIFlagZero, NULL, NULL,
				0, 0, NULL, sn, strlen(sn));
		}
		types[i + 1] = LLVMDIBuilderCreatePointerType(ir->di, to, 64,
							      64, 0, NULL, 0);
	}
	irb_di_func(ir, fn, name, types, nparams, false);
}

LLVMValueRef irb_subprog_begin(struct irb *ir, const char *name, int nparams,
			       const uint64_t *mem)
{
	LLVMTypeRef params[5], ft;
	LLVMValueRef fn;
	unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);
	unsigned noinline = LLVMGetEnumAttributeKindForName("noinline", 8);

	BUG_ON(irb_is_native(ir) || nparams > 5);
	for (int i = 0; i < nparams; i++)
		params[i] = mem[i] ? ir->ptr : ir->i64;
	ft = LLVMFunctionType(ir->i64, params, nparams, 0);
	fn = LLVMAddFunction(ir->mod, name, ft);
	LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
				LLVMCreateEnumAttribute(ir->ctx, nounwind, 0));
	LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
				LLVMCreateEnumAttribute(ir->ctx, noinline, 0));
	LLVMSetSection(fn, ".text");
	LLVMSetLinkage(fn, LLVMExternalLinkage);
	irb_subprog_debug(ir, fn, name, nparams, mem);
	ir->fn = fn;
	ir->entry = LLVMAppendBasicBlockInContext(ir->ctx, fn, "entry");
	LLVMPositionBuilderAtEnd(ir->b, ir->entry);
	return fn;
}

LLVMValueRef irb_subprog_call(struct irb *ir, LLVMValueRef fn,
			      LLVMValueRef *args, int n)
{
	LLVMValueRef call = LLVMBuildCall2(ir->b, LLVMGlobalGetValueType(fn),
					   fn, args, n, "");
	LLVMMetadataRef sp = LLVMGetSubprogram(ir->fn);

	/* a call of a function with debug info from one with it needs a
	 * location (the module's verifier says so) */
	if (sp)
		LLVMInstructionSetDebugLoc(
			call, LLVMDIBuilderCreateDebugLocation(ir->ctx, 1, 1,
							       sp, NULL));
	return call;
}

void irb_func_end(struct irb *ir)
{
	LLVMBuildRet(ir->b, LLVMConstInt(ir->i64, 0, 0));
	ir->fn = NULL;
	ir->entry = NULL;
}

/* Larger zeroings than this the BPF back end would lower to a call. */
#define IRB_MEMSET_INLINE 512

void irb_memset(struct irb *ir, LLVMValueRef dst, int c, size_t size)
{
	LLVMValueRef s;

	if (irb_is_native(ir)) {
		irb_native_memset(ir, dst, c, size);
		return;
	}
	if (c == 0 && size > IRB_MEMSET_INLINE) {
		/* BPF has no memset to call: a failing read from address 0
		 * zeroes its destination (bpftrace's way too) */
		LLVMValueRef args[3] = {
			dst, LLVMConstInt(ir->i32, size, 0),
			LLVMConstPointerNull(ir->ptr),
		};

		irb_helper(ir, BPF_FUNC_probe_read_kernel, args, 3);
		return;
	}
	s = LLVMBuildMemSet(ir->b, dst, LLVMConstInt(ir->i8, c, 0),
			    LLVMConstInt(ir->i64, size, 0), 1);
	(void)s;
}

void irb_memcpy(struct irb *ir, LLVMValueRef dst, LLVMValueRef src,
		size_t size)
{
	if (irb_is_native(ir)) {
		irb_native_memcpy(ir, dst, src, size);
		return;
	}
	if (size > IRB_MEMSET_INLINE) {
		/* as for memset: the kernel's copy, through a read helper */
		LLVMValueRef args[3] = {
			dst, LLVMConstInt(ir->i32, size, 0), src,
		};

		irb_helper(ir, BPF_FUNC_probe_read_kernel, args, 3);
		return;
	}
	LLVMBuildMemCpy(ir->b, dst, 1, src, 1,
			LLVMConstInt(ir->i64, size, 0));
}

LLVMValueRef irb_helper(struct irb *ir, int id, LLVMValueRef *args, int n)
{
	LLVMTypeRef params[8];
	LLVMTypeRef ft;
	LLVMValueRef callee;

	if (irb_is_native(ir))
		return irb_native_helper(ir, id, args, n);
	BUG_ON(n > 8);
	for (int i = 0; i < n; i++)
		params[i] = LLVMTypeOf(args[i]);
	ft = LLVMFunctionType(ir->i64, params, n, 0);
	callee = LLVMConstIntToPtr(LLVMConstInt(ir->i64, id, 0), ir->ptr);
	return LLVMBuildCall2(ir->b, ft, callee, args, n, "");
}

LLVMValueRef irb_map_lookup(struct irb *ir, LLVMValueRef map, LLVMValueRef key)
{
	LLVMValueRef args[2] = { map, key };
	LLVMTypeRef params[2] = { ir->ptr, ir->ptr };
	LLVMTypeRef ft = LLVMFunctionType(ir->ptr, params, 2, 0);
	LLVMValueRef callee = LLVMConstIntToPtr(
		LLVMConstInt(ir->i64, BPF_FUNC_map_lookup_elem, 0), ir->ptr);

	if (irb_is_native(ir))
		return irb_native_map_lookup(ir, map, key);
	return LLVMBuildCall2(ir->b, ft, callee, args, 2, "lookup");
}

LLVMValueRef irb_map_update(struct irb *ir, LLVMValueRef map,
			    LLVMValueRef key, LLVMValueRef value,
			    uint64_t flags)
{
	LLVMValueRef args[4] = { map, key, value, irb_const(ir, flags) };

	if (irb_is_native(ir))
		return irb_native_map_update(ir, map, key, value, flags);
	return irb_helper(ir, BPF_FUNC_map_update_elem, args, 4);
}

LLVMValueRef irb_map_delete(struct irb *ir, LLVMValueRef map,
			    LLVMValueRef key)
{
	LLVMValueRef args[2] = { map, key };

	if (irb_is_native(ir))
		return irb_native_map_delete(ir, map, key);
	return irb_helper(ir, BPF_FUNC_map_delete_elem, args, 2);
}

LLVMValueRef irb_probe_read(struct irb *ir, enum irb_read kind,
			    LLVMValueRef dst, LLVMValueRef size,
			    LLVMValueRef src)
{
	static const int ids[] = {
		[IRB_READ_USER] = BPF_FUNC_probe_read_user,
		[IRB_READ_KERNEL] = BPF_FUNC_probe_read_kernel,
		[IRB_READ_USER_STR] = BPF_FUNC_probe_read_user_str,
		[IRB_READ_KERNEL_STR] = BPF_FUNC_probe_read_kernel_str,
		[IRB_READ_ANY] = BPF_FUNC_probe_read,
	};
	LLVMValueRef args[3];

	if (irb_is_native(ir))
		return irb_native_probe_read(ir, kind, dst, size, src);
	if (LLVMGetTypeKind(LLVMTypeOf(src)) != LLVMPointerTypeKind)
		src = LLVMBuildIntToPtr(ir->b, src, ir->ptr, "");
	if (LLVMGetTypeKind(LLVMTypeOf(size)) != LLVMIntegerTypeKind ||
	    LLVMGetIntTypeWidth(LLVMTypeOf(size)) != 32)
		size = LLVMBuildTrunc(ir->b, size, ir->i32, "");
	args[0] = dst;
	args[1] = size;
	args[2] = src;
	return irb_helper(ir, ids[kind], args, 3);
}

LLVMValueRef irb_ringbuf_output(struct irb *ir, LLVMValueRef rb,
				LLVMValueRef data, size_t size)
{
	LLVMValueRef args[4] = { rb, data, irb_const(ir, size),
				 irb_const(ir, 0) };

	if (irb_is_native(ir))
		return irb_native_ringbuf_output(ir, rb, data, size);
	return irb_helper(ir, BPF_FUNC_ringbuf_output, args, 4);
}

LLVMValueRef irb_ctx_load(struct irb *ir, LLVMValueRef ctxp, size_t off,
			  size_t size)
{
	LLVMTypeRef ty = LLVMIntTypeInContext(ir->ctx, size * 8);
	LLVMValueRef p = irb_gep(ir, ctxp, off);
	LLVMValueRef v = LLVMBuildLoad2(ir->b, ty, p, "");

	LLVMSetAlignment(v, size);
	return v;
}

void irb_dump(struct irb *ir, FILE *f)
{
	char *s = LLVMPrintModuleToString(ir->mod);

	fputs(s, f);
	LLVMDisposeMessage(s);
}

/*
 * LLVM ends the process on some errors in the program it is given (the
 * BPF backend: a jump longer than its 16-bit offset reaches, in a probe
 * of thousands of statements) by abort(). Say why, as a ubt error, and
 * exit 1 instead: nothing is loaded or attached while emitting.
 */
static void irb_fatal(const char *reason)
{
	fflush(stdout);
	if (strstr(reason, "out of insn range"))
		fprintf(stderr,
			"ubt: cannot emit BPF code: program too large: a jump spans more than 32767 instructions (%s)\n",
			reason);
	else
		fprintf(stderr, "ubt: cannot emit BPF code: LLVM: %s\n",
			reason);
	_exit(1);
}

/*
 * LLVM reports some errors in the program (the BPF stack exceeded, a call
 * the BPF target cannot make) as diagnostics and goes on emitting; by
 * default it prints them and the program would then fail to load, or,
 * with --dry-run, pass. They are errors of the compilation here.
 */
struct irb_diag {
	struct irb *ir;
	int nerrors;
};

static void irb_llvm_diag(LLVMDiagnosticInfoRef di, void *ctx)
{
	struct irb_diag *d = ctx;
	char *msg = LLVMGetDiagInfoDescription(di);
	size_t len = strlen(msg);
	bool stack;

	while (len && msg[len - 1] == '\n')
		msg[--len] = '\0';
	switch (LLVMGetDiagInfoSeverity(di)) {
	case LLVMDSError:
		stack = strstr(msg, "BPF stack limit") != NULL;
		if (stack)
			d->ir->stack_exceeded = true;
		/* the BPF backend says it once per access to the stack; the
		 * caller may build again with a scratch room (quiet_stack) */
		if (!d->nerrors++ && !(stack && d->ir->quiet_stack))
			fprintf(stderr, "ubt: cannot emit BPF code: %s\n",
				stack ? IRB_STACK_MSG : msg);
		break;
	case LLVMDSWarning:
		fprintf(stderr, "warning: %s\n", msg);
		break;
	default:
		break;
	}
	LLVMDisposeMessage(msg);
}

static int irb_optimise(struct irb *ir)
{
	LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
	LLVMErrorRef e = LLVMRunPasses(ir->mod, "default<O2>", irb_bpf_tm, po);

	LLVMDisposePassBuilderOptions(po);
	if (e) {
		char *m = LLVMGetErrorMessage(e);

		fprintf(stderr, "ubt: optimising failed: %s\n", m);
		LLVMDisposeErrorMessage(m);
		return -EINVAL;
	}
	return 0;
}

int irb_emit(struct irb *ir, bool optimise, void **image, size_t *size)
{
	LLVMMemoryBufferRef buf;
	char *err = NULL;
	struct irb_diag d = { .ir = ir };
	int ret = 0;

	LLVMDIBuilderFinalize(ir->di);
	if (LLVMVerifyModule(ir->mod, LLVMReturnStatusAction, &err)) {
		fprintf(stderr, "ubt: BUG: invalid LLVM module: %s\n", err);
		LLVMDisposeMessage(err);
		return -EINVAL;
	}
	LLVMDisposeMessage(err);
	err = NULL;
	LLVMInstallFatalErrorHandler(irb_fatal);
	LLVMContextSetDiagnosticHandler(ir->ctx, irb_llvm_diag, &d);
	if (optimise)
		ret = irb_optimise(ir);
	if (!ret) {
		irb_split_blocks(ir->mod);
		if (LLVMTargetMachineEmitToMemoryBuffer(irb_bpf_tm, ir->mod,
							LLVMObjectFile, &err,
							&buf)) {
			fprintf(stderr, "ubt: cannot emit BPF code: %s\n",
				err);
			LLVMDisposeMessage(err);
			ret = -EINVAL;
		} else if (d.nerrors) {
			LLVMDisposeMemoryBuffer(buf);
			ret = -EINVAL;
		}
	}
	LLVMContextSetDiagnosticHandler(ir->ctx, NULL, NULL);
	LLVMResetFatalErrorHandler();
	if (ret)
		return ret;
	*size = LLVMGetBufferSize(buf);
	*image = xmalloc(*size ? *size : 1);
	memcpy(*image, LLVMGetBufferStart(buf), *size);
	LLVMDisposeMemoryBuffer(buf);
	return 0;
}
