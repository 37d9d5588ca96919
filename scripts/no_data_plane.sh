#!/bin/sh
# droverd and droverctl validate specs with the schemas alone and never link
# the data plane (docs/architecture.md, "Node kinds"): no symbol of the
# write-ahead log, gRPC, the OTLP codecs or the Lua VM in either.
# Usage: no_data_plane.sh BINARY...
set -eu
failed=0
for bin in "$@"; do
    found=$(nm "$bin" | grep -c -E ' [TtDdBbRr] (drv_wal_|drv_grpc_|drv_otlp_|drv_lua_|lua_|luaL_|luaopen_)' || true)
    if [ "$found" != 0 ]; then
        echo "no_data_plane: $(basename "$bin") has $found data-plane symbols:"
        nm "$bin" | grep -E ' [TtDdBbRr] (drv_wal_|drv_grpc_|drv_otlp_|drv_lua_|lua_|luaL_|luaopen_)' | head -5
        failed=1
    else
        echo "no_data_plane: $(basename "$bin"): none"
    fi
done
exit $failed
