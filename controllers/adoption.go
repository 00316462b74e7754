package controllers

import (
	"fmt"
	"reflect"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
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
	return &foreignObjectError{
		kind: reflect.TypeOf(object).Elem().Name(), namespace: object.GetNamespace(), name: object.GetName(),
	}
}
