/*
 * Output exactly as bpftrace 0.17 prints it. The rules below were read off
 * bpftrace 0.17's observable output (tests/unit-output.c holds the exact
 * texts):
 *
 * - printf: the text before each conversion is C printf text ("%%" is
 *   "%"; a lone '%' right before the conversion makes it literal), and
 *   so is the text after the last conversion (bpftrace 0.17 prints that
 *   verbatim, "%%" as two percent signs: a bug ubt does not copy).
 * - maps: count, sum, min, max and integer maps sorted by value, avg and
 *   stats by average, hist and lhist by total count, others by key;
 *   integer keys compare as u64, strings bytewise, tuples element-wise.
 *   avg and stats maps end with an empty line, each hist/lhist entry ends
 *   with one; an empty map prints an empty line (two for avg and stats),
 *   an empty keyless count() map prints as 0.
 * - hist/lhist: the rows from the first to the last non-zero bucket;
 *   "%-16s%8llu |bar|" with a 52-wide bar scaled to the largest count;
 *   bounds divisible by 1024 printed with K, M, G, T, P, E.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* qsort_r, fwrite_unlocked */
#endif
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
#include "compat.h"
#include "output_int.h"

void out_init(struct out *o, FILE *f, enum out_format format)
{
	*o = (struct out){ .f = f, .format = format };
}

void out_attached(struct out *o, int nprobes)
{
	if (o->format == OUT_JSON && compat_has(COMPAT_ATTACHED_MSG))
		fprintf(o->f,
			"{\"type\": \"attached_probes\", \"count\": %d, \"data\": {\"probes\": %d}}\n",
			nprobes, nprobes);
	else if (o->format == OUT_JSON)
		fprintf(o->f,
			"{\"type\": \"attached_probes\", \"data\": {\"probes\": %d}}\n",
			nprobes);
	else if (compat_has(COMPAT_ATTACHED_MSG))
		fprintf(stderr, "Attached %d probe%s\n", nprobes,
			nprobes == 1 ? "" : "s");
	else
		fprintf(o->f, "Attaching %d probe%s...\n", nprobes,
			nprobes == 1 ? "" : "s");
}

void out_lost_events(struct out *o, uint64_t n)
{
	if (o->format == OUT_JSON)
		fprintf(o->f,
			"{\"type\": \"lost_events\", \"data\": {\"events\": %" PRIu64 "}}\n",
			n);
	else
		fprintf(o->f, "Lost %" PRIu64 " events\n", n);
}

/* A message of bpftrace's kind `type` (lost_events, ...), on the output. */
void out_message(struct out *o, const char *type, const char *msg)
{
	if (o->format == OUT_JSON) {
		fprintf(o->f, "{\"type\": \"%s\", \"data\": ", type);
		out_json_string(o->f, msg, strlen(msg));
		fputs("}\n", o->f);
	} else {
		fprintf(o->f, "%s\n", msg);
	}
}

void out_map_full(FILE *f, const char *name, uint64_t max_entries,
		  uint64_t dropped)
{
	fprintf(f,
		"WARNING: Map full; can't update element. Try increasing "
		"max_map_keys config or manually setting the max entries in "
		"a map declaration e.g. `let @a = hash(5000)`\n"
		"Additional Info - map: %s, max entries: %" PRIu64
		", updates dropped: %" PRIu64 "\n",
		name, max_entries, dropped);
}

int out_time(struct out *o, const char *fmt, const struct tm *tm)
{
	char buf[512];
	struct tm now;
	size_t n;

	if (!tm) {
		time_t t = time(NULL);

		if (!localtime_r(&t, &now))
			return -errno;
		tm = &now;
	}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	n = strftime(buf, sizeof(buf), fmt, tm);
#pragma GCC diagnostic pop
	if (!n && fmt[0])
		return -ENOSPC;
	if (o->format == OUT_JSON) {
		fputs("{\"type\": \"time\", \"data\": ", o->f);
		out_json_string(o->f, buf, n);
		fputs("}\n", o->f);
	} else {
		fwrite(buf, 1, n, o->f);
	}
	return 0;
}

int out_print_value(struct out *o, const struct type *t, const void *data)
{
	struct sb b = { 0 };
	int err = sb_value(o, &b, t, data,
			   o->format == OUT_JSON ? VS_JSON : VS_TEXT);

	if (!err) {
		if (o->format == OUT_JSON)
			fprintf(o->f, "{\"type\": \"value\", \"data\": %s}\n",
				b.s ? b.s : "");
		else
			fprintf(o->f, "%s\n", b.s ? b.s : "");
	}
	sb_release(&b);
	return err;
}
