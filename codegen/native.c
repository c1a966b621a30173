/*
 * Native x86-64 emission: one object file in memory, each function's bytes
 * copied out of it with libelf, refused when a relocation remains.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "irb.h"
#include "native.h"
#include "util.h"

static LLVMTargetMachineRef native_tm;

LLVMTargetMachineRef native_target_machine(void)
{
	LLVMTargetRef target;
	char *err = NULL;

	if (native_tm)
		return native_tm;
	LLVMInitializeX86TargetInfo();
	LLVMInitializeX86Target();
	LLVMInitializeX86TargetMC();
	LLVMInitializeX86AsmPrinter();
	LLVMInitializeX86AsmParser();	/* inline system calls */
	if (LLVMGetTargetFromTriple("x86_64-unknown-linux-gnu", &target,
				    &err)) {
		fprintf(stderr, "ubt: cannot find the x86-64 target: %s\n",
			err);
		LLVMDisposeMessage(err);
		return NULL;
	}
	/*
	 * No vector or x87 registers (preserve_most does not save them),
	 * large code model and static relocations: addresses are absolute
	 * constants, so that any reference to data outside the function
	 * shows up as a relocation, which native_emit() refuses.
	 */
	native_tm = LLVMCreateTargetMachine(
		target, "x86_64-unknown-linux-gnu", "x86-64",
		"-sse,-sse2,-x87,-mmx,-avx,+soft-float",
		LLVMCodeGenLevelDefault, LLVMRelocStatic,
		LLVMCodeModelLarge);
	return native_tm;
}

static int native_errf(char *err, size_t errlen, int ret, const char *fmt,
		       ...) __attribute__((format(printf, 4, 5)));

static int native_errf(char *err, size_t errlen, int ret, const char *fmt,
		       ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return ret;
}

/* Does a relocation section apply to section index sec within [lo, hi)? */
static bool native_has_reloc(Elf *e, size_t sec, uint64_t lo, uint64_t hi)
{
	Elf_Scn *s = NULL;

	while ((s = elf_nextscn(e, s))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(s, &sh) ||
		    (sh.sh_type != SHT_RELA && sh.sh_type != SHT_REL) ||
		    sh.sh_info != sec)
			continue;
		d = elf_getdata(s, NULL);
		if (!d || !sh.sh_entsize)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Rela ra;
			GElf_Rel r;
			uint64_t off;

			if (sh.sh_type == SHT_RELA) {
				if (!gelf_getrela(d, i, &ra))
					return true;
				off = ra.r_offset;
			} else {
				if (!gelf_getrel(d, i, &r))
					return true;
				off = r.r_offset;
			}
			if (off >= lo && off < hi)
				return true;
		}
	}
	return false;
}

static int native_extract(const char *img, size_t size,
			  struct native_code *funcs, int n, char *err,
			  size_t errlen)
{
	Elf *e;
	Elf_Scn *s = NULL;
	int ret = 0, found = 0;

	elf_version(EV_CURRENT);
	e = elf_memory((char *)img, size);
	if (!e)
		return native_errf(err, errlen, -ENOEXEC,
				   "cannot read the native object: %s",
				   elf_errmsg(-1));
	while ((s = elf_nextscn(e, s)) && !ret) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(s, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		d = elf_getdata(s, NULL);
		for (size_t i = 0; d && sh.sh_entsize &&
				   i < sh.sh_size / sh.sh_entsize && !ret;
		     i++) {
			GElf_Sym sym;
			const char *name;
			Elf_Scn *ts;
			GElf_Shdr tsh;
			Elf_Data *td;
			int k;

			if (!gelf_getsym(d, i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC)
				continue;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			for (k = 0; name && k < n; k++)
				if (!strcmp(funcs[k].name, name))
					break;
			if (!name || k == n || funcs[k].code)
				continue;
			ts = elf_getscn(e, sym.st_shndx);
			if (!ts || !gelf_getshdr(ts, &tsh) ||
			    tsh.sh_type != SHT_PROGBITS ||
			    !(tsh.sh_flags & SHF_EXECINSTR) ||
			    !(td = elf_getdata(ts, NULL)) ||
			    sym.st_value + sym.st_size > td->d_size ||
			    !sym.st_size) {
				ret = native_errf(err, errlen, -ENOEXEC,
						  "%s: no code in the native "
						  "object", name);
				break;
			}
			if (native_has_reloc(e, sym.st_shndx, sym.st_value,
					     sym.st_value + sym.st_size)) {
				ret = native_errf(err, errlen, -ENOEXEC,
						  "%s: the native code needs a "
						  "relocation", name);
				break;
			}
			funcs[k].len = sym.st_size;
			funcs[k].code = xmalloc(sym.st_size);
			memcpy(funcs[k].code, (char *)td->d_buf + sym.st_value,
			       sym.st_size);
			found++;
		}
	}
	elf_end(e);
	if (!ret && found != n) {
		for (int k = 0; k < n; k++)
			if (!funcs[k].code)
				ret = native_errf(
					err, errlen, -ENOEXEC,
					"%s: not in the native object",
					funcs[k].name);
	}
	return ret;
}

int native_emit(LLVMModuleRef mod, bool optimise, struct native_code *funcs,
		int n, char *err, size_t errlen)
{
	LLVMTargetMachineRef tm = native_target_machine();
	LLVMPassBuilderOptionsRef po;
	LLVMMemoryBufferRef buf;
	LLVMErrorRef e;
	char *msg = NULL;
	int ret;

	for (int k = 0; k < n; k++) {
		funcs[k].code = NULL;
		funcs[k].len = 0;
	}
	if (!tm)
		return native_errf(err, errlen, -ENOENT,
				   "LLVM has no x86-64 target");
	if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
		ret = native_errf(err, errlen, -EINVAL,
				  "BUG: invalid LLVM module: %s", msg);
		LLVMDisposeMessage(msg);
		return ret;
	}
	LLVMDisposeMessage(msg);
	msg = NULL;
	/* unoptimised code still inlines the bodies of map iterations:
	 * calling them would need a relocation */
	po = LLVMCreatePassBuilderOptions();
	e = LLVMRunPasses(mod, optimise ? "default<O2>" : "always-inline", tm,
			  po);
	LLVMDisposePassBuilderOptions(po);
	if (e) {
		char *m = LLVMGetErrorMessage(e);

		ret = native_errf(err, errlen, -EINVAL, "optimising failed: %s",
				  m);
		LLVMDisposeErrorMessage(m);
		return ret;
	}
	for (int k = 0; k < n; k++) {
		LLVMValueRef fn = LLVMGetNamedFunction(mod, funcs[k].name);

		funcs[k].ctx_unused = optimise && fn &&
				      LLVMCountParams(fn) > 0 &&
				      !LLVMGetFirstUse(LLVMGetParam(fn, 0));
	}
	irb_split_blocks(mod);
	if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &msg,
						&buf)) {
		ret = native_errf(err, errlen, -EINVAL,
				  "cannot emit native code: %s", msg);
		LLVMDisposeMessage(msg);
		return ret;
	}
	ret = native_extract(LLVMGetBufferStart(buf), LLVMGetBufferSize(buf),
			     funcs, n, err, errlen);
	LLVMDisposeMemoryBuffer(buf);
	if (ret)
		native_code_release(funcs, n);
	return ret;
}

void native_code_release(struct native_code *funcs, int n)
{
	for (int k = 0; k < n; k++) {
		free(funcs[k].code);
		funcs[k].code = NULL;
		funcs[k].len = 0;
	}
}
