#!/usr/bin/env python3
"""ctest FmaPeak.Sane: run `fma_peak --json --seconds 0.05` and check its report: the JSON parses,
the ISA is avx512, avx2 or scalar with its vector width, and every figure is above 1 GFLOP/s. Then
the run-time dispatch on each instruction set: `--isa X` for every X runs X's kernel where the
CPU has it (by /proc/cpuinfo's flags, where there is one) and is a one-line error naming X where
it has not. How fast the machine is, is for the benchmarks to say (bench/compare.py), not for a
test.
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


def cpu_flags():
    """The CPU's flags from /proc/cpuinfo, or None where there is no such file."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def dispatch_errors(binary):
    flags = cpu_flags()
    if flags is None:
        return []
    has = {"avx512": "avx512f" in flags, "avx2": "avx2" in flags and "fma" in flags, "scalar": True}
    errors = []
    for isa, runs in has.items():
        p = subprocess.run([binary, "--json", "--seconds", "0.02", "--threads", "1", "--isa", isa], capture_output=True,
                           text=True, timeout=60)
        if runs:
            if p.returncode != 0:
                errors.append(f"--isa {isa}: exit {p.returncode} on a CPU that has it: {p.stderr.strip()}")
                continue
            r = json.loads(p.stdout)
            print(f"--isa {isa}: ran {r['isa']} ({r['vector_bits']}-bit), {r['gflops_1core']:.1f} GFLOP/s")
            if r["isa"] != isa or r["vector_bits"] not in WIDTHS[isa]:
                errors.append(f"--isa {isa} ran {r['isa']} with {r['vector_bits']}-bit vectors")
            errors += [f"--isa {isa}: {e}" for e in sane(r)]
        else:
            lines = p.stderr.strip().splitlines()
            print(f"--isa {isa}: not on this CPU: {p.stderr.strip()}")
            if p.returncode != 2 or len(lines) != 1 or f"'{isa}'" not in lines[0]:
                errors.append(f"--isa {isa} on a CPU without it: exit {p.returncode}, stderr {p.stderr!r}")
    return errors


def main():
    r = report(sys.argv[1], 0.05)
    print(json.dumps(r))
    errors = sane(r) + dispatch_errors(sys.argv[1])
    for e in errors:
        print("FAIL:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
