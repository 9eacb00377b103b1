"""``google.cloud.resourcemanager.v3.Projects``: GetProject, what the Vertex AI SDK asks on the way.

``aiplatform.PipelineJob.submit()`` checks that the pipeline root's bucket belongs to the
project ("bucket squatting"): it compares the bucket's ``projectNumber`` with the project's
number from Cloud Resource Manager (google-cloud-aiplatform ``utils/gcs_utils.py``
``_verify_bucket_ownership`` and ``utils/resource_manager_utils.py`` ``get_project_number``);
``aiplatform.init`` turns a project number into an id the same way (``get_project_id``).
Unanswered, the SDK retries for about a minute and logs a traceback. Locally every project
is number 0, the ``projectNumber`` the Cloud Storage door gives every bucket (one local
store, no projects), and a number asked for is the project ``GOOGLE_CLOUD_PROJECT`` names
(else "local-project").
"""

from __future__ import annotations

import os

from google.cloud.resourcemanager_v3.types import projects as rm

from trainpool.emulator.api.rpc import Service, service
from trainpool.emulator.state import EmulatorState
from trainpool.errors import InputError

SERVICE = "google.cloud.resourcemanager.v3.Projects"
PROJECT_NUMBER = "0"
DEFAULT_PROJECT = "local-project"
DEFAULT_SERVICE_ACCOUNT = f"{PROJECT_NUMBER}-compute@developer.gserviceaccount.com"
"""The project's Compute Engine default service account, ``PROJECT_NUMBER-compute@developer.
gserviceaccount.com``
(https://cloud.google.com/compute/docs/access/service-accounts#default_service_account),
which Vertex gives a PipelineJob that names none (``PipelineJob.service_account``: "If not
specified, the Compute Engine default service account in the project will be used",
google/cloud/aiplatform/v1/pipeline_job.proto)."""


def get_project(request: rm.GetProjectRequest) -> rm.Project:
    kind, _, ident = request.name.partition("/")
    if kind != "projects" or not ident:
        raise InputError.of(
            "name", f"{request.name!r}; accepted: projects/PROJECT_ID or projects/PROJECT_NUMBER"
        )
    project_id = (
        ident if not ident.isdigit() else os.environ.get("GOOGLE_CLOUD_PROJECT", DEFAULT_PROJECT)
    )
    return rm.Project(
        name=f"projects/{PROJECT_NUMBER}",
        project_id=project_id,
        display_name=project_id,
        state=rm.Project.State.ACTIVE,
    )


def handler(state: EmulatorState) -> Service:
    return service(SERVICE, {"GetProject": (get_project, rm.GetProjectRequest, rm.Project)})
