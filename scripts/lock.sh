#!/usr/bin/env bash
# Regenerate the three hash-pinned lock files from pyproject.toml, for Python 3.11:
#   requirements.lock       the main job: the core + the local judge + judge serve (extras `local`, `server`)
#   requirements-core.lock  the core alone: hosted judges and offline replay, no compiler,
#                           no llama.cpp (no extra)
#   requirements-dev.lock   development: every extra (the tests cover them all)
# Each is `uv pip compile ... --generate-hashes --python-version 3.11`, as its header says.
# uv is installed into .venv with pip when it is not there yet.
set -euo pipefail
cd "$(dirname "$0")/.."

uv=.venv/bin/uv
if [ ! -x "$uv" ]; then
  .venv/bin/pip install -q uv
fi

compile() {  # compile OUTPUT [EXTRA_FLAGS...]
  local out=$1
  shift
  "$uv" pip compile pyproject.toml "$@" -o "$out" --generate-hashes --python-version 3.11 \
    --quiet
  echo "wrote $out ($(grep -c '^[a-zA-Z0-9]' "$out") packages)"
}

compile requirements.lock --extra local --extra server
compile requirements-core.lock
compile requirements-dev.lock --all-extras
