/*
 * A probe the kernel side could not attach, in bpftrace 0.17's words
 * (kernel_int.h): kernel_attach.c and kernel_kprobe.c say why, then this
 * says which, and the run's exit status becomes bpftrace's.
 */
#include <stdio.h>
#include "cg.h"
#include "probes.h"
#include "sema.h"
#include "kernel_int.h"

/*
 * bpftrace 0.17's last words for a probe it could not attach, after the
 * line that says why, and its exit status (255): the name in quotes for
 * an iterator (and a kprobe: kernel_kprobe.c), ", to PID: N" for a
 * uprobe of one process.
 */
void kernel_attach_error(struct kernel *k, const struct cg_prog *p,
			 const struct probes_match *m)
{
	const char *q = p->provider == PROV_ITER ? "'" : "";

	if (m->pid > 0 && (p->provider == PROV_UPROBE ||
			   p->provider == PROV_URETPROBE ||
			   p->provider == PROV_USDT))
		fprintf(stderr, "ERROR: Error attaching probe: %s, to PID: %d\n",
			m->name, m->pid);
	else
		fprintf(stderr, "ERROR: Error attaching probe: %s%s%s\n", q,
			m->name, q);
	k->attach_status = 255;
}
