#!/usr/bin/env python3
"""ubt's end, asked for by a reader gone and by SIGINT at any instant
(issue 25, items 9 and 10).

- `ubt -p PID -e '... printf ...' | head -3`: once the reader is gone ubt
  ends as bpftrace does, killed by SIGPIPE (a shell sees 141), after a
  full detach: the target's code is the file's again, and it runs on and
  exits 0.  In user mode and in the kernel.
- SIGINT at a series of instants from ubt's start (0 ms to past the
  attach): every ubt ends within the bound, by the signal or with status
  0 (the ordinary end), and leaves the code as it found it.  The same
  with SIGINT sent to ubt's process group (the guard and the worker both
  get it): the worker is never killed by it ("the tracing process ...
  was killed by signal 2"), also when the guard relays it late.
- SIGINT ignored when ubt starts (a shell's background job) and sent
  while ubt reads its program: ubt ends by it, nothing attached.

Every result the target computes is checked (ubt-share), and it exits 0
at the end.  Prints TAP.
"""
import os
import select
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from procmem import (UBT, attached, code_in, done, not_root,  # noqa: E402
                     ok, share_target, ubt_p, ubt_processes)

work = tempfile.mkdtemp(prefix="ubt-pipe.")
# instants of the SIGINT after ubt started, in seconds; then one once it
# said it attached
DELAYS = [0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.04, 0.08, 0.15, 0.3]
BOUND = 60	# seconds any ubt may take to end


def diag(text):
    for line in str(text).splitlines():
        print("# " + line)


def settled(t, path, orig):
    """No ubt on t any more and its code is the file's (the workers end
    on their own): True, or False after BOUND seconds."""
    end = time.time() + BOUND
    while time.time() < end:
        if (not ubt_processes(lambda a: a == str(t.p.pid).encode()) and
                code_in(t.p.pid, path, "share_push") == orig):
            return True
        time.sleep(0.05)
    return False


def busy(t):
    """The target makes a batch of calls and checks every result."""
    return t.run("20000", "done 20000", timeout=BOUND) is not None


def pipe_case(mode):
    path, t, orig = share_target(work, "pipe-" + mode)
    prog = 'uprobe:%s:share_push { printf("%%d\\n", arg0); }' % path
    u = ubt_p(t.p.pid, prog, "--mode", mode)
    seen = attached(u)
    # calls until three lines after "Attaching 1 probe..." were read
    out = b""
    for _ in range(100):
        if out.count(b"\n") >= 4 or not busy(t):
            break
        while select.select([u.stdout], [], [], 0.1)[0]:
            chunk = os.read(u.stdout.fileno(), 4096)
            if not chunk:
                break
            out += chunk
    if out.count(b"\n") < 4:
        diag("only %r" % out[:200])
    u.stdout.close()	# head -3 exits
    # calls go on, so that ubt writes into the closed pipe
    fed = True
    end = time.time() + BOUND
    while u.poll() is None and time.time() < end and fed:
        fed = busy(t)
    try:
        st = u.wait(timeout=max(1, end - time.time()))
    except subprocess.TimeoutExpired:
        u.kill()
        st = "still running after %d s" % BOUND
        u.wait()
    err = u.stderr.read().decode(errors="replace")
    ok(st == -signal.SIGPIPE,
       "%s mode: the reader gone, ubt ends killed by SIGPIPE (141)" % mode,
       "status %s, %r" % (st, err[-300:]))
    ok(settled(t, path, orig) and t.p.poll() is None,
       "%s mode: the target runs on with its code restored" % mode)
    ok(busy(t), "%s mode: the target computes right after" % mode)
    t.close_input()
    ok(t.p.wait(timeout=BOUND) == 0, "%s mode: the target exits 0" % mode)


def ignore_sigint():
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def ended(u):
    """ubt's status and stderr, or a reason if it ran on past BOUND."""
    try:
        _, err = u.communicate(timeout=BOUND)
        return u.returncode, (err or b"").decode(errors="replace")
    except subprocess.TimeoutExpired:
        u.kill()
        u.communicate()
        return "still running after %d s" % BOUND, ""


def sigint_case(group):
    """SIGINT at each of DELAYS, then once attached, to ubt or to its
    process group."""
    what = "to the process group" if group else "to ubt"
    path, t, orig = share_target(work, "int-%d" % group)
    prog = "uprobe:%s:share_push { @c = count(); }" % path
    bad = []
    for delay in DELAYS + [None]:
        u = ubt_p(t.p.pid, prog, stdout=subprocess.DEVNULL,
                  start_new_session=group)
        if delay is None:
            attached(u)
            busy(t)
        else:
            time.sleep(delay)
        if group:
            os.killpg(u.pid, signal.SIGINT)
        else:
            os.kill(u.pid, signal.SIGINT)
        st, err = ended(u)
        when = "once attached" if delay is None else \
            "at %g ms" % (delay * 1000)
        if st not in (0, -signal.SIGINT) or "killed by signal" in err:
            bad.append("SIGINT %s: status %s %r" % (when, st, err[-200:]))
        elif not settled(t, path, orig) or not busy(t):
            bad.append("SIGINT %s: code left patched or target wrong" %
                       when)
    ok(not bad, "SIGINT %s at %d instants from ubt's start: honoured, "
       "nothing left behind" % (what, len(DELAYS) + 1), "; ".join(bad))
    t.close_input()
    ok(t.p.wait(timeout=BOUND) == 0,
       "SIGINT %s: the target exits 0" % what)


def sigint_ignored():
    """SIGINT ignored when ubt starts (a shell's background job), sent
    while ubt reads its program from stdin: caught all the same, ubt
    ends by it before it attaches anything."""
    path, t, orig = share_target(work, "int-ign")
    u = subprocess.Popen([UBT, "-p", str(t.p.pid), "-"],
                         stdin=subprocess.PIPE,
                         stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, preexec_fn=ignore_sigint)
    # blocked in read(0, ...): /proc/PID/syscall starts "0 0x0 "
    end = time.time() + BOUND
    while time.time() < end:
        try:
            with open("/proc/%d/syscall" % u.pid) as f:
                if f.read().startswith("0 0x0 "):
                    break
        except OSError:
            pass
        time.sleep(0.01)
    os.kill(u.pid, signal.SIGINT)
    u.stdin.write(b"uprobe:%s:share_push { @c = count(); }\n" %
                  path.encode())
    u.stdin.close()
    u.stdin = None
    st, err = ended(u)
    ok(st == -signal.SIGINT,
       "SIGINT that came before the attach, though ignored at the start: "
       "ubt ends by it", "status %s %r" % (st, err[-300:]))
    ok(settled(t, path, orig) and busy(t),
       "SIGINT before the attach: nothing left behind")
    t.close_input()
    ok(t.p.wait(timeout=BOUND) == 0, "SIGINT before the attach: the "
       "target exits 0")


def sigint_group_late():
    """A process-group SIGINT that the guard relays late (it was
    stopped), while the worker still ends (its output blocks on a pipe
    nobody reads yet): one request, the worker is not killed."""
    path, t, orig = share_target(work, "int-late")
    prog = ('uprobe:%s:share_push { @[arg0 %% 2000, "%s"] = count(); }' %
            (path, "x" * 60))
    u = ubt_p(t.p.pid, prog, start_new_session=True)
    attached(u)
    busy(t)		# 2000 keys of 80 bytes: more than a pipe holds
    os.kill(u.pid, signal.SIGSTOP)
    os.killpg(u.pid, signal.SIGINT)
    time.sleep(0.5)
    os.kill(u.pid, signal.SIGCONT)
    out = b""
    end = time.time() + BOUND
    while time.time() < end:
        chunk = os.read(u.stdout.fileno(), 65536)
        if not chunk:
            break
        out += chunk
    st, err = ended(u)
    ok(st == 0 and "killed by signal" not in err and
       out.count(b"]: 10\n") == 2000,
       "SIGINT to the process group relayed late: one request, the maps "
       "printed in full", "status %s, %d keys %r" %
       (st, out.count(b"]: 10\n"), err[-300:]))
    ok(settled(t, path, orig) and busy(t),
       "SIGINT relayed late: nothing left behind")
    t.close_input()
    ok(t.p.wait(timeout=BOUND) == 0, "SIGINT relayed late: the target "
       "exits 0")


def main():
    if not_root():
        return 77
    pipe_case("user")
    pipe_case("kernel")
    sigint_case(False)
    sigint_case(True)
    sigint_ignored()
    sigint_group_late()
    return done(work)


if __name__ == "__main__":
    sys.exit(main())
