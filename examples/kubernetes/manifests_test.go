package kubernetes

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite grafana-dashboard.yaml from docs/grafana/coordelect.json")

// dashboardJSON is the Grafana dashboard that the ConfigMap carries.
const dashboardJSON = "../../docs/grafana/coordelect.json"

// typeMeta is the part of every manifest that says what it is.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// newObject returns the k8s.io/api type a manifest of this apiVersion and
// kind decodes into; an unknown pair is an error (a misspelt kind or an
// API version the example does not use).
func newObject(tm typeMeta) (any, error) {
	switch tm {
	case typeMeta{"v1", "Service"}:
		return &corev1.Service{}, nil
	case typeMeta{"v1", "ConfigMap"}:
		return &corev1.ConfigMap{}, nil
	case typeMeta{"apps/v1", "StatefulSet"}:
		return &appsv1.StatefulSet{}, nil
	case typeMeta{"policy/v1", "PodDisruptionBudget"}:
		return &policyv1.PodDisruptionBudget{}, nil
	}
	return nil, fmt.Errorf("apiVersion %q, kind %q: not a type this example uses", tm.APIVersion, tm.Kind)
}

// decodeStrict decodes every YAML document of data into its k8s.io/api
// type, failing on a field the type does not have (a misspelling), a
// duplicate field, or a value of the wrong type.
func decodeStrict(data []byte) ([]any, error) {
	var out []any
	for i, doc := range splitDocuments(data) {
		var tm typeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		obj, err := newObject(tm)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return nil, fmt.Errorf("document %d (%s): %w", i, tm.Kind, err)
		}
		out = append(out, obj)
	}
	return out, nil
}

// splitDocuments splits a YAML stream at its "---" lines, dropping
// documents that hold only comments or blanks.
func splitDocuments(data []byte) [][]byte {
	var docs [][]byte
	var cur []string
	flush := func() {
		for _, l := range cur {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
				docs = append(docs, []byte(strings.Join(cur, "\n")))
				break
			}
		}
		cur = nil
	}
	for l := range strings.SplitSeq(string(data), "\n") {
		if strings.TrimRight(l, " ") == "---" {
			flush()
			continue
		}
		cur = append(cur, l)
	}
	flush()
	return docs
}

// kustomization is the part of kustomization.yaml this example uses.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
}

// manifests decodes every manifest kustomization.yaml lists, strictly, and
// checks that it lists every YAML file of the directory.
func manifests(t *testing.T) map[string][]any {
	t.Helper()
	raw, err := os.ReadFile("kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(raw, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	files, _ := filepath.Glob("*.yaml")
	files = slices.DeleteFunc(files, func(f string) bool { return f == "kustomization.yaml" })
	if !slices.Equal(slices.Sorted(slices.Values(k.Resources)), files) {
		t.Errorf("kustomization.yaml lists %v; the directory holds %v", k.Resources, files)
	}
	out := make(map[string][]any)
	for _, f := range k.Resources {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decodeStrict(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[f] = objs
	}
	return out
}

// one returns the only object of type T among the manifests.
func one[T any](t *testing.T, all map[string][]any) T {
	t.Helper()
	var found []T
	for _, objs := range all {
		for _, o := range objs {
			if v, ok := o.(T); ok {
				found = append(found, v)
			}
		}
	}
	if len(found) != 1 {
		var zero T
		t.Fatalf("%d objects of type %T, want 1", len(found), zero)
	}
	return found[0]
}

// Every manifest decodes strictly into its k8s.io/api type, and the
// manifests fit together: the StatefulSet's pods are behind the headless
// Service they join by name, probe /readyz and /healthz on the port they
// serve, take their name and address from the Downward API, are scraped
// by Prometheus, and have the time to hand off before SIGKILL; the
// PodDisruptionBudget covers them.
func TestManifests(t *testing.T) {
	all := manifests(t)
	svc := one[*corev1.Service](t, all)
	sts := one[*appsv1.StatefulSet](t, all)
	pdb := one[*policyv1.PodDisruptionBudget](t, all)

	if svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses {
		t.Errorf("Service %s: want headless (clusterIP None) with publishNotReadyAddresses", svc.Name)
	}
	if sts.Spec.ServiceName != svc.Name {
		t.Errorf("StatefulSet serviceName %q, Service %q", sts.Spec.ServiceName, svc.Name)
	}
	labels := sts.Spec.Template.Labels
	for what, sel := range map[string]map[string]string{
		"Service selector":                svc.Spec.Selector,
		"StatefulSet selector":            sts.Spec.Selector.MatchLabels,
		"PodDisruptionBudget selector":    pdb.Spec.Selector.MatchLabels,
		"the pod template's labels (all)": labels,
	} {
		for k, v := range sel {
			if labels[k] != v {
				t.Errorf("%s %s=%s does not select the pod template (labels %v)", what, k, v, labels)
			}
		}
	}
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PodDisruptionBudget maxUnavailable %v, want 1", pdb.Spec.MaxUnavailable)
	}

	pod := sts.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	args := nodeArgs(t, c.Args)
	if args["name"] != "$(POD_NAME)" || !strings.HasPrefix(args["advertise"], "$(POD_IP):") {
		t.Errorf("args %v: want -name=$(POD_NAME) and -advertise=$(POD_IP):PORT", c.Args)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if env["POD_NAME"] != "metadata.name" || env["POD_IP"] != "status.podIP" {
		t.Errorf("env %v: want POD_NAME from metadata.name and POD_IP from status.podIP", env)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	gossip := fmt.Sprint(ports["gossip-tcp"])
	for flagName, want := range map[string]string{
		"bind":      "0.0.0.0:" + gossip,
		"advertise": "$(POD_IP):" + gossip,
		"join":      svc.Name + ":" + gossip,
		"http":      fmt.Sprintf("0.0.0.0:%d", ports["http"]),
	} {
		if args[flagName] != want {
			t.Errorf("-%s=%s, want %s", flagName, args[flagName], want)
		}
	}
	for _, p := range svc.Spec.Ports {
		if p.TargetPort.String() == "" || ports[p.TargetPort.String()] == 0 || ports[p.TargetPort.String()] != p.Port {
			t.Errorf("Service port %s (%d) targets %q: not a container port of that number", p.Name, p.Port, p.TargetPort.String())
		}
	}
	for what, probe := range map[string]*corev1.Probe{"/readyz": c.ReadinessProbe, "/healthz": c.LivenessProbe} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != what || probe.HTTPGet.Port.String() != "http" {
			t.Errorf("probe %s: %+v, want an HTTP GET of %s on port http", what, probe, what)
		}
	}
	if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("readiness %s, liveness %s: want /readyz and /healthz", c.ReadinessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Path)
	}
	ann := sts.Spec.Template.Annotations
	if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/path"] != "/metrics" || ann["prometheus.io/port"] != fmt.Sprint(ports["http"]) {
		t.Errorf("pod annotations %v: want Prometheus scraping of /metrics on the http port", ann)
	}
	// The stop flow of `demo node` takes about 5 s at worst (the comment
	// in statefulset.yaml adds it up); the grace period must cover it.
	if g := pod.TerminationGracePeriodSeconds; g == nil || *g < 10 {
		t.Errorf("terminationGracePeriodSeconds %v: want at least 10 s for the hand-off and the leave", g)
	}
	// With the guard, a restarted member acknowledges no lease for
	// QuorumLeaseMax (1.2 s with the defaults) after its start.
	if sts.Spec.MinReadySeconds < 2 {
		t.Errorf("minReadySeconds %d: want at least 2 s, so that a replaced member acknowledges the coordinator's lease before the next goes", sts.Spec.MinReadySeconds)
	}
	if q, err := atoiFlag(args, "quorum"); err != nil || sts.Spec.Replicas == nil || int(*sts.Spec.Replicas) != q {
		t.Errorf("-quorum %q with %v replicas: want the replica count (%v)", args["quorum"], sts.Spec.Replicas, err)
	}
}

// nodeArgs checks that args run `demo node` with -flag=value arguments
// only, and returns them by flag name.
func nodeArgs(t *testing.T, args []string) map[string]string {
	t.Helper()
	if len(args) == 0 || args[0] != "node" {
		t.Fatalf("args %v: want `node` first", args)
	}
	out := map[string]string{}
	for _, a := range args[1:] {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "-"), "=")
		if !ok || !strings.HasPrefix(a, "-") {
			t.Fatalf("argument %q: want -flag=value", a)
		}
		out[name] = value
	}
	return out
}

func atoiFlag(args map[string]string, name string) (int, error) {
	var v int
	_, err := fmt.Sscan(args[name], &v)
	return v, err
}

// The dashboard ConfigMap carries docs/grafana/coordelect.json as it is
// (go test -run TestDashboardConfigMap -update rewrites it), labelled for
// Grafana's dashboard sidecar.
func TestDashboardConfigMap(t *testing.T) {
	src, err := os.ReadFile(dashboardJSON)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(src) {
		t.Fatalf("%s is not valid JSON", dashboardJSON)
	}
	want := dashboardConfigMap(src)
	if *update {
		if err := os.WriteFile("grafana-dashboard.yaml", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("grafana-dashboard.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("grafana-dashboard.yaml is not generated from %s: run go test -run TestDashboardConfigMap -update", dashboardJSON)
	}
	objs, err := decodeStrict(got)
	if err != nil {
		t.Fatal(err)
	}
	cm := objs[0].(*corev1.ConfigMap)
	if cm.Data["coordelect.json"] != string(src) {
		t.Fatal("the ConfigMap's coordelect.json differs from the dashboard")
	}
	if cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("labels %v: want grafana_dashboard=1 for Grafana's sidecar", cm.Labels)
	}
}

// dashboardConfigMap renders the dashboard ConfigMap around the JSON.
func dashboardConfigMap(dashboard []byte) []byte {
	var b bytes.Buffer
	b.WriteString(`# Generated from docs/grafana/coordelect.json by
#   go test -run TestDashboardConfigMap -update
# in examples/kubernetes; the test fails when the two differ. Grafana's
# dashboard sidecar (the grafana_dashboard label) loads it; without the
# sidecar, import the JSON in Grafana (Dashboards, New, Import).
apiVersion: v1
kind: ConfigMap
metadata:
  name: coordelect-dashboard
  labels:
    app.kubernetes.io/name: coordelect
    grafana_dashboard: "1"
data:
  coordelect.json: |
`)
	for l := range strings.SplitSeq(strings.TrimSuffix(string(dashboard), "\n"), "\n") {
		if l == "" {
			b.WriteString("\n")
			continue
		}
		b.WriteString("    " + l + "\n")
	}
	return b.Bytes()
}

// A misspelt field fails the strict decoding, naming the field, where a
// plain decoding would drop it without a word; so do a field at the wrong
// level and an unknown kind.
func TestStrictDecodingFailsOnMisspelling(t *testing.T) {
	good, err := os.ReadFile("statefulset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, old, new, want string }{
		{"misspelt field", "terminationGracePeriodSeconds:", "terminationGracePeriodSecond:", `unknown field "terminationGracePeriodSecond"`},
		{"field at the wrong level", "      terminationGracePeriodSeconds:", "      containers2:", `unknown field "containers2"`},
		{"misspelt probe", "readinessProbe:", "readynessProbe:", `unknown field "readynessProbe"`},
		{"unknown kind", "kind: StatefulSet", "kind: StatefulSets", "not a type this example uses"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := bytes.Replace(good, []byte(tc.old), []byte(tc.new), 1)
			if bytes.Equal(bad, good) {
				t.Fatalf("%q not in statefulset.yaml", tc.old)
			}
			_, err := decodeStrict(bad)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("decodeStrict = %v, want an error containing %s", err, tc.want)
			}
			if tc.name == "unknown kind" {
				return
			}
			var loose appsv1.StatefulSet
			if err := yaml.Unmarshal(bad, &loose); err != nil {
				t.Fatalf("the plain decoding fails too (%v): the fixture proves nothing", err)
			}
		})
	}
	data, err := os.ReadFile("testdata/misspelt.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeStrict(data); err == nil || !strings.Contains(err.Error(), `unknown field "publishNotReadyAdresses"`) {
		t.Fatalf("testdata/misspelt.yaml: decodeStrict = %v, want the misspelt publishNotReadyAdresses named", err)
	}
	if _, err := decodeStrict([]byte("apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  name: b\n")); err == nil {
		t.Fatal("a duplicate field decoded")
	}
	if _, err := decodeStrict([]byte("apiVersion: v1\nkind: Service\nspec:\n  ports: 7946\n")); err == nil {
		t.Fatal("a number where a list goes decoded")
	}
}
