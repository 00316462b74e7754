package agent

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/logbench/logbench/internal/bench"
	"github.com/logbench/logbench/internal/meter"
	"github.com/logbench/logbench/internal/shipping"
)

// serverDirectory reads a log directory of the database server through SQL
// (pg_ls_dir, pg_read_binary_file: superuser only), since the agent runs in its own pod.
type serverDirectory struct {
	conn *pgx.Conn
	path string
}

func (d serverDirectory) List(ctx context.Context) ([]bench.LogFile, error) {
	rows, err := d.conn.Query(ctx, `
		SELECT name, (pg_stat_file($1 || '/' || name)).size
		FROM pg_ls_dir($1, true, false) AS name
		ORDER BY name`, d.path)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (bench.LogFile, error) {
		var f bench.LogFile
		err := row.Scan(&f.Name, &f.Size)
		return f, err
	})
}

func (d serverDirectory) ReadAt(ctx context.Context, name string, offset int64, n int) ([]byte, error) {
	var chunk []byte
	err := d.conn.QueryRow(ctx, "SELECT pg_read_binary_file($1, $2, $3)",
		d.path+"/"+name, offset, int64(n)).Scan(&chunk)
	return chunk, err
}

// Labels CloudNativePG puts on the primary instance pod; older releases use "role".
var primaryPodSelectors = []string{
	"cnpg.io/instanceRole=primary",
	"role=primary",
}

// primaryPod finds the instance pod of the cluster's primary.
func primaryPod(ctx context.Context, client kubernetes.Interface, namespace, cluster string) (*corev1.Pod, error) {
	for _, selector := range primaryPodSelectors {
		pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{
			LabelSelector: "cnpg.io/cluster=" + cluster + "," + selector,
		})
		if err != nil {
			return nil, fmt.Errorf("finding the primary of %s: %w", cluster, err)
		}
		if len(pods.Items) > 0 {
			return &pods.Items[0], nil
		}
	}
	return nil, fmt.Errorf("cluster %s has no primary pod", cluster)
}

// podMeter measures the run with the meter of the primary's instance pod, and that of
// the receiver's pod for a forwarding Syslog destination (through its Service); nil when
// there is no cluster (tests) or the pod has no meter (a cluster created before logbench
// added one).
func podMeter(ctx context.Context, env Environment, req Request) (bench.Meter, error) {
	if env.Kubernetes == nil {
		return nil, nil
	}
	client, err := env.Kubernetes()
	if err != nil {
		return nil, fmt.Errorf("connecting to the Kubernetes API to find the pod's meter: %w", err)
	}
	pod, err := primaryPod(ctx, client, req.Namespace, req.ClusterName)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == meter.ContainerName }) {
		return nil, nil
	}
	if pod.Status.PodIP == "" {
		return nil, fmt.Errorf("pod %s has no IP for its meter", pod.Name)
	}
	instance := meter.Client{URL: meterURL(pod.Status.PodIP)}
	if !shipping.ForwardsSyslog(req.Destination) {
		return instance, nil
	}
	receiver := meter.Client{URL: meterURL(req.shippingTarget().SyslogReceiverHost())}
	return meter.WithReceiver{Pod: instance, Receiver: receiver}, nil
}

func meterURL(host string) string {
	return "http://" + net.JoinHostPort(host, strconv.Itoa(meter.Port))
}

// shippingTarget is where the run's destination ships, for the shipping package.
func (r Request) shippingTarget() shipping.Target {
	return shipping.Target{
		Namespace: r.Namespace, Benchmark: r.Benchmark, Destination: r.Destination, Cluster: r.ClusterName,
	}
}
