#!/bin/sh
# make test-asan: the whole suite with every binary built under AddressSanitizer
# and UndefinedBehaviorSanitizer (build-asan/). Children of droverd crash or
# exit quietly from a test's point of view, so every sanitizer report goes to
# a log file, and any report fails the run even when the tests passed.
set -eu
cd "$(dirname "$0")/.."
dir=${BUILD_ASAN:-build-asan}
sh scripts/build.sh "$dir" Debug \
    -DCMAKE_C_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
logs=$(mktemp -d /tmp/drover-asan.XXXXXX)
export ASAN_OPTIONS="log_path=$logs/asan:detect_leaks=1:abort_on_error=0:strict_string_checks=1"
export UBSAN_OPTIONS="log_path=$logs/ubsan:print_stacktrace=1"
# Sanitized binaries are several times slower: the suite's deadlines are
# stretched by DROVER_TEST_SLOW (tests/integration/harness.py).
export DROVER_TEST_SLOW=4 DROVER_TEST_SANITIZED=1
status=0
(cd "$dir" && ctest --output-on-failure -E bench_smoke) || status=$?
if [ -n "$(ls -A "$logs")" ]; then
    echo "test-asan: sanitizer reports:" >&2
    for f in "$logs"/*; do echo "==== $f" >&2; cat "$f" >&2; done
    status=1
fi
rm -rf "$logs"
exit $status
