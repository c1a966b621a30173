/*
 * comm, uid and gid in user-mode probes without a system call per hit
 * (rt_abi.h, RT_COMM_SLOTS): a BPF program on the kernel's task_rename tracepoint
 * writes each new name of a thread of the target into a table, a BPF
 * array map (BPF_F_MMAPABLE) that the target maps read-only, where the
 * threads' probe code finds it.  The program runs in the renaming thread
 * before the rename returns, whoever renames: the thread itself
 * (prctl(PR_SET_NAME), pthread_setname_np() on itself), another of its
 * threads (pthread_setname_np(): a write to /proc/self/task/TID/comm),
 * another process (/proc/PID/task/TID/comm).  It takes the threads of
 * the target's pid only: a forked child reads its name with prctl at
 * every hit (runtime/rt_builtin.c).
 *
 * The map's fd goes to the target over a unix socket (SCM_RIGHTS: the
 * target may be another user's process, and opening a BPF map's fd
 * through /proc does not work), with remote system calls in the stopped
 * target: socketpair, recvmsg, mmap, close; the messages live in the
 * control page's scratch area, which both sides map.  The program is
 * written here as instructions (a fixed program: no LLVM, no object
 * file), with the target's pid and the field offsets of task_struct from
 * the kernel's BTF as constants.
 *
 * The same table ends in a credentials generation: a second program, on
 * the exits of setuid, setgid, setreuid, setregid, setresuid and
 * setresgid (perf-event tracepoints), adds one when a thread of the
 * target made one of these calls; probe code then reads uid and gid
 * again (runtime/rt_builtin.c).
 *
 * Where any of it fails (no BTF, no BPF, a sandboxed target), comm reads
 * prctl(PR_GET_NAME) at every hit, ~0.2 us, still far less than a kernel
 * uprobe's trap, and uid and gid stay as each thread first read them:
 * -v says so.  All of it is made only for programs whose user-mode
 * probes read comm, uid, gid or username.
 */
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <linux/bpf.h>

#include "tracepoint.h"
#include "kfeat.h"
#include "user_int.h"

#define INSN(c, d, s, o, i)                                                   \
	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s),      \
			    .off = (o), .imm = (i) })
#define MOV_X(d, s) INSN(BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)
#define MOV_K(d, k) INSN(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, k)
#define ALU_K(op, d, k) INSN(BPF_ALU64 | (op) | BPF_K, d, 0, 0, k)
#define ALU_X(op, d, s) INSN(BPF_ALU64 | (op) | BPF_X, d, s, 0, 0)
#define ST0(off) INSN(BPF_ST | BPF_MEM | BPF_DW, BPF_REG_10, 0, off, 0)
#define LDX(sz, d, s, off) INSN(BPF_LDX | BPF_MEM | (sz), d, s, off, 0)
#define STX(d, s, off) INSN(BPF_STX | BPF_MEM | BPF_DW, d, s, off, 0)
#define CALL(fn) INSN(BPF_JMP | BPF_CALL, 0, 0, 0, fn)
#define EXIT() INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)
/* a jump to "out", resolved by user_comm_prog() */
#define JOUT_K(op, d, k) INSN(BPF_JMP | (op) | BPF_K, d, 0, 0x7fff, k)
#define JOUT_X(op, d, s) INSN(BPF_JMP | (op) | BPF_X, d, s, 0x7fff, 0)

#define COMM_TAB_SIZE RT_COMM_TAB_SIZE
_Static_assert(RT_COMM_CRED_OFF == RT_COMM_SLOTS * sizeof(struct rt_comm_slot),
	       "the credentials generation follows the slots");

struct comm_prog {
	struct bpf_insn in[96];
	int n;
};

static void emit(struct comm_prog *p, struct bpf_insn i)
{
	BUG_ON(p->n >= (int)(sizeof(p->in) / sizeof(p->in[0])));
	p->in[p->n++] = i;
}

/* r1 = fp + off */
static void emit_fp(struct comm_prog *p, int reg, int off)
{
	emit(p, MOV_X(reg, BPF_REG_10));
	emit(p, ALU_K(BPF_ADD, reg, off));
}

/* probe_read_kernel(fp + fp_off, 4, task + off) (r6: ctx); out on failure */
static void emit_task_u32(struct comm_prog *p, int fp_off, int off)
{
	emit_fp(p, BPF_REG_1, fp_off);
	emit(p, MOV_K(BPF_REG_2, 4));
	emit(p, LDX(BPF_DW, BPF_REG_3, BPF_REG_6, 0));
	emit(p, ALU_K(BPF_ADD, BPF_REG_3, off));
	emit(p, CALL(BPF_FUNC_probe_read_kernel));
	emit(p, JOUT_K(BPF_JNE, BPF_REG_0, 0));
}

/* r0 = map_lookup_elem(map, fp + key_off); out when absent */
static void emit_lookup(struct comm_prog *p, int map_fd, int key_off)
{
	emit(p, INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD,
		     0, map_fd));
	emit(p, INSN(0, 0, 0, 0, 0));
	emit_fp(p, BPF_REG_2, key_off);
	emit(p, CALL(BPF_FUNC_map_lookup_elem));
	emit(p, JOUT_K(BPF_JEQ, BPF_REG_0, 0));
}

/* out: the jumps to it resolved, then return 0 */
static void emit_out(struct comm_prog *p)
{
	for (int i = 0; i < p->n; i++)
		if (p->in[i].off == 0x7fff &&
		    BPF_CLASS(p->in[i].code) == BPF_JMP)
			p->in[i].off = (int16_t)(p->n - i - 1);
	emit(p, MOV_K(BPF_REG_0, 0));
	emit(p, EXIT());
}

/*
 * The program (raw tracepoint: ctx[0] = the task, ctx[1] = its new name):
 *
 *	probe_read_kernel(&tgid, 4, &task->tgid);
 *	if (tgid != PID || !(tab = map_lookup_elem(map, &zero)))
 *		return 0;
 *	probe_read_kernel(&tid, 4, &task->pid);
 *	probe_read_kernel_str(name, 16, new_name);	// name zeroed first
 *	slot = &tab[tid % RT_COMM_SLOTS];
 *	slot->name = name;				// two 8-byte stores
 *	slot->word = ((slot->word >> 32) + 1) << 32 | tid;
 */
static void user_comm_prog(struct comm_prog *p, int map_fd, pid_t pid,
			   int pid_off, int tgid_off)
{
	p->n = 0;
	emit(p, MOV_X(BPF_REG_6, BPF_REG_1));
	for (int off = -8; off >= -40; off -= 8)
		emit(p, ST0(off));
	/* the renamed thread's process */
	emit_task_u32(p, -8, tgid_off);
	emit(p, LDX(BPF_W, BPF_REG_1, BPF_REG_10, -8));
	emit(p, JOUT_K(BPF_JNE, BPF_REG_1, pid));
	/* the table */
	emit_lookup(p, map_fd, -16);	/* key 0 */
	emit(p, MOV_X(BPF_REG_8, BPF_REG_0));
	/* the thread, its new name */
	emit_task_u32(p, -24, pid_off);
	emit(p, LDX(BPF_W, BPF_REG_7, BPF_REG_10, -24));
	emit_fp(p, BPF_REG_1, -40);
	emit(p, MOV_K(BPF_REG_2, 16));
	emit(p, LDX(BPF_DW, BPF_REG_3, BPF_REG_6, 8));
	emit(p, CALL(BPF_FUNC_probe_read_kernel_str));
	emit(p, JOUT_K(BPF_JSLT, BPF_REG_0, 0));
	/* its slot: the name, then the word */
	emit(p, MOV_X(BPF_REG_1, BPF_REG_7));
	emit(p, ALU_K(BPF_AND, BPF_REG_1, RT_COMM_SLOTS - 1));
	emit(p, ALU_K(BPF_MUL, BPF_REG_1, sizeof(struct rt_comm_slot)));
	emit(p, ALU_X(BPF_ADD, BPF_REG_8, BPF_REG_1));
	emit(p, LDX(BPF_DW, BPF_REG_1, BPF_REG_10, -40));
	emit(p, STX(BPF_REG_8, BPF_REG_1, 8));
	emit(p, LDX(BPF_DW, BPF_REG_1, BPF_REG_10, -32));
	emit(p, STX(BPF_REG_8, BPF_REG_1, 16));
	emit(p, LDX(BPF_DW, BPF_REG_1, BPF_REG_8, 0));
	emit(p, ALU_K(BPF_RSH, BPF_REG_1, 32));
	emit(p, ALU_K(BPF_ADD, BPF_REG_1, 1));
	emit(p, ALU_K(BPF_LSH, BPF_REG_1, 32));
	emit(p, ALU_X(BPF_OR, BPF_REG_1, BPF_REG_7));
	emit(p, STX(BPF_REG_8, BPF_REG_1, 0));
	emit_out(p);
}

/*
 * The credentials program (a tracepoint on the exits of the set*id system
 * calls): one more in the generation after the slots when the caller is
 * a thread of the target.
 *
 *	if (get_current_pid_tgid() >> 32 == PID &&
 *	    (tab = map_lookup_elem(map, &zero)))
 *		__sync_fetch_and_add(&tab->cred_gen, 1);
 */
static void user_cred_prog(struct comm_prog *p, int map_fd, pid_t pid)
{
	p->n = 0;
	emit(p, ST0(-8));
	emit(p, CALL(BPF_FUNC_get_current_pid_tgid));
	emit(p, ALU_K(BPF_RSH, BPF_REG_0, 32));
	emit(p, JOUT_K(BPF_JNE, BPF_REG_0, pid));
	emit_lookup(p, map_fd, -8);
	emit(p, MOV_K(BPF_REG_1, 1));
	emit(p, INSN(BPF_STX | BPF_ATOMIC | BPF_DW, BPF_REG_0, BPF_REG_1,
		     RT_COMM_CRED_OFF, BPF_ADD));
	emit_out(p);
}

/* The system calls that change a thread's real uid or gid. */
static const char *const user_cred_calls[USER_CRED_TPS] = {
	"setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid",
};

/* Attach prog to syscalls:sys_exit_NAME; the perf event's fd, or -errno. */
static int user_cred_attach(int prog, const char *name)
{
	struct perf_event_attr a = { .type = PERF_TYPE_TRACEPOINT,
				     .size = sizeof(a), .sample_period = 1,
				     .wakeup_events = 1 };
	const char *root = tp_tracefs();
	char path[PATH_MAX], buf[32];
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "%s/events/syscalls/sys_exit_%s/id",
		 root ? root : "/sys/kernel/tracing", name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	a.config = strtoull(buf, NULL, 10);
	fd = syscall(SYS_perf_event_open, &a, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, PERF_EVENT_IOC_SET_BPF, prog) ||
	    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* Byte offsets of task_struct's pid and tgid in the kernel's BTF. */
static int user_comm_offsets(int *pid_off, int *tgid_off)
{
	const struct btf *btf = kfeat_vmlinux_btf();
	const struct btf_type *t;
	const struct btf_member *m;
	int id;

	*pid_off = *tgid_off = -1;
	if (!btf)
		return -ENOENT;
	id = btf__find_by_name_kind(btf, "task_struct", BTF_KIND_STRUCT);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	m = t ? btf_members(t) : NULL;
	for (int i = 0; t && i < btf_vlen(t); i++, m++) {
		const char *name = btf__name_by_offset(btf, m->name_off);
		int off = (int)(btf_member_bit_offset(t, i) / 8);

		if (name && !strcmp(name, "pid"))
			*pid_off = off;
		else if (name && !strcmp(name, "tgid"))
			*tgid_off = off;
	}
	return *pid_off < 0 || *tgid_off < 0 ? -ENOENT : 0;
}

/* The scratch area of the control page: ubt's view, the target's address. */
#define COMM_SCRATCH(u) ((char *)(u)->m.base + USER_SCRATCH_OFF)
#define COMM_SCRATCH_T(u) ((u)->target_base + USER_SCRATCH_OFF)

struct comm_msg {
	int sv[2];
	struct msghdr mh;
	struct iovec iov;
	char byte;
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} cm;
};

/*
 * Hand fd to the stopped target: its number there in *tfd.  Over a
 * socket pair the target makes, ubt's end taken with pidfd_getfd(): no
 * name, so a target in another network namespace takes it too.
 */
int user_comm_send(struct ubt_user *u, int fd, int64_t *tfd)
{
	struct comm_msg *m = (struct comm_msg *)COMM_SCRATCH(u);
	uint64_t t = COMM_SCRATCH_T(u);
	struct msghdr mh = { 0 };
	struct iovec iov = { .iov_base = "u", .iov_len = 1 };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} cm;
	int sv[2] = { -1, -1 }, pfd, cs = -1, err;
	int64_t ret;

	memset(m, 0, sizeof(*m));
	err = user_rsys(u, SYS_socketpair, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC,
			0, t + offsetof(struct comm_msg, sv), 0, 0, &ret);
	if (!err) {
		memcpy(sv, m->sv, sizeof(sv));
		pfd = (int)syscall(SYS_pidfd_open, u->pid, 0);
		if (pfd >= 0)
			cs = (int)syscall(SYS_pidfd_getfd, pfd, sv[0], 0);
		if (cs < 0)
			err = user_err(u, -errno, "pidfd_getfd");
		if (pfd >= 0)
			close(pfd);
	}
	if (!err) {
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = cm.buf;
		mh.msg_controllen = sizeof(cm.buf);
		memset(cm.buf, 0, sizeof(cm.buf));
		CMSG_FIRSTHDR(&mh)->cmsg_level = SOL_SOCKET;
		CMSG_FIRSTHDR(&mh)->cmsg_type = SCM_RIGHTS;
		CMSG_FIRSTHDR(&mh)->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(CMSG_FIRSTHDR(&mh)), &fd, sizeof(int));
		if (sendmsg(cs, &mh, MSG_NOSIGNAL) != 1)
			err = user_err(u, -errno, "sendmsg");
	}
	if (!err) {
		/* the target's msghdr, pointing into the scratch area */
		m->iov.iov_base = (void *)(uintptr_t)(t + offsetof(struct comm_msg,
								  byte));
		m->iov.iov_len = 1;
		m->mh.msg_iov = (void *)(uintptr_t)(t + offsetof(struct comm_msg,
								iov));
		m->mh.msg_iovlen = 1;
		m->mh.msg_control = (void *)(uintptr_t)(t +
			offsetof(struct comm_msg, cm));
		m->mh.msg_controllen = sizeof(m->cm.buf);
		err = user_rsys(u, SYS_recvmsg, (uint64_t)sv[1],
				t + offsetof(struct comm_msg, mh),
				MSG_CMSG_CLOEXEC, 0, 0, 0, &ret);
		if (!err && (ret != 1 || m->cm.h.cmsg_type != SCM_RIGHTS ||
			     m->cm.h.cmsg_len != CMSG_LEN(sizeof(int))))
			err = user_err(u, -EPROTO, "recvmsg in the target");
	}
	if (!err) {
		int got;

		memcpy(&got, CMSG_DATA(&m->cm.h), sizeof(got));
		*tfd = got;
	}
	for (int i = 0; i < 2; i++)
		if (sv[i] >= 0)
			user_rsys(u, SYS_close, (uint64_t)sv[i], 0, 0, 0, 0, 0,
				  &ret);
	if (cs >= 0)
		close(cs);
	memset(m, 0, sizeof(*m));
	return err;
}

void user_comm_stop(struct ubt_user *u)
{
	if (u->comm_link >= 0)
		close(u->comm_link);
	if (u->comm_prog >= 0)
		close(u->comm_prog);
	if (u->comm_map >= 0)
		close(u->comm_map);
	if (u->cred_prog >= 0)
		close(u->cred_prog);
	for (int i = 0; i < USER_CRED_TPS; i++) {
		if (u->cred_ev[i] >= 0)
			close(u->cred_ev[i]);
		u->cred_ev[i] = -1;
	}
	u->comm_link = u->comm_prog = u->comm_map = u->cred_prog = -1;
}

int user_comm_prepare(struct ubt_user *u)
{
	static char log[4096];
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_MMAPABLE);
	LIBBPF_OPTS(bpf_prog_load_opts, po, .log_buf = log,
		    .log_size = sizeof(log));
	int pid_off, tgid_off, err;
	struct comm_prog *p;

	user_comm_stop(u);
	err = user_comm_offsets(&pid_off, &tgid_off);
	if (err)
		return user_err(u, err, "task_struct's pid and tgid in BTF");
	u->comm_map = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ubt_comm", 4,
				     COMM_TAB_SIZE, 1, &mo);
	if (u->comm_map < 0) {
		err = u->comm_map;
		u->comm_map = -1;
		return user_err(u, err, "create the comm table");
	}
	p = xcalloc(1, sizeof(*p));
	user_comm_prog(p, u->comm_map, u->pid, pid_off, tgid_off);
	u->comm_prog = bpf_prog_load(BPF_PROG_TYPE_RAW_TRACEPOINT, "ubt_comm",
				     "GPL", p->in, p->n, &po);
	free(p);
	if (u->comm_prog < 0) {
		err = u->comm_prog;
		u->comm_prog = -1;
		user_comm_stop(u);
		return user_err(u, err, "load the task_rename program: %s",
				log);
	}
	p = xcalloc(1, sizeof(*p));
	user_cred_prog(p, u->comm_map, u->pid);
	u->cred_prog = bpf_prog_load(BPF_PROG_TYPE_TRACEPOINT, "ubt_cred",
				     "GPL", p->in, p->n, &po);
	free(p);
	if (u->cred_prog < 0) {
		err = u->cred_prog;
		u->cred_prog = -1;
		user_comm_stop(u);
		return user_err(u, err, "load the set*id program: %s", log);
	}
	/* attached now: they fill the table before the target maps it */
	u->comm_link = bpf_raw_tracepoint_open("task_rename", u->comm_prog);
	if (u->comm_link < 0) {
		err = -errno;
		u->comm_link = -1;
		user_comm_stop(u);
		return user_err(u, err, "attach to task_rename");
	}
	for (int i = 0; i < USER_CRED_TPS; i++) {
		u->cred_ev[i] = user_cred_attach(u->cred_prog,
						 user_cred_calls[i]);
		if (u->cred_ev[i] < 0) {
			err = u->cred_ev[i];
			u->cred_ev[i] = -1;
			user_comm_stop(u);
			return user_err(u, err, "attach to sys_exit_%s",
					user_cred_calls[i]);
		}
	}
	return 0;
}

int user_comm_place(struct ubt_user *u)
{
	uint64_t len = (COMM_TAB_SIZE + 4095) & ~4095ull;
	int64_t tfd = -1, addr = 0, ret;
	int err;

	u->comm_placed = false;
	u->m.ctl->comm_live = 0;
	u->m.ctl->comm_tab = 0;
	if (u->comm_link < 0)
		return -ENOENT;	/* user_comm_prepare() said why */
	err = user_comm_send(u, u->comm_map, &tfd);
	err = err ?: user_rsys(u, SYS_mmap, 0, len, PROT_READ, MAP_SHARED,
			       (uint64_t)tfd, 0, &addr);
	if (tfd >= 0)
		user_rsys(u, SYS_close, (uint64_t)tfd, 0, 0, 0, 0, 0, &ret);
	if (err)
		return err;
	u->m.ctl->comm_tab = (uint64_t)addr;
	u->comm_at = (uint64_t)addr;	/* unmapped at the detach */
	__atomic_store_n(&u->m.ctl->comm_live, 1, __ATOMIC_RELEASE);
	u->comm_placed = true;
	return 0;
}

/* f(u), keeping u->err, its error in u->comm_why */
static void user_comm_do(struct ubt_user *u, int (*f)(struct ubt_user *))
{
	char keep[sizeof(u->err)];

	if (!u->comm_want)
		return;
	memcpy(keep, u->err, sizeof(keep));
	if (f(u) && !u->comm_why[0])
		snprintf(u->comm_why, sizeof(u->comm_why), "%.200s", u->err);
	memcpy(u->err, keep, sizeof(keep));
}

void user_comm_try_prepare(struct ubt_user *u)
{
	user_comm_do(u, user_comm_prepare);
}

void user_comm_try(struct ubt_user *u)
{
	user_comm_do(u, user_comm_place);
}

const char *user_comm_note(const struct ubt_user *u)
{
	return u && u->comm_want && !u->comm_placed ? u->comm_why : NULL;
}
