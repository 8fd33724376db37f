"""Per-seed numbers on calibration seeds, for the power rule of the claims table (``reproduce.CLAIMS``).

Runs the claims' own rows (``iclr24.rdmc.comparison``, the code path of ``rdmc reproduce``) on seeds that are never
evaluated, one thread, and prints one JSON object: per row, the per-seed metrics and CPU seconds
(``time.process_time`` of the sampler and its evaluation). Not part of any recorded run; the numbers it printed
and when are in ``docs/calibration.md``.

    OMP_NUM_THREADS=1 uv run python packages/rdmc/scripts/calibrate.py mixture --seeds 200-215 --n 1000
    OMP_NUM_THREADS=1 uv run python packages/rdmc/scripts/calibrate.py mixture --target gmm10d --rows rdmc-is ula
    OMP_NUM_THREADS=1 uv run python packages/rdmc/scripts/calibrate.py funnel --seeds 200-215
    OMP_NUM_THREADS=1 uv run python packages/rdmc/scripts/calibrate.py logreg --seeds 200-203
    OMP_NUM_THREADS=1 uv run python packages/rdmc/scripts/calibrate.py iid --seeds 200-215 --n 1000
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import torch

from iclr24.paperkit.cli import seed_list


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
    a = p.parse_args(argv)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
