"""The ``rlcf`` command: a thin shell over the API (the package is scaffolded; its method is not built yet)."""

from __future__ import annotations

from iclr24.paperkit.cli import App

from .reproduce import PAPER

app = App("rlcf", PAPER.title)
app.add_reproduce(lambda: PAPER, device=False)
main = app.main
