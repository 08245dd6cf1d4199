package systeme2e

import (
	"os"
	"testing"

	"github.com/joulehook/joule/plugins/hook/hosttest"
)

func TestMain(m *testing.M) {
	if helperMain() {
		return
	}
	os.Exit(hosttest.Main(m, "../../..", "joule-hook"))
}
