#!/usr/bin/env bash
# Smoke test of the real `pokerbot play` in a terminal (not run in CI): starts it in a detached
# tmux session of 80x24, plays two hands by keys, opens help, quits, and prints each captured
# pane, the session log and its `pokerbot report`. Needs tmux and the pokerbot command on PATH
# (activate the venv first).
#
#   scripts/tui_smoke.sh [extra pokerbot play options]     e.g. scripts/tui_smoke.sh --game leduc
set -euo pipefail

session="pokerbot-smoke-$$"
workdir="$(mktemp -d)"
log="$workdir/smoke.log"
width="${WIDTH:-80}"
height="${HEIGHT:-24}"

cleanup() { tmux kill-session -t "$session" 2>/dev/null || true; }
trap cleanup EXIT

capture() {  # capture TITLE: print the pane under a heading
    echo "===== $1 ====="
    tmux capture-pane -p -t "$session"
}

wait_for() {  # wait_for TEXT: poll the pane until TEXT shows (60 s at most)
    for _ in $(seq 120); do
        tmux capture-pane -p -t "$session" | grep -qF -- "$1" && return 0
        sleep 0.5
    done
    echo "timed out waiting for: $1" >&2
    tmux capture-pane -p -t "$session" >&2
    exit 1
}

send() {  # send KEY and give the app (and the bot's delay) time to draw
    tmux send-keys -t "$session" "$1"
    sleep "${PAUSE:-1}"
}

tmux new-session -d -s "$session" -x "$width" -y "$height" \
    "pokerbot play --seed 7 --delay 0.1 --log '$log' $*; echo \"exit status \$?\"; sleep 30"
wait_for "Your turn"
capture "start of hand 1"
send c
capture "after c"
send r
capture "after r"
for _ in 1 2 3 4 5 6; do send c; done
capture "end of hand 1"
send h
capture "bot's probabilities (h)"
send escape
send "?"
capture "help (?)"
send escape
send n
send f
capture "hand 2: you fold from the small blind"
send escape
send q
wait_for "exit status 0"
capture "after quit"
echo "===== session log $log ====="
cat "$log"
pokerbot report "$log" --player human
