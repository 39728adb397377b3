"""Admission: the built-in plugins scheduling depends on, and admission webhooks.

Corresponds to upstream ``plugin/pkg/admission/priority`` (``spec.priority`` and
``preemptionPolicy`` from ``priorityClassName`` or the global default class),
``plugin/pkg/admission/defaulttolerationseconds`` (300 s not-ready/unreachable tolerations),
``plugin/pkg/admission/serviceaccount`` (``serviceAccountName: default``) and
``k8s.io/apiserver/pkg/admission/plugin/webhook`` (MutatingWebhookConfiguration and
ValidatingWebhookConfiguration: rules, namespaceSelector, objectSelector, failurePolicy,
timeoutSeconds, ``AdmissionReview`` v1 over HTTPS with the configuration's ``caBundle``, JSON
patch responses, ``warnings`` passed to the client as ``Warning: 299`` headers, which kubectl
prints). A webhook's ``clientConfig.service`` is reached through the Service's
Endpoints (or EndpointSlices), so a webhook server on 127.0.0.1 is wired with a Service and
an Endpoints object; TLS is verified for ``<service>.<namespace>.svc``.
Not implemented: ``matchConditions`` (CEL; treated as matching), ``reinvocationPolicy``,
admission of ``pods/binding`` and ``pods/eviction``, ValidatingAdmissionPolicy.
"""

from __future__ import annotations

import base64
import contextvars
import ssl
import uuid
from typing import Any

import aiohttp
import orjson

from . import errors
from .api import Api
from .patch import PatchError, json_patch
from .resources import ResourceInfo
from .selectors import selector_from_object

Obj = dict[str, Any]
MUTATING = ("admissionregistration.k8s.io", "mutatingwebhookconfigurations")
VALIDATING = ("admissionregistration.k8s.io", "validatingwebhookconfigurations")
USER = {"username": "system:admin", "groups": ["system:masters", "system:authenticated"]}
# The webhook warnings of the request being served (k8s.io/apiserver ``pkg/warning``).
_warnings: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "admission_warnings", default=None)


def collect_warnings() -> list[str]:
    """Collect the warnings of the current request (task) into the list returned."""
    out: list[str] = []
    _warnings.set(out)
    return out


def warning_header(text: str) -> str:
    """A ``Warning`` header value as kube-apiserver writes it: code 299, agent ``-``."""
    return '299 - "' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


# -- built-in plugins -------------------------------------------------------------------------

def _priority_classes(api: Api) -> list[Obj]:
    info = api.info("scheduling.k8s.io", "v1", "priorityclasses")
    return [st.obj for st in api.collection(info).sorted_items()]


def admit_pod_priority(api: Api, pod: Obj) -> None:
    spec = pod.setdefault("spec", {})
    name = spec.get("priorityClassName")
    classes = _priority_classes(api)
    if name:
        pc = next((c for c in classes if c["metadata"]["name"] == name), None)
        if pc is None:
            raise errors.forbidden("", "pods", pod["metadata"].get("name", ""),
                                   f"no PriorityClass with name {name} was found")
    else:
        pc = next((c for c in classes if c.get("globalDefault")), None)
        if pc is not None:
            spec["priorityClassName"] = pc["metadata"]["name"]
    value = int(pc.get("value", 0)) if pc is not None else 0
    if "priority" in spec and spec["priority"] is not None and spec["priority"] != value:
        raise errors.forbidden("", "pods", pod["metadata"].get("name", ""),
                               f"the integer value of priority ({spec['priority']}) must not "
                               f"be provided in pod spec; priority admission controller "
                               f"computed {value} from the given PriorityClass name")
    spec["priority"] = value
    policy = (pc or {}).get("preemptionPolicy") or "PreemptLowerPriority"
    spec["preemptionPolicy"] = policy


def admit_default_tolerations(pod: Obj) -> None:
    tols = pod["spec"].setdefault("tolerations", [])
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if any(t.get("key") == key and t.get("effect") in ("NoExecute", None, "")
               for t in tols) or any(t.get("operator") == "Exists" and not t.get("key")
                                     for t in tols):
            continue
        tols.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                     "tolerationSeconds": 300})


def admit_service_account(pod: Obj) -> None:
    spec = pod["spec"]
    sa = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
    spec["serviceAccountName"] = sa
    spec["serviceAccount"] = sa


# -- webhooks ---------------------------------------------------------------------------------

def _rule_matches(rule: Obj, op: str, info: ResourceInfo, sub: str | None) -> bool:
    ops = rule.get("operations") or []
    if "*" not in ops and op not in ops:
        return False
    if not _in(info.group, rule.get("apiGroups")) or not _in(info.version,
                                                              rule.get("apiVersions")):
        return False
    want = f"{info.plural}/{sub}" if sub else info.plural
    ok = False
    for r in rule.get("resources") or []:
        if r == "*/*" or r == want or (r == "*" and not sub) or \
                (sub and r == f"{info.plural}/*") or (sub and r == f"*/{sub}"):
            ok = True
            break
    if not ok:
        return False
    scope = rule.get("scope") or "*"
    return scope == "*" or (scope == "Namespaced") == info.namespaced


def _in(v: str, allowed: list[str] | None) -> bool:
    if not allowed:
        return False
    return "*" in allowed or v in allowed


class Webhooks:
    """Calls the webhooks the stored configurations declare."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self._session: aiohttp.ClientSession | None = None
        self._ssl: dict[str, ssl.SSLContext] = {}

    def _configs(self, gr: tuple[str, str]) -> list[Obj]:
        coll = self.api.storage.collections.get(gr)
        return [st.obj for st in coll.sorted_items()] if coll is not None else []

    def _matches(self, hook: Obj, op: str, info: ResourceInfo, new: Obj | None,
                 old: Obj | None, sub: str | None) -> bool:
        if not any(_rule_matches(r, op, info, sub) for r in hook.get("rules") or []):
            return False
        obj = new if new is not None else old
        ns_sel = hook.get("namespaceSelector")
        if ns_sel and info.namespaced and obj is not None:
            ns = obj["metadata"].get("namespace")
            nso = self.api.namespace(ns) if ns else None
            labels = (nso.obj["metadata"].get("labels") if nso else None) or {}
            if not selector_from_object(ns_sel).matches(labels):
                return False
        if ns_sel and info.storage == ("", "namespaces") and obj is not None:
            if not selector_from_object(ns_sel).matches(obj["metadata"].get("labels") or {}):
                return False
        obj_sel = hook.get("objectSelector")
        if obj_sel:
            sel = selector_from_object(obj_sel)
            if not any(o is not None and sel.matches(o["metadata"].get("labels") or {})
                       for o in (new, old)):
                return False
        return True

    def _endpoint(self, cc: Obj) -> tuple[str, str | None]:
        """(url, TLS server name) for a clientConfig."""
        if cc.get("url"):
            return cc["url"], None
        svc = cc.get("service") or {}
        ns, name = svc.get("namespace", ""), svc.get("name", "")
        port = int(svc.get("port") or 443)
        path = svc.get("path") or "/"
        host, target = self._resolve(ns, name, port)
        return f"https://{host}:{target}{path}", f"{name}.{ns}.svc"

    def _resolve(self, ns: str, name: str, port: int) -> tuple[str, int]:
        svcs = self.api.collection(self.api.info("", "v1", "services"))
        svc = svcs.get(ns, name)
        if svc is None:
            raise LookupError(f'service "{name}" not found')
        sport = next((p for p in (svc.obj.get("spec") or {}).get("ports") or []
                      if p.get("port") == port), None)
        target = sport.get("targetPort", port) if sport else port
        eps = self.api.collection(self.api.info("", "v1", "endpoints")).get(ns, name)
        for subset in ((eps.obj.get("subsets") or []) if eps is not None else []):
            addrs = subset.get("addresses") or []
            ports = subset.get("ports") or []
            if addrs:
                p = next((x["port"] for x in ports if isinstance(target, str) and
                          x.get("name") == (sport or {}).get("name")), None) or \
                    (ports[0]["port"] if ports and not isinstance(target, int) else target)
                return addrs[0]["ip"], int(p)
        slices = self.api.collection(self.api.info("discovery.k8s.io", "v1",
                                                   "endpointslices"))
        for st in slices.sorted_items(ns):
            if (st.obj["metadata"].get("labels") or {}).get(
                    "kubernetes.io/service-name") != name:
                continue
            for ep in st.obj.get("endpoints") or []:
                if ep.get("addresses"):
                    ports = st.obj.get("ports") or []
                    p = ports[0]["port"] if ports and not isinstance(target, int) else target
                    return ep["addresses"][0], int(p)
        raise LookupError(f'no endpoints available for service "{name}"')

    def _context(self, ca_bundle: str | None) -> ssl.SSLContext:
        key = ca_bundle or ""
        ctx = self._ssl.get(key)
        if ctx is None:
            ctx = ssl.create_default_context()
            if ca_bundle:
                ctx.load_verify_locations(cadata=base64.b64decode(ca_bundle).decode())
            self._ssl[key] = ctx
        return ctx

    async def _call(self, hook: Obj, review: Obj) -> Obj:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession()
        cc = hook.get("clientConfig") or {}
        url, server_name = self._endpoint(cc)
        timeout = aiohttp.ClientTimeout(total=float(hook.get("timeoutSeconds") or 10))
        kw: dict[str, Any] = {"timeout": timeout}
        if url.startswith("https://"):
            kw["ssl"] = self._context(cc.get("caBundle"))
            if server_name:
                kw["server_hostname"] = server_name
        async with self._session.post(url, data=orjson.dumps(review), headers={
                "Content-Type": "application/json", "Accept": "application/json"},
                **kw) as resp:
            if resp.status != 200:
                raise RuntimeError(f"expected 200, got {resp.status}")
            body = orjson.loads(await resp.read())
        out = body.get("response")
        if not isinstance(out, dict):
            raise RuntimeError("webhook response was absent")
        return out

    def _review(self, op: str, info: ResourceInfo, new: Obj | None, old: Obj | None,
                dry_run: bool, sub: str | None) -> Obj:
        obj = new if new is not None else old or {}
        md = obj.get("metadata") or {}
        kind = {"group": info.group, "version": info.version, "kind": info.kind}
        res = {"group": info.group, "version": info.version, "resource": info.plural}
        req: Obj = {
            "uid": str(uuid.uuid4()), "kind": kind, "resource": res, "requestKind": kind,
            "requestResource": res, "name": md.get("name", ""), "operation": op,
            "userInfo": USER, "object": new, "oldObject": old, "dryRun": dry_run,
            "options": {"kind": {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions",
                                 "DELETE": "DeleteOptions"}.get(op, "CreateOptions"),
                        "apiVersion": "meta.k8s.io/v1"},
        }
        if sub:
            req["subResource"] = sub
            req["requestSubResource"] = sub
        if info.namespaced:
            req["namespace"] = md.get("namespace", "")
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}

    async def run(self, mutating: bool, op: str, info: ResourceInfo, new: Obj | None,
                  old: Obj | None, dry_run: bool, sub: str | None) -> None:
        if info.storage in (MUTATING, VALIDATING):
            return  # webhooks never intercept their own configuration
        for cfg in self._configs(MUTATING if mutating else VALIDATING):
            for hook in cfg.get("webhooks") or []:
                if not self._matches(hook, op, info, new, old, sub):
                    continue
                name = hook.get("name", "")
                review = self._review(op, info, new, old, dry_run, sub)
                try:
                    resp = await self._call(hook, review)
                except Exception as e:  # noqa: BLE001 - any failure honours failurePolicy
                    if (hook.get("failurePolicy") or "Fail") == "Ignore":
                        continue
                    why = getattr(e, "os_error", None) or e
                    raise errors.ApiError(500, "InternalError",
                                          f'Internal error occurred: failed calling webhook '
                                          f'"{name}": failed to call webhook: {why}') from None
                collected = _warnings.get()
                if collected is not None:
                    collected.extend(w for w in resp.get("warnings") or []
                                     if isinstance(w, str) and w not in collected)
                if not resp.get("allowed"):
                    st = resp.get("status") or {}
                    code = int(st.get("code") or 400)
                    code = max(code, 400)
                    denied = f'admission webhook "{name}" denied the request'
                    msg = st.get("message") or st.get("reason")
                    raise errors.ApiError(code, st.get("reason", ""),
                                          f"{denied}: {msg}" if msg else
                                          f"{denied} without explanation", st.get("details"))
                if mutating and resp.get("patch") and new is not None:
                    try:
                        ops = orjson.loads(base64.b64decode(resp["patch"]))
                        patched = json_patch(orjson.loads(orjson.dumps(new)), ops)
                    except (PatchError, ValueError) as e:
                        raise errors.ApiError(500, "InternalError",
                                              f'Internal error occurred: failed to apply patch '
                                              f'from webhook "{name}": {e}') from None
                    new.clear()
                    new.update(patched)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


def install(api: Api) -> Webhooks:
    hooks = Webhooks(api)

    async def mutate(op: str, info: ResourceInfo, new: Obj | None, old: Obj | None,
                     dry_run: bool, sub: str | None) -> None:
        if op == "CREATE" and info.storage == ("", "pods") and new is not None:
            admit_service_account(new)
            admit_pod_priority(api, new)
            admit_default_tolerations(new)
        await hooks.run(True, op, info, new, old, dry_run, sub)

    async def validate(op: str, info: ResourceInfo, new: Obj | None, old: Obj | None,
                       dry_run: bool, sub: str | None) -> None:
        await hooks.run(False, op, info, new, old, dry_run, sub)

    api.mutating.append(mutate)
    api.validating.append(validate)
    return hooks
