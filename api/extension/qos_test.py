"""QoS class derivation (upstream `apis/extension/qos_utils.go`), including the Kubernetes QoS
computation."""

import pytest

from api.errors import MalformedValueError
from api.extension.qos import (
    LABEL_POD_QOS,
    KubeQoSClass,
    QoSClass,
    compute_kube_qos_class,
    get_kube_qos_class,
    get_pod_qos_class_raw,
    get_pod_qos_class_with_default,
    qos_class_by_name,
)


def pod(labels=None, containers=(), init_containers=(), qos=None):
    obj = {"metadata": {"labels": labels} if labels is not None else {},
           "spec": {"containers": list(containers)}}
    if init_containers:
        obj["spec"]["initContainers"] = list(init_containers)
    if qos is not None:
        obj["status"] = {"qosClass": qos}
    return obj


def container(requests=None, limits=None):
    return {"name": "c", "resources": {"requests": requests or {}, "limits": limits or {}}}


GUARANTEED = container({"cpu": "1", "memory": "1Gi"}, {"cpu": "1000m", "memory": "1024Mi"})
BURSTABLE = container({"cpu": "500m"}, {"cpu": "1"})


@pytest.mark.parametrize(("name", "expected"), [
    ("SYSTEM", QoSClass.SYSTEM), ("LSE", QoSClass.LSE), ("LSR", QoSClass.LSR),
    ("LS", QoSClass.LS), ("BE", QoSClass.BE), ("", QoSClass.NONE), ("be", QoSClass.NONE),
    ("Ls", QoSClass.NONE), (" LS", QoSClass.NONE), (None, QoSClass.NONE),
])
def test_qos_class_by_name_is_exact(name, expected):
    assert qos_class_by_name(name) is expected


@pytest.mark.parametrize(("obj", "raw", "with_default"), [
    # A valid label wins over everything.
    (pod({LABEL_POD_QOS: "BE"}, [GUARANTEED]), QoSClass.BE, QoSClass.BE),
    (pod({LABEL_POD_QOS: "LSE"}, qos="BestEffort"), QoSClass.LSE, QoSClass.LSE),
    (pod({LABEL_POD_QOS: "SYSTEM"}), QoSClass.SYSTEM, QoSClass.SYSTEM),
    # An invalid label falls through to the Kubernetes QoS.
    (pod({LABEL_POD_QOS: "lsr"}, [BURSTABLE]), QoSClass.NONE, QoSClass.LS),
    # Only labels count: an annotation is ignored.
    ({"metadata": {"annotations": {LABEL_POD_QOS: "BE"}}, "spec": {"containers": [GUARANTEED]}},
     QoSClass.NONE, QoSClass.LSR),
    # No labels at all.
    (pod(None, [GUARANTEED]), QoSClass.NONE, QoSClass.LSR),
    # status.qosClass is used when set, even if the containers say otherwise.
    (pod({}, [GUARANTEED], qos="BestEffort"), QoSClass.NONE, QoSClass.BE),
    (pod({}, [], qos="Burstable"), QoSClass.NONE, QoSClass.LS),
    # Computed when status has none.
    (pod({}, [GUARANTEED]), QoSClass.NONE, QoSClass.LSR),
    (pod({}, [BURSTABLE]), QoSClass.NONE, QoSClass.LS),
    (pod({}, [container()]), QoSClass.NONE, QoSClass.BE),
    (None, QoSClass.NONE, QoSClass.BE),
])
def test_pod_qos_derivation(obj, raw, with_default):
    assert get_pod_qos_class_raw(obj) is raw
    assert get_pod_qos_class_with_default(obj) is with_default


@pytest.mark.parametrize(("containers", "init_containers", "expected"), [
    ([], [], KubeQoSClass.BEST_EFFORT),
    ([container()], [], KubeQoSClass.BEST_EFFORT),
    # Zero requests do not count.
    ([container({"cpu": "0", "memory": "0"})], [], KubeQoSClass.BEST_EFFORT),
    # Other resources do not count.
    ([container({"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"})], [],
     KubeQoSClass.BEST_EFFORT),
    ([GUARANTEED], [], KubeQoSClass.GUARANTEED),
    ([GUARANTEED, GUARANTEED], [GUARANTEED], KubeQoSClass.GUARANTEED),
    # Equal quantities in different units are equal.
    ([container({"cpu": "0.5", "memory": "1G"}, {"cpu": "500m", "memory": "1000M"})], [],
     KubeQoSClass.GUARANTEED),
    # Numbers as well as strings.
    ([container({"cpu": 2, "memory": "1Gi"}, {"cpu": "2", "memory": 1073741824})], [],
     KubeQoSClass.GUARANTEED),
    # A container without memory limit makes the pod Burstable.
    ([GUARANTEED, container({"cpu": "1"}, {"cpu": "1"})], [], KubeQoSClass.BURSTABLE),
    # An init container without limits does too.
    ([GUARANTEED], [container({"cpu": "100m"})], KubeQoSClass.BURSTABLE),
    # Requests below limits.
    ([container({"cpu": "1", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"})], [],
     KubeQoSClass.BURSTABLE),
    # Limits only (no defaulting of requests here): Burstable, as Go computes on the raw object.
    ([container(None, {"cpu": "1", "memory": "1Gi"})], [], KubeQoSClass.BURSTABLE),
    ([BURSTABLE], [], KubeQoSClass.BURSTABLE),
    # Extra resources with requests == limits do not prevent Guaranteed.
    ([container({"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi"},
                {"cpu": "1", "memory": "1Gi"})], [], KubeQoSClass.GUARANTEED),
])
def test_compute_kube_qos_class(containers, init_containers, expected):
    obj = pod({}, containers, init_containers)
    assert compute_kube_qos_class(obj) is expected
    assert get_kube_qos_class(obj) == expected


def test_malformed_container_quantity_names_its_path():
    obj = pod({}, [container({"cpu": "lots"})])
    with pytest.raises(MalformedValueError) as info:
        compute_kube_qos_class(obj)
    assert info.value.key == "spec.containers[0].resources.requests.cpu"
    # The label short-circuits: a labelled pod never looks at its containers.
    obj["metadata"]["labels"] = {LABEL_POD_QOS: "LS"}
    assert get_pod_qos_class_with_default(obj) is QoSClass.LS
