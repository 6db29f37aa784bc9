#!/usr/bin/env bash
# Test media for the VM suite, made once into $VM_DIR/media (ffmpeg, from a pattern written by
# expect.py): a static DASH stream of a 640x360 still pattern (10 fps, 30 s) with pink noise
# audio (so audio alignment is unique), the same with only 2 s of video ("short": the picture
# stops while audio goes on), and a 512x384 PNG poster.
set -euo pipefail
VM_DIR=${VM_DIR:?}
here=$(cd "$(dirname "$0")" && pwd)
M=$VM_DIR/media
[ -f "$M/.done" ] && [ "$M/.done" -nt "$here/media.sh" ] && exit 0
rm -rf "$M"; mkdir -p "$M/still" "$M/short"
python3 "$here/expect.py" pattern 640 360 "$M/pattern.ppm"
python3 "$here/expect.py" pattern 512 384 "$M/poster.ppm"
ff() { ffmpeg -nostdin -hide_banner -loglevel error -y "$@"; }
ff -i "$M/poster.ppm" "$M/poster.png"
dash() { # <dir> <video seconds> <audio seconds>
  ff -loop 1 -framerate 10 -t "$2" -i "$M/pattern.ppm" \
     -f lavfi -i "anoisesrc=d=$3:c=pink:r=48000:a=0.25:seed=7" \
     -map 0:v -map 1:a -c:v libx264 -preset veryfast -qp 12 -pix_fmt yuv420p -g 20 -keyint_min 20 -sc_threshold 0 \
     -c:a aac -b:a 192k -ac 2 -ar 48000 \
     -f dash -seg_duration 2 -use_template 1 -use_timeline 1 \
     -init_seg_name 'init-$RepresentationID$.mp4' -media_seg_name 'seg-$RepresentationID$-$Number$.m4s' "$1/manifest.mpd"
}
dash "$M/still" 30 30
dash "$M/short" 2 12
# The references: the first decoded picture (yuv420p) and the decoded audio as s16le.
cat "$M/still/init-0.mp4" "$M/still"/seg-0-1.m4s > "$M/video-head.mp4"
{ cat "$M/still/init-1.mp4"; n=1; while [ -f "$M/still/seg-1-$n.m4s" ]; do cat "$M/still/seg-1-$n.m4s"; n=$((n + 1)); done; } > "$M/audio.mp4"
ff -i "$M/audio.mp4" -f s16le -ac 2 -ar 48000 "$M/audio.s16"
touch "$M/.done"
