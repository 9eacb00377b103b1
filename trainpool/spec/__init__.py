"""Typed data: the cluster request, and its rendering to Vertex REST JSON."""

from trainpool.spec.errors import Problem, SpecError
from trainpool.spec.keys import coerce_ints, to_rest, to_snake
from trainpool.spec.normalize import job_spec_rest, normalize_spec
from trainpool.spec.overrides import apply_overrides
from trainpool.spec.render import render_job_fields, render_job_spec
from trainpool.spec.request import ClusterRequest, Pool, PythonPackage, ReducerPool, load_request

__all__ = [
    "ClusterRequest",
    "Pool",
    "Problem",
    "PythonPackage",
    "ReducerPool",
    "SpecError",
    "apply_overrides",
    "coerce_ints",
    "load_request",
    "job_spec_rest",
    "normalize_spec",
    "render_job_fields",
    "render_job_spec",
    "to_rest",
    "to_snake",
]
