"""docs/guide.md and docs/plugins.md as a new user follows them: every ```sh block runs (in order,
one bash per document, stopping at the first failing command) in a fresh folder holding copies of
fixtures/ and examples/, include/, and `build` (the build folder); every ```python or ```c block
whose first line names a file is written to that file first; a ```python block without a name
is an excerpt and must appear verbatim in examples/. The output must show what the text promises.
Run by ctest (test_user_docs) with DSA_BINARY, PYTHONPATH and DSA_SOURCE_DIR set."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = Path(os.environ.get("DSA_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BINARY = Path(os.environ.get("DSA_BINARY", ""))
FILE_HEADER = re.compile(r"^(?:#|/\*)\s*([\w.-]+\.(?:py|c))\b")

# What each document's commands must print (regexes, searched in stdout + stderr).
PROMISES = {
    "guide.md": [r"dsa-harness \d+\.\d+\.\d+",
                 r"wrote example\.h5: 2 requests, 32 rows, layers \[3, 4\], recorded outputs \['engine'\]",
                 r"replay: passed: \d+/\d+ case\(s\) passed on 1 input\(s\); reports in report \(exit 0\)",
                 r"report\.html", r"## dsa-harness: PASSED \(exit 0\)", r"passed 0 \d+ cases",
                 r"FAIL \S+/mutant:page-entry-off-by-one/\S+", r"exit 1\n(.|\n)*Cases that did not pass",
                 r"1 passed", r"\npassed 0\n",
                 r"output: +my-kernel \(reference-sparse, cpu: .*; recorded by dsa-harness \S+ \(commit \w+\) at 20",
                 r"\| recorded:my-kernel \| ran: recorded outputs /outputs/my-kernel of reference-sparse on cpu: "],
    "plugins.md": [r"FAIL \S+/plugin:\./libmine\.so/\S+: .*expected position", r"exit 1\n[1-9]\d*\n",
                   r"replay: passed: \d+/\d+ case\(s\) passed on 3 input\(s\)", r"### Kernels"],
}


def blocks(document):
    return re.findall(r"```(\w+)\n(.*?)```", (SOURCE / "docs" / document).read_text(), flags=re.S)


def prepare(folder):
    for name in ("fixtures", "examples"):
        shutil.copytree(SOURCE / name, folder / name)
    (folder / "include").symlink_to(SOURCE / "include")
    (folder / "build").symlink_to(BINARY.parent)
    tools = folder / ".bin"  # `python3` is the Python the tests run with, as for the user
    tools.mkdir()
    # A wrapper, not a symlink: a venv's interpreter started through a link elsewhere does not
    # find its pyvenv.cfg and loses the venv's packages (numpy on the GPU box, device run 24).
    wrapper = tools / "python3"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    return dict(os.environ, PATH=f"{tools}:{os.environ['PATH']}")


def script_of(document, folder):
    commands = ["set -euo pipefail"]
    for language, text in blocks(document):
        named = FILE_HEADER.match(text)
        if language == "sh":
            commands.append(text)
        elif named:
            (folder / named.group(1)).write_text(text)
        elif language == "python":
            excerpts = "".join(p.read_text() for p in (SOURCE / "examples").rglob("*.py"))
            assert text in excerpts, f"{document}: this excerpt is not in examples/:\n{text}"
    return "\n".join(commands)


@pytest.mark.parametrize("document", sorted(PROMISES))
def test_every_command_runs(document, tmp_path):
    assert BINARY.is_file(), "DSA_BINARY must name the dsa-harness binary"
    env = prepare(tmp_path)
    script = script_of(document, tmp_path)
    assert script.count("\n") > 3, f"{document} has no commands"
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    for promise in PROMISES[document]:
        assert re.search(promise, output), f"{document}: no match for {promise!r} in:\n{output}"
