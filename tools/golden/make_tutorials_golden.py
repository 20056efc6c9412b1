#!/usr/bin/python3
"""Regenerates tests/golden/tutorials/<name>.txt: the printed output of each PyTorch script in
examples/tutorials/pytorch/ (PyTorch 1.13): "Learning PyTorch with Examples", each with
torch.manual_seed(0) added to the tutorial's code, and makemore's MLP. tests/test_tutorials.cpp
compares the C++ translations in examples/tutorials/ with these files.

PyTorch's float32 sums depend on the CPU's vector kernels: a rerun on another host can change the
last digits of the polynomial_nn and polynomial_optim losses (seen between two hosts; the
same host gives the same bits every run). The test's tolerance covers that.

Run: /usr/bin/python3 tools/golden/make_tutorials_golden.py
"""
import glob
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPTS = os.path.join(ROOT, "examples", "tutorials", "pytorch")
OUT = os.path.join(ROOT, "tests", "golden", "tutorials")

os.makedirs(OUT, exist_ok=True)
scripts = sorted(glob.glob(os.path.join(SCRIPTS, "*.py")))
if not scripts:
    sys.exit(f"no tutorial scripts found in {SCRIPTS}")
for script in scripts:
    name = os.path.splitext(os.path.basename(script))[0]
    out = subprocess.run([sys.executable, script], check=True, capture_output=True, text=True).stdout
    with open(os.path.join(OUT, name + ".txt"), "w") as f:
        f.write(out)
    print(f"{name}: {len(out.splitlines())} lines")
