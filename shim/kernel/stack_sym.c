/*
 * Stacks and symbols as bpftrace prints them (stack_sym.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compat.h"
#include "env.h"
#include "probes.h"
#include "stack.h"
#include "util.h"
#include "stack_sym.h"

struct stack_ksym {
	uint64_t addr;
	char *name;
};

struct stack_native {
	uint64_t id;
	int n;
	uint64_t *frames;
};

/* pids whose mappings were read lately: at most one read per pid and
 * STACK_RENOTE_NS for addresses no mapping holds (JIT code, a process
 * gone), not one per frame */
#define STACK_RENOTE_NS 100000000ull
#define STACK_RENOTE_PIDS 16

struct stack_syms {
	struct probes_symcache *sc;
	struct {
		int pid;
		uint64_t ns;
	} renote[STACK_RENOTE_PIDS];
	unsigned nrenote;
	struct stack_ksym *ksyms;	/* sorted by address */
	size_t nksyms;
	bool ksyms_read;
	struct stack_native *nat;	/* open addressing by id */
	size_t nnat, capnat;
};

struct stack_syms *stack_syms_new(void)
{
	struct stack_syms *s = xcalloc(1, sizeof(*s));

	s->sc = probes_symcache_new();
	return s;
}

void stack_syms_free(struct stack_syms *s)
{
	if (!s)
		return;
	probes_symcache_free(s->sc);
	for (size_t i = 0; i < s->nksyms; i++)
		free(s->ksyms[i].name);
	free(s->ksyms);
	for (size_t i = 0; i < s->capnat; i++)
		free(s->nat[i].frames);
	free(s->nat);
	free(s);
}

int stack_syms_note(struct stack_syms *s, int pid)
{
	return probes_symcache_note(s->sc, pid);
}

static uint64_t stack_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* May pid's mappings be read again now? (and note that they are) */
static bool stack_renote_due(struct stack_syms *s, int pid)
{
	uint64_t now = stack_now_ns();
	unsigned i;

	for (i = 0; i < STACK_RENOTE_PIDS; i++)
		if (s->renote[i].pid == pid) {
			if (now - s->renote[i].ns < STACK_RENOTE_NS)
				return false;
			s->renote[i].ns = now;
			return true;
		}
	i = s->nrenote++ % STACK_RENOTE_PIDS;
	s->renote[i].pid = pid;
	s->renote[i].ns = now;
	return true;
}

/* An address bpftrace could not resolve, as its stream prints a void *:
 * "0x..." and a null pointer as "0". */
static const char *stack_hex(uint64_t addr, char *buf, size_t size)
{
	if (!addr)
		snprintf(buf, size, "0");
	else
		snprintf(buf, size, "0x%" PRIx64, addr);
	return buf;
}

void stack_usym(struct stack_syms *s, int pid, uint64_t addr,
		bool with_offset, bool with_module, char *buf, size_t size)
{
	uint64_t off = 0;
	const char *name = NULL, *mod = NULL;
	char hex[24], *demangled = NULL;

	/* mapped since the last snapshot (dlopen, exec): take a new one
	 * while the process lives */
	if (!env_get()->no_user_symbols) {
		if (!probes_symcache_module(s->sc, pid, addr) &&
		    stack_renote_due(s, pid))
			stack_syms_note(s, pid);
		name = probes_symcache_resolve(s->sc, pid, addr, &off);
	}
	/* C++ names demangled, as bpftrace prints them */
	if (name && !env_get()->no_cpp_demangle &&
	    (demangled = probes_demangle(name)))
		name = demangled;

	if (name && with_module)
		mod = probes_symcache_module(s->sc, pid, addr);
	if (!name)
		snprintf(buf, size, "%s%s", stack_hex(addr, hex, sizeof(hex)),
			 with_module ? " ([unknown])" : "");
	else if (with_offset)
		snprintf(buf, size, "%s+%" PRIu64 "%s%s%s", name, off,
			 mod ? " (" : "", mod ? mod : "", mod ? ")" : "");
	else
		snprintf(buf, size, "%s%s%s%s", name, mod ? " (" : "",
			 mod ? mod : "", mod ? ")" : "");
	free(demangled);
}

static int stack_ksym_cmp(const void *x, const void *y)
{
	const struct stack_ksym *a = x, *b = y;

	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static void stack_ksyms_read(struct stack_syms *s)
{
	char line[512], name[256];
	unsigned long long a;
	size_t cap = 0;
	char kind;
	FILE *f;

	s->ksyms_read = true;
	f = fopen("/proc/kallsyms", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &a, &kind, name) != 3 || !a)
			continue;
		if (s->nksyms == cap) {
			cap = cap ? 2 * cap : 4096;
			s->ksyms = xrealloc(s->ksyms, cap * sizeof(*s->ksyms));
		}
		s->ksyms[s->nksyms].addr = a;
		s->ksyms[s->nksyms++].name = xstrdup(name);
	}
	fclose(f);
	/* stable for equal addresses: the first listed name wins below */
	qsort(s->ksyms, s->nksyms, sizeof(*s->ksyms), stack_ksym_cmp);
}

void stack_ksym(struct stack_syms *s, uint64_t addr, bool with_offset,
		char *buf, size_t size)
{
	size_t lo = 0, hi;
	const struct stack_ksym *k = NULL;
	char hex[24];

	if (!s->ksyms_read)
		stack_ksyms_read(s);
	hi = s->nksyms;
	/* the last symbol at or below addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->ksyms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo)
		k = &s->ksyms[lo - 1];
	if (!k)
		snprintf(buf, size, "%s", stack_hex(addr, hex, sizeof(hex)));
	else if (with_offset)
		snprintf(buf, size, "%s+%" PRIu64, k->name, addr - k->addr);
	else
		snprintf(buf, size, "%s", k->name);
}

size_t stack_text_room(int limit, enum stack_mode mode)
{
	size_t per = mode == STACK_MODE_RAW ? 20 :
		     mode == STACK_MODE_PERF ? 512 : 256;

	return (size_t)limit * per + 2;
}

/* Append to buf at *len, truncating at size. */
static void __attribute__((format(printf, 4, 5)))
stack_add(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*len + 1 >= size)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *len, size - *len, fmt, ap);
	va_end(ap);
	if (n > 0)
		*len += (size_t)n < size - *len ? (size_t)n : size - *len - 1;
}

void stack_text(struct stack_syms *s, bool user, int pid,
		const uint64_t *frames, int n, enum stack_mode mode,
		int indent, char *buf, size_t size)
{
	char sym[768];
	size_t len = 0;

	if (!size)
		return;
	buf[0] = '\0';
	stack_add(buf, size, &len, "\n");
	for (int i = 0; i < n && frames[i]; i++) {
		uint64_t a = frames[i];

		if (mode == STACK_MODE_RAW) {
			stack_add(buf, size, &len, "%" PRIx64 "\n", a);
			continue;
		}
		if (user)
			stack_usym(s, pid, a, true, mode == STACK_MODE_PERF,
				   sym, sizeof(sym));
		else
			stack_ksym(s, a, true, sym, sizeof(sym));
		/* compat ustack-lines: name+off@file:line where the DWARF
		 * has it (v0.26 with blazesym; config show_debug_info) */
		if (user && mode == STACK_MODE_BPFTRACE &&
		    compat_has(COMPAT_USTACK_LINES) &&
		    !env_get()->no_debug_info &&
		    !env_get()->no_user_symbols) {
			const char *file;
			int line;

			if (!probes_symcache_line(s->sc, pid, a, &file, &line)) {
				size_t l = strlen(sym);

				snprintf(sym + l, sizeof(sym) - l, "@%s:%d",
					 file, line);
			}
		}
		if (mode == STACK_MODE_PERF)
			stack_add(buf, size, &len, "\t%" PRIx64 " %s\n", a,
				  sym);
		else
			stack_add(buf, size, &len, "%*s%s\n", indent, "", sym);
	}
}

static size_t stack_nat_slot(const struct stack_syms *s, uint64_t id)
{
	size_t i = (size_t)(id * 0x9e3779b97f4a7c15ULL) & (s->capnat - 1);

	while (s->nat[i].frames && s->nat[i].id != id)
		i = (i + 1) & (s->capnat - 1);
	return i;
}

const uint64_t *stack_native_get(struct stack_syms *s, uint64_t id, int *n)
{
	size_t i;

	if (!s->capnat)
		return NULL;
	i = stack_nat_slot(s, id);
	if (!s->nat[i].frames)
		return NULL;
	*n = s->nat[i].n;
	return s->nat[i].frames;
}

void stack_native_put(struct stack_syms *s, uint64_t id,
		      const uint64_t *frames, int n)
{
	size_t i;

	if (n < 0 || n > STACK_MAX_LIMIT)
		return;
	if (2 * (s->nnat + 1) > s->capnat) {
		struct stack_native *old = s->nat;
		size_t oldcap = s->capnat;

		s->capnat = oldcap ? 2 * oldcap : 64;
		s->nat = xcalloc(s->capnat, sizeof(*s->nat));
		for (size_t j = 0; j < oldcap; j++)
			if (old[j].frames)
				s->nat[stack_nat_slot(s, old[j].id)] = old[j];
		free(old);
	}
	i = stack_nat_slot(s, id);
	if (s->nat[i].frames)
		return;		/* another thread sent it first */
	s->nat[i].id = id;
	s->nat[i].n = n;
	s->nat[i].frames = xcalloc(n + 1, sizeof(uint64_t));
	memcpy(s->nat[i].frames, frames, n * sizeof(uint64_t));
	s->nnat++;
}
