/*
 * The user side's part in system-wide user mode (sysw.c): can any
 * process take the runtime at all; the kernel's breakpoint on a site that
 * a process now runs in user mode, taken out of that process.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include "ptrace.h"
#include "user.h"
#include "user_int.h"

int user_unbreak(struct ubt_user *u, uint64_t addr, uint8_t orig)
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
	if (pt_write(&u->pt, addr, &orig, 1))
		return user_err(u, -EIO, "write the code at %#llx",
				(unsigned long long)addr);
	return 1;
}

int user_runtime_check(const char *runtime_path, char *why, size_t len)
{
	struct user_opts o = { .sz = sizeof(o), .runtime_path = runtime_path };
	char path[PATH_MAX];

	return user_runtime_path(&o, path, sizeof(path), why, len);
}
