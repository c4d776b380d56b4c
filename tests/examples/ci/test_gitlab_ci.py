"""examples/ci/gitlab-ci.yml's job script run the way a GitLab runner would run it, on the CPU.

The `script:` entries run in one bash with `set -eo pipefail`, in a fresh folder per pass, with
the job's variables, the CPU references as DSA_IMPLS and the fixtures as the corpus. Skipped, and
said so: the build entries (install-deps, cuda-path, cmake: the binary under test is on PATH
instead). The baseline download runs and fails (the API address is unreachable here), as on a
first run; the baseline a previous pass made is put in place as the download would.

Passes: the default branch's first run (no baseline: exit 3, allowed to fail) makes the baseline;
the default branch with a planted defect exits 1, names the failing case in gate.md and keeps the
old baseline; every path the job declares as an artifact or a JUnit report exists.
"""
import shutil
import subprocess

import pytest

from ci_recipe import CPU_IMPLS, MUTANT, clean_env, corpus_overrides, load_recipe, rerun_line

BUILD_ENTRIES = ("tools/install-deps.sh", "source tools/cuda-path.sh", "cmake ")


def load_job():
    path, ci = load_recipe("gitlab-ci.yml")
    assert "dsa-gate" in ci, f"{path}: no job dsa-gate"
    return ci, ci["dsa-gate"]


def run_job(tmp, name, branch, impls=CPU_IMPLS, baseline=None):
    """Runs the job's script in tmp/name/workspace; returns (exit code, output, workspace)."""
    ci, job = load_job()
    workspace = tmp / name / "workspace"
    workspace.mkdir(parents=True)
    if baseline:
        shutil.copytree(baseline, workspace / ci["variables"]["DSA_BASELINE"])
    entries = []
    for entry in job["script"]:
        if entry.startswith(BUILD_ENTRIES):
            print(f"[{name}] skipped: {entry} (the binary under test is on PATH instead)")
        else:
            entries.append(entry)
    env = clean_env(workspace)
    env.update({k: str(v) for k, v in ci["variables"].items()})
    env.update(corpus_overrides(impls))
    env.update(CI_COMMIT_BRANCH=branch, CI_DEFAULT_BRANCH="main", CI_JOB_NAME="dsa-gate", CI_PROJECT_ID="1",
               CI_JOB_TOKEN="unused", CI_API_V4_URL="http://127.0.0.1:9/api/v4")  # refused at once: no baseline fetched
    script = tmp / name / "script.sh"
    script.write_text("set -eo pipefail\n" + "\n".join(entries) + "\n")
    proc = subprocess.run(["bash", "--noprofile", "--norc", str(script)], cwd=workspace, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    print(f"[{name}] exit {proc.returncode}\n{proc.stdout}")
    return proc.returncode, proc.stdout, workspace


def check_artifacts(job, workspace):
    artifacts = job["artifacts"]
    for path in artifacts["paths"] + [artifacts["reports"]["junit"]]:
        assert (workspace / path).exists(), f"gitlab-ci.yml: artifact {path} was not written"


@pytest.fixture(scope="module")
def tmp(tmp_path_factory):
    return tmp_path_factory.mktemp("gitlab-ci")


@pytest.fixture(scope="module")
def first(tmp):
    return run_job(tmp, "main-first", "main")


def test_exit_3_is_the_only_allowed_failure():
    _, job = load_job()
    assert job["allow_failure"] == {"exit_codes": [3]}


def test_first_run_on_the_default_branch_is_inconclusive_and_makes_the_baseline(first):
    code, output, workspace = first
    assert code == 3, output
    assert "no baseline fetched from main" in output and "replay exit 0, gate exit none" in output
    assert (workspace / "dsa-baseline/report.json").read_bytes() == (workspace / "dsa-report/report.json").read_bytes()
    assert not (workspace / "dsa-report/gate.md").exists()


def test_planted_defect_on_the_default_branch_fails_names_it_and_keeps_the_baseline(tmp, first):
    baseline = first[2] / "dsa-baseline"
    code, output, workspace = run_job(tmp, "main-planted", "main", f"{CPU_IMPLS},{MUTANT}", baseline)
    assert code == 1, output
    assert "replay exit 1, gate exit 1: the baseline stays as it is" in output
    gate_md = (workspace / "dsa-report/gate.md").read_text()
    assert gate_md.startswith("## dsa-harness gate: CORRECTNESS FAILURE (exit 1)")
    assert gate_md in output  # printed in the job log
    print(f"rerun: {rerun_line(gate_md, MUTANT)}")
    assert (workspace / "dsa-baseline/report.json").read_bytes() == (baseline / "report.json").read_bytes()
    _, job = load_job()
    check_artifacts(job, workspace)
