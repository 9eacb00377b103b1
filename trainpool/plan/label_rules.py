"""Vertex's label rules, stated once: the planner, the launcher and the emulator all call them.

Every Vertex resource that has labels (CustomJob, HyperparameterTuningJob, PipelineJob,
a Schedule's embedded PipelineJob, Model, TrainingPipeline) follows Google Cloud's
"Requirements for labels" (https://cloud.google.com/resource-manager/docs/labels-overview
#requirements), which the Vertex protos repeat ("can only contain lowercase letters,
numeric characters, underscores and dashes. International characters are allowed.",
``google/cloud/aiplatform/v1/custom_job.proto`` ``labels``):

- at most 64 labels on a resource;
- a key has 1 to 63 characters and starts with a lowercase letter or an international
  character; a value has 0 to 63 characters;
- both hold only lowercase letters, international characters, digits, ``_`` and ``-``.
  Google's APIs spell this as the regular expressions ``[\\p{Ll}\\p{Lo}][\\p{Ll}\\p{Lo}
  \\p{N}_-]{0,62}`` (keys) and ``[\\p{Ll}\\p{Lo}\\p{N}_-]{0,63}`` (values), e.g. the
  Backup and DR API's ``LabelKeyValPair``; here by Unicode category (``Ll``, ``Lo``, ``N*``);
- keys under ``aiplatform.googleapis.com/`` are Vertex's own system labels ("System
  reserved label keys are prefixed with aiplatform.googleapis.com/ and are immutable",
  ``dataset.proto``); they cannot pass the character rule anyway, and are named as such.

The Vertex protos say keys and values "can be no longer than 64 characters"; the general
rule says 63. 63 is used: what it accepts, Vertex accepts.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any

from trainpool.errors import InputError, Problem, brief

MAX_LABELS = 64
MAX_KEY = 63
MAX_VALUE = 63
RESERVED_PREFIX = "aiplatform.googleapis.com/"
SHOWN = 5
"""At most this many bad labels are named in one refusal (then how many more)."""
KEY_RULE = (
    "a key of 1-63 lowercase letters, international characters, digits, '_' or '-', "
    "starting with a lowercase or international letter"
)
VALUE_RULE = "0-63 lowercase letters, international characters, digits, '_' or '-'"


def _letter(char: str) -> bool:
    return unicodedata.category(char) in ("Ll", "Lo")


def _allowed(char: str) -> bool:
    return char in "_-" or _letter(char) or unicodedata.category(char).startswith("N")


def key_problem(key: object) -> str | None:
    """Why ``key`` cannot be a label key, or None."""
    if not isinstance(key, str):
        return f"key {brief(key)} is a {type(key).__name__}; accepted: {KEY_RULE}"
    if key.startswith(RESERVED_PREFIX):
        return f"key {brief(key)} is reserved for Vertex's system labels; accepted: {KEY_RULE}"
    if not key:
        return f"an empty key; accepted: {KEY_RULE}"
    if len(key) > MAX_KEY:
        return f"key {brief(key, 40)} has {len(key)} characters; accepted: {KEY_RULE}"
    if not _letter(key[0]) or not all(_allowed(c) for c in key):
        return f"key {brief(key)}; accepted: {KEY_RULE}"
    return None


def value_problem(value: object) -> str | None:
    """Why ``value`` cannot be a label value, or None."""
    if not isinstance(value, str):
        return f"value {brief(value)} is a {type(value).__name__}; accepted: {VALUE_RULE}"
    if len(value) > MAX_VALUE:
        return f"value {brief(value, 40)} has {len(value):,} characters; accepted: {VALUE_RULE}"
    if not all(_allowed(c) for c in value):
        return f"value {brief(value)}; accepted: {VALUE_RULE}"
    return None


def label_problems(labels: Any, field: str = "labels") -> list[Problem]:
    """Every way ``labels`` breaks the rules (the first few bad labels, then a count)."""
    if labels is None:
        return []
    if not isinstance(labels, Mapping):
        return [Problem(field, f"{brief(labels)}; accepted: a map of label keys to values")]
    problems = []
    if len(labels) > MAX_LABELS:
        problems.append(Problem(field, f"{len(labels):,} labels; accepted: at most {MAX_LABELS}"))
    bad = []
    for key, value in labels.items():
        problem = key_problem(key)
        if problem is None:
            problem = value_problem(value)
            where = f"{field}.{key}"
        else:
            where = field
        if problem is not None:
            bad.append(Problem(where, problem))
    problems += bad[:SHOWN]
    if len(bad) > SHOWN:
        problems.append(Problem(field, f"and {len(bad) - SHOWN:,} more labels like these"))
    return problems


def check_labels(labels: Any, field: str = "labels") -> None:
    """InputError naming every bad label of ``labels`` (see :func:`label_problems`)."""
    problems = label_problems(labels, field)
    if problems:
        raise InputError(problems)
