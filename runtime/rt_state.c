/*
 * The runtime's shared state: the thread's block pointer (read by probe
 * code and trampolines at %fs:tls_offset) and the control block.
 */
#include <stdint.h>

#include "rt_abi.h"
#include "rt_int.h"

RT_EXPORT __thread struct rt_tls rt_tls
	__attribute__((tls_model("initial-exec")));
struct rt_ctl *rt_ctl_p;
