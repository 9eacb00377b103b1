"""The readable study dict, to and from Vertex ``StudySpec`` REST JSON.

Readable form (what a pipeline user writes)::

    {"metrics": {"accuracy": "maximize"},
     "parameters": {"lr": {"type": "double", "min": 1e-4, "max": 0.1, "scale": "log"},
                    "batch_size": {"type": "discrete", "values": [32, 64, 128]},
                    "optimizer": {"type": "categorical", "values": ["adam", "sgd"]}},
     "algorithm": "random", "measurement": "best",
     "early_stopping": {"median": {}}}

REST form (what Vertex takes)::

    {"metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}],
     "parameters": [{"parameterId": "lr", "doubleValueSpec": {"minValue": 0.0001, "maxValue": 0.1},
                     "scaleType": "UNIT_LOG_SCALE"}, ...],
     "algorithm": "RANDOM_SEARCH", "measurementSelectionType": "BEST_MEASUREMENT",
     "medianAutomatedStoppingSpec": {}}

``early_stopping`` is one of the ``automated_stopping_spec`` oneof of ``StudySpec``, its
fields in snake_case: ``{"median": {"use_elapsed_duration": bool}}``
(``medianAutomatedStoppingSpec``), ``{"decay_curve": {"use_elapsed_duration": bool}}``
(``decayCurveStoppingSpec``), ``{"convex": {"max_step_count": int, "min_step_count": int,
"min_measurement_count": int, "learning_rate_parameter_name": str, "use_elapsed_duration":
bool, "update_all_stopped_trials": bool}}`` (``convexAutomatedStoppingSpec``); a name alone
(``"median"``) is that rule with its defaults, and ``"none"`` (or ``{"none": {}}``) is no
automated stopping. The fields go to Vertex unchanged.

This module checks shape only (known keys, known names, the fields each type
needs); the rules of Vertex (grid needs no DOUBLE, log needs a positive range…)
are ``trainpool.plan.validate_study``.
"""

from __future__ import annotations

from typing import Any

from trainpool.errors import InputError

GOALS = {"maximize": "MAXIMIZE", "minimize": "MINIMIZE"}
SCALES = {
    "linear": "UNIT_LINEAR_SCALE",
    "log": "UNIT_LOG_SCALE",
    "reverse_log": "UNIT_REVERSE_LOG_SCALE",
}
ALGORITHMS = {"bayesian": "ALGORITHM_UNSPECIFIED", "grid": "GRID_SEARCH", "random": "RANDOM_SEARCH"}
MEASUREMENTS = {"best": "BEST_MEASUREMENT", "last": "LAST_MEASUREMENT"}
VALUE_SPECS = {
    "double": "doubleValueSpec",
    "integer": "integerValueSpec",
    "discrete": "discreteValueSpec",
    "categorical": "categoricalValueSpec",
}
# proto enum numbers, for specs that come from ``Message.to_dict`` (integers for enums)
ENUM_NUMBERS = {
    "goal": {1: "MAXIMIZE", 2: "MINIMIZE"},
    "scaleType": {
        0: "SCALE_TYPE_UNSPECIFIED",
        1: "UNIT_LINEAR_SCALE",
        2: "UNIT_LOG_SCALE",
        3: "UNIT_REVERSE_LOG_SCALE",
    },
    "algorithm": {0: "ALGORITHM_UNSPECIFIED", 2: "GRID_SEARCH", 3: "RANDOM_SEARCH"},
    "measurementSelectionType": {
        0: "MEASUREMENT_SELECTION_TYPE_UNSPECIFIED",
        1: "LAST_MEASUREMENT",
        2: "BEST_MEASUREMENT",
    },
    "observationNoise": {0: "OBSERVATION_NOISE_UNSPECIFIED", 1: "LOW", 2: "HIGH"},
}
STOPPING = {
    "median": "medianAutomatedStoppingSpec",
    "decay_curve": "decayCurveStoppingSpec",
    "convex": "convexAutomatedStoppingSpec",
}
"""The readable rule names and the ``automated_stopping_spec`` oneof's REST fields."""
STOPPING_FIELDS: dict[str, dict[str, tuple[str, type]]] = {
    "median": {"use_elapsed_duration": ("useElapsedDuration", bool)},
    "decay_curve": {"use_elapsed_duration": ("useElapsedDuration", bool)},
    "convex": {
        "max_step_count": ("maxStepCount", int),
        "min_step_count": ("minStepCount", int),
        "min_measurement_count": ("minMeasurementCount", int),
        "learning_rate_parameter_name": ("learningRateParameterName", str),
        "use_elapsed_duration": ("useElapsedDuration", bool),
        "update_all_stopped_trials": ("updateAllStoppedTrials", bool),
    },
}
"""Each rule's readable fields: their REST name and type."""
KINDS = {int: "a whole number", bool: "true or false", str: "a string"}
NO_STOPPING = "none"
_TOP_KEYS = ("metrics", "parameters", "algorithm", "measurement", "early_stopping")
_PARAM_KEYS = {
    "double": ("type", "min", "max", "scale"),
    "integer": ("type", "min", "max", "scale"),
    "discrete": ("type", "values", "scale"),
    "categorical": ("type", "values"),
}


def bound(value_spec: dict[str, Any], key: str) -> Any:
    """``minValue`` or ``maxValue`` of a ``doubleValueSpec`` / ``integerValueSpec``, a missing
    one read as 0: proto3's JSON form leaves out a field that holds its default ("If a field
    has the default value, it is omitted from the JSON by default", protobuf's "ProtoJSON
    Format"), so a bound of 0 sent by a client arrives as no bound at all."""
    return value_spec.get(key, 0)


class StudyError(InputError):
    """A malformed readable study: one problem a line, naming field, value and what is accepted."""


def _choice(problems: list[str], field: str, value: Any, names: dict[str, str]) -> str:
    key = str(value).lower()
    if key not in names:
        problems.append(f"{field}: {value!r} is not accepted; accepted: {', '.join(names)}")
        return ""
    return names[key]


def _unknown(
    problems: list[str], field: str, given: dict[str, Any], known: tuple[str, ...]
) -> None:
    for key in given:
        if key not in known:
            problems.append(f"{field}.{key}: unknown key; accepted: {', '.join(known)}")


def _parameter(problems: list[str], pid: str, spec: Any) -> dict[str, Any]:
    field = f"study.parameters.{pid}"
    if not isinstance(spec, dict):
        problems.append(f"{field}: {spec!r} is not a mapping; accepted: {{'type': ..., ...}}")
        return {}
    kind = str(spec.get("type", "")).lower()
    if kind not in VALUE_SPECS:
        accepted = ", ".join(VALUE_SPECS)
        problems.append(f"{field}.type: {spec.get('type')!r} is not accepted; accepted: {accepted}")
        return {}
    _unknown(problems, field, spec, _PARAM_KEYS[kind])
    out: dict[str, Any] = {"parameterId": pid}
    if kind in ("double", "integer"):
        missing = [k for k in ("min", "max") if k not in spec]
        if missing:
            problems.append(f"{field}: {kind} needs {' and '.join(missing)}; accepted: numbers")
            return {}
        cast = float if kind == "double" else int
        try:
            bounds = {"minValue": cast(spec["min"]), "maxValue": cast(spec["max"])}
        except (TypeError, ValueError):
            problems.append(f"{field}: min {spec['min']!r}, max {spec['max']!r}; accepted: numbers")
            return {}
        out[VALUE_SPECS[kind]] = bounds
    else:
        values = spec.get("values")
        if not isinstance(values, list) or not values:
            problems.append(f"{field}.values: {values!r}; accepted: a non-empty list")
            return {}
        out[VALUE_SPECS[kind]] = {"values": list(values)}
    if "scale" in spec:
        out["scaleType"] = _choice(problems, f"{field}.scale", spec["scale"], SCALES)
    return out


def to_study_spec(study: dict[str, Any]) -> dict[str, Any]:
    """The readable study dict as Vertex ``StudySpec`` REST JSON; raises ``StudyError``."""
    problems: list[str] = []
    if not isinstance(study, dict):
        raise StudyError([f"study: {study!r} is not a mapping; accepted: {{'metrics': ..., ...}}"])
    _unknown(problems, "study", study, _TOP_KEYS)
    metrics = study.get("metrics")
    parameters = study.get("parameters")
    if not isinstance(metrics, dict) or not metrics:
        problems.append(
            f"study.metrics: {metrics!r}; accepted: {{metric_id: 'maximize'|'minimize'}}"
        )
        metrics = {}
    if not isinstance(parameters, dict) or not parameters:
        problems.append(f"study.parameters: {parameters!r}; accepted: {{parameter_id: {{...}}}}")
        parameters = {}
    rest: dict[str, Any] = {
        "metrics": [
            {"metricId": mid, "goal": _choice(problems, f"study.metrics.{mid}", goal, GOALS)}
            for mid, goal in metrics.items()
        ],
        "parameters": [_parameter(problems, pid, spec) for pid, spec in parameters.items()],
        "algorithm": _choice(
            problems, "study.algorithm", study.get("algorithm", "bayesian"), ALGORITHMS
        ),
    }
    if "measurement" in study:
        rest["measurementSelectionType"] = _choice(
            problems, "study.measurement", study["measurement"], MEASUREMENTS
        )
    if "early_stopping" in study:
        rest.update(_stopping(problems, "study.early_stopping", study["early_stopping"]))
    if problems:
        raise StudyError(problems)
    return rest


def _stopping(problems: list[str], field: str, value: Any) -> dict[str, Any]:
    accepted = f"{{rule: {{...}}}} or a rule's name; rules: {', '.join(STOPPING)}, {NO_STOPPING}"
    if isinstance(value, str):
        value = {value: {}}
    if not isinstance(value, dict) or len(value) != 1:
        problems.append(f"{field}: {value!r}; accepted: exactly one {accepted}")
        return {}
    ((name, fields),) = value.items()
    name = str(name).lower()
    if name == NO_STOPPING:
        return {}
    if name not in STOPPING:
        problems.append(f"{field}: {name!r} is not a rule; accepted: {accepted}")
        return {}
    if fields is None:
        fields = {}
    if not isinstance(fields, dict):
        problems.append(f"{field}.{name}: {fields!r}; accepted: a mapping ({{}} for defaults)")
        return {}
    known = STOPPING_FIELDS[name]
    _unknown(problems, f"{field}.{name}", fields, tuple(known))
    spec: dict[str, Any] = {}
    for key, given in fields.items():
        if key not in known:
            continue
        rest_key, kind = known[key]
        if kind is int and isinstance(given, float) and given == int(given):
            given = int(given)  # KFP hands dict values over as floats
        if not isinstance(given, kind) or (kind is int and isinstance(given, bool)):
            problems.append(f"{field}.{name}.{key}: {given!r}; accepted: {KINDS[kind]}")
            continue
        spec[rest_key] = given
    return {STOPPING[name]: spec}


def with_early_stopping(rest: dict[str, Any], early_stopping: Any) -> dict[str, Any]:
    """``rest`` (a StudySpec in REST JSON) with its ``automated_stopping_spec`` replaced by
    the readable ``early_stopping`` (``"none"``: removed); raises ``StudyError``."""
    problems: list[str] = []
    chosen = _stopping(problems, "early_stopping", early_stopping)
    if problems:
        raise StudyError(problems)
    kept = {k: v for k, v in rest.items() if k not in STOPPING.values()}
    return {**kept, **chosen}


def enum_name(field: str, value: Any) -> str:
    """An enum of the REST form as its name, whether given as a name or a proto number."""
    if isinstance(value, int) and not isinstance(value, bool):
        return ENUM_NUMBERS[field].get(value, str(value))
    return str(value)


def _short(names: dict[str, str], field: str, value: Any) -> str:
    reverse = {v: k for k, v in names.items()}
    name = enum_name(field, value)
    return reverse.get(name, name)


def from_study_spec(rest: dict[str, Any]) -> dict[str, Any]:
    """Vertex ``StudySpec`` REST JSON (enums as names or numbers) as the readable study dict."""
    kinds = {v: k for k, v in VALUE_SPECS.items()}
    parameters: dict[str, Any] = {}
    for spec in rest.get("parameters", []):
        key = next(k for k in spec if k in kinds)
        readable: dict[str, Any] = {"type": kinds[key]}
        if "values" in spec[key]:
            readable["values"] = list(spec[key]["values"])
        else:
            cast = float if key == "doubleValueSpec" else int
            readable["min"] = cast(bound(spec[key], "minValue"))
            readable["max"] = cast(bound(spec[key], "maxValue"))
        if spec.get("scaleType") not in (None, 0, "SCALE_TYPE_UNSPECIFIED"):
            readable["scale"] = _short(SCALES, "scaleType", spec["scaleType"])
        parameters[spec["parameterId"]] = readable
    study: dict[str, Any] = {
        "metrics": {m["metricId"]: _short(GOALS, "goal", m["goal"]) for m in rest["metrics"]},
        "parameters": parameters,
        "algorithm": _short(ALGORITHMS, "algorithm", rest.get("algorithm", 0)),
    }
    if rest.get("measurementSelectionType") not in (
        None,
        0,
        ENUM_NUMBERS["measurementSelectionType"][0],
    ):
        study["measurement"] = _short(
            MEASUREMENTS, "measurementSelectionType", rest["measurementSelectionType"]
        )
    for name, rest_key in STOPPING.items():
        if isinstance(rest.get(rest_key), dict):
            study["early_stopping"] = {name: _readable_stopping(name, rest[rest_key])}
    return study


def _readable_stopping(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """One stopping spec's REST fields (int64 as numbers or strings) in readable form;
    default values (0, false, "") are left out, as the proto prints them or not."""
    readable: dict[str, Any] = {}
    for key, (rest_key, kind) in STOPPING_FIELDS[name].items():
        value = spec.get(rest_key)
        if value:
            readable[key] = int(float(value)) if kind is int else kind(value)
    return readable
