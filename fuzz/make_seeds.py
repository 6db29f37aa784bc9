#!/usr/bin/env python3
"""Seed corpora of the fuzz targets (scripts/fuzz), made at run time and never committed.

    make_seeds.py <repo root> <out dir>

Writes <out>/<target>/ for each target from what the repo and the machine have: the real DASH-IF
manifests in ../shared/media, the generated assets (scripts/make-assets), the manifests, playlists,
cues and configs of the tests, small media made with ffmpeg (as CCore/tests/make_test_media.sh
does), HLS playlists ffmpeg writes for that media, and hand-made emsg boxes. Each target's
regression inputs (fuzz/regressions/<target>/) join its corpus.
"""
import base64
import glob
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

root, out = sys.argv[1], sys.argv[2]
shared = os.path.join(os.path.dirname(root), "shared", "media")
SEPARATOR = b"MQ-SEGMENT"  # CCore/fuzz/segment_fuzz.c
counts = {}


def seed(target, data, name=None):
    if isinstance(data, str):
        data = data.encode()
    folder = os.path.join(out, target)
    os.makedirs(folder, exist_ok=True)
    counts[target] = counts.get(target, 0) + 1
    with open(os.path.join(folder, name or "seed-%04d" % counts[target]), "wb") as f:
        f.write(data)
    # The venue proxy's manifest rewriter reads the same texts (first byte: h HLS, d DASH).
    if target in ("mpd", "hls") and not (name or "").startswith("regression-"):
        seed("rewrite", (b"d" if target == "mpd" else b"h") + data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def test_strings():
    """The triple-quoted strings of the Swift tests (interpolations left as written)."""
    for path in glob.glob(os.path.join(root, "Tests", "**", "*.swift"), recursive=True):
        text = read(path).decode("utf-8", "replace")
        for m in re.finditer(r'"""\n(.*?)\n\s*"""', text, re.S):
            lines = m.group(1).split("\n")
            indent = min((len(l) - len(l.lstrip()) for l in lines if l.strip()), default=0)
            yield "\n".join(l[indent:] for l in lines) + "\n"


def boxes(data):
    """Top-level ISO BMFF boxes: (type, bytes)."""
    at = 0
    while at + 8 <= len(data):
        size, kind = struct.unpack(">I4s", data[at:at + 8])
        if size == 1:
            size = struct.unpack(">Q", data[at + 8:at + 16])[0]
        elif size == 0:
            size = len(data) - at
        if size < 8:
            return
        yield kind.decode("latin-1"), data[at:at + size]
        at += size


def split_fmp4(data):
    """A fragmented MP4 file as its init segment and its fragments (moof + mdat, with emsg etc.)."""
    init, segments, current, has_mdat = b"", [], b"", False
    for kind, box in boxes(data):
        if kind in ("ftyp", "moov"):
            init += box
            continue
        if kind in ("styp", "sidx", "emsg", "prft", "moof") and has_mdat:
            segments.append(current)
            current, has_mdat = b"", False
        current += box
        has_mdat = has_mdat or kind == "mdat"
    if current:
        segments.append(current)
    return init, segments


def media(work):
    """Small media made with ffmpeg: {name: bytes}; empty without ffmpeg."""
    if not shutil.which("ffmpeg"):
        print("make_seeds: no ffmpeg: the segment target has only the shared media", file=sys.stderr)
        return {}
    ff = ["ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error", "-y"]
    frag = ["-f", "mp4", "-movflags", "frag_keyframe+empty_moov+default_base_moof"]
    video_in = ["-f", "lavfi", "-t", "1.2", "-i", "testsrc2=size=64x48:rate=10"]
    audio_in = ["-f", "lavfi", "-t", "0.3", "-i", "sine=f=440:r=48000"]
    video = video_in + ["-pix_fmt", "yuv420p"]
    audio = audio_in
    recipes = {
        "h264.mp4": video + ["-c:v", "libx264", "-preset", "ultrafast", "-g", "5", "-bf", "2"] + frag,
        "hevc.mp4": video + ["-c:v", "libx265", "-preset", "ultrafast", "-g", "5", "-x265-params", "log-level=none"] + frag,
        "aac.mp4": audio + ["-ac", "2", "-c:a", "aac", "-frag_duration", "100000"] + frag,
        "ac3.mp4": audio + ["-ac", "1", "-c:a", "ac3", "-frag_duration", "100000"] + frag[:-1] + [frag[-1] + "+delay_moov"],
        "muxed.ts": video_in + audio_in + ["-pix_fmt", "yuv420p"] + ["-c:v", "libx264", "-preset", "ultrafast", "-g", "5", "-c:a", "aac", "-f", "mpegts"],
        "mp2.ts": video_in + audio_in + ["-pix_fmt", "yuv420p"] + ["-c:v", "libx264", "-preset", "ultrafast", "-g", "10", "-c:a", "mp2", "-f", "mpegts"],
    }
    made = {}
    for name, args in recipes.items():
        path = os.path.join(work, name)
        if subprocess.run(ff + args + [path]).returncode == 0:
            made[name] = read(path)
    # HLS playlists of that media, as ffmpeg's muxer writes them (fMP4 and TS, live and VOD).
    for kind, extra in (("ts", []), ("fmp4", ["-hls_segment_type", "fmp4"])):
        for flags in ("program_date_time+independent_segments", "discont_start+omit_endlist"):
            d = tempfile.mkdtemp(dir=work)
            subprocess.run(ff + ["-f", "lavfi", "-t", "3", "-i", "testsrc2=size=64x48:rate=10", "-pix_fmt", "yuv420p", "-c:v", "libx264",
                                "-preset", "ultrafast", "-g", "10", "-f", "hls", "-hls_time", "1",
                                "-hls_flags", flags] + extra + [os.path.join(d, "index.m3u8")])
            for p in glob.glob(os.path.join(d, "*.m3u8")):
                made["hls-%s-%s.m3u8" % (kind, flags)] = read(p)
    return made


def mpd_seeds():
    for path in glob.glob(os.path.join(shared, "**", "*.mpd"), recursive=True):
        seed("mpd", read(path))
    for path in glob.glob(os.path.join(root, "assets", "*", "manifest.mpd")):
        seed("mpd", read(path))
    for text in test_strings():
        if "<MPD" in text:
            seed("mpd", text.lstrip())


def hls_seeds(made):
    for text in test_strings():
        if text.lstrip().startswith("#EXTM3U"):
            seed("hls", text.lstrip())
    for name, data in made.items():
        if name.endswith(".m3u8"):
            seed("hls", data)
    seed("hls", "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1280000,RESOLUTION=640x360,CODECS=\"avc1.64001f,mp4a.40.2\",AUDIO=\"a\"\n"
                "v/360.m3u8\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",NAME=\"en\",DEFAULT=YES,URI=\"a/en.m3u8\"\n")


def cues():
    """SCTE-35 sections of the tests (base64 and hex), and made ones."""
    found = set()
    for path in glob.glob(os.path.join(root, "Tests", "**", "*.swift"), recursive=True):
        text = read(path).decode("utf-8", "replace")
        for m in re.finditer(r'"(/DA[A-Za-z0-9+/=]+)"', text):
            found.add(base64.b64decode(m.group(1)))
    return sorted(found)


def emsg(version, scheme, value, message, timescale=1000, time=20500, duration=4000, event_id=9):
    if version == 0:
        body = struct.pack(">I", 0) + scheme + b"\0" + value + b"\0" + struct.pack(">IIII", timescale, time, duration, event_id)
    else:
        body = struct.pack(">IIQII", 1 << 24, timescale, time, duration, event_id) + scheme + b"\0" + value + b"\0"
    return body + message


def box(kind, body):
    return struct.pack(">I", len(body) + 8) + kind + body


def event_seeds(made):
    sections = cues()
    for s in sections:
        seed("scte35", s)
    bodies = []
    for s in sections[:2]:
        bodies.append(emsg(1, b"urn:scte:scte35:2013:bin", b"", s))
        bodies.append(emsg(0, b"urn:scte:scte35:2013:bin", b"", s))
    bodies.append(emsg(1, b"urn:marquee:broadcast:2026", b"mute", b"", timescale=10, time=300, duration=20, event_id=2))
    bodies.append(emsg(0, b"urn:marquee:ad:2026", b"", b"https://ads.example/creative.mp4", duration=0xFFFFFFFF))
    for body in bodies:
        seed("emsg", body)
    segment = box(b"styp", b"msdhmsdh") + box(b"emsg", bodies[-2]) + box(b"moof", b"\0" * 40) + box(b"mdat", b"\xab" * 300) + box(b"emsg", bodies[0] if sections else bodies[-1])
    seed("emsg", b"\x07" + segment)  # the first byte sets the scanner's chunk size
    seed("emsg", b"\x00" + struct.pack(">I", 1) + b"emsg" + struct.pack(">Q", 16 + len(bodies[-1])) + bodies[-1])
    if "aac.mp4" in made:
        seed("emsg", made["aac.mp4"][:4096])


def config_seeds():
    for text in test_strings():
        if '"sources"' in text:
            seed("config", text)
    seed("config", '{"sources": ["https://cdn.example/live/manifest.mpd", "https://backup.example/live.m3u8"], "autoplay": true,'
                   ' "fit": "cover", "muted": false, "poster": "/opt/poster.png", "advanced": {"stall": {"minRecoveryDelay": 10,'
                   ' "maxRecoveryDelay": 90}, "sync": {"targetLatency": 3}, "analytics": {"customerId": "c1", "endpoint":'
                   ' "https://stats.example/e"}, "interactive": {"url": "https://app.example/overlay"}, "future": [1, 2.5e3, null]}}')
    seed("config", '{"sources": ["http://a.example/live.mpd"]}')
    seed("config", '{"sources": ["http://a.example/\\u00e9t\\u00e9.mpd"], "advanced": {"sync": {"targetLatency": 1e-3}}}')


def schedule_seeds():
    playlists = ('"playlists": {"main": {"items": [{"url": "https://cdn.example/live.mpd", "id": "live"}]},'
                 ' "ads": {"items": [{"url": "ad.mp4", "duration": 15}, {"url": "ad2.mp4", "duration": 15}], "repeat": "all"},'
                 ' "night": {"items": [{"url": "closed.png", "duration": 60}], "repeat": "all"}}')
    seed("schedule", '{"timeZone": "Europe/Amsterdam", "default": "main", ' + playlists +
         ', "slots": [{"id": "n", "playlist": "night", "days": ["fri", "sat"], "from": "22:00", "to": "06:00", "startDate": "2026-03-28",'
         ' "endDate": "2026-10-25", "priority": 2}], "interrupts": [{"id": "a", "playlist": "ads", "secondsPerHour": 360, "from": "08:00",'
         ' "to": "20:00"}], "events": [{"id": "e", "playlist": "night", "start": "2027-01-15T12:00:00+01:00", "duration": 600}]}')
    seed("schedule", '{"default": "main", ' + playlists + '}')
    seed("schedule", '{"timeZone": "America/New_York", "default": "ads", ' + playlists +
         ', "interrupts": [{"playlist": "night", "secondsPerHour": 3000}, {"playlist": "ads", "secondsPerHour": 600}]}')


def misc_seeds(made):
    texts = {
        0: ["PT2S", "PT0H0M8.000S", "P1DT2H", "-PT1.5S", "P1Y2M3W4DT5H6M7,5S", "PT1,5S"],
        1: ["2026-11-22T03:20:00Z", "2026-11-22T03:20:00.123456+05:30", "1970-01-01T00:00:00", "2026-02-29T23:59:60-12:00"],
        2: ["Sun, 06 Nov 1994 08:49:37 GMT", "Thu, 01 Jan 1970 00:00:00 GMT"],
        6: ["seg-$RepresentationID$-$Number%05d$.m4s", "$Time$/$Bandwidth$/$$$Number$", "a$Number%0d$b$"],
    }
    for selector, values in texts.items():
        for v in values:
            seed("misc", bytes([selector]) + v.encode())
    for name, data in made.items():
        if name.endswith(".mp4"):
            init, segments = split_fmp4(data)
            if segments:
                seed("misc", bytes([3]) + segments[0][:2048])
                head = init[:4096]
                seed("misc", bytes([5]) + struct.pack(">H", len(head)) + head + segments[0][:1024])
        elif name.endswith(".ts"):
            seed("misc", bytes([3]) + data[:188 * 8])
            seed("misc", bytes([4]) + data[:188 * 12])


def segment_seeds(made):
    """The C core's input: two option bytes, then segments separated by SEPARATOR."""
    def put(flags, options, segments):
        seed("segment", bytes([flags, options]) + SEPARATOR.join(segments))

    for name, data in made.items():
        if name.endswith(".mp4"):
            init, segments = split_fmp4(data)
            kind = 2 if name in ("aac.mp4", "ac3.mp4") else 0  # tracks: audio / video
            put(kind, 0, [init] + segments[:3])
            put(kind | (3 << 3), 1, [init] + segments[:2])  # chunked pushes, rollover
            put(kind, 2, [init, b"".join(segments[:2])])  # no segment ends marked
        elif name.endswith(".ts"):
            packets = [data[i:i + 188 * 40] for i in range(0, min(len(data), 188 * 120), 188 * 40)]
            put(1 | (2 << 1), 0, packets)  # both tracks
            put(1, 0, packets[:1])
    # Rendition switches (byte 1 bit 4): another init segment and its media after the first's,
    # pushed with push_init, while a rollover (bit 0) or damage has the old one injected.
    videos = [split_fmp4(made[n]) for n in ("h264.mp4", "hevc.mp4") if n in made]
    if len(videos) == 2:
        (i1, s1), (i2, s2) = videos
        put(0, 16 | 1, [i1] + s1[:2] + [i2] + s2[:2] + [i1] + s1[2:3])
        put(0, 16, [i1, s1[0], s1[1][:len(s1[1]) // 2], i2] + s2[:2])  # a cut segment, then a switch
    # The byte queue scripted (byte 1 bit 3): each segment behind its operation byte (see
    # CCore/fuzz/segment_fuzz.c): init, a rollover, a switch mid-injection, damage, a reset.
    for name, data in made.items():
        if name.endswith(".mp4"):
            init, segments = split_fmp4(data)
            if len(segments) >= 2:
                put(0, 8, [bytes([0x09]) + init, bytes([0x08 | 0x10 | 0x40]) + segments[0],
                           bytes([0x08 | 0xa0]) + segments[1], bytes([0x01 | 0x08 | 0x20]) + init,
                           bytes([0x08 | 0x60]) + segments[0][:40], bytes([0x04 | 0x08 | 0x20]),
                           bytes([0x02 | 0x08 | 0x40]) + segments[1], bytes([0x05 | 0x08 | 0x20]) + init])
    # One real DASH-IF audio init + segment, when small enough to mutate quickly.
    for folder in glob.glob(os.path.join(shared, "dashif-livesim2", "*", "A48")):
        init, first = os.path.join(folder, "init.mp4"), os.path.join(folder, "1.m4s")
        if os.path.exists(init) and os.path.exists(first) and os.path.getsize(first) < 100_000:
            put(2, 0, [read(init), read(first)])
            break


def regressions():
    for folder in glob.glob(os.path.join(root, "fuzz", "regressions", "*")):
        for path in glob.glob(os.path.join(folder, "*")):
            seed(os.path.basename(folder), read(path), "regression-" + os.path.basename(path))


with tempfile.TemporaryDirectory() as work:
    made = media(work)
mpd_seeds()
hls_seeds(made)
event_seeds(made)
config_seeds()
schedule_seeds()
misc_seeds(made)
segment_seeds(made)
regressions()
print("make_seeds: " + ", ".join("%s %d" % kv for kv in sorted(counts.items())))
