//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"

	"github.com/logbench/logbench/internal/testenv"
)

// installPathInfo marks the command blocks of docs/installation.md that make its install
// path: "```sh install-path". The install-path spec runs them in the page's order.
const installPathInfo = "install-path"

// installPathSample is the benchmark docs/installation.md's last step applies.
const installPathSample = "install-check"

// localRegistry is the made-up registry the local cluster's images are imported under.
const localRegistry = "logbench.local"

// localVariant is what the local cluster runs in place of a command of the install path,
// and why it differs there.
type localVariant struct {
	command, reason string
}

// localVariants maps each command of the install path that cannot run as written on the
// local cluster to what runs instead; every other command runs as written, the page's
// placeholders <registry> and the tag dev replaced by the image built here. A command
// listed here that the page no longer holds fails the spec.
var localVariants = map[string]localVariant{
	"kubectl apply --server-side -f https://raw.githubusercontent.com/cloudnative-pg/cloudnative-pg/release-1.30/releases/cnpg-1.30.0.yaml": {
		reason: "the local cluster runs CloudNativePG from this manifest already, with its operator image built " +
			"there (hack/local-cluster/up.sh): applying it would point the operator at an image no node holds",
	},
	"make docker-build IMG=logbench.local/logbench:dev": {
		command: "hack/images.sh logbench",
		reason:  "the local cluster has no Docker: hack/images.sh builds the image, tagged by its binary",
	},
	"kind load docker-image logbench.local/logbench:dev    # --name <cluster> for a cluster not named kind": {
		command: "hack/local-cluster/load.sh",
		reason:  "the local cluster is no kind cluster: load.sh imports the built images into its nodes",
	},
	"helm install logbench charts/logbench -n logbench-system --create-namespace --set image.repository=<registry>/logbench --set image.tag=dev": {
		command: "helm install logbench charts/logbench -n logbench-system --create-namespace " +
			"--set image.repository=<registry>/logbench --set image.tag=dev --set 'allowedImages={" + localRegistry + "/}'",
		reason: "the sample's PostgreSQL image is the local registry's, which the chart's default allowlist omits",
	},
	"kubectl apply -f config/samples/install-check.yaml": {
		command: "kubectl create --dry-run=client -o json -f config/samples/install-check.yaml | " +
			"jq --arg image \"$LOCAL_POSTGRES_IMAGE\" '.spec.postgres.imageName = $image' | kubectl apply -f -",
		reason: "CloudNativePG's default operand image is on ghcr.io, which the local cluster does not reach",
	},
}

// The install-path spec removes the suite's operator and installs it again as
// docs/installation.md says, so it runs alone, after every other spec (make e2e-suite);
// the other make targets leave it out by its label. It restores the suite's operator
// when it ends.
var _ = Describe("install path", Label("install-path"), Serial, func() {
	It("installs, checks and reports as docs/installation.md says, in its order", func(ctx SpecContext) {
		if os.Getenv("E2E_PROVIDER") != "" && os.Getenv("E2E_PROVIDER") != "local" {
			testenv.Missing(GinkgoTB(), "the install-path spec knows the local cluster's variants of the "+
				"image steps only: run it with E2E_PROVIDER=local")
		}
		if _, err := exec.LookPath("jq"); err != nil {
			testenv.Missing(GinkgoTB(), "the install-path spec sets the sample's image with jq: apt-get install jq")
		}
		root := testenv.Root(GinkgoTB())
		commands := installPathCommands(filepath.Join(root, "docs", "installation.md"))
		for command := range localVariants {
			Expect(commands).To(ContainElement(command),
				"localVariants maps a command docs/installation.md's install path no longer has")
		}

		suiteImage := operatorImage(ctx)
		monitoring := monitoringInstallFlags(ctx)
		DeferCleanup(func(ctx SpecContext) {
			_, _ = runShell(ctx, root, "kubectl delete lbench "+installPathSample+" --ignore-not-found --wait=true")
			installLogbench(ctx, suiteImage, monitoring...)
		})
		By("removing the suite's release, so that helm install runs as written")
		Expect(runShell(ctx, root, "helm uninstall logbench -n "+operatorNamespace+" --wait")).Error().NotTo(HaveOccurred())

		var placeholders *strings.Replacer
		for _, command := range commands {
			run := command
			if variant, ok := localVariants[command]; ok {
				if variant.command == "" {
					By("skipping `" + command + "`: " + variant.reason)
					continue
				}
				run = variant.command
			}
			if placeholders != nil {
				run = placeholders.Replace(run)
			}
			By("running `" + run + "`")
			output, err := runShell(ctx, root, run)
			Expect(err).NotTo(HaveOccurred())
			if strings.HasPrefix(command, "make docker-build") {
				image := strings.TrimSpace(output)
				Expect(image).To(HavePrefix(localRegistry+"/logbench:"), "images.sh prints the image it built")
				placeholders = strings.NewReplacer("<registry>/logbench:dev", image,
					"<registry>", localRegistry, "image.tag=dev", "image.tag="+image[strings.LastIndex(image, ":")+1:])
			}
			if strings.Contains(command, " report ") {
				Expect(output).To(ContainSubstring("csvlog"), "the report names the sample's destination")
				Expect(output).To(ContainSubstring("baseline"), "the report names the baseline")
			}
		}
		Expect(placeholders).NotTo(BeNil(), "the install path builds the image before it installs it")
		Expect(operatorImage(ctx)).To(HavePrefix(localRegistry+"/logbench:"), "the page's helm install ran")
	})
})

// installPathCommands returns the commands of the page's blocks marked install-path, in
// the page's order: a line continued with a backslash joined to the next, blank lines
// and comment lines left out.
func installPathCommands(page string) []string {
	GinkgoHelper()
	source, err := os.ReadFile(page)
	Expect(err).NotTo(HaveOccurred())
	var commands []string
	document := goldmark.New().Parser().Parse(text.NewReader(source))
	Expect(ast.Walk(document, func(node ast.Node, entering bool) (ast.WalkStatus, error) {
		block, ok := node.(*ast.FencedCodeBlock)
		if !entering || !ok || block.Info == nil ||
			!slices.Contains(strings.Fields(string(block.Info.Value(source))), installPathInfo) {
			return ast.WalkContinue, nil
		}
		continued := ""
		for line := range strings.SplitSeq(string(block.Lines().Value(source)), "\n") {
			line = strings.TrimSpace(line)
			if joined, more := strings.CutSuffix(line, "\\"); more {
				continued += joined
				continue
			}
			line = continued + line
			continued = ""
			if line != "" && !strings.HasPrefix(line, "#") {
				commands = append(commands, line)
			}
		}
		return ast.WalkContinue, nil
	})).To(Succeed())
	Expect(commands).NotTo(BeEmpty(), "%s marks no block %q", page, installPathInfo)
	return commands
}

// runShell runs command with bash in the repository's root, as a reader of the docs runs
// it there, and returns its standard output; an error holds its standard error. kubectl
// and helm talk to the suite's cluster, the project's helm first on the PATH, and
// LOCAL_POSTGRES_IMAGE names the operand image the local cluster holds.
func runShell(ctx context.Context, root, command string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", command)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PATH="+filepath.Join(root, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
		"LOCAL_POSTGRES_IMAGE="+postgres18Image)
	if kubeconfig := kubeconfigPath(); kubeconfig != "" {
		cmd.Env = append(cmd.Env, "KUBECONFIG="+kubeconfig)
	}
	var stdout, stderr strings.Builder
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	_, _ = fmt.Fprintf(GinkgoWriter, "$ %s\n%s%s", command, stdout.String(), stderr.String())
	if err != nil {
		return stdout.String(), fmt.Errorf("`%s`: %w: %s", command, err, stderr.String())
	}
	return stdout.String(), nil
}

// kubeconfigPath is the absolute path of the kubeconfig the suite talks to, if it names one.
func kubeconfigPath() string {
	GinkgoHelper()
	if index := slices.Index(kubectlArgs, "--kubeconfig"); index >= 0 {
		path, err := filepath.Abs(kubectlArgs[index+1])
		Expect(err).NotTo(HaveOccurred())
		return path
	}
	return ""
}
