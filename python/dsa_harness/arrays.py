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
