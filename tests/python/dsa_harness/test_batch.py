"""Batch.from_arrays / read / write (python/src/batch.cpp, python/dsa_harness/batch.py)."""
import h5py
import numpy as np
import pytest

import dsa_harness
from conftest import engine_arrays, harness


def test_from_arrays_keeps_every_array(arrays, batch):
    assert (batch.requests, batch.rows, batch.layer_ids, batch.topk) == (3, 7, [20, 24], 512)
    back = batch.arrays()
    for name in ("num_rows", "compressed_len", "page_table", "compress_len", "pool", "tail_rows"):
        assert np.array_equal(back[name], arrays[name]), name
    for layer in (20, 24):
        for name in ("q", "q_scale", "weights"):
            assert np.array_equal(back["layers"][layer][name], arrays["layers"][layer][name]), (layer, name)
    assert back["layers"][20]["role"] == "source" and back["layers"][24]["role"] == "consumer"
    assert np.count_nonzero(back["pool"]) > 0.9 * back["pool"].size  # not the all-zero case


def test_write_read_round_trip(batch, tmp_path):
    path = tmp_path / "arrays.h5"
    batch.write(path)
    again = dsa_harness.Batch.read(path)
    assert again.content_id == batch.content_id
    assert again.path == str(path)
    for name, value in batch.arrays().items():
        if name != "layers":
            assert np.array_equal(again.arrays()[name], value), name
    # The C++ CLI reads the same file and names the same content ID.
    done = harness("inspect", path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"content ID:     {batch.content_id}" in done.stdout
    # Byte for byte: the same batch written again, and the file read back and rewritten.
    path2, path3 = tmp_path / "again.h5", tmp_path / "reread.h5"
    batch.write(path2)
    again.write(path3)
    assert path.read_bytes() == path2.read_bytes() == path3.read_bytes()


def test_content_id_does_not_depend_on_the_writer(arrays, batch, tmp_path):
    # The same arrays written with h5py: the C++ reader gives them the ID the in-memory batch has.
    path = tmp_path / "h5py.h5"
    with h5py.File(path, "w") as f:
        f.attrs.update({"format": "dsa-indexer-batch", "origin": "captured", "description": arrays["description"]})
        f.attrs.update({"format_version": 1, "heads": 32, "head_dim": 128, "block_size": 8, "topk_blocks": 2048,
                        "topk": 512, "page_size": 64, "compress_ratio": 1, "source_layer": 20})
        for name, where in (("num_rows", "requests"), ("compressed_len", "requests"), ("page_table", "requests"),
                            ("tail_rows", "requests"), ("compress_len", "rows"), ("pool", "index_k")):
            f[f"{where}/{name}"] = arrays[name]
        for layer, data in arrays["layers"].items():
            g = f.create_group(f"layers/{layer}")
            g.attrs["role"] = "source" if layer == 20 else "consumer"
            for name, value in data.items():
                g[name] = value
    assert dsa_harness.Batch.read(path).content_id == batch.content_id
    other = dsa_harness.Batch.from_arrays(**engine_arrays(seed=17))
    assert other.content_id != batch.content_id


class FakeTensor:
    """Duck-types a torch tensor on a device (detach, cpu, numpy) without needing torch."""

    def __init__(self, array):
        self.array, self.on_host = array, False

    def detach(self):
        return self

    def cpu(self):
        moved = FakeTensor(self.array)
        moved.on_host = True
        return moved

    def numpy(self):
        assert self.on_host, "numpy() on a device tensor"
        return self.array


def test_tensors_are_copied_to_the_host(arrays, batch):
    arrays["pool"] = FakeTensor(arrays["pool"])
    arrays["layers"][24]["q"] = FakeTensor(arrays["layers"][24]["q"])
    assert dsa_harness.Batch.from_arrays(**arrays).content_id == batch.content_id


def test_a_pool_shaped_by_page_is_flattened(arrays, batch):
    arrays["pool"] = arrays["pool"].reshape(arrays["pool"].shape[0], 64, 68)
    assert dsa_harness.Batch.from_arrays(**arrays).content_id == batch.content_id


def test_roles_default_to_plain_without_a_source(arrays):
    del arrays["layers"][20]
    arrays["source_layer"] = None
    arrays["tail_rows"] = None
    plain = dsa_harness.Batch.from_arrays(**arrays)
    assert plain.arrays()["layers"][24]["role"] == "plain"


@pytest.mark.parametrize("change, message", [
    (lambda a: a.update(num_rows=a["num_rows"].astype(np.int64)),
     "Batch.from_arrays: /requests/num_rows: dtype int64 is not int32"),
    (lambda a: a["layers"][24].update(q=a["layers"][24]["q"][:, :, :32].copy()),
     "Batch.from_arrays: /layers/24/q: shape [7, 32, 32] is not [7, 32, 64]"),
    (lambda a: a["compress_len"].__setitem__(1, 701),
     "/rows/compress_len"),
    (lambda a: a["layers"][20].update(role="dense"),
     "Batch.from_arrays: /layers/20: role 'dense' is not source, consumer or plain"),
    (lambda a: a.update(pool=a["pool"][:, :-1].copy()),
     "Batch.from_arrays: /index_k/pool: row width 4351 is not page_size * 68"),
])
def test_bad_arrays_name_the_dataset_and_rule(arrays, change, message):
    change(arrays)
    with pytest.raises(dsa_harness.InputError) as error:
        dsa_harness.Batch.from_arrays(**arrays)
    assert message in str(error.value)
    assert isinstance(error.value, ValueError)


def test_reading_a_missing_file_names_it(tmp_path):
    with pytest.raises(dsa_harness.InputError, match="nowhere.h5"):
        dsa_harness.Batch.read(tmp_path / "nowhere.h5")
