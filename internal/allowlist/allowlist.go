// Package allowlist holds what a cluster administrator allows a LoggingBenchmark to name:
// the images it may run and where its pods may be placed. The admission policy
// requester-rights (config/admission) refuses the rest at creation; the operator checks
// the same rules again before it creates anything, so that they hold also where the
// policy is missing. The two must agree: a change here is a change of the policy's CEL.
package allowlist

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/logbench/logbench/api/v1alpha1"
)

// Rules are the administrator's allowlists, the chart's values allowedImages and
// placement.
type Rules struct {
	// ImagePrefixes are the prefixes of the images a benchmark may name; each ends in /,
	// : or @, so that it cannot match another repository, registry or tag.
	ImagePrefixes []string
	// Tolerations are the tolerations a benchmark may give its instance pods.
	Tolerations []Toleration
	// NodeLabels are the node labels, key=value, a benchmark may select its nodes by.
	NodeLabels []string
	// StorageClasses are the storage classes a benchmark may name; empty allows any.
	StorageClasses []string
}

// Toleration is an allowed toleration: a field left empty matches any value of the
// benchmark's toleration, the key excepted, which must be given.
type Toleration struct {
	Key      string `json:"key"`
	Operator string `json:"operator,omitempty"`
	Value    string `json:"value,omitempty"`
	Effect   string `json:"effect,omitempty"`
}

// imagePrefixPattern is what values.schema.json and the chart's template accept as an
// image prefix.
var imagePrefixPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/:@-]*[/:@]$`)

// nodeLabelPattern is key=value, as values.schema.json accepts it: a label key (an
// optional DNS prefix and a name) and a label value, which may be empty.
var nodeLabelPattern = regexp.MustCompile(
	`^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?` +
		`=([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`)

// ParseTolerations reads the allowed tolerations from their JSON list, as the chart
// passes placement.allowedTolerations; an empty text is an empty list.
func ParseTolerations(text string) ([]Toleration, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	decoder := json.NewDecoder(strings.NewReader(text))
	decoder.DisallowUnknownFields()
	var tolerations []Toleration
	if err := decoder.Decode(&tolerations); err != nil {
		return nil, fmt.Errorf("allowed tolerations %q: %w", text, err)
	}
	return tolerations, nil
}

// Validate refuses rules the admission policy would read otherwise than the operator:
// an image prefix that does not end in /, : or @ (the policy ignores it), a toleration
// without key, a node label that is not key=value.
func (r Rules) Validate() error {
	var problems []string
	for _, prefix := range r.ImagePrefixes {
		if !imagePrefixPattern.MatchString(prefix) {
			problems = append(problems, fmt.Sprintf("image prefix %q must end in /, : or @ and hold only the "+
				"characters of an image reference", prefix))
		}
	}
	for _, toleration := range r.Tolerations {
		if toleration.Key == "" {
			problems = append(problems, fmt.Sprintf("allowed toleration %s has no key", describe(toleration)))
		}
	}
	for _, label := range r.NodeLabels {
		if !nodeLabelPattern.MatchString(label) {
			problems = append(problems, fmt.Sprintf("allowed node selector %q is not a label key=value", label))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// Check returns why the benchmark names what the rules do not allow, nil when they allow
// everything it names. Each refusal says which value of the chart allows more.
func (r Rules) Check(spec *v1alpha1.LoggingBenchmarkSpec) error {
	var refusals []string
	if images := r.disallowedImages(spec); len(images) > 0 {
		refusals = append(refusals, fmt.Sprintf("the images %s are not allowed: images must start with %s "+
			"(the chart value allowedImages)", strings.Join(images, ", "), oneOf(r.ImagePrefixes)))
	}
	if tolerations := r.disallowedTolerations(spec.Postgres.Tolerations); len(tolerations) > 0 {
		refusals = append(refusals, fmt.Sprintf("the tolerations %s are not allowed (the chart value "+
			"placement.allowedTolerations)", strings.Join(tolerations, ", ")))
	}
	if labels := r.disallowedNodeSelectors(spec.Postgres.NodeSelector); len(labels) > 0 {
		refusals = append(refusals, fmt.Sprintf("the node selectors %s are not allowed: nodes may be selected by %s "+
			"(the chart value placement.allowedNodeSelectors)", strings.Join(labels, ", "), oneOf(r.NodeLabels)))
	}
	if affinity := spec.Postgres.Affinity; affinity != nil {
		if !r.nodeAffinityAllowed(affinity.NodeAffinity) {
			refusals = append(refusals, "spec.postgres.affinity.nodeAffinity may select nodes only with the "+
				"operator In and labels key=value of the chart value placement.allowedNodeSelectors")
		}
		if reachesOtherNamespaces(affinity.PodAffinity) {
			refusals = append(refusals, "spec.postgres.affinity.podAffinity may not name namespaces "+
				"(namespaces, namespaceSelector): it would place the pods beside another namespace's")
		}
	}
	if class := spec.Postgres.Storage.StorageClass; class != nil && len(r.StorageClasses) > 0 &&
		!slices.Contains(r.StorageClasses, *class) {
		refusals = append(refusals, fmt.Sprintf("the storage class %q is not allowed: it must be %s "+
			"(the chart value placement.allowedStorageClasses)", *class, oneOf(r.StorageClasses)))
	}
	if len(refusals) > 0 {
		return errors.New(strings.Join(refusals, "; "))
	}
	return nil
}

// oneOf says which values are allowed, in the words of the refusals.
func oneOf(allowed []string) string {
	if len(allowed) == 0 {
		return "none: the list is empty"
	}
	return "one of " + strings.Join(allowed, ", ")
}

// disallowedImages are the images of the spec that start with no allowed prefix; an
// empty image is logbench's or CloudNativePG's default, chosen by the administrator.
func (r Rules) disallowedImages(spec *v1alpha1.LoggingBenchmarkSpec) []string {
	images := []string{spec.Postgres.ImageName}
	if counter := spec.Postgres.Counter; counter != nil {
		images = append(images, counter.ExtensionImage)
	}
	for _, dest := range spec.Destinations {
		if dest.Shipper != nil {
			images = append(images, dest.Shipper.Image)
		}
	}
	var disallowed []string
	for _, image := range images {
		if image != "" && !slices.ContainsFunc(r.ImagePrefixes, func(prefix string) bool {
			return imagePrefixPattern.MatchString(prefix) && strings.HasPrefix(image, prefix)
		}) {
			disallowed = append(disallowed, image)
		}
	}
	return disallowed
}

func (r Rules) disallowedTolerations(tolerations []corev1.Toleration) []string {
	var disallowed []string
	for _, toleration := range tolerations {
		if !slices.ContainsFunc(r.Tolerations, func(allowed Toleration) bool { return allowed.admits(toleration) }) {
			disallowed = append(disallowed, describe(Toleration{Key: toleration.Key,
				Operator: string(effectiveOperator(toleration)), Value: toleration.Value, Effect: string(toleration.Effect)}))
		}
	}
	return disallowed
}

// admits tells whether the benchmark's toleration is no broader than the allowed one:
// every field the allowed one sets is equal, so that an empty value or effect of the
// benchmark's (any value, any effect) passes only where the allowed one leaves it out.
// tolerationSeconds only shortens a toleration.
func (allowed Toleration) admits(toleration corev1.Toleration) bool {
	return allowed.Key != "" && allowed.Key == toleration.Key &&
		(allowed.Operator == "" || allowed.Operator == string(effectiveOperator(toleration))) &&
		(allowed.Value == "" || allowed.Value == toleration.Value) &&
		(allowed.Effect == "" || allowed.Effect == string(toleration.Effect))
}

// effectiveOperator is the toleration's operator, Equal when it leaves it out.
func effectiveOperator(toleration corev1.Toleration) corev1.TolerationOperator {
	if toleration.Operator == "" {
		return corev1.TolerationOpEqual
	}
	return toleration.Operator
}

// describe writes a toleration as the refusals of the policy do.
func describe(toleration Toleration) string {
	orEmpty := func(field string) string {
		if field == "" {
			return `""`
		}
		return field
	}
	return fmt.Sprintf("{key: %s, operator: %s, value: %s, effect: %s}", orEmpty(toleration.Key),
		orEmpty(toleration.Operator), orEmpty(toleration.Value), orEmpty(toleration.Effect))
}

// disallowedNodeSelectors are the spec's node selector labels, key=value and sorted,
// that the rules do not list.
func (r Rules) disallowedNodeSelectors(selector map[string]string) []string {
	var disallowed []string
	for key, value := range selector {
		if label := key + "=" + value; !slices.Contains(r.NodeLabels, label) {
			disallowed = append(disallowed, label)
		}
	}
	slices.Sort(disallowed)
	return disallowed
}

// nodeAffinityAllowed tells whether every term of the node affinity, required or
// preferred, selects nodes only as an allowed node selector would: by labels key In
// values, each key=value allowed. A term that selects by field (the node's name) or with
// another operator is refused.
func (r Rules) nodeAffinityAllowed(affinity *corev1.NodeAffinity) bool {
	if affinity == nil {
		return true
	}
	var terms []corev1.NodeSelectorTerm
	if required := affinity.RequiredDuringSchedulingIgnoredDuringExecution; required != nil {
		terms = append(terms, required.NodeSelectorTerms...)
	}
	for _, preferred := range affinity.PreferredDuringSchedulingIgnoredDuringExecution {
		terms = append(terms, preferred.Preference)
	}
	for _, term := range terms {
		if term.MatchFields != nil {
			return false
		}
		for _, requirement := range term.MatchExpressions {
			if requirement.Operator != corev1.NodeSelectorOpIn {
				return false
			}
			for _, value := range requirement.Values {
				if !slices.Contains(r.NodeLabels, requirement.Key+"="+value) {
					return false
				}
			}
		}
	}
	return true
}

// reachesOtherNamespaces tells whether a pod affinity term names namespaces: without,
// it attracts the pods only to pods of the benchmark's own namespace.
func reachesOtherNamespaces(affinity *corev1.PodAffinity) bool {
	if affinity == nil {
		return false
	}
	terms := slices.Clone(affinity.RequiredDuringSchedulingIgnoredDuringExecution)
	for _, preferred := range affinity.PreferredDuringSchedulingIgnoredDuringExecution {
		terms = append(terms, preferred.PodAffinityTerm)
	}
	return slices.ContainsFunc(terms, func(term corev1.PodAffinityTerm) bool {
		return term.Namespaces != nil || term.NamespaceSelector != nil
	})
}
