package chart_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logbench/logbench/internal/testenv"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// benchmarkEditor is a ServiceAccount bound only to the chart's loggingbenchmark-editor
// ClusterRole in teamNamespace, and allowed to get the one Secret readableSecret and the
// one ConfigMap readableConfigMap.
const (
	teamNamespace       = "team"
	benchmarkEditor     = "bench-editor"
	readableSecret      = "loki-token"
	unreadableSecret    = "payments-db"
	readableConfigMap   = "queries"
	unreadableConfigMap = "payroll-queries"
)

// TestAdmissionWithTheRequestersRights installs the chart, allowing
// config/samples/production.yaml's node pool, and creates benchmarks as a user holding
// only the editor role: the admission policy refuses a Secret the user may not read, an
// image outside allowedImages and a placement outside placement, saying why, and accepts
// a benchmark naming only what the user may use, the production sample included.
// envtest's API server authorizes with RBAC, so the policy's authorizer answers as a
// real cluster's would.
func TestAdmissionWithTheRequestersRights(t *testing.T) {
	helmBinary(t) // skips the test before the API server starts
	admin, kubeconfig := startAPIServer(t)
	ctx := t.Context()
	for _, namespace := range []string{releaseNamespace, teamNamespace} {
		createNamespace(ctx, t, admin, namespace)
	}
	install := []string{"install", releaseName, chartDir(t), "--kubeconfig", kubeconfig, "--namespace", releaseNamespace}
	if _, err := runHelm(t, append(install, setArgs(productionPool)...)...); err != nil {
		t.Fatal(err)
	}
	grantEditor(ctx, t, admin)
	editor := impersonate(t, kubeconfig, "system:serviceaccount:"+teamNamespace+":"+benchmarkEditor)

	refusals := []struct {
		name string
		spec string
		want []string
	}{
		{
			name: "a Secret the user may not read",
			spec: lokiDestination(unreadableSecret),
			want: []string{unreadableSecret, benchmarkEditor + " may not get all of them in namespace " + teamNamespace},
		},
		{
			name: "a PostgreSQL image outside allowedImages",
			spec: `{postgres: {imageName: "registry.example/postgresql:18"}, destinations: [{name: csv, type: CSVLog}]}`,
			want: []string{"registry.example/postgresql:18", "are not allowed", "ghcr.io/cloudnative-pg/"},
		},
		{
			name: "a shipper image outside allowedImages",
			spec: `{destinations: [{name: fb, type: FluentBitSidecar, shipper: {image: "cr.fluentbit.io.example/fluent-bit:5"}}]}`,
			want: []string{"cr.fluentbit.io.example/fluent-bit:5", "are not allowed"},
		},
		{
			name: "an image whose repository's name starts with an allowed prefix's",
			spec: `{destinations: [{name: otel, type: Loki, loki: {url: "http://loki:3100"}, ` +
				`shipper: {kind: OpenTelemetryCollector, image: "otel/opentelemetry-collector-contrib-fork:1"}}]}`,
			want: []string{"otel/opentelemetry-collector-contrib-fork:1", "are not allowed"},
		},
		{
			name: "a counter's extension image outside allowedImages",
			spec: `{postgres: {counter: {source: ExtensionImage, extensionImage: "registry.example/counter:18"}}, ` +
				`destinations: [{name: csv, type: CSVLog}]}`,
			want: []string{"registry.example/counter:18", "are not allowed"},
		},
		{
			name: "sampled logging without the counter",
			spec: `{logging: {minDurationSample: 0, statementSampleRate: 0.1}, ` +
				`destinations: [{name: csv, type: CSVLog}, {name: waits, type: Stderr, logging: {lockWaits: false}}]}`,
			want: []string{"spec.logging.minDurationSample, spec.logging.statementSampleRate, " +
				"spec.destinations[1].logging.lockWaits need the logbench_counter extension", "spec.postgres.counter"},
		},
		{
			name: "the user's scripts without the counter",
			spec: `{workload: {scripts: {configMap: {name: ` + readableConfigMap + `}, files: [{key: read.sql}]}}, ` +
				`destinations: [{name: csv, type: CSVLog}]}`,
			want: []string{"spec.workload.scripts need the logbench_counter extension", "spec.postgres.counter"},
		},
		{
			name: "scripts from a ConfigMap the user may not read",
			spec: `{postgres: {counter: {source: OperandImage}}, ` +
				`workload: {scripts: {configMap: {name: ` + unreadableConfigMap + `}, files: [{key: read.sql}]}}, ` +
				`destinations: [{name: csv, type: CSVLog}]}`,
			want: []string{"the ConfigMap " + unreadableConfigMap, benchmarkEditor + " may not get in namespace " + teamNamespace},
		},
		{
			name: "a toleration of the control plane's taint",
			spec: csvWithPostgres(`{tolerations: [{key: node-role.kubernetes.io/control-plane, operator: Exists, ` +
				`effect: NoSchedule}]}`),
			want: []string{`{key: node-role.kubernetes.io/control-plane, operator: Exists, value: "", effect: NoSchedule}`,
				"placement.allowedTolerations"},
		},
		{
			name: "the allowed taint tolerated with every effect",
			spec: csvWithPostgres(`{tolerations: [{key: dedicated, operator: Equal, value: databases}]}`),
			want: []string{`{key: dedicated, operator: Equal, value: databases, effect: ""}`},
		},
		{
			name: "a node selector of the control plane",
			spec: csvWithPostgres(`{nodeSelector: {node-role.kubernetes.io/control-plane: ""}}`),
			want: []string{"node-role.kubernetes.io/control-plane=", "one of node-pool=databases",
				"placement.allowedNodeSelectors"},
		},
		{
			name: "node affinity beyond the allowed labels",
			spec: csvWithPostgres(`{affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: ` +
				`{nodeSelectorTerms: [{matchExpressions: [{key: node-pool, operator: NotIn, values: [web]}]}]}}}}`),
			want: []string{"nodeAffinity may select nodes only with the operator In"},
		},
		{
			name: "preferred node affinity by the node's name",
			spec: csvWithPostgres(`{affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: ` +
				`[{weight: 1, preference: {matchFields: [{key: metadata.name, operator: In, values: [master-1]}]}}]}}}`),
			want: []string{"nodeAffinity may select nodes only"},
		},
		{
			name: "pod affinity to another namespace's pods",
			spec: csvWithPostgres(`{affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: ` +
				`[{topologyKey: kubernetes.io/hostname, namespaceSelector: {}, ` +
				`labelSelector: {matchLabels: {component: etcd}}}]}}}`),
			want: []string{"podAffinity may not name namespaces"},
		},
		{
			name: "a storage class outside the list",
			spec: csvWithPostgres(`{storage: {storageClass: standard}}`),
			want: []string{`the storage class "standard" is not allowed`, "placement.allowedStorageClasses"},
		},
	}
	for _, refusal := range refusals {
		t.Run("refuses "+refusal.name, func(t *testing.T) {
			// The API server applies a new policy within seconds, not at once.
			var err error
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
				if err = editor.Create(ctx, benchmark(t, refusal.spec), client.DryRunAll); err != nil {
					break
				}
			}
			if err == nil {
				t.Fatalf("the editor created a benchmark with %s", refusal.spec)
			}
			for _, want := range refusal.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the refusal does not say %q: %v", want, err)
				}
			}
		})
	}

	t.Run("accepts a benchmark naming only what the user may use", func(t *testing.T) {
		spec := `{postgres: {imageName: "ghcr.io/cloudnative-pg/postgresql:18"}, destinations: [` +
			`{name: loki, type: Loki, loki: {url: "http://loki:3100", auth: {bearerToken: {secretName: ` + readableSecret + `}}}},` +
			`{name: fb, type: FluentBitSidecar, shipper: {image: "cr.fluentbit.io/fluent/fluent-bit:5.0.3"}}]}`
		if err := editor.Create(ctx, benchmark(t, spec)); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("accepts sampled logging with the counter", func(t *testing.T) {
		spec := `{postgres: {counter: {source: ExtensionImage, extensionImage: "ghcr.io/logbench/logbench-counter:18"}}, ` +
			`logging: {minDurationSample: 0, statementSampleRate: 0.1}, destinations: [{name: csv, type: CSVLog}]}`
		if err := editor.Create(ctx, benchmark(t, spec), client.DryRunAll); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("accepts the user's scripts from a ConfigMap the user may read, with the counter", func(t *testing.T) {
		spec := `{postgres: {counter: {source: OperandImage}}, ` +
			`workload: {scripts: {configMap: {name: ` + readableConfigMap + `}, files: [{key: read.sql}]}}, ` +
			`destinations: [{name: csv, type: CSVLog}]}`
		if err := editor.Create(ctx, benchmark(t, spec), client.DryRunAll); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("accepts placements within the allowed node pool", func(t *testing.T) {
		spec := csvWithPostgres(`{nodeSelector: {node-pool: databases}, ` +
			`tolerations: [{key: dedicated, operator: Equal, value: databases, effect: NoSchedule, tolerationSeconds: 60}], ` +
			`storage: {storageClass: fast-ssd}, affinity: {` +
			`nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: ` +
			`[{matchExpressions: [{key: node-pool, operator: In, values: [databases]}]}]}}, ` +
			`podAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, podAffinityTerm: ` +
			`{topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: cache}}}}]}, ` +
			`podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: kubernetes.io/hostname, ` +
			`namespaceSelector: {}, labelSelector: {matchLabels: {app: noisy}}}]}}}`)
		if err := editor.Create(ctx, benchmark(t, spec), client.DryRunAll); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("accepts config/samples/production.yaml once its node pool is allowed", func(t *testing.T) {
		content, err := os.ReadFile(filepath.Join(testenv.Root(t), "config", "samples", "production.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		sample := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(content, &sample.Object); err != nil {
			t.Fatal(err)
		}
		sample.SetNamespace(teamNamespace)
		if err := editor.Create(ctx, sample, client.DryRunAll); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("keeps its allowlists out of the operator's reach", func(t *testing.T) {
		name := releaseName + "-requester-rights"
		policy := &unstructured.Unstructured{}
		policy.SetAPIVersion("admissionregistration.k8s.io/v1")
		policy.SetKind("ValidatingAdmissionPolicy")
		binding := policy.DeepCopy()
		binding.SetKind("ValidatingAdmissionPolicyBinding")
		for _, object := range []*unstructured.Unstructured{policy, binding} {
			if err := admin.Get(ctx, client.ObjectKey{Name: name}, object); err != nil {
				t.Fatal(err)
			}
		}
		// A parameter would be an object of the operator's namespace, such as a ConfigMap,
		// which the operator may update.
		if paramKind, found, _ := unstructured.NestedMap(policy.Object, "spec", "paramKind"); found {
			t.Errorf("the policy reads its allowlists from a %v", paramKind)
		}
		if paramRef, found, _ := unstructured.NestedMap(binding.Object, "spec", "paramRef"); found {
			t.Errorf("the binding gives the policy the parameter %v", paramRef)
		}
		for _, resource := range []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"} {
			for _, verb := range []string{"update", "patch", "delete"} {
				if operatorMay(ctx, t, admin, authorizationv1.ResourceAttributes{Verb: verb,
					Group: "admissionregistration.k8s.io", Resource: resource, Name: name}) {
					t.Errorf("the operator may %s %s %s", verb, resource, name)
				}
			}
		}
	})
}

// csvWithPostgres is a spec with one CSVLog destination and the postgres section given.
func csvWithPostgres(postgres string) string {
	return `{postgres: ` + postgres + `, destinations: [{name: csv, type: CSVLog}]}`
}

// lokiDestination is a spec shipping to Loki with the bearer token of Secret secret.
func lokiDestination(secret string) string {
	return `{destinations: [{name: loki, type: Loki, loki: {url: "http://loki:3100", ` +
		`auth: {bearerToken: {secretName: ` + secret + `}}}}]}`
}

// benchmark returns a LoggingBenchmark of teamNamespace with the spec specYAML, as
// unstructured data so that the API server defaults what it leaves out.
func benchmark(t *testing.T, specYAML string) *unstructured.Unstructured {
	t.Helper()
	spec := map[string]any{}
	if err := yaml.Unmarshal([]byte(specYAML), &spec); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "bench.logbench.io/v1alpha1",
		"kind":       "LoggingBenchmark",
		"metadata":   map[string]any{"generateName": "admission-", "namespace": teamNamespace},
		"spec":       spec,
	}}
}

// grantEditor creates the Secrets of teamNamespace and the ServiceAccount benchmarkEditor
// there, bound to the chart's editor ClusterRole and to a Role that lets it get
// readableSecret and readableConfigMap only.
func grantEditor(ctx context.Context, t *testing.T, admin client.Client) {
	t.Helper()
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: teamNamespace, Name: name}
	}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: teamNamespace, Name: benchmarkEditor}}
	objects := []client.Object{
		&corev1.Secret{ObjectMeta: meta(readableSecret), StringData: map[string]string{"token": "loki"}},
		&corev1.Secret{ObjectMeta: meta(unreadableSecret), StringData: map[string]string{"token": "payments"}},
		&corev1.ServiceAccount{ObjectMeta: meta(benchmarkEditor)},
		&rbacv1.RoleBinding{
			ObjectMeta: meta(benchmarkEditor),
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole",
				Name: releaseName + "-loggingbenchmark-editor"},
			Subjects: subjects,
		},
		&rbacv1.Role{ObjectMeta: meta("read-" + readableSecret), Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{readableSecret},
			Verbs: []string{"get"},
		}, {
			APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{readableConfigMap},
			Verbs: []string{"get"},
		}}},
		&rbacv1.RoleBinding{
			ObjectMeta: meta("read-" + readableSecret),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "read-" + readableSecret},
			Subjects:   subjects,
		},
	}
	for _, object := range objects {
		if err := admin.Create(ctx, object); err != nil {
			t.Fatal(err)
		}
	}
}

// impersonate returns a client of the cluster administrator of kubeconfig acting as the
// user name.
func impersonate(t *testing.T, kubeconfig, name string) client.Client {
	t.Helper()
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	config.Impersonate.UserName = name
	config.Impersonate.Groups = []string{"system:serviceaccounts", "system:serviceaccounts:" + teamNamespace,
		"system:authenticated"}
	user, err := client.New(config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return user
}
