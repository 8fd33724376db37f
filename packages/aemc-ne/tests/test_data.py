import numpy as np
import pytest
from scipy.io import savemat

from iclr24.aemc_ne.data import Ratings
from iclr24.aemc_ne.data import load_monti
from iclr24.aemc_ne.data import load_movielens
from iclr24.aemc_ne.data import load_movielens_split
from iclr24.aemc_ne.data import load_recbole_inter
from iclr24.aemc_ne.data import make_synthetic
from iclr24.aemc_ne.data import movielens_100k_u1


def test_synthetic_generator_low_rank_response_and_masks():
    d = make_synthetic(n_rows=20, n_cols=50, rank=3, response="sigmoid5", obs_rate=0.5, seed=0)
    assert np.linalg.matrix_rank(d.z) == 3
    assert np.allclose(d.x, 1 + 4 / (1 + np.exp(-3 * d.z)))
    assert len(d.train) + len(d.test) == 20 * 50
    assert abs(len(d.train) / 1000 - 0.5) < 0.06
    x, m = d.train.to_dense()
    assert np.array_equal(x[m], d.x[m])
    again = make_synthetic(n_rows=20, n_cols=50, rank=3, response="sigmoid5", seed=0)
    assert np.array_equal(again.train.values, d.train.values)
    mn = make_synthetic(n_rows=40, n_cols=200, rank=3, mechanism="mnar", obs_rate=0.4, seed=0)
    assert mn.propensity.mean() == pytest.approx(0.4, abs=1e-6)
    # MNAR: larger latent values are observed more often
    assert mn.z[mn.train.to_dense()[1]].mean() > mn.z[~mn.train.to_dense()[1]].mean() + 0.3


def test_ratings_validation_and_split():
    with pytest.raises(ValueError, match="finite"):
        Ratings(np.array([0]), np.array([0]), np.array([np.nan]), 1, 1)
    with pytest.raises(ValueError, match="user indices"):
        Ratings(np.array([3]), np.array([0]), np.array([1.0]), 2, 1)
    with pytest.raises(ValueError, match="one length"):
        Ratings(np.array([0, 1]), np.array([0]), np.array([1.0]), 2, 1)
    x = np.arange(6.0).reshape(2, 3)
    with pytest.raises(ValueError, match="no observed entry"):
        Ratings.from_dense(x, np.array([[1, 1, 0], [1, 1, 0]]))
    with pytest.raises(ValueError, match="no observed entry"):
        Ratings.from_dense(x, np.array([[1, 1, 1], [0, 0, 0]]))
    r = Ratings.from_dense(x, np.ones((2, 3)))
    a, b = r.split(0.5, seed=1)
    assert len(a) == len(b) == 3
    assert sorted(a.values.tolist() + b.values.tolist()) == x.ravel().tolist()


def test_movielens_formats(tmp_path):
    (tmp_path / "u.data").write_text(
        "196\t242\t3\t881250949\n186\t302\t3\t891717742\n22\t242\t1\t878887116\n"
    )
    r = load_movielens(tmp_path / "u.data")
    assert r.shape == (3, 2) and sorted(r.values.tolist()) == [1.0, 3.0, 3.0]
    (tmp_path / "ratings.dat").write_text(
        "1::1193::5::978300760\n1::661::3::978302109\n2::1193::4::978298413\n"
    )
    r = load_movielens(tmp_path / "ratings.dat")
    assert r.shape == (2, 2) and r.values.tolist() == [5.0, 3.0, 4.0]
    assert r.items.tolist() == [1, 0, 1]  # ids in numeric order: 661 -> 0, 1193 -> 1
    (tmp_path / "x.inter").write_text(
        "user_id:token\titem_id:token\trating:float\ttimestamp:float\n196\t242\t3\t881250949\n"
    )
    r, uids, iids = load_recbole_inter(tmp_path / "x.inter")
    assert len(r) == 1 and uids == ["196"] and iids == ["242"]
    (tmp_path / "u1.base").write_text("1\t1\t5\t0\n2\t2\t3\t0\n")
    (tmp_path / "u1.test").write_text("1\t3\t4\t0\n")
    base, test = load_movielens_split(tmp_path / "u1.base", tmp_path / "u1.test")
    assert base.shape == test.shape == (2, 3) and test.items.tolist() == [2]


def test_u1_split_is_first_20000_rows(tmp_path):
    rng = np.random.default_rng(0)
    u = rng.integers(1, 944, 100_000)
    i = rng.integers(1, 1683, 100_000)
    v = rng.integers(1, 6, 100_000)
    rows = "\n".join(f"{a}\t{b}\t{c}\t0" for a, b, c in zip(u, i, v))
    (tmp_path / "ml-100k.inter").write_text(
        "user_id:token\titem_id:token\trating:float\ttimestamp:float\n" + rows
    )
    train, test = movielens_100k_u1(tmp_path)
    assert len(train) == 80_000 and len(test) == 20_000
    assert test.values.tolist()[:5] == v[:5].astype(float).tolist()
    assert train.values.tolist()[:5] == v[20_000:20_005].astype(float).tolist()
    (tmp_path / "short").mkdir()
    (tmp_path / "short" / "u.data").write_text("1\t1\t5\t0\n")
    with pytest.raises(ValueError, match="100,000"):
        movielens_100k_u1(tmp_path / "short")
    with pytest.raises(FileNotFoundError, match="iclr24 data get movielens-100k"):
        movielens_100k_u1(tmp_path / "nothing-here")
    # u1-u5 (GroupLens mku.sh): fold k tests on rows 20,000 (k - 1) .. 20,000 k - 1; the five test sets partition
    from iclr24.aemc_ne import movielens_100k_split

    for k in range(1, 6):
        tr, te = movielens_100k_split(tmp_path / "ml-100k.inter", k)
        assert (
            len(tr) == 80_000
            and te.values.tolist() == v[20_000 * (k - 1) : 20_000 * k].astype(float).tolist()
        )
        assert tr.shape == te.shape == train.shape
        assert (
            tr.values.tolist()[:3]
            == v[20_000 if k == 1 else 0 : (20_000 if k == 1 else 0) + 3].astype(float).tolist()
        )
    for bad in (0, 6, 1.0, True):
        with pytest.raises(ValueError, match="fold must be an int in 1..5"):
            movielens_100k_split(tmp_path / "ml-100k.inter", bad)


def test_monti_mat(tmp_path):
    m = np.array([[5.0, 0, 3], [0, 4, 1]])
    savemat(tmp_path / "d.mat", {"M": m, "Otraining": np.array([[1, 0, 1], [0, 1, 0]]),
                                 "Otest": np.array([[0, 0, 0], [0, 0, 1]])})  # fmt: skip
    train, test = load_monti(tmp_path / "d.mat")
    assert sorted(train.values.tolist()) == [3.0, 4.0, 5.0] and test.values.tolist() == [1.0]
    savemat(tmp_path / "bad.mat", {"M": m})
    with pytest.raises(ValueError, match="Otraining"):
        load_monti(tmp_path / "bad.mat")


@pytest.mark.parametrize(
    "text,match",
    [
        ("1\t2\n3\t4\n", "column"),
        ("1\t2\tfive\t0\n", "not a number"),
        ("1\t2\tnan\t0\n", "not finite"),
        ("", "empty"),
    ],
)
def test_bad_ratings_files(tmp_path, text, match):
    (tmp_path / "u.data").write_text(text)
    with pytest.raises(ValueError, match=match):
        load_movielens(tmp_path / "u.data")


def test_missing_file_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="grouplens"):
        load_movielens(tmp_path / "u.data")
    with pytest.raises(FileNotFoundError, match="mgcnn"):
        load_monti(tmp_path / "x.mat")
