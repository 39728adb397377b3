"""Koordinator's labels, annotations, extended resources, QoS and priority classes.

Corresponds to upstream `apis/extension` (plus the pod and node keys of `apis/slo/v1alpha1/pod.go`
and `node.go`). Every name of the domain modules is re-exported here, as upstream's one flat Go
package (``from api.extension import LABEL_POD_QOS, get_pod_qos_class_with_default``).

Conventions: pods and nodes are parsed-JSON dicts; label and annotation maps are plain
mappings. ``parse_X`` reads a key and raises :class:`api.errors.MalformedValueError` (naming the
key and what is wrong) for a malformed value, returning the documented empty result when the key
is missing; ``get_X`` applies upstream's fallback instead of failing where upstream ignores bad
values; ``format_X`` writes the value byte for byte as Go does.

Helper modules: ``codec`` (Go's strconv and JSON rules), ``payload`` (the GoPayload base and
field types), ``objects`` (label/annotation access on dicts).
"""

from api.extension.amplification import *  # noqa: F403
from api.extension.colocation_profile import *  # noqa: F403
from api.extension.constants import *  # noqa: F403
from api.extension.coscheduling import *  # noqa: F403
from api.extension.cpu_normalization import *  # noqa: F403
from api.extension.deprecated import *  # noqa: F403
from api.extension.device_share import *  # noqa: F403
from api.extension.elastic_quota import *  # noqa: F403
from api.extension.eviction import *  # noqa: F403
from api.extension.load_aware import *  # noqa: F403
from api.extension.multi_scheduler import *  # noqa: F403
from api.extension.node import *  # noqa: F403
from api.extension.node_colocation import *  # noqa: F403
from api.extension.node_topology import *  # noqa: F403
from api.extension.numa import *  # noqa: F403
from api.extension.pod import *  # noqa: F403
from api.extension.pod_qos import *  # noqa: F403
from api.extension.preemption import *  # noqa: F403
from api.extension.priority import *  # noqa: F403
from api.extension.qos import *  # noqa: F403
from api.extension.resctrl import *  # noqa: F403
from api.extension.reservation import *  # noqa: F403
from api.extension.resource import *  # noqa: F403
from api.extension.schedule_explanation import *  # noqa: F403
