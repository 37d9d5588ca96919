#!/usr/bin/env python3
"""Circles among a program's source files, counted by who calls whom.

A file depends on another when it calls (or reads) something defined there:
its object file has an undefined symbol that the other's object file defines.
The circles are the strongly connected components of that graph (Tarjan).

    scripts/cycles.py [--max N] OBJDIR [OBJDIR ...]

prints every circle and exits 1 when one holds more than N files (default 2),
so `make test` keeps the supervisor's layers from calling upward.
"""
import argparse
import os
import subprocess
import sys


def objects(dirs):
    found = []
    for top in dirs:
        for root, _, names in os.walk(top):
            found += [os.path.join(root, n) for n in names if n.endswith(".o")]
    return sorted(found)


def symbols(path):
    out = subprocess.run(["nm", "--defined-only", "-g", path], capture_output=True,
                         text=True, check=True).stdout
    defined = {l.split()[-1] for l in out.splitlines() if len(l.split()) == 3}
    out = subprocess.run(["nm", "-u", path], capture_output=True, text=True,
                         check=True).stdout
    used = {l.split()[-1] for l in out.splitlines() if l.strip()}
    return defined, used


def source_name(path):
    name = os.path.basename(path)
    name = name[:-2] if name.endswith(".o") else name
    marker = "CMakeFiles/"
    if marker in path:  # build/x/CMakeFiles/t.dir/sub/f.c.o -> sub/f.c
        rest = path.split(marker, 1)[1]
        rest = rest.split("/", 1)[1] if "/" in rest else rest
        return rest[:-2] if rest.endswith(".o") else rest
    return name


def graph(paths):
    owner = {}
    uses = {}
    for path in paths:
        name = source_name(path)
        defined, used = symbols(path)
        for sym in defined:
            owner[sym] = name
        uses[name] = used
    edges = {name: set() for name in uses}
    for name, used in uses.items():
        for sym in used:
            other = owner.get(sym)
            if other and other != name:
                edges[name].add(other)
    return edges


def circles(edges):
    """Tarjan's strongly connected components, iteratively."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=2,
                        help="largest circle allowed (files)")
    parser.add_argument("dirs", nargs="+", help="directories holding the .o files")
    args = parser.parse_args()
    paths = objects(args.dirs)
    if not paths:
        print("cycles: no object files under " + " ".join(args.dirs), file=sys.stderr)
        return 2
    edges = graph(paths)
    worst = 0
    for component in circles(edges):
        worst = max(worst, len(component))
        print("circle of %d: %s" % (len(component), " ".join(component)))
        for name in component:
            inside = sorted(edges[name] & set(component))
            print("    %s -> %s" % (name, ", ".join(inside)))
    print("cycles: %d files, largest circle %d (allowed %d)" % (len(edges), worst, args.max))
    return 1 if worst > args.max else 0


if __name__ == "__main__":
    sys.exit(main())
