#!/usr/bin/env bash
# `make docker-test`: the image and docker-compose.yml built and run in a real engine.
#
#   docker/ci.sh PYTHON [PYTEST ARGS...]
#
# 1. Installs Debian's docker.io, docker-compose (1.29) and debootstrap when absent (root).
# 2. Starts dockerd when no engine answers, and stops the one it started on the way out,
#    whatever the outcome.
# 3. Provides the Dockerfile's base image (docker/base-image.sh: pulled, or where the
#    registry is unreachable, made from Debian's packages).
# 4. Runs the `docker` tests (tests/docker/) with PYTHON; they build the images through
#    docker-compose and drive the engine.
# Where no engine can run here (no root to install it, or a dockerd that cannot start),
# it says why and exits 0 without running the tests.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

python="${1:?usage: docker/ci.sh PYTHON [PYTEST ARGS...]}"
shift

skip() {
    echo "docker-test: skipped: $*" >&2
    exit 0
}

# --- 1. packages --------------------------------------------------------------------------
missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v docker-compose >/dev/null || missing+=(docker-compose)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if ((${#missing[@]})); then
    if [[ $EUID -ne 0 ]] || ! command -v apt-get >/dev/null; then
        skip "${missing[*]} missing, and installing them needs root and apt-get"
    fi
    echo "docker-test: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# --- 2. the engine ------------------------------------------------------------------------
state="$(mktemp -d /tmp/kmock-docker-test.XXXXXX)"
dockerd_pid=""
stop_dockerd() {
    local rc=$?
    if [[ -n "$dockerd_pid" ]] && kill -0 "$dockerd_pid" 2>/dev/null; then
        echo "docker-test: stopping the dockerd it started (pid $dockerd_pid)"
        kill -TERM "$dockerd_pid"
        for _ in $(seq 60); do
            kill -0 "$dockerd_pid" 2>/dev/null || break
            sleep 0.5
        done
        kill -0 "$dockerd_pid" 2>/dev/null && kill -KILL "$dockerd_pid"
    fi
    rm -rf "$state"
    exit "$rc"
}
trap stop_dockerd EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if ! docker info >/dev/null 2>&1; then
    if [[ $EUID -ne 0 ]]; then
        skip "no Docker engine answers, and starting dockerd needs root"
    fi
    echo "docker-test: starting dockerd (log: $state/dockerd.log)"
    dockerd --pidfile "$state/dockerd.pid" >"$state/dockerd.log" 2>&1 &
    dockerd_pid=$!
    for _ in $(seq 60); do
        docker info >/dev/null 2>&1 && break
        kill -0 "$dockerd_pid" 2>/dev/null || break
        sleep 0.5
    done
    if ! docker info >/dev/null 2>&1; then
        tail -n 5 "$state/dockerd.log" >&2
        skip "dockerd does not start on this machine (its last lines are above)"
    fi
fi

# --- 3. base image ------------------------------------------------------------------------
docker/base-image.sh Dockerfile

# --- 4. tests -----------------------------------------------------------------------------
# The classic builder: Debian's engine has no buildx, and a newer docker CLI would ask for it.
export DOCKER_BUILDKIT=0 COMPOSE_DOCKER_CLI_BUILD=0
status=0
timeout --foreground --signal=INT --kill-after=30 600 \
    "$python" -m pytest tests/docker -m docker -q -ra "$@" || status=$?
exit "$status"
