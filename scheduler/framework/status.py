"""Framework status codes and the Status a plugin returns.

Corresponds to kube-scheduler ``pkg/scheduler/framework/interface.go`` (``Code``, ``Status``),
with the codes and their meaning as there.
"""

from __future__ import annotations

from enum import IntEnum


class Code(IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2  # preemption may help
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3  # preemption cannot help
    WAIT = 4  # Permit only
    SKIP = 5
    PENDING = 6

    def display(self) -> str:
        return _NAMES[self]


_NAMES = {
    Code.SUCCESS: "Success", Code.ERROR: "Error", Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable", Code.WAIT: "Wait",
    Code.SKIP: "Skip", Code.PENDING: "Pending",
}

_REJECTED = frozenset({Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING})


class Status:
    """The result of running a plugin: a code, reasons, and the plugin that decided.

    ``None`` is a valid Success everywhere a Status is returned, as a nil ``*Status`` is
    upstream; use ``is_success`` to test either.
    """

    __slots__ = ("code", "reasons", "plugin", "error")

    def __init__(self, code: Code = Code.SUCCESS, *reasons: str, plugin: str = "",
                 error: BaseException | None = None) -> None:
        self.code = code
        self.reasons: tuple[str, ...] = reasons
        self.plugin = plugin
        self.error = error

    @classmethod
    def as_error(cls, err: BaseException, plugin: str = "") -> Status:
        return cls(Code.ERROR, str(err), plugin=plugin, error=err)

    def with_plugin(self, plugin: str) -> Status:
        if not self.plugin:
            self.plugin = plugin
        return self

    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    def is_rejected(self) -> bool:
        return self.code in _REJECTED

    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    def message(self) -> str:
        return ", ".join(self.reasons)

    def __repr__(self) -> str:
        plugin = f" plugin={self.plugin}" if self.plugin else ""
        return f"Status({self.code.display()}{plugin}: {self.message()!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return (self.code, self.reasons, self.plugin) == (other.code, other.reasons, other.plugin)

    __hash__ = None  # type: ignore[assignment]


def is_success(status: Status | None) -> bool:
    return status is None or status.code == Code.SUCCESS


def code_of(status: Status | None) -> Code:
    return Code.SUCCESS if status is None else status.code


def unschedulable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE, *reasons)


def unresolvable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons)


def state_not_found(key: str) -> Status:
    """The Error a plugin returns when its cycle-state entry is missing (upstream wording)."""
    return Status(Code.ERROR, f'reading "{key}" from cycleState: not found')


SKIP = Code.SKIP
