#!/usr/bin/python3
"""Regenerates tests/golden/lr_scheduler_cases.json: learning-rate schedules, and RMSprop and
Adagrad trajectories, in PyTorch 1.13 (/usr/bin/python3 tools/golden/make_scheduler_golden.py).

Every run uses the same three parameters (shapes (3, 4), (5,), (2,)) and a synthetic gradient
set by hand before each optimizer step,

    grad = c * (p - t) + k * (p * p * p)        (c, t, k fixed tensors, elementwise)

which is made of correctly rounded elementwise ops only, so the C++ test computes the very same
bits and any difference comes from the optimizer. The third parameter gets a gradient on even
steps only (grad None on odd ones), which exercises skipped parameters and Adagrad's
per-parameter step count.

- "schedulers": each case builds an optimizer and a scheduler, then for every step runs
  optimizer.step() and scheduler.step(); it records get_last_lr() after construction and after
  every step (lr[0] is the construction's value), the momentum (param_groups[0]['momentum'] or
  betas[0]) for OneCycleLR, and the parameters at the end.
- "chained": two schedulers on one optimizer, the lr after every step.
- "optimizers": RMSprop and Adagrad, the parameters after steps 1, 2, 3, every 10th and the last.
- "errors": the type and message of each exception PyTorch raises for bad arguments.
"""
import json
import os
import re
import warnings

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "golden",
                   "lr_scheduler_cases.json")
SHAPES = [(3, 4), (5,), (2,)]
SCHED_STEPS = 120
OPT_STEPS = 150

# The C++ test defines the same functions under the same names.
LAMBDAS = {
    "pow095": lambda epoch: 0.95 ** epoch,
    "warmup10": lambda epoch: min(1.0, (epoch + 1) / 10),
    "halve_every7": lambda epoch: 1.0 / (1 + epoch // 7),
}

OPTIMIZERS = {
    "sgd": lambda p, a: torch.optim.SGD(p, **a),
    "adam": lambda p, a: torch.optim.Adam(p, **a),
    "adamw": lambda p, a: torch.optim.AdamW(p, **a),
    "rmsprop": lambda p, a: torch.optim.RMSprop(p, **a),
    "adagrad": lambda p, a: torch.optim.Adagrad(p, **a),
}

S = torch.optim.lr_scheduler
SCHEDULERS = {
    "StepLR": lambda o, a: S.StepLR(o, **a),
    "MultiStepLR": lambda o, a: S.MultiStepLR(o, **a),
    "ExponentialLR": lambda o, a: S.ExponentialLR(o, **a),
    "CosineAnnealingLR": lambda o, a: S.CosineAnnealingLR(o, **a),
    "LambdaLR": lambda o, a: S.LambdaLR(o, LAMBDAS[a["lr_lambda"]]),
    "LinearLR": lambda o, a: S.LinearLR(o, **a),
    "OneCycleLR": lambda o, a: S.OneCycleLR(o, **a),
}

# (name, optimizer, optimizer kwargs, scheduler, scheduler kwargs); OneCycleLR cases run
# total_steps steps (the last one allowed), the others SCHED_STEPS.
SGD_M = {"lr": 0.1, "momentum": 0.9}
SCHED_CASES = [
    ("step_3_half", "sgd", SGD_M, "StepLR", {"step_size": 3, "gamma": 0.5}),
    ("step_10_default_gamma_adam", "adam", {"lr": 1e-3}, "StepLR", {"step_size": 10}),
    ("step_7_gamma_0.9", "sgd", {"lr": 0.05}, "StepLR", {"step_size": 7, "gamma": 0.9}),
    ("multistep_repeated_milestone", "sgd", SGD_M, "MultiStepLR", {"milestones": [5, 20, 20, 50], "gamma": 0.3}),
    ("multistep_unsorted_default_gamma", "adam", {"lr": 0.01}, "MultiStepLR", {"milestones": [30, 10, 80]}),
    ("exponential_0.97", "sgd", SGD_M, "ExponentialLR", {"gamma": 0.97}),
    ("exponential_0.9_adamw", "adamw", {"lr": 0.003}, "ExponentialLR", {"gamma": 0.9}),
    ("cosine_10_eta_min", "sgd", SGD_M, "CosineAnnealingLR", {"T_max": 10, "eta_min": 0.001}),
    ("cosine_37", "adam", {"lr": 0.05}, "CosineAnnealingLR", {"T_max": 37}),
    ("cosine_1", "sgd", {"lr": 0.2}, "CosineAnnealingLR", {"T_max": 1, "eta_min": 0.01}),
    ("cosine_120_rmsprop", "rmsprop", {"lr": 0.01}, "CosineAnnealingLR", {"T_max": 120, "eta_min": 1e-4}),
    ("lambda_pow095", "sgd", SGD_M, "LambdaLR", {"lr_lambda": "pow095"}),
    ("lambda_warmup10", "adam", {"lr": 0.002}, "LambdaLR", {"lr_lambda": "warmup10"}),
    ("lambda_halve_every7", "adagrad", {"lr": 0.1}, "LambdaLR", {"lr_lambda": "halve_every7"}),
    ("linear_default", "sgd", SGD_M, "LinearLR", {}),
    ("linear_decay_30", "adam", {"lr": 0.01}, "LinearLR", {"start_factor": 1.0, "end_factor": 0.2, "total_iters": 30}),
    ("linear_quarter_to_three_quarters_50", "sgd", {"lr": 0.3}, "LinearLR",
     {"start_factor": 0.25, "end_factor": 0.75, "total_iters": 50}),
    ("onecycle_cos_sgd", "sgd", SGD_M, "OneCycleLR", {"max_lr": 0.1, "total_steps": 120}),
    ("onecycle_linear_sgd", "sgd", SGD_M, "OneCycleLR",
     {"max_lr": 0.2, "total_steps": 100, "pct_start": 0.25, "anneal_strategy": "linear"}),
    ("onecycle_three_phase_cos_adam", "adam", {"lr": 1e-3}, "OneCycleLR",
     {"max_lr": 0.01, "total_steps": 150, "three_phase": True, "div_factor": 10.0, "final_div_factor": 100.0}),
    ("onecycle_three_phase_linear_rmsprop", "rmsprop", {"lr": 0.01}, "OneCycleLR",
     {"max_lr": 0.02, "total_steps": 110, "anneal_strategy": "linear", "three_phase": True}),
    ("onecycle_adam_momentum_range", "adam", {"lr": 1e-3, "betas": (0.9, 0.99)}, "OneCycleLR",
     {"max_lr": 0.005, "total_steps": 130, "pct_start": 0.4, "base_momentum": 0.8, "max_momentum": 0.9}),
    ("onecycle_sgd_without_momentum", "sgd", {"lr": 0.1}, "OneCycleLR", {"max_lr": 0.05, "total_steps": 105}),
    ("onecycle_no_cycle_momentum_adagrad", "adagrad", {"lr": 0.1}, "OneCycleLR",
     {"max_lr": 0.3, "total_steps": 120, "cycle_momentum": False, "anneal_strategy": "linear"}),
]

# Two schedulers on one optimizer, both stepped every epoch: the chainable forms compose (the
# second one starts from the initial_lr the first recorded).
CHAINED_CASES = [
    ("exponential_then_step", "sgd", SGD_M, [("ExponentialLR", {"gamma": 0.9}), ("StepLR", {"step_size": 3, "gamma": 0.1})]),
    ("linear_warmup_and_cosine", "adam", {"lr": 0.01},
     [("LinearLR", {"start_factor": 0.1, "end_factor": 1.0, "total_iters": 10}), ("CosineAnnealingLR", {"T_max": 50})]),
]

OPT_CASES = [
    ("rmsprop_default", "float64", "rmsprop", {}),
    ("rmsprop_momentum", "float64", "rmsprop", {"lr": 0.01, "momentum": 0.9}),
    ("rmsprop_centered", "float64", "rmsprop", {"lr": 0.005, "alpha": 0.9, "centered": True}),
    ("rmsprop_all", "float64", "rmsprop",
     {"lr": 0.01, "alpha": 0.95, "eps": 1e-6, "weight_decay": 0.05, "momentum": 0.5, "centered": True}),
    ("rmsprop_all", "float32", "rmsprop",
     {"lr": 0.01, "alpha": 0.95, "eps": 1e-6, "weight_decay": 0.05, "momentum": 0.5, "centered": True}),
    ("adagrad_default", "float64", "adagrad", {}),
    ("adagrad_lr_decay", "float64", "adagrad", {"lr": 0.1, "lr_decay": 0.01}),
    ("adagrad_wd_initial_accumulator", "float64", "adagrad",
     {"lr": 0.1, "weight_decay": 0.1, "initial_accumulator_value": 0.5, "eps": 1e-8}),
    ("adagrad_all", "float64", "adagrad",
     {"lr": 0.2, "lr_decay": 0.05, "weight_decay": 0.01, "initial_accumulator_value": 0.1, "eps": 1e-6}),
    ("adagrad_all", "float32", "adagrad",
     {"lr": 0.2, "lr_decay": 0.05, "weight_decay": 0.01, "initial_accumulator_value": 0.1, "eps": 1e-6}),
]


def problem():
    g = torch.Generator().manual_seed(13)
    data = {}
    for key in ("p0", "c", "t"):
        data[key] = [torch.randn(s, dtype=torch.float64, generator=g) for s in SHAPES]
    data["c"] = [c.abs() + 0.5 for c in data["c"]]
    data["k"] = [torch.full(s, 0.05, dtype=torch.float64) for s in SHAPES]
    return data


def flat(ts):
    return [[float(v) for v in t.detach().reshape(-1).double().tolist()] for t in ts]


def set_grads(params, data, step, dtype):
    for i, p in enumerate(params):
        if i == 2 and step % 2 == 1:
            p.grad = None
            continue
        c, t, k = (data[key][i].to(dtype) for key in ("c", "t", "k"))
        with torch.no_grad():
            p.grad = c * (p - t) + k * (p * p * p)


def make_params(data, dtype):
    return [p.to(dtype).clone().requires_grad_() for p in data["p0"]]


def momentum_of(opt):
    group = opt.param_groups[0]  # what OneCycleLR cycles: beta1 if the optimizer has betas
    return group["betas"][0] if "betas" in group else group["momentum"]


def run_scheduler(data, case):
    name, opt_name, opt_args, sched_name, sched_args = case
    params = make_params(data, torch.float64)
    opt = OPTIMIZERS[opt_name](params, dict(opt_args))
    sched = SCHEDULERS[sched_name](opt, dict(sched_args))
    one_cycle = sched_name == "OneCycleLR"
    steps = sched_args["total_steps"] if one_cycle else SCHED_STEPS
    record_momentum = one_cycle and sched_args.get("cycle_momentum", True)
    lrs, moms = [sched.get_last_lr()[0]], [momentum_of(opt)] if record_momentum else []
    for step in range(1, steps + 1):
        set_grads(params, data, step, torch.float64)
        opt.step()
        sched.step()
        assert len(sched.get_last_lr()) == 1 and sched.get_last_lr()[0] == opt.param_groups[0]["lr"]
        lrs.append(sched.get_last_lr()[0])
        if record_momentum:
            moms.append(momentum_of(opt))
    out = {"name": name, "optimizer": opt_name, "optimizer_args": opt_args, "scheduler": sched_name,
           "scheduler_args": sched_args, "steps": steps, "last_epoch": sched.last_epoch, "lr": lrs,
           "momentum": moms, "params": flat(params)}
    if one_cycle:  # one more step is an error
        try:
            sched.step()
            raise AssertionError("OneCycleLR stepped past total_steps")
        except ValueError as e:
            out["step_past_end_error"] = str(e)
    return out


def run_chained(data, case):
    name, opt_name, opt_args, scheds = case
    params = make_params(data, torch.float64)
    opt = OPTIMIZERS[opt_name](params, dict(opt_args))
    schedulers = [SCHEDULERS[n](opt, dict(a)) for n, a in scheds]
    lrs = [opt.param_groups[0]["lr"]]
    for step in range(1, SCHED_STEPS + 1):
        set_grads(params, data, step, torch.float64)
        opt.step()
        for sched in schedulers:
            sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    return {"name": name, "optimizer": opt_name, "optimizer_args": opt_args,
            "schedulers": [{"scheduler": n, "scheduler_args": a} for n, a in scheds], "steps": SCHED_STEPS,
            "base_lrs": [sched.base_lrs[0] for sched in schedulers], "lr": lrs}


def run_optimizer(data, case):
    name, dtype_name, opt_name, opt_args = case
    dtype = getattr(torch, dtype_name)
    params = make_params(data, dtype)
    opt = OPTIMIZERS[opt_name](params, dict(opt_args))
    record = []
    for step in range(1, OPT_STEPS + 1):
        set_grads(params, data, step, dtype)
        opt.step()
        if step <= 3 or step % 10 == 0 or step == OPT_STEPS:
            record.append({"step": step, "params": flat(params)})
    return {"name": name, "dtype": dtype_name, "optimizer": opt_name, "optimizer_args": opt_args,
            "steps": OPT_STEPS, "record": record}


def message(f):
    try:
        f()
    except (ValueError, ZeroDivisionError) as e:
        return {"type": type(e).__name__, "message": str(e)}
    raise AssertionError("no exception")


def errors():
    def p():
        return [torch.ones(2, dtype=torch.float64, requires_grad=True)]

    def sgd():
        return torch.optim.SGD(p(), lr=0.1, momentum=0.9)

    def stepped(sched):
        with warnings.catch_warnings():  # stepping a scheduler before its optimizer
            warnings.simplefilter("ignore")
            sched.step()

    E = {
        "rmsprop_lr": lambda: torch.optim.RMSprop(p(), lr=-0.01),
        "rmsprop_eps": lambda: torch.optim.RMSprop(p(), eps=-1e-8),
        "rmsprop_momentum": lambda: torch.optim.RMSprop(p(), momentum=-0.9),
        "rmsprop_weight_decay": lambda: torch.optim.RMSprop(p(), weight_decay=-0.1),
        "rmsprop_alpha": lambda: torch.optim.RMSprop(p(), alpha=-0.5),
        "adagrad_lr": lambda: torch.optim.Adagrad(p(), lr=-0.1),
        "adagrad_lr_decay": lambda: torch.optim.Adagrad(p(), lr_decay=-0.5),
        "adagrad_weight_decay": lambda: torch.optim.Adagrad(p(), weight_decay=-1e-3),
        "adagrad_initial_accumulator_value": lambda: torch.optim.Adagrad(p(), initial_accumulator_value=-0.25),
        "adagrad_eps": lambda: torch.optim.Adagrad(p(), eps=-1e-10),
        "onecycle_total_steps_0": lambda: S.OneCycleLR(sgd(), max_lr=0.1, total_steps=0),
        "onecycle_total_steps_negative": lambda: S.OneCycleLR(sgd(), max_lr=0.1, total_steps=-5),
        "onecycle_pct_start": lambda: S.OneCycleLR(sgd(), max_lr=0.1, total_steps=10, pct_start=1.5),
        "onecycle_anneal_strategy": lambda: S.OneCycleLR(sgd(), max_lr=0.1, total_steps=10, anneal_strategy="exp"),
        "onecycle_no_momentum": lambda: S.OneCycleLR(torch.optim.Adagrad(p()), max_lr=0.1, total_steps=10),
        "linear_start_factor": lambda: S.LinearLR(sgd(), start_factor=1.5),
        "linear_end_factor": lambda: S.LinearLR(sgd(), end_factor=-0.1),
        "linear_zero_start_factor_step": lambda: stepped(S.LinearLR(sgd(), start_factor=0.0)),
        "step_zero_step_size_step": lambda: stepped(S.StepLR(sgd(), step_size=0)),
        "cosine_zero_t_max_step": lambda: stepped(S.CosineAnnealingLR(sgd(), T_max=0)),
        "onecycle_phase_without_steps": lambda: S.OneCycleLR(sgd(), max_lr=0.1, total_steps=10, pct_start=0.1),
    }
    return {k: message(f) for k, f in E.items()}


def main():
    data = problem()
    out = {
        "generated_by": "tools/golden/make_scheduler_golden.py (PyTorch %s); do not edit" % torch.__version__,
        "problem": {k: flat(v) for k, v in data.items()},
        "shapes": [list(s) for s in SHAPES],
        "schedulers": [run_scheduler(data, c) for c in SCHED_CASES],
        "chained": [run_chained(data, c) for c in CHAINED_CASES],
        "optimizers": [run_optimizer(data, c) for c in OPT_CASES],
        "errors": errors(),
    }
    text = json.dumps(out, indent=1)
    # one line per list of numbers
    text = re.sub(r"\[\s+([-+0-9.e,\s]+?)\s+\]", lambda m: "[" + " ".join(m.group(1).split()) + "]", text)
    with open(OUT, "w") as f:
        f.write(text + "\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
