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
#include "env.h"
#include "probes.h"
#include "sema.h"
#include "stack_sym.h"
#include "tracepoint.h"
#include "util.h"
#include "kernel_int.h"
#include "procstat.h"

/* ---- values the BPF side writes as ids (cg.h) ---------------------- */

#define KERNEL_NAME_SIZE 256

static bool kernel_needs_display(const struct type *t)
{
	if (!t)
		return false;
	if (t->kind == TY_PROBE || t->kind == TY_USYM ||
	    t->kind == TY_KSYM || t->kind == TY_USTACK ||
	    t->kind == TY_KSTACK)
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

/* The type output is given: probe, symbol and stack values become
 * strings. */
const struct type *kernel_display_type(struct kernel *k,
					      const struct type *t)
{
	struct type *d;
	size_t off = 0, al;

	if (!kernel_needs_display(t))
		return t;
	if (t->kind == TY_USTACK || t->kind == TY_KSTACK)
		return type_string(&k->arena,
				   stack_text_room(stack_limit(t),
						   stack_mode(t)));
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

struct stack_syms *kernel_syms(struct kernel *k)
{
	if (!k->syms)
		k->syms = stack_syms_new();
	return k->syms;
}

/* A stack value (cg.h) as text into dst (dt->size bytes). */
static void kernel_stack_text(struct kernel *k, const struct type *t,
			      const void *src, char *dst, size_t size)
{
	int limit = stack_limit(t), n = limit, fd;
	bool user = t->kind == TY_USTACK;
	uint32_t w[2] = { 0, 0 };
	const uint64_t *frames;
	uint64_t *buf = NULL;
	char name[40];
	int64_t id;

	memcpy(&id, src, 8);
	if (user)
		memcpy(w, (const char *)src + 8, 8);
	dst[0] = '\0';
	if (user && (w[1] & CG_USTACK_NATIVE)) {
		frames = stack_native_get(kernel_syms(k), (uint64_t)id, &n);
		if (!frames)
			return;
		if (n > limit)
			n = limit;
	} else {
		if (id < 0 || !k->bo)
			return;
		snprintf(name, sizeof(name), CG_MAP_STACK_PREFIX "%d", limit);
		fd = bpf_object__find_map_fd_by_name(k->bo, name);
		buf = xcalloc(limit + 1, 8);
		if (fd < 0 || bpf_map_lookup_elem(fd, &(uint32_t){ (uint32_t)id },
						  buf)) {
			free(buf);
			return;
		}
		frames = buf;
	}
	stack_text(kernel_syms(k), user, (int)w[0], frames, n, stack_mode(t),
		   k->display_key ? 4 : 8, dst, size);
	free(buf);
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
		    !env_get()->no_user_symbols) {
			/* the probe's function, demangled as bpftrace's
			 * symbolizer prints it */
			const char *f = p->matches[0].func;
			char *d = env_get()->no_cpp_demangle ?
					  NULL : probes_demangle(f);

			if (!p->matches[0].func_offset)
				snprintf(dst, dt->size, "%s", d ? d : f);
			else
				snprintf(dst, dt->size, "%s+%lu", d ? d : f,
					 (unsigned long)p->matches[0]
						 .func_offset);
			free(d);
		} else
			stack_usym(kernel_syms(k), (int)w[0], addr, false,
				   false, dst, dt->size);
		return;
	}
	if (t->kind == TY_KSYM) {
		uint64_t addr;

		memcpy(&addr, src, 8);
		stack_ksym(kernel_syms(k), addr, false, dst, dt->size);
		return;
	}
	if (t->kind == TY_USTACK || t->kind == TY_KSTACK)
		kernel_stack_text(k, t, src, dst, dt->size);
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

/*
 * The SIGSTOP a probe sends may be generated late (the kernel defers it
 * when interrupts are off): a SIGCONT sent before it would be lost and
 * the process left stopped.  Wait (at most 200 ms) until it has stopped.
 */
static void kernel_stack_wait_stopped(pid_t pid)
{
	struct timespec ms = { 0, 1000000 };

	for (int i = 0; i < 200; i++) {
		char st = procstat_state(pid);

		if (!st || st == 'T' || st == 't' || st == 'Z' || st == 'X')
			return;
		nanosleep(&ms, NULL);
	}
}

/* The symbolizer's records (cg.h): a process stopped to be noted, and
 * the frames of a user-mode probe's stack. */
void kernel_stack_event(struct kernel *k, const struct cg_event *e,
			const void *args, size_t size)
{
	uint64_t w[2];
	uint64_t *frames;

	if (size < 8)
		return;
	memcpy(w, args, 8);
	if (e->kind == CG_EV_STACK_NOTE) {
		if (!w[0] || w[0] > INT_MAX)
			return;
		stack_syms_note(kernel_syms(k), (int)w[0]);
		kernel_stack_wait_stopped((pid_t)w[0]);
		kill((pid_t)w[0], SIGCONT);
		return;
	}
	/* CG_EV_USTACK: the id, how many frames, the frames */
	if (size < 16)
		return;
	memcpy(w, args, 16);
	if (w[1] > STACK_MAX_LIMIT || size < 16 + 8 * w[1])
		return;
	frames = xcalloc(w[1] + 1, 8);
	memcpy(frames, (const char *)args + 16, 8 * w[1]);
	stack_native_put(kernel_syms(k), w[0], frames, (int)w[1]);
	free(frames);
}
