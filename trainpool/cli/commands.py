"""The ``trainpool`` command's Typer app.

Each sub-module adds its commands to the one Typer app through ``register(app)``.
Sub-modules import heavy libraries inside their commands, so ``trainpool --help``
stays fast.
"""

from __future__ import annotations

import typer

from trainpool.cli import (
    build,
    catalog,
    clock,
    compare,
    emulator,
    env,
    jobs,
    models,
    plan,
    publish,
    run,
    schedule,
    submit,
    tensorboard,
)
from trainpool.cli import compile as compile_
from trainpool.cli import exec as exec_

app = typer.Typer(
    name="trainpool",
    help="Plan, build, launch and emulate distributed training on Vertex AI.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

MODULES = (
    plan,  # plan
    catalog,  # catalog
    env,  # env
    emulator,  # emulator
    exec_,  # exec -- COMMAND
    jobs,  # jobs list|describe|logs|cancel|preempt|report
    build,  # build-image
    compile_,  # compile [--check]
    publish,  # publish --project P --repository R | --local
    run,  # run PIPELINE --local
    submit,  # submit PIPELINE --project ... [--schedule CRON]
    schedule,  # schedule list|show|runs|pause|resume|delete
    models,  # models versions|bless (the Model Registry's versions and aliases)
    clock,  # clock show|advance (the emulator's)
    tensorboard,  # tensorboard NAME (an experiment's scalars in TensorBoard)
    compare,  # compare PIPELINE (its runs' param.input:* and metric.*)
)

for _module in MODULES:
    _module.register(app)
