package claudecode

import (
	"testing"

	"github.com/joulehook/joule/plugins/hook/hooktest"
)

func TestGolden(t *testing.T) { hooktest.Golden(t, Adapter{}) }

func FuzzParse(f *testing.F) { hooktest.Fuzz(f, Adapter{}) }
