package v1alpha1

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/logbench/logbench/config/crd"
)

func TestValidateConfigurationInput(t *testing.T) {
	prefix := func(value string) *LinePrefix { return new(LinePrefix(value)) }
	loki := func(change func(*LokiSpec)) []Destination {
		spec := LokiSpec{URL: "http://loki:3100", TenantID: "team-a", Labels: map[string]LabelValue{"team": "a"}}
		change(&spec)
		return []Destination{{Name: "loki", Type: DestinationLoki, Loki: &spec}}
	}
	tests := []struct {
		name         string
		parameters   map[string]ParameterValue
		linePrefix   LinePrefix
		destinations []Destination
		want         string // in the error; empty when the spec is valid
	}{
		{name: "an ordinary parameter", parameters: map[string]ParameterValue{"work_mem": "64MB", "search_path": `"$user", public`}},
		{name: "an extension's parameter", parameters: map[string]ParameterValue{"auto_explain.log_min_duration": "0"}},
		{name: "upper case", parameters: map[string]ParameterValue{"Work_Mem": "64MB"}},
		{name: "a name with a trailing space", parameters: map[string]ParameterValue{"archive_command ": "true"},
			want: `spec.postgres.parameters[archive_command ]: Invalid value: "archive_command ": not a PostgreSQL parameter name`},
		{name: "a name with a newline", parameters: map[string]ParameterValue{"work_mem\narchive_command": "x"},
			want: "not a PostgreSQL parameter name"},
		{name: "a name with two dots", parameters: map[string]ParameterValue{"a.b.c": "x"}, want: "not a PostgreSQL parameter name"},
		{name: "a name with $", parameters: map[string]ParameterValue{"a$b": "x"}, want: "not a PostgreSQL parameter name"},
		{name: "a name starting with a digit", parameters: map[string]ParameterValue{"1abc": "x"},
			want: "not a PostgreSQL parameter name"},
		{name: "an empty name", parameters: map[string]ParameterValue{"": "x"}, want: "not a PostgreSQL parameter name"},
		{name: "archive_command", parameters: map[string]ParameterValue{"archive_command": "true"},
			want: "spec.postgres.parameters[archive_command]: Forbidden: runs a shell command"},
		{name: "an unsafe parameter in upper case", parameters: map[string]ParameterValue{"Shared_Preload_Libraries": "x"},
			want: "Forbidden: runs a shell command, loads code"},
		{name: "a value with a newline", parameters: map[string]ParameterValue{"work_mem": "64MB\narchive_command = 'sh'"},
			want: "spec.postgres.parameters[work_mem]: Invalid value"},
		{name: "a value with a carriage return", parameters: map[string]ParameterValue{"work_mem": "64MB\r"},
			want: "no control characters"},
		{name: "a value with a NUL", parameters: map[string]ParameterValue{"work_mem": "64MB\x00"}, want: "no control characters"},
		{name: "a value with a C1 control", parameters: map[string]ParameterValue{"work_mem": "64MB\u0085"},
			want: "no control characters"},
		{name: "a value with a backslash", parameters: map[string]ParameterValue{"work_mem": `64MB\`}, want: "backslashes"},
		{name: "a value with a single quote", parameters: map[string]ParameterValue{"work_mem": "64MB'"}, want: "single quotes"},
		{name: "a line prefix with a newline", linePrefix: "%a\n", want: "spec.logging.linePrefix: Invalid value"},
		{name: "a line prefix with a tab", linePrefix: "%a\t", want: "spec.logging.linePrefix: Invalid value"},
		{name: "a destination's line prefix with a backslash",
			destinations: []Destination{{Name: "csv", Type: DestinationCSVLog, Logging: &LoggingOverride{LinePrefix: prefix(`%a \`)}}},
			want:         "spec.destinations[0].logging.linePrefix: Invalid value"},
		{name: "a destination's line prefix with a quote",
			destinations: []Destination{{Name: "csv", Type: DestinationCSVLog, Logging: &LoggingOverride{LinePrefix: prefix(`%a '`)}}},
			want:         "spec.destinations[0].logging.linePrefix: Invalid value"},
		{name: "a syslog ident with a newline",
			destinations: []Destination{{Name: "sys", Type: DestinationSyslog, Syslog: &SyslogSpec{Ident: "pg\n"}}},
			want:         "spec.destinations[0].syslog.ident: Invalid value"},
		{name: "Loki settings", destinations: loki(func(*LokiSpec) {})},
		{name: "a Loki URL with a space", destinations: loki(func(l *LokiSpec) { l.URL = "http://loki:3100/a b" }),
			want: "spec.destinations[0].loki.url: Invalid value"},
		{name: "a Loki URL with ${", destinations: loki(func(l *LokiSpec) { l.URL = "http://loki:3100/${HOME}" }),
			want: "spec.destinations[0].loki.url: Invalid value"},
		{name: "a tenant with a newline", destinations: loki(func(l *LokiSpec) { l.TenantID = "a\nb" }),
			want: "spec.destinations[0].loki.tenantID: Invalid value"},
		{name: "a label value with a label separator",
			destinations: loki(func(l *LokiSpec) { l.Labels = map[string]LabelValue{"team": "a, job=forged"} }),
			want:         "spec.destinations[0].loki.labels[team]: Invalid value"},
		{name: "a label name with a space",
			destinations: loki(func(l *LokiSpec) { l.Labels = map[string]LabelValue{"team ": "a"} }),
			want:         "spec.destinations[0].loki.labels[team ]: Invalid value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := LoggingBenchmarkSpec{
				Postgres:     PostgresSpec{Parameters: tc.parameters},
				Logging:      LoggingSpec{LinePrefix: cmp.Or(tc.linePrefix, "%m [%p] %q%u@%d %a ")},
				Destinations: tc.destinations,
			}
			err := spec.ValidateConfigurationInput()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused a valid spec: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestConfigurationInputRulesAreTheCRDs holds the CEL rules of the generated CRD to the
// expressions and the list ValidateConfigurationInput checks, so that the API server,
// local mode and the operator refuse the same.
func TestConfigurationInputRulesAreTheCRDs(t *testing.T) {
	var document any
	if err := yaml.Unmarshal(crd.LoggingBenchmark, &document); err != nil {
		t.Fatal(err)
	}
	var rules []string
	var collect func(any)
	collect = func(node any) {
		switch node := node.(type) {
		case map[string]any:
			if rule, ok := node["rule"].(string); ok {
				rules = append(rules, rule)
			}
			for _, child := range node {
				collect(child)
			}
		case []any:
			for _, child := range node {
				collect(child)
			}
		}
	}
	collect(document)
	count := func(fragment string) int {
		return len(slices.DeleteFunc(slices.Clone(rules), func(rule string) bool { return !strings.Contains(rule, fragment) }))
	}
	for fragment, want := range map[string]int{
		"k.matches('" + ParameterNamePattern + "')": 1,
		// Parameter values, and the line prefix of spec.logging and of a destination.
		`matches(r"` + RefusedInServerValues + `")`: 3,
		// loki.url refuses $ in a rule of its own.
		`matches(r"` + strings.Replace(RefusedInShipperValues, "$", "", 1) + `")`: 1,
	} {
		if got := count(fragment); got != want {
			t.Errorf("%d rules of the CRD hold %s, want %d", got, fragment, want)
		}
	}

	unsafeRule := slices.IndexFunc(rules, func(rule string) bool { return strings.Contains(rule, "'archive_command'") })
	if unsafeRule < 0 {
		t.Fatal("no rule of the CRD refuses archive_command")
	}
	matches := regexp.MustCompile(`'([a-z_]+)'`).FindAllStringSubmatch(rules[unsafeRule], -1)
	listed := make([]string, 0, len(matches))
	for _, match := range matches {
		listed = append(listed, match[1])
	}
	if !slices.Equal(slices.Sorted(slices.Values(listed)), slices.Sorted(slices.Values(UnsafeParameters))) {
		t.Errorf("the CRD refuses %v, UnsafeParameters lists %v", listed, UnsafeParameters)
	}
}
