"""qosmanager framework: upstream `pkg/koordlet/qosmanager/framework` and `qosmanager.go`.

A strategy is configured from NodeSLO on every round (never cached), so a NodeSLO change takes
effect on the next tick. Each enabled strategy runs on its own interval thread; the whole
manager is off when `--collect-res-used-interval` is below one second, as upstream, because the
strategies' inputs would not be collected.
"""

from __future__ import annotations

import argparse
import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Protocol

from api.slo.v1alpha1.nodeslo import NodeSLO
from koordlet.metriccache.metric_cache import MetricCache
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.util.system.cgroup_env import CgroupEnv
from koordlet.util.system.config import Config as SystemConfig
from pkg.client.rest import Client
from pkg.events.recorder import EventRecorder
from pkg.features.featuregate import FeatureGate
from pkg.util.clock import Clock, RealClock

logger = logging.getLogger(__name__)

KubeDict = dict[str, Any]


class StatesInformer(Protocol):
    """What strategies read from statesinformer (upstream `statesinformer.StatesInformer`)."""

    def get_node(self) -> KubeDict | None: ...

    def get_node_slo(self) -> NodeSLO | None: ...

    def get_all_pods(self) -> list[KubeDict]: ...


@dataclass(slots=True)
class Config:
    """Upstream `qosmanager/framework.Config`, flags and defaults as upstream."""

    reconcile_interval_seconds: int = 1
    cpu_suppress_interval_seconds: int = 1
    cpu_evict_interval_seconds: int = 1
    memory_evict_interval_seconds: int = 1
    memory_evict_cool_time_seconds: int = 4
    cpu_evict_cool_time_seconds: int = 20
    only_evict_by_api: bool = False

    def add_flags(self, parser: argparse._ActionsContainer) -> None:
        for name in (
            "reconcile_interval_seconds",
            "cpu_suppress_interval_seconds",
            "cpu_evict_interval_seconds",
            "memory_evict_interval_seconds",
            "memory_evict_cool_time_seconds",
            "cpu_evict_cool_time_seconds",
        ):
            parser.add_argument(
                "--" + name.replace("_", "-"), dest=name, type=int, default=getattr(self, name)
            )
        parser.add_argument(
            "--only-evict-by-api",
            dest="only_evict_by_api",
            type=lambda v: v.lower() in ("1", "t", "true"),
            nargs="?",
            const=True,
            default=self.only_evict_by_api,
        )


@dataclass(slots=True)
class Context:
    """Everything a strategy may use (upstream `framework.Options`)."""

    env: CgroupEnv
    executor: ResourceUpdateExecutor
    metric_cache: MetricCache
    states: StatesInformer
    feature_gate: FeatureGate
    config: Config = field(default_factory=Config)
    collect_res_used_interval_seconds: float = 1.0
    clock: Clock = field(default_factory=RealClock)
    # Pod UID -> monotonic expiry of its eviction, shared by the evicting strategies so that
    # neither evicts a pod again while its deletion is in flight (upstream's podsEvicted cache).
    evicted_pods: dict[str, float] = field(default_factory=dict)
    # Eviction goes through the API; without a client the evicting strategies only log.
    event_recorder: EventRecorder | None = None
    client: Client | None = None
    # Host paths outside the cgroup tree (resctrl under `sys_fs_root_dir`, /proc).
    system: SystemConfig = field(default_factory=SystemConfig.host_mode)


class QOSStrategy(Protocol):
    """A strategy declares its name and, in `enabled`, its feature gate (upstream
    `framework.QOSStrategy`)."""

    name: str

    def enabled(self) -> bool: ...

    def interval_seconds(self) -> float: ...

    def run_once(self) -> None: ...


class StrategyFactory(Protocol):
    """A strategy class: its upstream name, and built from the shared context (upstream
    `framework.QOSStrategyFactory`)."""

    @property
    def name(self) -> str: ...

    def __call__(self, ctx: Context) -> QOSStrategy: ...


class QOSManager:
    def __init__(self, ctx: Context, factories: dict[str, StrategyFactory]) -> None:
        self.ctx = ctx
        self.strategies = [factory(ctx) for factory in factories.values()]

    def enabled(self) -> bool:
        return self.ctx.collect_res_used_interval_seconds >= 1.0

    def run(self, stop: threading.Event) -> list[threading.Thread]:
        """Starts one thread per enabled strategy; they end when `stop` is set."""
        if not self.enabled():
            logger.info("qosmanager disabled: collect-res-used-interval < 1s")
            return []
        threads = []
        for strategy in self.strategies:
            if not strategy.enabled():
                continue
            t = threading.Thread(
                target=_loop, args=(strategy, stop), name=f"qos-{strategy.name}", daemon=True
            )
            t.start()
            threads.append(t)
        return threads


def _loop(strategy: QOSStrategy, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            strategy.run_once()
        except Exception:  # one bad round must not end the strategy (upstream wait.Until)
            logger.exception("qos strategy %s failed", strategy.name)
        stop.wait(strategy.interval_seconds())
