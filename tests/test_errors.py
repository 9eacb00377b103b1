"""One bad-input error: every error trainpool raises for bad input carries problems."""

from __future__ import annotations

import pytest

from trainpool.cluster_env.gcs import GcsUriError, to_path
from trainpool.cluster_env.parse import EnvError
from trainpool.emulator.jobs.packages import PackageError
from trainpool.emulator.jobs.programs import LaunchError
from trainpool.errors import InputError, Problem
from trainpool.images.secrets import CredentialInContext
from trainpool.images.sources import UnsafeArchive
from trainpool.plan import PlanError
from trainpool.spec import SpecError
from trainpool.spec.pipeline_params import ParamError
from trainpool.spec.study import StudyError
from trainpool.vertex.pipelines import SubmitError


def test_problems_are_one_per_line_each_naming_its_field() -> None:
    err = InputError([Problem("a.b", "'x'; accepted: y"), "c: 3 is too big"])
    assert str(err) == "a.b: 'x'; accepted: y\nc: 3 is too big"
    assert [p.field for p in err.problems] == ["a.b", "c"]
    assert str(InputError.of("f", "m")) == "f: m" and isinstance(
        InputError.of("f", "m"), ValueError
    )


@pytest.mark.parametrize(
    "error",
    [
        SpecError,
        PlanError,
        StudyError,
        ParamError,
        SubmitError,
        GcsUriError,
        EnvError,
        UnsafeArchive,
        LaunchError,
        PackageError,
    ],
)
def test_every_bad_input_error_is_an_input_error(error: type[Exception]) -> None:
    assert issubclass(error, InputError)


def test_a_raised_error_keeps_its_field() -> None:
    with pytest.raises(InputError) as caught:
        to_path("gs://../../x", "/tmp/root", "base_output_directory")
    assert caught.value.problems[0].field == "base_output_directory"
    assert isinstance(CredentialInContext("key.json", "a key"), InputError)
