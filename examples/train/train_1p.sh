#!/usr/bin/env bash
# Stand-in for a model's train_1p.sh: prints a falling "loss" for STEPS steps, one every STEP_S
# seconds, then exits with EXIT_CODE (default 0). FAIL_RANK/FAIL_STEP make one rank exit 1
# mid-run (for fail-fast tests); with FAIL_SIGNAL (e.g. KILL, SEGV) that rank kills itself with
# that signal instead, as the OOM killer or a crash would end it. STALL_RANK/STALL_STEP make one rank
# stop printing at that step and sleep forever, as a rank hung in a collective would (for stall
# tests). Reads the rank environment the launcher sets.
set -u
steps=${STEPS:-5}
step_s=${STEP_S:-0.2}
rank_id=${RANK_ID:-${RANK:-}}  # RANK: a torchrun child
echo "start rank=${rank_id:-?} device=${DEVICE_ID:-${LOCAL_RANK:-?}} size=${RANK_SIZE:-?} at $(date +%s.%N) args: $*"
for ((i = 1; i <= steps; i++)); do
  if [[ "${FAIL_RANK:-}" == "${rank_id}" && "$i" -ge "${FAIL_STEP:-1}" ]]; then
    echo "rank ${rank_id} crashing at step $i${FAIL_SIGNAL:+ by SIG$FAIL_SIGNAL}" >&2
    if [[ -n "${FAIL_SIGNAL:-}" ]]; then
      kill -s "$FAIL_SIGNAL" $$
    fi
    exit 1
  fi
  if [[ "${STALL_RANK:-}" == "${rank_id}" && "$i" -ge "${STALL_STEP:-1}" ]]; then
    while :; do sleep 3600; done
  fi
  echo "step $i loss $(( 1000 / i ))"
  sleep "$step_s"
done
exit "${EXIT_CODE:-0}"
