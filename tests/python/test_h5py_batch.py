"""A batch written with h5py the ordinary way, as a user's capture script would write it (Python
str attributes: variable-length UTF-8; Python int attributes: int64), is valid, replays through
the references, and is read back with the values it was written with. A second file stores the
attributes in numpy's other forms (fixed-length bytes, small and unsigned integers).

Run by ctest (test_h5py_batch) with DSA_BINARY naming the dsa-harness binary.
"""
import json

import h5py
import numpy as np
import pytest

from engine_arrays import DIM, HEADS, harness, layer_arrays, paged_pool

TOPK, PAGE = 512, 64
NUM_ROWS = [4, 0, 3]
COMPRESSED_LEN = [300, 50, 900]
ROW_LEN = [297, 298, 299, 300, 600, 899, 900]  # L <= lc of the row's request; some above topk
TAIL_ROWS = [1, 0, 2]
DESCRIPTION = "captured with h5py \u2014 engine step 7, pytest"  # non-ASCII on purpose


def random_batch(seed):
    """Arrays in the engine's layouts, random but valid (no all-zero data)."""
    rng = np.random.default_rng(seed)
    table, pool = paged_pool(rng, COMPRESSED_LEN, PAGE, spare_pages=3)
    return table, pool, layer_arrays(rng, sum(NUM_ROWS), (20, 24))


def write_batch(path, seed, attr_forms="ordinary"):
    table, pool, layers = random_batch(seed)
    ints = {"format_version": 1, "heads": HEADS, "head_dim": DIM, "block_size": 8, "topk_blocks": 2048,
            "topk": TOPK, "page_size": PAGE, "compress_ratio": 1, "source_layer": 20}
    strings = {"format": "dsa-indexer-batch", "origin": "captured", "description": DESCRIPTION}
    with h5py.File(path, "w") as f:
        if attr_forms == "ordinary":  # what `f.attrs[k] = v` does with Python values
            f.attrs.update(strings)
            f.attrs.update(ints)
        else:  # numpy scalars: fixed-length ASCII bytes, int8/uint16/uint32/int16
            for k, v in strings.items():
                f.attrs[k] = np.bytes_(v.encode("utf-8"))
            kinds = [np.int8, np.uint16, np.uint32, np.int16, np.uint64]
            for i, (k, v) in enumerate(ints.items()):
                kind = kinds[i % len(kinds)]
                f.attrs[k] = kind(v) if np.iinfo(kind).max >= v else np.int64(v)
        f["requests/num_rows"] = np.array(NUM_ROWS, dtype=np.int32)
        f["requests/compressed_len"] = np.array(COMPRESSED_LEN, dtype=np.int32)
        f["requests/page_table"] = table
        f["requests/tail_rows"] = np.array(TAIL_ROWS, dtype=np.int32)
        f["rows/compress_len"] = np.array(ROW_LEN, dtype=np.int32)
        f["index_k/pool"] = pool
        for layer, data in layers.items():
            g = f.create_group(f"layers/{layer}")
            g.attrs["role"] = "source" if layer == 20 else "consumer"
            for name, array in data.items():
                g.create_dataset(name, data=array)


@pytest.fixture
def ordinary_batch(tmp_path):
    path = str(tmp_path / "h5py-batch.h5")
    write_batch(path, seed=8)
    return path


def test_h5py_writes_variable_length_utf8_strings(ordinary_batch):
    # The premise: these files hold the string form the reader used to refuse.
    with h5py.File(ordinary_batch, "r") as f:
        for name in ("format", "origin", "description"):
            info = h5py.check_string_dtype(f.attrs.get_id(name).dtype)
            assert info is not None and info.length is None and info.encoding == "utf-8", name
        assert f.attrs.get_id("topk").dtype == np.int64


def test_validate_and_inspect(ordinary_batch):
    done = harness("validate", ordinary_batch)
    assert done.returncode == 0, done.stdout + done.stderr
    done = harness("inspect", ordinary_batch)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "20 source; 24 consumer;" in done.stdout


def test_replay_through_the_references(ordinary_batch, tmp_path):
    out = tmp_path / "report"
    done = harness("replay", ordinary_batch, "--impl", "reference-sparse,reference-mask,reference-exact",
                   "-o", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["verdict"] == "passed"
    assert report["inputs"][0]["rows"] == sum(NUM_ROWS)
    assert report["inputs"][0]["max_len"] == max(ROW_LEN)
    layers = {c["layer"] for c in report["cases"]}
    assert {"20", "24", "blocks"} <= layers, layers
    failed = [c["id"] for c in report["cases"] if c["verdict"] != "passed"]
    assert not failed, failed


def test_picks_follow_the_row_lengths_written(ordinary_batch, tmp_path):
    # The reader saw the L values h5py wrote: a row with L <= topk picks exactly 0..L-1, a longer
    # one picks topk distinct positions below L.
    out = str(tmp_path / "out.h5")
    done = harness("run", ordinary_batch, "--impl", "reference-sparse", "-o", out)
    assert done.returncode == 0, done.stdout + done.stderr
    with h5py.File(out, "r") as f:
        positions = f["outputs/reference-sparse/20/positions"][()]
    for row, length in enumerate(ROW_LEN):
        picked = positions[row][positions[row] >= 0]
        if length <= TOPK:
            assert np.array_equal(picked, np.arange(length)), f"row {row}"
        else:
            assert len(picked) == TOPK and len(set(picked.tolist())) == TOPK and picked.max() < length, f"row {row}"


def test_numpy_attribute_forms(tmp_path):
    path = str(tmp_path / "numpy-forms.h5")
    write_batch(path, seed=9, attr_forms="numpy")
    with h5py.File(path, "r") as f:
        info = h5py.check_string_dtype(f.attrs.get_id("format").dtype)
        assert info is not None and info.length is not None  # fixed length
        assert f.attrs.get_id("heads").dtype == np.uint16
    done = harness("validate", path)
    assert done.returncode == 0, done.stdout + done.stderr
    done = harness("replay", path, "--impl", "reference-sparse", "--rows", "3", "-o", tmp_path / "r")
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_broken_attribute_is_named(tmp_path):
    path = str(tmp_path / "broken.h5")
    write_batch(path, seed=10)
    with h5py.File(path, "a") as f:
        f.attrs["origin"] = "guessed"
    done = harness("validate", path)
    assert done.returncode == 4
    assert "attribute origin: 'guessed' is not" in done.stdout + done.stderr
