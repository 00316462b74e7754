// Command netpol enforces NetworkPolicies on the local e2e cluster
// (hack/local-cluster), whose bridge CNI enforces none: it runs kube-router's network
// policy controller alone, with kube-router's own flags, as a process on the node like
// kube-proxy. Only the firewall runs: kube-router's routing and service proxy, where its
// published advisories lie, are neither built nor started.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/cloudnativelabs/kube-router/v2/pkg/controllers/netpol"
	"github.com/cloudnativelabs/kube-router/v2/pkg/healthcheck"
	"github.com/cloudnativelabs/kube-router/v2/pkg/options"
	"github.com/spf13/pflag"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	config := options.NewKubeRouterConfig()
	config.AddFlags(pflag.CommandLine)
	pflag.Parse()
	if config.HelpRequested {
		pflag.Usage()
		return
	}
	if err := run(config); err != nil {
		fmt.Fprintln(os.Stderr, "netpol:", err)
		os.Exit(1)
	}
}

func run(config *options.KubeRouterConfig) error {
	restConfig, err := clientcmd.BuildConfigFromFlags(config.Master, config.Kubeconfig)
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	clientset, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	config.RunFirewall = true

	var wg sync.WaitGroup
	stop := make(chan struct{})
	// The controller sends heartbeats, which the health controller must read.
	heartbeats := make(chan *healthcheck.ControllerHeartbeat, 10)
	health, err := healthcheck.NewHealthController(config)
	if err != nil {
		return err
	}
	wg.Add(1)
	go health.RunServer(stop, &wg)

	factory := informers.NewSharedInformerFactory(clientset, 0)
	pods := factory.Core().V1().Pods().Informer()
	namespaces := factory.Core().V1().Namespaces().Informer()
	policies := factory.Networking().V1().NetworkPolicies().Informer()
	factory.Start(stop)
	for informer, synced := range factory.WaitForCacheSync(stop) {
		if !synced {
			return fmt.Errorf("the %v informer did not sync", informer)
		}
	}
	health.SetAlive()
	wg.Add(1)
	go health.RunCheck(heartbeats, stop, &wg)

	iptables, ipsets, err := netpol.NewIPTablesHandlers(config)
	if err != nil {
		return err
	}
	var ipsetMutex sync.Mutex
	controller, err := netpol.NewNetworkPolicyController(clientset, config, pods, policies, namespaces,
		&ipsetMutex, iptables, ipsets)
	if err != nil {
		return err
	}
	for informer, handler := range map[cache.SharedIndexInformer]cache.ResourceEventHandler{
		pods: controller.PodEventHandler, namespaces: controller.NamespaceEventHandler,
		policies: controller.NetworkPolicyEventHandler,
	} {
		if _, err := informer.AddEventHandler(handler); err != nil {
			return err
		}
	}
	wg.Add(1)
	go controller.Run(heartbeats, stop, &wg)

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	<-signals
	close(stop)
	wg.Wait()
	// Leave no rule behind: the cluster's teardown removes the bridge the rules name.
	controller.Cleanup()
	return nil
}
