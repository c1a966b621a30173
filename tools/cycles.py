#!/usr/bin/env python3
"""Circles of calls between a folder's object files.

usage: cycles.py OBJ... [--allow 'a b c' ...] [--folders]

Reads each object's defined and undefined symbols with nm, draws an
edge from a file to every file defining a symbol it uses, and prints
each strongly connected component of more than one file, with its
edges.  A component listed with --allow (its files, space separated,
in any order) is expected and not printed.  With --folders, the
nodes are the folders holding the objects (shim/run, shim/user, ...):
circles of calls between folders.  Exit status: 1 when an
unexpected circle was printed, else 0.

An --allow list may name a hub, 'hub: a b c' (the hub one of the
component's files): then every circle of the component must pass
through the hub, and a circle among the other files (the component
without the hub) is printed as unexpected.
"""
import subprocess
import sys


def symbols(obj):
    out = subprocess.run(['nm', obj], capture_output=True, text=True,
                         check=True).stdout
    defs, undefs = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in 'TDBR':
            defs.add(f[2])
        elif len(f) == 2 and f[0] == 'U':
            undefs.add(f[1])
    return defs, undefs


def name(obj):
    # automake prefixes per-target objects: libubt_a-cg.o -> cg
    base = obj.rsplit('/', 1)[-1]
    return base.split('-', 1)[-1][:-2] if '-' in base else base[:-2]


def components(graph):
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        # Tarjan's algorithm, iterative enough for a folder's size
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main(argv):
    objs, allowed, folders = [], [], False
    i = 0
    while i < len(argv):
        if argv[i] == '--folders':
            folders = True
            i += 1
        elif argv[i] == '--allow':
            allowed.append(sorted(argv[i + 1].split()))
            i += 2
        else:
            objs.append(argv[i])
            i += 1
    # 'hub: a b c': the component a b c hub, its circles through hub
    hubs = {}
    for k, a in enumerate(allowed):
        allowed[k] = sorted(f.rstrip(':') for f in a)
        for f in a:
            if f.endswith(':'):
                hubs[tuple(allowed[k])] = f[:-1]
    defs, undefs = {}, {}
    for o in objs:
        n = o.rsplit('/', 2)[-2] if folders else name(o)
        d, u = symbols(o)
        defs.setdefault(n, set()).update(d)
        undefs.setdefault(n, set()).update(u)
    owner = {s: n for n, d in defs.items() for s in d}
    graph = {n: {owner[s] for s in undefs[n] if s in owner and owner[s] != n}
             for n in defs}
    bad = 0
    for comp in components(graph):
        if len(comp) < 2:
            continue
        if comp in allowed:
            hub = hubs.get(tuple(comp))
            rest = set(comp) - {hub}
            sub = {n: graph[n] & rest for n in rest}
            for c in components(sub) if hub else []:
                if len(c) < 2:
                    continue
                bad = 1
                print('circle not through %s:' % hub, ' '.join(c))
                for n in c:
                    print('  %s -> %s' % (n, ' '.join(sorted(sub[n] & set(c)))))
            continue
        bad = 1
        print('circle:', ' '.join(comp))
        for n in comp:
            print('  %s -> %s' % (n, ' '.join(sorted(graph[n] & set(comp)))))
    return bad


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
