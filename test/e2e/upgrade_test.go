//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1alpha1 "github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/internal/testenv"
)

// The upgrade spec replaces the operator every other spec uses, so it runs alone: make
// e2e-upgrade builds the release users upgrade from (UPGRADE_FROM) and names it here;
// the other make targets leave it out by its label.
var _ = Describe("upgrade", Label("upgrade"), Serial, func() {
	It("completes a benchmark across helm upgrade of the operator, rerunning nothing finished", func(ctx SpecContext) {
		from, chart, to := os.Getenv("E2E_UPGRADE_FROM_IMAGE"), os.Getenv("E2E_UPGRADE_FROM_CHART"),
			os.Getenv("E2E_UPGRADE_TO_IMAGE")
		if from == "" || chart == "" || to == "" {
			testenv.Missing(GinkgoTB(), "the upgrade spec needs E2E_UPGRADE_FROM_IMAGE, E2E_UPGRADE_FROM_CHART and "+
				"E2E_UPGRADE_TO_IMAGE: make e2e-upgrade sets them")
		}
		// The suite's operator is installed with the chart's monitoring when the cluster
		// has the Prometheus stack; the upgrade installs it the same way.
		monitoring := monitoringInstallFlags(ctx)
		DeferCleanup(func(ctx SpecContext) {
			if operatorImage(ctx) != to {
				installLogbench(ctx, to, monitoring...)
			}
		})

		By("installing " + from + " from its own chart")
		installLogbench(ctx, from, append([]string{"--chart", chart}, monitoring...)...)
		Expect(operatorImage(ctx)).To(Equal(from))

		upgraded := newBenchmark("upgrade")
		upgraded.Spec.Destinations = []benchv1alpha1.Destination{{Name: "csvlog", Type: benchv1alpha1.DestinationCSVLog}}
		// One repeat a row: four runs, one result each.
		upgraded.Spec.Workload.Clients = []int32{1, 2}
		upgraded.Spec.Workload.Repeats = 1
		upgraded.Spec.Workload.Duration = metav1.Duration{Duration: 5 * time.Second}
		upgraded.Spec.Cleanup = benchv1alpha1.CleanupAlways
		createForThisSpec(ctx, upgraded)
		DeferCleanup(func() {
			if CurrentSpecReport().Failed() {
				printDiagnostics(upgraded)
			}
		})

		By("upgrading once the old operator has finished a run")
		finished := awaitFinishedRuns(ctx, upgraded)
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(upgraded), upgraded)).To(Succeed())
			g.Expect(upgraded.Status.Progress.RunsDone).To(BeNumerically(">=", 1),
				"the old operator recorded the finished run in the status")
		}).WithContext(ctx).WithTimeout(benchmarkTimeout).WithPolling(2 * time.Second).Should(Succeed())
		Expect(upgraded.Status.Phase.IsFinished()).To(BeFalse(), "runs remain for the new operator")
		upgradeStarted := time.Now()
		installLogbench(ctx, to, monitoring...)
		Expect(operatorImage(ctx)).To(Equal(to))

		By("completing under the new operator with every run once, in its runners")
		waitForPhase(ctx, upgraded, benchv1alpha1.PhaseSucceeded)
		expectEveryRunOnce(ctx, upgraded, finished)
		// An older operator's Job in flight is adopted, and the new one creates none.
		jobs := &batchv1.JobList{}
		Expect(k8sClient.List(ctx, jobs, client.InNamespace(benchmarkNamespace),
			client.MatchingLabels{builders.LabelBenchmark: upgraded.Name})).To(Succeed())
		for _, job := range jobs.Items {
			// Creation times are in whole seconds: at most the upgrade's start.
			Expect(job.CreationTimestamp.After(upgradeStarted)).To(BeFalse(),
				"Job %s, created at %s, after the upgrade", job.Name, job.CreationTimestamp)
		}
	})
})

// installLogbench installs or upgrades the operator with hack/install-logbench.sh, as the
// cluster's up script does, and waits for its rollout.
func installLogbench(ctx context.Context, image string, flags ...string) {
	args := append(append([]string{image}, kubectlArgs...), flags...)
	cmd := exec.CommandContext(ctx, "../../hack/install-logbench.sh", args...)
	output, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "installing logbench %s: %s", image, output)
	kubectl(ctx, "-n", operatorNamespace, "rollout", "status", "deployment/logbench", "--timeout=180s")
}

// operatorImage is the image of the running operator's Deployment.
func operatorImage(ctx context.Context) string {
	deployment := &appsv1.Deployment{}
	Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: operatorNamespace, Name: "logbench"},
		deployment)).To(Succeed())
	return deployment.Spec.Template.Spec.Containers[0].Image
}

// monitoringInstallFlags are install-logbench.sh's flags for the monitoring the running
// release has: its ServiceMonitor's release label, if it has one.
func monitoringInstallFlags(ctx context.Context) []string {
	cmd := exec.CommandContext(ctx, "../../bin/helm", append([]string{"get", "values", "logbench",
		"--namespace", operatorNamespace, "--output", "json"}, kubectlArgs...)...)
	output, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred(), "reading the release's values")
	var values struct {
		ServiceMonitor struct {
			Enabled bool              `json:"enabled"`
			Labels  map[string]string `json:"labels"`
		} `json:"serviceMonitor"`
	}
	Expect(json.Unmarshal(output, &values)).To(Succeed())
	if !values.ServiceMonitor.Enabled {
		return nil
	}
	_, _ = fmt.Fprintf(GinkgoWriter, "the release is monitored by %q\n", values.ServiceMonitor.Labels["release"])
	return []string{"--prometheus-release", values.ServiceMonitor.Labels["release"]}
}
