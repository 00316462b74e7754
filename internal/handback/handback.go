// Package handback reads the v1alpha1.RepeatResult an agent Job of an older operator
// handed back as JSON in its pod's termination message, so that the operator records the
// runs such Jobs finish across an upgrade. It stands apart from the controllers so that
// it links nothing of client-go and fuzzing the reader instruments a small test binary.
package handback

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/benchstatus"
)

// Decode parses an agent's termination message.
func Decode(message string) (v1alpha1.RepeatResult, error) {
	var r v1alpha1.RepeatResult
	if err := json.Unmarshal([]byte(message), &r); err != nil {
		return r, fmt.Errorf("decoding agent result: %w", err)
	}
	return r, nil
}

// FromTermination turns the termination message of a finished Job's agent into the
// run's result. failure is empty when the Job completed, else why it failed.
func FromTermination(message, failure string) v1alpha1.RepeatResult {
	result, decodeErr := Decode(message)
	switch {
	case failure == "" && decodeErr == nil:
		return result
	case failure == "" && strings.TrimSpace(message) == "":
		return v1alpha1.RepeatResult{Error: "the agent completed but its pod, holding the result, is gone"}
	case failure == "":
		return v1alpha1.RepeatResult{Error: benchstatus.Truncate("the agent completed with an unreadable result: " + message)}
	case decodeErr == nil && result.Error != "":
		return v1alpha1.RepeatResult{Error: benchstatus.Truncate(result.Error)}
	case decodeErr != nil && strings.TrimSpace(message) != "":
		// Not the agent's JSON: a crash or the runtime's own message says more than the Job.
		return v1alpha1.RepeatResult{Error: benchstatus.Truncate(strings.TrimSpace(message))}
	default:
		return v1alpha1.RepeatResult{Error: benchstatus.Truncate(failure)}
	}
}
