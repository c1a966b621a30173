/*
 * The native target (codegen/native.c, irb_native.c) end to end: probe
 * bodies built through the native irb helpers, emitted relocation-free,
 * refused when a relocation remains, patched with the runtime's TLS offset,
 * installed into tests/user/target and run there: a keyless count() at a
 * fixed offset (exact count), a keyed count() in a per-thread table,
 * events through the thread's ring, the exit flag.  Costs per hit are
 * printed, never checked: tests hold on a loaded machine (make bench
 * checks the budgets); a round the target does not answer fails, with
 * how the target ended.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/bpf.h>

#include "cg.h"
#include "cg_int.h"
#include "compile.h"
#include "irb_native.h"
#include "native.h"
#include "proc.h"
#include "user.h"
#include "util.h"
#include "tests/tap.h"

static char target[4096];

/* One timed round of the target's bench loop: ns per call. */
static double round_ns(struct proc *p)
{
	char line[256];
	double ns;

	if (write(p->in, "x", 1) != 1 ||
	    read_line(p->out, line, sizeof(line)) ||
	    sscanf(line, "ns %lf", &ns) != 1)
		return -1;
	return ns;
}

/* A target target_fate() found gone, and its wait status. */
static pid_t reaped_pid;
static int reaped_status;

/*
 * After a round went unanswered: how the target ended, for the message
 * ("" when all went well).  It is reaped here if it is gone.
 */
static const char *target_fate(struct proc *p, bool fine)
{
	static char why[640];
	int st;

	if (fine)
		return "";
	if (waitpid(p->pid, &st, WNOHANG) != p->pid) {
		char path[64], state[256] = "?", sc[256] = "?";
		FILE *f;

		/* where it is: its state, and its system call or pc */
		snprintf(path, sizeof(path), "/proc/%d/status", p->pid);
		f = fopen(path, "r");
		while (f && fgets(state, sizeof(state), f))
			if (!strncmp(state, "State:", 6))
				break;
		if (f)
			fclose(f);
		snprintf(path, sizeof(path), "/proc/%d/syscall", p->pid);
		f = fopen(path, "r");
		if (f && !fgets(sc, sizeof(sc), f))
			strcpy(sc, "?");
		if (f)
			fclose(f);
		state[strcspn(state, "\n")] = 0;
		sc[strcspn(sc, "\n")] = 0;
		snprintf(why, sizeof(why), ": the target runs, silent (%s; "
			 "syscall %s)", state, sc);
		return why;
	}
	reaped_pid = p->pid;
	reaped_status = st;
	if (WIFSIGNALED(st))
		snprintf(why, sizeof(why), ": the target was killed by "
			 "signal %d", WTERMSIG(st));
	else
		snprintf(why, sizeof(why), ": the target exited with %d",
			 WEXITSTATUS(st));
	return why;
}

/* The target's exit code once its stdin is closed; -1: not an exit. */
static int target_exit(struct proc *p)
{
	int st;

	if (p->pid == reaped_pid)
		st = reaped_status;
	else if (waitpid(p->pid, &st, 0) != p->pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static double best_ns(struct proc *p, int rounds)
{
	double best = -1;

	for (int i = 0; i < rounds; i++) {
		double ns = round_ns(p);

		if (ns < 0)
			return -1;
		if (best < 0 || ns < best)
			best = ns;
	}
	return best;
}

/* ---- probe bodies through the native irb ---- */

static struct cg_map maps[] = {
	{ .name = "@c", .bpf_name = "AT_c", .key_size = 8, .value_size = 8,
	  .percpu = true },
	{ .name = "@k", .bpf_name = "AT_k", .key_size = 8, .value_size = 8,
	  .percpu = true, .max_entries = 64 },
};
static struct type u64_type = { .kind = TY_INT, .size = 8 };
static struct cg_object obj = { .target = CG_TARGET_NATIVE, .maps = maps,
				.nmaps = 2 };

struct built {
	struct irb ir;
	LLVMValueRef globals, lost, ring, c, k;
};

static void build_begin(struct built *b)
{
	maps[1].key_type = &u64_type;
	irb_native_init(&b->ir, "t");
	irb_native_set_object(&b->ir, &obj);
	b->c = irb_native_map_define(&b->ir, "AT_c", BPF_MAP_TYPE_PERCPU_HASH,
				     8, 8, 4096);
	b->k = irb_native_map_define(&b->ir, "AT_k", BPF_MAP_TYPE_PERCPU_HASH,
				     8, 8, 64);
	b->ring = irb_native_map_define(&b->ir, CG_MAP_RINGBUF,
					BPF_MAP_TYPE_RINGBUF, 0, 0, 1 << 20);
	b->lost = irb_native_map_define(&b->ir, CG_MAP_LOST,
					BPF_MAP_TYPE_PERCPU_ARRAY, 4, 8, 1);
	b->globals = irb_native_map_define(&b->ir, CG_MAP_GLOBALS,
					   BPF_MAP_TYPE_ARRAY, 4, 24, 1);
}

/* if (globals->exit) return 0; as cg.c's prologue */
static void exit_check(struct built *b)
{
	struct irb *ir = &b->ir;
	LLVMValueRef key = irb_alloca(ir, 4, "gk");
	LLVMValueRef gp, ex;
	LLVMBasicBlockRef stop, cont;

	LLVMBuildStore(ir->b, LLVMConstInt(ir->i32, 0, 0), key);
	gp = irb_native_map_lookup(ir, b->globals, key);
	ex = LLVMBuildLoad2(ir->b, ir->i64, irb_gep(ir, gp, CG_GLOBALS_EXIT),
			    "");
	stop = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "stop");
	cont = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "cont");
	LLVMBuildCondBr(ir->b, LLVMBuildICmp(ir->b, LLVMIntNE, ex,
					     irb_const(ir, 0), ""),
			stop, cont);
	LLVMPositionBuilderAtEnd(ir->b, stop);
	LLVMBuildRet(ir->b, irb_const(ir, 0));
	LLVMPositionBuilderAtEnd(ir->b, cont);
}

static void incr(struct built *b, LLVMValueRef map, LLVMValueRef keyv)
{
	struct irb *ir = &b->ir;
	LLVMValueRef key = irb_alloca(ir, 8, "key");
	LLVMValueRef p;
	LLVMBasicBlockRef yes, done;

	LLVMBuildStore(ir->b, keyv, key);
	p = irb_native_map_lookup(ir, map, key);
	yes = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "yes");
	done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "done");
	LLVMBuildCondBr(ir->b, LLVMBuildIsNull(ir->b, p, ""), done, yes);
	LLVMPositionBuilderAtEnd(ir->b, yes);
	LLVMBuildStore(ir->b,
		       LLVMBuildAdd(ir->b,
				    LLVMBuildLoad2(ir->b, ir->i64, p, ""),
				    irb_const(ir, 1), ""),
		       p);
	LLVMBuildBr(ir->b, done);
	LLVMPositionBuilderAtEnd(ir->b, done);
}

/* @c = count() */
static void fn_count(struct built *b)
{
	irb_native_func_begin(&b->ir, "p_count");
	exit_check(b);
	incr(b, b->c, irb_const(&b->ir, 0));
	irb_func_end(&b->ir);
}

/* @k[arg0 & 7] = count(); event { id 5, arg0, pid<<32|tid } */
static void fn_keyed_event(struct built *b)
{
	struct irb *ir = &b->ir;
	LLVMValueRef ctx = irb_native_func_begin(ir, "p_keyed");
	LLVMValueRef a0, rec;

	exit_check(b);
	a0 = irb_ctx_load(ir, ctx, 112, 8);
	incr(b, b->k, LLVMBuildAnd(ir->b, a0, irb_const(ir, 7), ""));
	rec = irb_alloca(ir, 24, "rec");
	LLVMBuildStore(ir->b, irb_const(ir, 5), rec);
	LLVMBuildStore(ir->b, a0, irb_gep(ir, rec, 8));
	LLVMBuildStore(ir->b,
		       irb_native_helper(ir, BPF_FUNC_get_current_pid_tgid,
					 NULL, 0),
		       irb_gep(ir, rec, 16));
	irb_native_ringbuf_output(ir, b->ring, rec, 24);
	irb_func_end(ir);
}

static void test_emit(void)
{
	struct built b;
	struct native_code f[2] = { { .name = "p_count" },
				    { .name = "p_keyed" } };
	char err[256] = "";
	int n, ret;
	uint64_t area;
	const struct native_map *nm;

	build_begin(&b);
	fn_count(&b);
	fn_keyed_event(&b);
	nm = irb_native_maps(&b.ir, &n, &area);
	ok(n == 5 && nm[0].kind == NATIVE_MAP_FIXED &&
	   nm[0].off == NATIVE_MAPS_OFF && nm[1].kind == NATIVE_MAP_HTAB &&
	   nm[1].nslots == 128 && nm[1].max_keys == 64 && nm[4].off == 0 &&
	   area > nm[1].off,
	   "map layout: keyless at a fixed offset, keyed in a table");
	ret = irb_native_emit(&b.ir, true, f, 2, err, sizeof(err));
	ok(!ret, "emit two functions%s%s", ret ? ": " : "", err);
	if (!ret) {
		bool fs = false;

		for (size_t i = 0; i < f[0].len; i++)
			fs |= ((uint8_t *)f[0].code)[i] == 0x64;
		ok(f[0].len > 0 && f[0].len <= 40 && fs &&
		   ((uint8_t *)f[0].code)[f[0].len - 1] == 0xc3,
		   "count() is %zu bytes, %%fs-relative, ends in ret",
		   f[0].len);
		ok(!native_patch_tls(f[0].code, f[0].len, -64) &&
		   native_patch_tls(f[0].code, f[0].len, -64) == -ENOENT,
		   "the TLS offset is patched once");
	}
	native_code_release(f, 2);
	irb_release(&b.ir);
	irb_native_release(&b.ir);

	/* a call to an outside function needs a relocation: refused */
	build_begin(&b);
	{
		struct irb *ir = &b.ir;
		LLVMTypeRef ft = LLVMFunctionType(ir->i64, NULL, 0, 0);
		LLVMValueRef ext = LLVMAddFunction(ir->mod, "getpid", ft);

		irb_native_func_begin(ir, "p_ext");
		LLVMBuildCall2(ir->b, ft, ext, NULL, 0, "");
		irb_func_end(ir);
	}
	f[0].name = "p_ext";
	ret = irb_native_emit(&b.ir, true, f, 1, err, sizeof(err));
	ok(ret == -ENOEXEC && strstr(err, "relocation"),
	   "code that needs a relocation is refused (%s)", err);
	irb_release(&b.ir);
	irb_native_release(&b.ir);

	/* a construct the native target lacks is refused, not faked */
	build_begin(&b);
	irb_native_func_begin(&b.ir, "p_stack");
	irb_native_helper(&b.ir, BPF_FUNC_get_stackid, NULL, 0);
	irb_func_end(&b.ir);
	f[0].name = "p_stack";
	ret = irb_native_emit(&b.ir, true, f, 1, err, sizeof(err));
	ok(ret == -ENOTSUP && strstr(err, "builtin"),
	   "unsupported constructs are refused (%s)", err);
	irb_release(&b.ir);
	irb_native_release(&b.ir);
}

static int add_u64(const void *data, uint32_t block, void *arg)
{
	uint64_t v;

	(void)block;
	memcpy(&v, data, 8);
	*(uint64_t *)arg += v;
	return 0;
}

struct evs {
	long n, bad;
	uint64_t sum;
	pid_t pid;
};

static int on_event(uint32_t type, const void *data, uint32_t len, void *arg)
{
	struct evs *e = arg;
	uint64_t v[3];

	if (type != NATIVE_REC_EVENT || len < 24) {
		e->bad++;
		return 0;
	}
	memcpy(v, data, 24);
	if (v[0] != 5 || (v[2] >> 32) != (uint64_t)e->pid ||
	    (uint32_t)v[2] != (uint32_t)e->pid)
		e->bad++;
	e->sum += v[1];
	e->n++;
	return 0;
}

struct keyed {
	uint64_t counts[8];
	long bad;
};

static int on_slot(const void *key, const void *val, uint32_t block,
		   void *arg)
{
	struct keyed *k = arg;
	uint64_t kv, vv;

	(void)block;
	memcpy(&kv, key, 8);
	memcpy(&vv, val, 8);
	if (kv > 7)
		k->bad++;
	else
		k->counts[kv] += vv;
	return 0;
}

/* Build, emit, patch and install fn on ut_plain of a bench target. */
static struct ubt_user *run_probe(struct proc *p, const char *fname,
				  const char *iters, uint64_t *c_off,
				  uint64_t *k_off)
{
	char *argv[] = { target, "bench", (char *)iters, NULL };
	struct native_code f = { .name = fname };
	struct built b;
	char err[512], line[64];
	struct ubt_user *u = NULL;
	const struct native_map *nm;
	uint64_t area;
	int n, ret;

	if (spawn(p, argv) || read_line(p->out, line, sizeof(line)))
		return NULL;
	build_begin(&b);
	if (!strcmp(fname, "p_count"))
		fn_count(&b);
	else
		fn_keyed_event(&b);
	nm = irb_native_maps(&b.ir, &n, &area);
	*c_off = nm[0].off;
	*k_off = nm[1].off;
	ret = irb_native_emit(&b.ir, true, &f, 1, err, sizeof(err));
	if (ret) {
		ok(0, "%s: emit: %s", fname, err);
		goto out;
	}
	u = user_attach_pid(p->pid, NULL, err, sizeof(err));
	if (!u) {
		ok(0, "%s: attach: %s", fname, err);
		goto out;
	}
	/* the table the keyed map needs, in every block's template */
	{
		struct memfd_htab t = { .off = nm[1].off,
					.nslots = nm[1].nslots,
					.key_size = 8, .val_size = 8 };
		uint64_t pid = p->pid;
		struct memfd *m = user_memfd(u);

		ret = memfd_htab_add(m, &t);
		memcpy(m->base + m->tmpl_off + NATIVE_GLOBALS_PID, &pid, 8);
	}
	ret = ret ?: native_patch_tls(f.code, f.len, user_tls_offset(u));
	ret = ret ?: user_install(u, &(struct user_probe){
		.sz = sizeof(struct user_probe),
		.binary = target,
		.symbol = "ut_plain",
		.kind = USER_PROBE_ENTRY,
		.code = f.code,
		.code_len = f.len,
	});
	ret = ret ?: user_resume(u);
	ok(!ret, "%s: install and resume%s%s", fname, ret ? ": " : "",
	   ret ? user_error(u) : "");
	if (ret) {
		user_detach(u);
		user_free(u);
		u = NULL;
	}
out:
	native_code_release(&f, 1);
	irb_release(&b.ir);
	irb_native_release(&b.ir);
	return u;
}

static void finish(struct proc *p, struct ubt_user *u)
{
	int st;

	if (u) {
		ok(!user_detach(u), "detach");
		user_free(u);
	}
	close(p->in);
	st = target_exit(p);
	close(p->out);
	ok(st == 0, "target exits 0");
}

static void test_count(void)
{
	enum { N = 10000000 };
	struct proc p;
	struct ubt_user *u;
	double plain = -1, probed;
	uint64_t c_off, k_off, sum = 0;
	char *argv[] = { target, "bench", "10000000", NULL };
	int ret;
	char line[64];

	/* unprobed time first, in its own process */
	if (!spawn(&p, argv) && !read_line(p.out, line, sizeof(line)))
		plain = best_ns(&p, 3);
	close(p.in);
	waitpid(p.pid, NULL, 0);
	close(p.out);

	u = run_probe(&p, "p_count", "10000000", &c_off, &k_off);
	if (!u)
		return;
	probed = best_ns(&p, 3);
	ret = user_read_maps(u, c_off, 8, add_u64, &sum);
	ok(!ret && sum == 3ULL * N, "count(): %llu hits of %llu counted",
	   (unsigned long long)sum, 3ULL * N);
	/* the cost is information (make bench holds the budgets) */
	printf("# ns per call: unprobed %.2f, with count() %.2f: %+.2f ns "
	       "per hit\n", plain, probed, probed - plain);
	ok(plain > 0 && probed > 0,
	   "count(): the target answers every timed round%s",
	   target_fate(&p, plain > 0 && probed > 0));
	/* exit(): the flag in the block stops the probe */
	{
		struct memfd *m = user_memfd(u);
		uint64_t one = 1;
		uint32_t nb = memfd_nblocks_used(m);

		for (uint32_t i = 0; i < nb; i++)
			memcpy(m->base + m->block_off + i * m->block_size +
				       RT_BLK_MAP + CG_GLOBALS_EXIT,
			       &one, 8);
		round_ns(&p);
		sum = 0;
		ok(!user_read_maps(u, c_off, 8, add_u64, &sum) &&
		   sum == 3ULL * N, "no hits counted after the exit flag");
	}
	finish(&p, u);
}

static void test_keyed_events(void)
{
	enum { N = 200 };
	struct proc p;
	struct ubt_user *u;
	uint64_t c_off, k_off;
	struct evs e = { 0 };
	struct keyed k = { 0 };
	struct memfd_htab t;
	bool even = true;
	int ret;

	u = run_probe(&p, "p_keyed", "200", &c_off, &k_off);
	if (!u)
		return;
	e.pid = p.pid;
	round_ns(&p);
	ret = user_read_events(u, on_event, &e);
	ok(ret == N && e.n == N && !e.bad &&
	   e.sum == (uint64_t)N * (N - 1) / 2,
	   "events: %ld records through the ring, in order, pid/tid right",
	   e.n);
	round_ns(&p);
	/* AT_k: 64 keys, in 128 slots (codegen/native.h) */
	t = (struct memfd_htab){ .off = k_off, .nslots = 128, .key_size = 8,
				 .val_size = 8 };
	ok(!memfd_htab_foreach(user_memfd(u), &t, on_slot, &k) && !k.bad,
	   "keyed count(): table read back");
	for (int i = 0; i < 8; i++)
		even &= k.counts[i] == 2 * N / 8;
	ok(even, "keyed count(): %d per key", 2 * N / 8);
	ok(user_lost_events(u) == 0, "no events lost");
	finish(&p, u);
}

/*
 * What ubt itself emits (the whole lowering, native target) for the probe
 * bodies of DESIGN.md's budget table: size, what the probe left in its map
 * after 3 rounds of N calls (exactly), and, as information only, the cost
 * per hit in the target's bench loop (ut_plain, or ut_ret for the return
 * probe): a loaded machine makes timings anything, and the budgets are
 * make bench's.
 */
/* cg_opts.native_thread_maps for test_lowered() (NULL: none) */
static const bool *lowered_thread_maps;

/* What the probe's one map must hold after the rounds. */
enum lowered_check {
	LC_NONE,	/* nothing exact (sum(arg1): arg1 is not set) */
	LC_HITS,	/* its values, over keys and threads, add up to 3N */
	LC_GONE,	/* a key was added, and deleted: no entry is left */
	LC_SUM_I,	/* one entry: the sum of arg0 = i over the rounds */
};

struct lc_sum {
	uint64_t sum;
	int n;
};

static int lc_add_key(const void *key, const void *val, uint32_t block,
		      void *arg)
{
	struct lc_sum *t = arg;
	uint64_t v;

	(void)key;
	(void)block;
	memcpy(&v, val, 8);
	t->sum += v;
	t->n++;
	return 0;
}

static int lc_add_shared(const void *key, const void *val, void *arg)
{
	return lc_add_key(key, val, 0, arg);
}

static int lc_add_buckets(const void *data, uint32_t block, void *arg)
{
	const struct native_map *nm = ((void **)arg)[0];
	uint64_t v;

	(void)block;
	for (uint32_t i = 0; i < nm->nslots; i++) {
		memcpy(&v, (const char *)data + 8 * i, 8);
		*(uint64_t *)((void **)arg)[1] += v;
	}
	return 0;
}

/* Slots of the map's table ever taken (thread 0's, or the shared one). */
static uint64_t lc_used(struct ubt_user *u, const struct native_map *nm)
{
	struct memfd *m = user_memfd(u);
	struct rt_shtab sh;
	struct rt_htab h;

	if (nm->kind == NATIVE_MAP_SHARED) {
		memcpy(&sh, m->base + RT_SHARED_OFF + nm->off, sizeof(sh));
		return sh.used;
	}
	if (memfd_map_read(m, 0, nm->off, &h, sizeof(h)))
		return 0;
	return h.used;
}

/* Check what the map holds; N calls per round, 3 rounds. */
static void lowered_check(struct ubt_user *u, const struct cg_object *obj,
			  const char *body, enum lowered_check how, uint64_t n)
{
	const struct native_map *nm = NULL;
	struct lc_sum t = { 0 };
	int err = -ENOENT;

	/* the program's one map; ubt_ringbuf, ubt_lost... are ubt's */
	for (int i = 0; i < obj->nnative_maps && !nm; i++)
		if (strncmp(obj->native_maps[i].name, "ubt_", 4))
			nm = &obj->native_maps[i];
	if (how == LC_NONE)
		return;
	if (!nm) {
		ok(0, "%s: the map is found", body);
		return;
	}
	switch (nm->kind) {
	case NATIVE_MAP_FIXED:
		err = user_read_maps(u, nm->off, 8, add_u64, &t.sum);
		t.n = 1;
		break;
	case NATIVE_MAP_ARRAY: {
		void *arg[2] = { (void *)nm, &t.sum };

		err = user_read_maps(u, nm->off, 8ull * nm->nslots,
				     lc_add_buckets, arg);
		t.n = 1;
		break;
	}
	case NATIVE_MAP_HTAB: {
		struct memfd_htab h = { .off = nm->off, .nslots = nm->nslots,
					.key_size = nm->key_size,
					.val_size = nm->val_size };

		err = memfd_htab_foreach(user_memfd(u), &h, lc_add_key, &t);
		break;
	}
	case NATIVE_MAP_SHARED: {
		struct memfd_shtab h = { .off = nm->off,
					 .nslots = nm->nslots,
					 .key_size = nm->key_size,
					 .val_size = nm->val_size,
					 .max_probe = nm->max_probe };

		err = memfd_shtab_foreach(user_memfd(u), &h, lc_add_shared,
					  &t);
		break;
	}
	}
	if (how == LC_HITS)
		ok(!err && t.n == 1 && t.sum == 3 * n,
		   "%s: %llu hits counted (%d entries)", body,
		   (unsigned long long)t.sum, t.n);
	else if (how == LC_GONE)
		ok(!err && t.n == 0 && lc_used(u, nm) == 1,
		   "%s: the key was added and deleted (%d entries left, "
		   "%llu slots taken)", body, t.n,
		   (unsigned long long)lc_used(u, nm));
	else
		ok(!err && t.n == 1 && t.sum == 3 * (n * (n - 1) / 2),
		   "%s: holds %llu, 3 times the sum of 0..%llu (%d entries)",
		   body, (unsigned long long)t.sum,
		   (unsigned long long)n - 1, t.n);
}

static void test_lowered(const char *body, bool ret_probe,
			 enum lowered_check how, double budget)
{
	enum { N = 10000000 };
	char src[8192], err[512], line[64], hex[256] = "";
	char *argv[] = { target, "bench", "10000000", ret_probe ? "ret" : NULL,
			 NULL };
	struct cg_opts co = { .sz = sizeof(co),
			      .native_thread_maps = lowered_thread_maps };
	struct user_opts uo = { .sz = sizeof(uo) };
	struct cg_object *obj = NULL;
	struct compile c;
	struct proc p;
	struct ubt_user *u = NULL;
	double plain = -1, probed = -1;
	void *code = NULL;
	size_t len;
	int ret;

	snprintf(src, sizeof(src), "%s:%s:%s { %s }",
		 ret_probe ? "uretprobe" : "uprobe", target,
		 ret_probe ? "ut_ret" : "ut_plain", body);
	compile_init(&c, "stdin", src);
	ret = compile_frontend(&c, STAGE_SEMA);
	ret = ret ?: cg_build(&c, CG_TARGET_NATIVE, &co, &obj);
	ok(!ret && obj && obj->nprogs == 1 && obj->progs[0].code_len,
	   "cg_build(CG_TARGET_NATIVE): %s { %s }",
	   ret_probe ? "uretprobe" : "uprobe", body);
	if (ret || !obj)
		goto out;
	len = obj->progs[0].code_len;
	for (size_t i = 0; i < len && i < 48; i++)
		snprintf(hex + 3 * i, sizeof(hex) - 3 * i, "%02x ",
			 ((uint8_t *)obj->progs[0].code)[i]);
	printf("# %s: %zu bytes: %s%s\n", body, len, hex,
	       len > 48 ? "..." : "");
	if (spawn(&p, argv) || read_line(p.out, line, sizeof(line)))
		goto out;
	plain = best_ns(&p, 3);
	memfd_layout_default(&uo.layout);
	if (uo.layout.map_size < obj->native_area)
		uo.layout.map_size = (obj->native_area + 4095) & ~4095ull;
	uo.layout.shared_size = native_shared_size(obj->native_maps,
						   obj->nnative_maps);
	u = user_attach_pid(p.pid, &uo, err, sizeof(err));
	if (!u) {
		ok(0, "%s: attach: %s", body, err);
		goto done;
	}
	code = xmalloc(len);
	memcpy(code, obj->progs[0].code, len);
	ret = native_patch_tls(code, len, user_tls_offset(u));
	for (int i = 0; !ret && i < obj->nnative_maps; i++) {
		const struct native_map *nm = &obj->native_maps[i];
		struct memfd_htab t = { .off = nm->off, .nslots = nm->nslots,
					.key_size = nm->key_size,
					.val_size = nm->val_size };

		if (nm->kind == NATIVE_MAP_HTAB)
			ret = memfd_htab_add(user_memfd(u), &t);
		if (nm->kind == NATIVE_MAP_SHARED)
			ret = memfd_shtab_add(user_memfd(u),
					      &(struct memfd_shtab){
						      .off = nm->off,
						      .nslots = nm->nslots,
						      .key_size = nm->key_size,
						      .val_size = nm->val_size,
						      .max_probe = nm->max_probe,
					      });
	}
	ret = ret ?: user_install(u, &(struct user_probe){
		.sz = sizeof(struct user_probe),
		.binary = target,
		.symbol = ret_probe ? "ut_ret" : "ut_plain",
		.kind = ret_probe ? USER_PROBE_RETURN : USER_PROBE_ENTRY,
		.code = code,
		.code_len = len,
	});
	ret = ret ?: user_resume(u);
	ok(!ret, "%s: installed", body);
	probed = best_ns(&p, 3);
	ok(plain > 0 && probed > 0, "%s: the target answers every round%s",
	   body, target_fate(&p, plain > 0 && probed > 0));
	printf("# %s%s: unprobed %.2f ns, probed %.2f ns: %+.2f ns per hit "
	       "(budget %.0f, checked by make bench)\n",
	       ret_probe ? "uretprobe " : "", body, plain, probed,
	       probed - plain, budget);
	lowered_check(u, obj, body, how, N);
	ok(!user_detach(u), "%s: detach", body);
	user_free(u);
done:
	close(p.in);
	ok(target_exit(&p) == 0, "%s: the target exits 0", body);
	close(p.out);
out:
	free(code);
	cg_object_free(obj);
	compile_release(&c);
}

/*
 * A private copy of path in a new directory under /tmp, into target:
 * kernel uprobes belong to a file, and another test's on the shared
 * binary would reach this test's patched targets too.
 */
static int private_target(const char *path)
{
	char dir[64] = "/tmp/ubt-unit-native.XXXXXX", buf[65536];
	int in, out, err = 0;
	ssize_t n = 0;

	if (!mkdtemp(dir))
		return -1;
	snprintf(target, sizeof(target), "%s/target", dir);
	in = open(path, O_RDONLY | O_CLOEXEC);
	out = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			err = -1;
	if (in < 0 || out < 0 || n < 0)
		err = -1;
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out))
		err = -1;
	return err;
}

static void remove_target(void)
{
	char *slash = strrchr(target, '/');

	unlink(target);
	if (slash) {
		*slash = 0;
		rmdir(target);
	}
}

int main(void)
{
	const char *b = getenv("top_builddir");
	char shared[4096];

	snprintf(shared, sizeof(shared), "%s/tests/user/target",
		 b ? b : ".");
	if (access(shared, X_OK)) {
		printf("1..0 # SKIP %s not built\n", shared);
		return 99;
	}
	if (private_target(shared)) {
		printf("Bail out! cannot copy %s\n", shared);
		return 99;
	}
	atexit(remove_target);
	signal(SIGPIPE, SIG_IGN);
	test_emit();
	test_count();
	test_keyed_events();
	test_lowered("@c = count();", false, LC_HITS, 5);
	test_lowered("@h = hist(arg0);", false, LC_HITS, 10);
	test_lowered("@[tid] = count();", false, LC_HITS, 10);
	test_lowered("@s = sum(arg1);", false, LC_NONE, 10);
	test_lowered("@c = count();", true, LC_HITS, 10);
	/* ordinary maps: the shared table (no budget in DESIGN.md) */
	test_lowered("@t[tid] = arg0; delete(@t[tid]);", false, LC_GONE, 40);
	test_lowered("@x = @x + arg0;", false, LC_SUM_I, 40);
	/* and a map keyed by tid alone: per-thread tables */
	{
		static const bool all[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };

		lowered_thread_maps = all;
		test_lowered("@t[tid] = arg0; delete(@t[tid]);", false,
			     LC_GONE, 20);
		lowered_thread_maps = NULL;
	}
	return tap_done();
}
