"""A trial's values on the trainer's command line, as Vertex writes them (sweeps/trial_args.py).

Integer-valued parameters (INTEGER, DISCRETE of whole numbers) without ``.0``: Google's
samples parse them with ``type=int`` (vertex-ai-samples @cc0d791,
``notebooks/official/training/distributed_hyperparameter_tuning.ipynb``: DISCRETE ``units``
in {64, 128, 512}; ``hyperparameter_tuning_xgboost.ipynb``: INTEGER ``boost-rounds``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.host_image import HOST_IMAGE, host_image
from fixtures.jobs import wait_job
from fixtures.vertex import PARENT
from google.cloud.aiplatform_v1.types.job_state import JobState

import trainpool.emulator as emulator
from trainpool.emulator.sweeps.trial_args import format_value, integer_valued, trial_spec
from trainpool.vertex.clients import job_client

STUDY = [
    {"parameterId": "batch", "discreteValueSpec": {"values": [16, 32.0]}},
    {"parameterId": "lr", "discreteValueSpec": {"values": [0.5, 1.0]}},
    {"parameterId": "momentum", "doubleValueSpec": {"minValue": 0, "maxValue": 1}},
    {
        "parameterId": "act",
        "categoricalValueSpec": {"values": ["relu"]},
        "conditionalParameterSpecs": [
            {
                "parentCategoricalValues": {"values": ["relu"]},
                "parameterSpec": {
                    "parameterId": "units",
                    "integerValueSpec": {"minValue": 1, "maxValue": 3},
                },
            }
        ],
    },
]


def test_integer_valued_parameters_are_integer_and_whole_discrete_ones() -> None:
    assert integer_valued(STUDY) == {"batch", "units"}


@pytest.mark.parametrize(
    ("value", "integral", "text"),
    [
        (32.0, True, "32"),
        (3, True, "3"),
        (1.0, False, "1.0"),
        (0.001, False, "0.001"),
        (0.5, True, "0.5"),
        ("relu", False, "relu"),
    ],
)
def test_format_value(value: Any, integral: bool, text: str) -> None:
    assert format_value(value, integral) == text


def test_trial_args_follow_the_pools_own_args_in_parameter_order() -> None:
    spec = {"workerPoolSpecs": [{"containerSpec": {"imageUri": "i", "args": ["--epochs=2"]}}]}
    params = {"batch": 32.0, "lr": 1.0, "momentum": 0.25, "act": "relu", "units": 2}
    done = trial_spec(spec, params, integer_valued(STUDY))
    assert done["workerPoolSpecs"][0]["containerSpec"]["args"] == [
        "--epochs=2",
        "--batch=32",
        "--lr=1.0",
        "--momentum=0.25",
        "--act=relu",
        "--units=2",
    ]


TRAINER = """
import argparse, json, os, sys
import hypertune
parser = argparse.ArgumentParser()
parser.add_argument("--batch_size", type=int, required=True)
parser.add_argument("--learning_rate", type=float, required=True)
parser.add_argument("--out", required=True)
args = parser.parse_args()
with open(os.path.join(args.out, os.environ["CLOUD_ML_TRIAL_ID"]), "w") as f:
    json.dump(sys.argv[2:], f)
hypertune.HyperTune().report_hyperparameter_tuning_metric("loss", 1.0 / args.batch_size)
"""


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with emulator.start(tmp_path / "root") as emu:
        host_image(emu.root)
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        yield job_client("us-central1")


@pytest.mark.timeout(90)
def test_a_trainer_parsing_discrete_batch_size_as_int_runs(client: Any, tmp_path: Path) -> None:
    (tmp_path / "trainer.py").write_text(TRAINER)
    (tmp_path / "argv").mkdir()
    command = [sys.executable, str(tmp_path / "trainer.py"), f"--out={tmp_path / 'argv'}"]
    job = {
        "display_name": "discrete",
        "max_trial_count": 2,
        "parallel_trial_count": 2,
        "study_spec": {
            "metrics": [{"metric_id": "loss", "goal": "MINIMIZE"}],
            "parameters": [
                {"parameter_id": "batch_size", "discrete_value_spec": {"values": [16, 32]}},
                {"parameter_id": "learning_rate", "discrete_value_spec": {"values": [0.01]}},
            ],
            "algorithm": "GRID_SEARCH",
        },
        "trial_job_spec": {
            "worker_pool_specs": [
                {
                    "replica_count": 1,
                    "machine_spec": {"machine_type": "n1-standard-4"},
                    "container_spec": {"image_uri": HOST_IMAGE, "command": command},
                }
            ]
        },
    }
    created = client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=job)
    done = wait_job(client.get_hyperparameter_tuning_job, created.name, 80, poll_s=0.1)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    argv = {p.name: json.loads(p.read_text()) for p in (tmp_path / "argv").iterdir()}
    assert argv == {
        "1": ["--batch_size=16", "--learning_rate=0.01"],
        "2": ["--batch_size=32", "--learning_rate=0.01"],
    }
