package main

// Splitting rendered templates into manifests and ordering them as Helm installs them
// (helm.sh/helm/v3 pkg/releaseutil/manifest.go, manifest_sorter.go, kind_sorter.go).

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/ghodss/yaml"
)

// installOrder is Helm's InstallOrder: kinds earlier in the list are installed first, unknown
// kinds last (alphabetically by kind), equal kinds in template order.
var installOrder = []string{
	"PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange",
	"PodSecurityPolicy", "PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList",
	"ConfigMap", "StorageClass", "PersistentVolume", "PersistentVolumeClaim",
	"CustomResourceDefinition", "ClusterRole", "ClusterRoleList", "ClusterRoleBinding",
	"ClusterRoleBindingList", "Role", "RoleList", "RoleBinding", "RoleBindingList", "Service",
	"DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
	"HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress",
	"APIService", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
}

var manifestSep = regexp.MustCompile(`(?:^|\s*\n)---\s*`)

type manifest struct {
	source  string
	content string
	kind    string
}

type simpleHead struct {
	Version  string `json:"apiVersion"`
	Kind     string `json:"kind,omitempty"`
	Metadata *struct {
		Name string `json:"name"`
	} `json:"metadata,omitempty"`
}

func sortManifests(rendered map[string]string) ([]manifest, error) {
	sources := make([]string, 0, len(rendered))
	for s := range rendered {
		sources = append(sources, s)
	}
	sort.Strings(sources)
	var out []manifest
	for _, source := range sources {
		for _, doc := range manifestSep.Split(rendered[source], -1) {
			doc = strings.TrimSpace(doc)
			if doc == "" {
				continue
			}
			var head simpleHead
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				return nil, fmt.Errorf("YAML parse error on %s: %s", source, err)
			}
			out = append(out, manifest{source: source, content: doc, kind: head.Kind})
		}
	}
	rank := map[string]int{}
	for i, k := range installOrder {
		rank[k] = i
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, aok := rank[out[i].kind]
		b, bok := rank[out[j].kind]
		switch {
		case !aok && !bok:
			return out[i].kind < out[j].kind
		case !aok:
			return false
		case !bok:
			return true
		}
		return a < b
	})
	return out, nil
}
