// Package manifest reads a LoggingBenchmark from YAML or JSON outside Kubernetes and
// treats it as the API server would: unknown fields are refused, the CRD's defaults are
// applied and its OpenAPI and CEL validation rules are enforced. The CRD itself is the
// single source of truth, so `logbench run --local` and `kubectl apply` agree.
package manifest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/config/crd"
)

// ReadFile loads the LoggingBenchmark in path, beside which it may hold ConfigMaps
// (Read).
func ReadFile(path string) (*v1alpha1.LoggingBenchmark, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	documents, err := DecodeDocuments(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return documents.Benchmark, nil
}

// Documents are what a file holds, as kubectl apply -f takes it: one LoggingBenchmark
// and the ConfigMaps its spec.workload.scripts names.
type Documents struct {
	Benchmark  *v1alpha1.LoggingBenchmark
	ConfigMaps []corev1.ConfigMap
}

// Read loads the LoggingBenchmark in path and the ConfigMaps beside it.
func Read(path string) (Documents, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Documents{}, err
	}
	documents, err := DecodeDocuments(data)
	if err != nil {
		return Documents{}, fmt.Errorf("%s: %w", path, err)
	}
	return documents, nil
}

// DecodeDocuments parses YAML documents (or one JSON object): exactly one
// LoggingBenchmark, which Decode checks, and any number of ConfigMaps, in any order.
func DecodeDocuments(data []byte) (Documents, error) {
	var documents Documents
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for index := 1; ; index++ {
		document, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Documents{}, err
		}
		var object map[string]any
		if err := yaml.Unmarshal(document, &object); err != nil {
			return Documents{}, fmt.Errorf("document %d: not YAML or JSON: %w", index, err)
		}
		switch {
		case len(object) == 0: // comments only, or nothing between two separators
			continue
		case object["apiVersion"] == "v1" && object["kind"] == "ConfigMap":
			var configMap corev1.ConfigMap
			if err := yaml.UnmarshalStrict(document, &configMap); err != nil {
				return Documents{}, fmt.Errorf("document %d, a ConfigMap: %w", index, err)
			}
			documents.ConfigMaps = append(documents.ConfigMaps, configMap)
		case documents.Benchmark != nil:
			return Documents{}, fmt.Errorf("document %d: a file holds one LoggingBenchmark, and ConfigMaps beside it", index)
		default:
			if documents.Benchmark, err = Decode(document); err != nil {
				return Documents{}, err
			}
		}
	}
	if documents.Benchmark == nil {
		return Documents{}, errors.New("no LoggingBenchmark in the file")
	}
	return documents, nil
}

// Decode parses one LoggingBenchmark, applies the CRD's defaults and validates it.
func Decode(data []byte) (*v1alpha1.LoggingBenchmark, error) {
	schema, err := loadSchema()
	if err != nil {
		return nil, err
	}
	asJSON, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("not YAML or JSON: %w", err)
	}
	var object map[string]any
	if err := utiljson.Unmarshal(asJSON, &object); err != nil {
		return nil, fmt.Errorf("not a single YAML or JSON object: %w", err)
	}
	gvk := v1alpha1.GroupVersion.WithKind("LoggingBenchmark")
	if object["apiVersion"] != gvk.GroupVersion().String() || object["kind"] != gvk.Kind {
		return nil, fmt.Errorf("expected apiVersion %s and kind %s, got %v and %v",
			gvk.GroupVersion(), gvk.Kind, object["apiVersion"], object["kind"])
	}
	delete(object, "status")

	unknown := pruning.PruneWithOptions(object, schema.structural, true,
		structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown field(s): %s", strings.Join(unknown, ", "))
	}
	defaulting.Default(object, schema.structural)

	errs := validation.ValidateCustomResource(nil, object, schema.validator)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, schema.structural, object)...)
	celErrs, _ := schema.cel.Validate(context.Background(), nil, schema.structural, object, nil,
		celconfig.RuntimeCELCostBudget)
	if errs = append(errs, celErrs...); len(errs) > 0 {
		return nil, fmt.Errorf("invalid LoggingBenchmark: %w", errs.ToAggregate())
	}

	defaulted, err := utiljson.Marshal(object)
	if err != nil {
		return nil, err
	}
	var benchmark v1alpha1.LoggingBenchmark
	if err := yaml.UnmarshalStrict(defaulted, &benchmark); err != nil {
		return nil, err
	}
	// The operator checks the same before it creates anything for a benchmark.
	if err := benchmark.Spec.ValidateConfigurationInput(); err != nil {
		return nil, fmt.Errorf("invalid LoggingBenchmark: %w", err)
	}
	return &benchmark, nil
}

type compiledSchema struct {
	structural *structuralschema.Structural
	validator  validation.SchemaValidator
	cel        *cel.Validator
}

// loadSchema compiles the embedded CRD's schema once per process.
var loadSchema = sync.OnceValues(func() (compiledSchema, error) {
	var definition apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(crd.LoggingBenchmark, &definition); err != nil {
		return compiledSchema{}, fmt.Errorf("embedded CRD: %w", err)
	}
	var version *apiextensionsv1.CustomResourceDefinitionVersion
	for i := range definition.Spec.Versions {
		if definition.Spec.Versions[i].Name == v1alpha1.GroupVersion.Version {
			version = &definition.Spec.Versions[i]
		}
	}
	if version == nil || version.Schema == nil || version.Schema.OpenAPIV3Schema == nil {
		return compiledSchema{}, errors.New("embedded CRD has no schema for " + v1alpha1.GroupVersion.Version)
	}
	var internal apiextensionsinternal.JSONSchemaProps
	err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(
		version.Schema.OpenAPIV3Schema, &internal, nil)
	if err != nil {
		return compiledSchema{}, err
	}
	structural, err := structuralschema.NewStructural(&internal)
	if err != nil {
		return compiledSchema{}, err
	}
	validator, _, err := validation.NewSchemaValidator(&internal)
	if err != nil {
		return compiledSchema{}, err
	}
	return compiledSchema{
		structural: structural,
		validator:  validator,
		cel:        cel.NewValidator(structural, true, celconfig.PerCallLimit),
	}, nil
})
