"""Shared pieces of the dsa_harness package tests: random batches in the engine's layouts (never
all-zero), the dsa-harness binary, and the package imported from the build tree (PYTHONPATH)."""
import os
import subprocess

import numpy as np
import pytest

BINARY = os.environ.get("DSA_BINARY", "")
TOPK, PAGE, HEADS, DIM = 512, 64, 32, 128
NUM_ROWS = [3, 0, 4]
COMPRESSED_LEN = [700, 40, 1100]
ROW_LEN = [300, 650, 700, 513, 900, 1099, 1100]  # L <= lc of the row's request; most above topk
TAIL_ROWS = [1, 0, 2]


def bf16_weights(rng, rows):
    """Head weights as an engine holds them: bf16-exact values / 64, mostly positive heads."""
    base = np.where(rng.random(HEADS) < 0.15, -rng.uniform(0.05, 0.3, HEADS), rng.uniform(0.25, 1.0, HEADS))
    raw = (base * (1 + 0.2 * rng.standard_normal((rows, HEADS)))).astype(np.float32)
    bits = raw.view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000  # round to nearest even bf16
    return bits.astype(np.uint32).view(np.float32) / np.float32(64)


def engine_arrays(seed):
    """The keyword arguments of Batch.from_arrays: a source (20) and a consumer (24) on one pool."""
    rng = np.random.default_rng(seed)
    pages_needed = [-(-lc // PAGE) for lc in COMPRESSED_LEN]
    pages = sum(pages_needed) + 2  # two pages no request uses
    order = rng.permutation(pages)
    table = np.full((len(NUM_ROWS), max(pages_needed) + 1), -1, dtype=np.int32)
    used = 0
    for b, need in enumerate(pages_needed):
        table[b, :need] = order[used:used + need]
        used += need
    pool = rng.integers(0, 256, size=(pages, PAGE * 68), dtype=np.uint8)
    pool[:, PAGE * 64:] = rng.integers(124, 131, size=(pages, PAGE * 4), dtype=np.uint8)  # ue8m0 scales
    rows = sum(NUM_ROWS)
    layers = {layer: {"q": rng.integers(0, 256, size=(rows, HEADS, DIM // 2), dtype=np.uint8),
                      "q_scale": rng.integers(124, 131, size=(rows, HEADS, DIM // 32), dtype=np.uint8),
                      "weights": bf16_weights(rng, rows)} for layer in (20, 24)}
    return {"num_rows": np.array(NUM_ROWS, dtype=np.int32),
            "compressed_len": np.array(COMPRESSED_LEN, dtype=np.int32),
            "page_table": table, "compress_len": np.array(ROW_LEN, dtype=np.int32), "pool": pool,
            "layers": layers, "tail_rows": np.array(TAIL_ROWS, dtype=np.int32), "topk": TOPK,
            "source_layer": 20, "description": f"pytest engine arrays, seed {seed}"}


def harness(*args):
    assert BINARY and os.access(BINARY, os.X_OK), "DSA_BINARY must name the dsa-harness binary"
    return subprocess.run([BINARY, *map(str, args)], capture_output=True, text=True)


@pytest.fixture
def arrays():
    return engine_arrays(seed=16)


@pytest.fixture
def batch(arrays):
    import dsa_harness
    return dsa_harness.Batch.from_arrays(**arrays)
