"""Property test of the public API (``iclr24.cmvae.__all__``): seeded wrong shapes, dtypes, NaN/inf, empty inputs,
bad sizes and wrong file kinds either work or raise InputError; nothing else escapes."""

import numpy as np
import torch

import iclr24.cmvae as cm
from iclr24.paperkit.runner.testing import Prober
from iclr24.paperkit.runner.testing import probe_arrays
from iclr24.paperkit.runner.testing import probe_files
from iclr24.paperkit.runner.testing import probe_floats
from iclr24.paperkit.runner.testing import probe_sizes

SKIP = {
    "ClusterPrediction": "a result record (predict_clusters is probed)",
    "ClusterSelection": "a result record (select_num_clusters is probed)",
    "CUBCaptions": "a dataset record (load_cub_captions is probed)",
}


def test_public_api_refuses_bad_input(tmp_path):
    torch.manual_seed(0)
    p = Prober()
    xs = [torch.rand(12, 4), torch.rand(12, 4)]
    labels = np.arange(12) % 3
    # metrics
    for f in (cm.cluster_accuracy, cm.clustering_scores):
        p.sweep(f, 0, probe_arrays((12,), dtype="int64"), labels)
        p.sweep(f, 1, probe_arrays((12,), dtype="int64"), labels)
    p.sweep(cm.conditional_coherence, 0, [("empty", []), *((k, [v]) for k, v in probe_arrays((12,), dtype="int64"))],
            labels)  # fmt: skip
    p.sweep(
        cm.unconditional_coherence,
        0,
        [("empty", []), *((k, [v, v]) for k, v in probe_arrays((12,), dtype="int64"))],
    )
    votes = torch.randint(0, 3, (12, 2))
    p.sweep(cm.majority_vote, 0, probe_arrays((12, 2), torch=True, dtype="int64"), 3)
    p.sweep(cm.majority_vote, 1, probe_sizes(), votes)
    # models
    p.sweep(cm.MLPEncoder, 0, probe_sizes(), 4, 2, hidden=(8,))
    p.sweep(cm.MLPEncoder, "hidden", [(k, (v,)) for k, v in probe_sizes()], 4, 4, 2)
    p.sweep(cm.MLPDecoder, 1, probe_sizes(), 4, hidden=(8,))
    p.sweep(cm.build_mlp_model, 0, [("empty", []), ("zero", [0, 4]), ("huge", [10**20]), ("float", [2.5])])
    p.sweep(cm.build_mlp_model, "latent_dim", probe_sizes(), [4, 4], hidden=(8,))
    p.sweep(cm.build_mlp_model, "n_clusters_max", probe_sizes(), [4, 4], hidden=(8,))
    p.sweep(cm.build_mlp_model, "likelihood", [("unknown", "poisson")], [4, 4], hidden=(8,))
    p.sweep(cm.build_mlp_model, "beta", probe_floats(), [4, 4], hidden=(8,))
    p.sweep(cm.CMVAE, 0, [("empty", []), ("not modules", [1, 2])], [torch.nn.Linear(2, 2)], latent_dim=2,
            modality_latent_dim=2)  # fmt: skip
    p.sweep(cm.MMVAEPlus, 0, [("empty", []), ("not modules", [1, 2])], [torch.nn.Linear(2, 2)], latent_dim=2,
            modality_latent_dim=2)  # fmt: skip
    model = cm.build_mlp_model([4, 4], hidden=(8,), n_clusters_max=3)
    bad_xs = [(k, [v, xs[1]]) for k, v in probe_arrays((12, 4), torch=True)] + [
        ("one modality", xs[:1]),
        ("none", []),
    ]
    p.sweep(cm.fit, 1, bad_xs, model, epochs=1, batch_size=6)
    p.sweep(cm.fit, "epochs", probe_sizes(), model, xs, batch_size=6)
    p.sweep(cm.fit, "batch_size", probe_sizes(), model, xs, epochs=1)
    p.sweep(cm.fit, "lr", probe_floats(), model, xs, epochs=1, batch_size=6)
    p.sweep(
        cm.fit, "mask", probe_arrays((12, 2), torch=True, dtype="bool"), model, xs, epochs=1, batch_size=6
    )
    p.sweep(cm.fit, 0, [("not a model", torch.nn.Linear(2, 2))], xs, epochs=1)
    p.sweep(model.encode, 0, bad_xs)
    p.sweep(model.predict_clusters, 0, bad_xs)
    p.sweep(model.predict_clusters, "batch_size", probe_sizes(), xs)
    p.sweep(model.reconstruct, 0, bad_xs)
    p.sweep(model.select_num_clusters, 0, bad_xs)
    p.sweep(model.sample, 0, probe_sizes())
    p.sweep(model.cross_generate, 0, probe_arrays((12, 4), torch=True), 0)
    p.sweep(model.cross_generate, 1, probe_sizes(), xs[0])
    p.sweep(cm.DiffusionRefiner, 0, probe_sizes())
    p.sweep(cm.DiffusionRefiner, "steps", probe_sizes(), 4)
    # data
    p.sweep(cm.poly_digits, "n_train", probe_sizes())
    p.sweep(cm.poly_digits, "n_modalities", probe_sizes(), n_train=20, n_test=10)
    p.sweep(cm.poly_mnist, 0, probe_files(tmp_path, ""))
    p.sweep(cm.MultimodalData, 0, [(k, [v, v]) for k, v in probe_arrays((12, 4))], labels, [xs[0].numpy()] * 2,
            labels, side=2)  # fmt: skip
    p.sweep(cm.load_multimodal_npz, 0, probe_files(tmp_path, ".npz"))
    p.sweep(cm.load_multimodal_npz, "test_fraction", probe_floats(), tmp_path / "x.npz")
    p.sweep(cm.load_polymnist, 0, probe_files(tmp_path, ""))
    p.sweep(cm.load_cub_captions, 0, probe_files(tmp_path, ""))
    p.sweep(cm.load_cub_captions, "side", probe_sizes(), tmp_path)
    for suffix in (".pt", ".ckpt"):
        p.sweep(cm.load_checkpoint, 0, probe_files(tmp_path, suffix))
    p.sweep(cm.save_checkpoint, 1, [("folder", tmp_path)], model)
    p.sweep(cm.save_checkpoint, 0, [("not a model", object())], tmp_path / "c.pt")
    # the model folder and your own data
    from torch.utils.data import DataLoader
    from torch.utils.data import TensorDataset

    p.sweep(cm.CMVAE.from_pretrained, 0, probe_files(tmp_path, ""))
    p.sweep(cm.MMVAEPlus.from_pretrained, 0, probe_files(tmp_path, ""))
    p.sweep(
        model.save_pretrained, 0, [("a file", probe_files(tmp_path, ".x")[3][1]), ("busy folder", tmp_path)]
    )
    p.sweep(cm.CMVAE([cm.MLPEncoder(4, 2, 2, (8,))], [cm.MLPDecoder(4, 4, (8,))], latent_dim=2,
                     modality_latent_dim=2).save_pretrained, 0, [("own modules", tmp_path / "own")])  # fmt: skip
    loaders = [(k, TensorDataset(*v)) for k, v in bad_xs if len(v) == 2 and v[0].ndim and v[0].shape[0] == 12]
    loaders += [("one field", TensorDataset(xs[0])), ("three fields", TensorDataset(xs[0], xs[1], xs[1])),
                ("wrong width", DataLoader(TensorDataset(xs[0], torch.rand(12, 5)), batch_size=5)),
                ("ints", TensorDataset(xs[0].long(), xs[1].long())), ("a tensor", xs[0])]  # fmt: skip
    p.sweep(cm.fit, 1, loaders, model, epochs=1, batch_size=6)
    p.sweep(cm.fit, "log_dir", [("a file", probe_files(tmp_path, ".log")[3][1])], model, xs, epochs=1)
    p.sweep(cm.fit, "callbacks", [("int", [3]), ("str", 3.5)], model, xs, epochs=1)
    p.sweep(cm.fit, "checkpoint", probe_files(tmp_path, ".state"), model, xs, epochs=1, resume=True)
    p.sweep(cm.fit, "resume", [("no checkpoint", True)], model, xs, epochs=1)
    p.check()
    p.assert_covers(cm, skip=SKIP)
