/*
 * One ubt in user mode per process: the claim (user.h).  An abstract
 * unix socket named after the process (its pid and start time) is bound
 * and listened on by the ubt that plans user mode there; a second ubt
 * planning at the same instant fails to bind it and runs its probes in
 * the kernel.  The kernel drops the name when the last descriptor closes
 * (the worker and the guard share it): nothing is left in any file
 * system, and a ubt killed anyhow releases it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "owner.h"
#include "user.h"

static socklen_t claim_addr(pid_t pid, struct sockaddr_un *a)
{
	int n;

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	/* abstract: sun_path[0] is 0 */
	n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1,
		     "ubt-user-%d-%llu", (int)pid,
		     (unsigned long long)owner_start_time(pid));
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* The pid of the ubt that holds the claim (0: unknown). */
static pid_t claim_holder(const struct sockaddr_un *a, socklen_t len)
{
	struct ucred cr = { 0 };
	socklen_t cl = sizeof(cr);
	/* non-blocking: nobody accepts, and once the holder's backlog is
	 * full a blocking connect() would wait for ever */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
			0);

	if (fd < 0)
		return 0;
	if (connect(fd, (const struct sockaddr *)a, len) ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl))
		cr.pid = 0;
	close(fd);
	return cr.pid;
}

/* the process this ubt claimed (planning may run again: it holds it) */
static pid_t claimed;

int user_claim(pid_t pid, char *reason, size_t len)
{
	struct sockaddr_un a;
	socklen_t alen = claim_addr(pid, &a);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), err;
	pid_t holder;

	if (pid == claimed) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	if (fd < 0) {
		err = -errno;
		snprintf(reason, len, "cannot claim pid %d for user mode: "
			 "socket: %s", (int)pid, strerror(-err));
		return err;
	}
	if (!bind(fd, (struct sockaddr *)&a, alen) && !listen(fd, 1)) {
		claimed = pid;
		return 0;	/* held (fd kept) until ubt ends */
	}
	err = errno == EADDRINUSE ? -EBUSY : -errno;
	close(fd);
	holder = err == -EBUSY ? claim_holder(&a, alen) : 0;
	if (holder)
		snprintf(reason, len, "another ubt (pid %d) runs probes in "
			 "pid %d", (int)holder, (int)pid);
	else
		snprintf(reason, len, "another ubt runs probes in pid %d%s%s",
			 (int)pid, err == -EBUSY ? "" : ": ",
			 err == -EBUSY ? "" : strerror(-err));
	return err;
}
