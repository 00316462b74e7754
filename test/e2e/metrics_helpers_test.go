//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// metricsReader is the ServiceAccount the suite reads the operator's metrics as, bound to
// the chart's metrics-reader ClusterRole: the endpoint serves HTTPS to authenticated and
// authorized clients only.
const (
	metricsReader = "e2e-metrics-reader"
	metricsPort   = 8443
)

// forwardedPort matches kubectl port-forward's first line, naming the local port.
var forwardedPort = regexp.MustCompile(`^Forwarding from 127\.0\.0\.1:(\d+) -> `)

// scrapeMetrics reads the operator's metrics as metricsReader, through kubectl
// port-forward: the API server's service proxy would not pass the token on.
func scrapeMetrics(ctx context.Context) (string, error) {
	token, err := metricsReaderToken(ctx)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	args := append(append([]string{}, kubectlArgs...), "-n", operatorNamespace, "port-forward",
		"--address", "127.0.0.1", "service/logbench-metrics", fmt.Sprintf(":%d", metricsPort))
	forward := exec.CommandContext(ctx, "kubectl", args...)
	output, err := forward.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := forward.Start(); err != nil {
		return "", err
	}
	defer func() { cancel(); _ = forward.Wait() }()
	line, err := bufio.NewReader(output).ReadString('\n')
	match := forwardedPort.FindStringSubmatch(line)
	if err != nil || match == nil {
		return "", fmt.Errorf("kubectl port-forward said %q: %v", line, err)
	}
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://127.0.0.1:"+match[1]+"/metrics", nil)
	if err != nil {
		return "", err
	}
	request.Header.Set("Authorization", "Bearer "+token)
	// The operator's certificate is self-signed, as kubebuilder's scaffold serves it.
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	response, err := insecure.Do(request)
	if err != nil {
		return "", err
	}
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	if err != nil {
		return "", err
	}
	if response.StatusCode != http.StatusOK {
		return "", fmt.Errorf("the metrics endpoint answered %s: %s", response.Status, body)
	}
	return string(body), nil
}

// scrapeMetricsWithoutToken reads the metrics through the API server's service proxy,
// which reaches the operator with no token: the endpoint must refuse it.
func scrapeMetricsWithoutToken(ctx context.Context) (string, error) {
	body, err := clientset.CoreV1().Services(operatorNamespace).
		ProxyGet("https", "logbench-metrics", "metrics", "/metrics", nil).DoRaw(ctx)
	return string(body), err
}

// metricsReaderToken returns a short-lived token of metricsReader, creating the account
// and its binding to the chart's metrics-reader ClusterRole first.
func metricsReaderToken(ctx context.Context) (string, error) {
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: metricsReader}}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: metricsReader},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "logbench-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: operatorNamespace, Name: metricsReader}},
	}
	for _, object := range []client.Object{account, binding} {
		if err := client.IgnoreAlreadyExists(k8sClient.Create(ctx, object)); err != nil {
			return "", err
		}
	}
	request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(600))}}
	token, err := clientset.CoreV1().ServiceAccounts(operatorNamespace).CreateToken(ctx, metricsReader, request, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return token.Status.Token, nil
}
