#!/usr/bin/env bash
# Install the Debian packages `make test` needs (the test bed's sshd, ping, ufw; shellcheck for
# sanity), only those missing, quietly. Without root or apt-get it stops with one line that names
# the command to run instead. Usage: debian-packages.sh PACKAGE...
set -euo pipefail
missing=()
for pkg in "$@"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    [[ $status == "install ok installed" ]] || missing+=("$pkg")
done
((${#missing[@]})) || exit 0
fix="apt-get install -y --no-install-recommends ${missing[*]}"
if ! command -v apt-get >/dev/null; then
    echo "make test: missing Debian packages (${missing[*]}) and no apt-get here; install their equivalents, then rerun" >&2
    exit 1
fi
if ((EUID != 0)); then
    echo "make test: missing Debian packages; run as root: $fix" >&2
    exit 1
fi
log=$(mktemp "${TMPDIR:-/tmp}/ascend-apt.XXXXXX")
trap 'rm -f "$log"' EXIT
echo "make test: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -q && apt-get install -y -q --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    echo "make test: installing Debian packages failed (log above); run as root: apt-get update && $fix" >&2
    exit 1
fi
