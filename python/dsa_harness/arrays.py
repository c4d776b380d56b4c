"""Turning what an engine holds (numpy arrays, torch tensors on any device) into numpy arrays."""
import numpy as np


def to_numpy(value):
    """A numpy array of `value`; torch tensors are copied to the host (bf16 as float32, which
    holds every bf16 value exactly). torch is never imported here: a tensor is recognised by its
    methods, so the package works without torch."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):
        tensor = value.detach()
        if str(getattr(tensor, "dtype", "")) == "torch.bfloat16":
            tensor = tensor.float()
        return tensor.cpu().numpy()
    return np.asarray(value)


def to_int32(value, where):
    """An engine's integer picks as int32 (torch's int64 indices are common); every value must fit,
    else InputError naming `where`. Other dtypes pass unchanged (the C++ side names them)."""
    array = to_numpy(value)
    if array.dtype.kind in "iu" and array.dtype != np.int32 and array.size:
        if array.min() < np.iinfo(np.int32).min or array.max() > np.iinfo(np.int32).max:
            from ._core import InputError
            raise InputError(f"{where}: values do not fit int32")
        array = array.astype(np.int32)
    return array
