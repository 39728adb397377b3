"""The evictors against the embedded API server: upstream evictor tests' cases (Eviction with
the job's delete options, Delete, SoftEviction's annotation) plus the policy chosen by pod
label, then job label, then the args; the shared rate limit; the event and the
``descheduler_pods_evicted`` series."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prometheus_client import REGISTRY

from api.extension.eviction import parse_soft_eviction
from descheduler.controllers.migration.evictor import (
    DELETE,
    EVICTION,
    SOFT_EVICTION,
    EvictorInterpreter,
    TooManyEvictionsError,
    trigger_and_reason,
)
from descheduler.controllers.migration.testing import (
    NODE,
    NS,
    FakeRecorder,
    create_job,
    create_pod,
    namespace,
)
from descheduler.controllers.migration.util import LABEL_EVICT_POLICY
from pkg.client.errors import ApiError, is_not_found
from pkg.client.resources import NAMESPACES, POD_DISRUPTION_BUDGETS, POD_MIGRATION_JOBS, PODS
from pkg.client.rest import Client
from pkg.util.clock import FakeClock
from test.apiserver import start
from test.e2e.cluster import install_crds


@pytest.fixture(scope="module")
def server() -> Iterator[Client]:
    with start() as srv:
        client = Client.from_kubeconfig(srv.kubeconfig, qps=-1)
        install_crds(client)
        client.create(NAMESPACES, namespace())
        yield client
        client.close()


@pytest.fixture
def client(server: Client) -> Iterator[Client]:
    yield server
    for resource, ns in ((POD_MIGRATION_JOBS, None), (PODS, NS),
                         (POD_DISRUPTION_BUDGETS, NS)):
        for obj in server.list(resource, ns)["items"]:
            server.delete(resource, obj["metadata"]["name"], ns)


def _gone(client: Client, name: str) -> bool:
    try:
        client.get(PODS, name, NS)
    except ApiError as err:
        return is_not_found(err)
    return False


def _evicted(result: str, node: str = NODE) -> float:
    value = REGISTRY.get_sample_value("descheduler_pods_evicted", {
        "result": result, "strategy": "LowNodeLoad", "namespace": NS, "node": node})
    return value or 0.0


def _block_evictions(client: Client) -> None:
    """A PodDisruptionBudget that allows no eviction of the web pods."""
    client.create(POD_DISRUPTION_BUDGETS, {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": NS},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "web"}}}})


def _interpreter(client: Client, policy: str = EVICTION, qps: float = 100.0,
                 burst: int = 100) -> tuple[EvictorInterpreter, FakeRecorder, FakeClock]:
    recorder, clock = FakeRecorder(), FakeClock()
    return EvictorInterpreter.new(client, policy, qps, burst, recorder, clock), recorder, clock


def test_eviction_policy_evicts_and_reports(client: Client) -> None:
    interpreter, recorder, _ = _interpreter(client)
    pod = create_pod(client, "web-1", node="node-evict")
    job = create_job(client, "job", "web-1", spec={"deleteOptions": {"gracePeriodSeconds": 0}})
    before = _evicted("success", "node-evict")
    interpreter.evict(job, pod)
    assert _gone(client, "web-1")
    assert _evicted("success", "node-evict") == before + 1
    assert recorder.events == [("Pod", "Normal", "Descheduled",
                                'Pod evicted from node "node-evict" by the reason '
                                '"node is overutilized"')]


def test_refused_eviction_is_an_error(client: Client) -> None:
    interpreter, recorder, _ = _interpreter(client)
    pod = create_pod(client, "web-1", node="node-refused")
    job = create_job(client, "job", "web-1")
    before = _evicted("error", "node-refused")
    # The job's pod was replaced by another of that name: the UID precondition fails.
    replaced = {**pod, "metadata": {**pod["metadata"], "uid": "the-old-pod"}}
    with pytest.raises(ApiError) as err:
        interpreter.evict(job, replaced)
    assert err.value.status == 409
    assert not _gone(client, "web-1")
    assert _evicted("error", "node-refused") == before + 1
    assert recorder.events == []


@pytest.mark.parametrize("where", ["pod", "job", "args"])
def test_delete_policy_by_pod_label_job_label_or_args(client: Client, where: str) -> None:
    interpreter, _, _ = _interpreter(client, DELETE if where == "args" else EVICTION)
    _block_evictions(client)
    label = {LABEL_EVICT_POLICY: DELETE}
    pod = create_pod(client, "web-1", labels={"app": "web", **(label if where == "pod" else {})})
    job = create_job(client, "job", "web-1", labels=label if where == "job" else None)
    interpreter.evict(job, pod)
    assert _gone(client, "web-1")  # deleted: the disruption budget does not apply


def test_pod_label_wins_over_job_label_and_unknown_names_use_the_default(
        client: Client) -> None:
    interpreter, _, _ = _interpreter(client, DELETE)
    pod = create_pod(client, "web-1", labels={"app": "web", LABEL_EVICT_POLICY: SOFT_EVICTION})
    job = create_job(client, "job", "web-1", labels={LABEL_EVICT_POLICY: DELETE})
    interpreter.evict(job, pod)
    assert not _gone(client, "web-1")  # soft: only marked

    pod = create_pod(client, "web-2", labels={"app": "web", LABEL_EVICT_POLICY: "Unknown"})
    interpreter.evict(create_job(client, "job-2", "web-2"), pod)
    assert _gone(client, "web-2")


def test_soft_eviction_marks_the_pod(client: Client) -> None:
    interpreter, recorder, _ = _interpreter(client, SOFT_EVICTION)
    pod = create_pod(client, "web-1")
    job = create_job(client, "job", "web-1", spec={"deleteOptions": {"gracePeriodSeconds": 5}})
    interpreter.evict(job, pod)
    marked = client.get(PODS, "web-1", NS)
    spec = parse_soft_eviction(marked["metadata"]["annotations"])
    assert spec is not None
    assert (spec.initiator, spec.reason) == ("LowNodeLoad", "node is overutilized")
    assert spec.delete_options is not None and spec.delete_options.grace_period_seconds == 5
    assert spec.timestamp is not None
    assert [e[2] for e in recorder.events] == ["Descheduled"]


def test_shared_rate_limit(client: Client) -> None:
    interpreter, _, clock = _interpreter(client, DELETE, qps=1, burst=2)
    for i in range(3):
        create_pod(client, f"web-{i}")
        create_job(client, f"job-{i}", f"web-{i}")
    jobs = [client.get(POD_MIGRATION_JOBS, f"job-{i}") for i in range(3)]
    pods = [client.get(PODS, f"web-{i}", NS) for i in range(3)]
    interpreter.evict(jobs[0], pods[0])
    interpreter.evict(jobs[1], pods[1])
    with pytest.raises(TooManyEvictionsError, match="TooManyEvictions"):
        interpreter.evict(jobs[2], pods[2])
    assert not _gone(client, "web-2")
    clock.step(1)
    interpreter.evict(jobs[2], pods[2])
    assert _gone(client, "web-2")


def test_unknown_default_policy_is_refused(client: Client) -> None:
    with pytest.raises(ValueError, match="unsupported eviction policy"):
        EvictorInterpreter.new(client, "Evaporate", 1, 1, None)


@pytest.mark.parametrize(("annotations", "expected"), [
    ({"koordinator.sh/evict-trigger": "LowNodeLoad", "koordinator.sh/evict-reason": "hot"},
     ("LowNodeLoad", "hot")),
    ({"koordinator.sh/evict-trigger": "LowNodeLoad"}, ("LowNodeLoad", "LowNodeLoad")),
    ({}, ("", "NotSet")),
])
def test_trigger_and_reason(annotations: dict[str, str], expected: tuple[str, str]) -> None:
    assert trigger_and_reason(annotations) == expected
