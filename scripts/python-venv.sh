#!/usr/bin/env bash
# A Python virtual environment with the packages of a requirements file, installed only from wheel
# folders on local disk (pip --no-index: the network is never used), cached and reused.
#
#   scripts/python-venv.sh [REQUIREMENTS]      (default: scripts/peft-compat-requirements.txt)
#
# On success prints the environment's python executable on stdout (progress goes to stderr).
# Exit codes: 0 ready; 3 unavailable here (no python3 with venv, no wheel folder, or a wheel missing:
# the reason is printed on stderr); 2 usage; 1 anything else.
#
# Settings (environment):
#   OPENCLAW_RL_WHEEL_DIRS  colon-separated wheel folders (default /opt/wheels:/opt/pypi/files:/opt/pypi-more/files)
#   OPENCLAW_RL_CACHE       cache root (default ~/.cache/openclaw-rl); environments go to python/NAME-KEY
#
# KEY is a hash of the requirements file, the Python version and this script's format version, so a
# changed pin builds a new environment; older environments of the same requirements file are removed
# (each is ~1 GB). An environment is built in a temporary sibling and renamed into place when pip has
# finished, so an interrupted build is never reused.
set -euo pipefail
UNAVAILABLE=3
FORMAT=1
here="$(cd "$(dirname "$0")" && pwd)"
req="${1:-$here/peft-compat-requirements.txt}"
if [ $# -gt 1 ] || [ ! -f "$req" ]; then
  echo "usage: scripts/python-venv.sh [REQUIREMENTS.txt] (got: ${*:-nothing}; the file must exist)" >&2
  exit 2
fi
unavailable() { echo "python-venv: unavailable: $*" >&2; exit "$UNAVAILABLE"; }

command -v python3 >/dev/null || unavailable "no python3 on PATH"
python3 -c 'import venv, ensurepip' 2>/dev/null || unavailable "$(command -v python3) has no venv/ensurepip module (Debian: the python3-venv package)"

IFS=: read -r -a dirs <<<"${OPENCLAW_RL_WHEEL_DIRS:-/opt/wheels:/opt/pypi/files:/opt/pypi-more/files}"
links=()
for d in "${dirs[@]}"; do [ -d "$d" ] && links+=(--find-links "$d"); done
[ ${#links[@]} -gt 0 ] || unavailable "none of the wheel folders exists: ${dirs[*]} (set OPENCLAW_RL_WHEEL_DIRS)"

name="$(basename "$req" .txt)"; name="${name%-requirements}"
key="$( { echo "format $FORMAT"; python3 -c 'import sys; print(sys.version, sys.platform)'; grep -v '^\s*#' "$req"; } | sha256sum | cut -c1-16)"
root="${OPENCLAW_RL_CACHE:-$HOME/.cache/openclaw-rl}/python"
venv="$root/$name-$key"
if [ -x "$venv/bin/python" ] && [ -f "$venv/.complete" ]; then
  echo "$venv/bin/python"
  exit 0
fi

mkdir -p "$root"
tmp="$root/.$name-$key.tmp-$$"
trap 'rm -rf "$tmp"' EXIT
started=$(date +%s)
echo "python-venv: building $venv from ${dirs[*]} (no network)" >&2
python3 -m venv "$tmp" || unavailable "python3 -m venv failed"
log="$tmp/.pip.log"
if ! PIP_DISABLE_PIP_VERSION_CHECK=1 "$tmp/bin/python" -m pip install --quiet --no-index --no-cache-dir "${links[@]}" -r "$req" >"$log" 2>&1; then
  missing="$(grep -oE 'No matching distribution found for [^ ]+' "$log" | sed 's/No matching distribution found for //' | sort -u | paste -sd, - || true)"
  if [ -n "$missing" ]; then unavailable "no wheel in ${dirs[*]} for: $missing"; fi
  conflict="$(grep -E 'ResolutionImpossible|conflicting dependencies|requires' "$log" | head -3 || true)"
  if [ -n "$conflict" ]; then unavailable "the local wheels do not resolve: $conflict"; fi
  echo "python-venv: pip failed:" >&2
  tail -20 "$log" >&2
  exit 1
fi
"$tmp/bin/python" -m pip freeze --all >"$tmp/.installed.txt" 2>/dev/null || true
touch "$tmp/.complete"
# another build of the same key may have finished meanwhile: keep that one
if ! mv -T "$tmp" "$venv" 2>/dev/null; then rm -rf "$tmp"; fi
trap - EXIT
for old in "$root/$name"-*; do
  [ "$old" = "$venv" ] || [ ! -d "$old" ] || rm -rf "$old"
done
echo "python-venv: ready in $(($(date +%s) - started)) s: $venv" >&2
echo "$venv/bin/python"
