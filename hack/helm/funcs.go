package main

// Helm's template functions and objects (helm.sh/helm/v3 pkg/engine/funcs.go, engine.go,
// files.go, pkg/chartutil/capabilities.go): sprig without env/expandenv, plus toYaml, fromYaml,
// fromYamlArray, toJson, fromJson, fromJsonArray, include, tpl, required, fail and lookup, with
// Helm's error wording. toToml is left out (no TOML library in Debian's Go packages here).

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"text/template"

	sprig "github.com/Masterminds/sprig/v3"
	"github.com/ghodss/yaml"
)

const (
	warnStartDelim = "HELM_ERR_START"
	warnEndDelim   = "HELM_ERR_END"
	// Helm's limit on how deep `include` may recurse into the same template.
	recursionMaxNums = 1000
)

var warnRegex = regexp.MustCompile(warnStartDelim + `((?s).*)` + warnEndDelim)

type engine struct {
	root     *template.Template
	included map[string]int
}

func (e *engine) funcMap() template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	if e.included == nil {
		e.included = map[string]int{}
	}
	extra := template.FuncMap{
		"toYaml":        toYAML,
		"fromYaml":      fromYAML,
		"fromYamlArray": fromYAMLArray,
		"toJson":        toJSON,
		"fromJson":      fromJSON,
		"fromJsonArray": fromJSONArray,
		"include":       includeFunc(e.root, e.included),
		"tpl":           tplFunc(e.root, e.included),
		"required": func(warn string, val interface{}) (interface{}, error) {
			if val == nil {
				return val, errors.New(warnStartDelim + warn + warnEndDelim)
			}
			if s, ok := val.(string); ok && s == "" {
				return val, errors.New(warnStartDelim + warn + warnEndDelim)
			}
			return val, nil
		},
		"fail": func(msg string) (string, error) {
			return "", errors.New(warnStartDelim + msg + warnEndDelim)
		},
		// `helm template` has no cluster: lookup finds nothing.
		"lookup": func(string, string, string, string) (map[string]interface{}, error) {
			return map[string]interface{}{}, nil
		},
	}
	for k, v := range extra {
		f[k] = v
	}
	return f
}

func toYAML(v interface{}) string {
	data, err := yaml.Marshal(v)
	if err != nil {
		// Helm swallows the error: the template shows an empty string.
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

func fromYAML(str string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte(str), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func fromYAMLArray(str string) []interface{} {
	a := []interface{}{}
	if err := yaml.Unmarshal([]byte(str), &a); err != nil {
		a = []interface{}{err.Error()}
	}
	return a
}

func toJSON(v interface{}) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(data)
}

func fromJSON(str string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := json.Unmarshal([]byte(str), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func fromJSONArray(str string) []interface{} {
	a := []interface{}{}
	if err := json.Unmarshal([]byte(str), &a); err != nil {
		a = []interface{}{err.Error()}
	}
	return a
}

func includeFunc(t *template.Template, included map[string]int) func(string, interface{}) (string, error) {
	return func(name string, data interface{}) (string, error) {
		if included[name] > recursionMaxNums {
			return "", fmt.Errorf("rendering template has a nested reference name: %s: unable to execute template", name)
		}
		included[name]++
		defer func() { included[name]-- }()
		var buf strings.Builder
		err := t.ExecuteTemplate(&buf, name, data)
		return buf.String(), err
	}
}

func tplFunc(parent *template.Template, included map[string]int) func(string, interface{}) (string, error) {
	return func(text string, vals interface{}) (string, error) {
		t, err := parent.Clone()
		if err != nil {
			return "", fmt.Errorf("cannot clone template: %w", err)
		}
		t.Option("missingkey=zero")
		// include and tpl close over the clone, so a define inside text can be included.
		t.Funcs(template.FuncMap{"include": includeFunc(t, included), "tpl": tplFunc(t, included)})
		name := parent.Name()
		if m, ok := vals.(map[string]interface{}); ok {
			if tm, ok := m["Template"].(map[string]interface{}); ok {
				if n, ok := tm["Name"].(string); ok && n != "" {
					name = n
				}
			}
		}
		t, err = t.New(name).Parse(text)
		if err != nil {
			return "", fmt.Errorf("cannot parse template %q: %w", text, err)
		}
		var buf strings.Builder
		if err := t.Execute(&buf, vals); err != nil {
			return "", fmt.Errorf("error during tpl function execution for %q: %w", text, err)
		}
		return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
	}
}

// cleanupParseError words a parse error as Helm does: "parse error at (file:line): message".
func cleanupParseError(filename string, err error) error {
	tokens := strings.Split(err.Error(), ": ")
	if len(tokens) == 1 {
		return fmt.Errorf("parse error in (%s): %s", filename, err)
	}
	return fmt.Errorf("parse error at (%s): %s", tokens[1], tokens[len(tokens)-1])
}

// cleanupExecError words `required`/`fail` errors as Helm does:
// "execution error at (file:line:col): message"; other execution errors pass unchanged.
func cleanupExecError(filename string, err error) error {
	var execErr template.ExecError
	if !errors.As(err, &execErr) {
		return err
	}
	tokens := strings.SplitN(err.Error(), ": ", 3)
	if len(tokens) != 3 {
		return fmt.Errorf("execution error in (%s): %s", filename, err)
	}
	if parts := warnRegex.FindStringSubmatch(tokens[2]); len(parts) >= 2 {
		return fmt.Errorf("execution error at (%s): %s", tokens[1], parts[1])
	}
	return err
}

// Files is .Files: the chart's files outside templates/, by chart-relative path.
type Files map[string][]byte

// GetBytes returns a file's content, nil when absent.
func (f Files) GetBytes(name string) []byte { return f[name] }

// Get returns a file's content as a string, "" when absent.
func (f Files) Get(name string) string { return string(f[name]) }

// Glob returns the files whose path matches pattern (path.Match syntax; Helm's gobwas/glob
// also knows `**`, which this renderer does not).
func (f Files) Glob(pattern string) Files {
	out := Files{}
	for name, data := range f {
		if ok, _ := path.Match(pattern, name); ok {
			out[name] = data
		}
	}
	return out
}

// AsConfig renders the files as a ConfigMap's data: base name -> content, as YAML.
func (f Files) AsConfig() string {
	if len(f) == 0 {
		return ""
	}
	m := map[string]string{}
	for k, v := range f {
		m[path.Base(k)] = string(v)
	}
	return toYAML(m)
}

// AsSecrets renders the files as a Secret's data: base name -> base64 content, as YAML.
func (f Files) AsSecrets() string {
	if len(f) == 0 {
		return ""
	}
	m := map[string]string{}
	for k, v := range f {
		m[path.Base(k)] = base64.StdEncoding.EncodeToString(v)
	}
	return toYAML(m)
}

// Lines returns a file's lines.
func (f Files) Lines(name string) []string {
	if f == nil || f[name] == nil {
		return []string{}
	}
	return strings.Split(string(f[name]), "\n")
}

// KubeVersion is .Capabilities.KubeVersion.
type KubeVersion struct {
	Version string
	Major   string
	Minor   string
}

func (kv KubeVersion) String() string     { return kv.Version }
func (kv KubeVersion) GitVersion() string { return kv.Version }

// VersionSet is .Capabilities.APIVersions.
type VersionSet []string

// Has reports whether an API version (group/version, or group/version/Kind) is available.
func (v VersionSet) Has(apiVersion string) bool {
	for _, x := range v {
		if x == apiVersion {
			return true
		}
	}
	return false
}

// Capabilities is .Capabilities.
type Capabilities struct {
	KubeVersion KubeVersion
	APIVersions VersionSet
	HelmVersion map[string]string
}

// The built-in group versions a current cluster serves (Helm's default set is client-go's scheme).
var builtinAPIVersions = []string{
	"v1", "admissionregistration.k8s.io/v1", "apiextensions.k8s.io/v1", "apps/v1",
	"authentication.k8s.io/v1", "authorization.k8s.io/v1", "autoscaling/v1", "autoscaling/v2",
	"batch/v1", "certificates.k8s.io/v1", "coordination.k8s.io/v1", "discovery.k8s.io/v1",
	"events.k8s.io/v1", "flowcontrol.apiserver.k8s.io/v1", "networking.k8s.io/v1", "node.k8s.io/v1",
	"policy/v1", "rbac.authorization.k8s.io/v1", "scheduling.k8s.io/v1", "storage.k8s.io/v1",
}

var kubeVersionRegex = regexp.MustCompile(`^v?(\d+)\.(\d+)(\.\d+)?([-+].*)?$`)

func newCapabilities(version string, extra []string) (*Capabilities, error) {
	m := kubeVersionRegex.FindStringSubmatch(version)
	if m == nil {
		return nil, fmt.Errorf("invalid kube version %q", version)
	}
	if !strings.HasPrefix(version, "v") {
		version = "v" + version
	}
	if m[3] == "" {
		version += ".0"
	}
	apis := append(VersionSet{}, builtinAPIVersions...)
	apis = append(apis, extra...)
	sort.Strings(apis)
	return &Capabilities{
		KubeVersion: KubeVersion{Version: version, Major: m[1], Minor: m[2]},
		APIVersions: apis,
		HelmVersion: map[string]string{"Version": "v3.16.0"},
	}, nil
}
