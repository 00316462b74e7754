package allowlist

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/testenv"
)

// productionPool is what an administrator allows for config/samples/production.yaml's
// node pool, as docs/installation.md shows it.
var productionPool = Rules{
	Tolerations: []Toleration{{Key: "dedicated", Operator: "Equal", Value: "databases", Effect: "NoSchedule"}},
	NodeLabels:  []string{"node-pool=databases"},
}

// TestCheck: the operator refuses what the admission policy refuses, saying which chart
// value allows it; the policy's own tests (test/chart/admission_test.go) hold the same
// cases against the API server.
func TestCheck(t *testing.T) {
	defaults := Rules{ImagePrefixes: []string{"ghcr.io/cloudnative-pg/", "otel/opentelemetry-collector-contrib:"}}
	tests := []struct {
		name  string
		rules Rules
		spec  func(*v1alpha1.LoggingBenchmarkSpec)
		// want are parts of the refusal; none when the spec is allowed.
		want []string
	}{
		{name: "default images", rules: defaults, spec: func(*v1alpha1.LoggingBenchmarkSpec) {}},
		{name: "an allowed image", rules: defaults, spec: func(spec *v1alpha1.LoggingBenchmarkSpec) {
			spec.Postgres.ImageName = "ghcr.io/cloudnative-pg/postgresql:18"
		}},
		{name: "an image outside the list", rules: defaults, spec: func(spec *v1alpha1.LoggingBenchmarkSpec) {
			spec.Postgres.ImageName = "registry.example/postgresql:18"
		}, want: []string{"registry.example/postgresql:18", "one of ghcr.io/cloudnative-pg/", "allowedImages"}},
		{name: "a counter's extension image outside the list", rules: defaults,
			spec: func(spec *v1alpha1.LoggingBenchmarkSpec) {
				spec.Postgres.Counter = &v1alpha1.CounterSpec{Source: v1alpha1.CounterInExtensionImage,
					ExtensionImage: "registry.example/logbench-counter:18"}
			}, want: []string{"registry.example/logbench-counter:18", "allowedImages"}},
		{name: "a counter in the operand image", rules: defaults, spec: func(spec *v1alpha1.LoggingBenchmarkSpec) {
			spec.Postgres.Counter = &v1alpha1.CounterSpec{Source: v1alpha1.CounterInOperandImage}
		}},
		{name: "a shipper image sharing a repository's name", rules: defaults,
			spec: func(spec *v1alpha1.LoggingBenchmarkSpec) {
				spec.Destinations = []v1alpha1.Destination{{Name: "otel", Type: v1alpha1.DestinationLoki,
					Shipper: &v1alpha1.ShipperSpec{Image: "otel/opentelemetry-collector-contrib-fork:1"}}}
			}, want: []string{"otel/opentelemetry-collector-contrib-fork:1"}},
		{name: "a prefix that does not end in / : or @ allows nothing",
			rules: Rules{ImagePrefixes: []string{"ghcr.io/cloudnative-pg"}},
			spec: func(spec *v1alpha1.LoggingBenchmarkSpec) {
				spec.Postgres.ImageName = "ghcr.io/cloudnative-pg-evil/postgresql:18"
			}, want: []string{"ghcr.io/cloudnative-pg-evil/postgresql:18"}},
		{name: "no image allowed", spec: func(spec *v1alpha1.LoggingBenchmarkSpec) {
			spec.Postgres.ImageName = "ghcr.io/cloudnative-pg/postgresql:18"
		}, want: []string{"none: the list is empty"}},
		{name: "the production sample's pool, allowed", rules: productionPool, spec: productionPlacement},
		{name: "the production sample's pool, not allowed", spec: productionPlacement, want: []string{
			"{key: dedicated, operator: Equal, value: databases, effect: NoSchedule}", "placement.allowedTolerations",
			"node-pool=databases", "placement.allowedNodeSelectors",
		}},
		{name: "a control-plane toleration", rules: productionPool, spec: func(spec *v1alpha1.LoggingBenchmarkSpec) {
			spec.Postgres.Tolerations = []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane",
				Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		}, want: []string{"{key: node-role.kubernetes.io/control-plane, operator: Exists, value: \"\", effect: NoSchedule}"}},
		{name: "a toleration of every taint", rules: productionPool, spec: func(spec *v1alpha1.LoggingBenchmarkSpec) {
			spec.Postgres.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}, want: []string{`{key: "", operator: Exists`}},
		{name: "the pool's taint with every effect", rules: productionPool, spec: func(spec *v1alpha1.LoggingBenchmarkSpec) {
			spec.Postgres.Tolerations = []corev1.Toleration{{Key: "dedicated", Value: "databases"}}
		}, want: []string{`{key: dedicated, operator: Equal, value: databases, effect: ""}`}},
		{name: "the pool's key with any value", rules: productionPool, spec: func(spec *v1alpha1.LoggingBenchmarkSpec) {
			spec.Postgres.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoSchedule}}
		}, want: []string{"operator: Exists"}},
		{name: "an allowed key with any value and effect",
			rules: Rules{Tolerations: []Toleration{{Key: "dedicated"}}},
			spec: func(spec *v1alpha1.LoggingBenchmarkSpec) {
				spec.Postgres.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
			}},
		{name: "a control-plane node selector", rules: productionPool, spec: func(spec *v1alpha1.LoggingBenchmarkSpec) {
			spec.Postgres.NodeSelector = map[string]string{"node-role.kubernetes.io/control-plane": ""}
		}, want: []string{"node-role.kubernetes.io/control-plane=", "one of node-pool=databases"}},
		{name: "node affinity In an allowed label", rules: productionPool, spec: func(spec *v1alpha1.LoggingBenchmarkSpec) {
			spec.Postgres.Affinity = nodeAffinity(corev1.NodeSelectorRequirement{Key: "node-pool",
				Operator: corev1.NodeSelectorOpIn, Values: []string{"databases"}})
		}},
		{name: "node affinity In another label", rules: productionPool, spec: func(spec *v1alpha1.LoggingBenchmarkSpec) {
			spec.Postgres.Affinity = nodeAffinity(corev1.NodeSelectorRequirement{Key: "node-pool",
				Operator: corev1.NodeSelectorOpIn, Values: []string{"databases", "payments"}})
		}, want: []string{"nodeAffinity"}},
		{name: "node affinity NotIn", rules: productionPool, spec: func(spec *v1alpha1.LoggingBenchmarkSpec) {
			spec.Postgres.Affinity = nodeAffinity(corev1.NodeSelectorRequirement{Key: "node-pool",
				Operator: corev1.NodeSelectorOpNotIn, Values: []string{"web"}})
		}, want: []string{"nodeAffinity"}},
		{name: "preferred node affinity by the node's name", rules: productionPool,
			spec: func(spec *v1alpha1.LoggingBenchmarkSpec) {
				spec.Postgres.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
					PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1,
						Preference: corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{
							Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"control-plane-1"},
						}}}}},
				}}
			}, want: []string{"nodeAffinity"}},
		{name: "pod affinity within the namespace", spec: func(spec *v1alpha1.LoggingBenchmarkSpec) {
			spec.Postgres.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "kubernetes.io/hostname"}},
			}}
		}},
		{name: "pod affinity to another namespace's pods", spec: func(spec *v1alpha1.LoggingBenchmarkSpec) {
			spec.Postgres.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1,
					PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname",
						NamespaceSelector: &metav1.LabelSelector{}}}},
			}}
		}, want: []string{"podAffinity may not name namespaces"}},
		{name: "any storage class by default", spec: func(spec *v1alpha1.LoggingBenchmarkSpec) {
			spec.Postgres.Storage.StorageClass = new("fast-ssd")
		}},
		{name: "a storage class outside the list", rules: Rules{StorageClasses: []string{"standard"}},
			spec: func(spec *v1alpha1.LoggingBenchmarkSpec) { spec.Postgres.Storage.StorageClass = new("fast-ssd") },
			want: []string{`"fast-ssd"`, "one of standard", "placement.allowedStorageClasses"}},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			spec := v1alpha1.LoggingBenchmarkSpec{Destinations: []v1alpha1.Destination{{Name: "csv",
				Type: v1alpha1.DestinationCSVLog}}}
			test.spec(&spec)
			err := test.rules.Check(&spec)
			if len(test.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("allowed")
			}
			for _, want := range test.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the refusal does not say %q: %v", want, err)
				}
			}
		})
	}
}

// TestProductionSample: config/samples/production.yaml runs once its node pool is allowed.
func TestProductionSample(t *testing.T) {
	root := testenv.Root(t)
	content, err := os.ReadFile(filepath.Join(root, "config", "samples", "production.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var benchmark v1alpha1.LoggingBenchmark
	if err := yaml.UnmarshalStrict(content, &benchmark); err != nil {
		t.Fatal(err)
	}
	if err := productionPool.Check(&benchmark.Spec); err != nil {
		t.Errorf("with its node pool allowed: %v", err)
	}
	if err := (Rules{}).Check(&benchmark.Spec); err == nil {
		t.Error("allowed without its node pool")
	}
}

func TestValidate(t *testing.T) {
	valid := Rules{
		ImagePrefixes: []string{"ghcr.io/cloudnative-pg/", "otel/opentelemetry-collector-contrib:",
			"registry.example:5000/postgresql@"},
		Tolerations: productionPool.Tolerations,
		NodeLabels:  []string{"node-pool=databases", "example.com/ssd="},
	}
	if err := valid.Validate(); err != nil {
		t.Errorf("refused %+v: %v", valid, err)
	}
	invalid := []Rules{
		{ImagePrefixes: []string{"ghcr.io/cloudnative-pg"}},
		{ImagePrefixes: []string{"ghcr.io/cloudnative-pg/postgresql"}},
		{ImagePrefixes: []string{""}},
		{ImagePrefixes: []string{"ghcr.io/ cloudnative-pg/"}},
		{Tolerations: []Toleration{{Operator: "Exists"}}},
		{NodeLabels: []string{"node-pool"}},
		{NodeLabels: []string{"node pool=databases"}},
	}
	for _, rules := range invalid {
		if err := rules.Validate(); err == nil {
			t.Errorf("accepted %+v", rules)
		}
	}
}

func TestParseTolerations(t *testing.T) {
	parsed, err := ParseTolerations(`[{"key":"dedicated","operator":"Equal","value":"databases","effect":"NoSchedule"}]`)
	if err != nil || len(parsed) != 1 || parsed[0] != productionPool.Tolerations[0] {
		t.Errorf("parsed %+v, %v", parsed, err)
	}
	if parsed, err := ParseTolerations(""); err != nil || parsed != nil {
		t.Errorf("empty: %+v, %v", parsed, err)
	}
	if _, err := ParseTolerations(`[{"key":"dedicated","tolerationSeconds":5}]`); err == nil {
		t.Error("accepted an unknown field")
	}
}

// productionPlacement places the instances as config/samples/production.yaml does.
func productionPlacement(spec *v1alpha1.LoggingBenchmarkSpec) {
	spec.Postgres.NodeSelector = map[string]string{"node-pool": "databases"}
	spec.Postgres.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual,
		Value: "databases", Effect: corev1.TaintEffectNoSchedule}}
}

func nodeAffinity(requirement corev1.NodeSelectorRequirement) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{requirement}},
		}},
	}}
}
