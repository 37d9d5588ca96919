#!/bin/sh
# Configures and builds drover: `make build` and the container's build stage
# both run this.   build.sh [BUILD_DIR] [BUILD_TYPE] [extra cmake args...]
set -eu
cd "$(dirname "$0")/.."
dir=${1:-build}
type=${2:-RelWithDebInfo}
[ $# -ge 2 ] && shift 2 || shift $#
fresh=true
[ -f "$dir/CMakeCache.txt" ] && fresh=false
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" "$@" >/dev/null
# CMake 3.25's FindPkgConfig gives PkgConfig::CZMQ czmq's `-isystem
# /usr/include/mit-krb5` as an include directory on a first configure and as
# a compile option on every later one: the flags changed once, so the next
# `make build` recompiled everything -- during `make test`, the README tour's
# `make run` relinked the binaries under the running tests (exec: Permission
# denied). A fresh build directory is configured twice, to what it stays.
if $fresh; then
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" "$@" >/dev/null
fi
cmake --build "$dir" -j"$(nproc)"
