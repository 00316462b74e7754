package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/agent"
	"github.com/logbench/logbench/internal/handback"
)

func init() {
	subcommands = append(subcommands, newAgentCommand)
}

func newAgentCommand() *cobra.Command {
	resultPath := agent.TerminationMessagePath
	cmd := &cobra.Command{
		Use:    "agent",
		Short:  "Run one benchmark execution inside a cluster (started by the operator's Jobs)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req, err := agent.DecodeRequest(os.Getenv(agent.RequestEnv))
			if err != nil {
				return err
			}
			pgbenchPath, err := exec.LookPath("pgbench")
			if err != nil {
				return fmt.Errorf("pgbench not found in the PostgreSQL image: %w", err)
			}
			result, runErr := agent.Run(cmd.Context(), req, agent.Environment{
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
			})
			result.Repeat = req.Repeat
			if err := writeResult(resultPath, result, runErr); err != nil {
				return err
			}
			if runErr != nil {
				return runErr
			}
			return handback.Write(cmd.OutOrStdout(), result, nil)
		},
	}
	cmd.Flags().StringVar(&resultPath, "result-file", resultPath,
		"where to write the JSON result (the pod's termination message)")
	return cmd
}

func writeResult(path string, result v1alpha1.RepeatResult, runErr error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing result: %w", err)
	}
	return errors.Join(handback.Write(f, result, runErr), f.Close())
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
