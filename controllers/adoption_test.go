package controllers

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/internal/results"
	"github.com/logbench/logbench/internal/shipping"
)

// TestPlannedObjectsNameWhatTheBuildersCreate: the names checked before a benchmark
// creates anything are those of every object the builders make for it, whatever its
// destinations, and of the record of every run its ramp may reach, so that no object is
// created before its name is checked.
func TestPlannedObjectsNameWhatTheBuildersCreate(t *testing.T) {
	benchmark := &v1alpha1.LoggingBenchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "b"},
		Spec: v1alpha1.LoggingBenchmarkSpec{
			Destinations: []v1alpha1.Destination{
				{Name: "csv", Type: v1alpha1.DestinationCSVLog},
				{Name: "fb", Type: v1alpha1.DestinationFluentBitSidecar},
				{Name: "sys", Type: v1alpha1.DestinationSyslog, Syslog: &v1alpha1.SyslogSpec{Transport: v1alpha1.SyslogTCP}},
			},
			Baseline: v1alpha1.BaselineSpec{Enabled: true},
			Workload: v1alpha1.WorkloadSpec{Repeats: 2, Ramp: &v1alpha1.RampSpec{Start: 1, Factor: 2, Max: 6}},
		},
	}
	planned := map[string]bool{}
	for _, object := range plannedObjects(benchmark) {
		planned[object.kind.Kind+" "+object.name] = true
	}
	kindOf := func(object client.Object) string {
		kind := object.GetObjectKind().GroupVersionKind().Kind
		if kind == "" {
			kind = reflect.TypeOf(object).Elem().Name()
		}
		return kind
	}
	var built []client.Object
	for _, dest := range benchmark.Spec.EffectiveDestinations() {
		cluster, err := builders.Cluster(benchmark, dest, "meter", nil, "")
		if err != nil {
			t.Fatal(err)
		}
		runner, err := builders.Runner(benchmark, dest, builders.RunnerInput{})
		if err != nil {
			t.Fatal(err)
		}
		built = append(built, cluster, builders.NetworkPolicy(benchmark, dest, builders.NetworkPeers{}), runner)
		if shipping.ForwardsSyslog(dest) {
			built = append(built, builders.SyslogReceiverDeployment(benchmark, dest, "meter", nil),
				builders.SyslogReceiverService(benchmark, dest), builders.SyslogReceiverNetworkPolicy(benchmark, dest))
		}
	}
	names := make([]string, 0, len(built))
	for _, object := range built {
		names = append(names, kindOf(object)+" "+object.GetName())
	}
	names = append(names, "ConfigMap b-fb-shipper", "ConfigMap b-sys-syslog",
		"ServiceAccount "+builders.AgentServiceAccountName, "RoleBinding "+builders.AgentRoleBindingName,
		"RoleBinding "+builders.RunnerRoleBindingName)
	for _, name := range names {
		if !planned[name] {
			t.Errorf("%s is created but not checked; checked: %v", name, planned)
		}
	}

	records := plannedRecordNames(benchmark)
	// 4 destinations × the ramp's 1, 2, 4 and 6 clients × 2 repeats.
	if len(records) != 4*4*2 {
		t.Errorf("%d record names, want 32", len(records))
	}
	for _, run := range []results.RunKey{
		{Destination: "baseline", Clients: 1, Repeat: 1}, {Destination: "sys", Clients: 6, Repeat: 2},
	} {
		if name := builders.RunRecordName("b", run); !records[name] {
			t.Errorf("the record %s of run %s is not checked", name, run)
		}
	}
}
