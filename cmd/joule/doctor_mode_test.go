package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestDoctorUserMode: on a machine without system mode, joule doctor says
// plainly what user mode does not stop and what does.
func TestDoctorUserMode(t *testing.T) {
	vars, _ := initHome(t)
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	var out, errb strings.Builder
	run(context.Background(), &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}, []string{"doctor", "--json", "--timeout", "100ms"})
	var fs []finding
	if err := json.Unmarshal([]byte(out.String()), &fs); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out.String(), errb.String())
	}
	for _, f := range fs {
		if f.Check != "mode" {
			continue
		}
		for _, want := range []string{"user mode", "gate's socket", "read the key", "delete $JOULE_HOME", "only by a witness elsewhere", "sudo joule install --system"} {
			if !strings.Contains(f.Detail, want) {
				t.Errorf("the mode finding does not say %q: %s", want, f.Detail)
			}
		}
		if f.Status != statusNote {
			t.Errorf("user mode is %s, want note", f.Status)
		}
		return
	}
	t.Fatalf("no mode finding: %+v", fs)
}
