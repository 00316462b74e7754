package builders

import (
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/agent"
	"github.com/logbench/logbench/internal/shipping"
)

const (
	// AgentContainer runs the agent in a runner's pod, as it did in the pod of an older
	// operator's run Job, whose termination message was the result.
	AgentContainer = "agent"
	agentBinDir    = "/logbench-bin"
	agentBinary    = agentBinDir + "/logbench"
	agentBinVolume = "logbench-bin"
	agentTmpVolume = "tmp"
	// agentScriptsVolume holds workload.scripts' keys.
	agentScriptsVolume = "scripts"
	applicationDBName  = "app"
	// postgresUID is the postgres user of CloudNativePG's operand images.
	postgresUID = 26
	// runSetupMargin covers image pulls, the runner's start, pgbench initialisation and
	// settings reloads on top of a run's warm-up, duration and drain timeout.
	runSetupMargin = 20 * time.Minute
)

// RunnerInput is what Runner needs beyond the benchmark and the destination.
type RunnerInput struct {
	// ClusterImage runs the agent: it holds the pgbench matching the server.
	ClusterImage string
	// InstallerImage holds the logbench binary copied into the agent container.
	InstallerImage string
	// PullSecrets pull both images.
	PullSecrets []corev1.LocalObjectReference
}

// RunDeadline is how long after its assignment a run may go unrecorded before the
// operator records it failed.
func RunDeadline(spec *v1alpha1.LoggingBenchmarkSpec) time.Duration {
	return spec.Workload.Warmup.Duration + spec.Workload.Duration.Duration + spec.DrainTimeout.Duration + runSetupMargin
}

// Runner returns the Deployment of the runner of a destination, without owner
// reference: one pod, against the destination's cluster, that executes the runs the
// benchmark's status assigns to the destination, one after the other, and records each
// in its LoggingBenchmarkRun. One per cluster: its pgbench is the cluster image's, only
// that cluster's credentials reach it, and its placement is relative to that cluster's
// primary.
func Runner(
	benchmark *v1alpha1.LoggingBenchmark, dest v1alpha1.Destination, in RunnerInput,
) (*appsv1.Deployment, error) {
	spec := &benchmark.Spec
	clusterName := ClusterName(benchmark.Name, dest.Name)
	// The runner fills in each run's client count and repeat.
	request, err := agent.Request{
		Benchmark:    benchmark.Name,
		BenchmarkUID: benchmark.UID,
		Namespace:    benchmark.Namespace,
		ClusterName:  clusterName,
		Destination:  dest,
		Logging:      spec.Logging,
		Workload:     spec.Workload,
		DrainTimeout: spec.DrainTimeout,
		Counter:      spec.Postgres.Counter,
	}.Encode()
	if err != nil {
		return nil, err
	}
	workload := spec.Workload
	labels := RunnerLabels(benchmark.Name, dest.Name)
	superuserSecret := clusterName + "-superuser"

	binMount := corev1.VolumeMount{Name: agentBinVolume, MountPath: agentBinDir}
	env := append([]corev1.EnvVar{
		{Name: agent.RunnerEnv, Value: request},
		{Name: "PGHOST", Value: clusterName + "-rw"},
		{Name: "PGPORT", Value: strconv.Itoa(int(cloudnativepg.PostgresPort))},
		{Name: "PGDATABASE", Value: applicationDBName},
		secretEnv("PGUSER", superuserSecret, corev1.BasicAuthUsernameKey),
		secretEnv("PGPASSWORD", superuserSecret, corev1.BasicAuthPasswordKey),
	}, shipping.CredentialsEnv(dest.Loki)...)
	mounts := []corev1.VolumeMount{binMount, {Name: agentTmpVolume, MountPath: "/tmp"}}
	volumes := []corev1.Volume{
		{Name: agentBinVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: agentTmpVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	if scripts := workload.Scripts; scripts != nil {
		// The user's SQL runs as the application owner, never as the superuser.
		appSecret := clusterName + "-app"
		env = append(env,
			secretEnv(agent.ApplicationUserEnv, appSecret, corev1.BasicAuthUsernameKey),
			secretEnv(agent.ApplicationPasswordEnv, appSecret, corev1.BasicAuthPasswordKey))
		mounts = append(mounts, corev1.VolumeMount{Name: agentScriptsVolume, MountPath: agent.ScriptsDir, ReadOnly: true})
		volumes = append(volumes, scriptsVolume(scripts))
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: benchmark.Namespace,
			Name:      RunnerName(benchmark.Name, dest.Name),
			Labels:    labels,
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			// Never two runners of a cluster at once: each would run the assigned run.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Affinity:           placementAffinity(spec.PlacementOf(dest), clusterName),
					ServiceAccountName: AgentServiceAccountName,
					ImagePullSecrets:   in.PullSecrets,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   new(true),
						RunAsUser:      ptr.To[int64](postgresUID),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					InitContainers: []corev1.Container{{
						Name:            "install-agent",
						Image:           in.InstallerImage,
						Command:         []string{"/logbench", "install-agent", agentBinary},
						VolumeMounts:    []corev1.VolumeMount{binMount},
						SecurityContext: RestrictedContainerSecurityContext(),
						// An exit with an error leaves the log's last lines in the pod's status,
						// where the operator reads why the runner fails.
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					}},
					Containers: []corev1.Container{{
						Name:    AgentContainer,
						Image:   in.ClusterImage,
						Command: []string{agentBinary, "agent", "runner"},
						// Loki's credentials, when it has some, count the run's records there.
						Env:                      env,
						VolumeMounts:             mounts,
						Resources:                spec.Workload.Resources,
						SecurityContext:          RestrictedContainerSecurityContext(),
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					}},
					Volumes: volumes,
				},
			},
		},
	}, nil
}

// scriptsVolume mounts the keys of workload.scripts' ConfigMap, and only those,
// read-only. It is optional so that a missing ConfigMap or key does not hold the pod in
// ContainerCreating: the agent starts and fails the run at once, naming what is missing.
func scriptsVolume(scripts *v1alpha1.WorkloadScripts) corev1.Volume {
	source := &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: scripts.ConfigMap.Name},
		DefaultMode:          ptr.To[int32](0o444),
		Optional:             new(true),
	}
	for _, key := range scripts.Keys() {
		source.Items = append(source.Items, corev1.KeyToPath{Key: string(key), Path: string(key)})
	}
	return corev1.Volume{Name: agentScriptsVolume, VolumeSource: corev1.VolumeSource{ConfigMap: source}}
}

// placementAffinity places the pgbench pod against the cluster's primary as the
// destination's placement says.
func placementAffinity(placement v1alpha1.Placement, cluster string) *corev1.Affinity {
	primary := nodeOfPods(cloudnativepg.PrimaryPodLabels(cluster))
	switch placement {
	case v1alpha1.PlacementSameNode:
		return &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{primary},
		}}
	case v1alpha1.PlacementAnywhere:
		return nil
	}
	return preferApart(corev1.WeightedPodAffinityTerm{Weight: 100, PodAffinityTerm: primary})
}

// nodeOfPods selects the nodes of the pods that carry labels.
func nodeOfPods(labels map[string]string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
		TopologyKey:   corev1.LabelHostname,
	}
}

// preferApart prefers the nodes the terms do not select. Preferred, not required: a
// single-node cluster still runs the benchmark.
func preferApart(terms ...corev1.WeightedPodAffinityTerm) *corev1.Affinity {
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: terms,
	}}
}

// secretEnv references a key of a Secret: the operator never reads the value.
func secretEnv(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret},
			Key:                  key,
		},
	}}
}

// RestrictedContainerSecurityContext satisfies the restricted Pod Security Standard.
func RestrictedContainerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: new(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}
