#!/usr/bin/env python3
"""Refresh the table of papers in the root README from the packages on disk.

``python tools/refresh_readme.py`` rewrites the block between the ``papers`` markers; ``--check`` exits 1 when
the README is stale (a test runs it). ``--report results/claims.json`` (from ``iclr24 reproduce``) first records,
per paper, how many claims held in that measured run into ``tools/measured.json``, which the status column shows. Title and one-line claim come from each package's ``reproduce.py``
(``Paper(title=..., summary=...)``); papers without a package yet are listed as planned.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- papers:start -->", "<!-- papers:end -->"
MEASURED = ROOT / "tools" / "measured.json"

# The nineteen papers of the project, in the order of PAPERS.md: package -> title (for those not yet built).
PAPERS = {
    "srigl": "Dynamic Sparse Training with Structured Sparsity",
    "rdmc": "Reverse Diffusion Monte Carlo",
    "lpn": "What's in a Prior? Learned Proximal Networks for Inverse Problems",
    "asmr": "ASMR: Activation-Sharing Multi-Resolution Coordinate Networks",
    "maxent-moco": "Maximum Entropy Model Correction in Reinforcement Learning",
    "drum-rules": "Faithful Rule Extraction for Differentiable Rule Learning Models",
    "persona-bias": "Bias Runs Deep: Implicit Reasoning Biases in Persona-Assigned LLMs",
    "fastervit": "FasterViT: Fast Vision Transformers with Hierarchical Attention",
    "sfda2": "SF(DA)^2: Source-free Domain Adaptation Through the Lens of Data Augmentation",
    "rlcf": "Test-Time Adaptation with CLIP Reward for Zero-Shot Generalization in Vision-Language Models",
    "aemc-ne": "Neuron-Enhanced Autoencoder Matrix Completion and Collaborative Filtering",
    "lace": "Towards Aligned Layout Generation via Diffusion Model with Aesthetic Constraints",
    "opposing-signals": "Outliers with Opposing Signals Have an Outsized Effect on Neural Network Optimization",
    "ncde-bounds": "On the Generalization and Approximation Capacities of Neural Controlled Differential Equations",
    "fif": "Lifting Architectural Constraints of Injective Flows",
    "task-geometry": "Task structure and nonlinearity jointly determine learned representational geometry",
    "cmvae": "Deep Generative Clustering with Multimodal Diffusion Variational Autoencoders",
    "sufo": "Interpreting fine-tuned transformer feature spaces with SUFO",
    "tab-snn": "TAB: Temporal Accumulated Batch Normalization in Spiking Neural Networks",
}


def paper_record(pkg_dir: Path) -> dict[str, str] | None:
    """Read ``title``/``summary`` from the ``Paper(...)`` call in the package's reproduce.py, without importing."""
    snake = pkg_dir.name.replace("-", "_")
    src = pkg_dir / "src" / "iclr24" / snake / "reproduce.py"
    if not src.exists():
        return None
    for node in ast.walk(ast.parse(src.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Paper":
            kw = {k.arg: k.value for k in node.keywords}
            try:
                return {k: ast.literal_eval(kw[k]) for k in ("title", "summary") if k in kw}
            except ValueError:
                return None
    return None


def load_measured() -> dict:
    return json.loads(MEASURED.read_text()) if MEASURED.exists() else {}


def record_report(report: Path) -> None:
    """Keep, per paper, the mode and the count of claims that held in a measured ``iclr24 reproduce`` run."""
    doc = json.loads(report.read_text())
    measured = load_measured()
    if doc["mode"] == "smoke":
        raise SystemExit("a smoke run carries no verdicts: record a --quick or --full run")
    for p in doc["papers"]:
        if p["status"] in ("ok", "partial"):
            verdicts = [c.get("verdict", "holds" if c["holds"] else "fails") for c in p["claims"]]
            k, n = verdicts.count("holds"), verdicts.count("holds") + verdicts.count("fails")
            other = ", ".join(f"{verdicts.count(v)} {v}" for v in ("skipped", "error") if v in verdicts)
            extra = f"; {other}" if other else ""
            measured[p["name"]] = f"{k}/{n} claims hold{extra} (`--{doc['mode']}`, {p['seconds']:.0f} s)"
        else:
            measured[p["name"]] = f"failed in `--{doc['mode']}`: {p['error'][:60]}"
    MEASURED.write_text(json.dumps(dict(sorted(measured.items())), indent=2) + "\n")


def table() -> str:
    measured = load_measured()
    lines = [
        "| package | paper (ICLR 2024) | one-line claim | status (last measured run) |",
        "|---|---|---|---|",
    ]
    pkgs = ROOT / "packages"
    names = list(PAPERS) + sorted(p.name for p in pkgs.iterdir() if p.is_dir() and p.name not in PAPERS)
    for name in names:
        d = pkgs / name
        rec = paper_record(d) if d.is_dir() else None
        if rec and rec.get("summary") == "(in progress)":  # a scaffold without claims yet
            rec = None
        if rec:
            link = f"[`{name}`](packages/{name})"
            status = measured.get(name, "package, not measured yet")
            title, summary = rec.get("title", PAPERS.get(name, "")), rec.get("summary", "")
            lines.append(f"| {link} | {title} | {summary} | {status} |")
        else:
            lines.append(f"| `{name}` | {PAPERS.get(name, '')} | | planned |")
    return "\n".join(lines)


def refreshed(text: str) -> str:
    if START not in text or END not in text:
        raise SystemExit(f"README.md lacks the markers {START} ... {END}")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{table()}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true", help="exit 1 if the README table is stale")
    ap.add_argument("--report", type=Path, help="a claims.json from `iclr24 reproduce` to record first")
    a = ap.parse_args(argv)
    if a.report:
        record_report(a.report)
    readme = ROOT / "README.md"
    text = readme.read_text()
    new = refreshed(text)
    if a.check:
        if new != text:
            print("README.md's table of papers is stale: run python tools/refresh_readme.py", file=sys.stderr)
            return 1
        return 0
    readme.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
