/*
 * The builtin and function tables (one per family: builtins.c,
 * func_agg.c, func_print.c, func_str.c), found by name or id.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sema.h"
#include "sema_int.h"
#include "util.h"

static const char *const builtin_names[BI_COUNT_] = {
	[BI_NONE] = "none",
	[BI_PID] = "pid",
	[BI_TID] = "tid",
	[BI_UID] = "uid",
	[BI_GID] = "gid",
	[BI_COMM] = "comm",
	[BI_NSECS] = "nsecs",
	[BI_ELAPSED] = "elapsed",
	[BI_CPU] = "cpu",
	[BI_CPID] = "cpid",
	[BI_ARG] = "arg",
	[BI_SARG] = "sarg",
	[BI_RETVAL] = "retval",
	[BI_FUNC] = "func",
	[BI_PROBE] = "probe",
	[BI_RAND] = "rand",
	[BI_ARGS] = "args",
	[BI_USERNAME] = "username",
	[BI_CURTASK] = "curtask",
	[BI_CGROUP] = "cgroup",
	[BI_KSTACK] = "kstack",
	[BI_USTACK] = "ustack",
	[BI_CTX] = "ctx",
	[BI_JIFFIES] = "jiffies",
	[BI_NUMAID] = "numaid",
	[BI_NCPUS] = "ncpus",
	[BI_USERMODE] = "usermode",
	[BI_PPID] = "ppid",
	[BI_PCOMM] = "pcomm",
};

const char *sema_builtin_name(enum sema_builtin b)
{
	if (b < 0 || b >= BI_COUNT_ || !builtin_names[b])
		BUG("bad builtin %d", b);
	return builtin_names[b];
}

const char *sema_func_name(enum sema_func f)
{
	const struct sema_func_ops *ops = sema_func_ops(f);

	return ops ? ops->name : "none";
}

/* Builtin and function tables. */

const struct sema_builtin_ops *sema_builtin_find(const char *name, int *arg)
{
	for (const struct sema_builtin_ops *b = sema_builtins; b->name; b++) {
		size_t len = strlen(b->name);

		if (b->id == BI_ARG || b->id == BI_SARG) {
			const char *p = name + len;
			char *end;
			long n;

			if (strncmp(name, b->name, len) || !*p ||
			    *p < '0' || *p > '9')
				continue;
			n = strtol(p, &end, 10);
			if (*end || n > 1000 || (p[0] == '0' && p[1]))
				continue;
			if (arg)
				*arg = (int)n;
			return b;
		}
		if (!strcmp(b->name, name))
			return b;
	}
	return NULL;
}

const struct sema_builtin_ops *sema_builtin_ops(enum sema_builtin id)
{
	for (const struct sema_builtin_ops *b = sema_builtins; b->name; b++)
		if (b->id == id)
			return b;
	return NULL;
}

static const struct sema_func_ops *const func_tables[] = {
	sema_funcs_agg,
	sema_funcs_print,
	sema_funcs_str,
	sema_funcs_watch,
	sema_funcs_sym,
	sema_funcs_net,
	sema_funcs_sys,
	sema_funcs_out,
	sema_funcs_new,
	sema_funcs_tseries,
};

const struct sema_func_ops *sema_func_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(func_tables); i++)
		for (const struct sema_func_ops *f = func_tables[i]; f->name;
		     f++)
			if (!strcmp(f->name, name))
				return f;
	return NULL;
}

const struct sema_func_ops *sema_func_ops(enum sema_func id)
{
	for (size_t i = 0; i < ARRAY_SIZE(func_tables); i++)
		for (const struct sema_func_ops *f = func_tables[i]; f->name;
		     f++)
			if (f->id == id)
				return f;
	return NULL;
}

