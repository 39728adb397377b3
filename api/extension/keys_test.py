"""Small label modules: prefixes, multi-scheduler, preemption, webhook, explanation, profile."""

from api.extension import constants
from api.extension.colocation_profile import (
    ANNOTATION_SKIP_UPDATE_RESOURCES,
    LABEL_CONTROLLER_MANAGED,
    is_controller_managed,
    should_skip_update_resources,
)
from api.extension.multi_scheduler import (
    ANNOTATION_SCHEDULING_HINT,
    DEPRECATED_ANNOTATION_SCHEDULING_HINT,
    LABEL_SCHEDULER_NAME,
    SchedulingHint,
    format_scheduling_hint,
    get_scheduler_name,
    parse_scheduling_hint,
)
from api.extension.pod import (
    ANNOTATION_POD_PRE_ALLOCATABLE_PRIORITY,
    LABEL_POD_MUTATING_UPDATE,
    LABEL_POD_PRE_ALLOCATABLE,
    LABEL_POD_SKIP_ENHANCED_VALIDATION,
    is_pod_mutating_update,
    is_pod_pre_allocatable,
    is_pod_skip_enhanced_validation,
    parse_pre_allocatable_priority,
)
from api.extension.preemption import (
    LABEL_DISABLE_PREEMPTIBLE,
    LABEL_POD_PREEMPTION_POLICY,
    PreemptionPolicy,
    get_pod_koord_preemption_policy,
    is_pod_preemptible,
)
from api.extension.schedule_explanation import (
    LABEL_QUESTIONED_OBJECT_KEY,
    LABEL_TOPOLOGY_KEY_TO_EXPLAIN,
    get_explanation_key,
    get_topology_key_to_explain,
)


def pod(labels=None, scheduler_name=None):
    obj = {"metadata": {"labels": labels or {}}, "spec": {}}
    if scheduler_name:
        obj["spec"]["schedulerName"] = scheduler_name
    return obj


def test_prefixes():
    assert constants.DOMAIN_PREFIX == "koordinator.sh/"
    assert constants.RESOURCE_DOMAIN_PREFIX == "kubernetes.io/"
    assert constants.SCHEDULING_DOMAIN_PREFIX == "scheduling.koordinator.sh"
    assert constants.INTERNAL_SCHEDULING_DOMAIN_PREFIX == "internal.scheduling.koordinator.sh"
    assert constants.NODE_DOMAIN_PREFIX == "node.koordinator.sh"
    assert constants.POD_DOMAIN_PREFIX == "pod.koordinator.sh"
    assert constants.GANG_DOMAIN_PREFIX == "gang.scheduling.koordinator.sh"
    assert constants.QUOTA_DOMAIN_PREFIX == "quota.scheduling.koordinator.sh"


def test_scheduler_name():
    assert get_scheduler_name(pod({LABEL_SCHEDULER_NAME: "koord-x"}, "koord-scheduler")) == (
        "koord-x")
    assert get_scheduler_name(pod({}, "koord-scheduler")) == "koord-scheduler"
    assert get_scheduler_name(None) == ""


def test_scheduling_hint_keys_and_round_trip():
    raw = ('{"nodeNames":["n1"],"preferredNodeNames":["n2","n3"],'
           '"extensions":{"a":{"x":1},"b":true}}')
    hint = parse_scheduling_hint({ANNOTATION_SCHEDULING_HINT: raw})
    assert hint.preferred_node_names == ["n2", "n3"]
    assert format_scheduling_hint(hint) == raw
    # The deprecated key is read only when the internal one is missing or empty.
    deprecated = '{"nodeNames":["old"]}'
    assert parse_scheduling_hint({DEPRECATED_ANNOTATION_SCHEDULING_HINT: deprecated}).node_names \
        == ["old"]
    assert parse_scheduling_hint({ANNOTATION_SCHEDULING_HINT: "",
                                  DEPRECATED_ANNOTATION_SCHEDULING_HINT: deprecated}).node_names \
        == ["old"]
    assert parse_scheduling_hint({ANNOTATION_SCHEDULING_HINT: raw,
                                  DEPRECATED_ANNOTATION_SCHEDULING_HINT: deprecated}) == hint
    assert parse_scheduling_hint({}) is None
    assert format_scheduling_hint(SchedulingHint()) == "{}"


def test_preemption_labels():
    assert get_pod_koord_preemption_policy(pod({LABEL_POD_PREEMPTION_POLICY: "Never"})) is (
        PreemptionPolicy.NEVER)
    assert get_pod_koord_preemption_policy(
        pod({LABEL_POD_PREEMPTION_POLICY: "PreemptLowerPriority"})) is (
        PreemptionPolicy.PREEMPT_LOWER_PRIORITY)
    assert get_pod_koord_preemption_policy(pod({LABEL_POD_PREEMPTION_POLICY: "never"})) is None
    assert is_pod_preemptible(pod())
    assert is_pod_preemptible(pod({LABEL_DISABLE_PREEMPTIBLE: "false"}))
    assert not is_pod_preemptible(pod({LABEL_DISABLE_PREEMPTIBLE: "true"}))


def test_webhook_labels():
    assert is_pod_mutating_update(pod({LABEL_POD_MUTATING_UPDATE: "true"}))
    assert is_pod_skip_enhanced_validation(pod({LABEL_POD_SKIP_ENHANCED_VALIDATION: "true"}))
    assert is_pod_pre_allocatable(pod({LABEL_POD_PRE_ALLOCATABLE: "true"}))
    assert not is_pod_pre_allocatable(pod({LABEL_POD_PRE_ALLOCATABLE: "yes"}))
    assert parse_pre_allocatable_priority({ANNOTATION_POD_PRE_ALLOCATABLE_PRIORITY: "10"}) == 10
    assert parse_pre_allocatable_priority({}) == 0


def test_explanation_and_profile_keys():
    assert get_explanation_key({LABEL_QUESTIONED_OBJECT_KEY: "ns/pod"}) == "ns/pod"
    assert get_topology_key_to_explain(pod({LABEL_TOPOLOGY_KEY_TO_EXPLAIN: "zone"})) == "zone"
    assert should_skip_update_resources({ANNOTATION_SKIP_UPDATE_RESOURCES: ""})
    assert not should_skip_update_resources({})
    assert is_controller_managed({LABEL_CONTROLLER_MANAGED: "true"})
