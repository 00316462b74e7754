package localpg

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// reservedSettings are chosen by localpg: the port is picked free, and the addresses keep
// the server private to this machine and its directory.
var reservedSettings = []string{"port", "listen_addresses", "unix_socket_directories"}

var settingName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*$`)

// validateSettings rejects what cannot be written into postgresql.conf safely and what
// localpg sets itself.
func validateSettings(settings map[string]string) error {
	for name, value := range settings {
		if !settingName.MatchString(name) {
			return fmt.Errorf("setting %q: not a valid PostgreSQL parameter name", name)
		}
		if slices.Contains(reservedSettings, strings.ToLower(name)) {
			return fmt.Errorf("setting %q is chosen by logbench for its local server; remove it", name)
		}
		if strings.ContainsAny(value, "\n\r\x00") {
			return fmt.Errorf("setting %q: the value must be a single line", name)
		}
	}
	return nil
}

// confLines renders validated settings as postgresql.conf lines, sorted by name so the
// file is reproducible. Every value is quoted: the configuration file accepts quoted
// values for settings of any type, and quoting removes any doubt about spaces or commas.
func confLines(settings map[string]string) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(settings)) {
		fmt.Fprintf(&b, "%s = %s\n", name, quote(settings[name]))
	}
	return b.String()
}

// quote writes a postgresql.conf string: the file's parser treats a backslash as an
// escape and a doubled quote as a quote.
func quote(value string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(value) + "'"
}
