#!/usr/bin/env bash
# Creates the project's .venv and installs requirements.txt (and requirements-no-deps.txt, without
# their declared dependencies) into it; idempotent: a venv whose
# installed set already matches both files (stamp file) is left alone. The venv's torch is
# the LibTorch torchperf builds against (torch.utils.cmake_prefix_path) and the Python peer.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${VENV:-.venv}
python=${PYTHON:-python3}
stamp="$venv/.torchperf-requirements"

wanted() { cat requirements.txt requirements-no-deps.txt; }
imports='import torch, numpy, PIL, hta.trace_analysis, transformers'
# The source tree's Python side, importable from the venv (as an editable install would make it):
# `import torchperf` there runs the core this checkout builds (build/torchperf, _binary.py).
link_source() {
  local site
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$(pwd)/python" > "$site/torchperf-source.pth"
}
# `torchperf` on the venv's PATH (issue 84: .venv/bin had Ray's `serve` and `tune`, and no
# torchperf): the package's console script, as `pip install .` makes it.
console_script() {
  printf '#!/bin/sh\n# torchperf from this checkout (scripts/setup-venv.sh)\nexec "$(dirname "$0")/python" -m torchperf "$@"\n' \
    > "$venv/bin/torchperf"
  chmod +x "$venv/bin/torchperf"
}
# No foreign warnings where the venv imports torchao (transformers does, issue 84): the pinned
# wheel ships two extensions no CPU torch on Python 3.11 can load (a CPython 3.10 build and a
# CUDA sm_90 one), each a "Failed to load" line on every import; they are removed when they do
# not load. torchao's registration of its enums as pytree constants, deprecated in torch 2.13,
# logs two more lines: that logger is set to errors only, at interpreter start.
quiet_foreign_imports() {
  "$venv/bin/python" - <<'PY'
import glob, importlib.util, os
import torch
spec = importlib.util.find_spec("torchao")  # not imported: its import is what prints
folder = list(spec.submodule_search_locations)[0] if spec else None
for so in glob.glob(os.path.join(folder, "_C*.so")) if folder else []:
    try:
        torch.ops.load_library(so)
    except Exception:
        os.remove(so)
        print(f"setup-venv: removed {os.path.basename(so)}, which this torch cannot load")
PY
  local site
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "import logging; logging.getLogger('torch.utils._pytree').setLevel(logging.ERROR)" \
    > "$site/torchperf-quiet.pth"
}
if [ -f "$stamp" ] && cmp -s <(wanted) "$stamp" && "$venv/bin/python" -c "$imports" 2>/dev/null; then
  link_source
  console_script
  quiet_foreign_imports 2>/dev/null || true
  echo "setup-venv: $venv up to date"
  exit 0
fi
if [ ! -x "$venv/bin/python" ]; then
  if ! "$python" -c 'import venv, ensurepip' 2>/dev/null; then
    echo "setup-venv: $python cannot create a venv (Debian: apt-get install python3-venv)" >&2
    exit 1
  fi
  echo "setup-venv: creating $venv with $("$python" --version 2>&1)"
  "$python" -m venv "$venv"
fi
echo "setup-venv: installing requirements.txt into $venv"
# The pins in requirements.txt are the whole set; pip's own chatter about local indexes is noise.
# pip's status decides (pipefail); a grep that filters every line out is not a failure.
"$venv/bin/python" -m pip install --disable-pip-version-check -q -r requirements.txt 2>&1 \
  | { grep -v "^WARNING: Location" || true; }
"$venv/bin/python" -m pip install --disable-pip-version-check -q --no-deps -r requirements-no-deps.txt 2>&1 \
  | { grep -v "^WARNING: Location" || true; }
"$venv/bin/python" -c "$imports" || { echo "setup-venv: the install failed" >&2; exit 1; }
wanted > "$stamp"
link_source
console_script
quiet_foreign_imports
