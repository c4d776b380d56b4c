"""capture(): what an engine holds during one prefill chunk of the indexer, written as a batch
file (format v1), optionally with the engine's own picks as recorded outputs."""
import numpy as np

from . import _core
from .arrays import to_int32
from .batch import Batch
from .outputs import Outputs


def _as_outputs(name, value, rows):
    """`value` is an Outputs or a dict {"blocks": [R, 2048], "positions": {layer: [R, topk]},
    "tail_positions": {layer: ...}, optional "rows_done", "implementation", "device", "notes"}."""
    if isinstance(value, Outputs):
        return value.copy(name=name)
    unknown = set(value) - {"blocks", "positions", "tail_positions", "rows_done", "implementation", "device",
                            "notes"}
    if unknown:
        raise _core.InputError(f"capture: /outputs/{name}: unknown keys {sorted(unknown)}")
    rows_done = value.get("rows_done")
    if rows_done is None:  # an engine computes every row of its chunk
        rows_done = np.ones(rows, dtype=np.uint8)
    group = f"capture: /outputs/{name}"
    blocks = value.get("blocks")
    positions = {k: to_int32(v, f"{group}/{k}/positions") for k, v in (value.get("positions") or {}).items()}
    tails = {k: to_int32(v, f"{group}/{k}/tail_positions") for k, v in (value.get("tail_positions") or {}).items()}
    return Outputs(name, rows_done, None if blocks is None else to_int32(blocks, f"{group}/blocks"), positions, tails,
                   implementation=value.get("implementation", ""), device=value.get("device", ""),
                   notes=value.get("notes", ""))


def capture(path, *, outputs=None, **arrays):
    """Writes `path` (batch format v1) from the tensors of one prefill chunk (numpy arrays or
    torch tensors on any device, copied to the host) and returns the Batch.

    `arrays` are Batch.from_arrays' keyword arguments (num_rows, compressed_len, page_table,
    compress_len, pool, layers, tail_rows, topk, source_layer, compress_ratio, description;
    origin defaults to "captured"). `outputs` = {NAME: results} records the engine's own
    results under /outputs/NAME, replayable with `--impl recorded:NAME`; results are an Outputs
    or a dict with "blocks" [R, 2048] (source layer's level one), "positions"
    {layer: [R, topk]} (any integer dtype whose values fit int32, e.g. torch.topk's int64), optionally "tail_positions", "rows_done" (default: every row),
    "implementation", "device", "notes". Every rule is checked before anything is written;
    a broken one raises InputError naming the dataset."""
    arrays.setdefault("origin", "captured")
    batch = Batch.from_arrays(**arrays)
    if outputs:
        recorded = [_as_outputs(str(name), value, batch.rows)._to_dict() for name, value in outputs.items()]
        batch = Batch(_core.with_outputs(batch._core, recorded))
    batch.write(path)
    return batch
