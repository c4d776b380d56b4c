"""docs/python.md: its Python examples run as a user runs them (from a folder holding fixtures/,
with the package on PYTHONPATH) and print what they promise."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = Path(os.environ.get("DSA_SOURCE_DIR", Path(__file__).resolve().parents[3]))
EXPECTED = [r"layer \d+ row \d+ slot \d+: expected position \d+, got \d+.*\n", r"passed 0\n"]


def python_blocks():
    return re.findall(r"```python\n(.*?)```", (SOURCE / "docs" / "python.md").read_text(), flags=re.S)


def test_every_example_is_checked():
    assert len(python_blocks()) == len(EXPECTED)


@pytest.mark.parametrize("index", range(len(EXPECTED)))
def test_the_example_runs(index, tmp_path):
    shutil.copytree(SOURCE / "fixtures", tmp_path / "fixtures")
    script = tmp_path / "example.py"
    script.write_text(python_blocks()[index])
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.fullmatch(EXPECTED[index], done.stdout), done.stdout
