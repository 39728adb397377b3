"""``analysis.koordinator.sh/v1alpha1`` (upstream `apis/analysis/v1alpha1`)."""

from api.analysis.v1alpha1.recommendation import Recommendation

GROUP = "analysis.koordinator.sh"
VERSION = "v1alpha1"

__all__ = ["GROUP", "VERSION", "Recommendation"]
