#!/bin/sh
# make image-check: deploy/docker/Dockerfile's two stages, played without a
# Docker engine. A minimal Debian bookworm (debootstrap --variant=minbase, the
# stuff of debian:bookworm-slim) is made once in build-image/base; then
#   build stage:   install-deps.sh build runtime, build.sh, cmake --install
#   runtime stage: a fresh copy of the base, install-deps.sh runtime only, the
#                  installed binaries and deploy/drover.yaml, a drover user
# and the runtime is started as the image would run: droverd as uid 10001 with
# the image's config, asked the HEALTHCHECK command, stopped with SIGTERM.
# Root only; uses the Debian mirror this machine's apt uses.
set -eu
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh image
root=${IMAGE_ROOT:-build-image}
mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
[ -n "$mirror" ] || mirror=$(awk '/^deb / {print $2; exit}' /etc/apt/sources.list)
mkdir -p "$root"
if [ ! -f "$root/base/.done" ]; then
    rm -rf "$root/base"
    debootstrap --variant=minbase bookworm "$root/base" "$mirror" >"$root/debootstrap.log" 2>&1
    touch "$root/base/.done"
fi

in_root() { # in_root DIR COMMAND: a chroot with /proc and /dev, in its own mount namespace
    cp /etc/resolv.conf "$1/etc/resolv.conf"
    unshare --mount --fork sh -c "mount -t proc proc '$1/proc' && mount --bind /dev '$1/dev' && chroot '$1' sh -c '$2'"
}

echo "image-check: build stage"
rm -rf "$root/build"
cp -a "$root/base" "$root/build"
mkdir -p "$root/build/src"
git archive HEAD | tar -x -C "$root/build/src"
in_root "$root/build" "cd /src && sh scripts/install-deps.sh build runtime && sh scripts/build.sh /build Release \
    && cmake --install /build --prefix /opt/drover --strip" >"$root/build.log" 2>&1 \
    || { tail -30 "$root/build.log"; exit 1; }

echo "image-check: runtime stage"
rm -rf "$root/runtime"
cp -a "$root/base" "$root/runtime"
cp scripts/install-deps.sh "$root/runtime/tmp/install-deps.sh"
in_root "$root/runtime" "sh /tmp/install-deps.sh runtime && rm -rf /var/lib/apt/lists/* /tmp/install-deps.sh \
    && useradd --system --uid 10001 --user-group --home-dir /var/lib/drover --shell /usr/sbin/nologin drover \
    && install -d -o drover -g drover -m 0700 /run/drover /var/lib/drover" >"$root/runtime.log" 2>&1 \
    || { tail -30 "$root/runtime.log"; exit 1; }
cp -a "$root/build/opt/drover/bin/." "$root/runtime/usr/local/bin/"
mkdir -p "$root/runtime/etc/drover/secrets"
cp deploy/drover.yaml "$root/runtime/etc/drover/drover.yaml"
head -c 32 /dev/urandom | base64 >"$root/runtime/etc/drover/secrets/token"
chmod 0644 "$root/runtime/etc/drover/secrets/token"

echo "image-check: run as the image does"
image_env=$(sed -n 's/^ENV //p' deploy/docker/Dockerfile) # the image's environment (DROVER_ADMIN)
in_root "$root/runtime" '
    setpriv --reuid=10001 --regid=10001 --clear-groups /usr/local/bin/droverd -c /etc/drover/drover.yaml \
        >/tmp/droverd.log 2>&1 &
    pid=$!
    i=0
    until /usr/local/bin/droverctl -e ipc:///run/drover/sockets/admin.sock -t 2 call GET /livez >/dev/null 2>&1; do
        i=$((i + 1)); [ $i -lt 100 ] || { cat /tmp/droverd.log; exit 1; }; sleep 0.1
    done
    echo "HEALTHCHECK /livez: ok"
    env '"$image_env"' /usr/local/bin/droverctl status   # DROVER_ADMIN, as kubectl exec … droverctl finds it
    kill -TERM $pid; wait $pid; rc=$?
    echo "droverd exit after SIGTERM: $rc"; [ $rc -eq 0 ]'
echo "image-check: runtime root $(du -sh "$root/runtime" | cut -f1)"
echo "image-check: ok"
