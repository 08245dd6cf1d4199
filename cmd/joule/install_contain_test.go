package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulehook/joule/plugins/hook"
	"github.com/joulehook/joule/plugins/hosts"
)

// installed is what one install wrote: its stdout, the mode its record
// keeps, and the bytes of the files it wrote.
type installed struct {
	out   string
	mode  hook.ContainMode
	files string
}

func installOf(t *testing.T, env []string, ws, host string, flags ...string) installed {
	t.Helper()
	r := jouleIn(t, ws, nil, env, append([]string{"install", host, "--project"}, flags...)...)
	if r.code != 0 {
		t.Fatalf("install %s %v: %+v", host, flags, r)
	}
	home := strings.TrimPrefix(env[0], "JOULE_HOME=")
	rec, err := hook.FindRecord(home, host, ws)
	if err != nil || rec == nil {
		t.Fatalf("no record of %s: %v", host, err)
	}
	var files strings.Builder
	for _, f := range rec.Files {
		b, _ := os.ReadFile(f)
		files.Write(b)
	}
	return installed{r.stdout, rec.Contain, files.String()}
}

// TestInstallContainsByDefault: on every host whose hook can replace a
// command, joule install contains by default (the hook line says
// --contain, the record keeps the mode, the armed check says so);
// --no-contain opts out, visibly (the line says --no-contain, the armed
// check warns and says how to contain); a host that cannot rewrite says
// plainly that the analysis alone judges its commands, and refuses both
// flags; and an install from before containment was the default is
// switched to contained by installing again, which says so.
func TestInstallContainsByDefault(t *testing.T) {
	env, ws := initHome(t)
	home := strings.TrimPrefix(env[0], "JOULE_HOME=")
	for _, host := range hosts.Names(hosts.Installable) {
		h, _ := hosts.Lookup(host)
		t.Run(host, func(t *testing.T) {
			if !hosts.Contained(h) {
				got := installOf(t, env, ws, host)
				if got.mode != hook.AnalysisOnly || strings.Contains(got.files, "--contain") || strings.Contains(got.files, "--no-contain") ||
					!strings.Contains(got.out, "warn not contained: "+host+"'s hook cannot replace a command, so joule judges its shell commands by analysis alone") {
					t.Errorf("%+v", got)
				}
				for _, flag := range []string{"--contain", "--no-contain"} {
					r := jouleIn(t, ws, nil, env, "install", host, "--project", flag)
					if r.code != 2 || !strings.Contains(r.stderr, flag+" does not apply: leave it out") {
						t.Errorf("%s: %+v", flag, r)
					}
				}
				return
			}
			got := installOf(t, env, ws, host)
			if got.mode != hook.Contained || hook.ModeInBytes([]byte(got.files)) != hook.Contained ||
				!strings.Contains(got.out, "ok   containment: ") {
				t.Fatalf("the default install does not contain: %+v", got)
			}
			if got := installOf(t, env, ws, host, "--contain"); strings.Contains(got.out, "wrote ") {
				t.Errorf("--contain is not the default: %s", got.out)
			}
			off := installOf(t, env, ws, host, "--no-contain")
			if off.mode != hook.NoContain || hook.ModeInBytes([]byte(off.files)) != "" || !strings.Contains(off.files, "--no-contain") ||
				!strings.Contains(off.out, "warn not contained (--no-contain): ") ||
				!strings.Contains(off.out, "to contain them: joule install "+host+" --project "+ws+"\n") ||
				!strings.Contains(off.out, "warn containment switched off (--no-contain)") {
				t.Errorf("--no-contain: %+v", off)
			}
			if !strings.Contains(off.out, "not armed yet") && !strings.Contains(off.out, "armed, but weaker than joule's default: every "+host+" tool call is decided by joule, and the shell commands it allows run uncontained (--no-contain)") {
				t.Errorf("the armed line does not say the install is weaker:\n%s", off.out)
			}
			// What the armed check suggests works as printed.
			if on := installOf(t, env, ws, host); on.mode != hook.Contained || !strings.Contains(on.out, "ok   now contained: the install before ran with --no-contain") {
				t.Errorf("back to contained: %+v", on)
			}
			// An install from before containment was the default: its line
			// has no flag, its record no mode.
			installOf(t, env, ws, host, "--no-contain")
			legacy(t, home, host, ws)
			up := installOf(t, env, ws, host)
			if up.mode != hook.Contained || hook.ModeInBytes([]byte(up.files)) != hook.Contained ||
				!strings.Contains(up.out, "ok   now contained: the install before (from before containment was the default) judged shell commands by analysis alone") {
				t.Errorf("an old install was not switched to contained: %+v", up)
			}
			if r := jouleIn(t, ws, nil, env, "install", host, "--project", "--contain", "--no-contain"); r.code != 2 || !strings.Contains(r.stderr, "--contain or --no-contain, not both") {
				t.Errorf("both flags: %+v", r)
			}
			if r := jouleIn(t, ws, nil, env, "install", host, "--project", "--uninstall"); r.code != 0 {
				t.Fatalf("uninstall: %+v", r)
			}
		})
	}
}

// legacy turns the record and files of host's install in project into
// those of an install from before containment was the default: a hook
// line without a mode flag, and a record without a mode.
func legacy(t *testing.T, home, host, project string) {
	t.Helper()
	recs, err := hook.LoadRecords(home)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if r.Host != host || r.Project != project {
			continue
		}
		for _, f := range r.Files {
			b, _ := os.ReadFile(f)
			old := strings.ReplaceAll(string(b), " --no-contain", "")
			old = strings.ReplaceAll(old, `const MODE: string = "--no-contain"`, `const MODE: string = ""`)
			os.WriteFile(f, []byte(old), 0o644)
		}
		recs[i].Contain = ""
	}
	b, _ := json.Marshal(recs)
	if err := os.WriteFile(filepath.Join(home, hook.InstallsFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestInstallWarnsOfWeakContainment: a machine without user namespaces
// (JOULE_EXEC_LANDLOCK_ONLY=1 stands in for one) or without Landlock
// (JOULE_EXEC_SIMULATE_NO_LANDLOCK=1) never passes silently: the install
// warns, or without Landlock says every command would be denied and how to
// install without containment (a command that works as printed); joule
// doctor says it too, and so does every receipt of a contained command.
func TestInstallWarnsOfWeakContainment(t *testing.T) {
	env, ws := initHome(t)
	const host = "opencode" // arms with nothing left to do
	only := append(env[:len(env):len(env)], "JOULE_EXEC_LANDLOCK_ONLY=1")
	r := jouleIn(t, ws, nil, only, "install", host, "--project")
	if r.code != 0 || !strings.Contains(r.stdout, "warn containment: allowed bash commands run under joule exec (landlock ABI ") ||
		!strings.Contains(r.stdout, "; warning: weaker containment: no user namespaces here") ||
		!strings.Contains(r.stdout, "armed, but weaker than joule's default: every opencode tool call is decided by joule, and the shell commands it allows run confined by Landlock alone") {
		t.Fatalf("Landlock alone: %+v", r)
	}
	if d := jouleIn(t, ws, nil, only, "doctor", "--timeout", "1s"); !strings.Contains(d.stdout, "warn  sandbox     Landlock ABI ") ||
		!strings.Contains(d.stdout, "ok    install     opencode --project "+ws+": armed, but weaker than joule's default") ||
		!strings.Contains(d.stdout, "warn  install     opencode --project "+ws+": containment: ") {
		t.Errorf("doctor, Landlock alone:\n%s", d.stdout)
	}
	payload := []byte(`{"hook":"tool.execute.before","input":{"tool":"bash","sessionID":"w1","callID":"c1"},"output":{"args":{"command":"go test ./..."}},"directory":"` + ws + `"}`)
	if h := jouleIn(t, ws, payload, only, "hook", host, "--contain"); !strings.Contains(h.stdout, "joule-exec") {
		t.Fatalf("hook: %+v", h)
	}
	if got := sessionReasons(t, env, "w1"); len(got) != 1 || !strings.Contains(got[0], "; warning: weaker containment: no user namespaces here") {
		t.Errorf("the receipt does not warn: %q", got)
	}

	none := append(env[:len(env):len(env)], "JOULE_EXEC_SIMULATE_NO_LANDLOCK=1")
	r = jouleIn(t, ws, nil, none, "install", host, "--project")
	want := "install with: joule install opencode --project " + ws + " --no-contain\n"
	if !strings.Contains(r.stdout, "todo containment: Landlock is not available") || !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, "not armed yet") {
		t.Fatalf("no Landlock: %+v", r)
	}
	if d := jouleIn(t, ws, nil, none, "doctor", "--timeout", "1s"); d.code != 1 || !strings.Contains(d.stdout, "fail  sandbox     Landlock is not available") {
		t.Errorf("doctor, no Landlock (exit %d):\n%s", d.code, d.stdout)
	}
	if h := jouleIn(t, ws, []byte(strings.Replace(string(payload), "w1", "w2", 1)), none, "hook", host, "--contain"); !strings.Contains(h.stdout, "containment is on, but Landlock is not available") {
		t.Errorf("hook without Landlock: %+v", h)
	}
	// The suggested command, as printed.
	args := strings.Fields(strings.TrimSuffix(want[len("install with: joule "):], "\n"))
	r = jouleIn(t, ws, nil, none, args...)
	if r.code != 0 || !strings.Contains(r.stdout, "armed, but weaker than joule's default") {
		t.Fatalf("%v: %+v", args, r)
	}
}
