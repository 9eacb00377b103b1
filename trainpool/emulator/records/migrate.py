"""Stores of older versions: records written before the one ``resources`` table moved into
it, once; and the indexed fields of a kind that indexes more than it did, written again.

Earlier emulators kept each service's records in a table of its own (``jobs`` with
``jobs_labels``, ``pipeline_jobs``, ``training_pipelines``, ``models``, ``schedules``,
``builds``). Opening such a store moves every record into ``resources`` in creation
order, labels included, and drops the old tables, so a root's history survives the
upgrade.
"""

from __future__ import annotations

from trainpool.emulator.records.database import Database
from trainpool.emulator.records.kinds import BUILDS, KINDS, Kind, parent_of
from trainpool.emulator.records.resources import Records

OLD_TABLES = {
    "jobs": "SELECT kind, proto FROM jobs ORDER BY seq",
    "pipeline_jobs": "SELECT 'pipelineJobs' AS kind, proto FROM pipeline_jobs ORDER BY seq",
    "training_pipelines": (
        "SELECT 'trainingPipelines' AS kind, proto FROM training_pipelines ORDER BY seq"
    ),
    "models": "SELECT 'models' AS kind, proto FROM models ORDER BY seq",
    "schedules": "SELECT 'schedules' AS kind, proto FROM schedules ORDER BY seq",
    "builds": "SELECT 'builds' AS kind, data AS proto FROM builds ORDER BY rowid",
}
ALSO_DROPPED = {"jobs": ("jobs_labels",)}


def move_old_tables(db: Database, records: Records) -> int:
    """Move the records of every old table present into ``records``; how many moved."""
    present = db.tables()
    moved = 0
    for table, query in OLD_TABLES.items():
        if table not in present:
            continue
        for row in db.execute(query):
            kind = KINDS[row["kind"]]
            resource = kind.message.deserialize(row["proto"])
            if kind is BUILDS and not resource.name:
                resource.name = f"projects/{resource.project_id}/builds/{resource.id}"
            if records.get(kind, resource.name) is None:
                records.insert(kind, parent_of(resource.name), resource)
                moved += 1
        for dropped in (table, *ALSO_DROPPED.get(table, ())):
            db.executescript(f"DROP TABLE IF EXISTS {dropped};")
    return moved


def reindex(records: Records, kind: Kind) -> int:
    """Store the indexed fields of every resource of ``kind`` whose rows lack them (a
    store written before the kind indexed them); how many were written."""
    rows = records.db.read(
        "SELECT name, proto FROM resources WHERE kind = ? ORDER BY seq", [kind.collection]
    )
    written = 0
    for row in rows:
        fields = kind.fields_of(kind.message.deserialize(row["proto"]))
        kept = records.db.read(
            "SELECT field, value FROM resource_fields WHERE name = ?", [row["name"]]
        )
        if {r["field"]: r["value"] for r in kept} != fields:
            with records.db.transaction() as conn:
                records.set_fields(conn, row["name"], fields)
            written += 1
    return written
