#!/usr/bin/env python3
"""Validates Marquee board profiles (boards/*.json) and the systemd unit (boards/marquee.service).

    check_boards.py [--self-test] [--service FILE] PROFILE.json...

Every field must be known, of the right type and in range (see boards/README.md, which
documents the same schema); `name` must equal the file name. --self-test first checks that
broken profiles are rejected. Python 3 standard library only. Exit 0 when all is valid.
"""
import json
import os
import re
import sys

ARCHES = ("x86_64", "aarch64", "armhf")
FORMATS = ("XRGB8888", "XBGR8888", "ARGB8888", "XRGB2101010", "RGB565", "NV12", "YUYV")
ROTATIONS = (0, 90, 180, 270)
MODE_RE = re.compile(r"^(preferred|highest|[1-9][0-9]{2,4}x[1-9][0-9]{2,4}(@[1-9][0-9]{0,2}(\.[0-9]+)?)?)$")
DECODER_RE = re.compile(r"^[a-z0-9_]+$")
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def string(v):
    return isinstance(v, str) and v != "" or "a non-empty string"


def optional_string(v):
    return v is None or (isinstance(v, str) and v != "") or "null or a non-empty string"


def one_of(*choices):
    # bool is an int in Python: true must not pass for 1.
    return lambda v: (not isinstance(v, bool) and v in choices) or "one of " + ", ".join(map(str, choices))


def int_in(lo, hi):
    return lambda v: (is_int(v) and lo <= v <= hi) or f"an integer in {lo}...{hi}"


def queue_frames(v):
    return (is_int(v) and (v == 0 or 2 <= v <= 240)) or "0 (auto) or an integer in 2...240"


def card(v):
    return v is None or (isinstance(v, str) and v.startswith("/dev/dri/")) or "null or a /dev/dri/ path"


def plane(v):
    return v in ("primary", "overlay") or (is_int(v) and 0 <= v < 64) or '"primary", "overlay" or a plane index 0...63'


def mode(v):
    return (isinstance(v, str) and MODE_RE.match(v) is not None) or '"preferred", "highest", "WxH" or "WxH@R"'


def rotations(v):
    ok = isinstance(v, list) and 0 in v and all(is_int(r) and r in ROTATIONS for r in v) and len(set(v)) == len(v)
    return ok or "a list of distinct rotations from 0, 90, 180, 270 that contains 0"


def decoders(v):
    ok = isinstance(v, list) and all(isinstance(d, str) and DECODER_RE.match(d) for d in v) and len(set(v)) == len(v)
    return ok or "a list of distinct libavcodec decoder names ([a-z0-9_]+)"


# path -> (check, default). The README documents each with the mpv / GStreamer option it mirrors.
SCHEMA = {
    "schema": (one_of(1), None),
    "name": (lambda v: (isinstance(v, str) and NAME_RE.match(v) is not None) or "a lower-case name [a-z0-9_-]", None),
    "description": (string, None),
    "arch": (one_of(*ARCHES), None),
    "video.output": (one_of("drm", "headless"), "drm"),
    "video.card": (card, None),
    "video.connector": (optional_string, None),
    "video.plane": (plane, "primary"),
    "video.mode": (mode, "preferred"),
    "video.rotation": (one_of(*ROTATIONS), 0),
    "video.hardware_rotations": (rotations, [0]),
    "video.format": (one_of(*FORMATS), "XRGB8888"),
    "video.queue_frames": (queue_frames, 0),
    "audio.pcm": (string, "default"),
    "audio.sample_rate": (one_of(44100, 48000, 96000), 48000),
    "audio.channels": (int_in(1, 8), 2),
    "audio.buffer_time_ms": (int_in(20, 2000), 60),
    "audio.period_time_ms": (int_in(1, 500), 10),
    "decode.decoders": (decoders, []),
    "decode.threads": (int_in(0, 64), 0),
    "decode.max_width": (int_in(16, 16384), 1920),
    "decode.max_height": (int_in(16, 16384), 1080),
    "decode.max_fps": (int_in(1, 240), 60),
    "memory_budget_mib": (int_in(16, 4096), 64),
}
REQUIRED = ("schema", "name", "description", "arch")
SECTIONS = sorted({k.split(".")[0] for k in SCHEMA if "." in k})


def validate(profile, expected_name=None):
    """Returns the list of problems of one parsed profile (empty when valid)."""
    errs = []
    if not isinstance(profile, dict):
        return ["the profile must be a JSON object"]
    for key in REQUIRED:
        if key not in profile:
            errs.append(f"{key}: required")
    for key, value in profile.items():
        if key in SECTIONS:
            if not isinstance(value, dict):
                errs.append(f"{key}: must be an object")
                continue
            for sub, v in value.items():
                path = f"{key}.{sub}"
                if path not in SCHEMA:
                    errs.append(f"{path}: unknown field")
                    continue
                verdict = SCHEMA[path][0](v)
                if verdict is not True:
                    errs.append(f"{path}: {json.dumps(v)} is not {verdict}")
        elif key in SCHEMA:
            verdict = SCHEMA[key][0](value)
            if verdict is not True:
                errs.append(f"{key}: {json.dumps(value)} is not {verdict}")
        else:
            errs.append(f"{key}: unknown field")
    if not errs:
        errs += cross_checks(profile, expected_name)
    return errs


def resolved(profile, path):
    section, _, sub = path.partition(".")
    if sub:
        return profile.get(section, {}).get(sub, SCHEMA[path][1])
    return profile.get(path, SCHEMA[path][1])


def cross_checks(profile, expected_name):
    errs = []
    if expected_name is not None and profile["name"] != expected_name:
        errs.append(f"name: {profile['name']!r} differs from the file name {expected_name!r}")
    if resolved(profile, "audio.period_time_ms") * 2 > resolved(profile, "audio.buffer_time_ms"):
        errs.append("audio.period_time_ms: must be at most half of audio.buffer_time_ms")
    if resolved(profile, "video.output") == "headless":
        for key in ("card", "connector"):
            if profile.get("video", {}).get(key) is not None:
                errs.append(f"video.{key}: meaningless with video.output \"headless\"")
    return errs


def check_file(path):
    name = os.path.splitext(os.path.basename(path))[0]
    try:
        with open(path, encoding="utf-8") as f:
            profile = json.load(f)
    except (OSError, ValueError) as e:
        return [f"cannot read: {e}"]
    return validate(profile, name)


def check_service(path):
    """The unit's restart policy: a crash loop keeps being restarted, a hang is killed."""
    try:
        text = open(path, encoding="utf-8").read()
    except OSError as e:
        return [f"cannot read: {e}"]
    keys = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")) and "=" in line:
            k, _, v = line.partition("=")
            keys[k.strip()] = v.strip()
    errs = []
    want = {"Type": "notify", "Restart": "always", "StartLimitIntervalSec": "0", "NotifyAccess": "main"}
    for k, v in want.items():
        if keys.get(k) != v:
            errs.append(f"{k}={keys.get(k)} (want {v})")
    for k, lo in (("WatchdogSec", 1), ("RestartSec", 2)):
        m = re.match(r"^([0-9]+)s?$", keys.get(k, ""))
        if not m or int(m.group(1)) < lo:
            errs.append(f"{k}={keys.get(k)} (want >= {lo} s)")
    if "ExecStart" not in keys:
        errs.append("ExecStart missing")
    return errs


def self_test():
    good = {"schema": 1, "name": "x", "description": "d", "arch": "aarch64"}
    cases = {
        "unknown top-level field": dict(good, colour="red"),
        "unknown section field": dict(good, video={"rotate": 90}),
        "wrong type (string for int)": dict(good, audio={"buffer_time_ms": "60"}),
        "bool for int": dict(good, decode={"threads": True}),
        "missing required": {k: v for k, v in good.items() if k != "arch"},
        "bad enum": dict(good, arch="mips"),
        "bool for an enum int": dict(good, schema=True),
        "bad mode": dict(good, video={"mode": "1080p"}),
        "bad decoder name": dict(good, decode={"decoders": ["h264 v4l2"]}),
        "hardware rotations without 0": dict(good, video={"hardware_rotations": [180]}),
        "period > buffer/2": dict(good, audio={"buffer_time_ms": 40, "period_time_ms": 30}),
        "section not an object": dict(good, audio="default"),
    }
    failures = [name for name, p in cases.items() if not validate(p)]
    if validate(good):
        failures.append("the minimal profile is rejected: " + "; ".join(validate(good)))
    if validate(good, "y") == []:
        failures.append("a name differing from the file name is accepted")
    for f in failures:
        print(f"self-test: not rejected: {f}", file=sys.stderr)
    return not failures


def main(argv):
    args = list(argv)
    ok = True
    if "--self-test" in args:
        args.remove("--self-test")
        ok = self_test()
        print(f"self-test: {'ok' if ok else 'FAIL'}")
    services = []
    while "--service" in args:
        i = args.index("--service")
        services.append(args[i + 1])
        del args[i:i + 2]
    here = os.path.dirname(os.path.abspath(__file__))
    if not args and not services:
        args = sorted(os.path.join(here, f) for f in os.listdir(here) if f.endswith(".json"))
        services = [os.path.join(here, "marquee.service")]
    for path in args:
        errs = check_file(path)
        print(f"{os.path.basename(path)}: {'ok' if not errs else 'INVALID'}")
        for e in errs:
            print(f"  {e}")
        ok = ok and not errs
    for path in services:
        errs = check_service(path)
        print(f"{os.path.basename(path)}: {'ok' if not errs else 'INVALID'}")
        for e in errs:
            print(f"  {e}")
        ok = ok and not errs
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
