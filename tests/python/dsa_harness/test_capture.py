"""capture() (python/src/capture.cpp, python/dsa_harness/capture.py): examples/capture_example.py
writes a batch that validates, replays its recorded outputs with `--impl recorded:engine`, and
round-trips byte for byte through the C++ reader and writer; broken engine results are refused
before anything is written."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dsa_harness
from conftest import harness

SOURCE = Path(os.environ.get("DSA_SOURCE_DIR", Path(__file__).resolve().parents[3]))


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    folder = tmp_path_factory.mktemp("capture")
    done = subprocess.run([sys.executable, str(SOURCE / "examples" / "capture_example.py")], cwd=folder,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "recorded outputs ['engine']" in done.stdout, done.stdout
    return folder / "example.h5"


def test_example_validates(example):
    done = harness("validate", example)
    assert done.returncode == 0, done.stdout + done.stderr


def test_example_replays_its_recorded_outputs(example, tmp_path):
    done = harness("replay", example, "--impl", "recorded:engine", "-o", tmp_path / "report")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    cases = [c for c in report["cases"] if c["impl"] == "recorded:engine"]
    assert sorted(c["layer"] for c in cases) == ["3", "4", "blocks"], cases
    assert all(c["verdict"] == "passed" for c in cases), cases


def test_example_round_trips_byte_for_byte(example, tmp_path):
    again = tmp_path / "again.h5"
    read = dsa_harness.Batch.read(example)
    read.write(again)
    assert again.read_bytes() == example.read_bytes()
    assert read.recorded_names == ["engine"]
    assert read.attributes()["origin"] == "captured"


def test_moved_pick_is_caught_by_the_replay(arrays, tmp_path):
    picks = dsa_harness.run(dsa_harness.Batch.from_arrays(**arrays), impl="reference-sparse")
    positions = {k: v.copy() for k, v in picks.positions.items()}
    row = int(np.flatnonzero(arrays["compress_len"] > 600)[0])
    chosen = positions[24][row]
    missing = next(p for p in range(600) if p not in set(chosen.tolist()))
    chosen[chosen.argmax()] = missing
    chosen.sort()
    path = tmp_path / "moved.h5"
    dsa_harness.capture(path, outputs={"engine": {"blocks": picks.blocks, "positions": positions,
                                                  "tail_positions": picks.tail_positions}}, **arrays)
    done = harness("replay", path, "--impl", "recorded:engine", "-o", tmp_path / "report")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"layer 24 row {row} slot" in done.stdout + done.stderr


def test_tensors_of_any_layout_are_copied(arrays, tmp_path):
    # A pool as the engine pages it ([pages, slots, bytes]) and non-contiguous views still capture.
    arrays = dict(arrays, pool=arrays["pool"].reshape(arrays["pool"].shape[0], 64, 68),
                  compress_len=arrays["compress_len"][::-1].copy()[::-1])
    batch = dsa_harness.capture(tmp_path / "b.h5", **arrays)
    assert dsa_harness.Batch.read(tmp_path / "b.h5").content_id == batch.content_id


@pytest.mark.parametrize("broken, message", [
    (lambda o: o.update(positions={24: o["positions"][24][:, :10]}), "/outputs/engine/24/positions: shape"),
    (lambda o: o["positions"][24].__setitem__((0, 0), 5000), "/outputs/engine/24/positions"),
    (lambda o: o.update(positions={99: o["positions"][24]}), "the batch has no layer 99"),
    (lambda o: o.update(colour="red"), "unknown keys ['colour']"),
])
def test_broken_engine_results_are_refused(arrays, tmp_path, broken, message):
    picks = dsa_harness.run(dsa_harness.Batch.from_arrays(**arrays), impl="reference-sparse")
    results = {"blocks": picks.blocks, "positions": {k: v.copy() for k, v in picks.positions.items()},
               "tail_positions": picks.tail_positions}
    broken(results)
    with pytest.raises(dsa_harness.InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        dsa_harness.capture(tmp_path / "x.h5", outputs={"engine": results}, **arrays)
    assert not (tmp_path / "x.h5").exists()


def test_int64_picks_as_torch_topk_returns_them(arrays, tmp_path):
    picks = dsa_harness.run(dsa_harness.Batch.from_arrays(**arrays), impl="reference-sparse")
    wide = {"blocks": picks.blocks.astype(np.int64), "positions": {k: v.astype(np.int64) for k, v in picks.positions.items()},
            "tail_positions": {k: v.astype(np.int64) for k, v in picks.tail_positions.items()}}
    batch = dsa_harness.capture(tmp_path / "wide.h5", outputs={"engine": wide}, **arrays)
    assert np.array_equal(batch.recorded("engine").positions[24], picks.positions[24])
    wide["positions"][24][0, 0] = 2 ** 40
    with pytest.raises(dsa_harness.InputError, match="capture: /outputs/engine/24/positions: values do not fit int32"):
        dsa_harness.capture(tmp_path / "x.h5", outputs={"engine": wide}, **arrays)


def test_output_names_are_group_names(arrays, tmp_path):
    picks = dsa_harness.run(dsa_harness.Batch.from_arrays(**arrays), impl="reference-sparse")
    with pytest.raises(dsa_harness.InputError, match="without '/'"):
        dsa_harness.capture(tmp_path / "x.h5", outputs={"a/b": picks}, **arrays)
