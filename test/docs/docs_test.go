// Package docs_test keeps the documentation true: every relative link and anchor of
// README.md and docs/ resolves, and every command block the docs mark as runnable is run
// by a test or by CI.
package docs_test

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"

	"github.com/logbench/logbench/internal/testenv"
)

// runnableInfo is the info string of a command block that the docs promise works as
// written: "```sh runnable". Every such block must be in runners.
const runnableInfo = "runnable"

// runner says where a runnable block is run: file, relative to the repository's root,
// must contain evidence, the command (or the sample) as that file runs it.
type runner struct {
	file, evidence string
}

// runners maps each runnable block, its lines joined with "\n", to what runs it. A
// block added to the docs with the runnable marker fails TestRunnableBlocksAreRun until
// it is listed here with the test or script that runs it.
var runners = map[string]runner{
	// .ci/run installs these packages when they are missing, then runs make ci, whose
	// first phase is make test.
	"sudo apt-get install -y etcd-server postgresql postgresql-server-dev-15 libkrb5-dev rsyslog chromium python3-pip unzip jq && make test": {
		file: "Makefile", evidence: "$(call side-by-side,test check lint,e2e-up)",
	},
	// TestQuickSample runs the local benchmark of config/samples/quick.yaml with the
	// distribution's PostgreSQL, through the runner `logbench run --local` calls.
	"sudo apt-get install -y postgresql && go run ./cmd/logbench run --local -f config/samples/quick.yaml": {
		file: "internal/localrun/localrun_test.go", evidence: `"config", "samples", "quick.yaml"`,
	},
}

// markdownFiles returns README.md and every Markdown file under docs/, relative to root.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, entry os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !entry.IsDir() && strings.HasSuffix(path, ".md") {
			relative, err := filepath.Rel(root, path)
			files = append(files, relative)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// document is a parsed Markdown file: its heading anchors, links and command blocks.
type document struct {
	anchors  map[string]bool
	links    []string
	runnable []string
	// prose is the text outside code: code spans and blocks quote logs and outputs.
	prose strings.Builder
}

var markdown = goldmark.New(goldmark.WithExtensions(extension.GFM))

func parse(t *testing.T, path string) *document {
	t.Helper()
	source, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	parsed := &document{anchors: map[string]bool{}}
	slugs := map[string]int{}
	root := markdown.Parser().Parse(text.NewReader(source))
	err = ast.Walk(root, func(node ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch node := node.(type) {
		case *ast.CodeSpan:
			return ast.WalkSkipChildren, nil
		case *ast.Text:
			parsed.prose.Write(node.Segment.Value(source))
			parsed.prose.WriteByte('\n')
		case *ast.Heading:
			parsed.anchors[githubAnchor(plainText(node, source), slugs)] = true
		case *ast.Link:
			parsed.links = append(parsed.links, string(node.Destination))
		case *ast.Image:
			parsed.links = append(parsed.links, string(node.Destination))
		case *ast.FencedCodeBlock:
			if node.Info != nil && slices.Contains(strings.Fields(string(node.Info.Value(source))), runnableInfo) {
				parsed.runnable = append(parsed.runnable, strings.TrimSpace(string(node.Lines().Value(source))))
			}
		}
		return ast.WalkContinue, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return parsed
}

// plainText is a heading's text as GitHub slugs it: its text and code spans, without
// the markup.
func plainText(node ast.Node, source []byte) string {
	var buffer bytes.Buffer
	_ = ast.Walk(node, func(child ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch child := child.(type) {
		case *ast.Text:
			buffer.Write(child.Segment.Value(source))
		case *ast.String:
			buffer.Write(child.Value)
		}
		return ast.WalkContinue, nil
	})
	return buffer.String()
}

// githubAnchor returns the anchor GitHub gives a heading: lower case, punctuation other
// than '-' and '_' removed, spaces made '-', and "-1", "-2"... after a repeated one.
func githubAnchor(heading string, seen map[string]int) string {
	var slug strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			slug.WriteRune(r)
		case r == ' ':
			slug.WriteRune('-')
		}
	}
	anchor := slug.String()
	count := seen[anchor]
	seen[anchor]++
	if count > 0 {
		return fmt.Sprintf("%s-%d", anchor, count)
	}
	return anchor
}

var external = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

// TestLinksResolve checks every relative link of README.md and docs/: its file or folder
// exists, and its anchor, if any, is a heading of the Markdown file it points at.
func TestLinksResolve(t *testing.T) {
	root := testenv.Root(t)
	documents := map[string]*document{}
	parsed := func(path string) *document {
		if _, ok := documents[path]; !ok {
			documents[path] = parse(t, filepath.Join(root, path))
		}
		return documents[path]
	}
	files := markdownFiles(t, root)
	checked := 0
	for _, file := range files {
		for _, link := range parsed(file).links {
			if external.MatchString(link) {
				continue
			}
			checked++
			target, fragment, _ := strings.Cut(link, "#")
			unescaped, err := url.PathUnescape(target)
			if err != nil {
				t.Errorf("%s: link %q: %v", file, link, err)
				continue
			}
			targetFile := file
			if unescaped != "" {
				targetFile = filepath.Join(filepath.Dir(file), filepath.FromSlash(unescaped))
				if strings.HasPrefix(targetFile, "..") {
					t.Errorf("%s: link %q leaves the repository", file, link)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, targetFile)); err != nil {
					t.Errorf("%s: link %q: %s does not exist", file, link, targetFile)
					continue
				}
			}
			if fragment == "" {
				continue
			}
			if !strings.HasSuffix(targetFile, ".md") {
				t.Errorf("%s: link %q has an anchor into a file that is not Markdown", file, link)
				continue
			}
			if !parsed(targetFile).anchors[fragment] {
				t.Errorf("%s: link %q: %s has no heading with anchor #%s", file, link, targetFile, fragment)
			}
		}
	}
	if checked == 0 {
		t.Fatalf("no relative link found in %v: the parser found none", files)
	}
	t.Logf("%d relative links checked in %d files", checked, len(files))
}

// TestRunnableBlocksAreRun checks that every command block marked runnable is run by the
// test or script runners names, and that runners lists no block the docs dropped.
func TestRunnableBlocksAreRun(t *testing.T) {
	root := testenv.Root(t)
	found := map[string]bool{}
	for _, file := range markdownFiles(t, root) {
		for _, block := range parse(t, filepath.Join(root, file)).runnable {
			found[block] = true
			run, ok := runners[block]
			if !ok {
				t.Errorf("%s: the runnable block\n%s\nis run by no test known to test/docs: add it to runners "+
					"with the test or script that runs it, or drop the %q marker", file, block, runnableInfo)
				continue
			}
			content, err := os.ReadFile(filepath.Join(root, run.file))
			if err != nil {
				t.Errorf("%s: the runner of\n%s\n: %v", file, block, err)
				continue
			}
			if !strings.Contains(string(content), run.evidence) {
				t.Errorf("%s: %s no longer contains %q, so nothing shows it runs\n%s", file, run.file, run.evidence, block)
			}
		}
	}
	for block := range runners {
		if !found[block] {
			t.Errorf("runners lists a block no document marks runnable:\n%s", block)
		}
	}
}

func TestGitHubAnchor(t *testing.T) {
	seen := map[string]int{}
	for heading, want := range map[string]string{
		"Start here (Debian or Ubuntu)":                    "start-here-debian-or-ubuntu",
		"Finding the knee: spec.workload.ramp":             "finding-the-knee-specworkloadramp",
		"Prometheus, alerts and Grafana":                   "prometheus-alerts-and-grafana",
		"Shipping destinations (FluentBitSidecar, Loki)":   "shipping-destinations-fluentbitsidecar-loki",
		"logbench run --local":                             "logbench-run---local",
		"Files, stdout, a sidecar or a node agent?":        "files-stdout-a-sidecar-or-a-node-agent",
		"LoggingBenchmark (bench.logbench.io/v1alpha1)":    "loggingbenchmark-benchlogbenchiov1alpha1",
		"What the server and the shipper spend":            "what-the-server-and-the-shipper-spend",
		"kind, with or without registries":                 "kind-with-or-without-registries",
		"Reading the overhead":                             "reading-the-overhead",
		"snake_case stays":                                 "snake_case-stays",
		"Ünïcode letters stay":                             "ünïcode-letters-stay",
		"Two  spaces":                                      "two--spaces",
		"Trailing punctuation!":                            "trailing-punctuation",
		"Numbers 1.30.0 and #10815":                        "numbers-1300-and-10815",
		"A heading (with a parenthesis) and `code`":        "a-heading-with-a-parenthesis-and-code",
		"CloudNativePG's stdout sampling":                  "cloudnativepgs-stdout-sampling",
		"≤ 200 lines":                                      "-200-lines",
		"Measuring your existing logging pipeline":         "measuring-your-existing-logging-pipeline",
		"The e2e suite on a real cluster":                  "the-e2e-suite-on-a-real-cluster",
		"How logbench counts records":                      "how-logbench-counts-records",
		"Adding a destination type or a shipper":           "adding-a-destination-type-or-a-shipper",
		"Prometheus, alerts and Grafana (kube-prometheus)": "prometheus-alerts-and-grafana-kube-prometheus",
	} {
		if got := githubAnchor(heading, seen); got != want {
			t.Errorf("githubAnchor(%q) = %q, want %q", heading, got, want)
		}
	}
	repeated := map[string]int{}
	for i, want := range []string{"examples", "examples-1", "examples-2"} {
		if got := githubAnchor("Examples", repeated); got != want {
			t.Errorf("heading %d named Examples: anchor %q, want %q", i+1, got, want)
		}
	}
}

// runDate is a calendar date, as a dated run would give it.
var runDate = regexp.MustCompile(`\b20[0-9]{2}-[01][0-9]-[0-3][0-9]\b`)

// TestUserPagesHoldNoDatesOfRuns checks that the pages users read state figures with
// their conditions, not the day of a run: dated runs and CI timelines belong in
// docs/development.md. Quoted logs and outputs (code, docs/examples) keep theirs.
func TestUserPagesHoldNoDatesOfRuns(t *testing.T) {
	root := testenv.Root(t)
	for _, file := range markdownFiles(t, root) {
		if file == filepath.Join("docs", "development.md") || strings.HasPrefix(file, filepath.Join("docs", "examples")) {
			continue
		}
		if date := runDate.FindString(parse(t, filepath.Join(root, file)).prose.String()); date != "" {
			t.Errorf("%s: %s is the date of a run: give the run's conditions (machine, versions, settings) "+
				"instead, and keep dated runs in docs/development.md", file, date)
		}
	}
}

// troubleshootingTables are the sections of docs/troubleshooting.md that name their tests
// in a table column rather than in their prose.
var troubleshootingTables = []string{"What logbench guarantees when things break"}

var (
	namedTest = regexp.MustCompile("`(Test[A-Z][A-Za-z0-9_]*)`")
	namedSpec = regexp.MustCompile(`specs? ((?:"[^"]+"(?:, | and | or )?)+)`)
	quoted    = regexp.MustCompile(`"([^"]+)"`)
)

// TestTroubleshootingNamesItsTests checks that every problem of docs/troubleshooting.md
// names a test that produces what it describes, and that each test it names exists: a
// Go test function in backquotes, or a Ginkgo spec in double quotes (the start of its
// text) after the word spec or specs.
func TestTroubleshootingNamesItsTests(t *testing.T) {
	root := testenv.Root(t)
	var tests strings.Builder
	err := filepath.WalkDir(root, func(path string, entry os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if entry.IsDir() && (entry.Name() == "bin" || strings.HasPrefix(entry.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			content, err := os.ReadFile(path)
			tests.Write(content)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	allTests := tests.String()
	source, err := os.ReadFile(filepath.Join(root, "docs", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := strings.Split(string(source), "\n## ")[1:]
	if len(sections) == 0 {
		t.Fatal("docs/troubleshooting.md has no section")
	}
	for _, section := range sections {
		heading, body, _ := strings.Cut(section, "\n")
		if slices.Contains(troubleshootingTables, heading) {
			continue
		}
		prose := strings.Join(strings.Fields(body), " ")
		named := 0
		for _, match := range namedTest.FindAllStringSubmatch(prose, -1) {
			named++
			if !strings.Contains(allTests, "func "+match[1]+"(") {
				t.Errorf("troubleshooting, %s: no test function %s", heading, match[1])
			}
		}
		for _, specs := range namedSpec.FindAllStringSubmatch(prose, -1) {
			for _, spec := range quoted.FindAllStringSubmatch(specs[1], -1) {
				named++
				if !strings.Contains(allTests, `"`+spec[1]) {
					t.Errorf("troubleshooting, %s: no spec whose text starts %q", heading, spec[1])
				}
			}
		}
		if named == 0 {
			t.Errorf("troubleshooting, %s: names no test that produces what it describes", heading)
		}
	}
}
