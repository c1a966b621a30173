/*
 * demo-target: a toy IO engine for the README's demo. It "submits" IOs of
 * a few sizes and "completes" them, a fixed number of times, so a trace of
 * it always shows the same counts:
 *
 *   ubt -c ./examples/demo-target examples/demo.bt
 */
#include <stdio.h>
#include <stdlib.h>

static unsigned long total_bytes;

__attribute__((noinline)) int submit_io(unsigned long len, int queue)
{
	total_bytes += len;
	__asm__ volatile("" ::: "memory");
	return queue;
}

__attribute__((noinline)) long complete_io(int queue)
{
	__asm__ volatile("" ::: "memory");
	return (long)total_bytes + queue;
}

int main(int argc, char **argv)
{
	static const unsigned long sizes[] = { 512, 4096, 4096, 4096, 65536 };
	long n = argc > 1 ? atol(argv[1]) : 100000;

	for (long i = 0; i < n; i++) {
		int q = submit_io(sizes[i % 5], (int)(i % 4));

		complete_io(q);
	}
	printf("demo-target: %ld IOs, %lu bytes\n", n, total_bytes);
	return 0;
}
