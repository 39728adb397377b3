"""``hack/koord explain quota`` against the embedded API server: ElasticQuotas carrying the
quota controller's annotations and status, read through a kubeconfig."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api.extension.elastic_quota import (
    ANNOTATION_REQUEST,
    ANNOTATION_RUNTIME,
    ANNOTATION_TOTAL_RESOURCE,
    LABEL_ALLOW_LENT_RESOURCE,
    LABEL_QUOTA_IS_PARENT,
    LABEL_QUOTA_IS_ROOT,
    LABEL_QUOTA_PARENT,
    LABEL_QUOTA_TREE_ID,
)
from hack import koord_cli
from hack.koord_quota import QuotaNotFound, quota_tree_text
from pkg.client.resources import ELASTIC_QUOTAS, ROLE_BINDINGS, ROLES, SERVICE_ACCOUNTS
from pkg.client.rest import Client
from test.apiserver import ServerHandle, kubeconfig, start
from test.e2e.cluster import install_crds

Obj = dict[str, Any]


def eq(name: str, namespace: str, parent: str, cpu: tuple[str, str, str, str, str], *,
       is_parent: bool = False) -> Obj:
    """An ElasticQuota with cpu (min, max, runtime, request, used) and 8Gi of memory max."""
    min_, max_, runtime, request, used = cpu
    labels = {LABEL_QUOTA_IS_PARENT: "true"} if is_parent else {}
    if parent:
        labels[LABEL_QUOTA_PARENT] = parent
    return {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "ElasticQuota",
            "metadata": {"name": name, "namespace": namespace, "labels": labels,
                         "annotations": {ANNOTATION_RUNTIME: json.dumps({"cpu": runtime}),
                                         ANNOTATION_REQUEST: json.dumps({"cpu": request})}},
            "spec": {"min": {"cpu": min_}, "max": {"cpu": max_, "memory": "8Gi"}},
            "status": {"used": {"cpu": used}}}


TREE = [
    eq("research", "koordinator-system", "", ("10", "20", "12", "15", "11"), is_parent=True),
    eq("dev", "team-dev", "research", ("4", "8", "3", "6", "5"), is_parent=True),
    eq("ops", "team-ops", "research", ("6", "12", "9", "4", "4")),
    eq("dev-ci", "team-dev", "dev", ("1", "4", "2", "2", "1")),
    eq("other", "default", "", ("0", "4", "0", "0", "0")),
]


@pytest.fixture(scope="module")
def server() -> Iterator[ServerHandle]:
    srv = start(random_token=True)  # authentication, hence RBAC, on
    client = Client.from_kubeconfig(srv.kubeconfig)
    try:
        install_crds(client)
        for ns in sorted({q["metadata"]["namespace"] for q in TREE}):
            if ns != "default":
                client.request("POST", "/api/v1/namespaces", body={
                    "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        for q in TREE:
            client.create(ELASTIC_QUOTAS, q, q["metadata"]["namespace"])
        yield srv
    finally:
        client.close()
        srv.stop()


def rows(out: str) -> list[list[str]]:
    """The table's rows after the header, split into words."""
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("QUOTA "))
    table = lines[header + 1:lines.index("", header)]
    return [line.split() for line in table]


def test_explain_quota_prints_the_tree_around_it_with_its_figures(
        server: ServerHandle, capsys: pytest.CaptureFixture[str]) -> None:
    assert koord_cli.main(["explain", "quota", "dev", "--kubeconfig", server.kubeconfig]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ElasticQuota team-dev/dev: parent research, 1 sibling(s), "
                          "1 child(ren).")
    # Ancestors from the root, then the quota among its siblings with its children under it
    # (indented by depth); "other", the parent's sibling, is not around dev.
    assert rows(out) == [
        ["koordinator-root-quota", "(not", "among", "the", "ElasticQuotas", "listed)"],
        ["research", "(koordinator-system)", "cpu", "10", "20", "12", "15", "11",
         "request", ">", "runtime"],
        ["memory", "-", "8Gi", "-", "-", "-"],
        ["dev", "(team-dev)", "*", "cpu", "4", "8", "3", "6", "5",
         "used", ">", "runtime,", "request", ">", "runtime"],
        ["memory", "-", "8Gi", "-", "-", "-"],
        ["dev-ci", "(team-dev)", "cpu", "1", "4", "2", "2", "1"],
        ["memory", "-", "8Gi", "-", "-", "-"],
        ["ops", "(team-ops)", "cpu", "6", "12", "9", "4", "4"],
        ["memory", "-", "8Gi", "-", "-", "-"],
    ]
    assert "\n      dev-ci (team-dev)  " in out  # two levels under research


def test_explain_quota_says_clearly_when_the_quota_does_not_exist(
        server: ServerHandle, capsys: pytest.CaptureFixture[str]) -> None:
    assert koord_cli.main(["explain", "quota", "nope", "--kubeconfig", server.kubeconfig]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == 'error: ElasticQuota "nope" not found'


def test_a_malformed_annotation_is_shown_not_read_as_empty() -> None:
    q = eq("dev", "team-dev", "", ("4", "8", "3", "6", "5"))
    q["metadata"]["annotations"][ANNOTATION_RUNTIME] = "{oops"
    out = quota_tree_text([q], "dev")
    assert "! " in out and ANNOTATION_RUNTIME in out
    # No runtime: nothing to exceed.
    assert rows(out)[1] == ["dev", "(team-dev)", "*", "cpu", "4", "8", "-", "6", "5"]


def test_a_name_in_several_namespaces_needs_the_namespace() -> None:
    twins = [eq("dev", "a", "", ("1", "2", "1", "1", "1")),
             eq("dev", "b", "", ("1", "2", "1", "3", "1"))]
    with pytest.raises(QuotaNotFound, match=r"several namespaces \(a, b\)"):
        quota_tree_text(twins, "dev")
    assert "request > runtime" in quota_tree_text(twins, "dev", "b")


def test_a_user_allowed_one_namespace_sees_that_part_of_the_tree(
        server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    admin = Client.from_kubeconfig(server.kubeconfig)
    try:
        admin.create(SERVICE_ACCOUNTS, {"apiVersion": "v1", "kind": "ServiceAccount",
                                        "metadata": {"name": "dev-lead"}}, "team-dev")
        admin.create(ROLES, {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "quota-reader"},
            "rules": [{"apiGroups": ["scheduling.sigs.k8s.io"], "resources": ["elasticquotas"],
                       "verbs": ["list"]}]}, "team-dev")
        admin.create(ROLE_BINDINGS, {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "dev-lead"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                        "name": "quota-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "dev-lead",
                          "namespace": "team-dev"}]}, "team-dev")
    finally:
        admin.close()
    config = kubeconfig.for_service_account(server.kubeconfig, "team-dev", "dev-lead",
                                            str(tmp_path / "dev-lead.kubeconfig"))
    assert koord_cli.main(["explain", "quota", "dev", "--kubeconfig", config]) == 1
    assert "forbidden" in capsys.readouterr().err.lower()
    assert koord_cli.main(["explain", "quota", "dev", "-n", "team-dev",
                           "--kubeconfig", config]) == 0
    # research lives in another namespace: the tree shows where it is, not its figures (nor
    # its parent).
    assert [r[:3] for r in rows(capsys.readouterr().out)] == [
        ["research", "(not", "among"],
        ["dev", "(team-dev)", "*"], ["memory", "-", "8Gi"],
        ["dev-ci", "(team-dev)", "cpu"], ["memory", "-", "8Gi"],
    ]


def test_hints_explain_a_runtime_below_min_a_quota_that_does_not_lend_and_mins_over_min() -> None:
    tree = [
        eq("research", "koordinator-system", "", ("10", "20", "12", "15", "11"), is_parent=True),
        # dev asks for 6 and gets 3, below its min of 4; its child's min is over dev's.
        eq("dev", "team-dev", "research", ("4", "8", "3", "6", "5"), is_parent=True),
        eq("dev-ci", "team-dev", "dev", ("5", "8", "2", "2", "1")),
        eq("ops", "team-ops", "research", ("6", "12", "6", "4", "4")),
    ]
    tree[3]["metadata"]["labels"][LABEL_ALLOW_LENT_RESOURCE] = "false"
    out = quota_tree_text(tree, "dev")
    assert [line for line in out.splitlines() if line.startswith("hint: ")] == [
        "hint: dev's runtime cpu:3 is below its min cpu:4 while it asks for more: its parent's "
        "runtime is less than its children's mins, which are scaled down",
        "hint: ops does not lend (allow-lent-resource: false): it keeps its min cpu:6 while "
        "using cpu:4",
        "hint: the mins of dev's 1 child(ren) sum to cpu:5, more than its min cpu:4: they are "
        "guaranteed only while dev borrows",
    ]
    # Lending as usual and mins that fit: no hints.
    assert "hint: " not in quota_tree_text(TREE, "other")


def test_a_quota_of_a_quota_tree_is_shown_within_its_tree() -> None:
    root = eq("pool-root", "default", "", ("4", "1000", "4", "6", "4"), is_parent=True)
    root["metadata"]["labels"].update({LABEL_QUOTA_TREE_ID: "pool", LABEL_QUOTA_IS_ROOT: "true"})
    root["metadata"]["annotations"][ANNOTATION_TOTAL_RESOURCE] = '{"cpu":"4"}'
    team = eq("team-t", "default", "pool-root", ("0", "10", "4", "6", "4"))
    team["metadata"]["labels"][LABEL_QUOTA_TREE_ID] = "pool"
    out = quota_tree_text([*TREE, root, team], "pool-root")
    assert 'Quota tree pool (a tree of its own under MultiQuotaTree), total {"cpu":"4"} ' \
           "(total-resource of pool-root)." in out
    # The default tree's top-level quotas are no siblings of the tree's root.
    assert "0 sibling(s), 1 child(ren)." in out
    assert [r[0] for r in rows(out) if r[0] not in ("cpu", "memory")] == \
        ["pool-root", "team-t"]
