#!/usr/bin/env python3
"""codebytes.py PID PATH FUNC [N]: the first N (16) bytes of function FUNC
of ELF file PATH as mapped in process PID, in hex on one line (a PIE or
an ET_EXEC); nothing and exit 1 when PATH is not mapped there."""
import subprocess
import sys


def main():
    pid, path, fn = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 16
    off = None
    for line in subprocess.run(["nm", path], capture_output=True,
                               text=True).stdout.splitlines():
        f = line.split()
        if len(f) == 3 and f[2] == fn:
            off = int(f[0], 16)
    if off is None:
        return 1
    with open("/proc/%d/maps" % pid) as maps:
        for line in maps:
            f = line.split()
            if len(f) >= 6 and f[5] == path and int(f[2], 16) == 0:
                base = int(f[0].split("-")[0], 16)
                with open("/proc/%d/mem" % pid, "rb") as m:
                    # ET_EXEC: st_value is the address itself
                    m.seek(off if off >= base else base + off)
                    print(m.read(n).hex())
                return 0
    return 1


sys.exit(main())
