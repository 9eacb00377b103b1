"""The ``trainpool`` command's Typer app.

Each sub-module adds its commands to the one Typer app through ``register(app)``.
Sub-modules import heavy libraries inside their commands, so ``trainpool --help``
stays fast.
"""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="trainpool",
    help="Plan, build, launch and emulate distributed training on Vertex AI.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_MODULES = (
    "plan",  # plan
    "catalog",  # catalog
    "env",  # env
    "emulator",  # emulator
    "jobs",  # jobs list|describe|logs|cancel|report
    "build",  # build-image
    "compile",  # compile [--check]
    "publish",  # publish --project P --repository R | --local
    "run",  # run PIPELINE --local
    "submit",  # submit PIPELINE --project ...
)

for _name in _MODULES:
    importlib.import_module(f"trainpool.cli.{_name}").register(app)
