import numpy as np
import pytest

from iclr24.drum_rules import load_drum_dir
from iclr24.drum_rules import load_tsv
from iclr24.drum_rules import perturbed_datasets
from iclr24.drum_rules import synthetic


def _write_drum(tmp_path, data):
    kg = data.kg
    (tmp_path / "entities.txt").write_text("\n".join(kg.entities) + "\n")
    (tmp_path / "relations.txt").write_text("\n".join(kg.relations) + "\n")

    def rows(a):
        return "".join(f"{kg.entities[h]}\t{kg.relations[r]}\t{kg.entities[t]}\n" for h, r, t in a.tolist())

    (tmp_path / "facts.txt").write_text(rows(kg.facts))
    for s in ("train", "valid", "test"):
        (tmp_path / f"{s}.txt").write_text(rows(getattr(data, s)))
    return tmp_path


def test_synthetic_family_is_deterministic_and_follows_rules():
    a, b = synthetic.family(4, seed=1), synthetic.family(4, seed=1)
    assert np.array_equal(a.kg.facts, b.kg.facts) and np.array_equal(a.test, b.test)
    kg = a.kg
    R = {r: i for i, r in enumerate(kg.relations)}
    allf = {tuple(x) for x in np.concatenate([kg.facts, a.train, a.valid, a.test]).tolist()}
    base = {tuple(x) for x in kg.facts.tolist() if x[1] < R["uncle"]}
    # every uncle fact is brother o (father | mother)
    for h, r, t in allf:
        if r == R["uncle"]:
            assert any(
                (h, R["brother"], z) in base and ((z, R["father"], t) in base or (z, R["mother"], t) in base)
                for z in range(kg.n_entities)
            )
    assert set(a.query_relations) <= {R[r] for r in synthetic.DERIVED_RELATIONS}
    assert set(a.valid_labelled[:, 3].tolist()) == {0, 1}


def test_drum_dir_roundtrip(tmp_path):
    data = synthetic.family(3, seed=0)
    d = load_drum_dir(_write_drum(tmp_path, data))
    assert np.array_equal(d.kg.facts, data.kg.facts) and len(d.test) == len(data.test)
    assert d.valid_labelled.shape[1] == 4
    kg = load_tsv(tmp_path / "facts.txt")
    assert len(kg) == len(data.kg)


def test_malformed_files_name_file_and_line(tmp_path):
    data = synthetic.family(3, seed=0)
    _write_drum(tmp_path, data)
    lines = (tmp_path / "test.txt").read_text().splitlines()
    (tmp_path / "test.txt").write_text(
        "\n".join(lines[:2] + ["nobody\tuncle\t" + data.kg.entities[0]]) + "\n"
    )
    with pytest.raises(ValueError, match=r"test.txt: line 3: entity 'nobody' is not in entities.txt"):
        load_drum_dir(tmp_path)
    (tmp_path / "test.txt").write_text("a\tb\n")
    with pytest.raises(ValueError, match=r"test.txt:1: expected 3 fields"):
        load_drum_dir(tmp_path)
    (tmp_path / "test.txt").unlink()
    with pytest.raises(FileNotFoundError, match="test.txt is missing"):
        load_drum_dir(tmp_path)
    with pytest.raises(FileNotFoundError):
        load_drum_dir(tmp_path / "nope")
    _write_drum(tmp_path, data)
    (tmp_path / "facts.txt").write_text((tmp_path / "facts.txt").read_text() * 2)
    with pytest.raises(ValueError, match="duplicate fact at line 1"):
        load_drum_dir(tmp_path, duplicates="error")


def test_perturbed_datasets_count_and_vocab():
    kg = synthetic.family(3, seed=0).kg
    ds = perturbed_datasets(kg, 10, 10, 9, seed=0)
    assert len(ds) == 30 and all(d.relations == kg.relations for d in ds)
    assert len(ds[1]) < len(kg)


def test_faithfulre_and_grail_folders(tmp_path):
    from iclr24.drum_rules import load_faithfulre_dir
    from iclr24.drum_rules import load_grail

    data = synthetic.family(3, seed=0)
    kg = data.kg
    E, R = kg.entities, kg.relations

    def rows(a):
        return "".join(
            "\t".join([E[x[0]], R[x[1]], E[x[2]], *[str(v) for v in x[3:]]]) + "\n" for x in a.tolist()
        )

    f = tmp_path / "fre"
    f.mkdir()
    (f / "entities.txt").write_text("\n".join(E) + "\n")
    (f / "relations.txt").write_text("\n".join(R) + "\n")
    (f / "train_facts.txt").write_text(rows(kg.facts))
    (f / "test_facts.txt").write_text(rows(kg.facts[::2]))
    (f / "train.txt").write_text(rows(data.train))
    (f / "valid_positive_negative_score.txt").write_text(rows(data.valid_labelled))
    (f / "test_positive_negative_score.txt").write_text(rows(data.test_labelled))
    d = load_faithfulre_dir(f)
    assert len(d.eval_kg) == len(kg.facts[::2]) and np.array_equal(d.valid_labelled, data.valid_labelled)
    (f / "valid_positive_negative_score.txt").write_text("a\tb\tc\n")
    with pytest.raises(ValueError, match="expected 4 fields"):
        load_faithfulre_dir(f)

    g, gi = tmp_path / "g", tmp_path / "g_ind"
    g.mkdir()
    gi.mkdir()
    (g / "train.txt").write_text(rows(kg.facts))
    (g / "valid.txt").write_text(rows(data.valid))
    (gi / "train.txt").write_text(rows(kg.facts[::3]))
    d = load_grail(g)
    assert len(d.kg) + len(d.train) == len(kg) and d.test_kg is not None


def test_real_kg_loader_reads_paperkit_data_folder(tmp_path):
    """Kinships/UMLS/Nations come from paperkit's data folder (raw TSVs; pykeen is never imported)."""
    from iclr24.drum_rules.checkpoint import resolve_data
    from iclr24.drum_rules.data import load_real_kg
    from iclr24.paperkit.data.folder import DataMissing

    with pytest.raises(DataMissing, match="iclr24 data get nations"):
        load_real_kg("nations", data_dir=tmp_path)
    with pytest.raises(ValueError, match="unknown knowledge graph"):
        load_real_kg("fb15k", data_dir=tmp_path)
    folder = tmp_path / "nations"
    folder.mkdir()
    fam = synthetic.family(3, seed=0)
    E, R = fam.kg.entities, fam.kg.relations

    def rows(a):
        return "".join(f"{E[h]}\t{R[r]}\t{E[t]}\n" for h, r, t in a.tolist())

    (folder / "train.txt").write_text(rows(fam.kg.facts))
    (folder / "valid.txt").write_text(rows(fam.valid))
    (folder / "test.txt").write_text(rows(fam.test))
    d = load_real_kg("nations", data_dir=tmp_path, seed=0)
    assert d.name == "nations" and len(d.kg) + len(d.train) == len(fam.kg)
    assert len(d.test) == len(fam.test) and set(d.valid_labelled[:, 3].tolist()) == {0, 1}
    assert np.array_equal(resolve_data("nations", data_dir=tmp_path).kg.facts, d.kg.facts)
    import sys

    assert "pykeen" not in sys.modules


def _freebase_rows(rng, ents, rels, n):
    return [
        (ents[rng.integers(len(ents))], rels[rng.integers(len(rels))], ents[rng.integers(len(ents))])
        for _ in range(n)
    ]


def test_grail_inductive_layouts_with_freebase_names(tmp_path):
    """GraIL's v1-v4 splits as a user brings them: GraIL's raw folders (``fb237_v1/{train,valid}.txt`` and the
    inductive graph ``fb237_v1_ind/train.txt``) and FaithfulRE's copies (``datasets/fb237_v1``: no
    ``test_facts.txt``, labelled ``*_positive_negative_score.txt``). Names with slashes, as in Freebase."""
    from iclr24.drum_rules import load_faithfulre_dir
    from iclr24.drum_rules import load_grail
    from iclr24.drum_rules.kg import encode_facts

    rng = np.random.default_rng(0)
    ents = [f"/m/0{i:03x}" for i in range(30)]
    ind_ents = [f"/m/1{i:03x}" for i in range(20)]  # the inductive graph has unseen entities
    rels = ["/film/film/genre", "/music/genre/artists", "/people/person/place_of_birth"]

    def tsv(rows):
        return "".join("\t".join(map(str, r)) + "\n" for r in rows)

    tr, va, ind = (
        sorted(set(_freebase_rows(rng, e, rels, n))) for e, n in ((ents, 120), (ents, 15), (ind_ents, 80))
    )
    va = [x for x in va if x not in set(tr)]
    g, gi = tmp_path / "fb237_v1", tmp_path / "fb237_v1_ind"
    for folder, files in ((g, {"train.txt": tr, "valid.txt": va}), (gi, {"train.txt": ind})):
        folder.mkdir()
        for name, rows in files.items():
            (folder / name).write_text(tsv(rows))
    d = load_grail(g, seed=0)
    E = d.kg.n_entities
    names = lambda a: {
        (d.kg.entities[h], d.kg.relations[r], d.kg.entities[t]) for h, r, t in a[:, :3].tolist()
    }  # noqa: E731
    assert names(d.kg.facts) | names(d.train) == set(tr) and not names(d.kg.facts) & names(d.train)
    assert names(d.test_kg.facts) | names(d.test) == set(ind) and len(d.test) == round(0.25 * len(ind))
    assert names(d.valid) == set(va)
    lab = d.test_labelled
    assert (lab[:, 3] == 1).sum() == (lab[:, 3] == 0).sum() == len(d.test)  # one negative per positive
    neg = lab[lab[:, 3] == 0]
    known = set(d.test_kg.fact_ids.tolist()) | set(
        encode_facts(d.test[:, 0], d.test[:, 1], d.test[:, 2], E).tolist()
    )
    assert not set(encode_facts(neg[:, 0], neg[:, 1], neg[:, 2], E).tolist()) & known
    (gi / "train.txt").unlink()
    with pytest.raises(FileNotFoundError, match="fb237_v1_ind/train.txt is missing"):
        load_grail(g)

    f = tmp_path / "datasets" / "fb237_v1"
    f.mkdir(parents=True)
    (f / "entities.txt").write_text("\n".join(ents) + "\n")
    (f / "relations.txt").write_text("\n".join(rels) + "\n")
    (f / "train_facts.txt").write_text(tsv(tr[:90]))
    (f / "train.txt").write_text(tsv(tr[90:]))
    (f / "valid_positive_negative_score.txt").write_text(tsv([(*x, i % 2) for i, x in enumerate(va)]))
    (f / "test_positive_negative_score.txt").write_text(tsv([(*x, i % 2) for i, x in enumerate(tr[:20])]))
    d = load_faithfulre_dir(f)
    assert d.test_kg is None and d.eval_kg is d.kg and len(d.kg) == 90 and len(d.train) == len(tr) - 90
    assert d.kg.entities[int(d.kg.facts[0, 0])].startswith("/m/") and len(d.test) == 10
    assert set(d.valid_labelled[:, 3].tolist()) <= {0, 1} and len(d.valid_labelled) == len(va)
