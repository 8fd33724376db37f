import numpy as np
import pytest

from iclr24.asmr import camera_image
from iclr24.asmr import load_audio
from iclr24.asmr import load_image
from iclr24.asmr import load_signal
from iclr24.asmr import load_video
from iclr24.asmr import save_signal


def test_camera_image():
    img = camera_image(64)
    assert img.shape == (64, 64) and img.dtype == np.float32 and 0 <= img.min() and img.max() <= 1


def test_png_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    vals = rng.random((6, 10, 3)).astype(np.float32)
    save_signal(vals, tmp_path / "x.png", "image")
    sig = load_image(tmp_path / "x.png")
    assert sig.kind == "image" and sig.shape == (6, 10) and sig.channels == 3
    assert np.abs(sig.values - vals).max() <= 0.5 / 255 + 1e-6
    save_signal(vals[..., :1], tmp_path / "g.png", "image")
    assert load_signal(tmp_path / "g.png").channels == 1


def test_wav_round_trip(tmp_path):
    t = np.linspace(0, 1, 400, dtype=np.float32)
    vals = np.stack([0.5 * np.sin(40 * t), 0.25 * np.cos(10 * t)], axis=1)
    save_signal(vals, tmp_path / "a.wav", "audio", sample_rate=8000)
    sig = load_audio(tmp_path / "a.wav")
    assert sig.sample_rate == 8000 and sig.shape == (400,) and sig.value_range == (-1.0, 1.0)
    assert np.abs(sig.values - vals).max() < 1e-4


def test_video_npy_and_frame_folder(tmp_path):
    vid = (np.random.default_rng(0).random((3, 5, 6)) * 255).astype(np.uint8)
    np.save(tmp_path / "v.npy", vid)
    sig = load_signal(tmp_path / "v.npy")
    assert sig.kind == "video" and sig.shape == (3, 5, 6) and sig.channels == 1
    frames = tmp_path / "frames"
    for k in range(3):
        save_signal(vid[k, ..., None] / 255.0, frames / f"{k:03d}.png", "image")
    sig2 = load_video(frames)
    assert sig2.shape == (3, 5, 6) and np.abs(sig2.values - sig.values).max() < 1e-6


def test_bad_inputs(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_signal(tmp_path / "missing.png")
    np.save(tmp_path / "bad.npy", np.zeros((2, 2, 2, 2, 2)))
    with pytest.raises(ValueError, match="video must be"):
        load_signal(tmp_path / "bad.npy")
    arr = np.zeros((4, 4, 4), dtype=np.float32)
    arr[0, 0, 0] = np.inf
    np.save(tmp_path / "inf.npy", arr)
    with pytest.raises(ValueError, match="NaN or infinite"):
        load_signal(tmp_path / "inf.npy")
    (tmp_path / "x.txt").write_text("hi")
    with pytest.raises(ValueError, match="unsupported file type"):
        load_signal(tmp_path / "x.txt")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no image frames"):
        load_signal(tmp_path / "empty")


def test_out_of_range_npy_is_refused(tmp_path):
    np.save(tmp_path / "big.npy", np.linspace(0, 300, 64).reshape(8, 8))
    with pytest.raises(ValueError, match=r"values in \[0, 1\].*range \[0, 300\]"):
        load_signal(tmp_path / "big.npy")
    np.save(tmp_path / "neg.npy", -np.ones((4, 8, 8)))
    with pytest.raises(ValueError, match=r"range \[-1, -1\]"):
        load_signal(tmp_path / "neg.npy")
    np.save(tmp_path / "u8.npy", np.full((8, 8), 255, dtype=np.uint8))  # uint8 is scaled, not refused
    assert load_signal(tmp_path / "u8.npy").values.max() == 1.0
    np.save(tmp_path / "empty.npy", np.zeros((0, 8)))
    with pytest.raises(ValueError, match="empty"):
        load_signal(tmp_path / "empty.npy")


def test_truncated_or_corrupt_files_are_one_clear_error(tmp_path):
    save_signal(np.random.default_rng(0).random((32, 32, 3)), tmp_path / "ok.png", "image")
    data = (tmp_path / "ok.png").read_bytes()
    (tmp_path / "cut.png").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="cut.png: cannot read the image"):
        load_signal(tmp_path / "cut.png")
    (tmp_path / "junk.png").write_bytes(b"not a png at all")
    with pytest.raises(ValueError, match="junk.png: cannot read the image"):
        load_signal(tmp_path / "junk.png")
    (tmp_path / "bad.npy").write_bytes(b"\\x93NUMPY garbage")
    with pytest.raises(ValueError, match="bad.npy: not a readable .npy"):
        load_signal(tmp_path / "bad.npy")


def test_sample_image_crops_a_centre_square():
    from iclr24.asmr import sample_image

    rgb = sample_image("chelsea", 32)  # 300x451 -> centre 300x300 -> 32x32
    assert rgb.shape == (32, 32, 3) and rgb.dtype == np.float32 and 0 <= rgb.min() and rgb.max() <= 1
    assert sample_image("chelsea", 32, gray=True).shape == (32, 32)
    full = sample_image("chelsea", None)
    assert full.shape == (300, 300, 3)
    with pytest.raises(ValueError, match="unknown sample image"):
        sample_image("kodim01", 32)
    with pytest.raises(ValueError, match="smaller than size"):
        sample_image("chelsea", 512)
