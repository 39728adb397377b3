"""Status bodies become ApiError with the predicates client code branches on."""

from __future__ import annotations

from pkg.client import errors
from pkg.client.errors import ApiError, ConnectionFailure


def status(code: int, reason: str, message: str = "", **details: object) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
            "reason": reason, "message": message, "details": details}


def test_predicates() -> None:
    nf = ApiError.from_status(404, status(404, "NotFound", 'pods "x" not found'))
    assert errors.is_not_found(nf) and not errors.is_conflict(nf)
    assert str(nf) == '404 NotFound: pods "x" not found'
    ae = ApiError.from_status(409, status(409, "AlreadyExists"))
    assert errors.is_already_exists(ae) and not errors.is_conflict(ae)
    cf = ApiError.from_status(409, status(409, "Conflict"))
    assert errors.is_conflict(cf)
    gone = ApiError.from_status(200, status(410, "Expired", "too old resource version"))
    assert gone.status == 410 and errors.is_gone(gone)
    large = ApiError.from_status(504, status(504, "Timeout", "Too large resource version",
                                             causes=[{"reason": "ResourceVersionTooLarge"}]))
    assert errors.is_too_large_resource_version(large)
    assert errors.is_connection_failure(ConnectionFailure("refused"))
    assert not errors.is_not_found(ValueError())


def test_non_status_bodies_and_retry_after() -> None:
    e = ApiError.from_status(503, "<html>down</html>", {"Retry-After": "3"})
    assert e.reason == "ServiceUnavailable" and e.message == "<html>down</html>"
    assert e.retry_after == 3.0
    t = ApiError.from_status(429, status(429, "TooManyRequests", retryAfterSeconds=2))
    assert errors.is_too_many_requests(t) and t.retry_after == 2.0
