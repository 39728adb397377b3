"""Lint test of the koordinator chart (charts/koordinator, upstream koordinator-sh/charts
versions/v1.8.0): renders it with hack.helm.render (Go's template engine, as `helm template`)
under default, flipped and custom values and checks what a user installing it would see.

* every render parses and holds the expected objects; the optional ones appear only when their
  values ask for them; images carry the registry and tags; plugin args reach the scheduler and
  descheduler configurations, and each loads with its component's own loader;
* every rendered object is accepted by the embedded API server with dryRun=All and
  fieldValidation=Strict (the CRDs are created for real first so that their kinds exist; the
  PodMonitor/ServiceMonitor kinds of monitoring.coreos.com get a minimal open CRD installed by
  this test, since the chart does not ship Prometheus Operator's), and every built-in object
  conforms to the official client's models (test/apiserver/builtin_schema.py);
* the values key tree is upstream's (shared/upstream/chart-and-images.md §1.2) plus the
  additions listed here and in the chart's README;
* values.schema.json rejects a misspelt key and a wrong type with Helm's message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from descheduler.apis.config import (
    LowNodeLoadArgs,
    MigrationControllerArgs,
    load_descheduler_config,
)
from hack.helm.render import RenderError, render, render_objects
from koordlet import main as koordlet_main
from manager import main as manager_main
from pkg.util.clock import FakeClock
from pkg.util.testdata import upstream_data_dir
from scheduler import main as scheduler_main
from scheduler.apis.config.koord_args import LoadAwareSchedulingArgs
from scheduler.apis.config.loader import load_scheduler_config
from scheduler.factory import build_scheduler
from scheduler.framework.binder import InMemoryBinder
from scheduler.plugins.elasticquota import ElasticQuota
from test.apiserver.builtin_schema import check_builtin, has_model
from test.apiserver.server import ServerHandle, start
from test.apiserver.testing import http_request, open_crd

CHART = Path(__file__).parent
REPO = CHART.parents[1]
NS = "koordinator-system"

Obj = dict[str, Any]

# The objects every install has, as (kind, name).
ALWAYS = {
    ("Namespace", NS),
    ("Service", "koordinator-webhook-service"),
    ("Secret", "koordinator-webhook-certs"),
    ("Deployment", "koord-manager"),
    ("Deployment", "koord-scheduler"),
    ("Deployment", "koord-descheduler"),
    ("DaemonSet", "koordlet"),
    ("DaemonSet", "koord-device-daemon"),
    ("ConfigMap", "koord-scheduler-config"),
    ("ConfigMap", "koord-descheduler-config"),
    ("ConfigMap", "slo-controller-config"),
    ("ConfigMap", "gpu-shared-resource-templates"),
    ("PriorityClass", "koord-prod"),
    ("PriorityClass", "koord-mid"),
    ("PriorityClass", "koord-batch"),
    ("PriorityClass", "koord-free"),
    ("ServiceAccount", "koord-manager"),
    ("ServiceAccount", "koord-scheduler"),
    ("ServiceAccount", "koord-descheduler"),
    ("ServiceAccount", "koordlet"),
    ("ClusterRole", "koord-manager-role"),
    ("ClusterRole", "koord-scheduler-role"),
    ("ClusterRole", "koord-descheduler-role"),
    ("ClusterRole", "koordlet-role"),
    ("Role", "koord-leader-election-role"),
    ("RoleBinding", "koord-leader-election-rolebinding"),
    ("ClusterRoleBinding", "koord-manager-rolebinding"),
    ("ClusterRoleBinding", "koord-scheduler-rolebinding-custom"),
    ("ClusterRoleBinding", "koord-scheduler-rolebinding"),
    ("ClusterRoleBinding", "koord-scheduler-rolebinding-volume"),
    ("ClusterRoleBinding", "koord-descheduler-rolebinding"),
    ("ClusterRoleBinding", "koordlet-rolebinding"),
    ("MutatingWebhookConfiguration", "koordinator-mutating-webhook-configuration"),
    ("ValidatingWebhookConfiguration", "koordinator-validating-webhook-configuration"),
}
# The objects only an enabled value renders.
OPTIONAL = {
    ("DaemonSet", "koord-runtime-proxy"),
    ("Service", "koordlet-service"),
    ("ServiceMonitor", "koordlet-service-monitor"),
    ("PodMonitor", "koord-scheduler-metrics-podmonitor"),
    ("PodMonitor", "koord-descheduler-metrics-podmonitor"),
}
DEFAULT_WEBHOOKS = {"mpod-create.koordinator.sh", "mpod-update.koordinator.sh",
                    "melasticquota.koordinator.sh", "vpod.koordinator.sh",
                    "velasticquota.koordinator.sh"}
OPTIONAL_WEBHOOKS = {"mnode-status.koordinator.sh", "mreservation-create.koordinator.sh",
                     "vconfigmap.koordinator.sh", "vnode.koordinator.sh"}
ENABLE_OPTIONAL_WEBHOOKS = ("NodeMutatingWebhook=true,ReservationMutatingWebhook=true,"
                            "ConfigMapValidatingWebhook=true,NodeValidatingWebhook=true")
DISABLE_DEFAULT_WEBHOOKS = ("PodMutatingWebhook=false,ElasticMutatingWebhook=false,"
                            "PodValidatingWebhook=false,ElasticValidatingWebhook=false")

# Our values beyond upstream's (README.md, "Values added by this chart"), as key paths.
ADDITIONS = {
    f"{c}.{k}" for c in ("koordlet", "deviceDaemon") for k in
    ("nodeSelector", "tolerations", "priorityClassName")
} | {f"{c}.priorityClassName" for c in ("manager", "scheduler", "descheduler")} | {
    "scheduler.pluginArgs",
    "descheduler.pluginArgs",
    "descheduler.deschedulingInterval",
    "descheduler.enableLowNodeLoad",
    "runtimeProxy",
}

CUSTOM_VALUES = {
    "imageRepositoryHost": "registry.example.com:5000",
    "imagePullSecrets": [{"name": "regcred"}],
    "manager": {"replicas": 3, "image": {"tag": "t-manager"}},
    "scheduler": {
        "replicas": 1, "image": {"tag": "t-scheduler"},
        "pluginArgs": {
            "LoadAwareScheduling": {"usageThresholds": {"cpu": 70}},
            "NodeNUMAResource": {"apiVersion": "kubescheduler.config.k8s.io/v1",
                                 "kind": "NodeNUMAResourceArgs",
                                 "defaultCPUBindPolicy": "FullPCPUs"},
        },
    },
    "descheduler": {
        "replicas": 1, "image": {"tag": "t-descheduler"},
        "deschedulingInterval": "30s", "enableLowNodeLoad": True,
        "pluginArgs": {"LowNodeLoad": {"highThresholds": {"cpu": 85}}},
    },
    "koordlet": {"image": {"tag": "t-koordlet"}},
    "deviceDaemon": {"image": {"tag": "t-device-daemon"}},
    "runtimeProxy": {"enabled": True, "image": {"tag": "t-runtime-proxy"}},
}


def rendered(values_files: list[Path] | None = None, set_values: list[str] | None = None,
             kube_version: str = "v1.35.0") -> list[Obj]:
    """The chart's objects, rendered into NS."""
    return cast(list[Obj], render_objects(CHART, values_files or [], set_values or [],
                                          namespace=NS, kube_version=kube_version))


def kinds_names(objs: list[Obj]) -> set[tuple[str, str]]:
    return {(o["kind"], o["metadata"]["name"]) for o in objs}


def find(objs: list[Obj], kind: str, name: str) -> Obj:
    for o in objs:
        if (o["kind"], o["metadata"]["name"]) == (kind, name):
            return o
    raise AssertionError(f"no {kind} {name} in {sorted(kinds_names(objs))}")


def webhook_names(objs: list[Obj]) -> set[str]:
    return {w["name"] for o in objs if o["kind"].endswith("WebhookConfiguration")
            for w in o.get("webhooks") or []}


def embedded(objs: list[Obj], configmap: str) -> Obj:
    """The configuration file a ConfigMap carries, parsed."""
    data = find(objs, "ConfigMap", configmap)["data"][configmap]
    parsed = yaml.safe_load(data)
    assert isinstance(parsed, dict), data
    return parsed


def plugin_args(profile: Obj, name: str) -> Obj:
    entries = [e for e in profile["pluginConfig"] if e["name"] == name]
    assert len(entries) == 1, profile["pluginConfig"]
    args = entries[0]["args"]
    assert isinstance(args, dict)
    return args


def flipped(values: object) -> object:
    """VALUES with every boolean negated (the rest kept, so that the schema still holds)."""
    if isinstance(values, bool):
        return not values
    if isinstance(values, dict):
        return {k: flipped(v) for k, v in values.items()}
    return values


def write_values(tmp: Path, name: str, values: object) -> Path:
    path = tmp / name
    path.write_text(yaml.safe_dump(values))
    return path


@pytest.fixture(scope="module")
def default_objs() -> list[Obj]:
    return rendered()


@pytest.fixture(scope="module")
def flipped_objs(tmp_path_factory: pytest.TempPathFactory) -> list[Obj]:
    values = flipped(yaml.safe_load((CHART / "values.yaml").read_text()))
    assert isinstance(values, dict)
    # a file, not --set: --set splits its argument at commas
    values["featureGates"] = ENABLE_OPTIONAL_WEBHOOKS
    path = write_values(tmp_path_factory.mktemp("values"), "flipped.yaml", values)
    return rendered([path])


@pytest.fixture(scope="module")
def custom_objs(tmp_path_factory: pytest.TempPathFactory) -> list[Obj]:
    path = write_values(tmp_path_factory.mktemp("values"), "custom.yaml", CUSTOM_VALUES)
    return rendered([path])


# --- the chart's files ---------------------------------------------------------------------


def test_every_generated_crd_is_linked_into_the_chart() -> None:
    bases = REPO / "api" / "crds" / "bases"
    links = CHART / "files" / "crds"
    assert sorted(p.name for p in links.iterdir()) == sorted(p.name for p in bases.glob("*.yaml"))
    for base in bases.glob("*.yaml"):
        # a copy would resolve to itself (Bazel's runfiles add links of their own, so the
        # resolved files are compared, not the link text)
        assert (links / base.name).resolve() == base.resolve(), f"{base.name} is not a link"


def test_values_key_tree_is_upstreams_plus_our_additions() -> None:
    # The notes lie beside the data directory; under Bazel the data are links in runfiles,
    # so the directory is found through one of its files.
    data = (upstream_data_dir() / "README.md").resolve().parent
    doc = (data.parent / "chart-and-images.md").read_text()
    section = doc.split("### 1.2 ", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block, "no YAML block in §1.2"
    upstream = leaves(yaml.safe_load(block.group(1)))
    ours = leaves(yaml.safe_load((CHART / "values.yaml").read_text()))
    added = {p: t for p, t in ours.items() if any(p == a or p.startswith(a + ".")
                                                  for a in ADDITIONS)}
    assert {p: t for p, t in ours.items() if p not in added} == upstream
    assert {a for a in ADDITIONS if not any(p == a or p.startswith(a + ".") for p in added)} \
        == set(), "an addition listed here is missing from values.yaml"


def leaves(tree: object, prefix: str = "") -> dict[str, str]:
    """Key path -> type name of each value that is no non-empty mapping."""
    if isinstance(tree, dict) and tree:
        out: dict[str, str] = {}
        for k, v in tree.items():
            out.update(leaves(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: type(tree).__name__}


def test_readme_documents_every_addition() -> None:
    readme = (CHART / "README.md").read_text()
    for addition in ADDITIONS:
        assert f"`{addition}" in readme, addition


# --- renders ---------------------------------------------------------------------------------


def test_default_render_has_the_always_installed_objects_only(default_objs: list[Obj]) -> None:
    names = kinds_names(default_objs)
    assert ALWAYS <= names
    assert not names & OPTIONAL
    crds = {o["metadata"]["name"] for o in default_objs
            if o["kind"] == "CustomResourceDefinition"}
    assert len(crds) == len(list((REPO / "api" / "crds" / "bases").glob("*.yaml")))
    assert webhook_names(default_objs) == DEFAULT_WEBHOOKS


def test_default_images_are_upstreams(default_objs: list[Obj]) -> None:
    images = {o["metadata"]["name"]: o["spec"]["template"]["spec"]["containers"][0]["image"]
              for o in default_objs if o["kind"] in ("Deployment", "DaemonSet")}
    assert images == {
        "koord-manager": "registry.cn-beijing.aliyuncs.com/koordinator-sh/koord-manager:v1.8.0",
        "koord-scheduler":
            "registry.cn-beijing.aliyuncs.com/koordinator-sh/koord-scheduler:v1.8.0",
        "koord-descheduler":
            "registry.cn-beijing.aliyuncs.com/koordinator-sh/koord-descheduler:v1.8.0",
        "koordlet": "registry.cn-beijing.aliyuncs.com/koordinator-sh/koordlet:v1.8.0",
        "koord-device-daemon":
            "registry.cn-beijing.aliyuncs.com/koordinator-sh/koord-device-daemon:v1.8.0",
    }


def test_namespace_label_lets_the_webhooks_skip_it(default_objs: list[Obj]) -> None:
    ns = find(default_objs, "Namespace", NS)
    assert ns["metadata"]["labels"] == {"control-plane": "koordinator"}
    for webhook in find(default_objs, "MutatingWebhookConfiguration",
                        "koordinator-mutating-webhook-configuration")["webhooks"]:
        selector = webhook.get("namespaceSelector")
        if selector:
            assert {"key": "control-plane", "operator": "DoesNotExist"} in \
                selector["matchExpressions"]


def test_default_scheduler_config_loads_with_koord_schedulers_loader(
        default_objs: list[Obj]) -> None:
    text = find(default_objs, "ConfigMap", "koord-scheduler-config")["data"][
        "koord-scheduler-config"]
    config = load_scheduler_config(text, source="koord-scheduler-config")
    profile = config.profiles[0]
    assert profile.scheduler_name == "koord-scheduler"
    cfg = embedded(default_objs, "koord-scheduler-config")["profiles"][0]
    assert plugin_args(cfg, "Coscheduling")["enablePreemption"] is True
    assert plugin_args(cfg, "ElasticQuota")["quotaGroupNamespace"] == NS
    assert plugin_args(cfg, "DeviceShare")["gpuShareUnsupportedModels"] == [
        {"vendor": "huawei", "model": "Ascend-310P3-300I-DUO"}]
    assert {"name": "DefaultPreemption"} not in cfg["plugins"]["postFilter"]["enabled"]


def test_default_scheduler_config_runs_elastic_quota(default_objs: list[Obj]) -> None:
    text = find(default_objs, "ConfigMap", "koord-scheduler-config")["data"][
        "koord-scheduler-config"]
    built = build_scheduler(load_scheduler_config(text), binder=InMemoryBinder(),
                            clock=FakeClock())
    try:
        fwk = built.scheduler.profiles["koord-scheduler"]
        plugin = fwk.plugin("ElasticQuota")
        assert isinstance(plugin, ElasticQuota)
        assert plugin.args.quota_group_namespace == NS
        assert "ElasticQuota" in [p.name for p in fwk.post_filter]
    finally:
        built.scheduler.stop()


def test_default_descheduler_config(default_objs: list[Obj]) -> None:
    cfg = embedded(default_objs, "koord-descheduler-config")
    assert (cfg["apiVersion"], cfg["kind"]) == ("descheduler/v1alpha2",
                                                "DeschedulerConfiguration")
    assert cfg["deschedulingInterval"] == "10s"
    profile = cfg["profiles"][0]
    assert "balance" not in profile["plugins"]
    assert plugin_args(profile, "MigrationController")["namespaces"] == {
        "exclude": ["kube-system", NS]}
    assert plugin_args(profile, "LowNodeLoad")["highThresholds"] == {"cpu": 75, "memory": 80}


def test_default_descheduler_config_loads_with_koord_deschedulers_loader(
        default_objs: list[Obj]) -> None:
    text = find(default_objs, "ConfigMap", "koord-descheduler-config")["data"][
        "koord-descheduler-config"]
    config = load_descheduler_config(text, source="koord-descheduler-config")
    assert config.descheduling_interval == 10.0
    assert config.leader_election.resource_namespace == NS
    [profile] = config.profiles
    assert profile.plugins is not None
    assert (profile.plugins.evict.names(), profile.plugins.balance.names()) == (
        ["MigrationController"], [])
    migration = profile.plugin_args()["MigrationController"]
    assert isinstance(migration, MigrationControllerArgs)
    assert migration.namespaces is not None and migration.namespaces.exclude == [
        "kube-system", NS]


def test_flipped_render_has_every_optional_object(flipped_objs: list[Obj]) -> None:
    names = kinds_names(flipped_objs)
    assert (ALWAYS | OPTIONAL) <= names
    # crds.managed=false drops every CRD
    assert not [o for o in flipped_objs if o["kind"] == "CustomResourceDefinition"]
    assert webhook_names(flipped_objs) == DEFAULT_WEBHOOKS | OPTIONAL_WEBHOOKS
    for kind in ("Mutating", "Validating"):
        conf = find(flipped_objs, f"{kind}WebhookConfiguration",
                    f"koordinator-{kind.lower()}-webhook-configuration")
        for webhook in conf["webhooks"]:
            service = webhook["clientConfig"]["service"]
            assert (service["name"], service["namespace"]) == ("koordinator-webhook-service",
                                                               NS), webhook["name"]
            assert webhook["clientConfig"]["caBundle"], webhook["name"]
    for name in ("koord-manager", "koord-scheduler", "koord-descheduler"):
        assert find(flipped_objs, "Deployment", name)["spec"]["template"]["spec"][
            "hostNetwork"] is True
    cfg = embedded(flipped_objs, "koord-scheduler-config")["profiles"][0]
    assert "enablePreemption" not in plugin_args(cfg, "Coscheduling")
    assert {"name": "DefaultPreemption"} in cfg["plugins"]["postFilter"]["enabled"]
    desched = embedded(flipped_objs, "koord-descheduler-config")["profiles"][0]
    assert desched["plugins"]["balance"] == {"enabled": [{"name": "LowNodeLoad"}]}
    loaded = load_descheduler_config(find(flipped_objs, "ConfigMap", "koord-descheduler-config")[
        "data"]["koord-descheduler-config"], source="koord-descheduler-config")
    assert loaded.profiles[0].plugins is not None
    assert loaded.profiles[0].plugins.balance.names() == ["LowNodeLoad"]


def test_default_webhooks_can_be_turned_off(tmp_path: Path) -> None:
    objs = rendered([write_values(tmp_path, "gates.yaml",
                                  {"featureGates": DISABLE_DEFAULT_WEBHOOKS})])
    assert webhook_names(objs) == set()


def test_a_single_crd_can_be_left_out() -> None:
    objs = rendered(set_values=["crds.devices=false"])
    crds = {o["metadata"]["name"] for o in objs if o["kind"] == "CustomResourceDefinition"}
    assert "devices.scheduling.koordinator.sh" not in crds
    assert "reservations.scheduling.koordinator.sh" in crds


def test_custom_images_replicas_and_plugin_args(custom_objs: list[Obj]) -> None:
    workloads = {o["metadata"]["name"]: o for o in custom_objs
                 if o["kind"] in ("Deployment", "DaemonSet")}
    for name, tag in (("koord-manager", "t-manager"), ("koord-scheduler", "t-scheduler"),
                      ("koord-descheduler", "t-descheduler"), ("koordlet", "t-koordlet"),
                      ("koord-device-daemon", "t-device-daemon"),
                      ("koord-runtime-proxy", "t-runtime-proxy")):
        pod = workloads[name]["spec"]["template"]["spec"]
        assert pod["containers"][0]["image"] == \
            f"registry.example.com:5000/koordinator-sh/{name}:{tag}"
        assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    assert workloads["koord-manager"]["spec"]["replicas"] == 3
    assert workloads["koord-scheduler"]["spec"]["replicas"] == 1

    text = find(custom_objs, "ConfigMap", "koord-scheduler-config")["data"][
        "koord-scheduler-config"]
    config = load_scheduler_config(text, source="koord-scheduler-config")
    loadaware = next(pc.args for pc in config.profiles[0].plugin_config
                     if pc.name == "LoadAwareScheduling")
    assert isinstance(loadaware, LoadAwareSchedulingArgs)
    # the override replaced cpu only; the chart's other args of the plugin stay
    assert loadaware.usage_thresholds == {"cpu": 70, "memory": 95}
    assert loadaware.estimated_scaling_factors == {"cpu": 85, "memory": 70}
    cfg = embedded(custom_objs, "koord-scheduler-config")["profiles"][0]
    assert [e["name"] for e in cfg["pluginConfig"]] == [
        "NodeResourcesFit", "LoadAwareScheduling", "ElasticQuota", "Coscheduling",
        "DeviceShare", "NodeNUMAResource"]
    assert plugin_args(cfg, "NodeNUMAResource")["defaultCPUBindPolicy"] == "FullPCPUs"

    desched = embedded(custom_objs, "koord-descheduler-config")
    assert desched["deschedulingInterval"] == "30s"
    lowload = plugin_args(desched["profiles"][0], "LowNodeLoad")
    assert lowload["highThresholds"] == {"cpu": 85, "memory": 80}
    assert desched["profiles"][0]["plugins"]["balance"] == {"enabled": [{"name": "LowNodeLoad"}]}
    desched_config = load_descheduler_config(
        find(custom_objs, "ConfigMap", "koord-descheduler-config")["data"][
            "koord-descheduler-config"], source="koord-descheduler-config")
    assert desched_config.descheduling_interval == 30.0
    plugins = desched_config.profiles[0].plugins
    assert plugins is not None and plugins.balance.names() == ["LowNodeLoad"]
    loaded = desched_config.profiles[0].plugin_args()["LowNodeLoad"]
    assert isinstance(loaded, LowNodeLoadArgs)
    assert (loaded.low_thresholds, loaded.high_thresholds) == ({"cpu": 45, "memory": 55},
                                                               {"cpu": 85, "memory": 80})


# The images' entrypoints (hack/image) and the component each runs; koord-descheduler,
# koord-device-daemon and koord-runtime-proxy are placeholders without flags so far.
MAINS = {"/koord-manager": manager_main.COMPONENT, "/koord-scheduler": scheduler_main.COMPONENT,
         "/koordlet": koordlet_main.COMPONENT}


@pytest.mark.parametrize("objs_fixture", ["default_objs", "flipped_objs", "custom_objs"])
def test_our_components_accept_the_rendered_command_lines(
        objs_fixture: str, request: pytest.FixtureRequest) -> None:
    """Swapping upstream's images for ours keeps the chart's command lines working: each
    container's args parse with our component's own flag parser (argparse exits on a bad one)."""
    objs: list[Obj] = request.getfixturevalue(objs_fixture)
    checked = set()
    for o in objs:
        if o["kind"] not in ("Deployment", "DaemonSet"):
            continue
        for c in o["spec"]["template"]["spec"]["containers"]:
            component = MAINS.get(c["command"][0])
            if component is None:
                continue
            component.parse_args(c.get("args") or [])
            checked.add(c["command"][0])
    assert checked == set(MAINS)


def test_set_reaches_plugin_args() -> None:
    objs = rendered(set_values=[
        "scheduler.pluginArgs.LoadAwareScheduling.usageThresholds.cpu=70"])
    cfg = embedded(objs, "koord-scheduler-config")["profiles"][0]
    assert plugin_args(cfg, "LoadAwareScheduling")["usageThresholds"] == {"cpu": 70,
                                                                          "memory": 95}


def test_kube_version_picks_the_scheduler_gates_and_namespace_rule() -> None:
    old = rendered(kube_version="v1.20.4")
    args = find(old, "Deployment", "koord-scheduler")["spec"]["template"]["spec"][
        "containers"][0]["args"]
    assert ("--feature-gates=DisableCSIStorageCapacityInformer=true,"
            "CompatiblePodDisruptionBudget=true") in args
    rules = find(old, "ClusterRole", "koord-scheduler-role")["rules"]
    assert {"apiGroups": [""], "resources": ["namespaces"],
            "verbs": ["get", "list", "watch"]} in rules
    new = rendered()
    rules = find(new, "ClusterRole", "koord-scheduler-role")["rules"]
    assert not [r for r in rules if "namespaces" in r["resources"]]


def test_koord_scheduler_may_evict_pods_for_quota_revocation() -> None:
    rules = find(rendered(), "ClusterRole", "koord-scheduler-role")["rules"]
    assert {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]} in rules


# --- values.schema.json --------------------------------------------------------------------


def test_schema_rejects_a_misspelt_key() -> None:
    with pytest.raises(RenderError) as err:
        render(CHART, set_values=["manager.replica=3"])
    assert "values don't meet the specifications of the schema(s)" in str(err.value)
    assert "- manager: Additional property replica is not allowed" in str(err.value)


def test_schema_rejects_wrong_types() -> None:
    with pytest.raises(RenderError) as err:
        render(CHART, set_values=["manager.replicas=two"])
    assert "- manager.replicas: Invalid type. Expected: integer, given: string" in \
        str(err.value)
    with pytest.raises(RenderError) as err:
        render(CHART, set_values=["koordlet.log.level=4"])
    assert "- koordlet.log.level: Invalid type. Expected: string, given: integer" in \
        str(err.value)


# --- the API server accepts every object ---------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[ServerHandle]:
    srv = start()
    try:
        yield srv
    finally:
        srv.stop()


def create(srv: ServerHandle, obj: Obj, dry_run: bool) -> tuple[int, Any]:
    """POST OBJ to its collection, the path found through the server's discovery."""
    group_version = obj["apiVersion"]
    base = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
    code, listing = http_request(srv, "GET", base)
    assert code == 200, (base, listing)
    resource = next(r for r in listing["resources"]
                    if r["kind"] == obj["kind"] and "/" not in r["name"])
    ns = obj["metadata"].get("namespace")
    path = (f"{base}/namespaces/{ns}/{resource['name']}" if resource["namespaced"]
            else f"{base}/{resource['name']}")
    query = "?fieldValidation=Strict" + ("&dryRun=All" if dry_run else "")
    return http_request(srv, "POST", path + query, json.dumps(obj).encode())


@pytest.mark.parametrize("render_name", ["default", "flipped", "custom"])
def test_the_api_server_accepts_every_rendered_object(
        request: pytest.FixtureRequest, server: ServerHandle, render_name: str) -> None:
    objs: list[Obj] = request.getfixturevalue(f"{render_name}_objs")
    problems = [p for o in objs for p in check_builtin(o)]
    assert problems == []
    assert all(has_model(o["apiVersion"], o["kind"]) for o in objs
               if not o["apiVersion"].startswith(("monitoring.coreos.com/",
                                                  "apiextensions.k8s.io/")))
    # The CRDs first, for real, so that the custom kinds exist; then the namespace.
    crds = [o for o in objs if o["kind"] == "CustomResourceDefinition"]
    if not crds:  # the flipped render manages no CRDs: take the default set
        crds = [o for o in request.getfixturevalue("default_objs")
                if o["kind"] == "CustomResourceDefinition"]
    for crd in crds + [open_crd("monitoring.coreos.com", "ServiceMonitor", "servicemonitors"),
                       open_crd("monitoring.coreos.com", "PodMonitor", "podmonitors"),
                       find(objs, "Namespace", NS)]:
        code, body = create(server, crd, dry_run=False)
        assert code in (201, 409), body
    rejected = []
    for obj in objs:
        code, body = create(server, obj, dry_run=True)
        if code not in (200, 201) and not (code == 409 and obj in crds + [
                find(objs, "Namespace", NS)]):
            rejected.append((obj["kind"], obj["metadata"]["name"], code, body.get("message")))
    assert rejected == []
