/*
 * Values the BPF side writes as ids (cg.h): stack ids, symbols, kernel
 * and user addresses turned into what bpftrace prints.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <limits.h>
#include <time.h>
#include <unistd.h>
#include <wordexp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include "cg.h"
#include "child.h"
#include "compile.h"
#include "format.h"
#include "exitwatch.h"
#include "kernel.h"
#include "output.h"
#include "probes.h"
#include "sema.h"
#include "tracepoint.h"
#include "util.h"
#include "kernel_int.h"

/* ---- values the BPF side writes as ids (cg.h) ---------------------- */

#define KERNEL_NAME_SIZE 256

static bool kernel_needs_display(const struct type *t)
{
	if (!t)
		return false;
	if (t->kind == TY_PROBE || t->kind == TY_USYM)
		return true;
	if (t->kind == TY_TUPLE)
		for (int i = 0; i < t->nfields; i++)
			if (kernel_needs_display(t->fields[i].type))
				return true;
	return false;
}

static size_t kernel_align(const struct type *t)
{
	size_t a = 1;

	switch (t->kind) {
	case TY_STRING:
	case TY_BUFFER:
		return 1;
	case TY_TUPLE:
		for (int i = 0; i < t->nfields; i++) {
			size_t f = kernel_align(t->fields[i].type);

			if (f > a)
				a = f;
		}
		return a;
	default:
		return t->size >= 8 ? 8 : (t->size ? t->size : 1);
	}
}

/* The type output is given: probe and usym values become strings. */
const struct type *kernel_display_type(struct kernel *k,
					      const struct type *t)
{
	struct type *d;
	size_t off = 0, al;

	if (!kernel_needs_display(t))
		return t;
	if (t->kind != TY_TUPLE)
		return type_string(&k->arena, KERNEL_NAME_SIZE);
	d = arena_alloc(&k->arena, sizeof(*d));
	*d = *t;
	d->fields = arena_alloc(&k->arena, t->nfields * sizeof(*d->fields));
	for (int i = 0; i < t->nfields; i++) {
		const struct type *ft = kernel_display_type(k,
							    t->fields[i].type);

		d->fields[i] = t->fields[i];
		d->fields[i].type = (struct type *)ft;
		al = kernel_align(ft);
		off = (off + al - 1) / al * al;
		d->fields[i].offset = off;
		off += ft->size;
	}
	al = kernel_align(d);
	d->size = (off + al - 1) / al * al;
	return d;
}

/* usym(): address -> "symbol+offset" through /proc/PID/maps, else hex */
static const struct cg_prog *kernel_progs(const struct kernel *k)
{
	return k->dprogs ? k->dprogs : k->obj->progs;
}

static int kernel_nprogs(const struct kernel *k)
{
	return k->dprogs ? k->ndprogs : k->obj->nprogs;
}

void kernel_set_display_progs(struct kernel *k, const struct cg_prog *progs,
			      int n)
{
	k->dprogs = progs;
	k->ndprogs = n;
}

static void kernel_usym_name(struct kernel *k, uint64_t addr, uint32_t pid,
			     char *buf, size_t n)
{
	char path[64], line[512], file[PATH_MAX];
	unsigned long lo, hi, off;
	FILE *f;

	snprintf(buf, n, "0x%lx", (unsigned long)addr);
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		struct probes_sym *syms;
		const struct probes_sym *s;
		uint64_t vaddr;
		int ns;

		file[0] = 0;
		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %4095s", &lo, &hi,
			   &off, file) < 3 ||
		    addr < lo || addr >= hi || file[0] != '/')
			continue;
		if (probes_elf_funcs(&k->arena, file, &syms, &ns))
			break;
		/* file offset -> symbol address via the symbols' offsets */
		for (int i = 0; i < ns; i++) {
			s = &syms[i];
			vaddr = addr - lo + off;
			if (vaddr >= s->offset &&
			    vaddr < s->offset + (s->size ? s->size : 1)) {
				if (vaddr == s->offset)
					snprintf(buf, n, "%s", s->name);
				else
					snprintf(buf, n, "%s+%lu", s->name,
						 (unsigned long)(vaddr -
								 s->offset));
				break;
			}
		}
		break;
	}
	fclose(f);
}

static void kernel_display_value(struct kernel *k, const struct type *t,
				 const void *src, const struct type *dt,
				 void *dst)
{
	if (t == dt) {
		memcpy(dst, src, t->size);
		return;
	}
	if (t->kind == TY_TUPLE) {
		for (int i = 0; i < t->nfields; i++)
			kernel_display_value(
				k, t->fields[i].type,
				(const char *)src + t->fields[i].offset,
				dt->fields[i].type,
				(char *)dst + dt->fields[i].offset);
		return;
	}
	memset(dst, 0, dt->size);
	if (t->kind == TY_PROBE) {
		uint64_t id;

		memcpy(&id, src, 8);
		if (id < (uint64_t)kernel_nprogs(k) &&
		    kernel_progs(k)[id].probe_name)
			snprintf(dst, dt->size, "%s",
				 kernel_progs(k)[id].probe_name);
		return;
	}
	if (t->kind == TY_USYM) {
		uint64_t addr;
		uint32_t w[2] = { 0, 0 };
		const struct cg_prog *p;

		memcpy(&addr, src, 8);
		if (t->size >= 16)
			memcpy(w, (const char *)src + 8, 8);
		p = w[1] && w[1] <= (uint32_t)kernel_nprogs(k) ?
			    &kernel_progs(k)[w[1] - 1] :
			    NULL;
		if (p && p->nmatches == 1 && p->matches[0].func &&
		    !p->matches[0].func_offset)
			snprintf(dst, dt->size, "%s", p->matches[0].func);
		else if (p && p->nmatches == 1 && p->matches[0].func)
			snprintf(dst, dt->size, "%s+%lu", p->matches[0].func,
				 (unsigned long)p->matches[0].func_offset);
		else
			kernel_usym_name(k, addr, w[0], dst, dt->size);
	}
}

/* Convert a value for output when needed; returns src or *tmp. */
const void *kernel_display(struct kernel *k, const struct type *t,
				  const struct type *dt, const void *src,
				  void **tmp)
{
	if (t == dt)
		return src;
	*tmp = xcalloc(1, dt->size + 1);
	kernel_display_value(k, t, src, dt, *tmp);
	return *tmp;
}
