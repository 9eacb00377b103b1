"""``google.cloud.aiplatform.v1.VizierService``: studies and their trials, served from the
emulator's sweep engine (:mod:`trainpool.emulator.sweeps.studies`: the same algorithms and
stopping rules as a HyperparameterTuningJob).

Vertex's rules, from the API's own comments (``google/cloud/aiplatform_v1/types/
vizier_service.py`` and ``study.py``, googleapis/python-aiplatform v1.165.1, commit
3219d51921dbc9b65734a793dbab9619d0a7547d) and the SDK that calls it
(``google/cloud/aiplatform/vizier/study.py``):

- a study's ``display_name`` is unique in its location: "It's unique per study. An
  existing study will be returned if the study has the same display name"
  (``Study.create_or_load``, which catches ALREADY_EXISTS from CreateStudy and then calls
  LookupStudy by display name);
- the study spec is checked by the tuning job's rules (:func:`trainpool.plan.validate_study`:
  one rule, one place), problems named under ``study.studySpec``;
- SuggestTrials is a long-running operation (``SuggestTrialsResponse`` with
  ``SuggestTrialsMetadata``), finished when answered. ``suggestion_count`` "must be
  positive"; ``client_id`` is required, and "If multiple SuggestTrialsRequests have the
  same ``client_id``, the service will return the identical suggested Trial if the Trial is
  pending, and provide a new Trial if the last suggested Trial was completed": the client's
  ACTIVE trials come first, then REQUESTED trials (CreateTrial's: "requested, but it has
  not yet been suggested by the service"), then new ones. ``contexts`` are refused (not
  emulated). A grid with no point left, or ``studyStoppingConfig.maxNumTrials`` trials
  made ("If there are more than this many trials, stop the study"), completes the study:
  "The study is done when the service exhausts the parameter search space or
  max_trial_count is reached" (``Study.State.COMPLETED``); the other stopping-config
  fields are accepted, not applied;
- CompleteTrial: the final measurement given, or one selected; ``trial_infeasible`` makes
  the trial INFEASIBLE with ``infeasible_reason`` ("final_measurement will be ignored");
  a trial already SUCCEEDED or INFEASIBLE is FAILED_PRECONDITION (the emulator's answer:
  Vertex does not document one; so for AddTrialMeasurement and StopTrial on such a trial);
- CheckTrialEarlyStoppingState is a long-running operation whose response says
  ``should_stop``; a trial it stops, or one StopTrial stops, is STOPPING ("the Trial should
  stop according to the service");
- ListOptimalTrials: the optimal trial, or the Pareto front of a multi-objective study.

Studies and trials are records (:data:`~trainpool.emulator.records.kinds.STUDIES`,
:data:`~trainpool.emulator.records.kinds.TRIALS`); a study's trial ids count from 1, as
Vertex's do (the SDK reads them with ``int``).
"""

from __future__ import annotations

import re
import threading
from typing import Any

from google.cloud.aiplatform_v1.types import operation as operation_types
from google.cloud.aiplatform_v1.types import study as study_types
from google.cloud.aiplatform_v1.types import vizier_service as vs
from google.longrunning import operations_pb2
from google.protobuf import empty_pb2

from trainpool.emulator.api import requests
from trainpool.emulator.api.rpc import Service, already_exists, not_found, precondition, service
from trainpool.emulator.records.kinds import STUDIES, TRIALS
from trainpool.emulator.records.operations import pack
from trainpool.emulator.state import EmulatorState
from trainpool.emulator.sweeps import studies
from trainpool.emulator.sweeps.sweep import study_spec_rest
from trainpool.errors import InputError, Problem, brief
from trainpool.plan import PlanError
from trainpool.plan.study_rules import validate_study
from trainpool.spec.study import bound

SERVICE = "google.cloud.aiplatform.v1.VizierService"
Study = study_types.Study
Trial = study_types.Trial
TrialState = Trial.State
FINAL = (TrialState.SUCCEEDED, TrialState.INFEASIBLE)
MAX_SUGGESTIONS = 1000
"""The most trials one SuggestTrials asks for (Vizier's limit of trials in a study)."""
_LOCATION = requests.PARENT.pattern
STUDY_NAME = re.compile(rf"({_LOCATION})/studies/([0-9]{{1,18}})")
TRIAL_NAME = re.compile(rf"({_LOCATION}/studies/[0-9]{{1,18}})/trials/([0-9]{{1,18}})")


def check_study_name(name: str, field: str = "name") -> None:
    if len(name) > requests.MAX_NAME or STUDY_NAME.fullmatch(name) is None:
        raise InputError.of(
            field,
            f"{brief(name)} is not a study name; accepted: "
            "projects/PROJECT/locations/LOCATION/studies/STUDY_ID",
        )


def check_trial_name(name: str, field: str = "name") -> None:
    if len(name) > requests.MAX_NAME or TRIAL_NAME.fullmatch(name) is None:
        raise InputError.of(
            field,
            f"{brief(name)} is not a trial name; accepted: "
            "projects/PROJECT/locations/LOCATION/studies/STUDY_ID/trials/TRIAL_ID",
        )


VALUE_SPECS = ("doubleValueSpec", "integerValueSpec", "discreteValueSpec", "categoricalValueSpec")


Default = tuple[dict[str, Any], str, Any]
"""A parameter spec (without its default), the value spec's key, the default value."""


def vizier_fields(spec: dict[str, Any]) -> tuple[dict[str, Any], list[Default]]:
    """``spec`` without the fields that study.proto says are "Currently only supported by
    the Vertex AI Vizier service. Not supported by HyperparameterTuningJob or
    TrainingPipeline" (``observationNoise``, each value spec's ``defaultValue``): the tuning
    job's rules refuse them, a study accepts them (the SDK's pyvizier sends a parameter's
    ``default_value``). Accepted, not applied: suggestions start from the sampler's own
    first points. Also the defaults taken out, to be checked against their parameters."""
    defaults: list[Default] = []
    out = {k: v for k, v in spec.items() if k != "observationNoise"}
    if isinstance(spec.get("parameters"), list):
        out["parameters"] = [
            _strip_one(item, defaults) if isinstance(item, dict) else item
            for item in spec["parameters"]
        ]
    return out, defaults


def _strip_one(item: dict[str, Any], defaults: list[Default]) -> dict[str, Any]:
    """One parameter spec without ``defaultValue`` (its conditional ones too)."""
    item = dict(item)
    for key in VALUE_SPECS:
        value_spec = item.get(key)
        if isinstance(value_spec, dict) and "defaultValue" in value_spec:
            item[key] = {k: v for k, v in value_spec.items() if k != "defaultValue"}
            defaults.append((item, key, value_spec["defaultValue"]))
    conditions = item.get("conditionalParameterSpecs")
    if isinstance(conditions, list):
        item["conditionalParameterSpecs"] = [
            {**c, "parameterSpec": _strip_one(c["parameterSpec"], defaults)}
            if isinstance(c, dict) and isinstance(c.get("parameterSpec"), dict)
            else c
            for c in conditions
        ]
    return item


def check_study_spec(study: Any) -> dict[str, Any]:
    """The study spec as REST JSON, checked by the tuning job's rules (:func:`vizier_fields`
    aside), then each default value against its parameter."""
    spec = study_spec_rest(study.study_spec)
    requests.check_no_nul(spec, "study.study_spec")
    checked, defaults = vizier_fields(spec)
    try:
        validate_study(checked, max_trial_count=1, parallel_trial_count=1)
    except PlanError as err:
        raise InputError(
            [Problem(f"study.{p.field}" if p.field else "study", p.message) for p in err.problems]
        ) from err
    problems = []
    for item, key, default in defaults:
        if key == "integerValueSpec" and isinstance(default, str):  # int64 in JSON: text
            default = float(default) if default.lstrip("-").isdigit() else default
        if (why := value_problem(item, default)) is not None:
            where = f"study.studySpec.parameters[{item.get('parameterId')}]"
            problems.append(Problem(f"{where}.{key}.defaultValue", why))
    if problems:
        raise InputError(problems)
    return spec


def _known_parameters(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    pending = list(spec.get("parameters", []))
    while pending:
        item = pending.pop()
        found[item["parameterId"]] = item
        pending += [c["parameterSpec"] for c in item.get("conditionalParameterSpecs", [])]
    return found


def value_problem(spec: dict[str, Any], value: Any) -> str | None:
    """Why ``value`` is not one the parameter ``spec`` (REST JSON) allows; None when it is."""
    if "categoricalValueSpec" in spec:
        allowed = [str(v) for v in spec["categoricalValueSpec"].get("values", [])]
        if isinstance(value, str) and value in allowed:
            return None
        return f"{brief(value)}; accepted: one of {allowed}"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return f"{brief(value)}; accepted: a number"
    if "discreteValueSpec" in spec:
        values = [float(v) for v in spec["discreteValueSpec"].get("values", [])]
        return None if float(value) in values else f"{value!r}; accepted: one of {values}"
    kind = "integerValueSpec" if "integerValueSpec" in spec else "doubleValueSpec"
    bounds = spec.get(kind, {})
    low, high = float(bound(bounds, "minValue")), float(bound(bounds, "maxValue"))
    if kind == "integerValueSpec" and float(value) != int(value):
        return f"{value!r}; accepted: a whole number from {low:g} to {high:g}"
    if not low <= float(value) <= high:
        return f"{value!r}; accepted: {low:g} to {high:g}"
    return None


class VizierService:
    def __init__(self, state: EmulatorState) -> None:
        self.state = state
        self.records = state.records
        self._lock = threading.RLock()

    # -- studies ------------------------------------------------------------------------

    def study(self, name: str, field: str = "name") -> Any:
        check_study_name(name, field)
        found = self.records.get(STUDIES, name)
        if found is None:
            raise not_found(f"Study {name} not found.")
        return found

    def _named(self, parent: str, display_name: str) -> Any | None:
        token = ""
        while True:
            page, token = self.records.page(STUDIES, parent, page_size=1000, page_token=token)
            for found in page:
                if found.display_name == display_name:
                    return found
            if not token:
                return None

    def create_study(self, request: vs.CreateStudyRequest) -> Any:
        requests.check_parent(request.parent)
        study: Any = request.study
        requests.check_display_name(study.display_name, "study.display_name")
        check_study_spec(study)
        with self._lock:
            taken = self._named(request.parent, study.display_name)
            if taken is not None:
                raise already_exists(
                    f"A study with display_name {study.display_name!r} already exists in "
                    f"{request.parent}: {taken.name}",
                )
            made = Study(
                name=f"{request.parent}/{STUDIES.collection}/{self.state.new_id('study')}",
                display_name=study.display_name,
                study_spec=study.study_spec,
                state=Study.State.ACTIVE,
                create_time=self.state.clock.now(),
            )
            return self.records.insert(STUDIES, request.parent, made)

    def list_studies(self, request: vs.ListStudiesRequest) -> vs.ListStudiesResponse:
        requests.check_parent(request.parent)  # ListStudiesRequest has no filter
        found, token = self.records.page(
            STUDIES, request.parent, page_size=request.page_size, page_token=request.page_token
        )
        return vs.ListStudiesResponse(studies=found, next_page_token=token)

    def lookup_study(self, request: vs.LookupStudyRequest) -> Any:
        requests.check_parent(request.parent)
        if not request.display_name:
            raise InputError.of("display_name", "missing; accepted: a study's display name")
        found = self._named(request.parent, request.display_name)
        if found is None:
            raise not_found(
                f"No study with display_name {request.display_name!r} in {request.parent}."
            )
        return found

    def delete_study(self, request: vs.DeleteStudyRequest) -> empty_pb2.Empty:
        with self._lock:
            self.study(request.name)
            for trial in self._trials(request.name):
                self.records.delete(TRIALS, trial.name)
            self.records.delete(STUDIES, request.name)
        return empty_pb2.Empty()

    # -- trials -------------------------------------------------------------------------

    def trial(self, name: str, field: str = "name") -> Any:
        check_trial_name(name, field)
        found = self.records.get(TRIALS, name)
        if found is None:
            raise not_found(f"Trial {name} not found.")
        return found

    def _trials(self, study: str) -> list[Any]:
        found: list[Any] = []
        token = ""
        while True:
            page, token = self.records.page(TRIALS, study, page_size=1000, page_token=token)
            found += page
            if not token:
                return found

    def _new_trial(self, study: str, trial: Any) -> Any:
        key = f"vizier.trials:{study}"
        number = int(self.state.db.setting(key) or 0) + 1
        self.state.db.set_setting(key, str(number))
        trial.name = f"{study}/{TRIALS.collection}/{number}"
        trial.id = str(number)
        return self.records.insert(TRIALS, study, trial)

    def _spec(self, study: Any) -> dict[str, Any]:
        return study_spec_rest(study.study_spec)

    def suggest_trials(self, request: vs.SuggestTrialsRequest) -> operations_pb2.Operation:
        check_study_name(request.parent, "parent")
        count = request.suggestion_count
        if not 1 <= count <= MAX_SUGGESTIONS:
            raise InputError.of(
                "suggestion_count",
                f"{count}; accepted: 1 to {MAX_SUGGESTIONS} (it must be positive)",
            )
        if not request.client_id:
            raise InputError.of(
                "client_id", "missing; accepted: the identifier of the client asking"
            )
        if request.contexts:
            raise InputError.of(
                "contexts", "not emulated; accepted: none (suggestions from the whole space)"
            )
        study = self.study(request.parent, "parent")
        started = self.state.clock.now()
        with self._lock:
            trials = self._trials(study.name)
            mine = [
                t
                for t in trials
                if t.state == TrialState.ACTIVE and t.client_id == request.client_id
            ]
            chosen = mine[:count]
            for requested in [t for t in trials if t.state == TrialState.REQUESTED]:
                if len(chosen) >= count:
                    break
                chosen.append(self._activate(requested, request.client_id))
            spec = self._spec(study)
            wanted = count - len(chosen)
            room = studies.room(spec, len(trials))
            fresh = studies.suggest(spec, study.name, trials, min(wanted, room)) if wanted else []
            for params in fresh:
                trial = Trial(
                    state=TrialState.ACTIVE,
                    parameters=[
                        Trial.Parameter(parameter_id=k, value=v) for k, v in params.items()
                    ],
                    client_id=request.client_id,
                    start_time=self.state.clock.now(),
                )
                chosen.append(self._new_trial(study.name, trial))
            state = study.state
            if len(fresh) < wanted:
                state = Study.State.COMPLETED
                self.records.update(STUDIES, study.name, _set_state(state), stamp=False)
        ended = self.state.clock.now()
        response = vs.SuggestTrialsResponse(
            trials=chosen, study_state=state, start_time=started, end_time=ended
        )
        metadata = vs.SuggestTrialsMetadata(
            generic_metadata=operation_types.GenericOperationMetadata(
                create_time=started, update_time=ended
            ),
            client_id=request.client_id,
        )
        return self._operation(study.name, response, metadata)

    def _operation(self, resource: str, response: Any, metadata: Any) -> operations_pb2.Operation:
        name = f"{resource}/operations/{self.state.new_id('operation')}"
        return self.state.operations.save(
            operations_pb2.Operation(
                name=name, done=True, response=pack(response), metadata=pack(metadata)
            )
        )

    def _activate(self, trial: Any, client_id: str) -> Any:
        now = self.state.clock.now()

        def change(stored: Any) -> None:
            stored.state = TrialState.ACTIVE
            stored.client_id = client_id
            stored.start_time = now

        self.records.update(TRIALS, trial.name, change, stamp=False)
        return self.records.require(TRIALS, trial.name)

    def create_trial(self, request: vs.CreateTrialRequest) -> Any:
        study = self.study(request.parent, "parent")
        known = _known_parameters(self._spec(study))
        problems = []
        for index, parameter in enumerate(request.trial.parameters):
            field = f"trial.parameters[{index}].parameter_id"
            if parameter.parameter_id not in known:
                problems.append(
                    Problem(
                        field,
                        f"{brief(parameter.parameter_id)}; accepted: a parameter of the "
                        f"study ({', '.join(sorted(known))})",
                    )
                )
            elif (why := value_problem(known[parameter.parameter_id], parameter.value)) is not None:
                problems.append(Problem(f"trial.parameters[{index}].value", why))
        if problems:
            raise InputError(problems)
        trial = Trial(parameters=request.trial.parameters, state=TrialState.REQUESTED)
        with self._lock:
            return self._new_trial(study.name, trial)

    def get_trial(self, request: vs.GetTrialRequest) -> Any:
        return self.trial(request.name)

    def list_trials(self, request: vs.ListTrialsRequest) -> vs.ListTrialsResponse:
        self.study(request.parent, "parent")
        found, token = self.records.page(
            TRIALS, request.parent, page_size=request.page_size, page_token=request.page_token
        )
        return vs.ListTrialsResponse(trials=found, next_page_token=token)

    def _open(self, name: str, field: str, what: str) -> Any:
        trial = self.trial(name, field)
        if trial.state in FINAL:
            raise precondition(
                f"Trial {name} is {trial.state.name}: {what} only a trial that is not "
                "completed (REQUESTED, ACTIVE or STOPPING)"
            )
        return trial

    def add_measurement(self, request: vs.AddTrialMeasurementRequest) -> Any:
        with self._lock:
            trial = self._open(request.trial_name, "trial_name", "a measurement is added to")
            self.records.update(
                TRIALS,
                trial.name,
                lambda stored: stored.measurements.append(request.measurement),
                stamp=False,
            )
            return self.records.require(TRIALS, trial.name)

    def complete_trial(self, request: vs.CompleteTrialRequest) -> Any:
        with self._lock:
            trial = self._open(request.name, "name", "CompleteTrial completes")
            study = self.study(trial.name.split(f"/{TRIALS.collection}/")[0])
            final: Any = None
            reason = ""
            if request.trial_infeasible:
                reason = request.infeasible_reason or "the client said it is infeasible"
            elif "final_measurement" in request:
                final = request.final_measurement
            else:
                final = studies.final_measurement(self._spec(study), trial)
                if final is None:
                    reason = "completed without any measurement"
            now = self.state.clock.now()

            def change(stored: Any) -> None:
                stored.end_time = now
                if final is not None:
                    stored.state = TrialState.SUCCEEDED
                    stored.final_measurement = final
                else:
                    stored.state = TrialState.INFEASIBLE
                    stored.infeasible_reason = reason

            self.records.update(TRIALS, trial.name, change, stamp=False)
            return self.records.require(TRIALS, trial.name)

    def delete_trial(self, request: vs.DeleteTrialRequest) -> empty_pb2.Empty:
        with self._lock:
            self.trial(request.name)
            self.records.delete(TRIALS, request.name)
        return empty_pb2.Empty()

    def check_early_stopping(
        self, request: vs.CheckTrialEarlyStoppingStateRequest
    ) -> operations_pb2.Operation:
        started = self.state.clock.now()
        with self._lock:
            trial = self.trial(request.trial_name, "trial_name")
            study_name = trial.name.split(f"/{TRIALS.collection}/")[0]
            study = self.study(study_name)
            stop = trial.state == TrialState.STOPPING
            if trial.state not in FINAL and not stop:
                decision = studies.should_stop(
                    self._spec(study), trial, self._trials(study_name), self._stopped(study_name)
                )
                if decision is not None:
                    stop = True
                    metric_id = studies.goals(self._spec(study))[0][0]
                    self._stop(trial.name, _stopping(decision.added, metric_id))
        ended = self.state.clock.now()
        metadata = vs.CheckTrialEarlyStoppingStateMetatdata(
            generic_metadata=operation_types.GenericOperationMetadata(
                create_time=started, update_time=ended
            ),
            study=study_name,
            trial=trial.name,
        )
        response = vs.CheckTrialEarlyStoppingStateResponse(should_stop=stop)
        return self._operation(trial.name, response, metadata)

    def stop_trial(self, request: vs.StopTrialRequest) -> Any:
        with self._lock:
            trial = self._open(request.name, "name", "StopTrial stops")
            self._stop(trial.name, _stopping(None, ""))
            return self.records.require(TRIALS, trial.name)

    def _stopped_key(self, study: str) -> str:
        return f"vizier.stopped:{study}"

    def _stopped(self, study: str) -> set[str]:
        """The study's trials the service stopped (kept beside the records: a Trial that
        completes after STOPPING is SUCCEEDED like any other)."""
        return set(
            filter(None, (self.state.db.setting(self._stopped_key(study)) or "").split("\n"))
        )

    def _stop(self, trial: str, change: Any) -> None:
        study = trial.split(f"/{TRIALS.collection}/")[0]
        self.records.update(TRIALS, trial, change, stamp=False)
        stopped = self._stopped(study) | {trial}
        self.state.db.set_setting(self._stopped_key(study), "\n".join(sorted(stopped)))

    def list_optimal_trials(self, request: vs.ListOptimalTrialsRequest) -> Any:
        study = self.study(request.parent, "parent")
        found = studies.optimal(self._spec(study), self._trials(study.name))
        return vs.ListOptimalTrialsResponse(optimal_trials=found)


def _set_state(state: Any) -> Any:
    def change(stored: Any) -> None:
        stored.state = state

    return change


def _stopping(added: tuple[float, float] | None, metric_id: str) -> Any:
    """The trial becomes STOPPING; the convex rule's predicted measurement is added."""

    def change(stored: Any) -> None:
        stored.state = TrialState.STOPPING
        if added is not None:
            stored.measurements.append(
                study_types.Measurement(
                    step_count=int(added[0]),
                    metrics=[study_types.Measurement.Metric(metric_id=metric_id, value=added[1])],
                )
            )

    return change


def handler(state: EmulatorState) -> Service:
    vizier = VizierService(state)
    op = operations_pb2.Operation
    return service(
        SERVICE,
        {
            "CreateStudy": (vizier.create_study, vs.CreateStudyRequest, Study),
            "GetStudy": (lambda r: vizier.study(r.name), vs.GetStudyRequest, Study),
            "ListStudies": (vizier.list_studies, vs.ListStudiesRequest, vs.ListStudiesResponse),
            "DeleteStudy": (vizier.delete_study, vs.DeleteStudyRequest, empty_pb2.Empty),
            "LookupStudy": (vizier.lookup_study, vs.LookupStudyRequest, Study),
            "SuggestTrials": (vizier.suggest_trials, vs.SuggestTrialsRequest, op),
            "CreateTrial": (vizier.create_trial, vs.CreateTrialRequest, Trial),
            "GetTrial": (vizier.get_trial, vs.GetTrialRequest, Trial),
            "ListTrials": (vizier.list_trials, vs.ListTrialsRequest, vs.ListTrialsResponse),
            "AddTrialMeasurement": (vizier.add_measurement, vs.AddTrialMeasurementRequest, Trial),
            "CompleteTrial": (vizier.complete_trial, vs.CompleteTrialRequest, Trial),
            "DeleteTrial": (vizier.delete_trial, vs.DeleteTrialRequest, empty_pb2.Empty),
            "CheckTrialEarlyStoppingState": (
                vizier.check_early_stopping,
                vs.CheckTrialEarlyStoppingStateRequest,
                op,
            ),
            "StopTrial": (vizier.stop_trial, vs.StopTrialRequest, Trial),
            "ListOptimalTrials": (
                vizier.list_optimal_trials,
                vs.ListOptimalTrialsRequest,
                vs.ListOptimalTrialsResponse,
            ),
        },
    )
