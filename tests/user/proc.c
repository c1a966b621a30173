/* Test helpers shared by the user-mode tests (proc.h). */
#include <poll.h>
#include <unistd.h>

#include "proc.h"

int spawn(struct proc *p, char *const argv[])
{
	int in[2], out[2];

	if (pipe(in) || pipe(out))
		return -1;
	p->pid = fork();
	if (!p->pid) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	p->in = in[1];
	p->out = out[0];
	return 0;
}

int read_line(int fd, char *buf, size_t len)
{
	size_t n = 0;

	while (n + 1 < len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		if (poll(&pfd, 1, 60000) <= 0 || read(fd, buf + n, 1) != 1)
			break;
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = 0;
	return n ? 0 : -1;
}
