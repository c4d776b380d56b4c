#!/usr/bin/env python3
"""Capture one prefill chunk of the indexer as an engine would, into ./example.h5.

An engine calls dsa_harness.capture() at the point where it holds the indexer's inputs for a
chunk (its own torch tensors, on the GPU or not: they are copied to the host) and, optionally,
its own results. Here synthetic numpy arrays with the shapes of a real chunk stand in for them:
two requests in chunked prefill sharing one paged index-K pool, a source layer and a consumer.
The "engine's" picks are the reference's, so the recorded outputs replay as passed:

    python3 examples/capture_example.py
    dsa-harness validate example.h5
    dsa-harness replay example.h5 --impl recorded:engine -o example-report

Needs PYTHONPATH to hold the built package (build/python, or build-cpu/python)."""
import numpy as np

import dsa_harness

PAGE_SIZE = 64
SOURCE, CONSUMER = 3, 4
# Per request: tokens already in the KV cache before this chunk, and tokens in this chunk.
PREFIX = [1400, 120]
CHUNK = [24, 8]


def to_bf16(values):
    """float32 values the engine would hold as bf16 (the low 16 bits dropped)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32) & np.uint32(0xFFFF0000)
    return bits.view(np.float32)


def chunk_tensors(rng):
    """The indexer's inputs for one chunk, in the engine's layouts."""
    lengths = [p + c for p, c in zip(PREFIX, CHUNK)]       # compressed keys per request (ratio 1)
    pages_per_request = [-(-n // PAGE_SIZE) for n in lengths]
    pool_pages = sum(pages_per_request) + 4                 # other requests' pages stay in the pool
    free_pages = rng.permutation(pool_pages)
    page_table = np.full((len(lengths), max(pages_per_request)), -1, dtype=np.int32)
    for request, pages in enumerate(pages_per_request):
        start = sum(pages_per_request[:request])
        page_table[request, :pages] = free_pages[start:start + pages]
    # Each pool slot: 64 bytes of packed fp4 key, then (per page) 4 ue8m0 scale bytes per slot.
    pool = rng.integers(0, 256, size=(pool_pages, PAGE_SIZE, 68), dtype=np.uint8)
    scales = rng.integers(122, 129, size=(pool_pages, PAGE_SIZE * 4), dtype=np.uint8)
    pool = np.concatenate([pool[:, :, :64].reshape(pool_pages, -1), scales], axis=1)
    # Causal prefill: the token at position p of a request sees p + 1 keys.
    compress_len = np.concatenate([np.arange(p + 1, p + c + 1) for p, c in zip(PREFIX, CHUNK)]).astype(np.int32)
    rows = int(compress_len.size)
    head_mix = np.where(np.arange(32) % 7 == 0, -0.1, 0.6).astype(np.float32)
    layers = {}
    for layer in (SOURCE, CONSUMER):
        noise = rng.uniform(0.8, 1.2, size=(rows, 32)).astype(np.float32)
        layers[layer] = {"q": rng.integers(0, 256, size=(rows, 32, 64), dtype=np.uint8),
                         "q_scale": rng.integers(122, 129, size=(rows, 32, 4), dtype=np.uint8),
                         "weights": to_bf16(head_mix * noise / 32)}
    return {"num_rows": np.array(CHUNK, dtype=np.int32), "compressed_len": np.array(lengths, dtype=np.int32),
            "page_table": page_table, "compress_len": compress_len, "pool": pool, "layers": layers,
            "tail_rows": np.array([2, 1], dtype=np.int32), "topk": 512, "source_layer": SOURCE}


def main():
    tensors = chunk_tensors(np.random.default_rng(2026))
    # Stand-in for the engine's own kernel: its blocks (source layer) and positions per layer.
    engine = dsa_harness.run(dsa_harness.Batch.from_arrays(**tensors), impl="reference-sparse")
    results = {"blocks": engine.blocks, "positions": engine.positions,
               "tail_positions": engine.tail_positions, "implementation": "example engine", "device": "cpu"}
    batch = dsa_harness.capture("example.h5", outputs={"engine": results},
                                description="examples/capture_example.py: a synthetic chunk", **tensors)
    print(f"wrote example.h5: {batch.requests} requests, {batch.rows} rows, layers {batch.layer_ids}, "
          f"recorded outputs {batch.recorded_names}, id {batch.content_id}")


if __name__ == "__main__":
    main()
