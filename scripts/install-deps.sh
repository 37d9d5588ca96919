#!/bin/sh
# Installs the Debian packages drover needs, when any is missing. Idempotent
# and quiet when everything is already there, so `make` calls it every run.
#
#   install-deps.sh [SET...]   sets: runtime build test fuzz (default: runtime build test)
#
#   runtime  the shared libraries the binaries load (the container's runtime
#            stage installs only these; test_deploy checks the list against ldd)
#   build    compilers, CMake and the -dev packages
#   test     what the tests and benchmarks drive: Python with zmq and msgpack,
#            supervisor and s6 (baselines), wrk (HTTP load), curl, valgrind,
#            systemd-analyze and readelf (deployment checks), protoc (decodes
#            what exporter:otlp sends against our OTLP definitions), nodejs
#            and npm (the OpenTelemetry JS SDK, from tests/otel-js's lock file),
#            chromium, chromium-driver and python3-selenium (the web console,
#            driven by a real headless browser), tmux (droverctl's bash
#            completion, typed into a real interactive shell), prometheus
#            (only its promtool checks /metrics; its service is not started),
#            jq (the README tour pipes a status through it),
#            python3-kubernetes (the Kubernetes API's models: the manifests
#            under deploy/kubernetes are checked against them), clang-format
#            (every C file is as .clang-format says), kcat (a Kafka client nobody
#            here wrote, against librdkafka's mock cluster)
#   fuzz     clang and its sanitizer/libFuzzer runtime (make fuzz, make test-asan)
#   image    debootstrap (make image-check: the Dockerfile without Docker)
set -eu

RUNTIME="libzmq5 libczmq4 libmsgpackc2 libjansson4 libyaml-0-2 libmicrohttpd12 libsystemd0 zlib1g libprotobuf-c1 libcurl4 libnghttp2-14 libssl3 libpcre2-8-0 librdkafka1 libsnappy1v5 libzstd1"
BUILD="build-essential cmake pkg-config libzmq3-dev libczmq-dev libmsgpack-dev libjansson-dev
libyaml-dev libmicrohttpd-dev libsystemd-dev libcmocka-dev zlib1g-dev
libprotobuf-c-dev protobuf-c-compiler libcurl4-openssl-dev liblua5.4-dev libnghttp2-dev libssl-dev libpcre2-dev librdkafka-dev libsnappy-dev libzstd-dev"
TEST="python3 python3-zmq python3-msgpack python3-yaml python3-grpcio python3-protobuf python3-kubernetes python3-jsonschema python3-snappy util-linux procps curl supervisor s6 wrk valgrind
systemd binutils protobuf-compiler nodejs openssl chromium chromium-driver python3-selenium tmux prometheus jq clang-format systemd-journal-remote rsyslog kcat prometheus-node-exporter"
FUZZ="clang libclang-rt-14-dev"
IMAGE="debootstrap"

[ $# -eq 0 ] && set -- runtime build test
PACKAGES=""
for set in "$@"; do
    case "$set" in
    runtime) PACKAGES="$PACKAGES $RUNTIME" ;;
    build) PACKAGES="$PACKAGES $BUILD" ;;
    test) PACKAGES="$PACKAGES $TEST" ;;
    fuzz) PACKAGES="$PACKAGES $FUZZ" ;;
    image) PACKAGES="$PACKAGES $IMAGE" ;;
    *) echo "install-deps: unknown set $set (runtime build test fuzz image)" >&2; exit 2 ;;
    esac
done

missing=""
for pkg in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $pkg"
    fi
done
# npm (for the OpenTelemetry JS SDK the tests drive): Debian's package, unless
# the installed nodejs brings its own.
case " $PACKAGES " in
*" nodejs "*) command -v npm >/dev/null 2>&1 || missing="$missing npm" ;;
esac
# kubectl (a client of the tests' fake Kubernetes API server): Debian's
# kubernetes-client, unless a kubectl is installed already (another package
# owning /usr/bin/kubectl would conflict with it).
case " $PACKAGES " in
*" python3-kubernetes "*) command -v kubectl >/dev/null 2>&1 || missing="$missing kubernetes-client" ;;
esac
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
    echo "install-deps: missing Debian packages:$missing (run as root, or install them)" >&2
    exit 1
fi
echo "install-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
# No package's service is started here (prometheus is there for promtool):
# a policy-rc.d that denies every start, for the install's length only.
policy=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
    policy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    trap 'rm -f "$policy"' EXIT
fi
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing >/dev/null
