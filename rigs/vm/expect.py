#!/usr/bin/env python3
"""Expected screens for the VM suite, and the pixel comparison (python3 stdlib + ffmpeg).

  expect.py pattern W H out.ppm      the still test pattern (8 bars + an asymmetric top band)
  expect.py selftest                 font parse check

Expected pictures come from ffmpeg's own decode + libswscale scale (bicubic, straight to
BGR0 as the player does), cropped / transposed / padded per fit mode: an independent
computation of the fit rectangle, same scaler library. Overlays are rendered here from the
glyph rows parsed out of CCore/src/video/video_overlay.c, with the geometry documented there.
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

BARS = [(255, 255, 255), (255, 255, 0), (0, 255, 255), (0, 255, 0),
        (255, 0, 255), (255, 0, 0), (0, 0, 255), (0, 0, 0)]


def pattern(w, h):
    """8 vertical bars; the top quarter is white on the left half and dark grey on the right."""
    rows = []
    for y in range(h):
        row = bytearray()
        for x in range(w):
            if y < h // 4:
                c = (255, 255, 255) if x < w // 2 else (40, 40, 40)
            else:
                c = BARS[x * 8 // w]
            row += bytes(c)
        rows.append(bytes(row))
    return b"".join(rows)


def write_ppm(path, w, h, rgb):
    with open(path, "wb") as f:
        f.write(b"P6\n%d %d\n255\n" % (w, h))
        f.write(rgb)


def read_ppm(path):
    data = open(path, "rb").read()
    fields, pos = [], 0
    while len(fields) < 4:  # magic, w, h, maxval; skip comments
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos) + 1
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    pos += 1
    w, h = int(fields[1]), int(fields[2])
    return w, h, data[pos:pos + w * h * 3]


# ---- fit rectangles (an independent spelling of mq_fit_compute) ----

def centred(w, h, dw, dh):
    return ((dw - w) // 2, (dh - h) // 2, w, h)


def fit_rect(fit, sw, sh, dw, dh):
    """-> (crop x, y, w, h), (dst x, y, w, h)"""
    crop = (0, 0, sw, sh)
    wider = sw * dh > dw * sh
    if fit == "fill":
        return crop, (0, 0, dw, dh)
    if fit == "cover":
        cw, ch = (sh * dw // dh, sh) if wider else (sw, sw * dh // dw)
        return (((sw - cw) // 2) & ~1, ((sh - ch) // 2) & ~1, cw, ch), (0, 0, dw, dh)
    if fit == "scaledown" and sw <= dw and sh <= dh:
        return crop, centred(sw, sh, dw, dh)
    if wider:
        return crop, centred(dw, (sh * dw + sw // 2) // sw, dw, dh)
    return crop, centred((sw * dh + sh // 2) // sh, dh, dw, dh)


def ffmpeg_rgb(src, vf, w, h):
    out = subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-i", src, "-frames:v", "1",
                          "-vf", vf, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
                         check=True, capture_output=True).stdout
    assert len(out) == w * h * 3, (len(out), w, h)
    return out


def expected_fit(src, sw, sh, W, H, fit, rotation=0):
    """The screen for picture `src` (sw x sh) fitted on W x H and rotated clockwise."""
    turned = rotation in (90, 270)
    pw, ph = (H, W) if turned else (W, H)
    (cx, cy, cw, ch), (x, y, w, h) = fit_rect(fit, sw, sh, pw, ph)
    vf = []
    if (cx, cy, cw, ch) != (0, 0, sw, sh):
        vf.append("crop=%d:%d:%d:%d" % (cw, ch, cx, cy))
    vf.append("scale=%d:%d:flags=bicubic" % (w, h))
    vf.append("format=bgr0")
    # the rectangle on the (rotated) screen
    if rotation == 90:
        vf.append("transpose=clock")
        x, y, w, h = W - y - h, x, h, w
    elif rotation == 270:
        vf.append("transpose=cclock")
        x, y, w, h = y, H - x - w, h, w
    elif rotation == 180:
        vf += ["hflip", "vflip"]
        x, y = W - x - w, H - y - h
    vf.append("pad=%d:%d:%d:%d:black" % (W, H, x, y))
    return ffmpeg_rgb(src, ",".join(vf), W, H), (x, y, w, h)


# ---- overlays ----

def load_font():
    text = open(os.path.join(REPO, "CCore/src/video/video_overlay.c")).read()
    font = {}
    for m in re.finditer(r"\{'(\\'|.)', \{((?:\"[.#]{5}\",? ?){7})\}\}", text):
        ch = m.group(1).replace("\\'", "'")
        font[ch] = re.findall(r"\"([.#]{5})\"", m.group(2))
    return font


def fill(buf, W, x, y, w, h, rgb):
    px = bytes(rgb) * w
    for j in range(y, y + h):
        buf[(j * W + x) * 3:(j * W + x + w) * 3] = px


def draw_text(buf, W, H, text, bx, bw, by, bh, font):
    s = max(1, min(W, H) // 160)
    n = min(len(text), W // (6 * s) - 2)
    tw, th = n * 6 * s - s, 7 * s
    x0, y0 = bx + (bw - tw) // 2, by + (bh - th) // 2
    for i, ch in enumerate(text[:n].upper()):
        rows = font.get(ch, font["?"])
        for r, row in enumerate(rows):
            for c, bit in enumerate(row):
                if bit == "#":
                    fill(buf, W, x0 + i * 6 * s + c * s, y0 + r * s, s, s, (255, 255, 255))


def slate(W, H, message):
    buf = bytearray(bytes((0x10, 0x20, 0x40)) * (W * H))
    draw_text(buf, W, H, message, 0, W, 0, H, load_font())
    return bytes(buf)


def band(base, W, H, message="BUFFERING"):
    buf = bytearray(base)
    s = max(1, min(W, H) // 160)
    fill(buf, W, 0, H - 16 * s, W, 16 * s, (0x20, 0x20, 0x20))
    draw_text(buf, W, H, message, 0, W, H - 16 * s, 16 * s, load_font())
    return bytes(buf)


# ---- comparison ----

def compare(got, want, W, H, tol=24):
    """-> dict(max=largest channel error, bad=pixels over tol, total)"""
    assert len(got) == len(want) == W * H * 3
    bad = worst = 0
    if got == want:
        return {"max": 0, "bad": 0, "total": W * H}
    for i in range(0, W * H * 3, 3):
        e = max(abs(got[i] - want[i]), abs(got[i + 1] - want[i + 1]), abs(got[i + 2] - want[i + 2]))
        if e:
            worst = max(worst, e)
            if e > tol:
                bad += 1
    return {"max": worst, "bad": bad, "total": W * H}


def main(argv):
    if argv[1] == "pattern":
        w, h = int(argv[2]), int(argv[3])
        write_ppm(argv[4], w, h, pattern(w, h))
    elif argv[1] == "selftest":
        f = load_font()
        assert len(f) >= 48 and all(len(r) == 7 for r in f.values()), len(f)
        print("font glyphs:", len(f))


if __name__ == "__main__":
    main(sys.argv)
