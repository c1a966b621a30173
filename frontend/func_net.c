/*
 * Functions on addresses and byte order: pton, macaddr, bswap (ntop is
 * with the strings, func_str.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "sema.h"
#include "sema_int.h"
#include "util.h"

/*
 * pton("addr"): the address in network order as uint8[4] (a '.' in it)
 * or uint8[16] (a ':'), parsed here: sema_node.iargs[0..1] hold the
 * bytes.
 */
static struct type *ty_pton(struct sema_ctx *x, struct ast_node *call,
			    struct sema_map *m)
{
	struct ast_node *a = call->call.args;
	const char *s = NULL;
	unsigned char bytes[16] = { 0 };
	struct type *t, *e;
	int af, size;

	(void)m;
	if (!sema_str_literal(x, a, &s)) {
		sema_error(x, &call->loc,
			   "pton() expects a string literal argument");
		return NULL;
	}
	if (strchr(s, '.')) {
		af = AF_INET;
		size = 4;
	} else if (strchr(s, ':')) {
		af = AF_INET6;
		size = 16;
	} else {
		sema_error(x, &call->loc,
			   "pton() expects an string argument of an IPv4/IPv6 address, got %s",
			   s);
		return NULL;
	}
	if (inet_pton(af, s, bytes) != 1) {
		sema_error(x, &call->loc,
			   "pton() expects a valid IPv4/IPv6 address, got %s",
			   s);
		return NULL;
	}
	memcpy(sema_node(x, call)->iargs, bytes, sizeof(bytes));
	e = type_int(x->a, 1, false);
	e->name = "uint8";	/* a number, not a char (output) */
	t = type_new(x->a, TY_ARRAY, size);
	t->elem = e;
	t->nelems = size;
	t->addrspace = AS_KERNEL;
	return t;
}

/* macaddr(p or uint8[6]): six bytes, printed as 01:02:03:04:05:06. */
static struct type *ty_macaddr(struct sema_ctx *x, struct ast_node *call,
			       struct sema_map *m)
{
	struct ast_node *a = call->call.args;
	const struct type *t = a->type;
	struct diag *bad = NULL;

	(void)m;
	if (t->kind != TY_INT && t->kind != TY_POINTER &&
	    t->kind != TY_ARRAY && t->kind != TY_STRING) {
		sema_error(x, &call->loc,
			   "macaddr() only supports array or pointer arguments (%s provided)",
			   type_class(t));
		return NULL;
	}
	if ((t->kind == TY_ARRAY || t->kind == TY_STRING) && t->size != 6)
		bad = sema_error(x, &call->loc,
				 "macaddr() argument must be 6 bytes in size");
	if (t->kind == TY_STRING && a->kind == AST_STRING)
		bad = sema_error(x, &call->loc,
				 "macaddr() does not support literal string arguments");
	if (bad)
		return NULL;
	return type_new(x->a, TY_MAC, 6);
}

/* bswap(x): the bytes of x's integer type reversed, unsigned. */
static struct type *ty_bswap(struct sema_ctx *x, struct ast_node *call,
			     struct sema_map *m)
{
	struct ast_node *a = call->call.args;

	(void)m;
	if (a->type->kind != TY_INT) {
		sema_error(x, &call->loc,
			   "bswap() only supports integer arguments (%s provided)",
			   type_class(a->type));
		return NULL;
	}
	return type_int(x->a, a->type->size, false);
}

const struct sema_func_ops sema_funcs_net[] = {
	{ .name = "pton", .id = FN_PTON, .min_args = 1, .max_args = 1,
	  .type = ty_pton },
	{ .name = "macaddr", .id = FN_MACADDR, .min_args = 1, .max_args = 1,
	  .type = ty_macaddr },
	{ .name = "bswap", .id = FN_BSWAP, .min_args = 1, .max_args = 1,
	  .type = ty_bswap },
	{ 0 },
};
