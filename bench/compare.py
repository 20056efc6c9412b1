#!/usr/bin/python3
"""Side-by-side training-step benchmark: this library's bench/train_step against PyTorch's
../shared/reference/torch_bench.py, same model, data and Adam step, in one run.

For every size and thread count it alternates the two programs (ours, torch, ours, torch, ...),
several processes each, and reports the median of the per-process medians, the ratio
torch / ours (above 1: we are faster), peak RSS and both first losses (they must agree).

    /usr/bin/python3 bench/compare.py [--sizes toy small medium] [--threads 1 2] [--runs 3]
                                      [--pause 2] [--coretype NAME] [--train-step build/bench/train_step]

Before each process it waits --pause seconds (default 2), so that the previous process's exit
(PyTorch frees about 500 MiB) does not overlap the next one's timing; our toy run times only
15 ms of steps and is the most exposed. Both programs get OPENBLAS_NUM_THREADS = threads. --coretype sets OPENBLAS_CORETYPE for both
(OpenBLAS 0.3.21 does not recognize some newer CPUs and falls back to its generic Prescott
kernels; e.g. --coretype SkylakeX selects the AVX-512 kernels on such machines).
"""
import argparse
import json
import os
import statistics
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")


def run(cmd, env):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", nargs="+", default=["toy", "small", "medium"])
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--coretype", default=None)
    ap.add_argument("--pause", type=float, default=2.0, help="seconds to wait before each process")
    ap.add_argument("--train-step", default=os.path.join(ROOT, "build", "bench", "train_step"))
    ap.add_argument("--torch-bench", default=os.path.join(ROOT, "..", "shared", "reference", "torch_bench.py"))
    a = ap.parse_args()

    print(f"{'size':7} {'thr':>3} {'torch ms':>10} {'ours ms':>10} {'ratio':>7} {'torch MiB':>10} {'ours MiB':>9} "
          f"{'loss_first torch/ours':>24}")
    for size in a.sizes:
        for threads in a.threads:
            env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
            if a.coretype:
                env["OPENBLAS_CORETYPE"] = a.coretype
            ours, torch = [], []
            for _ in range(a.runs):
                time.sleep(a.pause)
                ours.append(run([a.train_step, "--size", size, "--threads", str(threads), "--json"], env))
                time.sleep(a.pause)
                torch.append(run(["/usr/bin/python3", a.torch_bench, "--size", size, "--threads", str(threads), "--json"], env))
            t_ms = statistics.median(r["ms_per_step_median"] for r in torch)
            o_ms = statistics.median(r["ms_per_step_median"] for r in ours)
            t_rss = max(r["peak_rss_mib"] for r in torch)
            o_rss = max(r["peak_rss_mib"] for r in ours)
            print(f"{size:7} {threads:>3} {t_ms:>10.3f} {o_ms:>10.3f} {t_ms / o_ms:>6.2f}x {t_rss:>10.1f} {o_rss:>9.1f} "
                  f"{torch[0]['loss_first']:>11.5f}/{ours[0]['loss_first']:<11.5f}", flush=True)


if __name__ == "__main__":
    main()
