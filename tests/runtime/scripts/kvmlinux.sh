# kprobe:do_nanosleep+OFFSET checked against a vmlinux file with symbols
# (kprobe.test): kvmlinux.sh OFFSET TRACER... builds a small ELF whose
# do_nanosleep is push %rbp; mov %rsp,%rbp; nop; pop %rbp; ret (7 bytes,
# instructions at 0 1 4 5 6) and runs the tracer with BPFTRACE_VMLINUX
# naming it; its exit status is the tracer's.
off=$1
shift
d=$(mktemp -d) || exit 99
trap 'rm -rf "$d"' EXIT
cat >"$d/v.S" <<'EOS'
	.text
	.globl do_nanosleep
	.type do_nanosleep, @function
do_nanosleep:
	push %rbp
	mov %rsp, %rbp
	nop
	pop %rbp
	ret
	.size do_nanosleep, .-do_nanosleep
EOS
${CC:-cc} -nostdlib -no-pie -static -Wl,-e,do_nanosleep -o "$d/vmlinux" \
	"$d/v.S" || exit 99
BPFTRACE_VMLINUX=$d/vmlinux "$@" -e "kprobe:do_nanosleep+$off { exit(); }"
