"""The runner's leader election on the embedded API server: a stop while leading stops the
leader-bound part first, then gives the Lease back; a lost lease ends the component with
status 1."""

from __future__ import annotations

import argparse
import uuid
from collections.abc import Iterator

import pytest

from pkg.client.config import ClientOptions
from pkg.client.errors import ApiError
from pkg.client.resources import LEASES
from pkg.client.rest import Client
from pkg.component.runner import Hooks, Runner
from pkg.component.testing import Running, wait_until
from pkg.leaderelection.config import LeaderElectionConfiguration
from test.apiserver import ServerHandle, start


@pytest.fixture(scope="module")
def srv() -> Iterator[ServerHandle]:
    s = start()
    yield s
    s.stop()


def holder(client: Client, lease: str) -> str:
    return str(client.get(LEASES, lease, "default")["spec"].get("holderIdentity") or "")


class Leading:
    """A component whose leader-bound runnable notes the Lease holder when it stops."""

    def __init__(self, srv: ServerHandle) -> None:
        self.lease = f"runner-{uuid.uuid4().hex[:8]}"
        self.kubeconfig = srv.kubeconfig
        self.client = Client.from_kubeconfig(srv.kubeconfig)
        self.started = False
        self.holder_at_stop: str | None = None
        self.running = Running(self.build)

    def build(self, _: argparse.Namespace, r: Runner) -> None:
        r.leader_election(LeaderElectionConfiguration(
            lease_duration=2.0, renew_deadline=1.5, retry_period=0.25,
            resource_name=self.lease, resource_namespace="default"))
        r.connect(ClientOptions(kubeconfig=self.kubeconfig))
        r.add("controllers", Hooks(self._start, self._stop), leader=True)

    def _start(self) -> None:
        self.started = True

    def _stop(self) -> None:
        self.holder_at_stop = holder(self.client, self.lease)


@pytest.fixture
def leading(srv: ServerHandle) -> Leading:
    component = Leading(srv)
    wait_until(lambda: component.started)
    return component


def test_a_stop_while_leading_stops_the_leader_part_then_releases_the_lease(
        leading: Leading) -> None:
    identity = holder(leading.client, leading.lease)
    assert identity
    leading.running.stop.set()
    assert leading.running.join() == 0
    assert leading.holder_at_stop == identity  # still held while the controllers stopped
    assert holder(leading.client, leading.lease) == ""


def take_over(client: Client, lease: str) -> None:
    """Write another holder into the Lease, retrying when a renewal came in between."""
    while True:
        obj = client.get(LEASES, lease, "default")
        obj["spec"]["holderIdentity"] = "intruder"
        try:
            client.update(LEASES, obj, "default")
            return
        except ApiError as e:
            if e.status != 409:
                raise


def test_a_lost_lease_exits_1(leading: Leading, caplog: pytest.LogCaptureFixture) -> None:
    take_over(leading.client, leading.lease)
    assert leading.running.join(timeout=10) == 1
    assert leading.holder_at_stop == "intruder"
    assert "leader election lost" in caplog.text
