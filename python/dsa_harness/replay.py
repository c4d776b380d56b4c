"""replay(): batch files through the harness's implementations and your own Python functions,
compared, timed and reported exactly like `dsa-harness replay` (the same report files)."""
import json
import os
import tempfile

import numpy as np

from . import _core
from .arrays import to_int32
from .batch import Batch
from .run import rows_spec


def _on_device(arrays, device):
    """The batch's arrays as torch tensors on the GPU when asked ("auto": torch and a GPU are
    present), else numpy arrays."""
    if device == "numpy":
        return arrays
    try:
        import torch
    except ImportError:
        if device == "cuda":
            raise
        return arrays
    if device == "auto" and not torch.cuda.is_available():
        return arrays

    def move(value):
        if isinstance(value, np.ndarray):
            return torch.from_numpy(value).cuda()
        if isinstance(value, dict):
            return {k: move(v) for k, v in value.items()}
        return value
    return move(arrays)


def _int32(name, what, value):
    return to_int32(value, f"hook {name}: {what}")


def _adapt(name, fn, device):
    """fn(arrays) -> {"blocks": [R,2048], "positions": {layer: [R,topk]},
    "tail_positions": {layer: [...]}} becomes the call the C++ hook makes."""
    def call(arrays, rows_done):
        answer = fn(_on_device(arrays, device))
        if not isinstance(answer, dict):
            raise TypeError(f"hook {name} returned {type(answer).__name__}, not a dict of blocks and positions")
        blocks = answer.get("blocks")
        return {"name": name, "implementation": name, "device": "python", "notes": "",
                "rows_done": rows_done,
                "blocks": None if blocks is None else _int32(name, "blocks", blocks),
                "positions": {int(k): _int32(name, f"positions[{k}]", v) for k, v in answer.get("positions", {}).items()},
                "tail_positions": {int(k): _int32(name, f"tail_positions[{k}]", v)
                                   for k, v in answer.get("tail_positions", {}).items()},
                "dense_scores": {}, "sparse_scores": {}}
    return call


def replay(batches, impls=None, also=(), rows="all", seed=0, repeat=1, tolerance=None, out_dir="dsa-report",
           device="auto", quiet=True):
    """Replays `batches` (paths, folders or Batch objects) through the Python functions in `impls`
    ({name: fn}; a name containing "mask" is judged as the mask path, any other as the sparse
    path) and the registered implementations named in `also`. Each fn receives the batch's
    arrays (Batch.arrays(): numpy, or torch tensors on the GPU when torch and a GPU are present;
    device="numpy" or "cuda" forces one) and returns {"blocks", "positions", "tail_positions"}.
    Writes report.json, report.md, junit.xml and report.html into out_dir and returns the
    report (report.json as a dict) with its "exit_code"."""
    impls = dict(impls or {})
    with tempfile.TemporaryDirectory(prefix="dsa-replay-") as scratch:
        inputs = []
        for i, batch in enumerate(batches if isinstance(batches, (list, tuple)) else [batches]):
            if isinstance(batch, Batch):
                path = batch.path or os.path.join(scratch, f"batch-{i}.h5")
                if not batch.path:
                    batch.write(path)
                inputs.append(path)
            else:
                inputs.append(os.fspath(batch))
        hooks = {name: (_adapt(name, fn, device), "mask" if "mask" in name else "sparse")
                 for name, fn in impls.items()}
        tol = _core.default_tolerance if tolerance is None else float(tolerance)
        code = _core.replay(inputs, hooks, list(impls) + list(also), rows_spec(rows), int(seed), int(repeat),
                            tol, os.fspath(out_dir), bool(quiet))
    with open(os.path.join(out_dir, "report.json")) as f:
        report = json.load(f)
    report["exit_code"] = code
    return report
