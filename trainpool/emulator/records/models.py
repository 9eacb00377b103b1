"""The Model Registry's records: a model is stored as version "1" of itself.

A model is a record: its ``artifactUri`` names files in the local store, nothing is
served. Every model has one version, "1", aliased "default" (REST reference:
https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.models).
Used by ModelService.UploadModel and by a TrainingPipeline's ``modelToUpload``.
"""

from __future__ import annotations

import re

from google.cloud.aiplatform_v1.types import model as model_types

from trainpool.emulator.records.database import Database
from trainpool.emulator.records.kinds import MODELS
from trainpool.emulator.records.resources import AlreadyExists, Records
from trainpool.errors import InputError, brief

VERSION = "1"
MODEL_ID = re.compile(r"^[a-z0-9][-a-z0-9]{0,127}$")


def register(
    db: Database, records: Records, parent: str, model: model_types.Model, model_id: str = ""
) -> model_types.Model:
    """Store ``model`` under ``parent`` as version "1"; InputError for a bad field."""
    if not model.display_name:
        raise InputError.of("model.display_name", "'' is empty; accepted: a non-empty name")
    if model_id and not MODEL_ID.fullmatch(model_id):
        raise InputError.of(
            "model_id",
            f"{brief(model_id)}; accepted: lowercase letters, digits and '-', "
            "starting with a letter or digit, at most 128 characters",
        )
    model.name = f"{parent}/{MODELS.collection}/{model_id or db.new_id('model')}"
    stamp = records.clock.now()
    model.version_id = VERSION
    model.version_aliases = ["default"]
    model.create_time = model.update_time = model.version_create_time = stamp
    try:
        return records.insert(MODELS, parent, model)
    except AlreadyExists:
        raise InputError.of(
            "model_id", f"{brief(model_id)} is taken; accepted: an unused id"
        ) from None


def get(records: Records, name: str) -> model_types.Model | None:
    """The model ``name`` (``models/ID``, ``models/ID@1`` or ``models/ID@default``), or None."""
    base, _, version = name.partition("@")
    found = records.get(MODELS, base)
    return found if found is not None and version in ("", VERSION, "default") else None
