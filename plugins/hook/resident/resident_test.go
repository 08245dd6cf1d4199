package resident_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
	"github.com/joulehook/joule/plugins/hook/resident"
	"github.com/joulehook/joule/plugins/hosts"
)

func TestMaxPayloadIsTheGatesPlusOne(t *testing.T) {
	if resident.MaxPayload != hook.MaxPayload+1 {
		t.Fatalf("resident.MaxPayload %d, hook.MaxPayload %d", resident.MaxPayload, hook.MaxPayload)
	}
}

// TestDenyIsTheAdapters: the client's own deny is, byte for byte, what
// each registered host's adapter answers for an unsealed deny.
func TestDenyIsTheAdapters(t *testing.T) {
	n := 0
	for _, h := range hosts.All() {
		if h.Adapter == nil {
			continue
		}
		n++
		a := h.Adapter(t.TempDir())
		for _, why := range []string{"no gate answered", `quotes " and \ and <html> & tabs	and
newlines, ünïcode, ` + "\x01\u2028"} {
			res := hook.Deny(gate.CodeInternal, why)
			want := hook.Fallback(a, nil, res)
			o, e, code := resident.Deny(a.Host(), hook.Reason(res))
			if !bytes.Equal(o, want.Stdout) || string(e) != want.Stderr || code != want.Exit {
				t.Errorf("%s: client %q %q %d, adapter %q %q %d", a.Host(), o, e, code, want.Stdout, want.Stderr, want.Exit)
			}
		}
	}
	if n < 8 {
		t.Errorf("only %d hosts with a hook adapter in the registry", n)
	}
	if _, e, code := resident.Deny("no-such-host", "r"); code != 2 || string(e) != "r\n" {
		t.Errorf("unknown host: %q %d", e, code)
	}
}

func TestFramesRoundTrip(t *testing.T) {
	q := &resident.Request{Op: resident.OpHook, Host: "claude-code", Contain: resident.ModeContain, Cwd: "/w", Home: "/h", UserHome: "/u", Store: "", StoreSet: true, Joule: "/bin/joule", ExecEnv: "1\x00\x00", Payload: []byte(`{"a":1}`)}
	var b bytes.Buffer
	if err := resident.WriteRequest(&b, q); err != nil {
		t.Fatal(err)
	}
	got, err := resident.ReadRequest(&b)
	if err != nil || (got.Op != q.Op || got.Host != q.Host || got.Contain != q.Contain || got.ExecEnv != q.ExecEnv || got.Cwd != q.Cwd || got.Home != q.Home || got.UserHome != q.UserHome ||
		got.StoreSet != true || got.Joule != q.Joule || string(got.Payload) != string(q.Payload)) {
		t.Fatalf("%+v %v", got, err)
	}
	a := &resident.Response{Kind: resident.Answer, Exit: 2, Stdout: []byte("out"), Stderr: []byte("err")}
	b.Reset()
	resident.WriteResponse(&b, a)
	ga, err := resident.ReadResponse(&b)
	if err != nil || ga.Kind != a.Kind || ga.Exit != 2 || string(ga.Stdout) != "out" || string(ga.Stderr) != "err" {
		t.Fatalf("%+v %v", ga, err)
	}
}

func TestFrameErrors(t *testing.T) {
	for name, in := range map[string][]byte{
		"empty":     nil,
		"bad magic": []byte("HTTP/1.1 GET /"),
		"huge":      append([]byte("JHQ2"), 0xff, 0xff, 0xff, 0xff),
		"truncated": []byte("JHQ2\x00\x00\x00\x05ho"),
	} {
		if _, err := resident.ReadRequest(bytes.NewReader(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := resident.ReadResponse(bytes.NewReader([]byte("JHA1X\x00\x00\x00\x00"))); err == nil || !strings.Contains(err.Error(), "kind") {
		t.Errorf("unknown kind: %v", err)
	}
}

func FuzzReadRequest(f *testing.F) {
	var b bytes.Buffer
	resident.WriteRequest(&b, &resident.Request{Op: "hook", Host: "codex", Payload: []byte("{}")})
	f.Add(b.Bytes())
	f.Add([]byte("JHQ2"))
	f.Fuzz(func(t *testing.T, in []byte) {
		q, err := resident.ReadRequest(bytes.NewReader(in))
		if err != nil {
			return
		}
		var out bytes.Buffer
		resident.WriteRequest(&out, q)
		q2, err := resident.ReadRequest(&out)
		if err != nil || q2.Host != q.Host || !bytes.Equal(q2.Payload, q.Payload) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func TestDirAndChecks(t *testing.T) {
	home := t.TempDir()
	d := resident.Dir(home)
	if d != filepath.Join(home, "gate") {
		t.Fatalf("Dir(%s) = %s", home, d)
	}
	long := filepath.Join(home, strings.Repeat("x", 120))
	if ld := resident.Dir(long); len(filepath.Join(ld, resident.SocketName)) >= 104 || strings.HasPrefix(ld, long) {
		t.Fatalf("long home: %s", ld)
	}
	if resident.Dir(long) != resident.Dir(long) || resident.Dir(long) == resident.Dir(long+"y") {
		t.Fatal("the keyed directory is not one per home")
	}
	os.Mkdir(d, 0o700)
	if err := resident.CheckDir(d); err != nil {
		t.Fatal(err)
	}
	os.Chmod(d, 0o750)
	if err := resident.CheckDir(d); err == nil || !strings.Contains(err.Error(), "chmod go-rwx") {
		t.Fatalf("0750: %v", err)
	}
	f := filepath.Join(home, "file")
	os.WriteFile(f, nil, 0o600)
	if err := resident.CheckSocket(f); err == nil {
		t.Fatal("a regular file passed as a socket")
	}
}
