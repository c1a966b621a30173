/*
 * The runtime's shared state: the thread's block pointer (read by probe
 * code and trampolines at %fs:tls_offset), the control block, and
 * whether this process is a forked child of the one ubt attached to,
 * and the pid of the process rt_init ran in.
 */
#include <stdint.h>

#include "rt_abi.h"
#include "rt_int.h"

RT_EXPORT __thread struct rt_tls rt_tls
	__attribute__((tls_model("initial-exec")));
struct rt_ctl *rt_ctl_p;
int rt_forked;	/* a forked child: its blocks get its pid */
long rt_pid;	/* the process rt_init ran in */
