/* The error message of a shim object (errbuf.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "errbuf.h"

int errbuf_vset(char *buf, size_t len, int err, const char *fmt,
		va_list ap)
{
	size_t n;

	vsnprintf(buf, len, fmt, ap);
	n = strlen(buf);
	if (err)
		snprintf(buf + n, len - n, ": %s", strerror(-err));
	return err ? err : -EINVAL;
}
