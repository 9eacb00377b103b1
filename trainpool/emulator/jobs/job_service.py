"""``google.cloud.aiplatform.v1.JobService``: CustomJob and HyperparameterTuningJob.

Create, Get, List, Cancel and Delete for both kinds. Requests and responses are the real
aiplatform proto types; errors are real gRPC status codes. A created CustomJob runs on
the job engine (:mod:`trainpool.emulator.jobs`), a sweep on :mod:`trainpool.emulator.sweeps`.

What Vertex fills in on Create, the emulator fills the same:

- ``state`` QUEUED, ``create_time``, ``update_time`` (output-only; ``JobManager.create``);
- each pool's boot disk when the request leaves it out (:func:`fill_disk_defaults`):
  ``DiskSpec.boot_disk_type`` "For non-A3U machines, the default value is "pd-ssd", for A3U
  machines, the default value is "hyperdisk-balanced"", ``boot_disk_size_gb`` "(default is
  100GB)" (google/cloud/aiplatform/v1/machine_resources.proto), as ``gcloud ai custom-jobs
  describe`` shows them on a job created without them;
- a CustomJob that names an experiment and no run gets a run of that experiment, written into
  ``job_spec.experiment_run`` (:func:`trainpool.emulator.jobs.job_links.attach_run`).

``service_account`` stays empty when the request names none: a CustomJob then runs as "the
Vertex AI Custom Code Service Agent for the CustomJob's project" (``CustomJobSpec.
service_account``, custom_job.proto), which Vertex does not write into the job.
"""

from __future__ import annotations

from typing import Any

from google.cloud.aiplatform_v1.types import custom_job as cj
from google.cloud.aiplatform_v1.types import hyperparameter_tuning_job as hptj
from google.cloud.aiplatform_v1.types import job_service as js
from google.cloud.aiplatform_v1.types.job_state import JobState
from google.longrunning import operations_pb2
from google.protobuf import empty_pb2

from trainpool.emulator.api import requests
from trainpool.emulator.api.rpc import Service, precondition, service, typed
from trainpool.emulator.jobs import job_links
from trainpool.emulator.jobs.logs import JobLog
from trainpool.emulator.jobs.manager import TERMINAL, JobManager
from trainpool.emulator.metadata.metadata_records import MetadataRecords
from trainpool.emulator.persistent.resources import Lives
from trainpool.emulator.records.kinds import CUSTOM_JOBS, TUNING_JOBS, Kind
from trainpool.emulator.state import EmulatorState
from trainpool.emulator.sweeps.sweep import run_tuning_job, study_spec_rest
from trainpool.spec.normalize import job_spec_rest

SERVICE = "google.cloud.aiplatform.v1.JobService"
BOOT_DISK_TYPE = "pd-ssd"
A3U_BOOT_DISK_TYPE = "hyperdisk-balanced"
BOOT_DISK_SIZE_GB = 100


def fill_disk_defaults(spec: Any) -> None:
    """Each pool of ``spec`` (a ``CustomJobSpec``) that has a machine gets Vertex's boot disk
    defaults where it names none (module docstring); an empty pool (``{}``) stays empty."""
    for pool in cj.CustomJobSpec.pb(spec).worker_pool_specs:
        machine = pool.machine_spec.machine_type
        if not machine:
            continue
        if not pool.disk_spec.boot_disk_type:
            a3u = machine.startswith("a3-ultragpu")
            pool.disk_spec.boot_disk_type = A3U_BOOT_DISK_TYPE if a3u else BOOT_DISK_TYPE
        if not pool.disk_spec.boot_disk_size_gb:
            pool.disk_spec.boot_disk_size_gb = BOOT_DISK_SIZE_GB


class JobService:
    """The methods of JobService: CustomJobs and HyperparameterTuningJobs, run by the
    emulator's :class:`JobManager`."""

    def __init__(
        self, state: EmulatorState, manager: JobManager, lives: Lives, metadata: MetadataRecords
    ) -> None:
        self.state = state
        self.manager = manager
        self.records = state.records
        self.persistent = lives
        """The persistent resources a job may name (``persistentResourceId``)."""
        self.metadata = metadata
        """The ML Metadata an experiment's run is made in (``job_spec.experiment``)."""

    def get(self, name: str, kind: Kind) -> Any:
        return requests.existing(self.records, kind, name)

    def create_custom_job(self, request: js.CreateCustomJobRequest) -> cj.CustomJob:
        requests.check_parent(request.parent)
        job = request.custom_job
        requests.check_display_name(job.display_name, "custom_job.display_name")
        requests.check_labels(job.labels, "custom_job.labels")
        fields = requests.check_fields("custom_job", job)
        spec = job_spec_rest(job.job_spec)
        warnings = requests.check_job_spec(spec)
        location = request.parent.split("/")[3]
        job_links.check(self.state, spec, location, "custom_job.job_spec")
        job_links.check_tensorboard(self.state, spec, location, "custom_job.job_spec")
        self.persistent.check_job(request.parent, spec, "custom_job.job_spec")
        self.manager.check_quota(spec)
        fill_disk_defaults(job.job_spec)
        job = self.manager.create(CUSTOM_JOBS, request.parent, job)
        if spec.get("experiment") and not spec.get("experimentRun"):
            try:
                job = job_links.attach_run(self.state, self.metadata, job)
            except BaseException:
                self.records.delete(CUSTOM_JOBS, job.name)  # no job without its run
                raise
            spec["experimentRun"] = job.job_spec.experiment_run
        self._note(job.name, warnings)
        requests.note_fields("custom_job", fields, JobLog(self.manager.files(job.name).log))
        self.manager.run_custom_job(job.name, spec=spec)
        return job

    def _note(self, name: str, warnings: list[str]) -> None:
        """The request's warnings in the job's log (what Vertex accepts but would not help)."""
        if warnings:
            note = JobLog(self.manager.files(name).log)
            for warning in warnings:
                note(f"warning: {warning}")

    def create_tuning_job(
        self, request: js.CreateHyperparameterTuningJobRequest
    ) -> hptj.HyperparameterTuningJob:
        requests.check_parent(request.parent)
        job = request.hyperparameter_tuning_job
        requests.check_display_name(job.display_name, "hyperparameter_tuning_job.display_name")
        requests.check_labels(job.labels, "hyperparameter_tuning_job.labels")
        fields = requests.check_fields("hyperparameter_tuning_job", job)
        spec = job_spec_rest(job.trial_job_spec)
        warnings = requests.check_job_spec(spec, "hyperparameter_tuning_job.trial_job_spec")
        job_links.check(
            self.state,
            spec,
            request.parent.split("/")[3],
            "hyperparameter_tuning_job.trial_job_spec",
        )
        requests.check_study(
            study_spec_rest(job.study_spec),
            job.max_trial_count,
            job.parallel_trial_count,
            job.max_failed_trial_count,
        )
        self.persistent.check_job(request.parent, spec, "hyperparameter_tuning_job.trial_job_spec")
        self.manager.check_quota(spec)
        fill_disk_defaults(job.trial_job_spec)
        job = self.manager.create(TUNING_JOBS, request.parent, job)
        self._note(job.name, warnings)
        log = JobLog(self.manager.files(job.name).log)
        requests.note_fields("hyperparameter_tuning_job", fields, log)
        run_tuning_job(self.manager, job.name)
        return job

    def list_custom(self, request: js.ListCustomJobsRequest) -> js.ListCustomJobsResponse:
        found, token = requests.list_page(self.records, CUSTOM_JOBS, request)
        return js.ListCustomJobsResponse(custom_jobs=found, next_page_token=token)

    def list_tuning(
        self, request: js.ListHyperparameterTuningJobsRequest
    ) -> js.ListHyperparameterTuningJobsResponse:
        found, token = requests.list_page(self.records, TUNING_JOBS, request)
        return js.ListHyperparameterTuningJobsResponse(
            hyperparameter_tuning_jobs=found, next_page_token=token
        )

    def cancel(self, name: str, kind: Kind) -> empty_pb2.Empty:
        job = self.get(name, kind)
        if job.state in TERMINAL:
            raise precondition(
                f"Cannot cancel {kind.label} {name}: it is already in state {job.state.name}."
            )

        def mark(record: Any) -> None:
            if record.state not in TERMINAL:
                record.state = JobState.JOB_STATE_CANCELLING

        try:
            self.records.update(kind, name, mark)
        finally:
            self.manager.cancel(name)
        return empty_pb2.Empty()

    def delete(self, name: str, kind: Kind) -> operations_pb2.Operation:
        job = self.get(name, kind)
        if job.state not in TERMINAL:
            raise precondition(
                f"Cannot delete {kind.label} {name} in state {job.state.name}: "
                "cancel it and wait until it ends."
            )
        self.records.delete(kind, name)
        return self.state.finished(name)


def handler(
    state: EmulatorState, manager: JobManager, lives: Lives, metadata: MetadataRecords
) -> Service:
    """The JobService handler."""
    jobs = JobService(state, manager, lives, metadata)
    custom, tuning = CUSTOM_JOBS, TUNING_JOBS
    operation, empty = operations_pb2.Operation, empty_pb2.Empty
    tuning_job = hptj.HyperparameterTuningJob
    answers = {
        "CreateCustomJob": (jobs.create_custom_job, cj.CustomJob),
        "GetCustomJob": (lambda r: jobs.get(r.name, custom), cj.CustomJob),
        "ListCustomJobs": (jobs.list_custom, js.ListCustomJobsResponse),
        "CancelCustomJob": (lambda r: jobs.cancel(r.name, custom), empty),
        "DeleteCustomJob": (lambda r: jobs.delete(r.name, custom), operation),
        "CreateHyperparameterTuningJob": (jobs.create_tuning_job, tuning_job),
        "GetHyperparameterTuningJob": (lambda r: jobs.get(r.name, tuning), tuning_job),
        "ListHyperparameterTuningJobs": (
            jobs.list_tuning,
            js.ListHyperparameterTuningJobsResponse,
        ),
        "CancelHyperparameterTuningJob": (lambda r: jobs.cancel(r.name, tuning), empty),
        "DeleteHyperparameterTuningJob": (lambda r: jobs.delete(r.name, tuning), operation),
    }
    return service(SERVICE, typed(js, answers))
