/*
 * The kernel side's links and perf event fds, which kernel_attach.c and
 * kernel_watch.c add to and kernel_attach.c's detach takes down.
 */
#include <bpf/libbpf.h>
#include "util.h"
#include "kernel_int.h"

void kernel_add_link(struct kernel *k, struct bpf_link *l)
{
	if (k->nlinks == k->caplinks) {
		k->caplinks = k->caplinks ? 2 * k->caplinks : 16;
		k->links = xrealloc(k->links, k->caplinks * sizeof(*k->links));
	}
	k->links[k->nlinks++] = l;
}

void kernel_add_pfd(struct kernel *k, int fd)
{
	if (k->npfds == k->cappfds) {
		k->cappfds = k->cappfds ? 2 * k->cappfds : 16;
		k->pfds = xrealloc(k->pfds, k->cappfds * sizeof(*k->pfds));
	}
	k->pfds[k->npfds++] = fd;
}

/* prog attached to perf event fd: the link owns fd, else ubt closes it */
struct bpf_link *kernel_attach_pfd(struct kernel *k,
				   struct bpf_program *prog, int fd)
{
	struct bpf_link *l;

	kernel_add_pfd(k, fd);
	l = bpf_program__attach_perf_event(prog, fd);
	if (l)
		k->npfds--;	/* the link closes it */
	return l;
}
