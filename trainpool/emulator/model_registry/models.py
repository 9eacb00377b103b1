"""The Model Registry's records: each Model a list of versions, aliases naming versions.

A model is a record: its ``artifactUri`` names files in the local store, nothing is served.
Each version is a row of its own (``models/ID@N``, kind ``modelVersions``, parent
``models/ID``); the Model's row (``models/ID``, kind ``models``) is a copy of its default
version, so ListModels and ``GetModel(models/ID)`` answer the default version, as Vertex does
(GetModelRequest: "If no version ID or alias is specified, the "default" version will be
returned"). Every change that touches several versions (an alias moved, a version uploaded
with aliases other versions hold) reads and writes them in one SQLite transaction, so two
clients moving the same alias at once leave it on one version, never on two or none.

The rules, with their sources (aiplatform v1 ``model.proto``, ``model_service.proto``; the
model-alias guide, https://cloud.google.com/vertex-ai/docs/model-registry/model-alias):

- version ids are "1", "2", ... per Model, never reused ("an auto-incrementing decimal
  number in string representation");
- the first version gets the ``default`` alias, and "there must be exactly one default
  version alias for a model": ``default`` moves to a version that is given it (the SDK's
  ``is_default_version`` adds it to ``version_aliases``), and it cannot be removed or its
  version deleted ("One version of a model is required to carry the default alias at all
  times");
- an alias names one version of a Model: "If you apply an existing alias used on another
  version, that alias is removed from that version" (it moves);
- an alias matches ``[a-z][a-zA-Z0-9-]{0,126}[a-z0-9]`` "to distinguish from version_id";
- MergeVersionAliases: ``-alias`` removes; an alias both added and removed in one request
  is left as it was ("the 2 operations will be cancelled out");
- DeleteModelVersion: "Deleting the only version in the Model is not allowed. Use
  DeleteModel" (the version's other aliases go with it: no source says otherwise).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field

from google.cloud.aiplatform_v1.types import model as model_types

from trainpool.emulator.records.database import Database
from trainpool.emulator.records.kinds import MODEL_VERSIONS, MODELS
from trainpool.emulator.records.resources import AlreadyExists, Records
from trainpool.errors import InputError, brief
from trainpool.spec.gate import ALIAS  # Vertex's alias rule, written once

VERSION = "1"
MODEL_ID = re.compile(r"^[a-z_][a-z0-9_-]{0,62}$")
"""A user-chosen model id, by Vertex's rule (``UploadModelRequest.model_id`` and
``TrainingPipeline.model_id``, google/cloud/aiplatform/v1/model_service.proto and
training_pipeline.proto: "This value may be up to 63 characters, and valid characters are
`[a-z0-9_-]`. The first character cannot be a number or hyphen.")."""
MODEL_ID_RULE = (
    "up to 63 lowercase letters, digits, '_' and '-', the first not a digit or '-' "
    "([a-z_][a-z0-9_-]{0,62}, UploadModelRequest.model_id)"
)
DEFAULT = "default"
ALIAS_ACCEPTED = (
    "an alias matches [a-z][a-zA-Z0-9-]{0,126}[a-z0-9] (model.proto: a lowercase letter, "
    "then letters, digits and '-', ending in a lowercase letter or digit, 2 to 128 "
    "characters), so it cannot be read as a version id"
)
VERSION_ID = re.compile(r"[1-9][0-9]{0,17}")
MAX_ALIASES = 100
"""How many aliases one request may name (trainpool's bound; Vertex states none)."""


class NotFound(KeyError):
    """No such Model, or no such version of it (NOT_FOUND)."""

    def __str__(self) -> str:
        return str(self.args[0])


class Refused(Exception):
    """A change Vertex's rules do not allow in the Model's present state
    (FAILED_PRECONDITION)."""


def check_id(model_id: str, field: str = "model_id") -> None:
    """InputError unless ``model_id`` is empty (generated) or follows :data:`MODEL_ID`."""
    if model_id and not MODEL_ID.fullmatch(model_id):
        raise InputError.of(field, f"{brief(model_id)}; accepted: {MODEL_ID_RULE}")


def check_alias(alias: str, field: str) -> None:
    """INVALID_ARGUMENT unless ``alias`` is an alias by :data:`ALIAS`."""
    if not isinstance(alias, str) or not ALIAS.fullmatch(alias):
        raise InputError.of(
            field, f"{brief(alias)} is not a version alias; accepted: {ALIAS_ACCEPTED}"
        )


def check_reference(ref: str, field: str = "name") -> None:
    """INVALID_ARGUMENT unless ``ref`` (what follows ``@`` in a Model's name) is a version id
    or an alias."""
    if VERSION_ID.fullmatch(ref) or ALIAS.fullmatch(ref):
        return
    raise InputError.of(
        field,
        f"{brief(ref)} after '@' is neither a version id nor an alias; accepted: "
        f"models/ID@VERSION (a version id: 1, 2, ...) or models/ID@ALIAS ({ALIAS_ACCEPTED})",
    )


def split_name(name: str) -> tuple[str, str]:
    """``(models/ID, VERSION-or-ALIAS)`` of ``models/ID@REF`` (REF "" when there is none)."""
    base, _, ref = name.partition("@")
    return base, ref


def _public(version: model_types.Model, base: str) -> model_types.Model:
    """A version as Vertex answers it: named by its Model (``models/ID``, no ``@``)."""
    version.name = base
    return version


@dataclass
class _Registry:
    """One Model's versions read inside a transaction, and what changed."""

    base: str
    versions: list[model_types.Model]
    last: int
    changed: set[str] = field(default_factory=set)
    added: list[model_types.Model] = field(default_factory=list)
    unstored: set[str] = field(default_factory=set)

    def find(self, ref: str) -> model_types.Model:
        for version in self.versions:
            if ref == version.version_id or ref in version.version_aliases:
                return version
        raise NotFound(f"Model {self.base}@{ref} not found.")

    def default(self) -> model_types.Model:
        return self.find(DEFAULT)

    def give(self, version: model_types.Model, alias: str) -> None:
        """``alias`` on ``version``, taken from any other version that held it."""
        for other in self.versions:
            if other is not version and alias in other.version_aliases:
                other.version_aliases = [a for a in other.version_aliases if a != alias]
                self.changed.add(other.version_id)
        if alias not in version.version_aliases:
            version.version_aliases = [*version.version_aliases, alias]
            self.changed.add(version.version_id)


def _rows(conn: sqlite3.Connection, kind_collection: str, where: str, value: str) -> list[bytes]:
    found = conn.execute(
        f"SELECT proto FROM resources WHERE kind = ? AND {where} = ? ORDER BY seq",
        (kind_collection, value),
    ).fetchall()
    return [row[0] for row in found]


def _last_key(base: str) -> str:
    return f"model-last-version:{base}"


def _load(conn: sqlite3.Connection, base: str) -> _Registry:
    """``base``'s versions as stored (a store from before versions: its Model as version
    "1"); NotFound when there is no such Model."""
    rows = _rows(conn, MODEL_VERSIONS.collection, "parent", base)
    versions = [MODEL_VERSIONS.message.deserialize(row) for row in rows]
    unstored: set[str] = set()
    if not versions:
        model_rows = _rows(conn, MODELS.collection, "name", base)
        if not model_rows:
            raise NotFound(f"Model {base} not found.")
        only = MODELS.message.deserialize(model_rows[0])
        only.version_id = only.version_id or VERSION
        only.version_aliases = list(only.version_aliases) or [DEFAULT]
        versions = [only]
        unstored.add(only.version_id)
    for version in versions:
        version.name = f"{base}@{version.version_id}"
    found = conn.execute("SELECT value FROM settings WHERE key = ?", (_last_key(base),)).fetchone()
    last = max([int(found[0]) if found else 0, *(int(v.version_id) for v in versions)])
    return _Registry(base, versions, last, unstored=unstored)


def _save(conn: sqlite3.Connection, registry: _Registry, stamp: object) -> None:
    """Write the versions that changed or were added, and the Model's row (its default
    version), in the caller's transaction."""
    for version in registry.versions:
        if version.version_id in registry.changed and version not in registry.added:
            version.update_time = version.version_update_time = stamp
    for version in registry.versions:
        fresh = version in registry.added or version.version_id in registry.unstored
        if not fresh and version.version_id not in registry.changed:
            continue
        data = MODEL_VERSIONS.message.serialize(version)
        if fresh:
            conn.execute(
                "INSERT INTO resources (kind, name, parent, state, display_name, proto) "
                "VALUES (?, ?, ?, 0, ?, ?)",
                (
                    MODEL_VERSIONS.collection,
                    version.name,
                    registry.base,
                    version.display_name,
                    data,
                ),
            )
        else:
            conn.execute(
                "UPDATE resources SET display_name = ?, proto = ? WHERE name = ?",
                (version.display_name, data, version.name),
            )
        Records.set_labels(conn, version.name, dict(version.labels))
        Records.set_fields(conn, version.name, MODEL_VERSIONS.fields_of(version))
    default = model_types.Model(registry.default())
    default.name = registry.base
    data = MODELS.message.serialize(default)
    conn.execute(
        "UPDATE resources SET display_name = ?, proto = ? WHERE name = ? AND kind = ?",
        (default.display_name, data, registry.base, MODELS.collection),
    )
    Records.set_labels(conn, registry.base, dict(default.labels))
    conn.execute(
        "INSERT INTO settings (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (_last_key(registry.base), str(registry.last)),
    )


def _change(
    records: Records, base: str, change: Callable[[_Registry], model_types.Model]
) -> model_types.Model:
    """``change`` applied to ``base``'s versions in one transaction; what it returns, as
    Vertex answers it."""
    with records.db.transaction() as conn:
        registry = _load(conn, base)
        result = change(registry)
        _save(conn, registry, records.clock.now())
    return _public(model_types.Model(result), base)


def check_aliases(given: list[str], field: str = "model.version_aliases") -> list[str]:
    """``given`` checked and without repeats, in order."""
    if len(given) > MAX_ALIASES:
        raise InputError.of(field, f"{len(given):,} aliases; accepted: at most {MAX_ALIASES}")
    for index, alias in enumerate(given):
        check_alias(alias, f"{field}[{index}]")
    return list(dict.fromkeys(given))


def register(
    db: Database,
    records: Records,
    parent: str,
    model: model_types.Model,
    model_id: str = "",
    parent_model: str = "",
) -> model_types.Model:
    """Store ``model`` under ``parent`` as version "1" of a new Model, or, with
    ``parent_model``, as the next version of that Model; InputError for a bad field,
    NotFound for a ``parent_model`` that is not stored."""
    if not model.display_name:
        raise InputError.of("model.display_name", "'' is empty; accepted: a non-empty name")
    check_id(model_id)
    aliases = check_aliases(list(model.version_aliases), "model.version_aliases")
    stamp = records.clock.now()
    model.create_time = model.update_time = stamp
    model.version_create_time = model.version_update_time = stamp
    if parent_model:
        return _new_version(records, parent, model, model_id, parent_model, aliases)
    model.name = f"{parent}/{MODELS.collection}/{model_id or db.new_id('model')}"
    model.version_id = VERSION
    model.version_aliases = [DEFAULT, *(a for a in aliases if a != DEFAULT)]
    version = model_types.Model(model)
    version.name = f"{model.name}@{VERSION}"

    def also(conn: sqlite3.Connection) -> None:
        conn.execute(
            "INSERT INTO resources (kind, name, parent, state, display_name, proto) "
            "VALUES (?, ?, ?, 0, ?, ?)",
            (
                MODEL_VERSIONS.collection,
                version.name,
                model.name,
                version.display_name,
                MODEL_VERSIONS.message.serialize(version),
            ),
        )
        Records.set_labels(conn, version.name, dict(version.labels))
        Records.set_fields(conn, version.name, MODEL_VERSIONS.fields_of(version))

    try:
        return records.insert(MODELS, parent, model, also)
    except AlreadyExists:
        raise InputError.of(
            "model_id", f"{brief(model_id)} is taken; accepted: an unused id"
        ) from None


def _new_version(
    records: Records,
    parent: str,
    model: model_types.Model,
    model_id: str,
    parent_model: str,
    aliases: list[str],
) -> model_types.Model:
    base, ref = split_name(parent_model)
    owner, _, the_id = base.rpartition(f"/{MODELS.collection}/")
    if ref or owner != parent or not the_id or "/" in the_id:
        raise InputError.of(
            "parent_model",
            f"{brief(parent_model)} is not a Model of {parent}; accepted: "
            f"{parent}/models/ID (a Model of the request's parent, no @)",
        )
    if model_id:
        raise InputError.of(
            "model_id",
            f"{brief(model_id)} with parent_model; accepted: one of them (model_id names a new "
            "Model, parent_model the Model a new version goes to)",
        )

    def add(registry: _Registry) -> model_types.Model:
        registry.last += 1
        version = model_types.Model(model)
        version.version_id = str(registry.last)
        version.name = f"{base}@{version.version_id}"
        version.version_aliases = []
        registry.versions.append(version)
        registry.added.append(version)
        for alias in aliases:
            registry.give(version, alias)
        return version

    return _change(records, base, add)


def get(records: Records, name: str) -> model_types.Model | None:
    """The model ``name`` (``models/ID``: its default version; ``models/ID@VERSION``,
    ``models/ID@ALIAS``), or None."""
    base, ref = split_name(name)
    if not ref:
        return records.get(MODELS, base)
    check_reference(ref)
    for version in versions(records, base) or []:
        if ref == version.version_id or ref in version.version_aliases:
            return version
    return None


def versions(records: Records, base: str) -> list[model_types.Model] | None:
    """Every version of the Model ``base`` in upload order, each named ``base``; None when
    there is no such Model."""
    rows = records.db.read(
        "SELECT proto FROM resources WHERE kind = ? AND parent = ? ORDER BY seq",
        (MODEL_VERSIONS.collection, base),
    )
    if rows:
        return [_public(MODEL_VERSIONS.message.deserialize(r["proto"]), base) for r in rows]
    only = records.get(MODELS, base)
    if only is None:
        return None
    only.version_id = only.version_id or VERSION
    only.version_aliases = list(only.version_aliases) or [DEFAULT]
    return [only]


def page(
    records: Records, base: str, *, filter: str, page_size: int, page_token: str, order_by: str
) -> tuple[list[model_types.Model], str]:
    """One page of ``base``'s versions (ListModelVersions); NotFound for no such Model."""
    if records.get(MODELS, base) is None:
        raise NotFound(f"Model {base} not found.")
    if not records.db.read(
        "SELECT 1 FROM resources WHERE kind = ? AND parent = ? LIMIT 1",
        (MODEL_VERSIONS.collection, base),
    ):
        _change(records, base, lambda registry: registry.default())  # an older store's Model
    found, token = records.page(
        MODEL_VERSIONS,
        base,
        filter=filter,
        page_size=page_size,
        page_token=page_token,
        order_by=order_by,
    )
    return [_public(v, base) for v in found], token


def merge_aliases(records: Records, name: str, given: list[str]) -> model_types.Model:
    """MergeVersionAliases on ``models/ID@REF``: ``alias`` adds (moving it from the version
    that held it), ``-alias`` removes; the version as it is after."""
    base, ref = split_name(name)
    if not ref:
        raise InputError.of(
            "name",
            f"{brief(name)} names no version; accepted: models/ID@VERSION (the version whose "
            "aliases are merged)",
        )
    check_reference(ref)
    if not given:
        raise InputError.of(
            "version_aliases", "empty; accepted: aliases to add, -aliases to remove"
        )
    if len(given) > MAX_ALIASES:
        raise InputError.of(
            "version_aliases", f"{len(given):,} aliases; accepted: at most {MAX_ALIASES}"
        )
    adds: list[str] = []
    removes: list[str] = []
    for index, entry in enumerate(given):
        removing = isinstance(entry, str) and entry.startswith("-")
        alias = entry[1:] if removing else entry
        check_alias(alias, f"version_aliases[{index}]")
        (removes if removing else adds).append(alias)
    both = set(adds) & set(removes)
    adds = [a for a in dict.fromkeys(adds) if a not in both]
    removes = [a for a in dict.fromkeys(removes) if a not in both]

    def merge(registry: _Registry) -> model_types.Model:
        version = registry.find(ref)
        held = [a for a in removes if a in version.version_aliases]
        if DEFAULT in held:
            raise Refused(
                f"the default alias cannot be removed from {base}@{version.version_id}: "
                "there must be exactly one default version alias for a model (model.proto); "
                "accepted: give 'default' to another version, which moves it"
            )
        if held:
            version.version_aliases = [a for a in version.version_aliases if a not in held]
            registry.changed.add(version.version_id)
        for alias in adds:
            registry.give(version, alias)
        return version

    return _change(records, base, merge)


def delete_version(records: Records, name: str) -> str:
    """DeleteModelVersion of ``models/ID@REF``; the deleted version's name (``@ID``)."""
    base, ref = split_name(name)
    if not ref:
        raise InputError.of(
            "name",
            f"{brief(name)} names no version; accepted: models/ID@VERSION (DeleteModel deletes "
            "a whole Model)",
        )
    check_reference(ref)
    with records.db.transaction() as conn:
        registry = _load(conn, base)
        version = registry.find(ref)
        if len(registry.versions) == 1:
            raise Refused(
                f"{base}@{version.version_id} is the Model's only version: \"Deleting the only "
                "version in the Model is not allowed. Use DeleteModel for deleting the Model "
                'instead" (ModelService.DeleteModelVersion)'
            )
        if DEFAULT in version.version_aliases:
            raise Refused(
                f"{base}@{version.version_id} holds the default alias, and one version of a "
                "model is required to carry it at all times (Vertex's model-alias guide); "
                "accepted: move 'default' to another version first (MergeVersionAliases)"
            )
        gone = version.name
        conn.execute(
            "DELETE FROM resources WHERE name = ? AND kind = ?", (gone, MODEL_VERSIONS.collection)
        )
        conn.execute("DELETE FROM resource_labels WHERE name = ?", (gone,))
        conn.execute("DELETE FROM resource_fields WHERE name = ?", (gone,))
        registry.versions.remove(version)
        _save(conn, registry, records.clock.now())
    return gone


def delete(records: Records, base: str) -> bool:
    """DeleteModel: the Model and every version of it; False when there was none."""
    with records.db.transaction() as conn:
        names = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM resources WHERE kind = ? AND parent = ?",
                (MODEL_VERSIONS.collection, base),
            ).fetchall()
        ]
        gone = conn.execute(
            "DELETE FROM resources WHERE name = ? AND kind = ?", (base, MODELS.collection)
        ).rowcount
        for name in [base, *names]:
            conn.execute("DELETE FROM resources WHERE name = ?", (name,))
            conn.execute("DELETE FROM resource_labels WHERE name = ?", (name,))
            conn.execute("DELETE FROM resource_fields WHERE name = ?", (name,))
        conn.execute("DELETE FROM settings WHERE key = ?", (_last_key(base),))
    return bool(gone)


MODEL_FIELDS = ("display_name", "description", "labels")
VERSION_FIELDS = ("version_description", "labels")
"""UpdateModelRequest: "Supported model fields: display_name, description; supported
version-specific fields: version_description. Labels are supported in both scenarios"."""


def update(records: Records, model: model_types.Model, paths: list[str]) -> model_types.Model:
    """UpdateModel: ``models/ID`` (or ``models/ID@-``) changes the Model's fields on every
    version, ``models/ID@VERSION`` that version's; the version as it is after."""
    base, ref = split_name(model.name)
    if not paths:
        raise InputError.of(
            "update_mask",
            f"empty; accepted: some of {', '.join(MODEL_FIELDS)} (the Model) or of "
            f"{', '.join(VERSION_FIELDS)} (a version, named models/ID@VERSION)",
        )
    for path in paths:
        if path not in (*MODEL_FIELDS, *VERSION_FIELDS):
            raise InputError.of(
                "update_mask",
                f"{brief(path)} is not a field UpdateModel changes; accepted: "
                f"{', '.join(MODEL_FIELDS)} (the Model) and {', '.join(VERSION_FIELDS)} "
                "(a version) (model_service.proto, UpdateModelRequest)",
            )
    model_paths = [p for p in paths if p in ("display_name", "description")]
    version_paths = [p for p in paths if p == "version_description"]
    if model_paths and version_paths:
        raise InputError.of(
            "update_mask",
            f'{", ".join(paths)}: "One request cannot update both the model and the version '
            'fields" (UpdateModelRequest); accepted: two requests',
        )
    if ref == "-":
        ref = ""
    if not ref and version_paths and model.version_id:
        ref = model.version_id  # the SDK's update_version sends the version's own Model
    if ref:
        check_reference(ref, "model.name")
    if not ref and version_paths:
        raise Refused(
            f"{', '.join(version_paths)} is a version's field and {model.name} names the "
            'Model: "A model name or model version name fields update mismatch will cause a '
            'precondition error" (UpdateModelRequest); accepted: models/ID@VERSION'
        )
    if ref and model_paths:
        raise Refused(
            f"{', '.join(model_paths)} is the Model's field and {model.name} names a version: "
            '"A model name or model version name fields update mismatch will cause a '
            'precondition error" (UpdateModelRequest); accepted: models/ID'
        )
    if "display_name" in paths and not model.display_name:
        raise InputError.of("model.display_name", "'' is empty; accepted: a non-empty name")

    def change(registry: _Registry) -> model_types.Model:
        targets = [registry.find(ref)] if ref else registry.versions
        for version in targets:
            for path in paths:
                if path == "labels":
                    version.labels.clear()
                    version.labels.update(dict(model.labels))
                else:
                    setattr(version, path, getattr(model, path))
            registry.changed.add(version.version_id)
        return targets[0] if ref else registry.default()

    return _change(records, base, change)
