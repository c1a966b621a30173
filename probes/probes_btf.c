/*
 * ubt -l of what the kernel's BTF names: `struct NAME` (`union`, `enum`)
 * and, with -v, their definitions as bpftrace prints them (libbpf's
 * btf_dump, one definition a match); `iter:NAME`, the iterators.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* open_memstream */
#endif
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "arena.h"
#include "compat.h"
#include "probes.h"
#include "types_btf.h"
#include "util.h"
#include "probes_int.h"

#define BTF_ITER_PREFIX "bpf_iter__"
#define BTF_ITER_SKIP "__safe_trusted"

static void btfl_printf(void *ctx, const char *fmt, va_list ap)
{
	vfprintf(ctx, fmt, ap);
}

/* "struct x", "union y", "enum z"; NULL for other kinds and anonymous */
static const char *btfl_name(struct arena *a, const struct btf *btf,
			     const struct btf_type *t)
{
	const char *kind, *name = btf__name_by_offset(btf, t->name_off);

	if (!name || !*name)
		return NULL;
	if (btf_is_struct(t))
		kind = "struct";
	else if (btf_is_union(t))
		kind = "union";
	else if (btf_is_enum(t) || btf_is_enum64(t))
		kind = "enum";
	else
		return NULL;
	return arena_printf(a, "%s %s", kind, name);
}

/*
 * The definitions btf_dump printed, one a match: a top-level line ending
 * in '{' starts one, "};" ends it (bpftrace splits them so).
 */
static void btfl_split(struct arena *a, char *text, const char *pattern,
		       void (*emit)(void *ctx, const char *name,
				    const char *detail),
		       void *ctx)
{
	char *line = text, *start = NULL;

	while (line && *line) {
		char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);

		if (start) {
			/* "};", or (compat list-more, as v0.26; 0.17
			 * runs on into the next definition)
			 * "} __attribute__((aligned(8)));" */
			if ((len == 2 && !strncmp(line, "};", 2)) ||
			    (compat_has(COMPAT_LIST_MORE) && len > 2 &&
			     line[0] == '}' && line[len - 1] == ';')) {
				/* with the empty line bpftrace prints
				 * after each */
				char *def = arena_strndup(a, start,
							  line + len + 1 -
								  start);
				char *head = arena_strndup(
					a, start, strcspn(start, "\n"));
				size_t hl = strlen(head);

				/* "struct x {" matched as "struct x" */
				if (hl >= 2 && !strcmp(head + hl - 2, " {"))
					head[hl - 2] = '\0';
				if (probes_match_wildcard(pattern, head))
					emit(ctx, def, NULL);
				start = NULL;
			}
		} else if (len && line[len - 1] == '{') {
			start = line;
		}
		line = nl ? nl + 1 : NULL;
	}
}

int probes_list_btf_types(struct arena *a, const char *pattern, bool verbose,
			  void (*emit)(void *ctx, const char *name,
				       const char *detail),
			  void *ctx)
{
	const struct btf *btf = types_btf_vmlinux();
	struct btf_dump *dump = NULL;
	char *text = NULL;
	size_t size = 0;
	FILE *f = NULL;
	uint32_t n;

	if (!btf)
		return 0;	/* no BTF: nothing to list, as bpftrace */
	if (verbose) {
		f = open_memstream(&text, &size);
		if (!f)
			return -errno;
		dump = btf_dump__new(btf, btfl_printf, f, NULL);
		if (!dump) {
			fclose(f);
			free(text);
			return -errno;
		}
	}
	n = btf__type_cnt(btf);
	for (uint32_t id = 1; id < n; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);
		const char *name = t ? btfl_name(a, btf, t) : NULL;

		if (!name)
			continue;
		if (dump)
			btf_dump__dump_type(dump, id);
		else if (probes_match_wildcard(pattern, name))
			emit(ctx, name, NULL);
	}
	if (dump) {
		btf_dump__free(dump);
		fclose(f);
		if (text)
			btfl_split(a, text, pattern, emit, ctx);
		free(text);
	}
	return 0;
}

int probes_list_iters(struct arena *a, const char *pattern,
		      void (*emit)(void *ctx, const char *name,
				   const char *detail),
		      void *ctx)
{
	const struct btf *btf = types_btf_vmlinux();
	size_t plen = strlen(BTF_ITER_PREFIX), slen = strlen(BTF_ITER_SKIP);
	uint32_t n;

	if (!btf) {
		/* bpftrace 0.17's fixed two */
		static const char *const fixed[] = { "iter:task",
						     "iter:task_file" };

		for (size_t i = 0; i < ARRAY_SIZE(fixed); i++)
			if (!pattern || probes_match_wildcard(pattern, fixed[i]))
				emit(ctx, fixed[i], NULL);
		return 0;
	}
	n = btf__type_cnt(btf);
	for (uint32_t id = 1; id < n; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);
		const char *name, *nm;
		size_t len;

		if (!t || !btf_is_struct(t))
			continue;
		name = btf__name_by_offset(btf, t->name_off);
		if (!name || strncmp(name, BTF_ITER_PREFIX, plen))
			continue;
		len = strlen(name);
		if (len >= slen && !strcmp(name + len - slen, BTF_ITER_SKIP))
			continue;
		nm = arena_printf(a, "iter:%s", name + plen);
		if (!pattern || probes_match_wildcard(pattern, nm))
			emit(ctx, nm, NULL);
	}
	return 0;
}
