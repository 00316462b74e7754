package localrun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/bench"
)

// scriptsOf returns the contents of workload.scripts' keys, by key, from the ConfigMap
// it names among configMaps; none without scripts.
func scriptsOf(scripts *v1alpha1.WorkloadScripts, configMaps []corev1.ConfigMap) (map[string]string, error) {
	if scripts == nil {
		return nil, nil
	}
	for _, configMap := range configMaps {
		if configMap.Name != scripts.ConfigMap.Name {
			continue
		}
		contents := map[string]string{}
		for _, key := range scripts.Keys() {
			text, ok := configMap.Data[string(key)]
			if !ok {
				return nil, fmt.Errorf("spec.workload.scripts: the ConfigMap %s has no key %s in its data",
					configMap.Name, key)
			}
			contents[string(key)] = text
		}
		return contents, nil
	}
	return nil, fmt.Errorf("spec.workload.scripts: the ConfigMap %s is not in the file: add it as another YAML "+
		"document (---), as kubectl apply -f would take it", scripts.ConfigMap.Name)
}

// writeScripts writes the scripts' files, by key, to a directory in dir, which it
// returns, then runs their init through a session of the server at connString. Locally
// both run as the user running logbench, the local servers' superuser.
func writeScripts(
	ctx context.Context, dir string, scripts *v1alpha1.WorkloadScripts, contents map[string]string, connString string,
) (string, error) {
	scriptsDir := filepath.Join(dir, "scripts")
	if err := os.Mkdir(scriptsDir, 0o700); err != nil {
		return "", err
	}
	for key, text := range contents {
		if err := os.WriteFile(filepath.Join(scriptsDir, key), []byte(text), 0o400); err != nil {
			return "", err
		}
	}
	if scripts.Init == "" {
		return scriptsDir, nil
	}
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return scriptsDir, bench.InitScripts(ctx, conn, contents[string(scripts.Init)])
}
