/*
 * -d bpf: the BPF object's programs, then the functions of .text they
 * call (loop callbacks, the shared maps' operations: cg_xmap.c), which
 * libbpf appends to each program that calls them when it loads it.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>

#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "cg_int.h"
#include "util.h"

/*
 * How deep a function goes below its frame pointer (r10): its loads and
 * stores there, and the addresses of stack buffers it makes (rX = r10;
 * rX += -n) for helpers. For -d bpf: what the 512 bytes hold.
 */
static int cg_stack_depth(const struct bpf_insn *in, size_t n)
{
	bool fp[11] = { [10] = true };
	int depth = 0, d;

	for (size_t i = 0; i < n; i++) {
		int cls = BPF_CLASS(in[i].code);

		d = 0;
		if (cls == BPF_LDX && in[i].src_reg == 10)
			d = -in[i].off;
		else if ((cls == BPF_STX || cls == BPF_ST) &&
			 in[i].dst_reg == 10)
			d = -in[i].off;
		else if (in[i].code == (BPF_ALU64 | BPF_ADD | BPF_K) &&
			 in[i].dst_reg < 10 && fp[in[i].dst_reg])
			d = -in[i].imm;
		if (d > depth)
			depth = d;
		if (cls == BPF_ALU64 || cls == BPF_ALU || cls == BPF_LDX ||
		    in[i].code == (BPF_LD | BPF_IMM | BPF_DW)) {
			if (in[i].dst_reg < 10)
				fp[in[i].dst_reg] =
					in[i].code ==
						(BPF_ALU64 | BPF_MOV | BPF_X) &&
					in[i].src_reg == 10;
		} else if (cls == BPF_JMP && BPF_OP(in[i].code) == BPF_CALL) {
			for (int r = 0; r <= 5; r++)
				fp[r] = false;
		}
	}
	return depth;
}

static void cg_dump_insns(const struct bpf_insn *in, size_t n, FILE *f)
{
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%5zu: code %02x dst r%d src r%d off %-6d imm %d\n",
			i, in[i].code, in[i].dst_reg, in[i].src_reg, in[i].off,
			in[i].imm);
}

/* The section named name of e (0: none), its header in *sh. */
static size_t cg_dump_section(Elf *e, const char *name, GElf_Shdr *sh)
{
	size_t shstrndx;
	Elf_Scn *s = NULL;

	if (elf_getshdrstrndx(e, &shstrndx))
		return 0;
	while ((s = elf_nextscn(e, s))) {
		const char *n;

		if (!gelf_getshdr(s, sh))
			continue;
		n = elf_strptr(e, shstrndx, sh->sh_name);
		if (n && !strcmp(n, name))
			return elf_ndxscn(s);
	}
	return 0;
}

/* The functions of .text, by their symbols, in the order of the table. */
static void cg_dump_text(const struct cg_object *obj, FILE *f)
{
	GElf_Shdr tsh, ssh;
	Elf_Data *text, *syms;
	size_t ti, si;
	Elf *e;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return;
	e = elf_memory(obj->image, obj->image_size);
	if (!e)
		return;
	ti = cg_dump_section(e, ".text", &tsh);
	si = cg_dump_section(e, ".symtab", &ssh);
	text = ti ? elf_getdata(elf_getscn(e, ti), NULL) : NULL;
	syms = si ? elf_getdata(elf_getscn(e, si), NULL) : NULL;
	for (size_t i = 0; text && syms && ssh.sh_entsize &&
			   i < ssh.sh_size / ssh.sh_entsize;
	     i++) {
		const struct bpf_insn *in;
		const char *name;
		GElf_Sym sym;
		size_t n;

		if (!gelf_getsym(syms, (int)i, &sym) ||
		    GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
		    sym.st_shndx != ti ||
		    sym.st_value + sym.st_size > text->d_size)
			continue;
		name = elf_strptr(e, ssh.sh_link, sym.st_name);
		in = (const struct bpf_insn *)((const char *)text->d_buf +
					       sym.st_value);
		n = sym.st_size / sizeof(*in);
		/* global: the verifier checks it once per program; static:
		 * at each call */
		fprintf(f,
			"%s (%s function, %zu instructions, %d bytes of "
			"stack):\n",
			name ? name : "?",
			GELF_ST_BIND(sym.st_info) == STB_GLOBAL ? "global" :
								   "static",
			n, cg_stack_depth(in, n));
		cg_dump_insns(in, n, f);
	}
	elf_end(e);
}

void cg_dump_bpf(const struct cg_object *obj, FILE *f)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "ubt");
	struct bpf_object *bo;
	struct bpf_program *p;

	bo = bpf_object__open_mem(obj->image, obj->image_size, &oo);
	if (!bo) {
		fprintf(stderr, "ubt: cannot open the BPF object: %s\n",
			strerror(errno));
		return;
	}
	bpf_object__for_each_program(p, bo) {
		const struct bpf_insn *in = bpf_program__insns(p);
		size_t n = bpf_program__insn_cnt(p);

		fprintf(f,
			"%s (section %s, %zu instructions, %d bytes of stack):\n",
			bpf_program__name(p), bpf_program__section_name(p), n,
			cg_stack_depth(in, n));
		cg_dump_insns(in, n, f);
	}
	bpf_object__close(bo);
	cg_dump_text(obj, f);
}
