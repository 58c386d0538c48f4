#!/bin/sh
# Provide the Dockerfile's base image (its FROM, python:3.11-slim) to the local engine.
#
# Users build against the real image from the registry. Where the registry cannot be
# reached (CI here), a stand-in is made under the same name from Debian's packages: a
# minimal bookworm root file system from debootstrap with python3 (3.11), pip and venv,
# `python` and `pip` on PATH, and pip allowed to install system-wide as in the python
# images (Debian's EXTERNALLY-MANAGED marker removed), turned into an image by
# `docker import`. It trusts the certificate authorities this machine trusts (its
# /etc/ssl/certs/ca-certificates.crt), so that pip in the build reaches PyPI from behind a
# TLS-inspecting proxy as the host's pip does. The root file system is kept as a tarball in $KMOCK_DOCKER_CACHE, so a
# later run on the same machine imports it again instead of bootstrapping (about 40-70 s).
#
# Usage: docker/base-image.sh [Dockerfile]   (root, for debootstrap)
set -eu

dockerfile="${1:-Dockerfile}"
cache="${KMOCK_DOCKER_CACHE:-/var/cache/kmock-docker}"
mirror="${KMOCK_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
suite=bookworm          # Debian 12: python3 is 3.11
suite_python=11         # its python3 minor version

base="$(awk 'toupper($1) == "FROM" { print $2; exit }' "$dockerfile")"
if docker image inspect "$base" >/dev/null 2>&1; then
    echo "base image $base: present"
    exit 0
fi
if timeout 60 docker pull "$base" >/dev/null 2>&1; then
    echo "base image $base: pulled"
    exit 0
fi

minor="$(printf '%s\n' "$base" | sed -n 's/^python:3\.\([0-9][0-9]*\)-slim.*$/\1/p')"
if [ -z "$minor" ] || [ "$minor" -gt "$suite_python" ]; then
    echo "base image $base cannot be pulled, and Debian $suite (python 3.$suite_python)" \
        "cannot stand in for it" >&2
    exit 1
fi

tarball="$cache/$suite-python3-rootfs.tar"
if [ ! -s "$tarball" ]; then
    command -v debootstrap >/dev/null || { echo "debootstrap is not installed" >&2; exit 1; }
    mkdir -p "$cache"
    root="$(mktemp -d "$cache/rootfs.XXXXXX")"
    trap 'rm -rf "$root" "$tarball.tmp"' EXIT
    echo "base image $base: registry unreachable; bootstrapping Debian $suite from $mirror"
    debootstrap --variant=minbase \
        --include=python3,python3-pip,python3-venv,python-is-python3,ca-certificates \
        "$suite" "$root" "$mirror" >"$cache/debootstrap.log" 2>&1 \
        || { tail -n 20 "$cache/debootstrap.log" >&2; exit 1; }
    rm -f "$root"/usr/lib/python3.*/EXTERNALLY-MANAGED
    rm -rf "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* \
        "$root"/usr/share/man/* "$root"/usr/share/locale/* "$root"/var/log/*
    tar --numeric-owner -C "$root" -cf "$tarball.tmp" .
    mv "$tarball.tmp" "$tarball"
    rm -rf "$root"
    trap - EXIT
fi

# The machine's CA bundle is appended at import, not cached: it may change between runs.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$tarball" "$work/rootfs.tar"
if [ -s /etc/ssl/certs/ca-certificates.crt ]; then
    mkdir -p "$work/add/etc/ssl/certs"
    cp /etc/ssl/certs/ca-certificates.crt "$work/add/etc/ssl/certs/"
    tar --delete -f "$work/rootfs.tar" ./etc/ssl/certs/ca-certificates.crt
    tar --numeric-owner --owner=0 --group=0 -C "$work/add" -rf "$work/rootfs.tar" \
        ./etc/ssl/certs/ca-certificates.crt
fi
docker import \
    --change 'ENV LANG=C.UTF-8' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["python3"]' \
    --message "stand-in for $base: Debian $suite with python3, pip and venv" \
    "$work/rootfs.tar" "$base" >/dev/null
echo "base image $base: imported from $tarball (Debian $suite stand-in)"
