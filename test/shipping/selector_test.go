//go:build shipping

package shipping_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/logbench/logbench/internal/shipping"
	"github.com/logbench/logbench/internal/testenv"
)

// TestSelectorRuleAgreesWithLokisParser holds the CRD's rule on loki.selector, which
// admission applies, to Loki's own LogQL parser (its format_query endpoint): every
// selector the rule admits is, for Loki, a stream selector of matchers only, which leaves
// the agent's count query the query it means; and the injections a selector could carry
// (a range and an arithmetic that fakes a count, a line filter, a second selector) are
// refused by the rule. The selectors are generated from the matcher grammar with values
// holding LogQL's own syntax, and mutated a character at a time.
func TestSelectorRuleAgreesWithLokisParser(t *testing.T) {
	rule := selectorRule(t)
	loki := testenv.StartLoki(t, "")

	for _, injection := range []string{
		`{a="b"} [1s])) * 0 + vector(1e6) + sum(count_over_time({a="b"}`,
		`{a="b"} |= "x"`,
		`{a="b"} or {c="d"}`,
		`{a="b"}) + (sum(count_over_time({c="d"}`,
		`{a="b", c=~"d"} | json`,
		`{a="${file:/var/run/secrets/kubernetes.io/serviceaccount/token}"}`,
	} {
		if rule.MatchString(injection) && !strings.Contains(injection, "${") {
			t.Errorf("the rule admits %q", injection)
		}
	}

	random := rand.New(rand.NewPCG(27, 31))
	var admitted, refused, refusedByLoki int
	for range 3000 {
		selector := randomSelector(random)
		if random.IntN(2) == 0 {
			selector = mutate(random, selector)
		}
		if !rule.MatchString(selector) {
			refused++
			continue
		}
		admitted++
		alone, err := formatQuery(loki, selector)
		if err != nil {
			// Loki refuses some selectors for a matcher's value: an =~ value that is no
			// regular expression, or matchers that all match the empty string. The count
			// then fails with Loki's reason; nothing else is counted.
			if !valueRefusal.MatchString(err.Error()) {
				t.Fatalf("the rule admits %q, which Loki does not parse: %v", selector, err)
			}
			refusedByLoki++
			continue
		}
		if !strings.HasPrefix(alone, "{") || !strings.HasSuffix(alone, "}") {
			t.Fatalf("the rule admits %q, which Loki reads as %q: not a stream selector alone", selector, alone)
		}
		const tag = "lb_tag"
		count, err := formatQuery(loki, shipping.CountQuery(selector, tag, time.Minute))
		if err != nil {
			t.Fatalf("Loki does not parse the count query of the admitted %q: %v", selector, err)
		}
		if want, err := formatQuery(loki, shipping.CountQuery(alone, tag, time.Minute)); err != nil || count != want {
			t.Fatalf("the count query of the admitted %q reads %q, want %q (%v)", selector, count, want, err)
		}
	}
	t.Logf("%d generated selectors admitted (%d of them refused by Loki for a matcher's value), %d refused by the rule",
		admitted, refusedByLoki, refused)
	if admitted < 1000 || refused < 500 {
		t.Errorf("%d admitted and %d refused: the generator no longer covers both sides of the rule", admitted, refused)
	}
}

// valueRefusal matches Loki's refusals of a matcher's value.
var valueRefusal = regexp.MustCompile(`error parsing regexp|empty-compatible value`)

// selectorRule is the regular expression of the CRD's rule on loki.selector (CEL's
// matches() takes RE2, as Go's regexp does).
func selectorRule(t *testing.T) *regexp.Regexp {
	t.Helper()
	root := testenv.Root(t)
	data, err := os.ReadFile(filepath.Join(root, "config/crd/bases/bench.logbench.io_loggingbenchmarks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	var rule *regexp.Regexp
	var walk func(apiextensionsv1.JSONSchemaProps)
	walk = func(schema apiextensionsv1.JSONSchemaProps) {
		for name, property := range schema.Properties {
			if name == "selector" {
				for _, validation := range property.XValidations {
					pattern, ok := strings.CutPrefix(validation.Rule, "self.matches('")
					if !ok || found[pattern] {
						continue
					}
					found[pattern] = true
					pattern = strings.TrimSuffix(pattern, "')")
					// The rule is a CEL string literal: a backslash escapes the next character.
					rule = regexp.MustCompile(regexp.MustCompile(`\\(.)`).ReplaceAllString(pattern, "$1"))
				}
			}
			walk(property)
		}
		if schema.Items != nil && schema.Items.Schema != nil {
			walk(*schema.Items.Schema)
		}
	}
	for _, version := range crd.Spec.Versions {
		walk(*version.Schema.OpenAPIV3Schema)
	}
	if len(found) != 1 {
		t.Fatalf("found %d rules on loki.selector in the CRD, want 1", len(found))
	}
	return rule
}

// randomSelector writes one to three matchers whose values hold characters that mean
// something to LogQL, escaped as a LogQL string escapes them.
func randomSelector(random *rand.Rand) string {
	names := []string{"namespace", "pod", "k8s_pod_name", "job", "_x", "A1"}
	operators := []string{"=", "!=", "=~", "!~"}
	pieces := []string{"a", "logbench-e2e", "}", "{", ")", "(", "[1s]", "|=", " or ", "+", "*", ",", `\"`, `\\`, `\n`, "${x}", " "}
	count := 1 + random.IntN(3)
	matchers := make([]string, 0, count)
	for range count {
		var value strings.Builder
		for range random.IntN(5) {
			value.WriteString(pieces[random.IntN(len(pieces))])
		}
		space := strings.Repeat(" ", random.IntN(2))
		matchers = append(matchers, names[random.IntN(len(names))]+space+operators[random.IntN(len(operators))]+
			space+`"`+value.String()+`"`)
	}
	return "{" + strings.Join(matchers, ", ") + "}"
}

// mutate inserts, deletes or replaces one character.
func mutate(random *rand.Rand, selector string) string {
	const alphabet = `{}"\=!~,|()[] a1s+*`
	at := random.IntN(len(selector) + 1)
	char := string(alphabet[random.IntN(len(alphabet))])
	switch random.IntN(3) {
	case 0:
		return selector[:at] + char + selector[at:]
	case 1:
		if at == len(selector) {
			return selector
		}
		return selector[:at] + selector[at+1:]
	default:
		if at == len(selector) {
			return selector + char
		}
		return selector[:at] + char + selector[at+1:]
	}
}

// formatQuery is Loki's reading of a LogQL query, or its parse error.
func formatQuery(loki, query string) (string, error) {
	response, err := http.Get(loki + "/loki/api/v1/format_query?query=" + url.QueryEscape(query))
	if err != nil {
		return "", err
	}
	defer response.Body.Close()
	var answer struct {
		Status string `json:"status"`
		Data   string `json:"data"`
	}
	body := json.NewDecoder(response.Body)
	if response.StatusCode != http.StatusOK {
		var failure map[string]any
		_ = body.Decode(&failure)
		return "", fmt.Errorf("%s: %v", response.Status, failure)
	}
	if err := body.Decode(&answer); err != nil {
		return "", err
	}
	return answer.Data, nil
}
