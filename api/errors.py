"""The one error type for malformed values in annotations, labels and ConfigMap keys.

Upstream returns Go errors from its parse helpers (`apis/extension`, `apis/configuration`);
callers here catch a single type and can always tell which key was wrong and why.
"""

from __future__ import annotations


class MalformedValueError(ValueError):
    """A label, annotation or ConfigMap value that cannot be parsed.

    ``key`` is the label/annotation/data key, ``reason`` says what is wrong; ``obj`` may name the
    object ("pod default/web-0") the value came from.
    """

    def __init__(self, key: str, reason: str, *, obj: str | None = None) -> None:
        self.key = key
        self.reason = reason
        self.obj = obj
        where = f"{obj}: " if obj else ""
        super().__init__(f"{where}invalid value for {key!r}: {reason}")
