"""dsa_harness.run (python/src/run.cpp, python/dsa_harness/run.py)."""
import h5py
import numpy as np
import pytest

import dsa_harness
from conftest import ROW_LEN, TAIL_ROWS, TOPK, harness


def test_run_returns_numpy_outputs(batch):
    out = dsa_harness.run(batch, impl="reference-sparse")
    assert out.name == "reference-sparse" and out.device == "cpu"
    assert out.rows_done.dtype == np.uint8 and out.rows_done.tolist() == [1] * len(ROW_LEN)
    assert out.blocks.shape == (len(ROW_LEN), 2048) and out.blocks.dtype == np.int32
    assert sorted(out.positions) == [20, 24]
    assert sorted(out.tail_positions) == [24]
    assert out.tail_positions[24].shape == (sum(TAIL_ROWS), TOPK)
    for layer, picks in out.positions.items():
        assert picks.shape == (len(ROW_LEN), TOPK) and picks.dtype == np.int32
        for row, length in enumerate(ROW_LEN):
            chosen = picks[row][picks[row] >= 0]
            assert len(chosen) == min(TOPK, length) and chosen.max() < length, (layer, row)
            assert np.all(np.diff(chosen) > 0), (layer, row)


def test_run_equals_the_cli(batch, tmp_path):
    path, results = tmp_path / "b.h5", tmp_path / "out.h5"
    batch.write(path)
    done = harness("run", path, "--impl", "reference-sparse", "-o", results)
    assert done.returncode == 0, done.stdout + done.stderr
    out = dsa_harness.run(batch, impl="reference-sparse")
    with h5py.File(results, "r") as f:
        group = f["outputs/reference-sparse"]
        assert np.array_equal(group["blocks"][()], out.blocks)
        for layer in (20, 24):
            assert np.array_equal(group[f"{layer}/positions"][()], out.positions[layer]), layer
        assert np.array_equal(group["24/tail_positions"][()], out.tail_positions[24])


def test_sampled_rows_equal_the_full_run_on_those_rows(batch):
    full = dsa_harness.run(batch, impl="reference-sparse")
    for rows in ([2, 5], [4], 2):
        part = dsa_harness.run(batch, impl="reference-sparse", rows=rows, seed=3)
        done = np.flatnonzero(part.rows_done)
        if isinstance(rows, list):
            assert done.tolist() == rows
        else:  # two drawn rows plus the shortest (row 0) and the longest (row 6)
            assert {0, 6} <= set(done.tolist()) and len(done) <= rows + 2
        for layer in (20, 24):
            assert np.array_equal(part.positions[layer][done], full.positions[layer][done]), (rows, layer)


def test_scores_are_returned_per_row(batch):
    out = dsa_harness.run(batch, impl="reference-sparse", rows=[1, 3], scores=True)
    dense = out.dense_scores[20]
    assert len(dense) == len(ROW_LEN)
    assert dense[0] is None and dense[1].shape == (ROW_LEN[1],) and dense[1].dtype == np.float32
    assert np.all(np.isfinite(dense[3])) and np.ptp(dense[3]) > 0
    assert out.sparse_scores[24][3].dtype == np.uint16


def test_an_unknown_implementation_is_named(batch):
    with pytest.raises(dsa_harness.InputError, match="no-such-impl"):
        dsa_harness.run(batch, impl="no-such-impl")


def test_bad_rows_are_named(batch):
    with pytest.raises(dsa_harness.InputError, match="--rows"):
        dsa_harness.run(batch, impl="reference-sparse", rows=[7])


def test_gpu_sparse_runs_or_says_why_not(batch):
    # Without a GPU (or in a CPU-only build) the reason is given; with one, the outputs are the
    # reference's bit for bit (the own-path rule).
    try:
        out = dsa_harness.run(batch, impl="gpu-sparse")
    except dsa_harness.EnvironmentError as error:
        assert str(error).startswith("gpu-sparse cannot run on this machine: ")
        return
    result = dsa_harness.compare(batch, out, against="reference-sparse")
    assert result.verdict == "passed", result.first_mismatch
