/*
 * io-engine: a toy SPDK-style IO engine for examples/io-latency.bt.  One
 * thread polls: it submits an IO (read, write or flush), the "device"
 * completes it a few microseconds later (a flush takes longer, one IO in
 * a hundred much longer), and the completion callback runs; for SECONDS
 * seconds (default 30), then it exits.
 *
 *   ubt --metrics 9100 -c './examples/io-engine 30' examples/io-latency.bt
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const char *const ops[] = { "read", "read", "read", "write", "flush" };

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

__attribute__((noinline)) long io_submit(const char *op, unsigned long len,
					 long id)
{
	__asm__ volatile("" ::: "memory");
	return id + (long)len * (op[0] == 'w');
}

__attribute__((noinline)) void io_complete(const char *op, long id)
{
	__asm__ volatile("" : : "r"(op), "r"(id) : "memory");
}

int main(int argc, char **argv)
{
	unsigned long long end = now_ns() + 1000000000ull *
					      (argc > 1 ? atol(argv[1]) : 30);
	unsigned long x = 88172645463325252ul;
	long id = 0;

	while (now_ns() < end) {
		const char *op = ops[id % 5];
		unsigned long long t, wait;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		wait = (op[0] == 'f' ? 20000 : op[0] == 'w' ? 5000 : 2000) +
		       x % 2000 + (x % 100 == 0 ? 50000 : 0);
		io_submit(op, 4096, id);
		t = now_ns() + wait;
		while (now_ns() < t)
			;	/* the device */
		io_complete(op, id);
		id++;
	}
	printf("io-engine: %ld IOs\n", id);
	return 0;
}
