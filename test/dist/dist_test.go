//go:build dist

// Package dist_test checks the release artifacts `make dist` builds into dist/, for the
// VERSION and COMMIT the Makefile stamped them with (`make test-dist` runs both): the CLI
// archives, their SBOMs and their checksums, the binaries' platforms and stamped
// versions, the krew manifest, and the packaged chart's image references and pull
// secrets.
package dist_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/logbench/logbench/internal/testenv"
)

// platform is one a release ships the CLI for.
type platform struct{ os, arch string }

func (p platform) String() string { return p.os + "/" + p.arch }

// releasePlatforms reads the platforms a release ships the CLI for from .goreleaser.yaml
// (its build's goos × goarch) and checks that the Makefile's RELEASE_PLATFORMS, those
// make crosscheck type-checks, are the same.
func releasePlatforms(t *testing.T, root string) []platform {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var config struct {
		Builds []struct {
			Goos   []string `json:"goos"`
			Goarch []string `json:"goarch"`
		} `json:"builds"`
	}
	if err := yaml.Unmarshal(data, &config); err != nil {
		t.Fatal(err)
	}
	if len(config.Builds) != 1 {
		t.Fatalf(".goreleaser.yaml has %d builds, want the CLI's one", len(config.Builds))
	}
	build := config.Builds[0]
	platforms := make([]platform, 0, len(build.Goos)*len(build.Goarch))
	names := make([]string, 0, cap(platforms))
	for _, goos := range build.Goos {
		for _, arch := range build.Goarch {
			platforms = append(platforms, platform{goos, arch})
			names = append(names, platforms[len(platforms)-1].String())
		}
	}
	if made := strings.Fields(os.Getenv("RELEASE_PLATFORMS")); !slices.Equal(slices.Sorted(slices.Values(made)), slices.Sorted(slices.Values(names))) {
		t.Errorf("the Makefile's RELEASE_PLATFORMS are %q, .goreleaser.yaml's %q", made, names)
	}
	return platforms
}

// archiveFiles are the files of every CLI archive.
var archiveFiles = []string{"CHANGELOG.md", "LICENSE", "README.md", "logbench"}

// release is what make dist was asked to build.
type release struct {
	version, commit, dist string
	// platforms are those of the archives: the release's, or those DIST_PLATFORMS
	// narrowed them to (make test builds this machine's only).
	platforms []platform
	// sboms says whether make dist wrote the archives' SBOMs (DIST_SBOMS=true, as the
	// release workflow asks).
	sboms bool
}

func stamped(t *testing.T) release {
	t.Helper()
	version, commit := os.Getenv("VERSION"), os.Getenv("COMMIT")
	if version == "" || commit == "" {
		t.Fatal("VERSION and COMMIT are not set: run these tests with make test-dist")
	}
	root := testenv.Root(t)
	all := releasePlatforms(t, root)
	r := release{version: version, commit: commit, dist: filepath.Join(root, "dist"), platforms: all,
		sboms: os.Getenv("DIST_SBOMS") == "true"}
	if narrowed := strings.Fields(os.Getenv("DIST_PLATFORMS")); len(narrowed) > 0 {
		r.platforms = nil
		for _, name := range narrowed {
			goos, arch, _ := strings.Cut(name, "/")
			if !slices.Contains(all, platform{goos, arch}) {
				t.Fatalf("DIST_PLATFORMS names %q, not one of the release's %v", name, all)
			}
			r.platforms = append(r.platforms, platform{goos, arch})
		}
	}
	return r
}

func (r release) archive(goos, arch string) string {
	return fmt.Sprintf("logbench_%s_%s_%s.tar.gz", r.version, goos, arch)
}

// sbom is the name of an archive's SBOM.
func sbom(archive string) string { return archive + ".sbom.json" }

// checksums reads dist/checksums.txt: sha256 by file name.
func (r release) checksums(t *testing.T) map[string]string {
	t.Helper()
	file, err := os.Open(filepath.Join(r.dist, "checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = file.Close() }()
	sums := map[string]string{}
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		sum, name, ok := strings.Cut(scanner.Text(), "  ")
		if !ok {
			t.Fatalf("checksums.txt: line %q is not <sha256>  <file>", scanner.Text())
		}
		sums[name] = sum
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	return sums
}

// TestArchives checks that checksums.txt lists every archive, and its SBOM when make dist
// wrote them, and nothing else, with its sha256, and that each archive holds the
// license, the docs and a logbench binary built for its platform. (-trimpath leaves
// -ldflags out of the binaries' build information: TestArchivedBinaryPrintsItsVersion
// checks the stamp by running one.)
func TestArchives(t *testing.T) {
	r := stamped(t)
	sums := r.checksums(t)
	want := make([]string, 0, 2*len(r.platforms))
	for _, platform := range r.platforms {
		want = append(want, r.archive(platform.os, platform.arch))
		if r.sboms {
			want = append(want, sbom(r.archive(platform.os, platform.arch)))
		}
	}
	if got := slices.Sorted(maps.Keys(sums)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("checksums.txt lists %q, want %q", got, want)
	}
	for _, platform := range r.platforms {
		name := r.archive(platform.os, platform.arch)
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(r.dist, name)
			if got := testenv.FileSHA256(t, path); got != sums[name] {
				t.Errorf("sha256 %s, checksums.txt says %s", got, sums[name])
			}
			dir := unpack(t, path)
			var files []string
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, entry := range entries {
				files = append(files, entry.Name())
			}
			if !slices.Equal(files, archiveFiles) {
				t.Errorf("the archive holds %q, want %q", files, archiveFiles)
			}
			info, err := buildinfo.ReadFile(filepath.Join(dir, "logbench"))
			if err != nil {
				t.Fatal(err)
			}
			settings := map[string]string{}
			for _, setting := range info.Settings {
				settings[setting.Key] = setting.Value
			}
			if settings["GOOS"] != platform.os || settings["GOARCH"] != platform.arch {
				t.Errorf("the binary is built for %s/%s", settings["GOOS"], settings["GOARCH"])
			}
		})
	}
}

// spdxDocument is the part of an SPDX 2 JSON document that TestSBOMs reads.
type spdxDocument struct {
	SPDXVersion string `json:"spdxVersion"`
	Packages    []struct {
		Name        string `json:"name"`
		VersionInfo string `json:"versionInfo"`
	} `json:"packages"`
}

// TestSBOMs checks, when make dist wrote them (DIST_SBOMS=true), that each archive's SBOM
// is an SPDX document that lists every module the archived binary was built with, at the
// version its build information records, and that checksums.txt gives its sha256.
func TestSBOMs(t *testing.T) {
	r := stamped(t)
	if !r.sboms {
		t.Skip("make dist wrote no SBOMs: DIST_SBOMS=true asks for them")
	}
	sums := r.checksums(t)
	for _, platform := range r.platforms {
		archive := r.archive(platform.os, platform.arch)
		t.Run(sbom(archive), func(t *testing.T) {
			path := filepath.Join(r.dist, sbom(archive))
			if got := testenv.FileSHA256(t, path); got != sums[sbom(archive)] {
				t.Errorf("sha256 %s, checksums.txt says %s", got, sums[sbom(archive)])
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var document spdxDocument
			if err := json.Unmarshal(data, &document); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(document.SPDXVersion, "SPDX-2.") {
				t.Errorf("the SBOM is %q, want an SPDX 2 document", document.SPDXVersion)
			}
			listed := map[string]bool{}
			for _, pkg := range document.Packages {
				listed[pkg.Name+"@"+pkg.VersionInfo] = true
			}
			info, err := buildinfo.ReadFile(filepath.Join(unpack(t, filepath.Join(r.dist, archive)), "logbench"))
			if err != nil {
				t.Fatal(err)
			}
			if len(info.Deps) == 0 {
				t.Fatal("the binary records no modules")
			}
			for _, module := range info.Deps {
				if module.Replace != nil {
					module = module.Replace
				}
				if !listed[module.Path+"@"+module.Version] {
					t.Errorf("the SBOM does not list %s@%s, which the binary was built with", module.Path, module.Version)
				}
			}
		})
	}
}

// TestArchivedBinaryPrintsItsVersion runs the linux/amd64 archive's logbench: version and
// --version print the stamped version and commit.
func TestArchivedBinaryPrintsItsVersion(t *testing.T) {
	r := stamped(t)
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		testenv.Missing(t, "the linux/amd64 binary cannot run on %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	binary := filepath.Join(unpack(t, filepath.Join(r.dist, r.archive("linux", "amd64"))), "logbench")
	for _, args := range []string{"version", "--version"} {
		output, err := exec.Command(binary, args).CombinedOutput()
		if err != nil {
			t.Fatalf("logbench %s: %v\n%s", args, err, output)
		}
		for _, line := range []string{"version: " + r.version + "\n", "commit: " + r.commit + "\n", "built: 20"} {
			if !strings.Contains(string(output), line) {
				t.Errorf("logbench %s printed\n%s\nwithout %q", args, output, line)
			}
		}
	}
}

// krewManifest is the part of a krew Plugin (krew.googlecontainertools.github.com/v1alpha2)
// that installs it.
type krewManifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		ShortDescription string `json:"shortDescription"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			Sha256 string `json:"sha256"`
			Bin    string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

// TestKrewManifest checks that the krew manifest installs `kubectl logbench` from the
// release's archive of each platform, with the sha256 checksums.txt gives it.
func TestKrewManifest(t *testing.T) {
	r := stamped(t)
	data, err := os.ReadFile(filepath.Join(r.dist, "krew", "logbench.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var manifest krewManifest
	if err := yaml.Unmarshal(data, &manifest); err != nil {
		t.Fatal(err)
	}
	if manifest.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || manifest.Kind != "Plugin" ||
		manifest.Metadata.Name != "logbench" || manifest.Spec.Version != "v"+r.version ||
		manifest.Spec.ShortDescription == "" {
		t.Errorf("the manifest is %s %s %s at %s (%q), want a Plugin logbench at v%s with a short description",
			manifest.APIVersion, manifest.Kind, manifest.Metadata.Name, manifest.Spec.Version,
			manifest.Spec.ShortDescription, r.version)
	}
	sums := r.checksums(t)
	got, want := make([]string, 0, len(manifest.Spec.Platforms)), make([]string, 0, len(r.platforms))
	for _, platform := range manifest.Spec.Platforms {
		got = append(got, fmt.Sprintf("%s/%s %s %s %s", platform.Selector.MatchLabels["os"],
			platform.Selector.MatchLabels["arch"], platform.URI, platform.Sha256, platform.Bin))
	}
	for _, platform := range r.platforms {
		name := r.archive(platform.os, platform.arch)
		want = append(want, fmt.Sprintf("%s/%s https://github.com/logbench/logbench/releases/download/v%s/%s %s logbench",
			platform.os, platform.arch, r.version, name, sums[name]))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the manifest's platforms are\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestPackagedChart renders the chart make dist packaged: it is the release's version,
// every container it renders runs the release's image, the operator's included as the
// agent Jobs' image, and every pod template pulls with the chart's imagePullSecrets,
// which the operator receives for the pods it creates.
func TestPackagedChart(t *testing.T) {
	r := stamped(t)
	helm := testenv.ProjectBinary(t, "helm", "make helm")
	chart := filepath.Join(r.dist, "logbench-"+r.version+".tgz")
	metadata := runHelm(t, helm, "show", "chart", chart)
	for _, line := range []string{"version: " + r.version + "\n", "appVersion: " + r.version + "\n"} {
		if !strings.Contains(metadata, line) {
			t.Errorf("the packaged chart's Chart.yaml has no %q:\n%s", strings.TrimSpace(line), metadata)
		}
	}
	image := "ghcr.io/logbench/logbench:" + r.version
	manifest := runHelm(t, helm, "template", "logbench", chart, "--namespace", "logbench-system",
		"--set", "imagePullSecrets[0].name=registry")
	objects, err := testenv.DecodeManifest(strings.NewReader(manifest))
	if err != nil {
		t.Fatal(err)
	}
	podTemplates := 0
	for _, object := range objects {
		pod, found, err := unstructured.NestedMap(object.Object, podSpecPath(object.GetKind())...)
		if err != nil || !found {
			continue
		}
		podTemplates++
		where := object.GetKind() + " " + object.GetName()
		secrets, _, _ := unstructured.NestedSlice(pod, "imagePullSecrets")
		if fmt.Sprint(secrets) != "[map[name:registry]]" {
			t.Errorf("%s pulls with %v, want the Secret registry", where, secrets)
		}
		for _, field := range []string{"initContainers", "containers"} {
			containers, _, _ := unstructured.NestedSlice(pod, field)
			for _, item := range containers {
				container, _ := item.(map[string]any)
				if container["image"] != image {
					t.Errorf("%s: container %v runs %v, want %s", where, container["name"], container["image"], image)
				}
				if container["name"] == "manager" {
					checkOperator(t, container, image)
				}
			}
		}
	}
	if podTemplates == 0 {
		t.Error("the chart rendered no pod template")
	}
}

// checkOperator checks that the operator hands its image and the pull secrets to the
// pods it creates.
func checkOperator(t *testing.T, container map[string]any, image string) {
	t.Helper()
	args, _, _ := unstructured.NestedStringSlice(container, "args")
	if !slices.Contains(args, "--image-pull-secrets=registry") {
		t.Errorf("the operator's arguments %q do not pass the pull secret registry", args)
	}
	env, _, _ := unstructured.NestedSlice(container, "env")
	for _, item := range env {
		variable, _ := item.(map[string]any)
		if variable["name"] == "LOGBENCH_AGENT_IMAGE" && variable["value"] != image {
			t.Errorf("the agent Jobs run %v, want %s", variable["value"], image)
		}
	}
}

// podSpecPath is where an object of kind holds its pod spec.
func podSpecPath(kind string) []string {
	switch kind {
	case "Pod":
		return []string{"spec"}
	case "CronJob":
		return []string{"spec", "jobTemplate", "spec", "template", "spec"}
	}
	return []string{"spec", "template", "spec"}
}

func runHelm(t *testing.T, helm string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helm, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, &stderr)
	}
	return stdout.String()
}

// unpack extracts a .tar.gz archive of regular files into a temporary folder.
func unpack(t *testing.T, archive string) string {
	t.Helper()
	file, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = file.Close() }()
	compressed, err := gzip.NewReader(file)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	reader := tar.NewReader(compressed)
	for {
		header, err := reader.Next()
		if errors.Is(err, io.EOF) {
			return dir
		}
		if err != nil {
			t.Fatal(err)
		}
		if header.Typeflag != tar.TypeReg || strings.Contains(header.Name, "/") {
			t.Fatalf("%s holds %s, not a file at its top", archive, header.Name)
		}
		out, err := os.OpenFile(filepath.Join(dir, header.Name), os.O_CREATE|os.O_WRONLY, header.FileInfo().Mode())
		if err != nil {
			t.Fatal(err)
		}
		_, copyErr := io.Copy(out, reader)
		if err := errors.Join(copyErr, out.Close()); err != nil {
			t.Fatal(err)
		}
	}
}
