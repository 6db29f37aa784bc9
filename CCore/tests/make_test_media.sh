#!/bin/sh
# Generates the small fMP4 inputs of the pure-C tests with the ffmpeg CLI of the build machine
# (lavfi sources; nothing is committed). Run by ctest as the "media" fixture.
#
#   make_test_media.sh <outdir>
#     tone440.mp4   2 s stereo 440 Hz sine, AAC-LC 48 kHz, fragmented (empty moov, tfdt)
#     tone1k.mp4    2 s stereo 1000 Hz sine, same format
#     video.mp4     2 s 160x120 25 fps testsrc2, H.264 (libx264), GOP 1 s, fragment per GOP
#     video.md5     ffmpeg's own decode of video.mp4 (framemd5): the pictures a test must see
#     music660.m4a  2.31 s stereo 660 Hz sine (1524.6 cycles: a loop restarts mid-cycle), AAC in
#                   plain MP4 (priming and end padding trimmed by its edit list / duration)
#     music660.wav  the same tone as PCM
#     muxed.ts      video.mp4 and tone440.mp4 muxed into one MPEG-TS (stream copy: the same
#                   pictures as video.md5), as an HLS .ts segment carries them
#     still.png     one 64x48 testsrc2 picture as PNG, and as JPEG (still.jpg): posters, stills
set -eu
out="$1"
mkdir -p "$out"
ff="ffmpeg -hide_banner -nostdin -loglevel error -y"
frag="-f mp4 -movflags frag_keyframe+empty_moov+default_base_moof"
for hz in 440 1000; do
  name=tone$hz.mp4
  [ $hz = 1000 ] && name=tone1k.mp4
  $ff -f lavfi -i "sine=f=$hz:r=48000" -t 2 -ac 2 -c:a aac $frag "$out/$name"
done
$ff -f lavfi -i "testsrc2=size=160x120:rate=25" -t 2 -pix_fmt yuv420p -c:v libx264 \
  -preset ultrafast -g 25 -keyint_min 25 -sc_threshold 0 -bf 0 $frag "$out/video.mp4"
$ff -i "$out/video.mp4" -map 0:v:0 -fps_mode passthrough -f framemd5 "$out/video.md5"
for ext in m4a wav; do
  $ff -f lavfi -i "sine=f=660:r=48000:d=2.31" -af "pan=stereo|c0=c0|c1=c0" "$out/music660.$ext"
done
$ff -i "$out/video.mp4" -i "$out/tone440.mp4" -map 0:v -map 1:a -c copy -f mpegts "$out/muxed.ts"
for ext in png jpg; do
  $ff -f lavfi -i "testsrc2=size=64x48" -frames:v 1 "$out/still.$ext"
done
echo "test media in $out"
