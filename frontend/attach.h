/*
 * Attach points: split the raw text of an attach point into its fields as
 * bpftrace does ("uprobe:/bin/bash:readline" -> provider uprobe, target
 * /bin/bash, func readline), with provider aliases made canonical.
 */
#ifndef UBT_ATTACH_H
#define UBT_ATTACH_H

#include "compile.h"

/*
 * Fill n->ap from raw (the attach point as lexed, quotes included).
 * Positional parameters ($1) are replaced from c->params. Errors (unknown
 * probe type, wrong number of parts, bad numbers) are located diagnostics;
 * returns 0 or -EINVAL.
 */
int ap_parse(struct compile *c, struct ast_node *n, const char *raw);

/* The canonical provider name for name or an alias ("k" -> "kprobe"), or NULL. */
const char *ap_canonical_provider(const char *name);

#endif
