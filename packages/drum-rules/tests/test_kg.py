import numpy as np
import pytest

from iclr24.drum_rules import KG
from iclr24.drum_rules.kg import decode_facts
from iclr24.drum_rules.kg import encode_facts


def test_inverse_operators_are_transposes(make_kg):
    kg = make_kg(0)
    R = kg.n_relations
    for r in range(R):
        assert (kg.operator(r) != kg.operator(r + R).T).nnz == 0
    dense = kg.dense_operators()
    for h, r, t in kg.facts.tolist():
        assert dense[r, h, t] == 1 and dense[r + R, t, h] == 1
    assert int(dense.sum()) == 2 * len(kg)
    S = kg.stacked_operators().to_dense().view(2 * R, kg.n_entities, kg.n_entities)
    assert np.array_equal(S.numpy(), dense.numpy())


def test_from_triples_and_ids_roundtrip():
    kg = KG.from_triples([("a", "p", "b"), ("b", "q", "c")])
    assert kg.entities == ("a", "b", "c") and kg.relations == ("p", "q")
    assert kg.contains(0, 0, 1) and not kg.contains(1, 0, 0)
    ids = encode_facts(kg.facts[:, 0], kg.facts[:, 1], kg.facts[:, 2], kg.n_entities)
    assert np.array_equal(decode_facts(ids, kg.n_entities), kg.facts)
    assert kg.operator_names == ["p", "q", "inv_p", "inv_q"]


def test_bad_input():
    with pytest.raises(ValueError, match="duplicate"):
        KG.from_triples([("a", "p", "b"), ("a", "p", "b")])
    assert len(KG.from_triples([("a", "p", "b"), ("a", "p", "b")], duplicates="drop")) == 1
    with pytest.raises(ValueError, match="collides with the inverse"):
        KG.from_triples([("a", "p", "b"), ("a", "inv_p", "b")])
    with pytest.raises(ValueError, match="2 fields, expected"):
        KG.from_triples([("a", "p")])
    with pytest.raises(ValueError, match="not in the given entity list"):
        KG.from_triples([("a", "p", "zz")], entities=["a", "b"])
    with pytest.raises(ValueError, match="out of range"):
        KG(("a",), ("p",), np.array([[0, 0, 3]]))
