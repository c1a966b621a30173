/*
 * First semantic pass: the program tables, the probes and their attach
 * points, and the settings that give the program meaning: max_strlen from
 * `config = { max_strlen = N }` and the environment (BPFTRACE_MAX_STRLEN,
 * or bpftrace 0.17's BPFTRACE_STRLEN), max_map_keys (the key limit of a
 * map not declared with a size) from `config = { max_map_keys = N }` and
 * the environment (BPFTRACE_MAX_MAP_KEYS, or bpftrace 0.17's
 * BPFTRACE_MAP_KEYS_MAX), the environment taking precedence as in
 * bpftrace.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sema.h"
#include "stack.h"
#include "kprov.h"
#include "compat.h"
#include "sema_int.h"
#include "tseries.h"
#include "util.h"

#define SEMA_DEFAULT_STRLEN 64
#define SEMA_DEFAULT_STRLEN_NEWEST 1024	/* compat max-strlen */
#define SEMA_MAX_STRLEN_LIMIT 65536
#define SEMA_DEFAULT_MAP_KEYS 4096
#define SEMA_MAX_MAP_KEYS_LIMIT UINT32_MAX	/* a BPF map's max_entries */

/* Config variables bpftrace knows; max_strlen and max_map_keys count. */
static const char *const config_keys[] = {
	"cache_user_symbols",
	"compat",	/* ubt's own: compat.h */
	"cpp_demangle",
	"lazy_symbolication",
	"license",
	"log_size",
	"max_bpf_progs",
	"max_cat_bytes",
	"max_map_keys",
	"max_probes",
	"max_strlen",
	"max_type_res_iterations",
	"missing_probes",
	"on_stack_limit",
	"perf_rb_pages",
	"print_maps_on_exit",
	"show_debug_info",
	"stack_mode",
	"str_trunc_trailer",
	"symbol_source",
	"unstable_tseries",	/* frontend/func_tseries.c */
	"use_blazesym",
};

/* "BPFTRACE_MAX_STRLEN" and "max_strlen" both name max_strlen. */
static const char *config_key(struct sema_ctx *x, const char *key)
{
	char *k;

	if (!strncasecmp(key, "BPFTRACE_", 9))
		key += 9;
	k = arena_strdup(x->a, key);
	for (char *p = k; *p; p++)
		*p = tolower((unsigned char)*p);
	for (size_t i = 0; i < ARRAY_SIZE(config_keys); i++)
		if (!strcmp(config_keys[i], k))
			return config_keys[i];
	return NULL;
}

/* The settings read from the config block and the environment. */
enum config_setting { CONFIG_STRLEN, CONFIG_MAP_KEYS, CONFIG_N };

struct config_var {
	const char *key;	/* config_keys[] entry */
	const char *const *env;	/* its variables, first one wins */
	int64_t limit;		/* values are 1..limit */
};

static const char *const strlen_env[] = {
	"BPFTRACE_MAX_STRLEN", "BPFTRACE_STRLEN", NULL,
};
static const char *const map_keys_env[] = {
	"BPFTRACE_MAX_MAP_KEYS", "BPFTRACE_MAP_KEYS_MAX", NULL,
};

static const struct config_var config_vars[CONFIG_N] = {
	[CONFIG_STRLEN] = { "max_strlen", strlen_env, SEMA_MAX_STRLEN_LIMIT },
	[CONFIG_MAP_KEYS] = { "max_map_keys", map_keys_env,
			      SEMA_MAX_MAP_KEYS_LIMIT },
};

/* A boolean setting: true/false, 1/0. */
static int config_bool(struct sema_ctx *x, struct ast_node *it, int64_t *n)
{
	struct ast_node *v = it->config.value;

	if (v && v->kind == AST_BOOL) {
		*n = v->num.value;
		return 0;
	}
	if (v && v->kind == AST_IDENT &&
	    (!strcmp(v->ident.name, "true") || !strcmp(v->ident.name, "false"))) {
		*n = !strcmp(v->ident.name, "true");
		return 0;
	}
	if (v && sema_int_literal(x, v, n) && (*n == 0 || *n == 1))
		return 0;
	sema_error(x, v ? &v->loc : &it->loc,
		   "Invalid value for %s: expected true or false",
		   it->config.key);
	return -EINVAL;
}

/* "bpftrace", "perf", "raw": enum stack_mode; -1 for another word */
static int config_stack_mode(const char *s)
{
	static const char *const modes[] = {
		[STACK_MODE_BPFTRACE] = "bpftrace",
		[STACK_MODE_PERF] = "perf",
		[STACK_MODE_RAW] = "raw",
	};

	for (size_t i = 0; i < ARRAY_SIZE(modes); i++)
		if (s && !strcmp(s, modes[i]))
			return (int)i;
	return -1;
}

/*
 * license (v0.26): one of the kernel's GPL-compatible licenses (listed
 * in bpftrace's order).  Each lets a program call every helper, so the
 * BPF object keeps "GPL" whichever is named.
 */
static int config_license(struct sema_ctx *x, struct ast_node *it)
{
	static const char *const licenses[] = {
		"Dual MIT/GPL", "Dual BSD/GPL", "Dual MPL/GPL",
		"GPL and additional rights", "GPL v2", "GPL",
	};
	struct ast_node *v = it->config.value;
	const char *s = v && v->kind == AST_STRING ? v->str.value :
			v && v->kind == AST_IDENT  ? v->ident.name : "";

	for (size_t i = 0; i < ARRAY_SIZE(licenses); i++)
		if (!strcmp(s, licenses[i]))
			return 0;
	sema_error(x, v ? &v->loc : &it->loc,
		   "Invalid value for license. Found: %s. Valid values: Dual MIT/GPL, Dual BSD/GPL, Dual MPL/GPL, GPL and additional rights, GPL v2, GPL. Read more about BPF programs and licensing: https://docs.kernel.org/bpf/bpf_licensing.html#using-bpf-programs-in-the-linux-kernel",
		   s);
	return -EINVAL;
}

/* unstable_tseries = error|warn|enable (frontend/tseries.h) */
static int config_tseries(struct sema_ctx *x, struct ast_node *it)
{
	static const char *const modes[] = {
		[TSERIES_UNSTABLE_WARN] = "warn",
		[TSERIES_UNSTABLE_ERROR] = "error",
		[TSERIES_UNSTABLE_ENABLE] = "enable",
	};
	struct ast_node *v = it->config.value;
	const char *s = v && v->kind == AST_IDENT ? v->ident.name :
			v && v->kind == AST_STRING ? v->str.value : "";

	for (size_t i = 0; i < ARRAY_SIZE(modes); i++)
		if (!strcmp(s, modes[i])) {
			x->prog->unstable_tseries = (int)i;
			return 0;
		}
	sema_error(x, v ? &v->loc : &it->loc,
		   "Invalid value for unstable_tseries: expected error, warn or enable");
	return -EINVAL;
}

static int config_block(struct sema_ctx *x, struct ast_node *cfg,
			int64_t *vals)
{
	int err = 0;

	for (struct ast_node *it = cfg->config.items; it; it = it->next) {
		const char *key = config_key(x, it->config.key);
		struct ast_node *v = it->config.value;
		int64_t n;

		if (!key) {
			sema_error(x, &it->loc,
				   "%s: not a known configuration option",
				   it->config.key);
			err = -EINVAL;
			continue;
		}
		if (!strcmp(key, "print_maps_on_exit")) {
			if (config_bool(x, it, &n))
				err = -EINVAL;
			else
				x->prog->no_maps_on_exit = !n;
			continue;
		}
		if (!strcmp(key, "show_debug_info")) {
			if (config_bool(x, it, &n))
				err = -EINVAL;
			else
				x->prog->no_debug_info = !n;
			continue;
		}
		if (!strcmp(key, "cpp_demangle")) {
			if (config_bool(x, it, &n))
				err = -EINVAL;
			else
				x->prog->no_cpp_demangle = !n;
			continue;
		}
		if (!strcmp(key, "compat")) {
			const char *s = v && v->kind == AST_IDENT ?
						v->ident.name :
					v && v->kind == AST_STRING ?
						v->str.value : "";

			if (compat_from_config(s)) {
				sema_error(x, v ? &v->loc : &it->loc,
					   "Invalid value for compat: expected \"0.17\" or newest");
				err = -EINVAL;
			}
			continue;
		}
		if (!strcmp(key, "unstable_tseries")) {
			if (config_tseries(x, it))
				err = -EINVAL;
			continue;
		}
		if (!strcmp(key, "license")) {
			if (config_license(x, it))
				err = -EINVAL;
			continue;
		}
		if (!strcmp(key, "missing_probes")) {
			const char *m = v && v->kind == AST_IDENT ?
						v->ident.name :
					v && v->kind == AST_STRING ?
						v->str.value : "";

			if (!strcmp(m, "error"))
				x->prog->missing_probes = MISSING_ERROR;
			else if (!strcmp(m, "warn"))
				x->prog->missing_probes = MISSING_WARN;
			else if (!strcmp(m, "ignore"))
				x->prog->missing_probes = MISSING_IGNORE;
			else {
				sema_error(x, v ? &v->loc : &it->loc,
					   "Invalid value for missing_probes: expected error, warn or ignore");
				err = -EINVAL;
			}
			continue;
		}
		if (!strcmp(key, "str_trunc_trailer") &&
		    compat_has(COMPAT_STR_TRAILER)) {
			if (!v || v->kind != AST_STRING) {
				sema_error(x, v ? &v->loc : &it->loc,
					   "Invalid value for str_trunc_trailer: expected a string");
				err = -EINVAL;
			} else {
				x->prog->str_trailer = v->str.value;
			}
			continue;
		}
		if (!strcmp(key, "stack_mode")) {
			int m = v && (v->kind == AST_IDENT ||
				      v->kind == AST_STRING) ?
					config_stack_mode(
						v->kind == AST_IDENT ?
							v->ident.name :
							v->str.value) :
					-1;

			if (m < 0) {
				sema_error(x, v ? &v->loc : &it->loc,
					   "Invalid value for stack_mode: expected bpftrace, perf or raw");
				err = -EINVAL;
			} else {
				x->prog->stack_mode = m;
			}
			continue;
		}
		for (int i = 0; i < CONFIG_N; i++) {
			const struct config_var *cv = &config_vars[i];

			if (strcmp(key, cv->key))
				continue;
			if (!v || !sema_int_literal(x, v, &n) || n < 1 ||
			    n > cv->limit) {
				sema_error(x, v ? &v->loc : &it->loc,
					   "Invalid value for %s: expected a positive integer up to %" PRId64,
					   cv->key, cv->limit);
				err = -EINVAL;
				break;
			}
			vals[i] = n;
		}
	}
	return err;
}

static int config_env(struct sema_ctx *x, int64_t *vals)
{
	for (int i = 0; i < CONFIG_N; i++) {
		const struct config_var *cv = &config_vars[i];

		for (const char *const *e = cv->env; *e; e++) {
			const char *s = getenv(*e);
			int64_t v;

			if (!s)
				continue;
			if (!sema_is_number(s, &v) || v < 1 || v > cv->limit) {
				sema_error(x, NULL,
					   "Invalid value for %s: '%s': expected a positive integer up to %" PRId64,
					   *e, s, cv->limit);
				return -EINVAL;
			}
			vals[i] = v;
			break;
		}
	}
	return 0;
}

/* The `probe` builtin's value: bpftrace's full name of an attach point. */
static const char *ap_name(struct sema_ctx *x, const struct ast_node *n,
			   enum sema_provider p)
{
	const struct ast_attach_point *ap = &n->ap;
	const char *prov = sema_provider_name(p);

	switch (p) {
	case PROV_BEGIN:
	case PROV_END:
		return prov;
	case PROV_INTERVAL:
	case PROV_PROFILE:
		if (ap->unit)
			return arena_printf(x->a, "%s:%s:%llu", prov, ap->unit,
					    (unsigned long long)ap->freq);
		break;
	case PROV_UPROBE:
	case PROV_URETPROBE:
		if (ap->target && ap->func && !ap->func_offset)
			return arena_printf(x->a, "%s:%s:%s", prov, ap->target,
					    ap->func);
		break;
	case PROV_TRACEPOINT:
	case PROV_USDT:
		if (ap->target && ap->func && !ap->ns)
			return arena_printf(x->a, "%s:%s:%s", prov, ap->target,
					    ap->func);
		if (ap->target && ap->func && ap->ns)
			return arena_printf(x->a, "%s:%s:%s:%s", prov,
					    ap->target, ap->ns, ap->func);
		break;
	case PROV_KPROBE:
	case PROV_KRETPROBE:
	case PROV_KFUNC:
	case PROV_KRETFUNC:
		if (ap->func && !ap->target)
			return arena_printf(x->a, "%s:%s", prov, ap->func);
		break;
	default:
		break;
	}
	return ap->raw ? ap->raw : prov;
}

static bool is_return_provider(enum sema_provider p)
{
	return p == PROV_URETPROBE || p == PROV_KRETPROBE ||
	       p == PROV_KRETFUNC;
}

/* Does the running kernel have what p needs (kprov.h)? */
static bool provider_available(enum sema_provider p)
{
	switch (p) {
	case PROV_KPROBE:
	case PROV_KRETPROBE:
	case PROV_KFUNC:
	case PROV_KRETFUNC:
	case PROV_RAWTRACEPOINT:
		return kprov_provider(sema_provider_name(p));
	default:
		return true;
	}
}

static int setup_probe(struct sema_ctx *x, struct ast_node *probe, int idx)
{
	struct sema_probe *sp = arena_alloc(x->a, sizeof(*sp));
	struct sema_node *sn = sema_node(x, probe);
	int err = 0;

	sp->index = idx;
	sp->node = probe;
	sn->probe = sp;
	x->prog->probes[idx] = sp;

	for (struct ast_node *n = probe->probe.aps; n; n = n->next) {
		struct sema_ap *ap = arena_alloc(x->a, sizeof(*ap));
		enum sema_provider p = sema_provider_lookup(n->ap.provider);

		sema_node(x, n)->ap = ap;
		sema_node(x, n)->probe = sp;
		if (p == PROV_NONE) {
			sema_error(x, &n->loc, "Invalid provider: '%s'",
				   n->ap.provider ? n->ap.provider : "");
			err = -EINVAL;
			continue;
		}
		if ((p == PROV_KPROBE || p == PROV_KRETPROBE) &&
		    n->ap.target && !compat_has(COMPAT_KPROBE_MODULE)) {
			/* bpftrace 0.17's words for kprobe:MODULE:FUNC */
			sema_error(x, &n->loc,
				   "%s probe type requires 1 argument",
				   n->ap.provider);
			err = -EINVAL;
			continue;
		}
		ap->provider = p;
		ap->is_return = is_return_provider(p);
		ap->available = provider_available(p);
		ap->name = ap_name(x, n, p);
		if (n == probe->probe.aps) {
			sp->provider = p;
			sp->is_return = ap->is_return;
			sp->name = ap->name;
		}
		if (p == PROV_BEGIN || p == PROV_END) {
			bool *seen = p == PROV_BEGIN ? &x->seen_begin :
						       &x->seen_end;

			if (*seen) {
				/* bpftrace 0.17 starts the location at the
				 * blank before the probe */
				struct ast_loc loc = n->loc;
				const char *src = x->c->source;
				long o = sema_src_offset(x->c, loc.first_line,
							 loc.first_column);

				if (o > 0 && loc.first_column > 1 &&
				    (src[o - 1] == ' ' || src[o - 1] == '\t'))
					loc.first_column--;
				sema_error(x, &loc,
					   "More than one %s probe defined",
					   p == PROV_BEGIN ? "BEGIN" : "END");
				err = -EINVAL;
			}
			*seen = true;
		}
		if (p == PROV_END)
			x->prog->has_end = true;
	}
	return err;
}

int sema_config(struct compile *c)
{
	struct sema_ctx x = {
		.c = c, .a = &c->arena, .d = &c->diag, .final = true,
	};
	struct ast_node *prog = c->program;
	struct sema_program *p;
	int64_t vals[CONFIG_N];
	int err = 0, i = 0;

	BUG_ON(!prog || prog->kind != AST_PROGRAM);
	p = arena_alloc(x.a, sizeof(*p));
	c->sema = p;
	x.prog = p;

	/* 0 until set: the default follows the config block's compat */
	vals[CONFIG_STRLEN] = c->max_strlen > 0 ? c->max_strlen : 0;
	vals[CONFIG_MAP_KEYS] = SEMA_DEFAULT_MAP_KEYS;
	if (prog->program.config)
		err = config_block(&x, prog->program.config, vals);
	err = err ?: config_env(&x, vals);
	if (!vals[CONFIG_STRLEN])
		vals[CONFIG_STRLEN] = compat_has(COMPAT_MAX_STRLEN) ?
				      SEMA_DEFAULT_STRLEN_NEWEST :
				      SEMA_DEFAULT_STRLEN;
	if (getenv("BPFTRACE_STACK_MODE")) {
		const char *e = getenv("BPFTRACE_STACK_MODE");
		int m = config_stack_mode(e);

		if (m < 0) {
			sema_error(&x, NULL,
				   "Invalid value for BPFTRACE_STACK_MODE: '%s': expected bpftrace, perf or raw",
				   e);
			err = -EINVAL;
		} else {
			p->stack_mode = m;
		}
	}
	c->max_strlen = (int)vals[CONFIG_STRLEN];
	p->max_strlen = c->max_strlen;
	/* compat str-trailer: the environment's (as max_strlen's, it wins),
	 * else the config's, else ".." */
	if (getenv("BPFTRACE_STR_TRUNC_TRAILER"))
		p->str_trailer = getenv("BPFTRACE_STR_TRUNC_TRAILER");
	if (!p->str_trailer)
		p->str_trailer = "..";
	if (!compat_has(COMPAT_STR_TRAILER) || p->max_strlen >= 1024)
		p->str_trailer = NULL;
	p->max_map_keys = vals[CONFIG_MAP_KEYS];

	p->nprobes = ast_list_len(prog->program.probes);
	p->probes = arena_alloc(x.a, sizeof(*p->probes) *
				     (p->nprobes ? p->nprobes : 1));
	for (struct ast_node *n = prog->program.probes; n; n = n->next, i++) {
		n->probe.index = i;
		if (setup_probe(&x, n, i))
			err = -EINVAL;
	}
	return err;
}
