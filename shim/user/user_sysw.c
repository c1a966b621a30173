/*
 * The user side's part in system-wide user mode (sysw.c): can any
 * process take the runtime at all; the kernel's breakpoint on a site that
 * a process now runs in user mode, taken out of that process; which
 * kernel probes' sites run in user mode there.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <sys/user.h>
#include "ptrace.h"
#include "user.h"
#include "user_int.h"

/*
 * A thread stopped right at the jump, the entry instruction before it
 * done: the kernel's probe on that instruction counted this call (it
 * emulated the instruction and stopped the thread on its way back).  It
 * goes on in the relocated window, past the probe, as a thread moved out
 * of a window does (user_install.c): counted once.
 */
static void skip_entry(struct ubt_user *u, const struct user_site *us)
{
	uint64_t to = us->reloc_at + us->r.insn_off[us->s.first];

	for (int i = 0; i < u->pt.nth; i++) {
		struct user_regs_struct r;

		if (pt_regs(&u->pt, i, &r) || r.rip != us->s.addr)
			continue;
		r.rip = to;
		if (!pt_set_regs(&u->pt, i, &r))
			u->moved++;
	}
}

int user_unbreak(struct ubt_user *u, uint64_t addr, uint8_t orig, bool keep)
{
	uint8_t b;

	if (u->released || u->resumed)
		return user_err(u, -EINVAL, "not stopped");
	/* inside a window of ours: the jump's bytes, or the int3s that pad
	 * it (never run); its restore puts the file's bytes back */
	for (int i = 0; i < u->nsites; i++)
		if (u->sites[i].installed && addr >= u->sites[i].s.addr &&
		    addr - u->sites[i].s.addr < u->sites[i].s.len)
			return 0;
	if (pt_read(&u->pt, addr, &b, 1))
		return user_err(u, -EIO, "read the code at %#llx",
				(unsigned long long)addr);
	/* the jump covers it (ours), or no kernel breakpoint is there */
	if (b != 0xcc || orig == 0xcc)
		return 0;
	if (!keep && pt_write(&u->pt, addr, &orig, 1))
		return user_err(u, -EIO, "write the code at %#llx",
				(unsigned long long)addr);
	for (int i = 0; i < u->nsites; i++)
		if (u->sites[i].installed && u->sites[i].s.addr != addr &&
		    (u->sites[i].s.func == addr || u->sites[i].s.kept == addr))
			skip_entry(u, &u->sites[i]);
	return keep ? 2 : 1;
}

bool user_site_at(const struct ubt_user *u, uint64_t addr)
{
	for (int i = 0; i < u->nsites; i++) {
		const struct patch_site *s = &u->sites[i].s;

		/* the kernel's probe: at the function (its endbr64 before the
		 * entry instruction kept), or at the offset inside it */
		if (u->sites[i].installed &&
		    (addr == s->kept || (!s->mid && addr == s->func)))
			return true;
	}
	return false;
}

int user_runtime_check(const char *runtime_path, char *why, size_t len)
{
	struct user_opts o = { .sz = sizeof(o), .runtime_path = runtime_path };
	char path[PATH_MAX];

	return user_runtime_path(&o, path, sizeof(path), why, len);
}
