package proxy

import (
	"bytes"
	"io"
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
		got, err := members(body)
		want, wantErr := decodeMembers(body)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("members: %v, decoder: %v", err, wantErr)
		}
		if err == nil && !slices.Equal(got, want) {
			t.Fatalf("members %v, decoder %v", got, want)
		}
	})
}
