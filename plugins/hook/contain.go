package hook

import (
	"strings"

	"github.com/joulehook/joule/plugins/hook/resident"
)

// ContainMode is how an install's hook treats the shell commands the gate
// allows (Scope.Contain, Record.Contain).
type ContainMode string

const (
	// Contained runs them under joule exec, confined by the kernel to the
	// grant: the default where the host's hook can replace a command. The
	// hook line ends in --contain.
	Contained ContainMode = resident.ModeContain
	// NoContain is an install that opted out (joule install --no-contain)
	// on a host that could contain: the hook line ends in --no-contain,
	// and every receipt of an allowed command says it was not contained.
	NoContain ContainMode = resident.ModeNoContain
	// AnalysisOnly is a host whose hook cannot replace a command: the
	// analysis alone decides, and the hook line carries no flag.
	AnalysisOnly ContainMode = "analysis-only"
)

// Flag is what the hook line carries for m, with its leading space: the
// flag joule hook and joule-hook take, "" for AnalysisOnly.
func (m ContainMode) Flag() string {
	switch m {
	case Contained, NoContain:
		return " --" + string(m)
	}
	return ""
}

// CutMode cuts a trailing containment flag (--contain, --no-contain) off
// a hook line and says which mode it named ("" for none).
func CutMode(line string) (string, ContainMode) {
	for _, m := range []ContainMode{Contained, NoContain} {
		if rest, ok := strings.CutSuffix(line, m.Flag()); ok {
			return rest, m
		}
	}
	return line, ""
}

// ModeInBytes is the containment mode of joule's entry in a file an
// install wrote before the record of installs kept the mode: Contained
// when it holds the --contain flag (or the OpenCode plugin's old switch),
// else "" (it did not contain: --no-contain did not exist yet).
func ModeInBytes(b []byte) ContainMode {
	s := string(b)
	if strings.Contains(s, "--"+string(Contained)) || strings.Contains(s, "const CONTAIN = true") {
		return Contained
	}
	return ""
}

// ResidentPath is the path of joule serve's http hook for host in mode m:
// /hooks/HOST, with /contain or /no-contain after it as the hook line's
// flag would say.
func ResidentPath(host string, m ContainMode) string {
	if f := m.Flag(); f != "" {
		return "/hooks/" + host + "/" + string(m)
	}
	return "/hooks/" + host
}

// IsResidentURL reports whether url is joule serve's http hook for host,
// in any containment mode.
func IsResidentURL(url, host string) bool {
	for _, m := range []ContainMode{"", Contained, NoContain} {
		if strings.HasSuffix(url, ResidentPath(host, m)) {
			return true
		}
	}
	return false
}
