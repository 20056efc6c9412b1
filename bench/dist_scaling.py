#!/usr/bin/env python3
"""Data-parallel scaling of examples/train_text: tokens/s with 1 process and with N (mpirun -np N).

    python3 bench/dist_scaling.py [--build build] [--np 2] [--runs 2] [--steps 300] [--json]

The 1-process run is a plain `train_text` (no MPI); the others run `train_text --distributed`
under `mpirun -np N`, where --batch is the global batch and each rank trains on its 1/N share, so
every configuration takes the same steps on the same windows. Every process gets one OpenBLAS
thread (OPENBLAS_NUM_THREADS=1, OMP_NUM_THREADS=1) and OPENBLAS_CORETYPE is removed from the
environment, so OpenBLAS picks its kernels as it does for a user who never set it.

The configurations alternate (1, N, 1, N, ...), --runs times each, with --pause seconds before
each run. The machine may be shared: before each run the script waits (up to --max-wait seconds)
until other processes use less than --quiet cores, measured from /proc/stat over one second;
a run during which they used more (the CPU time of the whole machine minus that of our processes,
divided by the run's wall time) is repeated, up to --retries times. The table gives the best run
of each configuration, the spread of all of them ((max - min) / max of tokens/s), the 1-minute
load average (`uptime`) at its start and the cores other processes used during it.
"""
import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# A compute-bound model: one step takes tens of milliseconds on one core, and a step's gradients
# (about 0.4 M float32 parameters, 1.6 MB) are small next to its compute.
MODEL = {"dim": 128, "layers": 2, "heads": 4, "context": 64, "batch": 32}


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
    except OSError:
        return "unknown CPU", os.cpu_count() or 0
    return (names[0] if names else "unknown CPU"), len(names)


def busy_seconds():
    """CPU seconds every core of the machine spent busy since boot (user, nice, system, irq,
    softirq; not idle, iowait or steal)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / os.sysconf("SC_CLK_TCK")


def children_seconds():
    """CPU seconds of our finished child processes and their waited-for children (mpirun's ranks)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def other_cores_now(seconds=1.0):
    b0 = busy_seconds()
    time.sleep(seconds)
    return (busy_seconds() - b0) / seconds


def wait_until_quiet(quiet, max_wait):
    """Waits until other processes use fewer than `quiet` cores; returns the last measurement."""
    t0 = time.monotonic()
    while True:
        busy = other_cores_now()
        if busy < quiet or time.monotonic() - t0 > max_wait:
            return busy
        time.sleep(5)


def command(a, np):
    exe = os.path.join(a.build, "examples", "train_text")
    args = [exe, "--sample", "0", "--steps", str(a.steps), "--seed", "0"]
    for k, v in MODEL.items():
        args += ["--" + k, str(getattr(a, k, v))]
    if np == 1:
        return args
    mpi = ["mpirun", "-np", str(np)]
    if os.geteuid() == 0:
        mpi.append("--allow-run-as-root")
    if np > (os.cpu_count() or 1):
        mpi.append("--oversubscribe")
    mpi += a.mpirun_args.split()
    return mpi + args + ["--distributed"] + a.train_args.split()


def shown(cmd):
    """The command as one shell line, with the environment it runs in."""
    return "env -u OPENBLAS_CORETYPE OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 " + " ".join(cmd)


def run_once(cmd, env):
    load = os.getloadavg()[0]
    b0, c0, t0 = busy_seconds(), children_seconds(), time.monotonic()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    others = max(0.0, (busy_seconds() - b0) - (children_seconds() - c0)) / wall
    if p.returncode != 0:
        sys.exit(f"dist_scaling: {' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    tps = re.search(r"^(\d+) tokens/s", p.stdout, re.M)
    wait = re.search(r"waited for gradient all-reduces ([\d.]+)%", p.stdout)
    val = re.search(r"^validation loss ([\d.]+)", p.stdout, re.M)
    if not tps or not val:
        sys.exit(f"dist_scaling: no tokens/s or validation loss in the output of {' '.join(cmd)}:\n{p.stdout[-2000:]}")
    return {"tokens_per_s": int(tps.group(1)), "allreduce_wait_pct": float(wait.group(1)) if wait else None,
            "val_loss": float(val.group(1)), "wall_s": round(wall, 2), "load_1min": round(load, 2),
            "other_cores": round(others, 2)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="the build directory (default: build)")
    ap.add_argument("--np", type=int, nargs="+", default=[2], help="process counts besides 1 (default: 2)")
    ap.add_argument("--runs", type=int, default=2, help="runs of each configuration, alternating (default: 2)")
    ap.add_argument("--steps", type=int, default=300, help="training steps per run (default: 300)")
    for k, v in MODEL.items():
        ap.add_argument("--" + k, type=int, default=v, help=f"train_text --{k} (default: {v})")
    ap.add_argument("--mpirun-args", default="", help="extra mpirun arguments, e.g. '--bind-to none'")
    ap.add_argument("--train-args", default="",
                    help="extra train_text arguments for the N-process runs, e.g. '--overlap=false'")
    ap.add_argument("--pause", type=float, default=2.0, help="seconds to wait before each run (default: 2)")
    ap.add_argument("--quiet", type=float, default=0.3,
                    help="other processes' cores above which a run waits or is repeated (default: 0.3)")
    ap.add_argument("--max-wait", type=float, default=600, help="seconds to wait for a quiet machine (default: 600)")
    ap.add_argument("--retries", type=int, default=2, help="repeats of a run disturbed by other processes (default: 2)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    if not os.access(os.path.join(a.build, "examples", "train_text"), os.X_OK):
        sys.exit(f"dist_scaling: {a.build}/examples/train_text not found (build it: cmake --build {a.build} --target train_text)")
    if any(n > 1 for n in a.np) and not shutil.which("mpirun"):
        sys.exit("dist_scaling: mpirun not found (apt-get install openmpi-bin libopenmpi-dev)")
    if any(n < 2 or a.batch % n for n in a.np):
        sys.exit(f"dist_scaling: every --np must be at least 2 and divide --batch {a.batch}")

    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    procs = [1] + a.np
    cmds = {n: command(a, n) for n in procs}
    runs = {n: [] for n in procs}
    uptime_before = os.getloadavg()
    for i in range(a.runs):
        for n in procs:
            for attempt in range(a.retries + 1):
                time.sleep(a.pause)
                wait_until_quiet(a.quiet, a.max_wait)
                r = run_once(cmds[n], env)
                r["disturbed"] = r["other_cores"] >= a.quiet
                if not a.json:
                    print(f"run {i + 1}, {n} process{'es' if n > 1 else ''}: {r['tokens_per_s']} tokens/s, "
                          f"load {r['load_1min']}, others {r['other_cores']} cores"
                          f"{' (disturbed)' if r['disturbed'] else ''}", file=sys.stderr, flush=True)
                if not r["disturbed"] or attempt == a.retries:
                    break
            runs[n].append(r)
    uptime_after = os.getloadavg()

    cpu, ncpu = cpu_model()
    results = []
    for n in procs:
        best = max(runs[n], key=lambda r: r["tokens_per_s"])
        tps = [r["tokens_per_s"] for r in runs[n]]
        results.append({"processes": n, "command": shown(cmds[n]), "best": best, "runs": runs[n],
                        "spread_pct": round(100 * (max(tps) - min(tps)) / max(tps), 1),
                        "ms_per_step": round(1000 * a.batch * a.context / best["tokens_per_s"], 1),
                        "speedup": round(best["tokens_per_s"] / max(r["tokens_per_s"] for r in runs[1]), 2)})
    if a.json:
        print(json.dumps({"cpu": cpu, "cores": ncpu, "steps": a.steps,
                          "model": {k: getattr(a, k) for k in MODEL}, "mpirun_args": a.mpirun_args,
                          "train_args": a.train_args,
                          "uptime_load_before": [round(x, 2) for x in uptime_before],
                          "uptime_load_after": [round(x, 2) for x in uptime_after], "results": results}, indent=1))
        return
    print(f"CPU: {cpu} ({ncpu} cores); load average (1, 5, 15 min) before "
          f"{', '.join(f'{x:.2f}' for x in uptime_before)}, after {', '.join(f'{x:.2f}' for x in uptime_after)}\n")
    print("| processes | tokens/s (best) | spread | ms/step | speed-up vs 1 | rank 0 waited for all-reduce "
          "| val loss | load (1 min) | other processes |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        b = r["best"]
        wait = "-" if b["allreduce_wait_pct"] is None else f"{b['allreduce_wait_pct']:.1f}%"
        flag = " (disturbed)" if b["disturbed"] else ""
        print(f"| {r['processes']} | {b['tokens_per_s']} | {r['spread_pct']:.1f}% over {len(r['runs'])} | "
              f"{r['ms_per_step']} | {r['speedup']:.2f}x | {wait} | {b['val_loss']:.4f} | {b['load_1min']:.2f} | "
              f"{b['other_cores']:.2f} cores{flag} |")
    print("\n```sh")
    for r in results:
        print(r["command"])
    print("```")


if __name__ == "__main__":
    main()
