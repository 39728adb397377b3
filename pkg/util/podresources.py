"""Pod and node resource arithmetic on parsed JSON objects.

Corresponds to Kubernetes' ``k8s.io/component-helpers/resource`` (``PodRequests``,
``PodLimits``) and the scheduler's ``schedutil.GetNonzeroRequests``; every Koordinator
component that sums requests (scheduler, slo-controller, descheduler, koordlet) uses these.

Quantities become integers as upstream's plugins see them: ``cpu`` in millicores
(``MilliValue``, rounded up), everything else in units (``Value``, rounded up; bytes for
memory). ``kubernetes.io/batch-cpu`` and ``kubernetes.io/mid-cpu`` are already integer
millicores in Koordinator (``"2000"`` = 2 cores), so they are plain ``Value``s. Parsing goes
through ``kubernetes.utils.parse_quantity`` and is memoised: the same few strings recur on
every pod.

``measured_quantity_int`` is the entry check for quantities a component reports rather than a
user requests (NodeMetric usage): non-finite values and values beyond ``MAX_QUANTITY_INT`` in
the compared unit are refused, since Go's ``MilliValue``/``Value`` cannot hold them either.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from kubernetes.utils import parse_quantity

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"

# schedutil.DefaultMilliCPURequest / DefaultMemoryRequest: what a container without a request
# counts as when spreading load.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

# Kubernetes compares quantities as int64: cpu as MilliValue, everything else as Value. A quantity
# beyond this in that unit wraps in Go and cannot be a real measurement.
MAX_QUANTITY_INT = 2**63 - 1


def _to_int(quantity: str | int | float, milli: bool) -> int:
    value = parse_quantity(quantity)
    if milli:
        value = value * 1000
    return math.ceil(value)


# The whole conversion, not just the parse, is memoised: Decimal arithmetic and ceil cost as
# much as the parse, and every pod of a workload repeats the same few strings.
_str_to_int = lru_cache(maxsize=4096)(_to_int)


def quantity_int(resource: str, quantity: str | int | float) -> int:
    """A quantity of ``resource`` as the integer upstream compares: milli for cpu, else units.

    Raises ValueError for a malformed quantity.
    """
    if isinstance(quantity, str):
        return _str_to_int(quantity, resource == CPU)
    return _to_int(quantity, resource == CPU)


def measured_quantity_int(resource: str, quantity: str | int | float) -> int:
    """``quantity_int`` of a measured quantity, refusing what no measurement can be.

    Raises ValueError for a malformed or non-finite quantity, a negative one, or one beyond
    ``MAX_QUANTITY_INT`` milli-units (cpu) or units (anything else); the message names the
    resource and the value.
    """
    try:
        value = quantity_int(resource, quantity)
    except (ValueError, ArithmeticError) as err:  # NaN/Infinity end in ArithmeticError
        raise ValueError(f"{resource} quantity {quantity!r} is not a finite quantity") from err
    unit = "milli-units" if resource == CPU else "units"
    if value < 0:
        raise ValueError(f"{resource} quantity {quantity!r} is negative")
    if value > MAX_QUANTITY_INT:
        raise ValueError(f"{resource} quantity {quantity!r} is beyond Kubernetes' int64 range "
                         f"(at most {MAX_QUANTITY_INT} {unit})")
    return value


def resource_list(rl: Mapping[str, Any] | None) -> dict[str, int]:
    """A ``ResourceList`` (name → quantity) as name → integer (see ``quantity_int``)."""
    if not rl:
        return {}
    return {name: quantity_int(name, q) for name, q in rl.items()}


def _add(into: dict[str, int], other: Mapping[str, int]) -> None:
    for name, v in other.items():
        into[name] = into.get(name, 0) + v


def _max(into: dict[str, int], other: Mapping[str, int]) -> None:
    for name, v in other.items():
        if v > into.get(name, 0):
            into[name] = v


def _containers_total(spec: Mapping[str, Any], field: str,
                      non_zero: bool = False) -> dict[str, int]:
    """Sum of containers, raised to the largest init container (with sidecars running)."""
    total: dict[str, int] = {}
    for c in spec.get("containers") or ():
        r = resource_list((c.get("resources") or {}).get(field))
        if non_zero:
            r = _with_defaults(r)
        _add(total, r)
    init_max: dict[str, int] = {}
    sidecars: dict[str, int] = {}
    for c in spec.get("initContainers") or ():
        r = resource_list((c.get("resources") or {}).get(field))
        if non_zero:
            r = _with_defaults(r)
        if c.get("restartPolicy") == "Always":
            # A restartable init container (sidecar) keeps running next to later containers.
            _add(sidecars, r)
            step = dict(sidecars)
        else:
            step = dict(sidecars)
            _add(step, r)
        _max(init_max, step)
    _add(total, sidecars)
    _max(total, init_max)
    return total


def _with_defaults(r: dict[str, int]) -> dict[str, int]:
    # Only a missing request takes the default; an explicit "0" stays 0, as upstream.
    out = dict(r)
    out.setdefault(CPU, DEFAULT_MILLI_CPU_REQUEST)
    out.setdefault(MEMORY, DEFAULT_MEMORY_REQUEST)
    return out


def _pod_level(spec: Mapping[str, Any], field: str, total: dict[str, int]) -> dict[str, int]:
    # Pod-level resources (spec.resources) override the container sum for cpu and memory.
    pod_level = resource_list((spec.get("resources") or {}).get(field))
    for name in (CPU, MEMORY):
        if name in pod_level:
            total[name] = pod_level[name]
    return total


def pod_requests(pod: Mapping[str, Any]) -> dict[str, int]:
    """Effective requests of a pod: containers, init containers, sidecars and overhead."""
    spec = pod.get("spec") or {}
    total = _pod_level(spec, "requests", _containers_total(spec, "requests"))
    _add(total, resource_list(spec.get("overhead")))
    return total


def pod_limits(pod: Mapping[str, Any]) -> dict[str, int]:
    """Effective limits of a pod, computed like requests (``resourcehelper.PodLimits``)."""
    spec = pod.get("spec") or {}
    total = _pod_level(spec, "limits", _containers_total(spec, "limits"))
    if total:
        _add(total, {k: v for k, v in resource_list(spec.get("overhead")).items() if k in total})
    return total


def pod_non_zero_requests(pod: Mapping[str, Any]) -> tuple[int, int]:
    """(milli-cpu, memory) with 100m / 200 MiB for each container that requests none."""
    spec = pod.get("spec") or {}
    total = _containers_total(spec, "requests", non_zero=True)
    pod_level = resource_list((spec.get("resources") or {}).get("requests"))
    cpu = pod_level.get(CPU, total.get(CPU, 0))
    mem = pod_level.get(MEMORY, total.get(MEMORY, 0))
    overhead = resource_list(spec.get("overhead"))
    return cpu + overhead.get(CPU, 0), mem + overhead.get(MEMORY, 0)


def sum_requests(pods: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Requests of several pods added together."""
    total: dict[str, int] = {}
    for pod in pods:
        _add(total, pod_requests(pod))
    return total
