"""Benchmark of RBAC authorization, the check in every authenticated request's path.

    python -m test.apiserver.bench.authz [--bindings 2000] [--namespaces 200] [--checks 20000]

Fills an Api with ``--bindings`` ClusterRoleBindings and as many RoleBindings spread over
``--namespaces`` namespaces (each to its own role, for other users), plus the bindings of one
ServiceAccount, then times ``Authorizer.check`` for that ServiceAccount: allowed through a
ClusterRoleBinding, allowed through a RoleBinding, denied, and the first check after an RBAC
write (which drops the index and the cached rules). Prints one table (microseconds per check).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from test.apiserver.api import Api
from test.apiserver.authn import service_account_user
from test.apiserver.bootstrap import store_new
from test.apiserver.errors import ApiError
from test.apiserver.rbac import RBAC_GROUP, Authorizer, install_bootstrap_policy, request_attributes

SA_NS, SA_NAME = "koordinator-system", "koordlet"


def _fill(api: Api, bindings: int, namespaces: int) -> None:
    cr = api.info(RBAC_GROUP, "v1", "clusterroles")
    crb = api.info(RBAC_GROUP, "v1", "clusterrolebindings")
    role = api.info(RBAC_GROUP, "v1", "roles")
    rb = api.info(RBAC_GROUP, "v1", "rolebindings")
    rules = [{"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": ["get", "list"]}]
    for i in range(bindings):
        ns = f"ns-{i % namespaces}"
        store_new(api, cr, {"metadata": {"name": f"role-{i}"}, "rules": rules})
        store_new(api, crb, {"metadata": {"name": f"crb-{i}"},
                             "roleRef": {"kind": "ClusterRole", "name": f"role-{i}"},
                             "subjects": [{"kind": "User", "name": f"user-{i}"}]})
        store_new(api, role, {"metadata": {"name": f"role-{i}", "namespace": ns},
                              "rules": rules})
        store_new(api, rb, {"metadata": {"name": f"rb-{i}", "namespace": ns},
                            "roleRef": {"kind": "Role", "name": f"role-{i}"},
                            "subjects": [{"kind": "ServiceAccount", "name": f"sa-{i}",
                                          "namespace": ns}]})
    sa = {"kind": "ServiceAccount", "name": SA_NAME, "namespace": SA_NS}
    store_new(api, crb, {"metadata": {"name": "koordlet"},
                         "roleRef": {"kind": "ClusterRole", "name": "role-0"},
                         "subjects": [sa]})
    store_new(api, rb, {"metadata": {"name": "koordlet", "namespace": "ns-1"},
                        "roleRef": {"kind": "Role", "name": "role-1"}, "subjects": [sa]})


def _per_check(fn: Callable[[], object], n: int) -> float:
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n * 1e6


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bindings", type=int, default=2000)
    p.add_argument("--namespaces", type=int, default=200)
    p.add_argument("--checks", type=int, default=20000)
    a = p.parse_args(argv)
    api = Api()
    install_bootstrap_policy(api)
    authz = Authorizer(api)
    _fill(api, a.bindings, a.namespaces)
    user = service_account_user(SA_NS, SA_NAME)
    by_crb = request_attributes("GET", "/api/v1/nodes/n1", {})
    by_rb = request_attributes("GET", "/api/v1/namespaces/ns-1/pods/p", {})
    denied = request_attributes("PATCH", "/api/v1/namespaces/ns-2/pods/p", {})

    def deny() -> None:
        try:
            authz.check(user, denied)
        except ApiError:
            pass

    role = api.info(RBAC_GROUP, "v1", "roles")
    writes = iter(range(1 << 30))

    def cold() -> None:
        store_new(api, role, {"metadata": {"name": f"new-{next(writes)}", "namespace": "x"}})
        authz.check(user, by_crb)

    rows = [
        ("allowed by a ClusterRoleBinding", _per_check(lambda: authz.check(user, by_crb),
                                                       a.checks)),
        ("allowed by a RoleBinding", _per_check(lambda: authz.check(user, by_rb), a.checks)),
        ("denied (403 built and counted)", _per_check(deny, a.checks)),
        ("an RBAC write, then a check", _per_check(cold, max(1, a.checks // 1000))),
        ("request_attributes (parse)", _per_check(
            lambda: request_attributes("GET", "/api/v1/namespaces/ns-1/pods", {"watch": "1"}),
            a.checks)),
    ]
    print(f"{a.bindings} ClusterRoleBindings, {a.bindings} RoleBindings in {a.namespaces} "
          "namespaces")
    print(f"{'check':<36} {'us/check':>10}")
    for name, us in rows:
        print(f"{name:<36} {us:>10.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
