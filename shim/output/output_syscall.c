/*
 * syscall_name(): system call numbers of this machine's ABI and their
 * names.  The table is generated at build time from the __NR_* numbers of
 * the installed kernel headers (gen-syscalls.sh, shim/output/local.mk).
 */
#include <stddef.h>

#include "output_int.h"

static const char *const syscall_names[] = {
#include "shim/output/syscall_names.h"
};

const char *out_syscall_name(unsigned long nr)
{
	if (nr >= sizeof(syscall_names) / sizeof(syscall_names[0]))
		return NULL;
	return syscall_names[nr];
}
