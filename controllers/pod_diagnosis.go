package controllers

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/logbench/logbench/internal/serverlog"
)

// The kubelet's and the scheduler's reports of a pod that does not run, read the same way
// for every pod logbench waits for: a run's agent, a cluster's instances and its initdb
// Job, a syslog receiver; and when what waits for it gives up (unstartableFor).

// unstartableReasons are the kubelet's waiting reasons of a container that will not
// start without a change of the cluster (a missing Secret or key, an image that cannot
// be pulled).
var unstartableReasons = []string{
	"CreateContainerConfigError", "CreateContainerError", "ErrImagePull", "ImagePullBackOff", "InvalidImageName",
}

// imagePullReasons are the waiting reasons whose message is the registry's answer.
var imagePullReasons = []string{"ErrImagePull", "ImagePullBackOff"}

// imageMissingAnswers are what registries and container runtimes answer for an image
// that does not exist, which no retry of the pull changes (a registry that is down or
// refuses credentials answers otherwise).
var imageMissingAnswers = []string{
	"code = NotFound", ": not found", "manifest unknown", "name unknown", "repository does not exist",
	"no such host",
}

// podTrouble is why a pod's containers do not run; the zero value says nothing is wrong
// that the pod's status shows.
type podTrouble struct {
	// Message names the container (or the scheduler) and what it reports, without the
	// pod's name.
	Message string
	// Unstartable: a container waits for a change of the cluster (unstartableReasons).
	Unstartable bool
	// Hopeless: no retry can start the container: its image does not exist or its name is
	// invalid.
	Hopeless bool
	// Unschedulable: the scheduler found no node for the pod.
	Unschedulable bool
	// Crashed: a container exited with an error; Failures counts its exits so far,
	// LastFailure is when the last one ended (zero when the kubelet did not say), and
	// ServerRefused says that its last message is PostgreSQL refusing to start.
	Crashed       bool
	Failures      int32
	LastFailure   time.Time
	ServerRefused bool
}

// unstartableFor tells whether what waits for a pod created at created gives up at now
// for its trouble: at once when no retry can help, once timeout (spec.podStartTimeout)
// has passed when a container cannot start without a change of the cluster. recheck is
// when the timeout ends, 0 when it has or does not apply.
func unstartableFor(trouble podTrouble, created, now time.Time, timeout time.Duration) (
	giveUp bool, recheck time.Duration,
) {
	if !trouble.Unstartable {
		return false, 0
	}
	if waited := now.Sub(created); !trouble.Hopeless && waited < timeout {
		return false, timeout - waited
	}
	return true, 0
}

// containerRef names a container of a pod, and whether its log of interest is the one of
// its previous instance (a container waiting to be restarted has no current log).
type containerRef struct {
	Pod, Container string
	Previous       bool
}

// crashedContainers are the containers of pod that exited with an error without a
// termination message: their log says why, and diagnosePod reads it from logs.
func crashedContainers(pod *corev1.Pod) []containerRef {
	var crashed []containerRef
	for _, container := range allContainerStatuses(pod) {
		if terminated, previous := lastFailure(container); terminated != nil && terminated.Message == "" {
			crashed = append(crashed, containerRef{Pod: pod.Name, Container: container.Name, Previous: previous})
		}
	}
	return crashed
}

// diagnosePod reads why pod does not run from its status, and the logs of its crashed
// containers (crashedContainers) from logs when they could be read.
func diagnosePod(pod *corev1.Pod, logs map[containerRef]string) podTrouble {
	if pod == nil || pod.DeletionTimestamp != nil ||
		pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodRunning && podReady(pod) {
		return podTrouble{}
	}
	for _, container := range allContainerStatuses(pod) {
		if waiting := container.State.Waiting; waiting != nil && slices.Contains(unstartableReasons, waiting.Reason) {
			return podTrouble{
				Message:     fmt.Sprintf("container %s: %s: %s", container.Name, waiting.Reason, waiting.Message),
				Unstartable: true,
				Hopeless:    imageMissing(waiting),
			}
		}
	}
	for _, container := range allContainerStatuses(pod) {
		terminated, previous := lastFailure(container)
		if terminated == nil {
			continue
		}
		trouble := podTrouble{Crashed: true, Failures: container.RestartCount, LastFailure: terminated.FinishedAt.Time}
		if container.State.Terminated != nil {
			trouble.Failures++
		}
		trouble.Failures = max(trouble.Failures, 1)
		// A termination message the kubelet filled from the log (FallbackToLogsOnError)
		// holds its last lines: the last is the program's last word.
		last := lastLine(terminated.Message)
		if last == "" {
			log, read := logs[containerRef{Pod: pod.Name, Container: container.Name, Previous: previous}]
			if read {
				last, trouble.ServerRefused = serverlog.Stopped(log)
			}
		}
		// A signal (OOM kill, eviction) is no refusal, whatever the log said before.
		trouble.ServerRefused = trouble.ServerRefused && terminated.ExitCode > 0 && terminated.ExitCode < 128
		trouble.Message = fmt.Sprintf("container %s exited with code %d", container.Name, terminated.ExitCode)
		if terminated.Reason != "" && terminated.Reason != "Error" {
			trouble.Message += " (" + terminated.Reason + ")"
		}
		if last != "" {
			trouble.Message += ": " + last
		}
		return trouble
	}
	for _, condition := range pod.Status.Conditions {
		if condition.Type == corev1.PodScheduled && condition.Status == corev1.ConditionFalse &&
			condition.Reason == corev1.PodReasonUnschedulable {
			return podTrouble{Message: "not scheduled: " + condition.Message, Unschedulable: true}
		}
	}
	return podTrouble{}
}

// lastLine is the last line of text that is not blank.
func lastLine(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func allContainerStatuses(pod *corev1.Pod) []corev1.ContainerStatus {
	return append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...)
}

func podReady(pod *corev1.Pod) bool {
	for _, condition := range pod.Status.Conditions {
		if condition.Type == corev1.PodReady {
			return condition.Status == corev1.ConditionTrue
		}
	}
	return false
}

// lastFailure is the last exit with an error of a container that is not running:
// terminated now, or waiting to be restarted after it (previous).
func lastFailure(container corev1.ContainerStatus) (terminated *corev1.ContainerStateTerminated, previous bool) {
	switch {
	case container.State.Terminated != nil:
		if container.State.Terminated.ExitCode != 0 {
			return container.State.Terminated, false
		}
	case container.State.Waiting != nil:
		if last := container.LastTerminationState.Terminated; last != nil && last.ExitCode != 0 {
			return last, true
		}
	}
	return nil, false
}

func imageMissing(waiting *corev1.ContainerStateWaiting) bool {
	if waiting.Reason == "InvalidImageName" {
		return true
	}
	if !slices.Contains(imagePullReasons, waiting.Reason) {
		return false
	}
	for _, answer := range imageMissingAnswers {
		if strings.Contains(waiting.Message, answer) {
			return true
		}
	}
	return false
}
