#!/bin/sh
# Installs the Debian packages drover builds, tests and runs with, when any is
# missing (supervisor and s6 are the benchmarks' baselines, wrk their HTTP load). Idempotent and quiet when everything is already there, so `make` can
# call it on every run.
set -eu

PACKAGES="build-essential cmake pkg-config libzmq3-dev libczmq-dev libmsgpack-dev
libjansson-dev libyaml-dev libmicrohttpd-dev libsystemd-dev libcmocka-dev python3 python3-zmq
python3-msgpack util-linux procps curl supervisor s6 wrk"

missing=""
for pkg in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $pkg"
    fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
    echo "install-deps: missing Debian packages:$missing (run as root, or install them)" >&2
    exit 1
fi
echo "install-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing >/dev/null
