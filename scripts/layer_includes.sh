#!/bin/sh
# The supervisor's layers, enforced by the compiler: each layer is built
# seeing only its own headers and those below it (supervisor/CMakeLists.txt).
# For each layer, a header of that layer preprocesses with the include path
# of that layer, and the same #include fails with the path of the layer
# below: an upward include cannot compile. Usage: layer_includes.sh CC SRC_DIR
set -eu
cc=$1
src=$2
ext=$(pkg-config --cflags libczmq libzmq jansson msgpack-c 2>/dev/null || pkg-config --cflags libczmq libzmq jansson msgpack)
# layer and a header it owns, lowest first
set -- core:drv_engine.h instances:drv_lifecycle.h operations:drv_rollout.h observe:drv_status.h opamp:drv_opamp.h admin:drv_admin.h
below=""
failed=0
probe=$(mktemp /tmp/drover-layer.XXXXXX.c)
trap 'rm -f "$probe"' EXIT
for pair in "$@"; do
    layer=${pair%%:*}
    header=${pair#*:}
    printf '#include "%s"\n' "$header" >"$probe"
    if [ -n "$below" ]; then
        # shellcheck disable=SC2086
        if out=$($cc -E $ext -I"$src/common/include" $below "$probe" 2>&1 >/dev/null); then
            echo "layer_includes: $header (layer $layer) was reachable from the layers below it"
            failed=1
        elif ! echo "$out" | grep -q "$header"; then
            echo "layer_includes: including $header from below failed, but not for want of it: $out"
            failed=1
        fi
    fi
    below="$below -I$src/supervisor/$layer"
    # shellcheck disable=SC2086
    if ! out=$($cc -E $ext -I"$src/common/include" $below "$probe" 2>&1 >/dev/null); then
        echo "layer_includes: $header does not preprocess with its own layer's path: $out"
        failed=1
    fi
done
[ "$failed" = 0 ] && echo "layer_includes: 5 layers, each header refused from below and found from its own layer"
exit $failed
