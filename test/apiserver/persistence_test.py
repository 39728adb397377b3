"""The write-ahead log and snapshot behind a server started on a workdir (in-process): a write
that cannot be logged is refused and not applied, the log is compacted as it grows, one workdir
serves one server at a time, deletions and CRD removals stay done, Services keep their cluster
IPs, and without a workdir nothing is written."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from pkg.client.errors import ApiError
from pkg.client.resources import CONFIGMAPS, CUSTOM_RESOURCE_DEFINITIONS, NAMESPACES, SERVICES
from pkg.client.rest import Client
from test.apiserver import persistence, start
from test.e2e.cluster import wait_for

NS = "keep"
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {
                               "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
}


def test_a_write_that_cannot_be_logged_is_refused_and_not_applied(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = os.write

    def disk_full(fd: int, data: bytes) -> int:
        if os.readlink(f"/proc/self/fd/{fd}") == str(tmp_path / "data" / "wal"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    with start(workdir=str(tmp_path)) as srv:
        client = Client.from_kubeconfig(srv.kubeconfig, qps=-1)
        client.create(NAMESPACES, {"metadata": {"name": NS}})
        with monkeypatch.context() as m:
            m.setattr(os, "write", disk_full)
            with pytest.raises(ApiError) as e:
                client.create(CONFIGMAPS, {"metadata": {"name": "lost", "namespace": NS}})
        assert e.value.status == 500
        assert f"configmaps {NS}/lost was not stored" in str(e.value)
        assert "No space left on device" in str(e.value)
        with pytest.raises(ApiError) as absent:
            client.get(CONFIGMAPS, "lost", NS)
        assert absent.value.status == 404
        client.create(CONFIGMAPS, {"metadata": {"name": "kept", "namespace": NS}})
    with start(workdir=str(tmp_path)) as srv:
        client = Client.from_kubeconfig(srv.kubeconfig, qps=-1)
        names = {o["metadata"]["name"] for o in client.list(CONFIGMAPS, NS)["items"]}
        assert "kept" in names and "lost" not in names


def test_log_is_compacted_into_the_snapshot_as_it_grows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(persistence, "MIN_COMPACT_BYTES", 4096)
    data = tmp_path / "data"
    with start(workdir=str(tmp_path)) as srv:
        client = Client.from_kubeconfig(srv.kubeconfig, qps=-1)
        client.create(NAMESPACES, {"metadata": {"name": NS}})
        for i in range(40):
            client.create(CONFIGMAPS, {"metadata": {"name": f"cm-{i}", "namespace": NS},
                                       "data": {"blob": "x" * 200}})
        # Compacted while running: the log is kept below the snapshot's size (plus the
        # record that crossed it), not the ~14 kB written.
        snapshot = (data / "snapshot").stat().st_size
        assert (data / "wal").stat().st_size < max(4096, snapshot) + 1024
        last = client.list(CONFIGMAPS, NS)["metadata"]["resourceVersion"]
    with start(workdir=str(tmp_path)) as srv:
        client = Client.from_kubeconfig(srv.kubeconfig, qps=-1)
        got = client.list(CONFIGMAPS, NS)
        assert sorted(o["metadata"]["name"] for o in got["items"]
                      if o["metadata"]["name"].startswith("cm-")) == \
            sorted(f"cm-{i}" for i in range(40))
        assert got["metadata"]["resourceVersion"] == last


def test_a_second_server_on_the_same_workdir_is_refused(tmp_path: Path) -> None:
    with start(workdir=str(tmp_path)):
        with pytest.raises(persistence.PersistenceError, match="in use by another API server"):
            start(workdir=str(tmp_path))
    # Released on stop.
    with start(workdir=str(tmp_path)):
        pass


def test_deletions_and_crd_removal_stay_done_after_restart(tmp_path: Path) -> None:
    widgets_path = f"/apis/example.com/v1/namespaces/{NS}/widgets"
    with start(workdir=str(tmp_path)) as srv:
        client = Client.from_kubeconfig(srv.kubeconfig, qps=-1)
        client.create(NAMESPACES, {"metadata": {"name": NS}})
        client.create(CUSTOM_RESOURCE_DEFINITIONS, CRD)
        client.request("POST", widgets_path, body={
            "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"},
            "spec": {"size": 3}})
    with start(workdir=str(tmp_path)) as srv:
        client = Client.from_kubeconfig(srv.kubeconfig, qps=-1)
        w1 = client.request("GET", widgets_path + "/w1")
        assert w1["spec"] == {"size": 3}
        client.delete(CUSTOM_RESOURCE_DEFINITIONS, CRD["metadata"]["name"])
    with start(workdir=str(tmp_path)) as srv:
        client = Client.from_kubeconfig(srv.kubeconfig, qps=-1)
        with pytest.raises(ApiError) as e:
            client.request("GET", widgets_path + "/w1")
        assert e.value.status == 404
        # A CRD of the same name starts empty.
        client.create(CUSTOM_RESOURCE_DEFINITIONS, CRD)
        assert client.request("GET", widgets_path)["items"] == []


def test_services_keep_their_cluster_ips_after_restart(tmp_path: Path) -> None:
    svc = {"metadata": {"name": "s0", "namespace": "default"},
           "spec": {"ports": [{"port": 80}]}}
    with start(workdir=str(tmp_path)) as srv:
        client = Client.from_kubeconfig(srv.kubeconfig, qps=-1)
        first_ip = client.create(SERVICES, svc)["spec"]["clusterIP"]
    with start(workdir=str(tmp_path)) as srv:
        client = Client.from_kubeconfig(srv.kubeconfig, qps=-1)
        second = client.create(SERVICES, {**svc, "metadata": {"name": "s1",
                                                              "namespace": "default"}})
        assert second["spec"]["clusterIP"] != first_ip


def test_a_namespace_being_deleted_finishes_after_restart(tmp_path: Path) -> None:
    held = {"metadata": {"name": "held", "namespace": "going",
                         "finalizers": ["example.com/hold"]}}
    with start(workdir=str(tmp_path)) as srv:
        client = Client.from_kubeconfig(srv.kubeconfig, qps=-1)
        client.create(NAMESPACES, {"metadata": {"name": "going"}})
        client.create(CONFIGMAPS, held)
        client.delete(NAMESPACES, "going")
        wait_for(lambda: client.get(CONFIGMAPS, "held", "going")["metadata"].get(
            "deletionTimestamp"), timeout=30, what="the namespace controller deletes its content")
    with start(workdir=str(tmp_path)) as srv:
        client = Client.from_kubeconfig(srv.kubeconfig, qps=-1)
        assert client.get(NAMESPACES, "going")["status"]["phase"] == "Terminating"
        client.patch(CONFIGMAPS, "held", {"metadata": {"finalizers": None}}, "going")

        def gone() -> bool:
            try:
                client.get(NAMESPACES, "going")
            except ApiError as e:
                return e.status == 404
            return False

        wait_for(gone, timeout=30, what="the namespace is removed once empty")


def test_without_a_workdir_nothing_is_written(tmp_path: Path) -> None:
    with start() as srv:
        workdir = srv.server.workdir
        assert srv.server.journal is None
        assert not os.path.exists(os.path.join(workdir, "data"))
    assert not os.path.exists(workdir)
