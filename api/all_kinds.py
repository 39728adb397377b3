"""Imports every API group package so that ``api.meta.registered_kinds()`` sees every kind.

Import this module (for its side effect) before looking kinds up: the CRD generator, the object
loader and the fixture tests all do.
"""

from __future__ import annotations

import api.analysis.v1alpha1
import api.config.v1alpha1
import api.quota.v1alpha1
import api.scheduling.v1alpha1
import api.slo.v1alpha1
import api.thirdparty.noderesourcetopology.v1alpha1
import api.thirdparty.noderesourcetopology.v1alpha2
import api.thirdparty.schedulerplugins.v1alpha1  # noqa: F401

GROUP_PACKAGES = (
    "api.analysis.v1alpha1",
    "api.config.v1alpha1",
    "api.quota.v1alpha1",
    "api.scheduling.v1alpha1",
    "api.slo.v1alpha1",
    "api.thirdparty.noderesourcetopology.v1alpha1",
    "api.thirdparty.noderesourcetopology.v1alpha2",
    "api.thirdparty.schedulerplugins.v1alpha1",
)
