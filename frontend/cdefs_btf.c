/*
 * Kernel types for the script's C definitions: the names clang could not
 * resolve (a field of type struct load_weight, a typedef such as u64 it
 * does not know) written as C from the kernel's BTF with libbpf's
 * btf_dump, with every type they need, as a header that goes before the
 * definitions (bpftrace does the same).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "arena.h"
#include "cdefs_int.h"
#include "types_btf.h"

/* The text between the quotes at q (just after the opening one). */
static const char *quoted(struct arena *a, const char *q)
{
	const char *e = strchr(q, '\'');

	if (!e || e == q)
		return NULL;
	return arena_strndup(a, q, (size_t)(e - q));
}

const char *cdefs_btf_wanted(struct arena *a, const char *msg)
{
	static const char unknown[] = "unknown type name '";
	const char *p, *last = NULL;

	if (!strncmp(msg, unknown, sizeof(unknown) - 1))
		return quoted(a, msg + sizeof(unknown) - 1);
	/* "field has incomplete type 'struct x'", "incomplete definition
	 * of type 'struct x'", "array has incomplete element type ..." */
	if (!strstr(msg, "incomplete"))
		return NULL;
	for (p = msg; (p = strchr(p, '\'')); p++) {
		if (!strncmp(p + 1, "struct ", 7) ||
		    !strncmp(p + 1, "union ", 6) ||
		    !strncmp(p + 1, "enum ", 5))
			last = p + 1;
		p = strchr(p + 1, '\'');
		if (!p)
			break;
	}
	return last ? quoted(a, last) : NULL;
}

bool cdefs_btf_has(const char *name)
{
	const struct btf *btf = types_btf_vmlinux();

	return btf && types_btf_id(btf, name);
}

static void dump_printf(void *ctx, const char *fmt, va_list args)
{
	vfprintf(ctx, fmt, args);
}

char *cdefs_btf_header(struct arena *a, const char *const *names, int n)
{
	struct btf *btf = types_btf_vmlinux();
	struct btf_dump *dump;
	char *buf = NULL, *r = NULL;
	size_t len = 0;
	int found = 0;
	FILE *f;

	if (!btf)
		return NULL;
	f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	dump = btf_dump__new(btf, dump_printf, f, NULL);
	if (libbpf_get_error(dump)) {
		fclose(f);
		free(buf);
		return NULL;
	}
	/* each type once, with what it holds by value defined before it
	 * and what it points to declared */
	for (int i = 0; i < n; i++) {
		uint32_t id = types_btf_id(btf, names[i]);

		if (id && !btf_dump__dump_type(dump, id))
			found++;
	}
	btf_dump__free(dump);
	fputc('\n', f);
	if (fclose(f) == 0 && found)
		r = arena_strdup(a, buf);
	free(buf);
	return r;
}
