"""JSON patch, merge patch and strategic merge patch (with the core types' merge keys)."""

from __future__ import annotations

import pytest

from test.apiserver.patch import PatchError, json_patch, merge_patch, strategic_merge_patch
from test.apiserver.smp_meta import schema_for

POD = schema_for(("", "pods"))


def pod() -> dict:
    return {
        "metadata": {"name": "p", "finalizers": ["a"], "labels": {"x": "1"}},
        "spec": {
            "containers": [
                {"name": "c1", "image": "i:1", "env": [{"name": "A", "value": "1"}],
                 "ports": [{"containerPort": 80}], "volumeMounts": [{"mountPath": "/d",
                                                                     "name": "v"}]},
                {"name": "c2", "image": "i:1"}],
            "volumes": [{"name": "v", "emptyDir": {}}],
            "tolerations": [{"key": "t1", "operator": "Exists"}],
        },
        "status": {"conditions": [{"type": "Ready", "status": "False"},
                                  {"type": "PodScheduled", "status": "True"}]},
    }


def test_json_patch_ops():
    doc = {"a": {"b": [1, 2]}, "c": 1}
    out = json_patch(doc, [
        {"op": "add", "path": "/a/b/-", "value": 3},
        {"op": "replace", "path": "/c", "value": 2},
        {"op": "remove", "path": "/a/b/0"},
        {"op": "copy", "from": "/c", "path": "/d"},
        {"op": "move", "from": "/d", "path": "/e"},
        {"op": "test", "path": "/e", "value": 2},
        {"op": "add", "path": "/f~1g", "value": True},
    ])
    assert out == {"a": {"b": [2, 3]}, "c": 2, "e": 2, "f/g": True}
    with pytest.raises(PatchError):
        json_patch({"a": 1}, [{"op": "test", "path": "/a", "value": 2}])
    with pytest.raises(PatchError):
        json_patch({"a": 1}, [{"op": "remove", "path": "/b"}])


def test_merge_patch():
    assert merge_patch({"a": {"b": 1, "c": 2}, "l": [1, 2]},
                       {"a": {"b": None, "d": 3}, "l": [3]}) == {"a": {"c": 2, "d": 3},
                                                                 "l": [3]}


def test_strategic_merges_lists_by_key():
    out = strategic_merge_patch(pod(), {
        "metadata": {"finalizers": ["b"]},
        "spec": {"containers": [{"name": "c1", "env": [{"name": "B", "value": "2"}],
                                 "ports": [{"containerPort": 81}]},
                                {"name": "c3", "image": "i:3"}],
                 "tolerations": [{"key": "t2", "operator": "Exists"}]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }, POD)
    assert out["metadata"]["finalizers"] == ["a", "b"]
    c1 = out["spec"]["containers"][0]
    assert [e["name"] for e in c1["env"]] == ["A", "B"]
    assert [p["containerPort"] for p in c1["ports"]] == [80, 81]
    assert c1["image"] == "i:1"
    assert [c["name"] for c in out["spec"]["containers"]] == ["c1", "c2", "c3"]
    # tolerations have no patch strategy upstream: the list is replaced.
    assert out["spec"]["tolerations"] == [{"key": "t2", "operator": "Exists"}]
    assert out["status"]["conditions"] == [{"type": "Ready", "status": "True"},
                                           {"type": "PodScheduled", "status": "True"}]


def test_strategic_directives():
    out = strategic_merge_patch(pod(), {
        "metadata": {"labels": {"x": None, "y": "2"}},
        "spec": {"containers": [{"name": "c2", "$patch": "delete"}],
                 "volumes": [{"$patch": "replace"}, {"name": "w", "emptyDir": {}}],
                 "$setElementOrder/containers": [{"name": "c1"}]},
        "status": {"$patch": "replace", "phase": "Running"},
    }, POD)
    assert out["metadata"]["labels"] == {"y": "2"}
    assert [c["name"] for c in out["spec"]["containers"]] == ["c1"]
    assert out["spec"]["volumes"] == [{"name": "w", "emptyDir": {}}]
    assert out["status"] == {"phase": "Running"}
    out = strategic_merge_patch(pod(), {"metadata": {"$deleteFromPrimitiveList/finalizers":
                                                     ["a"]}}, POD)
    assert out["metadata"]["finalizers"] == []


def test_strategic_set_element_order_and_retain_keys():
    out = strategic_merge_patch(pod(), {"spec": {
        "$setElementOrder/containers": [{"name": "c2"}, {"name": "c1"}],
        "containers": [{"name": "c2", "image": "i:2"}]}}, POD)
    assert [(c["name"], c["image"]) for c in out["spec"]["containers"]] == [
        ("c2", "i:2"), ("c1", "i:1")]
    dep = {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}
    out = strategic_merge_patch(dep, {"spec": {"strategy": {
        "$retainKeys": ["type"], "type": "Recreate"}}}, schema_for(("apps", "deployments")))
    assert out["spec"]["strategy"] == {"type": "Recreate"}


def test_strategic_list_without_merge_key_item_is_an_error():
    with pytest.raises(PatchError):
        strategic_merge_patch(pod(), {"spec": {"containers": [{"image": "x"}]}}, POD)
