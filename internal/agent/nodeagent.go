package agent

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"
	"k8s.io/client-go/kubernetes"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/bench"
	"github.com/logbench/logbench/internal/records"
	"github.com/logbench/logbench/internal/shipping"
)

// DefaultNodeAgentSelector selects the primary's container log under the labels
// Promtail, Grafana Alloy and the common Fluent Bit DaemonSet setups attach.
const DefaultNodeAgentSelector = `{namespace="${namespace}", pod="${pod}"}`

// postgresContainer is the container of a CloudNativePG instance pod that runs the server.
const postgresContainer = "postgres"

// NodeAgentSelector is the LogQL stream selector of a Stdout destination's records in
// its node agent's Loki: the destination's selector, or the default, with the primary's
// names in place of ${namespace}, ${pod}, ${container} and ${cluster}. Kubernetes names
// hold no quote or backslash, so they need no escaping inside LogQL's quotes.
func NodeAgentSelector(loki v1alpha1.LokiSpec, namespace, pod, cluster string) string {
	selector := loki.Selector
	if selector == "" {
		selector = DefaultNodeAgentSelector
	}
	return strings.NewReplacer(
		"${namespace}", namespace,
		"${pod}", pod,
		"${container}", postgresContainer,
		"${cluster}", cluster,
	).Replace(selector)
}

// nodeAgentUnexplained is the reason of records the container log held and Loki does
// not when Loki reports no refusal of them.
const nodeAgentUnexplained = "loki reports no refusal: the node agent lost the records between the container log " +
	"and loki (its tail fell behind a rotation of the log, its buffer filled, or its retries ran out), " +
	"or still holds them"

// containerLogStage is the container log's name among a row's stages.
const containerLogStage = "containerLog"

// unverifiedStageUnknown is the reason of records Loki lacks when a rotation hid some of
// the container log from logbench: the losing stage cannot be told.
const unverifiedStageUnknown = "records were lost between the server and loki, by the kubelet, the node agent or " +
	"loki: logbench could not count the whole container log (a rotation under its stream) to tell which"

// nodeAgentRun counts the records of a run of a Stdout destination in the Loki the
// platform's node agent ships the container log to and, unless the destination skips it,
// in the container log as the kubelet holds it: the two stages tell the kubelet's losses
// from those of the agent and Loki.
type nodeAgentRun struct {
	loki *lokiRun
	// containerLog counts the run's records in the container log; nil when skipped.
	containerLog *containerLogRun
}

// newNodeAgentRun starts counting a run tagged tag of the cluster's primary in the node
// agent's Loki and, unless skipped, in its container log; connect opens the session whose
// marker starts a window of CloudNativePG's sampler the stream sees (openSamplerWindow).
func newNodeAgentRun(
	ctx context.Context, req Request, client kubernetes.Interface, format records.Format, tag string,
	connect func(context.Context) (*pgx.Conn, error),
) (*nodeAgentRun, func(), error) {
	pod, err := primaryPod(ctx, client, req.Namespace, req.ClusterName)
	if err != nil {
		return nil, func() {}, err
	}
	loki := shipping.NewLokiClient(*req.Destination.Loki, os.Getenv)
	selector := NodeAgentSelector(*req.Destination.Loki, req.Namespace, pod.Name, req.ClusterName)
	run := &nodeAgentRun{loki: startLokiRun(ctx, loki, selector, tag, bench.SystemClock)}
	if !req.Destination.CountsContainerLog() {
		return run, func() {}, nil
	}
	containerLog, closeLog, err := newContainerLogRun(ctx, client, req, format, tag, connect)
	if err != nil {
		return nil, func() {}, err
	}
	run.containerLog = &containerLog
	return run, closeLog, nil
}

// Delivered is Loki's count of the run's records.
func (r *nodeAgentRun) Delivered(ctx context.Context) (int64, error) {
	return r.loki.Delivered(ctx)
}

// Account counts the stages, names the one that lost records and says why as far as the
// kubelet's rotations and Loki's counters tell. A container log count that a rotation
// cut short is unverified: LostAt never blames the kubelet for what logbench's stream
// could not read.
func (r *nodeAgentRun) Account(
	ctx context.Context, want records.Expectation, delivered int64,
) (v1alpha1.Records, error) {
	refused, trouble := r.loki.since(ctx, delivered)
	stages := v1alpha1.RecordStages{Stored: &delivered}
	streamMissed, unverifiedReason := false, ""
	if r.containerLog != nil {
		inLog, err := r.containerLog.Delivered(ctx)
		if err != nil {
			return v1alpha1.Records{}, fmt.Errorf("counting the run's records in the container log: %w", err)
		}
		count, missed, err := r.containerLog.count(ctx, want, inLog)
		if err != nil {
			return v1alpha1.Records{}, err
		}
		stages.ContainerLog = &count.Delivered
		streamMissed = missed
		if count.Unverified > 0 {
			stages.UnverifiedAt, stages.Unverified = containerLogStage, count.Unverified
			unverifiedReason = count.UnverifiedReason
		}
	}
	stages.Duplicates = shipping.StoredDuplicates(want, stages, shipping.OutputCounters{}, refused)
	stages.LostAt = stages.LosingStage(want.Exact())
	var sampler *v1alpha1.SamplerCheck
	if r.containerLog != nil {
		sampler = r.containerLog.checkSampler(want, *stages.ContainerLog, streamMissed)
	}
	stageReasons, err := r.stageReasons(ctx, stages, sampler)
	if err != nil {
		return v1alpha1.Records{}, err
	}
	accounted := shipping.Account(want, delivered, shipping.OutputCounters{}, refused, &stages, trouble, stageReasons,
		nodeAgentUnexplained)
	if stages.Unverified > 0 {
		accounted.UnverifiedReason = unverifiedContainerLog(stages, unverifiedReason)
	}
	accounted.Sampler = sampler
	return accounted, nil
}

// unverifiedContainerLog says what a rotation hid from the container log's count, and
// what the node agent, which reads the rotated files, stored of it.
func unverifiedContainerLog(stages v1alpha1.RecordStages, containerLogReason string) string {
	inLog := *stages.ContainerLog
	reason := "container log: " + containerLogReason
	if stored := *stages.Stored - stages.Duplicates; stored > inLog {
		reason += fmt.Sprintf("; the node agent, which reads the rotated files, stored %d records beyond the %d "+
			"logbench's stream read", stored-inLog, inLog)
	}
	return reason
}

// stageReasons explain the losing stage of a Stdout destination counted in the container
// log and in its node agent's Loki: the container log's own shortfall (the sampler
// check's message, or unexplained), or the records it held that Loki does not, with the
// kubelet's rotations the agent had to keep up with.
func (r *nodeAgentRun) stageReasons(
	ctx context.Context, stages v1alpha1.RecordStages, sampler *v1alpha1.SamplerCheck,
) ([]string, error) {
	if r.containerLog == nil {
		return nil, nil
	}
	inLog := *stages.ContainerLog
	switch {
	case stages.LostAt == containerLogStage && sampler != nil:
		return []string{sampler.Message}, nil
	case stages.LostAt == containerLogStage:
		return []string{containerLogShortfall}, nil
	case stages.LostAt == "":
		return nil, nil
	case stages.UnverifiedAt != "":
		return []string{unverifiedStageUnknown}, nil
	}
	rotated, err := r.containerLog.rotated(ctx, inLog)
	if err != nil || !rotated {
		return nil, err
	}
	return []string{fmt.Sprintf("the kubelet rotated the container log during the run: the node agent must read "+
		"each file before the kubelet removes it; %d records the container log held are not in loki",
		inLog-(*stages.Stored-stages.Duplicates))}, nil
}
