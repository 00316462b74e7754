// Package supplychain_test keeps the release's supply chain as docs/releases.md describes
// it: the workflows run actions pinned by commit and images pinned by digest, keep no
// credentials in their checkouts, and build the release in a job that cannot publish;
// the release signs checksums.txt and attests its provenance; goreleaser writes the
// archives' SBOMs; the Dockerfile's base images are pinned by digest, the golang ones at
// go.mod's Go release; and make lint runs zizmor offline.
package supplychain_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/logbench/logbench/internal/shipping"

	"github.com/logbench/logbench/internal/testenv"
)

// workflow is the part of a GitHub Actions workflow these tests read.
type workflow struct {
	Permissions any            `json:"permissions"`
	Jobs        map[string]job `json:"jobs"`
}

type job struct {
	Permissions any            `json:"permissions"`
	Needs       any            `json:"needs"`
	Uses        string         `json:"uses"`
	Container   any            `json:"container"`
	Services    map[string]any `json:"services"`
	Steps       []step         `json:"steps"`
}

type step struct {
	Name string         `json:"name"`
	ID   string         `json:"id"`
	Uses string         `json:"uses"`
	Run  string         `json:"run"`
	With map[string]any `json:"with"`
	Env  map[string]any `json:"env"`
}

// workflows reads every workflow of .github/workflows, by file name, with its text.
func workflows(t *testing.T) (map[string]workflow, map[string]string) {
	t.Helper()
	dir := filepath.Join(testenv.Root(t), ".github", "workflows")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	parsed, texts := map[string]workflow{}, map[string]string{}
	for _, entry := range entries {
		if ext := filepath.Ext(entry.Name()); ext != ".yaml" && ext != ".yml" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, entry.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var w workflow
		if err := yaml.Unmarshal(data, &w); err != nil {
			t.Fatalf("%s: %v", entry.Name(), err)
		}
		if len(w.Jobs) == 0 {
			t.Fatalf("%s has no jobs", entry.Name())
		}
		parsed[entry.Name()], texts[entry.Name()] = w, string(data)
	}
	if len(parsed) == 0 {
		t.Fatalf("no workflow in %s", dir)
	}
	return parsed, texts
}

var (
	// pinnedAction is a remote action or reusable workflow at a full commit, the release
	// it is as a comment: "owner/repo[/path]@<40 hex> # v1.2.3".
	pinnedAction = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(/[^@\s]+)?@[0-9a-f]{40} # v[0-9][0-9A-Za-z.+-]*$`)
	// pinnedImage is an image reference with a sha256 digest.
	pinnedImage = regexp.MustCompile(`^[^\s@]+@sha256:[0-9a-f]{64}$`)
	usesLine    = regexp.MustCompile(`^\s*(?:-\s+)?uses:\s*(.*?)\s*$`)
)

// TestActionsArePinnedByCommit checks that every action and reusable workflow the
// workflows use is pinned to a commit, with the release it is as a comment: a tag or
// a branch can be moved to other code, a commit cannot.
func TestActionsArePinnedByCommit(t *testing.T) {
	parsed, texts := workflows(t)
	for name, text := range texts {
		found := 0
		for number, line := range strings.Split(text, "\n") {
			match := usesLine.FindStringSubmatch(line)
			if match == nil {
				continue
			}
			found++
			reference := strings.Trim(match[1], `"'`)
			if strings.HasPrefix(reference, "./") {
				continue
			}
			if image, ok := strings.CutPrefix(reference, "docker://"); ok {
				if !pinnedImage.MatchString(image) {
					t.Errorf("%s:%d: %s is not pinned by digest", name, number+1, reference)
				}
				continue
			}
			if !pinnedAction.MatchString(match[1]) {
				t.Errorf("%s:%d: %q is not owner/repo@<commit> # <release>", name, number+1, match[1])
			}
		}
		// Every uses the YAML holds is on a line of its own that the loop read.
		uses := 0
		for _, j := range parsed[name].Jobs {
			if j.Uses != "" {
				uses++
			}
			for _, s := range j.Steps {
				if s.Uses != "" {
					uses++
				}
			}
		}
		if uses != found {
			t.Errorf("%s: %d uses in its jobs, %d uses: lines read", name, uses, found)
		}
	}
}

// TestCheckoutsKeepNoCredentials checks that every checkout sets persist-credentials:
// false: otherwise the job's token stays in .git/config for every later step, and for
// any artifact that uploads the work tree.
func TestCheckoutsKeepNoCredentials(t *testing.T) {
	parsed, _ := workflows(t)
	checkouts := 0
	for name, w := range parsed {
		for jobName, j := range w.Jobs {
			for i, s := range j.Steps {
				if !strings.HasPrefix(s.Uses, "actions/checkout@") {
					continue
				}
				checkouts++
				if value := fmt.Sprint(s.With["persist-credentials"]); value != "false" {
					t.Errorf("%s: job %s, step %d: checkout with persist-credentials %s, want false", name, jobName, i+1, value)
				}
			}
		}
	}
	if checkouts == 0 {
		t.Error("no workflow checks out the repository")
	}
}

// TestImagesArePinnedByDigest checks that every job container and service image is
// pinned by digest.
func TestImagesArePinnedByDigest(t *testing.T) {
	parsed, _ := workflows(t)
	for name, w := range parsed {
		for jobName, j := range w.Jobs {
			images := map[string]any{"container": j.Container}
			for service, spec := range j.Services {
				images["service "+service] = spec
			}
			for what, spec := range images {
				image := spec
				if fields, ok := spec.(map[string]any); ok {
					image = fields["image"]
				}
				if image == nil {
					continue
				}
				if !pinnedImage.MatchString(fmt.Sprint(image)) {
					t.Errorf("%s: job %s: %s %v is not pinned by digest", name, jobName, what, image)
				}
			}
		}
	}
}

// permissions reads a permissions value: a map of scope to access, or one of read-all,
// write-all; nil when unset.
func permissions(value any) map[string]string {
	switch v := value.(type) {
	case nil:
		return nil
	case string:
		return map[string]string{"*": strings.TrimSuffix(v, "-all")}
	case map[string]any:
		scopes := map[string]string{}
		for scope, access := range v {
			scopes[scope] = fmt.Sprint(access)
		}
		return scopes
	}
	return map[string]string{"?": fmt.Sprint(value)}
}

func writes(scopes map[string]string) []string {
	var written []string
	for scope, access := range scopes {
		if access == "write" {
			written = append(written, scope)
		}
	}
	slices.Sort(written)
	return written
}

// TestPermissionsAreExplicit checks that every workflow sets its token's permissions,
// none writes at the workflow level, and only the release's publish job writes.
func TestPermissionsAreExplicit(t *testing.T) {
	parsed, _ := workflows(t)
	for name, w := range parsed {
		if w.Permissions == nil {
			t.Errorf("%s sets no permissions: the token would get the repository's defaults", name)
		}
		if written := writes(permissions(w.Permissions)); len(written) > 0 {
			t.Errorf("%s writes %v for every job", name, written)
		}
		for jobName, j := range w.Jobs {
			written := writes(permissions(j.Permissions))
			if len(written) > 0 && (name != "release.yaml" || jobName != "publish") {
				t.Errorf("%s: job %s writes %v", name, jobName, written)
			}
		}
	}
}

// runs joins the run scripts of a job's steps.
func runs(j job) string {
	scripts := make([]string, 0, len(j.Steps))
	for _, s := range j.Steps {
		scripts = append(scripts, s.Run)
	}
	return strings.Join(scripts, "\n")
}

func uses(j job, action string) bool {
	return slices.ContainsFunc(j.Steps, func(s step) bool { return strings.HasPrefix(s.Uses, action+"@") })
}

// TestReleaseBuildsWithoutWriteAccess checks the release workflow's split: the jobs
// that run the project's code and build what a release ships (build, and release-images
// for logbench_counter's and rsyslog's images) read the repository and nothing more; the
// publish job, which holds the write permissions, builds none of it, only downloads
// their artifacts and publishes, signs and attests them.
func TestReleaseBuildsWithoutWriteAccess(t *testing.T) {
	parsed, _ := workflows(t)
	release, ok := parsed["release.yaml"]
	if !ok {
		t.Fatal("no release.yaml")
	}
	publish := release.Jobs["publish"]
	builds := map[string][]string{
		"build":          {"make test-dist ", "make docker-buildx "},
		"release-images": {"make release-images "},
	}
	for name, targets := range builds {
		j, ok := release.Jobs[name]
		if !ok {
			t.Errorf("release.yaml has no job %s", name)
			continue
		}
		if got := permissions(j.Permissions); fmt.Sprint(got) != "map[contents:read]" {
			t.Errorf("the %s job's permissions are %v, want contents: read only", name, got)
		}
		if !uses(j, "actions/upload-artifact") {
			t.Errorf("the %s job does not hand what it built to the publish job through a workflow artifact", name)
		}
		for _, target := range targets {
			if !strings.Contains(runs(j), target) {
				t.Errorf("the %s job does not run %s", name, strings.TrimSpace(target))
			}
			if strings.Contains(runs(publish), target) {
				t.Errorf("the publish job runs %s", strings.TrimSpace(target))
			}
		}
	}
	build := release.Jobs["build"]
	if !strings.Contains(runs(build), "DIST_SBOMS=true") {
		t.Error("the build job does not ask make dist for the archives' SBOMs (DIST_SBOMS=true)")
	}
	if !uses(publish, "actions/download-artifact") {
		t.Error("the publish job downloads no workflow artifact")
	}
	if fmt.Sprint(publish.Needs) != "[build release-images]" {
		t.Errorf("the publish job needs %v, want [build, release-images]", publish.Needs)
	}
	want := []string{"attestations", "contents", "id-token", "packages"}
	if got := writes(permissions(publish.Permissions)); !slices.Equal(got, want) {
		t.Errorf("the publish job writes %v, want %v", got, want)
	}
	script := runs(publish)
	for _, command := range []string{"cosign sign --yes", "cosign sign-blob --yes", "checksums.txt.sigstore.json", ".sbom.json", "gh release create",
		"${RUNNER_TEMP}/release-images"} {
		if !strings.Contains(script, command) {
			t.Errorf("the publish job does not run %q", command)
		}
	}
	if !uses(publish, "actions/attest") && !uses(publish, "actions/attest-build-provenance") {
		t.Error("the publish job attests no build provenance")
	}
	for jobName, j := range release.Jobs {
		for _, s := range j.Steps {
			if strings.HasPrefix(s.Uses, "actions/setup-go@") && fmt.Sprint(s.With["cache"]) != "false" {
				t.Errorf("job %s restores setup-go's cache, which another run could have filled", jobName)
			}
			if strings.HasPrefix(s.Uses, "actions/cache@") {
				t.Errorf("job %s restores a cache, which another run could have filled", jobName)
			}
		}
	}
}

// sbomConfig is the part of a goreleaser sboms entry TestGoreleaserWritesSBOMs reads.
type sbomConfig struct {
	Artifacts string `json:"artifacts"`
	Cmd       string `json:"cmd"`
}

// TestGoreleaserWritesSBOMs checks that goreleaser catalogs every archive with syft.
func TestGoreleaserWritesSBOMs(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testenv.Root(t), ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var config struct {
		SBOMs []sbomConfig `json:"sboms"`
	}
	if err := yaml.Unmarshal(data, &config); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(config.SBOMs, func(s sbomConfig) bool { return s.Artifacts == "archive" && s.Cmd == "syft" }) {
		t.Errorf(".goreleaser.yaml's sboms are %+v, want syft on every archive", config.SBOMs)
	}
}

// TestDockerfileBaseImagesArePinned checks that every stage of the Dockerfiles starts
// from an image pinned by digest (a build argument's default counts), or from an earlier
// stage, and that the bases the release builds its other images on (images/images.txt)
// are pinned too.
func TestDockerfileBaseImagesArePinned(t *testing.T) {
	files := []string{"Dockerfile"}
	for _, image := range releaseImages(t) {
		if file := filepath.Join("images", image.folder, "Dockerfile"); !slices.Contains(files, file) {
			files = append(files, file)
		}
	}
	for _, file := range files {
		data, err := os.ReadFile(filepath.Join(testenv.Root(t), file))
		if err != nil {
			t.Fatal(err)
		}
		arguments := map[string]string{}
		stages := map[string]bool{}
		froms := 0
		for line := range strings.SplitSeq(string(data), "\n") {
			fields := strings.Fields(line)
			if len(fields) < 2 {
				continue
			}
			switch strings.ToUpper(fields[0]) {
			case "ARG":
				if name, value, ok := strings.Cut(fields[1], "="); ok && froms == 0 {
					arguments[name] = value
				}
			case "FROM":
				froms++
				fields = slices.DeleteFunc(fields[1:], func(field string) bool { return strings.HasPrefix(field, "--") })
				image := os.Expand(fields[0], func(name string) string { return arguments[name] })
				if !stages[image] && image != "scratch" && !pinnedImage.MatchString(image) {
					t.Errorf("%s builds FROM %s (%s), not pinned by digest", file, fields[0], image)
				}
				if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
					stages[fields[2]] = true
				}
			}
		}
		if froms == 0 {
			t.Errorf("%s has no FROM", file)
		}
	}
	for _, image := range releaseImages(t) {
		if !pinnedImage.MatchString(image.base) {
			t.Errorf("images/images.txt builds %s FROM %s, not pinned by digest", image.tag, image.base)
		}
	}
}

// releaseImage is a line of images/images.txt.
type releaseImage struct{ folder, context, target, tag, base string }

// releaseImages reads images/images.txt, the images a release builds beside the
// operator's.
func releaseImages(t *testing.T) []releaseImage {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.Root(t), "images", "images.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var images []releaseImage
	for line := range strings.SplitSeq(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if len(fields) != 5 {
			t.Fatalf("images/images.txt: %q is not <folder> <context> <target> <tag> <base>", line)
		}
		images = append(images, releaseImage{folder: fields[0], context: fields[1], target: fields[2], tag: fields[3], base: fields[4]})
	}
	if len(images) == 0 {
		t.Fatal("images/images.txt names no image")
	}
	return images
}

// TestGoImagesHoldGoModsGo checks that the golang images the Dockerfile and CI build in
// are tagged with go.mod's Go release: they set GOTOOLCHAIN=local, so an older one fails
// the build, and a pin by digest does not follow go.mod by itself.
func TestGoImagesHoldGoModsGo(t *testing.T) {
	dir := testenv.Root(t)
	goMod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	version := regexp.MustCompile(`(?m)^go ([0-9.]+)$`).FindSubmatch(goMod)
	if version == nil {
		t.Fatal("go.mod has no go line")
	}
	want := regexp.MustCompile(`golang:` + regexp.QuoteMeta(string(version[1])) + `-[a-z]+@sha256:[0-9a-f]{64}`)
	for _, file := range []string{"Dockerfile", filepath.Join(".github", "workflows", "ci.yaml")} {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		images := regexp.MustCompile(`golang:[^\s"']+`).FindAll(data, -1)
		if len(images) == 0 {
			t.Errorf("%s names no golang image", file)
		}
		for _, image := range images {
			if !want.Match(image) {
				t.Errorf("%s builds in %s, want golang:%s-<debian>@sha256:<index digest>", file, image, version[1])
			}
		}
	}
}

// TestLintRunsZizmorOffline checks that make lint audits the workflows with zizmor,
// offline: its online audits would need a GitHub token and the network.
func TestLintRunsZizmorOffline(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testenv.Root(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	recipe := regexp.MustCompile(`(?ms)^lint:[^\n]*\n((?:\t[^\n]*\n)+)`).FindSubmatch(data)
	if recipe == nil {
		t.Fatal("the Makefile has no lint target")
	}
	if !regexp.MustCompile(`(?m)^\t\$\(ZIZMOR\) (.* )?--offline( |$)`).Match(recipe[1]) {
		t.Errorf("make lint does not run $(ZIZMOR) --offline:\n%s", recipe[1])
	}
}

// releaseImageRegistry is the registry the release pushes images/images.txt's images to,
// the Makefile's RELEASE_IMAGE_REGISTRY.
func releaseImageRegistry(t *testing.T) string {
	t.Helper()
	makefile, err := os.ReadFile(filepath.Join(testenv.Root(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	registry := regexp.MustCompile(`(?m)^RELEASE_IMAGE_REGISTRY \?= (\S+)$`).FindSubmatch(makefile)
	if registry == nil {
		t.Fatal("the Makefile sets no RELEASE_IMAGE_REGISTRY")
	}
	return string(registry[1])
}

// TestChartAdmitsReleaseImages checks that the chart's default allowedImages admit every
// image the release publishes beside the operator's (imageName, extensionImage,
// shipper.image), and that the Rsyslog receiver's default is the image it publishes.
func TestChartAdmitsReleaseImages(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testenv.Root(t), "charts", "logbench", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		AllowedImages []string `json:"allowedImages"`
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	registry := releaseImageRegistry(t)
	for _, image := range releaseImages(t) {
		reference := registry + "/" + strings.ReplaceAll(image.tag, "VERSION", "1.2.3")
		if !slices.ContainsFunc(values.AllowedImages, func(prefix string) bool { return strings.HasPrefix(reference, prefix) }) {
			t.Errorf("the chart's allowedImages %v do not admit %s", values.AllowedImages, reference)
		}
	}
	if !slices.ContainsFunc(releaseImages(t), func(image releaseImage) bool {
		return registry+"/"+image.tag == shipping.RsyslogImage
	}) {
		t.Errorf("the Rsyslog receiver's default image %s is not one images/images.txt builds", shipping.RsyslogImage)
	}
}

// TestReleaseImagesBuildEachLine runs make release-images with a stand-in for docker that
// records its arguments: each line of images/images.txt is built once, with its folder's
// Dockerfile, for its target on its base, from its context, into a layout that
// DIR/images.txt names with the release's reference.
func TestReleaseImagesBuildEachLine(t *testing.T) {
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	tool := filepath.Join(dir, "docker")
	// The stand-in writes the layout buildx's --output names, as buildx would.
	script := "#!/bin/sh\necho \"$@\" >> " + calls + "\n" +
		"for arg; do case \"$arg\" in type=oci,dest=*) : > \"${arg#type=oci,dest=}\" ;; esac; done\n"
	if err := os.WriteFile(tool, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cmd := exec.Command("make", "--no-print-directory", "release-images", "VERSION=1.2.3",
		"CONTAINER_TOOL="+tool, "RELEASE_IMAGES_DIR="+out, "PLATFORMS=linux/amd64,linux/arm64")
	cmd.Dir = testenv.Root(t)
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make release-images: %v\n%s", err, output)
	}
	recorded, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	listed, err := os.ReadFile(filepath.Join(out, "images.txt"))
	if err != nil {
		t.Fatal(err)
	}
	builds := regexp.MustCompile(`(?m)^buildx build .*$`).FindAllString(string(recorded), -1)
	lines := strings.Split(strings.TrimSpace(string(listed)), "\n")
	images := releaseImages(t)
	if len(builds) != len(images) || len(lines) != len(images) {
		t.Fatalf("%d images in images/images.txt, %d built, %d listed:\n%s\n%s",
			len(images), len(builds), len(lines), recorded, listed)
	}
	registry := releaseImageRegistry(t)
	for i, image := range images {
		for _, want := range []string{"--platform linux/amd64,linux/arm64", "--target " + image.target,
			"--build-arg BASE=" + image.base, filepath.Join("images", image.folder, "Dockerfile"),
			" " + filepath.Join(testenv.Root(t), image.context)} {
			if !strings.Contains(builds[i], want) {
				t.Errorf("the build of %s does not pass %q: %s", image.tag, want, builds[i])
			}
		}
		layout, reference, _ := strings.Cut(lines[i], " ")
		if want := registry + "/" + strings.ReplaceAll(image.tag, "VERSION", "1.2.3"); reference != want {
			t.Errorf("images.txt names %s, want %s", reference, want)
		}
		if !strings.Contains(builds[i], "type=oci,dest="+filepath.Join(out, layout)) {
			t.Errorf("images.txt names the layout %s, which the build of %s does not write: %s", layout, image.tag, builds[i])
		}
	}
}
