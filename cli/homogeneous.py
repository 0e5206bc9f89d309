"""``rates homogeneous``: train bias-free ReLU nets with FLAVORS eq. 1 steepest descent (or Adam) and measure.

Prints a table of end-of-run quantities over the seeds (loss, own-norm soft margin, gamma_1/2/inf of FLAVORS
eq. 13, the spectral margin of eq. 15, accuracies, the first separating step, the largest soft-margin drop
after L < l(0), the homogeneity check); ``--out FILE.json`` also writes the checkpoint history.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from rates.errors import InputError

FORMATS = ("markdown", "latex", "json")


def homogeneous(
    algo: str = typer.Option(..., "--algo", help="{HOMOGENEOUS_ALGORITHMS}"),
    data: str = typer.Option("teacher-student", "--data", help="teacher-student or digits:A,B (e.g. digits:3,6)"),
    width: int = typer.Option(32, "--width", help="hidden width k' (> 0)"),
    depth: int = typer.Option(1, "--depth", help="number of hidden layers (1: 2-homogeneous; D: (D+1)-homogeneous)"),
    freeze_output: bool = typer.Option(False, "--freeze-output", help="freeze the output layer (FLAVORS §4.3)"),
    loss: str = typer.Option("logistic", "--loss", help="exp | logistic"),
    lr: Optional[float] = typer.Option(None, "--lr", help="learning rate eta (default: per algorithm and data)"),
    steps: int = typer.Option(2000, "--steps", help="number of full-batch steps"),
    seeds: str = typer.Option("0..4", "--seeds", help="seeds trained together, as in rates run: a range such as "
                              "0..4 or a list such as 0,3,7"),
    init_scale: float = typer.Option(1.0, "--init-scale", help="initialisation scale alpha (> 0)"),
    init: str = typer.Option("auto", "--init", help="fan-in | width | auto (width for cd, as FLAVORS §4.1)"),
    n_train: Optional[int] = typer.Option(None, "--n-train", help="training points (default 32 teacher, 100 digits)"),
    dim: int = typer.Option(8, "--dim", help="teacher-student input dimension d"),
    teacher_width: int = typer.Option(16, "--teacher-width", help="teacher width k"),
    teacher_active: int = typer.Option(3, "--teacher-active", help="non-zero input weights per teacher neuron"),
    subgradient: str = typer.Option("auto", "--subgradient",
                                    help="gradient (FLAVORS eq. 1 exactly) | two-point (kink-safe estimate) | "
                                         "auto (two-point for cd, whose eq. 1 steps stall at ReLU kinks)"),
    eps: float = typer.Option(1e-8, "--eps", help="Adam precision constant (>= 0)"),
    beta1: float = typer.Option(0.9, "--beta1", help="Adam beta1 in [0, 1)"),
    beta2: float = typer.Option(0.99, "--beta2", help="Adam beta2 in [0, 1)"),
    device: str = typer.Option("auto", "--device", help="auto (cuda when available), cpu or cuda"),
    fmt: str = typer.Option("markdown", "--format", help="markdown | latex | json"),
    out: Optional[Path] = typer.Option(None, "--out", help="write the checkpoint history as JSON here"),
    progress: bool = typer.Option(True, "--progress/--no-progress",
                                  help="progress bar with ETA on stderr (drawn only on a terminal)"),
) -> None:
    """Train homogeneous ReLU nets (FLAVORS) and print the measured margins."""
    from cli.run import parse_seeds
    from rates.numeric.homogeneous.options import (
        INIT_RULES,
        check_algorithm,
        check_device_name,
        check_loss,
        check_optimizer_constants,
        parse_data_spec,
    )

    # every option's own check before torch is imported (seconds): bad input is refused at once
    check_algorithm(algo)
    kind, _ = parse_data_spec(data)
    if width <= 0:
        raise InputError("--width", f"must be a positive integer, got {width}")
    if depth <= 0:
        raise InputError("--depth", f"must be a positive integer, got {depth}")
    check_loss(loss)
    if steps <= 0:
        raise InputError("--steps", f"must be a positive integer, got {steps}")
    seed_list = parse_seeds(0, seeds)
    if init not in (*INIT_RULES, "auto"):
        raise InputError("--init", f"must be fan-in, width or auto, got {init!r}")
    if fmt not in FORMATS:
        raise InputError("--format", f"must be one of {'|'.join(FORMATS)}, got {fmt!r}")
    if out is not None and out.exists() and out.is_dir():
        raise InputError("--out", f"{out} is a directory; give a file name such as run.json")
    signal = ("two-point" if algo == "cd" else "gradient") if subgradient == "auto" else subgradient
    check_optimizer_constants(1.0 if lr is None else lr, eps, beta1, beta2, signal, adam=algo == "adam")
    check_device_name(device)

    # here, not at the top: torch costs seconds that `rates --help` must not pay
    from rates.io import strict_json, write_text_atomic
    from rates.numeric.homogeneous.data import load_dataset
    from rates.numeric.homogeneous.models import relu_network
    from rates.numeric.homogeneous.steepest import make_optimizer
    from rates.numeric.homogeneous.train import TrainConfig, pick_device, train
    from rates.progress import progress_bar, wanted
    from rates.studies.flavors.runs import default_lr
    from rates.studies.flavors.summary import history_table

    rate = default_lr(algo, kind, freeze_output) if lr is None else lr
    make_optimizer(algo, rate, eps, beta1, beta2, signal)  # the study's default rate, checked as a given one
    torch_device = pick_device(device)

    teacher = {"d": dim, "teacher_width": teacher_width, "active": teacher_active}
    dataset = load_dataset(data, seed_list, n_train=n_train, **({} if kind == "digits" else teacher))
    from rates import budget

    budget.check(budget.estimate_homogeneous(len(seed_list), width, depth, int(dataset.input_dim),
                                             int(dataset.X_train.shape[-2]), steps), option="--width",
                 advice="choose a smaller --width, --depth or --seeds")
    rule = ("width" if algo == "cd" else "fan-in") if init == "auto" else init
    net = relu_network(dataset.input_dim, [width] * depth, seed_list, init_scale, init=rule,
                       freeze_output=freeze_output, device=torch_device)
    config = TrainConfig(algo, rate, steps, loss=loss, eps=eps, beta1=beta1, beta2=beta2, subgradient=signal)
    with progress_bar(steps, "steps", wanted(progress)) as advance:
        history = train(net, dataset.to(torch_device), config, advance)
    caption = (f"{algo} (eta={rate:g}) on {dataset.name}, width {width}, depth {depth}"
               f"{', frozen output' if freeze_output else ''}, {loss} loss, alpha={init_scale:g}, {steps} steps, "
               f"subgradient {signal}")
    if bool(history.diverged.all()):
        raise InputError("--lr", f"every run diverged at eta = {rate:g} (the loss overflowed float64); choose a "
                                 "smaller --lr")
    table = history_table(history, caption)
    if out is not None:
        record = history.to_dict()
        record["command"] = {"algo": algo, "data": data, "width": width, "depth": depth,
                             "freeze_output": freeze_output, "init_scale": init_scale, "init": rule, "seeds": seed_list}
        write_text_atomic(out, json.dumps(strict_json(record), indent=1, allow_nan=False) + "\n")
    print(table.render(fmt), end="")


def register(app: typer.Typer) -> None:
    app.command("homogeneous")(homogeneous)
