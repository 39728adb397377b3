"""API errors: a failed request as an exception carrying the server's ``Status``.

Corresponds to apimachinery ``pkg/api/errors`` (``StatusError`` and the ``IsNotFound``,
``IsConflict``, ``IsGone``/``IsResourceExpired``, ... predicates). A request the server answered
with an error status raises ``ApiError``; one that never got an answer (connection refused or
reset, TLS failure, timeout) raises ``ConnectionFailure``, a subclass with ``status == 0``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class ApiError(Exception):
    """The server refused a request. ``status`` is the HTTP code, ``reason`` the Status reason
    (``NotFound``, ``Conflict``, ``Expired``, ...), ``body`` the Status object when there is one.
    """

    def __init__(self, status: int, reason: str = "", message: str = "",
                 body: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body or {}
        self.headers = headers or {}
        super().__init__(f"{status} {reason}: {message}" if reason else f"{status}: {message}")

    @classmethod
    def from_status(cls, status: int, body: Any, headers: dict[str, str] | None = None
                    ) -> ApiError:
        """From a Status object (or any decoded body) of an error response."""
        if isinstance(body, dict) and body.get("kind") == "Status":
            return cls(int(body.get("code") or status), str(body.get("reason") or ""),
                       str(body.get("message") or ""), body, headers)
        text = body if isinstance(body, str) else ("" if body is None else str(body))
        return cls(status, _DEFAULT_REASONS.get(status, ""), text[:1000], None, headers)

    @property
    def causes(self) -> list[dict[str, Any]]:
        return list((self.body.get("details") or {}).get("causes") or [])

    @property
    def retry_after(self) -> float | None:
        """Seconds the server asked us to wait (Retry-After header or details)."""
        value = self.headers.get("Retry-After") or self.headers.get("retry-after")
        if value:
            try:
                return float(value)
            except ValueError:
                pass
        secs = (self.body.get("details") or {}).get("retryAfterSeconds")
        return float(secs) if isinstance(secs, int | float) else None


class ConnectionFailure(ApiError):
    """No answer from the server: connection refused or reset, TLS error, timeout."""

    def __init__(self, message: str) -> None:
        super().__init__(0, "ConnectionFailure", message)


_DEFAULT_REASONS = {
    400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
    405: "MethodNotAllowed", 406: "NotAcceptable", 409: "Conflict", 410: "Gone",
    415: "UnsupportedMediaType", 422: "Invalid", 429: "TooManyRequests",
    500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout",
}


def _status(err: BaseException) -> int | None:
    return err.status if isinstance(err, ApiError) else None


def is_not_found(err: BaseException) -> bool:
    return _status(err) == 404


def is_already_exists(err: BaseException) -> bool:
    return isinstance(err, ApiError) and err.status == 409 and err.reason == "AlreadyExists"


def is_conflict(err: BaseException) -> bool:
    """A write lost an optimistic-concurrency race (or a precondition failed)."""
    return isinstance(err, ApiError) and err.status == 409 and err.reason != "AlreadyExists"


def is_gone(err: BaseException) -> bool:
    """410: the requested resourceVersion is too old (``Expired`` or ``Gone``)."""
    return _status(err) == 410 or (isinstance(err, ApiError) and err.reason in ("Expired",
                                                                                "Gone"))


def is_too_large_resource_version(err: BaseException) -> bool:
    """The server has not seen the requested resourceVersion yet (it is newer than its data,
    e.g. after the server's storage was replaced)."""
    if not isinstance(err, ApiError):
        return False
    if any(c.get("reason") == "ResourceVersionTooLarge" for c in err.causes):
        return True
    return err.status == 504 and "Too large resource version" in err.message


def is_invalid(err: BaseException) -> bool:
    return _status(err) == 422


def is_forbidden(err: BaseException) -> bool:
    return _status(err) == 403


def is_too_many_requests(err: BaseException) -> bool:
    return _status(err) == 429


def is_connection_failure(err: BaseException) -> bool:
    return isinstance(err, ConnectionFailure)


# client-go's retry.DefaultRetry: 5 tries, 10 ms apart, 10% jitter.
CONFLICT_ATTEMPTS = 5
CONFLICT_BACKOFF_SECONDS = 0.01


def retry_on_conflict(write: Callable[[], T], attempts: int = CONFLICT_ATTEMPTS) -> T:
    """``write()`` again while it loses an optimistic-concurrency race (client-go
    ``retry.RetryOnConflict`` with ``DefaultRetry``); ``write`` must read the object afresh each
    time. Raises what the last try raised, and any other error at once."""
    for attempt in range(attempts):
        try:
            return write()
        except Exception as err:
            if not is_conflict(err) or attempt == attempts - 1:
                raise
        time.sleep(CONFLICT_BACKOFF_SECONDS * (1 + 0.1 * random.random()))
    raise ValueError(f"attempts must be positive, got {attempts}")


__all__ = [
    "ApiError",
    "ConnectionFailure",
    "is_already_exists",
    "is_conflict",
    "is_connection_failure",
    "is_forbidden",
    "is_gone",
    "is_invalid",
    "is_not_found",
    "is_too_large_resource_version",
    "retry_on_conflict",
    "is_too_many_requests",
]
