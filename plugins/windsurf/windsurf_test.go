package windsurf

import (
	"testing"

	"github.com/joulehook/joule/plugins/hook/hooktest"
)

func TestGolden(t *testing.T) { hooktest.Golden(t, Adapter{Dir: "/home/dev/repo"}) }

func FuzzParse(f *testing.F) { hooktest.Fuzz(f, Adapter{Dir: "/home/dev/repo"}) }
