#!/usr/bin/python3
"""PyTorch 1.13's answers for the translator tests (tests/test_translator.cpp): rounding at the
values where rounding rules differ (halves, -0.0, NaN, inf, the largest non-integral floats) and
round(x, decimals). Run with Debian's PyTorch:
    /usr/bin/python3 tools/golden/make_translator_golden.py
It writes tests/golden/translator.json: {"case": {...}}; inf and NaN as text, -0.0 kept.
"""
import json
import os

import torch

from make_golden import finite_or_text  # JSON has no inf: "inf" / "-inf" / "nan" as text

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "..", "tests", "golden", "translator.json")

cases = {}


# halves both ways, signed zeros, NaN and inf, and the largest values that still have a fraction
# (2^52 - 0.5 in float64, 2^23 - 0.5 in float32) and the float just below 0.5
SPECIAL = {
    "float64": [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.0, 0.0, 1.2345, -1.2345, -7.5, 1e300, 4503599627370495.5,
                0.49999999999999994, float("nan"), float("inf"), float("-inf")],
    "float32": [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.0, 0.0, 1.2345, -1.2345, -7.5, 3e38, 8388607.5,
                0.4999999701976776, float("nan"), float("inf"), float("-inf")],
}
DECIMALS_INPUT = [0.125, 0.135, 1234.5678, -2.675, 15.0, 25.0, -35.0, 1e-8, 0.5, 3e38, float("nan")]
DTYPES = {"float32": torch.float32, "float64": torch.float64}

for name, dt in DTYPES.items():
    x = torch.tensor(SPECIAL[name], dtype=dt)
    case = {"x": finite_or_text(x.tolist())}
    for op in ["round", "floor", "ceil", "trunc", "frac"]:
        case[op] = finite_or_text(getattr(torch, op)(x).tolist())
    cases["rounding_" + name] = case
    d = torch.tensor(DECIMALS_INPUT, dtype=dt)
    case = {"x": finite_or_text(d.tolist())}
    for decimals in [-2, -1, 0, 1, 2, 3]:
        case[str(decimals)] = finite_or_text(torch.round(d, decimals=decimals).tolist())
    cases["round_decimals_" + name] = case

with open(OUT, "w") as f:
    json.dump(cases, f, indent=1, sort_keys=True)
    f.write("\n")
print("wrote", OUT, len(cases), "cases")
