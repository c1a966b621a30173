/*
 * For targets that reach into ubt's memfd while traced (tests/user/
 * scribble.c, lockhold.c): its read-write mapping at offset 0, found in
 * /proc/self/maps as /memfd:ubt..., or NULL when untraced.
 */
#ifndef UBT_TEST_MEMFD_MAP_H
#define UBT_TEST_MEMFD_MAP_H

#include <stdio.h>
#include <string.h>

static inline char *find_memfd(void)
{
	char line[4096], perms[8], path[4096];
	unsigned long lo, hi, off;
	char *found = NULL;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return NULL;
	while (!found && fgets(line, sizeof(line), f)) {
		path[0] = 0;
		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %4095s", &lo, &hi,
			   perms, &off, path) == 5 &&
		    !strncmp(path, "/memfd:ubt", 10) &&
		    !strcmp(perms, "rw-s") && !off)
			found = (char *)lo;
	}
	fclose(f);
	return found;
}

#endif
