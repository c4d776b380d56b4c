"""compare(): outputs against a reference, judged as the CLI's `compare` and the reports judge."""
from . import _core
from .outputs import Outputs
from .run import run


class CompareResult:
    """verdict: "passed", "incorrect", "not run", ...; rule: own-path, public-test or quality;
    layers: one dict per compared layer (layer, role, verdict, failed_metric, records {name: value},
    mismatches [str]); first_mismatch: the first failing layer's first mismatch, with coordinates."""

    def __init__(self, d):
        self.impl = d["impl"]
        self.against = d["against"]
        self.rule = d["rule"]
        self.verdict = d["verdict"]
        self.rows = d["rows"]
        self.layers = d["layers"]

    @property
    def first_mismatch(self):
        for layer in self.layers:
            if layer["verdict"] != "passed":
                where = f"layer {layer['layer']}: {layer['failed_metric'] or layer['verdict']}"
                return layer["mismatches"][0] if layer["mismatches"] else where
        return ""

    def layer(self, name):
        for layer in self.layers:
            if layer["layer"] == str(name):
                return layer
        raise KeyError(f"no compared layer {name!r} (have {[l['layer'] for l in self.layers]})")

    def __str__(self):
        lines = [f"{self.impl} against {self.against}: {self.rule} rule, {self.rows} rows: {self.verdict}"]
        for layer in self.layers:
            failed = f" ({layer['failed_metric']})" if layer["failed_metric"] else ""
            lines.append(f"  {layer['layer']} ({layer['role']}): {layer['verdict']}{failed}")
            lines.extend(f"    {m}" for m in layer["mismatches"])
        return "\n".join(lines)

    __repr__ = __str__


def compare(batch, outputs, against="reference-sparse", tolerance=None):
    """Compares `outputs` (Outputs) with `against`: a registry name (run here on the rows the
    outputs computed) or another Outputs. The rule follows the two paths, as in the CLI."""
    if not isinstance(against, Outputs):
        done = [int(r) for r in outputs.rows_done.nonzero()[0]]
        rows = "all" if len(done) == batch.rows else done
        if not done:
            raise _core.InputError(f"outputs: /outputs/{outputs.name}/rows_done: no row was computed")
        against = run(batch, impl=against, rows=rows)
    tol = _core.default_tolerance if tolerance is None else float(tolerance)
    return CompareResult(_core.compare(batch._core, outputs._to_dict(), against._to_dict(), tol))
