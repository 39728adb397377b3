"""The fast JSON client: REST verbs that return parsed JSON, rate limited.

Corresponds to client-go's ``rest.RESTClient`` and ``dynamic`` client (with the token-bucket
rate limiter of ``rest.Config.QPS``/``Burst``). The official ``kubernetes`` package configures
the connection (TLS, tokens with refresh, client certificates, proxies) and owns the connection
pool; requests go straight through that pool with ``preload_content=False`` and bodies are
encoded and decoded with orjson. The generated models' deserialisation is skipped: it costs
more than the request itself on big lists. Built-in kinds stay plain dicts; Koordinator CRDs
can be decoded into the pydantic models of ``api`` with ``Client.typed``.

    client = Client.from_options(ClientOptions(kubeconfig=path, qps=20, burst=30))
    pod = client.get(PODS, "web-0", "default")
    for ev in client.watch(PODS, "default", resource_version=rv, timeout_seconds=300):
        ...
    metrics = client.typed(NodeMetric)        # a ResourceClient[NodeMetric]
    nm = metrics.get("node-1")
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from typing import Any, Generic, TypeVar, overload
from urllib.parse import urlencode

import orjson
import urllib3
from kubernetes import client as k8s_client

from api.meta import KubeObject
from pkg.client.config import DEFAULT_BURST, DEFAULT_QPS, ClientOptions
from pkg.client.errors import ApiError, ConnectionFailure
from pkg.client.resources import Resource
from pkg.util.clock import REAL_CLOCK, Clock
from pkg.util.flowcontrol import TokenBucket

log = logging.getLogger(__name__)

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = {"merge": MERGE_PATCH, "strategic": STRATEGIC_MERGE_PATCH, "json": JSON_PATCH,
               "apply": APPLY_PATCH}

MAX_RETRIES = 10  # client-go retries a request the server throttles with Retry-After

Obj = dict[str, Any]
K = TypeVar("K", bound=KubeObject)
Body = Mapping[str, Any] | KubeObject | list[Any] | bytes


def to_json(obj: Any) -> Any:
    """Plain JSON data for a dict, a list or an ``api`` model."""
    if isinstance(obj, KubeObject):
        return obj.to_dict()
    return obj


def _encode(body: Any) -> bytes:
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return orjson.dumps(to_json(body))


# How long a token read from the configuration is used before asking it again.
AUTH_REFRESH_SECONDS = 1.0

# Connections kept open to the server. The kubernetes package's default (5 per core, so 10
# here) is below what one component holds at once: each watch keeps a connection for its
# lifetime, and koord-scheduler binds on 16 workers. Past the limit urllib3 discards the
# connection after each request, so every binding and event paid a new TLS handshake on both
# sides. client-go keeps 25 idle connections per host and multiplexes over HTTP/2.
CONNECTION_POOL_MAXSIZE = 64


class Client:
    """A rate-limited client for the Kubernetes REST API that speaks parsed JSON."""

    def __init__(self, api_client: k8s_client.ApiClient, *, qps: float = DEFAULT_QPS,
                 burst: int = DEFAULT_BURST, rate_limiter: TokenBucket | None = None,
                 user_agent: str | None = None, timeout: float = 60.0,
                 clock: Clock = REAL_CLOCK) -> None:
        self.api_client = api_client
        self.configuration: k8s_client.Configuration = api_client.configuration
        self.rate_limiter = rate_limiter or TokenBucket(qps, burst, clock)
        self.timeout = timeout
        self.clock = clock
        self._pool = api_client.rest_client.pool_manager
        self._host = self.configuration.host.rstrip("/")
        self._base_headers: dict[str, str] = {
            k: v for k, v in api_client.default_headers.items() if isinstance(v, str)
        }
        if user_agent:
            self._base_headers["User-Agent"] = user_agent
            api_client.user_agent = user_agent
        # (monotonic time read, auth headers): see _auth_headers.
        self._auth: tuple[float, dict[str, str]] | None = None

    @classmethod
    def from_config(cls, configuration: k8s_client.Configuration, **kw: Any) -> Client:
        if (configuration.connection_pool_maxsize or 0) < CONNECTION_POOL_MAXSIZE:
            configuration.connection_pool_maxsize = CONNECTION_POOL_MAXSIZE
        return cls(k8s_client.ApiClient(configuration), **kw)

    @classmethod
    def from_options(cls, options: ClientOptions, clock: Clock = REAL_CLOCK) -> Client:
        """A client from component flags. As in client-go, QPS 0 and burst 0 mean the defaults
        (5 and 10); a negative QPS disables rate limiting."""
        qps = options.qps if options.qps != 0 else DEFAULT_QPS
        burst = options.burst if options.burst > 0 else DEFAULT_BURST
        return cls.from_config(options.load(), qps=qps, burst=burst,
                               user_agent=options.user_agent, timeout=options.timeout,
                               clock=clock)

    @classmethod
    def from_kubeconfig(cls, path: str | None = None, **kw: Any) -> Client:
        return cls.from_options(ClientOptions(kubeconfig=path, **kw))

    def close(self) -> None:
        self.api_client.close()

    # -- the request ----------------------------------------------------------------------

    def _headers(self, content_type: str | None, accept: str) -> dict[str, str]:
        headers = dict(self._base_headers)
        headers["Accept"] = accept
        if content_type:
            headers["Content-Type"] = content_type
        headers.update(self._auth_headers())
        return headers

    def _auth_headers(self) -> dict[str, str]:
        """The auth headers, read again at most once per ``AUTH_REFRESH_SECONDS``.

        auth_settings() runs the configuration's token refresh hook (exec plugins, rotated
        service-account tokens), which re-reads the whole kubeconfig: per request it was ~4%
        of the scheduler process's CPU end to end (a binding and an event per pod), while
        tokens rotate in minutes."""
        now = self.clock.monotonic()
        cached = self._auth
        if cached is not None and now - cached[0] < AUTH_REFRESH_SECONDS:
            return cached[1]
        headers = {}
        for setting in self.configuration.auth_settings().values():
            if isinstance(setting, Mapping) and setting.get("in") == "header" and \
                    setting.get("value"):
                headers[setting["key"]] = setting["value"]
        self._auth = (now, headers)
        return headers

    def url(self, path: str, query: Mapping[str, Any] | None = None) -> str:
        q = {k: _query_value(v) for k, v in (query or {}).items() if v is not None}
        return self._host + path + ("?" + urlencode(q) if q else "")

    def request(self, method: str, path: str, *, query: Mapping[str, Any] | None = None,
                body: Any = None, content_type: str | None = JSON, accept: str = JSON,
                timeout: float | None = None, stream: bool = False,
                stop: threading.Event | None = None) -> Any:
        """One request. Returns the decoded JSON body (None when empty), or with
        ``stream=True`` the open ``urllib3`` response. Raises ``ApiError`` for error statuses
        and ``ConnectionFailure`` when the server could not be reached."""
        data = None if body is None else _encode(body)
        url = self.url(path, query)
        read = self.timeout if timeout is None else timeout
        t = urllib3.Timeout(connect=min(read, 30.0) if read else 30.0, read=read)
        for attempt in range(MAX_RETRIES + 1):
            if not self.rate_limiter.accept(stop):
                raise ConnectionFailure("request cancelled")
            try:
                resp = self._pool.request(
                    method, url, body=data,
                    headers=self._headers(content_type if data is not None else None, accept),
                    timeout=t, preload_content=False, retries=False, redirect=False)
            except urllib3.exceptions.HTTPError as e:
                raise ConnectionFailure(f"{method} {url}: {e}") from e
            if resp.status < 400:
                if stream:
                    return resp
                try:
                    payload = resp.read()
                except urllib3.exceptions.HTTPError as e:
                    raise ConnectionFailure(f"{method} {url}: {e}") from e
                finally:
                    resp.release_conn()
                return orjson.loads(payload) if payload else None
            err = _error(resp)
            wait = err.retry_after
            if (err.status == 429 or (err.status >= 500 and wait is not None)) \
                    and attempt < MAX_RETRIES:
                wait = min(wait if wait is not None else 1.0, 10.0)
                log.debug("%s %s: %s, retrying in %.1fs", method, path, err.reason, wait)
                if self.clock.sleep(wait, stop):
                    raise err
                continue
            raise err
        raise AssertionError("unreachable")

    # -- verbs ----------------------------------------------------------------------------

    def get(self, resource: Resource, name: str, namespace: str | None = None, *,
            subresource: str | None = None) -> Obj:
        return self.request("GET", resource.path(namespace, name, subresource))

    def list(self, resource: Resource, namespace: str | None = None, *,
             label_selector: str | None = None, field_selector: str | None = None,
             limit: int | None = None, continue_: str | None = None,
             resource_version: str | None = None,
             resource_version_match: str | None = None,
             timeout: float | None = None) -> Obj:
        """One page of a list: the ``<Kind>List`` object as the server sent it."""
        return self.request("GET", resource.path(namespace), query={
            "labelSelector": label_selector or None, "fieldSelector": field_selector or None,
            "limit": limit or None, "continue": continue_ or None,
            "resourceVersion": resource_version, "resourceVersionMatch": resource_version_match,
        }, timeout=timeout)

    def list_all(self, resource: Resource, namespace: str | None = None, *,
                 label_selector: str | None = None, field_selector: str | None = None,
                 page_size: int = 500, timeout: float | None = None) -> Obj:
        """Every item, following continue tokens (client-go's pager); the result has the
        first page's metadata.resourceVersion. An expired continue token restarts the list
        without pagination, as the pager does."""
        items: list[Obj] = []
        cont: str | None = None
        first: Obj | None = None
        while True:
            try:
                page = self.list(resource, namespace, label_selector=label_selector,
                                 field_selector=field_selector, limit=page_size,
                                 continue_=cont, timeout=timeout)
            except ApiError as e:
                if cont and e.status == 410:
                    return self.list(resource, namespace, label_selector=label_selector,
                                     field_selector=field_selector, timeout=timeout)
                raise
            if first is None:
                first = page
            items.extend(page.get("items") or [])
            cont = (page.get("metadata") or {}).get("continue")
            if not cont:
                break
        assert first is not None
        md = dict(first.get("metadata") or {})
        md.pop("continue", None)
        md.pop("remainingItemCount", None)
        return {**first, "metadata": md, "items": items}

    def watch(self, resource: Resource, namespace: str | None = None, *,
              resource_version: str | None = None, label_selector: str | None = None,
              field_selector: str | None = None, timeout_seconds: int | None = None,
              allow_bookmarks: bool = True,
              send_initial_events: bool | None = None) -> WatchStream:
        """Open a watch; iterate the returned stream for ``{"type", "object"}`` events."""
        query: dict[str, Any] = {
            "watch": "true", "resourceVersion": resource_version or None,
            "labelSelector": label_selector or None, "fieldSelector": field_selector or None,
            "timeoutSeconds": timeout_seconds,
            "allowWatchBookmarks": "true" if allow_bookmarks else None,
        }
        if send_initial_events is not None:
            query["sendInitialEvents"] = "true" if send_initial_events else "false"
            query["resourceVersionMatch"] = "NotOlderThan"
        # No read timeout shorter than the server's own: the server ends the watch.
        read = (timeout_seconds + 30.0) if timeout_seconds else None
        resp = self.request("GET", resource.path(namespace), query=query, stream=True,
                            timeout=read)
        return WatchStream(resp)

    def create(self, resource: Resource, obj: Body, namespace: str | None = None, *,
               dry_run: bool = False, field_manager: str | None = None) -> Obj:
        ns = namespace if namespace is not None else _namespace_of(obj)
        return self.request("POST", resource.path(ns), body=obj,
                            query=_write_query(dry_run, field_manager))

    def update(self, resource: Resource, obj: Body, namespace: str | None = None, *,
               subresource: str | None = None, dry_run: bool = False,
               field_manager: str | None = None) -> Obj:
        """PUT the whole object; its metadata.resourceVersion makes it conditional."""
        data = to_json(obj)
        md = data.get("metadata") or {}
        ns = namespace if namespace is not None else md.get("namespace")
        return self.request("PUT", resource.path(ns, md.get("name", ""), subresource),
                            body=data, query=_write_query(dry_run, field_manager))

    def update_status(self, resource: Resource, obj: Body, namespace: str | None = None
                      ) -> Obj:
        return self.update(resource, obj, namespace, subresource="status")

    def patch(self, resource: Resource, name: str, patch: Any, namespace: str | None = None,
              *, patch_type: str = "merge", subresource: str | None = None,
              dry_run: bool = False, field_manager: str | None = None,
              force: bool | None = None) -> Obj:
        """PATCH with ``patch_type`` ``merge`` (RFC 7386), ``strategic``, ``json`` (RFC 6902)
        or ``apply`` (server-side apply; needs ``field_manager``)."""
        content_type = PATCH_TYPES.get(patch_type, patch_type)
        query = _write_query(dry_run, field_manager)
        if force is not None:
            query["force"] = "true" if force else "false"
        return self.request("PATCH", resource.path(namespace, name, subresource), body=patch,
                            content_type=content_type, query=query)

    def delete(self, resource: Resource, name: str, namespace: str | None = None, *,
               grace_period_seconds: int | None = None,
               propagation_policy: str | None = None,
               preconditions: Mapping[str, str] | None = None, dry_run: bool = False) -> Any:
        """DELETE; returns the deleted object (or the marked one, for graceful deletion or
        pending finalizers), or a Status."""
        body: Obj = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        if propagation_policy:
            body["propagationPolicy"] = propagation_policy
        if preconditions:
            body["preconditions"] = dict(preconditions)
        if dry_run:
            body["dryRun"] = ["All"]
        return self.request("DELETE", resource.path(namespace, name), body=body)

    @overload
    def typed(self, resource: type[K], namespace: str | None = None) -> ResourceClient[K]: ...

    @overload
    def typed(self, resource: Resource, namespace: str | None = None) -> ResourceClient[Any]: ...

    def typed(self, resource: Resource | type[KubeObject], namespace: str | None = None
              ) -> ResourceClient[Any]:
        """A client bound to one resource (and optionally a namespace); for a Koordinator
        CRD model its verbs return model instances."""
        if not isinstance(resource, Resource):
            resource = Resource.for_model(resource)
        return ResourceClient(self, resource, namespace)


def _query_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _write_query(dry_run: bool, field_manager: str | None) -> dict[str, Any]:
    q: dict[str, Any] = {}
    if dry_run:
        q["dryRun"] = "All"
    if field_manager:
        q["fieldManager"] = field_manager
    return q


def _namespace_of(obj: Any) -> str | None:
    if isinstance(obj, KubeObject):
        return obj.metadata.namespace
    if isinstance(obj, Mapping):
        return (obj.get("metadata") or {}).get("namespace")
    return None


def _error(resp: urllib3.BaseHTTPResponse) -> ApiError:
    try:
        raw = resp.read()
    except urllib3.exceptions.HTTPError:
        raw = b""
    finally:
        resp.release_conn()
    headers = dict(resp.headers.items())
    try:
        body: Any = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        body = raw.decode(errors="replace")
    return ApiError.from_status(resp.status, body, headers)


class WatchStream:
    """The events of one watch response, parsed as they arrive.

    Iterating yields ``{"type": ..., "object": ...}`` dicts (``ADDED``, ``MODIFIED``,
    ``DELETED``, ``BOOKMARK``, ``ERROR``). Iteration ends when the server closes the stream;
    a broken connection raises ``ConnectionFailure``. ``stop()`` (from any thread) ends it.
    """

    def __init__(self, resp: urllib3.BaseHTTPResponse) -> None:
        self._resp = resp
        self._stopped = False

    def __iter__(self) -> Iterator[Obj]:
        buf = b""
        try:
            for chunk in self._resp.stream(65536, decode_content=True):
                if self._stopped:
                    return
                buf += chunk
                while True:
                    nl = buf.find(b"\n")
                    if nl < 0:
                        break
                    line, buf = buf[:nl], buf[nl + 1:]
                    if line.strip():
                        yield orjson.loads(line)
            if buf.strip() and not self._stopped:
                yield orjson.loads(buf)
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as e:
            if self._stopped:
                return
            raise ConnectionFailure(f"watch stream broken: {e}") from e
        finally:
            self.close()

    def stop(self) -> None:
        """End the stream; a thread blocked reading it returns."""
        self._stopped = True
        try:
            self._resp.shutdown()
        except Exception:  # noqa: BLE001 - best effort from another thread
            pass

    def close(self) -> None:
        try:
            self._resp.release_conn()
            self._resp.close()
        except Exception:  # noqa: BLE001
            pass

    def __enter__(self) -> WatchStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self.close()


T = TypeVar("T")


class ResourceClient(Generic[T]):
    """The verbs of one resource. Objects come back as the resource's ``api`` model when it
    has one (decoded with ``api.loader.load_object``, so errors name the bad field), else as
    dicts."""

    def __init__(self, client: Client, resource: Resource, namespace: str | None = None) -> None:
        self.client = client
        self.resource = resource
        self.namespace = namespace

    def decode(self, obj: Obj) -> T:
        if self.resource.model is None:
            return obj  # type: ignore[return-value]  # T is Obj for a resource without a model
        from api.loader import load_object

        obj.setdefault("apiVersion", self.resource.api_version)
        obj.setdefault("kind", self.resource.kind)
        return load_object(obj)  # type: ignore[return-value]  # T is the resource's model

    def _ns(self, namespace: str | None) -> str | None:
        return namespace if namespace is not None else self.namespace

    def get(self, name: str, namespace: str | None = None) -> T:
        return self.decode(self.client.get(self.resource, name, self._ns(namespace)))

    def list(self, namespace: str | None = None, *, label_selector: str | None = None,
             field_selector: str | None = None) -> tuple[list[T], str]:
        """Every item and the list's resourceVersion."""
        out = self.client.list_all(self.resource, self._ns(namespace),
                                   label_selector=label_selector, field_selector=field_selector)
        kind = self.resource.kind
        items = []
        for it in out.get("items") or []:
            it.setdefault("apiVersion", self.resource.api_version)
            it.setdefault("kind", kind)
            items.append(self.decode(it))
        return items, str((out.get("metadata") or {}).get("resourceVersion", ""))

    def create(self, obj: Any, namespace: str | None = None, **kw: Any) -> T:
        ns = self._ns(namespace) if namespace is not None or self.namespace else None
        return self.decode(self.client.create(self.resource, obj, ns, **kw))

    def update(self, obj: Any, namespace: str | None = None, **kw: Any) -> T:
        return self.decode(self.client.update(self.resource, obj, namespace, **kw))

    def update_status(self, obj: Any, namespace: str | None = None) -> T:
        return self.decode(self.client.update_status(self.resource, obj, namespace))

    def patch(self, name: str, patch: Any, namespace: str | None = None, **kw: Any) -> T:
        return self.decode(self.client.patch(self.resource, name, patch, self._ns(namespace),
                                             **kw))

    def delete(self, name: str, namespace: str | None = None, **kw: Any) -> Any:
        return self.client.delete(self.resource, name, self._ns(namespace), **kw)


__all__ = [
    "APPLY_PATCH", "JSON", "JSON_PATCH", "MERGE_PATCH", "PATCH_TYPES", "STRATEGIC_MERGE_PATCH",
    "Client", "ResourceClient", "WatchStream", "to_json",
]
