"""Row helpers over (N, W) uint8 payload arrays, shared by every CAN module."""

import numpy as np


def gather(data, rows):
    """data[rows], moving whole 8-byte words when W allows."""
    w = data.shape[1]
    if w % 8 == 0 and data.flags.c_contiguous and len(data):
        return data.view(np.uint64)[rows].view(np.uint8).reshape(len(rows), w)
    return data[rows]


def pad(data, width):
    """data zero-padded to at least `width` columns (itself when already that wide)."""
    data = np.asarray(data, np.uint8)
    if data.shape[1] >= width:
        return data
    out = np.zeros((len(data), width), np.uint8)
    out[:, : data.shape[1]] = data
    return out
