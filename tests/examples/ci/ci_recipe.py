"""What the tests of examples/ci share: the recipe files, the binary under test, the CPU
implementations and planted defect they run with, and a clean environment for the steps."""
import os
from pathlib import Path

import pytest

try:
    import yaml  # Debian: python3-yaml (tools/install-deps.sh)
except ImportError:
    yaml = None

SOURCE = Path(os.environ.get("DSA_SOURCE_DIR", Path(__file__).resolve().parents[3]))
BINARY = Path(os.environ["DSA_BINARY"])
CPU_IMPLS = "reference-sparse,reference-mask"  # DSA_IMPLS, as a repository would set it
MUTANT = "mutant:newest-not-forced"            # the planted defect


def load_recipe(name):
    if yaml is None:
        pytest.exit("skipped: no Python module yaml (Debian package python3-yaml) to read the recipe", returncode=77)
    path = SOURCE / "examples/ci" / name
    with open(path) as f:
        return path, yaml.safe_load(f)


def clean_env(workspace):
    """PATH with the binary under test first (what the recipes' build steps add), nothing else of ours."""
    env = {k: os.environ[k] for k in ("HOME", "LANG", "TMPDIR", "DSA_MEMORY_BUDGET") if k in os.environ}
    env.update(PATH=f"{BINARY.parent}{os.pathsep}{os.environ['PATH']}", CI="true")
    return env


def corpus_overrides(impls=CPU_IMPLS):
    return {"DSA_IMPLS": impls, "DSA_CORPUS": str(SOURCE / "fixtures")}


def rerun_line(gate_md, impl):
    """The first rerun command gate.md gives for a case of `impl`."""
    return next(line for line in gate_md.splitlines() if line.startswith("dsa-harness replay") and impl in line)
