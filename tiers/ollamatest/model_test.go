package ollamatest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/fs/ggml"
	"github.com/ollama/ollama/fs/gguf"
)

// TestModelFormat pins the file WriteModel writes, read back with ollama's
// own readers: fs/ggml (what ollama create and the scheduler read) and
// fs/gguf (what the server reads a model's capabilities with).
func TestModelFormat(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
	}{
		{"chat", Spec{Seed: 1}},
		{"scripted reply", Spec{Seed: 2, Reply: []string{"calc/calc.go\n", "<<<<<<< SEARCH\n"}, Words: 3}},
		{"endless", Spec{Seed: 3, Words: 5, Endless: true}},
		{"embedding", Spec{Seed: 4, Embedding: true, Context: 512}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.gguf")
			start := time.Now()
			if err := WriteModel(path, tc.spec); err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d bytes in %s", fi.Size(), took)
			if fi.Size() < 300<<10 || fi.Size() > 1<<20 {
				t.Errorf("the model is %d bytes, want about half a MB", fi.Size())
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			m, err := ggml.Decode(f, -1)
			if err != nil {
				t.Fatalf("ollama's ggml.Decode: %v", err)
			}
			kv := m.KV()
			nv := uint64(3 + 256 + 3 + 1 + len(words) + len(tc.spec.Reply))
			ctx := uint64(ctxLength)
			if tc.spec.Context != 0 {
				ctx = uint64(tc.spec.Context)
			}
			for _, c := range []struct {
				what      string
				got, want uint64
			}{
				{"block_count", kv.BlockCount(), Layers},
				{"embedding_length", kv.EmbeddingLength(), Embed},
				{"context_length", kv.ContextLength(), ctx},
				{"head_count", kv.HeadCountMax(), heads},
				{"head_count_kv", kv.HeadCountKVMax(), headsKV},
				{"vocab_size", uint64(kv.Uint("vocab_size")), nv},
				{"tokens", uint64(len(kv.Strings("tokenizer.ggml.tokens"))), nv},
				{"token types", uint64(len(kv.Ints("tokenizer.ggml.token_type"))), nv},
				{"scores", uint64(len(kv.Floats("tokenizer.ggml.scores"))), nv},
				{"tensors", uint64(len(m.Tensors().Items())), 3 + 9*Layers},
			} {
				if c.got != c.want {
					t.Errorf("%s = %d, want %d", c.what, c.got, c.want)
				}
			}
			if a := kv.Architecture(); a != "llama" {
				t.Errorf("architecture %q, want llama", a)
			}
			if tk := kv.String("tokenizer.ggml.model"); tk != "llama" {
				t.Errorf("tokenizer %q, want llama (SentencePiece)", tk)
			}
			toks := kv.Strings("tokenizer.ggml.tokens")
			for id, want := range map[string]string{"unknown_token_id": Unknown, "bos_token_id": BOS, "eos_token_id": EOS} {
				if got := toks[kv.Uint("tokenizer.ggml."+id)]; got != want {
					t.Errorf("%s names %q, want %q", id, got, want)
				}
			}
			if toks[3+0x41] != "<0x41>" || toks[3+256+3] != "▁" || !strings.HasPrefix(toks[3+256+4], "▁") {
				t.Errorf("the byte tokens or the words are out of place: %q, %q", toks[3+0x41], toks[3+256+4])
			}
			for _, tn := range m.Tensors().Items() {
				if tn.Kind != uint32(ggml.TensorTypeF32) {
					t.Errorf("%s is of type %d, want F32", tn.Name, tn.Kind)
				}
				switch tn.Name {
				case "token_embd.weight", "output.weight":
					if len(tn.Shape) != 2 || tn.Shape[0] != Embed || tn.Shape[1] != nv {
						t.Errorf("%s has shape %v, want [%d %d]", tn.Name, tn.Shape, Embed, nv)
					}
				case "blk.0.ffn_down.weight":
					if len(tn.Shape) != 2 || tn.Shape[0] != ffn || tn.Shape[1] != Embed {
						t.Errorf("%s has shape %v, want [%d %d]", tn.Name, tn.Shape, ffn, Embed)
					}
				}
			}
			// The server decides chat or embeddings by pooling_type, read
			// with fs/gguf.
			g, err := gguf.Open(path)
			if err != nil {
				t.Fatalf("ollama's gguf.Open: %v", err)
			}
			pooling := g.KeyValue("pooling_type").Valid()
			g.Close()
			if pooling != tc.spec.Embedding {
				t.Errorf("pooling_type present = %v, want %v (an embedding model)", pooling, tc.spec.Embedding)
			}
			// The same spec writes the same bytes: ollama create then finds
			// the same blob.
			again := filepath.Join(t.TempDir(), "again.gguf")
			if err := WriteModel(again, tc.spec); err != nil {
				t.Fatal(err)
			}
			a, _ := os.ReadFile(path)
			b, _ := os.ReadFile(again)
			if !bytes.Equal(a, b) {
				t.Error("the same spec wrote different files")
			}
		})
	}
}

func TestModelSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"repeated piece", Spec{Reply: []string{"x\n", "x\n"}}, "twice"},
		{"piece is a word", Spec{Reply: []string{"▁return"}}, "twice"},
		{"empty piece", Spec{Reply: []string{""}}, "empty"},
		{"too many words", Spec{Words: len(words) + 1}, "Words is"},
		{"endless without words", Spec{Reply: []string{"a"}, Endless: true}, "Endless"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := WriteModel(filepath.Join(t.TempDir(), "m.gguf"), tc.spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("WriteModel: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestToolModuleVersion keeps the server the tests run (tools/ollama's
// version) and the api client joule's go.mod requires at the same version.
func TestToolModuleVersion(t *testing.T) {
	tool, err := Version()
	if err != nil {
		t.Fatal(err)
	}
	client, err := RequiredVersion(".")
	if err != nil {
		t.Fatal(err)
	}
	if tool != client {
		t.Errorf("tools/ollama builds %s %s; joule's go.mod requires %s", Module, tool, client)
	}
}
