import json

import numpy as np
import pytest
import torch

from iclr24.drum_rules import DRUM
from iclr24.drum_rules import KG
from iclr24.drum_rules import Rule
from iclr24.drum_rules import RuleProgram
from iclr24.drum_rules import check_faithfulness
from iclr24.drum_rules import consequences
from iclr24.drum_rules import evaluate_naive
from iclr24.drum_rules import explain
from iclr24.drum_rules import extract_mm_bruteforce
from iclr24.drum_rules import faithful_rules
from iclr24.drum_rules import format_rule
from iclr24.drum_rules import perturbed_datasets
from iclr24.drum_rules.kg import decode_facts


def _beta(m, kg, q=0):
    S = m.score_matrix(q, kg)
    return float(np.quantile(S[S > 0], 0.6))


@pytest.mark.parametrize("agg", ["sum", "sm", "mm"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_faithful_programs_reproduce_model_on_many_datasets(
    agg, seed, make_kg, make_attention, make_sparse_attention
):
    """Acceptance check 3: T_Pi(D) = T_M(D) on 30 datasets (DRUM with T=2 and small |R|)."""
    rng = np.random.default_rng(seed)
    kg = make_kg(10 + seed, n_entities=9, n_relations=2, n_facts=18)
    # exact DRUM programs are exponential in general: keep its attention free of tiny weights
    att = {
        q: (make_sparse_attention(rng, 2, 2, 2) if agg == "sum" else make_attention(rng, 2, 2, 2))
        for q in (0, 1)
    }
    m = DRUM.with_fixed_attention(att, 2, aggregation=agg)
    beta = _beta(m, kg)
    prog = faithful_rules(m, beta)
    assert prog.complete
    rep = check_faithfulness(m, prog, perturbed_datasets(kg, 10, 10, 9, seed=seed))
    assert len(rep.per_dataset) == 30
    assert rep.faithful and rep.precision == 1.0 and rep.recall == 1.0
    assert sum(d["n_model"] for d in rep.per_dataset) > 0


@pytest.mark.parametrize("seed", range(4))
def test_mm_extraction_matches_bruteforce(seed, make_attention):
    """Acceptance check 6."""
    rng = np.random.default_rng(seed)
    att = make_attention(rng, 3, 3, 2)
    m = DRUM.with_fixed_attention({0: att}, 2, aggregation="mm")
    for beta in (0.01, 0.05, 0.2):
        got = {r.atoms[0][0] for r in faithful_rules(m, beta)}
        assert got == extract_mm_bruteforce(att, beta)


@pytest.mark.parametrize("agg", ["sum", "sm", "mm"])
def test_counting_semantics_matches_naive_grounding(agg, make_kg, make_sparse_attention):
    rng = np.random.default_rng(5)
    kg = make_kg(5, n_entities=6, n_relations=2, n_facts=14)
    m = DRUM.with_fixed_attention({0: make_sparse_attention(rng, 2, 2, 2)}, 2, aggregation=agg)
    prog = faithful_rules(m, _beta(m, kg))
    small = [r for r in prog if sum(c * max(0, len(p) - 1) for p, c in r.atoms) <= 3][:60]
    assert small
    fast = {tuple(x) for x in decode_facts(consequences(small, kg), kg.n_entities).tolist()}
    assert fast == evaluate_naive(small, kg)


def test_budget_exceeded_is_reported_incomplete_but_sound(make_kg, make_attention):
    rng = np.random.default_rng(0)
    kg = make_kg(1, n_entities=8, n_relations=2, n_facts=20)
    m = DRUM.with_fixed_attention({0: make_attention(rng, 3, 2, 2)}, 2, aggregation="sum")
    prog = faithful_rules(m, _beta(m, kg), max_rules=5)
    assert not prog.complete and "budget" in prog.note and "INCOMPLETE" in str(prog)
    rep = check_faithfulness(m, prog, [kg])
    assert rep.sound and not rep.faithful


def test_rule_printing_and_export(tmp_path):
    rels = ["brother", "father", "uncle"]
    r = Rule(
        2, (((1, 0), 1),), 0.8
    )  # apply father first, then brother: uncle(x,y) <- brother(x,z), father(z,y)
    assert format_rule(r, rels) == "uncle(x,y) <- brother(x,z), father(z,y)"
    inv = Rule(2, (((1 + 3,), 1),), 0.5)
    assert format_rule(inv, rels) == "uncle(x,y) <- father(y,x)"
    multi = Rule(2, (((1, 0), 2), ((), 1)), 0.9)
    assert format_rule(multi, rels) == (
        "uncle(x,y) <- brother(x,z1), father(z1,y), brother(x,z2), father(z2,y), x = y, z1 != z2"
    )
    prog = RuleProgram([r, multi], rels, "drum", 0.5, True, heads=[2])
    prog.save(tmp_path / "p.json")
    prog.save(tmp_path / "p.dl")
    back = RuleProgram.load(tmp_path / "p.json")
    assert [x.key for x in back] == [x.key for x in prog] and back.beta == 0.5
    assert ":- brother(x,z), father(z,y)." in (tmp_path / "p.dl").read_text()
    json.loads((tmp_path / "p.json").read_text())
    with pytest.raises(ValueError, match="not JSON"):
        RuleProgram.load(tmp_path / "p.dl")


def test_explanations_are_exact(make_kg, make_attention):
    rng = np.random.default_rng(3)
    kg = make_kg(3, n_entities=8, n_relations=2, n_facts=20)
    for agg in ("sum", "sm", "mm"):
        m = DRUM.with_fixed_attention({0: make_attention(rng, 2, 2, 2)}, 2, aggregation=agg)
        S = m.score_matrix(0, kg)
        beta = _beta(m, kg)
        for h in range(kg.n_entities):
            for t in range(kg.n_entities):
                e = explain(m, (h, 0, t), kg, beta)
                assert e.score == pytest.approx(S[h, t], abs=1e-9)
                assert (e.rule is not None) == (S[h, t] >= beta)
                if e.rule is not None:  # the rule fires on the fact and is sound on another dataset
                    fired = consequences([e.rule], kg)
                    assert ((0 * kg.n_entities + h) * kg.n_entities + t) in set(fired.tolist())
    m = DRUM.with_fixed_attention({0: make_attention(rng, 2, 2, 2)}, 2, normalize=True)
    with pytest.raises(ValueError, match="no-normalisation"):
        faithful_rules(m, 0.1)
    with pytest.raises(ValueError, match="does not match"):
        faithful_rules(m.copy_with(normalize=False), 0.1, variant="mm")
    k = KG(("alice", "bob"), ("r0", "r1"), np.array([[0, 0, 1]]))
    assert explain(m.copy_with(normalize=False), "r0(alice,bob)", k, 0.01).fact == (0, 0, 1)
    with pytest.raises(ValueError, match="expected a fact"):
        explain(m.copy_with(normalize=False), "r0 alice bob", k, 0.01)


@pytest.mark.parametrize("steps", [2, 3])
def test_walk_counts_of_explanations_match_sparse_products(steps, make_kg):
    """The pruned dynamic programme behind explain() counts walks exactly (N_s from sparse products)."""
    from iclr24.drum_rules import walk_counts
    from iclr24.drum_rules.extract import _walks

    kg = make_kg(7, n_entities=7, n_relations=2, n_facts=20)
    for h in range(kg.n_entities):
        for t in range(kg.n_entities):
            counts, examples = _walks(kg, h, t, steps, keep=2)
            for p, c in counts.items():
                assert c == walk_counts(kg, p)[h, t] and 1 <= len(examples[p]) <= 2
                assert all(w[0] == t and w[-1] == h and len(w) == len(p) + 1 for w in examples[p])


def test_explanation_prints_relation_names():
    rels = ("brother", "father", "uncle")
    kg = KG(("al", "bo", "cy"), rels, np.array([[0, 0, 1], [1, 1, 2]]))  # brother(al,bo), father(bo,cy)
    att = np.zeros((1, 2, 7))
    att[0, 0, 1], att[0, 1, 0] = 1.0, 1.0  # father first (from the tail), then brother
    m = DRUM.with_fixed_attention({2: att}, 3, aggregation="mm")
    text = explain(m, "uncle(al,cy)", kg, 0.5).format(kg)
    assert "uncle(al,cy): score 1 >= beta 0.5" in text
    assert "1 walk(s) of type [brother, father]" in text
    assert "brother(al,bo), father(bo,cy)" in text and "(1, 0)" not in text


@pytest.mark.parametrize("agg", ["sum", "sm", "mm"])
def test_explanation_program_equals_per_fact_explanations(agg, make_kg, make_attention):
    """The vectorised explanation_program gives exactly the rules explain() gives fact by fact."""
    from iclr24.drum_rules import explanation_program
    from iclr24.drum_rules import model_consequences

    rng = np.random.default_rng(11)
    kg = make_kg(4, n_entities=8, n_relations=2, n_facts=18)
    m = DRUM.with_fixed_attention(
        {0: make_attention(rng, 2, 2, 2), 1: make_attention(rng, 2, 2, 2)}, 2, aggregation=agg
    )
    beta = _beta(m, kg)
    prog = explanation_program(m, beta, [kg])
    want = set()
    for h, q, t in decode_facts(model_consequences(m, kg, beta), kg.n_entities).tolist():
        want.add(explain(m, (h, q, t), kg, beta).rule.key)
    assert want and {r.key for r in prog} == want
    assert check_faithfulness(m, prog, [kg]).recall == 1.0


def test_walk_counts_cached_on_the_kg_serve_every_program_checked_on_it(make_kg, make_attention):
    """consequences keeps N_s on the KG: a second program evaluated on the same KG gives what it gives on a fresh
    copy of that KG (no stale or cross-program entries)."""
    rng = np.random.default_rng(3)
    kg = make_kg(7, n_entities=9, n_relations=2, n_facts=20)
    progs = []
    for agg in ("mm", "sm"):
        m = DRUM.with_fixed_attention({0: make_attention(rng, 2, 2, 2)}, 2, aggregation=agg)
        progs.append(faithful_rules(m, _beta(m, kg)))
    first = [consequences(p, kg) for p in progs]
    assert kg._cache["walk_counts"]  # filled by the first program, read by the second
    for p, got in zip(progs, first):
        assert np.array_equal(got, consequences(p, kg.with_facts(kg.facts)))
    other = kg.with_facts(kg.facts[: len(kg.facts) // 2])  # another KG: its own counts
    assert len(first[0]) and not np.array_equal(consequences(progs[0], other), first[0])


def test_explanations_use_the_attention_slots_the_model_scores_with(make_kg):
    """The model scores with the LSTM's first T attention slots; the END slot (T), which the official
    ``extract_rule_explanation_drum`` reads for the last step, gives another sum. Ours matches the score."""
    kg = make_kg(4, n_entities=10, n_relations=2, n_facts=30)
    m = DRUM(2, rank=2, steps=2, embed_dim=8, hidden_dim=8, seed=1)
    with torch.no_grad():
        x = m.query_embedding(torch.tensor([[0, 0, m.n_operators]]))
        slots = [torch.softmax(m.linear(lstm(x)[0][0]), -1).double().numpy() for lstm in m.lstms]  # (T+1, K)
    assert np.allclose(np.stack([s[:2] for s in slots]), m.attention_for(0))  # slots 0..T-1 are the model's
    end = DRUM.with_fixed_attention({0: np.stack([s[[0, 2]] for s in slots])}, 2)  # slot 0, then END
    S, S_end = m.score_matrix(0, kg), end.score_matrix(0, kg)
    ours = np.array([[explain(m, (h, 0, t), kg, 1.0).score for t in range(10)] for h in range(10)])
    assert np.abs(ours - S).max() < 1e-6 * max(1.0, S.max())
    assert np.abs(S_end - S).max() > 1e-3
