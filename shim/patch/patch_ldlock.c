/*
 * Where the dynamic loader's locks are: glibc keeps _dl_load_lock and
 * _dl_load_write_lock inside ld.so's _rtld_global, whose layout is not
 * exported.  libc's dl_iterate_phdr() takes the write lock first thing:
 * it loads _rtld_global's address from its GOT slot into a register and
 * passes that register plus the lock's offset to pthread_mutex_lock().
 * The code of that function, decoded from the file, gives the slot and
 * the offset (no glibc version is assumed); the load lock is the mutex
 * just before the write lock (glibc's struct rtld_global since 2.14:
 * _dl_load_lock, _dl_load_write_lock).  The caller checks both in the
 * process (patch.h: patch_ldlock_find()).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <Zydis/Zydis.h>

#include "patch.h"

#define LDLOCK_SCAN 256		/* the lock is taken in the first bytes */

/* The 64-bit general register r belongs to (its index 0-15), or -1. */
static int gpr(ZydisRegister r)
{
	ZydisRegister big;

	if (r == ZYDIS_REGISTER_NONE)
		return -1;
	big = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
	if (big < ZYDIS_REGISTER_RAX || big > ZYDIS_REGISTER_R15)
		return -1;
	return (int)(big - ZYDIS_REGISTER_RAX);
}

int patch_ldlock_find(const char *libc, uint64_t *slot, int64_t *off)
{
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	ZydisDecodedInstruction in;
	uint64_t vaddr, size, foff, from[16] = { 0 };
	uint8_t code[LDLOCK_SCAN];
	uint64_t got = 0, pos;
	int64_t disp = 0;
	ZydisDecoder d;
	ssize_t len;
	int fd, err;

	err = patch_find_symbol(libc, "dl_iterate_phdr", &vaddr, &size,
				&foff);
	if (err)
		return err;
	if (size > sizeof(code))
		size = sizeof(code);
	fd = open(libc, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = pread(fd, code, size, (off_t)foff);
	close(fd);
	if (len != (ssize_t)size)
		return -EIO;
	ZydisDecoderInit(&d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	for (pos = 0; pos < size; pos += in.length) {
		int dst;

		if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&d, code + pos,
							 size - pos, &in,
							 ops)))
			return -ENOENT;
		if (in.meta.category == ZYDIS_CATEGORY_CALL) {
			/* the first call takes the lock: %rdi holds it */
			if (!got)
				return -ENOENT;
			*slot = got;
			*off = disp;
			return 0;
		}
		if (in.meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
		    in.meta.category == ZYDIS_CATEGORY_RET)
			return -ENOENT;
		dst = in.operand_count_visible > 0 &&
				      ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER ?
			      gpr(ops[0].reg.value) :
			      -1;
		if (dst < 0)
			continue;
		/* mov REG, [rip + GOT slot]: REG holds that slot's value */
		if (in.mnemonic == ZYDIS_MNEMONIC_MOV &&
		    ops[0].size == 64 &&
		    ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY &&
		    ops[1].mem.base == ZYDIS_REGISTER_RIP) {
			ZyanU64 a;

			if (!ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(
				    &in, &ops[1], vaddr + pos, &a)))
				return -ENOENT;
			from[dst] = a;
			continue;
		}
		/* lea %rdi, [REG + disp]: the lock's address */
		if (in.mnemonic == ZYDIS_MNEMONIC_LEA && dst == 7 &&
		    ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY &&
		    ops[1].mem.index == ZYDIS_REGISTER_NONE &&
		    gpr(ops[1].mem.base) >= 0 &&
		    from[gpr(ops[1].mem.base)]) {
			got = from[gpr(ops[1].mem.base)];
			disp = ops[1].mem.disp.value;
			from[dst] = 0;
			continue;
		}
		/* any other write of a register forgets what it held */
		from[dst] = 0;
		if (dst == 7)
			got = 0;
	}
	return -ENOENT;
}
