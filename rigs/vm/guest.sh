#!/bin/sh
# Runs INSIDE the VM, in a chroot of the host's root (read-only 9p). $1: the writable output
# share. Talks to run_vm.py over the serial console: "@@SNAP <name>" (the host takes a QMP
# screendump, then answers "ok" on the console), "@@RESULT <key> <value>", "@@FAIL <why>".
. "$(dirname "$0")/guest-lib.sh"

fit_case() { # <snap name> <args...>
  snapname=$1; shift
  play "$snapname" "$URL/still/manifest.mpd" --video drm --audio null "$@"
  # 1.5 s: under TCG the start-up catch-up can starve pictures for over 1 s, which rightly
  # shows the buffering band; snap once presentation is steady
  wait_for "/tmp/$snapname.log" "fit 640x360" 60 && sleep 1.5 && snap "$snapname"
}

busybox ip link set lo up
busybox httpd -p 127.0.0.1:8080 -h "$M"
t0=$(date +%s.%N)

# 1. poster: the manifest request hangs (nc accepts and never answers)
# (nc's stdin must not end: at EOF it closes the accepted connection and the request fails)
sleep 1000 | busybox nc -l -p 8081 >/dev/null &
NC=$!
# the player must find the port open (a refused connection is a failed source, which ends `play`)
i=0; until busybox netstat -ltn | grep -q ':8081 '; do i=$((i + 1)); [ $i -gt 50 ] && break; sleep 0.1; done
play poster http://127.0.0.1:8081/live.mpd --video drm --audio null --poster "$M/poster.png"
# "fit" is logged as the poster's scaler is set up, before it is drawn and the CRTC set; under
# TCG on a loaded host that has taken over 0.3 s (a black screen was captured): 1.5 s, as below
wait_for /tmp/poster.log "fit 512x384" 60 && sleep 1.5 && snap poster
kill -0 $PID 2>/dev/null || { fail "player exited before the poster snapshot"; tail -5 /tmp/poster.log; }
kill $NC 2>/dev/null
pkill -f "sleep 1000" 2>/dev/null
stop

# 2. fit modes; hotplug during contain (connector forced off, then back to detect), with the
# device-health metrics scraped at each step (what an operator's Prometheus sees)
metric() { # <name>: its value in a scrape, "none" when absent
  v=$(busybox wget -q -O - http://127.0.0.1:9101/metrics 2>/dev/null | grep "^$1 " | busybox awk '{print $2}')
  echo "${v:-none}"
}
fit_case fit-contain --fit contain --metrics 9101
echo "@@RESULT display-connected-start $(metric marquee_display_connected) $(metric marquee_output_changes_total)"
STATUS=$(ls -d /sys/class/drm/card0-*/status | head -1)
echo off > "$STATUS"
wait_for /tmp/fit-contain.log "hotplug: display .* disconnected" 10 && sleep 0.3 && snap hotplug-off
echo "@@RESULT display-connected-off $(metric marquee_display_connected) $(metric marquee_output_changes_total)"
echo detect > "$STATUS"
wait_for /tmp/fit-contain.log "hotplug: display .* connected" 10 && sleep 0.5 && snap hotplug-on
echo "@@RESULT display-connected-on $(metric marquee_display_connected) $(metric marquee_output_changes_total)"
echo "@@RESULT hotplug-setups $(grep -c 'drm: /dev/dri/card0' /tmp/fit-contain.log)"
kill -0 $PID 2>/dev/null || fail "player died during hotplug"
stop
for f in cover fill scaledown; do fit_case "fit-$f" --fit $f; stop; done
fit_case rot-180 --rotation 180; stop
fit_case rot-90 --rotation 90; stop

# 2b. a playlist's images, each in its item's own fit (mq_player_set_fit): the PNG decoded by
# the player (rgb24) through the same scaler; the second replaces the first without a black frame
cat > /tmp/pl-fit.json <<EOF
{"items": [{"id": "cover", "url": "file://$M/poster.png", "duration": 5, "fit": "cover"},
           {"id": "fill", "url": "file://$M/poster.png", "duration": 30, "fit": "fill"}]}
EOF
play pl-fit --playlist /tmp/pl-fit.json --video drm --audio null
wait_for /tmp/pl-fit.log 'item 0 "cover": impression' 60 && sleep 1.5 && snap pl-cover
wait_for /tmp/pl-fit.log 'item 1 "fill": impression' 30 && sleep 1.5 && snap pl-fill
stop

# 3. buffering band: the video track stops after 2 s, audio goes on; the last picture is held
play band "$URL/short/manifest.mpd" --video drm --audio null
wait_for /tmp/band.log "fit 640x360" 60 && sleep 4 && snap band
stop

# 4. stall slate (drawn by the output's overlay code on the real driver)
"$RB" slate "STREAM LOST - RECONNECTING" >/tmp/slate.log 2>&1 &
SL=$!
wait_for /tmp/slate.log "SLATE READY" 20 && snap slate
kill $SL; wait $SL 2>/dev/null

# 5. ALSA through snd-aloop: capture started first, the player writes hw:Loopback,0,0
arecord -q -D hw:Loopback,1,0 -f S16_LE -c 2 -r 48000 -t raw -d 40 "$OUT/alsa.raw" &
AR=$!
sleep 0.5
a0=$(date +%s.%N)
"$MQ" play "$URL/still/manifest.mpd" --video headless --audio alsa:hw:Loopback,0,0 --duration 8 </dev/null >/tmp/alsa.log 2>&1
echo "@@RESULT alsa-exit $? $(awk "BEGIN{print $(date +%s.%N) - $a0}")"
grep -E "error" /tmp/alsa.log | head -3
# (What moved the sound, should its check fail: under TCG beside the CI's lanes a run once had
# eight discontinuities where there is usually one.)
grep -E "latency jump|underrun|live edge|target" /tmp/alsa.log | head -8 | sed 's/^/--- alsa log: /'
sleep 0.3
kill -INT $AR; wait $AR

# 6. benchmark: CPU per presented frame through KMS (1920x1080 mode) and in memory
# (TCG emulates the CPU: these figures compare paths, not boxes)
"$RB" drm 1920x1080 contain 12 1920x1080
"$RB" drm 1280x720 contain 12 1920x1080

echo "@@RESULT guest-seconds $(awk "BEGIN{print $(date +%s.%N) - $t0}")"
exit $fails
