package controllers

import (
	"context"
	"fmt"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/results"
	"github.com/logbench/logbench/internal/shipping"
)

// foreignObjectError says that an object logbench would create exists already and is not
// logbench's: the operator neither adopts nor changes it (it would later delete it with
// the benchmark), and the benchmark fails saying which object is in the way.
type foreignObjectError struct {
	kind, namespace, name string
}

func (e *foreignObjectError) Error() string {
	return fmt.Sprintf("%s %s/%s exists and no LoggingBenchmark owns it: logbench does not take over objects "+
		"it did not create; delete or rename it, then create the benchmark again", e.kind, e.namespace, e.name)
}

// refuseAdoption returns a foreignObjectError when object, as read from the API server,
// exists without being logbench's: for an object of this benchmark alone (controlled),
// without benchmark as its controller; for an object the benchmarks of a namespace share,
// without any LoggingBenchmark among its owners. A new object (no resourceVersion) passes.
func refuseAdoption(object client.Object, benchmark *v1alpha1.LoggingBenchmark, controlled bool) error {
	if object.GetResourceVersion() == "" {
		return nil
	}
	for _, owner := range object.GetOwnerReferences() {
		if owner.APIVersion != v1alpha1.GroupVersion.String() || owner.Kind != "LoggingBenchmark" {
			continue
		}
		if !controlled || (owner.UID == benchmark.UID && owner.Controller != nil && *owner.Controller) {
			return nil
		}
	}
	return &foreignObjectError{kind: kindOf(object), namespace: object.GetNamespace(), name: object.GetName()}
}

// kindOf is the kind of object: its type's name when it says none, as a typed object
// read from the API server does not.
func kindOf(object client.Object) string {
	if kind := object.GetObjectKind().GroupVersionKind().Kind; kind != "" {
		return kind
	}
	return reflect.TypeOf(object).Elem().Name()
}

// plannedObject is an object a benchmark creates, named before it exists.
type plannedObject struct {
	kind schema.GroupVersionKind
	name string
	// shared says that the benchmarks of the namespace share it (refuseAdoption).
	shared bool
}

// plannedObjects lists the objects the benchmark creates, its run records apart: per
// destination its Cluster, NetworkPolicy and runner, a shipping destination's
// ConfigMap, a forwarding Syslog destination's receiver; and the agent's ServiceAccount
// and RoleBindings.
func plannedObjects(benchmark *v1alpha1.LoggingBenchmark) []plannedObject {
	var (
		configMap      = corev1.SchemeGroupVersion.WithKind("ConfigMap")
		networkPolicy  = networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy")
		deployment     = appsv1.SchemeGroupVersion.WithKind("Deployment")
		service        = corev1.SchemeGroupVersion.WithKind("Service")
		serviceAccount = corev1.SchemeGroupVersion.WithKind("ServiceAccount")
		roleBinding    = rbacv1.SchemeGroupVersion.WithKind("RoleBinding")
	)
	var objects []plannedObject
	for _, dest := range benchmark.Spec.EffectiveDestinations() {
		cluster := builders.ClusterName(benchmark.Name, dest.Name)
		objects = append(objects, plannedObject{kind: cloudnativepg.ClusterGVK, name: cluster},
			plannedObject{kind: networkPolicy, name: builders.ClusterNetworkPolicyName(cluster)},
			plannedObject{kind: deployment, name: builders.RunnerName(benchmark.Name, dest.Name)})
		if dest.Ships() {
			objects = append(objects, plannedObject{kind: configMap, name: builders.ShipperConfigMapName(cluster)})
		}
		if shipping.ForwardsSyslog(dest) {
			receiver := builders.SyslogReceiverName(benchmark.Name, dest.Name)
			for _, kind := range []schema.GroupVersionKind{configMap, networkPolicy, deployment, service} {
				objects = append(objects, plannedObject{kind: kind, name: receiver})
			}
		}
	}
	return append(objects, plannedObject{kind: serviceAccount, name: builders.AgentServiceAccountName, shared: true},
		plannedObject{kind: roleBinding, name: builders.AgentRoleBindingName, shared: true},
		plannedObject{kind: roleBinding, name: builders.RunnerRoleBindingName, shared: true})
}

// plannedRecordNames are the names of the LoggingBenchmarkRuns of every run the
// benchmark may plan: with a ramp, of every client count it may reach.
func plannedRecordNames(benchmark *v1alpha1.LoggingBenchmark) map[string]bool {
	names := map[string]bool{}
	for _, dest := range benchmark.Spec.EffectiveDestinations() {
		for _, clients := range benchmark.Spec.Workload.ClientCounts() {
			for repeat := int32(1); repeat <= benchmark.Spec.Workload.Repeats; repeat++ {
				run := results.RunKey{Destination: dest.Name, Clients: clients, Repeat: repeat}
				names[builders.RunRecordName(benchmark.Name, run)] = true
			}
		}
	}
	return names
}

// heldNames is what holds, before the benchmark creates anything, the names it will
// create: each planned object with the object of its name (nil when there is none), and
// the namespace's run records. Read once a pass, from the API server (the cache holds
// no object of another owner), and read by both waitForPredecessor and refuseTakenNames.
type heldNames struct {
	objects []heldName
	records []metav1.PartialObjectMetadata
}

// heldName is a planned object and the object that holds its name, nil when none does.
type heldName struct {
	plannedObject
	existing *metav1.PartialObjectMetadata
}

// readHeldNames reads the metadata of whatever holds the names the benchmark creates.
func (r *LoggingBenchmarkReconciler) readHeldNames(
	ctx context.Context, benchmark *v1alpha1.LoggingBenchmark,
) (heldNames, error) {
	var held heldNames
	for _, planned := range plannedObjects(benchmark) {
		existing := &metav1.PartialObjectMetadata{}
		existing.SetGroupVersionKind(planned.kind)
		err := r.apiReader().Get(ctx, client.ObjectKey{Namespace: benchmark.Namespace, Name: planned.name}, existing)
		switch {
		case apierrors.IsNotFound(err):
			existing = nil
		case err != nil:
			return heldNames{}, fmt.Errorf("reading %s %s: %w", planned.kind.Kind, planned.name, err)
		}
		held.objects = append(held.objects, heldName{plannedObject: planned, existing: existing})
	}
	var err error
	if held.records, err = r.listMetadata(ctx, benchmark.Namespace,
		v1alpha1.GroupVersion.WithKind("LoggingBenchmarkRun")); err != nil {
		return heldNames{}, err
	}
	return held, nil
}

// listMetadata lists the metadata of the objects of a kind in a namespace.
func (r *LoggingBenchmarkReconciler) listMetadata(
	ctx context.Context, namespace string, kind schema.GroupVersionKind,
) ([]metav1.PartialObjectMetadata, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(kind.GroupVersion().WithKind(kind.Kind + "List"))
	if err := r.apiReader().List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing the %ss of namespace %s: %w", kind.Kind, namespace, err)
	}
	for i := range list.Items {
		list.Items[i].SetGroupVersionKind(kind)
	}
	return list.Items, nil
}

// refuseTakenNames returns a foreignObjectError for the first object the benchmark would
// create whose name an object that is not the benchmark's holds (refuseAdoption). It
// runs before the benchmark creates anything, so that a benchmark refused for a name
// leaves nothing behind: no NetworkPolicy selecting the pods of a cluster it does not
// own, no configuration, no runner.
func refuseTakenNames(benchmark *v1alpha1.LoggingBenchmark, held heldNames) error {
	for _, name := range held.objects {
		if name.existing == nil {
			continue
		}
		if err := refuseAdoption(name.existing, benchmark, !name.shared); err != nil {
			return err
		}
	}
	planned := plannedRecordNames(benchmark)
	for i := range held.records {
		record := &held.records[i]
		if !planned[record.Name] {
			continue
		}
		if err := refuseAdoption(record, benchmark, true); err != nil {
			return err
		}
	}
	return nil
}
