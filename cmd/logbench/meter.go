package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/logbench/logbench/internal/meter"
)

func init() {
	subcommands = append(subcommands, newMeterCommand)
}

func newMeterCommand() *cobra.Command {
	listen := net.JoinHostPort("", strconv.Itoa(meter.Port))
	var receiver bool
	cmd := &cobra.Command{
		Use:   "meter",
		Short: "Measure the CPU and memory of an instance pod's containers (the sidecar the operator adds)",
		Long: "Serves, on port " + strconv.Itoa(meter.Port) + ", measurements of the postgres container and the log " +
			"shipper of the instance pod it runs in, or with --receiver of a syslog receiver's pod, read from /proc: " +
			"the pod shares its process namespace.",
		Hidden: true,
		Args:   cobra.NoArgs,
		// Stopped by the pod's end (SIGTERM): it holds nothing to save.
		RunE: func(*cobra.Command, []string) error {
			sample := meter.PodSample("/proc", os.Getpid())
			if receiver {
				sample = meter.ReceiverPodSample("/proc", os.Getpid())
			}
			server := &http.Server{
				Addr:              listen,
				Handler:           meter.NewService(sample).Handler(),
				ReadHeaderTimeout: 10 * time.Second,
			}
			return fmt.Errorf("serving measurements: %w", server.ListenAndServe())
		},
	}
	cmd.Flags().BoolVar(&receiver, "receiver", false, "measure a syslog receiver's pod: every container is the receiver")
	return cmd
}
