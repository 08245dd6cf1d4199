package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulehook/joule/core"
)

// jouleBin is the real binary, built once: the tests run it as a user or a
// host would, through argv, stdin, stdout, stderr and the exit status.
var jouleBin string

// clientBin is the thin hook client (cmd/joule-hook), built beside it.
var clientBin string

func TestMain(m *testing.M) {
	// The go and gopls commands doctor probes (and the tests run) start a
	// telemetry child that outlives them and writes below the test's HOME
	// (~/.config/go/telemetry) while t.TempDir removes it: "directory not
	// empty". x/telemetry starts no child where this is "2" (start.go: a
	// child of the child).
	os.Setenv("GO_TELEMETRY_CHILD", "2")
	dir, err := os.MkdirTemp("", "joule-bin-")
	if err != nil {
		panic(err)
	}
	jouleBin = filepath.Join(dir, "joule")
	// Built as the Makefile builds it: static, so the process benchmarks
	// time what users run.
	build := exec.Command("go", "build", "-trimpath", "-o", jouleBin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		os.Exit(1)
	}
	// joule-exec beside joule, as make build puts it: joule hook --contain
	// rewrites to it.
	build = exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "joule-exec"), "../joule-exec")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		os.Exit(1)
	}
	// The thin client, in a directory of its own so that installs by
	// jouleBin still write 'joule hook HOST'; it finds jouleBin through
	// $JOULE_BIN (hookBoth).
	clientBin = filepath.Join(dir, "client", "joule-hook")
	build = exec.Command("go", "build", "-trimpath", "-o", clientBin, "../joule-hook")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

func joule(t testing.TB, stdin []byte, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(jouleBin, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{out.String(), errb.String(), code}
}

func TestUsageAndExitCodes(t *testing.T) {
	tests := []struct {
		args     []string
		code     int
		inStdout string
		inStderr string
	}{
		{[]string{"help"}, 0, "Commands:", ""},
		{[]string{"version"}, 0, "joule ", ""},
		{[]string{"-v"}, 0, "joule ", ""},
		{[]string{"help", "version"}, 0, "usage: joule version", ""},
		{nil, 2, "", "Usage:"},
		{[]string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{[]string{"keygen", "-h"}, 0, "usage: joule keygen", ""},
		{[]string{"help", "tree-id"}, 0, "usage: joule tree-id", ""},
		{[]string{"keygen", "--nope"}, 2, "", "flag provided but not defined"},
		{[]string{"tree-id"}, 2, "", "want exactly one directory"},
		{[]string{"tree-id", "/nonexistent/dir"}, 1, "", "no such file"},
		{[]string{"receipt"}, 2, "", "receipt verify"},
		{[]string{"receipt", "verify"}, 2, "", "--pubkey is required"},
		{[]string{"conformance", "lint", "x"}, 2, "", "unknown subcommand"},
		{[]string{"op-id", "extra"}, 2, "", "unexpected argument"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := joule(t, nil, nil, tt.args...)
			if r.code != tt.code || !strings.Contains(r.stdout, tt.inStdout) || !strings.Contains(r.stderr, tt.inStderr) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s", r.code, tt.code, r.stdout, r.stderr)
			}
			if tt.code != 0 && strings.Count(strings.TrimSpace(r.stderr), "\n") > 1 && len(tt.args) > 0 {
				t.Fatalf("error is not one line (plus a hint):\n%s", r.stderr)
			}
		})
	}
}

func TestKeygen(t *testing.T) {
	home := filepath.Join(t.TempDir(), "jh")
	env := []string{"JOULE_HOME=" + home}
	r := joule(t, nil, env, "keygen", "--steward", "ci.example")
	if r.code != 0 || !strings.Contains(r.stdout, "steward:    ci.example") {
		t.Fatalf("%+v", r)
	}
	info, err := os.Stat(filepath.Join(home, "steward.key"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", info, err)
	}
	key, _ := os.ReadFile(filepath.Join(home, "steward.key"))
	if strings.Contains(r.stdout+r.stderr, strings.TrimSpace(string(key))) {
		t.Fatal("keygen printed the private key")
	}
	r = joule(t, nil, env, "keygen")
	if r.code != 1 || !strings.Contains(r.stderr, "hint: use --force") {
		t.Fatalf("overwrite: %+v", r)
	}
	r = joule(t, nil, env, "keygen", "--steward", "bad name")
	if r.code != 1 || !strings.Contains(r.stderr, "invalid") {
		t.Fatalf("bad steward: %+v", r)
	}
}

func TestTreeIDMatchesLibrary(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte("x"), 0o644)
	tr, err := core.TreeOfDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := joule(t, nil, nil, "tree-id", dir)
	if r.code != 0 || strings.TrimSpace(r.stdout) != tr.ID().String() {
		t.Fatalf("%+v want %s", r, tr.ID())
	}
}

func loadVectors(t *testing.T, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../../conformance/testdata/external-v1", file))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestOpIDFromStdin(t *testing.T) {
	doc := loadVectors(t, "coding_op_vectors.json")
	for _, v := range doc["vectors"].([]any) {
		vec := v.(map[string]any)
		op, _ := json.Marshal(vec["op"])
		r := joule(t, op, nil, "op-id")
		if r.code != 0 || strings.TrimSpace(r.stdout) != vec["op_id"] {
			t.Fatalf("%s: %+v", vec["name"], r)
		}
		r = joule(t, op, nil, "op-id", "-cbor")
		if strings.TrimSpace(r.stdout) != vec["canonical_cbor_hex"] {
			t.Fatalf("%s: cbor %+v", vec["name"], r)
		}
	}
	for _, bad := range []string{"", "{", `{"prior":"x"}`, `[]`, `{"prior":"K1ElSI_Lk3zGC1SujYqNO1FoRJEDN9ez_-ABoNjIcoY","edits":[],"author":"K1ElSI_Lk3zGC1SujYqNO1FoRJEDN9ez_-ABoNjIcoY","intent":"","tier":"L0"}`} {
		r := joule(t, []byte(bad), nil, "op-id")
		if r.code != 1 || r.stderr == "" {
			t.Fatalf("%q: %+v", bad, r)
		}
	}
}

func TestReceiptVerify(t *testing.T) {
	doc := loadVectors(t, "receipt_vectors.json")
	steward, pub := doc["steward"].(string), doc["public_key"].(string)
	for _, v := range doc["vectors"].([]any) {
		vec := v.(map[string]any)
		hexEnv := vec["cose_sign1_hex"].(string)
		raw, _ := hex.DecodeString(hexEnv)
		for _, in := range [][]byte{[]byte(hexEnv + "\n"), raw} {
			r := joule(t, in, nil, "receipt", "verify", "--steward", steward, "--pubkey", pub)
			valid := vec["valid"].(bool)
			if valid && (r.code != 0 || !strings.Contains(r.stdout, "verified")) {
				t.Fatalf("%s: %+v", vec["name"], r)
			}
			if !valid && (r.code != 1 || !strings.HasPrefix(r.stderr, "joule: receipt: ")) {
				t.Fatalf("%s: %+v", vec["name"], r)
			}
		}
	}
	r := joule(t, []byte("not hex"), nil, "receipt", "verify", "--steward", steward, "--pubkey", pub)
	if r.code != 1 || !strings.Contains(r.stderr, "not a tagged COSE_Sign1") {
		t.Fatalf("%+v", r)
	}
}

func TestConformanceCommands(t *testing.T) {
	r := joule(t, nil, nil, "conformance", "check", "../../conformance/testdata/external-v1")
	if r.code != 0 || !strings.HasSuffix(r.stdout, " passed, 0 failed\n") {
		t.Fatalf("%+v", r)
	}
	dir := t.TempDir()
	if r := joule(t, nil, nil, "conformance", "gen", dir); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	r = joule(t, nil, nil, "conformance", "check", dir)
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) < 60 {
		t.Fatalf("only %d lines", len(lines))
	}
	// Break one vector: exit 1 and the count says so.
	p := filepath.Join(dir, "tree_vectors.json")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, bytes.Replace(b, []byte(`"canonical_cbor_hex": "a0"`), []byte(`"canonical_cbor_hex": "a1"`), 1), 0o644)
	r = joule(t, nil, nil, "conformance", "check", dir)
	if r.code != 1 || !strings.HasSuffix(r.stdout, " passed, 1 failed\n") || !strings.Contains(r.stdout, "FAIL tree_vectors.json empty") {
		t.Fatalf("%+v", r)
	}
}

func TestDemo(t *testing.T) {
	r := joule(t, nil, nil, "demo")
	if r.code != 0 || !strings.Contains(r.stdout, "6. verified") {
		t.Fatalf("%+v", r)
	}
}

// TestIDStartingWithDash: an id may start with '-' (base64url); it is an
// argument, never a flag.
func TestIDStartingWithDash(t *testing.T) {
	fs := flag.NewFlagSet("grant revoke", flag.ContinueOnError)
	session := fs.String("session", "", "")
	id := "-N35PJ8fYHLIxGeNz5cOsxTEi_Ls_oQYtuoNvX3qyxk"
	if err := parseInterspersed(fs, []string{id, "--session", "s1"}); err != nil {
		t.Fatal(err)
	}
	if fs.NArg() != 1 || fs.Arg(0) != id || *session != "s1" {
		t.Fatalf("args %q, session %q", fs.Args(), *session)
	}
	if err := parseInterspersed(flag.NewFlagSet("x", flag.ContinueOnError), []string{"-nope"}); err == nil {
		t.Fatal("an unknown short flag was taken as an argument")
	}
}
