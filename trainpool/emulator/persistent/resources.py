"""PersistentResources' lives: created PROVISIONING, RUNNING, REBOOTING, STOPPING, deleted; and the
replicas of their pools that jobs hold.

States (``PersistentResource.State``, ``aiplatform_v1/types/persistent_resource.py``):
PROVISIONING "the persistent resources is being created", RUNNING "healthy and fully usable",
STOPPING "being deleted", REBOOTING "being rebooted (PR is not available right now but is
expected to be ready again later)". Locally a resource is this machine: it provisions in
:data:`PROVISION_S` and reboots in :data:`REBOOT_S` of the emulator's clock, and its
operation (CreatePersistentResource, RebootPersistentResource, DeletePersistentResource) is done
when it gets there. Changes are made when the resource or its operation is read
(:meth:`Lives.settle`), so no thread waits on them.

- Reboot: "You can reboot any persistent resource that's in the RUNNING or ERROR state ...
  Make sure there's no training jobs running on the persistent resource"
  (https://cloud.google.com/vertex-ai/docs/training/persistent-resource-reboot): any other
  state, or jobs on it, is FAILED_PRECONDITION.
- Delete: "if there are custom jobs running on the persistent resource when you delete it,
  those custom jobs are automatically cancelled before the persistent resource is deleted"
  (https://cloud.google.com/vertex-ai/docs/training/persistent-resource-delete): it is
  STOPPING, its jobs are cancelled, and it is gone (the operation done) once they ended.
- A job naming a resource that does not exist is INVALID_ARGUMENT; one that is not RUNNING
  (PROVISIONING, REBOOTING, STOPPING) is FAILED_PRECONDITION: "[The job] will be run on
  existing machines held by the PersistentResource" (CustomJobSpec.persistent_resource_id),
  and a resource in those states holds none usable.
- Replicas: a job holds its replicas of the resource's pools from its start to its end
  (``ResourcePool.used_replica_count``: "The number of machines currently in use by training
  jobs for this resource pool"); one whose pools are busy waits QUEUED
  (:mod:`trainpool.emulator.jobs.quota`). That a busy pool makes a job wait rather than fail is
  the emulator's reading (``JOB_STATE_QUEUED``: "processing has not yet begun"); Vertex's pages
  do not say it in so many words.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from google.cloud.aiplatform_v1.types import job_state
from google.cloud.aiplatform_v1.types import operation as op_types
from google.cloud.aiplatform_v1.types import persistent_resource as pr
from google.cloud.aiplatform_v1.types import persistent_resource_service as prs
from google.longrunning import operations_pb2
from google.protobuf import empty_pb2

from trainpool.emulator.api.rpc import not_found, precondition
from trainpool.emulator.jobs.manager import TERMINAL, JobManager
from trainpool.emulator.persistent import rules
from trainpool.emulator.records.kinds import CUSTOM_JOBS, PERSISTENT_RESOURCES, TUNING_JOBS
from trainpool.emulator.records.operations import pack
from trainpool.emulator.state import EmulatorState
from trainpool.errors import InputError

State = pr.PersistentResource.State
PROVISION_S = 1.0
"""Seconds (emulator clock) a created resource is PROVISIONING."""
REBOOT_S = 1.0
"""Seconds (emulator clock) a rebooted resource is REBOOTING."""
KIND = PERSISTENT_RESOURCES
JOB_KINDS = (CUSTOM_JOBS, TUNING_JOBS)


def resource_name(parent: str, resource_id: str) -> str:
    return f"{parent}/{KIND.collection}/{resource_id}"


def parent_of(job_name: str) -> str:
    return "/".join(job_name.split("/")[:4])


def pool_key(name: str, pool_id: str) -> str:
    return f"{name}#{pool_id}"


class Lives:
    """The persistent resources of one emulator (its server makes one and hands it to the
    JobService, the PipelineService and the PersistentResourceService)."""

    def __init__(self, state: EmulatorState, manager: JobManager) -> None:
        self.state = state
        self.manager = manager
        self.records = state.records
        self.quota = manager.quota
        self.quota.claim = self.claim
        state.operations.refresh_with(
            lambda name: f"/{KIND.collection}/" in name, self._refresh_operation
        )

    # reading
    def settle(self, resource: Any) -> Any | None:
        """``resource`` brought up to date (PROVISIONING or REBOOTING long enough: RUNNING;
        STOPPING with no job left on it: deleted, None), with its pools' used replicas."""
        now = self.state.clock.now()
        since = resource.update_time
        wait = {State.PROVISIONING: PROVISION_S, State.REBOOTING: REBOOT_S}.get(resource.state)
        if wait is not None and since is not None and now - since >= timedelta(seconds=wait):

            def run(record: Any) -> None:
                if record.state in (State.PROVISIONING, State.REBOOTING):
                    if record.state == State.PROVISIONING:
                        record.start_time = now
                    record.state = State.RUNNING

            resource = self.records.update(KIND, resource.name, run)
        elif resource.state == State.STOPPING and not self.jobs_on(resource.name):
            self.records.delete(KIND, resource.name)
            return None
        for pool in resource.resource_pools:
            pool.used_replica_count = max(
                0, self.quota.in_use.get(pool_key(resource.name, pool.id), 0)
            )
        return resource

    def get(self, name: str) -> Any:
        """The resource, settled; NOT_FOUND when there is none."""
        found = self.records.get(KIND, name)
        settled = self.settle(found) if found is not None else None
        if settled is None:
            raise not_found(f"PersistentResource {name} not found.")
        return settled

    def jobs_on(self, name: str) -> list[str]:
        """Unfinished jobs (CustomJobs and HyperparameterTuningJobs) that run on ``name``."""
        resource_id = name.rsplit("/", 1)[-1]
        parent = parent_of(name)
        found = []
        for kind in JOB_KINDS:
            for job_name in self.records.names(kind, not_states=TERMINAL):
                if not job_name.startswith(parent + "/"):
                    continue
                job = self.records.get(kind, job_name)
                if job is None:
                    continue
                spec = job.job_spec if kind is CUSTOM_JOBS else job.trial_job_spec
                if spec.persistent_resource_id == resource_id:
                    found.append(job_name)
        return found

    # jobs
    def check_job(self, parent: str, spec: dict[str, Any], field: str) -> None:
        """A job (its CustomJobSpec as REST JSON) that names a persistent resource: refused
        unless the resource exists, is RUNNING and its pools fit the job's."""
        resource_id = str(spec.get("persistentResourceId", ""))
        if not resource_id:
            return
        at = f"{field}.persistentResourceId"
        if not rules.RESOURCE_ID.fullmatch(resource_id):
            rules.check_id(resource_id, at)
        name = resource_name(parent, resource_id)
        found = self.records.get(KIND, name)
        resource = self.settle(found) if found is not None else None
        if resource is None:
            raise InputError.of(
                at,
                f"{resource_id!r}: there is no PersistentResource {name}; accepted: the id of "
                "a persistent resource in the job's project and location "
                "(ListPersistentResources), or empty for on-demand machines",
            )
        if resource.state != State.RUNNING:
            raise precondition(
                f"The PersistentResource {name} is {State(resource.state).name}; a job runs on "
                "a RUNNING persistent resource. Wait for it, or create the job without "
                "persistent_resource_id."
            )
        rules.fit(resource, spec, field)

    def claim(self, job_name: str, spec: dict[str, Any]) -> dict[str, tuple[int, int]]:
        """The replicas job ``job_name`` holds in each pool of its resource, with the pools'
        capacities (the quota's claim)."""
        resource_id = str(spec.get("persistentResourceId", ""))
        if not resource_id:
            return {}
        name = resource_name(parent_of(job_name), resource_id)
        resource = self.records.get(KIND, name)
        if resource is None:
            return {}
        try:
            need = rules.fit(resource, spec, "job_spec")
        except InputError:
            return {}
        capacities = {p.id: rules.capacity(p) for p in resource.resource_pools}
        return {pool_key(name, i): (n, capacities[i]) for i, n in need.items()}

    # changes
    def create(self, parent: str, resource_id: str, resource: Any) -> Any:
        """``resource`` kept as ``parent``'s ``resource_id``, PROVISIONING (AlreadyExists when
        the name is taken)."""
        resource.name = resource_name(parent, resource_id)
        resource.state = State.PROVISIONING
        now = self.state.clock.now()
        resource.create_time = now
        resource.update_time = now
        for pool in resource.resource_pools:
            pool.used_replica_count = 0
        self.state.db.require_space()
        self.records.insert(KIND, parent, resource)
        return resource

    def reboot(self, name: str) -> operations_pb2.Operation:
        resource = self.get(name)
        if resource.state not in (State.RUNNING, State.ERROR):
            raise precondition(
                f"Cannot reboot PersistentResource {name} in state "
                f"{State(resource.state).name}: a persistent resource is rebooted in state "
                "RUNNING or ERROR."
            )
        busy = self.jobs_on(name)
        if busy:
            raise precondition(
                f"Cannot reboot PersistentResource {name}: jobs run on it "
                f"({', '.join(busy[:5])}); cancel them or wait until they end."
            )

        def rebooting(record: Any) -> None:
            record.state = State.REBOOTING

        self.records.update(KIND, name, rebooting)
        return self.operation(name, prs.RebootPersistentResourceOperationMetadata)

    def delete(self, name: str) -> None:
        """``name`` STOPPING and the jobs on it cancelled; it is gone once they ended."""
        resource = self.get(name)
        if resource.state != State.STOPPING:

            def stopping(record: Any) -> None:
                record.state = State.STOPPING

            self.records.update(KIND, name, stopping)
        for job_name in self.jobs_on(name):
            kind = CUSTOM_JOBS if f"/{CUSTOM_JOBS.collection}/" in job_name else TUNING_JOBS

            def cancelling(record: Any) -> None:
                if record.state not in TERMINAL:
                    record.state = job_state.JobState.JOB_STATE_CANCELLING

            try:
                self.records.update(kind, job_name, cancelling)
            finally:
                self.manager.cancel(job_name)

    # operations
    def operation(self, name: str, metadata_type: Any) -> operations_pb2.Operation:
        now = self.state.clock.now()
        generic = op_types.GenericOperationMetadata(create_time=now, update_time=now)
        metadata = metadata_type(generic_metadata=generic)
        operation = operations_pb2.Operation(
            name=f"{name}/operations/{self.state.new_id('operation')}", metadata=pack(metadata)
        )
        self.state.operations.save(operation)
        return self._refresh_operation(operation)

    def _refresh_operation(self, operation: operations_pb2.Operation) -> operations_pb2.Operation:
        """Done once the resource got where the operation takes it: RUNNING (create,
        reboot), gone (delete)."""
        name = operation.name.rpartition("/operations/")[0]
        found = self.records.get(KIND, name)
        resource = self.settle(found) if found is not None else None
        if operation.metadata.type_url.endswith(".DeleteOperationMetadata"):
            if resource is not None:
                return operation
            response = pack(empty_pb2.Empty())
        elif resource is None or resource.state != State.RUNNING:
            return operation
        else:
            response = pack(resource)
        done = operations_pb2.Operation()
        done.CopyFrom(operation)
        done.done = True
        done.response.CopyFrom(response)
        return done
