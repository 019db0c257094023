// Package chartcheck renders the Helm chart in k8s/ with Helm's own
// engine and checks every manifest against Kubernetes' API types, strictly
// (an unknown field or a wrong type fails), as kubeconform checks them
// against the API's schemas, without fetching schemas from the network.
package chartcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// render renders the chart with values over its defaults.
func render(t *testing.T, values map[string]any) map[string][]any {
	t.Helper()
	ch, err := loader.Load(filepath.Join("..", "kafka-gateway"))
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Validate(); err != nil {
		t.Fatal(err)
	}
	vals, err := commonutil.ToRenderValues(ch, values, common.ReleaseOptions{Name: "kg", Namespace: "kafka", IsInstall: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]any{}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if strings.HasSuffix(name, ".tpl") || strings.TrimSpace(files[name]) == "" {
			continue
		}
		for _, doc := range strings.Split(files[name], "\n---") {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			obj, kind := decode(t, name, doc)
			out[kind] = append(out[kind], obj)
		}
	}
	return out
}

// decode reads a manifest strictly into its Kubernetes type.
func decode(t *testing.T, file, doc string) (any, string) {
	t.Helper()
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	js, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatalf("%s: not YAML: %v\n%s", file, err, doc)
	}
	if err := json.Unmarshal(js, &head); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var obj any
	switch head.APIVersion + " " + head.Kind {
	case "apps/v1 Deployment":
		obj = &appsv1.Deployment{}
	case "v1 Service":
		obj = &corev1.Service{}
	case "v1 ServiceAccount":
		obj = &corev1.ServiceAccount{}
	case "policy/v1 PodDisruptionBudget":
		obj = &policyv1.PodDisruptionBudget{}
	case "autoscaling/v2 HorizontalPodAutoscaler":
		obj = &autoscalingv2.HorizontalPodAutoscaler{}
	case "rbac.authorization.k8s.io/v1 ClusterRole":
		obj = &rbacv1.ClusterRole{}
	case "rbac.authorization.k8s.io/v1 ClusterRoleBinding":
		obj = &rbacv1.ClusterRoleBinding{}
	default:
		t.Fatalf("%s: %s %s is not a kind this check knows", file, head.APIVersion, head.Kind)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		t.Fatalf("%s: %s %s does not match the API: %v\n%s", file, head.APIVersion, head.Kind, err, doc)
	}
	return obj, head.Kind
}

func gatewayArgs(t *testing.T, d *appsv1.Deployment) string {
	t.Helper()
	c := d.Spec.Template.Spec.Containers
	if len(c) != 1 || len(c[0].Args) != 1 {
		t.Fatalf("the gateway container: %+v", c)
	}
	return c[0].Args[0]
}

// The defaults: three gateways with their rack read from their node's
// zone, readiness on /ready, a PodDisruptionBudget, no autoscaler.
func TestDefaults(t *testing.T) {
	m := render(t, nil)
	if len(m["Deployment"]) != 1 || len(m["Service"]) != 1 || len(m["PodDisruptionBudget"]) != 1 || len(m["HorizontalPodAutoscaler"]) != 0 {
		t.Fatalf("kinds rendered: %v", kinds(m))
	}
	d := m["Deployment"][0].(*appsv1.Deployment)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
		t.Errorf("replicas %v", d.Spec.Replicas)
	}
	spec := d.Spec.Template.Spec
	if p := spec.Containers[0].ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/ready" {
		t.Errorf("readiness probe %+v", p)
	}
	if len(spec.InitContainers) != 1 || !strings.Contains(strings.Join(spec.InitContainers[0].Command, " "), "topology\\.kubernetes\\.io/zone") {
		t.Errorf("no init container reading the node's zone: %+v", spec.InitContainers)
	}
	args := gatewayArgs(t, d)
	for _, want := range []string{"weed mq.kafka.gateway", `-ip="$POD_IP"`, `-rack="$rack"`, "-master=seaweedfs-master:9333", "-console.readonly=true"} {
		if !strings.Contains(args, want) {
			t.Errorf("the gateway's command lacks %s:\n%s", want, args)
		}
	}
	if len(m["ClusterRole"]) != 1 || len(m["ClusterRoleBinding"]) != 1 {
		t.Errorf("no RBAC to read the node's zone: %v", kinds(m))
	}
	pdb := m["PodDisruptionBudget"][0].(*policyv1.PodDisruptionBudget)
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PodDisruptionBudget %+v", pdb.Spec)
	}
}

// Every option on: security.toml and the SASL users from Secrets, the
// authorizer, the audit log, a fixed zone, the autoscaler.
func TestEverythingOn(t *testing.T) {
	m := render(t, map[string]any{
		"securityTomlSecret": "seaweedfs-security",
		"saslUsersSecret":    "kafka-users",
		"authorizer":         map[string]any{"enabled": true, "superUsers": "User:admin"},
		"audit":              map[string]any{"enabled": true},
		"rack":               map[string]any{"zone": "eu-west-1a"},
		"autoscaling":        map[string]any{"enabled": true},
		"seaweedfs":          map[string]any{"clusterName": "payments", "filerGroup": "g1"},
	})
	d := m["Deployment"][0].(*appsv1.Deployment)
	if d.Spec.Replicas != nil {
		t.Errorf("replicas set beside an autoscaler: %v", *d.Spec.Replicas)
	}
	args := gatewayArgs(t, d)
	for _, want := range []string{"-sasl.users=/etc/kafka-gateway/users", "SASL_PLAINTEXT://0.0.0.0:9092", "-authorizer.enabled",
		`-super.users="User:admin"`, "-audit.enabled", "-cluster.name=payments", "-filerGroup=g1", `rack="eu-west-1a"`} {
		if !strings.Contains(args, want) {
			t.Errorf("the gateway's command lacks %s:\n%s", want, args)
		}
	}
	mounted := map[string]string{}
	for _, vm := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
		mounted[vm.Name] = vm.MountPath
	}
	if mounted["security"] != "/etc/seaweedfs" || mounted["users"] != "/etc/kafka-gateway" {
		t.Errorf("mounts %v", mounted)
	}
	if len(d.Spec.Template.Spec.InitContainers) != 0 || len(m["ClusterRole"]) != 0 {
		t.Errorf("a fixed zone still reads the node's")
	}
	if len(m["HorizontalPodAutoscaler"]) != 1 {
		t.Fatalf("no autoscaler: %v", kinds(m))
	}
}

func kinds(m map[string][]any) string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s×%d", k, len(v)))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}
