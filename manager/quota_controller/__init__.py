"""koord-manager's quota controllers (upstream ``pkg/quota-controller``).

``profile``: the ``quotaprofile`` controller, ElasticQuotaProfile → root ElasticQuota.
"""

from manager.quota_controller.profile import NAME, QuotaProfileController

__all__ = ["NAME", "QuotaProfileController"]
