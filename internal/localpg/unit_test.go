package localpg

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/logbench/logbench/internal/testenv"
)

func TestParseMajorVersion(t *testing.T) {
	tests := []struct {
		output  string
		want    int
		wantErr bool
	}{
		{output: "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)\n", want: 15},
		{output: "postgres (PostgreSQL) 13.2", want: 13},
		{output: "postgres (PostgreSQL) 17beta1", want: 17},
		{output: "postgres (PostgreSQL) 18devel", want: 18},
		{output: "postgres (PostgreSQL) 9.6.24", want: 9},
		{output: "postgres 15", wantErr: true},
		{output: "", wantErr: true},
		{output: "postgres (PostgreSQL) 99999999999999999999", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.output, func(t *testing.T) {
			got, err := ParseMajorVersion(tt.output)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ParseMajorVersion(%q) = %d, %v; want %d, error %v", tt.output, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func FuzzParseMajorVersion(f *testing.F) {
	f.Add("postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)")
	f.Add("postgres (PostgreSQL) 17beta1")
	f.Add("(PostgreSQL) ")
	f.Fuzz(func(t *testing.T, output string) {
		major, err := ParseMajorVersion(output)
		if err == nil && (major < 0 || !strings.Contains(output, "(PostgreSQL) ")) {
			t.Errorf("ParseMajorVersion(%q) = %d without a version in it", output, major)
		}
	})
}

func TestValidateSettings(t *testing.T) {
	tests := []struct {
		name     string
		settings map[string]string
		wantErr  string
	}{
		{name: "none"},
		{name: "ordinary", settings: map[string]string{"log_statement": "all", "auto_explain.log_min_duration": "0"}},
		{name: "reserved", settings: map[string]string{"Port": "5432"}, wantErr: `"Port" is chosen by logbench`},
		{
			name:     "bad name",
			settings: map[string]string{"log statement": "all"},
			wantErr:  "not a valid PostgreSQL parameter name",
		},
		{name: "multi-line value", settings: map[string]string{"log_line_prefix": "a\nport = 1"}, wantErr: "single line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validateSettings(tt.settings)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("validateSettings = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestConfLines(t *testing.T) {
	got := confLines(map[string]string{
		"log_statement":   "all",
		"log_line_prefix": `%m it's C:\ `,
		"fsync":           "off",
	})
	want := "fsync = 'off'\nlog_line_prefix = '%m it''s C:\\\\ '\nlog_statement = 'all'\n"
	if got != want {
		t.Errorf("confLines =\n%s\nwant\n%s", got, want)
	}
}

func TestTailBuffer(t *testing.T) {
	tail := &tailBuffer{limit: 10}
	for _, s := range []string{"line one\n", "line two\n", "line three\n"} {
		if _, err := tail.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if got := tail.lastLines(5); got != "ine three" {
		t.Errorf("lastLines = %q, want the last 10 bytes' lines", got)
	}
	tail = &tailBuffer{limit: 100}
	if _, err := tail.Write([]byte("a\nb\nc\n")); err != nil {
		t.Fatal(err)
	}
	if got := tail.lastLines(2); got != "b\nc" {
		t.Errorf("lastLines(2) = %q", got)
	}
}

func TestFindInstallation(t *testing.T) {
	inst, err := FindInstallation()
	if err != nil {
		if !strings.Contains(err.Error(), "apt-get install postgresql") {
			t.Errorf("the error does not say how to install PostgreSQL: %v", err)
		}
		testenv.Missing(t, "no local PostgreSQL: %v", err)
	}
	if inst.Version < MinVersion || inst.Version > MaxVersion {
		t.Errorf("version %d outside %d to %d", inst.Version, MinVersion, MaxVersion)
	}
	for _, name := range serverBinaries {
		if _, err := os.Stat(inst.Binary(name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestInspectSkipsDirectoriesWithoutAServer(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		if _, err := inspect(dir); !errors.Is(err, errIncomplete) {
			t.Errorf("inspect(%q) = %v, want errIncomplete", dir, err)
		}
	}
}
