"""``hack/koord explain quota NAME``: an ElasticQuota and the tree around it, as the API says.

There is no upstream counterpart (upstream exposes the scheduler's quota summaries only over its
debug API). This reads the ElasticQuotas a kubeconfig can list and prints the quota's ancestors
(root first), the quota, its siblings and its children, each with ``min`` and ``max`` from the
spec and ``runtime``, ``request`` (the ``quota.scheduling.koordinator.sh/`` annotations) and
``used`` (``status.used``) that koord-scheduler's quota controller writes back, per resource.
A dimension whose used or request exceeds the runtime is marked: used over runtime is what
over-use revocation evicts for, request over runtime means pods wait for quota. Hints below the
table name what users found confusing (koordinator#2104, #2342, #2393): a quota that does not
lend, a runtime below min while the quota asks for more, children's mins summing over their
parent's min. ``hack/koord explain pod`` shows the same figures from the scheduler's own tree.
A quota of a quota tree (label ``quota.scheduling.koordinator.sh/tree-id``, a separate tree
under koord-scheduler's MultiQuotaTree gate) is shown with its own tree only: the header names
the tree and the total its root quota's ``total-resource`` annotation gives it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from api.errors import MalformedValueError
from api.extension.elastic_quota import (
    ANNOTATION_REQUEST,
    ANNOTATION_RUNTIME,
    ANNOTATION_TOTAL_RESOURCE,
    ROOT_QUOTA_NAME,
    get_parent_quota_name,
    get_quota_tree_id,
    is_allow_lent_resource,
    is_tree_root_quota,
    parse_quota_resource_list,
)
from api.extension.objects import KubeDict, annotations_of, labels_of, metadata_of, spec_of
from pkg.util.podresources import quantity_int
from scheduler.plugins.elasticquota.core.quota_info import mask
from scheduler.plugins.elasticquota.state import add, print_resource_list

COLUMNS = ("min", "max", "runtime", "request", "used")
HEADER = ("QUOTA", "RESOURCE", "MIN", "MAX", "RUNTIME", "REQUEST", "USED", "")


class QuotaNotFound(LookupError):
    """The asked quota is not among those the API server listed."""


@dataclass(slots=True)
class QuotaView:
    """One ElasticQuota's figures, as quantity strings by resource name per column."""

    name: str
    namespace: str
    parent: str
    allow_lent: bool = True
    tree: str = ""  # the quota tree id; "" for the default tree
    tree_total: str = ""  # a tree root's total-resource annotation, as written
    figures: dict[str, dict[str, str]] = field(default_factory=dict)
    # Annotations that did not parse: shown instead of silently read as empty.
    problems: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, eq: KubeDict) -> QuotaView:
        md = metadata_of(eq)
        name = md.get("name") or ""
        labels = labels_of(eq)
        view = cls(name, md.get("namespace") or "", get_parent_quota_name(name, labels),
                   is_allow_lent_resource(labels), get_quota_tree_id(labels))
        spec, annotations = spec_of(eq), annotations_of(eq)
        if is_tree_root_quota(labels):
            view.tree_total = annotations.get(ANNOTATION_TOTAL_RESOURCE, "")
        view.figures["min"] = dict(spec.get("min") or {})
        view.figures["max"] = dict(spec.get("max") or {})
        for column, key in (("runtime", ANNOTATION_RUNTIME), ("request", ANNOTATION_REQUEST)):
            try:
                view.figures[column] = parse_quota_resource_list(annotations, key)
            except MalformedValueError as err:
                view.figures[column] = {}
                view.problems.append(str(err))
        view.figures["used"] = dict((eq.get("status") or {}).get("used") or {})
        return view

    def resources(self) -> list[str]:
        return sorted({name for figures in self.figures.values() for name in figures})

    def over_runtime(self, resource: str) -> list[str]:
        """Which of used and request exceed the runtime in ``resource`` (a missing runtime
        is not a limit: the controller has not written one yet)."""
        runtime = self.figures["runtime"].get(resource)
        if runtime is None:
            return []
        limit = _value(resource, runtime)
        return [column for column in ("used", "request")
                if (q := self.figures[column].get(resource)) is not None
                and limit is not None and (v := _value(resource, q)) is not None and v > limit]


    def amounts(self, column: str) -> dict[str, int]:
        """A column as integers (cpu in milli), leaving out what does not parse."""
        return {r: v for r, q in self.figures[column].items()
                if (v := _value(r, q)) is not None}


def _value(resource: str, q: str) -> int | None:
    try:
        return quantity_int(resource, q)
    except (ValueError, ArithmeticError):
        return None


@dataclass(slots=True)
class _Row:
    quota: str
    cells: tuple[str, ...]


def _rows(view: QuotaView | None, name: str, depth: int, asked: bool = False) -> list[_Row]:
    label = "  " * depth + name
    if view is None:
        return [_Row(label, ("", "", "", "", "", "", "(not among the ElasticQuotas listed)"))]
    if view.namespace:
        label += f" ({view.namespace})"
    if asked:
        label += " *"
    rows = []
    for i, resource in enumerate(view.resources() or ["-"]):
        cells = [view.figures[c].get(resource, "-") for c in COLUMNS]
        over = view.over_runtime(resource)
        note = ", ".join(f"{c} > runtime" for c in over)
        rows.append(_Row(label if i == 0 else "", (resource, *cells, note)))
    rows.extend(_Row("", ("", "", "", "", "", "", f"! {p}")) for p in view.problems)
    return rows


def _table(rows: Sequence[_Row]) -> str:
    lines = [(r.quota, *r.cells) for r in rows]
    all_lines = [HEADER, *lines]
    widths = [max(len(line[i]) for line in all_lines) for i in range(len(HEADER))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True))
                     .rstrip() for line in all_lines)


def _hints(shown: Iterable[QuotaView],
           families: Iterable[tuple[QuotaView, Sequence[QuotaView]]]) -> list[str]:
    """What explains the figures of the quotas shown; ``families`` are parents with their
    children."""
    hints = []
    for v in shown:
        min_, runtime, request = v.amounts("min"), v.amounts("runtime"), v.amounts("request")
        used = v.amounts("used")
        idle = {r: m for r, m in min_.items() if used.get(r, 0) < m}
        if not v.allow_lent and v.name != ROOT_QUOTA_NAME and idle:
            hints.append(f"{v.name} does not lend (allow-lent-resource: false): it keeps its "
                         f"min {print_resource_list(idle)} while using "
                         f"{print_resource_list({r: used.get(r, 0) for r in idle})}")
        short = {r: m for r, m in min_.items()
                 if r in runtime and runtime[r] < m and request.get(r, 0) > runtime[r]}
        if short:
            hints.append(f"{v.name}'s runtime {print_resource_list(mask(runtime, short))} is "
                         f"below its min {print_resource_list(short)} while it asks for more: "
                         "its parent's runtime is less than its children's mins, which are "
                         "scaled down")
    for parent, children in families:
        total: dict[str, int] = {}
        for child in children:
            total = add(total, child.amounts("min"))
        parent_min = parent.amounts("min")
        over = {r: t for r, t in total.items() if r in parent_min and t > parent_min[r]}
        if over:
            hints.append(f"the mins of {parent.name}'s {len(children)} child(ren) sum to "
                         f"{print_resource_list(over)}, more than its min "
                         f"{print_resource_list(mask(parent_min, over))}: they are guaranteed "
                         f"only while {parent.name} borrows")
    return hints


def _pick(quotas: Iterable[QuotaView], name: str, namespace: str | None) -> QuotaView:
    found = [q for q in quotas if q.name == name and namespace in (None, q.namespace)]
    if not found:
        where = f" in namespace {namespace!r}" if namespace else ""
        raise QuotaNotFound(f'ElasticQuota "{name}" not found{where}')
    if len(found) > 1:
        spaces = ", ".join(sorted(q.namespace for q in found))
        raise QuotaNotFound(f'ElasticQuota "{name}" exists in several namespaces ({spaces}): '
                            "pick one with --namespace")
    return found[0]


def quota_tree_text(objects: Iterable[KubeDict], name: str,
                    namespace: str | None = None) -> str:
    """The quota ``name`` with its ancestors, siblings and children, as a table.

    Raises QuotaNotFound when no listed ElasticQuota has that name.
    """
    views = [QuotaView.of(eq) for eq in objects]
    target = _pick(views, name, namespace)
    by_name = {v.name: v for v in views if v is target or v.name != target.name}
    children: dict[str, list[QuotaView]] = {}
    for v in by_name.values():
        children.setdefault(v.parent, []).append(v)

    ancestors: list[str] = []
    parent, seen = target.parent, {target.name}
    while parent and parent not in seen:  # a parent cycle ends the walk
        if target.tree and (parent == ROOT_QUOTA_NAME or
                            (parent in by_name and by_name[parent].tree != target.tree)):
            break  # a tree's root quota is the top of its tree
        ancestors.append(parent)
        seen.add(parent)
        parent = by_name[parent].parent if parent in by_name else ""
    ancestors.reverse()

    rows: list[_Row] = []
    for depth, a in enumerate(ancestors):
        rows += _rows(by_name.get(a), a, depth)
    depth = len(ancestors)
    siblings = sorted((v for v in children.get(target.parent, [target]) if v.tree == target.tree),
                      key=lambda v: v.name)
    own = sorted(children.get(target.name, []), key=lambda c: c.name)
    for v in siblings:
        rows += _rows(v, v.name, depth, v is target)
        if v is target:
            for child in own:
                rows += _rows(child, child.name, depth + 1)
    parent_view = by_name.get(target.parent)
    families = [(target, own)] + ([(parent_view, siblings)] if parent_view is not None else [])
    hints = _hints([*(by_name[a] for a in ancestors if a in by_name), *siblings, *own],
                   families)
    kids = len(children.get(target.name, []))
    where = f"{target.namespace}/" if target.namespace else ""
    head = (f"ElasticQuota {where}{target.name}: parent {target.parent or '(none)'}, "
            f"{len(siblings) - 1} sibling(s), {kids} child(ren).")
    if target.tree:
        roots = [v for v in views if v.tree == target.tree and v.tree_total]
        total = f", total {roots[0].tree_total} (total-resource of {roots[0].name})" \
            if roots else ", no root quota with total-resource listed"
        head += f"\nQuota tree {target.tree} (a tree of its own under MultiQuotaTree){total}."
    legend = ("* the quota asked about. runtime and request are the scheduler's "
              "quota.scheduling.koordinator.sh/ annotations, used is status.used;\n"
              "\"used > runtime\" is what over-use revocation evicts for, "
              "\"request > runtime\" keeps pods waiting for quota.")
    if target.name == ROOT_QUOTA_NAME:
        legend += "\nThe root quota's runtime is the cluster total less system and default use."
    notes = "".join(f"hint: {h}\n" for h in hints) + ("\n" if hints else "")
    return f"{head}\n\n{_table(rows)}\n\n{notes}{legend}"


def explain_quota(kubeconfig: str | None, name: str, namespace: str | None) -> str:
    """Read every ElasticQuota the kubeconfig can list and explain ``name``; a user allowed
    only one namespace sees that namespace's part of the tree."""
    from pkg.client.errors import ApiError, is_forbidden
    from pkg.client.resources import ELASTIC_QUOTAS
    from pkg.client.rest import Client

    client = Client.from_kubeconfig(kubeconfig)
    try:
        try:
            listed = client.list_all(ELASTIC_QUOTAS)
        except ApiError as err:
            if not (namespace and is_forbidden(err)):
                raise
            listed = client.list_all(ELASTIC_QUOTAS, namespace)
    finally:
        client.close()
    return quota_tree_text(listed.get("items") or [], name, namespace)


__all__ = ["QuotaNotFound", "QuotaView", "explain_quota", "quota_tree_text"]
