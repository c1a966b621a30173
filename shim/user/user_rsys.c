/*
 * A system call made by the target's control thread (user_int.h): the
 * one door every file of shim/user/ goes through, below them all.
 */
#include "user_int.h"

int user_rsys_in(struct ubt_user *u, struct pt *pt, long nr,
		 const uint64_t args[6], int64_t *ret)
{
	int err = pt_syscall(pt, nr, args, ret);

	if (err) {
		user_err(u, 0, "%s", pt->err);
		return err;
	}
	if (*ret < 0 && *ret > -4096)
		return user_err(u, (int)*ret, "remote system call %ld", nr);
	return 0;
}

int user_rsys(struct ubt_user *u, long nr, uint64_t a0, uint64_t a1,
		uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5,
		int64_t *ret)
{
	uint64_t args[6] = { a0, a1, a2, a3, a4, a5 };

	return user_rsys_in(u, &u->pt, nr, args, ret);
}
