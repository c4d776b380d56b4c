"""A batch written with h5py the ordinary way, as a user's capture script would write it (Python
str attributes: variable-length UTF-8; Python int attributes: int64), is valid, replays through
the references, and is read back with the values it was written with. A second file stores the
attributes in numpy's other forms (fixed-length bytes, small and unsigned integers).

Run by ctest (test_h5py_batch) with DSA_BINARY naming the dsa-harness binary.
"""
import json
import os
import subprocess

import h5py
import numpy as np
import pytest

BINARY = os.environ.get("DSA_BINARY", "")
TOPK, PAGE, HEADS, DIM = 512, 64, 32, 128
NUM_ROWS = [4, 0, 3]
COMPRESSED_LEN = [300, 50, 900]
ROW_LEN = [297, 298, 299, 300, 600, 899, 900]  # L <= lc of the row's request; some above topk
TAIL_ROWS = [1, 0, 2]
DESCRIPTION = "captured with h5py \u2014 engine step 7, pytest"  # non-ASCII on purpose


def bf16_weights(rng, rows):
    """Index head weights as an engine stores them: bf16-exact values / 64, mostly positive heads
    with a few small negative ones (N(0,1) weights would make the bf16 sparse path cancel far
    beyond what the public test's rule allows, unlike real data)."""
    base = np.where(rng.random(HEADS) < 0.15, -rng.uniform(0.05, 0.3, HEADS), rng.uniform(0.25, 1.0, HEADS))
    raw = (base * (1 + 0.2 * rng.standard_normal((rows, HEADS)))).astype(np.float32)
    bits = raw.view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000  # round to nearest even bf16
    return bits.astype(np.uint32).view(np.float32) / np.float32(64)


def random_batch(seed):
    """Arrays in the engine's layouts, random but valid (no all-zero data)."""
    rng = np.random.default_rng(seed)
    pages_needed = [-(-lc // PAGE) for lc in COMPRESSED_LEN]
    pages = sum(pages_needed) + 3  # three pages no request uses
    order = rng.permutation(pages)
    table = np.full((len(NUM_ROWS), max(pages_needed) + 1), -1, dtype=np.int32)
    used = 0
    for b, need in enumerate(pages_needed):
        table[b, :need] = order[used:used + need]
        used += need
    pool = rng.integers(0, 256, size=(pages, PAGE * 68), dtype=np.uint8)
    pool[:, PAGE * 64:] = rng.integers(124, 131, size=(pages, PAGE * 4), dtype=np.uint8)  # ue8m0 scales
    rows = sum(NUM_ROWS)
    layers = {}
    for layer in (20, 24):
        layers[layer] = {
            "q": rng.integers(0, 256, size=(rows, HEADS, DIM // 2), dtype=np.uint8),
            "q_scale": rng.integers(124, 131, size=(rows, HEADS, DIM // 32), dtype=np.uint8),
            "weights": bf16_weights(rng, rows),
        }
    return table, pool, layers


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


def harness(*args):
    assert BINARY and os.access(BINARY, os.X_OK), "DSA_BINARY must name the dsa-harness binary"
    return subprocess.run([BINARY, *args], capture_output=True, text=True)


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
    done = harness("replay", path, "--impl", "reference-sparse", "--rows", "3", "-o", str(tmp_path / "r"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_broken_attribute_is_named(tmp_path):
    path = str(tmp_path / "broken.h5")
    write_batch(path, seed=10)
    with h5py.File(path, "a") as f:
        f.attrs["origin"] = "guessed"
    done = harness("validate", path)
    assert done.returncode == 4
    assert "attribute origin: 'guessed' is not" in done.stdout + done.stderr
