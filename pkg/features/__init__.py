"""Feature gates (component-base ``featuregate``) and Koordinator's gate registries.

``default_feature_gate`` holds the gates of koord-manager, koord-descheduler and
koord-scheduler (upstream registers them in one process-wide gate); ``koordlet_feature_gate``
holds koordlet's, runtime hooks included. Components add ``--feature-gates`` with
``gate.add_flag(parser)`` and ask ``gate.enabled(NAME)``.
"""

from pkg.features.featuregate import (
    ALL_ALPHA,
    ALL_BETA,
    ALPHA,
    BETA,
    DEPRECATED,
    GA,
    FeatureGate,
    FeatureGateError,
    FeatureSpec,
    Stage,
)
from pkg.features.features import DEFAULT_FEATURE_GATES
from pkg.features.koordlet_features import KOORDLET_FEATURE_GATES
from pkg.features.scheduler_features import SCHEDULER_FEATURE_GATES

default_feature_gate = FeatureGate(DEFAULT_FEATURE_GATES)
default_feature_gate.add(SCHEDULER_FEATURE_GATES)
koordlet_feature_gate = FeatureGate(KOORDLET_FEATURE_GATES)

__all__ = [
    "ALL_ALPHA",
    "ALL_BETA",
    "ALPHA",
    "BETA",
    "DEFAULT_FEATURE_GATES",
    "DEPRECATED",
    "GA",
    "KOORDLET_FEATURE_GATES",
    "SCHEDULER_FEATURE_GATES",
    "FeatureGate",
    "FeatureGateError",
    "FeatureSpec",
    "Stage",
    "default_feature_gate",
    "koordlet_feature_gate",
]
