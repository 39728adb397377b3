"""The node-wide rules the hooks read (upstream `pkg/koordlet/runtimehooks/rule`).

One :class:`Rules` is shared by the hook server and the reconciler, so a rule update is visible
to both at once. It is made of each hook's own rule, defined and parsed in the hook's module
(upstream's `hooks/<name>/rule.go`), plus the node facts the hooks need.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from koordlet.runtimehooks.hooks.batchresource import BatchResourceRule
from koordlet.runtimehooks.hooks.coresched import CoreSchedRule
from koordlet.runtimehooks.hooks.cpuset import CPUSetRule
from koordlet.runtimehooks.hooks.groupidentity import GroupIdentityRule


@dataclass(slots=True)
class Rules:
    """All rules, plus the node facts the hooks need."""

    batch_resource: BatchResourceRule = field(default_factory=BatchResourceRule)
    core_sched: CoreSchedRule | None = None
    cpuset: CPUSetRule | None = None
    group_identity: GroupIdentityRule | None = None
    # cpu.bvt_warp_ns exists in the kubepods root (or the group-identity sysctl does).
    group_identity_supported: bool = False
    # The kernel.sched_group_identity_enabled path where the kernel has it, and whether
    # GroupIdentity switched it on already.
    group_identity_sysctl: str = ""
    group_identity_kernel_enabled: bool = False
    be_cpu_manager_enabled: bool = False
    disable_unset_cpu_quota: bool = False
