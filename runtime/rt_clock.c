/*
 * The clock of user-mode probes (RT_FN_CLOCK_NS): CLOCK_MONOTONIC in ns,
 * the clock of bpf_ktime_get_ns(), read as libc's clock_gettime() reads
 * it: through the kernel's vDSO, without a system call wherever the
 * clocksource allows it (tsc, kvm-clock, ...), about 20 ns instead of
 * 200-400.  This is what user-mode events are stamped with when the
 * time-stamp counter is not a clock (shim/base/merge.h), and what nsecs reads.
 *
 * rt_init() finds the vDSO in the auxiliary vector (AT_SYSINFO_EHDR, which
 * ubt reads from /proc/PID/auxv before its stop and passes; an older ubt
 * passes 0, and it is read from /proc/self/auxv here: no libc, four
 * system calls, each two stops of ubt's remote call) and looks
 * __vdso_clock_gettime up in its dynamic symbols (DT_HASH, else
 * DT_GNU_HASH).  Without a vDSO (vdso=0, a sandbox that refuses the
 * open) the system call is made instead.  The
 * kernel builds the vDSO's clock code without vector instructions, as the
 * runtime is built: the probed function's %xmm arguments survive.
 */
#include <elf.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_abi.h"
#include "rt_clock.h"
#include "rt_int.h"

struct rt_timespec {
	long sec, nsec;
};

typedef long (*rt_gettime_fn)(long clock, struct rt_timespec *ts);

static rt_gettime_fn rt_vdso_gettime;

/* The vDSO's address from the auxiliary vector, 0 if there is none. */
static uint64_t rt_auxv_vdso(void)
{
	static uint64_t aux[512];	/* (type, value) pairs */
	uint64_t got = 0, i;
	long fd, n;

	fd = rt_syscall4(257 /* openat */, -100 /* AT_FDCWD */,
			 (long)"/proc/self/auxv", 0x80000 /* O_CLOEXEC */, 0);
	if (fd < 0)
		return 0;
	while (got < sizeof(aux)) {
		n = rt_syscall4(0 /* read */, fd, (long)((char *)aux + got),
				(long)(sizeof(aux) - got), 0);
		if (n <= 0)
			break;
		got += (uint64_t)n;
	}
	rt_syscall4(3 /* close */, fd, 0, 0, 0);
	for (i = 0; i + 1 < got / 8 && aux[i] != AT_NULL; i += 2)
		if (aux[i] == AT_SYSINFO_EHDR)
			return aux[i + 1];
	return 0;
}

static int rt_streq(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

/* Symbols in a DT_GNU_HASH table: past the last chain's end. */
static uint64_t rt_gnu_nsyms(const uint32_t *gnu)
{
	uint32_t nbuckets = gnu[0], symoff = gnu[1], bloom = gnu[2];
	const uint32_t *buckets = gnu + 4 + 2 * (uint64_t)bloom;
	const uint32_t *chain = buckets + nbuckets;
	uint32_t last = 0, b;

	for (b = 0; b < nbuckets; b++)
		if (buckets[b] > last)
			last = buckets[b];
	if (last < symoff)
		return symoff;
	while (!(chain[last - symoff] & 1))
		last++;
	return (uint64_t)last + 1;
}

/* The address of function name in the vDSO image at base, or 0. */
static uint64_t rt_vdso_sym(uint64_t base, const char *name)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
	const Elf64_Phdr *ph;
	const Elf64_Dyn *dyn = NULL;
	const Elf64_Sym *sym = NULL;
	const uint32_t *hash = NULL, *gnu = NULL;
	const char *str = NULL;
	uint64_t bias = 0, nsym, i;
	int load = 0;

	if (!base || eh->e_ident[EI_MAG0] != ELFMAG0 ||
	    eh->e_ident[EI_MAG1] != ELFMAG1 ||
	    eh->e_ident[EI_MAG2] != ELFMAG2 ||
	    eh->e_ident[EI_MAG3] != ELFMAG3 ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_phentsize != sizeof(Elf64_Phdr))
		return 0;
	ph = (const Elf64_Phdr *)(base + eh->e_phoff);
	for (i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && !load) {
			bias = base + ph[i].p_offset - ph[i].p_vaddr;
			load = 1;
		}
		if (ph[i].p_type == PT_DYNAMIC)
			dyn = (const Elf64_Dyn *)(base + ph[i].p_offset);
	}
	if (!load || !dyn)
		return 0;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		if (dyn->d_tag == DT_SYMTAB)
			sym = (const Elf64_Sym *)(bias + dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_STRTAB)
			str = (const char *)(bias + dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_HASH)
			hash = (const uint32_t *)(bias + dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_GNU_HASH)
			gnu = (const uint32_t *)(bias + dyn->d_un.d_ptr);
	}
	if (!sym || !str || (!hash && !gnu))
		return 0;
	nsym = hash ? hash[1] /* nchain */ : rt_gnu_nsyms(gnu);
	for (i = 0; i < nsym; i++)
		if (sym[i].st_shndx != SHN_UNDEF &&
		    ELF64_ST_TYPE(sym[i].st_info) == STT_FUNC &&
		    rt_streq(str + sym[i].st_name, name))
			return bias + sym[i].st_value;
	return 0;
}

__attribute__((visibility("hidden"))) void rt_clock_init(uint64_t vdso)
{
	uint64_t fn = rt_vdso_sym(vdso ?: rt_auxv_vdso(),
				  "__vdso_clock_gettime");

	__atomic_store_n(&rt_vdso_gettime, (rt_gettime_fn)(uintptr_t)fn,
			 __ATOMIC_RELEASE);
}

__attribute__((visibility("default"))) uint64_t rt_clock_ns(void)
{
	rt_gettime_fn f = __atomic_load_n(&rt_vdso_gettime, __ATOMIC_RELAXED);
	struct rt_timespec ts = { 0, 0 };

	/* the vDSO reads the counter, which this thread may have off */
	if (!f || (rt_self && *(uint32_t *)((char *)rt_self + RT_BLK_NOTSC)) ||
	    f(1 /* CLOCK_MONOTONIC */, &ts))
		rt_syscall4(228 /* clock_gettime */, 1, (long)&ts, 0, 0);
	return (uint64_t)ts.sec * 1000000000u + (uint64_t)ts.nsec;
}
