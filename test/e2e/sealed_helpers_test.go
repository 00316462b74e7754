//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1alpha1 "github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/meter"
	shippingpkg "github.com/logbench/logbench/internal/shipping"
)

// postgresContainer is the container of CloudNativePG's instance pods that runs the
// instance manager and PostgreSQL.
const postgresContainer = "postgres"

// sealProbeScript prints "self IDENTITY", then for each process of the pod a line
// "process PID IDENTITY CGROUP ENVIRON TOKEN CONTROLLER", tab-separated: IDENTITY is what
// the kernel compares before it lets one process read another's environment or root
// folder (status's Uid, Gid, CapPrm, CapEff, CapBnd and NoNewPrivs lines), CGROUP its
// cgroup file on one line, and ENVIRON, TOKEN and CONTROLLER what reading its environ,
// its root's ServiceAccount token and listing its root's /controller gave: "read", or
// the error's reason ("Permission denied", "No such file or directory"). It reads no
// content into its output. It writes nothing but its output: the root filesystem is
// read-only.
const sealProbeScript = `
identity() {
  local status line fields=()
  # One read of the whole file: read's small reads seek back after each line, and each
  # seek makes the kernel write status anew, whose memory lines of a busy process change
  # length in between, so that a line can be skipped.
  status=$(<"$1/status") || return 1
  while IFS= read -r line; do
    case $line in
      Uid:*|Gid:*|CapPrm:*|CapEff:*|CapBnd:*|NoNewPrivs:*) fields+=("${line//$'\t'/ }") ;;
    esac
  done <<<"$status"
  local IFS=,
  echo "${fields[*]}"
}
attempt() {
  local error
  if error=$("$@" 2>&1 >/dev/null); then echo read; else echo "${error##*: }"; fi
}
# The kubelet mounts the token at /var/run/secrets, which is a link to /run in most
# images: an absolute link under /proc/PID/root resolves in the reader's root, not the
# process's, so the token is read at /run/secrets first, then at /var/run/secrets.
token() {
  local first
  first=$(attempt cat "$1/root/run/secrets/kubernetes.io/serviceaccount/token")
  if [ "$first" = read ]; then echo read; return; fi
  [ -L "$1/root/var/run" ] && { echo "$first"; return; }
  attempt cat "$1/root/var/run/secrets/kubernetes.io/serviceaccount/token"
}
echo "self	$(identity /proc/self)"
for dir in /proc/[0-9]*; do
  who=$(identity "$dir" 2>/dev/null) || continue
  cgroup=$(cat "$dir/cgroup" 2>/dev/null) || continue
  echo "process	${dir#/proc/}	$who	${cgroup//$'\n'/|}	$(attempt cat "$dir/environ")	$(token "$dir")	$(attempt ls "$dir/root/controller")"
done
`

// sealProbe is what one twin (runTwins) saw: its own identity and the pod's processes.
type sealProbe struct {
	identity  string
	processes []probedProcess
}

// probedProcess is a process as sealProbeScript printed it.
type probedProcess struct {
	pid, identity, cgroup      string
	environ, token, controller string
}

// readAll reports whether every read of the process succeeded.
func (p probedProcess) readAll() bool {
	return p.environ == "read" && p.token == "read" && p.controller == "read"
}

// readAny reports whether a read of the process succeeded.
func (p probedProcess) readAny() bool {
	return p.environ == "read" || p.token == "read" || p.controller == "read"
}

// environDenied reports whether the kernel refused the read of the process's environ.
func (p probedProcess) environDenied() bool { return p.environ == "Permission denied" }

// parseSealProbe reads the output of sealProbeScript; other lines (the shell's
// warnings) are printed, not parsed.
func parseSealProbe(output string) sealProbe {
	var probe sealProbe
	for line := range strings.Lines(output) {
		fields := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		switch {
		case fields[0] == "self" && len(fields) == 2:
			probe.identity = fields[1]
		case fields[0] == "process" && len(fields) == 7:
			probe.processes = append(probe.processes, probedProcess{pid: fields[1], identity: fields[2], cgroup: fields[3],
				environ: fields[4], token: fields[5], controller: fields[6]})
		default:
			_, _ = fmt.Fprintf(GinkgoWriter, "the seal probe printed %q\n", line)
		}
	}
	Expect(probe.identity).To(ContainSubstring("Uid:"), "the seal probe's own identity")
	return probe
}

// of returns the processes of the container whose ID is containerID: their cgroup names
// it, as the meter tells the containers apart.
func (p sealProbe) of(containerID string) []probedProcess {
	var processes []probedProcess
	for _, process := range p.processes {
		if strings.Contains(process.cgroup, containerID) {
			processes = append(processes, process)
		}
	}
	return processes
}

// expectSealedContainers checks every running instance pod of benchmark's clusters:
// none of the containers logbench adds (the meter, a shipping destination's shipper, a
// Syslog destination's receiver sidecar) can read the environment of the postgres
// container's processes, nor, through their root folder, the pod's ServiceAccount token
// or CloudNativePG's /controller, although the pod shares its process namespace.
//
// The added containers' images hold no shell and no cat (distroless), so the reads run
// in a twin of each: an ephemeral container of the pod, from the postgres container's
// image, with the container's securityContext. The kernel decides such a read on the
// reader's user, group, capabilities and no_new_privs flag, and the pod's namespaces,
// which the twin shares: each twin's identity is checked against the processes of the
// container it stands for (their status, which every process may read). A twin of the
// postgres container must read all three, or the denials would prove nothing.
func expectSealedContainers(ctx context.Context, benchmark *benchv1alpha1.LoggingBenchmark) {
	Expect(benchmark).NotTo(BeNil(), "needs the benchmark of an earlier spec")
	ships := map[string]bool{}
	for _, destination := range benchmark.Spec.Destinations {
		ships[destination.Name] = destination.Ships()
	}
	pods := 0
	for _, destination := range benchmark.Status.Destinations {
		instances := &corev1.PodList{}
		Expect(k8sClient.List(ctx, instances, client.InNamespace(benchmark.Namespace),
			client.MatchingLabels{cloudnativepg.ClusterLabel: destination.ClusterName,
				cloudnativepg.PodRoleLabel: cloudnativepg.InstanceRole})).To(Succeed())
		for _, pod := range instances.Items {
			if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
				continue
			}
			pods++
			var added []corev1.Container
			for _, container := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
				if container.Name == meter.ContainerName || container.Name == shippingpkg.ContainerName {
					added = append(added, container)
				}
			}
			names := func() (names []string) {
				for _, container := range added {
					names = append(names, container.Name)
				}
				return names
			}()
			Expect(names).To(ContainElement(meter.ContainerName), "pod %s", pod.Name)
			if ships[destination.Name] {
				Expect(names).To(ContainElement(shippingpkg.ContainerName), "pod %s of a shipping destination", pod.Name)
			}
			expectSealedPod(ctx, pod, added)
		}
	}
	Expect(pods).To(BeNumerically(">", 0), "no running instance pod of benchmark %s to check", benchmark.Name)
}

// expectSealedPod runs a twin of the postgres container and of each added container in
// pod, and checks what each could read.
func expectSealedPod(ctx context.Context, pod corev1.Pod, added []corev1.Container) {
	postgres := pod.Spec.Containers[slices.IndexFunc(pod.Spec.Containers,
		func(c corev1.Container) bool { return c.Name == postgresContainer })]
	probes := runTwins(ctx, pod, postgres.Image, append([]corev1.Container{postgres}, added...))
	postgresID := containerID(pod, postgresContainer)

	for _, container := range append([]corev1.Container{postgres}, added...) {
		what := fmt.Sprintf("pod %s, the twin of %s", pod.Name, container.Name)
		probe := probes[container.Name]
		own := probe.of(containerID(pod, container.Name))
		Expect(own).NotTo(BeEmpty(), "%s: no process of %s in sight", what, container.Name)
		for _, process := range own {
			Expect(process.identity).To(Equal(probe.identity), "%s: process %s of %s runs as another identity than the twin",
				what, process.pid, container.Name)
		}
		server := probe.of(postgresID)
		Expect(server).NotTo(BeEmpty(), "%s: no process of the postgres container in sight", what)
		_, _ = fmt.Fprintf(GinkgoWriter, "%s (%s): %d processes of the postgres container:\n", what, probe.identity, len(server))
		for _, process := range server {
			_, _ = fmt.Fprintf(GinkgoWriter, "  %s: environ %s, token %s, /controller %s\n",
				process.pid, process.environ, process.token, process.controller)
		}
		if container.Name == postgresContainer {
			// The control: the postgres user reads its own processes' secrets.
			Expect(slices.ContainsFunc(server, probedProcess.readAll)).To(BeTrue(),
				"%s: the postgres user must read its processes' environment, token and /controller, "+
					"or the other twins' denials prove nothing", what)
			continue
		}
		for _, process := range server {
			Expect(process.readAny()).To(BeFalse(),
				"%s read the environment, token or /controller of the postgres container's process %s", what, process.pid)
		}
		Expect(slices.ContainsFunc(server, probedProcess.environDenied)).To(BeTrue(),
			"%s: the kernel refused no read of the postgres container's environment", what)
	}
}

// runTwins adds to pod, in one patch, an ephemeral container from image for each of
// containers, with its securityContext, running sealProbeScript; it waits for them to
// end and returns their probes by the name of the container each stands for. Twins do
// not mount the containers' volumes: the reads go through /proc, whatever the twin's
// own files.
func runTwins(ctx context.Context, pod corev1.Pod, image string, containers []corev1.Container) map[string]sealProbe {
	suffix := strings.ToLower(rand.Text()[:5])
	twins := map[string]string{}
	ephemeral := make([]corev1.EphemeralContainer, 0, len(containers))
	for _, container := range containers {
		twin := corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name:  fmt.Sprintf("seal-%s-%s", strings.TrimPrefix(container.Name, "logbench-"), suffix),
			Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
			Command:         []string{"bash", "-c", sealProbeScript},
			SecurityContext: container.SecurityContext.DeepCopy(),
		}}
		twins[twin.Name] = container.Name
		ephemeral = append(ephemeral, twin)
	}
	// A strategic merge patch adds them by name, as kubectl debug does, whatever the
	// kubelet and CloudNativePG changed in the pod meanwhile.
	patch := mustJSON(map[string]any{"spec": map[string]any{"ephemeralContainers": ephemeral}})
	_, err := clientset.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{}, "ephemeralcontainers")
	Expect(err).NotTo(HaveOccurred(), "adding the twins to pod %s", pod.Name)

	current := &corev1.Pod{}
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&pod), current)).To(Succeed())
		ended := 0
		for _, status := range current.Status.EphemeralContainerStatuses {
			if _, ours := twins[status.Name]; ours && status.State.Terminated != nil {
				if terminated := status.State.Terminated; terminated.ExitCode != 0 {
					StopTrying(fmt.Sprintf("twin %s in pod %s ended with %d: %s %s", status.Name, pod.Name,
						terminated.ExitCode, terminated.Reason, terminated.Message)).Now()
				}
				ended++
			}
		}
		g.Expect(ended).To(Equal(len(twins)), "the twins in pod %s that ended", pod.Name)
	}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())

	probes := map[string]sealProbe{}
	for twin, container := range twins {
		output, err := clientset.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: twin}).DoRaw(ctx)
		Expect(err).NotTo(HaveOccurred(), "the output of twin %s", twin)
		probes[container] = parseSealProbe(string(output))
	}
	return probes
}

// containerID is the ID of a container of pod, without its runtime's scheme, as the
// container's cgroup names it.
func containerID(pod corev1.Pod, container string) string {
	for _, status := range append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...) {
		if status.Name == container {
			_, id, found := strings.Cut(status.ContainerID, "://")
			Expect(found).To(BeTrue(), "pod %s: container %s has no ID (%q)", pod.Name, container, status.ContainerID)
			return id
		}
	}
	Fail(fmt.Sprintf("pod %s has no status of container %s", pod.Name, container))
	return ""
}
