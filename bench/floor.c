/*
 * The floor of a probe on this CPU (ubt-hotloop -f floorjmp, -f floorcall,
 * -f floortsc), built the way ubt builds a probe, but by this program alone:
 * three copies
 * of bench_nop's code (push %rbp; mov %rsp,%rbp; the increment; pop %rbp;
 * ret), patched at start-up, before the threads run: the 5 bytes after the
 * first instruction become a jmp to a trampoline in a page mapped within
 * +-2 GiB of the code (the nearest free megabyte: ubt's code slice lands
 * right below an executable's mappings), 16-byte aligned, after
 * the probe function as ubt places a probe's code before its trampoline.
 *
 *   floorjmp:  incq %fs:count; the instructions the jmp replaced; jmp back
 *   floorcall: call probe; the same    (probe: incq %fs:count; ret)
 *   floortsc:  floorjmp's, plus two reads of the time-stamp counter
 *              (rdtsc) whose difference is added to the counter: the two
 *              clock reads of the latency idiom (nsecs at entry and at
 *              return), with nothing else of a probe around them
 *
 *   floorvdso: not patched, a plain function: two reads of
 *              clock_gettime(CLOCK_MONOTONIC) through the vDSO whose
 *              difference is added to the counter: the latency idiom's two
 *              clock reads where user mode reads the vDSO (the TSC is not
 *              the kernel's clock: kvm-clock, hpet; UBT_NO_TSC), less the
 *              jump (floorjmp adds it)
 *
 * What this CPU charges for the detour itself, with nothing of ubt in it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "floor.h"

__thread unsigned long bench_floor_count;
extern __thread unsigned long bench_tls_sink;

/*
 * The two sites (bench_nop's code, in a known layout) and the %fs offsets
 * of the counters; FLOOR_WINDOW bytes after the push are replaced.
 */
#define FLOOR_WINDOW 13		/* mov %rsp,%rbp (3), addq $1,%fs:x (10) */
#define FLOOR_STEP (1024 * 1024ul)	/* tried nearest first, as ubt maps */

extern char bench_floor_site_jmp[], bench_floor_site_call[],
	bench_floor_site_tsc[];
long bench_floor_tpoff(void), bench_sink_tpoff(void);

__asm__(".text\n"
	".p2align 4\n"
	"bench_floor_tpoff:\n"
	"	mov $bench_floor_count@tpoff, %rax\n"
	"	ret\n"
	"bench_sink_tpoff:\n"
	"	mov $bench_tls_sink@tpoff, %rax\n"
	"	ret\n"
	".p2align 4\n"
	".globl bench_floor_jmp\n"
	".type bench_floor_jmp,@function\n"
	"bench_floor_jmp:\n"
	"	push %rbp\n"
	"bench_floor_site_jmp:\n"
	"	mov %rsp, %rbp\n"
	"	addq $1, %fs:bench_tls_sink@tpoff\n"
	"	pop %rbp\n"
	"	ret\n"
	".size bench_floor_jmp, .-bench_floor_jmp\n"
	".p2align 4\n"
	".globl bench_floor_call\n"
	".type bench_floor_call,@function\n"
	"bench_floor_call:\n"
	"	push %rbp\n"
	"bench_floor_site_call:\n"
	"	mov %rsp, %rbp\n"
	"	addq $1, %fs:bench_tls_sink@tpoff\n"
	"	pop %rbp\n"
	"	ret\n"
	".size bench_floor_call, .-bench_floor_call\n"
	".p2align 4\n"
	".globl bench_floor_tsc\n"
	".type bench_floor_tsc,@function\n"
	"bench_floor_tsc:\n"
	"	push %rbp\n"
	"bench_floor_site_tsc:\n"
	"	mov %rsp, %rbp\n"
	"	addq $1, %fs:bench_tls_sink@tpoff\n"
	"	pop %rbp\n"
	"	ret\n"
	".size bench_floor_tsc, .-bench_floor_tsc\n");

static void floor_rel32(uint8_t *p, const void *end, const void *to)
{
	int32_t r = (int32_t)((const char *)to - (const char *)end);

	memcpy(p, &r, 4);
}

/* incq %fs:off */
static uint8_t *floor_incq(uint8_t *p, long off)
{
	int32_t d = (int32_t)off;

	memcpy(p, "\x64\x48\xff\x04\x25", 5);
	memcpy(p + 5, &d, 4);
	return p + 9;
}

/*
 * push %rax; push %rdx; rdtsc; (%rdx:%rax to %rax); sub %rax,%fs:off;
 * rdtsc; (the same); add %rax,%fs:off; pop %rdx; pop %rax.  The site is
 * right after bench_nop's push %rbp, where nothing lives below %rsp.
 */
static uint8_t *floor_tsc2(uint8_t *p, long off)
{
	static const uint8_t join[] = {
		0x0f, 0x31,				/* rdtsc */
		0x48, 0xc1, 0xe2, 0x20,			/* shl $32,%rdx */
		0x48, 0x09, 0xd0,			/* or %rdx,%rax */
	};
	int32_t d = (int32_t)off;

	*p++ = 0x50;
	*p++ = 0x52;
	for (int i = 0; i < 2; i++) {
		memcpy(p, join, sizeof(join));
		p += sizeof(join);
		/* sub (0x29) then add (0x01) %rax to %fs:off */
		memcpy(p, i ? "\x64\x48\x01\x04\x25" : "\x64\x48\x29\x04\x25",
		       5);
		memcpy(p + 5, &d, 4);
		p += 9;
	}
	*p++ = 0x5a;
	*p++ = 0x58;
	return p;
}

/* The stolen window, then jmp back to the site's end. */
static uint8_t *floor_back(uint8_t *p, const uint8_t *site)
{
	memcpy(p, site, FLOOR_WINDOW);
	p += FLOOR_WINDOW;
	*p = 0xe9;
	floor_rel32(p + 1, p + 5, site + FLOOR_WINDOW);
	return p + 5;
}

/* A page within +-2 GiB of near, or MAP_FAILED. */
static uint8_t *floor_map_near(const void *near, size_t len)
{
	uintptr_t base = (uintptr_t)near & ~(uintptr_t)0xfffff;

	for (uintptr_t i = 1; i <= 1024; i++) {
		uintptr_t hint[2] = { base - i * FLOOR_STEP,
				      base + i * FLOOR_STEP };

		for (int j = 0; j < 2; j++) {
			void *p = mmap((void *)hint[j], len,
				       PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS |
					       MAP_FIXED_NOREPLACE,
				       -1, 0);

			if (p != MAP_FAILED)
				return p;
		}
	}
	return MAP_FAILED;
}

/* Write the jmp over the window of site, to tramp. */
static int floor_patch(uint8_t *site, const uint8_t *tramp)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)site & ~(uintptr_t)(pg - 1);
	uintptr_t hi = ((uintptr_t)site + FLOOR_WINDOW + pg - 1) &
		       ~(uintptr_t)(pg - 1);

	if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE | PROT_EXEC))
		return -errno;
	site[0] = 0xe9;
	floor_rel32(site + 1, site + 5, tramp);
	memset(site + 5, 0xcc, FLOOR_WINDOW - 5);
	if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_EXEC))
		return -errno;
	return 0;
}

int bench_floor_init(void)
{
	static const uint8_t code[FLOOR_WINDOW] = {
		0x48, 0x89, 0xe5,			/* mov %rsp,%rbp */
		0x64, 0x48, 0x83, 0x04, 0x25, 0, 0, 0, 0, 0x01, /* addq */
	};
	uint8_t want[FLOOR_WINDOW];
	uint8_t *site_j = (uint8_t *)bench_floor_site_jmp;
	uint8_t *site_c = (uint8_t *)bench_floor_site_call;
	uint8_t *site_t = (uint8_t *)bench_floor_site_tsc;
	long sink = bench_sink_tpoff(), cnt = bench_floor_tpoff();
	int32_t d = (int32_t)sink;
	uint8_t *area, *probe, *tj, *tc, *tt;
	int err;

	/* the sites hold what the trampolines copy */
	memcpy(want, code, sizeof(want));
	memcpy(want + 8, &d, 4);
	if (memcmp(site_j, want, FLOOR_WINDOW) ||
	    memcmp(site_c, want, FLOOR_WINDOW) ||
	    memcmp(site_t, want, FLOOR_WINDOW)) {
		fprintf(stderr, "ubt-hotloop: floor sites not as expected\n");
		return -EINVAL;
	}
	area = floor_map_near(site_j, 4096);
	if (area == MAP_FAILED) {
		fprintf(stderr, "ubt-hotloop: no page within 2 GiB of the "
			"code for the floor's trampolines\n");
		return -ENOMEM;
	}
	/* the probe function, then each trampoline, 16-byte aligned */
	probe = area;
	*floor_incq(probe, cnt) = 0xc3;			/* ret */
	tj = area + 128;
	floor_back(floor_incq(tj, cnt), site_j);
	tc = area + 256;
	tc[0] = 0xe8;					/* call probe */
	floor_rel32(tc + 1, tc + 5, probe);
	floor_back(tc + 5, site_c);
	tt = area + 384;
	floor_back(floor_tsc2(tt, cnt), site_t);
	if (mprotect(area, 4096, PROT_READ | PROT_EXEC))
		return -errno;
	err = floor_patch(site_j, tj);
	if (!err)
		err = floor_patch(site_c, tc);
	if (!err)
		err = floor_patch(site_t, tt);
	if (err)
		fprintf(stderr, "ubt-hotloop: cannot patch the floor sites: "
			"%s\n", strerror(-err));
	return err;
}

__attribute__((noinline)) void bench_floor_vdso(void)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	clock_gettime(CLOCK_MONOTONIC, &b);
	bench_floor_count += (unsigned long)((b.tv_sec - a.tv_sec) *
					     1000000000l +
					     (b.tv_nsec - a.tv_nsec));
}
