/*
 * Arguments of kernel probes from BTF: args in kfunc/kretfunc (fentry,
 * fexit) and rawtracepoint probes, and retval in kretfunc (a hidden
 * "$retval" field of the same record: types_btf.h).
 */
#include <errno.h>
#include <string.h>

#include "sema.h"
#include "kprov.h"
#include "probes.h"
#include "sema_int.h"
#include "types_btf.h"

int sema_kernel_args(struct sema_ctx *x, struct ast_node *ap,
		     struct type **out)
{
	const char *func = ap->ap.func, *mod = ap->ap.target;
	const char *prov = sema_provider_name(ap->sema->ap->provider);
	bool rawtp = ap->sema->ap->provider == PROV_RAWTRACEPOINT;
	int err;

	if (!func || ap->ap.need_expansion || probes_has_wildcard(func) ||
	    (mod && probes_has_wildcard(mod))) {
		sema_error(x, &ap->loc,
			   "args can not be used with wildcard %s probes",
			   prov);
		return -EINVAL;
	}
	err = kprov_btf() ? types_btf_func_args(x->a, mod, func, rawtp, out,
						NULL) :
			    -ENODATA;
	if (err == -ENODATA) {
		sema_error(x, &ap->loc,
			   "args in %s probes needs kernel BTF, which is not available on this kernel",
			   prov);
		return -EINVAL;
	}
	if (err) {
		if (rawtp)
			sema_error(x, &ap->loc,
				   "No BTF found for raw tracepoint %s%s%s",
				   mod ? mod : "", mod ? ":" : "", func);
		else	/* bpftrace 0.17's words, "kfunc:" for kretfunc too */
			sema_error(x, &ap->loc,
				   "kfunc:%s: no BTF data for %s", func, func);
		return -EINVAL;
	}
	return 0;
}

struct type *sema_kernel_retval(struct sema_ctx *x, struct ast_node *n)
{
	struct ast_node *ap = x->probe->node->probe.aps;
	struct sema_ap *sa = ap->sema->ap;

	if (!sa->args_type && !sa->args_failed) {
		sa->args_failed = x->final;
		if (sema_kernel_args(x, ap, &sa->args_type))
			return NULL;
		sa->args_failed = false;
	}
	for (int i = 0; sa->args_type && i < sa->args_type->nfields; i++) {
		struct type_field *f = &sa->args_type->fields[i];

		if (strcmp(f->name, "$retval"))
			continue;
		if (f->type->kind == TY_INT || f->type->kind == TY_POINTER)
			return f->type;
		break;
	}
	(void)n;
	return sema_uint64(x);
}
