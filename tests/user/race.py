#!/usr/bin/env python3
"""Two ubt -p started at the same instant on one process (issue 25, item 8
of the issue).

Both plan user mode before either touches the process; only one may
have it: the other runs its probes in the kernel and says why in -v
(another ubt runs probes there).  Both must count every call exactly
(never `@c: 0`), both must exit 0, and the target must compute right
and exit 0.  Several rounds.  Prints TAP.
"""
import os
import signal
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from procmem import (attached, code_in, done, not_root, ok,  # noqa: E402
                     share_target, target_exits, ubt_p)

ROUNDS = 5
CALLS = 500
BOUND = 120


def main():
    if not_root():
        return 77
    work = tempfile.mkdtemp(prefix="ubt-race.")
    path, t, orig = share_target(work, "race")
    prog = "uprobe:%s:share_push { @c = count(); }" % path
    for r in range(ROUNDS):
        us = [ubt_p(t.p.pid, prog, "-v") for _ in range(2)]
        seen = [attached(u) for u in us]
        ok(t.run(str(CALLS), "done %d" % CALLS, timeout=BOUND),
           "round %d: the target computes under both" % r)
        res = []
        for u, s in zip(us, seen):
            u.send_signal(signal.SIGINT)
            out, err = u.communicate(timeout=BOUND)
            res.append((u.returncode, out.decode(errors="replace"),
                        (s + err).decode(errors="replace")))
        counts = ["@c: %d\n" % CALLS in out for _, out, _ in res]
        ok(all(rc == 0 for rc, _, _ in res) and all(counts),
           "round %d: both exit 0 and count %d" % (r, CALLS),
           repr([(rc, out[-40:], err[-200:]) for rc, out, err in res]))
        users = ["share_push: user mode" in err for _, _, err in res]
        # "another ubt (pid N) runs probes in pid M", or without its
        # pid when the holder's socket does not answer yet
        kern = ["another ubt" in err and "runs probes in pid" in err
                for _, _, err in res]
        ok(sorted(users) == [False, True] and
           [k for k, us_ in zip(kern, users) if not us_] == [True],
           "round %d: exactly one in user mode, the other says why" % r,
           repr([err[-300:] for _, _, err in res]))
        ok(code_in(t.p.pid, path, "share_push") == orig,
           "round %d: then the code is the file's" % r)
    target_exits(t, BOUND)
    return done(work)


if __name__ == "__main__":
    sys.exit(main())
