"""run(): a registered implementation on a batch, outputs back as numpy arrays."""
from . import _core
from .outputs import Outputs


def rows_spec(rows):
    """`rows` as `--rows` takes it: "all", N (int: N drawn rows plus the shortest and longest) or
    a list of row indices."""
    if rows is None or rows == "all":
        return "all"
    if isinstance(rows, int):
        return str(rows)
    if isinstance(rows, str):
        return rows
    listed = [int(r) for r in rows]
    if not listed:
        raise _core.InputError("rows: an empty list selects nothing (use 'all' or list rows)")
    return ",".join(str(r) for r in listed) + ("," if len(listed) == 1 else "")


def run(batch, impl="reference-sparse", rows="all", seed=0, scores=False):
    """Runs `impl` (reference-sparse, reference-mask, reference-exact, gpu-sparse, gpu-mask,
    recorded:NAME) on `batch` and returns its Outputs. Raises EnvironmentError when the
    implementation cannot run here (a GPU path without a GPU)."""
    return Outputs._from_dict(_core.run(batch._core, impl, rows_spec(rows), int(seed), bool(scores)))
