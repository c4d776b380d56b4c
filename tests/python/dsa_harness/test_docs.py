"""docs/python.md: its Python example runs as a user runs it (from the source folder, with the
package on PYTHONPATH) and prints the first mismatch it promises."""
import os
import re
import subprocess
import sys
from pathlib import Path

SOURCE = Path(os.environ.get("DSA_SOURCE_DIR", Path(__file__).resolve().parents[3]))


def python_blocks(markdown):
    return re.findall(r"```python\n(.*?)```", markdown, flags=re.S)


def test_the_example_runs(tmp_path):
    blocks = python_blocks((SOURCE / "docs" / "python.md").read_text())
    assert len(blocks) == 1, "docs/python.md should hold one python example"
    script = tmp_path / "example.py"
    script.write_text(blocks[0])
    done = subprocess.run([sys.executable, str(script)], cwd=SOURCE, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.fullmatch(r"layer \d+ row \d+ slot \d+: expected position \d+, got \d+.*\n", done.stdout), done.stdout
