#!/usr/bin/env bash
# Stand-in for a model's train_1p.sh: prints a falling "loss" for STEPS steps, one every STEP_S
# seconds, then exits with EXIT_CODE (default 0). FAIL_RANK/FAIL_STEP make one rank exit 1
# mid-run (for fail-fast tests); with FAIL_SIGNAL (e.g. KILL, SEGV) that rank kills itself with
# that signal instead, as the OOM killer or a crash would end it; with FAIL_ONCE_FILE=path it fails
# only if that file does not exist yet, creating it, so the next attempt of a restarted job runs
# through. STALL_RANK/STALL_STEP make one rank stop printing at that step and sleep forever, as a
# rank hung in a collective would (for stall tests). Reads the rank environment the launcher sets.
#
# Checkpoints (CHECKPOINT_DIR, CHECKPOINT_EVERY default 5, 0 = never): rank 0 alone writes the
# job's step, after every CHECKPOINT_EVERY steps, to CHECKPOINT_DIR/train_1p.<A>.step (A: the
# attempt, see below; a temporary file of mode 0644 beside it renamed into place, so never
# half-written). At start every rank reads the file of the newest earlier attempt (< A) and prints
# "resumed from step N (checkpoint PATH)", then continues with step N+1, or "no checkpoint in
# DIR: starting at step 0". The ranks do not talk to each other, so the file a rank resumes from
# is one that no running rank writes any more: all ranks of an attempt read the same step,
# rank 0's, however spread their starts are - as the ranks of a real data-parallel training
# resume together. That holds when CHECKPOINT_DIR is the same directory for every rank: shared
# storage on a real cluster, any directory on the simulated cluster (one machine), one under
# /var/tmp on the test bed (its hosts have their own /tmp and /root); a rank that cannot see rank
# 0's files says "no checkpoint" and starts at step 0. A step file that is not "step=N" is
# refused: the rank exits 1 naming it (never resumed from). One small file per attempt is kept.
# The attempt A is ASCEND_RESTART_COUNT (the launch sets it on every rank, 0 on the first
# attempt), else TORCHELASTIC_RESTART_COUNT (torchrun's); it is printed as "restart count A".
# Without either (a run by hand) the newest file of any attempt is read and written.
set -u
steps=${STEPS:-5}
step_s=${STEP_S:-0.2}
rank_id=${RANK_ID:-${RANK:-}}  # RANK: a torchrun child
echo "start rank=${rank_id:-?} device=${DEVICE_ID:-${LOCAL_RANK:-?}} size=${RANK_SIZE:-?} at $(date +%s.%N) args: $*"
restarts=${ASCEND_RESTART_COUNT:-${TORCHELASTIC_RESTART_COUNT:-}}
if [[ -n "$restarts" ]]; then
  echo "restart count $restarts"
fi

ckpt_dir=${CHECKPOINT_DIR:-}
ckpt_every=${CHECKPOINT_EVERY:-5}
ckpt_file=
done_steps=0
if [[ -n "$ckpt_dir" ]]; then
  if [[ ! "$ckpt_every" =~ ^[0-9]+$ ]]; then
    echo "train_1p.sh: CHECKPOINT_EVERY=$ckpt_every is not a number of steps (0: never write a checkpoint)" >&2
    exit 2
  fi
  if [[ -n "$restarts" && ! "$restarts" =~ ^[0-9]+$ ]]; then
    echo "train_1p.sh: restart count '$restarts' is not a number: unset ASCEND_RESTART_COUNT / TORCHELASTIC_RESTART_COUNT or fix it" >&2
    exit 2
  fi
  newest=-1  # the newest earlier attempt with a step file
  for found in "$ckpt_dir"/train_1p.*.step; do
    [[ "${found##*/}" =~ ^train_1p\.([0-9]+)\.step$ ]] || continue
    attempt=$((10#${BASH_REMATCH[1]}))
    if [[ -n "$restarts" ]] && ((attempt >= 10#$restarts)); then
      continue  # this attempt's own file (or a later one's): not what this attempt resumes from
    fi
    ((attempt > newest)) && newest=$attempt
  done
  if ((newest >= 0)); then
    from="$ckpt_dir/train_1p.$newest.step"
    content=$(cat -- "$from") || exit 1
    if [[ ! "$content" =~ ^step=([0-9]+)$ ]]; then
      shown=${content:0:80}
      echo "train_1p.sh: checkpoint $from is damaged: '${shown//$'\n'/ }' is not 'step=N' - it is not resumed from; remove it to resume from the attempt before" >&2
      exit 1
    fi
    done_steps=$((10#${BASH_REMATCH[1]}))
    echo "resumed from step $done_steps (checkpoint $from)"
  else
    echo "no checkpoint in $ckpt_dir: starting at step 0"
  fi
  if [[ -n "$restarts" ]]; then
    ckpt_file="$ckpt_dir/train_1p.$((10#$restarts)).step"
  else
    ckpt_file="$ckpt_dir/train_1p.$((newest < 0 ? 0 : newest)).step"
  fi
fi

# Rank 0 (or a run without a rank) writes the job's step file: whole or not at all.
write_checkpoint() {
  local tmp="$ckpt_dir/.train_1p.step.tmp-$$"
  mkdir -p -- "$ckpt_dir" &&
    (umask 022 && printf 'step=%d\n' "$1" > "$tmp") &&
    chmod 0644 -- "$tmp" &&
    mv -f -- "$tmp" "$ckpt_file" &&
    echo "checkpoint step $1 written to $ckpt_file"
}

for ((i = done_steps + 1; i <= steps; i++)); do
  if [[ -n "${FAIL_RANK:-}" && "$FAIL_RANK" == "${rank_id}" && "$i" -ge "${FAIL_STEP:-1}" ]] &&
    { [[ -z "${FAIL_ONCE_FILE:-}" ]] || (set -o noclobber && : > "$FAIL_ONCE_FILE") 2> /dev/null; }; then
    echo "rank ${rank_id} crashing at step $i${FAIL_SIGNAL:+ by SIG$FAIL_SIGNAL}" >&2
    if [[ -n "${FAIL_SIGNAL:-}" ]]; then
      kill -s "$FAIL_SIGNAL" $$
    fi
    exit 1
  fi
  if [[ -n "${STALL_RANK:-}" && "$STALL_RANK" == "${rank_id}" && "$i" -ge "${STALL_STEP:-1}" ]]; then
    while :; do sleep 3600; done
  fi
  echo "step $i loss $(( 1000 / i ))"
  if [[ -n "$ckpt_dir" && "$ckpt_every" -gt 0 && "${rank_id:-0}" == 0 ]] && (( i % ckpt_every == 0 )); then
    write_checkpoint "$i" || { echo "train_1p.sh: cannot write checkpoint $ckpt_file" >&2; exit 1; }
  fi
  sleep "$step_s"
done
exit "${EXIT_CODE:-0}"
