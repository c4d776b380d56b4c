"""examples/ci/github-actions.yml run the way GitHub would run it, on the CPU.

Its `run:` steps execute in order in a fresh workspace per pass, with bash as the workflow's
`defaults.run.shell` says, GITHUB_ENV / GITHUB_PATH applied between steps and
GITHUB_STEP_SUMMARY pointed at a file. The fixtures are the corpus and the CPU references the
implementations (DSA_IMPLS, as a repository would set it). Skipped, and said so: `uses:` steps
(checkout, cache, artifacts, JUnit publishing need GitHub's services) and the build step (the
binary under test, DSA_BINARY, is put on PATH as the build step's GITHUB_PATH line would).
The cache between passes is a copy of the baseline folder, as actions/cache would restore it.

Passes: the default branch's first run makes the baseline; a pull request without a change
passes; a pull request missing an implementation is inconclusive (passes, warns); the default
branch with a planted defect (`mutant:newest-not-forced`) fails with exit 1 and does not
replace the baseline.
"""
import os
import shutil
import subprocess

import pytest

from ci_recipe import CPU_IMPLS, MUTANT, clean_env, corpus_overrides, load_recipe, rerun_line

SKIPPED_RUN_STEPS = {"build": "the binary under test (DSA_BINARY) is on PATH instead"}


def load_workflow():
    path, wf = load_recipe("github-actions.yml")
    jobs = wf["jobs"]
    assert len(jobs) == 1, f"{path}: expected one job, found {list(jobs)}"
    assert wf["defaults"]["run"]["shell"] == "bash", f"{path}: defaults.run.shell must be bash"
    return wf, next(iter(jobs.values()))


def base_env(workspace, summary):
    env = clean_env(workspace)
    env.update(GITHUB_ACTIONS="true", GITHUB_WORKSPACE=str(workspace), GITHUB_STEP_SUMMARY=str(summary),
               RUNNER_TEMP=str(workspace.parent))
    return env


def step_env(wf, job, step, exported, overrides):
    env = {**(wf.get("env") or {}), **(job.get("env") or {}), **(step.get("env") or {})}
    clash = set(exported) & set(env)
    assert not clash, f"github-actions.yml: {clash} both in an env: block and written to GITHUB_ENV (precedence is unclear)"
    env.update(exported)
    env.update(overrides)
    unresolved = {k: v for k, v in env.items() if "${{" in str(v)}
    assert not unresolved, f"github-actions.yml: the test must set these expressions' values: {unresolved}"
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in env.items()}


def read_lines(path):
    return [line for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def run_workflow(tmp, name, overrides, baseline=None):
    """Runs the workflow's run: steps in tmp/name; returns {step id: (exit code, output)} and the workspace."""
    wf, job = load_workflow()
    workspace = tmp / name / "workspace"
    workspace.mkdir(parents=True)
    if baseline:  # what actions/cache/restore would bring back
        shutil.copytree(baseline, workspace / wf["env"]["DSA_BASELINE"])
    summary = tmp / name / "step-summary.md"
    env, exported, results = base_env(workspace, summary), {}, {}
    for i, step in enumerate(job["steps"]):
        label = step.get("id") or step.get("name") or f"step {i}"
        if "uses" in step:
            print(f"[{name}] {label}: skipped (uses: {step['uses']} needs GitHub's services)")
            continue
        if step.get("id") in SKIPPED_RUN_STEPS:
            print(f"[{name}] {label}: skipped ({SKIPPED_RUN_STEPS[step['id']]})")
            continue
        assert "if" not in step, f"github-actions.yml: run: step {label} has an if: (conditions belong in the script)"
        assert "${{" not in step["run"], f"github-actions.yml: run: step {label} pastes an expression into the script"
        files = {k: tmp / name / f"{k.lower()}-{i}" for k in ("GITHUB_ENV", "GITHUB_PATH")}
        script = tmp / name / f"step-{i}.sh"
        script.write_text(step["run"])
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=workspace,
                              env={**env, **step_env(wf, job, step, exported, overrides),
                                   **{k: str(v) for k, v in files.items()}},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
        print(f"[{name}] {label}: exit {proc.returncode}\n{proc.stdout}")
        results[label] = (proc.returncode, proc.stdout)
        for line in read_lines(files["GITHUB_ENV"]):
            key, sep, value = line.partition("=")
            assert sep and "<<" not in key, f"{label}: GITHUB_ENV line not NAME=value: {line!r}"
            exported[key] = value
        for line in reversed(read_lines(files["GITHUB_PATH"])):
            env["PATH"] = line + os.pathsep + env["PATH"]
        if proc.returncode != 0:
            break  # GitHub skips the steps after a failure (only uses: steps here say if: always())
    results["env"] = exported
    return results, workspace, summary.read_text() if summary.exists() else ""


def overrides(promote, impls=CPU_IMPLS):
    return {**corpus_overrides(impls), "DSA_PROMOTE": "true" if promote else "false", "DSA_REFRESH": "false"}


@pytest.fixture(scope="module")
def tmp(tmp_path_factory):
    return tmp_path_factory.mktemp("github-actions")


@pytest.fixture(scope="module")
def first(tmp):
    """The default branch's first run: no baseline yet."""
    return run_workflow(tmp, "main-first", overrides(promote=True))


def report_dir(workspace):
    return workspace / "dsa-report"


def test_first_run_on_the_default_branch_makes_the_baseline(first):
    results, workspace, summary = first
    assert results["verdict"][0] == 0, results["verdict"][1]
    assert results["env"]["DSA_REPLAY_EXIT"] == "0" and results["env"]["DSA_GATE_EXIT"] == "none"
    assert "::warning" in results["verdict"][1]  # ungated is visible, not silent
    assert "## dsa-harness gate: NO BASELINE" in summary
    assert "## dsa-harness: PASSED (exit 0)" in summary
    assert (workspace / "dsa-baseline/report.json").read_bytes() == (report_dir(workspace) / "report.json").read_bytes()
    assert results["env"]["DSA_SAVE_BASELINE"] == "true"
    junit = (report_dir(workspace) / "junit.xml").read_text()
    assert "<testcase" in junit and "<failure" not in junit


def test_pull_request_without_a_change_passes(tmp, first):
    baseline = first[1] / "dsa-baseline"
    results, workspace, summary = run_workflow(tmp, "pr-clean", overrides(promote=False), baseline)
    assert results["verdict"][0] == 0, results["verdict"][1]
    assert results["env"]["DSA_GATE_EXIT"] == "0"
    gate_md = (report_dir(workspace) / "gate.md").read_text()
    assert gate_md.startswith("## dsa-harness gate: PASS (exit 0)")
    assert summary.index(gate_md.splitlines()[0]) < summary.index("## dsa-harness: PASSED (exit 0)")
    assert "<failure" not in (report_dir(workspace) / "junit.xml").read_text()
    assert "DSA_SAVE_BASELINE" not in results["env"]  # a pull request never replaces the baseline


def test_pull_request_missing_an_implementation_is_inconclusive_and_warns(tmp, first):
    baseline = first[1] / "dsa-baseline"
    results, workspace, summary = run_workflow(tmp, "pr-inconclusive", overrides(False, "reference-sparse"), baseline)
    assert results["env"]["DSA_GATE_EXIT"] == "3"
    assert results["verdict"][0] == 0, results["verdict"][1]
    assert "::warning title=dsa-harness::inconclusive" in results["verdict"][1]
    assert "INCONCLUSIVE (exit 3)" in summary and "does not block the merge" in summary


def test_planted_defect_on_the_default_branch_fails_and_keeps_the_baseline(tmp, first):
    baseline = first[1] / "dsa-baseline"
    results, workspace, summary = run_workflow(tmp, "main-planted", overrides(True, f"{CPU_IMPLS},{MUTANT}"), baseline)
    assert results["verdict"][0] == 1, results["verdict"][1]
    assert results["env"]["DSA_REPLAY_EXIT"] == "1" and results["env"]["DSA_GATE_EXIT"] == "1"
    assert "DSA_SAVE_BASELINE" not in results["env"]
    assert (workspace / "dsa-baseline/report.json").read_bytes() == (baseline / "report.json").read_bytes()
    gate_md = (report_dir(workspace) / "gate.md").read_text()
    assert gate_md.startswith("## dsa-harness gate: CORRECTNESS FAILURE (exit 1)")
    assert f"/{MUTANT}/" in gate_md and "CORRECTNESS FAILURE (exit 1)" in summary
    assert "<failure" in (report_dir(workspace) / "junit.xml").read_text()
    # The rerun line gate.md gives reproduces the failure on its own.
    rerun = rerun_line(gate_md, MUTANT)
    print(f"rerun: {rerun}")
    proc = subprocess.run(rerun + " -o rerun", shell=True, cwd=workspace, env=base_env(workspace, tmp / "unused.md"),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout
