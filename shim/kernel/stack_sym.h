/*
 * Stacks and symbols as bpftrace prints them: frames of a ustack/kstack
 * turned into text (stack.h modes), user addresses through a snapshot of
 * the process's mappings (probes_symcache: taken at attach, when the
 * process is stopped for it, and on each resolve while it lives, so that
 * a -c command's symbols resolve after it has exited), kernel addresses
 * through /proc/kallsyms.  Frames of stacks that user-mode probes took
 * (CG_EV_USTACK records) are kept here by id.
 */
#ifndef UBT_STACK_SYM_H
#define UBT_STACK_SYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stack.h"

struct stack_syms;

struct stack_syms *stack_syms_new(void);
void stack_syms_free(struct stack_syms *s);

/* Take a snapshot of pid's mappings now (0 or -errno). */
int stack_syms_note(struct stack_syms *s, int pid);

/*
 * Text of a user address: "sym+off" (offset when with_offset), with
 * " (module)" when with_module; "0x<addr>" (and " ([unknown])") when
 * unknown. Written NUL-terminated into buf.
 */
void stack_usym(struct stack_syms *s, int pid, uint64_t addr,
		bool with_offset, bool with_module, char *buf, size_t size);
/* Text of a kernel address: "sym" or "sym+off", else "0x<addr>". */
void stack_ksym(struct stack_syms *s, uint64_t addr, bool with_offset,
		char *buf, size_t size);

/*
 * A stack as bpftrace prints it: "\n", then a line per frame up to the
 * first 0 (indent spaces in bpftrace mode: 8 in printf and values, 4 in
 * map keys), into buf (truncated to size, NUL-terminated).
 */
void stack_text(struct stack_syms *s, bool user, int pid,
		const uint64_t *frames, int n, enum stack_mode mode,
		int indent, char *buf, size_t size);

/* Room for the text of a stack of type t (TY_USTACK/TY_KSTACK). */
size_t stack_text_room(int limit, enum stack_mode mode);

/* Frames a user-mode probe sent for id; NULL when unknown. */
const uint64_t *stack_native_get(struct stack_syms *s, uint64_t id,
				 int *n);
void stack_native_put(struct stack_syms *s, uint64_t id,
		      const uint64_t *frames, int n);

#endif
