# Shared by the sacred*.sh tests (sourced, not a test of its own): TAP
# (tests/cli/tap.sh), $t the targets, and the steps every -p case takes.

. "$top_srcdir/tests/cli/tap.sh"

t="$top_builddir/tests/targets"

# sacred_copy NAME: bail unless the target NAME is built; copy it into
# $tap_tmp (uprobes belong to a file: a private copy, out of other tests'
# way): $bin the copy, $out/$err ubt's output, $tout the target's
sacred_copy()
{
	[ -x "$t/$1" ] || bail "$1 is not built"
	cp "$t/$1" "$tap_tmp/" || bail "cp"
	bin="$tap_tmp/$1"
	out="$tap_tmp/out"
	err="$tap_tmp/err"
	tout="$tap_tmp/tout"
}

# code PID [FUNC]: 16 bytes of FUNC (ubt_sacred_tick) of $bin in PID's
# memory, in hex
code()
{
	python3 "$top_srcdir/tests/user/codebytes.py" "$1" "$bin" \
		"${2:-ubt_sacred_tick}" 2>/dev/null
}

# wait_for TENTHS PID PATTERN FILE...: until a line of the FILEs matches
# PATTERN, at most TENTHS tenths of a second, and while PID (when not
# empty) lives
wait_for()
{
	wf_n=$1
	wf_pid=$2
	shift 2
	i=0
	while ! grep -q "$@" && [ $i -lt $wf_n ] &&
	      { [ -z "$wf_pid" ] || kill -0 $wf_pid 2>/dev/null; }; do
		sleep 0.1
		i=$((i + 1))
	done
}

# start_wait ARGS...: the target $bin ARGS (a "*-wait" command of
# ubt-sacred) in the background, its output in $tout, $tp its pid,
# waited for until it says "ready" (30 s at most)
start_wait()
{
	"$bin" "$@" >"$tout" 2>&1 </dev/null &
	tp=$!
	wait_for 300 $tp '^ready' "$tout"
}

# ubt_bg TIMEOUT ARGS...: ubt ARGS in the background (timeout TIMEOUT),
# $up its pid, waited for until its probes are attached (TIMEOUT * 5
# tenths at most).  $out and $err are emptied first, here: the background
# job's own redirections may come after the first look for the line, which
# would then find the last run's.
ubt_bg()
{
	ub_t=$1
	shift
	: >"$out"
	: >"$err"
	__BPFTRACE_NOTIFY_PROBES_ATTACHED=1 timeout --foreground $ub_t "$UBT" "$@" \
		>"$out" 2>"$err" </dev/null &
	up=$!
	wait_for $((ub_t * 5)) $up 'ATTACHED' "$out" "$err"
}

# sacred_run_p TIMEOUT WAITPID ARGS...: $tp waits (a "*-wait" command of
# ubt-sacred, its output in $tout, "ready" printed): ubt ARGS (with -p)
# attached to it, the target let run to its "done" line, ubt stopped;
# $rc ubt's exit status, $trc WAITPID's, $before, $during, $after the
# code of $tp around the run
sacred_run_p()
{
	rp_t=$1
	rp_w=$2
	shift 2
	before=$(code "$tp")
	ubt_bg $rp_t "$@"
	during=$(code "$tp")
	kill -USR1 "$tp"
	wait_for $((rp_t * 5)) "$tp" '^done' "$tout"
	kill -INT $up 2>/dev/null
	wait $up
	rc=$?
	after=$(code "$tp")
	kill -USR1 "$tp"
	wait $rp_w
	trc=$?
}

# libcode PID FUNC...: 16 bytes of each FUNC of $libc (libc.so.6's path,
# set by the caller) in PID's memory, one "FUNC HEX" line each
libcode()
{
	python3 - "$libc" "$@" <<'EOF'
import os, subprocess, sys
path, pid = os.path.realpath(sys.argv[1]), int(sys.argv[2])
syms = {}
for l in subprocess.run(["nm", "-D", "--defined-only", path],
                        capture_output=True, text=True).stdout.splitlines():
    f = l.split()
    if len(f) == 3:
        syms.setdefault(f[2].split("@")[0], int(f[0], 16))
base = None
for l in open("/proc/%d/maps" % pid):
    f = l.split()
    if (len(f) >= 6 and os.path.realpath(f[5]) == path and
            int(f[2], 16) == 0):
        base = int(f[0].split("-")[0], 16)
        break
with open("/proc/%d/mem" % pid, "rb") as m:
    for s in sys.argv[3:]:
        m.seek(base + syms[s])
        print(s, m.read(16).hex())
EOF
}
