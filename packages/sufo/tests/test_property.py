"""Property test of the public API (``iclr24.sufo.__all__``): seeded wrong shapes, dtypes, NaN/inf, empty
inputs, bad sizes and wrong file kinds either work or raise InputError; nothing else escapes."""

import numpy as np
import pytest

import iclr24.sufo as sufo
from iclr24.paperkit.runner.testing import Prober
from iclr24.paperkit.runner.testing import probe_arrays
from iclr24.paperkit.runner.testing import probe_files
from iclr24.paperkit.runner.testing import probe_floats
from iclr24.paperkit.runner.testing import probe_sizes

SKIP = {
    "plot_dynamics": "draws a Dynamics this package computed (tested in test_dynamics_report)",
    "feature_dynamics": "fine-tunes for epochs; its inputs are checked by fine_tune and extract_features",
    "Dynamics": "a result record",
    "FineTuneResult": "a result record",
    "ProbeResult": "a result record",
    "OutlierReport": "a result record",
}


def test_public_api_refuses_bad_input(tmp_path):
    p = Prober()
    rng = np.random.default_rng(0)
    f = rng.standard_normal((12, 6))
    y = np.arange(12) % 3
    feats = probe_arrays((12, 6))
    labels = probe_arrays((12,), dtype="int64")
    layers = probe_arrays((3, 12, 6))
    # the feature analyses
    for fn in (sufo.explained_variance, sufo.constant_features, sufo.rdm):
        p.sweep(fn, 0, feats)
    p.sweep(sufo.explained_variance, "k", probe_sizes(), f)
    for fn in (sufo.low_rank_approx, sufo.rank_1_approx):
        p.sweep(fn, 0, feats, 2)
        p.sweep(fn, 1, probe_sizes(), f)
    p.sweep(sufo.label_separation, 0, feats, y)
    p.sweep(sufo.label_separation, 1, labels, f)
    p.sweep(sufo.label_separation, "n_components", probe_sizes(), f, y)
    for fn in (sufo.linear_cka, sufo.rsa):
        p.sweep(fn, 0, feats, f)
        p.sweep(fn, 1, feats, f)
    p.sweep(sufo.rdm, "metric", [("unknown", "nope")], f)
    for fn in (sufo.layerwise_cka, sufo.layerwise_rsa):
        p.sweep(fn, 0, layers, np.stack([f] * 3))
    p.sweep(sufo.layerwise_probe, 0, layers, y, np.stack([f] * 3), y)
    p.sweep(sufo.layerwise_probe, 1, labels, np.stack([f] * 3), np.stack([f] * 3), y)
    p.sweep(sufo.logistic_probe, 0, feats, y, f, y)
    p.sweep(sufo.logistic_probe, 1, labels, f, f, y)
    p.sweep(sufo.logistic_probe, "c", probe_floats(), f, y, f, y)
    p.sweep(sufo.outliers_pc12, 0, feats, 3)
    p.sweep(sufo.outliers_pc12, 1, probe_sizes(), f)
    p.sweep(sufo.outliers_pc12, "gap_factor", probe_floats(), f, 3)
    p.sweep(sufo.common_outliers, 0, [("empty", []), ("not reports", [1, 2])])
    p.sweep(sufo.pc_removal_curve, 0, feats, lambda x: np.zeros(len(x), dtype=int), y, [0, 1])
    p.sweep(sufo.pc_removal_curve, 3, [("negative", [-1]), ("huge", [10**20]), ("nan", [float("nan")])], f,
            lambda x: np.zeros(len(x), dtype=int), y)  # fmt: skip
    p.sweep(sufo.balanced_sampler, 0, labels)
    p.sweep(sufo.balanced_sampler, "num_samples", probe_sizes(), y)
    # datasets
    p.sweep(sufo.synthetic_reports, 0, probe_sizes())
    p.sweep(sufo.synthetic_reports, "outlier_fraction", probe_floats(), 30)
    p.sweep(
        sufo.synthetic_reports, "proportions", [("negative", (-1.0, 1.0, 1.0)), ("nan", (np.nan, 1, 1))], 30
    )
    p.sweep(sufo.icd10cm_chapters, 0, [s for s in probe_sizes() if s[1] != 0])  # 0 is refused before loading
    ds = sufo.synthetic_reports(30, seed=0)
    p.sweep(sufo.split, "test_fraction", probe_floats(), ds)
    p.sweep(sufo.split, 0, [("not a dataset", [1, 2, 3])])
    p.sweep(sufo.TextDataset, 1, labels, ["a"] * 12, ["x", "y", "z"], np.zeros(12, dtype=bool))
    for suffix in (".csv", ".jsonl", ".txt"):
        p.sweep(sufo.load_labelled, 0, probe_files(tmp_path, suffix))
    # configs
    for cfg in (sufo.FineTuneConfig, sufo.ProbeConfig):
        for field in ("batch_size", "epochs", "seed"):
            p.sweep(cfg, field, probe_sizes())
        for field in ("lr", "warmup_fraction", "weight_decay", "max_grad_norm"):
            p.sweep(cfg, field, probe_floats())
    p.sweep(sufo.FineTuneConfig, "max_length", probe_sizes())
    # the encoder-based functions
    p(sufo.minilm_path)
    p.sweep(sufo.tiny_encoder, 0, probe_sizes())
    p.sweep(sufo.tiny_encoder, "hidden", probe_sizes())
    p.sweep(
        sufo.load_encoder, 0, [*probe_files(tmp_path, ""), ("a file", tmp_path / "probe-files-0" / "text")]
    )
    model, tok = sufo.tiny_encoder(3, seed=0)
    texts = ds.texts[:4]
    p.sweep(
        sufo.extract_features, 2, [("empty", []), ("not strings", [1, 2]), ("a string", "abc")], model, tok
    )
    p.sweep(sufo.extract_features, "batch_size", probe_sizes(), model, tok, texts)
    p.sweep(sufo.extract_features, "max_length", probe_sizes(), model, tok, texts)
    p.sweep(sufo.extract_features, "layers", [("unknown", "some"), ("out of range", [99]), ("empty", [])],
            model, tok, texts)  # fmt: skip
    p.sweep(sufo.extract_features, "pooling", [("unknown", "max")], model, tok, texts)
    p.sweep(sufo.predict, 2, [("empty", []), ("not strings", [1, 2])], model, tok)
    p.sweep(sufo.predict, "batch_size", probe_sizes(), model, tok, texts)
    p.sweep(sufo.freeze_for_probe, 1, probe_sizes(), model)
    p.sweep(sufo.probe_head, 0, [("not a model", object())])
    head = sufo.probe_head(model)
    tr, va = sufo.split(ds, 0.3, seed=0)
    p.sweep(sufo.fine_tune, 2, [("not a dataset", [1, 2])], model, tok, va)
    g = rng.standard_normal((12, 32))
    p.sweep(sufo.frozen_encoder_probe, 1, probe_arrays((12, 32)), head, y, g, y, g, y)
    p.sweep(sufo.frozen_encoder_probe, 2, labels, head, g, g, y, g, y)
    p.sweep(sufo.fine_tune, 2, [*probe_arrays((12, 3)), *probe_sizes(), ("pairs of floats", [("a", 0.5)])],
            model, tok, va)  # fmt: skip
    p.sweep(
        sufo.TextDataset.from_data, 0, [*probe_arrays((12, 3)), ("empty", []), ("triples", [("a", 1, 2)])]
    )
    p.sweep(sufo.is_causal_decoder, 0, [("not a model", object()), ("int", 3)])
    p.sweep(sufo.save_encoder, 2, probe_files(tmp_path, ""), model, tok)
    p.sweep(sufo.save_encoder, 0, [("not a model", object())], tok, tmp_path / "new-model")
    p.check()
    p.assert_covers(sufo, skip=SKIP)


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])
