"""scheduler-plugins ``scheduling.sigs.k8s.io/v1alpha1`` (upstream
`apis/thirdparty/scheduler-plugins/pkg/apis/scheduling/v1alpha1`)."""

from api.thirdparty.schedulerplugins.v1alpha1.elastic_quota import ElasticQuota
from api.thirdparty.schedulerplugins.v1alpha1.pod_group import PodGroup

GROUP = "scheduling.sigs.k8s.io"
VERSION = "v1alpha1"

__all__ = ["GROUP", "VERSION", "ElasticQuota", "PodGroup"]
