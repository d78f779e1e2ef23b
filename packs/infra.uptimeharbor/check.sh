#!/usr/bin/env bash
# ruff + mypy --strict + pytest for this pack. mypy needs a valid package name, and the
# folder's name (infra.uptimeharbor) is not one: it checks the pack through a symlink.
set -euo pipefail
PACK="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$PACK/../.." && pwd)"
VENV="$ROOT/.venv/bin"
cd "$ROOT"
"$VENV/ruff" check "$PACK"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
ln -s "$PACK" "$tmp/uptimeharbor_pack"
"$VENV/mypy" --strict "$tmp/uptimeharbor_pack"
"$VENV/python" -m pytest "$PACK/tests" -q "$@"
