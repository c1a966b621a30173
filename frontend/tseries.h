/*
 * tseries() (bpftrace v0.26): its aggregation functions, its config key
 * unstable_tseries, and the layout of one bucket in the map.
 */
#ifndef UBT_TSERIES_H
#define UBT_TSERIES_H

#include <stdint.h>

/* type.ts_agg: what a bucket keeps of the values of its interval */
enum tseries_agg {
	TSERIES_NONE,	/* the last value (the latest timestamp wins) */
	TSERIES_AVG,
	TSERIES_MAX,
	TSERIES_MIN,
	TSERIES_SUM,
	TSERIES_NAGG,
};

/* config = { unstable_tseries = error|warn|enable }; warn by default */
enum tseries_unstable {
	TSERIES_UNSTABLE_WARN,
	TSERIES_UNSTABLE_ERROR,
	TSERIES_UNSTABLE_ENABLE,
};

/*
 * One bucket of one CPU in the BPF map, as bpftrace stores it: value,
 * meta (the last value's timestamp; avg: the count; min/max: set) and
 * epoch (timestamp / interval; 0: never written). The key is the map's
 * key, then the u64 bucket index epoch % num_intervals.
 */
struct tseries_cell {
	int64_t value;		/* u64 when the type is unsigned */
	uint64_t meta;
	uint64_t epoch;
};

const char *tseries_agg_name(int agg);

#endif
