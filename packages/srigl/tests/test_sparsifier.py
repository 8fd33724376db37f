import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from iclr24.srigl import Dense
from iclr24.srigl import NonFiniteError
from iclr24.srigl import RigL
from iclr24.srigl import SRigL
from iclr24.srigl import StaticSparse
from iclr24.srigl import make_sparsifier


def _sgd(model):
    return torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)


def test_constant_fan_in_after_init_and_every_update(digits, helpers):
    model = helpers.make_mlp()
    opt = _sgd(model)
    sp = SRigL(model, opt, 0.9, 120, delta_t=10, distribution="uniform", seed=0)
    updates = []

    def check(i, updated):
        for layer in sp.layers:
            fans = layer.fan_ins()
            active = fans[fans > 0]
            k = layer.budget // int((fans > 0).sum())
            assert (active == k).all(), (layer.name, sorted(set(active.tolist())))
            assert layer.nnz <= layer.budget
            assert (fans[layer.ablated] == 0).all()
        updates.append(updated)

    check(-1, False)  # after init
    helpers.train_steps(model, opt, sp, digits, 120, after_step=check)
    # Delta T = 10, T_end = 0.75 * 120 = 90 -> updates at 10..80
    assert [i + 1 for i, u in enumerate(updates[1:]) if u] == [10, 20, 30, 40, 50, 60, 70, 80]
    assert sp.n_updates == 8


def test_masked_weights_and_momentum_are_zero_and_grown_weights_start_at_zero(digits, helpers):
    model = helpers.make_mlp()
    opt = _sgd(model)
    sp = SRigL(model, opt, 0.9, 100, delta_t=5, distribution="uniform", seed=0)
    prev = {n: m.clone() for n, m in sp.masks.items()}
    grown_seen = 0
    changed = 0

    def check(i, updated):
        nonlocal prev, grown_seen, changed
        for layer in sp.layers:
            w = layer.weight.detach()
            assert (w[~layer.mask] == 0).all()
            buf = opt.state[layer.weight]["momentum_buffer"]
            assert (buf[~layer.mask] == 0).all()
            if updated:
                grown = layer.mask & ~prev[layer.name]
                grown_seen += int(grown.sum())
                changed += int((layer.mask != prev[layer.name]).sum())
                assert (w[grown] == 0).all()
        prev = {n: m.clone() for n, m in sp.masks.items()}

    helpers.train_steps(model, opt, sp, digits, 60, after_step=check)
    assert grown_seen > 0 and changed > 0  # the topology really moved


def test_rigl_nnz_is_constant_and_topology_moves(digits, helpers):
    model = helpers.make_mlp()
    opt = _sgd(model)
    sp = RigL(model, opt, 0.9, 100, delta_t=5, distribution="erk", seed=0)
    nnz0 = {layer.name: layer.nnz for layer in sp.layers}
    first = {n: m.clone() for n, m in sp.masks.items()}
    seen = []

    def check(i, updated):
        seen.append({layer.name: layer.nnz for layer in sp.layers})

    helpers.train_steps(model, opt, sp, digits, 60, after_step=check)
    assert all(s == nnz0 for s in seen)
    assert any(not torch.equal(first[n], m) for n, m in sp.masks.items())


def test_static_masks_never_change_and_dense_keeps_everything(digits, helpers):
    for structure in ("unstructured", "constant_fan_in"):
        model = helpers.make_mlp()
        opt = _sgd(model)
        sp = StaticSparse(model, opt, 0.9, 50, structure=structure, delta_t=5, seed=0)
        first = {n: m.clone() for n, m in sp.masks.items()}
        helpers.train_steps(model, opt, sp, digits, 30)
        assert all(torch.equal(first[n], m) for n, m in sp.masks.items())
        sp.check_invariants()
    model = helpers.make_mlp()
    opt = _sgd(model)
    sp = Dense(model, opt)
    assert sp.density() == 1.0
    helpers.train_steps(model, opt, sp, digits, 5)
    assert (model[0].weight != 0).float().mean() > 0.99


def test_ablation_gamma_zero_never_and_output_layer_never(digits, helpers):
    model = helpers.make_mlp(hidden=(256, 256))
    opt = _sgd(model)
    sp = SRigL(model, opt, 0.95, 200, delta_t=10, gamma_sal=0.0, distribution="uniform", seed=0)
    helpers.train_steps(model, opt, sp, digits, 150)
    assert sum(sp.n_ablated().values()) == 0
    model = helpers.make_mlp(hidden=(256, 256))
    opt = _sgd(model)
    sp = SRigL(model, opt, 0.95, 200, delta_t=10, gamma_sal=0.99, distribution="uniform", seed=0)
    assert sp.no_ablation == ["4.weight"]
    helpers.train_steps(model, opt, sp, digits, 150)
    assert sp.n_ablated()["4.weight"] == 0
    assert sp.n_ablated()["0.weight"] + sp.n_ablated()["2.weight"] > 0
    sp.check_invariants()


def test_srigl_ablates_hidden_neurons_on_digits_mlp_at_95(digits):
    from iclr24.srigl import TrainConfig
    from iclr24.srigl import train

    r = train(
        TrainConfig(method="srigl", sparsity=0.95, gamma_sal=0.3, epochs=10, delta_t=10, seed=0), digits
    )
    assert r.n_ablated >= 1
    assert r.invariants_ok
    assert r.accuracy > 0.85


def test_resume_from_checkpoint_is_exact(digits, helpers):
    def fresh():
        model = helpers.make_mlp(seed=1)
        opt = _sgd(model)
        return model, opt, SRigL(model, opt, 0.9, 60, delta_t=5, distribution="uniform", seed=3)

    m1, o1, s1 = fresh()
    helpers.train_steps(m1, o1, s1, digits, 40, seed=0)

    m2, o2, s2 = fresh()
    helpers.train_steps(m2, o2, s2, digits, 20, seed=0)
    ckpt = copy.deepcopy({"model": m2.state_dict(), "opt": o2.state_dict(), "sp": s2.state_dict()})
    m3, o3, s3 = fresh()
    m3.load_state_dict(ckpt["model"])
    o3.load_state_dict(ckpt["opt"])
    s3.load_state_dict(ckpt["sp"])
    # continue with the batches steps 20..39 would have seen
    gen = torch.Generator().manual_seed(0)
    n = len(digits.y_train)
    batches = [torch.randint(0, n, (32,), generator=gen) for _ in range(40)][20:]
    for idx in batches:
        o3.zero_grad(set_to_none=True)
        F.cross_entropy(m3(digits.x_train[idx]), digits.y_train[idx]).backward()
        o3.step()
        s3.step()
    assert s3.step_count == s1.step_count == 40
    for n_, m in s1.masks.items():
        assert torch.equal(m, s3.masks[n_])
    for p1, p3 in zip(m1.parameters(), m3.parameters()):
        assert torch.equal(p1, p3)


def test_adam_moments_are_masked(digits, helpers):
    model = helpers.make_mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sp = SRigL(model, opt, 0.9, 40, delta_t=5, seed=0)
    helpers.train_steps(model, opt, sp, digits, 12)
    for layer in sp.layers:
        st = opt.state[layer.weight]
        assert (st["exp_avg"][~layer.mask] == 0).all() and (st["exp_avg_sq"][~layer.mask] == 0).all()


@pytest.mark.slow  # importing timm alone takes seconds
def test_works_on_timm_resnet_and_attention_without_editing_the_model():
    import timm

    model = timm.create_model("resnet18", pretrained=False, num_classes=10, in_chans=1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    sp = SRigL(model, opt, 0.9, 10, delta_t=1, distribution="erk", seed=0)
    assert any(layer.weight.dim() == 4 for layer in sp.layers) and sp.layers[-1].name == "fc.weight"
    x, y = torch.randn(4, 1, 16, 16), torch.randint(0, 10, (4,))
    for _ in range(2):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        sp.step()
    sp.check_invariants()
    assert sp.density() == pytest.approx(0.1, abs=0.01)

    att = nn.Sequential(nn.MultiheadAttention(16, 2, batch_first=True))
    opt = torch.optim.SGD(att.parameters(), lr=0.01)
    sp = SRigL(att, opt, 0.5, 10, delta_t=1, distribution="uniform", seed=0)
    assert {layer.name for layer in sp.layers} == {"0.in_proj_weight", "0.out_proj.weight"}


def test_bad_input_is_a_clear_error(helpers):
    model = helpers.make_mlp()
    opt = _sgd(model)
    for s in (1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match=r"sparsity must be a number in \[0, 1\)"):
            SRigL(model, opt, s, 100)
    big = helpers.make_mlp(hidden=(256, 256))
    with pytest.raises(ValueError, match=r"layer '0.weight'.*constant fan-in would be 0.*erk"):
        SRigL(big, _sgd(big), 0.99, 100, distribution="uniform")
    with pytest.raises(ValueError, match="optimizer does not train"):
        SRigL(big, opt, 0.9, 100)
    conv_free = nn.Sequential(nn.ReLU(), nn.BatchNorm1d(4))
    with pytest.raises(ValueError, match="no prunable layers"):
        SRigL(conv_free, torch.optim.SGD(conv_free.parameters(), lr=0.1), 0.9, 100)
    with pytest.raises(ValueError, match="total_steps"):
        SRigL(model, opt, 0.9)
    with pytest.raises(ValueError, match="method must be one of"):
        make_sparsifier("magic", model, opt, 0.9, 100)
    sp = SRigL(model, opt, 0.9, 100)
    with pytest.raises(RuntimeError, match=r"before optimizer.step\(\)"):
        sp.step()


def test_step_before_optimizer_step_after_a_good_step(digits, helpers):
    model = helpers.make_mlp()
    opt = _sgd(model)
    sp = RigL(model, opt, 0.9, 100)
    helpers.train_steps(model, opt, sp, digits, 1)
    with pytest.raises(RuntimeError, match="once per training step"):
        sp.step()


def test_checkpoint_from_a_different_architecture_is_rejected(helpers):
    a = helpers.make_mlp(hidden=(64, 64))
    sa = SRigL(a, _sgd(a), 0.9, 100, seed=0)
    b = helpers.make_mlp(hidden=(32, 64))
    sb = SRigL(b, _sgd(b), 0.9, 100, seed=0)
    with pytest.raises(ValueError, match="different architecture"):
        sb.load_state_dict(sa.state_dict())
    c = helpers.make_mlp(hidden=(64, 64, 64))
    sc = SRigL(c, _sgd(c), 0.9, 100, seed=0)
    with pytest.raises(ValueError, match="different architecture"):
        sc.load_state_dict(sa.state_dict())
    r = RigL(a, _sgd(a), 0.9, 100, seed=0)
    with pytest.raises(ValueError, match="checkpoint is from SRigL"):
        r.load_state_dict(sa.state_dict())


def test_dense_gradient_is_averaged_over_grad_accumulation_n_steps(helpers):
    model = helpers.make_mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.0)  # weights stay put: every step sees the same gradient
    sp = SRigL(model, opt, 0.9, 100, delta_t=5, grad_accumulation_n=3, seed=0)
    x, y = torch.randn(8, 64), torch.randint(0, 10, (8,))
    seen = []
    for _ in range(5):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        seen.append(None if sp.layers[0].dense_grad is None else sp.layers[0].dense_grad.clone())
        if len(seen) == 5:
            full = model[0].weight.grad  # masked gradient of this step
        opt.step()
        sp.step()
    assert seen[0] is None and seen[1] is None  # steps 1, 2: not within 3 steps of the update at 5
    assert seen[2] is not None
    # after steps 3, 4, 5 the accumulator holds 3 x (g / 3) = g, whose masked part equals the masked gradient
    assert torch.allclose(seen[4][full != 0], full[full != 0], atol=1e-6)
    assert sp.layers[0].dense_grad is None  # consumed by the update


def test_sparse_init_is_the_default_and_keeps_activation_scale():
    # The paper's init: kept weights ~ N(0, 2/k). Masking a dense Kaiming init instead shrinks each layer's
    # pre-activations by about sqrt(density) (here sqrt(0.1) ~ 0.32).
    def out_std(**kw):
        torch.manual_seed(0)
        model = nn.Sequential(*[m for _ in range(4) for m in (nn.Linear(512, 512), nn.ReLU())])
        for lin in model[::2]:
            nn.init.kaiming_normal_(lin.weight, nonlinearity="relu")
            nn.init.zeros_(lin.bias)
        SRigL(model, _sgd(model), 0.9, 100, distribution="uniform", seed=0, **kw)
        with torch.no_grad():
            return float(model(torch.randn(256, 512)).pow(2).mean().sqrt())

    default, masked = out_std(), out_std(sparse_init=False)
    assert 0.5 < default < 2.0  # variance preserved through 4 sparse layers (He: E[relu(z)^2] = Var(x))
    assert masked < 0.2 * default  # about sqrt(0.1)^4 = 0.01 of the scale
    torch.manual_seed(0)
    lin = nn.Linear(400, 300)
    sp = SRigL(nn.Sequential(lin), _sgd(lin), 0.9, 100, distribution="uniform", seed=0)
    k = sp.layers[0].k0
    kept = lin.weight.detach()[sp.layers[0].mask]
    assert kept.numel() == 300 * k and kept.std() == pytest.approx((2.0 / k) ** 0.5, rel=0.05)


def test_named_options_and_exclude_patterns_that_match_nothing(helpers):
    model = helpers.make_mlp()
    sp = SRigL(model, _sgd(model), 0.9, 100, keep_first_layer_dense=True, seed=0)
    assert [layer.name for layer in sp.layers] == ["2.weight", "4.weight"]
    with pytest.raises(ValueError, match=r"exclude patterns \['fc9'\] match no prunable layer.*0.weight"):
        SRigL(model, _sgd(model), 0.9, 100, exclude=["fc9"])
    att = nn.Sequential(nn.MultiheadAttention(16, 2, batch_first=True), nn.Linear(16, 4))
    sp = SRigL(att, torch.optim.SGD(att.parameters(), lr=0.1), 0.5, 10, ignore_mha_layers=True, seed=0)
    assert [layer.name for layer in sp.layers] == ["1.weight"]


def test_conv_transpose2d_is_sparsified_per_output_channel():
    torch.manual_seed(0)
    model = nn.Sequential(nn.ConvTranspose2d(8, 6, 3, stride=2), nn.ReLU(), nn.Conv2d(6, 2, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sp = SRigL(model, opt, 0.8, 20, delta_t=2, distribution="uniform", gamma_sal=0.0, seed=0)
    layer = sp.layers[0]
    assert layer.transposed and layer.shape2d == (6, 72)
    for _ in range(6):
        opt.zero_grad()
        model(torch.randn(4, 8, 5, 5)).square().mean().backward()
        opt.step()
        sp.step()
        sp.check_invariants()
    # constant fan-in per *output channel* (dim 1 of a ConvTranspose2d weight)
    per_out = layer.mask.transpose(0, 1).reshape(6, -1).sum(1)
    assert (per_out == layer.k0).all() and sp.n_updates == 3
    assert layer.mask.shape == model[0].weight.shape


def test_nan_gradient_at_an_update_is_a_clear_error_and_masks_stay(helpers):
    model = helpers.make_mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sp = SRigL(model, opt, 0.9, 100, delta_t=2, seed=0)
    before = {n: m.clone() for n, m in sp.masks.items()}
    x, y = torch.randn(8, 64), torch.randint(0, 10, (8,))
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.step()
    sp.step()
    x[0, 0] = float("nan")
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.step()
    with pytest.raises(NonFiniteError, match=r"non-finite \(NaN/inf\) dense gradient of '0.weight'"):
        sp.step()
    assert all(torch.equal(before[n], m) for n, m in sp.masks.items())


def test_itop_rate_grows_for_dynamic_and_equals_density_for_static(digits, helpers):
    model = helpers.make_mlp()
    opt = _sgd(model)
    sp = SRigL(model, opt, 0.9, 100, delta_t=5, seed=0)
    assert sp.itop_rate() == pytest.approx(sp.density())
    helpers.train_steps(model, opt, sp, digits, 30)
    assert sp.itop_rate() > sp.density()
    assert all(v > 0 for v in sp.active_neurons().values())
    model = helpers.make_mlp()
    opt = _sgd(model)
    st = StaticSparse(model, opt, 0.9, 100, seed=0)
    helpers.train_steps(model, opt, st, digits, 10)
    assert st.itop_rate() == pytest.approx(st.density())
