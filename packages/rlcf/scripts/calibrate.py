"""Per-seed numbers on calibration seeds, for the power rule of the claims table (``reproduce.CLAIMS``).

Runs the demo's own code path (``iclr24.rlcf.experiments.run_demo_seed``, what ``rlcf reproduce`` runs) on seeds
that are never evaluated, one thread, the kernels pinned as in a claims run, and prints one JSON line per seed
(stderr: a short progress line) and a summary JSON object at the end: the zero-shot accuracy of both CLIPs, each
method's top-1, and the CPU seconds (``time.process_time``) of the CLIP training and of the test-time adaptation.
Not part of any recorded run; the numbers it printed and when are in ``docs/calibration.md``, and the numbers the
claims use are package data, ``src/iclr24/rlcf/calibration.json``, into which ``--write`` merges a run,
``--measured`` (required with it) replacing the file's provenance line (their help).

    OMP_NUM_THREADS=1 uv run python packages/rlcf/scripts/calibrate.py --mode full --seeds 200-209
    OMP_NUM_THREADS=1 uv run python packages/rlcf/scripts/calibrate.py --mode quick --seeds 200-209
    OMP_NUM_THREADS=1 uv run python packages/rlcf/scripts/calibrate.py --mode full --seeds 200-201 \
        --set reward_width=16 --methods zero-shot rlcf
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from iclr24.paperkit.cli import parse_with_write
from iclr24.paperkit.cli import seed_list

WRITE_WHAT = (
    "this run (where the run's config, after --set, whatever --methods, is a mode's DemoConfig, each seed's top-1 of "
    "the two CLIPs and of every method run, and, when every method ran, cpu_seconds, the mean of train + TTA CPU s "
    "per seed, to 0.1 s; where a --prefixes n makes it a mode's config, n_test = n, the first n digits' top-1, no "
    "CPU seconds: those are the longer run's; --measured replaces the file's 'measured' when anything is written; "
    "left out, said on stderr: seeds the file does not hold, 200-209, and runs of any other config)"
)


def _value(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _zero_shot_hits(model, data, n: int) -> list[int]:
    import torch

    from iclr24.rlcf.data import DIGIT_NAMES
    from iclr24.rlcf.data import DIGIT_TEMPLATE
    from iclr24.rlcf.data import class_prompts
    from iclr24.rlcf.experiments import toy_tokenizer
    from iclr24.rlcf.model import class_logits
    from iclr24.rlcf.model import encode_class_prompts

    with torch.no_grad():
        text = encode_class_prompts(model, toy_tokenizer(class_prompts(DIGIT_NAMES, DIGIT_TEMPLATE)))
        pred = class_logits(model, data.test_x[:n], text).argmax(1)
    return [int(v) for v in (pred == data.test_y[:n])]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--mode", choices=("quick", "full"), default="full", help="start from this mode's DemoConfig"
    )
    p.add_argument("--seeds", type=seed_list, default=seed_list("200-209"))
    p.add_argument("--methods", nargs="*", default=None, help="methods (default: the mode's)")
    p.add_argument("--set", nargs="*", default=(), metavar="FIELD=VALUE", help="override DemoConfig fields")
    p.add_argument(
        "--prefixes",
        type=lambda t: [int(x) for x in t.split(",")],
        default=None,
        help="also report every accuracy on the first n test digits, for each n (the digits of one run: "
        "episodic adaptation makes the first n digits' results those of a run with n_test = n)",
    )
    a = parse_with_write(p, argv, what=WRITE_WHAT)  # a usage error exits before the process is pinned
    from iclr24.paperkit.threads import pin_process_dispatch
    from iclr24.paperkit.threads import pin_process_threads

    pin_process_dispatch()
    pin_process_threads(1)
    import dataclasses

    import torch

    from iclr24.rlcf import reproduce
    from iclr24.rlcf.experiments import run_demo_seed
    from iclr24.rlcf.experiments import train_digit_clips

    torch.set_num_threads(1)
    cfg = reproduce.DEMO[a.mode]
    over = {k: _value(v) for k, v in (s.split("=", 1) for s in a.set)}
    if a.methods:
        over["methods"] = tuple(a.methods)
    cfg = dataclasses.replace(cfg, **over)
    rows = []
    t_all = time.process_time()
    for s in a.seeds:
        t0 = time.process_time()
        train_digit_clips(cfg, s)
        t1 = time.process_time()
        r = run_demo_seed(cfg, s, hits=a.prefixes is not None)
        t2 = time.process_time()
        row = {
            "seed": s,
            "policy_zero_shot": round(r["policy_zero_shot"], 2),
            "reward_zero_shot": round(r["reward_zero_shot"], 2),
            "accuracy": {m: round(v["accuracy"], 2) for m, v in r["methods"].items()},
            "train_cpu_s": round(t1 - t0, 2),
            "tta_cpu_s": round(t2 - t1, 2),
            "method_wall_s": {m: round(v["seconds"], 2) for m, v in r["methods"].items()},
            "shared_wall_s": round(next(iter(r["methods"].values()))["shared_seconds"], 2),
        }
        if a.prefixes:
            policy, reward, data = train_digit_clips(cfg, s)
            zs = {"policy_zero_shot": _zero_shot_hits(policy, data, cfg.n_test),
                  "reward_zero_shot": _zero_shot_hits(reward, data, cfg.n_test)}  # fmt: skip
            hits = {**zs, **{m: v["hits"] for m, v in r["methods"].items()}}
            row["prefix"] = {
                n: {m: round(100.0 * sum(h[:n]) / n, 2) for m, h in hits.items()} for n in a.prefixes
            }
        rows.append(row)
        print(json.dumps(row), flush=True)
        acc = row["accuracy"]
        print(f"seed {s}: " + " ".join(f"{m} {v:.1f}" for m, v in acc.items())
              + f" | reward zs {row['reward_zero_shot']:.1f} | {t2 - t0:.1f} CPU s", file=sys.stderr, flush=True)  # fmt: skip
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print(json.dumps({"config": dataclasses.asdict(cfg), "seeds": a.seeds,
                      "cpu_seconds_total": round(time.process_time() - t_all, 1), "load_at_end": load}))  # fmt: skip
    if a.write:
        write(cfg, rows, measured=a.measured)
    return 0


def merge(table: dict, cfg, rows: list[dict], demo: dict, measured: str, warn=None) -> dict:
    """``table`` (calibration.json's content) with ``rows`` (the per-seed lines :func:`main` prints for ``cfg``)
    merged in for every mode of ``demo`` (``reproduce.DEMO``) whose config the run is, or a ``prefix`` of it is
    (changed in place, and returned), and ``measured`` as the file's provenance line when anything of it is;
    everything else kept. ``warn`` is called with what is left out."""
    import dataclasses

    from iclr24.paperkit.power import merge_by_seed

    warn = warn or (lambda msg: None)
    matched = wrote = False
    for mode in ("full", "quick"):
        want = demo[mode]
        same = dataclasses.replace(cfg, methods=want.methods) == want
        prefix = [
            n
            for n in rows[0].get("prefix", {})
            if dataclasses.replace(cfg, n_test=int(n), methods=want.methods) == want
        ]
        if not same and not prefix:
            continue
        matched, cal = True, table[mode]
        got = [{"policy_zero_shot": row["policy_zero_shot"], "reward_zero_shot": row["reward_zero_shot"],
                **row["accuracy"]} if same else row["prefix"][prefix[0]] for row in rows]  # fmt: skip
        keys = [key for key in got[0] if key in cal]
        _, merged, left_out = merge_by_seed(
            cal["seeds"], {key: cal[key] for key in keys}, [row["seed"] for row in rows],
            {key: [g[key] for g in got] for key in keys}, add=False,
        )  # fmt: skip
        cal.update(merged)
        wrote |= len(left_out) < len(rows)
        for seed in left_out:
            warn(f"{mode}: seed {seed} left out (the file holds seeds {cal['seeds']})")
        if same and set(cfg.methods) == set(want.methods):
            cal["cpu_seconds"] = round(sum(r["train_cpu_s"] + r["tta_cpu_s"] for r in rows) / len(rows), 1)
            wrote = True
    if not matched:
        warn("nothing written: the run's config is no mode's (nor is any --prefixes n of it)")
    if wrote:  # the file's provenance becomes this run's
        table["measured"] = measured
    return table


def write(cfg, rows: list[dict], path=None, warn=None, *, measured: str):
    """Merge a run into calibration.json (``path``; default: the package's file) through
    ``update_calibration_table``, ``measured`` the file's new provenance line; returns the path written."""
    from iclr24.paperkit.power import calibration_path
    from iclr24.paperkit.power import update_calibration_table
    from iclr24.rlcf import reproduce

    if not measured.strip():
        raise ValueError("write needs measured, the file's new provenance line")
    warn = warn or (lambda msg: print(f"--write: {msg}", file=sys.stderr))
    return update_calibration_table(
        path or calibration_path("iclr24.rlcf"),
        lambda table: merge(table, cfg, rows, reproduce.DEMO, measured, warn),
    )


if __name__ == "__main__":
    sys.exit(main())
