package v1alpha1

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ParameterNamePattern is a parameter name as postgresql.conf's grammar reads one
// (guc-file.l: ID, or ID.ID for an extension's parameter), without the bytes above 0x7F
// it also takes, which no parameter uses. Extension parameters registered from SQL may
// hold $ or more dots, but such names cannot be written into the file CloudNativePG
// renders. The CEL rule on PostgresSpec holds the same expression.
const ParameterNamePattern = `^[A-Za-z_][A-Za-z0-9_]*([.][A-Za-z_][A-Za-z0-9_]*)?$`

var parameterName = regexp.MustCompile(ParameterNamePattern)

// UnsafeParameters run a shell command, load code, or point the server at other files or
// hosts. A benchmark needs none of them, and an editor of benchmarks must not gain them
// through the operator's clusters: logbench refuses them itself, whatever the
// CloudNativePG version refuses. The logging parameters logbench sets are refused apart,
// by the CEL rules of PostgresSpec. The CEL rule listing these holds the same names.
var UnsafeParameters = []string{
	// Shell commands.
	"archive_cleanup_command", "archive_command", "recovery_end_command", "restore_command",
	"ssl_passphrase_command",
	// Code loaded into the server.
	"archive_library", "dynamic_library_path", "extension_control_path", "jit_provider",
	"local_preload_libraries", "session_preload_libraries", "shared_preload_libraries",
	// Files read or written in place of CloudNativePG's.
	"config_file", "data_directory", "external_pid_file", "hba_file", "ident_file",
	"krb_server_keyfile", "ssl_ca_file", "ssl_cert_file", "ssl_crl_dir", "ssl_crl_file",
	"ssl_dh_params_file", "ssl_key_file",
	// Connections the server opens.
	"primary_conninfo",
}

// ValidateConfigurationInput checks every string of the spec that logbench writes into a
// server's or a shipper's configuration, as the CRD's rules do: the operator calls it
// before it creates anything for a benchmark and local mode before it starts a server,
// so that neither relies on the API server having held a benchmark to the current CRD.
func (s *LoggingBenchmarkSpec) ValidateConfigurationInput() error {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	parameters := spec.Child("postgres", "parameters")
	for _, name := range slices.Sorted(maps.Keys(s.Postgres.Parameters)) {
		path := parameters.Key(name)
		switch {
		case !parameterName.MatchString(name):
			errs = append(errs, field.Invalid(path, name, "not a PostgreSQL parameter name: "+
				"a letter or _, then letters, digits or _, with at most one . before an extension's own name"))
		case slices.Contains(UnsafeParameters, strings.ToLower(name)):
			errs = append(errs, field.Forbidden(path,
				"runs a shell command, loads code, or points the server at other files or hosts"))
		}
		errs = append(errs, validateServerValue(path, string(s.Postgres.Parameters[name]))...)
	}
	errs = append(errs, validateServerValue(spec.Child("logging", "linePrefix"), string(s.Logging.LinePrefix))...)
	for i, destination := range s.Destinations {
		path := spec.Child("destinations").Index(i)
		if logging := destination.Logging; logging != nil && logging.LinePrefix != nil {
			errs = append(errs, validateServerValue(path.Child("logging", "linePrefix"), string(*logging.LinePrefix))...)
		}
		if syslog := destination.Syslog; syslog != nil {
			errs = append(errs, validateServerValue(path.Child("syslog", "ident"), syslog.Ident)...)
		}
		if loki := destination.Loki; loki != nil {
			errs = append(errs, validateLokiSettings(path.Child("loki"), loki)...)
		}
	}
	return errs.ToAggregate()
}

// RefusedInServerValues matches what could end a quoted value or a line of
// postgresql.conf: CloudNativePG writes values between single quotes and doubles a quote
// in them, but leaves the file's escape character, the backslash, which then escapes
// the first of the two, and newlines. Quotes are refused too, so that no writer's
// quoting matters; control characters (newlines, tabs, NUL) have no place in a setting.
// The CEL rules of the CRD hold the same expression.
const RefusedInServerValues = `[\p{Cc}\\']`

// RefusedInShipperValues matches what the shippers' configurations must not carry:
// Fluent Bit and the OpenTelemetry Collector expand ${...} in every value, and a space or
// a control character ends a value of an HTTP request line or header. The CEL rules on
// loki.url refuse the same ($ in a rule of its own); tenantID's and the labels' patterns
// admit none of it.
const RefusedInShipperValues = `[\s\p{Z}\p{Cc}$]`

// labelSeparators separate the labels of Fluent Bit's labels setting ("a=b, c=d").
const labelSeparators = ",="

var (
	refusedInServerValues  = regexp.MustCompile(RefusedInServerValues)
	refusedInShipperValues = regexp.MustCompile(RefusedInShipperValues)
)

func validateServerValue(path *field.Path, value string) field.ErrorList {
	if refusedInServerValues.MatchString(value) {
		return field.ErrorList{field.Invalid(path, value,
			"must hold no control characters (newlines, tabs), backslashes or single quotes: "+
				"it is written into postgresql.conf as a quoted value")}
	}
	return nil
}

// validateLokiSettings refuses, in the Loki settings the shippers' configurations carry,
// what RefusedInShipperValues matches, and in labels their separators.
func validateLokiSettings(path *field.Path, loki *LokiSpec) field.ErrorList {
	var errs field.ErrorList
	refuse := func(path *field.Path, value string) {
		errs = append(errs, field.Invalid(path, value,
			"must hold no spaces, control characters or $ (nor , or = in labels): a shipper's configuration carries it"))
	}
	if refusedInShipperValues.MatchString(loki.URL) {
		refuse(path.Child("url"), loki.URL)
	}
	if refusedInShipperValues.MatchString(loki.TenantID) {
		refuse(path.Child("tenantID"), loki.TenantID)
	}
	labels := path.Child("labels")
	for _, name := range slices.Sorted(maps.Keys(loki.Labels)) {
		for _, part := range []string{name, string(loki.Labels[name])} {
			if refusedInShipperValues.MatchString(part) || strings.ContainsAny(part, labelSeparators) {
				refuse(labels.Key(name), part)
			}
		}
	}
	return errs
}
