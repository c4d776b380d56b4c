"""Outputs: what one implementation produced on a batch, as numpy arrays by layer id."""
import numpy as np

from .arrays import to_numpy

FIELDS = ("positions", "tail_positions", "dense_scores", "sparse_scores")


class Outputs:
    """rows_done [R] uint8 (1 where computed); blocks [R, 2048] int32 or None;
    positions {layer: [R, topk] int32}; tail_positions {layer: [sum(tail_rows), topk] int32};
    dense_scores / sparse_scores {layer: list over rows of arrays, None for rows without}.
    `name` picks the path a comparison judges by: a registry name, or any name (sparse unless
    it contains "mask")."""

    def __init__(self, name, rows_done, blocks=None, positions=None, tail_positions=None,
                 dense_scores=None, sparse_scores=None, implementation="", device="", notes=""):
        self.name = name
        self.implementation = implementation or name
        self.device = device
        self.notes = notes
        self.rows_done = np.asarray(to_numpy(rows_done), dtype=np.uint8)
        self.blocks = None if blocks is None else to_numpy(blocks)
        self.positions = {int(k): to_numpy(v) for k, v in (positions or {}).items()}
        self.tail_positions = {int(k): to_numpy(v) for k, v in (tail_positions or {}).items()}
        self.dense_scores = dict(dense_scores or {})
        self.sparse_scores = dict(sparse_scores or {})

    @classmethod
    def _from_dict(cls, d):
        return cls(d["name"], d["rows_done"], d["blocks"], d["positions"], d["tail_positions"],
                   d["dense_scores"], d["sparse_scores"], d["implementation"], d["device"], d["notes"])

    def _to_dict(self):
        def rows(scores):
            return {k: [None if r is None else to_numpy(r) for r in v] for k, v in scores.items()}
        return {"name": self.name, "implementation": self.implementation, "device": self.device,
                "notes": self.notes, "rows_done": self.rows_done, "blocks": self.blocks,
                "positions": self.positions, "tail_positions": self.tail_positions,
                "dense_scores": rows(self.dense_scores), "sparse_scores": rows(self.sparse_scores)}

    def copy(self, name=None):
        """A deep copy (to corrupt in a test, or to rename)."""
        d = self._to_dict()
        copied = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in d.items()}
        for field in FIELDS:
            copied[field] = {k: (v.copy() if isinstance(v, np.ndarray) else
                                 [None if r is None else r.copy() for r in v]) for k, v in d[field].items()}
        if name is not None:
            copied["name"] = name
        return Outputs._from_dict(copied)

    def __repr__(self):
        return (f"Outputs({self.name}: {int(self.rows_done.sum())} rows done, layers "
                f"{sorted(self.positions)}, blocks {'yes' if self.blocks is not None else 'no'})")
