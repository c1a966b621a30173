/*
 * The "what failed: why" message a shim object keeps for its caller
 * (struct pt's err, struct ubt_user's err): one formatting for both.
 */
#ifndef UBT_ERRBUF_H
#define UBT_ERRBUF_H

#include <stdarg.h>
#include <stddef.h>

/*
 * Format fmt into buf (len bytes); a non-zero err (-errno) adds
 * ": strerror(-err)".  Returns err, or -EINVAL when err is 0.
 */
int errbuf_vset(char *buf, size_t len, int err, const char *fmt,
		va_list ap);

#endif
