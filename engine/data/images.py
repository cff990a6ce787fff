"""Reading image files as an image viewer shows them, with bounded memory (Pillow, no TF).

Two passes keep memory bounded: `header` opens a file lazily (Pillow reads only
the header: size, mode, EXIF orientation, palette, colour profile), so that
sizes and the decoded total can be checked before any pixel is decoded;
`decode` then turns one file at a time into pixels.

What a naive ``np.asarray(im.convert("L" or "RGB"))`` gets wrong, and what is done instead:

- EXIF orientation: phone photos are stored sideways with an orientation tag;
  viewers rotate them (``ImageOps.exif_transpose``).
- Bit depth: 16-bit grayscale (modes I;16*, or I from a 16-bit PNG/TIFF) is
  clipped to 255 by ``convert("L")``; here it is scaled to [0, 1] as float32
  (v / 65535), so every value stays distinct and in order. 16-bit colour PNGs
  are decoded by Pillow at 8 bits per channel (the high byte: scaled, not clipped).
  32-bit float grayscale (mode F) is used as is when it lies in [0, 1], else refused.
- Palette (P): converted through its palette (RGBA when it has a transparent entry);
  a palette of grays counts as grayscale.
- Alpha (LA, RGBA, PA, premultiplied La/RGBa): composited over white, as the
  transparent parts look on a white page, instead of revealing whatever colour
  is stored under them.
- CMYK (and YCbCr, HSV): converted to RGB; Adobe's inverted CMYK JPEGs are
  handled by Pillow's decoder.
- Colour profiles: an embedded ICC profile is applied (``ImageCms``, to sRGB),
  as colour-managed viewers do; a profile that cannot be applied refuses the file.
- Several frames (animated GIF/WebP, multi-page TIFF): the first frame, which a
  viewer shows first.
- LAB images, 32-bit integer and out-of-range float pixels: refused with one line.

References: Pillow handbook, "Concepts: Modes" and ``ImageOps.exif_transpose``
(https://pillow.readthedocs.io/en/stable/handbook/concepts.html#modes).
"""
from __future__ import annotations

import io
import warnings
from dataclasses import dataclass
from typing import Optional

import numpy as np

GRAY_MODES = ("1", "L", "LA", "La", "I", "I;16", "I;16B", "I;16L", "I;16N", "F")
HIGH_DEPTH_MODES = ("I", "I;16", "I;16B", "I;16L", "I;16N", "F")
ALPHA_MODES = ("LA", "La", "RGBA", "RGBa", "PA")
# EXIF orientations 5-8 swap width and height (ImageOps.exif_transpose).
_SWAPS = (5, 6, 7, 8)
_ORIENTATION = 0x0112
WHITE = 255


class ImageFault(ValueError):
    """A file that cannot be read faithfully: one line (ending in a fix) for the user."""


@dataclass(frozen=True)
class Header:
    """What a file's header says: size as displayed (W, H, after EXIF
    orientation), whether it shows as grayscale, and whether its pixels need
    more than 8 bits (then the data set becomes float32 in [0, 1])."""

    width: int
    height: int
    gray: bool
    high_depth: bool
    mode: str


def _pil():
    from PIL import Image

    return Image


def open_image(data: bytes):
    """A lazily opened PIL image (header read, no pixels decoded)."""
    return _pil().open(io.BytesIO(data))


def _open_unguarded(data: bytes):
    """(image, why not): `data` opened by the first Pillow plugin that knows its
    signature, without Pillow's pixel-count guard, so that an over-large image's
    size can still be read from its header; (None, the plugin's reason, or "" when
    no plugin knows the signature) otherwise."""
    Image = _pil()
    Image.init()
    why = ""
    for fmt in Image.ID:
        factory, accept = Image.OPEN[fmt]
        if accept is None:  # formats without a signature would take any bytes
            continue
        try:
            ok = accept(data[:16])
            if isinstance(ok, str):  # known but unsupported here, e.g. "... support not installed"
                why = why or ok
                continue
            if not ok:
                continue
            return factory(io.BytesIO(data), ""), ""
        except SyntaxError as e:  # Pillow's "broken or not this format", e.g. a bad header checksum
            why = why or str(e).splitlines()[0][:120]
        except Exception:  # noqa: BLE001 - struct errors and such: nothing a user can act on
            continue
    return None, why


def read_header(data: bytes, name: str) -> Header:
    """The Header of image file bytes `data` (no pixel decoded), also for images
    too large for Pillow's own guard: callers refuse those by their size before
    decoding. Raises ImageFault (one line ending in a fix)."""
    Image = _pil()
    if not data:
        raise ImageFault(f"{name!r} is empty (0 bytes); remove or replace it")
    try:
        with warnings.catch_warnings():  # sizes are checked against MAX_SIDE instead
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            im = Image.open(io.BytesIO(data))
    except (Image.DecompressionBombError, Image.UnidentifiedImageError):
        im, why = _open_unguarded(data)
        if im is None:  # Pillow's own message names a BytesIO object: useless to the user
            raise ImageFault(f"{name!r} is not a readable image ({why or 'not a format Pillow can read'}); "
                             "remove or replace it") from None
    with im:
        return header(im, name)


def _palette_is_gray(im) -> bool:
    pal = getattr(im, "palette", None)
    raw = getattr(pal, "palette", None) if pal is not None else None
    if not raw or getattr(pal, "mode", "RGB") not in ("RGB", "RGBA"):
        return False
    step = len(pal.mode)
    px = np.frombuffer(bytes(raw), np.uint8)
    px = px[: len(px) // step * step].reshape(-1, step)
    return bool(len(px)) and bool((px[:, 0] == px[:, 1]).all() and (px[:, 1] == px[:, 2]).all())


def _orientation(im) -> int:
    if im.format == "PNG" and "exif" not in im.info:
        return 1  # Pillow would decode the whole PNG looking for a late eXIf chunk
    try:
        return int(im.getexif().get(_ORIENTATION, 1) or 1)
    except Exception:  # noqa: BLE001 - unreadable EXIF: shown unrotated, as most viewers do
        return 1


def _depth_bits(im) -> Optional[int]:
    """Bits per sample of a mode-I image from its header: 16 for PNG (its
    deepest integer format), the TIFF BitsPerSample tag, else None."""
    if im.format == "PNG":
        return 16
    tags = getattr(im, "tag_v2", None)
    if tags is not None:
        bits = tags.get(258)
        if isinstance(bits, (tuple, list)):
            bits = bits[0] if bits else None
        return int(bits) if bits else None
    return None


def header(im, name: str) -> Header:
    """The Header of an opened image (no pixel decoded). Raises ImageFault for a
    mode that cannot be shown faithfully."""
    mode = im.mode
    if mode == "LAB":
        raise ImageFault(f"{name!r} is stored in LAB colour, which SpeedLab cannot convert faithfully; "
                         "save it as RGB")
    if mode == "I" and _depth_bits(im) not in (None, 16):
        raise ImageFault(f"{name!r} holds {_depth_bits(im)}-bit integer pixels; save it with 8 or 16 bits "
                         "per channel")
    w, h = im.size
    if _orientation(im) in _SWAPS:
        w, h = h, w
    gray = mode in GRAY_MODES or (mode in ("P", "PA") and _palette_is_gray(im))
    return Header(w, h, gray, mode in HIGH_DEPTH_MODES, mode)


def _apply_profile(im, name: str):
    """`im` with its embedded ICC profile applied (to sRGB), or unchanged without one."""
    icc = im.info.get("icc_profile")
    if not icc:
        return im
    from PIL import ImageCms

    try:
        src = ImageCms.ImageCmsProfile(io.BytesIO(icc))
        desc = (ImageCms.getProfileDescription(src) or "").strip().lower()
        if desc.startswith("srgb"):
            return im  # already what the array means
        alpha = im.getchannel("A") if im.mode in ("RGBA", "LA") else None
        base = im.convert("RGB") if im.mode in ("RGBA",) else im.convert("L") if im.mode == "LA" else im
        out = ImageCms.profileToProfile(base, src, ImageCms.createProfile("sRGB"), outputMode="RGB")
    except Exception as e:  # noqa: BLE001 - a broken or unsupported profile
        raise ImageFault(f"{name!r} has a colour profile that cannot be applied ({type(e).__name__}: "
                         f"{str(e).splitlines()[0][:80] if str(e) else ''}); save it as sRGB") from None
    if alpha is not None:
        out.putalpha(alpha)
    return out


def _over_white(im):
    """Composite an image with alpha over white; returns mode L or RGB."""
    Image = _pil()
    if im.mode in ("La", "LA", "PA"):
        im = im.convert("LA") if im.mode == "La" else im.convert("RGBA") if im.mode == "PA" else im
    if im.mode == "RGBa":
        im = im.convert("RGBA")
    if im.mode == "LA":
        bg = Image.new("LA", im.size, (WHITE, 255))
        return Image.alpha_composite(bg.convert("RGBA"), im.convert("RGBA")).convert("L")
    bg = Image.new("RGBA", im.size, (WHITE, WHITE, WHITE, 255))
    return Image.alpha_composite(bg, im.convert("RGBA")).convert("RGB")


def decode(im, name: str, gray: bool, high_depth: bool) -> np.ndarray:
    """Pixels of an opened image as a viewer shows them: (H, W) if `gray` else
    (H, W, 3); uint8 0..255, or float32 in [0, 1] when `high_depth` (the data set
    holds 16-bit or float images). Raises ImageFault."""
    from PIL import ImageOps

    if getattr(im, "n_frames", 1) > 1:
        im.seek(0)
    im.load()
    im = ImageOps.exif_transpose(im)
    mode = im.mode
    if mode in HIGH_DEPTH_MODES:
        a = np.asarray(im)
        if mode == "F":
            a = a.astype(np.float32)
            if not np.isfinite(a).all() or a.min() < 0.0 or a.max() > 1.0:
                lo, hi = float(np.nanmin(a)), float(np.nanmax(a))
                raise ImageFault(f"{name!r} holds float pixels from {lo:g} to {hi:g}, not in [0, 1]; "
                                 "save it with 8 or 16 bits per channel")
            v = a
        else:
            a = a.astype(np.int64)
            if a.min() < 0 or a.max() > 65535:
                raise ImageFault(f"{name!r} holds pixel values from {a.min()} to {a.max()}, beyond 16 bits; "
                                 "save it with 8 or 16 bits per channel")
            v = (a / 65535.0).astype(np.float32)
        if not gray:
            v = np.repeat(v[..., None], 3, axis=-1)
        return v if high_depth else np.rint(v * 255.0).astype(np.uint8)
    if mode == "P":
        im = im.convert("RGBA" if "transparency" in im.info else "RGB")
    im = _apply_profile(im, name)
    if im.mode in ALPHA_MODES:
        im = _over_white(im)
    elif im.mode not in ("L", "RGB"):
        im = im.convert("L" if im.mode == "1" else "RGB")  # 1, CMYK, YCbCr, HSV, RGBX
    im = im.convert("L" if gray else "RGB")
    a = np.asarray(im, dtype=np.uint8)
    return (a.astype(np.float32) / 255.0) if high_depth else a
