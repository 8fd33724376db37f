"""Property test of the public API (``iclr24.drum_rules.__all__``): seeded wrong shapes, dtypes, NaN/inf, empty
inputs, bad sizes and wrong file kinds either work or raise InputError; nothing else escapes."""

import numpy as np
import pytest

import iclr24.drum_rules as dr
from iclr24.drum_rules import synthetic
from iclr24.paperkit.runner.testing import Prober
from iclr24.paperkit.runner.testing import probe_arrays
from iclr24.paperkit.runner.testing import probe_files
from iclr24.paperkit.runner.testing import probe_floats
from iclr24.paperkit.runner.testing import probe_sizes

SKIP = {
    "DegenerateBetaWarning": "a warning class",
    "synthetic": "a module (its family() is probed)",
    "Explanation": "a result record (explain() is probed)",
    "FaithfulnessReport": "a result record (check_faithfulness() is probed)",
}


@pytest.fixture(scope="module")
def trained():
    data = synthetic.family(3, seed=0)
    model = dr.DRUM(data.kg.n_relations, rank=2, steps=2, embed_dim=8, hidden_dim=8, seed=0)
    dr.train(model, data, dr.TrainConfig(epochs=1, min_epochs=1, batch_size=64))
    return model, data


def test_public_api_refuses_bad_input(tmp_path, trained):
    model, data = trained
    kg = data.kg
    p = Prober()
    # graphs and datasets
    facts = kg.facts[:6]
    p.sweep(dr.KG, 2, probe_arrays(facts.shape, dtype="int64"), kg.entities, kg.relations)
    p.sweep(dr.KG, 2, [("out of range", np.array([[0, 0, 10**6]])), ("negative", np.array([[-1, 0, 0]]))],
            kg.entities, kg.relations)  # fmt: skip
    p.sweep(dr.KG, 0, [("empty", ()), ("dupes", ("a", "a")), ("not names", (1, 2))], kg.relations, facts)
    p.sweep(dr.KG.from_triples, 0, [("pairs", [("a", "b")]), ("not strings", [(1, 2, 3)]), ("str", "abc")])
    p.sweep(kg.with_facts, 0, probe_arrays(facts.shape, dtype="int64"))
    p.sweep(dr.KGData, 1, probe_arrays((4, 3), dtype="int64"), kg, data.valid, data.test)
    p.sweep(synthetic.family, 0, probe_sizes())
    p.sweep(dr.perturbed_datasets, "n_subsample", probe_sizes(), kg)
    p.sweep(dr.perturbed_datasets, "drop", probe_floats(), kg)
    p.sweep(
        dr.walk_counts, 1, [("empty", ()), ("unknown op", (10**6,)), ("negative", (-5,)), ("str", "ab")], kg
    )
    # the model
    for field in ("n_relations", "rank", "steps", "embed_dim", "hidden_dim"):
        args = {"n_relations": 3, field: None}
        p.sweep(dr.DRUM, field, probe_sizes(), **{k: v for k, v in args.items() if k != field})
    p.sweep(dr.DRUM, "aggregation", [("unknown", "mean")], 3)
    p.sweep(dr.DRUM, "thr", probe_floats(), 3)
    for field in ("epochs", "min_epochs", "batch_size", "seed"):
        p.sweep(dr.TrainConfig, field, probe_sizes())
    p.sweep(dr.TrainConfig, "lr", probe_floats())
    p.sweep(dr.TrainConfig, "loss", [("unknown", "hinge")])
    p.sweep(dr.train, 1, [("not data", kg), ("None", None)], model, dr.TrainConfig(epochs=1, min_epochs=1))
    p.sweep(dr.link_prediction, "split", [("unknown", "dev")], model, data)
    p.sweep(dr.link_prediction, "batch_size", probe_sizes(), model, data)
    p.sweep(dr.link_prediction, "ties", [("unknown", "best")], model, data)
    # attention analyses
    attn = np.full((2, 2, 2 * kg.n_relations + 1), 1.0 / (2 * kg.n_relations + 1))
    bad_attn = probe_arrays(attn.shape)
    for fn in (dr.path_weights, dr.rank_max_weights):
        p.sweep(fn, 0, bad_attn)
    p.sweep(dr.extract_mm_bruteforce, 0, bad_attn, 0.1)
    p.sweep(dr.extract_mm_bruteforce, 1, probe_floats(), attn)
    # thresholds and scores
    scores = np.linspace(0, 1, 8)
    labels = np.array([0, 1] * 4)
    p.sweep(dr.auc_pr, 0, probe_arrays((8,)), labels)
    p.sweep(dr.auc_pr, 1, probe_arrays((8,), dtype="int64"), scores)
    p(dr.auc_pr, scores, np.zeros(8, dtype=int))  # no positive: AUC-PR undefined
    p.sweep(dr.search_for_beta, 0, probe_arrays((8,)), labels)
    p.sweep(dr.search_for_beta, "gap", probe_floats(), scores, labels)
    p.sweep(dr.search_for_beta, "method", [("unknown", "magic")], scores, labels)
    p.sweep(dr.select_beta, "method", [("unknown", "magic")], model, data)
    p.sweep(dr.select_beta, "degenerate", probe_floats(), model, data)
    # rules and programs
    prog = dr.path_rules(model, 0.05)
    p.sweep(dr.path_rules, 1, probe_floats(), model)
    p.sweep(dr.path_rules, "heads", [("out of range", [10**6]), ("negative", [-1])], model, 0.05)
    p.sweep(dr.faithful_rules, 1, probe_floats(), model, max_rules=50, max_nodes=1000)
    p.sweep(dr.faithful_rules, "max_rules", probe_sizes(), model, 0.1, max_nodes=1000)
    p.sweep(dr.faithful_rules, "variant", [("unknown", "xx")], model, 0.1, max_rules=50, max_nodes=1000)
    p.sweep(dr.Rule, 0, probe_sizes(), ((0, 1),))
    p.sweep(dr.Rule, 1, [("empty", ()), ("not atoms", (1, 2))], 0)
    p.sweep(dr.RuleProgram, 0, [("not rules", [1, 2])], list(kg.relations), "sum", 0.1, True)
    p.sweep(dr.format_rule, 0, [("not a rule", "r0(X,Y)")], list(kg.relations))
    p.sweep(dr.format_rule, 1, [("too few names", [])], dr.Rule(0, (((0,), 1),)))
    p.sweep(dr.consequences, 0, [("not rules", [1, 2]), ("None", None)], kg)
    p.sweep(dr.consequences, 1, [("not a kg", facts)], prog)
    p.sweep(dr.evaluate_naive, 0, [("not rules", [1, 2])], kg)
    p.sweep(dr.model_consequences, 2, probe_floats(), model, kg)
    p.sweep(dr.check_faithfulness, 2, [("empty", []), ("not kgs", [facts])], model, prog)
    p.sweep(dr.explain, 1, [("unknown name", "x(a,b)"), ("out of range", (0, 10**6, 0)), ("pair", (0, 1))],
            model, kg, 0.1)  # fmt: skip
    p.sweep(dr.explain, 3, probe_floats(), model, tuple(int(v) for v in kg.facts[0]), kg)
    p.sweep(dr.explanation_program, 1, probe_floats(), model, [kg], heads=[0])
    p.sweep(dr.explanation_program, 2, [("empty", []), ("not kgs", [1])], model, 0.1)
    p.sweep(dr.RuleProgram.load, 0, probe_files(tmp_path, ".json"))
    # loaders and checkpoints
    p.sweep_loaders(
        (dr.load_tsv, dr.load_checkpoint, dr.load_official_checkpoint), tmp_path, (".txt", ".tsv", ".pt")
    )
    for loader in (dr.load_dataset, dr.load_drum_dir, dr.load_faithfulre_dir, dr.load_grail):
        p.sweep(loader, 0, probe_files(tmp_path, ""))
    p.sweep(dr.load_real_kg, 0, [("unknown", "freebase"), ("int", 3)], data_dir=tmp_path)
    p.sweep(dr.save_checkpoint, 0, [("folder", tmp_path)], model, 0.1, "synthetic")
    p.sweep(dr.save_checkpoint, 2, probe_floats(), tmp_path / "ck.pt", model, data_spec="synthetic")
    # model folders, your own triples, logging and resume
    for suffix in ("", ".pt"):
        p.sweep(dr.load_model, 0, probe_files(tmp_path, suffix))
    (tmp_path / "a-file").write_text("x")
    p.sweep(
        dr.save_model, 0, [("a file", tmp_path / "a-file"), ("non-empty folder", tmp_path)], model, 0.1, "s"
    )
    p.sweep(dr.save_model, 2, probe_floats(), tmp_path / "m", model, data_spec="synthetic")
    p.sweep(dr.save_model, 1, [("not a model", "drum"), ("None", None)], tmp_path / "m2", 0.1, "synthetic")
    fresh = dr.DRUM(data.kg.n_relations, rank=1, steps=1, embed_dim=2, hidden_dim=2, seed=0)
    one = dr.TrainConfig(epochs=1, min_epochs=1, batch_size=512)
    p.sweep(dr.train, "queries", probe_arrays((4, 3), dtype="int64"), fresh, data, one)
    p.sweep(dr.train, "queries", [("str", "triples.txt"), ("dict", {"h": 1})], fresh, data, one)
    p.sweep(dr.train, "log_dir", [("a file", tmp_path / "a-file")], fresh, data, one)
    p.sweep(dr.train, "checkpoint", probe_files(tmp_path, ".pt")[1:], fresh, data, one, resume=True)
    p.sweep(dr.train, "checkpoint", [("a folder", tmp_path)], fresh, data, one)
    p.check()
    p.assert_covers(dr, skip=SKIP)
