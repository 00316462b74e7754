// Package crd embeds the generated CustomResourceDefinitions, so that a LoggingBenchmark
// read from a file gets exactly the defaults and validation the API server applies.
package crd

import _ "embed"

// LoggingBenchmark is the CRD of bench.logbench.io/v1alpha1 LoggingBenchmark.
//
//go:embed bases/bench.logbench.io_loggingbenchmarks.yaml
var LoggingBenchmark []byte
