#!/usr/bin/env python3
"""Refresh the generated tables: each package README's reproduction tables and the root README's table of papers.

Each package's recorded runs (``packages/NAME/docs/claims-quick.json`` / ``claims-full.json``, written by
``tools/record_run.py``) generate its README's tables between ``<!-- claims-quick:start -->`` /
``<!-- claims-quick:end -->`` (and ``claims-full``), and the status column of the root README. ``--check`` fails
when any generated table differs from what its recorded file gives (a test runs it).

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


VERDICT_CELL = {
    "holds": "yes",
    "fails": "**no**",
    "inconclusive": "inconclusive",
    "undecidable": "undecidable at this budget",
    "skipped": "skipped",
    "error": "**error**",
    "smoke": "smoke",
}


def _num(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool) or isinstance(v, str):
        return str(v)
    a = abs(v)
    if isinstance(v, int):
        return f"{v:,}"
    if a != 0 and (a < 1e-3 or a >= 1e5):
        return f"{v:.3e}"
    return f"{v:.4g}"


def _cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def load_recorded(name: str, mode: str) -> dict | None:
    path = ROOT / "packages" / name / "docs" / f"claims-{mode}.json"
    return json.loads(path.read_text()) if path.exists() else None


def _ours(c: dict) -> str:
    p = c.get("paired")
    if not p:
        return _num(c["ours"])
    per = ", ".join(_num(x) for x in p["ours"])
    return f"{_num(c['ours'])} (mean of {p['n']} seeds: {per})"


def _baseline(c: dict) -> str:
    if c.get("baseline") is None and not c.get("baseline_name"):
        return "-"
    p = c.get("paired")
    base = _num(c.get("baseline"))
    if p:
        base += f" (seeds: {', '.join(_num(x) for x in p['baseline'])})"
    return f"{base} ({c.get('baseline_name', '')})"


def _verdict(c: dict) -> str:
    v = VERDICT_CELL.get(c["verdict"], c["verdict"])
    p = c.get("paired")
    if p and p.get("test") == "sign" and c["verdict"] in ("holds", "fails", "inconclusive"):
        wins, losses = p["wins"], p["losses"]
        side, pv = ("for", p["p_holds"]) if wins >= losses else ("against", p["p_fails"])
        v += (f" (exact sign test: {wins} seeds for, {losses} against, {p['ties']} ties; one-sided p {side} = "
              f"{_num(pv)})")  # fmt: skip
    elif p and c["verdict"] in ("holds", "fails", "inconclusive"):
        lo, hi = p.get("low"), p.get("high")
        span = f"[{_num(lo)}, {_num(hi)}]" if lo is not None else "no interval (one seed)"
        what = "log-ratio slack" if p["form"] == "log_ratio" else "slack"
        v += f" (95 % interval of the per-seed {what}: {span})"
    msg = c.get("message")
    if msg:  # a message that opens with the verdict's words (an undecidable claim's plan) is shown alone
        v = msg if msg.startswith(v) else f"{v}: {msg}"
    return v


def budget_of(name: str, mode: str) -> float:
    """The CPU-second cap of a paper's whole run in ``mode``: ``Paper(budgets=...)`` in its reproduce.py (read
    without importing) over paperkit's defaults."""
    from iclr24.paperkit.claims import BUDGETS

    caps = dict(BUDGETS)
    src = ROOT / "packages" / name / "src" / "iclr24" / name.replace("-", "_") / "reproduce.py"
    if src.exists():
        for node in ast.walk(ast.parse(src.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Paper":
                kw = {k.arg: k.value for k in node.keywords}
                if "budgets" in kw:
                    caps.update(ast.literal_eval(kw["budgets"]))
    return float(caps[mode])


def _claim_rows(claims: list[dict], kinds: bool) -> list[str]:
    head = "| kind | claim | metric | paper | ours | baseline | rule | holds |" if kinds else (
        "| claim | metric | paper | ours | baseline | rule | holds |"
    )  # fmt: skip
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for c in claims:
        metric = c.get("metric", "") + (" (timing)" if c.get("timing") else "")
        rule = f"`{c['rule']}`" if c.get("rule") else "-"
        cells = [c["claim"], metric, _num(c.get("paper_value")), _ours(c), _baseline(c), rule, _verdict(c)]
        if kinds:
            cells.insert(0, f"**{c['kind']}**" if c.get("kind") == "headline" else c.get("kind") or "-")
        lines.append("| " + " | ".join(_cell(x) for x in cells) + " |")
    return lines


def package_table(doc: dict) -> str:
    """The reproduction table a recorded run generates: the summary line (headline verdicts first), the claims
    (headline, supporting), the checks apart, the facts, then how it was recorded."""
    from iclr24.paperkit.summary import by_kind
    from iclr24.paperkit.summary import summary_text

    rec = doc["record"]
    m = doc.get("machine", {})
    kinds = any(c.get("kind") for c in rec["claims"])
    main_claims = by_kind([c for c in rec["claims"] if c.get("kind") != "check"])
    checks = [c for c in rec["claims"] if c.get("kind") == "check"]
    lines = []
    if kinds:
        lines += [f"**{summary_text(rec['claims'])}**", ""]
    lines += _claim_rows(main_claims, kinds)
    if checks:
        lines += [
            "",
            "Checks (pipeline checks on planted data, controls against weak models; not counted as reproduced):",
            "",
        ]
        lines += _claim_rows(checks, kinds)
    facts = [f for f in rec.get("facts", []) if not f.get("timing")]
    if facts:
        lines += ["", "Facts (hold by construction; not counted as reproduced):", ""]
        lines += ["| fact | value | paper | description |", "|---|---|---|---|"]
        for f in facts:
            cells = [f["name"], _num(f["value"]), _num(f.get("paper_value")), f.get("description") or "-"]
            lines.append("| " + " | ".join(_cell(x) for x in cells) + " |")
    disp = rec.get("dispatch") or {}
    kernels = (
        f", kernels pinned to {disp.get('aten')}" if disp.get("pinned") else
        f", native kernels ({disp.get('aten')})" if disp else ""
    )  # fmt: skip
    lines += [
        "",
        f"Generated from `docs/claims-{doc['mode']}.json`, recorded by `python tools/record_run.py {doc['paper']} "
        f"--{doc['mode']}` ({doc['command']}) at commit `{doc['commit']}` on {doc['date']}: "
        f"{doc['wall_seconds']:.0f} s wall, {doc['cpu_seconds']:.0f} s CPU (cap {budget_of(doc['paper'], doc['mode']):.0f}), "
        f"load {doc['load']:.2f} at the start, "
        f"{rec.get('threads') or 1} thread(s){kernels}, {m.get('cpu_model', 'unknown CPU')}, torch {m.get('torch') or '-'}.",
    ]
    return "\n".join(lines)


PS_START, PS_END = "<!-- paper-scale:start -->", "<!-- paper-scale:end -->"
DEVICES = ("cpu", "cuda")


def load_paper_scale(device: str) -> dict | None:
    path = ROOT / "docs" / f"paper-scale-{device}.json"
    return json.loads(path.read_text()) if path.exists() else None


def _replace_block(text: str, start: str, end: str, body: str, where: str) -> str:
    if start not in text:
        return text
    if end not in text:
        raise SystemExit(f"{where} has {start} without {end}")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{body}\n{end}{tail}"


def _ps_source(doc: dict, device: str, rows: list[dict]) -> str:
    m = doc.get("machine", {})
    dates = sorted({r["date"][:10] for r in rows})
    loads = sorted({r["load"] for r in rows if r.get("load") is not None})
    when = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
    load = (
        "not recorded"
        if not loads
        else f"{loads[0]:.2f}"
        if len(loads) == 1
        else f"{loads[0]:.2f}-{loads[-1]:.2f}"
    )
    return (
        f"Generated from `docs/paper-scale-{device}.json`, recorded by `python tools/record_paper_scale.py"
        f"{'' if device == 'cpu' else ' --device ' + device}` (`iclr24 bench --paper-scale --device {device}`, each "
        f"paper in a fresh process, 1 thread) on {when}, load {load} at the start, "
        + (f"{m['gpu']}, " if m.get("gpu") else "")
        + f"{m.get('cpu_model', 'unknown CPU')} ({m.get('cpu_count', '?')} cores), torch {m.get('torch') or '-'}."
    )


def paper_scale_block(name: str | None) -> str:
    """The root README's paper-scale tables (name None) or one package's rows, from the recorded files."""
    from iclr24.paperkit.scale import paper_scale_markdown

    parts = []
    for device in DEVICES:
        doc = load_paper_scale(device)
        if doc is None:
            if device == "cpu":
                cmd = "python tools/record_paper_scale.py" + (f" {name}" if name else "")
                parts.append(
                    f"*Not recorded yet on the CPU: `{cmd}`, then `python tools/refresh_readme.py`.*"
                )
            continue
        rows = [r for n, r in doc["rows"].items() if name is None or n == name]
        if not rows:
            if device == "cpu":
                parts.append(f"*Not recorded yet on the CPU: `python tools/record_paper_scale.py {name}`.*")
            continue
        text = f"**{device.upper()}**\n\n" + paper_scale_markdown(rows)
        if name is not None and rows[0].get("notes"):
            text += "\n" + "\n".join(f"- {_cell(n)}" for n in rows[0]["notes"]) + "\n"
        parts.append(text + "\n" + _ps_source(doc, device, rows))
    return "\n\n".join(parts)


def refreshed_package(name: str, text: str) -> str:
    if PS_START in text:
        text = _replace_block(text, PS_START, PS_END, paper_scale_block(name), f"packages/{name}/README.md")
    for mode in ("quick", "full"):
        start, end = f"<!-- claims-{mode}:start -->", f"<!-- claims-{mode}:end -->"
        doc = load_recorded(name, mode)
        if start not in text:
            continue
        if end not in text:
            raise SystemExit(f"packages/{name}/README.md has {start} without {end}")
        head, rest = text.split(start, 1)
        _, tail = rest.split(end, 1)
        body = package_table(doc) if doc is not None else not_recorded(name, mode)
        text = f"{head}{start}\n{body}\n{end}{tail}"
    return text


def not_recorded(name: str, mode: str) -> str:
    return (
        f"*Not recorded yet for this version: `python tools/record_run.py {name} --{mode}`, then "
        "`python tools/refresh_readme.py`.*"
    )


def recorded_status(name: str) -> str | None:
    parts = []
    for mode in ("quick", "full"):
        doc = load_recorded(name, mode)
        if doc is None:
            continue
        from iclr24.paperkit.summary import verdict_summary

        claims = doc["record"]["claims"]
        s = verdict_summary(claims)
        n = s["counted"]
        k = s["held"]
        total = sum(n[v] for v in ("holds", "fails", "inconclusive", "undecidable"))
        other = ", ".join(f"{n[v]} {v}" for v in ("inconclusive", "undecidable", "skipped", "error") if n[v])
        extra = f"; {other}" if other else ""
        head = ""
        if s["headline"]:
            head = (
                "headline " + ", ".join("**" + v + "**" if v == "holds" else v for v in s["headline"]) + "; "
            )
        checks = f"; checks {s['checks_held']}/{s['checks_decided']}" if s["checks_decided"] else ""
        cap = budget_of(name, mode)
        parts.append(
            f"{head}{k}/{total} claims hold{extra}{checks} (`--{mode}`, recorded {doc['date'][:10]}, "
            f"{doc['cpu_seconds']:.0f} of {cap:.0f} CPU s)"
        )
    return "; ".join(parts) or None


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
            status = recorded_status(name)
            if status is None:
                status = measured.get(name, "package, not measured yet") + " (not yet recorded)"
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
    text = f"{head}{START}\n{table()}\n{END}{tail}"
    return _replace_block(text, PS_START, PS_END, paper_scale_block(None), "README.md")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true", help="exit 1 if the README table is stale")
    ap.add_argument("--report", type=Path, help="a claims.json from `iclr24 reproduce` to record first")
    a = ap.parse_args(argv)
    if a.report:
        record_report(a.report)
    stale = []
    targets = [(ROOT / "README.md", refreshed)]
    for d in sorted((ROOT / "packages").iterdir()):
        if (d / "README.md").exists():
            targets.append((d / "README.md", lambda t, n=d.name: refreshed_package(n, t)))
    for path, fn in targets:
        text = path.read_text()
        new = fn(text)
        if new != text:
            stale.append(path.relative_to(ROOT))
            if not a.check:
                path.write_text(new)
    if a.check and stale:
        names = ", ".join(str(p) for p in stale)
        print(f"generated tables are stale in {names}: run python tools/refresh_readme.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
