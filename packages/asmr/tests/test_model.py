import math

import pytest
import torch

from iclr24.asmr import ASMR
from iclr24.asmr import SIREN
from iclr24.asmr import build_model
from iclr24.asmr import decompose_coords
from iclr24.asmr import grid_coords


def test_shared_render_equals_per_coordinate_forward_float32(image_model):
    with torch.no_grad():
        y = image_model.render()
        y_ref = image_model(grid_coords(image_model.data_shape))
    assert y.shape == (12 * 16, 3)
    assert (y - y_ref).abs().max() <= 1e-4


@pytest.mark.parametrize("modulator", ["linear", "nonlinear"])
def test_shared_render_equals_forward_float64_image(modulator):
    torch.manual_seed(1)
    m = ASMR(2, 1, (32, 24), [[2, 4, 4], [2, 3, 4]], hidden=16, modulator=modulator).double()
    with torch.no_grad():
        assert (m.render() - m(grid_coords(m.data_shape))).abs().max() <= 1e-9


def test_shared_render_equals_forward_audio_and_video():
    torch.manual_seed(2)
    audio = ASMR(1, 2, (60,), [[3, 4, 5]], hidden=8).double()
    video = ASMR(3, 3, (4, 6, 10), [[2, 1, 2], [1, 3, 2], [5, 2, 1]], hidden=8).double()
    with torch.no_grad():
        for m in (audio, video):
            assert (m.render() - m(grid_coords(m.data_shape))).abs().max() <= 1e-9


def test_render_matches_a_per_pixel_loop_in_row_major_order(image_model):
    with torch.no_grad():
        y = image_model.render().reshape(12, 16, 3)
        for i in range(0, 12, 3):
            for j in range(0, 16, 5):
                single = image_model(torch.tensor([[i, j]]))[0]
                assert torch.allclose(y[i, j], single, atol=1e-5)


def test_activation_sharing_invariance():
    # pre-activations of layer i depend only on the digits of levels 0..i
    torch.manual_seed(3)
    bases = [[2, 2, 4], [2, 4, 2]]
    m = ASMR(2, 1, (16, 16), bases, hidden=8).double()
    coords = grid_coords(m.data_shape)
    digits = decompose_coords(coords, bases)
    with torch.no_grad():
        pres = m.hidden_preactivations(coords)
    for i, pre in enumerate(pres):
        key = digits[:, : i + 1, :].reshape(len(coords), -1)
        groups: dict = {}
        for n, k in enumerate(map(tuple, key.tolist())):
            groups.setdefault(k, []).append(n)
        assert len(groups) == math.prod(math.prod(r[: i + 1]) for r in bases)  # N_i cells
        for idx in groups.values():
            assert (pre[idx] - pre[idx[0]]).abs().max() <= 1e-12
        if i > 0:  # and they do vary with the level-i digit
            assert len({round(float(pre[g[0], 0]), 9) for g in groups.values()}) > 1


def test_chunked_render_equals_unchunked_and_bounds_blocks():
    torch.manual_seed(4)
    m = ASMR(2, 2, (64, 48), [[4, 4, 4], [4, 3, 4]], hidden=8)
    with torch.no_grad():
        full = m.render()
        peak_full = m.last_render_peak_cells
        for chunk in (1, 50, 500):
            y = m.render(chunk_size=chunk)
            assert (y - full).abs().max() <= 1e-5
            # a block is only larger than the chunk when one coarse cell's children already are (prod B <= 16)
            assert m.last_render_peak_cells <= max(chunk, 16)
    assert peak_full == 64 * 48


def test_gradients_through_render_match_forward():
    torch.manual_seed(5)
    m = ASMR(2, 1, (8, 8), [[2, 2, 2], [2, 2, 2]], hidden=4).double()
    target = torch.rand(64, 1, dtype=torch.float64)
    g1 = torch.autograd.grad(((m.render() - target) ** 2).mean(), list(m.parameters()))
    g2 = torch.autograd.grad(((m(grid_coords((8, 8))) - target) ** 2).mean(), list(m.parameters()))
    for a, b in zip(g1, g2):
        assert torch.allclose(a, b, atol=1e-10)


def test_siren_init_ranges(image_model):
    w0 = image_model.layers[0].weight
    assert w0.abs().max() <= 1 / 2  # first layer U(-1/d_in, 1/d_in)
    w1 = image_model.layers[1].weight
    assert w1.abs().max() <= math.sqrt(6 / 8) / 30
    assert image_model.modulators[0].linear.bias is None


def test_validation_errors():
    with pytest.raises(ValueError, match="axis 0: the bases"):
        ASMR(2, 1, (16, 16), [[2, 2, 2], [2, 2, 4]])
    with pytest.raises(ValueError, match="same number of levels"):
        ASMR(2, 1, (16, 16), [[4, 4], [2, 2, 4]])
    with pytest.raises(ValueError, match="n_layers=5 but the bases have 3 levels"):
        ASMR(2, 1, (16, 16), [[2, 2, 4], [2, 2, 4]], n_layers=5)
    with pytest.raises(ValueError, match="3 axes"):
        ASMR(2, 1, (16, 16, 2), [[2, 2, 4], [2, 2, 4]])
    with pytest.raises(ValueError, match="modulator"):
        ASMR(2, 1, (16, 16), [[2, 2, 4], [2, 2, 4]], modulator="cubic")
    m = ASMR(2, 1, (16, 16), [[2, 2, 4], [2, 2, 4]])
    with pytest.raises(ValueError, match="out of range"):
        m(torch.tensor([[0, 16]]))
    with pytest.raises(ValueError, match="integer"):
        m(torch.zeros(3, 2))
    with pytest.raises(ValueError, match=r"shape \(N, 2\)"):
        m(torch.zeros(3, 3, dtype=torch.long))


def test_siren_normalisation_per_axis_on_non_square_grid():
    s = SIREN(2, 1, (4, 10), hidden=8, n_layers=3)
    x = s.normalize_coords(grid_coords((4, 10)))
    assert torch.allclose(x.min(0).values, torch.tensor([-1.0, -1.0]))
    assert torch.allclose(x.max(0).values, torch.tensor([1.0, 1.0]))
    assert torch.allclose(x[1], torch.tensor([-1.0, -1.0 + 2 / 9]))
    with torch.no_grad():
        assert torch.allclose(s.render(chunk_size=7), s(grid_coords((4, 10))))
    with pytest.raises(ValueError, match="out of range"):
        s(torch.tensor([[4, 0]]))


def test_build_model_round_trip(image_model):
    m2 = build_model(image_model.config())
    m2.load_state_dict(image_model.state_dict())
    with torch.no_grad():
        assert torch.equal(m2.render(), image_model.render())
    s = SIREN(1, 1, (30,), 8, 3)
    assert isinstance(build_model(s.config()), SIREN)
    with pytest.raises(ValueError):
        build_model({"model": "nerf"})


def test_8192_squared_grid_renders_in_bounded_blocks():
    torch.manual_seed(6)
    m = ASMR(2, 1, (8192, 8192), [[4, 4, 4, 4, 2, 16]] * 2, hidden=4).eval()
    with torch.no_grad():
        y = m.render(chunk_size=1 << 20)
        assert y.shape == (8192 * 8192, 1)
        assert (
            m.last_render_peak_cells <= 1 << 20
        )  # never a hidden block above 2^20 cells x 4 (unchunked: 2^26)
        idx = torch.tensor([[0, 0], [8191, 8191], [1234, 5678], [4096, 17], [8000, 3]])
        assert (y[idx[:, 0] * 8192 + idx[:, 1]] - m(idx)).abs().max() <= 1e-5


def test_nonlinear_modulator_has_the_official_scale_at_init():
    # The official Modulator_nonlinear returns the 3-layer SIREN's output as is (no omega0 factor), so the
    # modulation inside the sine, omega0 * M(c), is about 0.8 rad RMS at init (24 rad with an extra omega0).
    from iclr24.asmr.model import NonlinearModulator

    torch.manual_seed(7)
    c = torch.rand(4096, 2)
    rms = []
    for _ in range(20):
        mod = NonlinearModulator(2, 128, width=32, omega0=30.0)
        with torch.no_grad():
            m = mod(c)
        # |sin| <= 1, last layer U(+-sqrt(6/32)/30): |M(c)| <= (32 + 1) * sqrt(6/32) / 30 (a hard bound)
        assert m.abs().max() <= 33 * math.sqrt(6 / 32) / 30
        rms.append(float((30.0 * m).pow(2).mean().sqrt()))
    mean_rms = sum(rms) / len(rms)
    assert 0.5 <= mean_rms <= 1.2, mean_rms  # radians inside the sine; the omega0-scaled bug gives ~24


def test_nonlinear_asmr_layer_is_sin_of_omega0_times_pre_plus_modulation():
    torch.manual_seed(8)
    m = ASMR(2, 1, (8, 8), [[2, 2, 2]] * 2, hidden=6, modulator="nonlinear").double()
    coords = grid_coords((8, 8))
    c = m.normalized_digits(coords)
    with torch.no_grad():
        h = torch.sin(30.0 * (m.layers[0](c[:, 0]) + m.modulators[0](c[:, 1])))
        h = torch.sin(30.0 * (m.layers[1](h) + m.modulators[1](c[:, 2])))
        assert (m.out(h) - m(coords)).abs().max() <= 1e-12
