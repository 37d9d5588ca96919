#!/bin/sh
# make bench: every benchmark in one go, results in bench/results/latest.md.
# SMOKE=1 runs each at a tiny size (part of make test): it checks they run,
# not how fast.
set -eu
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
# The tests check every cached /status against a fresh one; a benchmark measures it as users get it.
export DROVER_CHECK_STATUS_CACHE=0
out=bench/results/latest.md
[ "${SMOKE:-0}" = 1 ] && out=$(mktemp /tmp/drover-bench-smoke.XXXXXX)
mkdir -p bench/results
{
    echo "# drover benchmarks"
    echo
    echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) on $(nproc) CPUs, $(uname -r); rerun with \`make bench\`."
    echo "How each is measured: docs/benchmarks.md."
    echo
    echo "## B1 throughput"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/throughput.py 1 --smoke; else $PY bench/throughput.py 6; fi
    echo
    echo "## B2 cutover under load (against supervisord)"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/cutover.py 2 20000; else $PY bench/cutover.py 20 200000; fi
    echo
    echo "## B7 chaos"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/chaos.py 3; else $PY bench/chaos.py 60; fi
    echo
    echo "## B5 footprint"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/footprint.py 1; else $PY bench/footprint.py 5; fi
    echo
    echo "## B3 spawn to ready, B4 crash restart (against supervisord and s6)"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/baselines.py 1; else $PY bench/baselines.py 10; fi
    echo
    echo "## Instance lifecycle (drover only, droverd's own clock)"
    echo
    echo '```'
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/lifecycle.py 2 --smoke; else $PY bench/lifecycle.py 20; fi
    echo '```'
    echo
    echo "## Admin latency (B6, GET /status and wrk on /readyz)"
    echo
    echo '```'
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/admin_latency.py 50 1; else $PY bench/admin_latency.py 2000 5; fi
    echo '```'
    echo
    echo "## Rollout overhead"
    echo
    echo '```'
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/rollout.py 2; else $PY bench/rollout.py 20; fi
    echo '```'
    echo
    echo "## B15 what a canary adds to a rollout"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/canary.py 1 0; else $PY bench/canary.py 10 1; fi
    echo
    echo "## B9 OTLP/HTTP ingest, B10 syslog UDP ingest, B12 exporter:otlp"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/ingest.py 1 --smoke; else $PY bench/ingest.py 6; fi
    echo
    echo "## B19 OTLP/gRPC logs ingest, B20 OTLP/gRPC metrics ingest"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/grpc_ingest.py 1 --smoke; else $PY bench/grpc_ingest.py 6; fi
    echo
    echo "## B21 OpAMP remote config to APPLIED"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/fleet.py 1 --smoke; else $PY bench/fleet.py 5; fi
    echo
    echo "## B17 disk buffer ingest, B18 restart with a backlog on disk"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/durability.py 1 0.02 --smoke; else $PY bench/durability.py 6 1; fi
    echo
    echo "## B11 cutover under HTTP load"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/http_cutover.py 2 100; else $PY bench/http_cutover.py 20 500; fi
    echo
    echo "## B13 processor:lua against processor:transform"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/lua.py 0.2 --smoke; else $PY bench/lua.py 5; fi
    echo
    echo "## B16 ack: true latency of an isolated request"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/ack_latency.py 5; else $PY bench/ack_latency.py 200; fi
    echo
    echo "## B22 a healthy branch beside a dead one"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/branches.py 0.5 --smoke; else $PY bench/branches.py 5; fi
    echo
    echo "## B23 reading a file (against rsyslog imfile), B24 CRI lines with kubernetes"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/files.py 2000 --smoke; else $PY bench/files.py 300000; fi
    echo
    echo "## B25 exporter:kafka against kcat -P, B26 receiver:kafka against kcat -C"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then echo "(bench_smoke_kafka runs it beside)"; else $PY bench/kafka.py; fi
    echo
    echo "## B27 upgrading drover in place under load, against a restart"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/upgrade.py 100 20 --smoke; else $PY bench/upgrade.py 1000 200; fi
    echo
    echo "## B28 OTLP -> rename an attribute -> OTLP on one core (otap-dataflow's OTLP-ATTR-OTLP)"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/otlp_attr.py 2 --smoke; else $PY bench/otlp_attr.py 6; fi
    echo
    echo "## B29 exactness under change: lines read twice per operation, files and Kafka"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/exactness.py 1 --smoke; else $PY bench/exactness.py 3; fi
    echo
    echo "## B30 processor:kubernetes: CRI files -> pod metadata -> null, against without it"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/kubernetes.py 20000 --smoke; else $PY bench/kubernetes.py 2000000; fi
    echo
    echo "## B32 Prometheus remote write through drover, against the protobuf-c + snappy loop"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/remote_write.py 1 --smoke; else $PY bench/remote_write.py 8; fi
    echo
    echo "## B36 the node agent's memory (summed PSS; a guard)"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/pss.py 1 --smoke; else $PY bench/pss.py 10; fi
    echo
    echo "## B35 OTTL statements against Lua and the old forms"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/ottl.py 0.3 --smoke; else $PY bench/ottl.py 4; fi
    echo
    echo "## B34 exporter:s3 against exporter:file, and its memory while S3 is down"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/s3.py 0.5 --smoke; else $PY bench/s3.py 8; fi
    echo
    echo "## B33 CPU per scrape of node-exporter, drover and Prometheus"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/scrape.py 1 --smoke; else $PY bench/scrape.py 30; fi
    echo
    echo "## B31 DroverPipelines: kubectl apply to the new generation serving, against PUT"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/kube_resources.py 2 0 --smoke; else $PY bench/kube_resources.py 50 500; fi
    echo
    echo "## B8 scale (many pipelines, many replaces)"
    echo
    if [ "${SMOKE:-0}" = 1 ]; then $PY bench/scale.py 5 2 1; else $PY bench/scale.py 200 40 60; fi
} > "$out"
cat "$out"
[ "${SMOKE:-0}" = 1 ] && rm -f "$out"
exit 0
