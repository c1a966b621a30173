/* The BPFTRACE_* environment of a run (env.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "compat.h"
#include "env.h"

static struct env env_values = {
	.cat_bytes_max = 10240,
	.max_probes = 512,
	.max_bpf_progs = 512,
};

/* A positive decimal number, as bpftrace reads a uint64_t. */
static int env_u64(const char *name, uint64_t *dst)
{
	const char *s = getenv(name);
	unsigned long long v;
	char *end;

	if (!s)
		return 0;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*s < '0' || *s > '9' || *end || errno || !v) {
		fprintf(stderr, "ERROR: Env var '%s' did not contain a valid "
			"uint64_t, or was zero-valued.\n", name);
		return -EINVAL;
	}
	*dst = v;
	return 0;
}

/* 0 or 1, as bpftrace reads a boolean variable. */
static int env_bool(const char *name, bool *dst)
{
	const char *s = getenv(name);

	if (!s)
		return 0;
	if (strcmp(s, "0") && strcmp(s, "1")) {
		fprintf(stderr, "ERROR: Env var '%s' did not contain a valid "
			"value (0 or 1).\n", name);
		return -EINVAL;
	}
	*dst = *s == '1';
	return 0;
}

/*
 * BPFTRACE_CACHE_USER_SYMBOLS: 0 or 1; compat cache-symbols also
 * PER_PID, PER_PROGRAM and NONE (any case), as v0.26 reads it.
 */
static int env_cache_symbols(bool *dst)
{
	const char *name = "BPFTRACE_CACHE_USER_SYMBOLS";
	const char *s = getenv(name);

	if (!s || !compat_has(COMPAT_CACHE_SYMBOLS))
		return env_bool(name, dst);
	if (!strcmp(s, "0") || !strcmp(s, "1") ||
	    !strcasecmp(s, "per_pid") || !strcasecmp(s, "per_program") ||
	    !strcasecmp(s, "none"))
		return 0;
	fprintf(stderr, "ERROR: %s: Invalid value for cache_user_symbols: "
		"valid values are PER_PID, PER_PROGRAM, and NONE.\n", name);
	return -EINVAL;
}

int env_read(void)
{
	struct env e = env_values;
	bool cache;
	int err;

	err = env_u64("BPFTRACE_CAT_BYTES_MAX", &e.cat_bytes_max);
	/* the newer bpftrace's name (v0.26) wins */
	err = err ?: env_u64("BPFTRACE_MAX_CAT_BYTES", &e.cat_bytes_max);
	err = err ?: env_u64("BPFTRACE_LOG_SIZE", &e.log_size);
	err = err ?: env_u64("BPFTRACE_PERF_RB_PAGES", &e.perf_rb_pages);
	err = err ?: env_u64("BPFTRACE_MAX_PROBES", &e.max_probes);
	err = err ?: env_u64("BPFTRACE_MAX_BPF_PROGS", &e.max_bpf_progs);
	err = err ?: env_bool("BPFTRACE_NO_CPP_DEMANGLE", &e.no_cpp_demangle);
	err = err ?: env_bool("BPFTRACE_NO_USER_SYMBOLS", &e.no_user_symbols);
	/* checked only: ubt keeps each process's symbols, and reads them
	 * again when the process maps more (a cache that is always right) */
	err = err ?: env_cache_symbols(&cache);
	if (!err)
		env_values = e;
	return err;
}

void env_no_cpp_demangle(void)
{
	env_values.no_cpp_demangle = true;
}

void env_no_debug_info(void)
{
	env_values.no_debug_info = true;
}

void env_str_trailer(const char *t)
{
	env_values.str_trailer = t;
}

int env_check_limits(int nprobes, int nprogs)
{
	const struct env *e = &env_values;

	if (e->max_bpf_progs && (uint64_t)nprogs > e->max_bpf_progs) {
		fprintf(stderr, "ERROR: Failed to compile: Your program is "
			"trying to generate "
			"more than %d BPF programs, which exceeds the current "
			"limit of %llu.\nYou can increase the limit through "
			"the BPFTRACE_MAX_BPF_PROGS environment variable.\n",
			nprogs, (unsigned long long)e->max_bpf_progs);
		return -E2BIG;
	}
	if (e->max_probes && (uint64_t)nprobes > e->max_probes) {
		fprintf(stderr, "ERROR: Can't attach to %d probes because it "
			"exceeds the current limit of %llu probes.\nYou can "
			"increase the limit through the BPFTRACE_MAX_PROBES "
			"environment variable, but BE CAREFUL since a high "
			"number of probes attached can cause your system to "
			"crash.\n", nprobes,
			(unsigned long long)e->max_probes);
		return -E2BIG;
	}
	return 0;
}

const struct env *env_get(void)
{
	return &env_values;
}
