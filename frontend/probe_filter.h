/*
 * --probe-filter REGEX: drop the parsed program's attach points whose
 * probe name (provider spelled out: "interval:ms:200") REGEX does not
 * match, and the probes left without one; BEGIN and END stay.
 */
#ifndef UBT_PROBE_FILTER_H
#define UBT_PROBE_FILTER_H

struct compile;

/* 0; -EINVAL with a diagnostic for a bad REGEX or when no probe
 * matched. Nothing to do without c->probe_filter. */
int probe_filter_apply(struct compile *c);

#endif
