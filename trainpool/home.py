"""The local store: one directory, and every path in it, named once.

``TRAINPOOL_HOME`` (default ``./.trainpool``, :func:`trainpool.config.default_root`) or an
emulator's ``--root`` is one directory that holds everything local: the emulator's state,
the local Cloud Storage, the local image store, the local runs' transcripts. Every layer
that reads or writes there (the emulator, the local run, the image store, the CLI) asks a
:class:`Home` for the path, so the layout is written here and nowhere else::

    <root>/emulator.sqlite          the emulator's records
    <root>/emulator.lock            held by the one emulator of the root (pid, addresses; 0600)
    <root>/emulator.sock            its Unix socket (mode 0600)
    <root>/storage.token            the storage door's secret (mode 0600)
    <root>/gcs/BUCKET/OBJECT        local Cloud Storage (``cluster_env.gcs.to_path``)
    <root>/storage-uploads/         the Cloud Storage door's uploads in progress
    <root>/images/                  the local image store (``images.image_store``)
    <root>/stand-ins/               prebuilt training images' stand-ins: virtualenvs (emulator),
                                    and pipeline tasks' Pythons and packages
    <root>/pipeline-cache/          pipeline tasks' execution cache (``kfp_local.cache``)
    <root>/jobs/<job id>/           a job's files (:class:`JobFiles`)
    <root>/pipelines/<job id>/      a PipelineJob's spec, run log and its run's files (run/)
    <root>/schedules/<id>/          a Schedule's log: each run started, queued or skipped
    <root>/builds/<build id>/       a Cloud Build's log
    <root>/local-runs/<run>/        a local run's resolved YAML, its tasks' sandboxes and logs;
                                    its transcript beside it

Standard library and ``trainpool.config`` only.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from trainpool.config import default_root

PRIMARY_REPLICA = "workerpool0-0"
"""The replica whose metric file is a trial's measurement (Vertex reads the chief's)."""


@dataclass(frozen=True)
class JobFiles:
    """The files of one job (or one trial of a sweep) under ``<root>/jobs/``::

    job.log                         the emulator's notes on the job
    workerpoolP-I.log               each replica's output
    entries/workerpoolP-I.jsonl     each line of it with its time and stream (log entries)
    hypertune/workerpoolP-I.metrics each replica's CLOUD_ML_HP_METRIC_FILE
    home/workerpoolP-I/             each replica's HOME, fresh at every start
    work/workerpoolP-I/             each replica's working directory, fresh at every start
    python/workerpoolP-I/           each replica's own Python, fresh at every start
    web-access/workerpoolP-I.sock   each replica's shell while it runs (enableWebAccess)
    workerpoolP-env/                pool P's pythonPackageSpec packages (a virtualenv)
    workerpoolP-python/             pool P's Python: its image's environment, read-only
    trial-<n>/                      a sweep's trial, with the same files
    """

    dir: Path

    @property
    def log(self) -> Path:
        """The emulator's own notes on the job."""
        return self.dir / "job.log"

    def replica_log(self, replica: str) -> Path:
        return self.dir / f"{replica}.log"

    def replica_entries(self, replica: str) -> Path:
        """Each line of the replica's output with its time and stream (JSON lines), what
        Cloud Logging serves (:mod:`trainpool.emulator.cloud_logging`)."""
        return self.dir / "entries" / f"{replica}.jsonl"

    def metric_file(self, replica: str = PRIMARY_REPLICA) -> Path:
        return self.dir / "hypertune" / f"{replica}.metrics"

    def replica_home(self, replica: str) -> Path:
        return self.dir / "home" / replica

    def replica_workdir(self, replica: str) -> Path:
        return self.dir / "work" / replica

    def replica_python(self, replica: str) -> Path:
        """The replica's own virtual environment over its pool's Python, fresh at every start
        (``trainpool.emulator.jobs.replica_python.Layer``)."""
        return self.dir / "python" / replica

    def web_access(self, replica: str) -> Path:
        """The socket of the replica's interactive shell (``enableWebAccess``)."""
        return self.dir / "web-access" / f"{replica}.sock"

    def pool_python(self, pool: int) -> Path:
        """Pool ``pool``'s Python prefix: the machine's interpreter with its image's packages
        (``trainpool.emulator.jobs.replica_python.Base``)."""
        return self.dir / f"workerpool{pool}-python"

    def package_env(self, pool: int) -> Path:
        """Pool ``pool``'s installed ``pythonPackageSpec`` packages: a virtualenv over the
        pool's Python (a prebuilt image's environment, or the machine's clean Python)."""
        return self.dir / f"workerpool{pool}-env"

    def trial(self, trial_id: str | int) -> JobFiles:
        return JobFiles(self.dir / f"trial-{trial_id}")

    def log_files(self) -> list[Path]:
        """Every log of the job: job.log first, then replicas, then trials in number order."""

        def order(path: Path) -> tuple[int, int, str]:
            rel = path.relative_to(self.dir)
            trial = int(rel.parts[0].split("-", 1)[1]) if len(rel.parts) > 1 else 0
            return (trial, 0 if path.name == "job.log" else 1, path.name)

        found = list(self.dir.glob("*.log")) + list(self.dir.glob("trial-*/*.log"))
        return sorted(found, key=order)

    def replica_logs(self) -> list[Path]:
        """The replicas' logs of the job itself (not its trials'), by name."""
        return sorted(self.dir.glob("workerpool*-*.log"))


@dataclass(frozen=True)
class Home:
    """Every path under one local store root."""

    root: Path

    @classmethod
    def default(cls) -> Home:
        """``$TRAINPOOL_HOME``, else ``./.trainpool``."""
        return cls(default_root())

    def resolved(self) -> Home:
        return Home(self.root.resolve())

    @property
    def database(self) -> Path:
        return self.root / "emulator.sqlite"

    @property
    def lock(self) -> Path:
        return self.root / "emulator.lock"

    @property
    def emulator_log(self) -> Path:
        """The emulator's own log: what went wrong inside it (an answer says only INTERNAL)."""
        return self.root / "emulator.log"

    @property
    def socket(self) -> Path:
        return self.root / "emulator.sock"

    @property
    def gcs(self) -> Path:
        """``gs://BUCKET/PATH`` lives at ``gcs / BUCKET / PATH``."""
        return self.root / "gcs"

    @property
    def storage_token(self) -> Path:
        """The doors' secret alone (mode 0600): the storage and REST doors take it, gcloud
        sends it as its access token (``CLOUDSDK_AUTH_ACCESS_TOKEN_FILE``)."""
        return self.root / "storage.token"

    @property
    def ca_bundle(self) -> Path:
        """The public roots plus this store's emulator authority (its HTTPS proxy's), for
        the clients ``trainpool exec`` starts; rewritten at every emulator start."""
        return self.root / "ca-bundle.pem"

    @property
    def boto_config(self) -> Path:
        """``BOTO_CONFIG`` under ``trainpool exec``: gsutil's configuration for this store
        (:mod:`trainpool.redirect.https`)."""
        return self.root / "boto.cfg"

    @property
    def written_log_entries(self) -> Path:
        """Log entries clients wrote (Cloud Logging's ``WriteLogEntries``), JSON lines."""
        return self.root / "logging" / "written.jsonl"

    @property
    def gcloud_config(self) -> Path:
        """``CLOUDSDK_CONFIG`` under ``trainpool exec``: gcloud's configuration for this store
        (:mod:`trainpool.redirect.gcloud`)."""
        return self.root / "gcloud"

    @property
    def storage_uploads(self) -> Path:
        return self.root / "storage-uploads"

    @property
    def images(self) -> Path:
        return self.root / "images"

    @property
    def stand_ins(self) -> Path:
        """The stand-ins of Vertex's prebuilt training images: local virtualenvs, one per
        framework and version (``trainpool.emulator.stand_ins.virtualenvs``), their shared
        bases, and pipeline tasks' Pythons and packages."""
        return self.root / "stand-ins"

    @property
    def local_runs(self) -> Path:
        return self.root / "local-runs"

    @property
    def pipeline_cache(self) -> Path:
        """Pipeline tasks' execution cache: a file per cache key (``trainpool.kfp_local.cache``)."""
        return self.root / "pipeline-cache"

    def job(self, job_id: str) -> JobFiles:
        return JobFiles(self.root / "jobs" / job_id)

    def pipeline_run(self, job_id: str) -> Path:
        """A PipelineJob's folder: ``pipeline.json`` (its spec) and ``run.log``."""
        return self.root / "pipelines" / job_id

    def schedule_log(self, schedule_id: str) -> Path:
        """A Schedule's log (``schedules/<id>/schedule.log``): one line per decision."""
        return self.root / "schedules" / schedule_id / "schedule.log"

    def build_log(self, build_id: str) -> Path:
        return self.root / "builds" / build_id / "log.txt"


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the lock file ``path`` (made, with its folder, when missing) for the block: one
    holder at a time across this machine's processes and threads, so two builds of one
    environment or image wait for each other instead of writing it twice."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
