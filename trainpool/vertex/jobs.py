"""Create, follow, cancel and re-attach to CustomJobs and HyperparameterTuningJobs.

``JobLauncher.run`` is the whole life of one pipeline task's job:

1. adopt the job of this task's current attempt, named in ``gcp_resources`` or labelled
   with the task (a launcher that died after create, or a re-run of a running task),
   but only while it is queued, pending, running, paused, updating or succeeded
   (``spec.states.ADOPTABLE_JOB_STATES``); other live jobs of that attempt are
   duplicates and are cancelled;
2. else (no job yet, or the attempt's job FAILED, was CANCELLED or EXPIRED: a KFP retry
   after a preemption, say) create a new job labelled with the next attempt (transient
   errors retried; before each retry, look for the job an earlier try may have
   created), and write ``gcp_resources`` at once;
4. poll with backoff until a final state, logging each state change;
5. on SIGTERM or SIGINT: cancel the job, wait for it to stop, raise ``JobInterrupted``
   (a signal during steps 1-3 is acted on once they are done, so the job is known).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainpool import config, signals
from trainpool.spec.states import ADOPTABLE_JOB_STATES, job_is_final
from trainpool.vertex import clients, resources, retry
from trainpool.vertex.labels import ATTEMPT_LABEL, TASK_LABEL

CALL_TIMEOUT_S = 60.0


class JobInterrupted(RuntimeError):
    """The launcher was told to stop; the job was cancelled."""


@dataclass(frozen=True)
class Kind:
    """One Vertex job type: its proto, its JobService methods and its gcp_resources type."""

    resource_type: str
    method: str  # JobService methods are create_<method>, get_<method>, ...

    def proto(self) -> Any:
        from google.cloud import aiplatform_v1

        return getattr(aiplatform_v1, self.resource_type)


CUSTOM_JOB = Kind("CustomJob", "custom_job")
TUNING_JOB = Kind("HyperparameterTuningJob", "hyperparameter_tuning_job")


@dataclass(frozen=True)
class Poll:
    """Polling delays: ``initial`` growing by ``multiplier`` up to ``maximum`` seconds."""

    initial: float = 1.0
    maximum: float = 30.0
    multiplier: float = 1.5

    @classmethod
    def default(cls) -> Poll:
        """Every 30 s at most against Vertex; every 0.5 s against the loopback emulator (a
        Get there costs milliseconds), as Google's clients poll it under ``trainpool exec``."""
        return cls(initial=0.5, maximum=0.5) if config.emulator_host() else cls()


def from_rest(kind: Kind, job: dict[str, Any]) -> Any:
    """A REST JSON job (camelCase) as its proto; unknown fields are refused by name."""
    try:
        return kind.proto().from_json(json.dumps(job))
    except Exception as err:
        raise ValueError(f"{kind.resource_type}: {err}; accepted: the Vertex REST fields") from err


def attempt_of(job: Any) -> int:
    """The attempt a job was created for (its label; 1 for a job that has none)."""
    value = str(job.labels.get(ATTEMPT_LABEL, "1"))
    return int(value) if value.isdigit() else 1


def state_name(job: Any) -> str:
    """The job's state as its enum name (``JOB_STATE_RUNNING``)."""
    return str(job.state.name)


def duration_s(job: Any) -> float | None:
    """Seconds from the job's start to its end (None when it never started)."""
    if "start_time" not in job or "end_time" not in job:
        return None
    return float((job.end_time - job.start_time).total_seconds())


def to_rest_json(job: Any) -> dict[str, Any]:
    """A job proto as REST JSON: camelCase, enums as names, unset fields left out."""
    text = type(job).to_json(
        job, use_integers_for_enums=False, including_default_value_fields=False
    )
    return dict(json.loads(text))


class JobLauncher:
    """Talks to JobService for one kind of job in one project and location."""

    def __init__(
        self,
        kind: Kind,
        *,
        project: str,
        location: str,
        client: Any = None,
        backoff: retry.Backoff | None = None,
        poll: Poll | None = None,
        log: Callable[[str], None] = print,
    ) -> None:
        self.kind = kind
        self.location = location
        self.parent = f"projects/{project}/locations/{location}"
        self.client = client if client is not None else clients.job_client(location)
        self.backoff = backoff or retry.Backoff()
        self.poll = poll or Poll.default()
        self.log = log

    def _rpc(self, verb: str, **request: Any) -> Any:
        method = getattr(self.client, f"{verb}_{self.kind.method}")
        return method(**request, retry=None, timeout=CALL_TIMEOUT_S)

    def _call(self, what: str, fn: Callable[[], Any], before_retry: Any = None) -> Any:
        return retry.call(what, fn, self.backoff, self.log, before_retry)

    def labelled(self, task_value: str) -> list[Any]:
        """Every job labelled with this task, oldest first."""
        if not task_value:
            return []
        wanted = f'labels.{TASK_LABEL}="{task_value}"'

        def listing() -> list[Any]:
            method = getattr(self.client, f"list_{self.kind.method}s")
            request = {"parent": self.parent, "filter": wanted}
            return list(method(request=request, retry=None, timeout=CALL_TIMEOUT_S))

        jobs = self._call(f"List {self.kind.resource_type}s", listing)
        mine = [j for j in jobs if j.labels.get(TASK_LABEL) == task_value]
        return sorted(mine, key=lambda j: (j.create_time, j.name))

    def find(self, task_value: str, attempt: int | None = None) -> str | None:
        """The job to adopt for this task: the oldest adoptable one of ``attempt`` (default:
        the task's latest attempt); its other live jobs of that attempt are cancelled."""
        jobs = self.labelled(task_value)
        if not jobs:
            return None
        attempt = attempt or max(attempt_of(j) for j in jobs)
        current = [j for j in jobs if attempt_of(j) == attempt]
        adoptable = [j for j in current if state_name(j) in ADOPTABLE_JOB_STATES]
        if not adoptable:
            return None
        for duplicate in adoptable[1:]:
            if not job_is_final(state_name(duplicate)):
                self.log(f"{duplicate.name}: a duplicate of {adoptable[0].name}; cancelling it")
                self.cancel(duplicate.name)
        return str(adoptable[0].name)

    def next_attempt(self, task_value: str) -> int:
        """1 for a task's first job; one more than its latest attempt after that."""
        return max((attempt_of(j) for j in self.labelled(task_value)), default=0) + 1

    def create(self, job: Any, task_value: str, attempt: int = 1) -> str:
        """Create ``job`` as ``attempt``; a retried create first looks for the job an earlier
        try of this same attempt made."""
        field = self.kind.method
        if task_value:
            job.labels[ATTEMPT_LABEL] = str(attempt)
        created = self._call(
            f"Create{self.kind.resource_type}",
            lambda: self._rpc("create", parent=self.parent, **{field: job}).name,
            before_retry=lambda: self.find(task_value, attempt),
        )
        return str(created)

    def get(self, name: str) -> Any:
        return self._call(f"Get{self.kind.resource_type}", lambda: self._rpc("get", name=name))

    def cancel(self, name: str) -> None:
        """Ask Vertex to cancel; a job that already finished is fine."""
        from google.api_core import exceptions

        try:
            self._call(f"Cancel{self.kind.resource_type}", lambda: self._rpc("cancel", name=name))
        except retry.VertexError as err:
            if not isinstance(err.__cause__, exceptions.FailedPrecondition):
                raise
            self.log(f"{name}: nothing to cancel ({err.__cause__.message})")

    def wait(self, name: str) -> Any:
        """Poll until the job reaches a final state; log each state change."""
        start, delay, last = time.monotonic(), self.poll.initial, ""
        while True:
            job = self.get(name)
            state = state_name(job)
            if state != last:
                self.log(f"{name}: {state} (after {time.monotonic() - start:.0f}s)")
                last = state
            if job_is_final(state):
                return job
            time.sleep(delay)
            delay = min(self.poll.maximum, delay * self.poll.multiplier)

    def adoptable(self, name: str) -> bool:
        return state_name(self.get(name)) in ADOPTABLE_JOB_STATES

    def attach_or_create(self, job: Any, gcp_resources: str, task_value: str) -> str:
        """The task's job: its current attempt's (named in gcp_resources, or labelled with
        the task) while that job is on its way or succeeded; else a new attempt."""
        name = resources.read(gcp_resources, self.kind.resource_type)
        if name and self.adoptable(name):
            self.log(f"re-attaching to {name} (named in {gcp_resources})")
            return name
        if name:
            self.log(f"{name} (named in {gcp_resources}) ended without success: training again")
        name = self.find(task_value) or ""
        if name:
            self.log(f"re-attaching to {name} (labelled {TASK_LABEL}={task_value})")
        else:
            attempt = self.next_attempt(task_value)
            name = self.create(job, task_value, attempt)
            self.log(f"created {name} (attempt {attempt})")
        resources.write(gcp_resources, self.kind.resource_type, name, self.location)
        self.log(f"console: {clients.console_url(name)}")
        return name

    def run(self, job: Any, gcp_resources: str, task_value: str) -> Any:
        """Attach or create, then follow to a final state; cancel on SIGTERM/SIGINT."""
        name = ""
        try:
            with signals.raise_on_signal():
                # A signal during Create must not abandon the call: the server may create
                # the job after we gave up and after a label lookup found nothing, leaving
                # it running unowned. Signals wait until the job is named (bounded by the
                # retry backoff), then cancel it.
                with signals.deferred() as seen:
                    name = self.attach_or_create(job, gcp_resources, task_value)
                if seen:
                    raise signals.Interrupted(seen[0])
                return self.wait(name)
        except signals.Interrupted as sig:
            with signals.deferred():
                name = name or self.find(task_value) or ""
                if not name:
                    raise JobInterrupted(f"received {sig}; no job had been created") from sig
                self.log(f"received {sig}: cancelling {name}")
                self.cancel(name)
                final = state_name(self.wait(name))
            raise JobInterrupted(f"received {sig}; cancelled {name}: {final}") from sig
