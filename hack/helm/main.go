// Command koord-helm-render renders a Helm chart directory as `helm template` does, with Go's
// text/template, sprig and Helm's own template functions (funcs.go), so that charts/koordinator
// is rendered by the same engine Helm uses. It is built offline from Debian's golang-go and
// golang-github-masterminds-sprig-dev (hack/helm/build.sh); nothing here talks to a cluster.
//
// What it reproduces of Helm 3 (helm.sh/helm/v3 pkg/chart/loader, pkg/chartutil, pkg/engine,
// pkg/strvals, pkg/releaseutil, cmd/helm/template.go):
//   - loading: Chart.yaml, values.yaml, values.schema.json, templates/ (partials start with `_`,
//     NOTES.txt is not rendered), every other file as .Files; .helmignore is not read; charts/
//     (subcharts) are not supported and are an error;
//   - values: the chart's values, then each -f file, then --set/--set-string, coalesced as Helm
//     does (maps merge, a null removes a key), validated against values.schema.json;
//   - rendering: one template set, missingkey=zero, "<no value>" removed, Helm's error wording;
//   - output: manifests split on `---`, sorted by Helm's install order, each printed as
//     "---\n# Source: <chart>/templates/<file>\n<manifest>\n".
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/ghodss/yaml"
	"github.com/xeipuuv/gojsonschema"
)

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

type chart struct {
	name      string
	metadata  map[string]interface{}
	values    map[string]interface{}
	schema    []byte
	templates map[string]string // "<chart>/templates/<file>" -> text
	files     Files             // chart-relative path -> content
}

func main() {
	var valueFiles, sets, setStrings, apiVersions multiFlag
	flag.Var(&valueFiles, "f", "values file (may repeat)")
	flag.Var(&valueFiles, "values", "values file (may repeat)")
	flag.Var(&sets, "set", "set values on the command line (may repeat: a.b=c,d=e)")
	flag.Var(&setStrings, "set-string", "set STRING values on the command line (may repeat)")
	flag.Var(&apiVersions, "api-versions", "Kubernetes API versions for .Capabilities (may repeat)")
	namespace := flag.String("namespace", "default", "the release namespace")
	releaseName := flag.String("release-name", "release-name", "the release name")
	kubeVersion := flag.String("kube-version", "v1.35.0", "the Kubernetes version for .Capabilities")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: koord-helm-render [flags] CHART_DIR\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	out, err := run(flag.Arg(0), valueFiles, sets, setStrings, apiVersions, *namespace, *releaseName, *kubeVersion)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %s\n", strings.TrimRight(err.Error(), "\n"))
		os.Exit(1)
	}
	os.Stdout.WriteString(out)
}

func run(dir string, valueFiles, sets, setStrings, apiVersions []string, namespace, releaseName, kubeVersion string) (string, error) {
	c, err := loadChart(dir)
	if err != nil {
		return "", err
	}
	user := map[string]interface{}{}
	for _, f := range valueFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		vals, err := readValues(data)
		if err != nil {
			return "", fmt.Errorf("failed to parse %s: %w", f, err)
		}
		user = mergeMaps(user, vals)
	}
	for _, s := range sets {
		if err := parseInto(s, user, false); err != nil {
			return "", fmt.Errorf("failed parsing --set data: %w", err)
		}
	}
	for _, s := range setStrings {
		if err := parseInto(s, user, true); err != nil {
			return "", fmt.Errorf("failed parsing --set-string data: %w", err)
		}
	}
	values := coalesce(user, c.values)
	if err := validateSchema(c, values); err != nil {
		return "", err
	}
	caps, err := newCapabilities(kubeVersion, apiVersions)
	if err != nil {
		return "", err
	}
	top := map[string]interface{}{
		"Values": values,
		"Release": map[string]interface{}{
			"Name": releaseName, "Namespace": namespace, "IsInstall": true, "IsUpgrade": false,
			"Revision": 1, "Service": "Helm",
		},
		"Chart":        c.metadata,
		"Capabilities": caps,
		"Files":        c.files,
	}
	rendered, err := renderTemplates(c, top)
	if err != nil {
		return "", err
	}
	manifests, err := sortManifests(rendered)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, m := range manifests {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.source, m.content)
	}
	return b.String(), nil
}

// readValues parses YAML as Helm does (sigs.k8s.io/yaml: YAML to JSON, so numbers are float64).
func readValues(data []byte) (map[string]interface{}, error) {
	vals := map[string]interface{}{}
	if err := yaml.Unmarshal(data, &vals); err != nil {
		return nil, err
	}
	if vals == nil {
		vals = map[string]interface{}{}
	}
	return vals, nil
}

func loadChart(dir string) (*chart, error) {
	meta, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return nil, fmt.Errorf("Chart.yaml file is missing: %w", err)
	}
	c := &chart{metadata: map[string]interface{}{}, templates: map[string]string{}, files: Files{}}
	raw := map[string]interface{}{}
	if err := yaml.Unmarshal(meta, &raw); err != nil {
		return nil, fmt.Errorf("cannot load Chart.yaml: %w", err)
	}
	for k, v := range raw {
		// .Chart is Helm's chart.Metadata struct: exported field names.
		key := strings.ToUpper(k[:1]) + k[1:]
		if k == "apiVersion" {
			key = "APIVersion"
		}
		c.metadata[key] = v
	}
	name, _ := raw["name"].(string)
	if name == "" {
		return nil, errors.New("validation: chart.metadata.name is required")
	}
	c.name = name
	if data, err := os.ReadFile(filepath.Join(dir, "values.yaml")); err == nil {
		if c.values, err = readValues(data); err != nil {
			return nil, fmt.Errorf("cannot load values.yaml: %w", err)
		}
	} else {
		c.values = map[string]interface{}{}
	}
	if data, err := os.ReadFile(filepath.Join(dir, "values.schema.json")); err == nil {
		c.schema = data
	}
	// Helm follows symbolic links in a chart directory; filepath.WalkDir does not, so stat.
	err = walk(dir, "", func(rel string, data []byte) error {
		switch {
		case rel == "Chart.yaml" || rel == "values.yaml" || rel == "values.schema.json":
		case strings.HasPrefix(rel, "charts/"):
			return fmt.Errorf("subcharts are not supported (%s)", rel)
		case strings.HasPrefix(rel, "templates/"):
			c.templates[path.Join(name, rel)] = string(data)
		default:
			c.files[rel] = data
		}
		return nil
	})
	return c, err
}

func walk(root, rel string, visit func(string, []byte) error) error {
	entries, err := os.ReadDir(filepath.Join(root, rel))
	if err != nil {
		return err
	}
	for _, e := range entries {
		r := path.Join(rel, e.Name())
		info, err := os.Stat(filepath.Join(root, r))
		if err != nil {
			return err
		}
		if info.IsDir() {
			if err := walk(root, r, visit); err != nil {
				return err
			}
			continue
		}
		if !info.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, r))
		if err != nil {
			return err
		}
		if err := visit(r, data); err != nil {
			return err
		}
	}
	return nil
}

// coalesce merges user values over the chart's defaults as Helm's chartutil.CoalesceTables:
// maps merge recursively, any other user value replaces the default, and a user null deletes.
func coalesce(user, defaults map[string]interface{}) map[string]interface{} {
	out := map[string]interface{}{}
	for k, v := range defaults {
		out[k] = v
	}
	for k, v := range user {
		if v == nil {
			delete(out, k)
			continue
		}
		um, uok := v.(map[string]interface{})
		dm, dok := out[k].(map[string]interface{})
		if uok && dok {
			out[k] = coalesce(um, dm)
		} else {
			out[k] = v
		}
	}
	return out
}

// mergeMaps merges values files in order (Helm's mergeMaps: later files win, maps merge).
func mergeMaps(a, b map[string]interface{}) map[string]interface{} {
	out := map[string]interface{}{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if vm, ok := v.(map[string]interface{}); ok {
			if om, ok := out[k].(map[string]interface{}); ok {
				out[k] = mergeMaps(om, vm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

func validateSchema(c *chart, values map[string]interface{}) error {
	if c.schema == nil {
		return nil
	}
	doc, err := yaml.Marshal(values)
	if err != nil {
		return err
	}
	valuesJSON, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return err
	}
	if bytes.Equal(valuesJSON, []byte("null")) {
		valuesJSON = []byte("{}")
	}
	result, err := gojsonschema.Validate(gojsonschema.NewBytesLoader(c.schema), gojsonschema.NewBytesLoader(valuesJSON))
	if err != nil {
		return fmt.Errorf("values don't meet the specifications of the schema(s) in the following chart(s):\n%s:\n%w", c.name, err)
	}
	if result.Valid() {
		return nil
	}
	var b strings.Builder
	for _, desc := range result.Errors() {
		fmt.Fprintf(&b, "- %s\n", desc)
	}
	return fmt.Errorf("values don't meet the specifications of the schema(s) in the following chart(s):\n%s:\n%s", c.name, b.String())
}

func renderTemplates(c *chart, top map[string]interface{}) (map[string]string, error) {
	names := make([]string, 0, len(c.templates))
	for n := range c.templates {
		names = append(names, n)
	}
	sort.Strings(names)
	t := template.New("gotpl").Option("missingkey=zero")
	e := &engine{root: t}
	t.Funcs(e.funcMap())
	for _, n := range names {
		if _, err := t.New(n).Parse(c.templates[n]); err != nil {
			return nil, cleanupParseError(n, err)
		}
	}
	out := map[string]string{}
	for _, n := range names {
		base := path.Base(n)
		if strings.HasPrefix(base, "_") || base == "NOTES.txt" {
			continue
		}
		vals := scope(top, n)
		var buf strings.Builder
		if err := t.ExecuteTemplate(&buf, n, vals); err != nil {
			return nil, cleanupExecError(n, err)
		}
		out[n] = strings.ReplaceAll(buf.String(), "<no value>", "")
	}
	return out, nil
}

// scope is the top-level object with .Template set for template name.
func scope(top map[string]interface{}, name string) map[string]interface{} {
	vals := make(map[string]interface{}, len(top)+1)
	for k, v := range top {
		vals[k] = v
	}
	dir := path.Dir(name)
	for path.Base(dir) != "templates" && dir != "." && dir != "/" {
		dir = path.Dir(dir)
	}
	vals["Template"] = map[string]interface{}{"Name": name, "BasePath": dir}
	return vals
}
