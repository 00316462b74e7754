package shipping

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"

	"github.com/logbench/logbench/api/v1alpha1"
)

// TestEveryShipperKindHasAShipper: a kind the API admits without a Shipper would ship
// with Fluent Bit's configuration under another kind's name.
func TestEveryShipperKindHasAShipper(t *testing.T) {
	for _, kind := range v1alpha1.ShipperKinds {
		if _, ok := shippers[kind]; !ok {
			t.Errorf("kind %s has no Shipper in shippers", kind)
		}
	}
	if len(shippers) != len(v1alpha1.ShipperKinds) {
		t.Errorf("shippers holds %d kinds, v1alpha1.ShipperKinds %d", len(shippers), len(v1alpha1.ShipperKinds))
	}
}

// TestShipperKindsAreTheAPIsEnum: v1alpha1.ShipperKinds lists the kinds admission
// admits, those of the Enum marker of ShipperKind, from which the CRD is generated.
func TestShipperKindsAreTheAPIsEnum(t *testing.T) {
	enum := enumMarker(t, "../../api/v1alpha1/loggingbenchmark_types.go", "ShipperKind")
	listed := make([]string, 0, len(v1alpha1.ShipperKinds))
	for _, kind := range v1alpha1.ShipperKinds {
		listed = append(listed, string(kind))
	}
	if !slices.Equal(listed, enum) {
		t.Errorf("v1alpha1.ShipperKinds is %v, the Enum marker of ShipperKind %v", listed, enum)
	}
}

// enumMarker returns the values of the +kubebuilder:validation:Enum marker in the doc
// comment of the type typeName declared in the Go file at path.
func enumMarker(t *testing.T, path, typeName string) []string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	const marker = "// +kubebuilder:validation:Enum="
	for _, decl := range file.Decls {
		general, ok := decl.(*ast.GenDecl)
		if !ok || general.Tok != token.TYPE || general.Doc == nil {
			continue
		}
		if spec := general.Specs[0].(*ast.TypeSpec); spec.Name.Name != typeName {
			continue
		}
		for _, comment := range general.Doc.List {
			if values, ok := strings.CutPrefix(comment.Text, marker); ok {
				return strings.Split(values, ";")
			}
		}
	}
	t.Fatalf("%s declares no type %s with an Enum marker", path, typeName)
	return nil
}
