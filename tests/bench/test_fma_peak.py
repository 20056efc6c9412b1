#!/usr/bin/env python3
"""ctest FmaPeak.Sane: run `fma_peak --json --seconds 0.05` and check its report: the JSON parses,
the ISA is avx512, avx2 or scalar with its vector width, and every figure is above 1 GFLOP/s. How
fast the machine is, is for the benchmarks to say (bench/compare.py), not for a test.
Usage: test_fma_peak.py FMA_PEAK_BINARY
"""
import json
import subprocess
import sys

WIDTHS = {"avx512": {512}, "avx2": {256}, "scalar": {32, 128, 256, 512}}


def report(binary, seconds):
    out = subprocess.run([binary, "--json", "--seconds", str(seconds)], check=True, capture_output=True, text=True, timeout=60).stdout
    return json.loads(out)


def sane(r):
    errors = []
    if r["isa"] not in WIDTHS:
        errors.append(f"isa {r['isa']!r} is not avx512, avx2 or scalar")
    elif r["vector_bits"] not in WIDTHS[r["isa"]]:
        errors.append(f"vector_bits {r['vector_bits']} does not fit isa {r['isa']}")
    if not r["gflops_1core"] > 1:
        errors.append(f"gflops_1core {r['gflops_1core']} <= 1")
    if r["gflops_1core_256"] is not None and not r["gflops_1core_256"] > 1:
        errors.append(f"gflops_1core_256 {r['gflops_1core_256']} <= 1")
    if not r["gflops_2core"] > 1:
        errors.append(f"gflops_2core {r['gflops_2core']} <= 1")
    return errors


def main():
    r = report(sys.argv[1], 0.05)
    print(json.dumps(r))
    errors = sane(r)
    for e in errors:
        print("FAIL:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
