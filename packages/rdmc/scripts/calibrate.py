"""Per-seed numbers on calibration seeds, for the power rule of the claims table (``reproduce.CLAIMS``).

Runs the claims' own rows (``iclr24.rdmc.comparison``, the code path of ``rdmc reproduce``) on seeds that are never
evaluated, one thread, and prints one JSON object: per row, the per-seed metrics and CPU seconds
(``time.process_time`` of the sampler and its evaluation). Not part of any recorded run; the numbers it printed
and when are in ``docs/calibration.md``. With ``--write`` it also merges its per-seed metrics into the package's
``calibration.json`` (the table ``reproduce.py`` reads, see ``--help``).

    OMP_NUM_THREADS=1 uv run python packages/rdmc/scripts/calibrate.py mixture --seeds 200-215 --n 1000
    OMP_NUM_THREADS=1 uv run python packages/rdmc/scripts/calibrate.py mixture --target gmm10d --rows rdmc-is ula
    OMP_NUM_THREADS=1 uv run python packages/rdmc/scripts/calibrate.py funnel --seeds 200-215
    OMP_NUM_THREADS=1 uv run python packages/rdmc/scripts/calibrate.py logreg --seeds 200-203
    OMP_NUM_THREADS=1 uv run python packages/rdmc/scripts/calibrate.py iid --seeds 200-215 --n 1000
    OMP_NUM_THREADS=1 uv run python packages/rdmc/scripts/calibrate.py funnel --seeds 216-218 --write \
        --measured "2026-12-08, commit abc1234, 1 thread, scripts/calibrate.py, load 1-2 on 2 cores"
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from iclr24.paperkit.cli import parse_with_write
from iclr24.paperkit.cli import seed_list
from iclr24.paperkit.power import CALIBRATION_FILE
from iclr24.paperkit.power import calibration_path
from iclr24.paperkit.power import merge_by_seed
from iclr24.paperkit.power import update_calibration_table

WRITE_WHAT = (
    "this run's per-seed metrics (for each row run, each seed run replaces or adds that seed's values of the "
    "metrics the file's row holds, seeds kept in order, other seeds, rows and sections kept; only the config of "
    "quick and full maps onto the file: --n 1000 --n-ref 2000 --budget 4000, --target gmm2d -> '2d', gmm10d -> "
    "'10d', funnel, logreg; and only the rows it holds: a row it has not is skipped, with a line on stderr; "
    "--measured replaces 'measured_hybrid' when the run writes seeds 216-247 of 2d's 'rdmc-is+ula hybrid' or "
    "'ula', 'measured' when it writes any other seed or row, both when both; not written: the rows' cpu_seconds, "
    "the file's are a recorded run's costs: the idle quick record's per-seed mean, or this script's measurement x "
    "1.64, see the file's note; and 'iid', not in the file)"
)
# the rows and seeds 'measured_hybrid' describes (the hybrid's second calibration); 'measured' all the others
HYBRID_SECTION, HYBRID_ROWS, HYBRID_SEEDS = "2d", ("rdmc-is+ula hybrid", "ula"), range(216, 248)
# what --target the file's sections of the mixture hold
SECTIONS = {"gmm2d": "2d", "gmm10d": "10d"}


def merge_calibration(table: dict, out: dict, measured: str) -> list[str]:
    """Merge the per-seed metrics of ``out`` (this script's JSON of a mixture, funnel or logreg run) into ``table``
    (calibration.json's object), in place, seed by seed, and set the provenance strings of what it merged to
    ``measured`` ('measured_hybrid' for seeds 216-247 of 2d's hybrid and ULA rows, 'measured' for any other);
    returns the rows of ``out`` the file has not (not merged, the strings kept when none is). Raises
    ``ValueError`` for a run whose numbers have no section in the file."""
    if out["what"] == "mixture":
        if out["target"] not in SECTIONS:
            raise ValueError(f"target {out['target']!r} has no section in {CALIBRATION_FILE}")
        section = SECTIONS[out["target"]]
    elif out["what"] in ("funnel", "logreg"):
        section = out["what"]
    else:
        raise ValueError(f"{out['what']!r} numbers are not in {CALIBRATION_FILE}")
    rows = table[section]
    skipped = [name for name in out["rows"] if name not in rows]
    strings = set()
    for name, res in out["rows"].items():
        if name in skipped:
            continue
        row = rows[name]
        keys = [k for k in row if k not in ("seeds", "cpu_seconds")]
        row["seeds"], cols, _ = merge_by_seed(
            row["seeds"], {k: row[k] for k in keys}, out["seeds"], {k: res[k] for k in keys}
        )
        row.update(cols)
        hybrid = section == HYBRID_SECTION and name in HYBRID_ROWS
        strings |= {
            "measured_hybrid" if hybrid and seed in HYBRID_SEEDS else "measured" for seed in out["seeds"]
        }
    for key in strings:
        table[key] = measured
    return skipped


def write_calibration(out: dict, path: str | Path, measured: str) -> Path:
    """Merge ``out`` into the calibration file at ``path`` (:func:`merge_calibration`, ``measured`` the new
    provenance line), atomically; says on stderr which rows it did not merge."""
    if not measured.strip():
        raise ValueError("write_calibration needs measured, the file's new provenance line")

    def merge(table: dict) -> None:
        for name in merge_calibration(table, out, measured):
            print(f"not written: row {name!r} is not in {path}", file=sys.stderr)

    return update_calibration_table(path, merge)


def main(argv: list[str] | None = None) -> int:
    from iclr24.rdmc.comparison import ComparisonConfig
    from iclr24.rdmc.comparison import FunnelConfig
    from iclr24.rdmc.comparison import LogRegConfig
    from iclr24.rdmc.comparison import funnel_experiment
    from iclr24.rdmc.comparison import logreg_experiment
    from iclr24.rdmc.comparison import mixture_experiment
    from iclr24.rdmc.data import get_target
    from iclr24.rdmc.metrics import mode_tv

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=("mixture", "funnel", "logreg", "iid"))
    p.add_argument("--seeds", type=seed_list, default=seed_list("200-215"))
    p.add_argument("--target", default="gmm2d")
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--n-ref", type=int, default=2000)
    p.add_argument("--budget", type=int, default=4000)
    p.add_argument("--rows", nargs="*", default=None, help="row names (default: every row of the experiment)")
    p.add_argument("--calibration", type=Path, default=None, help="the file --write merges into")
    a = parse_with_write(p, argv, what=WRITE_WHAT)
    if a.write:
        from iclr24.rdmc.reproduce import FULL

        if a.what == "iid":
            p.error(f"--write: the i.i.d. floor is not in {CALIBRATION_FILE}")
        if a.what == "mixture" and (a.target not in SECTIONS or (a.n, a.n_ref, a.budget) != (
                FULL.n, FULL.n_ref, FULL.budget)):  # fmt: skip
            p.error(
                f"--write: {CALIBRATION_FILE} holds the quick/full config (--n {FULL.n} --n-ref {FULL.n_ref} "
                f"--budget {FULL.budget}, --target {' or '.join(SECTIONS)})"
            )
    torch.set_num_threads(1)
    t0 = time.process_time()
    cfg = ComparisonConfig(
        n=a.n, n_ref=a.n_ref, budget=a.budget, funnel=FunnelConfig(), logreg=LogRegConfig(),
        high_dim_target="gmm10d",
    )  # fmt: skip
    if a.what == "iid":
        target = get_target(a.target)
        tv = []
        for s in a.seeds:
            x = target.sample(a.n, generator=torch.Generator().manual_seed(50_000 + s))
            tv.append(mode_tv(x, target.means, target.weights))
        out = {"what": "iid", "n": a.n, "seeds": a.seeds, "mode_tv": tv}
    else:
        if a.what == "mixture":
            exp = mixture_experiment(get_target(a.target), cfg, a.budget, label=a.target)
        elif a.what == "funnel":
            exp = funnel_experiment(cfg)
        else:
            exp = logreg_experiment(cfg)
        rows = a.rows or [r.name for r in exp.rows]
        res = {}
        for name in rows:
            recs = exp.get(name, a.seeds)
            res[name] = {k: [r[k] for r in recs] for k in recs[0] if k not in ("seed", "sampler_seed")}
            print(name, {k: [round(v, 4) for v in res[name][k]] for k in res[name] if k in (
                "mode_tv", "mmd2", "w2_v", "mean_err", "cpu_seconds")}, file=sys.stderr, flush=True)  # fmt: skip
        out = {
            "what": a.what, "target": a.target, "n": exp.n, "budget": exp.budget, "seeds": a.seeds,
            "settings": exp.settings(), "rows": res,
        }  # fmt: skip
    out["cpu_seconds_total"] = time.process_time() - t0
    out["load_at_end"] = open("/proc/loadavg").read().split()[0]
    print(json.dumps(out))
    if a.write:
        path = write_calibration(out, a.calibration or calibration_path("iclr24.rdmc"), a.measured)
        print(f"merged into {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
