#!/usr/bin/python3
"""Writes the seed corpus of the loader fuzzer (tests/fuzz/corpus): valid safetensors files and
malformed ones. Pure Python, no torch needed: python3 tools/make_fuzz_corpus.py"""
import json
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fuzz", "corpus")


def st(header, data):
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


def main():
    os.makedirs(OUT, exist_ok=True)
    f32 = struct.pack("<6f", 0.5, -1, 2, 3.25, 0, 1e-3)
    files = {
        "valid_f32": st({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}, f32),
        "valid_two": st({"__metadata__": {"format": "pt"}, "b": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                         "w": {"dtype": "F64", "shape": [1, 2], "data_offsets": [8, 24]}}, f32[:8] + struct.pack("<2d", 1, 2)),
        "valid_ids": st({"i": {"dtype": "I64", "shape": [3], "data_offsets": [0, 24]}, "m": {"dtype": "BOOL", "shape": [2], "data_offsets": [24, 26]}},
                        struct.pack("<3q", 1, 2, 3) + b"\x01\x00"),
        "valid_empty": st({"e": {"dtype": "F32", "shape": [0, 4], "data_offsets": [0, 0]}}, b""),
        "bad_offsets": st({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [4, 28]}}, f32),
        "bad_dtype": st({"w": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]}}, b"\0" * 4),
        "bad_shape": st({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, b"\0" * 4),
        "huge_header": struct.pack("<Q", 1 << 40) + b"{}",
        "not_json": struct.pack("<Q", 4) + b"{{{{",
        "truncated": st({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}, f32)[:40],
    }
    for name, data in files.items():
        with open(os.path.join(OUT, name), "wb") as fh:
            fh.write(data)
    print("wrote", len(files), "files to", OUT)


if __name__ == "__main__":
    main()
