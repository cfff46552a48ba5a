#!/usr/bin/env bash
# Stand-in for a model's train_1p.sh under the AOE gradient tuner (reference section 5), for the
# launch role's aoe=true / use_library tests and for trying the flow on the simulated cluster.
#
# With AOE_MODE set (a tuning run): fails (exit 2) when TUNE_BANK_PATH is unset or not a
# directory, like the real tuner; otherwise "tunes" for STEPS steps and writes
# $TUNE_BANK_PATH/<soc>_gradient_fusion.json atomically (soc from ASCEND_SOC, default
# Ascend910B1; several space-separated socs write one file each, in that order).
# AOE_TUNER_WRITES=0 makes it end successfully without writing the file;
# EXIT_CODE makes it exit with that code.
# Without AOE_MODE (a training run): a short training that records in its log whether
# TUNE_BANK_PATH was set and whether the bank file in it is readable.
# TUNER_TRACE=<file> appends one line per process: rank, device, AOE_MODE, TUNE_BANK_PATH.
set -u
steps=${STEPS:-3}
step_s=${STEP_S:-0.1}
read -r -a socs <<<"${ASCEND_SOC:-Ascend910B1}"
bank_file="${TUNE_BANK_PATH:-}/${socs[0]}_gradient_fusion.json"
echo "start rank=${RANK_ID:-?} device=${DEVICE_ID:-?} size=${RANK_SIZE:-?} AOE_MODE=${AOE_MODE:-<unset>}" \
  "TUNE_BANK_PATH=${TUNE_BANK_PATH:-<unset>} args: $*"
if [[ -n "${TUNER_TRACE:-}" ]]; then
  echo "rank=${RANK_ID:-?} device=${DEVICE_ID:-?} AOE_MODE=${AOE_MODE:-} TUNE_BANK_PATH=${TUNE_BANK_PATH:-}" >>"$TUNER_TRACE"
fi

if [[ -n "${AOE_MODE:-}" ]]; then
  if [[ -z "${TUNE_BANK_PATH:-}" ]]; then
    echo "AOE: TUNE_BANK_PATH is not set: the tuning result has nowhere to go" >&2
    exit 2
  fi
  if [[ ! -d "$TUNE_BANK_PATH" ]]; then
    echo "AOE: TUNE_BANK_PATH=$TUNE_BANK_PATH is not a directory (it must exist before tuning)" >&2
    exit 2
  fi
  for ((i = 1; i <= steps; i++)); do
    echo "AOE gradient tuning (mode $AOE_MODE) step $i/$steps"
    sleep "$step_s"
  done
  if [[ "${AOE_TUNER_WRITES:-1}" == 0 ]]; then
    echo "AOE: tuning finished, no repository written"
    exit "${EXIT_CODE:-0}"
  fi
  for soc in "${socs[@]}"; do
    out="$TUNE_BANK_PATH/${soc}_gradient_fusion.json"
    tmp="$TUNE_BANK_PATH/.${soc}_gradient_fusion.json.$$"
    printf '{"soc": "%s", "aoe_mode": %s, "rank_size": %s, "split_strategy_by_idx": [20, 100, 159]}\n' \
      "$soc" "$AOE_MODE" "${RANK_SIZE:-1}" >"$tmp" && chmod 0644 "$tmp" && mv -f "$tmp" "$out" || exit 3
    echo "AOE: wrote $out"
    sleep 0.05
  done
  exit "${EXIT_CODE:-0}"
fi

if [[ -z "${TUNE_BANK_PATH:-}" ]]; then
  echo "bank: TUNE_BANK_PATH unset, training without the AOE repository"
elif [[ -r "$bank_file" ]]; then
  echo "bank: $bank_file readable"
else
  echo "bank: $bank_file missing"
fi
for ((i = 1; i <= steps; i++)); do
  echo "step $i loss $((1000 / i))"
  sleep "$step_s"
done
exit "${EXIT_CODE:-0}"
