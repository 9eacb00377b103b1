"""``google.longrunning.Operations``: the operations the emulator's services answered.

Every Google API that returns long-running operations serves this beside itself, on the same
host (the aiplatform, Cloud Build, Artifact Registry and Service Usage clients' operation
polling, gcloud's waiters). GetOperation and ListOperations read
:class:`trainpool.emulator.records.operations.Operations`; WaitOperation waits (at most
:data:`MAX_WAIT_S`) until the operation is done; DeleteOperation forgets one;
CancelOperation of a finished operation does nothing, as the API says ("If the server
doesn't support this method, it returns google.rpc.Code.UNIMPLEMENTED. Clients can use
Operations.GetOperation or other methods to check whether the cancellation succeeded",
google/longrunning/operations.proto), and of one still running is refused: cancel what it
works on (the build) instead.
"""

from __future__ import annotations

import time

from google.longrunning import operations_pb2
from google.protobuf import empty_pb2

from trainpool.emulator.api.rpc import Service, not_found, precondition, service, typed
from trainpool.emulator.records import paging
from trainpool.emulator.records.operations import Operations
from trainpool.emulator.state import EmulatorState
from trainpool.errors import InputError

SERVICE = "google.longrunning.Operations"
MAX_WAIT_S = 60.0
"""The longest a WaitOperation holds its thread (the API lets the server bound it: "the
server may still wait less than the timeout")."""
POLL_S = 0.1


class OperationsService:
    """The methods of ``google.longrunning.Operations`` over the emulator's operations."""

    def __init__(self, operations: Operations) -> None:
        self.operations = operations

    def get(self, request: operations_pb2.GetOperationRequest) -> operations_pb2.Operation:
        if not request.name:
            raise InputError.of("name", "'' is empty; accepted: the operation's name")
        found = self.operations.get(request.name)
        if found is None:
            raise not_found(f"Operation {request.name} not found.")
        return found

    def list_operations(
        self, request: operations_pb2.ListOperationsRequest
    ) -> operations_pb2.ListOperationsResponse:
        if request.filter:
            raise InputError.of(
                "filter",
                f"{request.filter!r}: the emulator does not filter operations; accepted: ''",
            )
        size = paging.page_size(request.page_size)
        after = paging.page_after(request.page_token)
        found, next_token = self.operations.page(request.name, size, after)
        return operations_pb2.ListOperationsResponse(operations=found, next_page_token=next_token)

    def delete(self, request: operations_pb2.DeleteOperationRequest) -> empty_pb2.Empty:
        self.get(operations_pb2.GetOperationRequest(name=request.name))
        self.operations.delete(request.name)
        return empty_pb2.Empty()

    def cancel(self, request: operations_pb2.CancelOperationRequest) -> empty_pb2.Empty:
        found = self.get(operations_pb2.GetOperationRequest(name=request.name))
        if not found.done:
            raise precondition(
                f"Operation {request.name} is still running: the emulator does not cancel "
                "operations; cancel what it works on (the build or the job) instead"
            )
        return empty_pb2.Empty()

    def wait(self, request: operations_pb2.WaitOperationRequest) -> operations_pb2.Operation:
        asked = request.timeout.seconds + request.timeout.nanos / 1e9
        deadline = time.monotonic() + min(asked if asked > 0 else MAX_WAIT_S, MAX_WAIT_S)
        while True:
            found = self.get(operations_pb2.GetOperationRequest(name=request.name))
            if found.done or time.monotonic() >= deadline:
                return found
            time.sleep(POLL_S)


def handler(state: EmulatorState) -> Service:
    """The Operations handler: Get, List, Delete, Cancel and Wait."""
    served = OperationsService(state.operations)
    answers = {
        "GetOperation": (served.get, operations_pb2.Operation),
        "ListOperations": (served.list_operations, operations_pb2.ListOperationsResponse),
        "DeleteOperation": (served.delete, empty_pb2.Empty),
        "CancelOperation": (served.cancel, empty_pb2.Empty),
        "WaitOperation": (served.wait, operations_pb2.Operation),
    }
    return service(SERVICE, typed(operations_pb2, answers))
