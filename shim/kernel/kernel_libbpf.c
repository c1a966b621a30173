/*
 * libbpf's messages and the verifier's log: shown as -v asks
 * (kernel_set_verbose()), a long log cut to its head and tail.  A leaf:
 * kernel_load.c and kernel_kprobe.c (which quiets libbpf around a try)
 * both call it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "kernel.h"
#include "kernel_int.h"

static int kernel_verbose;

/* kernel_log_hold(): libbpf's messages go here, not to stderr */
static FILE *kernel_held;
static char *kernel_held_text;
static size_t kernel_held_len;

/*
 * A verifier log can be hundreds of thousands of lines: without -v keep
 * its head and its tail, where the verifier says why it gave up.
 */
#define KERNEL_LOG_HEAD 30
#define KERNEL_LOG_TAIL 60

static void kernel_print_log(FILE *f, const char *msg)
{
	const char *p = msg, *tail;
	int lines = 0, n;

	for (p = msg; (p = strchr(p, '\n')); p++)
		lines++;
	if (kernel_verbose || lines <= KERNEL_LOG_HEAD + KERNEL_LOG_TAIL) {
		fputs(msg, f);
		return;
	}
	for (p = msg, n = 0; n < KERNEL_LOG_HEAD; n++)
		p = strchr(p, '\n') + 1;
	fwrite(msg, 1, p - msg, f);
	fprintf(f, "... (%d lines, all of them with -v) ...\n",
		lines - KERNEL_LOG_HEAD - KERNEL_LOG_TAIL);
	for (tail = msg + strlen(msg), n = 0; tail > msg; tail--)
		if (tail[-1] == '\n' && ++n > KERNEL_LOG_TAIL)
			break;
	fputs(tail, f);
}

static int kernel_libbpf_print(enum libbpf_print_level level,
			       const char *fmt, va_list ap)
{
	FILE *f = kernel_held ? kernel_held : stderr;
	char *msg = NULL;
	int n;

	if (kernel_verbose < 0)	/* a load tried quietly */
		return 0;
	if (level == LIBBPF_DEBUG && kernel_verbose < 2)
		return 0;
	if (level == LIBBPF_INFO && kernel_verbose < 1)
		return 0;
	n = vasprintf(&msg, fmt, ap);
	if (n < 0)
		return n;
	if (strstr(msg, "-- BEGIN PROG LOAD LOG --"))
		kernel_print_log(f, msg);
	else
		fputs(msg, f);
	free(msg);
	return n;
}

int kernel_get_verbose(void)
{
	return kernel_verbose;
}

void kernel_set_verbose(int verbose)
{
	kernel_verbose = verbose;
	libbpf_set_print(kernel_libbpf_print);
}

void kernel_log_hold(void)
{
	if (!kernel_held)
		kernel_held = open_memstream(&kernel_held_text,
					     &kernel_held_len);
}

const char *kernel_log_held(void)
{
	if (!kernel_held)
		return "";
	fflush(kernel_held);
	return kernel_held_text ? kernel_held_text : "";
}

/*
 * The program whose load the kernel refused: libbpf names it in the
 * messages held ("prog 'NAME': BPF program load failed"); NULL when they
 * name none.  Valid until the next message or kernel_log_release().
 */
const char *kernel_log_failed_prog(void)
{
	static const char tag[] = "': BPF program load failed";
	static char name[128];
	const char *log = kernel_log_held(), *end, *start;

	end = strstr(log, tag);
	if (!end)
		return NULL;
	for (start = end; start > log && start[-1] != '\''; start--)
		if (start[-1] == '\n')
			return NULL;
	if (start == log || end - start >= (long)sizeof(name))
		return NULL;
	memcpy(name, start, end - start);
	name[end - start] = 0;
	return name;
}

void kernel_log_release(bool print)
{
	if (!kernel_held)
		return;
	fclose(kernel_held);
	kernel_held = NULL;
	if (print && kernel_held_text)
		fputs(kernel_held_text, stderr);
	free(kernel_held_text);
	kernel_held_text = NULL;
	kernel_held_len = 0;
}
