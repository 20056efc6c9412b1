#!/usr/bin/python3
"""Side-by-side training-step benchmark: this library's bench/train_step against PyTorch's
../shared/reference/torch_bench.py, same model, data and Adam step, in one run, measured against
the machine's own limit: its fp32 FMA peak (bench/fma_peak), measured in the same run.

For every size and thread count it alternates the two programs (ours, torch, ours, torch, ...),
several processes each, and reports the median of the per-process medians, the ratio
torch / ours (above 1: we are faster), the floor (the step's necessary matmul FLOPs at the FMA
peak of that many cores) and our distance to it, peak RSS and both first losses (they must agree).
For the toy size it also times bench/handwritten_toy, the same step written by hand with plain
loops (no graph): the floor of what the toy step can cost.

    /usr/bin/python3 bench/compare.py [--sizes toy small medium] [--threads 1 2] [--runs 3]
                                      [--pause 2] [--coretype NAME | --no-coretype] [--build build]

Both programs run with the caller's environment, OPENBLAS_CORETYPE included, unless --coretype
NAME sets it or --no-coretype removes it (as a user who never set it runs them: OpenBLAS then
picks its kernels for the CPU); the output says which, and the OpenBLAS core each side ran.
Both get OPENBLAS_NUM_THREADS = OMP_NUM_THREADS = threads. Before each process it waits --pause
seconds (default 2), so that the previous process's exit (PyTorch frees about 500 MiB) does not
overlap the next one's timing.

The step's necessary matmul FLOPs (issue 17): forward 8BTd^2 (the Q, K, V and output
projections) + 2BT^2d (QK^T and PV on and below the diagonal only, the step being causal) +
2BTdV (the head), times 3 for forward and backward.
"""
import argparse
import json
import os
import statistics
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
SIZES = {"toy": (6, 5, 16, 2, 1), "small": (256, 64, 128, 4, 16), "medium": (512, 256, 256, 8, 16)}  # V T d h B
TARGETS = {"small": 1.45, "medium": 1.35}  # ours / floor, 1 thread


def step_flops(size):
    V, T, d, _, B = SIZES[size]
    return 3 * (8 * B * T * d * d + 2 * B * T * T * d + 2 * B * T * d * V)


def run(cmd, env):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def torch_corename(env):
    probe = ("import torch, ctypes; lib = ctypes.CDLL('libopenblas.so.0'); "
             "lib.openblas_get_corename.restype = ctypes.c_char_p; print(lib.openblas_get_corename().decode())")
    try:
        return subprocess.run(["/usr/bin/python3", "-c", probe], check=True, capture_output=True, text=True,
                              env=env).stdout.strip()
    except (subprocess.CalledProcessError, OSError):
        return "unknown"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", nargs="+", default=["toy", "small", "medium"], choices=list(SIZES))
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--runs", type=int, default=3)
    core = ap.add_mutually_exclusive_group()
    core.add_argument("--coretype", default=None, help="set OPENBLAS_CORETYPE for both sides")
    core.add_argument("--no-coretype", action="store_true", help="remove OPENBLAS_CORETYPE for both sides")
    ap.add_argument("--pause", type=float, default=2.0, help="seconds to wait before each process")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="the build directory")
    ap.add_argument("--torch-bench", default=os.path.join(ROOT, "..", "shared", "reference", "torch_bench.py"))
    a = ap.parse_args()
    train_step = os.path.join(a.build, "bench", "train_step")
    handwritten = os.path.join(a.build, "bench", "handwritten_toy")
    fma_peak = os.path.join(a.build, "bench", "fma_peak")

    base = dict(os.environ)
    if a.coretype:
        base["OPENBLAS_CORETYPE"] = a.coretype
        how = f"OPENBLAS_CORETYPE={a.coretype} (set by --coretype)"
    elif a.no_coretype:
        base.pop("OPENBLAS_CORETYPE", None)
        how = "OPENBLAS_CORETYPE removed (--no-coretype)"
    elif "OPENBLAS_CORETYPE" in base:
        how = f"OPENBLAS_CORETYPE={base['OPENBLAS_CORETYPE']} (from the caller's environment)"
    else:
        how = "OPENBLAS_CORETYPE unset (the caller's environment)"
    peak = run([fma_peak, "--json"], base)
    peaks = {1: peak["gflops_1core"], 2: peak.get("gflops_2core") or peak["gflops_1core"]}
    if max(peak.get("others_share_1core", 0), peak.get("others_share_2core", 0)) > 0.1:
        print("WARNING: other processes used the cores while the peak was measured; the peak, the floors and every "
              "time below are disturbed (rerun on a quiet machine)")
    print(f"CPU: {peak['cpu']}; fp32 FMA peak ({peak['isa']}, {peak['vector_bits']}-bit): "
          f"{peaks[1]:.1f} GFLOP/s on 1 core, {peaks[2]:.1f} on 2")
    probe = run([train_step, "--size", "toy", "--steps", "1", "--warmup", "0", "--json"], base)
    ours_core, ours_gemm = probe["openblas_core"], probe.get("gemm", "openblas")
    gemm = "OpenBLAS's" if ours_gemm == "openblas" else f"ag's own {ours_gemm} kernels"
    print(f"environment: {how}; OpenBLAS core: ours {ours_core}, PyTorch {torch_corename(base)}; our GEMMs: {gemm}")
    print(f"\n{'size':7} {'thr':>3} {'torch ms':>10} {'ours ms':>10} {'ratio':>7} {'floor ms':>9} {'ours/floor':>10} "
          f"{'torch MiB':>10} {'ours MiB':>9} {'loss_first torch/ours':>24}")
    results = {}
    for size in a.sizes:
        for threads in a.threads:
            env = dict(base, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
            ours, torch, hand = [], [], []
            for _ in range(a.runs):
                time.sleep(a.pause)
                ours.append(run([train_step, "--size", size, "--threads", str(threads), "--json"], env))
                time.sleep(a.pause)
                torch.append(run(["/usr/bin/python3", a.torch_bench, "--size", size, "--threads", str(threads), "--json"], env))
                if size == "toy" and threads == 1 and os.path.exists(handwritten):
                    time.sleep(a.pause)
                    hand.append(run([handwritten, "--json"], env))
            t_ms = statistics.median(r["ms_per_step_median"] for r in torch)
            o_ms = statistics.median(r["ms_per_step_median"] for r in ours)
            floor = step_flops(size) / (peaks[min(threads, 2)] * 1e9) * 1e3
            t_rss = max(r["peak_rss_mib"] for r in torch)
            o_rss = max(r["peak_rss_mib"] for r in ours)
            results[size, threads] = dict(torch=t_ms, ours=o_ms, floor=floor, t_rss=t_rss, o_rss=o_rss,
                                          hand=statistics.median(r["ms_per_step_median"] for r in hand) if hand else None)
            print(f"{size:7} {threads:>3} {t_ms:>10.3f} {o_ms:>10.3f} {t_ms / o_ms:>6.2f}x {floor:>9.3f} {o_ms / floor:>9.2f}x "
                  f"{t_rss:>10.1f} {o_rss:>9.1f} {torch[0]['loss_first']:>11.5f}/{ours[0]['loss_first']:<11.5f}", flush=True)
            if hand:
                h_ms = results[size, threads]["hand"]
                print(f"{'':7} {'':>3} hand-written toy step (bench/handwritten_toy): {h_ms * 1e3:.2f} us; "
                      f"ours / hand-written {o_ms / h_ms:.2f}x; loss_first {hand[0]['loss_first']:.5f}", flush=True)

    print("\ntargets (issue 29; the same under --coretype Prescott):")
    def verdict(ok):
        return "met" if ok else "NOT met"
    for size, limit in TARGETS.items():
        if (size, 1) in results:
            r = results[size, 1]
            print(f"  {size}, 1 thread, within {limit}x of its floor: {r['ours'] / r['floor']:.2f}x, "
                  f"{verdict(r['ours'] <= limit * r['floor'])}")
    if ("medium", 1) in results and ("medium", 2) in results:
        s = results["medium", 1]["ours"] / results["medium", 2]["ours"]
        print(f"  medium, 2 threads at least 1.8x our 1-thread speed: {s:.2f}x, {verdict(s >= 1.8)}")
    if ("toy", 1) in results:
        r = results["toy", 1]
        if r["hand"]:
            print(f"  toy at most 2.5x the hand-written step: {r['ours'] / r['hand']:.2f}x, {verdict(r['ours'] <= 2.5 * r['hand'])}")
    behind = [f"{s}/{t}" for (s, t), r in results.items() if r["ours"] >= r["torch"]]
    print(f"  ahead of PyTorch in every cell: {verdict(not behind)}{' (behind: ' + ', '.join(behind) + ')' if behind else ''}")
    heavy = [f"{s}/{t}" for (s, t), r in results.items() if r["o_rss"] > r["t_rss"] / 2]
    print(f"  peak RSS at most half of PyTorch's everywhere: {verdict(not heavy)}{' (not: ' + ', '.join(heavy) + ')' if heavy else ''}")


if __name__ == "__main__":
    main()
