"""dsa_harness.compare (python/src/compare.cpp, python/dsa_harness/compare.py)."""
import re

import numpy as np
import pytest

import dsa_harness
from conftest import ROW_LEN, harness


@pytest.fixture
def sparse(batch):
    return dsa_harness.run(batch, impl="reference-sparse")


def test_the_reference_passes_against_itself(batch, sparse):
    result = dsa_harness.compare(batch, sparse.copy(name="mine"), against="reference-sparse")
    assert result.verdict == "passed", result.first_mismatch
    assert result.rule == "own-path" and result.rows == len(ROW_LEN)
    assert result.first_mismatch == ""
    assert {l["layer"] for l in result.layers} >= {"blocks", "20", "24", "24/tail"}
    assert result.layer(24)["records"]["validity"] == 1.0


def corrupt_one_pick(outputs, layer, row):
    """Replaces the row's largest pick with a position it did not pick (still valid and sorted);
    returns the position removed and the one added."""
    picks = outputs.positions[layer][row]
    chosen = set(picks[picks >= 0].tolist())
    added = next(p for p in range(ROW_LEN[row]) if p not in chosen)
    removed = int(picks[picks >= 0].max())
    picks[picks == removed] = added
    picks[picks >= 0] = np.sort(picks[picks >= 0])
    return removed, added


def test_a_corrupted_pick_is_incorrect_with_its_coordinates(batch, sparse):
    mine = sparse.copy(name="mine")
    removed, added = corrupt_one_pick(mine, layer=24, row=4)
    result = dsa_harness.compare(batch, mine, against="reference-sparse")
    assert result.verdict == "incorrect"
    assert result.layer(24)["verdict"] == "incorrect" and result.layer(20)["verdict"] == "passed"
    first = result.first_mismatch
    assert first.startswith("layer 24 row 4 "), first
    assert re.search(r"slot \d+: expected position \d+, got \d+", first), first
    assert str(added) in first or str(removed) in first, first
    with pytest.raises(AssertionError, match="layer 24 row 4"):
        assert result.verdict == "passed", result.first_mismatch


def test_an_invalid_pick_is_a_verdict_not_an_exception(batch, sparse):
    mine = sparse.copy(name="mine")
    mine.positions[20][1, -1] = ROW_LEN[1] + 5  # past L, and out of order
    result = dsa_harness.compare(batch, mine, against="reference-sparse")
    assert result.verdict == "incorrect"
    assert result.layer(20)["records"]["validity"] < 1.0
    assert "row 1" in result.first_mismatch


def test_only_rows_done_are_compared(batch):
    part = dsa_harness.run(batch, impl="reference-sparse", rows=[0, 5]).copy(name="mine")
    result = dsa_harness.compare(batch, part, against="reference-sparse")
    assert result.verdict == "passed" and result.rows == 2


def cli_records(stdout, layer):
    """The records the CLI's compare prints under 'layer N (role): verdict'."""
    records, inside = {}, False
    for line in stdout.splitlines():
        if line.startswith("layer ") or line.startswith("blocks"):
            inside = line.startswith(f"layer {layer} (")
        elif inside and re.match(r"^  \S", line):
            name, value = line.split()[:2]
            records[name] = float(value)
    return records


def test_same_metrics_and_verdict_as_the_cli(batch, tmp_path):
    path, results = tmp_path / "b.h5", tmp_path / "out.h5"
    batch.write(path)
    done = harness("run", path, "--impl", "reference-sparse,reference-mask", "-o", results)
    assert done.returncode == 0, done.stdout + done.stderr
    cli = harness("compare", path, results, "--impl", "reference-sparse", "--against", "reference-mask")
    mask = dsa_harness.run(batch, impl="reference-mask")
    result = dsa_harness.compare(batch, dsa_harness.run(batch, impl="reference-sparse"), against=mask)
    assert result.rule == "public-test"
    assert f"verdict: {result.verdict}" in cli.stdout
    assert cli.returncode == (0 if result.verdict == "passed" else 1)
    for layer in ("20", "24"):
        expected = cli_records(cli.stdout, layer)
        assert expected, cli.stdout
        got = result.layer(layer)["records"]
        assert set(expected) == set(got), layer
        for name, value in expected.items():
            assert got[name] == pytest.approx(value, rel=1e-5, abs=1e-9), (layer, name)


def test_outputs_of_the_wrong_shape_are_named(batch, sparse):
    mine = sparse.copy(name="mine")
    mine.positions[24] = mine.positions[24][:, :100].copy()
    with pytest.raises(dsa_harness.InputError, match=r"outputs: /outputs/mine/24/positions: shape \[7, 100\] is not \[7, 512\]"):
        dsa_harness.compare(batch, mine, against="reference-sparse")
