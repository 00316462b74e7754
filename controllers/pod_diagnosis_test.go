package controllers

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// initdbRefusedLog is the end of an initdb pod's log, as CloudNativePG's instance manager
// writes it, whose server refused a parameter's value.
const initdbRefusedLog = `{"level":"info","ts":"2026-11-27T10:00:01.1Z","logger":"pg_ctl","msg":"waiting for server to start....2026-11-27 10:00:01.123 UTC [27] LOG:  invalid value for parameter \"work_mem\": \"lots\"","pipe":"stdout","logging_pod":"b-csv-1-initdb"}
{"level":"info","ts":"2026-11-27T10:00:01.1Z","logger":"pg_ctl","msg":"2026-11-27 10:00:01.123 UTC [27] HINT:  Valid units for this parameter are \"B\", \"kB\", \"MB\", \"GB\", and \"TB\".","pipe":"stdout","logging_pod":"b-csv-1-initdb"}
{"level":"info","ts":"2026-11-27T10:00:01.1Z","logger":"pg_ctl","msg":"2026-11-27 10:00:01.124 UTC [27] FATAL:  configuration file \"/var/lib/postgresql/data/pgdata/postgresql.conf\" contains errors","pipe":"stdout","logging_pod":"b-csv-1-initdb"}
{"level":"info","ts":"2026-11-27T10:00:01.2Z","logger":"pg_ctl","msg":" stopped waiting","pipe":"stdout","logging_pod":"b-csv-1-initdb"}
{"level":"info","ts":"2026-11-27T10:00:01.2Z","logger":"pg_ctl","msg":"pg_ctl: could not start server","pipe":"stdout","logging_pod":"b-csv-1-initdb"}
{"level":"error","ts":"2026-11-27T10:00:01.2Z","msg":"Error while bootstrapping data directory","logging_pod":"b-csv-1-initdb","error":"error starting PostgreSQL instance: exit status 1","stacktrace":"..."}
`

const refusedWorkMem = `LOG: invalid value for parameter "work_mem": "lots"; ` +
	`FATAL: configuration file "/var/lib/postgresql/data/pgdata/postgresql.conf" contains errors`

// waitingPod is a pending pod one of whose containers waits for reason.
func waitingPod(name, container, reason, message string) corev1.Pod {
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
	pod.Status.Phase = corev1.PodPending
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: container, State: corev1.ContainerState{
		Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message},
	}}}
	return pod
}

// crashLoopingPod is the running instance pod b-csv-1 whose postgres container failed
// restarts+1 times with exitCode, each time without a termination message.
func crashLoopingPod(exitCode, restarts int32, reason string) corev1.Pod {
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b-csv-1"}}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: "postgres", RestartCount: restarts,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "CrashLoopBackOff", Message: "back-off 20s restarting failed container",
		}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: exitCode, Reason: reason,
		}},
	}}
	return pod
}

// failedJobPod is a pod of the initdb Job b-csv-1-initdb whose initdb container exited
// with exitCode.
func failedJobPod(name string, exitCode int32) corev1.Pod {
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{"batch.kubernetes.io/job-name": "b-csv-1-initdb"}}}
	pod.Status.Phase = corev1.PodFailed
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "initdb", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: exitCode, Reason: "Error"},
	}}}
	return pod
}

const (
	missingImage = `Back-off pulling image "logbench.local/no-such-fluent-bit:0": ErrImagePull: failed to pull and ` +
		`unpack image "logbench.local/no-such-fluent-bit:0": failed to resolve reference ` +
		`"logbench.local/no-such-fluent-bit:0": failed to do request: Head ` +
		`"https://logbench.local/v2/no-such-fluent-bit/manifests/0": dial tcp: lookup logbench.local: no such host`
	deniedImage = `failed to pull and unpack image "registry.example/private:1": failed to resolve reference ` +
		`"registry.example/private:1": unexpected status from HEAD request: 401 Unauthorized`
)

func TestDiagnosePod(t *testing.T) {
	unschedulable := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b-csv-1"}}
	unschedulable.Status.Phase = corev1.PodPending
	unschedulable.Status.Conditions = []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/1 nodes are available: 1 Insufficient cpu.",
	}}
	ready := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b-csv-1"}}
	ready.Status.Phase = corev1.PodRunning
	ready.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	withMessage := crashLoopingPod(1, 0, "Error")
	withMessage.Status.ContainerStatuses[0].LastTerminationState.Terminated.Message = "the agent's last words"
	refusedLog := map[containerRef]string{
		{Pod: "b-csv-1", Container: "postgres", Previous: true}: initdbRefusedLog,
		{Pod: "b-csv-1-initdb-x", Container: "initdb"}:          initdbRefusedLog,
	}
	tests := []struct {
		name string
		pod  corev1.Pod
		logs map[containerRef]string
		want podTrouble
	}{
		{"ready", ready, nil, podTrouble{}},
		{"pending, nothing reported yet", waitingPod("b-csv-1", "postgres", "ContainerCreating", ""), nil, podTrouble{}},
		{"an image that does not exist", waitingPod("b-csv-1", "fluent-bit", "ImagePullBackOff", missingImage), nil,
			podTrouble{Message: "container fluent-bit: ImagePullBackOff: " + missingImage, Unstartable: true, Hopeless: true}},
		{"an image the registry refuses", waitingPod("b-csv-1", "postgres", "ErrImagePull", deniedImage), nil,
			podTrouble{Message: "container postgres: ErrImagePull: " + deniedImage, Unstartable: true}},
		{"a missing Secret", waitingPod("b-csv-1", "fluent-bit", "CreateContainerConfigError", `secret "loki" not found`),
			nil, podTrouble{Message: `container fluent-bit: CreateContainerConfigError: secret "loki" not found`,
				Unstartable: true}},
		{"a server refusing to start, twice", crashLoopingPod(1, 2, "Error"), refusedLog,
			podTrouble{Message: "container postgres exited with code 1: " + refusedWorkMem, Crashed: true, Failures: 2,
				ServerRefused: true}},
		{"a crash whose log could not be read", crashLoopingPod(1, 1, "Error"), nil,
			podTrouble{Message: "container postgres exited with code 1", Crashed: true, Failures: 1}},
		{"killed for its memory", crashLoopingPod(137, 3, "OOMKilled"), refusedLog,
			podTrouble{Message: "container postgres exited with code 137 (OOMKilled): " + refusedWorkMem,
				Crashed: true, Failures: 3}},
		{"a termination message", withMessage, refusedLog,
			podTrouble{Message: "container postgres exited with code 1: the agent's last words", Crashed: true, Failures: 1}},
		{"a failed Job pod", failedJobPod("b-csv-1-initdb-x", 1), refusedLog,
			podTrouble{Message: "container initdb exited with code 1: " + refusedWorkMem, Crashed: true, Failures: 1,
				ServerRefused: true}},
		{"no node for it", unschedulable, nil,
			podTrouble{Message: "not scheduled: 0/1 nodes are available: 1 Insufficient cpu.", Unschedulable: true}},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			if got := diagnosePod(&test.pod, test.logs); !reflect.DeepEqual(got, test.want) {
				t.Errorf("diagnosePod =\n%+v\nwant\n%+v", got, test.want)
			}
		})
	}
}

// TestCrashedContainers: the log of a crash-looping container is its previous instance's,
// that of a failed Job pod's container its current one; a container that left a
// termination message needs none.
func TestCrashedContainers(t *testing.T) {
	looping := crashLoopingPod(1, 2, "Error")
	job := failedJobPod("b-csv-1-initdb-x", 1)
	told := failedJobPod("b-csv-1-initdb-y", 1)
	told.Status.ContainerStatuses[0].State.Terminated.Message = "why"
	pods := []corev1.Pod{looping, job, told}
	got := make([]containerRef, 0, len(pods))
	for _, pod := range pods {
		got = append(got, crashedContainers(&pod)...)
	}
	want := []containerRef{
		{Pod: "b-csv-1", Container: "postgres", Previous: true}, {Pod: "b-csv-1-initdb-x", Container: "initdb"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("crashedContainers = %+v, want %+v", got, want)
	}
}
