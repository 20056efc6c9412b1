#!/usr/bin/python3
"""Writes tests/golden/torch_linear.safetensors: the state_dict of PyTorch's nn.Linear(3, 2) made
right after torch.manual_seed(123), in the safetensors layout that safetensors.torch.save_file
produces (compact JSON header with "__metadata__": {"format": "pt"}, tensors ordered by name,
header padded with spaces to a multiple of 8). The safetensors package is not in Debian, so the
layout is written here from the format's definition. Also prints, for the C++ test, the values.

Run: /usr/bin/python3 tools/golden/make_safetensors_golden.py
"""
import json
import os
import struct

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "golden", "torch_linear.safetensors")
DT = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64"}


def save_file(tensors, path, metadata):
    header = {"__metadata__": metadata}
    data = b""
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous()
        raw = t.numpy().tobytes()
        header[name] = {"dtype": DT[t.dtype], "shape": list(t.shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def main():
    torch.manual_seed(123)
    lin = torch.nn.Linear(3, 2)
    save_file(dict(lin.state_dict()), OUT, {"format": "pt"})
    print("wrote", OUT)
    print("weight", lin.weight.detach().reshape(-1).tolist())
    print("bias", lin.bias.detach().tolist())


if __name__ == "__main__":
    main()
