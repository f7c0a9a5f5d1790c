#!/usr/bin/env bash
# Build and run a local MinIO S3 server for integration tests.
#
#   minio.sh install          build the pinned MinIO binary (idempotent)
#   minio.sh start DIR PORT   start MinIO on 127.0.0.1:PORT (console PORT+1), data in DIR;
#                             with DIR/certs/public.crt and private.key present, over TLS
#   minio.sh stop DIR         stop the MinIO started with DIR
#
# Credentials: gantryadmin / gantrysecret123
# GANTRY_MINIO_OWNER_PID=PID with start: stop MinIO when process PID exits.
#
# MinIO publishes no semver tags, and the Go module proxy reachable here serves
# only this pseudo-version (RELEASE.* tags answer 403), so we pin it.
# Requires Go >= 1.24 (go.mod: go 1.24.0). Builds with `go install`; first build
# takes ~6 min on 2 cores and fills ~1.2 GB of module cache.
set -euo pipefail

MINIO_VERSION="v0.0.0-20260212201848-7aac2a2c5b7c"
MINIO_MODULE="github.com/minio/minio"

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
MINIO_BIN="${GANTRY_MINIO_BIN:-$repo/target/minio-bin/minio}"
MINIO_STAMP="$MINIO_BIN.version"

die() { echo "minio.sh: $*" >&2; exit 1; }

cmd_install() {
    if [[ -x "$MINIO_BIN" && -f "$MINIO_STAMP" && "$(cat "$MINIO_STAMP")" == "$MINIO_VERSION" ]]; then
        return 0
    fi
    command -v go >/dev/null || die "go not found in PATH"
    local bindir
    bindir="$(dirname "$MINIO_BIN")"
    mkdir -p "$bindir"
    # go install names the binary after the package ("minio"); build into a
    # temp GOBIN, then move to the requested path.
    local tmp
    tmp="$(mktemp -d "$bindir/.minio-build.XXXXXX")"
    if ! (cd "$tmp" && GOBIN="$tmp" GOFLAGS=-mod=mod nice -n 10 \
        go install "$MINIO_MODULE@$MINIO_VERSION"); then
        rm -rf "$tmp"
        die "go install $MINIO_MODULE@$MINIO_VERSION failed"
    fi
    mv -f "$tmp/minio" "$MINIO_BIN"
    rm -rf "$tmp"
    echo "$MINIO_VERSION" > "$MINIO_STAMP"
}

cmd_start() {
    [[ $# -eq 2 ]] || die "usage: minio.sh start DIR PORT"
    local dir="$1" port="$2"
    [[ "$port" =~ ^[0-9]+$ ]] || die "bad port: $port"
    [[ -x "$MINIO_BIN" ]] || die "minio binary not found at $MINIO_BIN (run: minio.sh install)"
    mkdir -p "$dir/data"
    dir="$(cd "$dir" && pwd)"
    local log="$dir/minio.log" pidfile="$dir/minio.pid"

    if [[ -f "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
        die "minio already running for $dir (pid $(cat "$pidfile"))"
    fi

    # Refuse to start if something already listens there: the health check
    # below would otherwise succeed against the other server.
    if [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$port/" || true)" != 000 ]]; then
        die "port $port on 127.0.0.1 is already in use"
    fi

    local scheme=http tls=() curl_tls=()
    if [[ -f "$dir/certs/public.crt" && -f "$dir/certs/private.key" ]]; then
        scheme=https
        tls=(--certs-dir "$dir/certs")
        curl_tls=(--cacert "$dir/certs/ca.pem")
    fi

    MINIO_ROOT_USER=gantryadmin \
    MINIO_ROOT_PASSWORD=gantrysecret123 \
    MINIO_BROWSER=off \
    MINIO_UPDATE=off \
    MINIO_CALLHOME_ENABLE=off \
    MINIO_PROMETHEUS_AUTH_TYPE=public \
    MINIO_SCANNER_SPEED=slowest \
    MINIO_CI_CD=1 \
        nohup "$MINIO_BIN" server "$dir/data" \
            --address "127.0.0.1:$port" \
            --console-address "127.0.0.1:$((port + 1))" \
            --quiet --anonymous "${tls[@]}" \
            >"$log" 2>&1 </dev/null &
    local pid=$!
    echo "$pid" > "$pidfile"

    # A test binary cannot run destructors for its statics, so it names itself as the owner:
    # this watchdog stops MinIO (and removes its data) once the owner process has exited.
    if [[ -n "${GANTRY_MINIO_OWNER_PID:-}" ]]; then
        local owner="$GANTRY_MINIO_OWNER_PID"
        nohup bash -c "while kill -0 $owner 2>/dev/null && kill -0 $pid 2>/dev/null; do sleep 0.5; done;
                       kill $pid 2>/dev/null; sleep 1; kill -9 $pid 2>/dev/null; rm -rf '$dir'" \
            >/dev/null 2>&1 </dev/null &
    fi

    local url="$scheme://127.0.0.1:$port/minio/health/live" i code
    for ((i = 0; i < 300; i++)); do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "minio.sh: minio exited during startup; log tail:" >&2
            tail -n 30 "$log" >&2 || true
            rm -f "$pidfile"
            exit 1
        fi
        code="$(curl -s "${curl_tls[@]}" -o /dev/null -w '%{http_code}' --max-time 1 "$url" || true)"
        if [[ "$code" == 200 ]] && kill -0 "$pid" 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    echo "minio.sh: minio did not become healthy on $url within 30 s; log tail:" >&2
    tail -n 30 "$log" >&2 || true
    kill "$pid" 2>/dev/null || true
    rm -f "$pidfile"
    exit 1
}

cmd_stop() {
    [[ $# -eq 1 ]] || die "usage: minio.sh stop DIR"
    local pidfile="$1/minio.pid" pid i
    [[ -f "$pidfile" ]] || return 0
    pid="$(cat "$pidfile")"
    if kill "$pid" 2>/dev/null; then
        for ((i = 0; i < 100; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
}

case "${1:-}" in
    install) shift; cmd_install "$@" ;;
    start)   shift; cmd_start "$@" ;;
    stop)    shift; cmd_stop "$@" ;;
    *) die "usage: minio.sh {install|start DIR PORT|stop DIR}" ;;
esac
