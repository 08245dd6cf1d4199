package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/core/witness"
	"github.com/joulehook/joule/core/witness/litewitnesstest"
)

// These tests run torchwood's litewitness, a tlog-witness written by
// others, as its own process beside the real joule binary: the witness
// that cosigns a home's receipts log, whose state no process in the home
// can roll back.

// withLitewitness makes a home whose config.json names a litewitness that
// knows its log, with quorum witnesses required.
func withLitewitness(t *testing.T, quorum int) ([]string, string, *litewitnesstest.Witness) {
	t.Helper()
	env, ws := initHome(t)
	home := homeOf(env)
	pub, err := os.ReadFile(filepath.Join(home, "steward.pub"))
	if err != nil {
		t.Fatal(err)
	}
	lw := litewitnesstest.Start(t, "litewitness.test/w1", logOrigin("test.example"), strings.TrimSpace(string(pub)))
	writeWitnessConfig(t, home, quorum, lw)
	return env, ws, lw
}

func writeWitnessConfig(t *testing.T, home string, quorum int, ws ...*litewitnesstest.Witness) {
	t.Helper()
	type entry struct {
		URL  string `json:"url"`
		VKey string `json:"vkey"`
	}
	var list []entry
	for _, w := range ws {
		list = append(list, entry{w.URL, w.VKey})
	}
	b, _ := json.Marshal(map[string]any{"witness": map[string]any{"witnesses": list, "quorum": quorum, "timeout": "2s"}})
	if err := os.WriteFile(filepath.Join(home, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	acceptTrust(t, []string{"JOULE_HOME=" + home})
}

// acceptTrust records the home's config.json and issuers file as they are
// ('joule trust accept'), as a person does after editing them.
func acceptTrust(t testing.TB, env []string) {
	t.Helper()
	if r := joule(t, nil, env, "trust", "accept"); r.code != 0 {
		t.Fatalf("trust accept: %+v", r)
	}
}

// copyHome copies every file of a home (no joule process runs), the
// whole of what an agent running as the user can put back.
func copyHome(t *testing.T, from, to string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v: %s", err, out)
	}
}

// The round trip: decisions are cosigned by litewitness, the cosignature
// is kept in the home and verifies with the key litewitness printed, and
// a receipt's tlog proof verifies offline with nothing but the keys.
func TestLitewitnessCosigns(t *testing.T) {
	env, ws, lw := withLitewitness(t, 1)
	home := homeOf(env)
	var last decision
	for i := range 3 {
		last = gateOnce(t, env, bashEvent(ws, "s1", fmt.Sprintf("go test ./%d", i)))
		if last.Decision != "allow" {
			t.Fatalf("decision %d with litewitness up: %+v\n%s", i, last, lw.Log())
		}
	}
	lwKey, err := witness.NewVerifier(lw.VKey)
	if err != nil {
		t.Fatal(err)
	}
	logKey, _ := os.ReadFile(filepath.Join(home, "steward.pub"))
	logV, err := note.NewVerifier(strings.TrimSpace(string(logKey)))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(home, WitnessDir, "checkpoint.cosigned.litewitness.test_w1.????????"))
	if len(files) != 1 {
		t.Fatalf("cosigned files: %v", files)
	}
	cp, _, err := store.ReadCosignedFile(files[0], logOrigin("test.example"), logV, lwKey)
	// Three decisions after joule init's receipts and the record of
	// config.json's witness.
	size := 3 + initReceipts + 1
	if err != nil || cp == nil || cp.Size != int64(size) {
		t.Fatalf("the checkpoint litewitness cosigned: %+v %v", cp, err)
	}
	st := joule(t, nil, env, "witness", "status")
	if st.code != 0 || !strings.Contains(st.stdout, fmt.Sprintf("cosigned the log of size %d", size)) || !strings.Contains(st.stdout, "the store extends it") {
		t.Fatalf("witness status: %+v", st)
	}

	// The receipt's tlog proof, and its offline check.
	r := joule(t, nil, env, "receipts", "prove", "--spicy", last.Receipt)
	if r.code != 0 || !strings.HasPrefix(r.stdout, witness.ProofHeader+"\n") || !strings.Contains(r.stdout, "— litewitness.test/w1 ") {
		t.Fatalf("prove --spicy: %+v", r)
	}
	proof := filepath.Join(t.TempDir(), "r.tlog-proof")
	os.WriteFile(proof, []byte(r.stdout), 0o600)
	// The command the message prints, run as printed (its paths and keys).
	_, hint, _ := strings.Cut(r.stderr, "check it with '")
	hint, _, _ = strings.Cut(hint, "'\n")
	if !strings.HasPrefix(hint, "joule receipts verify-proof FILE --key ") {
		t.Fatalf("prove --spicy printed no command to check it: %q", r.stderr)
	}
	v := exec.Command("sh", "-c", strings.Replace(strings.Replace(hint, "joule", jouleBin, 1), "FILE", proof, 1))
	out, err := v.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "verified: receipt "+last.Receipt) || !strings.Contains(string(out), "cosigned by litewitness.test/w1") {
		t.Fatalf("the printed verify-proof command: %v\n%s", err, out)
	}
	// Anyone without the home: the keys alone, the proof from stdin.
	vp := joule(t, []byte(r.stdout), nil, "receipts", "verify-proof", "-", "--key", strings.TrimSpace(string(logKey)), "--witness-key", lw.VKey)
	if vp.code != 0 || !strings.Contains(vp.stdout, "decision allow") {
		t.Fatalf("verify-proof from stdin: %+v", vp)
	}
	for _, tc := range []struct {
		name  string
		proof string
		args  []string
		want  string
	}{
		{"another receipt in the extra line", strings.Replace(r.stdout, "\nextra ", "\nextra AAAA", 1), nil, "FAIL"},
		{"another index", regexp.MustCompile(`\nindex \d+\n`).ReplaceAllString(r.stdout, "\nindex 1\n"), nil, "FAIL"},
		{"the cosignature dropped", dropLine(r.stdout, "— litewitness.test/w1 "), nil, "0 of the 1 witnesses"},
		{"another witness's key", r.stdout, []string{"--witness-key", otherWitnessKey(t)}, "0 of the 1 witnesses"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"receipts", "verify-proof", "-", "--key", strings.TrimSpace(string(logKey))}, tc.args...)
			if tc.args == nil {
				args = append(args, "--witness-key", lw.VKey)
			}
			got := joule(t, []byte(tc.proof), nil, args...)
			if got.code == 0 || !strings.Contains(got.stdout+got.stderr, tc.want) {
				t.Fatalf("verify-proof of %s: %+v", tc.name, got)
			}
		})
	}
}

func dropLine(s, prefix string) string {
	var out []string
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

func otherWitnessKey(t *testing.T) string {
	dir := t.TempDir()
	v, err := witness.InitServer(dir, "litewitness.test/w1")
	if err != nil {
		t.Fatal(err)
	}
	return v.String()
}

// The attacks the witness in the home cannot see: the store rolled back
// alone, and the whole home rolled back together (store, witness files,
// cosigned checkpoints: cp -a of an older copy). With litewitness
// required, each is a deny that says the store is behind what the
// witness cosigned, the action is not allowed, and store check fails.
func TestLitewitnessRollback(t *testing.T) {
	for _, attack := range []string{"store only", "the whole home"} {
		t.Run(attack, func(t *testing.T) {
			env, ws, lw := withLitewitness(t, 1)
			home := homeOf(env)
			for i := range 2 {
				if d := gateOnce(t, env, bashEvent(ws, "s1", fmt.Sprintf("go test ./%d", i))); d.Decision != "allow" {
					t.Fatalf("decision %d: %+v", i, d)
				}
			}
			older := filepath.Join(t.TempDir(), "home")
			copyHome(t, home, older)
			oldStore := snapshot(t, home)
			for i := range 3 {
				gateOnce(t, env, bashEvent(ws, "s1", fmt.Sprintf("rm -f build/%d", i)))
			}
			switch attack {
			case "store only":
				restore(t, home, oldStore)
			case "the whole home":
				if err := os.RemoveAll(home); err != nil {
					t.Fatal(err)
				}
				copyHome(t, older, home)
			}
			for i := range 2 {
				d := gateOnce(t, env, bashEvent(ws, "s1", "go build ./..."))
				// The witness cosigned joule init's receipts, the record of
				// its own configuration and five decisions.
				if d.Decision != "deny" || d.Code != "store-rolled-back" || !strings.Contains(d.Reason, fmt.Sprint(5+initReceipts+1)) {
					t.Fatalf("decision %d after %s was rolled back: %+v\n%s", i, attack, d, lw.Log())
				}
				// Nothing in the home tells the whole home's copy from the
				// real one: the first allow is sealed, then withdrawn when
				// litewitness refuses to cosign it, and the log says so.
				if withdrawn := strings.Contains(d.Reason, "is withdrawn"); withdrawn != (attack == "the whole home" && i == 0) {
					t.Fatalf("decision %d after %s: withdrawn %t: %s", i, attack, withdrawn, d.Reason)
				}
			}
			h := joule(t, claudeCall(ws, "go build ./..."), env, "hook", "claude-code")
			if !hostCases[0].denied(h) {
				t.Fatalf("hook claude-code after the rollback: %+v", h)
			}
			c := joule(t, nil, env, "store", "check")
			if c.code != 1 || !strings.Contains(c.stdout, "witness FAILED: litewitness.test/w1") {
				t.Fatalf("store check after the rollback: %+v", c)
			}
			// Accepting the loss records it, but the witness keeps what it
			// cosigned: still no action, until the witness is taken out.
			a := joule(t, nil, env, "store", "accept-loss")
			if a.code != 0 || !strings.Contains(a.stdout, "litewitness.test/w1 refuses this log") {
				t.Fatalf("accept-loss: %+v", a)
			}
			if d := gateOnce(t, env, bashEvent(ws, "s1", "go build ./...")); d.Decision != "deny" || d.Code != "store-rolled-back" {
				t.Fatalf("after accept-loss, the witness still required: %+v", d)
			}
			writeWitnessConfig(t, home, 0)
			if d := gateOnce(t, env, bashEvent(ws, "s1", "go build ./...")); d.Decision != "allow" {
				t.Fatalf("after accept-loss, the witness taken out: %+v", d)
			}
		})
	}
}

// A witness that is down: with a quorum required, every action is denied
// with witness-unreachable, and the deny is sealed; back, actions are
// allowed again. Without a quorum, actions are allowed, with a warning on
// standard error and in doctor.
func TestLitewitnessDown(t *testing.T) {
	t.Run("required", func(t *testing.T) {
		env, ws, lw := withLitewitness(t, 1)
		if d := gateOnce(t, env, bashEvent(ws, "s1", "go test ./...")); d.Decision != "allow" {
			t.Fatalf("up: %+v", d)
		}
		lw.Stop()
		for i := range 2 {
			d := gateOnce(t, env, bashEvent(ws, "s1", "go test ./..."))
			if d.Decision != "deny" || d.Code != "witness-unreachable" || d.Receipt == "" || !strings.Contains(d.Reason, "joule witness sync") {
				t.Fatalf("down, decision %d: %+v", i, d)
			}
		}
		if doc := joule(t, nil, env, "doctor"); doc.code != 1 || !strings.Contains(doc.stdout, "fail  witness") {
			t.Fatalf("doctor with the witness down: %+v", doc)
		}
		if s := joule(t, nil, env, "witness", "sync"); s.code != 1 || !strings.Contains(s.stdout, "FAILED") {
			t.Fatalf("witness sync with the witness down: %+v", s)
		}
		lw.Restart()
		if s := joule(t, nil, env, "witness", "sync"); s.code != 0 {
			t.Fatalf("witness sync with the witness back: %+v", s)
		}
		if d := gateOnce(t, env, bashEvent(ws, "s1", "go test ./...")); d.Decision != "allow" {
			t.Fatalf("back: %+v", d)
		}
	})
	t.Run("not required", func(t *testing.T) {
		env, ws, lw := withLitewitness(t, 0)
		lw.Stop()
		r := joule(t, []byte(bashEvent(ws, "s1", "go test ./...")), env, "gate")
		var d decision
		json.Unmarshal([]byte(r.stdout), &d)
		if d.Decision != "allow" || !strings.Contains(r.stderr, "litewitness.test/w1") {
			t.Fatalf("down, not required: %+v\nstderr: %s", d, r.stderr)
		}
		if doc := joule(t, nil, env, "doctor"); !strings.Contains(doc.stdout, "warn  witness") {
			t.Fatalf("doctor with the witness down, not required: %+v", doc)
		}
	})
}

// The resident gate (joule-hook starts it, and it answers many calls):
// it publishes the file witness after answering, but waits for the
// quorum before it allows, and a witness that goes down mid-session turns
// the next action into a deny.
func TestLitewitnessResidentGate(t *testing.T) {
	env, ws, lw := withLitewitness(t, 1)
	cenv := append(append([]string{}, env...), "JOULE_BIN="+jouleBin, "JOULE_GATE_IDLE=1m")
	t.Cleanup(func() {
		stop := exec.Command(jouleBin, "gate", "stop")
		stop.Env = append(os.Environ(), cenv...)
		stop.Run()
	})
	call := func(cmd string) result {
		c := exec.Command(clientBin, "claude-code")
		c.Dir = ws
		c.Stdin = strings.NewReader(string(claudeCall(ws, cmd)))
		c.Env = append(os.Environ(), cenv...)
		var out, errb strings.Builder
		c.Stdout, c.Stderr = &out, &errb
		c.Run()
		return result{out.String(), errb.String(), c.ProcessState.ExitCode()}
	}
	for i := range 3 {
		if r := call(fmt.Sprintf("go test ./%d", i)); hostCases[0].denied(r) {
			t.Fatalf("call %d with the witness up: %+v\n%s", i, r, lw.Log())
		}
	}
	// Every allow was cosigned before it was answered.
	st := joule(t, nil, env, "witness", "status")
	if !strings.Contains(st.stdout, fmt.Sprintf("cosigned the log of size %d", 3+initReceipts+1)) {
		t.Fatalf("witness status after three resident allows: %+v", st)
	}
	lw.Stop()
	if r := call("go test ./..."); !hostCases[0].denied(r) || !strings.Contains(r.stdout+r.stderr, "witness") {
		t.Fatalf("resident gate with the witness down: %+v", r)
	}
	lw.Restart()
	time.Sleep(1100 * time.Millisecond) // the failed round stands for a second
	if r := call("go test ./..."); hostCases[0].denied(r) {
		t.Fatalf("resident gate with the witness back: %+v", r)
	}
}

// joule's own witness, run as its own process with the commands its docs
// give (init, add-log from 'joule witness log', serve): a home that names
// it has its decisions cosigned, and is denied when it stops.
func TestJouleWitnessServe(t *testing.T) {
	env, ws := initHome(t)
	home := homeOf(env)
	wenv := []string{"JOULE_HOME=" + filepath.Join(t.TempDir(), "witness-home")}
	state := filepath.Join(t.TempDir(), "state")
	in := joule(t, nil, wenv, "witness", "init", "--name", "joule.test/w", "--state", state)
	_, vkey, _ := strings.Cut(in.stdout, "vkey    ")
	vkey, _, _ = strings.Cut(vkey, "\n")
	if in.code != 0 || vkey == "" {
		t.Fatalf("witness init: %+v", in)
	}
	lg := joule(t, nil, env, "witness", "log")
	_, add, _ := strings.Cut(lg.stdout, "  joule witness add-log ")
	add, _, _ = strings.Cut(add, "\n")
	if lg.code != 0 || add == "" {
		t.Fatalf("witness log: %+v", lg)
	}
	// The add-log line as printed, run by a shell.
	sh := exec.Command("sh", "-c", jouleBin+" witness add-log --state "+shellQuote(state)+" "+add)
	sh.Env = append(os.Environ(), wenv...)
	if out, err := sh.CombinedOutput(); err != nil || !strings.Contains(string(out), `knows the log "joule receipts log test.example"`) {
		t.Fatalf("the printed add-log: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	serve := func() *exec.Cmd {
		c := exec.Command(jouleBin, "witness", "serve", "--state", state, "--listen", addr)
		c.Env = append(os.Environ(), wenv...)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		for range 200 {
			if conn, err := net.Dial("tcp", addr); err == nil {
				conn.Close()
				return c
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatal("joule witness serve does not listen")
		return nil
	}
	srv := serve()
	defer func() { srv.Process.Kill(); srv.Wait() }()
	b, _ := json.Marshal(map[string]any{"witness": map[string]any{"witnesses": []map[string]string{{"url": "http://" + addr, "vkey": vkey}}, "quorum": 1}})
	os.WriteFile(filepath.Join(home, "config.json"), b, 0o600)
	acceptTrust(t, env)
	for i := range 2 {
		if d := gateOnce(t, env, bashEvent(ws, "s1", fmt.Sprintf("go test ./%d", i))); d.Decision != "allow" {
			t.Fatalf("decision %d: %+v", i, d)
		}
	}
	if st := joule(t, nil, env, "witness", "status"); !strings.Contains(st.stdout, "joule.test/w") || !strings.Contains(st.stdout, fmt.Sprintf("cosigned the log of size %d", 2+initReceipts+1)) {
		t.Fatalf("witness status: %+v", st)
	}
	srv.Process.Signal(os.Interrupt)
	srv.Wait()
	if d := gateOnce(t, env, bashEvent(ws, "s1", "go test ./...")); d.Decision != "deny" || d.Code != "witness-unreachable" {
		t.Fatalf("joule witness stopped: %+v", d)
	}
	srv = serve()
	if d := gateOnce(t, env, bashEvent(ws, "s1", "go test ./...")); d.Decision != "allow" {
		t.Fatalf("joule witness back: %+v", d)
	}
}
