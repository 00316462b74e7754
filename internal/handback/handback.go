// Package handback is how an agent run hands its v1alpha1.RepeatResult back to the
// operator: as JSON in its pod's termination message, which the agent writes and the
// operator reads. It stands apart from both sides, which share the format, so that it
// links nothing of client-go and fuzzing the reader instruments a small test binary.
package handback

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/benchstatus"
	"github.com/logbench/logbench/internal/text"
)

// maxErrorLength keeps a failure's result inside the 4 KiB termination message.
const maxErrorLength = 3000

// Write writes the result, or the error as a failed result, as JSON.
func Write(w io.Writer, result v1alpha1.RepeatResult, runErr error) error {
	if runErr != nil {
		result = v1alpha1.RepeatResult{Repeat: result.Repeat, Error: text.Truncate(runErr.Error(), maxErrorLength)}
	}
	return json.NewEncoder(w).Encode(result)
}

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
