"""runtime.args: hyperparameters as Vertex appends them."""

from __future__ import annotations

import pytest

from trainpool.runtime.args import parse_hyperparameters

DEFAULTS = {"epochs": 2, "lr": 0.1, "batch_size": 64, "optimizer": "sgd", "shuffle": True}


def test_equals_and_space_forms_and_float_integers() -> None:
    argv = ["--epochs", "3", "--lr=0.01", "--batch_size=256.0", "--optimizer", "adam"]
    assert parse_hyperparameters(DEFAULTS, argv + ["--shuffle=false"]) == {
        "epochs": 3,
        "lr": 0.01,
        "batch_size": 256,
        "optimizer": "adam",
        "shuffle": False,
    }
    assert parse_hyperparameters(DEFAULTS, ["--batch-size", "32"])["batch_size"] == 32
    assert parse_hyperparameters(DEFAULTS, []) == DEFAULTS


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--batch_size=256.5"],
            "argument --batch-size/--batch_size: '256.5' is not a whole number",
        ),
        (["--epochs=many"], "argument --epochs: 'many' is not a whole number"),
        (["--shuffle=maybe"], "'maybe' is not a boolean; accepted: true/false"),
        (["--momentum=0.9"], "unrecognized arguments: --momentum=0.9"),
    ],
)
def test_bad_values_exit_2_naming_the_argument(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse_hyperparameters(DEFAULTS, argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
