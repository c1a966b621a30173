/*
 * Output: everything ubt prints for the traced program, byte-identical to
 * bpftrace 0.17 (text, and -f json): printf events, time(), print() of
 * values and maps, the maps at exit, "Attaching N probes...", lost events.
 *
 * The producers (shim/kernel/kernel.c, later the user-mode rings) hand over data
 * in the layouts below; this module only formats. Everything is
 * host-endian.
 *
 * Values (a printf argument, print(expr), a map key or a plain map value)
 * are the bytes of their sema type:
 *   TY_INT, TY_BOOL, TY_POINTER, TY_ENUM: t->size bytes, sign- or
 *       zero-extended by t->is_signed (pointers and bools unsigned)
 *   TY_STRING: t->size bytes, NUL-padded (no NUL needed when full)
 *   TY_BUFFER: u8 length, then t->size - 1 bytes of room (bpftrace's)
 *   TY_TUPLE: each field at t->fields[i].offset (natural alignment),
 *       t->size the padded total
 *   TY_USERNAME (uid), TY_STRERROR (errno value): integers, printed as
 *       text; TY_INET (ntop): u64 address family (AF_INET, AF_INET6),
 *       then 16 bytes of address in network order;
 *   TY_USYM, TY_KSYM, TY_PROBE, ...: through out.resolve below; without
 *       it usym/ksym print as 0x<address> (the first u64), the others
 *       are not supported (-ENOTSUP, and a message on stderr)
 *
 * Maps: entries already merged across CPUs (and user-mode threads). A key
 * is the bytes of key_type: NULL for keyless maps, one key's type, or a
 * TY_TUPLE of the key expressions' types when nkeys > 1 (sema_map.key).
 * The merged value of each aggregation:
 *   TY_COUNT            u64
 *   TY_SUM              s64 (is_signed) or u64
 *   TY_MIN, TY_MAX      struct out_minmax (value printed even when !set)
 *   TY_AVG, TY_STATS    struct out_avg
 *   TY_HIST, TY_LHIST   u64 counts[out_nbuckets(value_type)], indexed by
 *                       out_hist_index() / out_lhist_index(): the BPF and
 *                       native code compute exactly these indexes
 *   anything else       the value type's bytes, as for values above
 */
#ifndef UBT_OUTPUT_H
#define UBT_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "tseries.h"

struct type;
struct fmt_string;

enum out_format {
	OUT_TEXT,
	OUT_JSON,		/* -f json */
};

/*
 * Values whose text needs the producer's context: TY_USYM ({u64 addr;
 * u64 pid}, as codegen stores func in uprobes), TY_KSYM (u64 addr),
 * TY_PROBE (u64 probe/program index), TY_TIMESTAMP, TY_INET, TY_MAC,
 * TY_CGROUP_PATH, TY_USTACK, TY_KSTACK. Write the text as bpftrace prints
 * it, NUL-terminated, into buf; 0, or -ENOTSUP to let output handle it
 * (TY_USERNAME: the user name of the uid; TY_STRERROR: strerror()), or
 * another -errno. Unresolved values print as "not supported" errors.
 */
typedef int (*out_resolve_fn)(void *ctx, const struct type *t,
			      const void *data, char *buf, size_t size);

struct out {
	FILE *f;		/* stdout or -o FILE */
	enum out_format format;
	out_resolve_fn resolve;	/* NULL: none */
	void *resolve_ctx;
};

void out_init(struct out *o, FILE *f, enum out_format format);

struct out_minmax {
	int64_t value;		/* u64 when the type is unsigned */
	uint64_t set;		/* a value was seen */
};

struct out_avg {
	uint64_t count;
	int64_t total;		/* u64 when the type is unsigned */
};

/*
 * hist(v) / hist(v, k), k = type->hist_bits (0..5):
 *   index 0: v < 0;  1: v == 0;
 *   l = floor(log2(v)); l < k: 1 + v (one bucket per value);
 *   l >= k: 1 + 2^k + (l - k) * 2^k + ((v >> (l - k)) - 2^k)
 * (k = 0: 2 + floor(log2(v)), so [1] is index 2, [2, 4) index 3, ...).
 * out_nbuckets() is 2^k * (64 - k) + 1 (65 for k = 0).
 *
 * lhist(v, min, max, step): nb = (max - min) / step;
 *   index 0: v < min;  nb + 1: v >= max;  else 1 + (v - min) / step
 * (as bpftrace; a value in a last partial step lands in the >= max
 * bucket). out_nbuckets() is nb + 2.
 */
uint64_t out_hist_index(int64_t v, int bits);
uint64_t out_lhist_index(int64_t v, int64_t min, int64_t max, int64_t step);
/* Buckets of a TY_HIST/TY_LHIST value type; 0 for other types. */
size_t out_nbuckets(const struct type *value_type);

/*
 * tseries(): a TY_TSERIES value is ts_num buckets, each one bucket's
 * cells merged (tseries_cell_merge()); set: the bucket's key exists.
 * Printed by shim/output/output_tseries.c.
 */
struct out_tseries {
	struct tseries_cell cell;
	uint64_t set;
};

/* Merge cell b (another CPU's, or user mode's) into a: the later epoch
 * wins; the same epoch combines as t->ts_agg says. */
void tseries_cell_merge(const struct type *t, struct tseries_cell *a,
			const struct tseries_cell *b);

struct out_entry {
	const void *key;	/* NULL for keyless maps */
	const void *value;	/* merged value, layout above */
};

struct out_map {
	const char *name;	/* "@", "@name" */
	const struct type *key_type;	/* NULL: keyless */
	int nkeys;		/* 0 keyless; > 1: key_type is the TY_TUPLE */
	const struct type *value_type;
	const struct out_entry *entries;	/* any order; not modified */
	size_t nentries;
};

/* "Attaching 1 probe...", "Attaching N probes..." / attached_probes. */
void out_attached(struct out *o, int nprobes);
/* Events dropped by a full ring: "Lost N events" / lost_events. */
void out_lost_events(struct out *o, uint64_t n);
void out_message(struct out *o, const char *type, const char *msg);
/*
 * Updates of map `name` (max_entries keys) that found it full, kernel and
 * user-mode probes together: said once at exit, on f (stderr), in
 * bpftrace's wording for a failed update of a full map (its -k warning,
 * printed there at each failure), then the map and the count.
 */
void out_map_full(FILE *f, const char *name, uint64_t max_entries,
		  uint64_t dropped);

/*
 * A printf event: args is the TY_TUPLE of the argument types (sema_fmt
 * args), data the record's argument bytes laid out as that tuple (the
 * first argument at data + args->fields[0].offset), size the bytes
 * available at data (checked). 0 or -errno.
 */
int out_printf(struct out *o, const struct fmt_string *f,
	       const struct type *args, const void *data, size_t size);
/* The same text as a malloc'd string (system(), cat()); NULL + errno. */
char *out_sprintf(const struct out *o, const struct fmt_string *f,
		  const struct type *args, const void *data, size_t size);
/* out_sprintf() without a resolver. */
char *out_format(const struct fmt_string *f, const struct type *args,
		 const void *data, size_t size);

/* time(fmt): strftime of tm (NULL: now, local time). 0 or -errno. */
int out_time(struct out *o, const char *fmt, const struct tm *tm);

/* print(expr): one value of type t, then a newline. 0 or -errno. */
int out_print_value(struct out *o, const struct type *t, const void *data);

/*
 * print(@m) / print(@m, top, div): the map as bpftrace prints it (sorted
 * as bpftrace sorts; top = 0: every entry; div = 0 or 1: undivided).
 * An empty map prints as bpftrace 0.17 prints it: an empty line in text
 * (two for avg and stats) and nothing in JSON, except a keyless count()
 * map, which shows 0.
 */
int out_print_map(struct out *o, const struct out_map *m, uint64_t top,
		  uint64_t div);
/*
 * At exit: two newlines, then every map in name order, as bpftrace does
 * (all maps, also those print()ed before and empty ones).
 */
int out_print_maps_at_exit(struct out *o, const struct out_map *const *maps,
			   int nmaps);
/* On SIGUSR1: every map in name order, without the two newlines. */
int out_print_maps(struct out *o, const struct out_map *const *maps,
		   int nmaps);

/*
 * One value of type t as it prints in a map's key in text ("@[...]"):
 * a malloc'd string, or NULL with errno (--metrics' labels).
 */
char *out_key_string(const struct out *o, const struct type *t,
		     const void *p);

/* Write s as a JSON string (quotes included), bpftrace's escaping. */
void out_json_string(FILE *f, const char *s, size_t len);

#endif
