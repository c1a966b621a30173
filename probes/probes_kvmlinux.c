/*
 * kprobe:FUNC+OFFSET checked against a vmlinux file with symbols, as
 * bpftrace 0.17 checks it before it creates the kprobe: the file
 * BPFTRACE_VMLINUX names, else the first of its places that has FUNC
 * (Debian ships none; its debug package puts one in /usr/lib/debug).
 * Without such a file the kernel checks the offset itself when the
 * kprobe is created (EILSEQ inside an instruction: kernel_kprobe.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>
#include "arena.h"
#include "probes.h"
#include "probes_int.h"

/* bpftrace 0.17's places, %1$s the kernel's release */
static const char *const kv_places[] = {
	"/boot/vmlinux-%1$s",
	"/lib/modules/%1$s/vmlinux-%1$s",
	"/lib/modules/%1$s/build/vmlinux",
	"/usr/lib/modules/%1$s/kernel/vmlinux",
	"/usr/lib/debug/boot/vmlinux-%1$s",
	"/usr/lib/debug/boot/vmlinux-%1$s.debug",
	"/usr/lib/debug/lib/modules/%1$s/vmlinux",
};

/* The vmlinux file that has func's symbol (its address, size), or NULL. */
static const char *kv_find(struct arena *a, const char *func, uint64_t *addr,
			   uint64_t *size)
{
	const char *env = getenv("BPFTRACE_VMLINUX");
	struct utsname u;

	if (env && *env)
		return access(env, R_OK) ||
				       probes_elf_symbol(env, func, addr, size) ?
			       NULL :
			       env;
	if (uname(&u))
		return NULL;
	for (size_t i = 0; i < sizeof(kv_places) / sizeof(*kv_places); i++) {
		char path[4096];

		snprintf(path, sizeof(path), kv_places[i], u.release);
		if (access(path, R_OK))
			continue;
		if (!probes_elf_symbol(path, func, addr, size))
			return arena_strdup(a, path);
	}
	return NULL;
}

int probes_kernel_offset_check(struct arena *a, const char *func,
			       uint64_t off, bool unsafe, const char **msg)
{
	uint64_t addr = 0, size = 0, foff;
	const char *path, *what;
	int r;

	*msg = NULL;
	if (!off)
		return 0;
	path = kv_find(a, func, &addr, &size);
	if (!path)
		return -ENOENT;
	if (off >= size) {
		*msg = arena_printf(a,
				    "Offset outside the function bounds ('%s' size is %llu)",
				    func, (unsigned long long)size);
		return -ERANGE;
	}
	what = arena_printf(a, "%s:%s+%llu", path, func,
			    (unsigned long long)off);
	r = probes_elf_vaddr_to_offset(path, addr, &foff);
	if (!r)
		r = probes_insn_boundary(path, foff, size, off);
	if (r == 1)
		return 0;
	if (unsafe) {
		*msg = r ? arena_printf(a, "Unchecked kprobe: %s", what) :
			   arena_printf(a,
					"Unsafe kprobe in the middle of the instruction: %s",
					what);
		return 0;
	}
	*msg = r ? arena_printf(a, "Failed to check if kprobe is in proper place: %s",
				what) :
		   arena_printf(a, "Could not add kprobe into middle of instruction: %s",
				what);
	return -EILSEQ;
}
