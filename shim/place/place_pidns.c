/*
 * A target in another PID namespace (a container, unshare -p): the ids
 * it sees are the namespace's, while bpftrace's pid, tid and ppid are the
 * host's (the kernel's helpers).  User-mode probe code reads tid from a
 * gettid() its thread made, ppid from getppid(), and pid (in a -c
 * command's forked children) from getpid(): all the namespace's there,
 * so a probe that reads one of them runs in the kernel (a latency idiom
 * split between a uprobe's @s[tid] and a tracepoint's would match
 * nothing else).  The namespace is read from /proc/PID/ns/pid before
 * anything is written into the process.
 */
#include <sys/stat.h>

#include "place_int.h"

/* Which namespace: stat() of /proc/PID/ns/pid (or self's); 0 or -errno. */
static int place_pidns_of(const char *who, struct stat *st)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%s/ns/pid", who);
	return stat(path, st) ? -errno : 0;
}

const char *place_pidns_why(struct compile *c, pid_t pid)
{
	struct stat self, t;
	char who[24];

	snprintf(who, sizeof(who), "%d", (int)pid);
	if (pid <= 0 || place_pidns_of("self", &self) ||
	    place_pidns_of(who, &t))
		return NULL;	/* not for this check to say */
	if (self.st_ino == t.st_ino && self.st_dev == t.st_dev)
		return NULL;
	return arena_printf(&c->arena,
			    "pid %d (another PID namespace: pid:[%llu], ubt's "
			    "pid:[%llu]; user mode would see the namespace's "
			    "ids)",
			    (int)pid, (unsigned long long)t.st_ino,
			    (unsigned long long)self.st_ino);
}

const char *place_pidns_builtin(const struct place_scan *s,
				enum sema_builtin b)
{
	if (!s->pidns)
		return NULL;
	if (b != BI_TID && b != BI_PPID && (b != BI_PID || !s->children))
		return NULL;
	return arena_printf(&s->c->arena, "%s in %s", sema_builtin_name(b),
			    s->pidns);
}

/* a callback of ast_visit_children(): 1 at a builtin that is an id */
static int place_id_visit(struct ast_node *n, void *ctx)
{
	(void)ctx;
	if (n->kind == AST_BUILTIN && n->sema &&
	    (n->sema->builtin == BI_TID || n->sema->builtin == BI_PID ||
	     n->sema->builtin == BI_PPID))
		return 1;
	return ast_visit_children(n, place_id_visit, ctx);
}

const char *place_pidns_syswide(struct compile *c,
				const struct run_decision *d, pid_t pid)
{
	bool ids = false;

	for (struct ast_node *p = c->program->program.probes; p && !ids;
	     p = p->next)
		ids = d[p->probe.index].where != RUN_KERNEL &&
		      ast_visit_children(p, place_id_visit, NULL);
	const char *why = ids ? place_pidns_why(c, pid) : NULL;

	return why ? arena_printf(&c->arena, "pid, tid or ppid in %s", why) :
		     NULL;
}
