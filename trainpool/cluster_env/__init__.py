"""The replica environment contract: build what Vertex sets in a replica, and parse it back.

Standard library only; imports nothing else of trainpool.
"""

from trainpool.cluster_env.addresses import local_hosts, vertex_hosts
from trainpool.cluster_env.env import build_env
from trainpool.cluster_env.parse import EnvError, ReplicaContext, parse_env

__all__ = ["EnvError", "ReplicaContext", "build_env", "local_hosts", "parse_env", "vertex_hosts"]
