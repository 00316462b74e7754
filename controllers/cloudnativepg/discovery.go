package cloudnativepg

import (
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// Check returns why the API server at config serves no CloudNativePG Cluster logbench
// can drive (ClusterGVK), or "" when it serves one; err is a failure to ask. The
// manager must not watch Clusters when it serves none: its cache would never sync and
// the operator would crash-loop without saying why.
func Check(config *rest.Config) (unavailable string, err error) {
	client, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return "", err
	}
	return Unavailable(client)
}

// Unavailable is Check asking client.
func Unavailable(client discovery.DiscoveryInterface) (string, error) {
	const install = "install a supported CloudNativePG (docs/compatibility.md); the operator restarts once it is served"
	groupVersion := ClusterGVK.GroupVersion()
	resources, err := client.ServerResourcesForGroupVersion(groupVersion.String())
	if apierrors.IsNotFound(err) {
		groups, err := client.ServerGroups()
		if err != nil {
			return "", err
		}
		for _, group := range groups.Groups {
			if group.Name == groupVersion.Group {
				served := make([]string, 0, len(group.Versions))
				for _, version := range group.Versions {
					served = append(served, version.Version)
				}
				return fmt.Sprintf("CloudNativePG's API %s is served at %v, not at %s, the version logbench drives: %s",
					groupVersion.Group, served, groupVersion.Version, install), nil
			}
		}
		return fmt.Sprintf("CloudNativePG is not installed: the API server serves no %s (CRD clusters.%s): %s",
			groupVersion, groupVersion.Group, install), nil
	}
	if err != nil {
		return "", fmt.Errorf("asking the API server for CloudNativePG's %s: %w", groupVersion, err)
	}
	if !slices.ContainsFunc(resources.APIResources, func(resource metav1.APIResource) bool {
		return resource.Name == "clusters" && resource.Kind == ClusterGVK.Kind
	}) {
		return fmt.Sprintf("the API server serves %s without its Cluster kind: %s", groupVersion, install), nil
	}
	return "", nil
}
