# Sourced by the guest scripts (guest.sh, guest-vkms.sh), INSIDE the VM: the paths, and the
# helpers that talk to run_vm.py over the serial console ("@@SNAP <name>": the host takes a QMP
# screendump and answers "ok"; "@@RESULT <key> <value>"; "@@FAIL <why>") and run the player.
OUT=$1
REPO=$(cd "$(dirname "$0")/../.." && pwd)
VM=$REPO/.build-vm
M=$VM/media
MQ=$(cat "$VM/marquee-path")
RB=$VM/render_bench
URL=http://127.0.0.1:8080
export HOME=/tmp MQ_LOG=info
fails=0

snap() { echo "@@SNAP $1"; read -r ack; }
fail() { echo "@@FAIL $*"; fails=$((fails + 1)); }
wait_for() { # <log> <pattern> <seconds>
  i=0
  while ! grep -q "$2" "$1" 2>/dev/null; do
    i=$((i + 1))
    if [ $i -gt $(($3 * 5)) ]; then fail "no '$2' in $1 after $3 s"; tail -25 "$1" | sed "s/^/--- /"; return 1; fi
    sleep 0.2
  done
}
play() { # <name> <marquee play args...>: in the background, log in /tmp/<name>.log
  NAME=$1; shift
  "$MQ" play "$@" </dev/null >"/tmp/$NAME.log" 2>&1 &
  PID=$!
}
stop() { # SIGINT: graceful stop restores the console's CRTC
  kill -INT $PID 2>/dev/null
  i=0; while kill -0 $PID 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
  kill -KILL $PID 2>/dev/null
  wait $PID 2>/dev/null
  grep -q "error:" "/tmp/$NAME.log" && { echo "--- $NAME.log"; grep "error:" "/tmp/$NAME.log" | head -3; }
}
