/*
 * Watchpoint attach points, for probes_expand(): watchpoint:ADDR:LEN:MODE
 * gives one match at the address; watchpoint:FUNC+argN:LEN:MODE one match
 * per function of the -p/-c program FUNC matches (a wildcard too), at the
 * function's entry, where a uprobe reads the argument and asks ubt to
 * place the watchpoint (shim/kernel/kernel_watch.c).
 */
#include <string.h>

#include "probes.h"
#include "probes_int.h"

bool probes_is_watch(const char *provider)
{
	return provider && (!strcmp(provider, "watchpoint") ||
			    !strcmp(provider, "asyncwatchpoint"));
}

const char *probes_watch_target(struct compile *c, int pid)
{
	const char *cmd = c->cmd;
	size_t skip, len;

	/* -p: probes_expand_lang() finds /proc/PID/exe */
	if (pid || !cmd)
		return NULL;
	skip = strspn(cmd, " \t");
	len = strcspn(cmd + skip, " \t");
	return len ? arena_strndup(&c->arena, cmd + skip, len) : NULL;
}

void probes_watch_names(struct compile *c, const struct ast_node *ap,
			const char *target, struct probes_match *m, int n)
{
	const struct ast_attach_point *p = &ap->ap;

	for (int i = 0; i < n; i++) {
		m[i].provider = p->provider;
		if (!p->func) {
			m[i].addr = p->address;
			m[i].name = arena_printf(&c->arena, "%s:%llu:%llu:%s",
						 p->provider,
						 (unsigned long long)p->address,
						 (unsigned long long)p->len,
						 p->mode);
			continue;
		}
		/* bpftrace names it with N (unless 0) before LEN */
		m[i].name = arena_printf(&c->arena, "%s:%s:%s%s:%llu:%s",
					 p->provider,
					 target ? target : m[i].target,
					 m[i].func,
					 p->func_offset ?
						 arena_printf(&c->arena, ":%llu",
							      (unsigned long long)
								      p->func_offset) :
						 "",
					 (unsigned long long)p->len, p->mode);
	}
}
