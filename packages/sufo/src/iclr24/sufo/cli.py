"""The ``sufo`` command: a thin shell over the API."""

from __future__ import annotations

import argparse

from iclr24.paperkit import bench_table
from iclr24.paperkit.cli import App

from . import bench
from .reproduce import PAPER

app = App("sufo", PAPER.title)
app.add_reproduce(lambda: PAPER)


@app.command("bench", "Benchmark against the baseline (medians of repeats, ratios).")
def _bench(args: argparse.Namespace) -> int:
    print(bench_table(bench.run_benchmarks(quick=args.mode != "full")))
    return 0


def main(argv=None) -> int:
    return app.main(argv)
