"""Two koord-manager replicas starting together both rewrite the webhook configurations: the
one whose write meets the other's (409 Conflict) starts again from a fresh read instead of
failing its start (CI saw a standby replica stop on that conflict).

Against the embedded API server. The race is forced: ``RacingClient`` is the real client,
except that just before its first update of each configuration another writer (the replica
beside it) updates that configuration, so the update carries a stale resourceVersion.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import pytest

from manager.webhook.configuration import (
    MUTATE_POD,
    MUTATING_WEBHOOKS,
    TEMPLATE_ANNOTATION,
    VALIDATE_POD,
    VALIDATING_WEBHOOKS,
    ensure_configurations,
)
from manager.webhook.options import WebhookOptions
from pkg.client import Client
from pkg.client.resources import MUTATING_WEBHOOK_CONFIGURATIONS, VALIDATING_WEBHOOK_CONFIGURATIONS
from test.apiserver import ServerHandle
from test.apiserver.server import start


@pytest.fixture(scope="module")
def srv() -> Iterator[ServerHandle]:
    handle = start()
    try:
        yield handle
    finally:
        handle.stop()


class RacingClient:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.raced: set[str] = set()

    def get(self, resource: Any, name: str) -> Any:
        return self.client.get(resource, name)

    def create(self, resource: Any, obj: Any) -> Any:
        return self.client.create(resource, obj)

    def update(self, resource: Any, obj: Any) -> Any:
        name = obj["metadata"]["name"]
        if name not in self.raced:
            self.raced.add(name)
            other = self.client.get(resource, name)
            other["metadata"].setdefault("labels", {})["other-replica"] = "was-here"
            self.client.update(resource, other)
        return self.client.update(resource, obj)


def test_a_configuration_rewritten_meanwhile_by_another_replica_is_read_again(
        srv: ServerHandle) -> None:
    client = Client.from_kubeconfig(srv.kubeconfig)
    options = WebhookOptions()
    # As Helm leaves them: our webhooks, no template annotation yet, so each start rewrites.
    for resource, name, hooks in (
            (MUTATING_WEBHOOK_CONFIGURATIONS, options.mutating_name, MUTATING_WEBHOOKS),
            (VALIDATING_WEBHOOK_CONFIGURATIONS, options.validating_name, VALIDATING_WEBHOOKS)):
        client.create(resource, {"apiVersion": resource.api_version, "kind": resource.kind,
                                 "metadata": {"name": name}, "webhooks": list(hooks)})
    racing = RacingClient(client)
    ensure_configurations(cast(Client, racing), options, "Q0E=", {MUTATE_POD, VALIDATE_POD})
    assert racing.raced == {options.mutating_name, options.validating_name}
    for resource, name in ((MUTATING_WEBHOOK_CONFIGURATIONS, options.mutating_name),
                           (VALIDATING_WEBHOOK_CONFIGURATIONS, options.validating_name)):
        got = client.get(resource, name)
        # Our rewrite landed on top of the other replica's write, which it kept.
        assert got["metadata"]["labels"] == {"other-replica": "was-here"}
        assert TEMPLATE_ANNOTATION in got["metadata"]["annotations"]
        assert got["webhooks"] and all(h["clientConfig"]["caBundle"] == "Q0E="
                                       for h in got["webhooks"])
