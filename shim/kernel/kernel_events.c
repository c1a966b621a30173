/*
 * Events of the kernel side: ring buffer records decoded (printf, time,
 * exit, print, clear, zero, ...), lost-event and full-map warnings, poll.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <limits.h>
#include <time.h>
#include <unistd.h>
#include <wordexp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include "cg.h"
#include "child.h"
#include "compat.h"
#include "env.h"
#include "compile.h"
#include "format.h"
#include "exitwatch.h"
#include "kernel.h"
#include "output.h"
#include "probes.h"
#include "sema.h"
#include "signals.h"
#include "tracepoint.h"
#include "util.h"
#include "kernel_int.h"
#include "kfeat.h"

/* ---- events -------------------------------------------------------- */

/*
 * system(): run cmd with sh and copy its output; cat(): copy a file.
 * Under -f json the whole output is one event, as bpftrace prints it:
 * {"type": "syscall"|"cat", "data": "..."}.
 */
/*
 * errorf() and warnf() (bpftrace v0.25): the text printf() would print,
 * as a located message on stderr ("stdin:1:9-40: ERROR: text", no
 * source line), or in JSON {"type": "errorf", "msg": ..., "filename":
 * ..., "line": ..., "col": ...}.  False for any other printf().
 */
/*
 * After a located message of a macro's body: each call it was expanded
 * from, innermost first, with its source line (v0.26's "expanded from").
 */
static void kernel_expanded_from(struct kernel *k, const struct ast_node *n,
				 enum diag_level level)
{
	for (const struct ast_expansion *x = n->from; x; x = x->up) {
		struct diag g = {
			.level = level, .loc = x->loc, .msg = "expanded from",
		};
		struct diag_list d = k->c->diag;

		d.head = &g;
		diag_print(&d, stderr);
	}
}

static bool kernel_located_printf(struct kernel *k, const struct cg_event *e,
				  const struct fmt_string *fs,
				  const struct type *t, const void *args,
				  size_t size)
{
	enum sema_func f = e->call && e->call->sema ? e->call->sema->func :
						      FN_NONE;
	const struct ast_loc *l;
	const char *file;
	char *text;

	if (f != FN_ERRORF && f != FN_WARNF)
		return false;
	if (f == FN_WARNF && diag_no_warnings)
		return true;
	l = e->call->stdloc ? &e->call->stdloc->loc : &e->call->loc;
	file = e->call->stdloc ? e->call->stdloc->file :
	       k->c && k->c->diag.filename ? k->c->diag.filename : "stdin";
	text = out_format(fs, t, args, size);
	if (!text)
		return true;
	if (k->out.format == OUT_JSON) {
		fprintf(k->out.f, "{\"type\": \"%s\", \"msg\": ",
			f == FN_ERRORF ? "errorf" : "warnf");
		out_json_string(k->out.f, text, strlen(text));
		fputs(", \"filename\": ", k->out.f);
		out_json_string(k->out.f, file, strlen(file));
		fprintf(k->out.f, ", \"line\": %d, \"col\": %d}\n",
			l->first_line, l->first_column);
	} else {
		fflush(k->out.f);
		fprintf(stderr, "%s:%d:%d-%d: %s: %s\n", file, l->first_line,
			l->first_column, l->last_column,
			f == FN_ERRORF ? "ERROR" : "WARNING", text);
		if (k->c)
			kernel_expanded_from(k, e->call,
					     f == FN_ERRORF ? DIAG_ERROR :
							      DIAG_WARNING);
	}
	free(text);
	return true;
}

static void kernel_copy_output(struct kernel *k, const char *what,
			       bool is_cmd)
{
	/* cat() prints BPFTRACE_CAT_BYTES_MAX bytes at most */
	uint64_t left = is_cmd ? UINT64_MAX : env_get()->cat_bytes_max;
	bool json = k->out.format == OUT_JSON;
	char buf[4096], *all = NULL;
	size_t n, len = 0;
	FILE *f;

	fflush(k->out.f);
	f = is_cmd ? popen(what, "r") : fopen(what, "r");
	if (!f && is_cmd) {
		fprintf(stderr, "ubt: cannot run %s: %s\n", what,
			strerror(errno));
		return;
	}
	if (!f) {
		/* bpftrace's words (compat cat-error: v0.26's) */
		fprintf(stderr, compat_has(COMPAT_CAT_ERROR) ?
				"ERROR: failed to open file '%s' (%s)\n" :
				"ERROR: failed to open file '%s': %s\n",
			what, strerror(errno));
		return;
	}
	while (left && (n = fread(buf, 1, left < sizeof(buf) ? left :
							   sizeof(buf), f)) > 0) {
		left -= n;
		if (!json) {
			fwrite(buf, 1, n, k->out.f);
			continue;
		}
		all = xrealloc(all, len + n);
		memcpy(all + len, buf, n);
		len += n;
	}
	if (is_cmd)
		pclose(f);
	else
		fclose(f);
	if (json) {
		fprintf(k->out.f, "{\"type\": \"%s\", \"data\": ",
			is_cmd ? "syscall" : "cat");
		out_json_string(k->out.f, all ? all : "", len);
		fputs("}\n", k->out.f);
		free(all);
	}
}

/* join(): the strings up to the first empty one, sep between them. */
static void kernel_join(struct kernel *k, const struct cg_event *e,
			const char *args, size_t asize)
{
	const char *sep = e->fmt ? e->fmt : " ";
	char *line = NULL;
	size_t len = 0;

	for (int i = 0; i < CG_JOIN_ARGS; i++) {
		const char *s = args + (size_t)i * CG_JOIN_SIZE;
		size_t n;

		if ((size_t)(i + 1) * CG_JOIN_SIZE > asize || !s[0])
			break;
		n = strnlen(s, CG_JOIN_SIZE - 1);
		line = xrealloc(line, len + strlen(sep) + n + 1);
		if (i) {
			memcpy(line + len, sep, strlen(sep));
			len += strlen(sep);
		}
		memcpy(line + len, s, n);
		len += n;
	}
	if (k->out.format == OUT_JSON) {
		fputs("{\"type\": \"join\", \"data\": ", k->out.f);
		out_json_string(k->out.f, line ? line : "", len);
		fputs("}\n", k->out.f);
	} else {
		fwrite(line ? line : "", 1, len, k->out.f);
		fputc('\n', k->out.f);
	}
	free(line);
}

/*
 * -k/-kk: a helper failed.  bpftrace's warning, located, on the output
 * (text), or a "helper_error" line (JSON).
 */
static void kernel_helper_error(struct kernel *k, const struct cg_event *e,
				const void *args, size_t asize)
{
	const struct ast_loc *l = e->loc;
	struct diag_list one;
	struct diag g = { .level = DIAG_WARNING };
	char msg[256];
	int64_t ret;

	if (asize < sizeof(ret))
		return;
	memcpy(&ret, args, sizeof(ret));
	ret = (int32_t)ret;
	if (k->out.format == OUT_JSON && compat_has(COMPAT_HELPER_CHECK)) {
		/* v0.26: the error's text and the file too */
		const char *fn = k->c && k->c->diag.filename ?
					 k->c->diag.filename : "stdin";

		fprintf(k->out.f, "{\"type\": \"helper_error\", \"msg\": ");
		out_json_string(k->out.f, strerror((int)-ret),
				strlen(strerror((int)-ret)));
		fprintf(k->out.f, ", \"helper\": \"%s\", \"retcode\": %d, "
			"\"filename\": ", e->helper, (int)ret);
		out_json_string(k->out.f, fn, strlen(fn));
		fprintf(k->out.f, ", \"line\": %d, \"col\": %d}\n",
			l ? l->first_line : 0, l ? l->first_column : 0);
		return;
	}
	if (k->out.format == OUT_JSON) {
		fprintf(k->out.f, "{\"type\": \"helper_error\", \"helper\": "
			"\"%s\", \"retcode\": %d, \"line\": %d, "
			"\"col\": %d}\n", e->helper, (int)ret,
			l ? l->first_line : 0, l ? l->first_column : 0);
		return;
	}
	if (!strcmp(e->helper, CG_DIV_ZERO_HELPER))
		snprintf(msg, sizeof(msg), "%s",
			 "Divide or modulo by 0 detected. This can lead to "
			 "unexpected results. 1 is being used as the result.");
	else if (!strcmp(e->helper, CG_ARRAY_OOB_HELPER))
		snprintf(msg, sizeof(msg), "%s",
			 "Array access out of bounds. This can lead to "
			 "unexpected results.");
	else if (compat_has(COMPAT_HELPER_CHECK))
		snprintf(msg, sizeof(msg),
			 "%s\nAdditional Info - helper: %s, retcode: %d",
			 !strcmp(e->helper, "map_lookup_elem") ?
				 "Can't lookup map element because it does not exist." :
			 !strcmp(e->helper, "map_delete_elem") &&
					 ret == -ENOENT ?
				 "Can't delete map element because it does not exist." :
				 strerror((int)-ret),
			 e->helper, (int)ret);
	else if (ret < 0)
		snprintf(msg, sizeof(msg), "Failed to %s: %s (%d)", e->helper,
			 strerror((int)-ret), (int)ret);
	else
		snprintf(msg, sizeof(msg), "Failed to %s: %d", e->helper,
			 (int)ret);
	g.msg = msg;
	if (l)
		g.loc = *l;
	if (k->c) {
		one = k->c->diag;
		one.head = &g;
		diag_print(&one, k->out.f);
	} else if (!diag_no_warnings) {
		fprintf(k->out.f, "WARNING: %s\n", msg);
	}
}

/* A user-mode clear()/zero()'s thread values (cg_map_event()), or NULL. */
static const void *kernel_ev_own(const struct cg_event *e, const void *args,
				 size_t asize)
{
	return e->native && asize >= e->size - sizeof(struct cg_event_hdr) &&
	       e->size > sizeof(struct cg_event_hdr) ? args : NULL;
}

static int kernel_event(void *ctx, void *data, size_t size)
{
	struct kernel *k = ctx;
	const struct cg_object *obj = k->obj;
	struct cg_event_hdr h;
	const struct cg_event *e;
	const char *args = (const char *)data + sizeof(h);
	size_t asize = size - sizeof(h);

	if (size < sizeof(h))
		return 0;
	memcpy(&h, data, sizeof(h));
	if (h.id >= (uint64_t)obj->nevents)
		return 0;
	e = &obj->events[h.id];
	/* a stopped process waits for its SIGCONT, exiting or not */
	if (e->kind == CG_EV_WATCH) {
		kernel_watch_event(k, e, args, asize);
		return 0;
	}
	if (e->kind == CG_EV_STACK_NOTE || e->kind == CG_EV_USTACK) {
		/* not output: whether exiting or not */
		kernel_stack_event(k, e, args, asize);
		return 0;
	}
	/*
	 * After exit() only END's events print, as bpftrace.  After Ctrl-C,
	 * what the probes sent before it still prints, as bpftrace's last
	 * drain does (the probes are stopped: the rings hold no more), but
	 * for system(): a ring of those under load (a millisecond each)
	 * would hold the end up for minutes.
	 */
	if (!k->in_end && ((k->exiting && !k->in_iter) ||
			   (signals_stopping() && e->kind == CG_EV_SYSTEM)))
		return 0;
	switch (e->kind) {
	case CG_EV_PRINTF: {
		const struct type *dt = k->ev_types[h.id];
		void *tmp = NULL;

		if (!e->args_type || asize < e->args_type->size)
			break;
		args = kernel_display(k, e->args_type, dt, args, &tmp);
		if (kernel_located_printf(k, e, &k->fmts[h.id], dt, args,
					  dt == e->args_type ? asize :
							       dt->size))
			;
		else
			out_printf(&k->out, &k->fmts[h.id], dt, args,
				   dt == e->args_type ? asize : dt->size);
		free(tmp);
		break;
	}
	case CG_EV_SYSTEM:
	case CG_EV_CAT: {
		const struct type *dt = k->ev_types[h.id];
		void *tmp = NULL;
		char *text;

		if (!e->args_type || asize < e->args_type->size)
			break;
		args = kernel_display(k, e->args_type, dt, args, &tmp);
		text = out_format(&k->fmts[h.id], dt, args,
				  dt == e->args_type ? asize : dt->size);
		free(tmp);
		if (text)
			kernel_copy_output(k, text, e->kind == CG_EV_SYSTEM);
		free(text);
		break;
	}
	case CG_EV_JOIN:
		kernel_join(k, e, args, asize);
		break;
	case CG_EV_TIME:
		out_time(&k->out, e->fmt ? e->fmt : "%H:%M:%S\n", NULL);
		break;
	case CG_EV_EXIT:
		/* the first exit(code) decides the exit status (its record
		 * holds the code; a time stamp may follow any record) */
		if (!k->exiting && e->size >= sizeof(h) + 8 && asize >= 8) {
			int64_t code;

			memcpy(&code, args, sizeof(code));
			k->exit_code = (int)(code & 0xff);
		}
		k->exiting = true;
		break;
	case CG_EV_PRINT:
		kernel_print_map(k, e->map, e->top, e->div);
		break;
	case CG_EV_PRINT_VALUE: {
		const struct type *dt = k->ev_types[h.id];
		void *tmp = NULL;

		if (asize < e->args[0].type->size)
			break;
		args = kernel_display(k, e->args[0].type, dt, args, &tmp);
		out_print_value(&k->out, dt, args);
		free(tmp);
		break;
	}
	case CG_EV_CLEAR:
		kernel_map_clear_both(k, e->map, kernel_ev_own(e, args, asize));
		break;
	case CG_EV_ZERO:
		kernel_map_zero(k, e->map);
		if (k->map_hook)
			k->map_hook(k->map_hook_ctx, e->kind, e->map,
				    kernel_ev_own(e, args, asize));
		break;
	case CG_EV_WATCH:	/* taken above */
		break;
	case CG_EV_UNWATCH:
		kernel_watch_event(k, e, args, asize);
		break;
	case CG_EV_HELPER_ERROR:
		kernel_helper_error(k, e, args, asize);
		break;
	case CG_EV_DELETE:
		/* from a user-mode probe: the kernel's copy of the key (a
		 * kernel probe deleted it itself, and may have added it
		 * again since) */
		if (e->map < 0 || e->map >= obj->nmaps ||
		    asize < obj->maps[e->map].key_size)
			break;
		if (e->native && kernel_map_fd(k, e->map) >= 0)
			bpf_map_delete_elem(kernel_map_fd(k, e->map), args);
		if (k->map_hook)
			k->map_hook(k->map_hook_ctx, e->kind, e->map, args);
		break;
	case CG_EV_STACK_NOTE:
	case CG_EV_USTACK:
		break;		/* kernel_stack_event() above */
	}
	fflush(k->out.f);
	return 0;
}

int kernel_handle_event(struct kernel *k, const void *data, size_t size)
{
	return kernel_event(k, (void *)data, size);
}

/* A record of the ring buffer: printed, or handed to the hook. */
int kernel_rb_event(void *ctx, void *data, size_t size)
{
	struct kernel *k = ctx;

	/*
	 * Ctrl-C while the ring is read: under load it fills as fast as it
	 * is read and the reading would not end; the probes stop now and
	 * what they sent until then still prints.
	 */
	if (!k->stopped && signals_stopping())
		kernel_stop_probes(k);
	if (k->hook)
		return k->hook(k->hook_ctx, data, size);
	return kernel_event(k, data, size);
}

void kernel_set_event_hook(struct kernel *k, kernel_event_fn fn, void *ctx)
{
	k->hook = fn;
	k->hook_ctx = ctx;
}

int kernel_print_maps(struct kernel *k)
{
	return kernel_print_all_maps(k, true);
}

int kernel_print_maps_now(struct kernel *k)
{
	return kernel_print_all_maps(k, false);
}

/* "Lost N events" when the ring was full since the last check. */
static void kernel_check_lost(struct kernel *k)
{
	uint64_t *v, sum = 0;
	uint32_t zero = 0;

	if (k->lost_fd < 0)
		return;
	v = xcalloc(k->ncpus, 8);
	if (!bpf_map_lookup_elem(k->lost_fd, &zero, v)) {
		for (int i = 0; i < k->ncpus; i++)
			sum += v[i];
		if (sum > k->lost) {
			out_lost_events(&k->out, sum - k->lost);
			k->lost = sum;
		}
	}
	free(v);
}

uint64_t kernel_map_full(struct kernel *k, int map)
{
	uint32_t key = map;
	uint64_t *v, sum = 0;

	if (k->full_fd < 0 || map < 0 || map >= k->obj->nmaps)
		return 0;
	v = xcalloc(k->ncpus, 8);
	if (!bpf_map_lookup_elem(k->full_fd, &key, v))
		for (int i = 0; i < k->ncpus; i++)
			sum += v[i];
	free(v);
	return sum;
}

/* "Map full" at exit, for each map that refused updates. */
void kernel_map_full_warnings(struct kernel *k)
{
	/* with -k each one was reported as it came (kernel_helper_error) */
	if (k->c && k->c->helper_check)
		return;
	for (int i = 0; i < k->obj->nmaps; i++) {
		uint64_t n = kernel_map_full(k, i);

		if (n)
			out_map_full(stderr, k->obj->maps[i].name,
				     k->obj->maps[i].max_entries, n);
	}
}

/* Take every record waiting in the ring, then report losses. */
void kernel_consume(struct kernel *k)
{
	ring_buffer__consume(k->rb);
	kernel_check_lost(k);
}

int kernel_poll(struct kernel *k, int timeout_ms)
{
	int n = ring_buffer__poll(k->rb, timeout_ms);

	kernel_check_lost(k);
	return n == -EINTR ? 0 : n;
}

int kernel_drain(struct kernel *k)
{
	int n = ring_buffer__consume(k->rb);

	kernel_check_lost(k);
	return n;
}

/* Set the exit flag of the globals map: the probes do nothing more. */
void kernel_stop_probes(struct kernel *k)
{
	uint64_t v[3];
	uint32_t zero = 0;

	k->stopped = true;
	if (k->globals_fd < 0 ||
	    bpf_map_lookup_elem(k->globals_fd, &zero, v))
		return;
	v[2] = 1;
	bpf_map_update_elem(k->globals_fd, &zero, v, BPF_ANY);
}

int kernel_exit_code(const struct kernel *k)
{
	return k ? k->exit_code : 0;
}

int kernel_attach_status(const struct kernel *k)
{
	return k && k->attach_status ? k->attach_status : 1;
}

bool kernel_exiting(const struct kernel *k)
{
	return k->exiting;
}

bool kernel_use_multi(const struct cg_prog *p)
{
	return (p->provider == PROV_UPROBE || p->provider == PROV_URETPROBE ||
		p->provider == PROV_USDT) &&
	       p->nmatches >= 1 && kfeat_has(KFEAT_UPROBE_MULTI);
}
