#!/usr/bin/env python3
"""Boots the test VM, answers the guest's snapshot requests with QMP screendumps, then checks
every screen against its expected image and the snd-aloop capture against the decoded audio.
--suite vkms: the VM has no display device but vkms; the guest reads its screens back from the
driver itself ("@@CAPTURE <name>": <out>/<name>.ppm) and the video plane path is checked.
python3 stdlib only. Exit status 0 when everything passed."""
import argparse
import array
import collections
import json
import os
import select
import socket
import subprocess
import sys
import time

import expect

W, H = 1280, 800  # bochs-drm's preferred mode (set from the first screendump)
a_media = None


class QMP:
    def __init__(self, path, deadline):
        while True:
            try:
                self.s = socket.socket(socket.AF_UNIX)
                self.s.connect(path)
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        self.f = self.s.makefile("rw")
        self.f.readline()  # greeting
        self.cmd("qmp_capabilities")

    def cmd(self, name, **args):
        self.f.write(json.dumps({"execute": name, "arguments": args}) + "\n")
        self.f.flush()
        while True:
            reply = json.loads(self.f.readline())
            if "return" in reply or "error" in reply:
                return reply


def run_vm(a):
    out = a.out
    sock = os.path.join(out, "qmp.sock")
    if os.path.exists(sock):
        os.unlink(sock)
    display = ["-vga", "std", "-global", "VGA.vgamem_mb=64"] if a.suite == "bochs" else []
    cmd = ["qemu-system-x86_64", "-accel", "tcg,thread=single", "-m", "1024", "-smp", "2", "-nodefaults", "-no-reboot",
           "-display", "none"] + display + [
           "-serial", "stdio", "-qmp", "unix:%s,server=on,wait=off" % sock,
           "-kernel", a.kernel, "-initrd", a.initrd, "-append", "console=ttyS0 panic=-1 quiet",
           "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
           "-virtfs", "local,path=%s,mount_tag=vmout,security_model=none" % out,
           # the repository on its own share: the guest mounts a tmpfs over /tmp and /run, which
           # would hide a checkout there (issue 21)
           "-virtfs", "local,path=%s,mount_tag=repo,security_model=none,readonly=on,multidevs=remap" % a.repo]
    start = time.time()
    deadline = start + a.timeout
    vm = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    qmp = QMP(sock, deadline)
    snaps, results, fails, bench, exit_code = [], {}, [], [], None
    tail = collections.deque(maxlen=60)  # the console's last lines: a panic's oops is printed from them
    console = open(os.path.join(out, "console.log"), "w")
    buf = b""
    while time.time() < deadline and exit_code is None:
        r, _, _ = select.select([vm.stdout], [], [], 1.0)
        if not r:
            if vm.poll() is not None:
                break
            continue
        chunk = os.read(vm.stdout.fileno(), 65536)
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf:
            raw, buf = buf.split(b"\n", 1)
            line = raw.decode("utf-8", "replace").rstrip("\r")
            console.write(line + "\n")
            tail.append(line)
            t = time.time() - start
            if "@@SNAP " in line:
                name = line.split("@@SNAP ", 1)[1].strip()
                path = os.path.join(out, name + ".ppm")
                qmp.cmd("screendump", filename=path)
                snaps.append((name, path, t))
                vm.stdin.write(b"ok\n")
                vm.stdin.flush()
                print("  [%6.1fs] snapshot %s" % (t, name), flush=True)
            elif "@@CAPTURE " in line:
                name = line.split("@@CAPTURE ", 1)[1].strip()
                snaps.append((name, os.path.join(out, name + ".ppm"), t))
                print("  [%6.1fs] capture %s" % (t, name), flush=True)
            elif "@@RESULT " in line:
                k, _, v = line.split("@@RESULT ", 1)[1].partition(" ")
                results[k] = v
                print("  [%6.1fs] %s = %s" % (t, k, v), flush=True)
            elif "@@FAIL " in line:
                fails.append(line.split("@@FAIL ", 1)[1])
                print("  [%6.1fs] guest FAIL: %s" % (t, fails[-1]), flush=True)
            elif line.startswith("BENCH "):
                bench.append(line)
                print("  [%6.1fs] %s" % (t, line), flush=True)
            elif "INIT: test exit" in line:
                exit_code = int(line.rsplit(" ", 1)[1])
            elif "INIT:" in line or "error" in line.lower() or "Kernel panic" in line or line.startswith("---"):
                print("  [%6.1fs] %s" % (t, line), flush=True)
    try:
        qmp.cmd("quit")
    except OSError:
        pass
    try:
        vm.wait(5)
    except subprocess.TimeoutExpired:
        vm.kill()
    panic = any("Kernel panic" in line for line in tail)
    if panic:
        print("  the guest kernel panicked; the console's last lines:")
        for line in tail:
            print("    | " + line)
        fails.append("the guest kernel panicked after %.1f s" % (time.time() - start))
    elif exit_code is None:
        fails.append("the VM did not finish in %d s" % a.timeout)
    return snaps, results, fails, bench, time.time() - start


def expected_screens(media):
    head = os.path.join(media, "video-head.mp4")
    exp = {}
    for fit in ("contain", "cover", "fill", "scaledown"):
        exp["fit-" + fit] = expect.expected_fit(head, 640, 360, W, H, fit)[0]
    exp["rot-180"] = expect.expected_fit(head, 640, 360, W, H, "contain", 180)[0]
    exp["rot-90"] = expect.expected_fit(head, 640, 360, W, H, "contain", 90)[0]
    exp["hotplug-on"] = exp["fit-contain"]
    exp["hotplug-off"] = bytes(W * H * 3)
    exp["band"] = expect.band(exp["fit-contain"], W, H)
    exp["slate"] = expect.slate(W, H, "STREAM LOST - RECONNECTING")
    exp["poster"] = expect.expected_fit(os.path.join(media, "poster.png"), 512, 384, W, H, "contain")[0]
    exp["pl-cover"] = expect.expected_fit(os.path.join(media, "poster.png"), 512, 384, W, H, "cover")[0]
    exp["pl-fill"] = expect.expected_fit(os.path.join(media, "poster.png"), 512, 384, W, H, "fill")[0]
    return exp


def expected_vkms(media):
    head = os.path.join(media, "video-head.mp4")
    exp = {"plane-scaledown": expect.expected_fit(head, 640, 360, W, H, "scaledown")[0],
           "plane-contain": expect.expected_fit(head, 640, 360, W, H, "contain")[0]}
    exp["plane-band"] = expect.band(exp["plane-scaledown"], W, H)
    return exp


def bench_picture(sw, sh, W, H):
    """render_bench's test picture (Y = x + y, Cb 90, Cr 160) shown 1:1 in the middle of a black
    W x H screen, converted here in floating point (BT.601, limited range)."""
    out = bytearray(W * H * 3)
    x0, y0 = (W - sw) // 2, (H - sh) // 2
    cb, cr = 90 - 128, 160 - 128
    for y in range(sh):
        for x in range(sw):
            l = 255 / 219 * (((x + y) & 255) - 16)
            rgb = (l + 255 / 224 * 1.402 * cr, l - 255 / 224 * (0.344136 * cb + 0.714136 * cr), l + 255 / 224 * 1.772 * cb)
            i = ((y0 + y) * W + x0 + x) * 3
            out[i:i + 3] = bytes(max(0, min(255, round(v))) for v in rgb)
    return bytes(out)


def check_prime(snaps):
    """The imported dma-buf picture: the same screen as the copied one, and both the picture."""
    paths = {name: path for name, path, _ in snaps}
    if not all(n in paths and os.path.exists(paths[n]) and os.path.getsize(paths[n]) for n in ("prime-import", "prime-copy")):
        print("  prime: no read-back: FAIL")
        return False
    wi, hi, imp = expect.read_ppm(paths["prime-import"])
    _, _, cop = expect.read_ppm(paths["prime-copy"])
    c = expect.compare(imp, bench_picture(640, 360, wi, hi), wi, hi, tol=3)
    same = imp == cop
    passed = same and c["bad"] == 0
    print("  prime: imported picture %s the copied one; against the picture: %d px over 3, max err %d: %s"
          % ("identical to" if same else "DIFFERS from", c["bad"], c["max"], "pass" if passed else "FAIL"))
    return passed


def check_vkms(snaps, results, bench):
    """The video plane: its screens, which path each run took, and CPU per frame of both paths."""
    ok = check_prime(snaps)
    ok &= check_screens([s for s in snaps if not s[0].startswith("prime-")], expected_vkms(a_media))
    # "<runs of 'on video plane'> <runs of 'refused'>" per case
    want = {"plane-scaledown": lambda on, no: on >= 1 and no == 0,   # copied to the plane
            "plane-band": lambda on, no: on >= 1 and no == 0,        # plane, then the band in software
            "plane-contain": lambda on, no: on == 0 and no >= 1}     # vkms cannot scale: software
    for case, good in want.items():
        try:
            on, no = (int(v) for v in results.get(case, "").split())
        except ValueError:
            on = no = -1
        passed = on >= 0 and good(on, no)
        print("  %-16s on the video plane %d, refused %d: %s" % (case, on, no, "pass" if passed else "FAIL"))
        ok &= passed
    planes = {}
    for line in bench:  # BENCH plane|drm WxH -> ...: X ms CPU/frame
        f = line.split()
        if len(f) > 6 and f[1] in ("plane", "drm") and "CPU/frame," in f:
            planes.setdefault(f[2] + " " + f[5], {})[f[1]] = float(f[f.index("CPU/frame,") - 2])
    for what, got in planes.items():
        if "plane" in got and "drm" in got:
            print("  CPU per frame %s: video plane %.2f ms, software %.2f ms (%.1fx less)"
                  % (what, got["plane"], got["drm"], got["drm"] / max(got["plane"], 1e-6)))
    got_all = len(planes) == 3 and all(len(v) == 2 for v in planes.values())
    print("  video plane benchmark: %s" % ("3 sizes, both paths" if got_all else "FAIL: missing %s" % planes))
    return ok and got_all


def check_screens(snaps, exp):
    ok = True
    print("  %-12s %10s %9s %8s  %s" % ("screen", "bad px", "bad %", "max err", "verdict"))
    for name, path, _ in snaps:
        if not os.path.exists(path) or os.path.getsize(path) == 0:
            print("  %-12s no picture: FAIL" % name)
            ok = False
            continue
        w, h, got = expect.read_ppm(path)
        want = exp.get(name)
        if want is None or (w, h) != (W, H):
            print("  %-12s size %dx%d: FAIL" % (name, w, h))
            ok = False
            continue
        c = expect.compare(got, want, W, H)
        # exact overlays / black; scaled pictures: a few edge pixels may round differently
        limit = 0 if name in ("slate", "hotplug-off") else c["total"] // 200
        passed = c["bad"] <= limit
        ok &= passed
        print("  %-12s %10d %8.3f%% %8d  %s" % (name, c["bad"], 100.0 * c["bad"] / c["total"], c["max"],
                                                 "pass" if passed else "FAIL"))
    missing = set(exp) - {s[0] for s in snaps}
    if missing:
        print("  missing screens: %s" % ", ".join(sorted(missing)))
        ok = False
    return ok


def check_audio(capture, reference):
    """Every non-silent captured frame must belong to a bit-exact run of the decoded track, but
    for the fades at each discontinuity and the player's trims. Runs are found by re-aligning
    after each discontinuity (a skip or inserted silence, which the player does when starved
    under TCG); the runs and gaps are reported."""
    if not os.path.exists(capture):
        print("  alsa: no capture")
        return False
    cap, ref = open(capture, "rb").read(), open(reference, "rb").read()
    fb, pos, runs, unmatched = 4, 0, [], []
    while pos + 64 * fb <= len(cap):
        if cap[pos:pos + fb] == b"\0\0\0\0":
            pos += fb
            continue
        at = ref.find(cap[pos:pos + 64 * fb])
        while at >= 0 and at % fb:
            at = ref.find(cap[pos:pos + 64 * fb], at + 1)
        if at < 0:
            unmatched.append(pos // fb)
            pos += fb
            continue
        n, limit = 0, min(len(cap) - pos, len(ref) - at)
        while n < limit and cap[pos + n:pos + n + 4800 * fb] == ref[at + n:at + n + 4800 * fb]:
            n += 4800 * fb
        while n < limit and cap[pos + n:pos + n + fb] == ref[at + n:at + n + fb]:
            n += fb
        runs.append((pos // fb, at // fb, n // fb))
        pos += n
    exact = sum(r[2] for r in runs)
    trims = trimmed_gaps(array.array("h", cap), array.array("h", ref), runs)
    trimmed = sum(t[1] - t[0] for t in trims)
    rest = [f for f in unmatched if not any(a <= f < b for a, b, _ in trims)]
    cuts = len(runs) - 1 - len(trims)
    print("  alsa: %d frames (%.3f s) of stream audio captured bit-exact in %d run(s), %d frames in %d trim(s), "
          "%d unmatched non-silent frames, capture %d frames" % (exact, exact / 48000, len(runs), trimmed, len(trims),
                                                              len(rest), len(cap) // fb))
    for c, r, n in runs[:6]:
        print("    run at capture %.3f s = track %.3f s, %.3f s long" % (c / 48000, r / 48000, n / 48000))
    for a, b, moved in trims[:6]:
        print("    trim at capture %.3f s, %.1f ms long: the track resampled, moved %+d frame(s)" % (
            a / 48000, (b - a) / 48, moved))
    # Not bit-exact: snd-aloop's drain jiffy at the very end (up to 192 frames), and at each
    # discontinuity the player's 5 ms fades (the last frame heard faded out, the next sound faded
    # in: up to 2 × 240 frames at 48 kHz; a CI run read 240 for one skip under TCG).
    return exact >= 3 * 48000 and len(rest) <= 192 + 480 * max(0, cuts)


def trimmed_gaps(cap, ref, runs):
    """The gaps between two runs that are a trim of the tempo stage (tempo_thread.c: after a small
    re-anchor the sound is resampled 0.1-0.2 % faster or slower until back on the schedule, no
    cut): the track goes on through the gap, its alignment moves by at most 0.2 % of the gap's
    length (+ 1 frame), and every 64-frame window of it is the track at an alignment between the
    two runs' (correlation >= 0.9, half-frame steps) at its level (RMS within 0.8-1.25). Each
    as (first capture frame, end, frames moved)."""
    trims = []
    for (c1, r1, n1), (c2, r2, _) in zip(runs, runs[1:]):
        a, b, o1, o2 = c1 + n1, c2, r1 - c1, r2 - c2
        if b <= a or abs(o2 - o1) > 0.002 * (b - a) + 1:
            continue
        lo, hi = min(o1, o2) - 1, max(o1, o2) + 1
        if all(track_window(cap, ref, w, min(64, b - w), lo, hi) for w in range(a, b, 64)):
            trims.append((a, b, o2 - o1))
    return trims


def track_window(cap, ref, at, n, lo, hi):
    """Whether capture frames [at, at + n) are the track at an alignment in [lo, hi] frames."""
    x = cap[2 * at:2 * (at + n)]
    ex = sum(v * v for v in x)
    best = 0.0
    for d2 in range(2 * lo, 2 * hi + 1):  # half frames
        s = 2 * (at + d2 // 2)
        if s < 0 or s + 2 * n + 2 > len(ref):
            continue
        y = ref[s:s + 2 * n] if d2 % 2 == 0 else [(u + v) / 2 for u, v in zip(ref[s:s + 2 * n], ref[s + 2:s + 2 * n + 2])]
        ey = sum(v * v for v in y)
        if ex == 0 or ey == 0 or not 0.64 <= ex / ey <= 1.5625:
            continue
        best = max(best, sum(u * v for u, v in zip(x, y)) / (ex * ey) ** 0.5)
    return best >= 0.9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--initrd", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--media", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--timeout", type=int, default=200)
    ap.add_argument("--suite", choices=("bochs", "vkms"), default="bochs")
    a = ap.parse_args()
    snaps, results, fails, bench, wall = run_vm(a)
    print("VM finished in %.1f s" % wall)
    global W, H, a_media
    a_media = a.media
    if snaps and os.path.exists(snaps[0][1]) and os.path.getsize(snaps[0][1]) > 0:
        W, H, _ = expect.read_ppm(snaps[0][1])
    if a.suite == "vkms":
        return verdict(check_vkms(snaps, results, bench), bench, fails, "VM suite (vkms)")
    exp = expected_screens(a.media)
    ok = check_screens(snaps, exp)
    ok &= check_audio(os.path.join(a.out, "alsa.raw"), os.path.join(a.media, "audio.s16"))
    # The player that wrote to the ALSA loopback must have exited 0 (a crash after its sound
    # went out would otherwise pass on the capture alone).
    alsa_exit = (results.get("alsa-exit", "") or "").split()
    alsa_ok = bool(alsa_exit) and alsa_exit[0] == "0"
    print("  alsa: the player exited %s, %s" % (alsa_exit[0] if alsa_exit else "(not reported)", "pass" if alsa_ok else "FAIL"))
    ok &= alsa_ok
    setups = int(results.get("hotplug-setups", "0") or 0)
    print("  hotplug: %d output setups in the contain run (initial + after replug), %s" % (setups, "pass" if setups >= 2 else "FAIL"))
    ok &= setups >= 2
    # The device-health metrics scraped at each step: connected, unplugged, plugged again.
    health = {}
    for step in ("start", "off", "on"):
        fields = (results.get("display-connected-" + step, "") or "").split()
        try:
            health[step] = (float(fields[0]), float(fields[1]))
        except (IndexError, ValueError):
            health[step] = None
    want = {"start": 1.0, "off": 0.0, "on": 1.0}
    good = all(health[k] is not None and health[k][0] == want[k] for k in want)
    good = good and health["off"][1] > health["start"][1] and health["on"][1] > health["off"][1]
    print("  display metrics (connected, output changes) at start / unplugged / replugged: %s, %s"
          % (" / ".join(str(health[k]) for k in ("start", "off", "on")), "pass" if good else "FAIL"))
    ok &= good
    return verdict(ok, bench, fails, "VM suite")


def verdict(ok, bench, fails, name):
    """Prints the benchmark lines, the guest's failures and the suite's verdict; the exit status."""
    for line in bench:
        print("  " + line)
    for f in fails:
        print("  guest: " + f)
    ok &= not fails
    print("%s: %s" % (name, "PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
