#!/usr/bin/env python3
"""No source file over a size a reader can hold: lists the C and Python files
of the repository (git ls-files) longer than --max lines (default 500) and
exits 1 if there is any. `make test` runs it (structure_file_lengths); when a
file grows past it, it has grown two ideas: split it."""
import argparse
import subprocess
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=500)
    parser.add_argument("root", nargs="?", default=".")
    args = parser.parse_args()
    files = subprocess.run(["git", "-C", args.root, "ls-files", "*.c", "*.h", "*.py"], capture_output=True,
                           text=True, check=True).stdout.split()
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
