#!/usr/bin/env bash
# Build (once per machine) the vLLM virtualenv and the 0.5B model it serves; print the venv's path.
#
#   cluster/vllm_env.sh            build what is missing, print the venv folder
#   cluster/vllm_env.sh venv-only  the venv only (no model conversion)
#
# The venv is ~/.cache/llm4schema/vllm-venv-<first 12 hex of sha256(cluster/vllm-requirements.txt)>
# (LLM4SCHEMA_VLLM_CACHE overrides ~/.cache/llm4schema): outside the clone, so every clone on the
# machine shares it and a changed requirements file builds a new one. A venv counts only once its
# .installed marker exists (written last), so a killed build is started again from scratch.
# The safetensors model is written by cluster/vllm_cpu.py --convert into conf/serving.toml's
# [vllm] model_source, which it redoes only when the GGUF's pinned sha256 changes.
# Concurrent runs on one machine wait for each other (flock).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
REQ="$ROOT/cluster/vllm-requirements.txt"
CACHE="${LLM4SCHEMA_VLLM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/llm4schema}"
HASH="$(sha256sum "$REQ" | cut -c1-12)"
VENV="$CACHE/vllm-venv-$HASH"
mkdir -p "$CACHE"
exec 9>"$CACHE/vllm-env.lock"
flock 9
# pip repeats a warning about index folders the machine's pip configuration names but lacks.
quiet() { grep -v "^WARNING: Location '.*' is ignored" || true; }
if [ ! -e "$VENV/.installed" ]; then
  rm -rf "$VENV"
  start=$(date +%s)
  echo "vllm-env: building $VENV (a few minutes, about 3.5 GB)" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip 2>&1 | quiet >&2
  "$VENV/bin/python" -m pip install --quiet -r "$REQ" 2>&1 | quiet >&2
  "$VENV/bin/python" -m pip uninstall --quiet -y torchvision torchaudio torchcodec 2>&1 | quiet >&2
  # vLLM logs its platform checks on import; only a failure is worth showing.
  "$VENV/bin/python" -c "import vllm, ray.serve.llm" >/dev/null 2>&1 || "$VENV/bin/python" -c "import vllm, ray.serve.llm" >&2
  echo "$(date -u +%FT%TZ) $(sha256sum "$REQ" | cut -d' ' -f1)" > "$VENV/.installed"
  echo "vllm-env: built in $(( $(date +%s) - start )) s" >&2
  # One vLLM venv per machine: those of earlier requirements files go (3.5 GB each).
  for old in "$CACHE"/vllm-venv-*; do
    [ "$old" = "$VENV" ] || rm -rf "$old"
  done
fi
[ "${1:-}" = venv-only ] && { echo "$VENV"; exit 0; }
# The conversion reads the project's code (udfs.llm.model_files) from the clone.
PYTHONPATH="$ROOT" HF_HUB_OFFLINE=1 "$VENV/bin/python" "$ROOT/cluster/vllm_cpu.py" --convert >&2
echo "$VENV"
