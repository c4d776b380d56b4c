#!/usr/bin/env bash
# tools/slurm-array.sh on a real one-node Slurm cluster (ctest test_slurm_array, labels slurm, cpu).
# munged, slurmctld and slurmd run on localhost from a slurm.conf written into a temporary folder
# (own munge key and socket, ports, state, spool and logs: nothing in /etc is read or changed) and
# are stopped on exit, also on failure.
#  1. The script's default asks each task for a GPU: on this GPU-less partition sbatch refuses it,
#     and the script exits 4 passing on sbatch's reason.
#  2. DSA_SLURM_GPUS=0: the fixtures as a 3-task array plus the merge job that depends on it.
#     Task 1 stops right after its first implementation run is synced (stop_after_first_run.so)
#     and is requeued there (scontrol requeue); its second attempt resumes from its cases.jsonl
#     (the log shows the run "finished earlier"), and the merged report equals a whole run
#     (verdicts, metrics, inputs and runs; timings aside).
# Exits 77 (skipped) without the Slurm and munge programs (the offline GPU box) or without root.
# Usage: test_slurm_array.sh DSA_HARNESS_BINARY STOP_AFTER_FIRST_RUN_SO      KEEP=1 keeps the folder.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd -P)
bin=${1:?usage: test_slurm_array.sh DSA_HARNESS_BINARY STOP_AFTER_FIRST_RUN_SO}
stopper=${2:?usage: test_slurm_array.sh DSA_HARNESS_BINARY STOP_AFTER_FIRST_RUN_SO}
fail() { echo "test_slurm_array: FAILED: $*" >&2; exit 1; }

PATH=$PATH:/usr/sbin  # the daemons, where a user's PATH lacks it
missing=()
for p in munged slurmctld slurmd sbatch scontrol sinfo squeue scancel; do
  command -v "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "test_slurm_array: SKIPPED: missing ${missing[*]} (Debian packages munge slurmctld slurmd slurm-client;" \
       "DSA_WITH_SLURM=1 tools/install-deps.sh installs them)"
  exit 77
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "test_slurm_array: SKIPPED: slurmd runs jobs as their user and must start as root"
  exit 77
fi

tmp=$(mktemp -d)
chmod 755 "$tmp"  # munged wants its socket's folders searchable by all
pids=()
stop_all() {
  # Jobs first (their processes belong to slurmstepd), then the daemons, each by its own pid.
  scancel --full --quiet "--user=$(id -un)" 2>/dev/null || true
  for _ in $(seq 20); do [[ -z $(squeue -h 2>/dev/null) ]] && break; sleep 0.25; done
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [[ -n ${KEEP:-} ]]; then echo "test_slurm_array: kept $tmp"; else rm -rf "$tmp"; fi
}
trap stop_all EXIT
export SLURM_CONF=$tmp/slurm.conf

start_munge() {
  mkdir -m 700 "$tmp/munge-key"
  mkdir -m 755 "$tmp/munge-run"
  head -c 1024 /dev/urandom >"$tmp/munge-key/munge.key"
  chmod 600 "$tmp/munge-key/munge.key"
  munged -F --socket="$tmp/munge-run/munge.socket" --key-file="$tmp/munge-key/munge.key" \
    --pid-file="$tmp/munge-run/munged.pid" --seed-file="$tmp/munge-key/seed" \
    --log-file="$tmp/log/munged.log" >"$tmp/log/munged.out" 2>&1 &
  pids+=($!)
  for _ in $(seq 40); do [[ -S $tmp/munge-run/munge.socket ]] && return 0; sleep 0.1; done
  cat "$tmp/log/munged.out" >&2
  fail "munged did not create its socket within 4 s"
}

# cred_expire: a requeued job waits that long before it starts again (120 s by default); it must
# outlast a job's launch, which takes well under a second here. sched_interval: the scheduler's
# pass that starts it then (60 s by default).
write_slurm_conf() {
  local ports host
  # Two free ports, so a real Slurm on this machine (or a second run of this test) is left alone.
  ports=$(python3 -c 'import socket; s = [socket.socket() for _ in range(2)]; [x.bind(("127.0.0.1", 0)) for x in s]; print(*[x.getsockname()[1] for x in s])')
  host=$(uname -n | cut -d. -f1)  # the short name, as slurmctld and slurmd compare it
  mkdir -m 700 "$tmp/state" "$tmp/spool"
  : >"$tmp/plugstack.conf"
  cat >"$SLURM_CONF" <<EOF
ClusterName=dsatest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=${ports% *}
SlurmdPort=${ports#* }
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge-run/munge.socket,cred_expire=10
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
PlugStackConfig=$tmp/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=1
MpiDefault=none
ReturnToService=2
KillWait=2
MinJobAge=600
NodeName=dsa-node NodeAddr=127.0.0.1 NodeHostname=$host CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=cpu Nodes=dsa-node Default=YES MaxTime=UNLIMITED State=UP
EOF
}

start_slurm() {
  slurmctld -D -i -f "$SLURM_CONF" >"$tmp/log/slurmctld.out" 2>&1 &
  pids+=($!)
  slurmd -D -f "$SLURM_CONF" -N dsa-node >"$tmp/log/slurmd.out" 2>&1 &
  pids+=($!)
  for _ in $(seq 80); do [[ $(sinfo -h -o %T 2>/dev/null) == idle ]] && return 0; sleep 0.25; done
  tail -5 "$tmp/log/slurmctld.log" "$tmp/log/slurmd.log" >&2 || true
  fail "the node did not become idle within 20 s"
}

job_field() {  # job id, field: the field of `scontrol show job` (the first task's, for an array)
  scontrol -o show job "$1" 2>/dev/null | head -1 | tr ' ' '\n' | sed -n "s/^$2=//p"
}

wait_for() {  # seconds, description, command...: polls the command until it succeeds
  local limit=$1 what=$2 i
  shift 2
  for ((i = 0; i < limit * 4; i++)); do "$@" && return 0; sleep 0.25; done
  squeue >&2 || true
  tail -5 "$tmp/log/slurmctld.log" >&2 || true
  fail "$what: not within $limit s"
}

mkdir -m 755 "$tmp/log"
start_munge
write_slurm_conf
start_slurm
# The whole run to compare with, while the cluster works.
"$bin" replay "$repo/fixtures" -o "$tmp/whole" >"$tmp/whole.log" 2>&1 &
whole=$!

# ---- 1. the default asks for a GPU: refused here, with sbatch's reason, exit 4
rc=0
DSA_HARNESS=$bin DSA_SLURM_TASKS=3 DSA_SLURM_CPUS=1 "$repo/tools/slurm-array.sh" "$repo/fixtures" "$tmp/refused" >"$tmp/refused.log" 2>&1 || rc=$?
[[ $rc == 4 ]] || { cat "$tmp/refused.log" >&2; fail "case 1: exit $rc, expected 4"; }
grep -q "Invalid generic resource" "$tmp/refused.log" || { cat "$tmp/refused.log" >&2; fail "case 1: sbatch's reason not shown"; }
grep -q -- "--gres=gpu:1" "$tmp/refused.log" || { cat "$tmp/refused.log" >&2; fail "case 1: the GPU request is not named"; }
[[ -z $(squeue -h) ]] || fail "case 1: a job was queued: $(squeue -h)"
echo "case 1 passed: exit 4: $(grep -m1 'refused' "$tmp/refused.log")"

# ---- 2. CPU-only array with a requeue in the middle of task 1, then the merge job
cat >"$tmp/harness" <<EOF
#!/bin/sh
# The first attempt of task 1 stops after its first logged run; every other start runs as is.
if [ "\${SLURM_ARRAY_TASK_ID:-}" = 1 ] && [ "\${SLURM_RESTART_COUNT:-0}" = 0 ]; then
  export LD_PRELOAD="$stopper" DSA_TEST_STOPPED_MARK="$tmp/stopped"
  # An AddressSanitizer build wants its runtime first; the module only wraps fsync.
  export ASAN_OPTIONS="\${ASAN_OPTIONS:+\$ASAN_OPTIONS:}verify_asan_link_order=0"
fi
exec "$bin" "\$@"
EOF
chmod +x "$tmp/harness"
out=$tmp/run
DSA_HARNESS=$tmp/harness DSA_SLURM_TASKS=3 DSA_SLURM_GPUS=0 DSA_SLURM_CPUS=1 \
  "$repo/tools/slurm-array.sh" "$repo/fixtures" "$out" >"$tmp/submit.log" 2>&1 || { cat "$tmp/submit.log" >&2; fail "case 2: submission failed"; }
cat "$tmp/submit.log"
array=$(sed -n 's/^slurm-array: array job \([0-9]*\) .*/\1/p' "$tmp/submit.log")
merge=$(sed -n 's/^slurm-array: merge job \([0-9]*\) .*/\1/p' "$tmp/submit.log")
[[ -n $array && -n $merge ]] || fail "case 2: no job ids in the submission's output"

wait_for 40 "task 1 stopping after its first run" test -s "$tmp/stopped"
runs_before=$(grep -c '"type":"run"' "$out/shard-1/cases.jsonl" || true)
[[ $runs_before == 1 ]] || fail "case 2: task 1 stopped with $runs_before finished runs in its log, expected 1"
[[ $(job_field "${array}_1" JobState) == RUNNING ]] || fail "case 2: task 1 is $(job_field "${array}_1" JobState), expected RUNNING"
scontrol requeue "${array}_1"
echo "requeued ${array}_1 with 1 finished run in $out/shard-1/cases.jsonl"

merge_done() { [[ $(job_field "$merge" JobState) =~ ^(COMPLETED|FAILED|CANCELLED|TIMEOUT)$ ]]; }
wait_for 60 "the merge job ending" merge_done
[[ $(job_field "$merge" JobState) == COMPLETED ]] || { cat "$out"/merge-*.log >&2; fail "case 2: merge job $(job_field "$merge" JobState)"; }
[[ $(job_field "${array}_1" Restarts) == 1 ]] || fail "case 2: task 1 restarted $(job_field "${array}_1" Restarts) times, expected 1"

# The task's log holds both attempts: the first without "finished earlier", the second with it once.
log1=$out/replay-${array}_1.log
second=$(sed -n '/attempt 2,/,$p' "$log1")
[[ -n $second ]] || { cat "$log1" >&2; fail "case 2: no second attempt in $log1"; }
first=$(sed -n '/attempt 1,/,/attempt 2,/p' "$log1")
! grep -q "finished earlier" <<<"$first" || fail "case 2: the first attempt resumed something"
[[ $(grep -c "finished earlier" <<<"$second") == 1 ]] || { cat "$log1" >&2; fail "case 2: the second attempt did not resume exactly the 1 logged run"; }
echo "task 1 resumed: $(grep "finished earlier" <<<"$second")"

wait "$whole" || [[ $? -le 3 ]] || { cat "$tmp/whole.log" >&2; fail "the whole run failed"; }
python3 - "$tmp/whole/report.json" "$out/merged/report.json" <<'PY' || fail "case 2: the merged report differs from the whole run"
import json, sys

def without_timings(path):
    r = json.load(open(path))
    for run in r["runs"]:  # kernel timings: a resumed run times the stages it shared otherwise
        run.pop("wall_s")
        run.pop("kernels")
    return {"verdict": r["verdict"], "exit_code": r["exit_code"],
            "inputs": sorted(r["inputs"], key=lambda i: i["batch_id"]),
            "runs": sorted(r["runs"], key=lambda x: (x["batch_id"], x["impl"])),
            "cases": sorted(r["cases"], key=lambda c: c["id"])}

whole, merged = (without_timings(p) for p in sys.argv[1:])
for key in whole:
    if whole[key] != merged[key]:
        if isinstance(whole[key], list) and len(whole[key]) == len(merged[key]):
            i = next(i for i, (a, b) in enumerate(zip(whole[key], merged[key])) if a != b)
            sys.exit(f"{key}[{i}]: whole run {json.dumps(whole[key][i])[:400]}\n merged {json.dumps(merged[key][i])[:400]}")
        sys.exit(f"{key}: whole run {json.dumps(whole[key])[:400]}, merged {json.dumps(merged[key])[:400]}")
cases = whole["cases"]
print(f"merged report equals the whole run: {len(cases)} cases "
      f"({sum(c['verdict'] == 'passed' for c in cases)} passed), {len(whole['runs'])} runs, verdict {whole['verdict']}")
PY
echo "case 2 passed"
