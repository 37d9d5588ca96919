#!/usr/bin/env python3
"""Circles among a program's source files, counted by who calls whom.

A file depends on another when it calls (or reads) something defined there:
its object file has an undefined symbol that the other's object file defines.
The circles are the strongly connected components of that graph (Tarjan).

    scripts/cycles.py [--max N] [--layers a,b,c] OBJDIR [OBJDIR ...]

prints every circle and exits 1 when one holds more than N files (default 2).
With --layers (folders, lowest first; a file in none of them is above them
all), a call from a lower layer into a higher one fails it too. `make test`
runs it over droverd's and the broker's objects.
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


def self_test():
    """Compiles a three-file circle and an upward call; both must be found."""
    import tempfile
    sources = {
        "low/a.c": "int b(void); int a(void) { return b(); }",
        "mid/b.c": "int c(void); int b(void) { return c(); }",
        "mid/c.c": "int a(void); int c(void) { return a(); }",
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in sources.items():
            os.makedirs(os.path.join(tmp, "src", os.path.dirname(name)), exist_ok=True)
            obj = os.path.join(tmp, "CMakeFiles", "t.dir", name + ".o")
            os.makedirs(os.path.dirname(obj), exist_ok=True)
            path = os.path.join(tmp, "src", name)
            with open(path, "w") as f:
                f.write(text + "\n")
            subprocess.run(["cc", "-c", path, "-o", obj], check=True)
        edges = graph(objects([tmp]))
        found = circles(edges)
        assert found == [["low/a.c", "mid/b.c", "mid/c.c"]], found
        assert layer_violations(edges, ["low", "mid"]) == [("low/a.c", "mid/b.c")]
        assert layer_violations(edges, []) == []
    print("cycles: self-test ok")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=2,
                        help="largest circle allowed (files)")
    parser.add_argument("--layers", default="",
                        help="comma-separated folders, lowest layer first")
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
    upward = layer_violations(edges, [l for l in args.layers.split(",") if l])
    for caller, callee in upward:
        print("upward call: %s -> %s" % (caller, callee))
    if args.layers:
        print("layers: %s; %d upward calls" % (" < ".join(args.layers.split(",") + ["top"]), len(upward)))
    return 1 if worst > args.max or upward else 0


def layer_violations(edges, layers):
    """Calls from a file of a lower layer into a file of a higher one."""
    if not layers:
        return []

    def rank(name):
        top = name.split("/", 1)[0] if "/" in name else None
        return layers.index(top) if top in layers else len(layers)

    return sorted((a, b) for a, targets in edges.items() for b in targets if rank(a) < rank(b))


if __name__ == "__main__":
    sys.exit(main())
