"""The local cluster as a whole: start the components, install the chart, run a scenario while
sampling it, then report (upstream's counterpart is a real cluster with the Helm chart; this is
``hack/local-up``'s engine).

``LocalCluster.up()`` starts the API server with the simulated nodes, installs charts/koordinator
(rendered by hack/helm, less its workloads; ``bootstrap.py``), then two koord-manager replicas
(their webhooks must be serving before the scenario's ClusterColocationProfile, installed next,
and any batch pod are created), two koord-scheduler replicas, two koord-descheduler replicas
(the chart's configuration: LowNodeLoad and the MigrationController) and the koordlets, each
under the
chart's ServiceAccount of its component; it fails when one of them does not get ready. From
then on a component that exits is restarted by the supervisor (``supervisor.py``), which says so
at once; progress lines and the report count restarts, and the report names the replica holding each
Lease and the requests the API server denied (403). ``run()`` submits the workload on the
day's clock, samples every ``sampleIntervalSeconds``, prints progress, and returns the report.
With ``settle`` the end waits, with the controllers stopped, until no batch pod is running, so
the API server's objects hold still for checking the report against them. ``down()`` stops
every process.
"""

from __future__ import annotations

import logging
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from pkg.client import ApiError, ConnectionFailure
from pkg.client.resources import EVENTS, POD_GROUPS, RESERVATIONS
from pkg.client.rest import Client
from test.e2e.cluster import chart_webhooks, install_chart, wait_for

from . import bootstrap
from . import report as reports
from .components import (
    DESCHEDULER,
    LEASE_NAMESPACE,
    LEASES,
    MANAGER,
    SCHEDULER,
    Components,
    node_specs,
)
from .recorder import Recorder, Sample, phase_counts
from .scenario import Scenario
from .supervisor import Restart, describe_exit
from .workload import BACKFILL, BATCH, GANG, ONLINE, QUOTA, Workload

log = logging.getLogger(__name__)

PROGRESS_EVERY_SECONDS = 10.0
# The driver submits a scenario's pods as its users and Job controller would, all at once at
# each wave: client-go's default 5 QPS would stretch a 2,000-pod day by minutes.
CLIENT_QPS = 200.0
CLIENT_BURST = 400


def _tick_seconds(scenario: Scenario) -> float:
    """How often the workload looks at the pods: each look lists them all."""
    return 1.0 if scenario.pod_count() <= 500 else 2.0


class LocalCluster:
    def __init__(self, scenario: Scenario, workdir: Path, out: TextIO = sys.stdout,
                 settle: bool = False) -> None:
        self.scenario = scenario
        self.workdir = workdir
        self.out = out
        self.settle = settle
        self.components = Components(workdir, scenario, self._restarting)
        self.client: Client | None = None
        self.recorder: Recorder | None = None
        self.workload: Workload | None = None
        self.started = 0.0
        self.thresholds: reports.Thresholds | None = None  # LowNodeLoad's, once up

    @property
    def samples(self) -> list[Sample]:
        return self.recorder.samples if self.recorder is not None else []

    def say(self, msg: str) -> None:
        print(msg, file=self.out, flush=True)

    # -- up -----------------------------------------------------------------------------------

    def up(self) -> None:
        t0 = time.monotonic()
        c = self.components
        self.say(f"local-up: workdir {self.workdir} (component logs in {self.workdir}/logs)")
        c.start_apiserver()
        self.client = Client.from_kubeconfig(str(c.kubeconfig), qps=CLIENT_QPS,
                                             burst=CLIENT_BURST)
        self.say(f"local-up: API server {c.apiserver_url} with {self.scenario.nodes.count} "
                 f"simulated nodes; watch it live with\n"
                 f"    kubectl --kubeconfig {c.kubeconfig} get pods -A")
        chart = bootstrap.render(self.scenario)
        install_chart(self.client, chart)  # as helm would, less the workloads
        self.say("local-up: installed charts/koordinator (CRDs, ServiceAccounts and RBAC, "
                 "PriorityClasses, ConfigMaps, webhook configurations)")
        c.start_manager()
        wait_for(self._webhook_ready, timeout=30, what="the manager's webhooks")
        self.say(f"local-up: {' and '.join(c.manager_probes_urls)} serving webhooks, "
                 f"{c.leader(self.client, MANAGER) or 'one'} leading")
        bootstrap.install_scenario(self.client, self.scenario)
        self.say("local-up: installed ClusterColocationProfile spark-demo" + (
            f" and ElasticQuotas {', '.join(q.name for q in self.scenario.quotas)}"
            if self.scenario.quotas else ""))
        c.start_scheduler(bootstrap.scheduler_config_text(chart))
        self.say(f"local-up: {' and '.join(c.scheduler_urls)} serving on "
                 f"{' and '.join(c.scheduler_urls.values())}")
        descheduler_config = bootstrap.descheduler_config(chart)
        self.thresholds = reports.low_node_load_thresholds(descheduler_config)
        c.start_descheduler(descheduler_config)
        self.say(f"local-up: {' and '.join(c.descheduler_urls)} serving on "
                 f"{' and '.join(c.descheduler_urls.values())} (LowNodeLoad every "
                 f"{descheduler_config.get('deschedulingInterval')})")
        nodes = [str(n["name"]) for n in node_specs(self.scenario)]
        c.start_koordlets(nodes)
        self.say(f"local-up: {len(nodes)} koordlets running (simulated metrics); "
                 f"up in {time.monotonic() - t0:.1f} s")

    def _webhook_ready(self) -> bool:
        """Both configurations point at the leading manager: the chart's service clientConfig
        (with a placeholder caBundle) until it writes its own URL and CA into every webhook."""
        assert self.client is not None
        hooks = chart_webhooks(self.client)
        return hooks is not None and all((h.get("clientConfig") or {}).get("url")
                                         and h["clientConfig"].get("caBundle") for h in hooks)

    # -- run ----------------------------------------------------------------------------------

    def run(self, duration: float, during: Callable[[float], None] | None = None
            ) -> reports.Report:
        assert self.client is not None
        sc = self.scenario
        self.started = time.time()
        wl = self.workload = Workload(self.client, sc, self.started)
        rec = self.recorder = Recorder(self.client, self.components.koordlet_metrics,
                                       quotas=bool(sc.quotas))
        tick = _tick_seconds(sc)
        next_sample = next_progress = 0.0
        self.say(f"local-up: scenario {sc.name!r}: {sc.pod_count()} pods over a day of "
                 f"{sc.day_length_seconds:g} s, running {duration:g} s")
        unreachable = False
        while (t := time.time() - self.started) < duration:
            try:
                pods = rec.list_pods()
                wl.step(t, {(p["metadata"]["namespace"], p["metadata"]["name"]): p
                            for p in pods})
                rec.observe(t, pods)
                if t >= next_sample:
                    rec.sample(t, pods)
                    next_sample += sc.sample_interval_seconds
            except ApiError as e:
                # The API server restarting (the supervisor brings it back): the driver
                # carries on from where it was at the next tick.
                if not unreachable:
                    self.say(f"local-up: [{t:.0f}s] the API server failed a request ({e}); "
                             f"trying again every {tick:g} s")
                unreachable = True
            else:
                if unreachable:
                    self.say(f"local-up: [{t:.0f}s] the API server answers again")
                unreachable = False
            if t >= next_progress and self.samples:
                self.say(self._progress(t, duration, self.samples[-1]))
                next_progress += PROGRESS_EVERY_SECONDS
            if during is not None:
                during(t)
            time.sleep(max(0.0, tick - (time.time() - self.started - t)))
        return self.finish()

    def _restarting(self, r: Restart) -> None:
        """The supervisor saw a component exit (called on its thread)."""
        self.say(f"local-up: {r.name} {describe_exit(r.exit_code)}; restarting it in "
                 f"{r.delay:g} s (restart {r.restarts}, log {self.components.log_path(r.name)})")

    def _progress(self, t: float, duration: float, s: Sample) -> str:
        def count(kind: str, phase: str) -> int:
            return s.phases.get(kind, {}).get(phase, 0)

        _, co, online = reports.utilisation([s])
        util = f"; cluster cpu {co[0]:.0f}% (online only {online[0]:.0f}%)" if co else ""
        restarts = ", ".join(f"{p.name} {p.restarts}" for p in
                             self.components.processes.values() if p.restarts)
        util += f"; restarts: {restarts}" if restarts else ""
        if self.scenario.quota_jobs:
            util += (f"; quota jobs {count(QUOTA, 'Running')} running, "
                     f"{count(QUOTA, 'Pending')} pending")
        return (f"[{t:5.0f}s/{duration:.0f}s] online {count(ONLINE, 'Running')} running; "
                f"batch {count(BATCH, 'Running')} running, {count(BATCH, 'Pending')} pending, "
                f"{count(BATCH, 'Succeeded')} done; batch-cpu allocatable "
                f"{sum(n.batch_allocatable_cpu for n in s.nodes.values()):.1f} cores{util}")

    def finish(self) -> reports.Report:
        """Stop submitting, take the last sample, and write the report."""
        rec = self.recorder
        assert self.client is not None and self.workload is not None and rec is not None
        leases = self._leases()  # before settling: stopped leaders release their Leases
        if self.settle:
            self._settle()
        t = time.time() - self.started
        pods = rec.list_pods()
        rec.observe(t, pods)
        rec.sample(t, pods, scrape=not self.settle)
        events = self.client.list(EVENTS)["items"]
        pod_groups = self.client.list(POD_GROUPS)["items"]
        reservations = self.client.list(RESERVATIONS)["items"]
        return self.write_report(t, pods, events, leases, pod_groups, reservations)

    def _settle(self) -> None:
        """Controllers off, then wait until no batch or gang pod runs: the objects hold
        still."""
        rec = self.recorder
        assert rec is not None
        self.components.stop_controllers()
        longest = max([j.run_seconds for j in self.scenario.batch]
                      + [g.run_seconds for g in self.scenario.gangs]
                      + [r.backfill.run_seconds for r in self.scenario.rollouts if r.backfill],
                      default=0.0)

        def quiet() -> bool:
            phases = phase_counts(rec.list_pods())
            return not any(phases.get(kind, {}).get("Running")
                           for kind in (BATCH, GANG, BACKFILL))

        wait_for(quiet, timeout=longest + 15, interval=0.5, what="batch pods to finish")

    def write_report(self, t: float, pods, events,
                     leases: list[reports.LeaseRow] | None = None,
                     pod_groups: list[reports.Obj] | None = None,
                     reservations: list[reports.Obj] | None = None) -> reports.Report:
        assert self.workload is not None
        sc = self.scenario
        # The pods Deployments' ReplicaSets created count as created, those past their
        # replicas as replacements.
        controlled = len(self.recorder.controlled) if self.recorder is not None else 0
        replicas = sum(s.replica_count(sc.nodes.count) for s in sc.online if s.deployment)
        r = reports.build(sc.name, sc.nodes.count, sc.day_length_seconds, t,
                          self.samples, pods, events, self.workload.created + controlled,
                          self.workload.replaced + max(0, controlled - replicas),
                          pod_groups or [], self.started, reservations or [])
        r.leases = self._leases() if leases is None else leases
        if self.recorder is not None:
            leader = next((row.holder for row in r.leases
                           if row.lease == f"{LEASE_NAMESPACE}/{LEASES[DESCHEDULER]}"), "")
            r.descheduler = reports.descheduler_section(
                leader, self.thresholds, self.recorder.jobs.values(),
                self.recorder.pod_nodes, self.recorder.pdbs.values(), self.samples, events,
                self.started)
        r.memory_qos = reports.memory_qos(self.workdir / "nodes", pods, time.time())
        png = self.workdir / "utilisation.png"
        reports.render_png(r, self.samples, png)
        r.png = str(png)
        placements = self.workdir / "placements.tsv"
        reports.write_placements(pods, events, placements)
        data = self.workdir / "report.json"
        r.files = {"Pods, nodes and scheduler messages": str(placements),
                   "Numbers and samples": str(data)}
        r.components = [reports.ComponentRow(
            p.name, p.restarts, p.last_exit_code,
            describe_exit(p.last_exit_code) if p.last_exit_code is not None else "")
            for p in self.components.processes.values()]
        r.set_api_access(self._api_access())
        reports.save(r, self.samples, data)
        text = reports.render_text(r)
        (self.workdir / "report.txt").write_text(text)
        return r

    def _api_access(self) -> reports.ApiAccess | None:
        """The API server's request counters (its /metrics, read as the admin)."""
        assert self.client is not None
        try:
            resp = self.client.request("GET", "/metrics", accept="text/plain", stream=True)
            try:
                text = resp.read().decode()
            finally:
                resp.release_conn()
        except (ApiError, ConnectionFailure) as e:
            log.warning("the API server's /metrics: %s", e)
            return None
        return reports.api_access(text)

    def _leases(self) -> list[reports.LeaseRow]:
        assert self.client is not None
        rows = []
        for component in (MANAGER, SCHEDULER, DESCHEDULER):
            identity, replica, transitions = self.components.lease(self.client, component)
            rows.append(reports.LeaseRow(f"{LEASE_NAMESPACE}/{LEASES[component]}", replica,
                                         identity, transitions))
        return rows

    # -- down ---------------------------------------------------------------------------------

    def down(self) -> None:
        if self.workload is not None:
            self.workload.close()
        if self.client is not None:
            self.client.close()
            self.client = None
        self.components.stop()


WORKDIR_MARKER = ".local-up"


class WorkdirError(ValueError):
    """An output directory that holds something else than a previous run's files."""


def prepare_workdir(path: Path) -> Path:
    """A fresh output directory. A previous run's (marked by ``.local-up``) is emptied; any
    other non-empty directory is refused rather than deleted."""
    if path.exists():
        if not path.is_dir():
            raise WorkdirError(f"--workdir {path}: not a directory")
        if any(path.iterdir()):
            if not (path / WORKDIR_MARKER).exists():
                raise WorkdirError(f"--workdir {path}: not empty and not a local-up output "
                                   f"directory (no {WORKDIR_MARKER}); refusing to empty it")
            shutil.rmtree(path)
    path.mkdir(parents=True, exist_ok=True)
    (path / WORKDIR_MARKER).write_text("hack/local-up output; emptied by the next run\n")
    return path
