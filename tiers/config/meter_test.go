package config

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/joulehook/joule/energy"
)

func TestParseMeter(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		want     *Meter
		err      string
	}{
		{"empty", `{}`, &Meter{Table: &energy.Table{Rates: map[energy.Class]energy.Rates{}}}, ""},
		{"everything", `{"upstreams":{"ollama":"http://gpu:11434"},"classes":[{"pattern":"mine-*","class":"mine"}],
			"rates":{"mine":{"input":"1mJ","cached":"100uJ","output":"5mJ"}},"output_caps":{"mine":4096},
			"calibrations":[{"model":"llama3.2","id":"rtx4090","rates":{"input":"10mJ","output":"200mJ"}}]}`,
			&Meter{Upstreams: Upstreams{Ollama: "http://gpu:11434"}, Table: &energy.Table{
				Rules:        []energy.ClassRule{{Pattern: "mine-*", Class: "mine"}},
				Rates:        map[energy.Class]energy.Rates{"mine": {InputUJ: 1000, CachedUJ: 100, OutputUJ: 5000}},
				OutputCaps:   map[energy.Class]uint64{"mine": 4096},
				Calibrations: []energy.Calibration{{Model: "llama3.2", ID: "rtx4090", Rates: energy.Rates{InputUJ: 10_000, OutputUJ: 200_000}}},
			}}, ""},
		{"unknown key", `{"upstream":{}}`, nil, "upstream: unknown field (known: calibrations, classes, output_caps, rates, upstreams)"},
		{"unknown upstream", `{"upstreams":{"vertex":"x"}}`, nil, "upstreams.vertex: unknown field (known: anthropic, gemini, ollama, openai)"},
		{"unknown key in a class rule", `{"classes":[{"pattern":"x","class":"mine"},{"patern":"y"}]}`, nil, "classes[1].patern: unknown field (known: class, pattern)"},
		{"unknown key in a calibration", `{"calibrations":[{"model":"m","rate":{}}]}`, nil, "calibrations[0].rate: unknown field"},
		{"unknown rate", `{"rates":{"mine":{"inptu":"1mJ"}}}`, nil, "rates.mine.inptu: unknown rate (known: cached, input, output)"},
		{"bad rate", `{"rates":{"mine":{"output":"lots"}}}`, nil, "rates.mine.output: "},
		{"bad calibration rate", `{"calibrations":[{"model":"m","id":"i","rates":{"input":"x"}}]}`, nil, "calibrations[0].rates.input: "},
		{"negative cap", `{"output_caps":{"mine":-1}}`, nil, "output_caps.mine: a JSON number; want a whole number, 0 or more"},
		{"cap as a string", `{"output_caps":{"mine":"4096"}}`, nil, "output_caps.mine: a JSON string; want a whole number, 0 or more"},
		{"class without rates", `{"classes":[{"pattern":"x*","class":"nope"}]}`, nil, "nope"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMeter([]byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseMeter(%s) = %+v, %v; want an error with %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseMeter(%s): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseMeter(%s) =\n%+v, want\n%+v", tt.in, got.Table, tt.want.Table)
			}
		})
	}
}

func TestLoadMeterMissing(t *testing.T) {
	m, err := LoadMeter(t.TempDir())
	if err != nil || m.Table == nil || m.Upstreams != (Upstreams{}) {
		t.Fatalf("LoadMeter without a file = %+v, %v; want the defaults", m, err)
	}
}

// FuzzParseMeter: any text parses or fails, never panics, and a table it
// accepts is one energy.Table.Validate accepts.
func FuzzParseMeter(f *testing.F) {
	for _, s := range []string{`{}`, `{"rates":{"mine":{"input":"1mJ"}},"classes":[{"pattern":"m*","class":"mine"}]}`, `{"output_caps":{"x":1}}`, `{"calibrations":[{}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseMeter(data)
		if err != nil {
			return
		}
		if err := m.Table.Validate(); err != nil {
			t.Fatalf("accepted a table that does not validate: %v", err)
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) != nil {
			t.Fatal("accepted text that is not a JSON object")
		}
	})
}
