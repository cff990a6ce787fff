"""User images read as a viewer shows them (bit depth, palette, alpha, CMYK,
EXIF orientation, colour profiles), and bounded before decoding (size from the
header, a cap on the decoded total)."""
import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from engine.data import images, userdata


def save(im, fmt="PNG", **kw) -> bytes:
    buf = io.BytesIO()
    im.save(buf, format=fmt, **kw)
    return buf.getvalue()


def png16(arr: np.ndarray) -> bytes:
    """A 16-bit PNG (gray (H, W), gray+alpha (H, W, 2), RGB (H, W, 3)) written by
    hand: Pillow cannot write 16-bit colour PNGs."""
    h, w = arr.shape[:2]
    ctype = 0 if arr.ndim == 2 else {2: 4, 3: 2, 4: 6}[arr.shape[2]]  # PNG colour types
    raw = b"".join(b"\x00" + arr[y].astype(">u2").tobytes() for y in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, ctype, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def folder(root, files: dict):
    """Write {'class/name.ext': bytes} under root; returns root."""
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def read(root):
    arrays, names = userdata.read_images(root)
    return arrays["x_train"], arrays["y_train"], names


def test_16_bit_grayscale_is_scaled_not_clipped(tmp_path):
    dark = np.array([[0, 1], [2, 4095]], np.uint16)          # 12-bit data in 16-bit PNGs
    bright = np.array([[30000, 40000], [50000, 65535]], np.uint16)
    root = folder(tmp_path / "xray", {"a_dark/0.png": png16(dark), "a_dark/1.png": png16(dark[::-1]),
                                      "b_bright/0.png": png16(bright)})
    x, y, names = read(root)
    assert names == ("a_dark", "b_bright") and y.tolist() == [0, 0, 1]
    assert x.dtype == np.float32 and x.shape == (3, 2, 2, 1)
    np.testing.assert_array_equal(x[0, ..., 0], dark / np.float32(65535))
    np.testing.assert_array_equal(x[2, ..., 0], bright / np.float32(65535))
    assert x[2].min() == pytest.approx(30000 / 65535) and x[2].max() == 1.0
    # Every distinct 16-bit value stays distinct and in order (clipping made the bright class all 255).
    assert np.unique(x[:2]).tolist() == sorted(np.unique(dark / np.float32(65535)).tolist())
    assert x[:2].max() < x[2].min()
    # It also passes the array checks and is stored as float32 in [0, 1].
    data = userdata.load_path(root)
    assert data.arrays["x_train"].dtype == np.float32


def test_16_bit_colour_png_is_read_at_8_bits_by_its_high_byte(tmp_path):
    rgb = np.zeros((2, 2, 3), np.uint16)
    rgb[0, 0] = (65535, 40000, 255)
    root = folder(tmp_path / "c", {"a/0.png": png16(rgb), "b/0.png": png16(rgb)})
    x, _, _ = read(root)
    assert x.dtype == np.uint8 and x[0, 0, 0].tolist() == [255, 156, 0]  # 40000 // 256 = 156


def test_palette_alpha_and_cmyk_look_as_in_a_viewer(tmp_path):
    pal = Image.new("P", (2, 2))
    pal.putpalette([255, 0, 0, 0, 0, 255])
    pal.putpixel((1, 0), 1)                       # blue, but transparent entry
    rgba = Image.new("RGBA", (2, 2), (0, 200, 0, 0))  # fully transparent green ...
    rgba.putpixel((1, 0), (0, 0, 0, 128))             # ... and half-transparent black
    cmyk = Image.new("CMYK", (2, 2), (0, 255, 255, 0))  # red in CMYK
    root = folder(tmp_path / "modes", {"a/pal.png": save(pal, transparency=1), "b/rgba.png": save(rgba),
                                       "c/cmyk.tif": save(cmyk, "TIFF")})
    x, y, names = read(root)
    assert x.shape == (3, 2, 2, 3) and x.dtype == np.uint8
    assert x[0, 0].tolist() == [[255, 0, 0], [255, 255, 255]]  # transparent -> white page
    # Hidden colour under alpha 0 is not shown; black at alpha 128 over white: 255 x 127/255 = 127.
    assert x[1, 0].tolist() == [[255, 255, 255], [127, 127, 127]]
    assert x[2, 0].tolist() == [[255, 0, 0], [255, 0, 0]]


def test_gray_palette_and_gray_with_alpha_stay_grayscale(tmp_path):
    gp = Image.new("P", (2, 2))
    gp.putpalette([0, 0, 0, 128, 128, 128])
    gp.putpixel((0, 0), 1)
    la = Image.new("LA", (2, 2), (100, 255))
    la.putpixel((1, 1), (0, 0))
    root = folder(tmp_path / "g", {"a/p.png": save(gp), "b/la.png": save(la)})
    x, _, _ = read(root)
    assert x.shape == (2, 2, 2, 1)
    assert x[0, ..., 0].tolist() == [[128, 0], [0, 0]]
    assert x[1, ..., 0].tolist() == [[100, 100], [100, 255]]


def test_exif_orientation_is_applied_and_sizes_are_compared_as_shown(tmp_path):
    stored = (np.arange(6, dtype=np.uint8).reshape(2, 3) * 10)  # 3 wide, 2 high as stored
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 CW to display": shown 2 wide, 3 high
    upright = np.zeros((3, 2), np.uint8)
    root = folder(tmp_path / "o", {"a/phone.png": save(Image.fromarray(stored), exif=exif),
                                   "b/plain.png": save(Image.fromarray(upright))})
    x, _, _ = read(root)
    assert x.shape == (2, 3, 2, 1)  # no size mismatch: both are shown 2x3
    assert x[0, ..., 0].tolist() == [[30, 0], [40, 10], [50, 20]]  # np.rot90(stored, -1)


def test_unfaithful_files_are_refused_with_one_line(tmp_path):
    f = Image.fromarray(np.array([[0.0, 2.5], [0.5, 1.0]], np.float32))
    ok = Image.fromarray(np.array([[0.0, 0.25], [0.5, 1.0]], np.float32))
    bad_icc = Image.new("RGB", (2, 2), (10, 20, 30))
    lab = Image.new("LAB", (2, 2))
    root = folder(tmp_path / "r", {"a/f.tif": save(f, "TIFF"), "a/ok.tif": save(ok, "TIFF"),
                                   "b/icc.png": save(bad_icc, icc_profile=b"not a profile"),
                                   "b/lab.tif": save(lab, "TIFF")})
    with pytest.raises(userdata.DataError) as e:  # the header refuses LAB before any decoding
        read(root)
    assert e.value.problems == [
        "'b/lab.tif' is stored in LAB colour, which SpeedLab cannot convert faithfully; save it as RGB"]
    (root / "b/lab.tif").unlink()
    with pytest.raises(userdata.DataError) as e:
        read(root)
    assert e.value.problems[0] == ("'a/f.tif' holds float pixels from 0 to 2.5, not in [0, 1]; "
                                   "save it with 8 or 16 bits per channel")
    assert e.value.problems[1].startswith("'b/icc.png' has a colour profile that cannot be applied (")
    assert e.value.problems[1].endswith("; save it as sRGB") and len(e.value.problems) == 2
    assert all("\n" not in p for p in e.value.problems)
    # Float pixels in [0, 1] are used as they are.
    (root / "a/f.tif").unlink()
    (root / "b/icc.png").unlink()
    (root / "b/ok.tif").write_bytes(save(ok, "TIFF"))
    x, _, _ = read(root)
    assert x.dtype == np.float32 and x[0, ..., 0].tolist() == [[0.0, 0.25], [0.5, 1.0]]


def test_over_large_images_are_refused_from_the_header_before_decoding(tmp_path, monkeypatch):
    wide = save(Image.new("L", (5000, 3)))
    root = folder(tmp_path / "big", {"a/wide.png": wide, "a/ok.png": save(Image.new("L", (4, 3))),
                                     "b/ok.png": save(Image.new("L", (4, 3)))})

    def no_decoding(*a, **k):
        raise AssertionError("decoded pixels")

    monkeypatch.setattr(images, "decode", no_decoding)
    with pytest.raises(userdata.DataError) as e:
        read(root)
    assert e.value.problems == ["'a/wide.png' is 5000x3 pixels; images may be 2 to 4096 pixels a side; "
                                "downscale them (e.g. to 224x224) before adding them"]


def png_header(w: int, h: int, crc_ok: bool = True) -> bytes:
    """A PNG whose header claims w x h 8-bit gray pixels (with almost no pixel data)."""
    def chunk(tag, data):
        crc = zlib.crc32(tag + data) & 0xFFFFFFFF if crc_ok or tag != b"IHDR" else 0
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", crc)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00" * 10)) + chunk(b"IEND", b""))


def test_a_header_beyond_pillows_own_guard_gets_the_side_limit(tmp_path, monkeypatch):
    import warnings

    ok = save(Image.new("L", (4, 3)))
    root = folder(tmp_path / "huge", {"a/huge.png": png_header(100000, 100000), "a/big.png": png_header(10000, 10000),
                                      "a/ok.png": ok, "b/ok.png": ok})
    monkeypatch.setattr(images, "decode", lambda *a, **k: pytest.fail("decoded pixels"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 10000x10000 made Pillow warn of a decompression bomb on stderr
        with pytest.raises(userdata.DataError) as e:
            read(root)
    # Was "'a/huge.png' is too large to open safely (Image size (10000000000 pixels) exceeds limit ...".
    assert e.value.problems == [
        f"'a/{n}.png' is {s}x{s} pixels; images may be 2 to 4096 pixels a side; downscale them (e.g. to 224x224) "
        "before adding them" for n, s in (("big", 10000), ("huge", 100000))]


def test_unreadable_files_are_named_without_python_internals(tmp_path):
    import zipfile

    z = tmp_path / "a.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("a/img0.png", np.random.default_rng(0).bytes(100))
        zf.writestr("a/img1.png", png_header(100000, 100000, crc_ok=False))
        zf.writestr("a/img2.png", b"")
        zf.writestr("a/ok.png", save(Image.new("L", (4, 3))))
        zf.writestr("b/ok.png", save(Image.new("L", (4, 3))))
    with pytest.raises(userdata.DataError) as e:
        userdata.read_images(z)
    # Was "(UnidentifiedImageError: cannot identify image file <_io.BytesIO object at 0x7f55d0c38540>)".
    assert e.value.problems == [
        "'a/img0.png' is not a readable image (not a format Pillow can read); remove or replace it",
        "'a/img1.png' is not a readable image (broken PNG file (bad header checksum in b'IHDR')); remove or replace it",
        "'a/img2.png' is empty (0 bytes); remove or replace it"]


def test_the_decoded_total_is_capped_before_decoding(tmp_path, monkeypatch):
    files = {f"{c}/{i}.png": save(Image.new("RGB", (6, 4))) for c in ("a", "b") for i in range(50)}
    root = folder(tmp_path / "many", files)
    monkeypatch.setenv("SPEEDLAB_MAX_DECODED_MB", str(3000 / 2**20))  # 3,000 bytes
    with pytest.raises(userdata.DataError) as e:
        read(root)
    # 100 images x 4 x 6 pixels x 3 channels x 1 byte = 7,200 bytes.
    assert e.value.problems == ["the images decode to 100 x 4 x 6 x 3 x 1 bytes = 7,200 bytes; the limit is "
                                "3,000 bytes (SPEEDLAB_MAX_DECODED_MB); use fewer or smaller images"]
    npz = tmp_path / "a.npz"
    np.savez(npz, x_train=np.zeros((100, 4, 6, 3), np.uint8), y_train=np.arange(100) % 2)
    with pytest.raises(userdata.DataError) as e:
        userdata.load_path(npz)
    # 7,200 bytes of images + 100 int64 labels (800 bytes).
    assert e.value.problems == ["a.npz holds 8,000 bytes of arrays (x_train 100x4x6x3 uint8, y_train 100 int64); "
                                "the limit is 3,000 bytes (SPEEDLAB_MAX_DECODED_MB); use fewer or smaller images"]
    monkeypatch.delenv("SPEEDLAB_MAX_DECODED_MB")
    assert userdata.max_decoded_bytes() == 2 * 2**30
    x, _, _ = read(root)
    assert x.shape == (100, 4, 6, 3)
