#!/usr/bin/env bash
# Replays a folder of batch files over a Slurm job array, one shard per array task, then merges.
#
#   sbatch --array=0-7 tools/slurm-array.sh /data/batches /scratch/dsa-run
#
# Each task runs `dsa-harness replay --shard I/N` with I and N taken from SLURM_ARRAY_TASK_ID,
# SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_COUNT (replay reads them itself), writing its report
# into OUT/shard-I. Use a contiguous array (no ":step"). After the array finished:
#
#   sbatch --dependency=afterany:<array job id> --wrap "build/dsa-harness merge /scratch/dsa-run/shard-* -o /scratch/dsa-run/merged"
#
# A task that is preempted and requeued resumes where it stopped (--resume skips the
# implementation runs its cases.jsonl already holds).
#SBATCH --job-name=dsa-replay
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=16
#SBATCH --time=02:00:00
#SBATCH --requeue
#SBATCH --output=dsa-replay-%A_%a.log
set -euo pipefail

INPUTS=${1:?usage: sbatch --array=0-N tools/slurm-array.sh INPUT_FOLDER OUTPUT_FOLDER [replay options...]}
OUT=${2:?usage: sbatch --array=0-N tools/slurm-array.sh INPUT_FOLDER OUTPUT_FOLDER [replay options...]}
shift 2
BIN=${DSA_HARNESS:-$(dirname "$0")/../build/dsa-harness}
: "${SLURM_ARRAY_TASK_ID:?run this script with sbatch --array}"
SHARD=$((SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN))

mkdir -p "$OUT"
set +e
"$BIN" replay "$INPUTS" -o "$OUT/shard-$SHARD" --resume "$@"
rc=$?
set -e
# Exit codes 1-3 are verdicts (kept in the shard's report for merge); only 4 fails the task.
if [[ $rc -eq 4 ]]; then exit 4; fi
echo "shard $SHARD/$SLURM_ARRAY_TASK_COUNT finished with verdict exit code $rc"
