package main

import (
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
