/*
 * libubt-target.so: a shared library of the test targets' own, for
 * uprobes on a library named by name or path (see libuser.c).
 */
#include <string.h>

#include "target.h"

UBT_PROBE int ubt_lib_add(int a, int b)
{
	UBT_FRAME();
	return a + b;
}

UBT_PROBE int ubt_lib_strlen(const char *s)
{
	UBT_FRAME();
	return (int)strlen(s);
}
