package testenv

import (
	"bufio"
	"errors"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// DecodeManifest decodes a multi-document YAML manifest, such as helm template prints,
// skipping empty documents.
func DecodeManifest(manifest io.Reader) ([]*unstructured.Unstructured, error) {
	var objects []*unstructured.Unstructured
	reader := utilyaml.NewYAMLReader(bufio.NewReader(manifest))
	for {
		document, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objects, nil
		}
		if err != nil {
			return nil, err
		}
		object := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(document, &object.Object); err != nil {
			return nil, err
		}
		if len(object.Object) > 0 {
			objects = append(objects, object)
		}
	}
}
