package kind

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/logbench/logbench/internal/testenv"
)

// kindNetworking is the part of hack/kind/cluster.yaml (kind's v1alpha4 Cluster) that the
// offline node's network must agree with.
type kindNetworking struct {
	Networking struct {
		PodSubnet     string `json:"podSubnet"`
		ServiceSubnet string `json:"serviceSubnet"`
	} `json:"networking"`
}

// netpolModule is the module whose version tags the network policy controller's image.
const netpolModule = "github.com/cloudnativelabs/kube-router/v2"

// TestOfflineNodeNetwork checks the network that hack/kind/node-image.sh writes into the
// offline node image against the cluster kind creates from cluster.yaml, without a
// cluster: the pods' CNI bridge hands out addresses of the cluster's pod subnet, and
// kind's default CNI manifest runs the local cluster's network policy controller, so
// that the suite's NetworkPolicy spec passes on kind as on the local cluster. Neither
// subnet may overlap the local cluster's, which may run on the same machine.
func TestOfflineNodeNetwork(t *testing.T) {
	var cluster kindNetworking
	readDocument(t, "cluster.yaml", &cluster)
	podSubnet := parseCIDR(t, "cluster.yaml's podSubnet", cluster.Networking.PodSubnet)
	serviceSubnet := parseCIDR(t, "cluster.yaml's serviceSubnet", cluster.Networking.ServiceSubnet)

	local := strings.Fields(run(t, "bash", "-c", `source ../local-cluster/lib.sh && echo "$CLUSTER_CIDR $SERVICE_CIDR"`))
	if len(local) != 2 {
		t.Fatalf("the local cluster's CLUSTER_CIDR and SERVICE_CIDR: got %q", local)
	}
	for _, kind := range []struct {
		name   string
		subnet *net.IPNet
	}{{"podSubnet", podSubnet}, {"serviceSubnet", serviceSubnet}} {
		for _, cidr := range local {
			if localSubnet := parseCIDR(t, "the local cluster's subnet", cidr); overlap(kind.subnet, localSubnet) {
				t.Errorf("cluster.yaml's %s %s overlaps the local cluster's %s (hack/local-cluster/lib.sh)",
					kind.name, kind.subnet, localSubnet)
			}
		}
	}

	node := t.TempDir()
	run(t, "bash", "node-image.sh", "--network-files", node)

	var conflist struct {
		Plugins []struct {
			Type string `json:"type"`
			IPAM struct {
				Ranges [][]struct {
					Subnet string `json:"subnet"`
				} `json:"ranges"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	readDocument(t, filepath.Join(node, "etc/cni/net.d/10-bridge.conflist"), &conflist)
	var bridgeRanges int
	for _, plugin := range conflist.Plugins {
		if plugin.Type != "bridge" {
			continue
		}
		for _, set := range plugin.IPAM.Ranges {
			for _, r := range set {
				bridgeRanges++
				if subnet := parseCIDR(t, "the bridge's range", r.Subnet); !within(subnet, podSubnet) {
					t.Errorf("the CNI bridge hands out %s, outside cluster.yaml's podSubnet %s", subnet, podSubnet)
				}
			}
		}
	}
	if bridgeRanges == 0 {
		t.Errorf("the node's CNI configuration has no bridge with an address range: %+v", conflist)
	}

	checkNetworkPolicyController(t, filepath.Join(node, "kind/manifests/default-cni.yaml"), serviceSubnet)
}

// checkNetworkPolicyController checks that kind's default CNI manifest runs the network
// policy controller on the node's network, with the firewall alone, the cluster's service
// subnet and the permissions its informers and its node lookup need.
func checkNetworkPolicyController(t *testing.T, manifestPath string, serviceSubnet *net.IPNet) {
	t.Helper()
	manifest, err := os.ReadFile(manifestPath)
	if err != nil {
		t.Fatal(err)
	}
	objects, err := testenv.DecodeManifest(bytes.NewReader(manifest))
	if err != nil {
		t.Fatalf("kind's default CNI manifest: %v", err)
	}
	var daemonSets []appsv1.DaemonSet
	var roles []rbacv1.ClusterRole
	var bindings []rbacv1.ClusterRoleBinding
	for _, object := range objects {
		var into any
		switch object.GetKind() {
		case "DaemonSet":
			daemonSets = append(daemonSets, appsv1.DaemonSet{})
			into = &daemonSets[len(daemonSets)-1]
		case "ClusterRole":
			roles = append(roles, rbacv1.ClusterRole{})
			into = &roles[len(roles)-1]
		case "ClusterRoleBinding":
			bindings = append(bindings, rbacv1.ClusterRoleBinding{})
			into = &bindings[len(bindings)-1]
		default:
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, into); err != nil {
			t.Fatalf("%s %s: %v", object.GetKind(), object.GetName(), err)
		}
	}
	if len(daemonSets) != 1 {
		t.Fatalf("kind's default CNI manifest has %d DaemonSets, want the network policy controller's", len(daemonSets))
	}
	daemonSet := daemonSets[0]
	pod := daemonSet.Spec.Template.Spec
	if daemonSet.Namespace != "kube-system" || !pod.HostNetwork {
		t.Errorf("DaemonSet %s/%s: want it in kube-system on the node's network (hostNetwork %v)",
			daemonSet.Namespace, daemonSet.Name, pod.HostNetwork)
	}
	if !slices.ContainsFunc(pod.Tolerations, func(toleration corev1.Toleration) bool {
		return toleration.Operator == corev1.TolerationOpExists && toleration.Key == ""
	}) {
		t.Errorf("DaemonSet %s tolerates %+v: a node's taints must not keep its firewall away", daemonSet.Name, pod.Tolerations)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("DaemonSet %s has %d containers, want the controller alone", daemonSet.Name, len(pod.Containers))
	}
	container := pod.Containers[0]
	if want := "logbench.local/kube-router-netpol:" + netpolVersion(t); container.Image != want {
		t.Errorf("the controller's image is %q, want %q (the node image preloads the local cluster's build)", container.Image, want)
	}
	if container.SecurityContext == nil || container.SecurityContext.Privileged == nil || !*container.SecurityContext.Privileged {
		t.Errorf("the controller is not privileged: it programs the node's iptables and ipsets")
	}
	for _, arg := range []string{"--run-firewall=true", "--run-router=false", "--run-service-proxy=false",
		"--run-loadbalancer=false", "--service-cluster-ip-range=" + serviceSubnet.String()} {
		if !slices.Contains(container.Args, arg) {
			t.Errorf("the controller's arguments %q lack %s", container.Args, arg)
		}
	}

	var granted []rbacv1.PolicyRule
	for _, binding := range bindings {
		bound := slices.ContainsFunc(binding.Subjects, func(subject rbacv1.Subject) bool {
			return subject.Kind == rbacv1.ServiceAccountKind && subject.Name == pod.ServiceAccountName &&
				subject.Namespace == daemonSet.Namespace
		})
		for _, role := range roles {
			if bound && binding.RoleRef.Kind == "ClusterRole" && binding.RoleRef.Name == role.Name {
				granted = append(granted, role.Rules...)
			}
		}
	}
	for _, need := range []struct{ group, resource, verb string }{
		{"", "nodes", "get"},
		{"", "pods", "list"}, {"", "pods", "watch"},
		{"", "namespaces", "list"}, {"", "namespaces", "watch"},
		{"networking.k8s.io", "networkpolicies", "list"}, {"networking.k8s.io", "networkpolicies", "watch"},
	} {
		if !slices.ContainsFunc(granted, func(rule rbacv1.PolicyRule) bool {
			return slices.Contains(rule.APIGroups, need.group) && slices.Contains(rule.Resources, need.resource) &&
				slices.Contains(rule.Verbs, need.verb)
		}) {
			t.Errorf("service account %s/%s may not %s %s", daemonSet.Namespace, pod.ServiceAccountName, need.verb, need.resource)
		}
	}
}

// netpolVersion is the kube-router version that hack/local-cluster/netpol/go.mod pins.
func netpolVersion(t *testing.T) string {
	t.Helper()
	goMod, err := os.Open("../local-cluster/netpol/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = goMod.Close() }()
	scanner := bufio.NewScanner(goMod)
	for scanner.Scan() {
		if fields := strings.Fields(scanner.Text()); len(fields) >= 2 && fields[0] == netpolModule {
			return fields[1]
		}
	}
	t.Fatalf("hack/local-cluster/netpol/go.mod requires no %s (%v)", netpolModule, scanner.Err())
	return ""
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	output, err := exec.Command(name, args...).Output()
	if err != nil {
		var stderr []byte
		if exitErr := (*exec.ExitError)(nil); errors.As(err, &exitErr) {
			stderr = exitErr.Stderr
		}
		t.Fatalf("%s %q: %v\n%s", name, args, err, stderr)
	}
	return string(output)
}

func parseCIDR(t *testing.T, what, cidr string) *net.IPNet {
	t.Helper()
	_, subnet, err := net.ParseCIDR(cidr)
	if err != nil {
		t.Fatalf("%s %q: %v", what, cidr, err)
	}
	return subnet
}

func overlap(a, b *net.IPNet) bool { return a.Contains(b.IP) || b.Contains(a.IP) }

// within reports whether inner lies inside outer.
func within(inner, outer *net.IPNet) bool {
	innerOnes, _ := inner.Mask.Size()
	outerOnes, _ := outer.Mask.Size()
	return outer.Contains(inner.IP) && innerOnes >= outerOnes
}
