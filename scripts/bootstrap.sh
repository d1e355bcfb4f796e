#!/usr/bin/env bash
# Installs what `npm test` and `npm run demo` need on a fresh Debian/Ubuntu machine, and nothing when it
# is all there already: npm dependencies, and the real services the test bench starts (redis-server,
# sshd, haproxy) plus the host tools the simulated GPU host uses (curl, git, ps, timeout, socat, vmtouch).
set -euo pipefail
cd "$(dirname "$0")/.."

major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "modelswap needs Node.js 20 or newer (found $(node --version))." >&2
  exit 1
fi

# Debian package for each command the bench runs.
declare -A needed=(
  [redis-server]=redis-server
  [/usr/sbin/sshd]=openssh-server
  [ssh-keygen]=openssh-client
  [curl]=curl
  [git]=git
  [ps]=procps
  [timeout]=coreutils
  [setsid]=util-linux
  [systemd-analyze]=systemd
  [diff]=diffutils
  [sha256sum]=coreutils
  [/usr/sbin/haproxy]=haproxy
  [socat]=socat
  [vmtouch]=vmtouch
)
missing=()
for cmd in "${!needed[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${needed[$cmd]}")
done
if [ ${#missing[@]} -gt 0 ]; then
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "bootstrap: installing ${missing[*]} with apt-get…"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "bootstrap: missing system packages: ${missing[*]}" >&2
    echo "install them, then run this again:  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

# npm dependencies: install when absent or when the lockfile changed since the last install.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "bootstrap: installing npm dependencies (npm ci)…"
  npm ci --no-audit --no-fund --loglevel=error
fi
