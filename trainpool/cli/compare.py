"""``trainpool compare PIPELINE``: a pipeline's runs side by side, as the console compares them.

Against the emulator when ``VERTEX_AI_EMULATOR_HOST`` is set, else against Vertex AI in
``--project`` / ``--location``. The columns are ``aiplatform.get_pipeline_df``'s (see
:mod:`trainpool.vertex.run_compare`): ``param.input:*`` and ``metric.*``, with each run's state.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from trainpool.cli._common import fail
from trainpool.cli.job_lookup import Location, Project, parent


def compare_command(
    pipeline: Annotated[str, typer.Argument(help="The pipeline's name (pipelineInfo.name).")],
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object per run, every value whole.")
    ] = False,
    project: Project = "",
    location: Location = "us-central1",
) -> None:
    """The pipeline's runs, one a line: RUN, STATE, then its parameters (param.input:NAME) and
    the metrics its tasks logged (metric.KEY), the columns aiplatform.get_pipeline_df has; a
    confusion matrix shows as RxC matrix and an ROC curve as N points (--json: whole)."""
    from google.api_core import exceptions

    from trainpool.errors import InputError
    from trainpool.vertex.run_compare import cell, pipeline_runs

    parent(project, location)  # exits when no project
    try:
        rows = pipeline_runs(pipeline, project, location)
    except InputError as err:
        fail(str(err))
    except exceptions.NotFound:
        fail(f"PIPELINE: no pipeline {pipeline!r} has run in {project}/{location}", 1)
    except exceptions.GoogleAPICallError as err:
        fail(str(err), 1)
    rows.sort(key=lambda row: row.run_name)
    if as_json:
        for row in rows:
            whole = {"run_name": row.run_name, "state": row.state, **row.columns}
            typer.echo(json.dumps(whole, sort_keys=True))
        return
    names = sorted({k for row in rows for k in row.columns}, key=lambda k: (k[0] != "p", k))
    table = [["RUN", "STATE", *names]] + [
        [
            row.run_name,
            row.state,
            *(cell(row.columns[k]) if k in row.columns else "-" for k in names),
        ]
        for row in rows
    ]
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    for line in table:
        cells = (text.ljust(width) for text, width in zip(line, widths, strict=True))
        typer.echo("  ".join(cells).rstrip())


def register(app: typer.Typer) -> None:
    app.command("compare")(compare_command)
