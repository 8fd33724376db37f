#!/usr/bin/env bash
# Every package's paper-scale row on a GPU machine, in about five minutes:
#
#   bash tools/gpu_paper_scale.sh [OUT_DIR] [NAMES...]      (OUT_DIR default: results/paper-scale-cuda)
#
# For a bare machine with Python and the field's libraries (torch, timm, transformers, torchdiffeq, ...) but no
# network and no uv: the packages run from this checkout through PYTHONPATH, and the `iclr24.papers` entry points
# are written into a throw-away site folder from each package's pyproject.toml, so nothing is installed. Wheels of
# missing dependencies (open-clip-torch, for example) can travel in WHEELS_DIR (default tools/.wheels): they are
# installed with `pip --no-index --no-deps --target` into the same throw-away folder. A package whose import fails
# gets an error row; the others go on.
#
# DEVICE=cpu runs the same rows on the CPU (a dry run; a test does it for one package). PYTHON picks the interpreter.
# Record the result here with: python tools/record_paper_scale.py --device cuda --from OUT_DIR/paper_scale.json
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-results/paper-scale-cuda}"
shift || true
PY="${PYTHON:-python3}"
DEVICE="${DEVICE:-cuda}"
WHEELS="${WHEELS_DIR:-$ROOT/tools/.wheels}"
SITE="$(mktemp -d)"
trap 'rm -rf "$SITE"' EXIT

"$PY" - "$ROOT" "$SITE" <<'PYEOF'
import sys, tomllib
from pathlib import Path
root, site = Path(sys.argv[1]), Path(sys.argv[2])
lines = ["[iclr24.papers]"]
for pp in sorted((root / "packages").glob("*/pyproject.toml")):
    eps = tomllib.loads(pp.read_text()).get("project", {}).get("entry-points", {}).get("iclr24.papers", {})
    lines += [f"{k} = {v}" for k, v in eps.items()]
di = site / "iclr24_paper_scale_run-0.0.0.dist-info"
di.mkdir()
(di / "METADATA").write_text("Metadata-Version: 2.1\nName: iclr24-paper-scale-run\nVersion: 0.0.0\n")
(di / "entry_points.txt").write_text("\n".join(lines) + "\n")
print(f"gpu_paper_scale: {len(lines) - 1} papers found", flush=True)
PYEOF

if compgen -G "$WHEELS/*.whl" > /dev/null; then
  "$PY" -m pip install --quiet --no-index --no-deps --target "$SITE" "$WHEELS"/*.whl
fi
SRC="$SITE:$ROOT/shared/src"
for d in "$ROOT"/packages/*/src; do SRC="$SRC:$d"; done
export PYTHONPATH="$SRC${PYTHONPATH:+:$PYTHONPATH}"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
"$PY" -m iclr24.paperkit.runner.umbrella bench --paper-scale "$@" --device "$DEVICE" --out "$OUT"
