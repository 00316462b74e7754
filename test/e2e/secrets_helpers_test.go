//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1alpha1 "github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/report"
	shippingpkg "github.com/logbench/logbench/internal/shipping"
)

// lokiCredentials is the Secret of the shipping spec's Loki credentials: basic auth for
// one destination, a bearer token for another. The suite's Loki ignores both; they are
// canaries, values found nowhere else, so that meeting one in what logbench writes is a
// leak.
const lokiCredentials = "loki-credentials"

// canaries maps each secret value the suite searches for to what it is.
type canaries map[string]string

// plantLokiCredentials creates the Loki credentials Secret with fresh canary values.
func plantLokiCredentials(ctx context.Context) canaries {
	username, password, token := "canary-user-"+randomHex(), "canary-password-"+randomHex(), "canary-token-"+randomHex()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: lokiCredentials, Namespace: benchmarkNamespace},
		StringData: map[string]string{"username": username, "password": password, "token": token},
	}
	Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, secret))).To(Succeed())
	Expect(k8sClient.Create(ctx, secret)).To(Succeed())
	return canaries{
		username: "the Loki username",
		password: "the Loki password",
		token:    "the Loki bearer token",
		// What a Basic Authorization header carries.
		base64.StdEncoding.EncodeToString([]byte(username + ":" + password)): "the Loki basic auth header",
	}
}

func randomHex() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// addClusterPasswords adds the passwords of the benchmark's clusters, which the runs'
// pgbench and agents use, read from the Secrets CloudNativePG generated.
func (c canaries) addClusterPasswords(ctx context.Context, benchmark *benchv1alpha1.LoggingBenchmark) {
	for _, destination := range benchmark.Status.Destinations {
		for _, suffix := range []string{"-superuser", "-app"} {
			secret := &corev1.Secret{}
			key := client.ObjectKey{Namespace: benchmarkNamespace, Name: destination.ClusterName + suffix}
			if err := k8sClient.Get(ctx, key, secret); err != nil {
				Expect(client.IgnoreNotFound(err)).To(Succeed())
				continue
			}
			if password := string(secret.Data[corev1.BasicAuthPasswordKey]); password != "" {
				c[password] = "the password in Secret " + key.Name
			}
		}
	}
}

// expectNoLeak searches everything logbench writes about benchmark for the canaries:
// the LoggingBenchmark, the namespace's events, the logs of the operator, of the runners
// (followed while they ran: runners) and of the shipper sidecars, the pods' status, the run records,
// the ConfigMaps (shipper configurations), the metrics endpoint, every format of
// logbench report, and PostgreSQL's own output: its container log and the log files its
// file destinations write, where a credential sent as a statement or a setting would
// show.
func expectNoLeak(ctx context.Context, benchmark *benchv1alpha1.LoggingBenchmark, secrets canaries,
	runners *runnerLogs,
) {
	places := runners.read()
	Expect(places).NotTo(BeEmpty(), "no runner's log was followed")
	current := &benchv1alpha1.LoggingBenchmark{}
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(benchmark), current)).To(Succeed())
	places["the LoggingBenchmark"] = mustJSON(current)

	events, err := clientset.CoreV1().Events(benchmarkNamespace).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	places["the events"] = mustJSON(events)

	configMaps, err := clientset.CoreV1().ConfigMaps(benchmarkNamespace).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	places["the ConfigMaps"] = mustJSON(configMaps)

	for _, namespace := range []string{operatorNamespace, benchmarkNamespace} {
		pods, err := clientset.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		places["the pods of "+namespace] = mustJSON(pods)
		for _, pod := range pods.Items {
			for _, container := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
				if !writtenByLogbench(namespace, pod, container.Name) {
					continue
				}
				logs, err := clientset.CoreV1().Pods(namespace).
					GetLogs(pod.Name, &corev1.PodLogOptions{Container: container.Name}).DoRaw(ctx)
				if err != nil && (podGone(ctx, pod) || containerNotStarted(ctx, pod, container.Name)) {
					continue
				}
				Expect(err).NotTo(HaveOccurred(), "logs of %s/%s", pod.Name, container.Name)
				places[fmt.Sprintf("the log of %s/%s", pod.Name, container.Name)] = logs
			}
			if pod.Labels[cloudnativepg.PodRoleLabel] == cloudnativepg.InstanceRole && pod.Status.Phase == corev1.PodRunning {
				files, err := instanceLogFiles(ctx, pod)
				if err != nil && podGone(ctx, pod) {
					continue
				}
				Expect(err).NotTo(HaveOccurred())
				places["the log files of "+pod.Name] = files
			}
		}
	}

	metrics, err := scrapeMetrics(ctx)
	Expect(err).NotTo(HaveOccurred())
	places["the metrics"] = []byte(metrics)

	runs := &benchv1alpha1.LoggingBenchmarkRunList{}
	Expect(k8sClient.List(ctx, runs, client.InNamespace(benchmark.Namespace))).To(Succeed())
	places["the LoggingBenchmarkRuns"] = mustJSON(runs)

	for _, format := range report.Formats {
		var rendered bytes.Buffer
		Expect(report.Render(&rendered, format, withRuns(ctx, current))).To(Succeed())
		places["logbench report -o "+format.String()] = rendered.Bytes()
	}

	var leaks []string
	for place, text := range places {
		for value, what := range secrets {
			if bytes.Contains(text, []byte(value)) {
				leaks = append(leaks, fmt.Sprintf("%s holds %s", place, what))
			}
		}
	}
	_, _ = fmt.Fprintf(GinkgoWriter, "searched %d places for %d secret values\n", len(places), len(secrets))
	Expect(leaks).To(BeEmpty(), "searched %d places for %d secret values", len(places), len(secrets))
	Expect(len(places)).To(BeNumerically(">", 10), "too few places searched: %s",
		strings.Join(slices.Sorted(maps.Keys(places)), ", "))
}

// writtenByLogbench tells the containers whose logs logbench writes or makes others
// write: the operator's, the runners' (agent and pgbench), the shipper sidecars and
// PostgreSQL's, which logs the statements logbench sends.
func writtenByLogbench(namespace string, pod corev1.Pod, container string) bool {
	switch {
	case namespace == operatorNamespace:
		return true
	case labels.SelectorFromSet(builders.BenchmarkRunnerLabels(pod.Labels[builders.LabelBenchmark])).
		Matches(labels.Set(pod.Labels)):
		return true
	case pod.Labels[cloudnativepg.ClusterLabel] != "":
		return container == "postgres" || container == shippingpkg.ContainerName
	default:
		return container == shippingpkg.ContainerName
	}
}

// podGone tells whether pod was deleted, or is being deleted, since it was listed: the
// specs of the other lane (make e2e-local-lanes) remove their benchmarks' pods while
// this one searches, and a pod gone has no log left to leak.
func podGone(ctx context.Context, pod corev1.Pod) bool {
	current := &corev1.Pod{}
	err := k8sClient.Get(ctx, client.ObjectKeyFromObject(&pod), current)
	if apierrors.IsNotFound(err) || err == nil && (current.UID != pod.UID || current.DeletionTimestamp != nil) {
		_, _ = fmt.Fprintf(GinkgoWriter, "pod %s/%s went away while it was searched\n", pod.Namespace, pod.Name)
		return true
	}
	return false
}

// containerNotStarted tells whether a container has not started yet, so has no log: the
// kubelet refuses to read one (BadRequest) while the container is created, as the other
// e2e lane's pods are while this one searches the namespace.
func containerNotStarted(ctx context.Context, pod corev1.Pod, container string) bool {
	current := &corev1.Pod{}
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(&pod), current); err != nil {
		return false
	}
	started := false
	for _, status := range append(current.Status.InitContainerStatuses, current.Status.ContainerStatuses...) {
		if status.Name == container {
			started = status.State.Running != nil || status.State.Terminated != nil ||
				status.LastTerminationState.Terminated != nil
		}
	}
	if !started {
		_, _ = fmt.Fprintf(GinkgoWriter, "container %s/%s/%s had not started when it was searched\n",
			pod.Namespace, pod.Name, container)
	}
	return !started
}

// instanceLogFiles returns the log files PostgreSQL wrote for logbench's file
// destinations in an instance pod, read in its postgres container; nothing when it wrote
// none (the baseline and Stdout destinations).
func instanceLogFiles(ctx context.Context, pod corev1.Pod) ([]byte, error) {
	files, err := inPostgresContainer(ctx, pod, "sh", "-c", "cat "+shippingpkg.LogDirectory+"/* 2>/dev/null || true")
	if err != nil {
		return nil, fmt.Errorf("reading the log files of %s: %w", pod.Name, err)
	}
	return files, nil
}

// inPostgresContainer runs command in the postgres container of an instance pod with
// kubectl exec and returns what the command printed: kubectl's own messages (warnings of
// its streams) go to stderr, which only an error carries.
func inPostgresContainer(ctx context.Context, pod corev1.Pod, command ...string) ([]byte, error) {
	args := append(append([]string{}, kubectlArgs...), "-n", pod.Namespace, "exec", pod.Name, "-c", "postgres", "--")
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "kubectl", append(args, command...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s in %s: %w: %s", strings.Join(command, " "), pod.Name, err, &stderr)
	}
	return stdout.Bytes(), nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	return b
}

// runnerLogs holds what a benchmark's runners logged: the operator deletes them, their
// logs with them, once the benchmark has finished.
type runnerLogs struct {
	mu   sync.Mutex
	logs map[string]*bytes.Buffer
}

// followRunnerLogs follows the log of every container of every runner pod of benchmark
// from when it runs until ctx ends.
func followRunnerLogs(ctx context.Context, benchmark string) *runnerLogs {
	followed := &runnerLogs{logs: map[string]*bytes.Buffer{}}
	selector := metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: builders.BenchmarkRunnerLabels(benchmark)})
	go func() {
		for ctx.Err() == nil {
			pods, err := clientset.CoreV1().Pods(benchmarkNamespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
			for _, pod := range podsOrNone(pods, err) {
				if pod.Status.Phase != corev1.PodRunning {
					continue
				}
				for _, container := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
					followed.follow(ctx, pod.Name, container.Name)
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return followed
}

// podsOrNone is the pods listed, none when the list failed: the next one tries again.
func podsOrNone(pods *corev1.PodList, err error) []corev1.Pod {
	if err != nil {
		return nil
	}
	return pods.Items
}

// follow copies the log of a container into its buffer, unless it is followed already.
func (l *runnerLogs) follow(ctx context.Context, pod, container string) {
	place := fmt.Sprintf("the log of runner %s/%s", pod, container)
	l.mu.Lock()
	_, followed := l.logs[place]
	l.mu.Unlock()
	if followed {
		return
	}
	stream, err := clientset.CoreV1().Pods(benchmarkNamespace).
		GetLogs(pod, &corev1.PodLogOptions{Container: container, Follow: true}).Stream(ctx)
	if err != nil {
		return
	}
	buffer := &bytes.Buffer{}
	l.mu.Lock()
	l.logs[place] = buffer
	l.mu.Unlock()
	go func() {
		defer func() { _ = stream.Close() }()
		chunk := make([]byte, 32*1024)
		for {
			n, err := stream.Read(chunk)
			l.mu.Lock()
			buffer.Write(chunk[:n])
			l.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
}

// read returns what each followed container logged so far, by place.
func (l *runnerLogs) read() map[string][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	logs := make(map[string][]byte, len(l.logs))
	for place, buffer := range l.logs {
		logs[place] = bytes.Clone(buffer.Bytes())
	}
	return logs
}
