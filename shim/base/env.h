/*
 * The BPFTRACE_* environment variables of a run that bpftrace 0.17
 * documents and the run honours (BPFTRACE_STRLEN and BPFTRACE_MAP_KEYS_MAX
 * are the frontend's: frontend/sema_config.c).  Read once by the driver;
 * a value that is not a number is an error, in bpftrace's words.
 */
#ifndef UBT_ENV_H
#define UBT_ENV_H

#include <stdbool.h>
#include <stdint.h>

struct env {
	uint64_t cat_bytes_max;	/* BPFTRACE_CAT_BYTES_MAX: bytes cat()
				 * prints, 10240 */
	uint64_t log_size;	/* BPFTRACE_LOG_SIZE: the verifier log's
				 * buffer, 0 when not set (libbpf's) */
	uint64_t perf_rb_pages;	/* BPFTRACE_PERF_RB_PAGES: pages per CPU
				 * of the kernel's ring buffer, 0 when not
				 * set (ubt's size) */
	uint64_t max_probes;	/* BPFTRACE_MAX_PROBES: attach points,
				 * 512 (bpftrace's) */
	uint64_t max_bpf_progs;	/* BPFTRACE_MAX_BPF_PROGS: programs made a
				 * match each, 512 (bpftrace's) */
	bool no_cpp_demangle;	/* BPFTRACE_NO_CPP_DEMANGLE=1: C++ symbols
				 * of user stacks, usym() and func as
				 * mangled */
	bool no_user_symbols;	/* BPFTRACE_NO_USER_SYMBOLS=1: user
				 * addresses printed unresolved */
	bool no_debug_info;	/* config show_debug_info = false: user
				 * stack frames without @file:line
				 * (compat ustack-lines) */
	const char *str_trailer; /* after a string that fills its type
				  * (compat str-trailer); NULL: nothing */
};

/* Read the variables; 0, or -EINVAL with the message printed. */
int env_read(void);

/*
 * BPFTRACE_MAX_PROBES and BPFTRACE_MAX_BPF_PROGS (nprogs 0: not counted):
 * 0, or -E2BIG with bpftrace's message printed (shim/run/run_limits.c
 * counts, before any code is generated).
 */
int env_check_limits(int nprobes, int nprogs);

/* The program's config = { cpp_demangle = false }, as
 * BPFTRACE_NO_CPP_DEMANGLE=1. */
void env_no_cpp_demangle(void);
/* The program's config = { show_debug_info = false }. */
void env_no_debug_info(void);

/* The program's string truncation trailer (sema_program's str_trailer,
 * NULL for none); t must live until the run ends. */
void env_str_trailer(const char *t);

/* The values read (the defaults before env_read()). */
const struct env *env_get(void);

#endif
