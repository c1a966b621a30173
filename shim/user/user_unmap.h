/*
 * State shared by user_unmap.c (ubt's memory out of the target) and
 * user_park.c (wrapped calls in progress parked, and the stack words
 * that need none of that memory): one look at a process, every thread
 * stopped.
 */
#ifndef UBT_USER_UNMAP_H
#define UBT_USER_UNMAP_H

#include "user_int.h"

#define UNMAP_MAX 256		/* BPF map mappings looked at */
#define UNMAP_PARK_MAX 256	/* wrapped calls parked at most */

struct um_map {
	uint64_t start, end, off;
	uint64_t ino;
	bool x, gone;
	int fd;		/* an earlier session's descriptor, or -1 */
};

struct um {
	struct pt *pt;		/* every thread of pid stopped */
	pid_t pid;		/* the target, or a child it forked */
	bool child;
	struct um_map *m;	/* every one: killed ubts leave many */
	int n, cap;
	uint64_t rt_lo[4], rt_hi[4];	/* the runtime's code */
	int nrt;
	uint64_t rt_start, rt_end;	/* all of the runtime's mappings */
	/* BPF maps' mappings (one inode for all: known by address) */
	uint64_t bpf_lo[UNMAP_MAX], bpf_hi[UNMAP_MAX];
	int nbpf;
	int64_t tls_offset;	/* of the runtime's block pointer, or 0 */
	int tries;		/* looks at the threads */
	/*
	 * Parking (this session's detach in the target only; park_ret 0:
	 * none): the runtime's return addresses of wrapped calls, and the
	 * calls in progress that will return through RT_FN_WRAP_PARKED,
	 * each its slot on the stack and its block.
	 */
	uint64_t wrap_ret, stubs, park_ret, park_tab;
	bool plan;		/* calls in progress may be parked */
	/*
	 * The dead path: the slots of every entry in the shadow stacks of
	 * the blocks to be removed (a wrapped call's return address
	 * elsewhere on a stack is a stale copy), when known (slots_known).
	 */
	uint64_t *slots;
	int nslots, slots_cap;
	bool slots_known;
	bool only_own;		/* no memfd but this session's mapped */
	struct um_park {
		uint64_t slot, blk;
		pid_t tid;
	} park[UNMAP_PARK_MAX];
	int npark;
};

/* user_park.c (user_unmap.c calls it, never the other way) */
int um_sys(struct ubt_user *u, const struct um *s, long nr, uint64_t a0,
	   uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5,
	   int64_t *ret);
bool um_code(const struct um *s, uint64_t a);
bool um_runtime(const struct um *s, uint64_t a);
uint64_t um_stack_end(const struct pt_map *pm, int npm, uint64_t a);
bool um_stack_holds(struct ubt_user *u, const struct um *s, uint64_t sp,
		    uint64_t end);
bool um_parked_word(const struct um *s, uint64_t addr, uint64_t w);
bool um_inner_ret(const struct um *s, uint64_t addr, uint64_t w);
const char *um_plan(struct um *s, pid_t tid, uint64_t sp, uint64_t blk,
		    uint64_t top);
int um_park(struct ubt_user *u, struct um *s, bool *moved);
int um_reclaim(struct ubt_user *u, struct um *s, int *count);
void um_dead_slots(struct um *s);
void um_dead_park(struct um *s);

#endif
