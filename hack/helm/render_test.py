"""The Go chart renderer against known Helm outputs: the cases of Helm's own tests
(helm.sh/helm/v3 pkg/engine/funcs_test.go, engine_test.go, pkg/strvals/parser_test.go,
pkg/chartutil/jsonschema_test.go) and Helm behaviour users rely on (``nindent``/``toYaml``
whitespace, numbers from values files printed as float64, ``required``'s error wording, the
``# Source:`` stream in install order, schema errors)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from hack.helm.render import RenderError, main, render, render_objects


def chart(tmp_path: Path, templates: dict[str, str], values: str = "",
          schema: object = None, files: dict[str, str] | None = None) -> Path:
    root = tmp_path / "moby"
    (root / "templates").mkdir(parents=True)
    (root / "Chart.yaml").write_text("apiVersion: v2\nname: moby\nversion: 1.2.3\n"
                                     "appVersion: \"4.5\"\n")
    (root / "values.yaml").write_text(values)
    if schema is not None:
        (root / "values.schema.json").write_text(json.dumps(schema))
    for name, text in templates.items():
        (root / "templates" / name).write_text(text)
    for name, text in (files or {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def one(tmp_path: Path, template: str, values: str = "", **kw: object) -> str:
    """The body of a single rendered template (the text after its ``# Source:`` line)."""
    out = render(chart(tmp_path, {"t.yaml": template}, values), **kw)  # type: ignore[arg-type]
    head = "---\n# Source: moby/templates/t.yaml\n"
    assert out.startswith(head), out
    return out[len(head):].removesuffix("\n")


# Helm's funcs_test.go: each template rendered inside a YAML comment so any text parses.
FUNCS = [
    ('{{ toYaml (dict "foo" "bar") }}', "foo: bar"),
    ('{{ toJson (dict "foo" "bar") }}', '{"foo":"bar"}'),
    ('{{ fromYaml "hello: world" }}', "map[hello:world]"),
    ('{{ fromYamlArray "- one\\n- 2\\n- name: helm\\n" }}', "[one 2 map[name:helm]]"),
    ('{{ fromYamlArray "[\\"one\\", 2, { \\"name\\": \\"helm\\" }]" }}', "[one 2 map[name:helm]]"),
    ('{{ fromYaml "- one\\n- two\\n" }}',
     "map[Error:error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array "
     "into Go value of type map[string]interface {}]"),
    ('{{ fromJson "{\\"hello\\":\\"world\\"}" }}', "map[hello:world]"),
    ('{{ fromJson "[\\"one\\", \\"two\\"]" }}',
     "map[Error:json: cannot unmarshal array into Go value of type map[string]interface {}]"),
    ('{{ fromJsonArray "[\\"one\\", 2, { \\"name\\": \\"helm\\" }]" }}',
     "[one 2 map[name:helm]]"),
    ('{{ fromJsonArray "{\\"hello\\": \\"world\\"}" }}',
     "[json: cannot unmarshal object into Go value of type []interface {}]"),
    ('{{ fromYamlArray "hello: world" }}',
     "[error unmarshaling JSON: while decoding JSON: json: cannot unmarshal object into Go "
     "value of type []interface {}]"),
    ('{{ merge (dict "a" (dict "b" "c")) (fromYaml "{\\"a\\":{\\"b\\":\\"d\\"}}") }}',
     "map[a:map[b:c]]"),
    ('{{ merge (fromYaml "{\\"a\\":{\\"b\\":\\"d\\"}}") (dict "a" (dict "b" "c")) }}',
     "map[a:map[b:d]]"),
    ('{{ lookup "v1" "Namespace" "" "unlikelynamespace99999999" }}', "map[]"),
]


@pytest.mark.parametrize(("template", "expect"), FUNCS)
def test_helm_functions(tmp_path: Path, template: str, expect: str) -> None:
    assert one(tmp_path, f"# {template}") == f"# {expect}"


def test_include_nindent_and_toyaml_whitespace(tmp_path: Path) -> None:
    root = chart(tmp_path, {
        "_helpers.tpl": '{{- define "moby.labels" -}}\napp: {{ .Chart.Name }}\n'
                        '{{- with .Values.labels }}\n{{ toYaml . }}\n{{- end }}\n{{- end }}\n',
        "cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n"
                   "  labels:\n    {{- include \"moby.labels\" . | nindent 4 }}\n"
                   "data:\n  {{- toYaml .Values.data | nindent 2 }}\n",
    }, values="labels:\n  tier: web\n  z: last\ndata:\n  b: '2'\n  a: |\n    x\n    y\n")
    assert render(root, release_name="rel") == (
        "---\n# Source: moby/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n"
        "  name: rel\n  labels:\n    app: moby\n    tier: web\n    z: last\ndata:\n"
        "  a: |\n    x\n    y\n  b: \"2\"\n")


def test_values_numbers_are_float64_as_in_helm(tmp_path: Path) -> None:
    # sigs.k8s.io/yaml turns YAML numbers into float64: Helm prints 1000000 as 1e+06.
    assert one(tmp_path, "# {{ .Values.small }} {{ .Values.big }} {{ .Values.big | int }}",
               values="small: 2\nbig: 1000000\n") == "# 2 1e+06 1000000"


def test_objects_release_chart_capabilities_template(tmp_path: Path) -> None:
    out = one(tmp_path, "# {{ .Release.Name }} {{ .Release.Namespace }} {{ .Release.Service }} "
              "{{ .Release.IsInstall }} {{ .Chart.Name }} {{ .Chart.Version }} "
              "{{ .Chart.AppVersion }} {{ .Capabilities.KubeVersion.Version }} "
              "{{ .Capabilities.KubeVersion.Minor }} "
              '{{ .Capabilities.APIVersions.Has "apps/v1" }} '
              '{{ .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" }} '
              '{{ semverCompare "<1.22-0" .Capabilities.KubeVersion.Version }} '
              "{{ .Template.Name }} {{ .Template.BasePath }}",
              namespace="ns1", release_name="r1", kube_version="v1.21.3")
    assert out == ("# r1 ns1 Helm true moby 1.2.3 4.5 v1.21.3 21 true false true "
                   "moby/templates/t.yaml moby/templates")


def test_missing_values_render_empty_not_no_value(tmp_path: Path) -> None:
    assert one(tmp_path, '# "{{ .Values.nope }}" "{{ .Values.a.b }}"', values="a: {}\n") \
        == '# "" ""'


def test_tpl_and_files(tmp_path: Path) -> None:
    root = chart(tmp_path, {"t.yaml": '# {{ tpl .Values.tmpl . }} {{ .Files.Get "files/a.txt" }}'
                            '\n{{- range $p, $_ := .Files.Glob "files/*.yaml" }}\n# {{ $p }}'
                            '{{- end }}\n# {{ (.Files.Glob "files/*.yaml").AsConfig | '
                            'fromYaml | keys | sortAlpha }}'},
                 values='tmpl: "{{ .Release.Name }}-x"\n',
                 files={"files/a.txt": "hello", "files/b.yaml": "b: 1\n",
                        "files/c.yaml": "c: 2\n"})
    assert render(root, release_name="r").splitlines()[2:] == [
        "# r-x hello", "# files/b.yaml", "# files/c.yaml", "# [b.yaml c.yaml]"]


def test_required_and_fail_errors_use_helms_wording(tmp_path: Path) -> None:
    root = chart(tmp_path, {"t.yaml": 'x: {{ required "foo is required" .Values.foo }}\n'})
    with pytest.raises(RenderError) as e:
        render(root)
    assert str(e.value) == "execution error at (moby/templates/t.yaml:1:6): foo is required"
    root = chart(tmp_path / "f", {"t.yaml": '\n\n{{ fail "nope" }}\n'})
    with pytest.raises(RenderError, match=r"^execution error at \(moby/templates/t.yaml:3:3\)"
                                          r": nope$"):
        render(root)


def test_parse_error_names_the_file_and_line(tmp_path: Path) -> None:
    root = chart(tmp_path, {"t.yaml": "a: 1\n{{ if .Values.x }}\n"})
    with pytest.raises(RenderError, match=r"^parse error at \(moby/templates/t.yaml:3\): "
                                          r"unexpected EOF$"):
        render(root)


def test_invalid_yaml_output_is_an_error(tmp_path: Path) -> None:
    root = chart(tmp_path, {"t.yaml": "a: b: c\n"})
    with pytest.raises(RenderError, match=r"^YAML parse error on moby/templates/t.yaml: "):
        render(root)


def test_manifests_in_install_order_with_sources(tmp_path: Path) -> None:
    root = chart(tmp_path, {
        "a.yaml": "kind: Deployment\napiVersion: apps/v1\nmetadata: {name: d}\n---\n"
                  "kind: WidgetThing\nmetadata: {name: w}\n",
        "b.yaml": "\n---\nkind: ClusterRole\nmetadata: {name: r}\n---\n# only a comment\n",
        "c.yaml": "kind: CustomResourceDefinition\nmetadata: {name: c}\n---\n"
                  "kind: Namespace\nmetadata: {name: n}\n---\n"
                  "kind: ValidatingWebhookConfiguration\nmetadata: {name: v}\n---\n"
                  "kind: ServiceAccount\nmetadata: {name: s}\n",
        "_partial.yaml": "kind: Secret\n",
        "NOTES.txt": "thanks",
        "empty.yaml": "{{- if false }}\nkind: Pod\n{{- end }}\n",
    })
    out = render(root)
    sources = [line for line in out.splitlines() if line.startswith("# Source:")]
    assert [o.get("kind") for o in yaml.safe_load_all(out) if o] == [
        "Namespace", "ServiceAccount", "CustomResourceDefinition", "ClusterRole", "Deployment",
        "ValidatingWebhookConfiguration", "WidgetThing"]
    assert sources[0] == "# Source: moby/templates/c.yaml"
    assert "# Source: moby/templates/b.yaml" in sources
    assert len(sources) == 8  # the comment-only document is a manifest too, as in Helm
    assert all(o is None or isinstance(o, dict) for o in yaml.safe_load_all(out))


# pkg/strvals/parser_test.go: --set syntax and typing.
SETS = [
    (["name1=value1"], {"name1": "value1"}),
    (["long_int_string=1234567890"], {"long_int_string": 1234567890}),
    (["boolean=true,f=false"], {"boolean": True, "f": False}),
    (["zero=0,leading_zeros=00009"], {"zero": 0, "leading_zeros": "00009"}),
    (["name1=value1,name2=value2"], {"name1": "value1", "name2": "value2"}),
    (["name1=value1,name2="], {"name1": "value1", "name2": ""}),
    (["name1.name2=value1"], {"name1": {"name2": "value1"}}),
    (["name1\\.name2=value1"], {"name1.name2": "value1"}),
    (["name1=one\\,two"], {"name1": "one,two"}),
    (["name1={value1,value2}"], {"name1": ["value1", "value2"]}),
    (["list[0]=foo,list[1].a=b"], {"list": ["foo", {"a": "b"}]}),
    (["a=1", "a=2"], {"a": 2}),
]


@pytest.mark.parametrize(("sets", "expect"), SETS)
def test_set_values(tmp_path: Path, sets: list[str], expect: dict[str, object]) -> None:
    assert json.loads(one(tmp_path, "{{ toJson .Values }}", set_values=sets)) == expect


def test_set_string_keeps_text_and_null_deletes(tmp_path: Path) -> None:
    out = one(tmp_path, "{{ toJson .Values }}", values="keep: 1\ngone: {a: 1}\n",
              set_values=["gone=null"], set_strings=["n=0009,b=true"])
    assert json.loads(out) == {"keep": 1, "n": "0009", "b": "true"}


@pytest.mark.parametrize(("sets", "message"), [
    (["name1"], 'failed parsing --set data: key "name1" has no value'),
    (["name1,name2=x"], 'failed parsing --set data: key "name1" has no value (cannot end with ,)'),
    (["a={b,c"], "failed parsing --set data: list must terminate with '}'"),
])
def test_set_errors(tmp_path: Path, sets: list[str], message: str) -> None:
    with pytest.raises(RenderError) as e:
        render(chart(tmp_path, {"t.yaml": "{}"}), set_values=sets)
    assert str(e.value) == message


def test_values_files_merge_in_order_over_defaults(tmp_path: Path) -> None:
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text("m: {x: 1, w: 1}\nl: [1]\n")
    b.write_text("m: {w: 2}\n")
    out = one(tmp_path, "{{ toJson .Values }}", values="m: {x: 0, z: 0}\nl: [0, 0]\nd: 1\n",
              values_files=[a, b], set_values=["m.z=3"])
    assert json.loads(out) == {"m": {"x": 1, "w": 2, "z": 3}, "l": [1], "d": 1}


SCHEMA = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
          "additionalProperties": False,
          "properties": {"manager": {"type": "object", "additionalProperties": False,
                                     "properties": {"replicas": {"type": "integer"}}}}}


def test_schema_rejects_misspelt_key_and_wrong_type(tmp_path: Path) -> None:
    root = chart(tmp_path, {"t.yaml": "{}"}, values="manager:\n  replicas: 2\n", schema=SCHEMA)
    render(root)
    render(root, set_values=["manager.replicas=3"])
    with pytest.raises(RenderError) as e:
        render(root, set_values=["manager.replica=3"])
    assert str(e.value) == (
        "values don't meet the specifications of the schema(s) in the following chart(s):\n"
        "moby:\n- manager: Additional property replica is not allowed")
    with pytest.raises(RenderError, match="- manager.replicas: Invalid type. Expected: integer, "
                                          "given: string"):
        render(root, set_values=["manager.replicas=two"])


def test_render_objects_and_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = chart(tmp_path, {"t.yaml": "kind: ConfigMap\nmetadata:\n  name: {{ .Values.n }}\n"},
                 values="n: a\n")
    assert render_objects(root, set_values=["n=b"]) == [
        {"kind": "ConfigMap", "metadata": {"name": "b"}}]
    assert main([str(root), "--set", "n=c"]) == 0
    assert "name: c" in capsys.readouterr().out
    assert main([str(root), "--set", "n"]) == 1
    assert capsys.readouterr().err == 'Error: failed parsing --set data: key "n" has no value\n'
