"""metav1.Status errors, as kube-apiserver returns them.

Corresponds to upstream ``k8s.io/apimachinery/pkg/api/errors``: every failed request answers
with a ``Status`` object whose ``reason`` and ``code`` clients (client-go, the Python client,
kubectl) use to tell NotFound from Conflict from Invalid.
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An API failure carrying the ``Status`` object that is sent to the client."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self) -> dict[str, Any]:
        """The metav1.Status body."""
        out: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            out["details"] = self.details
        return out


def _details(group: str, plural: str, name: str | None, **extra: Any) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if name:
        d["name"] = name
    if group:
        d["group"] = group
    d["kind"] = plural
    d.update(extra)
    return d


def _qualified(group: str, plural: str) -> str:
    return f"{plural}.{group}" if group else plural


def not_found(group: str, plural: str, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{_qualified(group, plural)} "{name}" not found',
        _details(group, plural, name),
    )


def already_exists(group: str, plural: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{_qualified(group, plural)} "{name}" already exists',
        _details(group, plural, name),
    )


def conflict(group: str, plural: str, name: str, why: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(group, plural)} "{name}": {why}',
        _details(group, plural, name),
    )


def stale_update(group: str, plural: str, name: str) -> ApiError:
    return conflict(
        group,
        plural,
        name,
        "the object has been modified; please apply your changes to the latest version "
        "and try again",
    )


def invalid(group: str, kind: str, name: str, causes: list[tuple[str, str, str]]) -> ApiError:
    """422 Invalid. ``causes`` are (reason, field, message), e.g.
    ("FieldValueRequired", "spec.containers", "Required value")."""
    msgs = [f"{fld}: {msg}" if fld else msg for _, fld, msg in causes]
    text = msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"
    qkind = f"{kind}.{group}" if group else kind
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = [{"reason": r, "message": m, "field": f} for r, f, m in causes]
    return ApiError(422, "Invalid", f'{qkind} "{name}" is invalid: {text}', details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def request_entity_too_large(limit: int) -> ApiError:
    return ApiError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")


def forbidden(group: str, plural: str, name: str, why: str) -> ApiError:
    q = _qualified(group, plural)
    return ApiError(
        403,
        "Forbidden",
        f'{q} "{name}" is forbidden: {why}',
        _details(group, plural, name),
    )


def method_not_allowed(verb: str, what: str) -> ApiError:
    return ApiError(
        405,
        "MethodNotAllowed",
        f"the server does not allow this method on the requested resource ({verb} {what})",
    )


PATCH_MEDIA_TYPES = ("application/json-patch+json", "application/merge-patch+json",
                     "application/apply-patch+yaml")


def unsupported_media_type(content_type: str,
                           accepted: tuple[str, ...] = PATCH_MEDIA_TYPES) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - "
        f"accepted media types include: {', '.join(accepted)} ({content_type!r} "
        f"is not one of them)",
    )


def too_many_requests(message: str, details: dict[str, Any] | None = None) -> ApiError:
    return ApiError(429, "TooManyRequests", message, details)


def gone(message: str) -> ApiError:
    """410 Gone with reason Expired, as for a too-old resourceVersion."""
    return ApiError(410, "Expired", message)


def resource_version_too_large(requested: int, current: int) -> ApiError:
    """504 with cause ResourceVersionTooLarge: a watch from a version the store has not
    reached (kube-apiserver answers so after waiting; ours never catches up by waiting, as
    only writes through it move the version, so it answers at once)."""
    return ApiError(504, "Timeout",
                    f"Too large resource version: {requested}, current: {current}",
                    {"causes": [{"reason": "ResourceVersionTooLarge",
                                 "message": "Too large resource version"}],
                     "retryAfterSeconds": 1})


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def not_found_path(path: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        "the server could not find the requested resource",
        {"causes": [{"reason": "UnexpectedServerResponse", "message": path}]},
    )


def internal(message: str) -> ApiError:
    return ApiError(500, "InternalError", f"Internal error occurred: {message}")
