#!/usr/bin/env bash
# Builds and runs every test (this is the README's second command, and what .ci/run runs):
#   1. the GoogleTest suite (ctest) in build/
#   2. the same suite built with AddressSanitizer + UndefinedBehaviorSanitizer in build-asan/
#      (its canary test proves ASan is active; LeakSanitizer runs at exit of every test)
#   3. the libFuzzer target of the checkpoint loader, built with clang, for FUZZ_SECONDS
#      (default 30) on the seed corpus in tests/fuzz/corpus
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=2

# On a fresh machine (CI may get one), install the Debian packages the README's first command
# installs, if any is missing.
packages=(g++ cmake clang libclang-rt-14-dev libopenblas-dev libgtest-dev libcxxopts-dev libbenchmark-dev nlohmann-json3-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing ${missing[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
fuzz_seconds=${FUZZ_SECONDS:-30}

echo "== 1/3 test suite"
cmake -S . -B build
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"

echo "== 2/3 test suite under ASan + UBSan"
cmake -S . -B build-asan -DAG_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAG_BUILD_BENCHMARKS=OFF
cmake --build build-asan -j"$jobs"
ctest --test-dir build-asan --output-on-failure -j"$jobs"

echo "== 3/3 fuzzing the checkpoint loader for ${fuzz_seconds}s"
cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DAG_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DAG_BUILD_TESTS=OFF -DAG_BUILD_EXAMPLES=OFF -DAG_BUILD_BENCHMARKS=OFF
cmake --build build-fuzz -j"$jobs"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp tests/fuzz/corpus/* "$work/"
./build-fuzz/load_fuzzer "$work" -max_total_time="$fuzz_seconds" -timeout=5 -rss_limit_mb=2048 -print_final_stats=1 2>&1 |
  grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|Done|==[0-9]+==ERROR|SUMMARY)" || true
test "${PIPESTATUS[0]}" -eq 0

echo "3 passed, 0 failed"
