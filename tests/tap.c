/* TAP output for the C test programs: see tap.h. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "tap.h"

int tap_ntest, tap_nfail;

void ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", cond ? "" : "not ", ++tap_ntest);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		tap_nfail++;
}

void diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

int tap_done(void)
{
	printf("1..%d\n", tap_ntest);
	return tap_nfail ? 1 : 0;
}

void *tap_runtime(void)
{
	const char *b = getenv("top_builddir");
	char path[4096];
	void *h;

	snprintf(path, sizeof(path), "%s/libubt-rt.so", b ? b : ".");
	h = dlopen(path, RTLD_NOW);
	if (!h)
		printf("Bail out! %s\n", dlerror());
	return h;
}
