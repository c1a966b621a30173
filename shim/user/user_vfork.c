/*
 * The vfork guard (runtime/rt_vfork.c): entry probe code of the runtime's
 * on libc's functions that make a child running in the calling thread's
 * memory with its thread pointer while it waits (posix_spawn,
 * posix_spawnp, vfork; clone, whose flags the runtime checks), so that
 * such a child takes a block of its own: its own pid and tid, its own
 * shadow stack.  A function a probe of the program is on keeps that probe
 * alone: its children record as their parent thread, -v says so.
 */
#include <stdio.h>

#include "user_int.h"

static const struct {
	const char *symbol;
	int fn;
} vf_hooks[] = {
	{ "posix_spawn", RT_FN_VF_SPAWN },
	{ "posix_spawnp", RT_FN_VF_SPAWN },
	{ "vfork", RT_FN_VF_VFORK },
	{ "clone", RT_FN_VF_CLONE },
};

/*
 * One hook; 0, or -errno with why in u->err.  RT_FN_VF_VFORK goes after
 * the "pop %rdi" glibc's vfork starts with (the file's byte: an int3 of
 * another tracer's is no guide), which stays in place; a vfork that
 * starts otherwise gets RT_FN_VF_SPAWN.
 */
static int vf_hook(struct ubt_user *u, const char *symbol, int which)
{
	uint8_t stub[14] = { 0xff, 0x25, 0, 0, 0, 0 };	/* jmp *0(%rip) */
	uint64_t vaddr, size, off, bias, lo, hi, fn;
	uint8_t first = 0;
	FILE *f;

	if (patch_find_symbol(u->libc, symbol, &vaddr, &size, &off) ||
	    user_module_range(u, u->libc, &bias, &lo, &hi))
		return user_err(u, -ENOENT, "%s: no %s", u->libc, symbol);
	for (int i = 0; i < u->nsites; i++)
		if (u->sites[i].s.func == bias + vaddr)
			return user_err(u, -EBUSY, "a probe of the program is "
					"on %s", symbol);
	if (which == RT_FN_VF_VFORK) {
		f = fopen(u->libc, "rb");
		if (!f || fseek(f, (long)off, SEEK_SET) ||
		    fread(&first, 1, 1, f) != 1)
			first = 0;
		if (f)
			fclose(f);
		if (first != 0x5f)	/* pop %rdi */
			which = RT_FN_VF_SPAWN;
	}
	fn = u->m.ctl->fn[which];
	if (!fn)
		return user_err(u, -ENOENT, "the runtime has no vfork hook");
	memcpy(stub + 6, &fn, 8);
	return user_install(u, &(struct user_probe){
		.sz = sizeof(struct user_probe),
		.binary = u->libc,
		.symbol = symbol,
		.kind = USER_PROBE_ENTRY,
		.code = stub,
		.code_len = sizeof(stub),
		.pop_entry = which == RT_FN_VF_VFORK,
	});
}

void user_install_vfork_hooks(struct ubt_user *u)
{
	char keep[sizeof(u->err)];
	size_t len = 0;

	u->vf_why[0] = 0;
	if (!u->libc[0])
		return;
	memcpy(keep, u->err, sizeof(keep));
	for (size_t i = 0; i < sizeof(vf_hooks) / sizeof(vf_hooks[0]); i++) {
		if (vf_hook(u, vf_hooks[i].symbol, vf_hooks[i].fn))
			len += (size_t)snprintf(u->vf_why + len,
						len < sizeof(u->vf_why) ?
							sizeof(u->vf_why) - len :
							0,
						"%s%s: %s", len ? "; " : "",
						vf_hooks[i].symbol, u->err);
		if (len >= sizeof(u->vf_why))
			len = sizeof(u->vf_why) - 1;
	}
	memcpy(u->err, keep, sizeof(keep));
}

const char *user_vfork_note(const struct ubt_user *u)
{
	return u && u->vf_why[0] ? u->vf_why : NULL;
}
