package workload

import (
	"crypto/rand"
	"encoding/hex"
)

// nonceBytes gives 12 hex characters: every tag of a benchmark has a nonce of this one
// length, as NewTag requires.
const nonceBytes = maxNonceLength / 2

// RandomNonce returns a fresh nonce for NewTag, so that every attempt of a run has its
// own tag and records of an earlier, failed attempt are never counted.
func RandomNonce() (string, error) {
	b := make([]byte, nonceBytes)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
