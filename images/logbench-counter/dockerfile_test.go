// Package logbenchcounter_test checks images/logbench-counter/Dockerfile without a
// container engine: its build stage's COPY and make commands run here, against this
// machine's PostgreSQL installations, and must leave the extension's three files where
// each image stage copies them from.
package logbenchcounter_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/logbench/logbench/internal/localpg"
	"github.com/logbench/logbench/internal/localpg/localpgtest"
	"github.com/logbench/logbench/internal/testenv"
)

// instruction is one Dockerfile instruction, its continuation lines joined.
type instruction struct {
	command string
	args    string
}

func instructions(t *testing.T, dockerfile string) []instruction {
	t.Helper()
	data, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	joined := regexp.MustCompile(`\\\n\s*`).ReplaceAllString(string(data), " ")
	var parsed []instruction
	for line := range strings.SplitSeq(joined, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		command, args, _ := strings.Cut(line, " ")
		parsed = append(parsed, instruction{command: strings.ToUpper(command), args: strings.TrimSpace(args)})
	}
	return parsed
}

// stage returns the instructions of the stage named name.
func stage(t *testing.T, all []instruction, name string) []instruction {
	t.Helper()
	start := -1
	for i, ins := range all {
		if ins.command != "FROM" {
			continue
		}
		if start >= 0 {
			return all[start:i]
		}
		if strings.HasSuffix(ins.args, " AS "+name) {
			start = i
		}
	}
	if start < 0 {
		t.Fatalf("the Dockerfile has no stage %s", name)
	}
	return all[start:]
}

// files lists the regular files under dir, relative to it.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(path string, entry fs.DirEntry, err error) error {
		if err != nil || entry.IsDir() {
			return err
		}
		relative, err := filepath.Rel(dir, path)
		found = append(found, "/"+relative)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(found)
	return found
}

func pgConfig(t *testing.T, inst localpg.Installation, option string) string {
	t.Helper()
	out, err := exec.Command(inst.Binary("pg_config"), option).Output()
	if err != nil {
		t.Fatalf("pg_config %s: %v", option, err)
	}
	return strings.TrimSpace(string(out))
}

// TestBuildStageInstallsTheExtension runs the build stage's COPY of the build context (the
// extension's folder) and its make commands, with this machine's pg_config for the
// image's and the root of a temporary folder for the image's: the operand tree must hold
// the library in pg_config's pkglibdir and the control file and SQL script in its
// sharedir's extension folder, the extension tree the same in lib and share/extension
// (CloudNativePG's image volume layout), and nothing else; the image stages copy those
// trees.
func TestBuildStageInstallsTheExtension(t *testing.T) {
	root := testenv.Root(t)
	all := instructions(t, filepath.Join(root, "images", "logbench-counter", "Dockerfile"))
	trees := map[string]string{"operand": "/operand/", "extension": "/extension/"}
	for name, tree := range trees {
		if !slices.Contains(stage(t, all, name), instruction{command: "COPY", args: "--from=build " + tree + " /"}) {
			t.Errorf("the %s stage does not copy the build stage's %s to /", name, tree)
		}
	}
	localpgtest.Run(t, func(t *testing.T, inst localpg.Installation) {
		localpgtest.RequirePGXS(t, inst)
		image := t.TempDir()
		// The image's paths, under image: the files make reads and DESTDIR. The install
		// directories pkglibdir and datadir are below DESTDIR already.
		inImage := regexp.MustCompile(`^((?:VPATH=|DESTDIR=)?)/`)
		workdir := "/"
		ran := 0
		for _, ins := range stage(t, all, "build") {
			switch ins.command {
			case "WORKDIR":
				workdir = ins.args
				if err := os.MkdirAll(filepath.Join(image, workdir), 0o755); err != nil {
					t.Fatal(err)
				}
			case "COPY":
				fields := strings.Fields(ins.args)
				dest := filepath.Join(image, fields[len(fields)-1])
				if err := os.MkdirAll(dest, 0o755); err != nil {
					t.Fatal(err)
				}
				for _, source := range fields[:len(fields)-1] {
					data, err := os.ReadFile(filepath.Join(root, "logbench_counter", source))
					if err != nil {
						t.Fatalf("COPY %s: %v", ins.args, err)
					}
					if err := os.WriteFile(filepath.Join(dest, filepath.Base(source)), data, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			case "RUN":
				if !strings.HasPrefix(ins.args, "make ") {
					continue // the packages the image installs, here installed already
				}
				for command := range strings.SplitSeq(ins.args, "&&") {
					fields := strings.Fields(command)
					for i, field := range fields {
						fields[i] = inImage.ReplaceAllString(field, "${1}"+image+"/")
						if field == "PG_CONFIG=pg_config" {
							fields[i] = "PG_CONFIG=" + inst.Binary("pg_config")
						}
					}
					cmd := exec.Command(fields[0], fields[1:]...)
					cmd.Dir = filepath.Join(image, workdir)
					if output, err := cmd.CombinedOutput(); err != nil {
						t.Fatalf("%s: %v\n%s", strings.Join(fields, " "), err, output)
					}
					ran++
				}
			}
		}
		if ran == 0 {
			t.Fatal("the build stage runs no make")
		}
		files3 := func(lib, share string) []string {
			return []string{lib + "/logbench_counter.so", share + "/extension/logbench_counter--1.0.sql",
				share + "/extension/logbench_counter.control"}
		}
		want := map[string][]string{
			"operand":   files3(pgConfig(t, inst, "--pkglibdir"), pgConfig(t, inst, "--sharedir")),
			"extension": files3("/lib", "/share"),
		}
		for name, tree := range trees {
			got := files(t, filepath.Join(image, tree))
			slices.Sort(want[name])
			if !slices.Equal(got, want[name]) {
				t.Errorf("the %s tree holds %v, want %v", name, got, want[name])
			}
		}
	})
}
