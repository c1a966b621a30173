/*
 * Internal to the types pass: sema_types.c (statements, the walk),
 * sema_expr.c (expressions, map keys), sema_field.c (fields, indexing,
 * sizeof, offsetof, C constants) and sema_typeutil.c (type predicates, merging,
 * variables), called in that order.
 */
#ifndef UBT_SEMA_TYPE_INT_H
#define UBT_SEMA_TYPE_INT_H

#include "sema_int.h"

bool sema_t_is_int(const struct type *t);
/* sema_arrcast.c: (int8[N])x, (uint32)arr; true when n is one */
bool sema_t_array_cast(struct sema_ctx *x, struct ast_node *n,
		       struct type *t, struct type *to, struct type **res);
/* sema_addr.c: &$var */
struct type *sema_t_addr_of(struct sema_ctx *x, struct ast_node *n,
			    struct type *t);
bool sema_t_is_cond(const struct type *t);
bool sema_t_int_signed(const struct type *t);
struct type *sema_t_int64_of(struct sema_ctx *x, bool is_signed);
bool sema_t_is_nonneg_literal(struct sema_ctx *x, const struct ast_node *n);
struct type *sema_t_widen(struct sema_ctx *x, struct type *t);
int sema_t_merge(struct sema_ctx *x, struct type **dst, struct type *src,
		 bool *changed);
void sema_t_mismatch(struct sema_ctx *x, const struct ast_loc *loc,
		     const char *what, const char *name, struct type *have,
		     struct type *got);
int sema_t_map_set_value(struct sema_ctx *x, struct sema_map *m,
			 struct type *t, const struct ast_loc *loc,
			 const struct ast_loc *rloc);
struct ast_loc sema_t_assign_op_loc(const struct ast_node *n);
int sema_t_var_set(struct sema_ctx *x, struct ast_node *var, struct type *t,
		   const struct ast_loc *loc);
struct type *sema_t_resolve_named(struct sema_ctx *x, struct type *t,
				  const struct ast_loc *loc);
/* sema_expr.c: map keys; the dispatch by node kind (sema_type_expr()) and
 * by function (through the table, sema_tables.c); aggregation calls */
int sema_t_map_keys(struct sema_ctx *x, struct ast_node *n,
		    struct sema_map *m);
bool sema_t_is_agg_call(const struct ast_node *n);
struct type *sema_t_type_map(struct sema_ctx *x, struct ast_node *n);
/* A read of a count/sum/min/max/avg map as the integer it merges to
 * (bpftrace v0.26), n's type made that; also `args` of a uprobe as a
 * record value (sema_t_args_value()); t itself otherwise. */
struct type *sema_t_args_value(struct sema_ctx *x, struct ast_node *n,
			       struct type *t);
struct type *sema_t_agg_value(struct sema_ctx *x, struct ast_node *n,
			      struct type *t);
/* sema_types.c: type a list of statements (a block expression's) */
int sema_t_stmts(struct sema_ctx *x, struct ast_node *list);
/* sema_binop.c: a binary operator's type; the operator's location */
struct type *sema_t_bool_of(struct sema_ctx *x, enum ast_op op,
			    struct type *t);
struct type *sema_t_binop_types(struct sema_ctx *x, struct ast_node *n,
				struct type *lt, struct type *rt);
struct ast_loc sema_t_op_loc(struct sema_ctx *x, struct ast_node *n);
/* sema_field.c */
struct type *sema_t_ident(struct sema_ctx *x, struct ast_node *n);
struct type *sema_t_field(struct sema_ctx *x, struct ast_node *n);
struct type *sema_t_index(struct sema_ctx *x, struct ast_node *n);
struct type *sema_t_sizeof(struct sema_ctx *x, struct ast_node *n);
struct type *sema_t_offsetof(struct sema_ctx *x, struct ast_node *n);

#endif
