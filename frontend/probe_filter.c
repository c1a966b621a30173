/*
 * --probe-filter REGEX (the newest bpftrace's): only the probes whose
 * name matches REGEX stay in the program; BEGIN and END always do.
 * Applied to the parsed program, before the semantic passes, so that
 * nothing of a filtered probe is checked, loaded or attached.
 */
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>

#include "arena.h"
#include "ast.h"
#include "compile.h"
#include "diag.h"
#include "probe_filter.h"

static bool pf_special(const struct ast_node *ap)
{
	const char *p = ap->ap.provider;

	return !p || !strcmp(p, "BEGIN") || !strcmp(p, "END");
}

/* The probe's name as bpftrace gives it: the provider spelled out. */
static const char *pf_name(struct compile *c, const struct ast_node *ap)
{
	const char *raw = ap->ap.raw ? ap->ap.raw : "";
	const char *rest = strchr(raw, ':');

	if (!ap->ap.provider || !rest)
		return raw;
	return arena_printf(&c->arena, "%s%s", ap->ap.provider, rest);
}

int probe_filter_apply(struct compile *c)
{
	struct ast_node **pp, *p;
	regex_t re;
	int filtered = 0, kept = 0, index = 0, rc;

	if (!c->probe_filter || !c->program)
		return 0;
	rc = regcomp(&re, c->probe_filter, REG_EXTENDED | REG_NOSUB);
	if (rc) {
		char why[256];

		regerror(rc, &re, why, sizeof(why));
		diag_error(&c->diag, NULL,
			   "Invalid --probe-filter regex '%s': %s",
			   c->probe_filter, why);
		return -EINVAL;
	}
	for (pp = &c->program->program.probes; (p = *pp);) {
		struct ast_node **ap = &p->probe.aps, *a;

		while ((a = *ap)) {
			if (pf_special(a) ||
			    !regexec(&re, pf_name(c, a), 0, NULL, 0)) {
				kept += !pf_special(a);
				ap = &a->next;
			} else {
				*ap = a->next;
				filtered++;
			}
		}
		if (!p->probe.aps) {
			*pp = p->next;
			continue;
		}
		p->probe.index = index++;
		pp = &p->next;
	}
	regfree(&re);
	if (filtered && !kept) {
		diag_error(&c->diag, NULL, "No probes to attach");
		return -EINVAL;
	}
	return 0;
}
