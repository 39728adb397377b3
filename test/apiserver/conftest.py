"""Fixtures the workload and garbage-collection tests share: the official client's APIs over
the module's ``srv`` and a namespace per test."""

import pytest
from kubernetes import client

from .testing import api_client


@pytest.fixture(scope="module")
def core(srv):
    return client.CoreV1Api(api_client(srv))


@pytest.fixture(scope="module")
def apps(srv):
    return client.AppsV1Api(api_client(srv))


@pytest.fixture
def ns(core, request):
    name = request.node.name.replace("_", "-")[:50].strip("-").lower()
    core.create_namespace({"metadata": {"name": name}})
    return name
