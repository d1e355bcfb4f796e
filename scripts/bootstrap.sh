#!/usr/bin/env bash
# Installs what `npm test` and `npm run demo` need on a fresh Debian/Ubuntu machine, and nothing when it
# is all there already: npm dependencies, and the real services the test bench starts (redis-server,
# sshd, haproxy) plus the host tools the simulated GPU host uses (curl, git, ps, timeout, socat, vmtouch,
# rsync with its rrsync and the python3 rrsync runs on, for a rollout's peer copies),
# and Chromium, the headless browser the fleet page is tested in (test/e2e/fleet-page.test.ts).
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
  [chromium]=chromium
  [rsync]=rsync
  [/usr/bin/rrsync]=rsync
  [/usr/bin/python3]=python3
)
# a Chromium or Chrome of its own, named by CHROMIUM (testbench/headless-chromium.ts), stands for Debian's
if [ -n "${CHROMIUM:-}" ] && command -v "$CHROMIUM" >/dev/null 2>&1; then unset 'needed[chromium]'; fi
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

# npm dependencies: install when absent or when the lockfile's content changed since the last install
# (by content, not by time: a fresh checkout or a git worktree has a new lockfile with the same content,
# and must not wipe a node_modules it shares).
lock_sum=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f node_modules/.package-lock.json ] || [ "$(cat node_modules/.modelswap-lock.sha256 2>/dev/null)" != "$lock_sum" ]; then
  echo "bootstrap: installing npm dependencies (npm ci)…"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$lock_sum" > node_modules/.modelswap-lock.sha256
fi
