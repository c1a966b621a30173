/*
 * TAP output for the C test programs (tests/README.md): ok() prints one
 * result, diag() a comment, tap_done() the plan; its return value is the
 * program's exit status. And what several of them load.
 */
#ifndef UBT_TESTS_TAP_H
#define UBT_TESTS_TAP_H

extern int tap_ntest, tap_nfail;

__attribute__((format(printf, 2, 3))) void ok(int cond, const char *fmt,
					      ...);
__attribute__((format(printf, 1, 2))) void diag(const char *fmt, ...);
int tap_done(void);
/* The build tree's runtime ($top_builddir/libubt-rt.so) loaded with dlopen
 * as ubt loads it into a target; NULL after a "Bail out!" line. */
void *tap_runtime(void);

#endif
