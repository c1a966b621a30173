/*
 * The LLVM -> BPF -> libbpf machinery end to end, without the frontend:
 * a hand-built module with a uprobe that counts calls into a hash map
 * keyed by the first argument, loaded into the kernel, attached to a
 * function of this program, the function called, the map read back.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "irb.h"

static int ntests;
static int nfailed;

static void ok(int cond, const char *name, const char *detail)
{
	ntests++;
	if (cond) {
		printf("ok %d - %s\n", ntests, name);
	} else {
		nfailed++;
		printf("not ok %d - %s # %s\n", ntests, name,
		       detail ? detail : "");
	}
}

__attribute__((noinline, used)) int cgtest_target(long x)
{
	__asm__ volatile("" ::: "memory");
	return (int)x + 1;
}

static int nevents;
static uint64_t event_value;

static int on_event(void *ctx, void *data, size_t size)
{
	nevents++;
	if (size == 8)
		memcpy(&event_value, data, 8);
	return 0;
}

/*
 * @[arg0] = count() as hand-written IR, and a BEGIN-like raw_tp program
 * run with BPF_PROG_TEST_RUN that sends pid into the ring buffer.
 */
static int build(void **image, size_t *size)
{
	struct irb ir;
	LLVMValueRef map, rb, ctxp, key, arg0, p, v;
	LLVMBasicBlockRef have, miss, done;
	int err;

	err = irb_init(&ir, CG_TARGET_BPF, "cgtest");
	if (err)
		return err;
	map = irb_map_define(&ir, "AT_", BPF_MAP_TYPE_HASH, 8, 8, 128);
	rb = irb_map_define(&ir, "rb", BPF_MAP_TYPE_RINGBUF, 0, 0, 4096 * 4);
	irb_func_begin(&ir, "cgtest_begin", "raw_tp");
	v = irb_alloca(&ir, 8, "pid");
	LLVMBuildStore(ir.b,
		       LLVMBuildLShr(ir.b,
				     irb_helper(&ir,
						BPF_FUNC_get_current_pid_tgid,
						NULL, 0),
				     irb_const(&ir, 32), ""),
		       v);
	irb_ringbuf_output(&ir, rb, v, 8);
	irb_func_end(&ir);
	ctxp = irb_func_begin(&ir, "cgtest_prog", "uprobe");
	key = irb_alloca(&ir, 8, "key");
	/* pt_regs->di on x86-64 is at offset 112 */
	arg0 = irb_ctx_load(&ir, ctxp, 112, 8);
	LLVMBuildStore(ir.b, arg0, key);
	p = irb_map_lookup(&ir, map, key);
	have = LLVMAppendBasicBlockInContext(ir.ctx, ir.fn, "have");
	miss = LLVMAppendBasicBlockInContext(ir.ctx, ir.fn, "miss");
	done = LLVMAppendBasicBlockInContext(ir.ctx, ir.fn, "done");
	LLVMBuildCondBr(ir.b, LLVMBuildIsNull(ir.b, p, ""), miss, have);
	LLVMPositionBuilderAtEnd(ir.b, have);
	v = LLVMBuildLoad2(ir.b, ir.i64, p, "");
	LLVMBuildStore(ir.b, LLVMBuildAdd(ir.b, v, irb_const(&ir, 1), ""), p);
	LLVMBuildBr(ir.b, done);
	LLVMPositionBuilderAtEnd(ir.b, miss);
	v = irb_alloca(&ir, 8, "one");
	LLVMBuildStore(ir.b, irb_const(&ir, 1), v);
	irb_map_update(&ir, map, key, v, BPF_NOEXIST);
	LLVMBuildBr(ir.b, done);
	LLVMPositionBuilderAtEnd(ir.b, done);
	irb_func_end(&ir);
	/* as cg.c does: the scratch room's map, before the object */
	err = irb_scratch_finish(&ir);
	if (!err)
		err = irb_emit(&ir, true, image, size);
	irb_release(&ir);
	return err;
}

int main(void)
{
	void *image = NULL;
	size_t size = 0;
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_link *link;
	struct bpf_map *map;
	char detail[256];
	int err, fd;
	uint64_t key, val, total = 0, n = 0;

	printf("1..6\n");
	err = build(&image, &size);
	ok(!err && size > 0, "module builds and emits a BPF object", NULL);
	if (err)
		return 1;
	obj = bpf_object__open_mem(image, size, NULL);
	snprintf(detail, sizeof(detail), "errno %d", errno);
	ok(obj != NULL, "libbpf opens the object", detail);
	if (!obj)
		return 1;
	err = bpf_object__load(obj);
	snprintf(detail, sizeof(detail), "err %d", err);
	ok(!err, "kernel loads the program", detail);
	if (err)
		return 1;
	prog = bpf_object__find_program_by_name(obj, "cgtest_prog");
	{
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = "cgtest_target");
		link = bpf_program__attach_uprobe_opts(prog, getpid(),
						       "/proc/self/exe", 0,
						       &uo);
	}
	snprintf(detail, sizeof(detail), "errno %d", errno);
	ok(link != NULL, "uprobe attaches", detail);
	if (!link)
		return 1;
	for (long i = 0; i < 10; i++)
		for (long j = 0; j <= i % 3; j++)
			cgtest_target(i % 3);
	map = bpf_object__find_map_by_name(obj, "AT_");
	fd = bpf_map__fd(map);
	/* keys 0,1,2 called 4*1, 3*2, 3*3 times */
	detail[0] = 0;
	for (int r = bpf_map_get_next_key(fd, NULL, &key); !r;
	     r = bpf_map_get_next_key(fd, &key, &key)) {
		if (bpf_map_lookup_elem(fd, &key, &val))
			break;
		n++;
		total += val * 100 + key;
		snprintf(detail + strlen(detail),
			 sizeof(detail) - strlen(detail), "%lu:%lu ",
			 (unsigned long)key, (unsigned long)val);
	}
	ok(n == 3 && total == (4 + 6 + 9) * 100 + 3,
	   "map read back has the counts", detail);
	{
		struct ring_buffer *r = ring_buffer__new(
			bpf_object__find_map_fd_by_name(obj, "rb"), on_event,
			NULL, NULL);
		LIBBPF_OPTS(bpf_test_run_opts, ro);
		struct bpf_program *bp = bpf_object__find_program_by_name(
			obj, "cgtest_begin");

		err = r ? bpf_prog_test_run_opts(bpf_program__fd(bp), &ro) :
			  -errno;
		if (!err)
			ring_buffer__consume(r);
		snprintf(detail, sizeof(detail), "err %d, %d events, value %lu",
			 err, nevents, (unsigned long)event_value);
		ok(!err && nevents == 1 && event_value == (uint64_t)getpid(),
		   "raw_tp program runs with BPF_PROG_TEST_RUN and sends an event",
		   detail);
		ring_buffer__free(r);
	}
	bpf_link__destroy(link);
	bpf_object__close(obj);
	free(image);
	return nfailed ? 1 : 0;
}
