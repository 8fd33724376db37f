"""torchrun training: two gloo ranks, each on its share of the samples, fit the same model as one process."""

import json

import numpy as np
import pytest

from iclr24.aemc_ne import AEMCNE
from iclr24.aemc_ne import make_synthetic

SMALL = dict(main_hidden=(8,), elem_hidden=(4,), activation="tanh")
SCRIPT = """
import json, sys
import numpy as np
from iclr24.paperkit.distributed import cleanup_distributed, init_distributed
from iclr24.aemc_ne import AEMCNE, make_synthetic

info = init_distributed()
syn = make_synthetic(n_rows=12, n_cols=41, rank=2, response="sigmoid5", seed=3)
out = {}
for name, batch in (("full", None), ("mini", 7)):
    m = AEMCNE(**json.loads(sys.argv[2])).fit(
        syn.train, epochs=12, lr=1e-2, l2=1.0, eval_every=4, batch_size=batch, quiet=True, seed=1
    )
    out[name] = m.predict(syn.test.users, syn.test.items).tolist()
    out[name + "_epoch"] = m.best_epoch_
if info.is_main:
    json.dump({"world": info.world_size, **out}, open(sys.argv[1], "w"))
cleanup_distributed()
"""


@pytest.mark.slow  # two torch processes under torchrun (gloo)
def test_two_ranks_fit_the_single_process_model(tmp_path):
    from iclr24.paperkit.distributed import run_torchrun

    script = tmp_path / "fit.py"
    script.write_text(SCRIPT)
    res_path = tmp_path / "r.json"
    run_torchrun([str(script), str(res_path), json.dumps(SMALL)], nproc=2, timeout=600)
    res = json.loads(res_path.read_text())
    assert res["world"] == 2
    syn = make_synthetic(n_rows=12, n_cols=41, rank=2, response="sigmoid5", seed=3)
    for name, batch in (("full", None), ("mini", 7)):
        one = AEMCNE(**SMALL).fit(
            syn.train, epochs=12, lr=1e-2, l2=1.0, eval_every=4, batch_size=batch, quiet=True, seed=1
        )
        ref = one.predict(syn.test.users, syn.test.items)
        # the summed shard gradients are the full-batch gradient: only float summation order differs
        np.testing.assert_allclose(res[name], ref, rtol=1e-4, atol=1e-5)
        assert res[name + "_epoch"] == one.best_epoch_
