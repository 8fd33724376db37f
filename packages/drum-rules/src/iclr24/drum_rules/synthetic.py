"""A deterministic synthetic family KG with the Family dataset's 12 relations and known ground-truth rules.

Each family has three generations: a couple, their 2-4 children, the children's spouses (married in from outside)
and grandchildren. Base relations (``husband wife father mother son daughter brother sister``) are generated from the
family trees; derived relations follow the ground-truth rules in :data:`GROUND_TRUTH_RULES`.
"""

from __future__ import annotations

import numpy as np

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int

from .data import make_negatives
from .data import split_facts
from .kg import KG
from .kg import KGData

__all__ = ["FAMILY_RELATIONS", "DERIVED_RELATIONS", "GROUND_TRUTH_RULES", "family"]

FAMILY_RELATIONS = (
    "husband",
    "wife",
    "father",
    "mother",
    "son",
    "daughter",
    "brother",
    "sister",
    "uncle",
    "aunt",
    "nephew",
    "niece",
)
DERIVED_RELATIONS = ("uncle", "aunt", "nephew", "niece")
GROUND_TRUTH_RULES = (
    "uncle(x,y) <- brother(x,z), father(z,y)",
    "uncle(x,y) <- brother(x,z), mother(z,y)",
    "aunt(x,y) <- sister(x,z), father(z,y)",
    "aunt(x,y) <- sister(x,z), mother(z,y)",
    "nephew(x,y) <- son(x,z), brother(z,y)",
    "nephew(x,y) <- son(x,z), sister(z,y)",
    "niece(x,y) <- daughter(x,z), brother(z,y)",
    "niece(x,y) <- daughter(x,z), sister(z,y)",
)


def _trees(n_families: int, rng: np.random.Generator) -> tuple[list[str], list[tuple[str, str, str]]]:
    ents: list[str] = []
    facts: set[tuple[str, str, str]] = set()
    gender: dict[str, str] = {}

    def person(fam: int, sex: str) -> str:
        name = f"f{fam}_p{sum(e.startswith(f'f{fam}_') for e in ents)}"
        ents.append(name)
        gender[name] = sex
        return name

    def marry(a: str, b: str) -> None:
        hus, wif = (a, b) if gender[a] == "m" else (b, a)
        facts.add((hus, "husband", wif))
        facts.add((wif, "wife", hus))

    def children(fam: int, pa: str, ma: str, k: int) -> list[str]:
        kids = [person(fam, "m" if rng.random() < 0.5 else "f") for _ in range(k)]
        for c in kids:
            facts.add((pa, "father", c))
            facts.add((ma, "mother", c))
            facts.add((c, "son" if gender[c] == "m" else "daughter", pa))
            facts.add((c, "son" if gender[c] == "m" else "daughter", ma))
        for a in kids:
            for b in kids:
                if a != b:
                    facts.add((a, "brother" if gender[a] == "m" else "sister", b))
        return kids

    for fam in range(n_families):
        pa, ma = person(fam, "m"), person(fam, "f")
        marry(pa, ma)
        for c in children(fam, pa, ma, int(rng.integers(2, 5))):
            if rng.random() < 0.8:
                sp = person(fam, "f" if gender[c] == "m" else "m")
                marry(c, sp)
                fa, mo = (c, sp) if gender[c] == "m" else (sp, c)
                children(fam, fa, mo, int(rng.integers(1, 4)))
    return ents, sorted(facts)


def _derive(facts: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    by_rel: dict[str, list[tuple[str, str]]] = {}
    for h, r, t in facts:
        by_rel.setdefault(r, []).append((h, t))
    parent_of: dict[str, list[str]] = {}
    for r in ("father", "mother"):
        for p, c in by_rel.get(r, []):
            parent_of.setdefault(p, []).append(c)
    out = set()
    for sib_rel, avunc in (("brother", "uncle"), ("sister", "aunt")):
        for x, z in by_rel.get(sib_rel, []):  # x is a sibling of z, z a parent of y  ->  x is uncle/aunt of y
            for y in parent_of.get(z, []):
                out.add((x, avunc, y))
    sib_of: dict[str, list[str]] = {}
    for r in ("brother", "sister"):
        for a, b in by_rel.get(r, []):
            sib_of.setdefault(b, []).append(a)
    for r in ("son", "daughter"):
        for x, z in by_rel.get(
            r, []
        ):  # x is a son/daughter of z, y a sibling of z  ->  x is nephew/niece of y
            for y in sib_of.get(z, []):
                out.add((x, "nephew" if r == "son" else "niece", y))
    return sorted(out)


def family(
    n_families: int = 40,
    seed: int = 0,
    kb_fraction_derived: float = 0.5,
    splits: tuple[float, float, float] = (0.6, 0.2, 0.2),
) -> KGData:
    """The synthetic family KG (deterministic given ``n_families`` and ``seed``).

    The background KB holds every base fact and ``kb_fraction_derived`` of the derived (uncle/aunt/nephew/niece)
    facts; the remaining derived facts are split into train/valid/test queries. Valid/test come with as many
    negatives (corrupted heads within 3 hops), for choosing beta by F1."""
    check_int(n_families, "n_families", minimum=1, maximum=10**5)
    check_float(kb_fraction_derived, "kb_fraction_derived", minimum=0, maximum=1, open_max=True)
    if not 0.0 <= kb_fraction_derived < 1.0:
        raise InputError(f"kb_fraction_derived must be in [0, 1), got {kb_fraction_derived}")
    rng = np.random.default_rng(seed)
    ents, base = _trees(n_families, rng)
    derived = _derive(base)
    rel_idx = {r: i for i, r in enumerate(FAMILY_RELATIONS)}
    e_idx = {e: i for i, e in enumerate(ents)}
    to_arr = lambda rows: np.asarray(
        [(e_idx[h], rel_idx[r], e_idx[t]) for h, r, t in rows], np.int64
    ).reshape(-1, 3)
    base_a, der_a = to_arr(base), to_arr(derived)
    kb_der, train, valid, test = split_facts(
        der_a, (kb_fraction_derived, *[(1 - kb_fraction_derived) * s for s in splits]), seed=seed + 1
    )
    kg = KG(tuple(ents), FAMILY_RELATIONS, np.concatenate([base_a, kb_der]), name=f"family-{n_families}")

    def lab(pos: np.ndarray, s: int) -> np.ndarray:
        pos4 = np.concatenate([pos, np.ones((len(pos), 1), np.int64)], axis=1)
        return np.concatenate([pos4, make_negatives(pos, kg, seed=s, hops=2)])

    return KGData(
        kg,
        train,
        valid,
        test,
        valid_labelled=lab(valid, seed + 2),
        test_labelled=lab(test, seed + 3),
        name=f"family-{n_families}-seed{seed}",
    )
