#!/usr/bin/env bash
# Replays a folder of batch files over a Slurm job array, one shard per array task, then merges.
#
#   tools/slurm-array.sh /data/batches /scratch/dsa-run [replay options...]
#
# Run on a login node, it submits the array and a merge job that starts when every task ended
# (afterany), and prints both job ids. Task logs go to OUT/replay-<job>_<task>.log, the merged
# report to OUT/merged. What each task asks for comes from the environment [default]:
#   DSA_SLURM_TASKS   tasks in the array, i.e. shards [8]
#   DSA_SLURM_GPUS    GPUs per task, asked for as --gres=gpu:N [1]; 0 on a CPU-only partition,
#                     where only the CPU references can run (pass --impl reference-sparse,...)
#   DSA_SLURM_CPUS    CPUs per task [16]
#   DSA_SLURM_SBATCH  further sbatch options for both jobs, e.g. "--partition=cpu --account=me"
#   DSA_HARNESS       the dsa-harness binary [the build/dsa-harness next to this script]
#
# Submitting by hand works too; the GPU and CPU requests are then sbatch's own options, and
# DSA_HARNESS must be set (sbatch runs a copy of this script, far from the build):
#
#   DSA_HARNESS=$PWD/build/dsa-harness sbatch --array=0-7 --gres=gpu:1 --cpus-per-task=16 \
#       tools/slurm-array.sh /data/batches /scratch/dsa-run
#   sbatch --dependency=afterany:<array job id> --wrap "build/dsa-harness merge /scratch/dsa-run/shard-* -o /scratch/dsa-run/merged"
#
# Each task runs `dsa-harness replay --shard I/N` with I and N taken from SLURM_ARRAY_TASK_ID,
# SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_COUNT (replay reads them itself), writing its report
# into OUT/shard-I. Use a contiguous array (no ":step"). A task that is preempted or requeued
# resumes where it stopped (--resume skips the implementation runs its cases.jsonl already holds);
# its log keeps every attempt (--open-mode=append).
# No GPU or CPU request here: a --gres line would make sbatch refuse the script on partitions
# without GPUs, whatever the command line says.
#SBATCH --job-name=dsa-replay
#SBATCH --time=02:00:00
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=dsa-replay-%A_%a.log
set -euo pipefail

usage="usage: tools/slurm-array.sh INPUT_FOLDER OUTPUT_FOLDER [replay options...] (see its first lines)"

fail() {  # exit 4: invalid input or a broken environment (docs/exit-codes.md)
  echo "slurm-array: $*" >&2
  exit 4
}

find_harness() {
  if [[ -n ${DSA_HARNESS:-} ]]; then
    [[ -x $DSA_HARNESS ]] || fail "DSA_HARNESS=$DSA_HARNESS: not an executable file"
    echo "$DSA_HARNESS"
  elif [[ -x $(dirname "$0")/../build/dsa-harness ]]; then
    realpath "$(dirname "$0")/../build/dsa-harness"
  else
    command -v dsa-harness || fail "no dsa-harness: set DSA_HARNESS to the binary (sbatch runs a copy of this script, so it cannot look next to it)"
  fi
}

count_option() {  # name, default, minimum: the variable's value, checked
  local value=${!1:-$2}
  [[ $value =~ ^[0-9]+$ && $value -ge $3 ]] || fail "$1=$value: must be a whole number >= $3"
  echo "$value"
}

# One array task: this task's shard, resumed where an earlier attempt stopped.
run_task() {
  local inputs=$1 out=$2 bin shard attempt rc
  shift 2
  bin=$(find_harness)
  shard=$((SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN))
  attempt=$((${SLURM_RESTART_COUNT:-0} + 1))
  echo "slurm-array: shard $shard/$SLURM_ARRAY_TASK_COUNT, attempt $attempt, on $(hostname)"
  mkdir -p "$out"
  set +e
  "$bin" replay "$inputs" -o "$out/shard-$shard" --resume "$@"
  rc=$?
  set -e
  # Exit codes 1-3 are verdicts (kept in the shard's report for merge); only 4 fails the task.
  if [[ $rc -eq 4 ]]; then exit 4; fi
  echo "slurm-array: shard $shard/$SLURM_ARRAY_TASK_COUNT finished with verdict exit code $rc"
}

# On a login node: the array, then the merge job waiting for it.
submit() {
  local inputs out bin tasks gpus cpus self array merge shards=() i
  local -a extra request
  inputs=$(realpath -m "$1") out=$(realpath -m "$2")
  shift 2
  [[ -e $inputs ]] || fail "$inputs: no such file or folder"
  command -v sbatch >/dev/null || fail "no sbatch on PATH: run this on a Slurm login node"
  bin=$(find_harness)
  tasks=$(count_option DSA_SLURM_TASKS 8 1)
  gpus=$(count_option DSA_SLURM_GPUS 1 0)
  cpus=$(count_option DSA_SLURM_CPUS 16 1)
  read -ra extra <<<"${DSA_SLURM_SBATCH:-}"
  request=(--cpus-per-task="$cpus")
  ((gpus > 0)) && request+=(--gres="gpu:$gpus")
  self=$(realpath "$0")
  mkdir -p "$out"
  array=$(DSA_HARNESS=$bin sbatch --parsable --array="0-$((tasks - 1))" "${request[@]}" "${extra[@]}" \
            --output="$out/replay-%A_%a.log" "$self" "$inputs" "$out" "$@") ||
    fail "sbatch refused the array (${request[*]}${extra[*]:+ ${extra[*]}}); see its message above"
  array=${array%%;*}
  for ((i = 0; i < tasks; i++)); do shards+=("$out/shard-$i"); done
  merge=$(sbatch --parsable --job-name=dsa-merge --dependency="afterany:$array" "${extra[@]}" \
            --output="$out/merge-%j.log" --wrap "$(printf '%q ' "$bin" merge "${shards[@]}" -o "$out/merged")") ||
    fail "sbatch refused the merge job; the array $array runs anyway (merge by hand when it ended)"
  merge=${merge%%;*}
  echo "slurm-array: array job $array ($tasks tasks, ${request[*]}), logs $out/replay-${array}_*.log"
  echo "slurm-array: merge job $merge (after the array), report $out/merged"
  if ((gpus == 0)) && [[ " $* " != *" --impl"* ]]; then
    echo "slurm-array: note: no GPU asked for (DSA_SLURM_GPUS=0): the GPU implementations will be reported not run" \
         "(--impl reference-sparse,reference-mask,reference-exact says so)"
  fi
}

(($# >= 2)) || fail "$usage"
if [[ -n ${SLURM_ARRAY_TASK_ID:-} ]]; then
  run_task "$@"
elif [[ -n ${SLURM_JOB_ID:-} ]]; then
  fail "this job is not an array: submit with sbatch --array=0-N, or run the script on a login node"
else
  submit "$@"
fi
