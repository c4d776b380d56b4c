#!/usr/bin/env python3
"""The plain PyTorch mask path, timed on one batch file: the peer of `dsa-harness bench --peer torch`.

What a PyTorch user would write for DeepSeek-V4.1's two-level indexer (docs/semantics.md), on the
same batch and GPU as our kernels: keys and queries dequantised from e2m1 with ue8m0 scales to
bf16, dense scores by bf16 matmul in row tiles, relu, weighted head sum in fp32, the causal tail
masked with an int64 compare and masked_fill, torch.topk for the source's own top-512, block amax
+ topk(2048) + scatter + repeat_interleave for level one, and for each consumer its dense scores
masked to the published blocks and torch.topk. It is NOT bit-exact (bf16 matmul, not the exact
group sums of the reference); it is a speed peer only.

Each sample runs the whole chunk; every stage is timed with torch.cuda events per row tile and
summed over the tiles; "chunk" is the whole sample. Writes JSON (see harness/bench/torch_peer.hpp):
    {"device", "peak_bytes", "stages": [{"stage", "layer", "samples", "median_ms", "min_ms", "max_ms"}]}
Exit codes: 0 timed, 3 no CUDA device for torch, 4 bad input.
"""
import argparse
import json
import statistics
import sys
import time

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]
TOPK_BLOCKS, BLOCK = 2048, 8
TILE_BYTES = 1 << 30  # bf16 head scores of one row tile: rows x 32 x L x 2 bytes
DEVICE = "cuda"


def fail(code, message):
    print(f"torch_mask_path: {message}", file=sys.stderr)
    sys.exit(code)


def text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def dequant(torch, packed, scales, lut):
    """[..., 64] e2m1 bytes (low nibble first) and [..., 4] ue8m0 -> [..., 128] bf16 (exact)."""
    codes = torch.stack((packed & 15, packed >> 4), dim=-1).flatten(-2).long()
    values = lut[codes]
    scale = torch.exp2(scales.float() - 127.0).repeat_interleave(32, dim=-1)
    return (values * scale).to(torch.bfloat16)


def load(torch, path, rows_arg, device):
    import h5py
    import numpy as np
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        fail(4, f"{path}: cannot open: {e}")
    with f:
        if text(f.attrs.get("format", "")) != "dsa-indexer-batch":
            fail(4, f"{path}: format: not a dsa-indexer-batch file")
        page = int(f.attrs["page_size"])
        topk = int(f.attrs["topk"])
        num_rows = f["requests/num_rows"][...].astype(np.int64)
        lc = f["requests/compressed_len"][...].astype(np.int64)
        table = f["requests/page_table"][...]
        lens = f["rows/compress_len"][...].astype(np.int64)
        pool = torch.from_numpy(f["index_k/pool"][...]).to(device)
        layers = {}
        for name, group in f["layers"].items():
            layers[int(name)] = (text(group.attrs["role"]), group["q"][...], group["q_scale"][...],
                                 group["weights"][...])
    rows = np.arange(len(lens)) if rows_arg is None else np.array(sorted(set(rows_arg)), dtype=np.int64)
    if len(rows) and (rows.min() < 0 or rows.max() >= len(lens)):
        fail(4, f"{path}: --rows: a row is outside 0..{len(lens) - 1}")
    request = np.repeat(np.arange(len(num_rows)), num_rows)
    lut = torch.tensor(E2M1, device=device)
    keys = []
    for b in range(len(num_rows)):
        n = int(lc[b])
        npages = (n + page - 1) // page
        pages = pool[torch.from_numpy(table[b, :npages].astype(np.int64)).to(device)]
        payload = pages[:, : page * 64].reshape(-1, 64)[:n]
        kscale = pages[:, page * 64:].reshape(-1, 4)[:n]
        keys.append(dequant(torch, payload, kscale, lut))
    ops = {}
    for lid, (role, q, qs, w) in layers.items():
        ops[lid] = (role, dequant(torch, torch.from_numpy(q[rows]).to(device), torch.from_numpy(qs[rows]).to(device), lut),
                    torch.from_numpy(w[rows]).to(device).float())
    return rows, request[rows], torch.from_numpy(lens[rows]).to(device), keys, ops, topk


def tiles(request, lens, lc_of):
    """Row tiles of one request each, small enough for the bf16 head scores to fit TILE_BYTES."""
    out, i, n = [], 0, len(request)
    while i < n:
        b = int(request[i])
        rows_max = max(1, TILE_BYTES // (64 * max(int(lc_of[b]), 1)))
        j = i + 1
        while j < n and request[j] == b and j - i < rows_max:
            j += 1
        out.append((i, j, b))
        i = j
    return out


class HostEvent:
    """torch.cuda.Event's interface on the host clock, for --device cpu (tests without a GPU)."""

    def record(self):
        self.t = time.perf_counter()

    def elapsed_time(self, other):
        return (other.t - self.t) * 1e3


def event(torch):
    return torch.cuda.Event(enable_timing=True) if torch.cuda.is_available() and DEVICE == "cuda" else HostEvent()


def synchronize(torch):
    if DEVICE == "cuda":
        torch.cuda.synchronize()


class Timer:
    """Sums the event time of each (stage, layer) over the tiles of one sample."""

    def __init__(self, torch):
        self.torch, self.pairs = torch, []

    def run(self, stage, layer, fn):
        start, stop = event(self.torch), event(self.torch)
        start.record()
        out = fn()
        stop.record()
        self.pairs.append((stage, layer, start, stop))
        return out

    def sums(self):
        synchronize(self.torch)
        totals = {}
        for stage, layer, start, stop in self.pairs:
            totals[(stage, layer)] = totals.get((stage, layer), 0.0) + start.elapsed_time(stop)
        return totals


def dense_scores(torch, q, w, k, lens):
    """Scores of a row tile over positions 0..lc-1: relu of the bf16 head scores, weighted sum, causal mask."""
    t, heads, _ = q.shape
    s = torch.matmul(q.reshape(t * heads, -1), k.t()).view(t, heads, -1).relu_()
    dense = torch.bmm(w.view(t, 1, heads), s.float()).view(t, -1)
    cols = torch.arange(dense.shape[1], device=dense.device, dtype=torch.int64)
    return dense.masked_fill_(cols[None, :] >= lens[:, None], float("-inf"))


def level_one(torch, dense, lens):
    t, n = dense.shape
    nb = (n + BLOCK - 1) // BLOCK
    padded = torch.nn.functional.pad(dense, (0, nb * BLOCK - n), value=float("-inf"))
    amax = padded.view(t, nb, BLOCK).amax(-1)
    newest = ((lens - 1).clamp(min=0) // BLOCK).view(t, 1)
    amax.scatter_(1, newest, float("inf"))  # the newest block is always kept
    return amax


def block_table(torch, amax):
    kept = torch.topk(amax, min(TOPK_BLOCKS, amax.shape[1]), dim=1).indices
    return torch.sort(kept, dim=1).values


def block_mask(torch, blocks, nb, n):
    keep = torch.zeros(blocks.shape[0], nb, dtype=torch.bool, device=blocks.device)
    keep.scatter_(1, blocks, True)
    return keep.repeat_interleave(BLOCK, dim=1)[:, :n]


def sample(torch, data):
    rows, request, lens, keys, ops, topk = data
    timer = Timer(torch)
    whole = (event(torch), event(torch))
    whole[0].record()
    plan = tiles(request, lens, [k.shape[0] for k in keys])
    source = [lid for lid, op in ops.items() if op[0] == "source"]
    published = {}
    for lid in source:
        _, q, w = ops[lid]
        for i, j, b in plan:
            lay = str(lid)
            dense = timer.run("dense_scores", lay, lambda: dense_scores(torch, q[i:j], w[i:j], keys[b], lens[i:j]))
            timer.run("own_topk", lay, lambda: torch.topk(dense, min(topk, dense.shape[1]), dim=1))
            amax = timer.run("block_amax", lay, lambda: level_one(torch, dense, lens[i:j]))
            published[i] = timer.run("block_topk", lay, lambda: block_table(torch, amax))
            del dense
    for lid in sorted(ops):
        role, q, w = ops[lid]
        if role == "source":
            continue
        lay = str(lid)
        for i, j, b in plan:
            dense = timer.run("dense_scores", lay, lambda: dense_scores(torch, q[i:j], w[i:j], keys[b], lens[i:j]))
            if role == "consumer" and i in published:
                n = dense.shape[1]
                timer.run("mask", lay, lambda: dense.masked_fill_(
                    ~block_mask(torch, published[i], (n + BLOCK - 1) // BLOCK, n), float("-inf")))
                timer.run("mask_topk", lay, lambda: torch.topk(dense, min(topk, n), dim=1))
            else:
                timer.run("own_topk", lay, lambda: torch.topk(dense, min(topk, dense.shape[1]), dim=1))
            del dense
    synchronize(torch)
    whole[1].record()
    totals = timer.sums()
    totals[("chunk", "all")] = whole[0].elapsed_time(whole[1])
    return totals


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("batch")
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--rows", help="rows to compute, comma-separated (default all)")
    ap.add_argument("--json", required=True, help="where to write the timings")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                    help="cpu: host clock instead of CUDA events (tests without a GPU; not a peer figure)")
    a = ap.parse_args()
    global DEVICE
    DEVICE = a.device
    try:
        import torch
    except ImportError as e:
        fail(3, f"no torch in {sys.executable}: {e}")
    if DEVICE == "cuda" and not torch.cuda.is_available():
        fail(3, "torch sees no CUDA device")
    if a.samples < 1:
        fail(4, "--samples must be >= 1")
    rows = None if not a.rows else [int(x) for x in a.rows.split(",")]
    data = load(torch, a.batch, rows, DEVICE)
    sample(torch, data)  # warm-up: cuBLAS handles, allocator pools
    if DEVICE == "cuda":
        torch.cuda.reset_peak_memory_stats()
    runs = [sample(torch, data) for _ in range(a.samples)]
    stages = []
    for key in runs[0]:
        ms = [r[key] for r in runs]
        stages.append({"stage": key[0], "layer": key[1], "samples": len(ms), "median_ms": statistics.median(ms),
                       "min_ms": min(ms), "max_ms": max(ms)})
    cuda = DEVICE == "cuda"
    out = {"device": torch.cuda.get_device_name() if cuda else "cpu",
           "peak_bytes": int(torch.cuda.max_memory_allocated()) if cuda else -1, "stages": stages}
    with open(a.json, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
