package console

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a goroutine outlives the tests: the
// console's (Run's server and sampler, the handlers' /status readers),
// the browser's and the clients'.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
