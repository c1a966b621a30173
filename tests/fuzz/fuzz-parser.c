/*
 * libFuzzer harness for the frontend parser: each input is a program. It
 * is lexed and parsed (attach points included), the AST is dumped and the
 * diagnostics are printed, all to /dev/null: the sanitizers and the parser's
 * own BUG() checks find the bugs. Built by `make fuzz` (see tests/README.md).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *params[] = { "/bin/true", "42", "" };
	static FILE *null;
	struct compile c;
	char *src;

	if (!null) {
		null = fopen("/dev/null", "w");
		if (!null)
			abort();
	}
	src = xmalloc(size + 1);
	memcpy(src, data, size);
	src[size] = '\0';

	memset(&c, 0, sizeof(c));
	arena_init(&c.arena);
	c.filename = "stdin";
	c.source = src;
	c.params = params;
	c.nparams = 3;
	c.max_strlen = 64;
	diag_init(&c.diag, &c.arena, c.filename, c.source);
	if (parse_program(&c) == 0) {
		if (!c.program || diag_has_errors(&c.diag))
			abort();
		ast_dump(null, c.program);
	} else if (!diag_has_errors(&c.diag)) {
		/* a failed parse always says why */
		abort();
	}
	diag_print(&c.diag, null);
	arena_release(&c.arena);
	free(src);
	return 0;
}
