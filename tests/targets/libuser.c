/*
 * ubt-libuser [N [wait]]: calls into libubt-target.so (found through its
 * $ORIGIN rpath) N rounds (default 4): ubt_lib_add(i, i) (returns 2 * i)
 * and ubt_lib_strlen("lib") (returns 3), for i in 1..N; exits 0. With
 * "wait", first prints "ready" and waits (up to 30 s) for SIGUSR1, like
 * ubt-wait, so that a tracer can attach with -p while the library is
 * mapped.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "target.h"

int ubt_lib_add(int a, int b);
int ubt_lib_strlen(const char *s);

int main(int argc, char **argv)
{
	long n = target_count(argc, argv, 1, 4);
	char s[] = "lib";
	int bad = 0;

	if (argc > 2) {
		if (strcmp(argv[2], "wait") != 0)
			return 2;
		target_wait_usr1();
	}
	for (int i = 1; i <= n; i++) {
		bad |= ubt_lib_add(i, i) != 2 * i;
		bad |= ubt_lib_strlen(s) != 3;
	}
	return target_result("ubt-libuser", bad);
}
