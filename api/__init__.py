"""Koordinator API types: the Python counterpart of upstream's `apis/` tree.

Sub-packages follow upstream's group/version layout (``api.slo.v1alpha1`` ↔
``apis/slo/v1alpha1``); ``api.extension`` holds the label, annotation and resource keys;
``api.configuration`` the slo-controller-config ConfigMap; ``api.runtime`` the runtime hook
protocol; ``api.crds`` the CRD manifests generated from these models.
"""
