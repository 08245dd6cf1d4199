package receipts

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
)

// exports returns envs as a CBOR sequence and as JSON lines.
func exports(t testing.TB, envs [][]byte) (seq, lines []byte) {
	t.Helper()
	var l bytes.Buffer
	for i, env := range envs {
		seq = append(seq, env...)
		b, err := json.Marshal(ExportLine{Envelope: core.EncodeBase64(env), Hash: core.Sum(env).String(), Index: int64(i), Sequence: uint64(i + 1), Session: "s", Verdict: VerdictOK})
		if err != nil {
			t.Fatal(err)
		}
		l.Write(b)
		l.WriteByte('\n')
	}
	return seq, l.Bytes()
}

func TestExportLineMatchesMapOrder(t *testing.T) {
	// Exports were written from a map, whose keys encoding/json sorts:
	// the struct keeps that order, and omits an empty reason as the map did.
	line := ExportLine{Envelope: "e", Hash: "h", Index: 3, Sequence: 4, Session: "s", Verdict: "ok"}
	m := map[string]any{"envelope": "e", "hash": "h", "index": 3, "sequence": 4, "session": "s", "verdict": "ok"}
	for _, reason := range []string{"", "why"} {
		line.Reason = reason
		if reason != "" {
			m["reason"] = reason
		}
		got, _ := json.Marshal(line)
		want, _ := json.Marshal(m)
		if !bytes.Equal(got, want) {
			t.Errorf("line %s\nmap  %s", got, want)
		}
	}
}

func TestSplitExport(t *testing.T) {
	envs := chain(t, 3)
	seq, lines := exports(t, envs)
	tests := []struct {
		name, format string
		data         []byte
		want         int    // envelopes
		wantErr      string // "" for none
	}{
		{"cbor", ExportCBOR, seq, 3, ""},
		{"jsonl", ExportJSONL, lines, 3, ""},
		{"jsonl with blank lines", ExportJSONL, append(append([]byte("\n  \n"), lines...), "\n\n"...), 3, ""},
		{"empty cbor", ExportCBOR, nil, 0, ""},
		{"empty jsonl", ExportJSONL, []byte("\n"), 0, ""},
		{"cbor cut short", ExportCBOR, seq[:len(seq)-5], 0, "receipt 3 of the CBOR sequence"},
		{"cbor trailing junk", ExportCBOR, append(append([]byte{}, seq...), 0xff), 0, "receipt 4 of the CBOR sequence"},
		{"jsonl not json", ExportJSONL, append(append([]byte{}, lines...), "{\n"...), 0, "line 4"},
		{"jsonl padded base64", ExportJSONL, []byte(`{"envelope":"AA=="}`), 0, "line 1: envelope"},
		{"jsonl standard base64", ExportJSONL, []byte(`{"envelope":"a+/a"}`), 0, "line 1: envelope"},
		{"jsonl line too long", ExportJSONL, []byte(`{"envelope":"` + strings.Repeat("A", MaxExportLine) + `"}`), 0, "too long"},
		{"jsonl given cbor", ExportJSONL, seq, 0, "line 1"},
		{"unknown format", "xml", seq, 0, `export format "xml"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SplitExport(tt.data, tt.format)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.want {
				t.Fatalf("%d envelopes, want %d", len(got), tt.want)
			}
			for i := range got {
				if !bytes.Equal(got[i], envs[i]) {
					t.Fatalf("envelope %d is not the one exported", i+1)
				}
			}
		})
	}
}

func TestVerifyExport(t *testing.T) {
	s, v := keys(t)
	k := Keys{steward: v}
	envs := chain(t, 5)
	flip := func(i int) [][]byte {
		c := append([][]byte{}, envs...)
		c[i] = bytes.Clone(c[i])
		c[i][len(c[i])-70] ^= 1 // inside the payload: the signature fails
		return c
	}
	drop := func(i int) [][]byte { return append(append([][]byte{}, envs[:i]...), envs[i+1:]...) }
	other, err := SealDecision(s, Link{Session: "other", Sequence: 1}, Act{Time: time.Unix(1, 0), Decision: Allow, Code: "c"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		envs     [][]byte
		verdicts string // each receipt's verdict, space-separated
		first    int    // 1-based first bad position, 0 for none
	}{
		{"intact", envs, "ok ok ok ok ok", 0},
		{"flipped", flip(1), "ok bad-signature broken-chain ok ok", 2},
		{"deleted", drop(2), "ok ok broken-chain ok", 3},
		{"reordered", [][]byte{envs[0], envs[2], envs[1], envs[3], envs[4]}, "ok broken-chain broken-chain broken-chain ok", 2},
		{"another session", append(append([][]byte{}, envs[:2]...), other), "ok ok broken-chain", 3},
		{"not an envelope", [][]byte{envs[0], {0x01}}, "ok undecodable", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := k.VerifyExport(tt.envs)
			var names []string
			for _, v := range got {
				names = append(names, v.Verdict)
			}
			if strings.Join(names, " ") != tt.verdicts {
				t.Fatalf("verdicts %v, want %s", names, tt.verdicts)
			}
			var ee *ExportError
			switch {
			case tt.first == 0 && err != nil:
				t.Fatal(err)
			case tt.first != 0 && (!errors.As(err, &ee) || ee.First != tt.first || ee.Total != len(tt.envs)):
				t.Fatalf("err %v, want the first bad position %d", err, tt.first)
			}
		})
	}
	if _, err := k.VerifyExport(nil); !errors.Is(err, ErrEmptyExport) {
		t.Fatalf("empty export: %v", err)
	}
	if _, err := (Keys{}).VerifyExport(envs); err == nil {
		t.Fatal("verified with no trusted steward")
	}
}

func TestCheckRow(t *testing.T) {
	envs := chain(t, 2)
	_, v := keys(t)
	verdicts := Keys{steward: v}.Verdicts(envs)
	ok := verdicts[1] // seq 2, prev the chain hash of the first
	prev := core.Sum(envs[0])
	bad := Verdict{Position: 2, Verdict: VerdictBadSignature, Reason: "sig"}
	tests := []struct {
		name        string
		v           Verdict
		seq         uint64
		prev        core.ID
		fault       string
		wantVerdict string
		wantReason  string
	}{
		{"row agrees", ok, 2, prev, "", VerdictOK, ""},
		{"row fault", ok, 2, prev, "hash mismatch", VerdictBadRow, "hash mismatch"},
		{"seq column", ok, 3, prev, "", VerdictBadRow, "the row says seq 3, the signed receipt seq 2"},
		{"prev column", ok, 2, core.ID{}, "", VerdictBadRow, "the row says seq 2, the signed receipt seq 2"},
		{"damaged keeps its verdict", bad, 9, core.ID{}, "", VerdictBadSignature, "sig"},
		{"damaged, row fault added", bad, 2, prev, "hash mismatch", VerdictBadSignature, "sig; row: hash mismatch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.v
			v.CheckRow(tt.seq, tt.prev, tt.fault)
			if v.Verdict != tt.wantVerdict || v.Reason != tt.wantReason {
				t.Fatalf("%s %q, want %s %q", v.Verdict, v.Reason, tt.wantVerdict, tt.wantReason)
			}
		})
	}
}

func TestDamaged(t *testing.T) {
	vs := func(s string) []Verdict {
		var out []Verdict
		for _, f := range strings.Fields(s) {
			out = append(out, Verdict{Verdict: f})
		}
		return out
	}
	for _, tt := range []struct {
		in       string
		n, first int
	}{
		{"", 0, -1},
		{"ok ok", 0, -1},
		{"ok bad-signature broken-chain ok", 2, 1},
		{"undecodable", 1, 0},
	} {
		if n, first := Damaged(vs(tt.in)); n != tt.n || first != tt.first {
			t.Errorf("Damaged(%s) = %d, %d; want %d, %d", tt.in, n, first, tt.n, tt.first)
		}
	}
}

// FuzzSplitExport: any input either fails to split or splits into
// envelopes that give the input back: a CBOR sequence byte for byte, JSON
// lines envelope for envelope when written out again.
func FuzzSplitExport(f *testing.F) {
	seq, lines := exports(f, chain(f, 2))
	f.Add(seq, false)
	f.Add(lines, true)
	f.Add([]byte{0x9f, 0xff}, false)                   // an indefinite-length array
	f.Add([]byte("{\"envelope\":\"\"}\n\n"), true)     // an empty envelope
	f.Add([]byte("{\"envelope\":1}\n"), true)          // not a string
	f.Add([]byte{0xd8, 0x12, 0x84, 0x40, 0xa0}, false) // a cut COSE_Sign1
	f.Fuzz(func(t *testing.T, data []byte, jsonl bool) {
		format := ExportCBOR
		if jsonl {
			format = ExportJSONL
		}
		envs, err := SplitExport(data, format)
		if err != nil {
			return
		}
		if !jsonl {
			if got := bytes.Join(envs, nil); !bytes.Equal(got, data) {
				t.Fatalf("the items of the sequence are not the input: %x, %x", got, data)
			}
			return
		}
		_, again := exports(t, envs)
		back, err := SplitExport(again, ExportJSONL)
		if err != nil || len(back) != len(envs) {
			t.Fatalf("written out again: %d envelopes, %v; want %d", len(back), err, len(envs))
		}
		for i := range back {
			if !bytes.Equal(back[i], envs[i]) {
				t.Fatalf("envelope %d changed when written out again", i+1)
			}
		}
	})
}
