package controllers

import (
	"context"
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
	kind := object.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		kind = reflect.TypeOf(object).Elem().Name()
	}
	return &foreignObjectError{kind: kind, namespace: object.GetNamespace(), name: object.GetName()}
}

// refuseTaken is for a create that found the name taken: it reads what is there, and
// returns a foreignObjectError unless benchmark controls it (then the create had
// succeeded before, and the cache had not seen it yet).
func refuseTaken(
	ctx context.Context, reader client.Reader, object client.Object, benchmark *v1alpha1.LoggingBenchmark,
) error {
	existing, ok := object.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("%T is not an object", object)
	}
	if err := reader.Get(ctx, client.ObjectKeyFromObject(object), existing); err != nil {
		return err
	}
	return refuseAdoption(existing, benchmark, true)
}
