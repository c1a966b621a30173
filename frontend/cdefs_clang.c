/*
 * libclang, loaded on first use: dlopen() of the library configure found
 * (UBT_LIBCLANG_PATH), then each function of CDEFS_FNS by dlsym().
 */
#include "config.h"

#include <dlfcn.h>
#include <stddef.h>

#include "cdefs_int.h"

#ifdef UBT_LIBCLANG_PATH

const struct cdefs_clang *cdefs_clang_load(const char **why)
{
	static struct cdefs_clang fns;
	static const char *err;
	static bool tried;
	void *h;

	if (tried) {
		*why = err;
		return err ? NULL : &fns;
	}
	tried = true;
	h = dlopen(UBT_LIBCLANG_PATH, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		err = "cannot load " UBT_LIBCLANG_PATH;
		*why = err;
		return NULL;
	}
#define CDEFS_FN_SYM(name)                                  \
	fns.name = (__typeof__(&name))dlsym(h, #name);       \
	if (!fns.name) {                                    \
		err = "libclang has no " #name;             \
		*why = err;                                 \
		return NULL;                                \
	}
	CDEFS_FNS(CDEFS_FN_SYM)
#undef CDEFS_FN_SYM
	return &fns;
}
#endif
