#!/usr/bin/env bash
# Builds and runs every test (this is the README's second command, and what .ci/run runs):
#   1. the GoogleTest suite (ctest) in build/
#   2. the installed package: build/ installed into a temporary prefix (everything under
#      include/ag/ and lib/, every installed header compiling on its own, ag/ag.h including them
#      all), then tests/consumer built against it with find_package(ag), run, and its output
#      compared with PyTorch's (tests/golden/consumer.txt)
#   3. the same suite built with AddressSanitizer + UndefinedBehaviorSanitizer in build-asan/
#      (its canary test proves ASan is active; LeakSanitizer runs at exit of every test), and
#      without MPI (-DAG_MPI=OFF), so the build without MPI is tested too; the MPI tests
#      (tests/dist/, under mpirun) run in stage 1
#   4. the libFuzzer targets, built with clang, ASan and UBSan (a UBSan report is fatal): the
#      checkpoint loader (load_fuzzer) for FUZZ_SECONDS (default 30) on the seed corpus in
#      tests/fuzz/corpus, then the public API (api_fuzzer: short programs of ag calls) for
#      API_FUZZ_SECONDS (default 60) on tests/fuzz/api_corpus; a crash, sanitizer report, timeout
#      or out-of-memory of either fails the stage with the end of the fuzzer's report
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=2

# On a fresh machine (CI may get one), install the Debian packages the tests need, if any is
# missing: the README's first command installs only what the main example needs (the first five).
packages=(g++ cmake libopenblas-dev libcxxopts-dev nlohmann-json3-dev
          clang libclang-rt-14-dev libgtest-dev libbenchmark-dev libopenmpi-dev openmpi-bin chromium chromium-driver python3-selenium)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing ${missing[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
fuzz_seconds=${FUZZ_SECONDS:-30}
api_fuzz_seconds=${API_FUZZ_SECONDS:-60}
sanitized_flags="-O1 -g1 -DNDEBUG"  # the ASan builds of stages 3 and 4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== [${SECONDS}s] 1/4 test suite"
# Everything on, whatever a build/ made by the README's first command cached (tests and benchmarks
# off; MPI off when it was not installed yet)
cmake -S . -B build -DAG_BUILD_TESTS=ON -DAG_BUILD_BENCHMARKS=ON -DAG_BUILD_EXAMPLES=ON -DAG_MPI=ON
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"

echo "== [${SECONDS}s] 2/4 installed package and a project using it"
prefix="$work/prefix"
cmake --install build --prefix "$prefix" >/dev/null
outside=$(cd "$prefix" && find . -type f | grep -v -E '^\./(include/ag|lib)/' || true)
if [ -n "$outside" ] || [ "$(ls "$prefix/include")" != ag ]; then
  echo "installed outside include/ag/ and lib/:"; (cd "$prefix" && find . -mindepth 1 | grep -v -E '^\./(include|lib)$|^\./(include/ag|lib)(/|$)'); exit 1
fi
headers=$(cd "$prefix/include" && find ag -name '*.h' | sort)
for h in $headers; do  # each on its own: no missing include, no internal (uninstalled) header
  echo "#include <$h>" | c++ -std=c++20 -fsyntax-only -I"$prefix/include" -x c++ - ||
    { echo "installed header $h does not compile on its own"; exit 1; }
done
reached=$(echo '#include <ag/ag.h>' | c++ -std=c++20 -MM -I"$prefix/include" -x c++ - |
  tr -d '\\' | tr ' ' '\n' | grep '\.h$' | xargs realpath --relative-to="$prefix/include" | sort -u)
missing=$(comm -23 <(echo "$headers") <(echo "$reached"))
if [ -n "$missing" ]; then echo "ag/ag.h does not include: $missing"; exit 1; fi
cmake -S tests/consumer -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
grep -q "^ag_DIR:PATH=$prefix/" "$work/consumer/CMakeCache.txt" ||
  { echo "the consumer found an ag other than the one just installed"; exit 1; }
cmake --build "$work/consumer" >/dev/null
"$work/consumer/consumer" >"$work/consumer.txt"
diff tests/golden/consumer.txt "$work/consumer.txt"
echo "installed $(echo "$headers" | wc -l) headers; the consumer built with find_package(ag) prints PyTorch's output"

echo "== [${SECONDS}s] 3/4 test suite under ASan + UBSan"
# -O1 -g1 (line tables for ASan's reports) compiles in half the time of -O2 -g. ctest gets stage
# 1's measured test times, so it starts the longest tests first instead of last.
cmake -S . -B build-asan -DAG_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$sanitized_flags" \
  -DAG_BUILD_BENCHMARKS=OFF -DAG_MPI=OFF
cmake --build build-asan -j"$jobs"
mkdir -p build-asan/Testing/Temporary
cp build/Testing/Temporary/CTestCostData.txt build-asan/Testing/Temporary/ 2>/dev/null || true
ctest --test-dir build-asan --output-on-failure -j"$jobs"

echo "== [${SECONDS}s] 4/4 fuzzing the checkpoint loader for ${fuzz_seconds}s and the API for ${api_fuzz_seconds}s"
cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DAG_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$sanitized_flags" \
  -DAG_BUILD_TESTS=OFF -DAG_BUILD_EXAMPLES=OFF -DAG_BUILD_BENCHMARKS=OFF -DAG_MPI=OFF
cmake --build build-fuzz -j"$jobs" --target load_fuzzer api_fuzzer
# run_fuzzer NAME SEEDS SECONDS [libFuzzer flags]: fuzzes a copy of the seed corpus with the log in a
# file; prints its summary lines, and on a non-zero exit (crash, sanitizer report, timeout, OOM)
# the end of the report, and fails; the crashing input stays in build-fuzz/NAME-artifacts/. The
# exit code is the fuzzer's own: piped into grep, `|| true` would reset PIPESTATUS, and no crash
# could fail the stage.
run_fuzzer() {
  local name=$1 seeds=$2 seconds=$3; shift 3
  mkdir "$work/$name-corpus"
  rm -rf "build-fuzz/$name-artifacts" && mkdir "build-fuzz/$name-artifacts"
  cp "$seeds"/* "$work/$name-corpus/"
  local rc=0
  "./build-fuzz/$name" "$work/$name-corpus" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 \
    -artifact_prefix="build-fuzz/$name-artifacts/" -print_final_stats=1 "$@" >"$work/$name.log" 2>&1 || rc=$?
  grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|Done|==[0-9]+==ERROR|SUMMARY)" "$work/$name.log" || true
  if [ "$rc" -ne 0 ]; then
    echo "$name exited with $rc; the end of its report:"
    tail -n 60 "$work/$name.log"
    ls "build-fuzz/$name-artifacts/" | sed "s|^|artifact: build-fuzz/$name-artifacts/|"
    return 1
  fi
}
run_fuzzer load_fuzzer tests/fuzz/corpus "$fuzz_seconds"
run_fuzzer api_fuzzer tests/fuzz/api_corpus "$api_fuzz_seconds" -malloc_limit_mb=2048

echo "== [${SECONDS}s] done"
echo "4 passed, 0 failed"
