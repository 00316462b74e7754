// Package kind tests the scripts that run kind on this project's machines.
package kind

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/logbench/logbench/internal/testenv"
)

// capabilitySets is the shape of an OCI process's capabilities.
type capabilitySets map[string][]string

var privileged = capabilitySets{
	"bounding":  {"CAP_CHOWN", "CAP_SYS_RESOURCE", "CAP_SYS_ADMIN"},
	"effective": {"CAP_CHOWN", "CAP_SYS_RESOURCE", "CAP_SYS_ADMIN"},
	"permitted": {"CAP_SYS_RESOURCE", "CAP_SYS_ADMIN"},
}

// TestRuncWithoutSysResource runs the wrapper in front of a runc that records its
// arguments: CAP_SYS_RESOURCE leaves the bundle's config (create, run) or the process
// file (exec), every other capability and every argument reach runc unchanged.
func TestRuncWithoutSysResource(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		testenv.Missing(t, "jq, which the runc wrapper runs, is not installed (apt-get install jq): %v", err)
	}
	cases := []struct {
		name string
		// args has BUNDLE or PROCESS where the file's folder or path goes.
		args []string
		// process says whether the file is a process file (exec) or a bundle's config.
		process bool
	}{
		{name: "create with --bundle DIR", args: []string{"--root", "/run/runc", "create", "--bundle", "BUNDLE", "id"}},
		{name: "create with --bundle=DIR", args: []string{"create", "--bundle=BUNDLE", "--pid-file", "p", "id"}},
		{name: "run with -b", args: []string{"run", "-b", "BUNDLE", "id"}},
		{name: "exec with --process", args: []string{"exec", "--process", "PROCESS", "id"}, process: true},
		{name: "exec with -p", args: []string{"--log", "l", "exec", "-p", "PROCESS", "--detach", "id"}, process: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "config.json")
			document := map[string]any{"ociVersion": "1.0.2", "process": map[string]any{"capabilities": privileged}}
			if c.process {
				file = filepath.Join(dir, "process.json")
				document = map[string]any{"args": []string{"sh"}, "capabilities": privileged}
			}
			writeJSON(t, file, document)
			args := slices.Clone(c.args)
			for i, arg := range args {
				args[i] = strings.NewReplacer("BUNDLE", dir, "PROCESS", file).Replace(arg)
			}

			recorded := filepath.Join(dir, "runc-args")
			fakeRunc := filepath.Join(dir, "runc")
			script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + recorded + "\n"
			if err := os.WriteFile(fakeRunc, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("./runc-without-sys-resource", args...)
			cmd.Env = append(os.Environ(), "RUNC_REAL="+fakeRunc)
			if output, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("wrapper failed: %v\n%s", err, output)
			}

			passed, err := os.ReadFile(recorded)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Fields(string(passed)); !slices.Equal(got, args) {
				t.Errorf("runc got %q, want %q", got, args)
			}
			var rewritten struct {
				Capabilities capabilitySets `json:"capabilities"`
				Process      struct {
					Capabilities capabilitySets `json:"capabilities"`
				} `json:"process"`
			}
			readDocument(t, file, &rewritten)
			got := rewritten.Process.Capabilities
			if c.process {
				got = rewritten.Capabilities
			}
			for set, capabilities := range privileged {
				want := slices.DeleteFunc(slices.Clone(capabilities), func(c string) bool { return c == "CAP_SYS_RESOURCE" })
				if !slices.Equal(got[set], want) {
					t.Errorf("%s capabilities %q, want %q", set, got[set], want)
				}
			}
		})
	}
}

func writeJSON(t *testing.T, path string, value any) {
	t.Helper()
	data, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// readDocument reads a JSON or YAML file into value.
func readDocument(t *testing.T, path string, value any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, value); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, data)
	}
}
