"""paperkit's core works without torch, scikit-learn, scikit-image, scipy, Pillow and matplotlib (its extras)."""

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import sys

    BLOCKED = ("torch", "sklearn", "skimage", "scipy", "PIL", "matplotlib")

    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"{name} is blocked in this test")

    sys.meta_path.insert(0, Block())

    import iclr24.paperkit as pk
    from iclr24.paperkit import ClaimSet, Paper, benchmark
    from iclr24.paperkit.cli import App
    from iclr24.paperkit.runner.report import run_paper_folder
    from iclr24.paperkit.runner import umbrella, testing  # noqa: F401
    from iclr24.paperkit.data import folder as datadir

    def run(cfg):
        cs = ClaimSet("light", cfg)
        with cs.timed("numbers"):
            cs.add(claim="c", metric="m", ours=2.0, baseline_name="b", baseline=1.0, rule="ours > baseline")
        cs.fact("f", value=1)
        return cs

    paper = Paper("light", "Light", "no torch", run=run)
    app = App("light", "A light tool.")
    app.add_reproduce(lambda: paper)
    assert app.main(["reproduce", "--smoke", "--out", sys.argv[1], "--quiet"]) == 0
    r = benchmark(lambda: sum(range(100)), baseline=lambda: sum(range(1000)), repeats=3, threads=1)
    assert r.speedup is not None
    assert not any(m.split(".")[0] in BLOCKED for m in sys.modules), sorted(sys.modules)
    print("light ok")
    """
)


def test_core_imports_and_cli_without_heavy_extras(tmp_path):
    p = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "out")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "light ok" in p.stdout
    assert (tmp_path / "out" / "claims.json").exists()
