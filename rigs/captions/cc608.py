#!/usr/bin/env python3
"""CEA-608 captions carried the way broadcast encoders carry them (ATSC A/53 Part 4 `GA94` user
data in H.264 SEI, one cc_data pair per picture on field 1, CC1), added to an H.264 stream that
has none: no muxer or encoder here writes them (FFmpeg has no 608 encoder; libx264 only passes on
the side data of pictures that already have it), so the test streams get them from this.

  cc608.py <in.h264> <out.h264> <fps> <captions.json>

`in.h264`: Annex B, one slice a picture, no B-frames (pictures in decode order are in
presentation order: picture n carries pair n). `captions.json`: a list of
{"at": seconds, "text": "UPPER CASE", "row": 1-15, "mode": "popon"|"rollup"|"painton"} and
{"at": seconds, "clear": true}. A pop-on caption is loaded off screen ahead of `at` and shown by
its End Of Caption on the picture at `at`; roll-up and paint-on text appears as its pairs arrive,
from `at` on. Control codes are sent twice, as encoders do. Prints each caption's picture.
"""
import json
import sys

# Row -> (first byte, second-byte base) of a Preamble Address Code on CC1 (white, column 0).
PAC = {1: (0x11, 0x40), 2: (0x11, 0x60), 3: (0x12, 0x40), 4: (0x12, 0x60), 5: (0x15, 0x40),
       6: (0x15, 0x60), 7: (0x16, 0x40), 8: (0x16, 0x60), 9: (0x17, 0x40), 10: (0x17, 0x60),
       11: (0x10, 0x40), 12: (0x13, 0x40), 13: (0x13, 0x60), 14: (0x14, 0x40), 15: (0x14, 0x60)}
RCL, EDM, CR, ENM, EOC, RU2, RDC = 0x20, 0x2C, 0x2D, 0x2E, 0x2F, 0x25, 0x29
NULL = (0x80, 0x80)


def odd(b):
    """The byte with its odd-parity bit."""
    return b | 0x80 if bin(b).count("1") % 2 == 0 else b


def ctrl(code):
    return [(odd(0x14), odd(code))] * 2  # (sent twice: a lost field must not lose the command)


def pac(row):
    a, b = PAC[row]
    return [(odd(a), odd(b))] * 2


def chars(text):
    allowed = set(" !\"#$%&'()+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]")
    bad = [c for c in text if c not in allowed]
    if bad:
        raise SystemExit("cc608: not in the 608 basic set as ASCII: %r" % bad)
    b = [ord(c) for c in text] + ([0] if len(text) % 2 else [])
    return [(odd(b[i]), odd(b[i + 1]) if b[i + 1] else 0x80) for i in range(0, len(b), 2)]


def schedule(captions, fps, count):
    """The cc pair of every picture (NULL where nothing is sent)."""
    pairs = [NULL] * count
    busy_until = 0
    events = []
    for c in sorted(captions, key=lambda c: c["at"]):
        at = int(round(c["at"] * fps))
        if c.get("clear"):
            seq, show = ctrl(EDM), 0
        elif c.get("mode", "popon") == "popon":
            seq = ctrl(RCL) + ctrl(ENM) + pac(c.get("row", 15)) + chars(c["text"]) + ctrl(EOC)
            show = len(seq) - 2  # the first EOC: the flip
        elif c["mode"] == "rollup":
            seq = ctrl(RU2) + ctrl(CR) + pac(c.get("row", 15)) + chars(c["text"])
            show = 0
        else:  # paint-on
            seq = ctrl(RDC) + pac(c.get("row", 15)) + chars(c["text"])
            show = 0
        start = at - show  # the flip (or the first pair) falls on picture `at`
        if start < busy_until:
            raise SystemExit("cc608: caption at %.3f s overlaps the one before" % c["at"])
        for i, p in enumerate(seq):
            if start + i >= count:
                raise SystemExit("cc608: caption at %.3f s runs past the stream" % c["at"])
            pairs[start + i] = p
        busy_until = start + len(seq)
        events.append((c["at"], at, c.get("text", "")))
    return pairs, events


def sei(pair):
    """An SEI NAL (Annex B) with one CEA-608 pair on field 1."""
    payload = bytes([0xB5, 0x00, 0x31]) + b"GA94" + bytes([0x03, 0x40 | 1, 0xFF,
                                                          0xFC if pair != NULL else 0xF8, pair[0], pair[1], 0xFF])
    body = bytes([4, len(payload)]) + payload + bytes([0x80])
    out, zeros = bytearray(), 0
    for b in body:  # emulation prevention
        if zeros >= 2 and b <= 3:
            out.append(3)
            zeros = 0
        out.append(b)
        zeros = zeros + 1 if b == 0 else 0
    return b"\x00\x00\x00\x01\x06" + bytes(out)


def nal_units(data):
    """(start, end) of each NAL unit's bytes after its start code."""
    starts, i = [], 0
    while True:
        i = data.find(b"\x00\x00\x01", i)
        if i < 0:
            break
        starts.append(i + 3)
        i += 3
    ends = []
    for s in starts[1:]:
        e = s - 3
        while e > 0 and data[e - 1] == 0:  # a 4-byte start code's zero, trailing zeros
            e -= 1
        ends.append(e)
    ends.append(len(data))
    return list(zip(starts, ends))


def main():
    src, dst, fps, script = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    data = open(src, "rb").read()
    units = nal_units(data)
    vcl = [u for u in units if data[u[0]] & 0x1F in (1, 5)]
    pairs, events = schedule(json.load(open(script)), fps, len(vcl))
    out, n = bytearray(), 0
    for s, e in units:
        if data[s] & 0x1F in (1, 5):
            out += sei(pairs[n])
            n += 1
        out += b"\x00\x00\x00\x01" + data[s:e]
    open(dst, "wb").write(out)
    for at, picture, text in events:
        print("caption %.3f s picture %d %s" % (at, picture, text or "(clear)"))


if __name__ == "__main__":
    main()
