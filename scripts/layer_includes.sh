#!/bin/sh
# Layers enforced by the compiler: each layer of a program is built seeing
# only its own headers and those below it (supervisor/CMakeLists.txt,
# worker/CMakeLists.txt). For each layer, a header of that layer
# preprocesses with the include path of that layer, and the same #include
# fails with the path of the layer below: an upward include cannot compile.
# Usage: layer_includes.sh CC SRC_DIR PROGRAM_DIR LAYER:HEADER... (lowest first)
set -eu
cc=$1
src=$2
program=$3
shift 3
ext=$(pkg-config --cflags libczmq libzmq jansson msgpack-c lua5.4 libmicrohttpd libnghttp2 libcurl openssl 2>/dev/null ||
      pkg-config --cflags libczmq libzmq jansson msgpack lua5.4 libmicrohttpd libnghttp2 libcurl openssl)
# LAYER_INCLUDES_EXTRA: include flags for generated headers (the build's proto/)
gen="-I$src/common/include ${LAYER_INCLUDES_EXTRA:-}"
below=""
failed=0
layers=0
probe=$(mktemp /tmp/drover-layer.XXXXXX.c)
trap 'rm -f "$probe"' EXIT
for pair in "$@"; do
    layer=${pair%%:*}
    header=${pair#*:}
    layers=$((layers + 1))
    printf '#include "%s"\n' "$header" >"$probe"
    if [ -n "$below" ]; then
        # shellcheck disable=SC2086
        if out=$($cc -E $ext $gen $below "$probe" 2>&1 >/dev/null); then
            echo "layer_includes: $program/$layer's $header was reachable from the layers below it"
            failed=1
        elif ! echo "$out" | grep -q "$header"; then
            echo "layer_includes: including $header from below failed, but not for want of it: $out"
            failed=1
        fi
    fi
    below="$below -I$src/$program/$layer"
    # shellcheck disable=SC2086
    if ! out=$($cc -E $ext $gen $below "$probe" 2>&1 >/dev/null); then
        echo "layer_includes: $header does not preprocess with its own layer's path: $out"
        failed=1
    fi
done
[ "$failed" = 0 ] && echo "layer_includes: $program: $layers layers, each header refused from below and found from its own layer"
exit $failed
