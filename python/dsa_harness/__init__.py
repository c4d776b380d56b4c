"""dsa_harness: DeepSeek-V4.1 sparse-indexer batches, implementations and comparisons from Python.

    batch = dsa_harness.Batch.from_arrays(...)          # or dsa_harness.Batch.read("chunk.h5")
    dsa_harness.capture("chunk.h5", outputs={"engine": picks}, **arrays)   # an engine's chunk
    mine = dsa_harness.run(batch, impl="reference-sparse", rows="all")
    result = dsa_harness.compare(batch, mine, against="reference-sparse")
    assert result.verdict == "passed", result.first_mismatch

The math is the C++ harness's (dsa_harness._core); this package converts arrays and names things.
See docs/python.md.
"""
from ._core import EnvironmentError, InputError, implementations, version
from .batch import Batch
from .capture import capture
from .compare import CompareResult, compare
from .outputs import Outputs
from .replay import replay
from .run import run

__all__ = ["Batch", "capture", "Outputs", "CompareResult", "run", "compare", "replay", "implementations", "InputError",
           "EnvironmentError", "version"]
