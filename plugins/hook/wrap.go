package hook

import (
	"os/exec"
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Guard is what a host's hook command must do when joule itself fails
// (missing, crashed, a non-zero exit, no or garbage output, hung) for the
// host not to run the tool: each host's failure table in docs/hosts.md.
// The zero Guard adds nothing, for a host that fails closed on its own
// (Claude Code's onFailure: block, Cursor's failClosed).
type Guard struct {
	// Exit2 is for a host that blocks on exit status 2 with the reason on
	// stderr and runs the tool on any other failure (Codex, Windsurf):
	// every exit of joule but 0 and 2 becomes exit 2 with a reason.
	Exit2 bool
	// Pass, for a host that reads only stdout (Gemini CLI, Cline), is the
	// shell case pattern of an answer of the host's form: joule's output is
	// passed through when it matches, and Deny printed instead when not.
	Pass string
	// Deny is the host's explicit deny, printed as a printf format whose
	// one %s, if any, is joule's exit status.
	Deny string
	// Limit bounds joule (seconds, SIGKILL two seconds later) with
	// timeout(1), where the machine has it, for a host that runs the tool
	// when its hook times out (Gemini CLI, Codex): a hung joule is then a
	// failure the guard turns into the host's deny.
	Limit string
}

// exit2 is the /bin/sh script of an Exit2 guard: "$0" "$@" is joule's
// command; it runs under /bin/sh whatever the shell the host starts.
func exit2(host string) string {
	return `"$0" "$@" || { s=$?; [ $s -eq 2 ] || echo "joule deny (hook-failed): $0 exited with status $s before deciding; the call is blocked (reinstall with: joule install ` + host + `)" >&2; exit 2; }`
}

// envPrefix starts a line that records a JOULE_HOME: env(1), not a shell
// assignment, so that the line parses in whatever shell the host starts
// (Codex runs "$SHELL -lc", and csh's family has no VAR=value prefix; a
// line that does not parse fails open there).
const envPrefix = "/usr/bin/env JOULE_HOME="

// Env is what records the JOULE_HOME of s at the start of a hook command
// ("" for the default home, which the hook finds by itself).
func Env(s Scope) string {
	if s.JouleHome == "" {
		return ""
	}
	return envPrefix + ShellQuote(s.JouleHome) + " "
}

// Line is the one hook command line a host runs for joule's command cmd
// (Command(s, host), or a variant of it): cmd with the JOULE_HOME of s
// recorded, inside g.
func (g Guard) Line(s Scope, host, cmd string) string {
	switch {
	case g.Exit2:
		return Env(s) + "/bin/sh -c " + ShellQuote(exit2(host)) + " " + g.bound(cmd)
	case g.Pass != "":
		return "out=$(" + Env(s) + g.bound(cmd) + "); " + g.choose(false)
	}
	return Env(s) + cmd
}

// Script is the same as a file the host runs (Cline's hook files), with a
// comment line naming it.
func (g Guard) Script(s Scope, host, cmd, comment string) []byte {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# " + comment + "\n")
	if s.JouleHome != "" {
		b.WriteString("JOULE_HOME=" + ShellQuote(s.JouleHome) + "\nexport JOULE_HOME\n")
	}
	switch {
	case g.Exit2:
		b.WriteString("exec /bin/sh -c " + ShellQuote(exit2(host)) + " " + g.bound(cmd) + "\n")
	case g.Pass != "":
		b.WriteString("out=$(" + g.bound(cmd) + ")\n" + g.choose(true))
	default:
		b.WriteString("exec " + cmd + "\n")
	}
	return []byte(b.String())
}

func (g Guard) bound(cmd string) string {
	if g.Limit == "" {
		return cmd
	}
	if t, err := exec.LookPath("timeout"); err == nil && filepath.IsAbs(t) {
		return ShellQuote(t) + " -k 2 " + g.Limit + " " + cmd
	}
	return cmd
}

// choose passes $out through or prints the deny: on one line, or on the
// lines of a script (which also keeps joule's exit status for the deny).
func (g Guard) choose(lines bool) string {
	deny := "printf '%s\\n' " + ShellQuote(g.Deny)
	if strings.Contains(g.Deny, "%s") {
		deny = "printf " + ShellQuote(g.Deny+`\n`) + ` "$st"`
	}
	if lines {
		return "st=$?\ncase $out in\n" + g.Pass + ") printf '%s\\n' \"$out\" ;;\n*) " + deny + " ;;\nesac\n"
	}
	if strings.Contains(g.Deny, "%s") {
		return "st=$?; case $out in " + g.Pass + ") printf '%s\\n' \"$out\" ;; *) " + deny + " ;; esac"
	}
	return "case $out in " + g.Pass + ") printf '%s\\n' \"$out\" ;; *) " + deny + " ;; esac"
}

// Guarded reports whether line is a command inside g for host, with or
// without a recorded JOULE_HOME: what the armed checks ask of a line joule
// wrote (an older bare line is not).
func (g Guard) Guarded(host, line string) bool {
	line = StripEnv(line)
	switch {
	case g.Exit2:
		return strings.HasPrefix(line, "/bin/sh -c "+ShellQuote(exit2(host))+" ")
	case g.Pass != "":
		return strings.HasPrefix(line, "out=$(") && strings.HasSuffix(line, "); "+g.choose(false))
	}
	return true
}

// splitEnv cuts a leading /usr/bin/env JOULE_HOME=VALUE off line: the
// value unquoted and the rest. VALUE is one shell word of literal text, as
// ShellQuote writes it now or as an older joule wrote it (single quotes
// throughout, even around a value with a quote in it).
func splitEnv(line string) (value, rest string, ok bool) {
	v, ok := strings.CutPrefix(line, envPrefix)
	if !ok {
		return "", line, false
	}
	if strings.HasPrefix(v, " ") {
		return "", strings.TrimLeft(v, " "), true
	}
	for w, err := range syntax.NewParser().WordsSeq(strings.NewReader(v)) {
		if err != nil || !literal(w) {
			break
		}
		f, err := expand.Fields(nil, w)
		if err != nil || len(f) != 1 {
			break
		}
		return f[0], strings.TrimLeft(v[w.End().Offset():], " "), true
	}
	return "", line, false
}

// literal reports whether w is quoted or plain text only, with nothing a
// shell would expand.
func literal(w *syntax.Word) bool {
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit, *syntax.SglQuoted:
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

// StripEnv drops the JOULE_HOME=… Line wrote (inside out=$( for
// a Pass guard), so that recognising joule's line does not depend on it.
func StripEnv(line string) string {
	line = strings.TrimSpace(line)
	if p, ok := strings.CutPrefix(line, "out=$("); ok {
		_, rest, _ := splitEnv(p)
		return "out=$(" + rest
	}
	_, rest, _ := splitEnv(line)
	return rest
}

// RecordedHome is the JOULE_HOME a line Line wrote records ("" when none):
// what an armed check compares with the home the install sees.
func RecordedHome(line string) string {
	v, _, _ := splitEnv(strings.TrimPrefix(strings.TrimSpace(line), "out=$("))
	return v
}

// HomeFinding checks that line, a hook command joule wrote, records the
// JOULE_HOME of s: a hook that records another one (or none) decides from
// another home, where the grant the user made is not, and denies
// no-active-grant.
func HomeFinding(s Scope, line string) Finding {
	got := RecordedHome(line)
	switch {
	case got == s.JouleHome && got == "":
		return Finding{OK: true, Text: "the hook uses the default JOULE_HOME"}
	case got == s.JouleHome:
		return Finding{OK: true, Text: "the hook decides from JOULE_HOME=" + got}
	case s.JouleHome == "":
		return Finding{Text: "the hook decides from JOULE_HOME=" + got + ", not the default home this install sees: run joule install again (with the JOULE_HOME you use)"}
	}
	return Finding{Text: "the hook does not record JOULE_HOME=" + s.JouleHome + " (it would decide from " + orDefault(got) + " and deny no-active-grant): run joule install again"}
}

func orDefault(h string) string {
	if h == "" {
		return "the default home"
	}
	return h
}

// Commands are the command lines of the handlers under hooks[event] (either
// shape) that isOurs recognises, for each of events.
func Commands(hooks map[string]any, events []string, isOurs func(any) bool) []string {
	var out []string
	for _, ev := range events {
		HasHandler(hooks, ev, func(m map[string]any) bool {
			if cmd, _ := m["command"].(string); isOurs(m) {
				out = append(out, cmd)
			}
			return false
		})
	}
	return out
}

// HomeCheck is the one finding on the JOULE_HOME the handlers lines record
// (HomeFinding of the first that differs), or none when there are none.
func HomeCheck(s Scope, lines []string) []Finding {
	if len(lines) == 0 {
		return nil
	}
	for _, l := range lines {
		if f := HomeFinding(s, l); !f.OK {
			return []Finding{f}
		}
	}
	return []Finding{HomeFinding(s, lines[0])}
}
