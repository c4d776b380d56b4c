"""Batch: one prefill chunk of the indexer (batch format v1), held by the C++ harness."""
from . import _core
from .arrays import to_numpy

ROLES = ("source", "consumer", "plain")


class Batch:
    """A validated batch. Build one from arrays (`from_arrays`) or read a file (`read`)."""

    def __init__(self, core):
        self._core = core

    @classmethod
    def from_arrays(cls, *, num_rows, compressed_len, page_table, compress_len, pool, layers,
                    tail_rows=None, topk=512, source_layer=None, compress_ratio=1, origin="captured",
                    description=""):
        """Arrays in the engine's layouts (docs/python.md lists them):
        num_rows, compressed_len [Q] int32; page_table [Q, T] int32; compress_len [R] int32;
        pool [pages, page_size*68] uint8 (any shape [pages, ...] is flattened per page);
        layers {id: {"q": [R,32,64] uint8, "q_scale": [R,32,4] uint8, "weights": [R,32] float32,
        optional "role"}}; tail_rows [Q] int32 or None.
        Without a role, `source_layer` is the source and the other layers are its consumers
        (plain when there is no source). Every rule of the format is checked; a broken one
        raises InputError naming the dataset and the rule."""
        pool = to_numpy(pool)
        if pool.ndim > 2:
            pool = pool.reshape(pool.shape[0], -1)
        source = -1 if source_layer is None else int(source_layer)
        attrs = {"topk": int(topk), "compress_ratio": int(compress_ratio), "source_layer": source,
                 "origin": origin, "description": description}
        layer_list = []
        for layer_id, arrays in layers.items():
            default = "source" if int(layer_id) == source else ("consumer" if source >= 0 else "plain")
            layer_list.append((int(layer_id), arrays.get("role", default), to_numpy(arrays["q"]),
                               to_numpy(arrays["q_scale"]), to_numpy(arrays["weights"])))
        tails = None if tail_rows is None else to_numpy(tail_rows)
        return cls(_core.Batch.from_arrays(attrs, to_numpy(num_rows), to_numpy(compressed_len),
                                           to_numpy(page_table), to_numpy(compress_len), pool,
                                           layer_list, tails))

    @classmethod
    def read(cls, path):
        """Reads and validates a batch file (recorded outputs included)."""
        return cls(_core.Batch.read(str(path)))

    def write(self, path):
        """Writes the batch (format v1, byte-identical for the same batch; atomic)."""
        self._core.write(str(path))

    @property
    def content_id(self):
        """The batch's identity (16 hex digits), the same as `dsa-harness inspect` prints."""
        return self._core.content_id()

    @property
    def rows(self):
        return self._core.rows

    @property
    def requests(self):
        return self._core.requests

    @property
    def topk(self):
        return self._core.topk

    @property
    def layer_ids(self):
        return list(self._core.layer_ids)

    @property
    def path(self):
        return self._core.path

    def arrays(self):
        """Every dataset as numpy arrays (copies), keyed like from_arrays' arguments."""
        return self._core.arrays()

    def attributes(self):
        return self._core.attributes()

    def recorded(self, name):
        """Outputs recorded in the file under /outputs/NAME, as Outputs."""
        from .outputs import Outputs
        return Outputs._from_dict(_core.recorded_outputs(self._core, name))

    @property
    def recorded_names(self):
        return list(self._core.output_names())

    def __repr__(self):
        return (f"Batch({self.path or 'in memory'}: {self.requests} requests, {self.rows} rows, "
                f"layers {self.layer_ids}, id {self.content_id})")
