#!/usr/bin/env python3
"""No source file over a size a reader can hold: lists the C and Python files
of the source tree longer than --max lines (default 500) and exits 1 if
there is any. It walks the tree (no VCS needed: a tarball without .git is
checked the same), skipping build output, dependencies and hidden folders. `make test` runs it (structure_file_lengths); when a
file grows past it, it has grown two ideas: split it."""
import argparse
import os
import sys


SKIP = ("build", "node_modules", "__pycache__")


def source_files(root):
    """The .c, .h and .py files under root, relative to it, in a stable order."""
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not d.startswith(SKIP))
        for name in sorted(names):
            if name.endswith((".c", ".h", ".py")):
                yield os.path.relpath(os.path.join(folder, name), root)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=500)
    parser.add_argument("root", nargs="?", default=".")
    args = parser.parse_args()
    files = list(source_files(args.root))
    long = []
    for name in files:
        with open(f"{args.root}/{name}", encoding="utf-8", errors="replace") as f:
            lines = sum(1 for _ in f)
        if lines > args.max:
            long.append((lines, name))
    for lines, name in sorted(long, reverse=True):
        print(f"{name}: {lines} lines (at most {args.max})")
    print(f"file_lengths: {len(files)} files, {len(long)} over {args.max} lines")
    return 1 if long else 0


if __name__ == "__main__":
    sys.exit(main())
