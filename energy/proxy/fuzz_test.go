package proxy

import (
	"time"

	"bytes"
	"encoding/json"
	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/energy"
	"io"
	"reflect"
	"slices"
	"testing"
)

// FuzzTap feeds arbitrary response bodies, split at an arbitrary point,
// through the tap and every API's usage parser: the client must get exactly
// the upstream's bytes (except the proxy's own usage chunk), and nothing
// may panic.
func FuzzTap(f *testing.F) {
	for _, name := range []string{"anthropic_stream.sse", "openai_chat_stream.sse", "openai_responses_stream.sse", "ollama_chat_stream.ndjson"} {
		f.Add(fixture(name), uint8(0), uint16(17))
	}
	f.Add([]byte("data: {\"usage\":{\"prompt_tokens\":1}}\r\n\r\ndata: [DONE]"), uint8(5), uint16(3))
	f.Add([]byte(`{"usage":{"input_tokens":-1,"output_tokens":1e99}}`), uint8(2), uint16(1))
	f.Fuzz(func(t *testing.T, body []byte, mode uint8, split uint16) {
		m := &meter{}
		parsers := []func([]byte) bool{
			func(d []byte) bool { m.anthropicSSE(d); return false },
			m.openAIChatSSE,
			func(d []byte) bool { m.responsesSSE(d); return false },
			func(d []byte) bool { m.ollama(d); return false },
		}
		tp := &tap{
			body:          io.NopCloser(&splitReader{b: body, at: int(split)}),
			framing:       framing(mode % 3),
			onData:        parsers[int(mode/3)%len(parsers)],
			onJSON:        m.anthropicJSON,
			onEnd:         func(*tap) {},
			dropUsageOnly: mode%2 == 1 && framing(mode%3) == framingSSE,
		}
		got, err := io.ReadAll(tp)
		tp.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !tp.dropUsageOnly && !bytes.Equal(got, body) {
			t.Fatalf("passthrough changed the body")
		}
		if tp.dropUsageOnly && len(got) > len(body) {
			t.Fatalf("filtering grew the body")
		}
		m.openAIJSON(body)
		m.ollama(body)
	})
}

// splitReader returns its bytes in two reads split at at.
type splitReader struct {
	b  []byte
	at int
}

func (r *splitReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := len(r.b)
	if r.at > 0 && r.at < n {
		n = r.at
	}
	r.at = 0
	n = copy(p, r.b[:n])
	r.b = r.b[n:]
	return n, nil
}

// FuzzMembers: members splits any body as encoding/json's decoder does
// (decodeMembers): the same keys and value spans, or an error from both.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{benchBody, benchStream, `{}`, ` { } `, `{"a":{"b":[1,"]}",{"c":"\"}"}]},"d":-1.5e3 , "e" : null}`,
		`{"k\u0065y":1,"k\"":"v\\"}`, "{\"\xff\":1}", `{"a":1} {"b":2}`, `[1]`, `"s"`, `{"a":}`, `{"a":1,}`, `{"max_tokens":1,"max_tokens":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := members(nil, body)
		want, wantErr := decodeMembers(body)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("members: %v, decoder: %v", err, wantErr)
		}
		if err == nil && !slices.Equal(got, want) {
			t.Fatalf("members %v, decoder %v", got, want)
		}
	})
}

// FuzzAnthropicJSON: a Messages response or stream event decodes as
// json.Unmarshal decodes it into an anthropicEvent, or fails where it fails.
func FuzzAnthropicJSON(f *testing.F) {
	for _, s := range []string{
		`{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Hi"}],` +
			`"stop_reason":"end_turn","usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":3,"output_tokens":7,"service_tier":"standard"}}`,
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		`{"ID":"a","Model":"m","USAGE":{"Input_Tokens":1},"usage":{"output_tokens":2}}`,
		`{"usage":{"input_tokens":1},"usage":null,"usage":{"output_tokens":2}}`,
		`{"usage":{"input_tokens":null,"output_tokens":18446744073709551615}}`,
		`{"usage":{"input_tokens":18446744073709551616}}`, `{"usage":{"input_tokens":-1}}`, `{"usage":{"input_tokens":1.0}}`,
		`{"usage":{"input_tokens":"5"}}`, `{"usage":[]}`, `{"usage":"x"}`, `{"id":5}`, `{"id":null,"model":"\u00e9\n"}`,
		"{\"model\":\"\xff\"}", `{"message":{"id":"x","usage":{"input_tokens":2}}}`, `{"delta":{"text":1}}`, `null`, `[]`, `{"id":"a"`,
		`{"type":"message_start","message":{"id":"m1","model":"claude-sonnet-4-5","usage":{"input_tokens":5,"output_tokens":1}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi \u00e9\ud83d\ude00"}}`,
		`{"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{\"a\":"},"DELTA":{"Thinking":"x"}}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}`,
		`{"message":{"usage":{"input_tokens":1}},"message":{"usage":{"output_tokens":2}},"message":null}`,
		`{"message":[],"type":"x"}`, `{"delta":{"text":null},"error":{"type":1}}`, `{"error":null,"error":{"message":"m"}}`,
		`{"\u0075sage":{"input_tokens":4}}`, `{"uſage":{"input_tokens":4}}`, " null\n", "\u00a0null",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := decodeAnthropicEvent(body)
		var want anthropicEvent
		err := json.Unmarshal(body, &want)
		if ok != (err == nil) {
			t.Fatalf("decoded %v, json.Unmarshal: %v", ok, err)
		}
		if ok && !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded %+v, json.Unmarshal %+v", got, want)
		}
	})
}

// FuzzAppendLine: a journal line is encoded as encoding/json encodes it,
// byte for byte, whatever its strings, numbers and absent parts.
func FuzzAppendLine(f *testing.F) {
	f.Add("s1", "claude-sonnet-4-5", "request msg_01; anthropic messages via joule proxy", "g1", uint64(2095), uint64(503), int64(7), int64(1_700_000_000_123_456_789), uint8(0xff))
	f.Add("a\"b\\c\n\t\x01\x7f<>&", "\u2028\u2029\xff\xfe", "é😀\u00a0", "", uint64(0), uint64(1<<63), int64(-1), int64(0), uint8(0))
	f.Add("", "", "\b\f\r", "\x00", uint64(1<<64-1), uint64(0), int64(-1<<63), int64(-62135596800_000_000_000/1000), uint8(0x55))
	f.Fuzz(func(t *testing.T, session, model, note, grant string, in, uj uint64, resv, ns int64, mask uint8) {
		at := time.Unix(0, ns).In(time.FixedZone("", int(resv%86400)))
		rec := energy.Record{Session: session, Unit: note, Model: model, Usage: energy.Usage{Input: in, CachedInput: uj, CacheWrite: in ^ uj, Output: uj / 3},
			Estimate: energy.Estimate{UJ: uj, Class: energy.Class(grant), Provenance: core.Provenance(model), Basis: note}, Coverage: grant,
			Complete: mask&1 != 0, Note: note, Time: at, SettleUJ: in, Nonce: session + grant, MaxOutputRequested: uj, MaxOutputFitted: in}
		if mask&2 != 0 {
			rec.MeasuredUJ = &uj
		}
		if mask&4 != 0 {
			rec.Grants = []string{grant, note}
		} else if mask&8 != 0 {
			rec.Grants = []string{}
		}
		if mask&16 != 0 {
			rec.Reservation = &resv
		}
		if mask&32 != 0 {
			rec.Draw = &store.Draw{Reservation: resv, ReleaseUJ: in, ChargeUJ: uj}
		}
		lines := []journalLine{{Done: note}, {Seal: &pendingSeal{Written: at, Record: rec}}}
		if mask&64 != 0 {
			lines = append(lines, journalLine{Seal: &pendingSeal{Written: time.Unix(0, ns), Record: rec}, Done: grant})
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		var wantErr error
		for _, l := range lines {
			if wantErr = enc.Encode(l); wantErr != nil {
				break
			}
		}
		var got []byte
		var err error
		for _, l := range lines {
			if got, err = appendLine(got, l); err != nil {
				break
			}
		}
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("appendLine error %v, encoding/json's %v", err, wantErr)
		}
		if err == nil && !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("appendLine:\n%s\nencoding/json:\n%s", got, want.Bytes())
		}
	})
}
