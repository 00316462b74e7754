package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/agent"
	"github.com/logbench/logbench/internal/runner"
)

// runRetryDelay separates the attempts of a failed run: long enough for a restarting
// primary or a reloading shipper to come back.
const runRetryDelay = 10 * time.Second

func init() {
	subcommands = append(subcommands, newAgentCommand)
}

func newAgentCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:    "agent",
		Short:  "The in-cluster agent that runs pgbench (started by the operator)",
		Hidden: true,
		Args:   cobra.NoArgs,
	}
	cmd.AddCommand(&cobra.Command{
		Use: "runner",
		Short: "Run the runs the benchmark assigns to this pod's destination, one after the other " +
			"(the operator's runner Deployments)",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			template, err := agent.DecodeTemplate(os.Getenv(agent.RunnerEnv))
			if err != nil {
				return err
			}
			pgbenchPath, err := exec.LookPath("pgbench")
			if err != nil {
				return fmt.Errorf("pgbench not found in the PostgreSQL image: %w", err)
			}
			c, err := runnerClient()
			if err != nil {
				return err
			}
			// A pod's hostname is its name, which the ReplicaSet keeps under 64 characters.
			pod, err := os.Hostname()
			if err != nil {
				return err
			}
			env := agent.Environment{
				Connect:      func(ctx context.Context) (*pgx.Conn, error) { return pgx.Connect(ctx, "") },
				Kubernetes:   inClusterClient,
				Pgbench:      pgbenchPath,
				ScratchDir:   os.TempDir(),
				LogDirectory: agent.FileLogDirectory,
				ScriptsDir:   agent.ScriptsDir,
				Application: agent.Role{
					User: os.Getenv(agent.ApplicationUserEnv), Password: os.Getenv(agent.ApplicationPasswordEnv),
				},
				ConnectAs: connectAs,
			}
			// The pod's deletion stops the run in progress, pgbench with it: the runner
			// that replaces this one runs it again.
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			return (&runner.Runner{
				Client:   c,
				Template: template,
				Run: func(ctx context.Context, req agent.Request) (v1alpha1.RepeatResult, error) {
					return agent.Run(ctx, req, env)
				},
				Pod:        pod,
				RetryDelay: runRetryDelay,
				Log: zap.New().WithValues("benchmark", template.Benchmark, "namespace", template.Namespace,
					"destination", template.Destination.Name),
			}).Start(ctx)
		},
	})
	return cmd
}

// runnerClient reads the benchmark and the pods, and writes the benchmark's runs'
// records, with the pod's ServiceAccount.
func runnerClient() (client.WithWatch, error) {
	config, err := rest.InClusterConfig()
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := errors.Join(v1alpha1.AddToScheme(scheme), corev1.AddToScheme(scheme)); err != nil {
		return nil, err
	}
	return client.NewWithWatch(config, client.Options{Scheme: scheme})
}

// connectAs opens a session as role to the server libpq's PG* variables describe.
func connectAs(ctx context.Context, role agent.Role) (*pgx.Conn, error) {
	config, err := pgx.ParseConfig("")
	if err != nil {
		return nil, err
	}
	config.User, config.Password = role.User, role.Password
	return pgx.ConnectConfig(ctx, config)
}

func inClusterClient() (kubernetes.Interface, error) {
	config, err := rest.InClusterConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(config)
}
