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


def test_retry_on_conflict_reads_again_until_the_write_lands() -> None:
    conflict = ApiError.from_status(409, status(409, "Conflict"))
    tries: list[int] = []

    def write() -> str:
        tries.append(1)
        if len(tries) < 3:
            raise conflict
        return "written"
    assert errors.retry_on_conflict(write) == "written" and len(tries) == 3

    def always() -> None:
        tries.append(1)
        raise conflict
    tries.clear()
    try:
        errors.retry_on_conflict(always)
    except ApiError as err:
        assert err is conflict and len(tries) == errors.CONFLICT_ATTEMPTS
    else:
        raise AssertionError("the last conflict must be raised")

    def not_found() -> None:
        tries.append(1)
        raise ApiError.from_status(404, status(404, "NotFound"))
    tries.clear()
    try:
        errors.retry_on_conflict(not_found)
    except ApiError as err:
        assert errors.is_not_found(err) and len(tries) == 1  # other errors: at once
    else:
        raise AssertionError("a 404 is no conflict")
