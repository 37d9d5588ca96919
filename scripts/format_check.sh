#!/bin/sh
# Every C file of the tree is as .clang-format says (Debian's clang-format):
# `make format` fixes what this finds. Works from a tarball too (no git).
# Usage: format_check.sh SRC_DIR [--fix]
set -eu
src=$1
cd "$src"
files=$(find . -path ./build -prune -o -path './build-*' -prune -o -path ./tests/otel-js/node_modules -prune \
        -o \( -name '*.c' -o -name '*.h' \) -type f -print | sort)
if [ "${2:-}" = --fix ]; then
    # shellcheck disable=SC2086
    clang-format -i $files
    exit 0
fi
# shellcheck disable=SC2086
if ! clang-format --dry-run -Werror $files 2>/tmp/drover-format.$$; then
    grep -o '^[^:]*\.[ch]' /tmp/drover-format.$$ | sort -u | sed 's/^/format_check: not formatted: /'
    rm -f /tmp/drover-format.$$
    echo "format_check: run make format"
    exit 1
fi
rm -f /tmp/drover-format.$$
echo "format_check: $(echo "$files" | wc -l) files as .clang-format says"
