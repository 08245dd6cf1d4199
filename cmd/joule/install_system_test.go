package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulehook/joule/core/home"
)

// TestSystemUnits: the units run the gate and the proxy as the system
// user, on its home, writing nowhere else, restarted when they die; no
// proxy unit when the proxy is off.
func TestSystemUnits(t *testing.T) {
	si := &systemInstall{sys: &home.System{User: "joule", UID: 998, GID: 998, AdminGroup: "joule-admin", AdminGID: 997,
		Home: "/var/lib/joule", Run: "/run/joule", Bin: systemBin, Proxy: "127.0.0.1:7411"}}
	u := si.units()
	for name, want := range map[string][]string{
		"joule-gate.service":  {"ExecStart=" + systemBin + "/joule gate serve --system\n", "RuntimeDirectory=joule\n", "RuntimeDirectoryMode=0755\n"},
		"joule-proxy.service": {"ExecStart=" + systemBin + "/joule proxy --listen 127.0.0.1:7411\n"},
	} {
		body, ok := u[name]
		if !ok {
			t.Fatalf("no %s", name)
		}
		for _, w := range append(want, "User=joule\n", "Group=joule\n", "Environment=JOULE_HOME=/var/lib/joule HOME=/var/lib/joule\n",
			"ProtectSystem=strict\n", "ReadWritePaths=/var/lib/joule /run/joule\n", "NoNewPrivileges=yes\n", "Restart=always\n", "WantedBy=multi-user.target\n") {
			if !strings.Contains(body, w) {
				t.Errorf("%s lacks %q:\n%s", name, w, body)
			}
		}
	}
	si.sys.Proxy = ""
	if _, ok := si.units()["joule-proxy.service"]; ok {
		t.Error("a proxy unit with the proxy off")
	}
}

// TestSystemUnitsVerify: systemd itself (systemd-analyze verify, which
// parses a unit as the service manager does and needs no running systemd)
// takes both units without a warning: an unknown key, a bad value or a
// path it would refuse is reported, and systemd would ignore the line.
func TestSystemUnitsVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze is missing: make deps installs it (.ci/setup.d/65-systemd.sh)")
	}
	dir := t.TempDir()
	si := &systemInstall{sys: &home.System{User: "joule", UID: 998, GID: 998, AdminGroup: "joule-admin", AdminGID: 997,
		Home: "/var/lib/joule", Run: "/run/joule", Bin: systemBin, Proxy: "127.0.0.1:7411"}}
	var files []string
	for name, body := range si.units() {
		// verify checks that ExecStart's program exists and runs: the
		// test's joule stands in for the installed one.
		body = strings.ReplaceAll(body, filepath.Join(systemBin, "joule"), jouleBin)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	run := func(files ...string) string {
		out, err := exec.Command(analyze, append([]string{"verify", "--man=no"}, files...)...).CombinedOutput()
		if err != nil {
			return err.Error() + ": " + string(out)
		}
		var lines []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, dir) { // about our units, not the host's
				lines = append(lines, l)
			}
		}
		return strings.Join(lines, "\n")
	}
	if got := run(files...); got != "" {
		t.Errorf("systemd-analyze verify:\n%s", got)
	}
	// The check can fail: a misspelt key in a unit of the same shape is reported.
	bad := filepath.Join(dir, "joule-bad.service")
	body, _ := os.ReadFile(files[0])
	os.WriteFile(bad, []byte(strings.Replace(string(body), "UMask=", "Umask=", 1)), 0o644)
	if got := run(bad); !strings.Contains(got, "Umask") {
		t.Errorf("a misspelt key was not reported: %q", got)
	}
}

// TestAbsWorkspaces: a person's --workspace values reach the gate
// absolute, and the current directory when they name none.
func TestAbsWorkspaces(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"grant issue --template dev", "grant issue --template dev --workspace=/w"},
		{"grant issue --workspace ws --use", "grant issue --workspace=/w/ws --use"},
		{"grant issue -workspace=/abs --workspace=rel", "grant issue --workspace=/abs --workspace=/w/rel"},
		{"init", "init --workspace=/w"},
		{"grant use ID", "grant use ID"},
		{"grant ls", "grant ls"},
	} {
		if got := strings.Join(absWorkspaces(strings.Fields(c.in), "/w"), " "); got != c.want {
			t.Errorf("%s: %s, want %s", c.in, got, c.want)
		}
	}
}
