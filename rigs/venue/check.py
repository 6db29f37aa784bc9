#!/usr/bin/env python3
"""Checks a rigs/venue/run: what the boxes showed against the control, the uplink bytes.

usage: check.py OUT BASE_BYTES SHARED_BYTES
"""
import json
import os
import statistics
import sys

out, base, shared = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
failures = []


def frames(name):
    path = os.path.join(out, name, "frames.tsv")
    rows = []
    with open(path) as f:
        next(f)
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if cols[6] != "1":  # (a join's still is shown before its time, on purpose)
                rows.append((float(cols[0]), float(cols[1]), cols[2]))
    return rows


def key(pts):
    return round(pts * 1000)


ref = {key(p): m for _, p, m in frames("ref")}
ratio = shared / base if base else float("inf")
print(f"rigs/venue: uplink bytes after 20 s: one box {base / 1e6:.2f} MB, four boxes {shared / 1e6:.2f} MB: {ratio:.2f} x one box's (bar 1.3)")
with open(os.path.join(out, "origin-media-solo.json")) as f:
    solo_counts = json.load(f)["media"]
with open(os.path.join(out, "origin-media.json")) as f:
    counts = {k: v - solo_counts.get(k, 0) for k, v in json.load(f)["media"].items()}
again = sorted(k.rsplit("/", 2)[-2] + "/" + k.rsplit("/", 1)[-1] for k, v in counts.items() if v > 1)
print(f"rigs/venue: media paths the origin sent to the four boxes: {sum(1 for v in counts.values() if v > 0)}, more than once: {again}")
if ratio > 1.3:
    failures.append(f"four boxes took {ratio:.2f} x one box's bytes from the CDN")

boxes = {}
for name in ["b1", "b2", "b3", "b4"]:
    rows = frames(name)
    boxes[name] = rows
    compared = [(p, m) for _, p, m in rows if key(p) in ref]
    wrong = [p for p, m in compared if ref[key(p)] != m]
    print(f"rigs/venue: {name}: {len(rows)} pictures, {len(compared)} compared with the control, {len(wrong)} differ")
    if len(compared) < 0.8 * len(rows) or len(rows) < 250 and name != "b3":
        failures.append(f"{name}: only {len(compared)} of {len(rows)} pictures could be compared with the control")
    if wrong:
        failures.append(f"{name}: {len(wrong)} pictures differ from the control's (first at pts {wrong[0]:.3f})")
    if name == "b3":
        continue
    steady = [r for r in rows if r[0] > rows[0][0] + 3]
    gaps = [(a[1], b[1] - a[1]) for a, b in zip(steady, steady[1:]) if abs(b[1] - a[1] - 1 / 30) > 0.002]
    stalls = [(a[0], b[0] - a[0]) for a, b in zip(steady, steady[1:]) if b[0] - a[0] > 1 / 30 + 0.1]
    if gaps or stalls:
        failures.append(f"{name}: pictures lost {gaps[:3]} or held {stalls[:3]}")
    latency = statistics.median(w - p for w, p, _ in steady)
    print(f"rigs/venue: {name}: latency {latency:.3f} s behind live (target 3)")
    if abs(latency - 3) > 0.1:
        failures.append(f"{name}: latency {latency:.3f} s, target 3")
    with open(os.path.join(out, name + ".out")) as f:
        for line in f:
            if line.startswith("venue: "):
                s = json.loads(line[7:])
                print(f"rigs/venue: {name}: from CDN {s['bytesFromCDN'] / 1e6:.2f} MB, from peers {s['bytesFromPeers'] / 1e6:.2f} MB "
                      f"(efficiency {s['peerEfficiency']:.2f}), served to peers {s['bytesServedToPeers'] / 1e6:.2f} MB, "
                      f"fallbacks {s['peerFallbacks']}, bans {s['peerBans']}")

walls = [{key(p): w for w, p, _ in boxes[n]} for n in ["b1", "b2", "b4"]]
common = set(walls[0]) & set(walls[1]) & set(walls[2])
skews = [max(w[k] for w in walls) - min(w[k] for w in walls) for k in common]
p95 = sorted(skews)[int(0.95 * (len(skews) - 1))] if skews else 0
if skews:
    print(f"rigs/venue: skew between b1, b2, b4 over {len(common)} pictures: median {statistics.median(skews) * 1000:.1f} ms, "
          f"p95 {p95 * 1000:.1f} ms, max {max(skews) * 1000:.1f} ms")
# The same frame at the same instant: the median within 5 ms (0.0-3.2 ms measured in CI runs) and
# 95 % of the pictures within a frame (33 ms). The worst picture may be off by a frame more, plus
# 35 ms (a box's steering back after the kill of b3, its neighbour, or a detour past the lying
# peer: 22-32 ms measured), but no more: beyond that a box has held or lost a picture.
if not skews or statistics.median(skews) > 0.005 or p95 > 1 / 30 or max(skews) > 1 / 30 + 0.035:
    failures.append(f"boxes apart: median {statistics.median(skews or [0]) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms, "
                    f"max {max(skews or [0]) * 1000:.1f} ms")

asks = {}
with open(os.path.join(out, "liar-asked.log")) as f:
    for line in f:
        if line.strip():
            t, who, _ = line.split("\t", 2)
            asks.setdefault(who, []).append(float(t))
print("rigs/venue: the lying peer was asked " + ", ".join(f"{len(t)} times by {w} (within {max(t) - min(t):.2f} s)" for w, t in sorted(asks.items())))
if not asks:
    failures.append("the lying peer was never asked: the test did not test it")
for who, times in asks.items():
    if max(times) - min(times) > 3:
        failures.append(f"{who} asked the lying peer again {max(times) - min(times):.1f} s after its first lie (it should be banned)")

for f in failures:
    print("rigs/venue: FAILED: " + f, file=sys.stderr)
sys.exit(1 if failures else 0)
