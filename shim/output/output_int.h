/*
 * Shared by the parts of output (shim/README): the growable string
 * buffer every part formats into (output_sb.c), value printing
 * (output_value.c) used by printf, histograms and maps.
 */
#ifndef UBT_OUTPUT_INT_H
#define UBT_OUTPUT_INT_H

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "arena.h"
#include "format.h"
#include "output.h"
#include "types.h"
#include "util.h"

#define OUT_BAR_WIDTH 52

/* A growable string. */
struct sb {
	char *s;
	size_t len, cap;
};

void sb_add(struct sb *b, const char *s, size_t n);

void sb_addc(struct sb *b, char c);

void sb_adds(struct sb *b, const char *s);

void __attribute__((format(printf, 2, 3)))
sb_printf(struct sb *b, const char *fmt, ...);

void sb_release(struct sb *b);

/* ---- values ---- */

bool out_type_signed(const struct type *t);

uint64_t out_load_int(const void *p, size_t size, bool is_signed);

bool out_is_int_kind(const struct type *t);
/* The name of enumerator v of an enum's integer type t (compat
 * enum-names), or NULL: then v prints as a number. */
const char *out_enum_name(const struct type *t, uint64_t v);
/* printf's %gr: GFP flags v by name ("GFP_KERNEL|__GFP_ZERO"), in buf
 * (output_gfp.c). */
void out_gfp_flags(char *buf, size_t size, uint64_t v);

bool out_is_char_array(const struct type *t);

int out_not_supported(const struct type *t);

void sb_json_string(struct sb *b, const char *s, size_t len);

/*
 * Text of a value that prints through its context: username and
 * strerror here, the others through the producer's o->resolve. A
 * malloc'd string, or NULL when nobody can print it.
 */
char *out_resolve(const struct out *o, const struct type *t,
		     const void *p);

/* A buffer as %r prints it (mode 0), or %rx ('x') or %rh ('h'). */
void out_buf_escape(struct sb *b, const unsigned char *p, size_t n,
		       char mode);

enum val_style {
	VS_TEXT,	/* 1, str, (1, str) */
	VS_JSON,	/* 1, "str", [1,"str"] */
	VS_JSON_KEY,	/* in a JSON key: 1, str, elements joined by ',' */
	VS_TEXT_KEY,	/* in a text key: as VS_TEXT, records {.a=1,.b=2} */
};

/* output_syscall.c: the name of system call nr, or NULL. */
const char *out_syscall_name(unsigned long nr);

/* Append a value of type t at p. */
int sb_value(const struct out *o, struct sb *b, const struct type *t,
		    const void *p, enum val_style vs);

/* A map key: "1, a" in text, "1,a" in JSON keys. */
int sb_key(const struct out *o, struct sb *b, const struct out_map *m,
		  const void *key, bool json);

void sb_hist_text(struct sb *b, const struct type *t,
			 const uint64_t *c, uint64_t div);

void sb_hist_json(struct sb *b, const struct type *t,
			 const uint64_t *c, uint64_t div);

/* A tseries() map, text or JSON (output_tseries.c); 0 or -errno. */
int sb_tseries_map(const struct out *o, struct sb *b, const struct out_map *m,
		   bool json);

#endif
