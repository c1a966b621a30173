/*
 * Instruction boundaries in a file's code: uprobe:BIN:FUNC+N and
 * uprobe:BIN:0xADDR must name the first byte of an instruction, as
 * bpftrace checks before it attaches (a uprobe inside an instruction
 * makes the kernel write int3 over its middle: the process computes
 * wrong results or dies).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <Zydis/Zydis.h>

#include "probes.h"

int probes_insn_boundary(const char *path, uint64_t func_off, uint64_t size,
			 uint64_t at)
{
	ZydisDecodedInstruction in;
	ZydisDecoder d;
	uint64_t off = 0;
	uint8_t *code;
	ssize_t got;
	int fd, ret;

	if (!at)
		return 1;
	if (!size || at >= size || size > (64u << 20))
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	code = malloc(size);
	if (!code) {
		close(fd);
		return -ENOMEM;
	}
	got = pread(fd, code, size, (off_t)func_off);
	ret = got < 0 ? -errno : 0;
	close(fd);
	if (!ret && (uint64_t)got != size)
		ret = -EIO;
	if (ret) {
		free(code);
		return ret;
	}
	ZydisDecoderInit(&d, ZYDIS_MACHINE_MODE_LONG_64,
			 ZYDIS_STACK_WIDTH_64);
	while (off < at &&
	       ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&d, NULL, code + off,
							  size - off, &in)))
		off += in.length;
	free(code);
	if (off < at)
		return -EILSEQ;	/* undecodable bytes before it */
	return off == at;
}

int probes_insn_locked(const char *path, uint64_t off)
{
	ZydisDecodedInstruction in;
	ZydisDecoder d;
	uint8_t code[ZYDIS_MAX_INSTRUCTION_LENGTH];
	ssize_t got;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	got = pread(fd, code, sizeof(code), (off_t)off);
	close(fd);
	if (got <= 0)
		return got < 0 ? -errno : -EIO;
	ZydisDecoderInit(&d, ZYDIS_MACHINE_MODE_LONG_64,
			 ZYDIS_STACK_WIDTH_64);
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&d, NULL, code,
							(ZyanUSize)got, &in)))
		return -EILSEQ;
	return !!(in.attributes & ZYDIS_ATTRIB_HAS_LOCK);
}
