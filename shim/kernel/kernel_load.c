/*
 * Loading the BPF object: libbpf open_mem with the verifier log, program
 * types and attach targets, globals, BEGIN/END through BPF_PROG_TEST_RUN.
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
#include "compat.h"
#include "child.h"
#include "compile.h"
#include "format.h"
#include "exitwatch.h"
#include "kernel.h"
#include "output.h"
#include "probes.h"
#include "sema.h"
#include "tracepoint.h"
#include "util.h"
#include "env.h"
#include "kernel_int.h"
#include "kfeat.h"
#include "stack_sym.h"

/* ---- load ---------------------------------------------------------- */

/*
 * BPFTRACE_PERF_RB_PAGES pages per CPU: the ring buffer's size, rounded
 * up to a power of two (a BPF ring buffer's must be one).
 */
static void kernel_ring_size(struct kernel *k)
{
	uint64_t pages = env_get()->perf_rb_pages, want, size = 4096;
	struct bpf_map *m;

	if (!pages || !k->obj->ringbuf_name)
		return;
	want = pages * 4096 * (uint64_t)k->ncpus;
	while (size < want && size < (1ull << 31))
		size <<= 1;
	m = bpf_object__find_map_by_name(k->bo, k->obj->ringbuf_name);
	if (m)
		bpf_map__set_max_entries(m, (uint32_t)size);
}

static int kernel_open(struct kernel *k)
{
	const struct cg_object *obj = k->obj;
	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "ubt");
	int err;

	/* every event comes through it (codegen/cg.c) */
	if (!kfeat_has(KFEAT_RINGBUF)) {
		fprintf(stderr, "ubt: cannot load the BPF programs: %s\n",
			kfeat_missing(KFEAT_RINGBUF));
		return -ENOTSUP;
	}

	/* BPFTRACE_LOG_SIZE: the verifier's log buffer (with -v the log of
	 * every program is asked for, and a load fails when it does not
	 * fit, as bpftrace's) */
	if (env_get()->log_size) {
		k->log_buf = xcalloc(1, env_get()->log_size);
		oo.kernel_log_buf = k->log_buf;
		oo.kernel_log_size = env_get()->log_size;
		oo.kernel_log_level = kernel_get_verbose() ? 1 : 0;
	}
	k->bo = bpf_object__open_mem(obj->image, obj->image_size, &oo);
	if (!k->bo) {
		err = -errno;
		fprintf(stderr, "ubt: cannot open the BPF object: %s\n",
			strerror(-err));
		return err;
	}
	kernel_ring_size(k);
	k->progs = xcalloc(obj->nprogs + 1, sizeof(*k->progs));
	k->multi = xcalloc(obj->nprogs + 1, sizeof(*k->multi));
	for (int i = 0; i < obj->nprogs; i++) {
		k->progs[i] = bpf_object__find_program_by_name(
			k->bo, obj->progs[i].name);
		if (!k->progs[i])
			BUG("program %s missing from the object",
			    obj->progs[i].name);
		/* BEGIN/END run through BPF_PROG_TEST_RUN: raw tracepoint
		 * programs; nothing to auto-attach */
		bpf_program__set_autoattach(k->progs[i], false);
		/* a kfunc no BTF has: libbpf would fail the whole load;
		 * its attach says why (kernel_kprobe.c) */
		if (obj->progs[i].nmatches == 1 &&
		    obj->progs[i].matches[0].no_btf)
			bpf_program__set_autoload(k->progs[i], false);
		k->multi[i] = kernel_use_multi(&obj->progs[i]);
		if (k->multi[i])
			bpf_program__set_expected_attach_type(
				k->progs[i], KERNEL_BPF_TRACE_UPROBE_MULTI);
	}
	return 0;
}

/* The concrete targets of every program, from cg_build()'s expansion. */
static void kernel_targets(struct kernel *k)
{
	const struct cg_object *obj = k->obj;
	int n = 0;

	for (int i = 0; i < obj->nprogs; i++)
		n += obj->progs[i].nmatches;
	k->targets = xcalloc(n + 1, sizeof(*k->targets));
	for (int i = 0; i < obj->nprogs; i++)
		for (int j = 0; j < obj->progs[i].nmatches; j++) {
			k->targets[k->ntargets].prog = i;
			k->targets[k->ntargets].m = obj->progs[i].matches[j];
			k->ntargets++;
		}
}

static bool kernel_has_standby(const struct cg_object *obj)
{
	for (int i = 0; i < obj->nprogs; i++)
		if (obj->progs[i].standby)
			return true;
	return false;
}

/*
 * Load the object; one with standby programs (cg.h: for a fallback that
 * may never come) first quietly, and if that fails again without them:
 * they must not cost the run that works without them.
 */
static int kernel_load_standby(struct kernel *k)
{
	int err, verbose = kernel_get_verbose();

	if (!kernel_has_standby(k->obj))
		return bpf_object__load(k->bo);
	kernel_set_verbose(-1);
	err = bpf_object__load(k->bo);
	kernel_set_verbose(verbose);
	if (!err)
		return 0;
	bpf_object__close(k->bo);
	k->bo = NULL;
	free(k->progs);
	free(k->multi);
	free(k->log_buf);
	k->log_buf = NULL;
	err = kernel_open(k);
	if (err)
		return err;
	for (int i = 0; i < k->obj->nprogs; i++)
		if (k->obj->progs[i].standby)
			bpf_program__set_autoload(k->progs[i], false);
	k->standby_dropped = true;
	if (verbose)
		fprintf(stderr, "ubt: the kernel programs of the user-mode "
			"probes that share maps with kernel probes did not "
			"load (kept for a target that cannot map the tables): "
			"without them\n");
	return bpf_object__load(k->bo);
}

/*
 * bpftrace loads a probe's program as it attaches it, after the
 * "Attaching N probes..." line: printed before a load's error as there.
 */
static void kernel_load_attaching(struct kernel *k,
				  const struct kernel_opts *o)
{
	if (!(o && o->quiet) && !compat_has(COMPAT_ATTACHED_MSG)) {
		out_attached(&k->out, cg_object_probes(k->obj));
		fflush(k->out.f);
	}
}

/*
 * The kernel refused a program (err): bpftrace 0.17's words, which name
 * the probe whose program it was ("Error loading program: PROBE", with
 * " (try -v)" without -v; under -v the log-size message for ENOSPC).
 * The program is the one libbpf's held messages name; where they name
 * none, ubt's own words with the kernel's reason.
 */
static void kernel_load_refused(struct kernel *k,
				const struct kernel_opts *o, int err)
{
	const char *failed = kernel_log_failed_prog(), *probe = NULL;
	bool verbose = kernel_get_verbose() > 0;

	for (int i = 0; failed && i < k->obj->nprogs; i++)
		if (!strcmp(k->obj->progs[i].name, failed))
			probe = k->obj->progs[i].probe_name;
	if (probe && !(err == -ENOSPC && k->log_buf && verbose))
		kernel_load_attaching(k, o);
	kernel_log_release(true);
	if (err == -ENOSPC && k->log_buf && verbose) {
		fprintf(stderr, "ERROR: Error: Failed to load program, "
			"verification log buffer not big enough, try "
			"increasing the BPFTRACE_LOG_SIZE environment variable "
			"beyond the current value of %llu bytes\n",
			(unsigned long long)env_get()->log_size);
		return;
	}
	if (!probe) {
		fprintf(stderr, "ubt: the kernel rejected the BPF program: %s\n",
			strerror(-err));
		return;
	}
	fprintf(stderr, "ERROR: Error loading program: %s%s\n", probe,
		verbose ? "" : " (try -v)");
}

/*
 * The verifier refused a helper in the function a program attaches to
 * ("helper call is not allowed in probe"; bpf_d_path outside its
 * allowlist): bpftrace 0.17's located error, "helper bpf_d_path not
 * supported in probe" at the path() call, from the log libbpf printed
 * (held) or BPFTRACE_LOG_SIZE's buffer.  false for any other refusal.
 */
static bool kernel_helper_refused(struct kernel *k,
				  const struct kernel_opts *o)
{
	const char *log = kernel_log_held();

	if (!strstr(log, "helper call is not allowed in probe") &&
	    !(k->log_buf &&
	      strstr(k->log_buf, "helper call is not allowed in probe")))
		return false;
	if (!strstr(log, "call bpf_d_path#") &&
	    !(k->log_buf && strstr(k->log_buf, "call bpf_d_path#")))
		return false;
	for (int i = 0; i < k->obj->nprogs; i++)
		if (k->obj->progs[i].d_path_refused) {
			/* bpftrace loads a probe's program as it attaches
			 * it, after this line */
			kernel_load_attaching(k, o);
			fputs(k->obj->progs[i].d_path_refused, stderr);
			return true;
		}
	return false;
}

bool kernel_standby_loaded(const struct kernel *k)
{
	return !k->standby_dropped;
}

int kernel_load(const struct cg_object *obj, const struct kernel_opts *o,
		struct kernel **out)
{
	struct kernel *k = xcalloc(1, sizeof(*k));
	int err;

	k->obj = obj;
	k->opts = o;
	arena_init(&k->arena);
	out_init(&k->out, o && o->out ? o->out : stdout,
		 o && o->json ? OUT_JSON : OUT_TEXT);
	k->globals_fd = -1;
	k->lost_fd = -1;
	k->full_fd = -1;
	k->ncpus = libbpf_num_possible_cpus();
	if (k->ncpus <= 0)
		k->ncpus = 1;
	if (!kernel_get_verbose())
		kernel_set_verbose(o ? o->verbose : 0);
	err = kernel_open(k);
	if (err)
		goto fail;
	kernel_log_hold();
	err = kernel_load_standby(k);
	if (err && kernel_helper_refused(k, o)) {
		kernel_log_release(kernel_get_verbose() > 0);
		err = -ENOEXEC;
		goto fail;
	}
	if (err) {
		kernel_load_refused(k, o, err);
		goto fail;
	}
	kernel_log_release(true);
	k->map_fds = xcalloc(obj->nmaps + 1, sizeof(int));
	for (int i = 0; i < obj->nmaps; i++)
		k->map_fds[i] = bpf_object__find_map_fd_by_name(
			k->bo, obj->maps[i].bpf_name);
	if (obj->globals_name)
		k->globals_fd = bpf_object__find_map_fd_by_name(
			k->bo, obj->globals_name);
	if (obj->lost_name)
		k->lost_fd = bpf_object__find_map_fd_by_name(k->bo,
							     obj->lost_name);
	if (obj->full_name)
		k->full_fd = bpf_object__find_map_fd_by_name(k->bo,
							     obj->full_name);
	k->rb = ring_buffer__new(
		bpf_object__find_map_fd_by_name(k->bo, obj->ringbuf_name),
		kernel_rb_event, k, NULL);
	if (!k->rb) {
		err = -errno;
		fprintf(stderr, "ubt: cannot set up the ring buffer: %s\n",
			strerror(-err));
		goto fail;
	}
	kernel_targets(k);
	k->ev_types = arena_alloc(&k->arena,
				  (obj->nevents + 1) * sizeof(*k->ev_types));
	for (int i = 0; i < obj->nevents; i++) {
		const struct cg_event *e = &obj->events[i];

		if ((e->kind == CG_EV_PRINTF || e->kind == CG_EV_SYSTEM ||
		     e->kind == CG_EV_CAT) && e->args_type)
			k->ev_types[i] = kernel_display_type(k, e->args_type);
		else if (e->kind == CG_EV_PRINT_VALUE && e->nargs)
			k->ev_types[i] = kernel_display_type(k,
							     e->args[0].type);
	}
	k->fmts = arena_alloc(&k->arena,
			      (obj->nevents + 1) * sizeof(*k->fmts));
	for (int i = 0; i < obj->nevents; i++)
		if ((obj->events[i].kind == CG_EV_PRINTF ||
		     obj->events[i].kind == CG_EV_SYSTEM ||
		     obj->events[i].kind == CG_EV_CAT) && obj->events[i].fmt)
			fmt_parse(&k->arena, obj->events[i].fmt,
				  strlen(obj->events[i].fmt), &k->fmts[i]);
	/* the traced process's mappings now, for the symbols of its
	 * addresses if it has exited when they print */
	if (o && o->pid > 0)
		stack_syms_note(kernel_syms(k), o->pid);
	*out = k;
	return 0;
fail:
	kernel_free(k);
	return err;
}

/* Write the globals map: start time and -c child pid (noted for stacks). */
int kernel_set_globals(struct kernel *k, uint64_t cpid)
{
	uint64_t v[3];
	uint32_t zero = 0;

	k->cpid = (int)cpid;
	/* the -c command's mappings, taken at its entry point (BPF was
	 * loaded before it started) */
	if (cpid > 0)
		stack_syms_note(kernel_syms(k), (int)cpid);
	if (k->globals_fd < 0)
		return 0;
	v[0] = mono_ns();
	v[1] = cpid;
	v[2] = 0;	/* exit() not called yet */
	return bpf_map_update_elem(k->globals_fd, &zero, v, BPF_ANY) ? -errno :
								       0;
}

static int kernel_run_kind(struct kernel *k, int provider)
{
	for (int i = 0; i < k->obj->nprogs; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, ro);
		int err;

		if (k->obj->progs[i].provider != provider)
			continue;
		err = bpf_prog_test_run_opts(bpf_program__fd(k->progs[i]),
					     &ro);
		if (err) {
			err = -errno;
			fprintf(stderr, "ubt: cannot run %s: %s\n",
				provider == PROV_BEGIN ? "BEGIN" : "END",
				strerror(-err));
			return err;
		}
	}
	return 0;
}

int kernel_run_begin(struct kernel *k)
{
	return kernel_run_kind(k, PROV_BEGIN);
}

int kernel_run_end(struct kernel *k)
{
	/* END prints, also after exit() */
	k->in_end = true;
	return kernel_run_kind(k, PROV_END);
}

void kernel_free(struct kernel *k)
{
	if (!k)
		return;
	kernel_watch_resume(k);
	kernel_detach(k);
	ring_buffer__free(k->rb);
	bpf_object__close(k->bo);
	free(k->log_buf);
	free(k->links);
	free(k->watches);
	free(k->pfds);
	free(k->progs);
	free(k->multi);
	free(k->map_fds);
	free(k->targets);
	stack_syms_free(k->syms);
	arena_release(&k->arena);
	free(k);
}
