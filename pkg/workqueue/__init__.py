"""Work queues for controllers (client-go ``util/workqueue``): a de-duplicating queue with
delayed adds, a rate-limited queue, and the rate limiters (per-item exponential backoff, token
bucket, their combination)."""

from pkg.workqueue.queue import DelayingQueue, Queue, RateLimitingQueue
from pkg.workqueue.rate_limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
)

__all__ = [
    "BucketRateLimiter",
    "DelayingQueue",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "Queue",
    "RateLimiter",
    "RateLimitingQueue",
    "default_controller_rate_limiter",
]
