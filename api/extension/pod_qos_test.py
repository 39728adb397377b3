"""Pod-level QoS annotations and core-sched labels (upstream `apis/slo/v1alpha1/pod.go`,
`apis/extension/constants.go`)."""

import pytest

from api.errors import MalformedValueError
from api.extension.pod_qos import (
    ANNOTATION_NETWORK_QOS,
    ANNOTATION_OOM_SCORE_ADJ,
    ANNOTATION_OOM_SCORE_ADJ_SPEC,
    ANNOTATION_POD_BLKIO_QOS,
    ANNOTATION_POD_CPU_BURST,
    ANNOTATION_POD_CPU_QOS,
    ANNOTATION_POD_MEMORY_QOS,
    LABEL_CORE_SCHED_GROUP_ID,
    LABEL_CORE_SCHED_POLICY,
    CoreSchedPolicy,
    PodNetworkQOS,
    format_oom_score_adj_spec,
    format_pod_qos,
    get_core_sched_group_id,
    get_core_sched_policy,
    parse_oom_score_adj,
    parse_oom_score_adj_spec,
    parse_pod_blkio_qos,
    parse_pod_cpu_burst,
    parse_pod_cpu_qos,
    parse_pod_memory_qos,
    parse_pod_network_qos,
)


def test_keys():
    assert ANNOTATION_POD_CPU_BURST == "koordinator.sh/cpuBurst"
    assert ANNOTATION_POD_CPU_QOS == "koordinator.sh/cpuQOS"
    assert ANNOTATION_POD_MEMORY_QOS == "koordinator.sh/memoryQOS"
    assert ANNOTATION_POD_BLKIO_QOS == "koordinator.sh/blkioQOS"
    assert ANNOTATION_NETWORK_QOS == "koordinator.sh/networkQOS"


def test_missing_annotations_are_none():
    for parse in (parse_pod_cpu_burst, parse_pod_cpu_qos, parse_pod_memory_qos,
                  parse_pod_blkio_qos, parse_pod_network_qos, parse_oom_score_adj,
                  parse_oom_score_adj_spec):
        assert parse({}) is None
        assert parse(None) is None


def test_cpu_burst_round_trip():
    raw = ('{"policy":"auto","cpuBurstPercent":1000,"cfsQuotaBurstPercent":300,'
           '"cfsQuotaBurstPeriodSeconds":-1}')
    config = parse_pod_cpu_burst({ANNOTATION_POD_CPU_BURST: raw})
    assert config.cfs_quota_burst_period_seconds == -1
    assert format_pod_qos(config) == raw


def test_cpu_qos_group_identity_range():
    config = parse_pod_cpu_qos({ANNOTATION_POD_CPU_QOS: '{"enable":true,"groupIdentity":-1}'})
    assert config.group_identity == -1
    assert format_pod_qos(config) == '{"enable":true,"groupIdentity":-1}'
    # A pointer field: zero is written.
    config = parse_pod_cpu_qos({ANNOTATION_POD_CPU_QOS: '{"groupIdentity":0,"coreExpeller":false}'})
    assert format_pod_qos(config) == '{"groupIdentity":0,"coreExpeller":false}'
    for bad in (-2, 3):
        with pytest.raises(MalformedValueError):
            parse_pod_cpu_qos({ANNOTATION_POD_CPU_QOS: f'{{"groupIdentity":{bad}}}'})


def test_memory_qos_round_trip():
    raw = ('{"policy":"auto","minLimitPercent":100,"lowLimitPercent":0,"throttlingPercent":80,'
           '"wmarkRatio":95,"wmarkScalePermill":20,"wmarkMinAdj":-25,"priorityEnable":0,'
           '"priority":0,"oomKillGroup":0,"pageCacheEnable":true,"pageCacheLimitPercent":50,'
           '"pageCacheLimitSize":1073741824,"pageCacheReclaimSync":false}')
    config = parse_pod_memory_qos({ANNOTATION_POD_MEMORY_QOS: raw})
    assert config.wmark_min_adj == -25
    assert format_pod_qos(config) == raw
    assert format_pod_qos(parse_pod_memory_qos({ANNOTATION_POD_MEMORY_QOS: '{"Policy":"none"}'})) \
        == '{"policy":"none"}'


def test_blkio_qos_round_trip():
    raw = ('{"blocks":[{"name":"vg-data","type":"volumegroup","ioCfg":{"readIOPS":1000,'
           '"writeBPS":104857600,"ioWeightPercent":60}},{"name":"pvc-1","type":"podvolume",'
           '"ioCfg":{}}]}')
    qos = parse_pod_blkio_qos({ANNOTATION_POD_BLKIO_QOS: raw})
    assert qos.blocks[0].io_cfg.read_iops == 1000
    assert format_pod_qos(qos) == raw


def test_network_qos():
    raw = '{"ingressLimit":"10M","egressLimit":"20M"}'
    qos = parse_pod_network_qos({ANNOTATION_NETWORK_QOS: raw})
    assert (qos.ingress_limit, qos.egress_limit) == ("10M", "20M")
    assert format_pod_qos(qos) == '{"ingressLimit":"10M","egressLimit":"20M"}'
    assert format_pod_qos(PodNetworkQOS(ingress_limit="10M")) == (
        '{"ingressLimit":"10M","egressLimit":"0"}')
    assert parse_pod_network_qos({ANNOTATION_NETWORK_QOS: ""}) is None


@pytest.mark.parametrize(("value", "expected"), [("0", 0), ("-1000", -1000), ("1000", 1000),
                                                 ("+5", 5), ("-999", -999)])
def test_oom_score_adj(value, expected):
    assert parse_oom_score_adj({ANNOTATION_OOM_SCORE_ADJ: value}) == expected


def test_oom_score_adj_spec_round_trip():
    raw = '{"container-a":-500,"container-b":200}'
    spec = parse_oom_score_adj_spec({ANNOTATION_OOM_SCORE_ADJ_SPEC: raw})
    assert spec == {"container-a": -500, "container-b": 200}
    assert format_oom_score_adj_spec({"container-b": 200, "container-a": -500}) == raw


def test_core_sched_labels():
    def pod(labels):
        return {"metadata": {"labels": labels}}

    assert get_core_sched_group_id(pod({LABEL_CORE_SCHED_GROUP_ID: "xxx-yyy"})) == "xxx-yyy"
    assert get_core_sched_group_id(pod({})) == ""
    assert get_core_sched_policy(pod({LABEL_CORE_SCHED_POLICY: "none"})) is CoreSchedPolicy.NONE
    assert get_core_sched_policy(pod({LABEL_CORE_SCHED_POLICY: "exclusive"})) is (
        CoreSchedPolicy.EXCLUSIVE)
    assert get_core_sched_policy(pod({LABEL_CORE_SCHED_POLICY: "Exclusive"})) is (
        CoreSchedPolicy.DEFAULT)
    assert get_core_sched_policy(None) is CoreSchedPolicy.DEFAULT
