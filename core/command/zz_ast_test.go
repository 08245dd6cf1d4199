package command
import ("os";"strings";"testing";"mvdan.cc/sh/v3/syntax")
func TestDump(t *testing.T) {
	lang := syntax.LangBash
	if os.Getenv("LANGV")=="posix" { lang = syntax.LangPOSIX }
	if os.Getenv("LANGV")=="mksh" { lang = syntax.LangMirBSDKorn }
	for _, l := range strings.Split(os.Getenv("SRC"), "\n") {
		f, err := syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(l), "")
		if err != nil { t.Logf("%q: ERR %v", l, err); continue }
		t.Logf("%q", l)
		syntax.DebugPrint(os.Stdout, f)
		os.Stdout.WriteString("\n")
	}
}
