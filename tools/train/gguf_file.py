"""A small GGUF v3 writer: metadata and F32 tensors, enough for tools/train/export.py.

Layout (the GGUF spec): magic "GGUF", version, tensor count, key/value count; the key/values;
one info record per tensor (name, dims innermost first, ggml type, offset in the data section);
padding to `general.alignment` (32); then each tensor's bytes at its aligned offset.
All integers are little-endian. graphrun's quantize command turns the F32 file into Q8_0.
"""
import struct

import numpy as np

ALIGNMENT = 32
GGML_TYPE_F32 = 0

# GGUF value types
UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY = 4, 5, 6, 7, 8, 9


def _string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return struct.pack("<Q", len(raw)) + raw


def _scalar(kind: int, value) -> bytes:
    if kind == STRING:
        return _string(value)
    return struct.pack({UINT32: "<I", INT32: "<i", FLOAT32: "<f", BOOL: "<?"}[kind], value)


class GgufFile:
    def __init__(self):
        self.metadata: list[bytes] = []
        self.tensors: list[tuple[str, np.ndarray]] = []

    def add(self, key: str, kind: int, value):
        self.metadata.append(_string(key) + struct.pack("<I", kind) + _scalar(kind, value))

    def add_array(self, key: str, kind: int, values):
        body = b"".join(_scalar(kind, v) for v in values)
        self.metadata.append(_string(key) + struct.pack("<IIQ", ARRAY, kind, len(values)) + body)

    def add_tensor(self, name: str, data: np.ndarray):
        """data in PyTorch's (rows, columns) order; GGUF lists dims innermost first."""
        self.tensors.append((name, np.ascontiguousarray(data, dtype="<f4")))

    def write(self, path: str):
        header = b"GGUF" + struct.pack("<IQQ", 3, len(self.tensors), len(self.metadata))
        infos, offset = [], 0
        for name, data in self.tensors:
            dims = list(reversed(data.shape))
            infos.append(_string(name) + struct.pack("<I", len(dims)) +
                         struct.pack(f"<{len(dims)}Q", *dims) + struct.pack("<IQ", GGML_TYPE_F32, offset))
            offset += -(-data.nbytes // ALIGNMENT) * ALIGNMENT
        with open(path, "wb") as f:
            f.write(header + b"".join(self.metadata) + b"".join(infos))
            f.write(b"\0" * (-f.tell() % ALIGNMENT))
            for _, data in self.tensors:
                f.write(data.tobytes())
                f.write(b"\0" * (-data.nbytes % ALIGNMENT))
