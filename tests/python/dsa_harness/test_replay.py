"""dsa_harness.replay with Python implementations (python/src/replay.cpp, python/dsa_harness/replay.py)."""
import json

import numpy as np
import pytest

import dsa_harness


def hook_from(outputs, seen):
    """A Python 'kernel' answering with precomputed outputs; records what it was given."""
    def fn(arrays):
        seen.append(arrays)
        return {"blocks": outputs.blocks, "positions": outputs.positions,
                "tail_positions": {k: v.astype(np.int64) for k, v in outputs.tail_positions.items()}}
    return fn


def cases_of(report, impl):
    return {c["layer"]: c["verdict"] for c in report["cases"] if c["impl"] == impl}


def test_a_correct_hook_passes_and_is_reported(batch, tmp_path):
    seen = []
    mine = hook_from(dsa_harness.run(batch, impl="reference-sparse"), seen)
    # numpy asked for: on a GPU box with torch the default ("auto") hands CUDA tensors over
    # instead (test_torch.py covers that).
    report = dsa_harness.replay([batch], impls={"mine": mine}, out_dir=tmp_path / "r", device="numpy")
    assert report["exit_code"] == 0 and report["verdict"] == "passed"
    verdicts = cases_of(report, "mine")
    assert {"20", "24", "blocks"} <= set(verdicts) and set(verdicts.values()) == {"passed"}, verdicts
    # The function got the batch's arrays, as numpy arrays.
    assert seen and isinstance(seen[0]["pool"], np.ndarray)
    assert np.array_equal(seen[0]["pool"], batch.arrays()["pool"])
    for name in ("report.md", "junit.xml", "report.html"):
        assert (tmp_path / "r" / name).stat().st_size > 0, name
    assert json.loads((tmp_path / "r" / "report.json").read_text())["verdict"] == "passed"


def test_a_wrong_hook_fails_with_coordinates(batch, tmp_path):
    outputs = dsa_harness.run(batch, impl="reference-sparse")
    picks = outputs.positions[24][5]
    missing = next(p for p in range(1100) if p not in set(picks.tolist()))
    picks[picks.argmax()] = missing
    picks.sort()
    report = dsa_harness.replay([batch], impls={"mine": hook_from(outputs, [])}, out_dir=tmp_path / "r")
    assert report["exit_code"] == 1 and report["verdict"] == "incorrect"
    assert cases_of(report, "mine")["24"] == "incorrect"
    assert "layer 24 row 5" in (tmp_path / "r" / "report.md").read_text()


def test_a_hook_that_raises_is_named(batch, tmp_path):
    def broken(arrays):
        raise RuntimeError("kernel launch failed")
    with pytest.raises(Exception) as error:
        dsa_harness.replay([batch], impls={"broken": broken}, out_dir=tmp_path / "r")
    assert "hook broken" in str(error.value) and "kernel launch failed" in str(error.value)


def test_hooks_are_gone_after_the_call(batch, tmp_path):
    mine = hook_from(dsa_harness.run(batch, impl="reference-sparse"), [])
    dsa_harness.replay([batch], impls={"mine": mine}, out_dir=tmp_path / "r")
    with pytest.raises(dsa_harness.InputError, match="mine"):
        dsa_harness.run(batch, impl="mine")


def test_a_hook_cannot_take_a_built_in_name(batch, tmp_path):
    mine = hook_from(dsa_harness.run(batch, impl="reference-sparse"), [])
    with pytest.raises(dsa_harness.InputError, match="hooks: reference-sparse: is the name of an implementation"):
        dsa_harness.replay([batch], impls={"reference-sparse": mine}, out_dir=tmp_path / "r")
