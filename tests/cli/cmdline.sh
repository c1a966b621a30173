#!/bin/sh
# ubt's command line: exact stdout, stderr and exit status for bad and good
# command lines. Exit status: 0 success, 1 error in the program or at
# attach, 2 bad command line (one line "ubt: what: why" and the hint).

. "${top_srcdir:?}/tests/cli/tap.sh"

# GNU getopt: options may follow the script (bpftrace's behaviour too).
unset POSIXLY_CORRECT

HINT="Try 'ubt --help' for more information."
PROG='BEGIN { printf("hello\n"); exit(); }'

# expect NAME STATUS STDOUT STDERR -- ARGS...: run "$UBT ARGS" with stdin
# from $stdin (default /dev/null) and compare all three exactly. STDOUT and
# STDERR are whole lines without the final newline; '' means empty.
# STDOUT '*' means "anything".
stdin=/dev/null
expect()
{
	name=$1 status=$2 out=$3 err=$4
	shift 5
	"$UBT" "$@" <"$stdin" >"$tap_tmp/out" 2>"$tap_tmp/err"
	rc=$?
	if [ -n "$err" ]; then
		printf '%s\n' "$err" >"$tap_tmp/err.exp"
	else
		: >"$tap_tmp/err.exp"
	fi
	if [ -n "$out" ]; then
		printf '%s\n' "$out" >"$tap_tmp/out.exp"
	else
		: >"$tap_tmp/out.exp"
	fi
	why=
	[ "$rc" = "$status" ] || why="exit status $rc, expected $status"
	if ! cmp -s "$tap_tmp/err" "$tap_tmp/err.exp"; then
		why="$why${why:+; }stderr differs:
$(diff "$tap_tmp/err.exp" "$tap_tmp/err")"
	fi
	if [ "$out" != '*' ] && ! cmp -s "$tap_tmp/out" "$tap_tmp/out.exp"; then
		why="$why${why:+; }stdout differs:
$(diff "$tap_tmp/out.exp" "$tap_tmp/out")"
	fi
	if [ -z "$why" ]; then
		ok "$name"
	else
		not_ok "$name" "ubt $*" "$why"
	fi
}

# usage NAME MESSAGE -- ARGS...: a bad command line.
usage()
{
	name=$1 msg=$2
	shift 3
	expect "$name" 2 '' "ubt: $msg
$HINT" -- "$@"
}

# bad_option NAME MESSAGE -- ARGS...: an option ubt does not know, or
# one without its argument: the message, then the usage (bpftrace's way).
ubt_help=$("$UBT" -h)
bad_option()
{
	name=$1 msg=$2
	shift 3
	expect "$name" 2 '' "ubt: $msg
$ubt_help" -- "$@"
}

# bad_pid NAME MESSAGE -- ARGS...: -p that is no pid, bpftrace's words.
bad_pid()
{
	name=$1 msg=$2
	shift 3
	expect "$name" 2 '' "ERROR: $msg" -- "$@"
}

# A pid that no process has: a child that has exited and been reaped.
sh -c 'exit 0' &
dead_pid=$!
wait "$dead_pid"
kill -0 "$dead_pid" 2>/dev/null && bail "pid $dead_pid still exists"

script="$tap_tmp/prog.bt"
printf '%s\n' "$PROG" >"$script"
bad="$tap_tmp/bad.bt"
printf 'BEGIN { @x = 1 +; }\n' >"$bad"

# --- bad command lines: exit 2 ---------------------------------------
usage "no program" "no program given: use -e 'program' or a script file" --
usage "options but no program" "no program given: use -e 'program' or a script file" -- -q -v
bad_option "unknown short option" "unknown option: -x" -- -x
bad_option "unknown option in a cluster" "unknown option: -x" -- -qx -e "$PROG"
bad_option "unknown long option" "unknown option: --nosuch" -- --nosuch -e "$PROG"
bad_option "unknown long option with a value" "unknown option: --nosuch" -- --nosuch=1 -e "$PROG"
bad_option "flag given a value" "option takes no argument: --unsafe" -- --unsafe=1 -e "$PROG"
bad_option "--help given a value" "option takes no argument: --help" -- --help=x
bad_option "-p without argument" "option requires an argument: -p" -- -p
bad_option "-p without argument in a cluster" "option requires an argument: -p" -- -qp
bad_option "-e without argument" "option requires an argument: -e" -- -e
bad_option "-o without argument" "option requires an argument: -o" -- -e "$PROG" -o
bad_option "--mode without argument" "option requires an argument: --mode" -- -e "$PROG" --mode
bad_pid "-p not a number" "pid 'abc' is not a valid decimal number" -- -p abc -e "$PROG"
bad_pid "--pid not a number" "pid 'abc' is not a valid decimal number" -- --pid abc -e "$PROG"
bad_pid "-p trailing junk" "pid '12x' is not a valid decimal number" -- -p 12x -e "$PROG"
bad_pid "-p zero" "pid '0' out of valid pid range [1,4194304]" -- -p 0 -e "$PROG"
bad_pid "-p negative" "pid '-5' is not a valid decimal number" -- -p -5 -e "$PROG"
bad_pid "-p too large" "pid '99999999999' out of valid pid range [1,4194304]" -- -p 99999999999 -e "$PROG"
bad_pid "-p above any pid_max" "pid '5000000' out of valid pid range [1,4194304]" -- -p 5000000 -e "$PROG"
usage "-c and -p" "cannot use both -c and -p" -- -c true -p 1 -e "$PROG"
usage "--all-processes and -p" "cannot use --all-processes with -p" -- --all-processes -p 1 -e "$PROG"
usage "--all-processes and -c" "cannot use --all-processes with -c" -- --all-processes -c true -e "$PROG"
usage "-c empty" "invalid command for -c: empty" -- -c '' -e "$PROG"
usage "-o empty" "invalid output file for -o: empty" -- -o '' -e "$PROG"
expect "-e twice: the last one runs, as bpftrace" 0 "Attaching 1 probe...
second

" '' -- -e "$PROG" -e 'BEGIN { printf("second\n"); exit(); }'
expect "long forms: --output, --quiet, --cmd" 0 "" "" -- --dry-run --quiet --output /dev/null --cmd true -e "$PROG"
expect "-f unknown format: bpftrace's words" 2 '' "ERROR: Invalid output format \"xml\"
Valid formats: 'text', 'json'" -- -f xml -e "$PROG"
expect "-B unknown mode: bpftrace's words" 2 '' "ERROR: USAGE: -B must be either 'line', 'full', or 'none'." -- -B some -e "$PROG"
usage "--mode unknown" "invalid mode 'fast': expected 'auto', 'kernel' or 'user'" -- --mode fast -e "$PROG"
usage "--mode= unknown" "invalid mode 'fast': expected 'auto', 'kernel' or 'user'" -- --mode=fast -e "$PROG"
usage "-d unknown stage" "unknown debug stage 'codegen': expected 'ast', 'sema', 'ir', 'bpf', 'native' or 'all'" -- -d codegen -e "$PROG"
usage "-d unknown stage in a list" "unknown debug stage 'bogus': expected 'ast', 'sema', 'ir', 'bpf', 'native' or 'all'" -- -d ast,bogus -e "$PROG"
usage "-d empty stage" "unknown debug stage '': expected 'ast', 'sema', 'ir', 'bpf', 'native' or 'all'" -- -d '' -e "$PROG"
usage "-l with two patterns" "too many arguments for -l: 'b'" -- -l a b
usage "--parse-only with -l" "cannot use both -l and --parse-only" -- --parse-only -l
usage "--compat with an unknown version" "invalid compat 'x': expected '0.17', 'newest' or 'list'" -- --compat x -e "$PROG"
usage "--parse-only with --dry-run" "cannot use both --dry-run and --parse-only" -- --parse-only --dry-run -e "$PROG"
usage "--parse-only with -d sema" "cannot use -d sema with --parse-only: it stops after parsing" -- --parse-only -d sema -e "$PROG"
usage "--parse-only with -d all" "cannot use -d sema with --parse-only: it stops after parsing" -- --parse-only -d all -e "$PROG"

# --- help and version: exit 0, on stdout -----------------------------
expect "-V" 0 "ubt v0.1.0
compatible with bpftrace v0.17.0" '' -- -V
expect "--version" 0 "ubt v0.1.0
compatible with bpftrace v0.17.0" '' -- --version
expect "-h" 0 '*' '' -- -h
if head -n 1 "$tap_tmp/out" | grep -qx 'USAGE:'; then
	ok "-h starts with USAGE:"
else
	not_ok "-h starts with USAGE:" "$(head -n 3 "$tap_tmp/out")"
fi
cp "$tap_tmp/out" "$tap_tmp/help"
expect "--help" 0 '*' '' -- --help
if cmp -s "$tap_tmp/out" "$tap_tmp/help"; then
	ok "--help prints what -h prints"
else
	not_ok "--help prints what -h prints"
fi
expect "-h before a bad option" 0 '*' '' -- -h -x

# --info: bpftrace 0.17's sections, each feature "name: yes" or "no"
expect "--info" 0 '*' '' -- --info
sections=$(grep -v '^ ' "$tap_tmp/out" | grep -v '^$' | tr '\n' ,)
if [ "$sections" = "System,Build,Kernel helpers,Kernel features,Map types,Probe types," ] &&
	grep -qx '  send_signal: yes' "$tap_tmp/out" &&
	grep -qx '  perf_event_array: yes' "$tap_tmp/out" &&
	grep -qx '  uprobe refcount (depends on Build:bcc bpf_attach_uprobe refcount): yes' "$tap_tmp/out" &&
	! grep -A100 '^Kernel helpers' "$tap_tmp/out" | grep '^  ' |
		grep -v 'Instruction limit' | grep -vqE ': (yes|no)$'; then
	ok "--info: bpftrace's layout, what this kernel has"
else
	not_ok "--info: bpftrace's layout, what this kernel has" "$(cat "$tap_tmp/out")"
fi
# and ubt's own features, each asked of the kernel (probes/kfeat.c)
missing=
for f in 'vmlinux BTF' 'module BTF' 'ring buffer' 'mmapable arrays' \
	'task storage' 'bpf_loop' 'bpf cookies' 'perf-event links' \
	'uprobe_multi links' 'kprobe_multi links' 'fentry trampolines' \
	'raw tracepoints with BTF' 'hardware breakpoints delivered'; do
	sed -n '/^Kernel features$/,/^$/p' "$tap_tmp/out" |
		grep -qxE "  $f: (yes|no)" || missing="$missing, $f"
done
if [ -z "$missing" ]; then
	ok "--info: Kernel features lists ubt's own"
else
	not_ok "--info: Kernel features lists ubt's own" "missing${missing#,}"
fi

# --- well-formed programs with --parse-only: exit 0, no output -------
expect "--parse-only -e" 0 '' '' -- --parse-only -e "$PROG"
expect "--parse-only script" 0 '' '' -- --parse-only "$script"
expect "--parse-only script with parameters" 0 '' '' -- --parse-only "$script" 42 foo
expect "--parse-only -e with parameters" 0 '' '' -- --parse-only -e "$PROG" 42 foo
expect "parameters after --" 0 '' '' -- --parse-only -e "$PROG" -- -5 --x
expect "options after the script" 0 '' '' -- "$script" --parse-only 1 2
stdin=$script
expect "--parse-only - reads stdin" 0 '' '' -- --parse-only -
stdin=/dev/null
expect "every option value accepted" 0 '' '' -- --parse-only -B none -B line \
	-B full -f json -f text --mode user --mode=kernel --mode auto -q -v -k \
	-kk --unsafe --usdt-file-activation -o "$tap_tmp/unused" -e "$PROG"
expect "--parse-only -p PID of a live process" 0 '' '' -- --parse-only -p $$ -e "$PROG"
expect "--parse-only -p PID need not exist" 0 '' '' -- --parse-only -p "$dead_pid" -e "$PROG"
expect "--parse-only -c CMD is not run" 0 '' '' -- --parse-only -c "touch $tap_tmp/ran" -e "$PROG"
if [ -e "$tap_tmp/ran" ]; then
	not_ok "--parse-only does not run -c CMD"
else
	ok "--parse-only does not run -c CMD"
fi

# --- the bundled scripts parse; the demo of ./setup prints its tree ----
for f in "$top_srcdir"/examples/*.bt; do
	expect "examples/${f##*/} parses" 0 '' '' -- --parse-only "$f" 1
done
# The demo of ./setup: a real trace of the bundled target.
(cd "$top_builddir" && "$UBT" -c "./examples/demo-target 2000" "$top_srcdir/examples/demo.bt") \
	</dev/null >"$tap_tmp/out" 2>"$tap_tmp/err"
rc=$?
why=
[ "$rc" = 0 ] || why="exit status $rc"
for line in 'Attaching 3 probes...' 'Tracing submit_io() of demo-target...' \
	'demo-target: 2000 IOs, 31334400 bytes' 'done' '@ios: 2000' \
	'[4K, 8K)            1200 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|' \
	'@queue[0]: 500' '@queue[3]: 500'; do
	grep -qxF -- "$line" "$tap_tmp/out" || why="$why${why:+; }no line '$line'"
done
if [ -z "$why" ]; then
	ok "the demo traces examples/demo-target"
else
	not_ok "the demo traces examples/demo-target" "$why" "$(cat "$tap_tmp/out" "$tap_tmp/err")"
fi

# --- -d ast: the same tree from -e, a script and stdin ---------------
expect "-d ast -e" 0 '*' '' -- --parse-only -d ast -e "$PROG"
cp "$tap_tmp/out" "$tap_tmp/ast-e"
if [ -s "$tap_tmp/ast-e" ]; then
	ok "-d ast prints a tree"
else
	not_ok "-d ast prints a tree" "stdout is empty"
fi
expect "-d ast script" 0 '*' '' -- --parse-only -d ast "$script"
if cmp -s "$tap_tmp/out" "$tap_tmp/ast-e"; then
	ok "-d ast: script and -e give the same tree"
else
	not_ok "-d ast: script and -e give the same tree" \
		"$(diff "$tap_tmp/ast-e" "$tap_tmp/out")"
fi
stdin=$script
expect "-d ast stdin" 0 '*' '' -- --parse-only -d ast,ast -d ast -
stdin=/dev/null
if cmp -s "$tap_tmp/out" "$tap_tmp/ast-e"; then
	ok "-d ast: stdin and -e give the same tree, printed once"
else
	not_ok "-d ast: stdin and -e give the same tree, printed once" \
		"$(diff "$tap_tmp/ast-e" "$tap_tmp/out")"
fi

# --- errors: exit 1, no usage hint -----------------------------------
expect "missing script" 1 '' "ERROR: failed to open file '$tap_tmp/nope.bt': No such file or directory" -- "$tap_tmp/nope.bt"
expect "script is a directory" 1 '' "ubt: cannot read $tap_tmp: Is a directory" -- --parse-only "$tap_tmp"
expect "-p of no process" 1 '' "ubt: cannot attach to pid $dead_pid: No such process" -- -p "$dead_pid" -e "$PROG"
expect "-o in a missing directory" 1 '' "ubt: cannot open output file $tap_tmp/no/out: No such file or directory" -- -o "$tap_tmp/no/out" -e "$PROG"

# A syntax error: diagnostics name "stdin" for -e and -, the path for a
# script, and go to stderr only.
syntax_error()
{
	name=$1 file=$2
	shift 2
	"$UBT" "$@" <"$stdin" >"$tap_tmp/out" 2>"$tap_tmp/err"
	rc=$?
	first=$(head -n 1 "$tap_tmp/err")
	case $rc:$first in
	1:"$file":1:*": ERROR: "*)
		if [ -s "$tap_tmp/out" ]; then
			not_ok "$name" "stdout not empty"
		else
			ok "$name"
		fi ;;
	*)
		not_ok "$name" "exit status $rc" "$(cat "$tap_tmp/err")" ;;
	esac
}
syntax_error "syntax error in -e" stdin --parse-only -e 'BEGIN { @x = 1 +; }'
syntax_error "syntax error in a script" "$bad" --parse-only "$bad"
stdin=$bad
syntax_error "syntax error on stdin" stdin --parse-only -
stdin=/dev/null
syntax_error "syntax error with -d ast prints no tree" stdin --parse-only -d ast -e 'BEGIN { @x = 1 +; }'
syntax_error "syntax error without --parse-only" stdin -e 'BEGIN { @x = 1 +; }'

# --- the stages wired into the driver ---------------------------------
expect "runs a program" 0 'Attaching 1 probe...
hello

' '' -- -e "$PROG"
# bpftrace's test harness waits for this line on stderr: stdout (JSON
# lines under -f json) stays the program's
export __BPFTRACE_NOTIFY_PROBES_ATTACHED=1
expect "attach notification on stderr" 0 'Attaching 1 probe...
hello

' '__BPFTRACE_NOTIFY_PROBES_ATTACHED' -- -e "$PROG"
expect "attach notification on stderr, user mode" 0 'Attaching 1 probe...
demo-target: 3 IOs, 8704 bytes


@: 3' '__BPFTRACE_NOTIFY_PROBES_ATTACHED' -- --mode user \
	-c "$top_builddir/examples/demo-target 3" \
	-e "uprobe:$top_builddir/examples/demo-target:submit_io { @ = count(); }"
unset __BPFTRACE_NOTIFY_PROBES_ATTACHED
expect "-q: no attaching message" 0 'hello

' '' -- -q -e "$PROG"
expect "-f json: bpftrace's JSON lines" 0 '{"type": "attached_probes", "data": {"probes": 1}}
{"type": "printf", "data": "hi\n"}


{"type": "map", "data": {"@c": 1}}' '' -- -f json -e 'BEGIN { printf("hi\n"); @c = count(); exit(); }'
expect "--dry-run: everything but loading" 0 '' '' -- --dry-run -e "$PROG"
expect "-p of a live process passes the check" 0 '' '' -- --dry-run -p $$ -e "$PROG"
expect "semantic error: located diagnostic, exit 1" 1 '' 'stdin:1:9-19: ERROR: Unknown function: nosuchfunc
BEGIN { nosuchfunc(); }
        ~~~~~~~~~~' -- -e 'BEGIN { nosuchfunc(); }'
expect "-l with an invalid character: bpftrace's error" 1 '' "stdin:1:1-2: ERROR: invalid character '\\'
\\n
~" -- -l '\n'
expect "-l lists a tracepoint" 0 'tracepoint:syscalls:sys_enter_openat' '' -- -l 'tracepoint:syscalls:sys_enter_openat'

# --- user mode: decisions and refusals ------------------------------
expect "--mode user, a probe that does not resolve: clear error" 1 '' "ubt: cannot run uprobe:/bin/sh:main in user mode: Could not resolve symbol: /bin/sh:main" -- --mode user -e 'uprobe:/bin/sh:main { @ = count(); }'
expect "--dry-run -v: where each probe runs and why" 0 '' 'BEGIN: kernel (BEGIN probes run in the kernel)
uprobe:./examples/demo-target:submit_io: user mode (every site can be patched)
END: kernel (END probes run in the kernel)' -- -v --dry-run -c "$top_builddir/examples/demo-target 10" "$top_srcdir/examples/demo.bt"

tap_done
