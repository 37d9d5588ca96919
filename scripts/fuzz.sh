#!/bin/sh
# make fuzz: builds the libFuzzer targets with clang (ASan + UBSan, in
# build-fuzz/) and runs each for FUZZ_SECS seconds (default 60) from its seed
# corpus in tests/fuzz/corpus/. What the fuzzer learns stays in
# build-fuzz/corpus/. A crash fails the run; its input is left in
# build-fuzz/crashes/: fix the bug, then copy the input into
# tests/fuzz/regressions/TARGET/ so that make test replays it for ever.
set -eu
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh build fuzz
dir=${BUILD_FUZZ:-build-fuzz}
secs=${FUZZ_SECS:-60}
CC=clang sh scripts/build.sh "$dir" Debug -DDROVER_FUZZ=ON \
    -DCMAKE_C_FLAGS="-fsanitize=address,undefined,fuzzer-no-link -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
mkdir -p "$dir/crashes"
failed=""
# The targets tests/fuzz/CMakeLists.txt builds, in its order.
targets=$(sed -n 's/^set(FUZZ_TARGETS \(.*\))$/\1/p' tests/fuzz/CMakeLists.txt)
for target in $targets; do
    mkdir -p "$dir/corpus/$target"
    echo "fuzz: $target for ${secs}s"
    if ! ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1 "$dir/fuzz/fuzz_$target" -max_total_time="$secs" -timeout=10 \
        -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
        -artifact_prefix="$dir/crashes/$target-" "$dir/corpus/$target" "tests/fuzz/corpus/$target" \
        >"$dir/fuzz-$target.log" 2>&1; then
        failed="$failed $target"
        tail -60 "$dir/fuzz-$target.log"
    fi
    grep -E "^stat::number_of_executed_units|^stat::new_units_added" "$dir/fuzz-$target.log" | tr '\n' ' '
    echo
done
if [ -n "$failed" ]; then
    echo "fuzz: crashes in:$failed (inputs in $dir/crashes/)" >&2
    exit 1
fi
