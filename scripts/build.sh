#!/bin/sh
# Configures and builds drover: `make build` and the container's build stage
# both run this.   build.sh [BUILD_DIR] [BUILD_TYPE] [extra cmake args...]
set -eu
cd "$(dirname "$0")/.."
dir=${1:-build}
type=${2:-RelWithDebInfo}
[ $# -ge 2 ] && shift 2 || shift $#
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)"
