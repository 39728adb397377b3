"""The runtime hooks by upstream name (upstream `pkg/koordlet/runtimehooks/config.go`,
`runtimeHookPlugins`, registered by `RegisterPlugins` in `runtimehooks.go`).

This is the one place hooks are registered. Each hook's module declares its stages, reconciler
levels and rule parsing (`hooks.hooks.RuntimeHook`); the hook server, the reconciler and the
rule updater all run the hooks listed here, in this order: by name, byte order.
"""

from __future__ import annotations

from koordlet.runtimehooks.hooks import (
    batchresource,
    coresched,
    cpuset,
    groupidentity,
    oomscoreadj,
)
from koordlet.runtimehooks.hooks.hooks import RuntimeHook

RUNTIME_HOOKS: dict[str, RuntimeHook] = {
    hook.name: hook
    for hook in sorted((batchresource.HOOK, coresched.HOOK, cpuset.HOOK, groupidentity.HOOK,
                        oomscoreadj.HOOK), key=lambda hook: hook.name)
}
