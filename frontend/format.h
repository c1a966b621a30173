/*
 * printf-style format strings (printf, system, cat) as bpftrace 0.17 reads
 * them.
 *
 * A conversion is what bpftrace's tokenizer recognises, nothing else:
 *
 *	%[-][digits][.digits]  then one of
 *	c  s  r  rx  rh  and  (|hh|h|l|ll|j|z|t)(d|u|x|X|p|o)
 *
 * Any other '%' sequence ("%i", "%e", "%+d", "%#x", "%5.s", "%%") is not a
 * conversion and takes no argument. At run time the literal text before a
 * conversion is printed with "%%" turned into "%" (a lone '%' right before
 * it makes the conversion literal text: "%%d %d" with 1, 2 prints "%d 2");
 * the text after the last conversion is printed exactly as written
 * (printf("%d%%\n", 1) prints "1%%"); "%r" with a width or precision is
 * printed as written. All of this is bpftrace 0.17's behaviour.
 *
 * Arguments (bpftrace's rules): integers, booleans, pointers and enums are
 * "integer"; strings, char[N] arrays and values printed as text (ksym,
 * usym, username, probe, ntop, kstack, ustack, strerror, strftime,
 * macaddr, cgroup_path) are "string"; buf() is "buffer". At run time an
 * integer argument is sign- or zero-extended to 64 bits by its type, then
 * converted by C's printf rules for the length modifier ("%d" and "%x"
 * see the low 32 bits, "%hhu" the low 8, "%ld" all 64; "%c" the low 8;
 * "%p" the 64-bit value).
 */
#ifndef UBT_FORMAT_H
#define UBT_FORMAT_H

#include <stdbool.h>
#include <stddef.h>

struct arena;
struct type;
struct diag_list;
struct ast_loc;

/* What a conversion takes. */
enum fmt_arg {
	FMT_ARG_INT,
	FMT_ARG_STRING,
	FMT_ARG_BUFFER,
};

struct fmt_conv {
	/* literal text before the conversion, as written ("%%" not undone) */
	const char *prefix;
	size_t prefix_len;
	/* the whole conversion as written, e.g. "%-08lx" */
	const char *spec;
	size_t spec_len;
	/* the conversion without flag/width/precision, e.g. "lx": the
	 * spelling in bpftrace's messages ("%lx specifier expects ...") */
	const char *token;
	bool left;		/* '-' */
	bool zero_pad;		/* width written with a leading 0 */
	int width;		/* -1: none */
	int precision;		/* -1: none */
	char length[3];		/* "", "hh", "h", "l", "ll", "j", "z", "t" */
	char conv;		/* d u x X p o c s r */
	/* 'r' only: 0 (%r), 'x' (%rx: \xNN each byte), 'h' (%rh: NN NN) */
	char buf_mode;
	enum fmt_arg arg;
};

struct fmt_string {
	const char *text;	/* the whole format, escapes processed */
	size_t len;
	struct fmt_conv *convs;
	int nconvs;
	/* text after the last conversion (the whole format when there is
	 * none): printed verbatim */
	const char *tail;
	size_t tail_len;
};

/*
 * Split text[0..len) into conversions (allocated in a; text is not
 * copied and must outlive *out). bpftrace 0.17 rejects no format as such,
 * so this returns 0; -EINVAL is reserved for future checks.
 */
int fmt_parse(struct arena *a, const char *text, size_t len,
	      struct fmt_string *out);

/*
 * bpftrace's name of a type in format messages: "integer", "string",
 * "buffer", "tuple", "count", "hist", "record", ... (the "supplied" part).
 */
const char *fmt_type_name(const struct type *t);
/* The argument class a value of type t is for a conversion; false when
 * it fits no conversion (tuples, records, aggregations, ...). */
bool fmt_arg_of_type(const struct type *t, enum fmt_arg *out);

/*
 * Check the arguments of func ("printf", "system", "cat") against f, as
 * bpftrace does: count first, then each argument in order. Returns NULL
 * when they fit, else bpftrace's message allocated in a, e.g.
 *   "printf: Not enough arguments for format string (1 supplied, 2 expected)"
 *   "printf: Too many arguments for format string (3 supplied, 2 expected)"
 *   "printf: %d specifier expects a value of type integer (string supplied)"
 */
const char *fmt_check_args(struct arena *a, const char *func,
			   const struct fmt_string *f,
			   struct type *const *args, int nargs);
/* The same for args given as sema's TY_TUPLE (nfields may be 0). */
const char *fmt_check_tuple(struct arena *a, const char *func,
			    const struct fmt_string *f,
			    const struct type *tuple);
/* fmt_check_args, reporting a failure with diag_error() at loc (the whole
 * call, as bpftrace underlines it). 0 or -EINVAL. */
int fmt_check_diag(struct diag_list *d, const struct ast_loc *loc,
		   const char *func, const struct fmt_string *f,
		   struct type *const *args, int nargs);

#endif
