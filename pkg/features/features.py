"""Koordinator's shared gates: koord-manager (webhooks, quota, colocation profile) and
koord-descheduler.

Corresponds to upstream ``pkg/features/features.go``, with its names, defaults and stages.
"""

from __future__ import annotations

from pkg.features.featuregate import ALPHA, BETA, FeatureSpec

POD_MUTATING_WEBHOOK = "PodMutatingWebhook"
POD_VALIDATING_WEBHOOK = "PodValidatingWebhook"
ELASTIC_MUTATING_WEBHOOK = "ElasticMutatingWebhook"
ELASTIC_VALIDATING_WEBHOOK = "ElasticValidatingWebhook"
NODE_MUTATING_WEBHOOK = "NodeMutatingWebhook"
NODE_VALIDATING_WEBHOOK = "NodeValidatingWebhook"
CONFIG_MAP_VALIDATING_WEBHOOK = "ConfigMapValidatingWebhook"
RESERVATION_MUTATING_WEBHOOK = "ReservationMutatingWebhook"
WEBHOOK_FRAMEWORK = "WebhookFramework"
COLOCATION_PROFILE_SKIP_MUTATING_RESOURCES = "ColocationProfileSkipMutatingResources"
COLOCATION_PROFILE_SKIP_VALIDATING_PRIORITY = "ColocationProfileSkipValidatingPriority"
MULTI_QUOTA_TREE = "MultiQuotaTree"
ELASTIC_QUOTA_IGNORE_POD_OVERHEAD = "ElasticQuotaIgnorePodOverhead"
ELASTIC_QUOTA_GUARANTEE_USAGE = "ElasticQuotaGuaranteeUsage"
ELASTIC_QUOTA_ENABLE_UPDATE_RESOURCE_KEY = "ElasticQuotaEnableUpdateResourceKey"
ELASTIC_QUOTA_EVALUATION_TRANSFORM_POD = "ElasticQuotaEvaluationTransformPod"
DISABLE_DEFAULT_QUOTA = "DisableDefaultQuota"
SUPPORT_PARENT_QUOTA_SUBMIT_POD = "SupportParentQuotaSubmitPod"
ENABLE_QUOTA_ADMISSION = "EnableQuotaAdmission"
ENABLE_QUOTA_ADMISSION_ON_UPDATE = "EnableQuotaAdmissionOnUpdate"
ENABLE_POD_ENHANCED_VALIDATOR = "EnablePodEnhancedValidator"
ENABLE_SYNC_GPU_SHARED_RESOURCE = "EnableSyncGPUSharedResource"
COLOCATION_PROFILE_CONTROLLER = "ColocationProfileController"
VALIDATE_POD_DEVICE_RESOURCE = "ValidatePodDeviceResource"
DISABLE_EXTENDED_RESOURCE_SPEC = "DisableExtendedResourceSpec"
DISABLE_DEVICE_RESOURCE_SPEC = "DisableDeviceResourceSpec"
BINDING_ADMISSION_WEBHOOK = "BindingAdmissionWebhook"
DISABLE_PVC_RESERVATION = "DisablePVCReservation"

DEFAULT_FEATURE_GATES: dict[str, FeatureSpec] = {
    POD_MUTATING_WEBHOOK: FeatureSpec(True, BETA),
    POD_VALIDATING_WEBHOOK: FeatureSpec(True, BETA),
    ELASTIC_MUTATING_WEBHOOK: FeatureSpec(True, BETA),
    ELASTIC_VALIDATING_WEBHOOK: FeatureSpec(True, BETA),
    NODE_MUTATING_WEBHOOK: FeatureSpec(False, ALPHA),
    NODE_VALIDATING_WEBHOOK: FeatureSpec(False, ALPHA),
    CONFIG_MAP_VALIDATING_WEBHOOK: FeatureSpec(False, ALPHA),
    RESERVATION_MUTATING_WEBHOOK: FeatureSpec(False, ALPHA),
    WEBHOOK_FRAMEWORK: FeatureSpec(True, BETA),
    COLOCATION_PROFILE_SKIP_MUTATING_RESOURCES: FeatureSpec(False, ALPHA),
    COLOCATION_PROFILE_SKIP_VALIDATING_PRIORITY: FeatureSpec(False, ALPHA),
    MULTI_QUOTA_TREE: FeatureSpec(False, ALPHA),
    ELASTIC_QUOTA_IGNORE_POD_OVERHEAD: FeatureSpec(False, ALPHA),
    ELASTIC_QUOTA_GUARANTEE_USAGE: FeatureSpec(False, ALPHA),
    ELASTIC_QUOTA_ENABLE_UPDATE_RESOURCE_KEY: FeatureSpec(False, ALPHA),
    ELASTIC_QUOTA_EVALUATION_TRANSFORM_POD: FeatureSpec(False, ALPHA),
    DISABLE_DEFAULT_QUOTA: FeatureSpec(False, ALPHA),
    SUPPORT_PARENT_QUOTA_SUBMIT_POD: FeatureSpec(False, ALPHA),
    ENABLE_QUOTA_ADMISSION: FeatureSpec(False, ALPHA),
    ENABLE_QUOTA_ADMISSION_ON_UPDATE: FeatureSpec(False, ALPHA),
    ENABLE_POD_ENHANCED_VALIDATOR: FeatureSpec(False, ALPHA),
    ENABLE_SYNC_GPU_SHARED_RESOURCE: FeatureSpec(False, ALPHA),
    COLOCATION_PROFILE_CONTROLLER: FeatureSpec(False, ALPHA),
    VALIDATE_POD_DEVICE_RESOURCE: FeatureSpec(False, ALPHA),
    DISABLE_EXTENDED_RESOURCE_SPEC: FeatureSpec(False, ALPHA),
    DISABLE_DEVICE_RESOURCE_SPEC: FeatureSpec(False, ALPHA),
    BINDING_ADMISSION_WEBHOOK: FeatureSpec(False, ALPHA),
    DISABLE_PVC_RESERVATION: FeatureSpec(False, BETA),
}
