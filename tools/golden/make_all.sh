#!/usr/bin/env bash
# Regenerates every golden file under tests/golden/ from PyTorch (Debian's python3-torch, run
# with /usr/bin/python3). The op table's script reads the table through the op_table_dump
# binary, so the build comes first:
#   cmake -S . -B build && cmake --build build --target op_table_dump && bash tools/golden/make_all.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
py=/usr/bin/python3
for script in make_golden make_creation_golden make_higher_order_golden make_next_word_golden \
              make_next_word_hvp_golden make_nn_modules_golden make_optim_golden make_reduce_index_golden \
              make_rng_golden make_safetensors_golden make_scheduler_golden make_traps_golden make_tutorials_golden make_custom_function_golden \
              make_saved_hooks_golden consumer seed004; do
  echo "== $script"
  "$py" "tools/golden/$script.py"
done
echo "== make_hooks_golden"
"$py" tools/golden/make_hooks_golden.py > tests/golden/hooks.json
echo "== second_order_reference"
"$py" tools/golden/second_order_reference.py --json > tests/golden/second_order.json
echo "== make_op_golden"
"$py" tools/golden/make_op_golden.py build/tests/op_table_dump
# (seed003_in_order.py and inplace_dual_in_graph.py print the values tests/test_nn.cpp and
# tests/test_forward_ad.cpp quote; run them by hand.) PyTorch's
# float32 training runs (next_word.txt, optim_cases.txt) can differ in the last bits from one host
# to another (its kernels pick their SIMD width by CPU); the tests compare them with a tolerance.
git status --short tests/golden
