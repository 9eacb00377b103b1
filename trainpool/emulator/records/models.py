"""The Model Registry's records: a model is stored as version "1" of itself.

A model is a record: its ``artifactUri`` names files in the local store, nothing is
served. Every model has one version, "1", aliased "default" and as the request names
(REST reference: https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.models).
Used by ModelService.UploadModel and by a TrainingPipeline's ``modelToUpload``.

A user-chosen model id follows Vertex's rule (``UploadModelRequest.model_id`` and
``TrainingPipeline.model_id``, google/cloud/aiplatform/v1/model_service.proto and
training_pipeline.proto: "This value may be up to 63 characters, and valid characters are
`[a-z0-9_-]`. The first character cannot be a number or hyphen."): :data:`MODEL_ID`.

The version aliases a request names are kept, each checked by ``Model.version_aliases``'s
rule ("The format is [a-z][a-zA-Z0-9-]{0,126}[a-z0-9] to distinguish from version_id. A
default version alias will be created for the first version of the model", model.proto):
:data:`ALIAS`, with "default" added where the request left it out (the one version is the
first). ``models/ID@ALIAS`` names the version by any of them.
"""

from __future__ import annotations

import re

from google.cloud.aiplatform_v1.types import model as model_types

from trainpool.emulator.records.database import Database
from trainpool.emulator.records.kinds import MODELS
from trainpool.emulator.records.resources import AlreadyExists, Records
from trainpool.errors import InputError, brief

VERSION = "1"
MODEL_ID = re.compile(r"^[a-z_][a-z0-9_-]{0,62}$")
MODEL_ID_RULE = (
    "up to 63 lowercase letters, digits, '_' and '-', the first not a digit or '-' "
    "([a-z_][a-z0-9_-]{0,62}, UploadModelRequest.model_id)"
)


ALIAS = re.compile(r"^[a-z][a-zA-Z0-9-]{0,126}[a-z0-9]$")
DEFAULT_ALIAS = "default"


def check_aliases(aliases: list[str], field: str = "model.version_aliases") -> None:
    """InputError for an alias that breaks :data:`ALIAS` or repeats."""
    for index, alias in enumerate(aliases):
        if not ALIAS.fullmatch(alias):
            raise InputError.of(
                f"{field}[{index}]",
                f"{brief(alias)}; accepted: [a-z][a-zA-Z0-9-]{{0,126}}[a-z0-9] (a letter "
                "first, then letters, digits and '-', ending in a lowercase letter or digit)",
            )
        if alias in aliases[:index]:
            raise InputError.of(
                f"{field}[{index}]", f"{brief(alias)} is given twice; accepted: distinct aliases"
            )


def check_id(model_id: str, field: str = "model_id") -> None:
    """InputError unless ``model_id`` is empty (generated) or follows :data:`MODEL_ID`."""
    if model_id and not MODEL_ID.fullmatch(model_id):
        raise InputError.of(field, f"{brief(model_id)}; accepted: {MODEL_ID_RULE}")


def register(
    db: Database, records: Records, parent: str, model: model_types.Model, model_id: str = ""
) -> model_types.Model:
    """Store ``model`` under ``parent`` as version "1"; InputError for a bad field."""
    if not model.display_name:
        raise InputError.of("model.display_name", "'' is empty; accepted: a non-empty name")
    check_id(model_id)
    aliases = list(model.version_aliases)
    check_aliases(aliases)
    model.name = f"{parent}/{MODELS.collection}/{model_id or db.new_id('model')}"
    stamp = records.clock.now()
    model.version_id = VERSION
    model.version_aliases = aliases if DEFAULT_ALIAS in aliases else [*aliases, DEFAULT_ALIAS]
    model.create_time = model.update_time = model.version_create_time = stamp
    try:
        return records.insert(MODELS, parent, model)
    except AlreadyExists:
        raise InputError.of(
            "model_id", f"{brief(model_id)} is taken; accepted: an unused id"
        ) from None


def get(records: Records, name: str) -> model_types.Model | None:
    """The model ``name`` (``models/ID``, ``models/ID@1`` or ``models/ID@ALIAS``), or None."""
    base, _, version = name.partition("@")
    found = records.get(MODELS, base)
    if found is None:
        return None
    return found if version in ("", VERSION) or version in found.version_aliases else None
