"""e2e: malformed input against the local cluster (issue 13's acceptance table).

One ``LocalCluster`` (``test/localcluster``, the CI scenario's two simulated nodes, no
workload) serves the module. Each row of ``ROWS`` sends one malformed input through the real
``kubectl`` or raw HTTP (the kubeconfig's CA and token, through ``pkg.client.rest.Client``) and
expects either

* ``Rejected``: an HTTP status from a set and an error that names the object and the field
  (kube-apiserver's Status for the server's own checks, a webhook's denial for Koordinator's),
  with nothing stored; or
* ``Accepted``: a one-line documented reason (what Kubernetes or upstream does with it) and a
  check of what the components do with it (an event naming it, the pod still scheduled).

After every row the cluster must still do its job: every component process alive, a new pod
bound within ``SCHEDULE_WITHIN`` seconds, each node's NodeMetric reported within
``METRIC_FRESH_WITHIN`` seconds, the row's collection still listable. The last test prints the
summary (tried / rejected clearly / accepted deliberately / crashed / silently accepted /
unclear) and writes it to ``malformed-summary.txt`` in the cluster's workdir.

Each row names the helper area (issue 13) whose change it depends on, so a failure on a branch
without that change says where it waits.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import pytest

from api.configuration import CONFIG_NAMESPACE, SLO_CTRL_CONFIG_MAP
from pkg.client import ApiError
from pkg.client.resources import CONFIGMAPS, EVENTS, EVENTS_V1, NAMESPACES, NODE_METRICS, PODS
from pkg.client.rest import Client
from test.apiserver.testing import Kubectl, kubectl_binary
from test.e2e.cluster import wait_for
from test.localcluster.cluster import LocalCluster, prepare_workdir
from test.localcluster.scenario import SCENARIO_DIR, load

NS = "malformed"
TARGET = "target"  # a ConfigMap in NS that label and annotate rows change
NODE = "node-0"
SCHEDULE_WITHIN = 5.0  # the issue's bound on scheduling a new pod after each row
# koordlet reports every metricReportIntervalSeconds (30 s in the CI scenario): three missed
# reports mean it stopped.
METRIC_FRESH_WITHIN = 90.0
CHECK_TIMEOUT = 30.0  # bounds only a failure: what an accepted row's check waits for
MIB = 1 << 20
NESTING = 300  # more than the 255 levels the issue's report found stored and unservable
WEBHOOK_CODES = (400, 403, 422)  # a denial's code is the webhook's choice (upstream: 400/403)
INVALID = (422,)
BAD_REQUEST = (400, 422)

Obj = dict[str, Any]


# -- what a row sends ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Outcome:
    """What came back: the HTTP status (0 when kubectl refused before sending anything), the
    error text or the client's output, and the warnings the server returned."""

    code: int
    text: str
    warnings: str = ""

    @property
    def ok(self) -> bool:
        return 200 <= self.code < 300


class Ctx(Protocol):
    """What a row's parts need of the running cluster."""

    @property
    def client(self) -> Client: ...

    @property
    def kubectl(self) -> Kubectl: ...

    @property
    def slo_config(self) -> Obj: ...

    @property
    def row_started(self) -> datetime: ...


class Send(Protocol):
    def __call__(self, ctx: Ctx) -> Outcome: ...

    def describe(self) -> str: ...


# kubectl -v=6 logs each response: "... round_trippers.go:553] POST https://... 422 Unprocessable
# Entity in 3 milliseconds".
_RESPONSE = re.compile(r"\] (?:GET|POST|PUT|PATCH|DELETE) \S+ (\d{3}) [^\n]* in \d+ millisecond")
_KLOG = re.compile(r"^[IWEF]\d{4} ")


@dataclass(frozen=True, slots=True)
class KubectlSend:
    """``kubectl <args>`` with ``stdin``; the status is the last response kubectl logged."""

    args: tuple[str, ...]
    stdin: str | None = None

    def __call__(self, ctx: Ctx) -> Outcome:
        p = ctx.kubectl.run("-v=6", *self.args, input=self.stdin, check=False, timeout=60)
        codes = [int(c) for c in _RESPONSE.findall(p.stderr)]
        said = "\n".join(line for line in p.stderr.splitlines() if not _KLOG.match(line))
        warnings = "\n".join(line for line in said.splitlines() if line.startswith("Warning:"))
        if p.returncode == 0:
            return Outcome(codes[-1] if codes else 200, p.stdout, warnings)
        failed = [c for c in codes if c >= 400]
        return Outcome(failed[-1] if failed else 0, said + p.stdout, warnings)

    def describe(self) -> str:
        return "kubectl " + " ".join(a if len(a) < 60 else a[:57] + "..." for a in self.args)


@dataclass(frozen=True, slots=True)
class RawSend:
    """One HTTP request with the kubeconfig's CA and token; the body is sent byte for byte."""

    method: str
    path: str
    body: bytes
    content_type: str = "application/json"
    query: tuple[tuple[str, str], ...] = ()

    def __call__(self, ctx: Ctx) -> Outcome:
        try:
            out = ctx.client.request(self.method, self.path, body=self.body,
                                     content_type=self.content_type, query=dict(self.query))
        except ApiError as e:
            return Outcome(e.status, json.dumps(e.body) if e.body else str(e))
        return Outcome(200, json.dumps(out)[:2000])

    def describe(self) -> str:
        return f"{self.method} {self.path} ({len(self.body)} bytes, {self.content_type})"


@dataclass(frozen=True, slots=True)
class Steps:
    """Several sends in order; the first that fails, or the last, is the outcome."""

    sends: tuple[Send, ...]

    def __call__(self, ctx: Ctx) -> Outcome:
        out = Outcome(0, "no steps")
        for send in self.sends:
            out = send(ctx)
            if not out.ok:
                return out
        return out

    def describe(self) -> str:
        return "; then ".join(s.describe() for s in self.sends)


@dataclass(frozen=True, slots=True)
class RestoreSloKey:
    """Puts one slo-controller-config key back as the cluster had it (removed if absent)."""

    key: str

    def __call__(self, ctx: Ctx) -> Outcome:
        value = (ctx.slo_config.get("data") or {}).get(self.key)
        ctx.client.request("PATCH", f"/api/v1/namespaces/{CONFIG_NAMESPACE}/configmaps/"
                           f"{SLO_CTRL_CONFIG_MAP}", body={"data": {self.key: value}},
                           content_type="application/merge-patch+json")
        return Outcome(200, "")

    def describe(self) -> str:
        return f"restore {SLO_CTRL_CONFIG_MAP} {self.key}"


# -- what a row expects -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rejected:
    """Refused with one of ``codes``; the error names each of ``mentions`` (the object, the
    field). ``or_warning``: an admission warning naming them is as clear (upstream ignores the
    value; the issue asks to warn at least)."""

    codes: tuple[int, ...]
    mentions: tuple[str, ...]
    or_warning: bool = False


Check = Callable[[Ctx], None]


@dataclass(frozen=True, slots=True)
class Accepted:
    """Stored on purpose (``reason``); ``check`` asserts what the components do with it."""

    reason: str
    check: Check | None = None


@dataclass(frozen=True, slots=True)
class Row:
    id: str
    send: Send
    expect: Rejected | Accepted
    area: str  # the issue-13 area whose change makes the row pass ("today": nobody's)
    stored: str | None = None  # the API path of the object the row creates
    undo: Send | None = None  # puts back what the row changed on an object that stays


# -- bodies ----------------------------------------------------------------------------------------


def nested(depth: int) -> Obj:
    node: Obj = {}
    for _ in range(depth):
        node = {"a": node}
    return node


def configmap(name: str, **extra: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": NS}, **extra}


def pod(name: str, labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None, **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "labels": labels or {},
                         "annotations": annotations or {}},
            "spec": {"schedulerName": "koord-scheduler", "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "pause", "resources": {
                         "requests": {"cpu": "10m", "memory": "16Mi"}}}], **spec}}


def cr(api_version: str, kind: str, name: str, spec: Obj, namespaced: bool = False,
       labels: dict[str, str] | None = None, **extra: Any) -> Obj:
    meta: Obj = {"name": name, **({"namespace": NS} if namespaced else {})}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec, **extra}


def body(obj: Obj) -> bytes:
    return json.dumps(obj).encode()


def create(obj: Obj, *flags: str) -> KubectlSend:
    return KubectlSend(("create", *flags, "-f", "-"), json.dumps(obj))


def apply(obj: Obj) -> KubectlSend:
    return KubectlSend(("apply", "-f", "-"), json.dumps(obj))


def post(path: str, data: bytes, content_type: str = "application/json") -> RawSend:
    return RawSend("POST", path, data, content_type)


CM_PATH = f"/api/v1/namespaces/{NS}/configmaps"
POD_PATH = f"/api/v1/namespaces/{NS}/pods"
SLO = "slo.koordinator.sh/v1alpha1"
SCHED = "scheduling.koordinator.sh/v1alpha1"
SIGS = "scheduling.sigs.k8s.io/v1alpha1"
CONFIG = "config.koordinator.sh/v1alpha1"
QUOTA_PARENT = "quota.scheduling.koordinator.sh/parent"


def cm_stored(name: str) -> str:
    return f"{CM_PATH}/{name}"


def cluster_path(group_version: str, plural: str, name: str) -> str:
    return f"/apis/{group_version}/{plural}/{name}"


def ns_path(group_version: str, plural: str, name: str) -> str:
    return f"/apis/{group_version}/namespaces/{NS}/{plural}/{name}"


def eq(name: str, min_: Obj | str, max_: Obj | str, labels: dict[str, str] | None = None
       ) -> Obj:
    return cr(SIGS, "ElasticQuota", name, {"min": min_, "max": max_}, namespaced=True,
              labels=labels)


def profile(name: str, **spec: Any) -> Obj:
    return cr(CONFIG, "ClusterColocationProfile", name,
              {"selector": {"matchLabels": {"malformed-e2e": "never"}}, **spec})


def reservation(name: str, **spec: Any) -> Obj:
    owners = [{"object": {"name": "nobody", "namespace": NS}}]
    return cr(SCHED, "Reservation", name, {"owners": owners, "ttl": "1h", **spec})


# -- what the components do with an accepted input -------------------------------------------


def _last_seen(e: Obj) -> datetime:
    """When an event (core or events.k8s.io, with or without a series) last happened."""
    stamps = [e.get("lastTimestamp"), e.get("eventTime"), e.get("deprecatedLastTimestamp"),
              (e.get("series") or {}).get("lastObservedTime"), e.get("firstTimestamp")]
    times = [datetime.fromisoformat(t.replace("Z", "+00:00")) for t in stamps if t]
    return max(times, default=datetime.min.replace(tzinfo=UTC))


def _events_about(ctx: Ctx, name: str) -> list[tuple[str, str, str]]:
    """(type, reason, message) of the core and events.k8s.io events about object ``name``
    seen since the row started (event times have whole seconds)."""
    since = ctx.row_started - timedelta(seconds=1)
    # The server serves one store through both groups: the uid tells an event seen twice.
    found: dict[str, tuple[str, str, str]] = {}
    for e in ctx.client.list(EVENTS)["items"]:
        if (e.get("involvedObject") or {}).get("name") == name and _last_seen(e) >= since:
            found[e["metadata"]["uid"]] = (e.get("type", ""), e.get("reason", ""),
                                           e.get("message", ""))
    for e in ctx.client.list(EVENTS_V1)["items"]:
        if (e.get("regarding") or {}).get("name") == name and _last_seen(e) >= since:
            found.setdefault(e["metadata"]["uid"], (e.get("type", ""), e.get("reason", ""),
                                                    e.get("note", "")))
    return list(found.values())


def warning_event(name: str, mentions: str) -> Check:
    def check(ctx: Ctx) -> None:
        wait_for(lambda: any(t == "Warning" and mentions in m
                             for t, _, m in _events_about(ctx, name)),
                 timeout=CHECK_TIMEOUT, interval=0.5,
                 what=f"a Warning event about {name} naming {mentions}")
    return check


def pod_bound(name: str) -> Check:
    """The scheduler ignores what it cannot use, as upstream, and binds the pod."""
    def check(ctx: Ctx) -> None:
        wait_for(lambda: ctx.client.get(PODS, name, NS)["spec"].get("nodeName"),
                 timeout=CHECK_TIMEOUT, interval=0.2, what=f"pod {name} bound")
    return check


def bound_or_reported(name: str, key: str) -> Check:
    """Upstream's plugin that reads the annotation fails the pod's scheduling on it (a
    FailedScheduling event naming the annotation); where that plugin is not built here yet,
    nothing reads it and the pod is bound."""
    def settled(ctx: Ctx) -> bool:
        return bool(ctx.client.get(PODS, name, NS)["spec"].get("nodeName")) or any(
            r == "FailedScheduling" and key in m for _, r, m in _events_about(ctx, name))

    def check(ctx: Ctx) -> None:
        try:
            wait_for(lambda: settled(ctx), timeout=CHECK_TIMEOUT, interval=0.5,
                     what=f"{name} bound or a FailedScheduling event naming {key}")
        except AssertionError as e:
            raise AssertionError(f"{e}; its events: {_events_about(ctx, name)}") from None
    return check


def exists(path: str) -> Check:
    def check(ctx: Ctx) -> None:
        ctx.client.request("GET", path)
    return check


# -- the table -------------------------------------------------------------------------------------

SLO_KEYS = ("colocation-config", "resource-threshold-config", "resource-qos-config",
            "system-config", "cpu-burst-config", "host-application-config",
            "cpu-normalization-config", "resource-amplification-config")
LONG = "x" * 64
POD_ANNOTATIONS_REPORTED = (
    ("resource-spec", "scheduling.koordinator.sh/resource-spec", "{not json"),
    ("reservation-affinity", "scheduling.koordinator.sh/reservation-affinity", "[1,"),
    ("numa-topology-spec", "scheduling.koordinator.sh/numa-topology-spec", "{\"numaTopology"),
)
POD_ANNOTATIONS_IGNORED = (
    ("gang-waiting-time", {"gang.scheduling.koordinator.sh/name": "g1",
                           "gang.scheduling.koordinator.sh/min-available": "1",
                           "gang.scheduling.koordinator.sh/waiting-time": "forever"}),
    ("gang-mode", {"gang.scheduling.koordinator.sh/name": "g2",
                   "gang.scheduling.koordinator.sh/min-available": "1",
                   "gang.scheduling.koordinator.sh/mode": "Sometimes"}),
    ("eviction-cost", {"scheduling.koordinator.sh/eviction-cost": "008"}),
    ("oom-score-adj", {"koordinator.sh/oom-score-adj": "5000"}),
    ("cpu-qos", {"koordinator.sh/cpuQOS": "{\"groupIdentity\": 9}"}),
    ("load-estimated-factors", {
        "scheduling.koordinator.sh/load-estimated-scaling-factors": "{cpu: lots"}),
)
NODE_ANNOTATIONS_IGNORED = (
    ("usage-thresholds", "scheduling.koordinator.sh/usage-thresholds", "{bad",
     "the scheduler uses its LoadAwareScheduling args, as upstream"),
    ("colocation-strategy", "node.koordinator.sh/colocation-strategy", "[",
     "the manager uses the cluster colocation-config, as upstream (invalid JSON ignored)"),
    ("cpu-normalization-ratio", "node.koordinator.sh/cpu-normalization-ratio", "fast",
     "consumers read a missing ratio (-1), as upstream"),
)


def _rows() -> list[Row]:
    rows: list[Row] = []

    def add(*r: Row) -> None:
        rows.extend(r)

    # Bodies the server must refuse before admission (apival).
    add(Row("raw-unknown-field-nested-300", post(CM_PATH, body(configmap(
            "deep-nest", deep=nested(NESTING)))), Rejected(BAD_REQUEST, ("deep-nest",)),
            "apival", cm_stored("deep-nest")),
        Row("raw-cr-preserved-field-nested-300", post(
            "/apis/slo.koordinator.sh/v1alpha1/nodeslos", body(cr(
                SLO, "NodeSLO", "deep-slo", {"extensions": nested(NESTING)}))),
            Rejected(BAD_REQUEST, ("deep-slo",)), "apival",
            cluster_path(SLO, "nodeslos", "deep-slo")),
        # 100,000 levels in 600 KB crashed the API server inside its JSON parser: refused
        # before parsing (the object cannot be named: nothing was decoded).
        Row("raw-body-nested-100000", post(
            CM_PATH, b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"abyss"},'
            b'"data":' + b'{"a":' * 100_000 + b"{}" + b"}" * 100_000 + b"}"),
            Rejected((400,), ("nested more than 1000 levels deep",)), "apival",
            cm_stored("abyss")),
        Row("raw-body-over-3MiB", post(CM_PATH, body(configmap(
            "huge", data={"k": "x" * (3 * MIB + MIB // 2)}))),
            Rejected((413,), ("too large",)), "apival", cm_stored("huge")),
        Row("kubectl-body-over-3MiB", create(configmap(
            "huge-kubectl", data={"k": "x" * (3 * MIB + MIB // 2)})),
            Rejected((413,), ("too large",)), "apival", cm_stored("huge-kubectl")),
        Row("raw-invalid-utf8", post(CM_PATH, b'{"apiVersion":"v1","kind":"ConfigMap",'
            b'"metadata":{"name":"utf8"},"data":{"k":"\xff\xfe"}}'),
            Rejected((400,), ("utf-8",)), "apival", cm_stored("utf8")),
        Row("raw-invalid-utf8-label", post(CM_PATH, b'{"apiVersion":"v1","kind":"ConfigMap",'
            b'"metadata":{"name":"utf8-label","labels":{"a":"\xc3\x28"}}}'),
            Rejected((400, 422), ("utf",)), "apival", cm_stored("utf8-label")),
        Row("raw-truncated-json", post(CM_PATH, b'{"apiVersion":"v1","kind":"ConfigMap",'
            b'"metadata":{"name":"trunc"'), Rejected((400,), ()), "apival",
            cm_stored("trunc")),
        Row("raw-json-array-body", post(CM_PATH, b"[1, 2, 3]"), Rejected((400,), ()),
            "apival"),
        Row("raw-yaml-scalar-body", post(CM_PATH, b"just a string\n", "application/yaml"),
            Rejected((400, 415), ()), "apival"),
        Row("raw-text-plain-body", post(CM_PATH, body(configmap("plain")), "text/plain"),
            Rejected((415,), ("text/plain",)), "apival", cm_stored("plain")),
        Row("kubectl-yaml-not-an-object", KubectlSend(("apply", "-f", "-"), "- a\n- b\n"),
            Rejected((0, 400), ()), "today"),
        Row("raw-metadata-is-a-string", post(CM_PATH, body(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": "meta"})),
            Rejected(BAD_REQUEST, ("metadata",)), "apival"),
        Row("raw-configmap-data-not-string", post(CM_PATH, body(configmap(
            "data-int", data={"k": 5}))), Rejected(BAD_REQUEST, ("data",)), "apival",
            cm_stored("data-int")),
        Row("raw-kind-mismatch", post(CM_PATH, body(
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "kind-mix"}})),
            Rejected((400,), ("Secret",)), "apival", cm_stored("kind-mix")))

    # ObjectMeta (apival).
    add(Row("kubectl-annotation-1.5MiB", create(configmap(
            "big-annotation", metadata={"name": "big-annotation", "namespace": NS,
                                        "annotations": {"big": "x" * (3 * MIB // 2)}})),
            Rejected(INVALID, ("big-annotation", "metadata.annotations", "262144")),
            "apival", cm_stored("big-annotation")),
        Row("kubectl-annotations-total-over-256KiB", apply(configmap(
            "many-annotations", metadata={"name": "many-annotations", "namespace": NS,
                                          "annotations": {"a1": "x" * 140_000,
                                                          "a2": "y" * 140_000}})),
            Rejected(INVALID, ("many-annotations", "metadata.annotations", "262144")),
            "apival", cm_stored("many-annotations")),
        Row("kubectl-annotation-bad-key", KubectlSend((
            "annotate", "configmap", TARGET, "-n", NS, "bad key!=v")),
            Rejected((0, 422), ("bad key!",)), "apival"),
        Row("kubectl-label-value-with-space", KubectlSend((
            "label", "configmap", TARGET, "-n", NS, "tier=has space!")),
            Rejected((0, 422), ("has space!",)), "apival",
            undo=KubectlSend(("label", "configmap", TARGET, "-n", NS, "tier-"))),
        Row("raw-label-value-with-space", RawSend(
            "PATCH", cm_stored(TARGET), body({"metadata": {"labels": {"tier": "has space!"}}}),
            "application/merge-patch+json"),
            Rejected(INVALID, (TARGET, "metadata.labels", "has space!")), "apival",
            undo=KubectlSend(("label", "configmap", TARGET, "-n", NS, "tier-"))),
        Row("kubectl-label-value-64-chars", KubectlSend((
            "label", "configmap", TARGET, "-n", NS, f"tier={LONG}")),
            Rejected((0, 422), ("63 characters",)), "today",
            undo=KubectlSend(("label", "configmap", TARGET, "-n", NS, "tier-"))),
        Row("raw-label-value-64-chars", RawSend(
            "PATCH", cm_stored(TARGET), body({"metadata": {"labels": {"tier": LONG}}}),
            "application/merge-patch+json"),
            Rejected(INVALID, (TARGET, "metadata.labels", "63")), "apival",
            undo=KubectlSend(("label", "configmap", TARGET, "-n", NS, "tier-"))),
        Row("kubectl-label-bad-key", create(configmap(
            "bad-label-key", metadata={"name": "bad-label-key", "namespace": NS,
                                       "labels": {"-bad_/key": "v"}})),
            Rejected(INVALID, ("bad-label-key", "metadata.labels")), "apival",
            cm_stored("bad-label-key")),
        Row("kubectl-label-key-prefix-too-long", create(configmap(
            "long-prefix", metadata={"name": "long-prefix", "namespace": NS,
                                     "labels": {"a" * 254 + ".io/k": "v"}})),
            Rejected(INVALID, ("long-prefix", "metadata.labels")), "apival",
            cm_stored("long-prefix")),
        Row("kubectl-name-uppercase", create(configmap("BadName")),
            Rejected(INVALID, ("BadName", "metadata.name")), "apival", cm_stored("BadName")),
        Row("kubectl-name-too-long", create(configmap("n" * 254)),
            Rejected(INVALID, ("metadata.name",)), "apival", cm_stored("n" * 254)),
        Row("kubectl-namespace-name-with-dot", create(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "has.dot"}}),
            Rejected(INVALID, ("has.dot", "metadata.name")), "apival",
            "/api/v1/namespaces/has.dot"),
        Row("raw-generate-name-invalid", post(CM_PATH, body(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "Bad_"}})),
            Rejected(INVALID, ("metadata.generateName",)), "apival"),
        Row("raw-no-name-no-generate-name", post(CM_PATH, body(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}})),
            Rejected(INVALID, ("metadata.name",)), "apival"))

    # ClusterColocationProfile (whvalid): the webhook refuses what would misbehave; the schema
    # refuses wrong types and enums (today).
    for rid, name, spec, field_ in (
            ("ccp-unparsable-selector", "bad-selector", {"selector": {"matchExpressions": [
                {"key": "app", "operator": "Bogus", "values": ["x"]}]}}, "spec.selector"),
            ("ccp-unparsable-namespace-selector", "bad-ns-selector", {"namespaceSelector": {
                "matchLabels": {"bad key!": "v"}}}, "spec.namespaceSelector"),
            ("ccp-invalid-patch", "bad-patch", {"patch": {"spec": {"containers": "none"}}},
             "spec.patch"),
            ("ccp-unknown-priority-class", "bad-priority-class",
             {"priorityClassName": "no-such-class"}, "spec.priorityClassName")):
        add(Row(rid, apply(profile(name, **spec)), Rejected(WEBHOOK_CODES, (name, field_)),
                "whvalid", cluster_path(CONFIG, "clustercolocationprofiles", name)))
    add(Row("ccp-bogus-qos-class", apply(profile("bogus-qos", qosClass="Bogus")),
            Rejected(INVALID, ("bogus-qos", "spec.qosClass")), "today",
            cluster_path(CONFIG, "clustercolocationprofiles", "bogus-qos")),
        Row("ccp-priority-wrong-type", apply(profile("prio-type", koordinatorPriority="high")),
            Rejected(INVALID, ("prio-type", "spec.koordinatorPriority")), "today",
            cluster_path(CONFIG, "clustercolocationprofiles", "prio-type")))

    # ElasticQuota (whleader: no side effects; validation as upstream's webhook).
    add(Row("eq-dry-run-then-create", Steps((
            create(eq("eq-dry", {"cpu": "1"}, {"cpu": "2"}), "--dry-run=server"),
            create(eq("eq-dry", {"cpu": "1"}, {"cpu": "2"})))),
            Accepted("a dry run has no side effects: the real create after it succeeds",
                     exists(ns_path(SIGS, "elasticquotas", "eq-dry"))),
            "whleader", ns_path(SIGS, "elasticquotas", "eq-dry")),
        Row("eq-max-below-min", apply(eq("eq-inverted", {"cpu": "4"}, {"cpu": "2"})),
            Rejected(WEBHOOK_CODES, ("eq-inverted", "min")), "whleader",
            ns_path(SIGS, "elasticquotas", "eq-inverted")),
        Row("eq-negative-quantity", apply(eq("eq-negative", {"cpu": "-1"}, {"cpu": "2"})),
            Rejected(WEBHOOK_CODES, ("eq-negative",)), "whleader",
            ns_path(SIGS, "elasticquotas", "eq-negative")),
        Row("eq-unknown-parent", apply(eq("eq-orphan", {"cpu": "1"}, {"cpu": "2"},
                                         {QUOTA_PARENT: "no-such-parent"})),
            Rejected(WEBHOOK_CODES, ("eq-orphan", "no-such-parent")), "defect",
            ns_path(SIGS, "elasticquotas", "eq-orphan")),
        Row("eq-max-wrong-type", apply(eq("eq-max-type", {"cpu": "1"}, "lots")),
            Rejected(INVALID, ("eq-max-type", "spec.max")), "today",
            ns_path(SIGS, "elasticquotas", "eq-max-type")),
        Row("eq-unparsable-quantity", apply(eq("eq-bad-qty", {"cpu": "1"}, {"cpu": "lots"})),
            Rejected(BAD_REQUEST, ("eq-bad-qty", "spec.max")), "defect",
            ns_path(SIGS, "elasticquotas", "eq-bad-qty")))

    # A CR of every other Koordinator kind with a wrong type, a forged enum or a missing
    # required field: the CRD's schema refuses it, naming the field (today's behaviour).
    for rid, obj, plural, field_ in (
            ("nodeslo-wrong-type", cr(SLO, "NodeSLO", "slo-type", {
                "resourceUsedThresholdWithBE": {"cpuSuppressThresholdPercent": "high"}}),
             "nodeslos", "spec.resourceUsedThresholdWithBE.cpuSuppressThresholdPercent"),
            ("nodemetric-wrong-type", cr(SLO, "NodeMetric", "nm-type", {
                "metricCollectPolicy": {"reportIntervalSeconds": "often"}}),
             "nodemetrics", "spec.metricCollectPolicy.reportIntervalSeconds"),
            ("nodemetric-forged-enum", cr(SLO, "NodeMetric", "nm-enum", {
                "metricCollectPolicy": {"nodeMemoryCollectPolicy": "everything"}}),
             "nodemetrics", "spec.metricCollectPolicy.nodeMemoryCollectPolicy"),
            ("reservation-no-template", reservation("rsv-no-template"), "reservations",
             "spec.template"),
            ("reservation-forged-enum", reservation("rsv-enum", template={"spec": {}},
                                                    allocatePolicy="Greedy"),
             "reservations", "spec.allocatePolicy"),
            ("reservation-owners-wrong-type", cr(SCHED, "Reservation", "rsv-owners", {
                "template": {"spec": {}}, "owners": "everyone"}), "reservations",
             "spec.owners"),
            ("podmigrationjob-wrong-type", cr(SCHED, "PodMigrationJob", "pmj-type", {
                "podRef": {"name": "p", "namespace": NS}, "paused": "yes"}),
             "podmigrationjobs", "spec.paused"),
            ("podmigrationjob-no-podref", cr(SCHED, "PodMigrationJob", "pmj-no-ref", {}),
             "podmigrationjobs", "spec.podRef"),
            ("device-wrong-type", cr(SCHED, "Device", "dev-type", {"devices": "gpu"}),
             "devices", "spec.devices"),
            ("clusternetworktopology-wrong-type", cr(
                SCHED, "ClusterNetworkTopology", "cnt-type", {"networkTopologySpec": 3}),
             "clusternetworktopologies", "spec.networkTopologySpec")):
        add(Row(rid, create(obj), Rejected(INVALID, (obj["metadata"]["name"], field_)),
                "today", cluster_path(obj["apiVersion"], plural, obj["metadata"]["name"])))
    for rid, obj, plural, field_ in (
            ("podgroup-wrong-type", cr(SIGS, "PodGroup", "pg-type", {"minMember": "three"},
                                       namespaced=True), "podgroups", "spec.minMember"),
            ("elasticquotaprofile-no-quota-name", cr(
                "quota.koordinator.sh/v1alpha1", "ElasticQuotaProfile", "eqp-missing",
                {"nodeSelector": {}}, namespaced=True), "elasticquotaprofiles",
             "spec.quotaName"),
            ("recommendation-wrong-type", cr(
                "analysis.koordinator.sh/v1alpha1", "Recommendation", "rec-type",
                {"target": "everything"}, namespaced=True), "recommendations",
             "spec.target")):
        add(Row(rid, create(obj), Rejected(INVALID, (obj["metadata"]["name"], field_)),
                "today", ns_path(obj["apiVersion"], plural, obj["metadata"]["name"])))
    add(Row("noderesourcetopology-zones-wrong-type", create({
            "apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
            "metadata": {"name": "nrt-type"}, "zones": "all"}),
            Rejected(INVALID, ("nrt-type", "zones")), "today",
            cluster_path("topology.node.k8s.io/v1alpha2", "noderesourcetopologies",
                         "nrt-type")))

    # slo-controller-config (numbers for nesting; the ConfigMap webhook for each key).
    cm_args = ("patch", "configmap", SLO_CTRL_CONFIG_MAP, "-n", CONFIG_NAMESPACE,
               "--type=merge", "-p")
    # Text, not an object: 3,000 levels are past what Python's json encoder (and decoder) nest.
    deep = '{"enable": true, "extra": ' + '{"a": ' * 3000 + "{}" + "}" * 3001
    unchecked = ("upstream's ConfigMapValidatingWebhook is alpha and off by default: the "
                 "manager keeps the key's last good value and records a Warning event on the "
                 "ConfigMap naming the key")
    for key in SLO_KEYS:
        add(Row(f"slo-config-{key}-not-json", KubectlSend((*cm_args, json.dumps(
                {"data": {key: "{\"enable\": tru"}}))),
                Accepted(unchecked, warning_event(SLO_CTRL_CONFIG_MAP, key)), "today",
                undo=RestoreSloKey(key)))
    add(Row("slo-config-colocation-nested-3000", KubectlSend((*cm_args, json.dumps(
            {"data": {"colocation-config": deep}}))),
            Accepted(unchecked, warning_event(SLO_CTRL_CONFIG_MAP, "colocation-config")),
            "numbers", undo=RestoreSloKey("colocation-config")))

    # Pods (whvalid: the pod validating webhook).
    add(Row("pod-label-qos-class-bogus", create(pod(
            "qos-bogus", labels={"koordinator.sh/qosClass": "bogus"})),
            Rejected(WEBHOOK_CODES, ("koordinator.sh/qosClass",), or_warning=True), "whvalid",
            f"{POD_PATH}/qos-bogus"),
        Row("pod-label-priority-not-a-number", create(pod(
            "prio-nan", labels={"koordinator.sh/priority": "notanumber"})),
            Rejected(WEBHOOK_CODES, ("koordinator.sh/priority",), or_warning=True), "whvalid",
            f"{POD_PATH}/prio-nan"),
        Row("pod-be-with-prod-priority-class", create(pod(
            "be-prod", labels={"koordinator.sh/qosClass": "BE"},
            priorityClassName="koord-prod")),
            Rejected(WEBHOOK_CODES, ("koordinator.sh/qosClass", "koord-prod")), "today",
            f"{POD_PATH}/be-prod"))
    for rid, key, value in POD_ANNOTATIONS_REPORTED:
        name = f"ann-{rid}"
        add(Row(f"pod-annotation-{rid}", create(pod(name, annotations={key: value})),
                Accepted("upstream admits any annotation value; its scheduler plugin fails "
                         "the pod with an event (that plugin is not built here yet: bound)",
                         bound_or_reported(name, key)), "today", f"{POD_PATH}/{name}"))
    for rid, values in POD_ANNOTATIONS_IGNORED:
        name = f"ann-{rid}"
        add(Row(f"pod-annotation-{rid}", create(pod(name, annotations=values)),
                Accepted("upstream ignores the invalid value (documented default); the pod "
                         "is scheduled", pod_bound(name)), "today", f"{POD_PATH}/{name}"))

    # Node annotations: the kubelet's and operators' to write; consumers skip what they cannot
    # parse (numbers: koordlet's cpusuppress with an event).
    node_undo = ("annotate", "node", NODE)
    add(Row("node-annotation-reservation-not-json", KubectlSend((
            "annotate", "node", NODE, "--overwrite", "node.koordinator.sh/reservation={cpu")),
            Accepted("Node annotations are not validated by Kubernetes or upstream; koordlet "
                     "skips it with a Warning event and cpusuppress goes on",
                     warning_event(NODE, "node.koordinator.sh/reservation")), "numbers",
            undo=KubectlSend((*node_undo, "node.koordinator.sh/reservation-"))))
    for rid, key, value, reason in NODE_ANNOTATIONS_IGNORED:
        add(Row(f"node-annotation-{rid}", KubectlSend((
                "annotate", "node", NODE, "--overwrite", f"{key}={value}")),
                Accepted(f"Node annotations are not validated; {reason}"), "today",
                undo=KubectlSend((*node_undo, f"{key}-"))))

    # NodeMetric status with absurd numbers (numbers): last, as a consumer that overflows
    # on them could take the scheduler down. koordlet overwrites the status on its next report.
    for rid, cpu, area in (("cpu-nan", "NaN", "today"), ("cpu-infinity", "+Inf", "today"),
                           ("cpu-1e30", "1e30", "numbers"), ("cpu-negative", "-4", "numbers")):
        # NaN and Inf are not quantities (the CRD's pattern refuses them); 1e30 and -4 are,
        # and kube-apiserver stores them under upstream's CRD: the consumers refuse them.
        expect: Rejected | Accepted = Rejected(INVALID, ("node-1", "cpu")) if area == "today" \
            else Accepted("a valid quantity to kube-apiserver under upstream's CRD; "
                          "LoadAwareScheduling and the slo-controller ignore the NodeMetric "
                          "with a Warning event InvalidNodeMetric naming it",
                          warning_event("node-1", f"cpu quantity '{cpu}'"))
        add(Row(f"nodemetric-status-{rid}", KubectlSend((
                "patch", "nodemetric", "node-1", "--subresource=status", "--type=merge", "-p",
                json.dumps({"status": {"nodeMetric": {"nodeUsage": {"resources": {
                    "cpu": cpu, "memory": "1Gi"}}}}}))), expect, area))
    return rows


ROWS = _rows()


# -- the cluster -----------------------------------------------------------------------------------


@dataclass
class Run:
    """The module's cluster and what the rows found."""

    cluster: LocalCluster
    client: Client
    kubectl: Kubectl
    slo_config: Obj
    workdir: Path
    results: dict[str, str] = field(default_factory=dict)  # row id → summary column
    notes: dict[str, str] = field(default_factory=dict)  # row id → what went wrong
    probes: int = 0
    started: float = field(default_factory=time.monotonic)
    row_started: datetime = field(default_factory=lambda: datetime.now(UTC))
    restarts: dict[str, int] = field(default_factory=dict)  # by component, after the last row


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    if kubectl_binary() is None:
        pytest.skip("kubectl is not installed")
    workdir = prepare_workdir(tmp_path_factory.mktemp("malformed"))
    cluster = LocalCluster(load(SCENARIO_DIR / "ci.yaml"), workdir)
    kubectl = Kubectl(_KubeconfigOf(cluster))
    try:
        cluster.up()
        assert cluster.client is not None
        c = cluster.client
        c.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                              "metadata": {"name": NS}})
        c.create(CONFIGMAPS, configmap(TARGET, data={"k": "v"}), NS)
        wait_for(lambda: _metric_ages(c) is not None, timeout=150, interval=1,
                 what="every node's first NodeMetric report")
        slo = c.get(CONFIGMAPS, SLO_CTRL_CONFIG_MAP, CONFIG_NAMESPACE)
        yield Run(cluster, c, kubectl, slo, workdir)
    finally:
        kubectl.close()
        cluster.down()


@dataclass(frozen=True, slots=True)
class _KubeconfigOf:
    cluster: LocalCluster

    @property
    def kubeconfig(self) -> str:
        return str(self.cluster.components.kubeconfig)


def _metric_ages(c: Client) -> dict[str, float] | None:
    """Seconds since each node's NodeMetric was reported; None while one has not been."""
    items = {m["metadata"]["name"]: m for m in c.list(NODE_METRICS)["items"]}
    ages = {}
    now = datetime.now(UTC)
    for node in ("node-0", "node-1"):
        t = ((items.get(node) or {}).get("status") or {}).get("updateTime")
        if not t:
            return None
        ages[node] = (now - datetime.fromisoformat(t.replace("Z", "+00:00"))).total_seconds()
    return ages


def dead_components(r: Run) -> list[str]:
    """The components that exited, now or since the previous row (the supervisor restarts
    them: a restart counts as a crash); the one place that decides what 'alive' means."""
    procs = r.cluster.components.processes
    dead = [name for name, p in procs.items()
            if not p.alive() or p.restarts > r.restarts.get(name, 0)]
    r.restarts = {name: p.restarts for name, p in procs.items()}
    return dead


def assert_cluster_works(r: Run, row: Row) -> None:
    """Every component alive, a new pod bound within SCHEDULE_WITHIN, NodeMetrics fresh, the
    row's collection still listable."""
    dead = dead_components(r)
    assert not dead, f"{', '.join(dead)} exited after {row.id}; see {r.workdir}/logs"
    r.probes += 1
    name = f"probe-{r.probes}"
    r.client.create(PODS, pod(name), NS)
    try:
        wait_for(lambda: r.client.get(PODS, name, NS)["spec"].get("nodeName"),
                 timeout=SCHEDULE_WITHIN, interval=0.1, what=f"{name} bound after {row.id}")
    finally:
        r.client.delete(PODS, name, NS, grace_period_seconds=0)
    ages = _metric_ages(r.client)
    assert ages is not None and max(ages.values()) < METRIC_FRESH_WITHIN, \
        f"NodeMetrics stale after {row.id}: {ages}"
    if row.stored:
        r.client.request("GET", row.stored.rsplit("/", 1)[0])


def _cleanup(r: Run, row: Row) -> str:
    """Undo the row; what could not be undone (an object the server cannot serve back cannot
    be deleted either), or empty."""
    try:
        if row.undo is not None:
            row.undo(r)
        if row.stored:
            r.client.request("DELETE", row.stored, query={"gracePeriodSeconds": 0})
    except ApiError as e:
        if e.status != 404:
            return f"cleanup failed: {e}"
    return ""


def _judge(row: Row, out: Outcome, r: Run) -> tuple[str, str]:
    """(summary column, what was wrong or empty)."""
    exp = row.expect
    if isinstance(exp, Accepted):
        if not out.ok:
            return "unclear", f"refused ({out.code}): {out.text[:300]}"
        if exp.check is not None:
            try:
                exp.check(r)
            except (AssertionError, ApiError) as e:
                return "silently accepted", f"stored, but {e}"
        return "accepted deliberately", ""
    text = (out.text + "\n" + out.warnings).lower()
    missing = [m for m in exp.mentions if m.lower() not in text]
    if out.ok:
        if exp.or_warning and out.warnings and not missing:
            return "rejected clearly", ""
        return "silently accepted", f"accepted ({out.code}) {out.warnings[:200]}"
    if out.code not in exp.codes:
        return "unclear", f"status {out.code}, want {exp.codes}: {out.text[:300]}"
    if missing:
        return "unclear", f"error does not name {missing}: {out.text[:300]}"
    if row.stored:
        try:
            r.client.request("GET", row.stored)
            return "silently accepted", f"refused ({out.code}) but stored at {row.stored}"
        except ApiError as e:
            if e.status != 404:
                return "unclear", f"GET {row.stored} after the refusal: {e}"
    return "rejected clearly", ""


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_malformed_input(run: Run, row: Row) -> None:
    run.row_started = datetime.now(UTC)
    column, wrong = "unclear", ""
    try:
        column, wrong = _judge(row, row.send(run), run)
        assert_cluster_works(run, row)
    except (AssertionError, ApiError) as e:
        if "exited after" in str(e) or dead_components(run):
            column = "crashed"
        elif column in ("rejected clearly", "accepted deliberately"):
            column = "unclear"
        wrong = f"{wrong} {e}".strip()
    finally:
        run.results[row.id] = column
        wrong = f"{wrong} {_cleanup(run, row)}".strip()
        if wrong:
            run.notes[row.id] = f"[waits for {row.area}] {wrong}"
    assert not wrong, f"{row.id} ({row.send.describe()}): [waits for {row.area}] {wrong}"


COLUMNS = ("rejected clearly", "accepted deliberately", "crashed", "silently accepted",
           "unclear")


def summary(r: Run) -> str:
    counts = {c: sum(1 for v in r.results.values() if v == c) for c in COLUMNS}
    head = f"| inputs tried | {' | '.join(COLUMNS)} |"
    lines = [head, "|" + "---|" * (len(COLUMNS) + 1),
             f"| {len(r.results)} | {' | '.join(str(counts[c]) for c in COLUMNS)} |", ""]
    lines += [f"{rid}: {col}" + (f" -- {' '.join(r.notes[rid].split())[:400]}"
                                 if rid in r.notes else "")
              for rid, col in r.results.items()]
    lines.append(f"\n{len(ROWS)} rows in {time.monotonic() - r.started:.0f} s")
    return "\n".join(lines)


def test_summary(run: Run) -> None:
    """The issue's closing table; nothing crashed, nothing was silently accepted."""
    text = summary(run)
    (run.workdir / "malformed-summary.txt").write_text(text + "\n")
    print("\n" + text)
    assert len(run.results) == len(ROWS), "run the whole module for the summary"
    assert not [k for k, v in run.results.items() if v in ("crashed", "silently accepted")]


def test_table_has_every_class() -> None:
    """At least 55 rows, each id unique and a valid pytest id."""
    assert len(ROWS) >= 55
    assert len({r.id for r in ROWS}) == len(ROWS)
    assert all(re.fullmatch(r"[a-z0-9.-]+", r.id, re.I) for r in ROWS)

